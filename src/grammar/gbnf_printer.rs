//! The GBNF printer: an [`Outline`] walked into GBNF rules, node by node,
//! as the Lark printer walks it for llguidance.
//!
//! Strict: `lenient` nodes are left out. Markers are their text with the
//! template's whitespace flexible ([`Pieces::marker`]); fixed text is read
//! as `text_pieces` reads it; text up to a marker is the KMP rule of its
//! first word ([`until`]), and the marker's leading whitespace after it
//! belongs to the text; values go to the schema compilers (`schema`,
//! `elements`) in their notation, a tool's `$ref` rules shared by its
//! values; each call rule of the outline is one GBNF rule (`call-<tool>`),
//! printed once, and the calls a section repeats are one `tool-call` rule.
//! Keyed members with a separator are written in order (and sorted, where
//! the outline allows it) by [`members`], the separator's whitespace
//! flexible on both sides.
//!
//! Invariants: reads nodes only (never the analysis' format types); every
//! reference it returns is defined in [`Rules`]; never panics.

use std::collections::HashMap;

use super::elements::ElementsCompiler;
use super::gbnf::{alt, literal, until, until_in_line, Rules};
use super::markers::{first_word, split, Piece, Pieces};
use super::schema::{members, primitive, Compiler, Member as Spelled, ValueSyntax};
use super::shape::{flat, is_structured, sorted_order, tool_name};
use super::walk::ValueRules;
use crate::json_schema::{string_kind, StringKind};
use crate::protocol::outline::{Kind, Member, Node, Order, Outline, Produces, ValueNode};
use crate::protocol::outline::{Rule, ValueNotation};
use crate::protocol::{text_pieces, IdShape, Notation, TextPiece};

/// `$ref` and `allOf` → rule, for one tool's schema, per value notation
/// (see `walk::ValueRules::refs`).
#[derive(Default)]
struct ToolRefs {
    json: HashMap<String, String>,
    python: HashMap<String, String>,
    elements: [HashMap<String, String>; 2],
}

/// Prints one outline into `rules`.
pub(super) struct Printer<'o> {
    pub rules: Rules,
    pub warnings: Vec<String>,
    outline_rules: &'o [Rule],
    /// Rule index → its GBNF name, once printed.
    printed: HashMap<usize, String>,
    /// The tool whose call is being printed, the member key, its refs.
    tool: String,
    key: String,
    refs: ToolRefs,
}

impl<'o> Printer<'o> {
    pub fn new(outline: &'o Outline) -> Self {
        Printer {
            rules: Rules::default(),
            warnings: outline.warnings.clone(),
            outline_rules: &outline.rules,
            printed: HashMap::new(),
            tool: String::new(),
            key: String::new(),
            refs: ToolRefs::default(),
        }
    }

    /// `node` as a GBNF sequence; `follow` is the first word of what comes
    /// after it (where text with no stop of its own ends).
    pub fn node(&mut self, node: &Node, follow: &str) -> Pieces {
        let mut p = Pieces::new();
        if node.lenient {
            return p;
        }
        match &node.kind {
            Kind::Marker(raw) => {
                p.marker(raw);
            }
            Kind::Literal(text) => push_text(&mut p, text),
            // Any text (what it may not begin with is for lexers: GBNF's
            // alternatives are tried side by side).
            Kind::FreeText { .. } => {
                p.expr(until(&mut self.rules, "free-text", ""));
            }
            Kind::Until { stops } => {
                let stop = stops.iter().find_map(|s| first_word(s));
                let stop = stop.unwrap_or_else(|| follow.to_string());
                let hint = until_hint(node.produces, &stop);
                p.expr(until(&mut self.rules, &hint, &stop));
            }
            Kind::Attributes { close, .. } => {
                p.expr(until_in_line(&mut self.rules, "header-rest", close));
            }
            // Only the parser's outline holds a turn's headers; printed
            // as the section header it is.
            Kind::Header { open, close } => {
                p.marker(open);
                p.expr(until_in_line(&mut self.rules, "header-label", close));
                p.marker(close);
            }
            Kind::Value(v) => {
                p.expr(self.value(v, node.produces));
            }
            Kind::ToolName { name, quoted } => {
                match quoted {
                    // A JSON string token: JSON whitespace on either side.
                    true => p
                        .ws()
                        .lit(&serde_json::to_string(name).unwrap_or_default())
                        .ws(),
                    false => p.lit(name),
                };
            }
            // Only a parser's generic call holds a slot: a request's
            // outline names its tools. Printed as any name would be.
            Kind::NameSlot { quoted } => {
                match quoted {
                    true => p.ws().expr(r#""\"" [A-Za-z0-9_.-]+ "\"""#).ws(),
                    false => p.expr("[A-Za-z0-9_.-]+"),
                };
            }
            Kind::Id(shape) => self.id(&mut p, shape),
            Kind::Sequence(_) => return self.items(&flat(node), follow),
            Kind::Choice(options) => {
                p.expr(self.choice(options, follow));
            }
            Kind::Optional(inner) => {
                let inner = self.node(inner, follow);
                if !inner.0.is_empty() {
                    p.optional(&inner);
                }
            }
            Kind::Repeat {
                node,
                min,
                max,
                separator,
            } => return self.repeat(node, *min, *max, separator, follow),
            Kind::Members {
                list,
                separator,
                order,
                extra,
                ..
            } => {
                p.expr(self.members(list, separator, *order, extra.as_deref(), follow));
            }
            Kind::Rule(index) => {
                p.expr(self.rule(*index));
            }
        }
        p
    }

    /// Nodes one after the other; a marker after text up to it keeps its
    /// leading whitespace in the text.
    fn items(&mut self, nodes: &[&Node], follow: &str) -> Pieces {
        let mut p = Pieces::new();
        for (i, node) in nodes.iter().enumerate() {
            let next = nodes[i + 1..]
                .iter()
                .find_map(|n| self.first_word(n))
                .unwrap_or_else(|| follow.to_string());
            let after_text = i > 0 && matches!(nodes[i - 1].kind, Kind::Until { .. });
            match &node.kind {
                Kind::Marker(raw) if after_text && !node.lenient => push_suffix(&mut p, raw),
                _ => {
                    let item = self.node(node, &next);
                    p.extend(&item);
                }
            }
        }
        p
    }

    /// One of `options` (lenient ones left out), `( ... )?` when one of
    /// them writes nothing.
    fn choice(&mut self, options: &[Node], follow: &str) -> String {
        let mut alts: Vec<String> = Vec::new();
        let mut empty = false;
        for o in options.iter().filter(|o| !o.lenient) {
            let s = self.node(o, follow);
            match s.0.is_empty() {
                true => empty = true,
                false => {
                    let text = s.render();
                    if !alts.contains(&text) {
                        alts.push(text);
                    }
                }
            }
        }
        match (alts.len(), empty) {
            (0, _) => String::new(),
            (1, false) => alts.remove(0),
            (_, false) => alt(&alts),
            (_, true) => format!("( {} )?", alts.join(" | ")),
        }
    }

    /// `node` `min` to `max` times, `separator` between (with flexible
    /// whitespace around it); a repeated choice of rules is one rule.
    fn repeat(
        &mut self,
        node: &Node,
        min: u32,
        max: Option<u32>,
        separator: &Node,
        follow: &str,
    ) -> Pieces {
        let item = self.node(node, follow).render();
        let item = match self.item_hint(node) {
            Some(hint) => self.rules.add(&hint, item),
            None => item,
        };
        let mut p = Pieces::new();
        p.expr(item.clone());
        if max.is_none_or(|m| m > 1) {
            let mut more = Pieces::new();
            more.ws();
            more.extend(&self.node(separator, follow));
            more.ws().expr(item);
            p.expr(format!("( {} )*", more.render()));
        }
        if min == 0 {
            let mut opt = Pieces::new();
            opt.optional(&p);
            return opt;
        }
        p
    }

    /// The rule a repeated node is named as: `tool-call` for calls, `item`
    /// for another choice.
    fn item_hint(&self, node: &Node) -> Option<String> {
        let call = |o: &Node| match &o.kind {
            Kind::Rule(i) => self.outline_rules[*i].node.produces == Produces::Call,
            _ => o.produces == Produces::Call,
        };
        match &node.kind {
            _ if call(node) => Some("tool-call".into()),
            Kind::Choice(options) if options.iter().any(call) => Some("tool-call".into()),
            Kind::Choice(_) => Some("item".into()),
            _ => None,
        }
    }

    /// Keyed members in `order`, `separator` (with flexible whitespace
    /// around it) between; `extra` (any key) when none are declared.
    fn members(
        &mut self,
        list: &[Member],
        separator: &Node,
        order: Order,
        extra: Option<&Node>,
        follow: &str,
    ) -> String {
        let stop = self
            .first_word(separator)
            .unwrap_or_else(|| follow.to_string());
        let mut sep = Pieces::new();
        sep.ws().extend(&self.node(separator, follow));
        sep.ws();
        let sep = sep.render();
        let tool = self.tool.clone();
        if list.is_empty() {
            let Some(extra) = extra else {
                return String::new();
            };
            self.key.clear();
            let one = self.node(extra, &stop).render();
            let one = self.rules.add("any-arg", one);
            return format!("( {one} ( {sep} {one} )* )?");
        }
        // Members written in two orders are named once.
        let named = order != Order::Listed;
        let spelled: Vec<Spelled> = list
            .iter()
            .map(|m| {
                self.key = m.key.clone();
                let text = self.node(&m.node, &stop).render();
                Spelled {
                    expr: match named {
                        true => self.rules.add(&format!("{tool}-{}-arg", m.key), text),
                        false => text,
                    },
                    required: m.required,
                }
            })
            .collect();
        self.key.clear();
        let hint = format!("{tool}-args");
        let listed = members(&mut self.rules, &spelled, &sep, &hint);
        let body = match sorted_order(list, order) {
            None => listed,
            Some(by_key) => {
                let sorted: Vec<Spelled> = by_key.iter().map(|&i| spelled[i].clone()).collect();
                let sorted = members(&mut self.rules, &sorted, &sep, &format!("{hint}-sorted"));
                alt(&[listed, sorted])
            }
        };
        self.rules.add(&hint, body)
    }

    /// A call id: a JSON string, a counter, or text between markers.
    fn id(&mut self, p: &mut Pieces, shape: &IdShape) {
        match shape {
            IdShape::JsonString => {
                p.expr(primitive(&mut self.rules, "string", false));
            }
            IdShape::Counter => {
                p.expr("[0-9]+");
            }
            IdShape::Tagged { prefix, suffix } => {
                let stop = first_word(suffix).unwrap_or_default();
                let text = until(&mut self.rules, "id-text", &stop);
                p.marker(prefix).expr(text).marker(suffix);
            }
        }
    }

    /// A value in its notation; its hint names its rules and warnings.
    fn value(&mut self, v: &ValueNode, produces: Produces) -> String {
        let hint = match produces {
            Produces::Arguments => format!("{}-args", self.tool),
            Produces::Value => format!("{}-{}", self.tool, self.key),
            Produces::Content => "answer-value".into(),
            _ => "value".into(),
        };
        let (schema, root) = (&v.schema, &*v.root);
        match &v.notation {
            ValueNotation::Json => self.json(schema, root, &hint),
            // A JSON string holding escaped JSON: the schema cannot be
            // followed inside the escaping, so any string (documented).
            ValueNotation::JsonInString => primitive(&mut self.rules, "string", false),
            ValueNotation::Python => self.python(schema, root, &format!("{hint}-py")),
            // An enum's words, raw (a fixed value absorbs no whitespace).
            ValueNotation::Raw => match string_kind(schema, root) {
                StringKind::Enum(words) => {
                    alt(&words.iter().map(|w| literal(w)).collect::<Vec<_>>())
                }
                _ => until(&mut self.rules, "raw-text", ""),
            },
            ValueNotation::Template(n) => {
                // Templates print values with `tojson` or `str()`, and nest
                // objects and lists in their own notation (not typed).
                let mut options = vec![self.json(schema, root, &hint)];
                let py = self.python(schema, root, &format!("{hint}-py"));
                if !options.contains(&py) {
                    options.push(py);
                }
                if is_structured(schema, root) {
                    self.warnings.push(format!("{hint}: a nested value in the template's own notation is not checked against its schema"));
                    options.push(notation_value(&mut self.rules, n));
                }
                alt(&options)
            }
            ValueNotation::Element { tags, raw_strings } => {
                let refs = std::mem::take(&mut self.refs.elements);
                let mut c = ElementsCompiler::new(
                    &mut self.rules,
                    &mut self.warnings,
                    tags,
                    *raw_strings,
                    root,
                )
                .with_refs(refs);
                let value = c.compile(schema, &format!("{hint}-el"));
                self.refs.elements = c.into_refs();
                value
            }
        }
    }

    fn json(&mut self, schema: &serde_json::Value, root: &serde_json::Value, hint: &str) -> String {
        let refs = std::mem::take(&mut self.refs.json);
        let mut c = Compiler::new(&mut self.rules, &mut self.warnings, ValueSyntax::Json, root)
            .with_refs(refs);
        let value = c.compile(schema, hint);
        self.refs.json = c.into_refs();
        value
    }

    fn python(
        &mut self,
        schema: &serde_json::Value,
        root: &serde_json::Value,
        hint: &str,
    ) -> String {
        let refs = std::mem::take(&mut self.refs.python);
        let mut c = Compiler::new(
            &mut self.rules,
            &mut self.warnings,
            ValueSyntax::Python,
            root,
        )
        .with_refs(refs);
        let value = match schema.as_object().is_some_and(|o| o.is_empty()) {
            true => c.any(),
            false => c.compile(schema, hint),
        };
        self.refs.python = c.into_refs();
        value
    }

    /// The GBNF name of rule `index` (`call-<tool>`), printed once.
    fn rule(&mut self, index: usize) -> String {
        if let Some(name) = self.printed.get(&index) {
            return name.clone();
        }
        let Some(rule) = self.outline_rules.get(index) else {
            return "\"\"".into();
        };
        let tool = tool_name(&rule.node).unwrap_or_default();
        let outer_tool = std::mem::replace(&mut self.tool, tool.clone());
        let outer_refs = std::mem::take(&mut self.refs);
        let body = self.node(&rule.node, "").render();
        self.tool = outer_tool;
        self.refs = outer_refs;
        let hint = match rule.node.produces {
            Produces::Call => format!("call-{tool}"),
            _ => rule.name.clone(),
        };
        let name = self.rules.add(&hint, body);
        self.printed.insert(index, name.clone());
        name
    }

    /// The first word `node` certainly begins with, where it is a marker
    /// or fixed text.
    fn first_word(&self, node: &Node) -> Option<String> {
        if node.lenient {
            return None;
        }
        match &node.kind {
            Kind::Marker(raw) => first_word(raw),
            Kind::Literal(text) => text_pieces(text).into_iter().find_map(|p| match p {
                TextPiece::Exact(t) => Some(t.to_string()),
                TextPiece::Space => None,
            }),
            Kind::Sequence(_) => flat(node).into_iter().find_map(|n| self.first_word(n)),
            Kind::Rule(i) => self
                .outline_rules
                .get(*i)
                .and_then(|r| self.first_word(&r.node)),
            _ => None,
        }
    }
}

/// The hint of text up to `stop` producing `what`: raw values with the same
/// stop share one rule.
fn until_hint(what: Produces, stop: &str) -> String {
    match what {
        Produces::Reasoning => "reasoning-text".into(),
        Produces::Content => "content-text".into(),
        Produces::Id => "id-text".into(),
        Produces::Value => {
            let word: String = stop.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            match word.is_empty() {
                true => "raw-text".into(),
                false => format!("raw-{word}-text"),
            }
        }
        _ => "arg-key".into(),
    }
}

/// Fixed text, as [`text_pieces`] reads it.
fn push_text(p: &mut Pieces, text: &str) {
    for piece in text_pieces(text) {
        match piece {
            TextPiece::Exact(t) => p.lit(t),
            TextPiece::Space => p.ws(),
        };
    }
}

/// A marker after raw text: its leading whitespace belongs to the text.
fn push_suffix(p: &mut Pieces, raw: &str) {
    for piece in split(raw).into_iter().skip_while(|x| *x == Piece::Ws) {
        match piece {
            Piece::Ws => p.ws(),
            Piece::Lit(t) => p.lit(&t),
            Piece::Expr(e) => p.expr(e),
        };
    }
}

/// Any value in a bare notation (`protocol::Notation`): objects, lists,
/// quoted strings and JSON scalars, keys bare words or quoted. The rules
/// have fixed names: a template has one notation.
fn notation_value(rules: &mut Rules, n: &Notation) -> String {
    if rules.has("nt-value") {
        return "nt-value".into();
    }
    let ws = primitive(rules, "ws", false);
    let (num, boolean, null) = (
        primitive(rules, "number", false),
        primitive(rules, "boolean", false),
        primitive(rules, "null", false),
    );
    let text = until(rules, "nt-text", &n.quote_close);
    let (sep, key_end) = (literal(&n.separator), literal(&n.key_end));
    rules.fixed(
        "nt-value",
        &format!("nt-object | nt-array | nt-string | {num} | {boolean} | {null}"),
    );
    rules.fixed(
        "nt-string",
        &format!(
            "{} {text} {}",
            literal(&n.quote_open),
            literal(&n.quote_close)
        ),
    );
    rules.fixed(
        "nt-member",
        &format!("( nt-string | [a-zA-Z0-9_]+ ) {ws} {key_end} {ws} nt-value"),
    );
    rules.fixed(
        "nt-object",
        &format!("\"{{\" {ws} ( nt-member ( {ws} {sep} {ws} nt-member )* {ws} )? \"}}\""),
    );
    rules.fixed(
        "nt-array",
        &format!("\"[\" {ws} ( nt-value ( {ws} {sep} {ws} nt-value )* {ws} )? \"]\""),
    );
    "nt-value".into()
}
