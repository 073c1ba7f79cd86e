//! JSON Schema → GBNF rules, for tool parameters and response formats.
//!
//! Supported: `type` (one or a list), `properties` / `required` (required
//! members must appear, optional ones may be skipped, all in schema order),
//! `additionalProperties` (a schema or `true` adds extra members after the
//! declared ones), `items`, `prefixItems`, `minItems` / `maxItems`, `enum`,
//! `const`, `anyOf` / `oneOf`, `allOf` over objects (merged), `$ref` into the
//! document's `$defs` / `definitions` (recursive references included),
//! `minLength` / `maxLength`, `pattern` and the `format`s with a fixed syntax
//! (`date`, `time`, `date-time`, `uuid`; see `pattern`), integer bounds
//! digit by digit and a number's sign (`bounds`), OpenAPI's `nullable`, and
//! `true` / `{}` for any value.
//!
//! Fallback (documented in docs/grammar.md): whatever cannot be expressed —
//! a `pattern` the translator does not read (look-behind, non-ASCII
//! classes), `not`, `if`/`then`, a `$ref` outside the document, an unknown
//! `type`, a `false` schema, bounds no integer meets, nesting deeper than
//! [`MAX_DEPTH`](crate::json_schema::MAX_DEPTH) — becomes the
//! looser rule for its type (a plain string for `pattern`, any value
//! otherwise) and adds a warning. Other `format`s (`email`, `uri`), bounds
//! on a fraction and `multipleOf` are ignored without a warning: the rule is
//! looser, never wrong.
//!
//! Invariants: never panics on any JSON input; always returns a rule
//! reference that exists in [`Rules`]; the output depends only on the input.

use std::collections::HashMap;

use serde_json::{Map, Value};

pub use super::gbnf::MAX_BOUND;
use super::gbnf::{alt, literal, seq, Rules};
use super::walk::ValueRules;
use super::{bounds, pattern};
use crate::json_schema::required_names;

/// How values are written: JSON, or Python literals (`True`, `None`, `'x'`),
/// which also accept their JSON spellings because templates mix both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSyntax {
    Json,
    Python,
}

/// One member of an ordered member list (object property, keyword argument).
#[derive(Clone)]
pub struct Member {
    /// The GBNF expression for the whole member (key and value).
    pub expr: String,
    pub required: bool,
}

/// How many member references the spelled-out form of [`members`] may hold
/// beyond one spelling of the list; past it, the members after each one
/// are named blocks ([`tail_blocks`]).
const MAX_INLINE_MEMBERS: usize = 4096;

/// Members in order with `sep` between them: required ones must appear,
/// optional ones may be left out. The expression matches nothing extra.
///
/// Each option starts at one member and spells out the members after it,
/// which grows with the square of the list (20 000 optional properties are
/// 200 million references); a longer list names the members after each
/// one as a few rules (`hint-tail`, see [`tail_blocks`]) instead.
pub fn members(rules: &mut Rules, list: &[Member], sep: &str, hint: &str) -> String {
    let (starts, spelled) = member_starts(list);
    let tails: Vec<Vec<String>> = match spelled {
        true => (1..=starts)
            .map(|from| list[from..].iter().map(|m| after_sep(m, sep)).collect())
            .collect(),
        false => tail_blocks(list.len(), starts, &mut |part| match part {
            Block::Member(i) => after_sep(&list[i], sep),
            Block::Halves(a, b) => rules.add(&format!("{hint}-tail"), seq(&[a, b])),
        }),
    };
    let mut options: Vec<String> = list[..starts]
        .iter()
        .zip(tails)
        .map(|(m, tail)| seq(&[vec![m.expr.clone()], tail].concat()))
        .collect();
    if list.iter().all(|m| !m.required) {
        options.push("\"\"".into());
    }
    alt(&options)
}

/// How many options an ordered member list has (one starting at each
/// member up to the first required one), and whether they may spell out
/// the members after them (see [`MAX_INLINE_MEMBERS`]).
pub(super) fn member_starts(list: &[Member]) -> (usize, bool) {
    let starts = list
        .iter()
        .position(|m| m.required)
        .map_or(list.len(), |i| i + 1);
    let spelled: usize = (0..starts).map(|i| list.len() - i).sum();
    (starts, spelled <= list.len() + MAX_INLINE_MEMBERS)
}

/// `sep` then the member; optional members as an optional group.
fn after_sep(m: &Member, sep: &str) -> String {
    match m.required {
        true => seq(&[sep.to_owned(), m.expr.clone()]),
        false => format!("( {} )?", seq(&[sep.to_owned(), m.expr.clone()])),
    }
}

/// What [`tail_blocks`] asks a notation to write: one member after its
/// separator, or a rule for a block made of two halves (their expressions).
pub(super) enum Block {
    Member(usize),
    Halves(String, String),
}

/// For each of the first `starts` members of a list `len` long, the members
/// after it as aligned blocks (`[p, p + 2^k)`, each written by `write` once):
/// an option names at most 2·log2(len) blocks, and a block's rule holds its
/// two halves, so rules nest log2(len) deep. (One rule per member, each
/// naming the next, would nest as deep as the list is long; engines recurse
/// through nested rules.)
pub(super) fn tail_blocks(
    len: usize,
    starts: usize,
    write: &mut dyn FnMut(Block) -> String,
) -> Vec<Vec<String>> {
    let mut written: HashMap<(usize, usize), String> = HashMap::new();
    (1..=starts)
        .map(|from| {
            let mut blocks = Vec::new();
            let mut p = from;
            while p < len {
                let mut size = 1;
                while p % (size * 2) == 0 && p + size * 2 <= len {
                    size *= 2;
                }
                blocks.push(block(p, size, write, &mut written));
                p += size;
            }
            blocks
        })
        .collect()
}

/// The block `[p, p + size)`, written once.
fn block(
    p: usize,
    size: usize,
    write: &mut dyn FnMut(Block) -> String,
    written: &mut HashMap<(usize, usize), String>,
) -> String {
    if size == 1 {
        return write(Block::Member(p));
    }
    if let Some(name) = written.get(&(p, size)) {
        return name.clone();
    }
    let half = size / 2;
    let first = block(p, half, write, written);
    let second = block(p + half, half, write, written);
    let name = write(Block::Halves(first, second));
    written.insert((p, size), name.clone());
    name
}

/// Compiles schemas into `rules`, collecting warnings.
pub struct Compiler<'a> {
    pub rules: &'a mut Rules,
    pub warnings: &'a mut Vec<String>,
    pub dialect: ValueSyntax,
    /// The document `$ref`s resolve against.
    root: &'a Value,
    /// `$ref` → rule name, so recursive references terminate.
    refs: HashMap<String, String>,
}

impl<'a> Compiler<'a> {
    pub fn new(
        rules: &'a mut Rules,
        warnings: &'a mut Vec<String>,
        dialect: ValueSyntax,
        root: &'a Value,
    ) -> Self {
        Compiler {
            rules,
            warnings,
            dialect,
            root,
            refs: HashMap::new(),
        }
    }

    /// A rule for values valid under `schema`; `hint` names the rules.
    pub fn compile(&mut self, schema: &Value, hint: &str) -> String {
        self.walk(schema, hint, 0)
    }

    /// This compiler with the `$ref` and `allOf` rules an earlier one made
    /// over the same document, rules and dialect ([`Compiler::into_refs`]),
    /// so that values sharing definitions compile them once.
    pub fn with_refs(mut self, refs: HashMap<String, String>) -> Self {
        self.refs = refs;
        self
    }

    /// The `$ref` and `allOf` rules this compiler made.
    pub fn into_refs(self) -> HashMap<String, String> {
        self.refs
    }

    fn string(&mut self, map: &Map<String, Value>, hint: &str) -> String {
        if let Some(rule) = self.patterned(map, hint) {
            return rule;
        }
        let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = map.get("maxLength").and_then(Value::as_u64);
        if self.dialect == ValueSyntax::Python || (min == 0 && max.is_none()) {
            return self.primitive("string");
        }
        let char_rule = self.primitive("char");
        let rep = match max.filter(|m| *m <= MAX_BOUND && *m >= min) {
            Some(max) => format!("{char_rule}{{{},{max}}}", min.min(MAX_BOUND)),
            None => format!("{char_rule}{{{},}}", min.min(MAX_BOUND)),
        };
        self.rules.add(hint, format!("\"\\\"\" {rep} \"\\\"\""))
    }

    /// A string under its `pattern`, or its `format` when that has a fixed
    /// syntax; `None` to compile it as a plain string (after a warning when
    /// the pattern cannot be translated). Python strings are not patterned.
    fn patterned(&mut self, map: &Map<String, Value>, hint: &str) -> Option<String> {
        let format = map.get("format").and_then(Value::as_str);
        let pattern = match map.get("pattern") {
            Some(p) => p.as_str().unwrap_or_default(),
            None => format.and_then(pattern::format_pattern)?,
        };
        let body = match self.dialect {
            ValueSyntax::Json => pattern::string_body(pattern, &self.primitive("char")),
            ValueSyntax::Python => None,
        };
        let Some(body) = body else {
            self.warnings.push(format!(
                "{hint}: the pattern {pattern:?} cannot be translated; any string is accepted"
            ));
            return None;
        };
        Some(self.rules.add(hint, format!("\"\\\"\" {body} \"\\\"\"")))
    }

    /// An integer or a number under its bounds (an integer range digit by
    /// digit; a number only loses its sign when it may not be negative).
    fn numeric(&mut self, t: &str, map: &Map<String, Value>, hint: &str) -> String {
        if t == "integer" {
            let (lower, upper) = bounds::integer_bounds(map);
            if lower.is_none() && upper.is_none() {
                return self.primitive("integer");
            }
            return match bounds::integer_range(lower, upper) {
                Some(range) => self.rules.add(hint, range),
                None => {
                    self.warnings.push(format!(
                        "{hint}: no integer meets the bounds; any integer is accepted"
                    ));
                    self.primitive("integer")
                }
            };
        }
        match bounds::non_negative(map) {
            true => self.primitive("unsigned-number"),
            false => self.primitive("number"),
        }
    }

    fn array(&mut self, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        let ws = self.primitive("ws");
        if let Some(Value::Array(prefix)) = map.get("prefixItems") {
            let items: Vec<String> = prefix
                .iter()
                .enumerate()
                .map(|(i, s)| self.walk(s, &format!("{hint}-{i}"), depth + 1))
                .collect();
            let sep = format!(" {ws} \",\" {ws} ");
            let body = if items.is_empty() {
                String::new()
            } else {
                format!("{} {ws} ", items.join(&sep))
            };
            return self.rules.add(hint, format!("\"[\" {ws} {body}\"]\""));
        }
        let item = match map.get("items") {
            Some(s) => self.walk(s, &format!("{hint}-item"), depth + 1),
            None => self.any(),
        };
        let min = map
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(MAX_BOUND);
        let max = map
            .get("maxItems")
            .and_then(Value::as_u64)
            .filter(|m| *m <= MAX_BOUND && *m >= min);
        let more = format!("( {ws} \",\" {ws} {item} )");
        let tail = match (min, max) {
            (_, Some(0)) => None,
            (0 | 1, None) => Some(format!("{item} {more}*")),
            (m, None) => Some(format!("{item} {more}{{{},}}", m - 1)),
            (m, Some(x)) => Some(format!(
                "{item} {more}{{{},{}}}",
                m.saturating_sub(1),
                x - 1
            )),
        };
        let body = match tail {
            None => format!("\"[\" {ws} \"]\""),
            Some(t) if min == 0 => format!("\"[\" {ws} ( {t} {ws} )? \"]\""),
            Some(t) => format!("\"[\" {ws} {t} {ws} \"]\""),
        };
        self.rules.add(hint, body)
    }

    fn object(&mut self, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        let ws = self.primitive("ws");
        let props = match map.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            _ => Map::new(),
        };
        let extra = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(self.any()),
            Some(s @ Value::Object(_)) => Some(self.walk(s, &format!("{hint}-extra"), depth + 1)),
            // Absent: closed when properties are declared (what tool schemas mean), open otherwise.
            _ if props.is_empty() => Some(self.any()),
            _ => None,
        };
        let required = required_names(map);
        let key_value = |c: &mut Self, key: &str, value: String| -> String {
            let k = c.constant(&Value::String(key.to_owned()));
            format!("{k} {ws} \":\" {ws} {value}")
        };
        let list: Vec<Member> = props
            .iter()
            .map(|(key, schema)| {
                let value = self.walk(schema, &format!("{hint}-{key}"), depth + 1);
                Member {
                    expr: key_value(self, key, value),
                    required: required.contains(key),
                }
            })
            .collect();
        let sep = format!("{ws} \",\" {ws}");
        let mut body = members(self.rules, &list, &sep, hint);
        if let Some(value) = extra {
            let key = self.primitive("string");
            let member = format!("{key} {ws} \":\" {ws} {value}");
            body = if list.is_empty() {
                format!("( {member} ( {sep} {member} )* )?")
            } else {
                format!("{body} ( {sep} {member} )*")
            };
        }
        self.rules
            .add(hint, format!("\"{{\" {ws} {body} {ws} \"}}\""))
    }

    /// A shared primitive rule (defining it and what it uses on first use).
    pub fn primitive(&mut self, name: &str) -> String {
        let py = self.dialect == ValueSyntax::Python;
        primitive(self.rules, name, py)
    }
}

impl ValueRules for Compiler<'_> {
    // `pattern` is warned about where strings are compiled (`string`).
    const ALSO_IGNORED: &'static [&'static str] = &[];
    const REF_PREFIX: &'static str = "ref-";
    const REF_BODY: &'static str = "body";

    fn rules(&mut self) -> &mut Rules {
        self.rules
    }

    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    fn root(&self) -> &Value {
        self.root
    }

    fn refs(&mut self) -> &mut HashMap<String, String> {
        &mut self.refs
    }

    fn typed(&mut self, t: &str, map: &Map<String, Value>, hint: &str, depth: usize) -> String {
        match t {
            "string" => self.string(map, hint),
            "number" | "integer" => self.numeric(t, map, hint),
            "boolean" => self.primitive("boolean"),
            "null" => self.primitive("null"),
            "array" => self.array(map, hint, depth),
            "object" => self.object(map, hint, depth),
            other => self.loose(hint, &format!("unknown type {other:?}")),
        }
    }

    /// A fixed value, spelled as the dialect writes it.
    fn constant(&mut self, value: &Value) -> String {
        match (self.dialect, value) {
            (ValueSyntax::Python, Value::String(s)) => {
                let double = serde_json::to_string(s).unwrap_or_default();
                let single = format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
                alt(&[literal(&double), literal(&single)])
            }
            (ValueSyntax::Python, Value::Bool(true)) => alt(&[literal("True"), literal("true")]),
            (ValueSyntax::Python, Value::Bool(false)) => alt(&[literal("False"), literal("false")]),
            (ValueSyntax::Python, Value::Null) => alt(&[literal("None"), literal("null")]),
            _ => literal(&serde_json::to_string(value).unwrap_or_default()),
        }
    }

    /// Any value of the dialect.
    fn any(&mut self) -> String {
        self.primitive("value")
    }
}

/// Defines the primitive `name` (and its dependencies) in `rules`; with
/// `python`, the value rules are the Python-literal ones.
pub fn primitive(rules: &mut Rules, name: &str, python: bool) -> String {
    let (actual, body): (&str, &str) = match (name, python) {
        ("ws", _) => ("ws", r"[ \t\r\n]{0,24}"),
        ("char", _) => (
            "char",
            r#"[^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )"#,
        ),
        ("string", false) => ("string", r#""\"" char* "\"""#),
        ("integral-part", _) => ("integral-part", r"[0] | [1-9] [0-9]{0,15}"),
        ("decimal-part", _) => ("decimal-part", r"[0-9]{1,16}"),
        ("number", _) => (
            "number",
            r#""-"? integral-part ( "." decimal-part )? ( [eE] [-+]? [0-9]{1,16} )?"#,
        ),
        ("unsigned-number", _) => (
            "unsigned-number",
            r#"integral-part ( "." decimal-part )? ( [eE] [-+]? [0-9]{1,16} )?"#,
        ),
        ("integer", _) => ("integer", r#""-"? integral-part"#),
        ("boolean", false) => ("boolean", r#""true" | "false""#),
        ("null", false) => ("null", r#""null""#),
        ("value", false) => ("value", "object | array | string | number | boolean | null"),
        ("object", false) => (
            "object",
            r#""{" ws ( member ( ws "," ws member )* ws )? "}""#,
        ),
        ("member", false) => ("member", r#"string ws ":" ws value"#),
        ("array", false) => ("array", r#""[" ws ( value ( ws "," ws value )* ws )? "]""#),
        ("string", true) => (
            "py-string",
            r#""\"" ( [^"\\] | "\\" . )* "\"" | "'" ( [^'\\] | "\\" . )* "'""#,
        ),
        ("boolean", true) => ("py-boolean", r#""True" | "False" | "true" | "false""#),
        ("null", true) => ("py-null", r#""None" | "null""#),
        ("value", true) => (
            "py-value",
            "py-object | py-array | py-string | number | py-boolean | py-null",
        ),
        ("object", true) => (
            "py-object",
            r#""{" ws ( py-member ( ws "," ws py-member )* ws )? "}""#,
        ),
        ("member", true) => ("py-member", r#"py-string ws ":" ws py-value"#),
        ("array", true) => (
            "py-array",
            r#""[" ws ( py-value ( ws "," ws py-value )* ws )? "]""#,
        ),
        _ => ("value", "object | array | string | number | boolean | null"),
    };
    if rules.has(actual) {
        return actual.to_owned();
    }
    rules.fixed(actual, body);
    for dep in dependencies(actual) {
        primitive(rules, dep, python);
    }
    actual.to_owned()
}

/// The primitives a primitive's body refers to.
fn dependencies(name: &str) -> &'static [&'static str] {
    match name {
        "string" => &["char"],
        "number" | "unsigned-number" => &["integral-part", "decimal-part"],
        "integer" => &["integral-part"],
        "value" | "py-value" => &["object", "array", "string", "number", "boolean", "null"],
        "object" | "py-object" => &["ws", "member"],
        "member" | "py-member" => &["string", "ws", "value"],
        "array" | "py-array" => &["ws", "value"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(schema: Value) -> (String, String, Vec<String>) {
        let mut rules = Rules::default();
        let mut warnings = Vec::new();
        let mut c = Compiler::new(&mut rules, &mut warnings, ValueSyntax::Json, &schema);
        let name = c.compile(&schema, "p");
        (name, rules.render(), warnings)
    }

    #[test]
    fn required_and_optional_members() {
        let (name, text, w) = compile(json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["b"]}));
        assert_eq!(name, "p");
        assert!(w.is_empty());
        assert!(
            text.contains(r#"p ::= "{" ws ( "\"a\"" ws ":" ws string ws "," ws "\"b\"" ws ":" ws integer | "\"b\"" ws ":" ws integer ) ws "}""#),
            "{text}"
        );
    }

    #[test]
    fn members_all_optional_allow_none() {
        let list = [
            Member {
                expr: "a".into(),
                required: false,
            },
            Member {
                expr: "b".into(),
                required: false,
            },
        ];
        let mut rules = Rules::default();
        assert_eq!(
            members(&mut rules, &list, "\",\"", "p"),
            r#"( a ( "," b )? | b | "" )"#
        );
    }

    #[test]
    fn unsupported_keywords_warn() {
        let (_, _, w) = compile(json!({"type": "string", "pattern": "(?<=a)b"}));
        assert_eq!(w.len(), 1);
        let (_, text, w) = compile(json!({"type": "string", "pattern": "^a+$"}));
        assert!(
            w.is_empty() && text.contains(r#"p ::= "\"" ( "a" )+ "\"""#),
            "{text}"
        );
        let (name, _, w) = compile(json!({"$ref": "http://example.com/x"}));
        assert_eq!((name.as_str(), w.len()), ("value", 1));
    }

    #[test]
    fn recursive_refs_terminate() {
        let (_, text, w) = compile(json!({"$defs": {"node": {"type": "object", "properties": {
            "next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}));
        assert!(w.is_empty());
        assert!(text.contains("ref-node ::= node-body"), "{text}");
        assert!(
            text.contains(r#"node-body ::= "{" ws ( "\"next\"" ws ":" ws ref-node | "" ) ws "}""#),
            "{text}"
        );
    }

    #[test]
    #[cfg(feature = "gbnf-check")]
    fn reference_cycles_without_text_become_loose_rules() {
        let left_recursion = |name: &str, text: &str| {
            let g = super::super::syntax::parse(&format!("root ::= {name}\n{text}")).unwrap();
            super::super::syntax::left_recursion(&g)
        };
        for schema in [
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}),
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}}),
            json!({"$ref": "#"}),
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}}}),
        ] {
            let (name, text, warnings) = compile(schema.clone());
            assert_eq!(left_recursion(&name, &text), None, "{schema}: {text}");
            assert!(
                warnings.iter().any(|w| w.contains("leads back to itself")),
                "{schema}: {warnings:?}"
            );
        }
    }
}
