//! Formats a template only describes in prose.
//!
//! Some templates never render an assistant's tool calls, yet the
//! instructions they render with `tools` show the model an example call:
//! `... formatted as functools[{"name": [function name], "arguments": [...]}, ...]`,
//! `[TOOL_CALLS] [{"name": <function-name>, ...}] [/TOOL_CALLS]`. Such an
//! example is a *skeleton*: a marker, then a JSON object (or a list of
//! them) whose first key is `"name"` (or whose keys are `"name"` and the
//! arguments' key, in either order), with placeholder values that need not
//! be JSON, then, maybe, the marker that closes it. The skeleton is turned
//! into a tiny chat template of our own that renders calls with the same
//! markers and keys, in the example's order (`{"arguments": <args-dict>,
//! "name": <function-name>}` writes the arguments first), which the
//! analysis reads the usual way (as it reads
//! the fallback dialects, `fallback`), so the result is ordinary
//! [`ToolFormat`] data.
//!
//! Some instructions name the call's marker and its JSON without drawing
//! them (`respond only with <|tool_call|> followed by a JSON list of tools
//! used`): a marker the instructions add (one the prompt rendered without
//! tools lacks) with `JSON` in the rest of its sentence reads as the
//! skeleton `<|tool_call|>[{"name": ..., "arguments": ...}]` (a list when
//! the sentence says `list` or `array`), see [`named_skeleton`].
//!
//! Likewise for reasoning: an instruction that puts the thoughts after one
//! quoted phrase and the answer after another (`Write your thoughts after
//! 'Here is my thought process:' and your response after 'Here is my
//! response:'`) names the two phrases as the reasoning block's markers
//! (see `reasoning::instructed_markers`).
//!
//! Invariants: everything read here is text the template rendered, never a
//! list of known formats or model names; a tool listing (objects naming the
//! probe tools) is never a skeleton; a skeleton whose format cannot be
//! analysed is no skeleton (no panic, no error: the analysis goes on).

use super::model::ToolFormat;
use super::probe::{NAME, NAME2};
use crate::markers;
use crate::template::{ChatTemplate, TemplateConfig};

/// Longest skeleton read, from its opening bracket to its close.
const MAX_SKELETON: usize = 2000;

/// How far back from a bracket a marker before it is looked for: longer
/// than any marker (`markers` takes at most 96 bytes between brackets).
const MARKER_WINDOW: usize = 100;

/// Longest quoted phrase taken for a reasoning marker.
const MAX_PHRASE: usize = 64;

/// An example call in the instructions, and the format read from it.
#[derive(Debug, Clone)]
pub struct ProseCall {
    /// The example as the instructions show it, markers included.
    pub example: String,
    /// The format a template rendering calls that way has.
    pub format: ToolFormat,
}

/// The example call's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// The marker before the call (`[TOOL_CALLS]`, `functools`), with the
    /// whitespace between it and the bracket.
    before: String,
    /// The calls are a JSON list (`[{"name": ...}, ...]`).
    list: bool,
    /// The closing marker after the call, with the whitespace before it.
    after: String,
    /// The arguments' key (`arguments`, `parameters`): the key after
    /// `"name"`, or the one before it.
    arguments_key: String,
    /// `"name"` comes before the arguments' key.
    name_first: bool,
    /// The whole example.
    example: String,
}

/// The first skeleton in `instructions`, if any.
pub fn skeleton(instructions: &str) -> Option<Skeleton> {
    let text = unescaped(instructions);
    let found = text
        .match_indices('{')
        .find_map(|(at, _)| skeleton_at(&text, at));
    found
}

/// How far into the sentence after a named marker `JSON` is looked for.
const MAX_NAMING: usize = 160;

/// The skeleton a sentence of `instructions` names in words: the first
/// marker that `bare` (the prompt rendered without tools) lacks, with
/// `JSON` in the rest of its sentence; its conventional closer right after
/// it (`<tool_calls></tool_calls>`) closes the calls. Role and turn markers
/// render without tools too, so they are never taken.
pub fn named_skeleton(instructions: &str, bare: &str) -> Option<Skeleton> {
    let text = unescaped(instructions);
    markers::spans(&text).into_iter().find_map(|span| {
        let marker = &text[span.clone()];
        if bare.contains(marker) || marker.starts_with("</") || marker.starts_with("[/") {
            return None;
        }
        let rest = &text[span.end..];
        let sentence = &rest[..sentence_end(rest)];
        let lower = sentence.to_ascii_lowercase();
        if !lower.contains("json") {
            return None;
        }
        let after = markers::closing_for(marker)
            .filter(|c| sentence.trim_start().starts_with(c.as_str()))
            .unwrap_or_default();
        Some(Skeleton {
            before: marker.to_owned(),
            list: lower.contains("list") || lower.contains("array"),
            after,
            arguments_key: "arguments".into(),
            name_first: true,
            example: format!("{marker}{sentence}"),
        })
    })
}

/// Where the sentence `text` opens ends: its first full stop followed by
/// a space, its first newline, or [`MAX_NAMING`] bytes.
fn sentence_end(text: &str) -> usize {
    let cap = (0..=MAX_NAMING.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let head = &text[..cap];
    let stop = head.find(". ").or_else(|| head.find('\n'));
    stop.unwrap_or(cap)
}

impl Skeleton {
    /// The text that opens its calls (`functools[`, `<tool_call>`), without
    /// whitespace: what tells it from another format before analysing it.
    pub fn opener(&self) -> String {
        let bracket = if self.list { "[" } else { "" };
        squeezed(&format!("{}{bracket}", self.before))
    }

    /// The format a template rendering calls as the skeleton shows has,
    /// when the analysis reads one.
    pub fn read(self) -> Option<ProseCall> {
        let format = format_of(&dialect_template(&self))?;
        Some(ProseCall {
            example: self.example,
            format,
        })
    }
}

/// `text` without whitespace.
pub fn squeezed(text: &str) -> String {
    text.split_whitespace().collect()
}

/// Instructions written inside a JSON string show `{\"name\": ...}`: read
/// them with the quotes (and newlines) unescaped.
fn unescaped(text: &str) -> String {
    match text.contains("{\\\"name\\\"") {
        true => text.replace("\\\"", "\"").replace("\\n", "\n"),
        false => text.to_owned(),
    }
}

/// The skeleton whose call object opens at byte `object`, if it is one:
/// `"name"` is its first key, or its keys are the arguments' and then
/// `"name"` ([`arguments_first`]); a marker stands right before it (or
/// before the list holding it), and it names none of the probe tools (a
/// listing of the tools, not an example call).
fn skeleton_at(text: &str, object: usize) -> Option<Skeleton> {
    let key = text[object + 1..].trim_start();
    let name_first =
        key.starts_with("\"name\"") && key["\"name\"".len()..].trim_start().starts_with(':');
    let arguments_key = match name_first {
        true => second_key(&text[object..]).unwrap_or_else(|| "arguments".into()),
        false => arguments_first(text, object)?,
    };
    let head = text[..object].trim_end_matches([' ', '\n']);
    let list = head.ends_with('[');
    let open = if list { head.len() - 1 } else { object };
    let close = closing_bracket(text, open)?;
    let body = &text[open..close];
    // Quoted or not (`functions.foofoo`): the probe names are in no example.
    if body.contains(NAME) || body.contains(NAME2) {
        return None;
    }
    let before_start = marker_before(text, open)?;
    let after_end = marker_after(text, &text[before_start..open], close);
    Some(Skeleton {
        before: text[before_start..open].to_owned(),
        list,
        after: text[close..after_end].to_owned(),
        arguments_key,
        name_first,
        example: text[before_start..after_end].to_owned(),
    })
}

/// The end of the bracketed value opening at `open` (`{` or `[`), reading
/// placeholder text (`[function name]`, `<args>`) as text and brackets in
/// strings as text; `None` past [`MAX_SKELETON`] bytes or unbalanced.
fn closing_bracket(text: &str, open: usize) -> Option<usize> {
    bracketed(text, open).map(|(close, _)| close)
}

/// [`closing_bracket`], and the keys of the value at its own level: the
/// quoted strings followed by `:` outside any inner bracket.
fn bracketed(text: &str, open: usize) -> Option<(usize, Vec<&str>)> {
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut string_from = None;
    let mut escaped = false;
    for (i, c) in text[open..]
        .char_indices()
        .take_while(|(i, _)| *i < MAX_SKELETON)
    {
        let at = open + i;
        match (string_from, escaped, c) {
            (Some(_), true, _) => escaped = false,
            (Some(_), false, '\\') => escaped = true,
            (Some(from), false, '"') => {
                string_from = None;
                if depth == 1 && text[at + 1..].trim_start().starts_with(':') {
                    keys.push(&text[from..at]);
                }
            }
            (Some(_), ..) => {}
            (None, _, '"') => string_from = Some(at + 1),
            (None, _, '{' | '[') => depth += 1,
            (None, _, '}' | ']') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((at + c.len_utf8(), keys));
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the marker before the bracket at `open` starts: a word glued to
/// it (`functools[`), or a bracketed marker with at most spaces or a newline
/// between (`[TOOL_CALLS] [`, `<tool_call>\n{`).
fn marker_before(text: &str, open: usize) -> Option<usize> {
    let head = &text[..open];
    let word = head.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
    if word.len() < head.len() && head[word.len()..].starts_with(char::is_alphabetic) {
        return Some(word.len());
    }
    let trimmed = head.trim_end_matches([' ', '\n']);
    let from = trimmed.len().saturating_sub(MARKER_WINDOW);
    let from = (from..=trimmed.len()).find(|&i| trimmed.is_char_boundary(i))?;
    let last = markers::spans(&trimmed[from..]).pop()?;
    (from + last.end == trimmed.len()).then_some(from + last.start)
}

/// Where the closing marker after the call ending at `close` ends, or
/// `close` when there is none: the conventional closer of the opening
/// marker (`[/TOOL_CALLS]` for `[TOOL_CALLS]`, see `markers::closing_for`),
/// right after the call or after spaces or a newline. Any other marker
/// there is the instructions' own (an end of turn glued to the example).
fn marker_after(text: &str, opener: &str, close: usize) -> usize {
    let rest = &text[close..];
    let gap = rest.len() - rest.trim_start_matches([' ', '\n']).len();
    let closer = markers::closing_for(opener.trim_end());
    match closer.filter(|c| rest[gap..].starts_with(c.as_str())) {
        Some(c) => close + gap + c.len(),
        None => close,
    }
}

/// The arguments' key of a call object written arguments first
/// (`{"arguments": <args-dict>, "name": <function-name>}`, as Hermes-2-Pro's
/// instructions show it): its top-level keys are exactly `arguments` (or
/// `parameters`) and then `name`. Anything else (a schema, a tool listing)
/// is no such call.
fn arguments_first(text: &str, object: usize) -> Option<String> {
    let (_, keys) = bracketed(text, object)?;
    match keys[..] {
        [arguments @ ("arguments" | "parameters"), "name"] => Some(arguments.to_owned()),
        _ => None,
    }
}

/// The first quoted key after `"name"` in the call object starting `object`.
fn second_key(object: &str) -> Option<String> {
    let after_name = &object[object.find("\"name\"")? + "\"name\"".len()..];
    let mut rest = after_name;
    while let Some(q) = rest.find('"') {
        let tail = &rest[q + 1..];
        let end = tail.find('"')?;
        let key = &tail[..end];
        let is_key = tail[end + 1..].trim_start().starts_with(':');
        if is_key && !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Some(key.to_owned());
        }
        rest = &tail[end + 1..];
    }
    None
}

/// ChatML turns; the calls as a skeleton shows them, `@OPEN@` and
/// `@CLOSE@` standing for its markers (as Jinja string literals) and
/// `@CALL@` for one call's object ([`CALL`]). A list between the markers, `, ` between
/// calls:
const LIST: &str = r#"
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' -}}
{%- if message.content is string -%}{{- message.content -}}{%- endif -%}
{%- if message.tool_calls -%}
{{- @OPEN@ -}}
{%- for call in message.tool_calls -%}
{{- @CALL@ -}}
{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- @CLOSE@ -}}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"#;

/// As [`LIST`], each call between the markers, a newline between calls.
const EACH: &str = r#"
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' -}}
{%- if message.content is string -%}{{- message.content -}}{%- endif -%}
{%- for call in message.tool_calls or [] -%}
{{- '\n' if not loop.first -}}
{{- @OPEN@ -}}
{{- @CALL@ -}}
{{- @CLOSE@ -}}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"#;

/// The template rendering calls as skeleton `s` shows them.
fn dialect_template(s: &Skeleton) -> String {
    let literal = |t: String| serde_json::to_string(&t).expect("a string serializes");
    let (shape, open, close) = match s.list {
        true => (LIST, format!("{}[", s.before), format!("]{}", s.after)),
        false => (EACH, s.before.clone(), s.after.clone()),
    };
    let (first, second) = match s.name_first {
        true => (NAME_MEMBER, ARGUMENTS_MEMBER),
        false => (ARGUMENTS_MEMBER, NAME_MEMBER),
    };
    let call = CALL.replace("@FIRST@", first).replace("@SECOND@", second);
    shape
        .replace("@CALL@", &call)
        .replace("@OPEN@", &literal(open))
        .replace("@CLOSE@", &literal(close))
        .replace("@KEY@", &s.arguments_key)
}

/// One call's object, `@FIRST@` and `@SECOND@` standing for its two
/// members (`"name": ...` and `"@KEY@": ...`, `@KEY@` its arguments' key)
/// in the skeleton's order.
const CALL: &str = r#"'{' + @FIRST@ + ', ' + @SECOND@ + '}'"#;

/// The call object's members, as Jinja expressions.
const NAME_MEMBER: &str = r#"'"name": ' + call.function.name | tojson"#;
const ARGUMENTS_MEMBER: &str = r#"'"@KEY@": ' + call.function.arguments | tojson"#;

/// The tool format the analysis reads from a skeleton's template, on the
/// analysis's own fuel (the markers are the template's text); `None` when
/// it reads none.
fn format_of(source: &str) -> Option<ToolFormat> {
    let template = ChatTemplate::new(source, &TemplateConfig::default()).ok()?;
    super::analyze_with(&template, false).ok()?.tools
}

/// The reasoning markers an instruction names by quoting them: the first
/// two distinct quoted phrases (`'...'`, `"..."`) each written right after
/// the word `after`, in order: the thoughts follow the first, the answer
/// the second.
pub fn reasoning_phrases(added: &str) -> Option<(String, String)> {
    let mut phrases = added
        .match_indices("after ")
        .filter_map(|(at, word)| quoted_at(&added[at + word.len()..]));
    let start = phrases.next()?;
    let end = phrases.find(|p| *p != start)?;
    Some((start.to_owned(), end.to_owned()))
}

/// The quoted phrase `text` opens with: one line, at most [`MAX_PHRASE`]
/// bytes, not blank.
fn quoted_at(text: &str) -> Option<&str> {
    let quote = text.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
    let inner = &text[1..];
    let phrase = &inner[..inner.find(quote)?];
    let fits = phrase.len() <= MAX_PHRASE && !phrase.contains('\n');
    (fits && !phrase.trim().is_empty()).then_some(phrase)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every skeleton in `text`, in order.
    fn skeletons(text: &str) -> Vec<Skeleton> {
        text.match_indices('{')
            .filter_map(|(at, _)| skeleton_at(text, at))
            .collect()
    }

    fn only(text: &str) -> Skeleton {
        let found = skeletons(text);
        assert_eq!(found.len(), 1, "{found:?}");
        found.into_iter().next().unwrap()
    }

    #[test]
    fn a_word_glued_to_a_list_of_placeholder_calls() {
        let s = only(
            r#"formatted as functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...]. Go."#,
        );
        assert_eq!(
            (s.before.as_str(), s.list, s.after.as_str()),
            ("functools", true, "")
        );
        assert_eq!(s.arguments_key, "arguments");
        assert!(s.example.ends_with("...]"));
    }

    #[test]
    fn a_marker_pair_around_a_list() {
        let s = only(
            r#"write [TOOL_CALLS] [{"name": <function-name>, "parameters": <args>}] [/TOOL_CALLS] and stop"#,
        );
        assert_eq!(
            (s.before.as_str(), s.after.as_str()),
            ("[TOOL_CALLS] ", " [/TOOL_CALLS]")
        );
        assert_eq!(s.arguments_key, "parameters");
    }

    #[test]
    fn escaped_quotes_are_read() {
        let text = unescaped(
            r#"<tool_call>\n{\"name\": \"function_name\", \"arguments\": {}}\n</tool_call>"#,
        );
        let s = only(&text);
        assert_eq!(
            (s.before.as_str(), s.list, s.after.as_str()),
            ("<tool_call>\n", false, "\n</tool_call>")
        );
    }

    /// Hermes-2-Pro's instructions write the arguments before the name;
    /// the format read keeps that order.
    #[test]
    fn a_call_object_written_arguments_first() {
        let s = only(
            r#"For each function call return a json object with function name and arguments within <tool_call></tool_call> XML tags as follows:
<tool_call>{"arguments": <args-dict>, "name": <function-name>}</tool_call>"#,
        );
        assert_eq!(
            (s.before.as_str(), s.list, s.after.as_str()),
            ("<tool_call>", false, "</tool_call>")
        );
        assert_eq!(
            (s.arguments_key.as_str(), s.name_first),
            ("arguments", false)
        );
        let call = s.read().expect("a format").format;
        assert_eq!(
            (call.call_start.as_str(), call.call_end.as_str()),
            ("<tool_call>", "</tool_call>")
        );
        let dialect = dialect_template(&only(
            r#"<tool_call>{"arguments": <args-dict>, "name": <function-name>}</tool_call>"#,
        ));
        assert!(dialect.contains(r#"'{' + '"arguments": ' + call.function.arguments | tojson + ', ' + '"name": ' + call.function.name | tojson + '}'"#), "{dialect}");
    }

    /// A schema of the call (the same instructions hold one) has other
    /// keys around `name`: no call.
    #[test]
    fn a_schema_naming_the_keys_is_no_skeleton() {
        assert!(skeletons(
            r#"<schema>{"properties": {"arguments": {"title": "Arguments", "type": "object"}, "name": {"title": "Name", "type": "string"}}, "required": ["arguments", "name"]}</schema>"#
        )
        .is_empty());
        assert!(
            skeletons(r#"<tool_call>{"arguments": {}, "name": "x", "id": 1}</tool_call>"#)
                .is_empty()
        );
    }

    #[test]
    fn a_tool_listing_and_unmarked_json_are_not_skeletons() {
        assert!(skeletons(r#"<tools>[{"name": "foofoo", "parameters": {}}]</tools>"#).is_empty());
        assert!(skeletons(r#"<tool>{"name": "functions.barbar"}</tool>"#).is_empty());
        assert!(skeletons(r#"in the format {"name": function name, "parameters": {}}"#).is_empty());
    }

    /// Markers holding quotes, backslashes or non-ASCII text go into the
    /// dialect template as string literals and come back as written.
    #[test]
    fn odd_markers_survive_the_dialect_template() {
        for (before, after) in [
            ("<call kind=\"f\">\n", "\n</call kind=\"f\">"),
            ("<｜tool▁calls｜>", ""),
            ("[CALLS\\]", ""),
        ] {
            let text =
                format!(r#"Use {before}{{"name": "fn", "arguments": {{}}}}{after} then stop"#);
            let Some(s) = skeleton(&text) else {
                assert_eq!(before, "[CALLS\\]", "no skeleton in {text:?}");
                continue;
            };
            assert_eq!(
                (s.before.as_str(), s.after.as_str()),
                (before, after),
                "{text:?}"
            );
            let f = s.read().expect("the format reads").format;
            assert_eq!(f.call_start, before, "{text:?}");
        }
    }

    #[test]
    fn a_marker_named_with_json_in_its_sentence() {
        let bare = "<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>";
        let text = format!(
            "<|start_of_role|>system<|end_of_role|>Respond only with <|tool_call|> followed by a JSON list of tools used. Then stop.{bare}"
        );
        let s = named_skeleton(&text, bare).expect("a named marker");
        assert_eq!(
            (s.before.as_str(), s.list, s.after.as_str()),
            ("<|tool_call|>", true, "")
        );
        assert_eq!(
            s.example,
            "<|tool_call|> followed by a JSON list of tools used"
        );
        let f = s.read().expect("the format reads").format;
        assert_eq!(
            (f.section_start.as_str(), f.section_end.as_str()),
            ("<|tool_call|>[", "]")
        );
        // A pair of tags, one object.
        let s = named_skeleton("reply with <calls></calls> tags holding a JSON object", "")
            .expect("a named pair");
        assert_eq!(
            (s.before.as_str(), s.list, s.after.as_str()),
            ("<calls>", false, "</calls>")
        );
    }

    #[test]
    fn markers_any_prompt_has_or_without_json_are_not_named_calls() {
        let bare = "<|user|>Hi<|end|>";
        // A role marker renders without tools too.
        assert!(named_skeleton("<|user|>Tools, as JSON:<|end|>", bare).is_none());
        // No JSON in the marker's sentence (the next sentence's does not count).
        assert!(named_skeleton("Use <|act|> to act. Reply in JSON.", bare).is_none());
        // A closer names nothing.
        assert!(named_skeleton("End with </call> after the JSON.", bare).is_none());
    }

    #[test]
    fn quoted_phrases_after_the_word_after() {
        let text = "Write your thoughts after 'Here is my thought process:' and your response after 'Here is my response:' for each query.";
        assert_eq!(
            reasoning_phrases(text),
            Some((
                "Here is my thought process:".into(),
                "Here is my response:".into()
            ))
        );
        assert_eq!(reasoning_phrases("after 'A' and after 'A'"), None);
    }
}
