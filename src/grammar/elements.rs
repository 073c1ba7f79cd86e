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
//! fallbacks are those of `schema`, with the same warnings: the
//! keywords are dispatched by the shared walk (`walk`).
//!
//! Invariants: never panics; every reference handed back exists in the rule
//! set; recursion ends (`$ref`s through a reserved rule, nesting bounded by
//! `json_schema::MAX_DEPTH`); the output depends only on the input.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::gbnf::{literal, not_class, until, until_in_line, Rules};
use super::markers::{first_word, Pieces};
use super::schema::{members, primitive, Member, MAX_BOUND};
use super::walk::ValueRules;
use crate::json_schema::required_names;
use crate::protocol::outline::Elements;

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
    /// `$ref` → rule name, outside (`[0]`) and inside (`[1]`) an element,
    /// so recursive references terminate.
    refs: [HashMap<String, String>; 2],
}

impl<'a> ElementsCompiler<'a> {
    pub fn new(
        rules: &'a mut Rules,
        warnings: &'a mut Vec<String>,
        e: &'a Elements,
        raw_strings: bool,
        root: &'a Value,
    ) -> Self {
        ElementsCompiler {
            rules,
            warnings,
            e,
            raw_strings,
            root,
            inside: false,
            refs: Default::default(),
        }
    }

    /// A rule for the content of an element holding a value valid under
    /// `schema`; `hint` names the rules.
    pub fn compile(&mut self, schema: &Value, hint: &str) -> String {
        self.walk(schema, hint, 0)
    }

    /// This compiler with the `$ref` and `allOf` rules an earlier one made
    /// over the same document and rules ([`ElementsCompiler::into_refs`]).
    pub fn with_refs(mut self, refs: [HashMap<String, String>; 2]) -> Self {
        self.refs = refs;
        self
    }

    /// The `$ref` and `allOf` rules this compiler made.
    pub fn into_refs(self) -> [HashMap<String, String>; 2] {
        self.refs
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
        let rule = self.walk(schema, hint, depth);
        self.inside = outer;
        rule
    }

    /// One element: the opening tag with `name`, `content`, the closing tag.
    fn element(&mut self, name: &Pieces, content: &str) -> String {
        let e = self.e;
        let mut p = Pieces::new();
        p.marker(&e.open_prefix)
            .extend(name)
            .marker(&e.open_suffix)
            .expr(content);
        p.marker(&e.close_prefix)
            .extend(name)
            .marker(&e.close_suffix);
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
        let first: Vec<char> = [' ', '\t', '\r', '\n']
            .into_iter()
            .chain(stop.chars().next())
            .collect();
        let rest = until_in_line(self.rules, "element-name-rest", &stop);
        self.rules
            .add("element-name", format!("{} {rest}", not_class(&first)))
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
        let min = map
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_BOUND);
        let max = map
            .get("maxItems")
            .and_then(Value::as_u64)
            .filter(|m| *m <= MAX_BOUND && *m >= min);
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
            list.push(Member {
                expr,
                required: required.contains(key),
            });
        }
        let mut body = members(self.rules, &list, &ws, hint);
        if let Some(content) = extra {
            let member = self.any_keyed(&content);
            let member = self.rules.add(&format!("{hint}-extra-element"), member);
            body = if list.is_empty() {
                format!("( {member} ( {ws} {member} )* )?")
            } else {
                format!("{body} ( {ws} {member} )*")
            };
        }
        self.rules.add(hint, format!("{ws} {body} {ws}"))
    }
}

impl ValueRules for ElementsCompiler<'_> {
    // Strings are not constrained here (`schema` warns about `pattern` in
    // its string rule, which the warning would otherwise duplicate).
    const ALSO_IGNORED: &'static [&'static str] = &["pattern"];
    const REF_PREFIX: &'static str = "elements-ref-";
    const REF_BODY: &'static str = "elements";

    fn rules(&mut self) -> &mut Rules {
        self.rules
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    fn root(&self) -> &Value {
        self.root
    }

    /// Inside an element a reference's scalars are JSON only, so each
    /// context has its own rules.
    fn refs(&mut self) -> &mut HashMap<String, String> {
        &mut self.refs[usize::from(self.inside)]
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

    /// A fixed value as the template prints it: a string raw, others as JSON.
    fn constant(&mut self, value: &Value) -> String {
        match value {
            Value::String(s) if self.raw_strings => literal(s),
            _ => literal(&serde_json::to_string(value).unwrap_or_default()),
        }
    }

    /// Any value: text, then elements of any name (each holding any value)
    /// with text between them, as the parser reads values without a schema
    /// (text beside elements is a string).
    fn any(&mut self) -> String {
        const ANY: &str = "elements-any";
        if !self.rules.has(ANY) {
            let text = self.text();
            let element = self.any_keyed(ANY);
            let element = self.rules.add("any-element", element);
            self.rules
                .fixed(ANY, &format!("{text} ( {element} {text} )*"));
        }
        ANY.into()
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
            item: "li".into(),
        }
    }

    fn compile(schema: Value) -> (String, String, Vec<String>) {
        let (mut rules, mut warnings, e) = (Rules::default(), Vec::new(), tags());
        let name = ElementsCompiler::new(&mut rules, &mut warnings, &e, true, &schema)
            .compile(&schema, "p");
        (name, rules.render(), warnings)
    }

    #[test]
    fn members_are_keyed_elements_and_items_item_elements() {
        let (name, text, w) = compile(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "integer"}}, "exact": {"type": "boolean"}}, "required": ["exact"]}));
        assert_eq!(name, "p");
        assert!(w.is_empty(), "{w:?}");
        assert!(
            text.contains(r#"p-tags-item-element ::= "<li>" integer "</li>""#),
            "{text}"
        );
        assert!(
            text.contains(r#"p-tags ::= ws ( p-tags-item-element ws )*"#),
            "{text}"
        );
        assert!(text.contains(r#"p ::= ws ( "<tags>" p-tags "</tags>" ws "<exact>" boolean "</exact>" | "<exact>" boolean "</exact>" ) ws"#), "{text}");
    }

    #[test]
    fn recursive_refs_and_unknown_shapes_terminate() {
        let (_, text, w) = compile(
            json!({"$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}),
        );
        assert!(w.is_empty(), "{w:?}");
        assert!(
            text.contains("elements-ref-node ::= node-elements"),
            "{text}"
        );
        let (name, _, w) = compile(json!({"type": "object", "properties": {"x": false}}));
        assert_eq!((name.as_str(), w.len()), ("p", 1));
        assert!(compile(json!({}))
            .1
            .contains("elements-any ::= element-text ( any-element element-text )*"));
    }
}
