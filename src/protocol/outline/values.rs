//! Lowering pass: values — a schema and the notation it is written in.
//!
//! A tagged argument's value is a choice: raw text up to the argument's
//! closing marker, where the schema allows a string and the template
//! writes strings raw (or inside its escape wrapper, `<![CDATA[`…`]]>`,
//! when it has one); a typed value otherwise (the template's own
//! notation, nested elements, or JSON — and a Python literal beside JSON,
//! as templates print values with `tojson` or with `str()`), with a typed
//! prefix when the template marks typed values apart.
//!
//! Invariant: a raw value is an `Until` stopped by its closing marker (or
//! its escape wrapper's end) only.

use std::sync::Arc;

use serde_json::Value;

use super::super::TaggedLayout;
use super::{Kind, Node, Produces, ValueNode, ValueNotation};
use crate::json_schema::{string_kind, StringKind};

/// A value of `schema` (`$ref`s in `root`) written in `notation`.
pub(super) fn value(schema: &Value, root: &Arc<Value>, notation: ValueNotation) -> Node {
    Node::new(Kind::Value(Box::new(ValueNode {
        schema: schema.clone(),
        root: Arc::clone(root),
        notation,
    })))
}

/// The value of the tagged argument `key` of schema `prop`, with its
/// prefix and closing marker.
pub(super) fn tagged_value(g: &TaggedLayout, key: &str, prop: &Value, root: &Arc<Value>) -> Node {
    let close = g.close_for(key);
    value_closed_by(g, &close, Node::marker(&close), prop, root)
}

/// A tagged value of schema `prop` and what closes it: `close`, whose
/// text begins with the marker `stop` (a raw value's end).
pub(super) fn value_closed_by(
    g: &TaggedLayout,
    stop: &str,
    close: Node,
    prop: &Value,
    root: &Arc<Value>,
) -> Node {
    let kind = string_kind(prop, root);
    let mut options = Vec::new();
    if g.raw_strings && kind != StringKind::Never {
        // Strings of an enum are its words, raw; other strings any text.
        let raw = match kind {
            StringKind::Enum(_) => value(prop, root, ValueNotation::Raw),
            _ => Node::new(Kind::Until {
                stops: vec![stop.to_string()],
            }),
        }
        .producing(Produces::Value);
        options.push(Node::seq([
            Node::marker(&g.value_prefix),
            raw,
            close.clone(),
        ]));
        // Values holding `<`, `&` or a newline inside the template's
        // escape wrapper (`<![CDATA[` … `]]>`), its text up to the wrapper's end.
        if let (Some((open, end)), false) = (&g.escaped_value, matches!(kind, StringKind::Enum(_)))
        {
            let text = Node::new(Kind::Until {
                stops: vec![end.clone()],
            })
            .producing(Produces::Value);
            options.push(Node::seq([
                Node::marker(&g.value_prefix),
                Node::marker(open),
                text,
                Node::marker(end),
                close.clone(),
            ]));
        }
    }
    if !(g.raw_strings && kind.always()) {
        let prefix = g.typed_value_prefix.as_deref().unwrap_or(&g.value_prefix);
        let typed = |notation| value(prop, root, notation).producing(Produces::Value);
        let typed = match (&g.elements, g.notation.clone()) {
            (Some(e), _) => typed(ValueNotation::Element {
                tags: e.clone(),
                raw_strings: g.raw_strings,
            }),
            (None, Some(n)) => typed(ValueNotation::Template(n)),
            // A template printing values with `str()` writes Python
            // literals only; one printing objects as JSON may still print
            // scalars with `str()` (`True`).
            (None, None) if g.python_values => typed(ValueNotation::Python),
            (None, None) => Node::choice(vec![
                typed(ValueNotation::Json),
                typed(ValueNotation::Python),
            ]),
        };
        // A bare typed value (`days:3`) has no close either: the template's
        // value markers are a string's quotes. One the model writes anyway
        // (`days:3<|"|>`) closes nothing; the parser and the exports admit it.
        let close = match prefix.trim().is_empty() && g.typed_value_prefix.is_some() {
            true => Node::optional(close),
            false => close,
        };
        options.push(Node::seq([typed_prefix(g, prefix), typed, close]));
    }
    Node::choice(options)
}

/// The JSON Schema type names a typed prefix's word may be.
const TYPE_WORDS: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The prefix of a typed value: when it names the value's type
/// (` type="number"<|sep|>`, see [`TaggedLayout::type_word`]), any
/// type's name, since the probes render only some (`type="object"` too);
/// a flag (`string="false"`) or a prefix with no word stays as written.
/// Strings are raw where the template writes them raw, so their name is
/// left to the raw value.
fn typed_prefix(g: &TaggedLayout, prefix: &str) -> Node {
    let Some(words) = g.type_word.as_ref().filter(|w| !w.flag) else {
        return Node::marker(prefix);
    };
    let (before, after) = (&words.before, &words.after);
    let options = TYPE_WORDS
        .iter()
        .filter(|w| !(g.raw_strings && **w == "string"))
        .map(|w| Node::marker(&format!("{before}{w}{after}")))
        .collect();
    Node::choice(options)
}
