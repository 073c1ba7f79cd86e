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
//!   function sets `at_least_one`, parallel calls off `stop_after_first`;
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
//! Invariants: reads only the [`Protocol`]; deterministic JSON (keys in a
//! fixed order, tools in the order given); never panics; anything it cannot
//! express exactly becomes a looser format and an entry in `warnings`, never
//! a failed request; merged `allOf`s write at most
//! `json_schema::MAX_MERGED_WEIGHT` beyond the request's schemas, past
//! which a schema keeps only its type.

use serde::Serialize;
use serde_json::{json, Map, Value};

mod tokens;

use super::markers_among;
use crate::analysis::{Header, TaggedArguments, ToolFormat};
use crate::error::Result;
use crate::json_schema::{loosened, portable, too_large, Allowance};
use crate::protocol::{
    Arguments, CallLayout, HeaderAttributes, IdShape, Marker, Protocol, ReasoningBlock, Segment,
    Tool, ToolSection,
};

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
    let body = body(protocol, &mut notes);
    protocol.note_strict(&mut notes.warnings);
    let format = match reasoning(protocol.reasoning.as_ref()) {
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

/// The reasoning block the output may or must write first.
fn reasoning(block: Option<&ReasoningBlock>) -> Option<Value> {
    let r = block?;
    let end = r.end.trim();
    if r.opened {
        // The prompt (or delimiter reasoning) opened it: it must close first.
        return Some(tag("", json!({"type": "any_text"}), end));
    }
    // The template closes blocks it never opened (`</think>` alone): the
    // opening is optional inside the optional block.
    let begin = if r.bare_end { "" } else { r.start.trim() };
    let block = tag(begin, json!({"type": "any_text"}), end);
    // Templates write whitespace before the block (`\n<think>`).
    Some(optional(sequence(vec![whitespace(), block])))
}

/// What follows reasoning: calls, the answer, a choice of both, or free text.
fn body(protocol: &Protocol, notes: &mut Notes) -> Value {
    let calls = protocol.tools.as_ref().filter(|s| !s.tools.is_empty());
    let answer = protocol
        .response_schema
        .as_ref()
        .map(|schema| answer(protocol, schema, notes));
    match (calls, answer) {
        (Some(section), None) if !section.required => {
            calls_format(section, protocol.headers(), false, notes)
        }
        (Some(section), None) => eager_calls(protocol, section, notes),
        // An answer schema makes the output eager: a call or the answer.
        (Some(section), Some(answer)) => {
            let calls = eager_calls(protocol, section, notes);
            node("or", vec![("elements", Value::Array(vec![calls, answer]))])
        }
        (None, Some(answer)) => answer,
        (None, None) => json!({"type": "any_text"}),
    }
}

/// The JSON answer, inside the content wrapper when the template has one.
fn answer(protocol: &Protocol, schema: &Value, notes: &mut Notes) -> Value {
    let value = node(
        "json_schema",
        vec![("json_schema", xgrammar_schema(schema, "answer", notes))],
    );
    let (start, end) = (protocol.content.start.trim(), protocol.content.end.trim());
    if start.is_empty() && end.is_empty() {
        return value;
    }
    tag(start, value, end)
}

/// Calls that must come first: after the empty content block that templates
/// with a content wrapper write before calls
/// (`<|open|>response<|sep|><|close|>response<|sep|>`), if any.
fn eager_calls(protocol: &Protocol, section: &ToolSection, notes: &mut Notes) -> Value {
    let calls = calls_format(section, protocol.headers(), true, notes);
    let (start, end) = (protocol.content.start.trim(), protocol.content.end.trim());
    if start.is_empty() || end.is_empty() {
        return calls;
    }
    let empty = sequence(vec![
        whitespace(),
        const_string(start),
        whitespace(),
        const_string(end),
    ]);
    sequence(vec![optional(empty), calls])
}

/// The calls as `triggered_tags`: free text until a trigger, then a call (or
/// a section of calls) of one of the tools. `required`: no free text before
/// the first call and at least one; leading whitespace stays free.
fn calls_format(
    section: &ToolSection,
    headers: &[Header],
    required: bool,
    notes: &mut Notes,
) -> Value {
    let parallel = section.parallel;
    let mut tags = Vec::new();
    let mut words = Vec::new();
    for format in &section.formats {
        for (tag, word) in format_tags(
            format,
            &section.tools,
            headers,
            parallel && format.parallel,
            notes,
        ) {
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
            ("stop_after_first", Value::Bool(!parallel)),
        ],
    );
    if !required {
        return triggered;
    }
    sequence(vec![whitespace(), triggered])
}

/// The tags of one format with the trigger of each: a call tag per tool,
/// or one section tag holding them.
fn format_tags(
    format: &ToolFormat,
    tools: &[Tool],
    headers: &[Header],
    parallel: bool,
    notes: &mut Notes,
) -> Vec<(Value, String)> {
    let start = format.section_start.trim_start();
    let calls: Vec<(Value, String)> = tools
        .iter()
        .map(|t| call_tag(format, t, headers, !start.is_empty(), notes))
        .collect();
    if start.is_empty() {
        return calls;
    }
    let calls: Vec<Value> = calls.into_iter().map(|(tag, _)| tag).collect();
    let inner = node(
        "tags_with_separator",
        vec![
            ("tags", Value::Array(calls)),
            ("separator", Value::from(format.call_separator.as_str())),
            ("at_least_one", Value::Bool(true)),
            ("stop_after_first", Value::Bool(!parallel)),
        ],
    );
    let word = Marker::new(start).first_core().unwrap_or(start).to_string();
    let mut section = tag(start, inner, &format.section_end);
    if format.section_end_optional {
        // Written only after two calls or more: after one it may be missing.
        section["end"] = Value::Array(vec![
            Value::from(format.section_end.as_str()),
            Value::from(""),
        ]);
    }
    vec![(section, word)]
}

/// One tool's call as a tag, and its trigger. `in_section`: the call
/// follows a section marker, so its leading whitespace is the template's
/// and stays exact.
fn call_tag(
    format: &ToolFormat,
    tool: &Tool,
    headers: &[Header],
    in_section: bool,
    notes: &mut Notes,
) -> (Value, String) {
    let layout = CallLayout::new(format, &tool.name);
    let mut pieces = pieces(&layout.segments, layout.name_end, tool, headers, notes);
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
    let head = layout
        .segments
        .iter()
        .take_while(|s| is_fixed(s))
        .cloned()
        .collect::<Vec<_>>();
    let word = trigger_word(&head, &begin);
    (tag(&begin, content, &end), word)
}

/// A part of a call: exact text, or a format for what varies.
enum Piece {
    Fixed(String),
    Format(Value),
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

/// The call's segments as pieces: adjacent fixed text merged, tagged
/// arguments followed by their own closing text, a header's varying rest
/// after the name (`name_end`) as free text on its line.
fn pieces(
    segments: &[Segment],
    name_end: Option<usize>,
    tool: &Tool,
    headers: &[Header],
    notes: &mut Notes,
) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let more = match segment {
            Segment::Marker(text) if name_end == Some(i) => name_suffix(text, headers),
            Segment::Marker(text) | Segment::Text(text) => vec![Piece::Fixed(text.clone())],
            Segment::Id(shape) => vec![Piece::Format(id_format(shape))],
            Segment::Arguments(args) => {
                let mut more = vec![Piece::Format(arguments_format(args, tool, notes))];
                if let Arguments::Tagged(t) = args {
                    more.push(Piece::Fixed(t.end.clone()));
                }
                more
            }
            // Written as required: the template's own calls hold it.
            Segment::Optional(inner) => pieces(inner, None, tool, headers, notes),
        };
        for piece in more {
            match piece {
                Piece::Fixed(t) => push_fixed(&mut out, &t),
                format => out.push(format),
            }
        }
    }
    out
}

fn push_fixed(out: &mut Vec<Piece>, text: &str) {
    match out.last_mut() {
        Some(Piece::Fixed(prev)) => prev.push_str(text),
        _ if text.is_empty() => {}
        _ => out.push(Piece::Fixed(text.to_string())),
    }
}

/// The marker after a tagged name. When it ends a section header and holds
/// attributes the template varies per call (`" index="1"<|sep|>`), its
/// first word ends the name and the rest of the line up to the header's
/// close is free, as the parser reads it.
fn name_suffix(suffix: &str, headers: &[Header]) -> Vec<Piece> {
    let Some(h) = HeaderAttributes::of(suffix, headers) else {
        return vec![Piece::Fixed(suffix.to_string())];
    };
    let rest = node(
        "any_text",
        vec![("excludes", Value::Array(vec![Value::from("\n")]))],
    );
    vec![
        Piece::Fixed(h.word.to_string()),
        Piece::Format(tag("", rest, h.close)),
        Piece::Fixed(h.after.to_string()),
    ]
}

/// Where a call starts: the first core of its first marker, so that a call
/// of an unknown tool after it is no longer free text; a call with no
/// marker before its name starts with its first word.
fn trigger_word(head: &[Segment], begin: &str) -> String {
    let marker = head.iter().find_map(|s| match s {
        Segment::Marker(raw) => Marker::new(raw).first_core().map(str::to_string),
        _ => None,
    });
    let word = || begin.split_whitespace().next().unwrap_or(begin).to_string();
    marker
        .filter(|m| begin.starts_with(m.as_str()))
        .unwrap_or_else(word)
}

/// A call id: a JSON string, a counter, or an optional tagged text.
fn id_format(shape: &IdShape) -> Value {
    match shape {
        IdShape::JsonString => json!({"type": "json_schema", "json_schema": {"type": "string"}}),
        IdShape::Counter => json!({"type": "regex", "pattern": "[0-9]+"}),
        IdShape::Tagged { prefix, suffix } => {
            optional(tag(prefix, json!({"type": "any_text"}), suffix))
        }
    }
}

/// The arguments of `tool`.
fn arguments_format(args: &Arguments, tool: &Tool, notes: &mut Notes) -> Value {
    match args {
        Arguments::Json { as_string: false } => node(
            "json_schema",
            vec![("json_schema", object_schema(tool, notes))],
        ),
        Arguments::Json { as_string: true } => {
            notes.warn(format!(
                "{}: arguments written as a JSON string; any string accepted",
                tool.name
            ));
            json!({"type": "json_schema", "json_schema": {"type": "string"}})
        }
        Arguments::Tagged(t) => tagged_format(t, tool, notes),
        Arguments::Python => {
            notes.warn(format!(
                "{}: Python-call arguments; any text accepted up to the call's end",
                tool.name
            ));
            json!({"type": "any_text"})
        }
    }
}

/// Tagged arguments in the xgrammar XML style that spells them, else any text.
fn tagged_format(t: &TaggedArguments, tool: &Tool, notes: &mut Notes) -> Value {
    let schema = object_schema(tool, notes);
    match xml_style(t) {
        Some("qwen_xml") => node("qwen_xml_parameter", vec![("json_schema", schema)]),
        Some(style) => node(
            "json_schema",
            vec![("json_schema", schema), ("style", Value::from(style))],
        ),
        None => match tagged_pairs(t, &schema) {
            Some(pairs) => {
                notes.warn(format!("{}: tagged arguments in no xgrammar style; keys exact, values other than strings accepted as any text", tool.name));
                pairs
            }
            None => {
                notes.warn(format!("{}: tagged arguments in no xgrammar style; any text accepted up to the call's end", tool.name));
                json!({"type": "any_text"})
            }
        },
    }
}

/// Tagged arguments in a shape no xgrammar style spells, as one tag per
/// declared argument in the declared order (optional ones optional): the
/// keys are exact, a string value is raw text up to its close, an enum one
/// of its values; other values are any text (templates print them as JSON
/// or as Python literals). `None` when the shape is not that simple
/// (no declared properties, a separator, typed or escaped values).
fn tagged_pairs(t: &TaggedArguments, schema: &Value) -> Option<Value> {
    let simple = t.raw_strings
        && t.typed_value_prefix.is_none()
        && t.escaped_value.is_none()
        && t.elements.is_none()
        && t.separator.is_empty();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| simple && !p.is_empty())?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let pairs = properties.iter().map(|(key, property)| {
        let begin = format!("{}{key}{}{}", t.name_prefix, t.name_suffix, t.value_prefix);
        let pair = tag(&begin, raw_value(property), &t.close_for(key));
        if required.contains(&key.as_str()) {
            pair
        } else {
            optional(pair)
        }
    });
    Some(sequence(pairs.collect()))
}

/// A raw tagged value: one of a string enum's values, else any text.
fn raw_value(property: &Value) -> Value {
    let values = property
        .get("enum")
        .and_then(Value::as_array)
        .filter(|v| v.iter().all(Value::is_string));
    match values {
        Some(values) => node(
            "or",
            vec![(
                "elements",
                Value::Array(
                    values
                        .iter()
                        .map(|v| const_string(v.as_str().unwrap_or_default()))
                        .collect(),
                ),
            )],
        ),
        None => json!({"type": "any_text"}),
    }
}

/// One of xgrammar's XML argument styles, by its markers without
/// whitespace (which the style leaves to the value or to the space between
/// arguments).
struct XmlStyle {
    name: &'static str,
    /// Before an argument's name.
    prefix: &'static str,
    /// Between the name and the value: the whole text, or for typed styles
    /// (a type attribute the style writes per value) its fixed start.
    infix: &'static str,
    /// After a value.
    suffix: &'static str,
    typed: bool,
}

const XML_STYLES: &[XmlStyle] = &[
    XmlStyle {
        name: "qwen_xml",
        prefix: "<parameter=",
        infix: ">",
        suffix: "</parameter>",
        typed: false,
    },
    XmlStyle {
        name: "minimax_xml",
        prefix: "<parametername=\"",
        infix: "\">",
        suffix: "</parameter>",
        typed: false,
    },
    XmlStyle {
        name: "glm_xml",
        prefix: "<arg_key>",
        infix: "</arg_key><arg_value>",
        suffix: "</arg_value>",
        typed: false,
    },
    XmlStyle {
        name: "deepseek_xml",
        prefix: "<｜DSML｜parametername=\"",
        infix: "\"string=\"",
        suffix: "</｜DSML｜parameter>",
        typed: true,
    },
    XmlStyle {
        name: "kimi_k3_xml",
        prefix: "<|open|>argumentkey=\"",
        infix: "\"type=\"",
        suffix: "<|close|>argument<|sep|>",
        typed: true,
    },
];

/// The style whose markers the tagged arguments use, when nothing else
/// (named closes, escapes, nested elements, a separator) is in play.
fn xml_style(t: &TaggedArguments) -> Option<&'static str> {
    let plain = t.raw_strings
        && t.named_close.is_none()
        && t.escaped_value.is_none()
        && t.elements.is_none()
        && t.separator.trim().is_empty();
    if !plain {
        return None;
    }
    let (prefix, suffix) = (squeeze(&t.name_prefix), squeeze(&t.value_suffix));
    let infix = |value_prefix: &str| squeeze(&format!("{}{value_prefix}", t.name_suffix));
    let fits = |style: &XmlStyle, value_prefix: &str| match style.typed {
        true => infix(value_prefix).starts_with(style.infix),
        false => infix(value_prefix) == style.infix,
    };
    let style = XML_STYLES.iter().find(|s| {
        let typed_ok = match &t.typed_value_prefix {
            Some(typed) => s.typed && fits(s, typed),
            None => true,
        };
        s.prefix == prefix && s.suffix == suffix && fits(s, &t.value_prefix) && typed_ok
    })?;
    Some(style.name)
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
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

fn is_fixed(segment: &Segment) -> bool {
    matches!(segment, Segment::Marker(_) | Segment::Text(_))
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

/// The tool's parameters as an object schema (`{}` and non-objects mean any
/// object).
fn object_schema(tool: &Tool, notes: &mut Notes) -> Value {
    match &tool.parameters {
        Value::Object(m)
            if m.contains_key("properties") || m.contains_key("type") || m.contains_key("$ref") =>
        {
            xgrammar_schema(&tool.parameters, &tool.name, notes)
        }
        _ => json!({"type": "object"}),
    }
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
    let section = protocol.tools.as_ref().filter(|s| !s.tools.is_empty());
    if let Some(s) = section {
        for (format, tool) in s
            .formats
            .iter()
            .flat_map(|f| s.tools.iter().map(move |t| (f, t)))
        {
            match legacy_structure(format, tool, &mut notes) {
                Some(s) => structures.push(s),
                None => notes.warn(format!("{}: the call is not fixed text around JSON arguments; left out of the legacy form", tool.name)),
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
fn legacy_structure(format: &ToolFormat, tool: &Tool, notes: &mut Notes) -> Option<Value> {
    let layout = CallLayout::new(format, &tool.name);
    if layout.arguments() != Some(&Arguments::Json { as_string: false }) {
        return None;
    }
    let begin = format!("{}{}", format.section_start, layout.head_text()?);
    let end = format!("{}{}", layout.tail_text()?, format.section_end);
    let fields = [
        ("begin", Value::from(begin.trim_start())),
        ("schema", object_schema(tool, notes)),
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
        let t = TaggedArguments {
            name_prefix: "<param name=\"".into(),
            name_suffix: "\">".into(),
            value_prefix: String::new(),
            typed_value_prefix: None,
            value_suffix: "</param>".into(),
            named_close: None,
            separator: String::new(),
            end: String::new(),
            raw_strings: true,
            escaped_value: None,
            elements: None,
        };
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]});
        let pairs = tagged_pairs(&t, &schema).unwrap();
        assert_eq!(
            pairs["elements"][0],
            tag(
                "<param name=\"city\">",
                json!({"type": "any_text"}),
                "</param>"
            )
        );
        let unit = &pairs["elements"][1];
        assert_eq!(unit["type"], "optional");
        assert_eq!(unit["content"]["content"]["elements"][1], const_string("f"));
        assert!(tagged_pairs(
            &TaggedArguments {
                separator: ",".into(),
                ..t
            },
            &schema
        )
        .is_none());
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
