//! Argument types from the tools' JSON schemas, for formats that write
//! argument values as bare text (`<parameter=days>3</parameter>`).
//!
//! A value is written as a JSON string when its schema says string, and as
//! the JSON value it spells otherwise; a value that does not fit its schema
//! stays a string rather than dropping the call. Schemas we cannot read make
//! the type unknown: then any text that is valid JSON is taken as JSON.
//!
//! Templates that write values with Python's `str()` (`{'a': [1, None]}`,
//! `True`) spell a declared non-string type as a Python literal: when the
//! text is not JSON of the declared type, it is read as a Python literal and
//! normalised to JSON. Only a declared type opts in, so text of unknown type
//! that merely looks like Python (`None`) stays a string. Likewise a quoted
//! Python value of a declared type without strings (`days="3"`) is the
//! scalar it spells (`3`), when it is one.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::json_schema::{lookup, MAX_DEPTH};
use crate::protocol::outline::Elements;
use crate::protocol::Tool;
use chat_autoparser_peg::python;

/// The JSON types a schema allows for one argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgType {
    /// Allowed JSON type names (`string`, `integer`, `number`, `boolean`,
    /// `null`, `object`, `array`); empty when unknown.
    types: Vec<String>,
    /// The tool's parameters schema (shared by its arguments), for values
    /// whose members are typed too (`elements`).
    params: Option<Arc<Value>>,
}

impl ArgType {
    /// Only a string fits: the value can be streamed as a JSON string as it
    /// arrives.
    pub fn is_string_only(&self) -> bool {
        !self.types.is_empty() && self.types.iter().all(|t| t == "string")
    }

    /// The JSON text for a bare value `text` of this type.
    pub fn encode(&self, text: &str) -> String {
        if !self.is_string_only() {
            if let Some(value) = self.typed(text.trim()) {
                return value.to_string();
            }
        }
        Value::String(text.to_string()).to_string()
    }

    /// `text` as a value of this type: JSON first, then (for a declared
    /// type) a Python literal.
    fn typed(&self, text: &str) -> Option<Value> {
        let fitting = |v: Value| Some(v).filter(|v| self.fits(v));
        if let Some(value) = serde_json::from_str(text).ok().and_then(fitting) {
            return Some(value);
        }
        if self.types.is_empty() {
            return None;
        }
        let json = python::to_json(text.as_bytes()).ok()?;
        serde_json::from_str(&json).ok().and_then(fitting)
    }

    /// Whether [`unquoted`](Self::unquoted) may read a quoted scalar: the
    /// type is known and has no string.
    pub fn unquotes(&self) -> bool {
        !self.types.is_empty() && !self.types.iter().any(|t| t == "string")
    }

    /// A quoted scalar's text (`"3"` for `days="3"`) as the value it spells
    /// when the declared type has no string and that value fits it: a
    /// template that quotes every value writes numbers and booleans so.
    /// `None` when a string is allowed or the type is unknown.
    pub fn unquoted(&self, text: &str) -> Option<Value> {
        if !self.unquotes() {
            return None;
        }
        serde_json::from_str::<Value>(text.trim())
            .ok()
            .filter(|v| !(v.is_object() || v.is_array()) && self.fits(v))
    }

    /// The JSON text for a value written in another notation: `json`, its
    /// conversion, when it fits this type; else the written text `raw` as a
    /// string.
    pub fn encode_converted(&self, json: &str, raw: &str) -> String {
        let fits = !self.is_string_only()
            && serde_json::from_str::<Value>(json).is_ok_and(|v| self.fits(&v));
        if fits {
            json.to_string()
        } else {
            Value::String(raw.to_string()).to_string()
        }
    }

    /// The JSON text for the value of argument `key` written as nested
    /// elements (`elements`).
    pub fn encode_elements(&self, e: &Elements, key: &str, text: &str) -> String {
        let params = self.params.as_deref();
        let schema = params
            .and_then(|p| p.get("properties")?.get(key))
            .zip(params);
        super::elements::to_json(e, text, schema).to_string()
    }

    fn fits(&self, value: &Value) -> bool {
        if self.types.is_empty() {
            return !value.is_string();
        }
        self.types.iter().any(|t| match t.as_str() {
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            _ => false,
        })
    }
}

/// Argument types per tool and argument name.
#[derive(Debug, Clone, Default)]
pub struct ToolSchemas {
    tools: HashMap<String, HashMap<String, ArgType>>,
}

impl ToolSchemas {
    /// The argument types of the request's tools (as the protocol read
    /// them), sharing a copy of the schemas that type members.
    pub fn new(tools: &[Tool]) -> ToolSchemas {
        let mut out = HashMap::new();
        for Tool {
            name, parameters, ..
        } in tools
        {
            let params = Some(parameters);
            let props = params
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object);
            let types: Vec<(String, Vec<String>)> = props
                .map(|props| {
                    props
                        .iter()
                        .map(|(k, s)| (k.clone(), schema_types(s, params)))
                        .collect()
                })
                .unwrap_or_default();
            // Only objects and lists have members to type; copying the
            // schema for tools without them was a third of building a parser.
            let has_members = types
                .iter()
                .any(|(_, t)| t.is_empty() || t.iter().any(|t| t == "object" || t == "array"));
            let shared = has_members.then(|| Arc::new(parameters.clone()));
            let args = types
                .into_iter()
                .map(|(k, types)| {
                    (
                        k,
                        ArgType {
                            types,
                            params: shared.clone(),
                        },
                    )
                })
                .collect();
            out.insert(name.clone(), args);
        }
        ToolSchemas { tools: out }
    }

    /// Whether the request has a function named `name`; true when it
    /// names none (any name is read then).
    pub fn knows(&self, name: &str) -> bool {
        self.tools.is_empty() || self.tools.contains_key(name)
    }

    /// The type of argument `arg` of tool `tool` (unknown when not declared).
    pub fn arg_type(&self, tool: &str, arg: &str) -> ArgType {
        self.tools
            .get(tool)
            .and_then(|a| a.get(arg))
            .cloned()
            .unwrap_or_default()
    }
}

/// The JSON types a schema allows; empty when it does not say.
fn schema_types(schema: &Value, root: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    collect_types(schema, root, 0, &mut HashSet::new(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// Adds the types `schema` allows to `out`. A `$ref` in `seen` has added
/// its types already: the types are a union, so each reference is read
/// once, however often the schema names it (`anyOf: [A, A]` at every level
/// would otherwise be read 2^depth times).
fn collect_types<'v>(
    schema: &'v Value,
    root: Option<&'v Value>,
    depth: usize,
    seen: &mut HashSet<&'v str>,
    out: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t.clone()),
        Some(Value::Array(ts)) => {
            out.extend(ts.iter().filter_map(Value::as_str).map(str::to_string))
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_types(branch, root, depth + 1, seen, out);
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().map(json_type));
    }
    if let Some(value) = schema.get("const") {
        out.push(json_type(value));
    }
    let reference = schema.get("$ref").and_then(Value::as_str);
    if let Some(target) = reference
        .filter(|r| seen.insert(r))
        .and_then(|r| lookup(root?, r))
    {
        collect_types(target, root, depth + 1, seen, out);
    }
}

fn json_type(value: &Value) -> String {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_values_by_schema() {
        let tools = [
            json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
                "days": {"type": "integer"}, "city": {"type": "string"}, "flag": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "unit": {"enum": ["c", "f"]}
            }}}}),
        ];
        let s = ToolSchemas::new(&crate::protocol::read_tools(&tools, &mut Vec::new()));
        assert_eq!(s.arg_type("f", "days").encode("3"), "3");
        assert_eq!(s.arg_type("f", "days").encode("three"), "\"three\"");
        assert_eq!(s.arg_type("f", "days").encode("3.5"), "\"3.5\"");
        assert_eq!(s.arg_type("f", "city").encode("3"), "\"3\"");
        assert!(s.arg_type("f", "city").is_string_only());
        assert!(s.arg_type("f", "unit").is_string_only());
        assert_eq!(s.arg_type("f", "flag").encode("true"), "true");
        assert_eq!(s.arg_type("f", "nope").encode("[1, 2]"), "[1,2]");
        assert_eq!(s.arg_type("f", "nope").encode("Paris"), "\"Paris\"");
        assert_eq!(s.arg_type("f", "nope").encode("\"q\""), "\"\\\"q\\\"\"");
    }

    #[test]
    fn declared_types_read_python_literals() {
        let tools = [
            json!({"name": "f", "parameters": {"type": "object", "properties": {
                "meta": {"type": "object"}, "tags": {"type": "array"}, "flag": {"type": "boolean"}, "city": {"type": "string"}
            }}}),
        ];
        let s = ToolSchemas::new(&crate::protocol::read_tools(&tools, &mut Vec::new()));
        assert_eq!(
            s.arg_type("f", "meta")
                .encode("{'a': [1, 2.5, {'b': None}], 'ok': True}"),
            r#"{"a":[1,2.5,{"b":null}],"ok":true}"#
        );
        assert_eq!(
            s.arg_type("f", "tags").encode("['x', '<y>']"),
            r#"["x","<y>"]"#
        );
        assert_eq!(s.arg_type("f", "flag").encode("True"), "true");
        assert_eq!(s.arg_type("f", "tags").encode("{'a': 1}"), r#""{'a': 1}""#);
        assert_eq!(s.arg_type("f", "meta").encode("{'a': "), r#""{'a': ""#);
        assert_eq!(s.arg_type("f", "city").encode("['x']"), r#""['x']""#);
        assert_eq!(s.arg_type("f", "nope").encode("None"), r#""None""#);
    }
}
