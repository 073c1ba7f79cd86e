//! Lowering pass: one tool's call, from its [`CallLayout`] — markers,
//! fixed text with the tool's name in it, the id, the arguments.
//!
//! The name inside fixed text becomes a [`Kind::ToolName`] (a JSON string
//! in a JSON call object, bare after a tagged prefix); a name the template
//! writes twice is a second `ToolName` producing nothing. A layout's
//! optional group (a JSON id member) is optional: the template writes it,
//! a model may leave it out (the id is the model's to make up).
//!
//! Invariant: the call's text, with its optional groups written, is the
//! layout's: lowering only types the pieces.

use super::super::{CallLayout, HeaderAttributes, IdShape, Segment, Tool};
use super::{arguments, Kind, Lowering, Node, Produces};
use crate::analysis::{ArgumentsSlot, ToolFormat};

/// The call being lowered: its tool, and how its Python strings are
/// spelled.
struct Call<'t> {
    tool: &'t Tool,
    python: arguments::PythonStrings,
}

/// The call of `tool` in `format`.
pub(super) fn lower(lower: &mut Lowering, format: &ToolFormat, tool: &Tool) -> Node {
    laid_out(lower, format, &CallLayout::new(format, &tool.name), tool)
}

/// The call of `tool` in `format`, laid out as `layout` (made with the
/// tool's name).
pub(super) fn laid_out(
    lower: &mut Lowering,
    format: &ToolFormat,
    layout: &CallLayout,
    tool: &Tool,
) -> Node {
    let mut named = false;
    let python = match format.arguments {
        ArgumentsSlot::Python {
            raw_strings,
            bare_strings,
        } => arguments::PythonStrings {
            raw: raw_strings,
            bare: bare_strings,
        },
        _ => arguments::PythonStrings::default(),
    };
    let call = Call { tool, python };
    let nodes = pieces(lower, &call, &layout.segments, layout.name_end, &mut named);
    Node::seq(nodes)
}

/// The marker `raw` after a tagged name when it ends a section header
/// with attributes (` index="1"<|sep|>`): its first word, the
/// attributes, the header's close.
fn name_end(raw: &str, h: &HeaderAttributes) -> Node {
    let body = raw.trim_end();
    let written = &body[h.word.len()..body.len() - h.close.len()];
    Node::seq([
        Node::marker(h.word),
        Node::new(Kind::Attributes {
            written: written.to_string(),
            close: h.close.to_string(),
        }),
        Node::marker(h.close),
        Node::marker(h.after),
    ])
}

/// The first fixed text of a call of `name` in `format`, when the call has
/// no opening marker.
pub(super) fn first_text(format: &ToolFormat, name: &str) -> Option<String> {
    let layout = CallLayout::new(format, name);
    layout.segments.iter().find_map(|s| match s {
        Segment::Text(t) => t.trim_start().chars().next().map(String::from),
        _ => None,
    })
}

/// The nodes of `segments`; `name_end` indexes the marker that ends a
/// tagged name.
fn pieces(
    lower: &mut Lowering,
    call: &Call,
    segments: &[Segment],
    name_end: Option<usize>,
    named: &mut bool,
) -> Vec<Node> {
    let tool = call.tool;
    let mut out = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        match segment {
            Segment::Marker(raw) if name_end == Some(i) => {
                out.push(match HeaderAttributes::of(raw, lower.protocol.headers()) {
                    Some(h) => self::name_end(raw, &h),
                    None => Node::marker(raw),
                })
            }
            Segment::Marker(raw) => out.push(Node::marker(raw)),
            Segment::Text(text) => {
                out.extend(text_with_name(text, &tool.name, named, lower.generic))
            }
            Segment::Id(shape) => out.push(id(shape)),
            Segment::Arguments(a) => out.push(arguments::lower(lower, tool, a, call.python)),
            // The template writes the group (a JSON id member); a model
            // may leave it out, as the parser reads a call without it.
            Segment::Optional(inner) => {
                let inner = pieces(lower, call, inner, None, named);
                out.push(Node::optional(Node::seq(inner)));
            }
        }
    }
    out
}

/// Fixed text, the tool's name in it typed: as a JSON string
/// (`"name": "f"`) or bare (`f:`, `f(`); the first occurrence produces
/// the name, a later one (an echo) nothing.
/// In a generic call (`slot`) the name is a [`Kind::NameSlot`].
fn text_with_name(text: &str, name: &str, named: &mut bool, slot: bool) -> Vec<Node> {
    let quoted = serde_json::to_string(name).unwrap_or_default();
    // A JSON name is a member's value (`"name": "f"`), not a key.
    let as_value = text.find(&format!(": {quoted}")).map(|at| at + 2);
    let (at, len, is_quoted) = match (as_value.or_else(|| text.find(&quoted)), text.find(name)) {
        (Some(at), _) => (at, quoted.len(), true),
        (None, Some(at)) if at == 0 || *named => (at, name.len(), false),
        _ => return vec![Node::literal(text)],
    };
    let produces = match *named {
        true => Produces::Nothing,
        false => Produces::Name,
    };
    *named = true;
    let name_node = match slot {
        true => Node::new(Kind::NameSlot { quoted: is_quoted }),
        false => Node::new(Kind::ToolName {
            name: name.to_string(),
            quoted: is_quoted,
        }),
    }
    .producing(produces);
    let mut out = vec![Node::literal(&text[..at]), name_node];
    out.extend(text_with_name(&text[at + len..], name, named, slot));
    out.retain(|n| !n.is_empty());
    out
}

fn id(shape: &IdShape) -> Node {
    let node = Node::new(Kind::Id(shape.clone())).producing(Produces::Id);
    match shape {
        // Mistral's `[CALL_ID]…[ARGS]`: the model may leave the id out.
        IdShape::Tagged { .. } => Node::optional(node),
        _ => node,
    }
}
