//! Values in Lark: a [`ValueNode`]'s schema written in its notation — JSON
//! as llguidance's own `%json { schema }`, JSON text inside a JSON string,
//! Python literals typed by the schema's scalar type, the template's own
//! notation for nested values, an enum's raw words.
//!
//! The `%json` schemas are what llguidance reads: objects that declare
//! properties and say nothing of others closed (as tool schemas mean and
//! the other exports read them), `pattern`s and `format`s llguidance
//! cannot compile removed with a warning, compiled leniently.
//!
//! Invariants: the `%json` schemas grow with the request, not with the
//! paths through its schemas: merged `allOf`s and repeated definitions are
//! bounded (`json_schema::Allowance`, [`MAX_JSON_TEXT`]), past which a
//! schema keeps only its type, with a warning; values of one schema share
//! one rule; nothing here panics.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::writer::{quote, Seq, Writer};
use crate::grammar::shape::is_structured;
use crate::json_schema::{
    loosened, map_subschemas, portable, resolved, too_large, Allowance, MAX_DEPTH,
};
use crate::protocol::outline::{ValueNode, ValueNotation};
use crate::protocol::Notation;

/// How many bytes of `%json` schemas one grammar may hold; past it, a
/// further schema keeps only its `type` (with a warning). Each tagged
/// argument's value is a `%json` of its own, carrying the definitions it
/// references, so a tool whose many arguments name large definitions
/// would repeat them for each.
pub(super) const MAX_JSON_TEXT: usize = 1 << 23;

/// A JSON string (llguidance's own definition).
pub(super) const JSON_STRING: &str =
    r#"/"(\\([\"\\\/bfnrt]|u[a-fA-F0-9]{4})|[^\"\\\x00-\x1F\x7F])*"/"#;

/// Python literals: strings in either quote, numbers, constants.
const PY_RULES: &[(&str, &str)] = &[
    (
        "PY_STRING",
        r#"/"(\\(?s:.)|[^"\\])*"|'(\\(?s:.)|[^'\\])*'/"#,
    ),
    (
        "PY_NUMBER",
        r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/",
    ),
    ("PY_INT", r"/-?(0|[1-9][0-9]*)/"),
    ("PY_BOOL", r"/True|False|true|false/"),
    ("PY_NONE", r"/None|null/"),
];

/// The `%json` budget of one grammar.
#[derive(Default)]
pub(super) struct Values {
    /// What `allOf` merging may still add to the `%json` schemas.
    allowance: Allowance,
    /// Bytes of `%json` schemas written, and whether passing
    /// [`MAX_JSON_TEXT`] was warned of.
    json_text: usize,
    json_text_warned: bool,
    /// (root's address, schema) → its `%json` rule: values sharing a schema
    /// share the rule, made once.
    json_rules: HashMap<(usize, String), String>,
}

impl Values {
    /// The expression for `value`; `hint` names its rules and warnings.
    pub fn value(&mut self, w: &mut Writer, value: &ValueNode, hint: &str) -> String {
        let (schema, root) = (&value.schema, &value.root);
        match &value.notation {
            ValueNotation::Json => self.json(w, schema, root, hint),
            // The schema cannot be followed through the escaping: any
            // string (as the GBNF export does).
            ValueNotation::JsonInString => w.terminal("JSON_STRING", JSON_STRING),
            ValueNotation::Python => python_typed(w, schema, root),
            ValueNotation::Raw => raw_words(w, schema, root),
            ValueNotation::Template(n) => {
                // Templates print values with `tojson` or with `str()`, and
                // nest objects and lists in their own notation (members not
                // typed by the schema, as in the GBNF export).
                let json = self.json(w, schema, root, hint);
                let py = python_typed(w, schema, root);
                match is_structured(schema, root) {
                    true => format!("( {json} | {py} | {} )", notation_value(w, n)),
                    false => format!("( {json} | {py} )"),
                }
            }
            ValueNotation::Element { tags: e, .. } => {
                let tags = Tags {
                    open: (&e.open_prefix, &e.open_suffix),
                    close: (&e.close_prefix, &e.close_suffix),
                };
                match is_structured(schema, root) {
                    true => element_value(w, &tags),
                    false => {
                        let json = self.json(w, schema, root, hint);
                        format!("( {json} | {} )", python_typed(w, schema, root))
                    }
                }
            }
        }
    }

    /// `%json` for `schema` (its `$ref`s resolved in `root`): objects with
    /// properties closed as tool schemas mean, compiled leniently.
    pub fn json(&mut self, w: &mut Writer, schema: &Value, root: &Value, hint: &str) -> String {
        schema_warnings(w, schema, hint, 0);
        let key = (std::ptr::from_ref(root) as usize, schema.to_string());
        if let Some(rule) = self.json_rules.get(&key) {
            return rule.clone();
        }
        let mut doc = match self.json_text < MAX_JSON_TEXT {
            true => json_document(schema, root, &self.allowance).unwrap_or_else(|| {
                w.warn(too_large(hint));
                loosened(schema)
            }),
            false => {
                self.json_text_spent(w, hint);
                loosened(schema)
            }
        };
        if let Value::Object(doc) = &mut doc {
            doc.insert(
                "x-guidance".into(),
                json!({"lenient": true, "json_allow_general_unicode_escapes": true}),
            );
        }
        let text = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into());
        self.json_text += text.len();
        let rule = w.rule(hint, &format!("%json {text}"));
        self.json_rules.insert(key, rule.clone());
        rule
    }

    /// Warns, once, that the `%json` schemas passed [`MAX_JSON_TEXT`] at
    /// `hint`.
    fn json_text_spent(&mut self, w: &mut Writer, hint: &str) {
        if !self.json_text_warned {
            self.json_text_warned = true;
            w.warn(format!(
                "{hint} and the schemas after it: the grammar's `%json` schemas pass {} MiB; each keeps only its `type`",
                MAX_JSON_TEXT >> 20
            ));
        }
    }
}

/// Warns that a string written as `what` is not held to the schema's
/// `pattern` or `format`.
pub(super) fn unchecked_string(w: &mut Writer, hint: &str, schema: &Value, what: &str) {
    if ["pattern", "format"]
        .iter()
        .any(|k| schema.get(*k).is_some())
    {
        w.warn(format!(
            "{hint}: {what} is not checked against `pattern` or `format`"
        ));
    }
}

/// Warns about what llguidance's lenient mode will ignore.
fn schema_warnings(w: &mut Writer, schema: &Value, hint: &str, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(p)) = map.get("pattern").filter(|p| !usable_pattern(p)) {
                w.warn(format!(
                    "{hint}: `pattern` {p:?} is no regex llguidance reads (lookaround?); any string"
                ));
            }
            if let Some(Value::String(f)) = map.get("format").filter(|f| !usable_format(f)) {
                w.warn(format!(
                    "{hint}: `format` {f:?} is not one llguidance knows; ignored"
                ));
            }
            for v in map.values() {
                schema_warnings(w, v, hint, depth + 1);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| schema_warnings(w, v, hint, depth + 1)),
        _ => {}
    }
}

/// An enum's strings, each as its raw words (any text when the schema is
/// no string enum).
fn raw_words(w: &mut Writer, schema: &Value, root: &Value) -> String {
    let schema = resolved(root, schema).unwrap_or(schema);
    let words: Option<Vec<String>> = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.iter().map(|v| v.as_str().map(quote)).collect());
    match words {
        Some(words) if !words.is_empty() => format!("( {} )", words.join(" | ")),
        _ => w.terminal("ANY", "/(?s:.+)/"),
    }
}

/// A Python literal valid under `schema` where its type is a scalar;
/// containers are any Python list or dict.
fn python_typed(w: &mut Writer, schema: &Value, root: &Value) -> String {
    let schema = resolved(root, schema).unwrap_or(&Value::Null);
    if let Some(Value::Array(values)) = schema.get("enum") {
        if let Some(strings) = values
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
        {
            let alts: Vec<String> = strings.iter().flat_map(|s| python_quotes(s)).collect();
            return format!("( {} )", alts.join(" | "));
        }
    }
    let name = match schema.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" => "PY_STRING",
        "integer" => "PY_INT",
        "number" => "PY_NUMBER",
        "boolean" => "PY_BOOL",
        "null" => "PY_NONE",
        _ => return python_value(w),
    };
    python_terminal(w, name)
}

fn python_terminal(w: &mut Writer, name: &str) -> String {
    let body = PY_RULES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("/(?s:.+)/", |(_, b)| b);
    w.terminal(name, body)
}

/// Any Python literal (recursive lists and dicts).
pub(super) fn python_value(w: &mut Writer) -> String {
    let scalars: Vec<String> = ["PY_STRING", "PY_NUMBER", "PY_BOOL", "PY_NONE"]
        .iter()
        .map(|n| python_terminal(w, n))
        .collect();
    let s = scalars[0].clone();
    w.rule(
        "py_list",
        "\"[\" WS? ( py_value ( WS? \",\" WS? py_value )* WS? )? \"]\"",
    );
    w.rule("py_dict", &format!("\"{{\" WS? ( {s} WS? \":\" WS? py_value ( WS? \",\" WS? {s} WS? \":\" WS? py_value )* WS? )? \"}}\""));
    w.rule(
        "py_value",
        &format!("{} | py_list | py_dict", scalars.join(" | ")),
    )
}

/// A value in the template's own notation (`{a:<|"|>x<|"|>,n:3}`):
/// quoted strings, bare scalars, objects with bare or quoted keys, lists;
/// the same language as the GBNF export's `nt-value`.
fn notation_value(w: &mut Writer, n: &Notation) -> String {
    let string = super::lexemes::quoted_text(w, &n.quote_open, &n.quote_close);
    let string = w.rule("nt_string", &string);
    let scalar = w.terminal(
        "NT_SCALAR",
        r"/-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null|True|False|None/",
    );
    let key = w.terminal("NT_KEY", "/[a-zA-Z0-9_]+/");
    let (sep, key_end) = (quote(&n.separator), quote(&n.key_end));
    w.rule(
        "nt_member",
        &format!("( {string} | {key} ) WS? {key_end} WS? nt_value"),
    );
    w.rule(
        "nt_object",
        &format!("\"{{\" WS? ( nt_member ( WS? {sep} WS? nt_member )* WS? )? \"}}\""),
    );
    w.rule(
        "nt_array",
        &format!("\"[\" WS? ( nt_value ( WS? {sep} WS? nt_value )* WS? )? \"]\""),
    );
    let mut value = Seq::default();
    value.expr(format!("nt_object | nt_array | {string} | {scalar}"));
    w.rule("nt_value", &value.render(w))
}

/// The tags around a nested element's name: (before, after) for opening
/// and closing ones.
struct Tags<'a> {
    open: (&'a str, &'a str),
    close: (&'a str, &'a str),
}

/// A scalar inside elements: a JSON or Python literal, as the parser
/// converts them.
fn element_scalar(w: &mut Writer) -> String {
    w.terminal(
        "EL_SCALAR",
        r#"/-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null|True|False|None|"(\\.|[^"\\])*"/"#,
    )
}

/// An object or a list written as nested elements (`<k>v</k>`, `<item>v</item>`),
/// their names and members not typed by the schema: zero or more elements,
/// or a scalar. An element holds elements, or text up to its closing tag
/// (one lazy lexeme that may not begin with an opening tag).
fn element_value(w: &mut Writer, tags: &Tags) -> String {
    use super::lexemes::{after_first_core, first_core, marker, until};
    let (Some(open), Some(close)) = (first_core(tags.open.0), first_core(tags.close.0)) else {
        return element_scalar(w);
    };
    let name = w.terminal("EL_NAME", "/[a-zA-Z0-9_\\-.:]+/");
    let element = w.reserve("el_element");
    let elements = format!("( WS? {element} )* WS?");
    let text = until(w, &close, std::slice::from_ref(&open), "el_text");
    let mut body = marker(tags.open.0);
    body.expr(name.clone());
    body.extend(marker(tags.open.1));
    let mut close_rest = after_first_core(tags.close.0);
    close_rest.expr(name);
    close_rest.extend(marker(tags.close.1));
    let close_rest = close_rest.render(w);
    let mut inner = Seq::default();
    inner.expr(format!("( {text} | {elements} {} )", w.literal(&close)));
    body.extend(inner);
    let body = format!("{} {close_rest}", body.render(w));
    w.fill(&element, body);
    let scalar = element_scalar(w);
    format!("( {elements} | {scalar} )")
}

/// `schema` as llguidance reads it (see [`closed_objects`] and
/// [`portable`]), with `root`'s definitions when it holds a `$ref`;
/// `None` when it grows past what is left of `allowance`.
fn json_document(schema: &Value, root: &Value, allowance: &Allowance) -> Option<Value> {
    let rewrite = |s: &Value| portable(&closed_objects(s, 0), &|p| Some(p.to_owned()), allowance);
    let mut doc = rewrite(schema)?;
    if let (Value::Object(doc), Value::Object(root)) = (&mut doc, root) {
        for defs in ["$defs", "definitions"]
            .into_iter()
            .filter(|_| has_ref(schema, 0))
        {
            if let (Some(d), false) = (root.get(defs), doc.contains_key(defs)) {
                doc.insert(defs.to_string(), rewrite(d)?);
            }
        }
    }
    Some(doc)
}

/// Whether `schema` holds a `$ref` (then its root's definitions go with it).
fn has_ref(schema: &Value, depth: usize) -> bool {
    match schema {
        _ if depth > MAX_DEPTH => false,
        Value::Object(map) => {
            map.contains_key("$ref") || map.values().any(|v| has_ref(v, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| has_ref(v, depth + 1)),
        _ => false,
    }
}

/// A `pattern` llguidance can compile: Rust regex syntax (no lookaround,
/// no backreferences).
fn usable_pattern(pattern: &Value) -> bool {
    pattern
        .as_str()
        .is_some_and(|p| regex::Regex::new(p).is_ok())
}

/// A string `format` llguidance implements.
fn usable_format(format: &Value) -> bool {
    format.as_str().is_some_and(|f| FORMATS.contains(&f))
}

/// The string formats llguidance implements.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
];

/// `'s'` and `"s"`, as Lark literals.
fn python_quotes(s: &str) -> Vec<String> {
    let single = format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    vec![quote(&quote(s)), quote(&single)]
}

/// `schema` without the `pattern`s and `format`s llguidance cannot use, and
/// with every object that declares properties and says nothing of others
/// closed (`additionalProperties: false`), as tool schemas mean and the
/// other exports read them.
fn closed_objects(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_DEPTH {
        return schema.clone();
    }
    // `allOf` parts stay open: closing them would refuse the members the
    // other parts declare.
    let mut out = map_subschemas(map, &["allOf"], &|v| closed_objects(v, depth + 1));
    // What llguidance cannot compile goes, looser (warned by `schema_warnings`).
    if out.get("pattern").is_some_and(|p| !usable_pattern(p)) {
        out.remove("pattern");
    }
    if out.get("format").is_some_and(|f| !usable_format(f)) {
        out.remove("format");
    }
    if out.contains_key("properties")
        && !out.contains_key("additionalProperties")
        && !out.contains_key("allOf")
    {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_of_parts_stay_open() {
        let schema = json!({"properties": {"a": {"allOf": [{"properties": {"x": {}}}]}, "b": {"properties": {}}}});
        let closed = closed_objects(&schema, 0);
        assert_eq!(closed["additionalProperties"], json!(false));
        assert_eq!(
            closed["properties"]["b"]["additionalProperties"],
            json!(false)
        );
        assert!(closed["properties"]["a"]["allOf"][0]
            .get("additionalProperties")
            .is_none());
    }
}
