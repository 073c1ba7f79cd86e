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
//! The parts: this file writes the fields of reasoning and content (from
//! the protocol's markers); `calls` prints the tool-call field from the
//! outline's tool sections, `arguments` the content parser of a call's
//! arguments node, `patterns` the marker and text patterns both use.
//!
//! Invariants: reads the protocol's markers and its outline, never the
//! analysis' format types; never panics; deterministic; every
//! pattern is a Python `regex` pattern (markers escaped, their whitespace
//! flexible); what the spec cannot express is served loosely with a line in
//! [`ResponseTemplate::warnings`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::grammar::shape::{sections, Section};
use crate::protocol::{Protocol, ReasoningBlock, Start, Tool};

use calls::{Calls, Names};
use patterns::{core_flex, escape, flex, is_blank, optional};
use stand_in::{KEY, NAME};

mod arguments;
mod calls;
mod patterns;
mod stand_in;

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

/// The response template of `protocol`. Errors (kind `input`) when calls are
/// required but cannot be written (see [`Protocol::check_servable`]).
pub fn response_template(protocol: &Protocol) -> Result<ResponseTemplate> {
    protocol.check_servable()?;
    let mut warnings = protocol.warnings.clone();
    let outline = call_outline(protocol);
    let sections = outline.as_ref().map(sections).unwrap_or_default();
    let calls = tool_calls(protocol, &sections, &mut warnings);
    let mut fields = Map::new();
    let call_open = calls.as_ref().map(|c| c.lookahead.clone());
    if let Some(r) = protocol.reasoning.clone().or_else(|| later_block(protocol)) {
        fields.insert(
            "reasoning_content".into(),
            reasoning(protocol, &r, call_open.as_deref()),
        );
    }
    let bare_end = bare_section_end(protocol, &sections);
    fields.insert(
        "content".into(),
        content(protocol, call_open.as_deref(), bare_end),
    );
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
fn content(protocol: &Protocol, call_open: Option<&str>, bare_end: Option<&str>) -> Value {
    let (start, end) = (&protocol.content.start, &protocol.content.end);
    let mut field = json!({"content": "text", "repeats": true, "join": ""});
    if is_blank(start) {
        // The end of a section with no opening marker, at the very end of
        // the text, closes nothing (`<tool_call|>Text.<|tool_response>`), as
        // the parser reads it.
        if let Some(end) = bare_end {
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
fn bare_section_end<'s>(protocol: &Protocol, sections: &'s [Section]) -> Option<&'s str> {
    protocol.tools.as_ref().filter(|s| !s.fallback)?;
    let section = sections.first()?;
    (is_blank(&section.start) && !is_blank(&section.end)).then_some(section.end.as_str())
}

/// The request's outline with one stand-in tool: named [`NAME`], with one
/// argument [`KEY`] of any type, so that its call shows every spelling of
/// a call and of a value; `None` without calls.
fn call_outline(protocol: &Protocol) -> Option<crate::protocol::Outline> {
    let mut stand_in = protocol.clone();
    let section = stand_in.tools.as_mut()?;
    section.tools = vec![Tool {
        name: NAME.to_string(),
        parameters: json!({"type": "object", "properties": {KEY: {}}}),
        strict: false,
    }];
    Some(stand_in.outline())
}

/// The tool-call field, from the stand-in outline's tool sections; the
/// name is one of the request's tools (any name without tools).
fn tool_calls(
    protocol: &Protocol,
    sections: &[Section],
    warnings: &mut Vec<String>,
) -> Option<Calls> {
    let tools: Vec<&str> = protocol
        .tools
        .as_ref()?
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let headers: Vec<(&str, &str)> = protocol
        .headers()
        .iter()
        .map(|h| (h.open.as_str(), h.close.as_str()))
        .collect();
    let names = Names {
        tools: &tools,
        headers: &headers,
    };
    calls::tool_calls(sections, &names, warnings)
}

#[cfg(test)]
mod tests;
