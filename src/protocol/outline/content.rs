//! Lowering pass: the body after reasoning — free text, calls, or the
//! answer — with `tool_choice` applied.
//!
//! - no calls and no answer: optional free text;
//! - `auto`: free text, or text up to a section's opening marker then the
//!   section (a lazy grammar starts at the section); a section with no
//!   opening marker (a bare JSON object or Python call) opens the body,
//!   and free text may not begin the way it does — unless the template
//!   writes content beside calls: then the content runs up to the call's
//!   opening punctuation (`{`), or is the wrapper's closed block; where
//!   the template writes the content after the calls (Gemma 4), free text
//!   may follow the section too;
//! - `required` or a named function: an optional empty content block, then
//!   a section; with a response schema, the answer instead is an option;
//! - a response schema alone: the answer, a JSON value, as the content.
//!
//! Content inside the template's content wrapper (`<response>` …) is the
//! wrapper's markers around text up to its end marker.
//!
//! Invariant: free text never begins with what the structure after it
//! begins with (the reasoning opening, a marker-less section's opening).

use std::sync::Arc;

use serde_json::Value;

use super::super::Marker;
use super::sections::{self, Section};
use super::{Kind, Lowering, Node, Produces, ValueNode, ValueNotation};

pub(super) fn lower(lower: &mut Lowering) -> Node {
    let p = lower.protocol;
    let calls = p.tools.as_ref().filter(|s| !s.tools.is_empty());
    let answer = p.response_schema.as_ref().map(|s| answer(lower, s));
    let exclude = reasoning_openings(lower);
    match (calls, answer) {
        (None, None) => Node::optional(free_content(lower, exclude)),
        (Some(section), None) if !section.required => {
            let sections = sections::lower(lower);
            auto(lower, sections, exclude)
        }
        (Some(_), answer) => {
            let sections = sections::lower(lower);
            let calls = Node::seq([
                Node::optional(empty_content(lower)),
                Node::choice(sections.into_iter().map(|s| s.node).collect()),
            ]);
            match answer {
                Some(a) => Node::choice(vec![calls, a]),
                None => calls,
            }
        }
        (None, Some(a)) => a,
    }
}

/// `auto`: free text, text up to a section, or a marker-less section.
fn auto(lower: &Lowering, sections: Vec<Section>, mut exclude: Vec<String>) -> Node {
    let formats = lower.protocol.tools.as_ref().map(|s| &s.formats[..]);
    let with_content = formats.is_some_and(|f| f.iter().any(|f| f.content_with_calls));
    let content_after = formats.is_some_and(|f| f.iter().any(|f| f.content_after_calls));
    exclude.extend(
        sections
            .iter()
            .filter(|s| s.opening.is_none())
            .filter_map(|s| s.first_text.clone()),
    );
    let mut options = vec![Node::optional(free_content(lower, exclude))];
    for section in sections {
        let mut node = section.node;
        if content_after {
            // One lazy start: a lazy grammar reads the text after the
            // calls, which holds no further section (a single call stays
            // one).
            let text = match &section.opening {
                Some(opening) => content_until(lower, opening, Place::Elsewhere),
                None => free_content(lower, section.first_text.iter().cloned().collect()),
            };
            node = Node::seq([node, Node::optional(text)]);
        }
        node.lazy_start = true;
        let stop = match &section.opening {
            Some(opening) => Some(opening.as_str()),
            // A marker-less call opening with punctuation (`{`, `[`): the
            // content runs up to it (a wrapper's content up to its end).
            None => section
                .first_text
                .as_deref()
                .filter(|t| !t.chars().any(char::is_alphanumeric)),
        };
        options.push(match (stop, with_content) {
            (Some(stop), true) => {
                let content = content_until(lower, stop, Place::BeforeCalls);
                Node::seq([Node::optional(content), node])
            }
            (None, true) if wrapper_closes(lower) => {
                let content = content_until(lower, "", Place::BeforeCalls);
                Node::seq([Node::optional(content), node])
            }
            // Content before a call that opens with its name, ended by the
            // separator the calls are joined with (`…>>>get_weather`): the
            // parser reads it; a strict grammar has no marker to end the
            // text at, so it is lenient, and a lazy grammar leaves it free
            // (its trigger is searched, not anchored).
            (None, true) if !section.separator.trim().is_empty() => {
                let text = Node::new(Kind::Until {
                    stops: vec![section.separator.clone()],
                })
                .producing(Produces::Content);
                let content = Node::seq([
                    wrapped(lower, text, Place::BeforeCalls),
                    Node::marker(&section.separator),
                ]);
                Node::seq([Node::optional(content).lenient(), node])
            }
            _ => node,
        });
    }
    Node::choice(options)
}

/// Whether the template's content wrapper has an end marker (its content
/// is a block that calls may follow).
fn wrapper_closes(lower: &Lowering) -> bool {
    let c = &lower.protocol.content;
    !c.start.trim().is_empty() && !c.end.trim().is_empty() && !opens_reasoning(lower, &c.start)
}

/// Content text to the end of the output.
fn free_content(lower: &Lowering, exclude: Vec<String>) -> Node {
    let text = Node::new(Kind::FreeText { exclude }).producing(Produces::Content);
    wrapped(lower, text, Place::Elsewhere)
}

/// Content text up to `stop` (a section's opening marker), at `place`.
fn content_until(lower: &Lowering, stop: &str, place: Place) -> Node {
    let text = Node::new(Kind::Until {
        stops: vec![stop.to_string()],
    })
    .producing(Produces::Content);
    wrapped(lower, text, place)
}

/// Where content text is: before calls, or elsewhere (alone, or after them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    BeforeCalls,
    Elsewhere,
}

/// `text` inside the template's content wrapper, when it has one there (a
/// wrapper written only before calls is not around other text): then the
/// text runs to the wrapper's end instead (when it has an end).
fn wrapped(lower: &Lowering, text: Node, place: Place) -> Node {
    let c = &lower.protocol.content;
    let absent = c.calls_only && place != Place::BeforeCalls;
    if c.start.trim().is_empty() || absent || opens_reasoning(lower, &c.start) {
        return text;
    }
    if c.end.trim().is_empty() {
        // An opening alone (`all\n`): the text runs on as it would.
        return Node::seq([Node::marker(&c.start), text]);
    }
    let inner = Node::new(Kind::Until {
        stops: vec![c.end.clone()],
    })
    .producing(Produces::Content);
    Node::seq([Node::marker(&c.start), inner, Node::marker(&c.end)])
}

/// Whether `marker` opens with the reasoning block's opening: then it is
/// the block the template writes empty, not a content wrapper (a reader
/// takes it as reasoning).
fn opens_reasoning(lower: &Lowering, marker: &str) -> bool {
    let core = |raw: &str| Marker::new(raw).first_core().map(str::to_string);
    let reasoning = lower.protocol.markup.reasoning.as_ref();
    reasoning.is_some_and(|r| core(&r.start).is_some() && core(&r.start) == core(marker))
}

/// An empty content block before forced calls, as templates with a content
/// wrapper write it.
fn empty_content(lower: &Lowering) -> Node {
    let c = &lower.protocol.content;
    if c.start.trim().is_empty() || c.end.trim().is_empty() {
        return Node::empty();
    }
    Node::seq([Node::marker(&c.start), Node::marker(&c.end)])
}

/// The JSON answer, as the content, inside the wrapper (whose opening a
/// model may leave out: lenient).
fn answer(lower: &Lowering, schema: &Value) -> Node {
    let c = &lower.protocol.content;
    let value = Node::new(Kind::Value(Box::new(ValueNode {
        schema: schema.clone(),
        root: Arc::new(schema.clone()),
        notation: ValueNotation::Json,
    })))
    .producing(Produces::Content);
    if c.calls_only {
        return value;
    }
    if c.start.trim().is_empty() {
        return Node::seq([value, Node::marker(&c.end)]);
    }
    let open = Node::marker(&c.start);
    let bare = Node::seq([value.clone(), Node::marker(&c.end)]).lenient();
    Node::choice(vec![Node::seq([open, value, Node::marker(&c.end)]), bare])
}

/// What an optional reasoning block opens with: free text may not begin
/// with it.
fn reasoning_openings(lower: &Lowering) -> Vec<String> {
    let Some(r) = lower.protocol.reasoning.as_ref().filter(|r| !r.opened) else {
        return Vec::new();
    };
    let mut out = vec![r.start.trim().to_string()];
    if r.bare_end {
        out.push(r.end.trim().to_string());
    }
    out.retain(|o| !o.is_empty());
    out
}
