//! The schema walk shared by the value notations: JSON (`schema`) and
//! nested elements (`elements`). A schema's keywords are dispatched here,
//! once — unsupported-keyword warnings, OpenAPI's `nullable`, `$ref`, `const`, `enum`,
//! `anyOf` / `oneOf`, `allOf`, `type` (one or a list), untyped schemas with
//! members or items, `true` / `false` and the depth bound — and a
//! [`ValueRules`] says how a value of one type, a constant or any value is
//! written.
//!
//! Invariants: never panics; every reference handed back exists in the rule
//! set (the notation's, plus `$ref` rules reserved here before their body is
//! walked, so recursive references terminate); each `$ref` and each `allOf`
//! is walked once per context, so the walk grows with the schema, not with
//! the paths through it; nesting is bounded by [`MAX_DEPTH`]; a schema part
//! that cannot be expressed yields the looser "any value" and a warning; the
//! output depends only on the input.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::gbnf::{alt, Rules};
use crate::json_schema::{lookup, merged_all_of, MAX_DEPTH};

/// Keywords no notation expresses: warned about, then ignored (the rule is
/// looser, never wrong).
const IGNORED: [&str; 6] = [
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
];

/// The grammar rules of one notation's values (JSON, Python literals, nested
/// elements). The walk ([`ValueRules::walk`]) handles
/// the keywords every notation treats alike and calls these for the rest.
pub trait ValueRules {
    /// Keywords this notation also ignores with a warning (after
    /// [`IGNORED`]'s, in this order).
    const ALSO_IGNORED: &'static [&'static str];
    /// `$ref` rules are named `{REF_PREFIX}{last path segment}`, their
    /// bodies `{last path segment}-{REF_BODY}`, so that the notations'
    /// rules for one definition do not collide.
    const REF_PREFIX: &'static str;
    const REF_BODY: &'static str;

    fn rules(&mut self) -> &mut Rules;
    fn warn(&mut self, warning: String);
    /// The document `$ref`s resolve against.
    fn root(&self) -> &Value;
    /// `$ref` (and `allOf` schema) → rule name for the current context, so
    /// each is compiled once per context and recursive ones terminate; an
    /// empty name marks one being compiled.
    fn refs(&mut self) -> &mut HashMap<String, String>;

    /// A value of JSON Schema type `t` (any name: unknown ones are the
    /// notation's to reject, usually with [`ValueRules::loose`]).
    fn typed(&mut self, t: &str, map: &Map<String, Value>, hint: &str, depth: usize) -> String;
    /// A fixed value, as the notation spells it.
    fn constant(&mut self, value: &Value) -> String;
    /// Any value.
    fn any(&mut self) -> String;

    /// Records a warning and returns the looser rule: any value.
    fn loose(&mut self, hint: &str, why: &str) -> String {
        self.warn(format!("{hint}: {why}; any value is accepted instead"));
        self.any()
    }

    /// A rule for values valid under `schema` at nesting `depth`; `hint`
    /// names the rules.
    fn walk(&mut self, schema: &Value, hint: &str, depth: usize) -> String
    where
        Self: Sized,
    {
        if depth > MAX_DEPTH {
            return self.loose(hint, "nesting deeper than the supported depth");
        }
        match schema {
            Value::Bool(true) => self.any(),
            Value::Object(map) => object_schema(self, map, hint, depth),
            Value::Bool(false) => self.loose(hint, "`false` schema"),
            _ => self.loose(hint, "schema is not an object"),
        }
    }
}

fn object_schema<N: ValueRules>(
    n: &mut N,
    map: &Map<String, Value>,
    hint: &str,
    depth: usize,
) -> String {
    for key in IGNORED.iter().chain(N::ALSO_IGNORED) {
        if map.contains_key(*key) {
            n.warn(format!(
                "{hint}: `{key}` is not supported; it is ignored (looser grammar)"
            ));
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        // OpenAPI's `nullable`: the schema, or null.
        let mut inner = map.clone();
        inner.remove("nullable");
        let value = object_schema(n, &inner, hint, depth);
        let null = n.constant(&Value::Null);
        return n
            .rules()
            .add(&format!("{hint}-or-null"), alt(&[value, null]));
    }
    if let Some(r) = map.get("$ref") {
        return reference(n, r, hint, depth);
    }
    if let Some(c) = map.get("const") {
        return n.constant(c);
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        let options: Vec<String> = values.iter().map(|v| n.constant(v)).collect();
        return n.rules().add(hint, alt(&options));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = map.get(key) {
            let options: Vec<String> = subs
                .iter()
                .enumerate()
                .map(|(i, s)| n.walk(s, &format!("{hint}-{i}"), depth + 1))
                .collect();
            return n.rules().add(hint, alt(&options));
        }
    }
    if let Some(Value::Array(subs)) = map.get("allOf") {
        return all_of(n, map, subs, hint, depth);
    }
    match map.get("type") {
        Some(Value::String(t)) => n.typed(t, map, hint, depth),
        Some(Value::Array(types)) => {
            let options: Vec<String> = types
                .iter()
                .map(|t| match t.as_str() {
                    Some(t) => n.typed(t, map, &format!("{hint}-{t}"), depth),
                    None => n.loose(hint, "non-string entry in `type`"),
                })
                .collect();
            n.rules().add(hint, alt(&options))
        }
        Some(_) => n.loose(hint, "`type` is neither a string nor a list"),
        None if map.contains_key("properties") || map.contains_key("additionalProperties") => {
            n.typed("object", map, hint, depth)
        }
        None if map.contains_key("items") || map.contains_key("prefixItems") => {
            n.typed("array", map, hint, depth)
        }
        None => n.any(),
    }
}

/// `allOf` whose parts are all object schemas: one object with the members
/// of all parts. Anything else is looser: the first part only.
///
/// Compiled once per context, as a `$ref` is: merging copies the parts'
/// members, which may merge the same parts again (a definition merged into
/// its own members, or into two members per level), so walking every copy
/// would multiply the walk. The key is the `allOf` schema itself; one met
/// again while it is being compiled (a cycle) gets a rule reserved then.
fn all_of<N: ValueRules>(
    n: &mut N,
    map: &Map<String, Value>,
    subs: &[Value],
    hint: &str,
    depth: usize,
) -> String {
    let key = format!("allOf {}", serde_json::to_string(map).unwrap_or_default());
    match n.refs().get(&key).cloned() {
        // Pending: this `allOf` holds itself.
        Some(name) if name.is_empty() => {
            let name = n.rules().reserve(hint);
            n.refs().insert(key, name.clone());
            return name;
        }
        Some(name) => return name,
        None => {}
    }
    n.refs().insert(key.clone(), String::new());
    let rule = merged_or_first(n, map, subs, hint, depth);
    match n.refs().insert(key.clone(), rule.clone()) {
        Some(reserved) if !reserved.is_empty() => {
            n.rules().define(&reserved, rule);
            n.refs().insert(key, reserved.clone());
            reserved
        }
        _ => rule,
    }
}

fn merged_or_first<N: ValueRules>(
    n: &mut N,
    map: &Map<String, Value>,
    subs: &[Value],
    hint: &str,
    depth: usize,
) -> String {
    match merged_all_of(n.root(), map, subs) {
        Some(merged) => n.typed("object", &merged, hint, depth),
        None => {
            n.warn(format!(
                "{hint}: `allOf` over non-object schemas; only its first part is used"
            ));
            match subs.first() {
                Some(first) => n.walk(first, hint, depth + 1),
                None => n.any(),
            }
        }
    }
}

/// A `$ref` into the document: one rule per reference (per context),
/// reserved before its body is walked so that a recursive reference finds it.
fn reference<N: ValueRules>(n: &mut N, r: &Value, hint: &str, depth: usize) -> String {
    let Some(reference) = r.as_str() else {
        return n.loose(hint, "`$ref` is not a string");
    };
    if let Some(name) = n.refs().get(reference) {
        return name.clone();
    }
    let Some(target) = lookup(n.root(), reference).cloned() else {
        return n.loose(
            hint,
            &format!("`$ref` {reference:?} is outside the document"),
        );
    };
    if left_cycle(n.root(), reference) {
        return n.loose(hint, &format!("`$ref` {reference:?} leads back to itself through references and alternatives alone"));
    }
    let ref_hint = reference.rsplit('/').next().unwrap_or("ref").to_owned();
    let name = n.rules().reserve(&format!("{}{ref_hint}", N::REF_PREFIX));
    n.refs().insert(reference.to_owned(), name.clone());
    let body = n.walk(&target, &format!("{ref_hint}-{}", N::REF_BODY), depth + 1);
    n.rules().define(&name, body);
    name
}

/// Whether `reference` leads back to itself through `$ref`, `anyOf`,
/// `oneOf` and `allOf` alone, before any text is matched (`A -> B -> A`,
/// `A -> anyOf[A, ...]`): a left-recursive rule, which llama.cpp refuses.
/// Cycles through an object's members or an array's items are recursion
/// after a `{` or `[`, and fine. Over-approximates: every `allOf` part and
/// every alternative count, even where another keyword takes precedence.
fn left_cycle(root: &Value, reference: &str) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<&Value> = lookup(root, reference).into_iter().collect();
    while let Some(schema) = stack.pop() {
        let Value::Object(map) = schema else { continue };
        if let Some(r) = map.get("$ref").and_then(Value::as_str) {
            if r == reference {
                return true;
            }
            if seen.insert(r) {
                stack.extend(lookup(root, r));
            }
            continue;
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                stack.extend(subs);
            }
        }
    }
    false
}
