//! The transformers `response_template` export: the declarative spec of
//! what the model writes, executed by `parse_response` (transformers ≥ 5.13)
//! in servers that parse with no code of ours.
//!
//! A version-1 response template is a flat machine of *fields*: outside any
//! field the parser watches every field's `open` (and the implicit field's
//! `close`); inside a field only that field's `close`. Each field's text goes
//! through a content parser (`text`, `json`, `xml-inline`, `python-call-list`)
//! and an optional `transform` that reshapes it, with the named groups of the
//! open and close patterns in scope. From a [`Protocol`]:
//!
//! - `reasoning_content`: between the reasoning markers; a block the output
//!   starts inside (the prompt opened it, or delimiter reasoning) opens at the
//!   start of the text (`\A`), taking the opening marker when the model
//!   writes it again; a lone end marker first opens it there too (a
//!   template's bare end, or a model's), so the marker is not content;
//!   after a prompt that closed the block, a block the model opens anyway is
//!   reasoning too (as the parser reads it);
//! - `content`: the implicit field (every byte no other field claims), or the
//!   content wrapper's markers when the template has one (text at the start
//!   that nothing else opens is content too: the prompt opened the wrapper); pieces split by
//!   tool calls are joined; the implicit field closes on the end of a tool
//!   section with no opening marker at the very end of the text;
//! - `tool_calls`: one region per call (`repeats`), its open pattern the
//!   call's fixed text up to the arguments (optional section start or call
//!   separator first, the name captured), its close the text after them
//!   (optional section end after). The arguments are read by the parser their
//!   notation needs: `json`, `json` with unquoted keys and string delimiters
//!   (`{key:<|"|>v<|"|>}`), `xml-inline` for tagged parameters; a JSON call
//!   object between call markers is parsed whole and mapped by key path;
//!   Python calls are one region over the bracketed list (`python-call-list`),
//!   or one `xml-inline` region per call where strings are written raw
//!   (`'it's'`), which `python-call-list` refuses.
//!   Several formats (a native one and the fallback dialects the parser
//!   reads too) share the field, one branch each, when their arguments
//!   take the same content parser.
//!   Tagged values are text: `parse_response(..., tools=tools)` types them per
//!   the tools' schemas, which is how the spec types arguments. What the
//!   parser recovers the export reads too: a value whose close never comes
//!   runs to the call's close, and a call's own end marker closes it when
//!   the arguments' end (`</function>`) is missing.
//!
//! The protocol already read the prompt (where the output starts relative to
//! reasoning), so the template parses the output alone: its start anchor
//! (`\Z`) drops whatever prefix the caller passes. Like every export it is
//! per request.
//!
//! Invariants: reads only the protocol; never panics; deterministic; every
//! pattern is a Python `regex` pattern (markers escaped, their whitespace
//! flexible); what the spec cannot express is served loosely with a line in
//! [`ResponseTemplate::warnings`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::analysis::{ArgumentsSlot, Header, TaggedArguments, ToolFormat};
use crate::error::Result;
use crate::protocol::{
    Arguments, CallLayout, IdShape, Protocol, ReasoningBlock, Segment, Start, ToolSection,
};

/// The export (the shape in `docs/cli.md`): the template and the preserved tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseTemplate {
    /// The version-1 template, as `parse_response` takes it.
    pub response_template: Value,
    /// Tokens a tokenizer must keep whole for the markers to be seen.
    pub preserved_tokens: Vec<String>,
    /// What could only be served loosely, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Starts the close pattern of a call whose region is a JSON object: the
/// close comes only after the object's `}`, so a call's markers quoted inside
/// a string argument (`"text": "... </tool_call> ..."`) do not end it.
const JSON_CLOSED: &str = r"(?<=\})";

/// Stands for the function name while a call is laid out; never in a name.
const NAME: &str = "\u{E000}";

/// The response template of `protocol`. Errors (kind `input`) when calls are
/// required but cannot be written (see [`Protocol::check_servable`]).
pub fn response_template(protocol: &Protocol) -> Result<ResponseTemplate> {
    protocol.check_servable()?;
    let mut warnings = protocol.warnings.clone();
    let calls = protocol
        .tools
        .as_ref()
        .and_then(|s| tool_calls(s, protocol.headers(), &mut warnings));
    let mut fields = Map::new();
    let call_open = calls.as_ref().map(|c| c.lookahead.clone());
    if let Some(r) = protocol.reasoning.clone().or_else(|| later_block(protocol)) {
        fields.insert(
            "reasoning_content".into(),
            reasoning(protocol, &r, call_open.as_deref()),
        );
    }
    fields.insert("content".into(), content(protocol, call_open.as_deref()));
    if let Some(c) = calls {
        fields.insert("tool_calls".into(), c.field);
    }
    let template = json!({
        "version": 1,
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": r"\Z",
        "fields": fields,
    });
    Ok(ResponseTemplate {
        response_template: template,
        preserved_tokens: protocol.preserved_tokens.clone(),
        warnings,
    })
}

/// The block a model may still open after a prompt that closed one (or
/// decided there is none): the parser reads a block opened by its marker
/// anywhere, so the export does too. None without an opening marker.
fn later_block(protocol: &Protocol) -> Option<ReasoningBlock> {
    let r = protocol.markup.reasoning.as_ref()?;
    (!is_blank(&r.start) && !is_blank(&r.end)).then(|| ReasoningBlock {
        start: r.start.clone(),
        end: r.end.clone(),
        opened: false,
        bare_end: false,
    })
}

/// The reasoning field: opened by its marker, or at the start of the text
/// when the output starts inside the block. A block left open ends where a
/// call starts (models forget the end marker before calling), as the parser
/// reads it.
fn reasoning(protocol: &Protocol, r: &ReasoningBlock, call_open: Option<&str>) -> Value {
    let end = core_flex(&r.end);
    let starts_open = r.opened || protocol.start == Start::InReasoning;
    let open = if is_blank(&r.start) {
        // Delimiter reasoning: from the start, if the end marker follows.
        format!(r"\A(?=.*?{end})")
    } else if starts_open {
        // The model may write the opening marker the prompt already wrote
        // (`<think>` again): the parser drops it, so it is no reasoning text.
        let reopened = format!(r"(?:\s*{})?", core_flex(&r.start));
        match is_blank(&protocol.content.start) {
            true => format!(r"\A{reopened}"),
            // An output that opens its content section straight away left the block.
            false => format!(r"\A(?!\s*{}){reopened}", core_flex(&protocol.content.start)),
        }
    } else {
        // `</think>answer`: a lone end marker first closes an empty block
        // (templates and models write one where the prompt opened none) or
        // repeats the one the prompt wrote; either way the parser reads no
        // text of it.
        format!(r"{}|\A(?=\s*{end})", flex(&r.start))
    };
    // The turn seam ends the block too, left out of it, as the parser
    // reads it (`...<SPECIAL_12>\n<SPECIAL_11>Assistant\n<TOOLCALL>`).
    let seam = protocol
        .turn_seam()
        .map(|s| format!(r"|\s*{}\s*{}\s*", escape(&s.stop), flex(&s.header)))
        .unwrap_or_default();
    let close = match call_open {
        Some(call) => format!(r"{}{seam}|(?={call})(?!.*?{end})", flex(&r.end)),
        None => format!("{}{seam}", flex(&r.end)),
    };
    json!({"open_pattern": open, "close_pattern": close, "content": "text"})
}

/// The content field: implicit, or between the wrapper's markers. A wrapper
/// with no end marker runs up to the next call (less the end of the message
/// before it, `<|end|>`).
fn content(protocol: &Protocol, call_open: Option<&str>) -> Value {
    let (start, end) = (&protocol.content.start, &protocol.content.end);
    let mut field = json!({"content": "text", "repeats": true, "join": ""});
    if is_blank(start) {
        // The end of a section with no opening marker, at the very end of
        // the text, closes nothing (`<tool_call|>Text.<|tool_response>`), as
        // the parser reads it.
        if let Some(end) = bare_section_end(protocol) {
            field["close_pattern"] = json!(format!(r"{}\s*\Z", flex(end)));
        }
        return field;
    }
    field["open_pattern"] = json!(match reasoning_opens_at_start(protocol) {
        true => flex(start),
        false => format!(
            r"{}|\A(?!\s*(?:{}))",
            flex(start),
            claimed_at_start(protocol, call_open).join("|")
        ),
    });
    if !is_blank(end) {
        field["close_pattern"] = json!(flex(end));
    } else if let Some(open) = call_open {
        let message_end = optional(&protocol.turn.message_end);
        field["close_pattern"] = json!(format!("{message_end}(?={open})"));
    }
    field
}

/// The output starts inside the reasoning block (the reasoning field opens
/// at `\A`, see [`reasoning`]): the start is not content.
fn reasoning_opens_at_start(protocol: &Protocol) -> bool {
    protocol
        .reasoning
        .as_ref()
        .is_some_and(|r| r.opened || protocol.start == Start::InReasoning || is_blank(&r.start))
}

/// What opens something other than content at the start of the output:
/// the wrapper itself, the reasoning markers, a call. Text before any of
/// them is content even without the wrapper's opening (the prompt wrote it,
/// as with thinking off), as the parser reads it.
fn claimed_at_start(protocol: &Protocol, call_open: Option<&str>) -> Vec<String> {
    let reasoning = protocol.markup.reasoning.iter();
    let markers = reasoning.flat_map(|r| [&r.start, &r.end]);
    let mut claimed: Vec<String> = std::iter::once(&protocol.content.start)
        .chain(markers)
        .filter(|m| !is_blank(m))
        .map(|m| core_flex(m))
        .collect();
    claimed.extend(call_open.map(str::to_owned));
    claimed
}

/// The end of the template's own tool section when the section has no
/// opening marker.
fn bare_section_end(protocol: &Protocol) -> Option<&str> {
    let section = protocol.tools.as_ref().filter(|s| !s.fallback)?;
    let format = section.formats.first()?;
    (is_blank(&format.section_start) && !is_blank(&format.section_end))
        .then_some(format.section_end.as_str())
}

/// The tool-call field and a capture-free pattern of a call's start (what
/// ends a content wrapper with no end marker).
struct Calls {
    field: Value,
    lookahead: String,
}

/// The field for the section's calls. One format is laid out as it is best
/// read; several (a native format and the fallback dialects the parser
/// also reads) share one field, each format a branch of its open and close
/// patterns, when their arguments take the same content parser; else the
/// first format alone, with a warning.
fn tool_calls(
    section: &ToolSection,
    headers: &[Header],
    warnings: &mut Vec<String>,
) -> Option<Calls> {
    let names: Vec<&str> = section.tools.iter().map(|t| t.name.as_str()).collect();
    let names = Names {
        tools: &names,
        headers,
    };
    let [first, others @ ..] = section.formats.as_slice() else {
        return None;
    };
    if others.is_empty() {
        return one_format(first, &names, warnings);
    }
    let mut merged_warnings = Vec::new();
    let laid_out: Option<Vec<Calls>> = section
        .formats
        .iter()
        .map(|f| match f.arguments {
            ArgumentsSlot::Python { .. } => None,
            _ => Some(laid_out_calls(f, &names, &mut merged_warnings)),
        })
        .collect();
    if let Some(merged) = laid_out.and_then(|calls| merge(&calls)) {
        warnings.extend(merged_warnings);
        return Some(merged);
    }
    warnings.push(format!(
        "response_template: one tool-call format of {}; the others are not parsed",
        section.formats.len()
    ));
    one_format(first, &names, warnings)
}

/// The field of one format's calls, as that format is best read.
fn one_format(format: &ToolFormat, names: &Names, warnings: &mut Vec<String>) -> Option<Calls> {
    match &format.arguments {
        ArgumentsSlot::Python { .. } => python_calls(format, names.tools, warnings),
        _ => whole_json_call(format).or_else(|| Some(laid_out_calls(format, names, warnings))),
    }
}

/// One field reading every format of `calls`: the open, close and lookahead
/// patterns are alternations of theirs (a group name may repeat across
/// branches in Python's `regex`). None when the formats' arguments need
/// different content parsers or call transforms: a field has one of each.
fn merge(calls: &[Calls]) -> Option<Calls> {
    let first = &calls.first()?.field;
    let same = |key: &str| calls.iter().all(|c| c.field.get(key) == first.get(key));
    if !["content", "content_args", "transform", "repeats"]
        .iter()
        .all(|k| same(k))
    {
        return None;
    }
    let branches = |key: &str| {
        let all: Vec<String> = calls
            .iter()
            .filter_map(|c| c.field.get(key).and_then(Value::as_str))
            .map(|p| format!("(?:{p})"))
            .collect();
        (all.len() == calls.len()).then(|| all.join("|"))
    };
    let mut field = first.clone();
    field["open_pattern"] = json!(branches("open_pattern")?);
    field["close_pattern"] = json!(branches("close_pattern")?);
    let lookahead: Vec<String> = calls
        .iter()
        .map(|c| format!("(?:{})", c.lookahead))
        .collect();
    Some(Calls {
        field,
        lookahead: lookahead.join("|"),
    })
}

/// The `type`/`function` call object with `name` and `arguments` read from
/// these placeholders, and `id` when there is one.
fn call_transform(name: &str, arguments: &str, id: Option<&str>) -> Value {
    let mut call = json!({"type": "function", "function": {"name": name, "arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    call
}

/// A JSON call object between call markers, parsed whole and mapped by key
/// path: robust to key order and spacing. Needs marked calls and keys a
/// placeholder can name (word characters).
fn whole_json_call(format: &ToolFormat) -> Option<Calls> {
    use crate::analysis::{IdSlot, NameSlot};
    let (NameSlot::JsonField { path: name }, ArgumentsSlot::Json { path: args, .. }) =
        (&format.name, &format.arguments)
    else {
        return None;
    };
    if is_blank(&format.call_start) || is_blank(&format.call_end) {
        return None;
    }
    let id = match &format.id {
        None => None,
        Some(IdSlot::JsonField { path, .. }) => Some(path),
        Some(_) => return None,
    };
    let placeholder = |path: &Vec<String>| {
        let word = |k: &String| !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_');
        (!path.is_empty() && path.iter().all(word))
            .then(|| format!("{{content.{}}}", path.join(".")))
    };
    let (name, args) = (placeholder(name)?, placeholder(args)?);
    let id = match id {
        Some(p) => Some(placeholder(p)?),
        None => None,
    };
    let open = format!("{}{}", optional_lead(format), flex(&format.call_start));
    let close = format!(
        "{JSON_CLOSED}{}{}",
        flex(&format.call_end),
        optional(&format.section_end)
    );
    let field = json!({
        "open_pattern": open,
        "close_pattern": close,
        "repeats": true,
        "content": "json",
        "transform": call_transform(&name, &args, id.as_deref()),
    });
    Some(Calls {
        field,
        lookahead: open,
    })
}

/// Python calls: the bracketed list between the section markers is one
/// region, read by `python-call-list`; strings written raw need one region
/// per call instead (`raw_python_calls`).
fn python_calls(format: &ToolFormat, names: &[&str], warnings: &mut Vec<String>) -> Option<Calls> {
    let (start, end) = (
        format.section_start.trim_end(),
        format.section_end.trim_start(),
    );
    let (Some(start), Some(end)) = (start.strip_suffix('['), end.strip_prefix(']')) else {
        warnings.push("response_template: Python calls without a bracketed list are not expressible; no tool_calls field".into());
        return None;
    };
    if is_blank(start) {
        warnings.push("response_template: Python calls without a section marker are not expressible; no tool_calls field".into());
        return None;
    }
    if let ArgumentsSlot::Python { raw_strings: true } = format.arguments {
        return Some(raw_python_calls(start, end, names));
    }
    let open = format!(r"{}(?=\s*\[)", flex(start));
    let mut field = json!({
        "open_pattern": open,
        "content": "python-call-list",
        "transform_each": true,
        "transform": call_transform("{name}", "{arguments}", None),
    });
    if !is_blank(end) {
        field["close_pattern"] = json!(format!(r"(?<=\])\s*{}", flex(end)));
    }
    Some(Calls {
        field,
        lookahead: flex(start),
    })
}

/// Python calls whose strings are `'` + value + `'` unescaped
/// (`text='it's'`): `python-call-list` is strict and refuses the whole
/// list, so each call is a region (`name(` opens it, after the section start
/// or the previous call's `),`; `)` then `,` or the section end closes it,
/// the `)` kept in the region as the end of the last value) and its keyword
/// arguments are read by `xml-inline`. A string runs to the quote before
/// `, key=` or the final `)`, as the parser reads it; the value keeps its
/// `='` and that end so that `string_delims` (pairs `='`..`',` and
/// `='`..`')`) take it whole, unescaped; other values (`3`, `True`,
/// `{"a": 1}`, `['x', 'y']`, whose quoted items the last pair turns into
/// JSON strings) are JSON where they can be, else text that `tools=` types.
fn raw_python_calls(start: &str, end: &str, names: &[&str]) -> Calls {
    let name = name_group(names, false, true, false);
    let any_name = name_group(names, false, false, false);
    let open = format!(r"(?:{}\s*\[\s*|(?<=\)\s*,\s*)){name}\(", flex(start));
    let close = format!(
        r"(?<=\))\s*(?:,\s*(?={any_name}\()|\]\s*{})",
        flex(end.trim_start())
    );
    let next_key = r"\s*[A-Za-z_]\w*\s*=";
    let tag = format!(
        r"(?P<key>[A-Za-z_]\w*)\s*(?:(?P<value>='.*?'(?:,(?={next_key})|\)\Z))|=\s*(?P<value>.*?)(?=\s*,{next_key}|\s*\)\Z))"
    );
    let field = json!({
        "open_pattern": open,
        "close_pattern": close,
        "repeats": true,
        "content": "xml-inline",
        "content_args": {"tag_pattern": tag, "value_parser": {"name": "json", "args": {
            "string_delims": [["='", "',"], ["='", "')"], ["'", "'"]],
            "allow_non_json": true,
            "strip": false,
        }}},
        "transform": call_transform("{name}", "{content}", None),
    });
    Calls {
        field,
        lookahead: flex(start),
    }
}

/// A call as its layout spells it: the text before the arguments opens the
/// region (name and id captured), the text after closes it.
fn laid_out_calls(format: &ToolFormat, names: &Names, warnings: &mut Vec<String>) -> Calls {
    let layout = CallLayout::new(format, NAME);
    let flat = layout.flat();
    let at = flat
        .iter()
        .position(|s| matches!(s, Segment::Arguments(_)))
        .unwrap_or(flat.len());
    let (head, tail) = (&flat[..at], flat.get(at + 1..).unwrap_or(&[]));
    let notation = layout
        .arguments()
        .map(|a| notation(a, head, tail, warnings));
    let braces = notation.as_ref().is_some_and(|n| n.braces);
    let head_re = |capture| {
        addressed_head(head, names, capture)
            .unwrap_or_else(|| segments(head, names.tools, capture, braces, Side::Head))
    };
    let (open_head, bare_head) = (head_re(true), head_re(false));
    let tail_re = segments(tail, names.tools, true, braces, Side::Tail);
    let lead = optional_lead(format);
    let open = format!("{lead}{open_head}");
    let json_object = notation
        .as_ref()
        .is_some_and(|n| n.parser == "json" && !n.braces);
    let close = format!(
        "{}{}{tail_re}{}",
        if json_object { JSON_CLOSED } else { "" },
        arguments_end(&layout, tail),
        call_end(format, tail, &bare_head)
    );
    let mut field =
        json!({"open_pattern": tidy(open), "close_pattern": tidy(close), "repeats": true});
    let id = head
        .iter()
        .chain(tail)
        .any(|s| s == &Segment::Id(IdShape::JsonString))
        .then_some("{id}");
    match notation {
        Some(n) => {
            field["content"] = json!(n.parser);
            if !n.args.is_empty() {
                field["content_args"] = Value::Object(n.args);
            }
            field["transform"] = call_transform("{name}", "{content}", id);
        }
        None => field["transform"] = call_transform("{name}", "{content}", id),
    }
    Calls {
        field,
        lookahead: format!("{lead}{bare_head}"),
    }
}

/// What a call's name is read against: the request's tools (any name when
/// there are none) and the channel headers a call may be addressed in.
struct Names<'a> {
    tools: &'a [&'a str],
    headers: &'a [Header],
}

/// The head of a call addressed after a header's label and closed by the
/// header (` to=functions.NAME<|channel|>commentary json<|message|>`): the
/// parser also reads the address inside a header opened before it
/// (`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`),
/// the label's words on either side of the name, so the export takes both
/// orders. None for any other head, and for a head whose address already
/// sits inside the header (only that order is read then).
fn addressed_head(head: &[Segment], names: &Names, capture: bool) -> Option<String> {
    let mut text = String::new();
    for segment in head {
        match segment {
            Segment::Marker(raw) | Segment::Text(raw) => text.push_str(raw),
            _ => return None,
        }
    }
    let (before, after) = text.split_once(NAME)?;
    if after.contains(NAME) {
        return None; // a name the header echoes: laid out as written
    }
    let h = names
        .headers
        .iter()
        .find(|h| after.trim_end().ends_with(h.close.as_str()))?;
    let address = before.trim();
    if address.is_empty() || address.contains(char::is_whitespace) || address.contains(&h.open) {
        return None;
    }
    // A label: the header's words, never past its close or a line.
    let label = format!(r"(?:(?!{})[^\n])*?", core_flex(&h.close));
    Some(format!(
        r"(?:{}{label})?\s*{}{}(?=\s|<){label}{}",
        core_flex(&h.open),
        escape(address),
        name_group(names.tools, false, capture, false),
        core_flex(&h.close)
    ))
}

/// What tagged arguments write after the last one (`</function>`): part of
/// the close, else the region would end at the first `</parameter>`-like
/// marker the call end shares. Optional when the call's tail is a marker of
/// its own that no argument marker holds (`</tool_call>`): a call missing its
/// arguments' end ends there, as our parser reads it, instead of running on
/// over the text and calls after it.
fn arguments_end(layout: &CallLayout, tail: &[Segment]) -> String {
    match layout.arguments() {
        Some(Arguments::Tagged(t)) if is_keyed_object(t) => String::new(),
        Some(Arguments::Tagged(t)) if own_marker(tail, t) => optional(&t.end),
        Some(Arguments::Tagged(t)) => flex(&t.end),
        _ => String::new(),
    }
}

/// Whether the call's `tail` is literal text with a marker that none of the
/// arguments' markers contains (`</tool_call>` beside `</parameter>`; not a
/// prefix every marker shares, as MiniMax-M3's `]<]minimax[>[`).
fn own_marker(tail: &[Segment], t: &TaggedArguments) -> bool {
    let mut text = String::new();
    for segment in tail {
        match segment {
            Segment::Marker(raw) | Segment::Text(raw) => text.push_str(raw),
            _ => return false,
        }
    }
    let core = text.trim();
    let arguments = [
        &t.name_prefix,
        &t.name_suffix,
        &t.value_prefix,
        &t.value_suffix,
        &t.separator,
        &t.end,
    ];
    has_marker(tail) && !arguments.iter().any(|m| m.contains(core))
}

/// Whether `run` writes a marker (not only space or punctuation text).
fn has_marker(run: &[Segment]) -> bool {
    run.iter()
        .any(|s| matches!(s, Segment::Marker(m) if !is_blank(m)))
}

/// How the close of a call ends: a marker in the call's tail is enough; a
/// tail of JSON punctuation alone (`}`) also needs what follows: the section
/// end, the next call, or the end of the text.
fn call_end(format: &ToolFormat, tail: &[Segment], next_head: &str) -> String {
    if has_marker(tail) {
        return optional(&format.section_end);
    }
    let mut ends = Vec::new();
    if !is_blank(&format.section_end) {
        ends.push(format!(r"\s*{}", flex(&format.section_end)));
    }
    let separator = if is_blank(&format.call_separator) {
        String::new()
    } else {
        format!("(?:{})?", flex(&format.call_separator))
    };
    ends.push(format!(r"(?=\s*{separator}\s*{next_head})"));
    ends.push(r"\s*\Z".to_string());
    format!("(?:{})", ends.join("|"))
}

/// What may precede a call's own start: the section start (first call) or
/// the call separator (later calls), both optional.
fn optional_lead(format: &ToolFormat) -> String {
    let leads: Vec<String> = [&format.section_start, &format.call_separator]
        .into_iter()
        .filter(|m| !is_blank(m))
        .map(|m| flex(m))
        .collect();
    match leads.as_slice() {
        [] => String::new(),
        many => format!("(?:{})?", many.join("|")),
    }
}

/// `(?:MARKER)?` with the marker's leading space, or nothing for a blank one.
fn optional(marker: &str) -> String {
    if is_blank(marker) {
        String::new()
    } else {
        format!("(?:{})?", flex(marker))
    }
}

/// The content parser of a call's arguments.
struct ArgumentSpec {
    parser: &'static str,
    args: Map<String, Value>,
    /// The object's braces are the name suffix's last character and the
    /// call end's first: they stay in the region (`call:f{a:1}<tool_call|>`).
    braces: bool,
}

fn notation(
    arguments: &Arguments,
    head: &[Segment],
    tail: &[Segment],
    warnings: &mut Vec<String>,
) -> ArgumentSpec {
    let none = || ArgumentSpec {
        parser: "json",
        args: Map::new(),
        braces: false,
    };
    match arguments {
        Arguments::Json { .. } => none(),
        Arguments::Python => none(),
        Arguments::Tagged(t) if is_keyed_object(t) => {
            let braces = ends_with_core(head, '{') && starts_with_core(tail, '}');
            if !braces {
                warnings.push("response_template: a `key:value` argument list without braces is read as JSON and may fail".into());
            }
            let mut args = Map::new();
            args.insert("unquoted_keys".into(), json!(true));
            if !is_blank(&t.value_prefix) && !is_blank(&t.value_suffix) {
                args.insert(
                    "string_delims".into(),
                    json!([[t.value_prefix.trim(), t.value_suffix.trim()]]),
                );
            }
            ArgumentSpec {
                parser: "json",
                args,
                braces,
            }
        }
        Arguments::Tagged(t) => tagged(t, warnings),
    }
}

/// `key:value` pairs joined by `,` (Gemma 4's `{city:<|"|>Paris<|"|>,days:3}`):
/// JSON with unquoted keys and string delimiters.
fn is_keyed_object(t: &TaggedArguments) -> bool {
    is_blank(&t.name_prefix) && t.name_suffix.trim() == ":" && t.separator.trim() == ","
}

/// Tagged parameters as `xml-inline`: one match per argument, its key and
/// value captured; values left as text for the tools' schemas to type.
fn tagged(t: &TaggedArguments, warnings: &mut Vec<String>) -> ArgumentSpec {
    if t.elements.is_some() {
        warnings.push(
            "response_template: objects and lists written as nested elements stay text".into(),
        );
    }
    let key = if is_blank(&t.name_prefix) {
        r"(?P<key>\w+)".to_string()
    } else {
        r"(?P<key>[^\s<>]+?)".to_string()
    };
    // The whitespace the template writes right around a value is the
    // format's, exactly (optional); any more is the value's, as our parser
    // reads it (`\s*` there trimmed `" hello"` to `"hello"`).
    let (name_suffix, value_prefix) = match (t.typed_word(), &t.typed_value_prefix) {
        (Some((before, after)), _) => (
            flex(&t.name_suffix),
            format!(r"{}\w+{}", flex(before), flex_open(after)),
        ),
        (None, Some(typed)) => (
            flex(&t.name_suffix),
            format!("(?:{}|{})", flex_open(&t.value_prefix), flex_open(typed)),
        ),
        (None, None) if is_blank(&t.value_prefix) => (flex_open(&t.name_suffix), String::new()),
        (None, None) => (flex(&t.name_suffix), flex_open(&t.value_prefix)),
    };
    let value = match &t.escaped_value {
        // Inside the wrapper the value runs to the wrapper's close: the
        // argument's closing marker may be quoted in it (`<![CDATA[a</param>]]>`).
        Some((open, close)) => format!(
            r"(?:\s*{}(?P<value>.*?){}\s*|(?P<value>.*?))",
            flex(open),
            flex(close)
        ),
        None => "(?P<value>.*?)".to_string(),
    };
    let suffix = t.value_suffix.trim_start();
    let close = match &t.named_close {
        Some(after) => format!("{}(?P=key){}", flex(suffix), flex(after)),
        None => flex(suffix),
    };
    // A value whose close never comes before the call's (cut off, or the
    // marker forgotten) runs to the call's close, as our parser recovers
    // it; without this `xml-inline` matches nothing and the argument is
    // dropped silently.
    let space = optional_exact(&t.value_suffix[..t.value_suffix.len() - suffix.len()]);
    let pattern = tidy(format!(
        r"{}{key}{name_suffix}{value_prefix}{value}{space}(?:{close}|\Z)",
        flex(&t.name_prefix),
    ));
    let mut args = Map::new();
    args.insert("tag_pattern".into(), json!(pattern));
    if !t.raw_strings {
        args.insert(
            "value_parser".into(),
            json!({"name": "json", "args": {"allow_non_json": true}}),
        );
    }
    ArgumentSpec {
        parser: "xml-inline",
        args,
        braces: false,
    }
}

fn ends_with_core(segments: &[Segment], c: char) -> bool {
    matches!(segments.last(), Some(Segment::Marker(m) | Segment::Text(m)) if m.trim_end().ends_with(c))
}

fn starts_with_core(segments: &[Segment], c: char) -> bool {
    matches!(segments.first(), Some(Segment::Marker(m) | Segment::Text(m)) if m.trim_start().starts_with(c))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Head,
    Tail,
}

/// The pattern of a run of call segments. `capture`: name and id as named
/// groups (else plain groups, for lookaheads); `braces`: the object's brace
/// at the run's inner edge stays out of the match (a lookaround).
fn segments(run: &[Segment], names: &[&str], capture: bool, braces: bool, side: Side) -> String {
    let mut out = String::new();
    let mut named = false;
    for (i, segment) in run.iter().enumerate() {
        let inner = match side {
            Side::Head => i + 1 == run.len(),
            Side::Tail => i == 0,
        };
        match segment {
            Segment::Marker(raw) | Segment::Text(raw) => {
                let text = match (braces && inner, side) {
                    (true, Side::Head) => raw.trim_end().strip_suffix('{').unwrap_or(raw),
                    (true, Side::Tail) => raw.trim_start().strip_prefix('}').unwrap_or(raw),
                    _ => raw.as_str(),
                };
                let json = matches!(segment, Segment::Text(_));
                out.push_str(&with_names(text, json, names, capture, &mut named));
                if braces && inner && side == Side::Head {
                    out.push_str(r"(?=\{)");
                }
            }
            Segment::Id(shape) => out.push_str(&id(shape, capture)),
            // None in a flat layout: every part is required here.
            Segment::Arguments(_) | Segment::Optional(_) => {}
        }
        if braces
            && inner
            && side == Side::Tail
            && matches!(segment, Segment::Marker(_) | Segment::Text(_))
        {
            out.insert_str(0, r"(?<=\})");
        }
    }
    out
}

/// `text` with the name placeholder as a group: named the first time, a
/// back reference after (a name the template writes twice).
fn with_names(
    text: &str,
    json_text: bool,
    names: &[&str],
    capture: bool,
    named: &mut bool,
) -> String {
    let spell = |part: &str| {
        if json_text {
            flex_json(part)
        } else {
            flex_counted(part)
        }
    };
    let mut out = String::new();
    for (i, part) in text.split(NAME).enumerate() {
        if i > 0 {
            out.push_str(&name_group(names, json_text, capture, *named));
            *named = true;
        }
        out.push_str(&spell(part));
    }
    out
}

/// The function name: one of the tools, or any name when none are given.
fn name_group(names: &[&str], json_text: bool, capture: bool, named: bool) -> String {
    if named && capture {
        return "(?P=name)".to_string();
    }
    let body = if names.is_empty() {
        if json_text {
            r#"(?:[^"\\]|\\.)+?"#
        } else {
            r#"[^\s<>"'(){}\[\],:=]+?"#
        }
        .to_string()
    } else {
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        sorted
            .iter()
            .map(|n| escape(n))
            .collect::<Vec<_>>()
            .join("|")
    };
    if capture {
        format!("(?P<name>{body})")
    } else {
        format!("(?:{body})")
    }
}

/// An id: a JSON string is captured; a counter and a tagged id are matched.
fn id(shape: &IdShape, capture: bool) -> String {
    match shape {
        IdShape::JsonString if capture => r#""(?P<id>(?:[^"\\]|\\.)*)""#.to_string(),
        IdShape::JsonString => r#""(?:[^"\\]|\\.)*""#.to_string(),
        IdShape::Counter => r"\d+".to_string(),
        IdShape::Tagged { prefix, suffix } => format!("(?:{}.*?{})?", flex(prefix), flex(suffix)),
    }
}

/// A raw marker as a pattern: its text exact, its whitespace any (or none).
fn flex(raw: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            if !space {
                out.push_str(r"\s*");
            }
            space = true;
            continue;
        }
        space = false;
        push_escaped(&mut out, c);
    }
    out
}

/// A call marker as a pattern, its numbers any number: a call counter the
/// template writes into the call's header (`index="1"`, then `index="2"`).
fn flex_counted(raw: &str) -> String {
    let mut out = String::new();
    for (i, run) in raw.split(|c: char| c.is_ascii_digit()).enumerate() {
        if i > 0 && !out.ends_with(r"\d+") {
            out.push_str(r"\d+");
        }
        out.push_str(&flex(run));
    }
    out
}

/// A marker's text without its edge whitespace.
fn core_flex(raw: &str) -> String {
    flex(raw.trim())
}

/// JSON text as a pattern: whitespace allowed around its punctuation.
fn flex_json(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let space = c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']' | ':' | ',');
        if space && !out.ends_with(r"\s*") {
            out.push_str(r"\s*");
        }
        if !c.is_whitespace() {
            push_escaped(&mut out, c);
            if space {
                out.push_str(r"\s*");
            }
        }
    }
    out
}

fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// The characters Python's `re.escape` escapes are escaped; every other
/// character stands for itself.
fn push_escaped(out: &mut String, c: char) {
    if "()[]{}?*+-|^$\\.&~# ".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// `pattern` without repeated `\s*` (where two flexible runs meet).
fn tidy(pattern: String) -> String {
    let mut out = pattern;
    while out.contains(r"\s*\s*") {
        out = out.replace(r"\s*\s*", r"\s*");
    }
    out
}

/// A marker before a value as a pattern: its trailing whitespace exact and
/// optional, the rest as [`flex`] makes it.
fn flex_open(raw: &str) -> String {
    let core = raw.trim_end();
    format!("{}{}", flex(core), optional_exact(&raw[core.len()..]))
}

/// Whitespace exactly as written, optional (`(?:\n)?`), or nothing.
fn optional_exact(space: &str) -> String {
    let mut out = String::new();
    for c in space.chars() {
        match c {
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c => push_escaped(&mut out, c),
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("(?:{out})?")
    }
}

fn is_blank(raw: &str) -> bool {
    raw.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_escape_markers_and_loosen_their_space() {
        assert_eq!(flex("<|im_end|>\n"), r"<\|im_end\|>\s*");
        assert_eq!(flex("\n</tool_call>"), r"\s*</tool_call>");
        assert_eq!(flex("<｜tool▁sep｜>"), "<｜tool▁sep｜>");
        assert_eq!(flex("[TOOL_CALLS]$.^"), r"\[TOOL_CALLS\]\$\.\^");
        assert_eq!(flex_json(r#"{"name": ""#), r#"\s*\{\s*"name"\s*:\s*""#);
        assert_eq!(
            flex_counted("\" index=\"12\"<|sep|>"),
            r#""\s*index="\d+"<\|sep\|>"#
        );
    }

    use crate::analysis::{NameSlot, ToolClass};

    fn format(name: NameSlot, arguments: ArgumentsSlot) -> ToolFormat {
        ToolFormat::bare(ToolClass::TagTagged, name, arguments)
    }

    fn calls_field(format: &ToolFormat, names: &[&str]) -> (Value, Vec<String>) {
        let mut warnings = Vec::new();
        let calls = match &format.arguments {
            ArgumentsSlot::Python { .. } => {
                python_calls(format, names, &mut warnings).map(|c| c.field)
            }
            _ => {
                let names = Names {
                    tools: names,
                    headers: &[],
                };
                Some(laid_out_calls(format, &names, &mut warnings).field)
            }
        };
        (calls.unwrap_or_default(), warnings)
    }

    #[test]
    fn python_calls_are_one_bracketed_list() {
        let mut f = format(
            NameSlot::Tagged {
                prefix: String::new(),
                suffix: "(".into(),
            },
            ArgumentsSlot::Python { raw_strings: false },
        );
        f.section_start = "<|tool_call_start|>[".into();
        f.section_end = "]<|tool_call_end|>".into();
        let (field, warnings) = calls_field(&f, &["f"]);
        assert_eq!(field["open_pattern"], r"<\|tool_call_start\|>(?=\s*\[)");
        assert_eq!(field["close_pattern"], r"(?<=\])\s*<\|tool_call_end\|>");
        assert_eq!(field["content"], "python-call-list");
        assert_eq!(field["transform_each"], true);
        assert!(warnings.is_empty());
        f.section_start = String::new();
        let (field, warnings) = calls_field(&f, &["f"]);
        assert_eq!(
            (field, warnings.len()),
            (Value::Null, 1),
            "no list, no field, one warning"
        );
    }

    #[test]
    fn raw_python_strings_are_one_region_per_call() {
        let mut f = format(
            NameSlot::Tagged {
                prefix: String::new(),
                suffix: "(".into(),
            },
            ArgumentsSlot::Python { raw_strings: true },
        );
        f.section_start = "<|tool_call_start|>[".into();
        f.section_end = "]<|tool_call_end|>".into();
        let (field, warnings) = calls_field(&f, &["f", "g.h"]);
        assert_eq!(
            field["open_pattern"],
            r"(?:<\|tool_call_start\|>\s*\[\s*|(?<=\)\s*,\s*))(?P<name>g\.h|f)\("
        );
        assert_eq!(
            field["close_pattern"],
            r"(?<=\))\s*(?:,\s*(?=(?:g\.h|f)\()|\]\s*<\|tool_call_end\|>)"
        );
        assert_eq!(field["content"], "xml-inline");
        assert_eq!(
            field["content_args"]["value_parser"]["args"]["string_delims"],
            json!([["='", "',"], ["='", "')"], ["'", "'"]])
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn key_value_arguments_in_braces_are_lax_json() {
        let args = TaggedArguments {
            name_suffix: ":".into(),
            value_prefix: "<|\"|>".into(),
            typed_value_prefix: Some(String::new()),
            value_suffix: "<|\"|>".into(),
            separator: ",".into(),
            raw_strings: true,
            ..Default::default()
        };
        let mut f = format(
            NameSlot::Tagged {
                prefix: "call:".into(),
                suffix: "{".into(),
            },
            ArgumentsSlot::Tagged(Box::new(args)),
        );
        f.call_start = "<|tool_call>".into();
        f.call_end = "}<tool_call|>".into();
        let (field, warnings) = calls_field(&f, &["get_weather"]);
        assert_eq!(
            field["open_pattern"],
            r"<\|tool_call>call:(?P<name>get_weather)(?=\{)"
        );
        assert_eq!(field["close_pattern"], r"(?<=\})<tool_call\|>");
        assert_eq!(
            field["content_args"],
            json!({"unquoted_keys": true, "string_delims": [["<|\"|>", "<|\"|>"]]})
        );
        assert!(warnings.is_empty());
    }
}
