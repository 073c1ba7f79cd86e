//! Lowering pass: a call's arguments — a JSON object (or its text inside a
//! JSON string), Python keyword arguments, or one marker-tagged pair per
//! argument.
//!
//! Keyed arguments are [`Kind::Members`] in the schema's order (required
//! ones must be written), tagged ones in that order or sorted by key; a schema that declares no properties and leaves
//! others open takes members of any key instead. A tagged value is a raw
//! string up to its closing marker where the schema allows a string and
//! the template writes strings raw, and a typed value (the template's
//! value notation, or a Python literal as `str()` prints it) where it
//! allows anything else. Where the template writes Python strings raw
//! (`'it's'`, unescaped), a string value may also be that raw spelling: a
//! lenient option, read by the parser and the response_template, left out
//! by the grammars.
//!
//! Invariant: the node producing [`Produces::Arguments`] holds every
//! argument; each member's value produces [`Produces::Value`].

use std::sync::Arc;

use serde_json::{json, Value};

use super::super::{Arguments, TaggedLayout, Tool};
use super::{values, Kind, Lowering, Member, Node, Order, Produces, ValueNotation};
use crate::json_schema::{object_schema, properties, required_names, string_kind, StringKind};

/// How a template spells the strings of Python keyword arguments besides
/// Python literals.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PythonStrings {
    /// Raw between single quotes (`'it's'`), nothing escaped: read by the
    /// parser, a lenient spelling.
    pub raw: bool,
    /// Bare, as `str()` prints them (`city=Paris`): what the template
    /// writes, so part of the strict language.
    pub bare: bool,
}

/// `python`: how Python strings are spelled besides literals.
pub(super) fn lower(
    lower: &mut Lowering,
    tool: &Tool,
    arguments: &Arguments,
    python: PythonStrings,
) -> Node {
    let schema = object_schema(&tool.parameters);
    let root = Arc::new(tool.parameters.clone());
    match arguments {
        Arguments::Json { as_string } => {
            let notation = match as_string {
                true => ValueNotation::JsonInString,
                false => ValueNotation::Json,
            };
            values::value(&schema, &root, notation).producing(Produces::Arguments)
        }
        Arguments::Python => self::python(&schema, &root, python),
        Arguments::Tagged(g) => tagged(lower, tool, &schema, &root, g),
    }
}

/// `k=v` pairs joined by `, `. A string value may also be written raw
/// between quotes (`'it's'`, `python.raw`), as the parser reads it: a
/// lenient spelling, which strict printers leave out; or bare, as `str()`
/// prints it (`city=Paris`, `python.bare`): the template's own spelling,
/// which every printer takes.
fn python(schema: &Value, root: &Arc<Value>, python: PythonStrings) -> Node {
    let member = |key: Node, value: Value| {
        let typed = values::value(&value, root, ValueNotation::Python).producing(Produces::Value);
        let kind = string_kind(&value, root);
        let mut options = vec![typed];
        if python.bare && kind != StringKind::Never {
            options.push(bare_python_string(&value, root, &kind));
        }
        if python.raw && kind != StringKind::Never {
            options.push(raw_python_string().lenient());
        }
        Node::seq([key, Node::literal("="), Node::choice(options)])
    };
    let list = members(schema, |key, prop| member(Node::literal(key), prop.clone()));
    let extra = open(schema).then(|| {
        let key = Node::new(Kind::Until {
            stops: vec!["=".into()],
        });
        Box::new(member(key, json!({})))
    });
    Node::new(Kind::Members {
        list,
        separator: Box::new(Node::literal(", ")),
        order: Order::Listed,
        extra,
        root: Arc::clone(root),
    })
    .producing(Produces::Arguments)
}

/// A string as `str()` prints it, with no quotes: an enum's word, or text
/// up to the next argument or the call's end. It holds no comma or
/// parenthesis (which end it) but may hold quotes, as `str()` prints them
/// (`query=rust "lark" <b>`, which the parser reads as that text).
fn bare_python_string(schema: &Value, root: &Arc<Value>, kind: &StringKind) -> Node {
    match kind {
        StringKind::Enum(_) => values::value(schema, root, ValueNotation::Raw),
        _ => Node::new(Kind::Until {
            stops: [",", ")"].map(String::from).to_vec(),
        }),
    }
    .producing(Produces::Value)
}

/// A string as written raw between single quotes, up to the last quote
/// before the next argument or the call's end.
fn raw_python_string() -> Node {
    let text = Node::new(Kind::Until {
        stops: vec!["'".into()],
    })
    .producing(Produces::Value);
    Node::seq([Node::literal("'"), text, Node::literal("'")])
}

/// One marker-wrapped pair per argument, then the arguments' end marker.
fn tagged(
    lower: &mut Lowering,
    tool: &Tool,
    schema: &Value,
    root: &Arc<Value>,
    g: &TaggedLayout,
) -> Node {
    if g.elements.is_some() && g.notation.is_some() {
        lower.warn(format!(
            "{}: a value notation and nested elements at once; elements used",
            tool.name
        ));
    }
    raw_string_warnings(lower, tool, schema, g);
    let list = members(schema, |key, prop| {
        Node::seq([
            Node::marker(&g.name_prefix),
            Node::literal(key),
            Node::marker(&g.name_suffix),
            values::tagged_value(g, key, prop, root),
        ])
    });
    let extra = open(schema).then(|| {
        let any = |stop: &str| {
            Node::new(Kind::Until {
                stops: vec![stop.to_string()],
            })
        };
        let mut close = vec![Node::marker(&g.value_suffix)];
        if let Some(after) = &g.named_close {
            close.extend([any(after), Node::marker(after)]);
        }
        let close = Node::seq(close);
        let key = [
            Node::marker(&g.name_prefix),
            any(&g.name_suffix),
            Node::marker(&g.name_suffix),
        ];
        // A generic call types the value as it would a declared argument
        // of any type; a tool's open schema keeps its values as written.
        let value = match lower.generic {
            true => values::value_closed_by(g, &g.value_suffix, close, &json!({}), root),
            false => Node::seq([
                Node::marker(&g.value_prefix),
                any(&g.value_suffix).producing(Produces::Value),
                close,
            ]),
        };
        Box::new(Node::seq(key.into_iter().chain([value])))
    });
    let members = Node::new(Kind::Members {
        list,
        separator: Box::new(Node::marker(&g.separator)),
        order: Order::ListedOrSorted,
        extra,
        root: Arc::clone(root),
    })
    .producing(Produces::Arguments);
    Node::seq([members, Node::marker(&g.end)])
}

/// Warns of each argument a raw string may be written for whose schema
/// holds a `pattern` or `format`: raw text up to a closing marker follows
/// neither.
fn raw_string_warnings(lower: &mut Lowering, tool: &Tool, schema: &Value, g: &TaggedLayout) {
    if !g.raw_strings {
        return;
    }
    for (key, prop) in properties(schema) {
        let checked = ["pattern", "format"].iter().any(|k| prop.get(*k).is_some());
        if checked && string_kind(&prop, &tool.parameters) != StringKind::Never {
            lower.warn(format!(
                "{}.{key}: a raw string value is not checked against `pattern` or `format`",
                tool.name
            ));
        }
    }
}

/// The declared properties as members, in the schema's order.
fn members(schema: &Value, mut node: impl FnMut(&str, &Value) -> Node) -> Vec<Member> {
    let required = schema.as_object().map(required_names).unwrap_or_default();
    properties(schema)
        .iter()
        .map(|(key, prop)| Member {
            key: key.clone(),
            required: required.contains(key),
            node: node(key, prop),
        })
        .collect()
}

/// A schema that declares no properties and does not close the object:
/// any key may be an argument.
fn open(schema: &Value) -> bool {
    schema.get("properties").is_none()
        && schema.get("additionalProperties") != Some(&Value::Bool(false))
}
