//! Lowering pass: the parser's outline — for each format the output may
//! hold, one generic call: any tool's, its name a [`Kind::NameSlot`], its
//! arguments open (any key, each value typed as the format writes a value
//! of any type); and the turn's section headers ([`Kind::Header`]).
//!
//! Why generic: the parser reads a call without its schema (values are
//! typed when decoded) and checks the name against name sets given to its
//! compiled program, so one call per format serves every request of one
//! shape, whatever its tools are called or declare (`docs/parser.md`, "A
//! program independent of the tool names"). The printers print the
//! request's [`Outline`](super::Outline), whose calls are per tool.
//!
//! The formats are [`Protocol::output_formats`]: the request's, or, when
//! it parses no calls, every format a model of the template writes (their
//! text stays whole content: their markers still end content and headers).
//!
//! Invariant: a generic call is the call a tool of open schema `{}` gets in
//! the request's outline, except for the name slot and the typed values.

use serde_json::json;

use super::super::{Notation, Protocol, Tool};
use super::{calls, Elements, Kind, Lowering, Node, Produces, ValueNotation};

/// The name a generic call is lowered with: never printed (the slot
/// stands for it), only used to find where the layout writes the name.
const PLACEHOLDER: &str = "NAME";

/// What the output parser reads of the output grammar: the generic call
/// of each format the output may hold, in the protocol's order, and the
/// turn's section headers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParserOutline {
    /// One call per format, each producing [`Produces::Call`].
    pub calls: Vec<Node>,
    /// The headers that name the sections of a channel turn, each a
    /// [`Kind::Header`]; none for other formats.
    pub headers: Vec<Node>,
}

impl Protocol {
    /// What the output parser reads (see [`ParserOutline`]).
    pub fn parser_outline(&self) -> ParserOutline {
        let formats = self.output_formats();
        let mut lower = Lowering {
            protocol: self,
            rules: Vec::new(),
            warnings: Vec::new(),
            generic: true,
        };
        let tool = Tool {
            name: PLACEHOLDER.to_string(),
            parameters: json!({}),
            strict: false,
        };
        let calls = formats
            .iter()
            .map(|format| calls::lower(&mut lower, format, &tool).producing(Produces::Call))
            .collect();
        let headers = self
            .headers()
            .iter()
            .map(|h| {
                Node::new(Kind::Header {
                    open: h.open.clone(),
                    close: h.close.clone(),
                })
            })
            .collect();
        ParserOutline { calls, headers }
    }
}

impl ParserOutline {
    /// The template notations the calls' values are written in, in order,
    /// a repeat next to its like left out.
    pub fn notations(&self) -> Vec<Notation> {
        self.values(|n| match n {
            ValueNotation::Template(n) => Some(n.clone()),
            _ => None,
        })
    }

    /// The element notations the calls' values are written in, as
    /// [`ParserOutline::notations`].
    pub fn elements(&self) -> Vec<Elements> {
        self.values(|n| match n {
            ValueNotation::Element { tags, .. } => Some(tags.clone()),
            _ => None,
        })
    }

    /// The headers' opening and closing markers, in order.
    pub fn header_markers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers.iter().filter_map(|h| match &h.kind {
            Kind::Header { open, close } => Some((open.as_str(), close.as_str())),
            _ => None,
        })
    }

    /// Whether a call holds an id the model writes.
    pub fn write_ids(&self) -> bool {
        let mut found = false;
        for call in &self.calls {
            walk(call, &mut |n| found |= matches!(n.kind, Kind::Id(_)));
        }
        found
    }

    /// What `read` finds in the calls' values, in the calls' order, a
    /// repeat next to its like left out.
    fn values<T: PartialEq>(&self, read: impl Fn(&ValueNotation) -> Option<T>) -> Vec<T> {
        let mut out: Vec<T> = Vec::new();
        for call in &self.calls {
            walk(call, &mut |n| {
                let found = match &n.kind {
                    Kind::Value(v) => read(&v.notation),
                    _ => None,
                };
                if let Some(found) = found.filter(|f| out.last() != Some(f)) {
                    out.push(found);
                }
            });
        }
        out
    }
}

/// Visits `node` and its descendants, parents first.
fn walk<'n>(node: &'n Node, visit: &mut impl FnMut(&'n Node)) {
    visit(node);
    for child in node.children() {
        walk(child, visit);
    }
}
