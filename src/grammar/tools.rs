//! Tool-call rules: one rule per tool, read from the protocol's
//! [`CallLayout`] of the call, and the tool section around them.
//!
//! The layout says what a call is made of (markers, fixed text, the id,
//! the arguments, optional groups such as a JSON id member); this module
//! says how each piece reads in GBNF: markers with flexible whitespace,
//! fixed text as [`text_pieces`], the arguments by kind (a JSON object
//! under the tool's schema, marker-wrapped pairs, or Python keywords). The
//! section is `section_start`, one call or several joined by
//! `call_separator`, and `section_end`. Each tool gets its own call rule,
//! so the name fixes which arguments may follow.
//!
//! Invariants: the call's shape comes only from the layout (nothing here
//! reads the name, id or arguments slots of the `ToolFormat`); nothing is
//! keyed on a model; every reference handed back exists in the rule set; a
//! tool without a usable schema gets the looser "any arguments" rule and a
//! warning, never an error.

use std::collections::HashMap;

use serde_json::Value;

use super::elements::ElementsCompiler;
use super::gbnf::{alt, literal, until, until_in_line, Rules};
use super::markers::{split, Piece, Pieces};
use super::schema::{members, primitive, Compiler, Member, ValueSyntax};
use super::walk::ValueRules;
use crate::analysis::{Header, TaggedArguments, ToolFormat};
use crate::json_schema::{
    object_schema, properties, required_names, resolved, string_kind, StringKind,
};
use crate::protocol::{
    text_pieces, Arguments, CallLayout, HeaderAttributes, IdShape, Notation, Segment, TextPiece,
    Tool,
};

/// Builds the rules of one tool section.
pub struct Builder<'a> {
    pub rules: &'a mut Rules,
    pub warnings: &'a mut Vec<String>,
    pub format: &'a ToolFormat,
    /// The turn's section headers (a name suffix may end one).
    pub headers: &'a [Header],
    /// The current tool's `$ref` and `allOf` rules per notation, so that
    /// its arguments' values compile the definitions they share once.
    pub refs: ToolRefs,
}

/// `$ref` and `allOf` → rule, for one tool's schema, per value notation
/// (see `walk::ValueRules::refs`).
#[derive(Default)]
pub struct ToolRefs {
    json: HashMap<String, String>,
    python: HashMap<String, String>,
    elements: [HashMap<String, String>; 2],
}

impl Builder<'_> {
    /// The section: its markers around one call, or several when `parallel`.
    pub fn section(&mut self, tools: &[Tool], parallel: bool) -> Pieces {
        let calls: Vec<String> = tools.iter().map(|t| self.call(t)).collect();
        let call = self.rules.add("tool-call", alt(&calls));
        let mut p = Pieces::new();
        p.marker(&self.format.section_start).expr(call.clone());
        if parallel {
            let mut more = Pieces::new();
            more.ws()
                .marker(&self.format.call_separator)
                .ws()
                .expr(call);
            p.expr(format!("( {} )*", more.render()));
        }
        if self.format.section_end_optional {
            let mut end = Pieces::new();
            end.marker(&self.format.section_end);
            p.optional(&end);
        } else {
            p.marker(&self.format.section_end);
        }
        p
    }

    /// One tool's call, from its layout.
    fn call(&mut self, tool: &Tool) -> String {
        self.refs = ToolRefs::default();
        let layout = CallLayout::new(self.format, &tool.name);
        let mut p = Pieces::new();
        self.segments(&mut p, tool, &layout.segments, layout.name_end);
        self.rules.add(&format!("call-{}", tool.name), p.render())
    }

    /// Segments of a call: markers with flexible whitespace, fixed text as
    /// [`text_pieces`], the id, the arguments by kind, optional groups as
    /// `( ... )?`; `name_end` indexes the marker that ends a tagged name.
    fn segments(
        &mut self,
        p: &mut Pieces,
        tool: &Tool,
        segments: &[Segment],
        name_end: Option<usize>,
    ) {
        for (i, segment) in segments.iter().enumerate() {
            match segment {
                Segment::Marker(raw) if name_end == Some(i) => self.name_suffix(p, raw),
                Segment::Marker(raw) => {
                    p.marker(raw);
                }
                Segment::Text(text) => text_to(p, text),
                Segment::Id(shape) => self.id(p, shape),
                Segment::Arguments(args) => {
                    // What ends the arguments when nothing of their own does.
                    let next = segments[i + 1..].iter().find_map(|s| match s {
                        Segment::Marker(raw) => first_lit(raw),
                        _ => None,
                    });
                    self.arguments(p, tool, args, next.unwrap_or_default());
                }
                Segment::Optional(inner) => {
                    let mut group = Pieces::new();
                    self.segments(&mut group, tool, inner, None);
                    p.optional(&group);
                }
            }
        }
    }

    /// The marker after a tagged name; one that ends a section header
    /// keeps its first word and takes any text on the line up to the
    /// header's close (see [`HeaderAttributes`]).
    fn name_suffix(&mut self, p: &mut Pieces, suffix: &str) {
        match HeaderAttributes::of(suffix, self.headers) {
            Some(h) => {
                let rest = until_in_line(self.rules, "header-rest", h.close);
                p.marker(h.word).expr(rest).lit(h.close).ws();
            }
            None => {
                p.marker(suffix);
            }
        }
    }

    /// A call id: a JSON string, a counter, or optional text between markers.
    fn id(&mut self, p: &mut Pieces, shape: &IdShape) {
        match shape {
            IdShape::JsonString => {
                p.expr(primitive(self.rules, "string", false));
            }
            IdShape::Counter => {
                p.expr("[0-9]+");
            }
            IdShape::Tagged { prefix, suffix } => {
                let stop = first_lit(suffix).unwrap_or_default();
                let text = until(self.rules, "id-text", &stop);
                let mut id = Pieces::new();
                id.marker(prefix).expr(text).marker(suffix);
                p.optional(&id);
            }
        }
    }

    /// The arguments; `next` is the first word of the marker after them.
    fn arguments(&mut self, p: &mut Pieces, tool: &Tool, args: &Arguments, next: String) {
        match args {
            Arguments::Json { as_string } => {
                p.expr(self.json_arguments(tool, *as_string));
            }
            Arguments::Tagged(tagged) => {
                let args = self.tagged_arguments(tool, tagged, next);
                p.extend(&args);
            }
            Arguments::Python => {
                p.expr(self.python_arguments(tool));
            }
        }
    }

    /// The arguments object (or, when written as JSON text, any JSON string).
    fn json_arguments(&mut self, tool: &Tool, as_string: bool) -> String {
        if as_string {
            // A JSON string holding escaped JSON: the schema cannot be followed
            // inside the escaping, so any string is accepted (documented).
            return primitive(self.rules, "string", false);
        }
        let mut c = Compiler::new(
            self.rules,
            self.warnings,
            ValueSyntax::Json,
            &tool.parameters,
        );
        c.compile(
            &object_schema(&tool.parameters),
            &format!("{}-args", tool.name),
        )
    }

    /// Python keyword arguments, `k=v` joined by `, `.
    fn python_arguments(&mut self, tool: &Tool) -> String {
        let ws = primitive(self.rules, "ws", false);
        let schema = object_schema(&tool.parameters);
        let props = properties(&schema);
        let required = schema.as_object().map(required_names).unwrap_or_default();
        let mut c = Compiler::new(
            self.rules,
            self.warnings,
            ValueSyntax::Python,
            &tool.parameters,
        );
        let list: Vec<Member> = props
            .iter()
            .map(|(k, s)| {
                let v = c.compile(s, &format!("{}-{}", tool.name, k));
                Member {
                    expr: format!("{} {ws} \"=\" {ws} {v}", literal(k)),
                    required: required.contains(k),
                }
            })
            .collect();
        let body = if props.is_empty() && !closed(&schema) {
            let v = c.any();
            format!("( [a-zA-Z_] [a-zA-Z0-9_]* {ws} \"=\" {ws} {v} ( {ws} \",\" {ws} [a-zA-Z_] [a-zA-Z0-9_]* {ws} \"=\" {ws} {v} )* )?")
        } else {
            let hint = format!("{}-args", tool.name);
            members(self.rules, &list, &format!("{ws} \",\" {ws}"), &hint)
        };
        self.rules.add(&format!("{}-args", tool.name), body)
    }

    /// Marker-wrapped arguments: string values raw up to the closing marker,
    /// other values as JSON, or as nested elements when the format writes them.
    /// `next`: the first word after the arguments.
    fn tagged_arguments(&mut self, tool: &Tool, g: &TaggedArguments, next: String) -> Pieces {
        // Where a raw value ends when its own closing marker is blank.
        let stop = first_lit(&g.separator)
            .or_else(|| first_lit(&g.end))
            .unwrap_or(next);
        let schema = object_schema(&tool.parameters);
        let props = properties(&schema);
        let required = schema.as_object().map(required_names).unwrap_or_default();
        let mut list = Vec::new();
        for (key, prop) in &props {
            let mut m = Pieces::new();
            m.marker(&g.name_prefix).lit(key).marker(&g.name_suffix);
            let value = self.tagged_value(tool, key, prop, g, &stop);
            m.expr(value);
            list.push(Member {
                expr: self
                    .rules
                    .add(&format!("{}-{}-arg", tool.name, key), m.render()),
                required: required.contains(key),
            });
        }
        let mut sep = Pieces::new();
        sep.ws().marker(&g.separator).ws();
        let mut p = Pieces::new();
        if props.is_empty() && !closed(&schema) {
            // No declared properties: any key, any raw value.
            let any = self.any_tagged_argument(g, &stop);
            p.expr(format!("( {any} ( {} {any} )* )?", sep.render()));
        } else {
            let hint = format!("{}-args", tool.name);
            let members = either_order(self.rules, &list, props.keys(), &sep.render(), &hint);
            p.expr(members);
        }
        p.marker(&g.end);
        p
    }

    /// One argument with an unknown key (tools without declared properties).
    fn any_tagged_argument(&mut self, g: &TaggedArguments, stop: &str) -> String {
        let key_stop = first_lit(&g.name_suffix).unwrap_or_default();
        let key = until(self.rules, "arg-key", &key_stop);
        let value = self.raw_value(g, "arg-value", stop);
        let mut m = Pieces::new();
        m.marker(&g.name_prefix)
            .expr(key)
            .marker(&g.name_suffix)
            .expr(value);
        self.rules.add("any-arg", m.render())
    }

    /// The value part of a tagged argument, prefix and suffix included.
    fn tagged_value(
        &mut self,
        tool: &Tool,
        key: &str,
        prop: &Value,
        g: &TaggedArguments,
        stop: &str,
    ) -> String {
        let hint = format!("{}-{}", tool.name, key);
        // The closing marker may name the argument (`</city>`): with the key
        // known, it is fixed text.
        let close = g.close_for(key);
        let kind = string_kind(prop, &tool.parameters);
        let mut options = Vec::new();
        if g.raw_strings && kind != StringKind::Never {
            let mut p = Pieces::new();
            p.marker(&g.value_prefix);
            if let StringKind::Enum(values) = &kind {
                // A fixed value absorbs no whitespace: the suffix keeps its own.
                p.expr(alt(&values.iter().map(|v| literal(v)).collect::<Vec<_>>()))
                    .marker(&close);
            } else {
                let raw = self.raw_value_text(g, &close, &hint, stop);
                p.expr(raw);
                push_suffix(&mut p, &close);
            }
            options.push(p.render());
        }
        if !(g.raw_strings && kind.always()) {
            let json = self.typed_value(tool, prop, g, &hint);
            let mut p = Pieces::new();
            match g.typed_word() {
                // The type word the probes did not render (`object`) fits too.
                Some((before, after)) => p
                    .marker(before)
                    .expr("[a-zA-Z0-9_]+".to_string())
                    .marker(after),
                None => p.marker(g.typed_value_prefix.as_deref().unwrap_or(&g.value_prefix)),
            };
            p.expr(json);
            // A bare typed value (no marker before it, `days:3`) has none
            // after it either: the parser reads its close as optional.
            if g.typed_value_prefix
                .as_deref()
                .is_some_and(|t| t.trim().is_empty())
            {
                let mut closed = Pieces::new();
                closed.marker(&close);
                p.optional(&closed);
            } else {
                p.marker(&close);
            }
            options.push(p.render());
        }
        alt(&options)
    }

    /// A non-string value: in the format's nested elements when it has
    /// them, else JSON or Python literals (templates print values with
    /// `tojson` or with Python's `str()`, `{'a': True}`).
    fn typed_value(
        &mut self,
        tool: &Tool,
        prop: &Value,
        g: &TaggedArguments,
        hint: &str,
    ) -> String {
        let root = &tool.parameters;
        let refs = &mut self.refs;
        if let Some(e) = &g.elements {
            let mut c = ElementsCompiler::new(self.rules, self.warnings, e, g.raw_strings, root)
                .with_refs(std::mem::take(&mut refs.elements));
            let value = c.compile(prop, &format!("{hint}-el"));
            refs.elements = c.into_refs();
            return value;
        }
        let mut c = Compiler::new(self.rules, self.warnings, ValueSyntax::Json, root)
            .with_refs(std::mem::take(&mut refs.json));
        let json = c.compile(prop, hint);
        refs.json = c.into_refs();
        let mut c = Compiler::new(self.rules, self.warnings, ValueSyntax::Python, root)
            .with_refs(std::mem::take(&mut refs.python));
        let py = c.compile(prop, &format!("{hint}-py"));
        refs.python = c.into_refs();
        let mut options = vec![json];
        if !options.contains(&py) {
            options.push(py);
        }
        // Bare nested values in the arguments' own notation (`{key:<|"|>v<|"|>}`),
        // which the parser reads (`protocol::Notation`); not typed by the schema.
        if let Some(n) = Notation::of(g).filter(|_| is_structured(prop, &tool.parameters)) {
            self.warnings.push(format!("{hint}: a nested value in the template's own notation is not checked against its schema"));
            options.push(notation_value(self.rules, &n));
        }
        alt(&options)
    }

    /// A raw value with its suffix, for arguments of unknown key and type;
    /// a closing marker that names the argument takes any name.
    fn raw_value(&mut self, g: &TaggedArguments, hint: &str, stop: &str) -> String {
        let mut text = self.raw_value_text(g, &g.value_suffix, hint, stop);
        if let Some(e) = &g.elements {
            // Of unknown type, it may be an object or a list, written as elements.
            let any =
                ElementsCompiler::new(self.rules, self.warnings, e, g.raw_strings, &Value::Null)
                    .any();
            text = alt(&[text, any]);
        }
        let mut p = Pieces::new();
        p.marker(&g.value_prefix).expr(text);
        push_suffix(&mut p, &g.value_suffix);
        if let Some(after) = &g.named_close {
            let name = until(self.rules, "arg-key", &first_lit(after).unwrap_or_default());
            p.expr(name).marker(after);
        }
        p.render()
    }

    /// Raw text up to the value's closing marker `close`, or to `stop` when
    /// it is blank (or a CDATA-style wrapper).
    fn raw_value_text(
        &mut self,
        g: &TaggedArguments,
        close: &str,
        hint: &str,
        stop: &str,
    ) -> String {
        let stop = first_lit(close).unwrap_or_else(|| stop.to_string());
        let raw = until(
            self.rules,
            &format!("{}-text", rule_stem(&stop, hint)),
            &stop,
        );
        match &g.escaped_value {
            Some((open, close)) => {
                let inner = until(self.rules, "escaped-text", close);
                alt(&[raw, format!("{} {inner} {}", literal(open), literal(close))])
            }
            None => raw,
        }
    }
}

/// A call's fixed text (see [`text_pieces`]).
fn text_to(p: &mut Pieces, text: &str) {
    for piece in text_pieces(text) {
        match piece {
            TextPiece::Exact(t) => p.lit(t),
            TextPiece::Space => p.ws(),
        };
    }
}

/// A hint for "text up to `stop`": shared by every value with the same stop.
fn rule_stem(stop: &str, _hint: &str) -> String {
    let word: String = stop.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    if word.is_empty() {
        "raw".into()
    } else {
        format!("raw-{word}")
    }
}

/// The argument members in the schema's order, or sorted by name: templates
/// write tagged arguments in one or the other (a `dictsort`), and the parser
/// reads any order. `keys` name the members of `list`, in the same order.
fn either_order<'k>(
    rules: &mut Rules,
    list: &[Member],
    keys: impl Iterator<Item = &'k String>,
    sep: &str,
    hint: &str,
) -> String {
    let keys: Vec<&String> = keys.collect();
    let ordered = members(rules, list, sep, hint);
    let mut by_name: Vec<usize> = (0..list.len()).collect();
    by_name.sort_by(|&a, &b| keys.get(a).cmp(&keys.get(b)));
    if by_name.windows(2).all(|w| w[0] < w[1]) {
        return ordered;
    }
    let sorted: Vec<Member> = by_name
        .iter()
        .map(|&i| Member {
            expr: list[i].expr.clone(),
            required: list[i].required,
        })
        .collect();
    alt(&[
        ordered,
        members(rules, &sorted, sep, &format!("{hint}-sorted")),
    ])
}

/// Whether `prop` may be an object or a list (or its type is not said).
pub(super) fn is_structured(prop: &Value, root: &Value) -> bool {
    let prop = resolved(root, prop).unwrap_or(prop);
    match prop.get("type") {
        None => prop.get("enum").is_none() && prop.get("const").is_none(),
        Some(Value::String(t)) => t == "object" || t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object" || t == "array"),
        Some(_) => false,
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

/// A raw value's suffix: its leading whitespace belongs to the raw text.
fn push_suffix(p: &mut Pieces, suffix: &str) {
    let mut pieces = split(suffix)
        .into_iter()
        .skip_while(|x| *x == Piece::Ws)
        .peekable();
    if pieces.peek().is_none() {
        return;
    }
    for piece in pieces {
        match piece {
            Piece::Ws => p.ws(),
            Piece::Lit(t) => p.lit(&t),
            Piece::Expr(e) => p.expr(e),
        };
    }
}

/// The first literal piece of a marker.
pub(super) fn first_lit(raw: &str) -> Option<String> {
    super::markers::first_word(raw)
}

/// An object schema that admits no other keys than its properties.
pub(super) fn closed(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
        || schema.get("properties").is_some()
}
