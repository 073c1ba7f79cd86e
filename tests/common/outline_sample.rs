//! A generator of model outputs from a request's output grammar
//! ([`Outline`]): it walks the tree, takes a random option at every
//! choice, optional, repeat and member list, samples every value from its
//! schema (nested objects, enums, numbers, strings with quotes, newlines
//! and the template's own markers) and writes it in its node's notation,
//! and records the message the text means.
//!
//! Invariants: a strict sample never takes a lenient node; the text of an
//! `Until` node never holds one of its stops' first cores; raw text (an
//! `Until` or free text) never begins or ends with whitespace (readers trim
//! it, so it would not come back); the same seed gives the same sample.

use chat_autoparser::protocol::outline::{Kind, Node, Order, Outline, Produces, ValueNotation};
use chat_autoparser::protocol::{IdShape, Marker};
use serde_json::{json, Map, Number, Value};

/// A sampled output and the message it means.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// The model's output.
    pub text: String,
    /// Its reasoning.
    pub reasoning: String,
    /// Its content.
    pub content: String,
    /// Its calls.
    pub calls: Vec<Call>,
}

/// A sampled call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Value,
    /// The id as written, when the call writes one the parser reports.
    pub id: Option<String>,
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// One sample of `outline` from `seed`; `strict`: no lenient node.
pub fn sample(outline: &Outline, seed: u64, strict: bool) -> Sample {
    let mut s = Sampler {
        outline,
        rng: Rng(seed),
        strict,
        out: Sample::default(),
        markers: markers(outline),
        key: None,
        args: Map::new(),
        counter: 0,
        forbid: Vec::new(),
        quoted: false,
        tagged_member: false,
    };
    s.node(&outline.root);
    if !s.out.reasoning.is_empty() {
        s.out.reasoning.insert_str(0, &outline.prompt_reasoning);
    }
    s.out
}

/// Every marker core of the tree: text values may hold them.
fn markers(outline: &Outline) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<&Node> = vec![&outline.root];
    stack.extend(outline.rules.iter().map(|r| &r.node));
    while let Some(node) = stack.pop() {
        if let Kind::Marker(raw) = &node.kind {
            if let Some(core) = Marker::new(raw).first_core() {
                if !out.iter().any(|m| m == core) {
                    out.push(core.to_string());
                }
            }
        }
        stack.extend(node.children());
    }
    out.sort();
    out
}

struct Sampler<'o> {
    outline: &'o Outline,
    rng: Rng,
    strict: bool,
    out: Sample,
    markers: Vec<String>,
    /// The member whose value is being written.
    key: Option<String>,
    /// The arguments of the call being written.
    args: Map<String, Value>,
    counter: usize,
    /// Marker cores that follow the node being written: its text never
    /// holds them (a reader ends the text at the first).
    forbid: Vec<String>,
    /// A value in a quoting notation is being written: its strings may
    /// hold the template's markers.
    quoted: bool,
    /// The member being written opens with a marker (a tagged argument,
    /// `<parameter=city>`): its value is read as text up to a closer
    /// whatever its notation.
    tagged_member: bool,
}

/// Words raw text is made of: letters, punctuation the formats use, a
/// quote, non-ASCII.
const WORDS: &[&str] = &[
    "Paris",
    "rain",
    "ok",
    "x1",
    "naïve",
    "東京",
    "a-b",
    "it's",
    "say \"hi\"",
    "50%",
    "a+b",
    "yes.",
    "🙂",
];

impl Sampler<'_> {
    fn node(&mut self, node: &Node) {
        let start = self.out.text.len();
        match node.produces {
            Produces::Call => {
                self.out.calls.push(Call::default());
                self.args = Map::new();
            }
            Produces::Arguments => self.args = Map::new(),
            _ => {}
        }
        self.kind(node);
        let written = self.out.text[start..].to_string();
        match node.produces {
            Produces::Arguments if !matches!(node.kind, Kind::Value(_)) => {
                let args = Value::Object(std::mem::take(&mut self.args));
                self.call().arguments = args;
            }
            Produces::Id if !written.is_empty() => {
                let id = self.id_of(node, &written);
                self.call().id = id;
            }
            _ => {}
        }
    }

    fn call(&mut self) -> &mut Call {
        if self.out.calls.is_empty() {
            self.out.calls.push(Call::default());
        }
        self.out.calls.last_mut().unwrap()
    }

    fn kind(&mut self, node: &Node) {
        match &node.kind {
            Kind::Marker(raw) | Kind::Literal(raw) => self.out.text.push_str(raw),
            Kind::Attributes { written, .. } => self.out.text.push_str(written),
            Kind::FreeText { exclude } => {
                let text = self.text(&[], exclude);
                self.produce_text(node.produces, text);
            }
            Kind::Until { stops } => {
                let stops: Vec<String> = stops
                    .iter()
                    .filter_map(|s| Marker::new(s).first_core().map(str::to_string))
                    .collect();
                let text = self.text(&stops, &[]);
                self.produce_text(node.produces, text);
            }
            Kind::Value(v) => {
                // Markers inside strings only where quotes keep them text.
                // A tagged argument's value (a member value outside Python's
                // `k=v`, even a Python-repr one inside a tagged member) is
                // read as text up to its closer, or up to a closer around it
                // where its own never came (docs/parser.md), so a quote there
                // does not keep the call's closer text.
                let tagged = node.produces == Produces::Value
                    && (self.tagged_member || !matches!(v.notation, ValueNotation::Python));
                self.quoted = !tagged && !matches!(v.notation, ValueNotation::Element { .. });
                // A string in the template's notation runs to its quote.
                let quote = match &v.notation {
                    ValueNotation::Template(n) => {
                        Marker::new(&n.quote_close).first_core().map(str::to_string)
                    }
                    _ => None,
                };
                let pushed = quote.map(|q| self.forbid.push(q)).is_some();
                let value = self.value(&v.schema, &v.root, 0);
                if pushed {
                    self.forbid.pop();
                }
                self.quoted = false;
                let written = write(&value, &v.notation);
                self.out.text.push_str(&written);
                self.produce_value(node.produces, value);
            }
            Kind::ToolName { name, quoted } => {
                match quoted {
                    true => self.out.text.push_str(&json!(name).to_string()),
                    false => self.out.text.push_str(name),
                }
                if node.produces == Produces::Name {
                    self.call().name = name.clone();
                }
            }
            Kind::Id(shape) => self.id(shape),
            Kind::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    let next = items[i + 1..].iter().find_map(|n| match &n.kind {
                        Kind::Marker(raw) => Marker::new(raw).first_core().map(str::to_string),
                        _ => None,
                    });
                    let pushed = next.map(|core| self.forbid.push(core)).is_some();
                    self.node(item);
                    if pushed {
                        self.forbid.pop();
                    }
                }
            }
            Kind::Choice(options) => {
                let allowed: Vec<&Node> = options
                    .iter()
                    .filter(|o| !(self.strict && o.lenient))
                    .collect();
                let pick = allowed[self.rng.below(allowed.len())];
                self.node(pick);
            }
            Kind::Optional(inner) if !(self.strict && inner.lenient) && self.rng.coin() => {
                self.node(inner)
            }
            Kind::Optional(_) => {}
            Kind::Repeat {
                node: inner,
                min,
                max,
                separator,
            } => {
                let max = max.unwrap_or(3).max(*min) as usize;
                let count = *min as usize + self.rng.below(max - *min as usize + 1);
                for i in 0..count {
                    if i > 0 {
                        self.node(separator);
                    }
                    self.node(inner);
                }
            }
            Kind::Members {
                list,
                separator,
                order,
                extra,
                ..
            } => {
                let mut first = true;
                let mut chosen: Vec<_> = list
                    .iter()
                    .filter(|m| m.required || self.rng.coin())
                    .collect();
                if *order == Order::ListedOrSorted && self.rng.coin() {
                    chosen.sort_by(|a, b| a.key.cmp(&b.key));
                }
                for member in chosen {
                    if !first {
                        self.node(separator);
                    }
                    first = false;
                    self.key = Some(member.key.clone());
                    self.tagged_member = opens_with_marker(&member.node);
                    self.node(&member.node);
                }
                if let (Some(extra), true) = (extra, list.is_empty()) {
                    for i in 0..self.rng.below(3) {
                        if !first {
                            self.node(separator);
                        }
                        first = false;
                        self.key = Some(format!("k{i}"));
                        self.node(extra);
                    }
                }
                self.key = None;
                self.tagged_member = false;
            }
            Kind::Rule(i) => {
                let rule = self.outline.rule(*i);
                self.node(rule);
            }
            _ => {}
        }
    }

    fn produce_text(&mut self, what: Produces, text: String) {
        self.out.text.push_str(&text);
        match what {
            Produces::Reasoning => self.out.reasoning.push_str(&text),
            Produces::Content => self.out.content.push_str(&text),
            Produces::Value => self.produce_value(what, Value::String(text)),
            _ => {}
        }
    }

    fn produce_value(&mut self, what: Produces, value: Value) {
        match what {
            Produces::Value => {
                if let Some(key) = self.key.clone() {
                    self.args.insert(key, value);
                }
            }
            Produces::Arguments => self.call().arguments = value,
            Produces::Content => self.out.content.push_str(&value.to_string()),
            _ => {}
        }
    }

    fn id(&mut self, shape: &IdShape) {
        let id = format!("call{:05}", self.rng.below(100_000));
        let text = match shape {
            IdShape::JsonString => json!(id).to_string(),
            IdShape::Counter => {
                self.counter += 1;
                (self.counter - 1).to_string()
            }
            IdShape::Tagged { prefix, suffix } => format!("{prefix}{id}{suffix}"),
            _ => String::new(),
        };
        self.out.text.push_str(&text);
    }

    /// The id a reader reports for `written`: a JSON string's text, a
    /// tagged id's text; a counter's id is built by the reader (not checked).
    fn id_of(&self, node: &Node, written: &str) -> Option<String> {
        match &node.kind {
            Kind::Id(IdShape::JsonString) => serde_json::from_str(written).ok(),
            Kind::Id(IdShape::Tagged { prefix, suffix }) => Some(
                written
                    .strip_prefix(prefix.as_str())?
                    .strip_suffix(suffix.as_str())?
                    .to_string(),
            ),
            _ => None,
        }
    }

    /// Raw text of one to five words (sometimes a line break between), with
    /// none of `stops` (nor of the markers that follow) in it and not
    /// beginning with any of `exclude`; a string of a quoting notation may
    /// hold a marker of the template.
    fn text(&mut self, stops: &[String], exclude: &[String]) -> String {
        for _ in 0..16 {
            let words = 1 + self.rng.below(5);
            let mut text = String::new();
            for i in 0..words {
                if i > 0 {
                    text.push_str(if self.rng.below(4) == 0 { "\n" } else { " " });
                }
                let marker = self.quoted && self.rng.below(6) == 0;
                match marker && !self.markers.is_empty() {
                    true => {
                        let m = self.rng.below(self.markers.len());
                        text.push_str(&self.markers[m].clone());
                    }
                    false => text.push_str(WORDS[self.rng.below(WORDS.len())]),
                }
            }
            let text = text.trim().to_string();
            let stopped = stops
                .iter()
                .chain(&self.forbid)
                .any(|s| text.contains(s.as_str()));
            let excluded = exclude.iter().any(|e| text.starts_with(e.as_str()));
            if !text.is_empty() && !stopped && !excluded {
                return text;
            }
        }
        "ok".into()
    }

    /// A value valid under `schema`.
    fn value(&mut self, schema: &Value, root: &Value, depth: usize) -> Value {
        let schema = resolve(root, schema);
        if let Some(Value::Array(options)) = schema.get("enum") {
            return options[self.rng.below(options.len())].clone();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = schema.get(key) {
                let option = &options[self.rng.below(options.len())];
                return self.value(option, root, depth + 1);
            }
        }
        let kind = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => types[self.rng.below(types.len())].as_str().unwrap_or(""),
            _ if schema.get("properties").is_some() => "object",
            _ => "string",
        };
        match kind {
            "object" if depth < 4 => {
                let mut out = Map::new();
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(Value::Object(props)) = schema.get("properties") {
                    for (key, prop) in props {
                        if required.contains(&key.as_str()) || self.rng.coin() {
                            let v = self.value(prop, root, depth + 1);
                            out.insert(key.clone(), v);
                        }
                    }
                }
                Value::Object(out)
            }
            "array" if depth < 4 => {
                let items = schema.get("items").cloned().unwrap_or(json!({}));
                let n = self.rng.below(3);
                Value::Array(
                    (0..n)
                        .map(|_| self.value(&items, root, depth + 1))
                        .collect(),
                )
            }
            "integer" => json!(self.rng.below(2001) as i64 - 1000),
            "number" => {
                let n = (self.rng.below(2000) as f64 - 1000.0) + 0.5;
                Value::Number(Number::from_f64(n).unwrap())
            }
            "boolean" => json!(self.rng.coin()),
            "null" => Value::Null,
            _ => Value::String(self.text(&[], &[])),
        }
    }
}

/// `schema` with its `$ref` (`#/...`, in `root`) followed once.
fn resolve<'v>(root: &'v Value, schema: &'v Value) -> &'v Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => root.pointer(r.trim_start_matches('#')).unwrap_or(schema),
        None => schema,
    }
}

/// `value` written in `notation`.
pub fn write(value: &Value, notation: &ValueNotation) -> String {
    match notation {
        ValueNotation::Json => value.to_string(),
        ValueNotation::JsonInString => json!(value.to_string()).to_string(),
        ValueNotation::Python => python(value),
        ValueNotation::Raw => match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
        ValueNotation::Template(n) => match value {
            Value::String(s) => format!("{}{s}{}", n.quote_open, n.quote_close),
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|v| write(v, notation)).collect();
                format!("[{}]", items.join(&n.separator))
            }
            Value::Object(map) => {
                let members: Vec<String> = map
                    .iter()
                    .map(|(k, v)| format!("{k}{}{}", n.key_end, write(v, notation)))
                    .collect();
                format!("{{{}}}", members.join(&n.separator))
            }
            other => other.to_string(),
        },
        ValueNotation::Element { tags: e, .. } => match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    format!(
                        "{}{}{}{}{}{}{}",
                        e.open_prefix,
                        e.item,
                        e.open_suffix,
                        write(v, notation),
                        e.close_prefix,
                        e.item,
                        e.close_suffix
                    )
                })
                .collect(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}{k}{}{}{}{k}{}",
                        e.open_prefix,
                        e.open_suffix,
                        write(v, notation),
                        e.close_prefix,
                        e.close_suffix
                    )
                })
                .collect(),
            other => other.to_string(),
        },
        _ => value.to_string(),
    }
}

/// A Python literal, as `repr()` writes it.
fn python(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let quote = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", python(&json!(k)), python(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
    }
}

/// Whether `node`'s first piece of text is a template marker.
fn opens_with_marker(node: &Node) -> bool {
    match &node.kind {
        Kind::Marker(_) => true,
        Kind::Sequence(items) => items.first().is_some_and(opens_with_marker),
        Kind::Choice(options) => options.iter().any(opens_with_marker),
        _ => false,
    }
}
