//! The deviation corpus: what real models write that templates never render
//! (issue 16), generated from the round-trip outputs of every template.
//!
//! Each round-trip case (see `roundtrip.rs`) that parses back is
//! changed the way a real model changes it, one class at a time, and parsed
//! again, batch and streamed in 1-, 3- and 7-byte chunks (cut forward to
//! character boundaries). A class applies only where its change makes sense
//! for the template (a reasoning opener only after a prompt that opened the
//! block, a space only after a tool marker glued to JSON...). The classes:
//!
//! - `reopened-reasoning`: the prompt opened the reasoning block and the
//!   model writes the opener again; expected: the same message.
//! - `marker-space`: a space after the first tool marker of the output
//!   where the template writes none before JSON (`[TOOL_CALLS] [{...}]`);
//!   expected: the same message.
//! - `marker-newline`: a newline after that marker whatever follows it
//!   (`<tool_call>\n<function=...`); expected: the same message.
//! - `end-of-turn`: the template's stop marker written at the end;
//!   expected: the same message.
//! - `missing-closer`: a call whose last closing marker a stop string ate
//!   (`</tool_call>` missing at the end); expected: the same message.
//! - `unknown-tool`: the call names a function that is not among the
//!   request's tools; expected: no call, and the content ends with the
//!   call's text, verbatim from its first marker.
//! - `fenced-json`: a bare JSON call written inside a Markdown fence;
//!   expected: the same message.
//! - `openai-wrapper`: each JSON call object (a format that names the
//!   function at the object's top level) inside OpenAI's
//!   `{"type": "function", "function": {...}}`; expected: the same message.
//! - `arguments-string`: the same, with the arguments written as a JSON
//!   string under OpenAI's `arguments` key; expected: the same message.
//! - `json-list`, `json-newline`, `json-semicolon`: bare JSON calls written
//!   twice, as a list (`[a, b]`), one per line, or separated by `; `;
//!   expected: the same message with its calls twice.
//! - `spare-token`: a spare special token of the template
//!   (`<|python_tag|>`, see `analysis::spare`) before or after bare JSON
//!   calls; expected: the same message.
//! - `forced-open-call`: the prompt opened the reasoning block, and the model
//!   never closes it before its call; expected: the same message.
//! - `stuttered-opener`: the reasoning opener's first token written twice
//!   where the output opens its block; expected: the same message.
//! - `lone-closer`: the prompt opened no reasoning block and the output
//!   starts with the block's end marker; expected: the same message.
//! - `missing-id`: a call id the model makes up between markers
//!   (`[CALL_ID]a1b2c3d4e[ARGS]`) left out, with its opening marker (and
//!   its closing one unless that alone ends the name); expected: the same
//!   message (ids are not compared).
//! - `stripped-tokens`: the special tokens between a tagged name and its
//!   JSON object arguments (`[ARGS]`, `[CALL_ID]ID[ARGS]`) dropped, as a
//!   decoder that skips special tokens drops them; expected: the same
//!   message.
//! - `value-newline`: tagged arguments whose value opens with a marker
//!   (`<arg_value>`): a newline before each value's marker where the
//!   template writes none (`</arg_key>\n<arg_value>`); expected: the same
//!   message.
//! - `value-opener-dropped`: tagged arguments whose value opens with an
//!   element of its own (`<arg_value>`, not a quote its closer repeats):
//!   that opener left out before every value, its closer kept (GLM-family
//!   models under load); expected: the same message.
//! - `call-opener-dropped`: a call opener that is a token inside a section
//!   that has an opener of its own, before a name ended by a token
//!   (`<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>`):
//!   every call's opener left out; expected: the same message.
//! - `section-closer-for-call`: the last call's closing token left out right
//!   before the section's closing token (`...}<|tool_calls_section_end|>`);
//!   expected: the same message (a `broken_tool_call` diagnostic is allowed).
//!
//! `unknown-tool` also expects an `unknown_tool` diagnostic at the call.
//!
//! Shared by `tests/parser/deviations.rs` (prints every miss, asserts floors)
//! and the coverage report (`tools/coverage.rs`, a table per class); an
//! includer declares `turns` and `roundtrip` (`tests/common/`) beside it.

#![allow(dead_code)] // Each includer uses the part it needs.

use std::collections::BTreeMap;

use serde_json::Value;

use chat_autoparser::analysis::{ArgumentsSlot, IdSlot, NameSlot};
use chat_autoparser::parser::{char_chunks, DiagnosticKind};
use chat_autoparser::protocol::Start;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, OutputParser, TemplateConfig};

use super::roundtrip::{cases, compare, render_case, Case};

/// What a deviated output must parse to.
enum Expected {
    /// The case's own message.
    Same,
    /// The case's message with its calls written twice.
    CallsTwice,
    /// No call, and content that ends the output verbatim from where the
    /// call starts (what precedes it, an empty reasoning block, may be
    /// scaffolding): nothing of the call is lost.
    CallAsContent { output: String, call_at: usize },
}

/// One deviation of one output.
struct Deviation {
    class: &'static str,
    output: String,
    expected: Expected,
}

/// Every deviation that applies to `output`, the parse-back of `case`.
fn deviations(
    analysis: &Analysis,
    parser: &OutputParser,
    case: &Case,
    output: &str,
) -> Vec<Deviation> {
    let mut out = Vec::new();
    let mut push = |class, output: Option<String>, expected| {
        if let Some(output) = output {
            out.push(Deviation {
                class,
                output,
                expected,
            });
        }
    };
    push(
        "reopened-reasoning",
        reopened(analysis, parser, case, output),
        Expected::Same,
    );
    push(
        "marker-space",
        after_tool_marker(analysis, output, " ", true),
        Expected::Same,
    );
    push(
        "marker-newline",
        after_tool_marker(analysis, output, "\n", false),
        Expected::Same,
    );
    push("end-of-turn", end_of_turn(analysis, output), Expected::Same);
    push(
        "missing-closer",
        missing_closer(analysis, case, output),
        Expected::Same,
    );
    if let Some((renamed, call_at)) = unknown_tool(analysis, case, output) {
        push(
            "unknown-tool",
            Some(renamed.clone()),
            Expected::CallAsContent {
                output: renamed,
                call_at,
            },
        );
    }
    push(
        "fenced-json",
        fenced(analysis, case, output),
        Expected::Same,
    );
    push(
        "openai-wrapper",
        rewrap(analysis, case, output, false),
        Expected::Same,
    );
    push(
        "arguments-string",
        rewrap(analysis, case, output, true),
        Expected::Same,
    );
    for (class, open, sep, close) in [
        ("json-list", "[", ", ", "]"),
        ("json-newline", "", "\n", ""),
        ("json-semicolon", "", "; ", ""),
    ] {
        let twice = bare_calls(analysis, case, output).map(|calls| {
            let all: Vec<&str> = calls.iter().chain(&calls).map(|&(_, t)| t).collect();
            format!("{open}{}{close}", all.join(sep))
        });
        push(class, twice, Expected::CallsTwice);
    }
    if bare_calls(analysis, case, output).is_some() {
        for token in &analysis.spare_tokens {
            push(
                "spare-token",
                Some(format!("{token}{output}")),
                Expected::Same,
            );
            push(
                "spare-token",
                Some(format!("{output}{token}")),
                Expected::Same,
            );
        }
    }
    push(
        "forced-open-call",
        forced_open_call(analysis, parser, case, output),
        Expected::Same,
    );
    push(
        "lone-closer",
        lone_closer(analysis, parser, output),
        Expected::Same,
    );
    push(
        "stuttered-opener",
        stuttered(analysis, case, output),
        Expected::Same,
    );
    push(
        "value-newline",
        value_newline(analysis, output),
        Expected::Same,
    );
    push("missing-id", missing_id(analysis, output), Expected::Same);
    push(
        "value-opener-dropped",
        value_opener_dropped(analysis, output),
        Expected::Same,
    );
    push(
        "call-opener-dropped",
        call_opener_dropped(analysis, output),
        Expected::Same,
    );
    push(
        "section-closer-for-call",
        section_closer_for_call(analysis, case, output),
        Expected::Same,
    );
    push(
        "stripped-tokens",
        stripped_tokens(analysis, output),
        Expected::Same,
    );
    out
}

/// The special tokens between each tagged name and its JSON object
/// arguments (`[ARGS]`, `[CALL_ID]ID[ARGS]`) dropped, as a decoder that
/// skips special tokens drops them: `NAME{...}`.
fn stripped_tokens(analysis: &Analysis, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    let NameSlot::Tagged { suffix, .. } = &format.name else {
        return None;
    };
    let ArgumentsSlot::Json {
        path,
        as_string: false,
        ..
    } = &format.arguments
    else {
        return None;
    };
    // One bracketed token, `[ARGS]` or `<|x|>`.
    let token = |m: &str| {
        let m = m.trim();
        let inner = |o: char, c: char| {
            m.strip_prefix(o)
                .and_then(|r| r.strip_suffix(c))
                .is_some_and(|i| !i.is_empty() && !i.contains([o, c, ' ', '\n']))
        };
        inner('[', ']') || inner('<', '>')
    };
    // Ids of other shapes (a counter around the name) come with section
    // tokens a skipping decoder would drop too: no such output exists.
    let id = match &format.id {
        Some(IdSlot::Tagged {
            prefix,
            suffix,
            before_name: false,
        }) => Some((prefix.trim(), suffix.trim())),
        None => None,
        Some(_) => return None,
    };
    let suffix = suffix.trim();
    let tokens_only = id.is_none_or(|(p, s)| token(p) && token(s))
        && if suffix.is_empty() {
            id.is_some()
        } else {
            token(suffix)
        };
    if !path.is_empty() || !tokens_only {
        return None;
    }
    let mut text = output.to_string();
    if let Some((open, close)) = id {
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(open) {
            let end = at + rest[at..].find(close)?;
            out.push_str(&rest[..at]);
            rest = &rest[end + close.len()..];
        }
        text = out + rest;
    }
    if !suffix.is_empty() {
        text = text.replace(&format!("{suffix}{{"), "{");
    }
    (text != output).then_some(text)
}

/// Each tagged call id left out: from its opening marker to its closing
/// one, which stays when it alone ends a name with no suffix of its own.
fn missing_id(analysis: &Analysis, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    let Some(IdSlot::Tagged {
        prefix,
        suffix,
        before_name,
    }) = &format.id
    else {
        return None;
    };
    let name_suffix = match &format.name {
        NameSlot::Tagged { suffix, .. } => suffix.trim(),
        _ => return None,
    };
    let keep_suffix = !before_name && name_suffix.is_empty();
    let (open, close) = (prefix.trim(), suffix.trim());
    if open.is_empty() || close.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut rest = output;
    while let Some(at) = rest.find(open) {
        let end = at + rest[at..].find(close)?;
        out.push_str(&rest[..at]);
        rest = match keep_suffix {
            true => &rest[end..],
            false => &rest[end + close.len()..],
        };
    }
    (out.len() + rest.len() < output.len()).then(|| out + rest)
}

/// A newline before each tagged value's opening marker, from the first
/// tool marker on, where the template writes none before it.
fn value_newline(analysis: &Analysis, output: &str) -> Option<String> {
    let ArgumentsSlot::Tagged(t) = &analysis.tools.as_ref()?.arguments else {
        return None;
    };
    let core = t.value_prefix.split_whitespace().next()?;
    let glued = !t.value_prefix.starts_with(char::is_whitespace)
        && !t.name_suffix.ends_with(char::is_whitespace);
    // A quote marker that also closes the value (`<|"|>`) would be moved
    // inside the value it closes.
    let quote = t.value_prefix.trim() == t.value_suffix.trim();
    if !glued || quote || !core.starts_with(['<', '[']) {
        return None;
    }
    let (at, _) = tool_marker(analysis, output)?;
    let (head, calls) = output.split_at(at);
    calls
        .contains(core)
        .then(|| format!("{head}{}", calls.replace(core, &format!("\n{core}"))))
}

/// Every tagged value's opening element left out, from the first tool
/// marker on, where that opener is an element of its own (`<arg_value>`),
/// not a quote its closer repeats.
fn value_opener_dropped(analysis: &Analysis, output: &str) -> Option<String> {
    let ArgumentsSlot::Tagged(t) = &analysis.tools.as_ref()?.arguments else {
        return None;
    };
    let core = t.value_prefix.split_whitespace().next()?;
    if !core.starts_with(['<', '[']) || t.value_prefix.trim() == t.value_suffix.trim() {
        return None;
    }
    let (at, _) = tool_marker(analysis, output)?;
    let (head, calls) = output.split_at(at);
    calls
        .contains(core)
        .then(|| format!("{head}{}", calls.replace(core, "")))
}

/// A token that is the whole of `raw` (its whitespace aside).
fn whole_token(raw: &str) -> Option<&str> {
    let core = raw.trim();
    chat_autoparser::analysis::marker_at(core, 0)
        .filter(|r| r.start == 0 && r.end == core.len())
        .map(|_| core)
}

/// Every call's own opening token left out, inside a section that opens
/// with a marker of its own, where a token ends the call's name.
fn call_opener_dropped(analysis: &Analysis, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    let NameSlot::Tagged { suffix, .. } = &format.name else {
        return None;
    };
    let section = whole_token(&format.section_start)?;
    let opener = whole_token(&format.call_start)?;
    let name_end = suffix.split_whitespace().next()?;
    chat_autoparser::analysis::marker_at(name_end, 0).filter(|r| r.start == 0)?;
    let at = output.find(section)? + section.len();
    let (head, calls) = output.split_at(at);
    calls
        .contains(opener)
        .then(|| format!("{head}{}", calls.replace(opener, "")))
}

/// The last call's closing token left out right before the section's
/// closing token, both tokens.
fn section_closer_for_call(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    if case.calls.is_empty() {
        return None;
    }
    let call_end = whole_token(&format.call_end)?;
    let section_end = whole_token(&format.section_end)?;
    let at = output.rfind(section_end)?;
    let before = output[..at].trim_end();
    let cut = before.strip_suffix(call_end)?;
    Some(format!("{cut}{}", &output[before.len()..]))
}

/// The reasoning opener's first token written twice where the output opens
/// its reasoning block (`<|channel><|channel>thought`).
fn stuttered(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let start = analysis.reasoning.start.trim();
    let token_end = chat_autoparser::analysis::marker_at(start, 0)?.end;
    let at = output.find(start).filter(|_| !case.reasoning.is_empty())?;
    let token = &start[..token_end];
    Some(format!("{}{token}{}", &output[..at], &output[at..]))
}

/// The reasoning end marker written first when the prompt opened no block.
fn lone_closer(analysis: &Analysis, parser: &OutputParser, output: &str) -> Option<String> {
    let (start, end) = (
        analysis.reasoning.start.trim(),
        analysis.reasoning.end.trim(),
    );
    let applies = parser.start() == Start::Free && !start.is_empty() && !end.is_empty();
    (applies && !output.trim_start().starts_with(end)).then(|| format!("{end}{output}"))
}

/// The JSON call objects of `output` (a format naming the function at the
/// object's top level): each object's span and text, in order, when there
/// is one per call of `case`.
fn call_objects<'a>(
    analysis: &Analysis,
    case: &Case,
    output: &'a str,
) -> Option<Vec<(usize, &'a str)>> {
    let format = analysis.tools.as_ref()?;
    let NameSlot::JsonField { path } = &format.name else {
        return None;
    };
    if path.len() != 1 || case.calls.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = output[at..].find('{').map(|i| i + at) {
        let mut values = serde_json::Deserializer::from_str(&output[i..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(v)) if v.get(&path[0]).is_some() => {
                let end = i + values.byte_offset();
                out.push((i, &output[i..end]));
                at = end;
            }
            _ => at = i + 1,
        }
    }
    (out.len() == case.calls.len()).then_some(out)
}

/// Every call object of `output` in OpenAI's wrapper; with `as_string`,
/// its arguments as a JSON string under `arguments` (the name under the
/// template's own key).
fn rewrap(analysis: &Analysis, case: &Case, output: &str, as_string: bool) -> Option<String> {
    let objects = call_objects(analysis, case, output)?;
    let format = analysis.tools.as_ref()?;
    let mut out = String::new();
    let mut last = 0;
    for (at, text) in objects {
        let inner = match as_string {
            false => text.to_string(),
            true => {
                let NameSlot::JsonField { path } = &format.name else {
                    return None;
                };
                let v: Value = serde_json::from_str(text).ok()?;
                let args = ["arguments", "parameters"].iter().find_map(|k| v.get(*k))?;
                let mut inner = serde_json::Map::new();
                inner.insert(path[0].clone(), v.get(&path[0])?.clone());
                inner.insert("arguments".into(), Value::String(args.to_string()));
                Value::Object(inner).to_string()
            }
        };
        out.push_str(&output[last..at]);
        out.push_str(&format!(r#"{{"type": "function", "function": {inner}}}"#));
        last = at + text.len();
    }
    out.push_str(&output[last..]);
    Some(out)
}

/// The call objects of an output that is nothing but bare JSON calls.
fn bare_calls<'a>(
    analysis: &Analysis,
    case: &Case,
    output: &'a str,
) -> Option<Vec<(usize, &'a str)>> {
    let format = analysis.tools.as_ref()?;
    let bare = format.section_start.trim().is_empty() && format.call_start.trim().is_empty();
    let calls = call_objects(analysis, case, output)?;
    (bare && case.content.is_empty() && case.reasoning.is_empty()).then_some(calls)
}

/// The output without the reasoning end marker before its calls, when the
/// prompt opened the block.
fn forced_open_call(
    analysis: &Analysis,
    parser: &OutputParser,
    case: &Case,
    output: &str,
) -> Option<String> {
    let end = analysis.reasoning.end.trim();
    let applies = parser.start() == Start::InReasoning
        && !case.reasoning.is_empty()
        && !case.calls.is_empty()
        && case.content.is_empty()
        && !end.is_empty();
    let at = output.find(end).filter(|_| applies)?;
    Some(format!("{}{}", &output[..at], &output[at + end.len()..]))
}

fn reopened(
    analysis: &Analysis,
    parser: &OutputParser,
    case: &Case,
    output: &str,
) -> Option<String> {
    let start = analysis.reasoning.start.trim();
    let applies =
        parser.start() == Start::InReasoning && !case.reasoning.is_empty() && !start.is_empty();
    applies.then(|| format!("{start}{output}"))
}

/// The first core of the tool section's opening marker, where the output has it.
fn tool_marker<'a>(analysis: &'a Analysis, output: &str) -> Option<(usize, &'a str)> {
    let format = analysis.tools.as_ref()?;
    let marker = [&format.section_start, &format.call_start]
        .into_iter()
        .find_map(|m| m.split_whitespace().next())?;
    // The marker's leading special token (`[TOOL_CALLS]` of `[TOOL_CALLS][`).
    let token_end = chat_autoparser::analysis::marker_at(marker, 0)?.end;
    let token = &marker[..token_end];
    output.find(token).map(|at| (at + token.len(), token))
}

fn after_tool_marker(
    analysis: &Analysis,
    output: &str,
    gap: &str,
    only_before_json: bool,
) -> Option<String> {
    let (at, token) = tool_marker(analysis, output)?;
    // A header's opener is followed by its label (`<|channel|>commentary`):
    // nothing a model breaks with whitespace.
    if analysis.turn.headers.iter().any(|h| h.open.trim() == token) {
        return None;
    }
    let next = output[at..].chars().next()?;
    let applies = if only_before_json {
        matches!(next, '[' | '{')
    } else {
        !next.is_whitespace()
    };
    applies.then(|| format!("{}{gap}{}", &output[..at], &output[at..]))
}

fn end_of_turn(analysis: &Analysis, output: &str) -> Option<String> {
    let stop = analysis.turn.stop_marker.trim();
    (!stop.is_empty() && !output.trim_end().ends_with(stop)).then(|| format!("{output}{stop}"))
}

fn missing_closer(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    if case.calls.is_empty() {
        return None;
    }
    let closer = [&format.section_end, &format.call_end]
        .into_iter()
        .find_map(|m| {
            let core = m.split_whitespace().last()?;
            chat_autoparser::analysis::marker_at(core, 0)
                .filter(|r| r.end == core.len())
                .map(|_| core)
        })?;
    output.trim_end().strip_suffix(closer).map(str::to_string)
}

/// The output with its one call renamed, and where the call starts (its
/// first tool marker, else its name).
fn unknown_tool(analysis: &Analysis, case: &Case, output: &str) -> Option<(String, usize)> {
    let (name, _) = case.calls.first()?;
    let alone = case.calls.len() == 1 && case.content.is_empty() && case.reasoning.is_empty();
    if !alone || output.matches(name).count() != 1 {
        return None;
    }
    let renamed = output.replace(name, "unknown_function");
    // Where the section's whole first marker is, when the output holds it
    // (`<|open|>tools<|sep|>`, not the `<|open|>` of an empty content
    // wrapper before it); else its leading token.
    let whole = analysis.tools.as_ref().and_then(|f| {
        let core = [&f.section_start, &f.call_start]
            .into_iter()
            .find_map(|m| m.split_whitespace().next())?;
        renamed.find(core)
    });
    let call_at =
        whole.or_else(|| tool_marker(analysis, &renamed).map(|(end, token)| end - token.len()));
    let call_at = call_at.or_else(|| renamed.find("unknown_function"))?;
    Some((renamed, call_at))
}

fn fenced(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    let bare = format.section_start.trim().is_empty() && format.call_start.trim().is_empty();
    let json = output.trim_start().starts_with(['{', '[']);
    (bare && json && !case.calls.is_empty() && case.content.is_empty())
        .then(|| format!("```json\n{}\n```", output.trim()))
}

/// `output` parsed in batch, and the same message streamed in small chunks;
/// with the batch parse's diagnostics.
fn parse_everywhere(
    parser: &OutputParser,
    output: &str,
) -> Result<(AssistantMessage, Vec<DiagnosticKind>), String> {
    let report = parser.parse_report(output, false);
    let kinds = report.diagnostics.iter().map(|d| d.kind).collect();
    let batch = report.message;
    for size in [1, 3, 7] {
        let mut stream = parser.stream();
        for chunk in char_chunks(output, size) {
            stream.push(chunk);
        }
        stream.finish();
        if stream.message() != batch {
            return Err(format!("streamed in {size}-byte chunks differs from batch"));
        }
    }
    Ok((batch, kinds))
}

fn check(parser: &OutputParser, case: &Case, d: &Deviation) -> Result<(), String> {
    let (got, kinds) = parse_everywhere(parser, &d.output)?;
    let result = match &d.expected {
        Expected::Same => compare(&got, case),
        Expected::CallsTwice => {
            let mut twice = case.clone();
            twice.calls.extend(case.calls.iter().cloned());
            compare(&got, &twice)
        }
        Expected::CallAsContent { output, call_at } => {
            let content = got.content_text();
            let kept = got.tool_calls.is_empty()
                && output[..*call_at].ends_with(
                    content
                        .trim_end()
                        .strip_suffix(&output[*call_at..].trim_end())
                        .unwrap_or("\u{0}"),
                );
            let reported = kinds.contains(&DiagnosticKind::UnknownTool);
            match kept {
                true if !reported => Err("no unknown_tool diagnostic".to_string()),
                true => Ok(()),
                false => Err(format!(
                    "expected no call and the call's text {:?} at the end of the content",
                    &output[*call_at..]
                )),
            }
        }
    };
    result.map_err(|why| {
        format!(
            "{why}\n      output: {:?}\n      got:    {}",
            d.output,
            serde_json::to_string(&got).unwrap_or_default()
        )
    })
}

/// One class's count.
#[derive(Default)]
pub struct Tally {
    pub cases: usize,
    pub passes: usize,
    /// One line per miss: the template, the case, why.
    pub misses: Vec<String>,
}

/// Every deviation class over the templates in `files`: cases, passes, and
/// each miss.
pub fn tally(files: &[std::path::PathBuf]) -> BTreeMap<&'static str, Tally> {
    let mut tallies: BTreeMap<&'static str, Tally> = BTreeMap::new();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let source = std::fs::read_to_string(path).expect("template is readable");
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
            continue;
        };
        let Ok(analysis) = tmpl.analyze() else {
            continue;
        };
        for case in cases(&analysis) {
            let Ok(r) = render_case(&tmpl, &analysis, &case) else {
                continue;
            };
            let Ok(parser) = analysis.parser(&r.config) else {
                continue;
            };
            // Only outputs that parse back as rendered: a deviation of a
            // miss would count the round trip's miss again.
            if !r.prefix_renderable || compare(&parser.parse(&r.output), &case).is_err() {
                continue;
            }
            for d in deviations(&analysis, &parser, &case, &r.output) {
                let t = tallies.entry(d.class).or_default();
                t.cases += 1;
                match check(&parser, &case, &d) {
                    Ok(()) => t.passes += 1,
                    Err(why) => t.misses.push(format!("  [{stem}] {}: {why}", case.name)),
                }
            }
        }
    }
    tallies
}

/// Prints cases and passes per class, then every miss.
pub fn print(label: &str, tallies: &BTreeMap<&'static str, Tally>) {
    println!("\n{label}: deviation classes (cases, passes)");
    for (class, t) in tallies {
        println!("  {class:<20} {:>4} {:>4}", t.cases, t.passes);
    }
    for (class, t) in tallies {
        if !t.misses.is_empty() {
            println!("{label} {class} misses ({}):", t.misses.len());
            for m in &t.misses {
                println!("{m}");
            }
        }
    }
}

/// A Markdown table of cases and passes per class.
pub fn markdown_table(tallies: &BTreeMap<&'static str, Tally>) -> String {
    let mut out = String::from("| class | cases | passes | % |\n|---|---:|---:|---:|\n");
    for (class, t) in tallies {
        let percent = (t.passes * 1000 / t.cases.max(1)) as f64 / 10.0;
        out.push_str(&format!(
            "| {class} | {} | {} | {percent:.1} |\n",
            t.cases, t.passes
        ));
    }
    out
}
