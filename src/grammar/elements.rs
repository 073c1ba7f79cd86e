//! JSON Schema → rules for values written as nested elements (A5): an
//! object as one element per member, named after its key, a list as one
//! item element per entry, a scalar as text, recursively, in the notation
//! the analysis learned (`Elements`). MiniMax-M3 writes `{"tags": ["a"]}`
//! as `NS<tags>NS<item>aNS</item>NS</tags>` (`NS` its namespace token).
//!
//! A rule built here is the *content* of an element (or of an argument's
//! value): what sits between an opening and a closing tag. Strings are raw
//! text that holds no closing tag (the parser reads one as the end of the
//! element); numbers, booleans and null are JSON literals, as the parser
//! converts them inside elements (an argument's whole value, which the
//! parser reads as a typed argument, may also be a Python literal, `True`);
//! `enum` and `const` are their raw spellings. Sibling
//! elements may have whitespace around them, which the parser reads as
//! scaffolding. Declared members are keyed elements in schema order,
//! required ones mandatory (as `schema` does for JSON objects); extra
//! members, and values of any type, take any element name. Keywords and
//! fallbacks are those of `schema`, with the same warnings.
//!
//! Invariants: never panics; every reference handed back exists in the rule
//! set; recursion ends (`$ref`s through a reserved rule, nesting bounded by
//! `schema::MAX_DEPTH`); the output depends only on the input.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::gbnf::{alt, literal, not_class, until, until_in_line, Rules};
use super::markers::{first_word, Pieces};
use super::schema::{lookup, members, merged_all_of, primitive, required_names, Member, MAX_BOUND, MAX_DEPTH};
use crate::analysis::Elements;

/// Compiles schemas into element-notation rules, collecting warnings.
pub struct ElementsCompiler<'a> {
    rules: &'a mut Rules,
    warnings: &'a mut Vec<String>,
    e: &'a Elements,
    /// Strings are written raw (else JSON-quoted), as the format's values.
    raw_strings: bool,
    /// The document `$ref`s resolve against.
    root: &'a Value,
    /// Inside an element (not an argument's whole value): scalars are JSON only.
    inside: bool,
    /// (`$ref`, `inside`) → rule name, so recursive references terminate.
    refs: HashMap<(String, bool), String>,
}

impl<'a> ElementsCompiler<'a> {
    pub fn new(rules: &'a mut Rules, warnings: &'a mut Vec<String>, e: &'a Elements, raw_strings: bool, root: &'a Value) -> Self {
        ElementsCompiler { rules, warnings, e, raw_strings, root, inside: false, refs: HashMap::new() }
    }

    /// A rule for the content of an element holding a value valid under
    /// `schema`; `hint` names the rules.
    pub fn compile(&mut self, schema: &Value, hint: &str) -> String {
        self.at_depth(schema, hint, 0)
    }

    fn at_depth(&mut self, schema: &Value, hint: &str, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return self.loose(hint, "nesting deeper than the supported depth");
        }
        match schema {
            Value::Bool(true) => self.any(),
            Value::Object(map) => self.object_schema(map, hint, depth),
            Value::Bool(false) => self.loose(hint, "`false` schema"),
            _ => self.loose(hint, "schema is not an object"),
        }
    }

    fn object_schema(&mut self, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        for key in ["not", "if", "then", "else", "patternProperties", "dependentSchemas", "pattern"] {
            if map.contains_key(key) {
                self.warnings.push(format!("{hint}: `{key}` is not supported; it is ignored (looser grammar)"));
            }
        }
        if let Some(r) = map.get("$ref") {
            return self.reference(r, hint, depth);
        }
        if let Some(c) = map.get("const") {
            return self.constant(c);
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            let options: Vec<String> = values.iter().map(|v| self.constant(v)).collect();
            return self.rules.add(hint, alt(&options));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                let options: Vec<String> =
                    subs.iter().enumerate().map(|(i, s)| self.at_depth(s, &format!("{hint}-{i}"), depth + 1)).collect();
                return self.rules.add(hint, alt(&options));
            }
        }
        if let Some(Value::Array(subs)) = map.get("allOf") {
            return match merged_all_of(self.root, map, subs) {
                Some(merged) => self.object(&merged, hint, depth),
                None => {
                    self.warnings.push(format!("{hint}: `allOf` over non-object schemas; only its first part is used"));
                    let first = subs.first().cloned().unwrap_or(Value::Bool(true));
                    self.at_depth(&first, hint, depth + 1)
                }
            };
        }
        match map.get("type") {
            Some(Value::String(t)) => self.typed(t, map, hint, depth),
            Some(Value::Array(types)) => {
                let options: Vec<String> = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some(t) => self.typed(t, map, &format!("{hint}-{t}"), depth),
                        None => self.loose(hint, "non-string entry in `type`"),
                    })
                    .collect();
                self.rules.add(hint, alt(&options))
            }
            Some(_) => self.loose(hint, "`type` is neither a string nor a list"),
            None if map.contains_key("properties") || map.contains_key("additionalProperties") => self.object(map, hint, depth),
            None if map.contains_key("items") || map.contains_key("prefixItems") => self.array(map, hint, depth),
            None => self.any(),
        }
    }

    fn typed(&mut self, t: &str, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        match t {
            "string" => self.text(),
            // Python's spellings include JSON's (`True` | `true`); the parser
            // reads them in a whole value only.
            "number" | "integer" | "boolean" | "null" => primitive(self.rules, t, !self.inside),
            "array" => self.array(map, hint, depth),
            "object" => self.object(map, hint, depth),
            other => self.loose(hint, &format!("unknown type {other:?}")),
        }
    }

    fn reference(&mut self, r: &Value, hint: &str, depth: usize) -> String {
        let Some(reference) = r.as_str() else {
            return self.loose(hint, "`$ref` is not a string");
        };
        let key = (reference.to_owned(), self.inside);
        if let Some(name) = self.refs.get(&key) {
            return name.clone();
        }
        let Some(target) = lookup(self.root, reference).cloned() else {
            return self.loose(hint, &format!("`$ref` {reference:?} is outside the document"));
        };
        let ref_hint = reference.rsplit('/').next().unwrap_or("ref").to_owned();
        let name = self.rules.reserve(&format!("elements-ref-{ref_hint}"));
        self.refs.insert(key, name.clone());
        let body = self.at_depth(&target, &format!("{ref_hint}-elements"), depth + 1);
        self.rules.define(&name, body);
        name
    }

    /// A fixed value as the template prints it: a string raw, others as JSON.
    fn constant(&mut self, value: &Value) -> String {
        match value {
            Value::String(s) if self.raw_strings => literal(s),
            _ => literal(&serde_json::to_string(value).unwrap_or_default()),
        }
    }

    /// A string: raw text up to a closing tag, or a JSON string.
    fn text(&mut self) -> String {
        if !self.raw_strings {
            return primitive(self.rules, "string", false);
        }
        let stop = first_word(&self.e.close_prefix).unwrap_or_default();
        until(self.rules, "element-text", &stop)
    }

    /// A rule for an element's content: a member or an item.
    fn member(&mut self, schema: &Value, hint: &str, depth: usize) -> String {
        let outer = std::mem::replace(&mut self.inside, true);
        let rule = self.at_depth(schema, hint, depth);
        self.inside = outer;
        rule
    }

    /// One element: the opening tag with `name`, `content`, the closing tag.
    fn element(&mut self, name: &Pieces, content: &str) -> String {
        let e = self.e;
        let mut p = Pieces::new();
        p.marker(&e.open_prefix).extend(name).marker(&e.open_suffix).expr(content);
        p.marker(&e.close_prefix).extend(name).marker(&e.close_suffix);
        p.render()
    }

    /// The element named `key`, holding `content`.
    fn keyed(&mut self, key: &str, content: &str) -> String {
        let mut name = Pieces::new();
        name.lit(key);
        self.element(&name, content)
    }

    /// An element of any name (not checked against its closing tag's: GBNF
    /// has no back-references), holding `content`.
    fn any_keyed(&mut self, content: &str) -> String {
        let mut name = Pieces::new();
        name.expr(self.any_name());
        self.element(&name, content)
    }

    /// Any element name: one line, not starting with whitespace, up to the
    /// tag's end (as the parser reads names).
    fn any_name(&mut self) -> String {
        let stop = first_word(&self.e.open_suffix).unwrap_or_else(|| " ".into());
        let first: Vec<char> = [' ', '\t', '\r', '\n'].into_iter().chain(stop.chars().next()).collect();
        let rest = until_in_line(self.rules, "element-name-rest", &stop);
        self.rules.add("element-name", format!("{} {rest}", not_class(&first)))
    }

    /// List items: item elements, bounded by `minItems` / `maxItems`, or
    /// one element per `prefixItems` entry.
    fn array(&mut self, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        let ws = primitive(self.rules, "ws", false);
        let name = self.e.item.clone();
        if let Some(Value::Array(prefix)) = map.get("prefixItems") {
            let mut body = vec![ws.clone()];
            for (i, s) in prefix.iter().enumerate() {
                let content = self.member(s, &format!("{hint}-{i}"), depth + 1);
                body.extend([self.keyed(&name, &content), ws.clone()]);
            }
            return self.rules.add(hint, body.join(" "));
        }
        let content = match map.get("items") {
            Some(s) => self.member(s, &format!("{hint}-item"), depth + 1),
            None => self.any(),
        };
        let item = self.keyed(&name, &content);
        let item = self.rules.add(&format!("{hint}-item-element"), item);
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(MAX_BOUND);
        let max = map.get("maxItems").and_then(Value::as_u64).filter(|m| *m <= MAX_BOUND && *m >= min);
        let more = format!("( {item} {ws} )");
        let body = match (min, max) {
            (_, Some(0)) => ws,
            (0, None) => format!("{ws} {more}*"),
            (0, Some(x)) => format!("{ws} {more}{{0,{x}}}"),
            (m, None) => format!("{ws} {more}{{{m},}}"),
            (m, Some(x)) => format!("{ws} {more}{{{m},{x}}}"),
        };
        self.rules.add(hint, body)
    }

    /// Members: declared keys in schema order, then extra keys when the
    /// schema allows them (closed when properties are declared and
    /// `additionalProperties` is absent, as in `schema`).
    fn object(&mut self, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        let ws = primitive(self.rules, "ws", false);
        let props = match map.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            _ => Map::new(),
        };
        let extra = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(self.any()),
            Some(s @ Value::Object(_)) => Some(self.member(s, &format!("{hint}-extra"), depth + 1)),
            _ if props.is_empty() => Some(self.any()),
            _ => None,
        };
        let required = required_names(map);
        let mut list = Vec::new();
        for (key, schema) in &props {
            let content = self.member(schema, &format!("{hint}-{key}"), depth + 1);
            let expr = self.keyed(key, &content);
            list.push(Member { expr, required: required.contains(key) });
        }
        let mut body = members(&list, &ws);
        if let Some(content) = extra {
            let member = self.any_keyed(&content);
            let member = self.rules.add(&format!("{hint}-extra-element"), member);
            body = if list.is_empty() { format!("( {member} ( {ws} {member} )* )?") } else { format!("{body} ( {ws} {member} )*") };
        }
        self.rules.add(hint, format!("{ws} {body} {ws}"))
    }

    /// Any value: text, then elements of any name (each holding any value)
    /// with text between them, as the parser reads values without a schema
    /// (text beside elements is a string).
    pub fn any(&mut self) -> String {
        const ANY: &str = "elements-any";
        if !self.rules.has(ANY) {
            let text = self.text();
            let element = self.any_keyed(ANY);
            let element = self.rules.add("any-element", element);
            self.rules.fixed(ANY, &format!("{text} ( {element} {text} )*"));
        }
        ANY.into()
    }

    /// Records a warning and returns the looser rule.
    fn loose(&mut self, hint: &str, why: &str) -> String {
        self.warnings.push(format!("{hint}: {why}; any value is accepted instead"));
        self.any()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tags() -> Elements {
        Elements { open_prefix: "<".into(), open_suffix: ">".into(), close_prefix: "</".into(), close_suffix: ">".into(), item: "li".into() }
    }

    fn compile(schema: Value) -> (String, String, Vec<String>) {
        let (mut rules, mut warnings, e) = (Rules::default(), Vec::new(), tags());
        let name = ElementsCompiler::new(&mut rules, &mut warnings, &e, true, &schema).compile(&schema, "p");
        (name, rules.render(), warnings)
    }

    #[test]
    fn members_are_keyed_elements_and_items_item_elements() {
        let (name, text, w) = compile(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "integer"}}, "exact": {"type": "boolean"}}, "required": ["exact"]}));
        assert_eq!(name, "p");
        assert!(w.is_empty(), "{w:?}");
        assert!(text.contains(r#"p-tags-item-element ::= "<li>" integer "</li>""#), "{text}");
        assert!(text.contains(r#"p-tags ::= ws ( p-tags-item-element ws )*"#), "{text}");
        assert!(text.contains(r#"p ::= ws ( "<tags>" p-tags "</tags>" ws "<exact>" boolean "</exact>" | "<exact>" boolean "</exact>" ) ws"#), "{text}");
    }

    #[test]
    fn recursive_refs_and_unknown_shapes_terminate() {
        let (_, text, w) = compile(json!({"$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}));
        assert!(w.is_empty(), "{w:?}");
        assert!(text.contains("elements-ref-node ::= node-elements"), "{text}");
        let (name, _, w) = compile(json!({"type": "object", "properties": {"x": false}}));
        assert_eq!((name.as_str(), w.len()), ("p", 1));
        assert!(compile(json!({})).1.contains("elements-any ::= element-text ( any-element element-text )*"));
    }
}
