//! Objects and lists written as nested elements inside an argument value:
//! MiniMax-M3 writes `{"real": 1.5}` as `<real>1.5</real>` and `["a", "b"]`
//! as `<item>a</item><item>b</item>` (each tag after its namespace token).
//!
//! The notation is the one the analysis learned (`Elements`, A5). The
//! grammar (`build`) reads a value made of whole elements, each element
//! closed at its own depth; this module turns that text into JSON, typed by
//! the argument's JSON schema: key elements are an object's members, item
//! elements a list's entries, and text is a scalar of the type the schema
//! names. The first alternative of the schema that fits wins, so a value
//! whose schema allows a string first (`oneOf: [string, object]`) is the
//! text as written, elements included.
//!
//! Invariant: never panics; nesting is bounded by [`DEFAULT_MAX_DEPTH`]
//! (the value) and [`MAX_DEPTH`] (its schema); a value
//! that is not well-formed elements, or does not fit its schema, is the
//! text the model wrote, as a string.

use serde_json::{Map, Value};

use crate::protocol::outline::Elements;

// Deepest nesting read, as deep as the engine reads a JSON value, and of
// the schema followed; deeper values stay text.
use crate::json_schema::{lookup, MAX_DEPTH};
use chat_autoparser_peg::json::DEFAULT_MAX_DEPTH;

/// One element's content, with the text it spans.
#[derive(Debug)]
struct Node<'a> {
    raw: &'a str,
    body: Body<'a>,
}

#[derive(Debug)]
enum Body<'a> {
    /// No elements.
    Text,
    /// Elements only (and whitespace between them).
    Children(Vec<(&'a str, Node<'a>)>),
    /// Elements and text: only a string holds it.
    Mixed,
}

/// `text` (an argument's value) as JSON: typed by `schema` (with the root
/// it resolves `$ref`s in) when given, else by its shape.
pub fn to_json(e: &Elements, text: &str, schema: Option<(&Value, &Value)>) -> Value {
    let node = Reader { e }
        .content(text, 0)
        .filter(|(_, rest)| rest.trim().is_empty())
        .map(|(node, _)| node);
    let value = match (&node, schema) {
        (Some(node), Some((schema, root))) => typed(e, node, schema, root, 0),
        (Some(node), None) => Some(untyped(e, node)),
        (None, _) => None,
    };
    value.unwrap_or_else(|| Value::String(text.to_string()))
}

/// Reads element text with the learned markers, as the grammar (`build`)
/// does: whitespace between a marker's cores is flexible (`marker`).
struct Reader<'e> {
    e: &'e Elements,
}

impl Reader<'_> {
    /// Text and whole elements, up to a closing marker (the parent's) or
    /// the end; a text piece is at least one character, so a tag that does
    /// not open a whole element is text.
    fn content<'a>(&self, text: &'a str, depth: usize) -> Option<(Node<'a>, &'a str)> {
        if depth > DEFAULT_MAX_DEPTH {
            return None;
        }
        let (mut rest, mut kids, mut has_text) = (text, Vec::new(), false);
        while !rest.is_empty() && eat(rest, &self.e.close_prefix).is_none() {
            if let Some((tag, node, after)) = self.element(rest, depth) {
                kids.push((tag, node));
                rest = after;
                continue;
            }
            let first = rest.chars().next().map_or(0, char::len_utf8);
            let end =
                first + next_stop(&rest[first..], [&self.e.open_prefix, &self.e.close_prefix]);
            has_text |= !rest[..end].trim().is_empty();
            rest = &rest[end..];
        }
        let raw = &text[..text.len() - rest.len()];
        let body = match (kids.is_empty(), has_text) {
            (true, _) => Body::Text,
            (false, false) => Body::Children(kids),
            (false, true) => Body::Mixed,
        };
        Some((Node { raw, body }, rest))
    }

    /// One whole element: its name, its content, and the text after it.
    /// An element closed by another name (`<a>x</b>`) is none: the grammar
    /// cannot tell (nesting decides there), but a value read with it would
    /// drop the closing name, so the value stays the text written.
    fn element<'a>(&self, text: &'a str, depth: usize) -> Option<(&'a str, Node<'a>, &'a str)> {
        let e = self.e;
        let (tag, after_name) = name(eat(text, &e.open_prefix)?, &e.open_suffix)?;
        let (node, after_body) = self.content(eat_exact(after_name, &e.open_suffix)?, depth + 1)?;
        let (closing, after_close_name) = name(eat(after_body, &e.close_prefix)?, &e.close_suffix)?;
        (closing == tag).then_some(())?;
        Some((tag, node, eat(after_close_name, &e.close_suffix)?))
    }
}

/// `text` after `marker`: its cores with any whitespace between them, and
/// before the first only when the marker starts with whitespace.
fn eat<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let mut rest = if marker.starts_with(|c: char| c.is_ascii_whitespace()) {
        text.trim_start()
    } else {
        text
    };
    for (i, core) in marker.split_ascii_whitespace().enumerate() {
        rest = if i > 0 { rest.trim_start() } else { rest }.strip_prefix(core)?;
    }
    Some(rest)
}

/// `text` after `marker`'s cores, with only the marker's own trailing
/// whitespace skipped: the text after it is a raw value.
fn eat_exact<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let tail = &marker[marker.trim_end().len()..];
    let rest = eat(text, marker.trim_end())?;
    Some(rest.strip_prefix(tail).unwrap_or(rest))
}

/// A tag name up to the first core of the marker after it (one line).
fn name<'a>(text: &'a str, end: &str) -> Option<(&'a str, &'a str)> {
    let stop = end.split_ascii_whitespace().next().unwrap_or(" ");
    let at = text.find(stop)?;
    let name = &text[..at];
    (!name.is_empty() && !name.contains('\n') && !name.starts_with(char::is_whitespace))
        .then(|| (name, &text[at..]))
}

/// Where text stops before one of `markers`: at its first core, or before
/// the whitespace the marker itself starts with.
fn next_stop(text: &str, markers: [&str; 2]) -> usize {
    let at = |m: &str| {
        let core = m.split_ascii_whitespace().next()?;
        let lead = &m[..m.len() - m.trim_start().len()];
        let with_lead = (!lead.is_empty())
            .then(|| text.find(&format!("{lead}{core}")))
            .flatten();
        with_lead.into_iter().chain(text.find(core)).min()
    };
    markers
        .into_iter()
        .filter_map(at)
        .min()
        .unwrap_or(text.len())
}

/// `node` as a value of `schema`; `None` when it does not fit.
fn typed(
    e: &Elements,
    node: &Node<'_>,
    schema: &Value,
    root: &Value,
    depth: usize,
) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| lookup(root, r))
    {
        return typed(e, node, target, root, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return branches
                .iter()
                .find_map(|b| typed(e, node, b, root, depth + 1));
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ if schema.get("items").is_some() => vec!["array"],
        _ => return Some(untyped(e, node)),
    };
    types
        .into_iter()
        .find_map(|t| as_type(e, node, t, schema, root, depth))
}

/// `node` as a value of the JSON type `t`.
fn as_type(
    e: &Elements,
    node: &Node<'_>,
    t: &str,
    schema: &Value,
    root: &Value,
    depth: usize,
) -> Option<Value> {
    let empty = matches!(node.body, Body::Text) && node.raw.trim().is_empty();
    // A member or entry that does not fit its own schema is its text.
    let member = |node: &Node<'_>, sub: Option<&Value>| match sub {
        Some(sub) => typed(e, node, sub, root, depth + 1)
            .unwrap_or_else(|| Value::String(node.raw.to_string())),
        None => untyped(e, node),
    };
    match (t, &node.body) {
        ("string", _) => Some(Value::String(node.raw.to_string())),
        ("object", Body::Children(kids)) => {
            let props = schema.get("properties");
            let extra = schema.get("additionalProperties").filter(|v| v.is_object());
            let map = kids
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        member(v, props.and_then(|p| p.get(*k)).or(extra)),
                    )
                })
                .collect();
            Some(Value::Object(map))
        }
        ("array", Body::Children(kids)) if kids.iter().all(|(k, _)| *k == e.item) => {
            Some(Value::Array(
                kids.iter()
                    .map(|(_, v)| member(v, schema.get("items")))
                    .collect(),
            ))
        }
        ("object", Body::Text) if empty => Some(Value::Object(Map::new())),
        ("array", Body::Text) if empty => Some(Value::Array(Vec::new())),
        (_, Body::Text) if !empty => {
            let value: Value = serde_json::from_str(node.raw.trim()).ok()?;
            let fits = match t {
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "null" => value.is_null(),
                _ => false,
            };
            fits.then_some(value)
        }
        _ => None,
    }
}

/// `node` by its shape alone: item elements are a list, other elements an
/// object, text a JSON scalar when it spells one, else a string.
fn untyped(e: &Elements, node: &Node<'_>) -> Value {
    match &node.body {
        Body::Children(kids) if kids.iter().all(|(k, _)| *k == e.item) => {
            Value::Array(kids.iter().map(|(_, v)| untyped(e, v)).collect())
        }
        Body::Children(kids) => Value::Object(
            kids.iter()
                .map(|(k, v)| (k.to_string(), untyped(e, v)))
                .collect(),
        ),
        Body::Mixed => Value::String(node.raw.to_string()),
        Body::Text => serde_json::from_str::<Value>(node.raw.trim())
            .ok()
            .filter(|v| !v.is_string() && !v.is_object() && !v.is_array())
            .unwrap_or_else(|| Value::String(node.raw.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tags() -> Elements {
        Elements {
            open_prefix: "<".into(),
            open_suffix: ">".into(),
            close_prefix: "</".into(),
            close_suffix: ">".into(),
            item: "item".into(),
        }
    }

    fn convert(text: &str, schema: Option<Value>) -> Value {
        let root = json!({});
        to_json(&tags(), text, schema.as_ref().map(|s| (s, &root)))
    }

    #[test]
    fn shapes_without_a_schema() {
        assert_eq!(convert("<a>1</a><b>x</b>", None), json!({"a": 1, "b": "x"}));
        assert_eq!(
            convert("<item>a</item><item><c>true</c></item>", None),
            json!(["a", {"c": true}])
        );
        assert_eq!(
            convert("<a><b><c>deep</c></b></a>", None),
            json!({"a": {"b": {"c": "deep"}}})
        );
    }

    #[test]
    fn schemas_type_the_leaves() {
        let number = json!({"type": "object", "properties": {"real": {"type": "number"}, "name": {"type": "string"}}});
        assert_eq!(
            convert("<real>1.5</real><name>2</name>", Some(number)),
            json!({"real": 1.5, "name": "2"})
        );
        let tags = json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(
            convert("<item>1</item><item>b</item>", Some(tags)),
            json!(["1", "b"])
        );
        let limit = json!({"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]});
        assert_eq!(convert("<max>10</max>", Some(limit)), json!({"max": 10}));
    }

    #[test]
    fn a_string_alternative_keeps_the_text() {
        let label = json!({"oneOf": [{"type": "string"}, {"type": "object"}]});
        assert_eq!(
            convert("<text>hi</text>", Some(label)),
            json!("<text>hi</text>")
        );
        assert_eq!(
            convert("<text>hi</text>", Some(json!({"type": "integer"}))),
            json!("<text>hi</text>")
        );
    }

    #[test]
    fn text_around_elements_is_a_string() {
        for text in [
            "<a>1</a>x",
            "<a>1",
            "<a><b>1</b>",
            "plain",
            "x < y",
            "<b>hi</b> there",
        ] {
            assert_eq!(convert(text, None), json!(text), "{text}");
        }
        assert_eq!(convert("", Some(json!({"type": "array"}))), json!([]));
        assert_eq!(convert("", Some(json!({"type": "integer"}))), json!(""));
        assert_eq!(convert(" ", None), json!(" "));
    }
}
