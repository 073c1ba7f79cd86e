//! Reading JSON Schema documents, as every schema walk does: `$ref`s into the
//! document, `allOf` over objects merged into one, an object's `required`
//! names, whether a value may or must be a string ([`string_kind`]), and the
//! one nesting bound they all stop at ([`MAX_DEPTH`]). The grammar exporters
//! (`grammar`), the output outline (`protocol::outline`) and the output
//! parser's typed values (`parser`) all read tool schemas; this is what they
//! share, so that they agree on what a schema allows.
//!
//! Invariants: never panics on any JSON input; a reference that leads outside
//! the document, or a `$ref` chain longer than 8, resolves to `None`;
//! the [`portable`] rewrites of one export's schemas write at most
//! [`MAX_MERGED_WEIGHT`] more than they read, in all (tool schemas are
//! request data: `allOf` merging must not multiply them).

use std::cell::Cell;
use std::collections::HashMap;

use serde_json::{Map, Value};

/// Schemas nested deeper than this are not walked further: the grammars fall
/// back to "any value", the parser leaves the value as written.
pub const MAX_DEPTH: usize = 32;

/// What a schema [`portable`] cannot write loosens to: any value of its
/// `type`.
pub fn loosened(schema: &Value) -> Value {
    match schema.get("type") {
        Some(t) => serde_json::json!({"type": t}),
        None => serde_json::json!({}),
    }
}

/// The warning for a schema an export cannot write ([`portable`], or its
/// copies in all past an export's own bound), at `hint`.
pub fn too_large(hint: &str) -> String {
    format!("{hint}: the schema grows past the size limit (its `allOf`s merged, its definitions copied); only its `type` is kept")
}

/// How much more than they read the [`portable`] rewrites of one export may
/// write, in [`weight`] units (about bytes of JSON). Merging an `allOf`
/// copies its parts' members, and the copies are merged in turn: a
/// definition whose members merge it again, or merge the next definition
/// twice per level, doubles the copy at every level.
pub const MAX_MERGED_WEIGHT: usize = 1 << 20;

/// What is left of one export's [`MAX_MERGED_WEIGHT`]: shared by its
/// [`portable`] calls, so that many schemas cannot each spend a fresh one.
#[derive(Debug)]
pub struct Allowance(Cell<usize>);

impl Default for Allowance {
    fn default() -> Self {
        Allowance(Cell::new(MAX_MERGED_WEIGHT))
    }
}

/// `schema` with its `$ref`s (in `root`) followed; `None` when one leads
/// outside the document or the chain is longer than 8.
pub fn resolved<'v>(root: &'v Value, schema: &'v Value) -> Option<&'v Value> {
    let mut current = schema;
    for _ in 0..8 {
        match current.get("$ref").and_then(Value::as_str) {
            Some(r) => current = lookup(root, r)?,
            None => return Some(current),
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
        let sub = resolved(root, sub).unwrap_or(&Value::Null);
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

/// How a keyword holds schemas: a map of them (`properties`, `$defs`,
/// `definitions`, `patternProperties`), a list (`anyOf`, `oneOf`, `allOf`,
/// `prefixItems`) or one (`items`, `additionalProperties`, `not`).
#[derive(Clone, Copy)]
enum Holds {
    Map,
    List,
    One,
}

fn holds(key: &str, value: &Value) -> Option<Holds> {
    match (key, value) {
        ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(_)) => {
            Some(Holds::Map)
        }
        ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(_)) => Some(Holds::List),
        ("items" | "additionalProperties" | "not", _) => Some(Holds::One),
        _ => None,
    }
}

/// `map` with `f` applied to each schema it holds (see [`Holds`]), except
/// under the keys in `keep`; every other member as it is. The one walk of
/// a schema's sub-schemas the rewriting exports share.
pub fn map_subschemas(
    map: &Map<String, Value>,
    keep: &[&str],
    f: &dyn Fn(&Value) -> Value,
) -> Map<String, Value> {
    map.iter()
        .map(|(key, value)| {
            let value = match (holds(key, value), value) {
                _ if keep.contains(&key.as_str()) => value.clone(),
                (Some(Holds::Map), Value::Object(m)) => {
                    Value::Object(m.iter().map(|(k, v)| (k.clone(), f(v))).collect())
                }
                (Some(Holds::List), Value::Array(a)) => Value::Array(a.iter().map(f).collect()),
                (Some(Holds::One), v) => f(v),
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
/// them. `None` when what it writes beyond `schema`'s own [`weight`] would
/// pass what is left of `allowance` (which it spends).
pub fn portable(
    schema: &Value,
    pattern: &dyn Fn(&str) -> Option<String>,
    allowance: &Allowance,
) -> Option<Value> {
    let own = weight(schema);
    let budget = Cell::new((own + allowance.0.get()) as isize);
    let out = portable_at(schema, schema, pattern, 0, &budget);
    // What it wrote beyond its own weight comes out of the allowance.
    let left = usize::try_from(budget.get()).unwrap_or(0);
    allowance.0.set(left.min(allowance.0.get()));
    (budget.get() >= 0).then_some(out)
}

/// The size of `value` as [`portable`]'s budget counts it: one for each
/// JSON value, plus the bytes of its strings and keys.
fn weight(value: &Value) -> usize {
    let mut stack = vec![value];
    let mut total = 0;
    while let Some(v) = stack.pop() {
        total += 1;
        match v {
            Value::Object(m) => {
                total += m.keys().map(String::len).sum::<usize>();
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a),
            Value::String(s) => total += s.len(),
            _ => {}
        }
    }
    total
}

/// The [`weight`] of `map` without the schemas it holds (what rewriting it
/// copies as it is).
fn copied_weight(map: &Map<String, Value>) -> usize {
    let held = |key: &str, value: &Value| match (holds(key, value), value) {
        (Some(Holds::Map), Value::Object(m)) => m.keys().map(String::len).sum(),
        (Some(_), _) => 0,
        (None, v) => weight(v),
    };
    1 + map.iter().map(|(k, v)| k.len() + held(k, v)).sum::<usize>()
}

/// Spends `cost` of `budget`; whether any is left.
fn spend(budget: &Cell<isize>, cost: usize) -> bool {
    budget.set(budget.get().saturating_sub(cost as isize));
    budget.get() >= 0
}

fn portable_at(
    root: &Value,
    schema: &Value,
    pattern: &dyn Fn(&str) -> Option<String>,
    depth: usize,
    budget: &Cell<isize>,
) -> Value {
    // What is written is paid for before it is written; once the budget
    // is spent, nothing more is.
    let Some(map) = schema.as_object().filter(|_| depth <= MAX_DEPTH) else {
        return match spend(budget, weight(schema)) {
            true => schema.clone(),
            false => Value::Null,
        };
    };
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
    if !spend(budget, copied_weight(map)) {
        return Value::Null;
    }
    let mut out = map_subschemas(map, &[], &|v| {
        portable_at(root, v, pattern, depth + 1, budget)
    });
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

/// Whether a schema's values are strings: only, never, or some of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StringKind {
    Only,
    Enum(Vec<String>),
    Never,
    Some,
}

impl StringKind {
    /// Whether every value is a string (an enum of strings included): a
    /// format that writes strings raw then has no other spelling for it,
    /// as a quoted word would read back as a string holding its quotes.
    pub fn always(&self) -> bool {
        matches!(self, StringKind::Only | StringKind::Enum(_))
    }
}

/// The string kind of `schema` (its `$ref`s looked up in `root`). A choice
/// (`anyOf`, `oneOf`) is never a string when no branch is, so `oneOf:
/// [integer, object]` gets no raw-text option; an object or a list implied
/// by its keywords alone (`properties`, `items`) is never a string either.
pub fn string_kind(schema: &Value, root: &Value) -> StringKind {
    kind_of(schema, root, 0, &mut HashMap::new())
}

/// [`string_kind`] at `depth`; `known` holds the kind of each `$ref`
/// already met, so that references fanning out (`anyOf: [A, A]` at every
/// level) are read once each. A reference met again while it is being
/// read (a cycle) is `Some`, as the depth bound would make it.
fn kind_of<'v>(
    schema: &'v Value,
    root: &'v Value,
    depth: usize,
    known: &mut HashMap<&'v str, StringKind>,
) -> StringKind {
    if depth > MAX_DEPTH {
        return StringKind::Some;
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        if let Some(kind) = known.get(r) {
            return kind.clone();
        }
        known.insert(r, StringKind::Some);
        let kind = match lookup(root, r) {
            Some(target) => kind_of(target, root, depth + 1, known),
            None => StringKind::Some,
        };
        known.insert(r, kind.clone());
        return kind;
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        if values.iter().all(Value::is_string) {
            return StringKind::Enum(
                values
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
            );
        }
        return StringKind::Some;
    }
    if let Some(Value::String(c)) = schema.get("const") {
        return StringKind::Enum(vec![c.clone()]);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = schema.get(key) {
            let kinds: Vec<StringKind> = subs
                .iter()
                .map(|s| kind_of(s, root, depth + 1, known))
                .collect();
            return match () {
                _ if kinds.iter().all(|k| *k == StringKind::Never) => StringKind::Never,
                _ if kinds.iter().all(|k| *k == StringKind::Only) => StringKind::Only,
                _ => StringKind::Some,
            };
        }
    }
    let shaped = ["properties", "additionalProperties", "items", "prefixItems"]
        .iter()
        .any(|k| schema.get(k).is_some());
    match schema.get("type") {
        Some(Value::String(t)) if t == "string" => StringKind::Only,
        Some(Value::String(_)) => StringKind::Never,
        Some(Value::Array(ts)) if !ts.iter().any(|t| t == "string") => StringKind::Never,
        None if shaped => StringKind::Never,
        _ => StringKind::Some,
    }
}

/// A tool's parameters as an object schema (`{}` and non-objects mean any
/// object).
pub fn object_schema(parameters: &Value) -> Value {
    match parameters {
        Value::Object(m)
            if m.contains_key("properties") || m.contains_key("type") || m.contains_key("$ref") =>
        {
            parameters.clone()
        }
        _ => serde_json::json!({"type": "object"}),
    }
}

/// The declared properties of `schema` (none when it declares none).
pub fn properties(schema: &Value) -> Map<String, Value> {
    match schema.get("properties") {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    }
}

/// A `strict` tool's parameters (OpenAI's `function.strict: true`, the
/// arguments match the schema exactly): every object schema that does not
/// say `additionalProperties` closed, properties declared or not, at every
/// depth up to [`MAX_DEPTH`]. Left as they are: `allOf` parts (closing one
/// would refuse the members the others declare; the holder is closed, and
/// the exports merge the parts into it), what `not`, `if`, `then`, `else`
/// hold (closing there would loosen), and objects with
/// `patternProperties` (`additionalProperties: false` would refuse their
/// keys in exports that do not read patterns).
pub fn strictly_closed(parameters: &Value) -> Value {
    closed_at(&object_schema(parameters), 0)
}

fn closed_at(schema: &Value, depth: usize) -> Value {
    let Some(map) = schema.as_object().filter(|_| depth <= MAX_DEPTH) else {
        return schema.clone();
    };
    let kept = ["allOf", "not", "if", "then", "else"];
    let mut out = map_subschemas(map, &kept, &|v| closed_at(v, depth + 1));
    let object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    };
    let opened = [
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
    ]
    .iter()
    .any(|k| map.contains_key(*k));
    if object && !opened {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_parameters_close_every_object_that_does_not_open_itself() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "object"},
            "b": {"type": "array", "items": {"properties": {"x": {}}}},
            "c": {"type": "object", "additionalProperties": {"type": "string"}},
            "d": {"type": "object", "patternProperties": {"^x": {}}},
            "e": {"not": {"type": "object"}},
            "f": {"allOf": [{"properties": {"x": {}}}, {"properties": {"y": {}}}]},
            "g": {"anyOf": [{"type": "object"}, {"type": "null"}]}}});
        let closed = strictly_closed(&schema);
        let props = &closed["properties"];
        assert_eq!(closed["additionalProperties"], json!(false));
        assert_eq!(
            props["a"],
            json!({"type": "object", "additionalProperties": false})
        );
        assert_eq!(props["b"]["items"]["additionalProperties"], json!(false));
        assert_eq!(props["c"], schema["properties"]["c"]);
        assert_eq!(props["d"], schema["properties"]["d"]);
        assert_eq!(props["e"], schema["properties"]["e"]);
        assert_eq!(props["f"], schema["properties"]["f"]);
        assert_eq!(props["g"]["anyOf"][0]["additionalProperties"], json!(false));
        // No parameters: no arguments.
        let none = json!({"type": "object", "additionalProperties": false});
        assert_eq!(strictly_closed(&json!({})), none);
        assert_eq!(strictly_closed(&json!(null)), none);
    }
}
