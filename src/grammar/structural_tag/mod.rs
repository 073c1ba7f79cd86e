//! xgrammar structural tags: the [`Protocol`] as the JSON that vLLM and
//! SGLang hand to xgrammar (`{"type": "structural_tag", "format": ...}`).
//!
//! A structural tag is a tree of formats. The output is laid out as
//!
//! ```text
//! sequence [ reasoning block (if the protocol has one),
//!            body: triggered_tags over the calls | the answer schema | any_text ]
//! ```
//!
//! - reasoning: a block the prompt opened is `tag("", any_text, END)` and must
//!   close; one the model may open is `optional(tag(START, any_text, END))`;
//!   after a prompt that closed it (or thinking off) there is none;
//! - calls: `triggered_tags` whose triggers are the first marker of the tool
//!   section (or of the call), one `tag` per tool: `begin` is the call's
//!   fixed text up to its first variable part (id, arguments), `end` the fixed
//!   text after its last, `content` what lies between (`json_schema`,
//!   `const_string`, `regex` for a counter id, the rest of a section header
//!   after the name as free text on its line); a section marker wraps the
//!   calls in one `tag` holding `tags_with_separator`; `required` or a named
//!   function sets `at_least_one`, parallel calls off (or a template that
//!   renders one call per turn) `stop_after_first`;
//! - tagged arguments spelled the way one of xgrammar's XML styles spells them
//!   (`<parameter=K>V</parameter>` and kin, compared without whitespace) use
//!   that style (`qwen_xml_parameter` for Qwen's, which older xgrammar
//!   reads); other simple tagged arguments become one `tag` per declared
//!   argument (keys exact, string values raw, other values any text) and a
//!   warning; the rest, Python calls and arguments written as a JSON string
//!   get the closest looser form (`any_text` up to the call's end, any JSON
//!   string) and a warning.
//!
//! [`structural_tag_with`] writes the markers that are the serving model's
//! special tokens as xgrammar tokens, calls triggered on the token (the
//! `tokens` module, a pass over the finished tag).
//!
//! [`legacy`] writes the older `{"structures": [{"begin", "schema", "end"}],
//! "triggers": [...]}` form (SGLang before structural-tag formats): calls with
//! JSON arguments only, one call per section.
//!
//! Markers are matched exactly as the template renders them (a structural tag
//! has no flexible whitespace between fixed strings), except that free text
//! absorbs the whitespace before a trigger.
//!
//! The tag is printed from the request's outline ([`Protocol::outline`]),
//! as the GBNF and Lark exports are: the reasoning block from its first
//! part, the body (a lazy start makes calls triggered, else eager; the
//! answer; the empty content block) from its second; the `calls` module
//! finds each tool section (a repeat of call rules and the markers around
//! it) and cuts each call into fixed text and formats, the `arguments`
//! module reads the arguments' nodes (a tagged pair's markers decide the
//! XML style). The protocol gives only its warnings, preserved tokens and
//! the request's schemas (for dropped patterns).
//!
//! Invariants: reads the [`Protocol`] and its outline, never the analysis'
//! format types; deterministic JSON (keys in a
//! fixed order, tools in the order given); never panics; anything it cannot
//! express exactly becomes a looser format and an entry in `warnings`, never
//! a failed request; merged `allOf`s write at most
//! `json_schema::MAX_MERGED_WEIGHT` beyond the request's schemas, past
//! which a schema keeps only its type.

use serde::Serialize;
use serde_json::{json, Map, Value};

mod arguments;
mod calls;
mod tokens;

use super::markers_among;
use super::shape::{self, tool_name};
use super::shape::{parts, sections, Section};
use crate::error::Result;
use crate::json_schema::{loosened, portable, too_large, Allowance};
use crate::protocol::outline::{Kind, Node, Produces};
use crate::protocol::{Marker, Protocol};
use calls::Piece;
use shape::flat;

/// A structural tag for one request (its JSON shape is in `docs/cli.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StructuralTag {
    /// `{"type": "structural_tag", "format": {...}}`.
    pub structural_tag: Value,
    /// Tokens the tokenizer must keep whole for the markers to be seen.
    pub preserved_tokens: Vec<String>,
    /// What could only be expressed loosely, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The legacy form: `structures` (begin, schema, end) and `triggers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LegacyStructuralTag {
    /// One `{begin, schema, end}` per tool.
    pub structures: Vec<Value>,
    /// Texts that start a structure.
    pub triggers: Vec<String>,
    /// What the export had to loosen or leave out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Options of the structural tag export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StructuralTagOptions {
    /// The serving model's special tokens (its whole list will do, as
    /// `ParserConfig::special_tokens` takes it): the tag's markers among
    /// them are written as xgrammar tokens (`{"type": "token", "token":
    /// "<tool_call>"}`) and calls are triggered on the token
    /// (`token_triggered_tags`), so the model must sample the token, not
    /// spell the text (the rules are in the `tokens` module).
    pub special_tokens: Vec<String>,
}

setters!(StructuralTagOptions {
    /// Sets the serving model's special tokens.
    with_special_tokens => special_tokens: Vec<String>,
});

/// The structural tag of `protocol`, every marker as text. Errors (kind
/// `input`) only when calls are required but cannot be written (see
/// [`Protocol::check_servable`]).
pub fn structural_tag(protocol: &Protocol) -> Result<StructuralTag> {
    structural_tag_with(protocol, &StructuralTagOptions::default())
}

/// The structural tag of `protocol`, with `options`.
pub fn structural_tag_with(
    protocol: &Protocol,
    options: &StructuralTagOptions,
) -> Result<StructuralTag> {
    let mut tag = text_tag(protocol)?;
    let tokens = markers_among(&tag.preserved_tokens, &options.special_tokens);
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let format = tag.structural_tag["format"].take();
    tag.structural_tag["format"] = tokens::name_tokens(format, &tokens, &mut tag.warnings);
    Ok(tag)
}

fn text_tag(protocol: &Protocol) -> Result<StructuralTag> {
    protocol.check_servable()?;
    let mut notes = Notes::new(protocol.warnings.clone());
    warn_dropped_patterns(protocol, &mut notes.warnings);
    let outline = protocol.outline();
    let sections = sections(&outline);
    let stop = protocol.turn.stop_marker.trim();
    let body = body(parts(&outline).1, &sections, stop, &mut notes);
    protocol.note_strict(&mut notes.warnings);
    let format = match reasoning(parts(&outline).0) {
        Some(block) => sequence(vec![block, body]),
        None => body,
    };
    Ok(StructuralTag {
        structural_tag: node("structural_tag", vec![("format", format)]),
        preserved_tokens: protocol.preserved_tokens.clone(),
        warnings: notes.warnings,
    })
}

/// What an export loosened, and what `allOf` merging may still add to its
/// schemas: threaded through the export.
struct Notes {
    warnings: Vec<String>,
    allowance: Allowance,
}

impl Notes {
    fn new(warnings: Vec<String>) -> Notes {
        Notes {
            warnings,
            allowance: Allowance::default(),
        }
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

/// The reasoning block the output may or must write first, from the
/// outline's first part: the option holding the reasoning text gives the
/// block's markers; an option of the end marker alone (templates that
/// close blocks they never opened) makes the opening optional. A block with
/// no opening (the prompt opened it, or delimiter reasoning) must close;
/// the end marker alone after a prompt that closed the block is left to
/// the body.
fn reasoning(part: &Node) -> Option<Value> {
    let block = match &part.kind {
        Kind::Optional(inner) => inner,
        _ => part,
    };
    let options: Vec<&Node> = match &block.kind {
        Kind::Choice(options) => options.iter().collect(),
        _ => vec![block],
    };
    let items = options
        .iter()
        .map(|o| flat(o))
        .find(|items| items.iter().any(|n| n.produces == Produces::Reasoning))?;
    let at = items
        .iter()
        .position(|n| n.produces == Produces::Reasoning)?;
    let start = markers(&items[..at]).unwrap_or_default();
    let end = markers(&items[at + 1..]).unwrap_or_default();
    let (start, end) = (start.trim(), end.trim());
    if start.is_empty() {
        return Some(tag("", json!({"type": "any_text"}), end));
    }
    let begin = if options.len() > 1 { "" } else { start };
    let block = tag(begin, json!({"type": "any_text"}), end);
    // Templates write whitespace before the block (`\n<think>`).
    Some(optional(sequence(vec![whitespace(), block])))
}

/// What follows reasoning, from the outline's body: calls (triggered where
/// the body has a lazy start, else eager), the answer, a choice of both, or
/// free text.
fn body(body: &Node, sections: &[Section], stop: &str, notes: &mut Notes) -> Value {
    let answer = answer(body, notes);
    let lazy = shape::first(body, |n| n.lazy_start.then_some(())).is_some();
    match (sections.is_empty(), answer) {
        (false, None) if lazy => calls_format(sections, false, stop, notes),
        (false, None) => eager_calls(body, sections, stop, notes),
        // An answer schema makes the output eager: a call or the answer.
        (false, Some(answer)) => {
            let calls = eager_calls(body, sections, stop, notes);
            node("or", vec![("elements", Value::Array(vec![calls, answer]))])
        }
        (true, Some(answer)) => answer,
        (true, None) => json!({"type": "any_text"}),
    }
}

/// The JSON answer (a value producing the content), inside the markers the
/// outline writes around it (the content wrapper), if any.
fn answer(body: &Node, notes: &mut Notes) -> Option<Value> {
    let (start, schema, end) = shape::first(body, |n| {
        let items = flat(n);
        let at = items.iter().position(|i| i.produces == Produces::Content)?;
        let Kind::Value(value) = &items[at].kind else {
            return None;
        };
        let start = markers(&items[..at])?;
        Some((start, &value.schema, markers(&items[at + 1..])?))
    })?;
    let value = node(
        "json_schema",
        vec![("json_schema", xgrammar_schema(schema, "answer", notes))],
    );
    let (start, end) = (start.trim(), end.trim());
    if start.is_empty() && end.is_empty() {
        return Some(value);
    }
    Some(tag(start, value, end))
}

/// The text of `nodes` when they are all markers.
fn markers(nodes: &[&Node]) -> Option<String> {
    nodes
        .iter()
        .map(|n| match &n.kind {
            Kind::Marker(raw) => Some(raw.as_str()),
            _ => None,
        })
        .collect()
}

/// Calls that must come first: after the empty content block that templates
/// with a content wrapper write before calls
/// (`<|open|>response<|sep|><|close|>response<|sep|>`), if the outline has
/// one (an optional pair of markers).
fn eager_calls(body: &Node, sections: &[Section], stop: &str, notes: &mut Notes) -> Value {
    let calls = calls_format(sections, true, stop, notes);
    let block = shape::first(body, |n| match &n.kind {
        Kind::Optional(inner) => match flat(inner)[..] {
            [start, end] => Some((markers(&[start])?, markers(&[end])?)),
            _ => None,
        },
        _ => None,
    });
    let Some((start, end)) = block else {
        return calls;
    };
    let empty = sequence(vec![
        whitespace(),
        const_string(start.trim()),
        whitespace(),
        const_string(end.trim()),
    ]);
    sequence(vec![optional(empty), calls])
}

/// The calls as `triggered_tags`: free text until a trigger, then a call (or
/// a section of calls) of one of the tools. `required`: no free text before
/// the first call and at least one; leading whitespace stays free. `stop`:
/// the turn's stop marker, trimmed.
fn calls_format(sections: &[Section], required: bool, stop: &str, notes: &mut Notes) -> Value {
    let single = sections.iter().all(|s| s.single);
    let mut tags = Vec::new();
    let mut words = Vec::new();
    for section in sections {
        for (tag, word) in section_tags(section, stop, notes) {
            tags.push(tag);
            words.push(word);
        }
    }
    let triggers = triggers(words);
    let triggers = triggers.into_iter().map(Value::String).collect();
    let triggered = node(
        "triggered_tags",
        vec![
            ("triggers", Value::Array(triggers)),
            ("tags", Value::Array(tags)),
            ("at_least_one", Value::Bool(required)),
            ("stop_after_first", Value::Bool(single)),
        ],
    );
    if !required {
        return triggered;
    }
    sequence(vec![whitespace(), triggered])
}

/// The tags of one section with the trigger of each: a call tag per tool,
/// or one section tag holding them.
fn section_tags(section: &Section, stop: &str, notes: &mut Notes) -> Vec<(Value, String)> {
    let start = section.start.trim_start();
    let calls: Vec<(Value, String)> = section
        .calls
        .iter()
        .map(|call| call_tag(call, !start.is_empty(), notes))
        .collect();
    if start.is_empty() {
        return calls;
    }
    let calls: Vec<Value> = calls.into_iter().map(|(tag, _)| tag).collect();
    let inner = node(
        "tags_with_separator",
        vec![
            ("tags", Value::Array(calls)),
            ("separator", Value::from(section.separator.as_str())),
            ("at_least_one", Value::Bool(true)),
            ("stop_after_first", Value::Bool(section.single)),
        ],
    );
    let word = Marker::new(start).first_core().unwrap_or(start).to_string();
    let mut tag = tag(start, inner, &section.end);
    if section.end_optional {
        // Written only after two calls or more: after one it may be missing.
        tag["end"] = Value::Array(vec![Value::from(section.end.as_str()), Value::from("")]);
    } else if section.end.trim().is_empty() && !stop.is_empty() {
        // A section with no end marker ends with the turn. xgrammar refuses a
        // tag holding `tags_with_separator` (even one stopping after the first
        // call) with no non-empty end string, so the turn's stop marker, which
        // follows the calls, may end it too.
        tag["end"] = Value::Array(vec![Value::from(stop), Value::from("")]);
    }
    vec![(tag, word)]
}

/// One tool's call as a tag, and its trigger. `in_section`: the call
/// follows a section marker, so its leading whitespace is the template's
/// and stays exact.
fn call_tag(call: &Node, in_section: bool, notes: &mut Notes) -> (Value, String) {
    let mut pieces = calls::pieces(call, notes);
    let first = pieces
        .iter()
        .position(|p| matches!(p, Piece::Format(_)))
        .unwrap_or(pieces.len());
    let last = pieces
        .iter()
        .rposition(|p| matches!(p, Piece::Format(_)))
        .unwrap_or(first);
    let end = fixed(pieces.drain(last + 1..));
    let middle: Vec<Piece> = pieces.drain(first..).collect();
    let mut begin = fixed(pieces.drain(..));
    if !in_section {
        begin = begin.trim_start().to_string();
    }
    let mut elements: Vec<Value> = middle.into_iter().map(Piece::into_format).collect();
    let content = match elements.len() {
        1 => elements.remove(0),
        _ => sequence(elements),
    };
    let word = calls::trigger_word(call, &begin);
    (tag(&begin, content, &end), word)
}

impl Piece {
    fn into_format(self) -> Value {
        match self {
            Piece::Fixed(text) => const_string(&text),
            Piece::Format(format) => format,
        }
    }
}

/// The text of consecutive fixed pieces.
fn fixed(pieces: impl Iterator<Item = Piece>) -> String {
    pieces
        .map(|p| match p {
            Piece::Fixed(text) => text,
            Piece::Format(_) => String::new(),
        })
        .collect()
}

/// The distinct trigger words, none that another one starts with (xgrammar
/// groups tags by the trigger they start with).
fn triggers(mut words: Vec<String>) -> Vec<String> {
    let mut seen = Vec::new();
    words.retain(|w| {
        !w.is_empty() && !seen.contains(w) && {
            seen.push(w.clone());
            true
        }
    });
    let all = words.clone();
    words.retain(|w| !all.iter().any(|o| o != w && w.starts_with(o.as_str())));
    words
}

/// Warns of each `pattern` in the request's schemas that [`xgrammar_pattern`]
/// drops.
fn warn_dropped_patterns(protocol: &Protocol, warnings: &mut Vec<String>) {
    fn walk(v: &Value, warnings: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(p)) = m.get("pattern") {
                    if xgrammar_pattern(p).is_none() {
                        warnings.push(format!("the pattern {p:?} names a quote or a backslash, which xgrammar matches escaped; any string is accepted"));
                    }
                }
                m.values().for_each(|x| walk(x, warnings));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, warnings)),
            _ => {}
        }
    }
    let tools = protocol.tools.iter().flat_map(|s| &s.tools);
    for schema in tools
        .map(|t| &t.parameters)
        .chain(&protocol.response_schema)
    {
        walk(schema, warnings);
    }
}

/// `schema` as xgrammar compiles it (`json_schema::portable`), or only its
/// type (and a warning naming `hint`) when that grows too large.
fn xgrammar_schema(schema: &Value, hint: &str, notes: &mut Notes) -> Value {
    portable(schema, &xgrammar_pattern, &notes.allowance).unwrap_or_else(|| {
        notes.warn(too_large(hint));
        loosened(schema)
    })
}

/// xgrammar matches a `pattern` against the whole string as JSON writes it,
/// where JSON Schema searches the decoded string: an unanchored side gets
/// `[\s\S]*`, and a pattern naming a quote or a backslash (escaped in the
/// JSON text) is dropped (looser).
fn xgrammar_pattern(p: &str) -> Option<String> {
    if p.contains('"') || p.contains(r"\\") {
        return None;
    }
    let start = p.starts_with('^');
    let end = p.ends_with('$') && !p.ends_with(r"\$") && p.len() > usize::from(start);
    let core = &p[usize::from(start)..p.len() - usize::from(end)];
    let any = |anchored: bool| if anchored { "" } else { r"[\s\S]*" };
    Some(format!("^{}(?:{core}){}$", any(start), any(end)))
}

fn tag(begin: &str, content: Value, end: &str) -> Value {
    node(
        "tag",
        vec![
            ("begin", Value::from(begin)),
            ("content", content),
            ("end", Value::from(end)),
        ],
    )
}

/// A format object, `{"type": kind, ...fields}`, built by moving its parts
/// in: `json!` would copy every embedded value through serde, once per
/// level of nesting.
fn node(kind: &str, fields: Vec<(&str, Value)>) -> Value {
    let mut map = Map::new();
    map.insert("type".into(), Value::from(kind));
    for (key, value) in fields {
        map.insert(key.into(), value);
    }
    Value::Object(map)
}

fn sequence(elements: Vec<Value>) -> Value {
    node("sequence", vec![("elements", Value::Array(elements))])
}

fn optional(content: Value) -> Value {
    node("optional", vec![("content", content)])
}

fn const_string(value: &str) -> Value {
    node("const_string", vec![("value", Value::from(value))])
}

/// Whitespace the model may write before its first call.
fn whitespace() -> Value {
    json!({"type": "regex", "pattern": "[ \\t\\r\\n]*"})
}

/// The legacy `{structures, triggers}` form of `protocol`: one structure per
/// tool and format whose call is fixed text, JSON arguments, fixed text.
pub fn legacy(protocol: &Protocol) -> Result<LegacyStructuralTag> {
    protocol.check_servable()?;
    let mut notes = Notes::new(protocol.warnings.clone());
    let mut structures = Vec::new();
    let mut triggers: Vec<String> = Vec::new();
    let outline = protocol.outline();
    for section in sections(&outline) {
        for call in &section.calls {
            match legacy_structure(&section, call, &mut notes) {
                Some(s) => structures.push(s),
                None => notes.warn(format!("{}: the call is not fixed text around JSON arguments; left out of the legacy form", tool_name(call).unwrap_or_default())),
            }
        }
    }
    for s in &structures {
        let begin = s["begin"].as_str().unwrap_or_default();
        let word = Marker::new(begin).first_core().unwrap_or(begin).to_string();
        if !word.is_empty() && !triggers.contains(&word) {
            triggers.push(word);
        }
    }
    let section = protocol.tools.as_ref().filter(|s| !s.tools.is_empty());
    if section.is_some_and(|s| s.required || !s.parallel) {
        notes.warn("the legacy form cannot require a call or stop after the first".into());
    }
    protocol.note_strict(&mut notes.warnings);
    Ok(LegacyStructuralTag {
        structures,
        triggers,
        warnings: notes.warnings,
    })
}

/// One call as `{begin, schema, end}`, inside its section markers.
fn legacy_structure(section: &Section, call: &Node, notes: &mut Notes) -> Option<Value> {
    let (head, arguments, tail) = calls::plain_json_call(call)?;
    let Kind::Value(value) = &arguments.kind else {
        return None;
    };
    let tool = tool_name(call).unwrap_or_default();
    let begin = format!("{}{head}", section.start);
    let end = format!("{tail}{}", section.end);
    let fields = [
        ("begin", Value::from(begin.trim_start())),
        (
            "schema",
            arguments::object_schema(&value.root, &tool, notes),
        ),
        ("end", Value::from(end)),
    ];
    Some(Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Options, ToolChoice};
    use crate::{Analysis, ChatTemplate, TemplateConfig};

    fn analysis(source: &str) -> Analysis {
        ChatTemplate::new(source, &TemplateConfig::default())
            .unwrap()
            .analyze()
            .unwrap()
    }

    fn hermes() -> Analysis {
        analysis(include_str!("../../../templates/hermes-think.jinja"))
    }

    fn tools() -> Vec<Value> {
        let weather = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        vec![
            json!({"type": "function", "function": {"name": "get_weather", "parameters": weather}}),
            json!({"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}),
        ]
    }

    fn export(a: &Analysis, options: Options) -> StructuralTag {
        structural_tag(&Protocol::new(
            a,
            &Options {
                tools: tools(),
                ..options
            },
        ))
        .unwrap()
    }

    /// Every format object of `kind` in `value`, depth first.
    fn find<'v>(value: &'v Value, kind: &str, out: &mut Vec<&'v Value>) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some(kind) {
                    out.push(value);
                }
                map.values().for_each(|v| find(v, kind, out));
            }
            Value::Array(items) => items.iter().for_each(|v| find(v, kind, out)),
            _ => {}
        }
    }

    fn all<'v>(st: &'v StructuralTag, kind: &str) -> Vec<&'v Value> {
        let mut out = Vec::new();
        find(&st.structural_tag, kind, &mut out);
        out
    }

    /// Calls opened once by `<calls>` and never closed (vLLM's Hermes-2-Pro
    /// example writes its section so): the section's tag ends at the turn's
    /// stop marker or at nothing, since xgrammar refuses a tag of calls whose
    /// every end string is empty; with parallel calls off too.
    #[test]
    fn a_section_with_no_end_marker_may_end_at_the_stop_marker() {
        let a = analysis(include_str!("../../../tests/fixtures/open-section.jinja"));
        let tools = a.tools.as_ref().unwrap();
        assert_eq!(
            (tools.section_start.as_str(), tools.section_end.as_str()),
            ("<calls>\n", "")
        );
        for parallel in [true, false] {
            let st = export(
                &a,
                Options {
                    parallel_tool_calls: parallel,
                    ..Options::default()
                },
            );
            let section = &all(&st, "triggered_tags")[0]["tags"][0];
            assert_eq!(section["begin"], "<calls>\n");
            assert_eq!(
                section["end"],
                json!(["<|end|>", ""]),
                "parallel {parallel}"
            );
        }
    }

    #[test]
    fn auto_calls_are_triggered_tags_after_an_optional_reasoning_block() {
        let st = export(&hermes(), Options::default());
        let format = &st.structural_tag["format"];
        assert_eq!(format["type"], "sequence");
        assert_eq!(format["elements"][0]["type"], "optional");
        let triggered = &format["elements"][1];
        assert_eq!(triggered["triggers"], json!(["<tool_call>"]));
        assert_eq!(triggered["at_least_one"], false);
        assert_eq!(triggered["stop_after_first"], false);
        let begins: Vec<&Value> = triggered["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["begin"])
            .collect();
        assert_eq!(
            begins,
            [
                &json!("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "),
                &json!("<tool_call>\n{\"name\": \"search\", \"arguments\": ")
            ]
        );
        assert_eq!(triggered["tags"][0]["end"], "}\n</tool_call>");
        assert_eq!(
            triggered["tags"][0]["content"]["json_schema"]["required"],
            json!(["city"])
        );
        assert!(st.warnings.is_empty(), "{:?}", st.warnings);
    }

    #[test]
    fn deterministic_bytes() {
        let a = hermes();
        let one = serde_json::to_string(&export(&a, Options::default())).unwrap();
        assert_eq!(
            one,
            serde_json::to_string(&export(&a, Options::default())).unwrap()
        );
    }

    #[test]
    fn tool_choice_shapes_the_tags() {
        let a = hermes();
        let none = export(
            &a,
            Options {
                tool_choice: ToolChoice::None,
                ..Options::default()
            },
        );
        assert!(
            all(&none, "triggered_tags").is_empty() && all(&none, "tag").len() == 1,
            "only the reasoning block"
        );
        let named = export(
            &a,
            Options {
                tool_choice: ToolChoice::Function("search".into()),
                ..Options::default()
            },
        );
        let triggered = all(&named, "triggered_tags");
        assert_eq!(triggered[0]["tags"].as_array().unwrap().len(), 1);
        assert_eq!(
            triggered[0]["tags"][0]["begin"],
            "<tool_call>\n{\"name\": \"search\", \"arguments\": "
        );
        assert_eq!(triggered[0]["at_least_one"], true);
        let single = export(
            &a,
            Options {
                parallel_tool_calls: false,
                ..Options::default()
            },
        );
        assert_eq!(all(&single, "triggered_tags")[0]["stop_after_first"], true);
    }

    #[test]
    fn a_template_that_renders_one_call_stops_after_the_first() {
        // bare-json writes one call per turn: the outline repeats its call
        // at most once, so the tag stops after it though the request
        // allows parallel calls (as the GBNF and Lark exports do).
        let st = export(
            &analysis(include_str!("../../../templates/bare-json.jinja")),
            Options::default(),
        );
        assert_eq!(all(&st, "triggered_tags")[0]["stop_after_first"], true);
    }

    #[test]
    fn allowed_tools_are_the_tags_and_strict_schemas_are_closed() {
        let a = hermes();
        let allowed = export(
            &a,
            Options {
                tool_choice: ToolChoice::AllowedTools {
                    names: vec!["search".into()],
                    required: true,
                },
                ..Options::default()
            },
        );
        let triggered = all(&allowed, "triggered_tags");
        let tags = triggered[0]["tags"].as_array().unwrap();
        assert_eq!(tags.len(), 1);
        assert_eq!(
            tags[0]["begin"],
            "<tool_call>\n{\"name\": \"search\", \"arguments\": "
        );
        assert_eq!(triggered[0]["at_least_one"], true);
        let strict = json!({"type": "function", "function": {"name": "now", "strict": true}});
        let p = Protocol::new(
            &a,
            &Options {
                tools: vec![strict],
                ..Options::default()
            },
        );
        let tag = structural_tag(&p).unwrap();
        let schemas = all(&tag, "json_schema");
        assert_eq!(
            schemas[0]["json_schema"],
            json!({"type": "object", "additionalProperties": false})
        );
    }

    #[test]
    fn a_missing_named_function_is_an_input_error() {
        let p = Protocol::new(
            &hermes(),
            &Options {
                tools: tools(),
                tool_choice: ToolChoice::Function("nope".into()),
                ..Options::default()
            },
        );
        assert!(structural_tag(&p).is_err());
        assert!(legacy(&p).is_err());
    }

    #[test]
    fn the_prompt_decides_the_reasoning_block() {
        let a = hermes();
        let opened = export(
            &a,
            Options {
                prompt: Some("<|im_start|>assistant\n<think>\n".into()),
                ..Options::default()
            },
        );
        let block = &opened.structural_tag["format"]["elements"][0];
        assert_eq!(
            (&block["type"], &block["begin"], &block["end"]),
            (&json!("tag"), &json!(""), &json!("</think>"))
        );
        let closed = export(
            &a,
            Options {
                prompt: Some("<|im_start|>assistant\n<think>\n\n</think>\n\n".into()),
                ..Options::default()
            },
        );
        assert_eq!(closed.structural_tag["format"]["type"], "triggered_tags");
    }

    #[test]
    fn a_response_schema_is_a_json_schema() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
        let p = Protocol::new(
            &hermes(),
            &Options {
                response_schema: Some(schema.clone()),
                ..Options::default()
            },
        );
        let st = structural_tag(&p).unwrap();
        assert_eq!(
            st.structural_tag["format"]["elements"][1],
            json!({"type": "json_schema", "json_schema": schema})
        );
    }

    #[test]
    fn qwen_xml_arguments_use_their_style_and_python_calls_loosen() {
        let qwen = export(
            &analysis(include_str!("../../../templates/qwen-coder-xml.jinja")),
            Options::default(),
        );
        let params = all(&qwen, "qwen_xml_parameter");
        assert_eq!(params.len(), 2);
        assert!(qwen.warnings.is_empty(), "{:?}", qwen.warnings);
        let python = export(
            &analysis(include_str!("../../../templates/python-calls.jinja")),
            Options::default(),
        );
        assert_eq!(
            python.warnings.len(),
            2,
            "one per tool: {:?}",
            python.warnings
        );
        assert!(
            all(&python, "tags_with_separator").len() == 1,
            "calls inside the section marker"
        );
    }

    #[test]
    fn tagged_pairs_in_no_style_keep_their_keys() {
        // Qwen's XML calls with `<param name="K">` pairs, which no
        // xgrammar style spells.
        let source = include_str!("../../../templates/qwen-coder-xml.jinja")
            .replace(
                "<parameter=example_parameter>",
                "<param name=\"example_parameter\">",
            )
            .replace(
                "'<parameter=' + name + '>",
                "'<param name=\"' + name + '\">",
            )
            .replace("</parameter>", "</param>");
        let weather = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]});
        let tool =
            json!({"type": "function", "function": {"name": "get_weather", "parameters": weather}});
        let p = Protocol::new(
            &analysis(&source),
            &Options {
                tools: vec![tool],
                ..Options::default()
            },
        );
        let st = structural_tag(&p).unwrap();
        let pairs = &st.structural_tag["format"]["tags"][0]["content"]["elements"];
        assert_eq!(
            pairs[0],
            tag(
                "<param name=\"city\">\n",
                json!({"type": "any_text"}),
                "\n</param>\n"
            )
        );
        assert_eq!(pairs[1]["type"], "optional");
        assert_eq!(
            pairs[1]["content"]["content"],
            json!({"type": "or", "elements": [const_string("c"), const_string("f")]})
        );
        assert!(
            st.warnings.iter().any(|w| w.contains("keys exact")),
            "{:?}",
            st.warnings
        );
    }

    #[test]
    fn legacy_form_has_structures_and_triggers() {
        let l = legacy(&Protocol::new(
            &hermes(),
            &Options {
                tools: tools(),
                ..Options::default()
            },
        ))
        .unwrap();
        assert_eq!(l.triggers, ["<tool_call>"]);
        assert_eq!(l.structures.len(), 2);
        assert_eq!(
            l.structures[1]["begin"],
            "<tool_call>\n{\"name\": \"search\", \"arguments\": "
        );
        assert_eq!(l.structures[1]["end"], "}\n</tool_call>");
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    fn with_tokens(a: &Analysis, options: Options, tokens: &[&str]) -> Value {
        let p = Protocol::new(
            a,
            &Options {
                tools: vec![tools().remove(1)],
                ..options
            },
        );
        let tokens = tokens.iter().map(|t| t.to_string()).collect();
        let options = StructuralTagOptions::default().with_special_tokens(tokens);
        structural_tag_with(&p, &options).unwrap().structural_tag
    }

    #[test]
    fn special_token_markers_are_tokens_and_trigger_the_calls() {
        let tokens = [
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<|im_end|>",
        ];
        let tag = with_tokens(&hermes(), Options::default(), &tokens);
        let call = json!({
            "type": "tag",
            "begin": {"type": "token", "token": "<tool_call>"},
            "end": {"type": "token", "token": "</tool_call>"},
            "content": {"type": "sequence", "elements": [
                {"type": "const_string", "value": "\n{\"name\": \"search\", \"arguments\": "},
                {"type": "json_schema", "json_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
                {"type": "const_string", "value": "}\n"},
            ]},
        });
        let want = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "optional", "content": {"type": "sequence", "elements": [
                {"type": "regex", "pattern": "[ \\t\\r\\n]*"},
                {"type": "tag",
                 "begin": {"type": "token", "token": "<think>"},
                 "content": {"type": "any_tokens", "exclude_tokens": ["</think>"]},
                 "end": {"type": "token", "token": "</think>"}},
            ]}},
            {"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"], "tags": [call],
             "at_least_one": false, "stop_after_first": false},
        ]}});
        assert_eq!(tag, want);
    }

    #[test]
    fn markers_that_are_no_special_token_stay_text() {
        let a = hermes();
        let plain = export(&a, Options::default()).structural_tag;
        let tools_only = vec![tools().remove(1)];
        let p = Protocol::new(
            &a,
            &Options {
                tools: tools_only,
                ..Options::default()
            },
        );
        assert_eq!(
            with_tokens(&a, Options::default(), &[]),
            structural_tag(&p).unwrap().structural_tag
        );
        assert_ne!(plain, Value::Null);
        // Only the reasoning end is a token: the calls keep text triggers,
        // and the block opened by the prompt ends at the token.
        let opened = Options {
            prompt: Some("<|im_start|>assistant\n<think>\n".into()),
            ..Options::default()
        };
        let tag = with_tokens(&a, opened, &["</think>", "<unrelated>"]);
        let elements = &tag["format"]["elements"];
        assert_eq!(
            elements[0],
            json!({"type": "tag", "begin": "",
                   "content": {"type": "any_tokens", "exclude_tokens": ["</think>"]},
                   "end": {"type": "token", "token": "</think>"}})
        );
        assert_eq!(elements[1]["type"], "triggered_tags");
        assert_eq!(
            elements[1]["tags"][0]["begin"],
            "<tool_call>\n{\"name\": \"search\", \"arguments\": "
        );
    }
}
