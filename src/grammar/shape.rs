//! What the grammar printers (GBNF, Lark, structural tag) decide alike
//! about an outline's nodes: a sequence's items, whether a node may write
//! nothing, which tool a call is, in which orders members are written,
//! whether a value may be nested, where the tool sections are. Written once here so the printers cannot
//! drift apart.
//!
//! Invariants: pure functions of the nodes; never panic.

use serde_json::Value;

use crate::json_schema::resolved;
use crate::protocol::outline::{Kind, Member, Node, Order, Outline, Produces};

/// The nodes of a sequence, nested sequences spliced in.
pub(super) fn flat(node: &Node) -> Vec<&Node> {
    match &node.kind {
        Kind::Sequence(items) if !node.lenient => items
            .iter()
            .flat_map(|n| match &n.kind {
                Kind::Sequence(_) if !n.lenient => flat(n),
                _ => vec![n],
            })
            .collect(),
        _ => vec![node],
    }
}

/// Whether `node` may write nothing.
pub(super) fn nullable(node: &Node) -> bool {
    match &node.kind {
        Kind::Optional(_) => true,
        Kind::Sequence(items) => items.iter().all(nullable),
        Kind::Choice(options) => options.iter().any(|o| !o.lenient && nullable(o)),
        Kind::Repeat { min: 0, .. } => true,
        _ => node.lenient,
    }
}

/// Whether `node` is a marker of whitespace only.
pub(super) fn blank(node: &Node) -> bool {
    matches!(&node.kind, Kind::Marker(raw) if raw.trim().is_empty())
}

/// The first tool name in `node` (a call's).
pub(super) fn tool_name(node: &Node) -> Option<String> {
    first(node, |n| match &n.kind {
        Kind::ToolName { name, .. } => Some(name.clone()),
        _ => None,
    })
}

/// The first of `node` and its descendants, in written order, that `pick`
/// picks.
pub(super) fn first<'n, T>(node: &'n Node, pick: impl Fn(&'n Node) -> Option<T>) -> Option<T> {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if let Some(found) = pick(n) {
            return Some(found);
        }
        let mut children = n.children();
        children.reverse();
        stack.extend(children);
    }
    None
}

/// The members' indices sorted by key, where `order` allows that order
/// and it differs from the list's (templates write tagged arguments in
/// the schema's order or sorted by a `dictsort`).
pub(super) fn sorted_order(list: &[Member], order: Order) -> Option<Vec<usize>> {
    if order == Order::Listed {
        return None;
    }
    let mut by_key: Vec<usize> = (0..list.len()).collect();
    by_key.sort_by(|&a, &b| list[a].key.cmp(&list[b].key));
    let moved = by_key.iter().enumerate().any(|(at, &i)| at != i);
    moved.then_some(by_key)
}

/// Whether `schema` may be an object or a list (or its type is not said):
/// a value templates may nest in their own notation.
pub(super) fn is_structured(schema: &Value, root: &Value) -> bool {
    let schema = resolved(root, schema).unwrap_or(schema);
    match schema.get("type") {
        None => schema.get("enum").is_none() && schema.get("const").is_none(),
        Some(Value::String(t)) => t == "object" || t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object" || t == "array"),
        Some(_) => false,
    }
}

/// One tool section of the outline: its markers and its calls.
pub(super) struct Section<'o> {
    /// The markers before the calls, as written.
    pub start: String,
    /// Each tool's call, in the request's order.
    pub calls: Vec<&'o Node>,
    /// The marker between two calls.
    pub separator: String,
    /// At most one call.
    pub single: bool,
    /// The marker after the calls.
    pub end: String,
    /// The end marker may be missing (the template writes it only after
    /// two calls or more).
    pub end_optional: bool,
}

/// Every tool section in `outline`'s body, in order: each repeat of
/// calls, with the markers right before and after it.
pub(super) fn sections(outline: &Outline) -> Vec<Section<'_>> {
    let mut out = Vec::new();
    // Calls are in the body: the reasoning's end marker is no section's.
    find_sections(outline, parts(outline).1, &mut out);
    out
}

/// The outline's two parts: the reasoning (possibly empty), the body.
pub(super) fn parts(outline: &Outline) -> (&Node, &Node) {
    match &outline.root.kind {
        Kind::Sequence(parts) if parts.len() == 2 => (&parts[0], &parts[1]),
        _ => (&outline.root, &outline.root),
    }
}

fn find_sections<'o>(outline: &'o Outline, node: &'o Node, out: &mut Vec<Section<'o>>) {
    if node.lenient {
        return;
    }
    let items = flat(node);
    let at = items.iter().position(|n| calls_of(outline, n).is_some());
    let Some(at) = at else {
        for child in node.children() {
            find_sections(outline, child, out);
        }
        return;
    };
    let Kind::Repeat { max, separator, .. } = &items[at].kind else {
        return;
    };
    let start: Vec<&str> = items[..at]
        .iter()
        .rev()
        .map_while(|n| marker_text(n))
        .collect();
    let (end, end_optional) = match items.get(at + 1).map(|n| &n.kind) {
        Some(Kind::Marker(raw)) => (raw.clone(), false),
        Some(Kind::Optional(inner)) => match &inner.kind {
            Kind::Marker(raw) => (raw.clone(), true),
            _ => (String::new(), false),
        },
        _ => (String::new(), false),
    };
    out.push(Section {
        start: start.into_iter().rev().collect(),
        calls: calls_of(outline, items[at]).unwrap_or_default(),
        separator: marker_text(separator).unwrap_or_default().to_string(),
        single: *max == Some(1),
        end,
        end_optional,
    });
}

/// The call rules a repeat of calls repeats.
fn calls_of<'o>(outline: &'o Outline, node: &Node) -> Option<Vec<&'o Node>> {
    let Kind::Repeat { node: inner, .. } = &node.kind else {
        return None;
    };
    let options: Vec<&Node> = match &inner.kind {
        Kind::Choice(options) => options.iter().collect(),
        _ => vec![inner],
    };
    let calls: Option<Vec<&Node>> = options
        .into_iter()
        .map(|n| match n.kind {
            Kind::Rule(i) => Some(outline.rule(i)).filter(|c| c.produces == Produces::Call),
            _ => None,
        })
        .collect();
    calls.filter(|c| !c.is_empty())
}

/// A marker's raw text ("" for the empty node).
fn marker_text(node: &Node) -> Option<&str> {
    match &node.kind {
        Kind::Marker(raw) => Some(raw),
        _ if node.is_empty() => Some(""),
        _ => None,
    }
}

/// The fixed text of a marker or literal node.
pub(super) fn fixed(node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Marker(text) | Kind::Literal(text) => Some(text.clone()),
        _ if node.is_empty() => Some(String::new()),
        _ => None,
    }
}

/// A choice of whole value spellings (not of values, not of type words).
pub(super) fn is_options(node: &Node) -> bool {
    matches!(&node.kind, Kind::Choice(options)
        if options.iter().all(|o| matches!(o.kind, Kind::Sequence(_))))
}

/// Whether `node` is a value: it produces one, or is a choice of values
/// (JSON or a Python literal).
pub(super) fn is_value(node: &Node) -> bool {
    node.produces == Produces::Value
        || matches!(&node.kind, Kind::Choice(options)
            if options.iter().all(|o| o.produces == Produces::Value))
}

/// A value's closing marker, written or optional.
pub(super) fn close_text(node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Optional(inner) => fixed(inner),
        _ => fixed(node),
    }
}
