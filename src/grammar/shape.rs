//! What the grammar printers (GBNF, Lark, structural tag) decide alike
//! about an outline's nodes: a sequence's items, whether a node may write
//! nothing, which tool a call is, in which orders members are written,
//! whether a value may be nested. Written once here so the printers cannot
//! drift apart.
//!
//! Invariants: pure functions of the nodes; never panic.

use serde_json::Value;

use crate::json_schema::resolved;
use crate::protocol::outline::{Kind, Member, Node, Order};

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
