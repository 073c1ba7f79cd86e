//! Lowering pass: one tool section per call format — its opening marker,
//! its calls (any of the request's tools) repeated with the format's
//! separator, its closing marker.
//!
//! `parallel_tool_calls` is applied here, once: several calls only when
//! the request allows them and the template renders them (else a repeat
//! of at most one). A closing marker the template writes only after
//! several calls is optional.
//!
//! Invariant: one rule per (format, tool) call, shared by the first call
//! and the calls after it.

use super::super::Marker;
use super::{calls, Kind, Lowering, Node, Produces};
use crate::analysis::{NameSlot, ToolFormat};

/// A format's section and how it opens.
pub(super) struct Section {
    /// The section's tree.
    pub node: Node,
    /// The first marker core every call of the section opens with (the
    /// section's own opening, or the call's, or a tagged name's prefix):
    /// where content before it stops and a lazy grammar may start.
    pub opening: Option<String>,
    /// For a section with no opening marker, the first fixed text of its
    /// first call (`{`, a name): what free text may not begin with.
    pub first_text: Option<String>,
    /// The raw marker between two calls.
    pub separator: String,
}

/// Every allowed format's section, in the protocol's order.
pub(super) fn lower(lower: &mut Lowering) -> Vec<Section> {
    let Some(tools) = lower.protocol.tools.as_ref() else {
        return Vec::new();
    };
    let (formats, tools, parallel) = (&tools.formats, &tools.tools, tools.parallel);
    let mut out = Vec::new();
    for (index, format) in formats.iter().enumerate() {
        let calls: Vec<Node> = tools
            .iter()
            .map(|tool| {
                let call = calls::lower(lower, format, tool).producing(Produces::Call);
                lower.rule(format!("call_{index}_{}", tool.name), call)
            })
            .collect();
        let first_text = calls::first_text(format, tools.first().map_or("", |t| &t.name));
        let max = (!(parallel && format.parallel)).then_some(1);
        out.push(Section {
            node: section(format, Node::choice(calls), max),
            opening: opening(format),
            first_text,
            separator: format.call_separator.clone(),
        });
    }
    out
}

/// A section of `format` holding `calls` (a choice of them), at most
/// `max` of them: its opening marker, the calls repeated with the format's
/// separator, its closing marker (optional where the template writes it
/// only after several calls). The one shape of a section, for the
/// request's outline and the parser's.
pub(super) fn section(format: &ToolFormat, calls: Node, max: Option<u32>) -> Node {
    let repeat = Node::new(Kind::Repeat {
        node: Box::new(calls),
        min: 1,
        max,
        separator: Box::new(Node::marker(&format.call_separator)),
    });
    let end = match format.section_end_optional {
        true => Node::optional(Node::marker(&format.section_end)),
        false => Node::marker(&format.section_end),
    };
    Node::seq([Node::marker(&format.section_start), repeat, end])
}

/// The first marker core a section of `format` opens with, if any.
pub(super) fn opening(format: &ToolFormat) -> Option<String> {
    let prefix = match &format.name {
        NameSlot::Tagged { prefix, .. } => prefix.as_str(),
        _ => "",
    };
    [format.section_start.as_str(), &format.call_start, prefix]
        .into_iter()
        .find_map(|raw| Marker::new(raw).first_core().map(str::to_string))
}
