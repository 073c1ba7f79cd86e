//! Reading JSON Schema documents, as every schema walk does: `$ref`s into the
//! document, `allOf` over objects merged into one, an object's `required`
//! names, and the one nesting bound they all stop at ([`MAX_DEPTH`]). The
//! grammar exporters (`grammar`) and the output parser's typed values
//! (`parser`) both read tool schemas; this is what they share.
//!
//! Invariants: never panics on any JSON input; a reference that leads outside
//! the document, or a `$ref` chain longer than 8, resolves to `None`.

use serde_json::{Map, Value};

/// Schemas nested deeper than this are not walked further: the grammars fall
/// back to "any value", the parser leaves the value as written.
pub const MAX_DEPTH: usize = 32;

/// `schema` with its `$ref`s (in `root`) followed; `None` when one leads
/// outside the document or the chain is longer than 8.
pub fn resolved(root: &Value, schema: &Value) -> Option<Value> {
    let mut current = schema;
    for _ in 0..8 {
        match current.get("$ref").and_then(Value::as_str) {
            Some(r) => current = lookup(root, r)?,
            None => return Some(current.clone()),
        }
    }
    None
}

/// The schema a `#/...` reference points to in `root`.
pub fn lookup<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `allOf` over object schemas as one object schema (`map` without its
/// `allOf`, with the parts' properties and required names); `None` when a
/// part is not an object schema.
pub fn merged_all_of(
    root: &Value,
    map: &Map<String, Value>,
    subs: &[Value],
) -> Option<Map<String, Value>> {
    let mut merged = map.clone();
    merged.remove("allOf");
    let mut props = Map::new();
    let mut required = Vec::new();
    for sub in subs {
        let sub = resolved(root, sub).unwrap_or(Value::Null);
        let obj = sub.as_object().filter(|o| o.contains_key("properties"))?;
        if let Some(Value::Object(p)) = obj.get("properties") {
            props.extend(p.clone());
        }
        if let Some(Value::Array(r)) = obj.get("required") {
            required.extend(r.iter().cloned());
        }
    }
    merged.insert("type".into(), "object".into());
    merged.insert("properties".into(), Value::Object(props));
    merged.insert("required".into(), Value::Array(required));
    Some(merged)
}

/// The `required` list of an object schema.
pub fn required_names(map: &Map<String, Value>) -> Vec<String> {
    match map.get("required") {
        Some(Value::Array(r)) => r
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// `map` with `f` applied to each schema it holds (`properties`, `$defs`,
/// `definitions` and `patternProperties` values, `anyOf` / `oneOf` /
/// `allOf` / `prefixItems` entries, `items`, `additionalProperties`,
/// `not`), except under the keys in `keep`; every other member as it is.
/// The one walk of a schema's sub-schemas the rewriting exports share.
pub fn map_subschemas(
    map: &Map<String, Value>,
    keep: &[&str],
    f: &dyn Fn(&Value) -> Value,
) -> Map<String, Value> {
    map.iter()
        .map(|(key, value)| {
            let value = match (key.as_str(), value) {
                (k, _) if keep.contains(&k) => value.clone(),
                (
                    "properties" | "$defs" | "definitions" | "patternProperties",
                    Value::Object(m),
                ) => Value::Object(m.iter().map(|(k, v)| (k.clone(), f(v))).collect()),
                ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(a)) => {
                    Value::Array(a.iter().map(f).collect())
                }
                ("items" | "additionalProperties" | "not", v) => f(v),
                _ => value.clone(),
            };
            (key.clone(), value)
        })
        .collect()
}

/// `schema` as engines that compile JSON Schema themselves (llguidance,
/// xgrammar) read it, at every depth up to [`MAX_DEPTH`]: OpenAPI's
/// `nullable: true` written as `anyOf: [schema, {"type": "null"}]`, and
/// `allOf` over object schemas merged into one object (xgrammar ignores
/// `allOf`), and each `pattern` as the engine reads patterns (`pattern`
/// rewrites one, or drops it with `None`: looser, never wrong). A node's
/// `$defs` stay on the outer schema, where `#/$defs/...` references find
/// them.
pub fn portable(schema: &Value, pattern: &dyn Fn(&str) -> Option<String>) -> Value {
    portable_at(schema, schema, pattern, 0)
}

fn portable_at(
    root: &Value,
    schema: &Value,
    pattern: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_DEPTH {
        return schema.clone();
    }
    let merged;
    let map = match map.get("allOf") {
        Some(Value::Array(subs)) => match merged_all_of(root, map, subs) {
            Some(m) => {
                merged = m;
                &merged
            }
            None => map,
        },
        _ => map,
    };
    let mut out = map_subschemas(map, &[], &|v| portable_at(root, v, pattern, depth + 1));
    if let Some(Value::String(p)) = out.remove("pattern") {
        if let Some(p) = pattern(&p) {
            out.insert("pattern".into(), Value::String(p));
        }
    }
    if out.remove("nullable") != Some(Value::Bool(true)) {
        return Value::Object(out);
    }
    let mut wrapper = Map::new();
    for defs in ["$defs", "definitions"] {
        if let Some(d) = out.remove(defs) {
            wrapper.insert(defs.into(), d);
        }
    }
    wrapper.insert(
        "anyOf".into(),
        Value::Array(vec![
            Value::Object(out),
            serde_json::json!({"type": "null"}),
        ]),
    );
    Value::Object(wrapper)
}
