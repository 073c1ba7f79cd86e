//! The calls of an outline as structural-tag parts: each tool section
//! (a repeat of call rules, with the markers around it) and each call's
//! pieces — fixed text (markers, literals, the tool's name) and formats
//! for what varies (the id, a header's attributes, the arguments).
//!
//! Invariants: reads only outline nodes; a call's optional groups (a JSON
//! id member) are written as required, as the template writes them;
//! leniency nodes are left out (they are never part of a call's text).

use serde_json::{json, Value};

use super::arguments::arguments_format;
use super::{optional, tag, Notes};
use crate::grammar::shape::{flat, tool_name};
use crate::protocol::outline::{Kind, Node, Produces, ValueNotation};
use crate::protocol::IdShape;

/// A part of a call: exact text, or a format for what varies.
pub(super) enum Piece {
    Fixed(String),
    Format(Value),
}

/// The fixed text of a node of a call, if it is fixed.
fn fixed_text(node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Marker(text) | Kind::Literal(text) => Some(text.clone()),
        Kind::ToolName { name, quoted: true } => serde_json::to_string(name).ok(),
        Kind::ToolName { name, .. } => Some(name.clone()),
        _ if node.is_empty() => Some(String::new()),
        _ => None,
    }
}

/// The call's pieces: adjacent fixed text merged, a header's attributes
/// free text on their line up to the header's close.
pub(super) fn pieces(call: &Node, notes: &mut Notes) -> Vec<Piece> {
    let tool = tool_name(call).unwrap_or_default();
    let mut out = Vec::new();
    push_pieces(call, &tool, notes, &mut out);
    out
}

fn push_pieces(node: &Node, tool: &str, notes: &mut Notes, out: &mut Vec<Piece>) {
    let mut close_written: Option<&str> = None;
    for item in flat(node) {
        if item.lenient {
            continue;
        }
        if let Some(text) = fixed_text(item) {
            // The attributes' format ends at the header's close.
            if close_written.take() != Some(text.as_str()) {
                push_fixed(out, &text);
            }
            continue;
        }
        match &item.kind {
            _ if item.produces == Produces::Arguments => {
                out.push(Piece::Format(arguments_format(item, tool, notes)))
            }
            Kind::Id(shape) => out.push(Piece::Format(id_format(shape))),
            Kind::Optional(inner) => match &inner.kind {
                Kind::Id(shape) => out.push(Piece::Format(id_format(shape))),
                // Written as required: the template's own calls hold it.
                _ => push_pieces(inner, tool, notes, out),
            },
            Kind::Attributes { close, .. } => {
                let rest = super::node("any_text", vec![("excludes", json!(["\n"]))]);
                out.push(Piece::Format(tag("", rest, close)));
                close_written = Some(close);
            }
            // No call holds another node today: any text is the loose
            // reading of one.
            _ => out.push(Piece::Format(json!({"type": "any_text"}))),
        }
    }
}

fn push_fixed(out: &mut Vec<Piece>, text: &str) {
    match out.last_mut() {
        Some(Piece::Fixed(prev)) => prev.push_str(text),
        _ if text.is_empty() => {}
        _ => out.push(Piece::Fixed(text.to_string())),
    }
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

/// Where a call starts: the first core of the first marker of its fixed
/// head, when `begin` starts with it (a call of an unknown tool after it is
/// no longer free text); else the first word of `begin`.
pub(super) fn trigger_word(call: &Node, begin: &str) -> String {
    let marker = flat(call)
        .into_iter()
        .take_while(|n| fixed_text(n).is_some())
        .find_map(|n| match &n.kind {
            Kind::Marker(raw) => crate::protocol::Marker::new(raw)
                .first_core()
                .map(str::to_string),
            _ => None,
        });
    let word = || begin.split_whitespace().next().unwrap_or(begin).to_string();
    marker
        .filter(|m| begin.starts_with(m.as_str()))
        .unwrap_or_else(word)
}

/// A call that is fixed text around JSON arguments (the legacy form's
/// only kind): the text before them, their node, the text after.
pub(super) fn plain_json_call(call: &Node) -> Option<(String, &Node, String)> {
    let mut head = String::new();
    let mut tail = String::new();
    let mut arguments = None;
    for item in flat(call) {
        let text = match &item.kind {
            Kind::Value(v) if item.produces == Produces::Arguments => {
                if v.notation != ValueNotation::Json || arguments.is_some() {
                    return None;
                }
                arguments = Some(item);
                continue;
            }
            Kind::Attributes { written, .. } => written.clone(),
            _ => fixed_text(item)?,
        };
        match arguments {
            Some(_) => tail.push_str(&text),
            None => head.push_str(&text),
        }
    }
    Some((head, arguments?, tail))
}
