//! Lowering pass: the parser's outline — for each format the output may
//! hold, its section (the format's markers around its calls, as the
//! request's outline has it) of one generic call: any tool's, its name a
//! [`Kind::NameSlot`], its arguments open (any key, each value typed as the
//! format writes a value of any type); and the turn's section headers
//! ([`Kind::Header`]).
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
//! Invariants: a generic call is the call a tool of open schema `{}` gets in
//! the request's outline, except for the name slot and the typed values; a
//! section is the request's section of that call, any number of calls
//! (the parser reads them all; the decoder applies `parallel_tool_calls`).

use std::sync::Arc;

use serde_json::json;

use super::super::{CallLayout, Marker, Notation, Protocol, Tool};
use super::dialects::Foreign;
use super::{
    calls, sections, Elements, Kind, Lowering, Node, Produces, ValueNotation, PLACEHOLDER,
};
use crate::analysis::tool_tokens;

/// What the output parser reads of the output grammar: the section of
/// each format the output may hold, of the format's generic call, in the
/// protocol's order; the turn's section headers; the texts of the
/// template's markers and the part opener.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParserOutline {
    /// One section per format, its call producing [`Produces::Call`].
    pub sections: Vec<Node>,
    /// The generic call of each format, in the sections' order.
    pub calls: Vec<ParserCall>,
    /// Other formats' markers a model mixing dialects writes around calls
    /// (none the template knows itself).
    pub foreign: Foreign,
    /// The headers that name the sections of a channel turn, each a
    /// [`Kind::Header`]; none for other formats.
    pub headers: Vec<Node>,
    /// The raw text of every marker the template writes around and inside
    /// a message: the turn's (its generation prompts, ends, tail and
    /// headers), the reasoning block's, the content wrapper's, every call
    /// format's a model of the template writes, and the preserved tokens.
    /// What the parser's scaffolding words (a header's label, the rest of a
    /// call's header, a type attribute) are made of. One text, the markers
    /// one per line (one allocation per build, not one per marker).
    pub scaffolding: String,
    /// What opens each part of the turn, when calls have no opening marker
    /// of their own and the generation prompt ends with the call separator
    /// (functionary's `>>>`, written before a recipient: `all` for content
    /// or a function name): the prompt wrote the first part's opener, the
    /// model writes the others.
    pub part_opener: Option<String>,
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
        let mut sections = Vec::with_capacity(formats.len());
        let mut generic = Vec::with_capacity(formats.len());
        for format in formats {
            let layout = CallLayout::new(format, PLACEHOLDER);
            let call = calls::laid_out(&mut lower, format, &layout, &tool);
            sections.push(sections::section(
                format,
                call.producing(Produces::Call),
                None,
            ));
            generic.push(ParserCall {
                layout: Arc::new(layout),
                tokens: tool_tokens(format),
            });
        }
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
        ParserOutline {
            sections,
            foreign: self.foreign(&generic),
            calls: generic,
            headers,
            scaffolding: self.scaffolding(),
            part_opener: self.part_opener(),
        }
    }

    /// See [`ParserOutline::part_opener`].
    fn part_opener(&self) -> Option<String> {
        let format = self.markup.own_format.as_ref()?;
        let opens_calls =
            !Marker::blank(&format.section_start) || !Marker::blank(&format.call_start);
        let separator = format.call_separator.trim();
        let prompt = self.turn.generation_prompt.default.trim_end();
        (!opens_calls && !separator.is_empty() && prompt.ends_with(separator))
            .then(|| separator.to_string())
    }

    /// See [`ParserOutline::scaffolding`].
    fn scaffolding(&self) -> String {
        let mut sources: Vec<&str> = self.turn.marker_texts().collect();
        sources.extend([
            self.turn.tail.as_str(),
            &self.content.start,
            &self.content.end,
        ]);
        if let Some(r) = &self.markup.reasoning {
            sources.extend([r.start.as_str(), r.end.as_str()]);
        }
        sources.extend(self.markup.call_marker_texts());
        sources.extend(self.preserved_tokens.iter().map(String::as_str));
        sources.join("\n")
    }
}

/// A format's generic call, as the parser reads it: its layout (its name
/// the placeholder, where the parser reads any name) and the special
/// tokens in the format's markers (a function name never holds one).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParserCall {
    /// The call, laid out with the placeholder for its name.
    pub layout: Arc<CallLayout>,
    /// The special tokens of the format's markers, each once.
    pub tokens: Vec<String>,
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

    /// The sections' markers, in order (see [`SectionMarks`]).
    pub fn section_marks(&self) -> impl Iterator<Item = SectionMarks<'_>> {
        self.sections.iter().map(SectionMarks::of)
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
        for section in &self.sections {
            walk(section, &mut |n| found |= matches!(n.kind, Kind::Id(_)));
        }
        found
    }

    /// What `read` finds in the calls' values, in the calls' order, a
    /// repeat next to its like left out.
    fn values<T: PartialEq>(&self, read: impl Fn(&ValueNotation) -> Option<T>) -> Vec<T> {
        let mut out: Vec<T> = Vec::new();
        for section in &self.sections {
            walk(section, &mut |n| {
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

/// The raw markers that frame a section's calls: before the first, between
/// two, after the last (each empty where the format writes none). The
/// parser reads them off the section's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SectionMarks<'o> {
    /// The section's opening marker.
    pub start: &'o str,
    /// The marker between two calls.
    pub separator: &'o str,
    /// The section's closing marker (which a template may write only after
    /// several calls: the parser lets a model leave any closer out).
    pub end: &'o str,
}

impl<'o> SectionMarks<'o> {
    /// The markers of `section`, a node made by the sections pass: the
    /// marker before its repeat, the repeat's separator, the marker (or
    /// optional marker) after it.
    fn of(section: &'o Node) -> SectionMarks<'o> {
        let items = match &section.kind {
            Kind::Sequence(items) => items.as_slice(),
            _ => std::slice::from_ref(section),
        };
        let repeat = items
            .iter()
            .position(|n| matches!(n.kind, Kind::Repeat { .. }));
        let Some(at) = repeat else {
            return SectionMarks::default();
        };
        let separator = match &items[at].kind {
            Kind::Repeat { separator, .. } => marker_of(separator),
            _ => "",
        };
        SectionMarks {
            start: items[..at].last().map_or("", marker_of),
            separator,
            end: items.get(at + 1).map_or("", marker_of),
        }
    }
}

/// The raw marker `node` is, or makes optional; empty for any other node.
fn marker_of(node: &Node) -> &str {
    match &node.kind {
        Kind::Marker(raw) => raw,
        Kind::Optional(inner) => marker_of(inner),
        _ => "",
    }
}

/// Visits `node` and its descendants, parents first.
fn walk<'n>(node: &'n Node, visit: &mut impl FnMut(&'n Node)) {
    visit(node);
    for child in node.children() {
        walk(child, visit);
    }
}
