//! The Lark rule table: rules, terminals and lazy lexemes named from hints,
//! written once per body, and the sequences the printer builds them from.
//!
//! llguidance lexes greedily without backtracking, so what a sequence is
//! made of matters beyond the language it denotes: a marker core is one
//! lexeme (a listed special token in token syntax), fixed text of a call is
//! one lexeme, flexible whitespace is the `WS` terminal, and two adjacent
//! whitespace items collapse into one (two `WS?` in a row would be an
//! ambiguity the lexer cannot resolve).
//!
//! Invariants: names are unique and derived from hints only (the output is
//! deterministic byte for byte, rules in the order they were made, `start`
//! first); an equal body of the same kind reuses its name; `WS` is defined
//! exactly when some rule uses it.

use std::collections::HashMap;

use super::LarkOptions;

/// One item of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Item {
    /// A marker core or fixed text: one lexeme (a special token when listed).
    Lit(String),
    /// Flexible whitespace.
    Ws,
    /// A Lark expression.
    Expr(String),
}

/// A sequence under construction; adjacent `Ws` collapse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Seq(pub Vec<Item>);

impl Seq {
    pub fn ws(&mut self) -> &mut Self {
        if self.0.last() != Some(&Item::Ws) {
            self.0.push(Item::Ws);
        }
        self
    }

    pub fn lit(&mut self, text: &str) -> &mut Self {
        if !text.is_empty() {
            self.0.push(Item::Lit(text.to_owned()));
        }
        self
    }

    pub fn expr(&mut self, e: String) -> &mut Self {
        if !e.is_empty() {
            self.0.push(Item::Expr(e));
        }
        self
    }

    pub fn extend(&mut self, other: Seq) -> &mut Self {
        for item in other.0 {
            match item {
                Item::Ws => self.ws(),
                Item::Lit(t) => self.lit(&t),
                Item::Expr(e) => self.expr(e),
            };
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the sequence is one item (no group needed around it).
    pub fn is_atom(&self) -> bool {
        self.0.len() == 1 && !matches!(&self.0[0], Item::Expr(e) if e.contains(' '))
    }

    pub fn render(&self, w: &Writer) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|i| match i {
                Item::Ws => "WS?".to_string(),
                Item::Lit(t) => w.literal(t),
                Item::Expr(e) => e.clone(),
            })
            .collect();
        parts.join(" ")
    }
}

/// A Lark string literal (JSON string syntax).
pub(super) fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// A Lark regex literal matching `text` exactly.
pub(super) fn regex_literal(text: &str) -> String {
    regex::escape(text).replace('/', "\\/")
}

/// Rules under construction, named from hints, in order.
pub(super) struct Writer<'o> {
    options: &'o LarkOptions,
    pub warnings: Vec<String>,
    /// (name, body), `start` first once defined.
    rules: Vec<(String, String)>,
    /// body → name per kind (lazy, terminal, rule), so equal rules are
    /// written once.
    by_body: [HashMap<String, String>; 3],
    names: HashMap<String, usize>,
    /// Name → index in `rules` of a reserved rule.
    reserved: HashMap<String, usize>,
}

impl<'o> Writer<'o> {
    pub fn new(options: &'o LarkOptions, warnings: Vec<String>) -> Self {
        let mut w = Writer {
            options,
            warnings,
            rules: Vec::new(),
            by_body: Default::default(),
            names: HashMap::new(),
            reserved: HashMap::new(),
        };
        for token in &options.special_tokens {
            if !token_syntax(token) {
                w.warn(format!(
                    "{token:?} has no Lark token syntax (<...>); written as text"
                ));
            }
        }
        w
    }

    pub fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// A rule named after `hint` with `body`; an equal body reuses its rule.
    pub fn rule(&mut self, hint: &str, body: &str) -> String {
        self.define(&ident(hint, false), body)
    }

    /// A terminal (one lexeme) named `name`.
    pub fn terminal(&mut self, name: &str, body: &str) -> String {
        self.define(&ident(name, true), body)
    }

    /// A lazy lexeme: the shortest text matching `regex`.
    pub fn lazy(&mut self, hint: &str, regex: &str) -> String {
        self.define(&format!("{}[lazy]", ident(hint, false)), regex)
    }

    /// A name for a rule whose body comes later ([`Writer::fill`]), so
    /// that rules may refer to each other.
    pub fn reserve(&mut self, hint: &str) -> String {
        let name = self.unique(&ident(hint, false));
        self.reserved.insert(name.clone(), self.rules.len());
        self.rules.push((name.clone(), String::new()));
        name
    }

    /// The body of a rule [`Writer::reserve`]d.
    pub fn fill(&mut self, name: &str, body: String) {
        if let Some(&at) = self.reserved.get(name) {
            // `start` goes first only once every rule is made.
            self.rules[at].1 = body;
        }
    }

    fn define(&mut self, name: &str, body: &str) -> String {
        let stem = name.trim_end_matches("[lazy]");
        let kind = match () {
            _ if stem.len() < name.len() => 0,
            _ if stem.starts_with(|c: char| c.is_ascii_uppercase()) => 1,
            _ => 2,
        };
        if let Some(existing) = self.by_body[kind].get(body) {
            return existing.clone();
        }
        let unique = self.unique(stem);
        let written = match kind {
            0 => format!("{unique}[lazy]"),
            _ => unique.clone(),
        };
        self.rules.push((written, body.to_string()));
        self.by_body[kind].insert(body.to_string(), unique.clone());
        unique
    }

    fn unique(&mut self, stem: &str) -> String {
        let n = self.names.entry(stem.to_string()).or_insert(0);
        *n += 1;
        match *n {
            1 => stem.to_string(),
            k => format!("{stem}_{k}"),
        }
    }

    /// `start`, written first.
    pub fn define_first(&mut self, name: &str, body: &str) {
        self.rules.insert(0, (name.to_string(), body.to_string()));
    }

    /// A literal: a listed special token in token syntax, else a string.
    pub fn literal(&self, text: &str) -> String {
        match self.special(text) {
            true => text.to_string(),
            false => quote(text),
        }
    }

    /// Whether `text` is a listed special token llguidance can name.
    pub fn special(&self, text: &str) -> bool {
        self.options.special_tokens.iter().any(|t| t == text) && token_syntax(text)
    }

    /// The grammar text, `WS` defined when used.
    pub fn render(&mut self) -> String {
        if self.rules.iter().any(|(_, body)| body.contains("WS?")) {
            self.terminal("WS", "/[ \\t\\r\\n]+/");
        }
        let mut out = String::new();
        for (name, body) in &self.rules {
            out.push_str(&format!("{name}: {body}\n"));
        }
        out
    }
}

/// llguidance's token syntax: `<...>` with no whitespace.
fn token_syntax(token: &str) -> bool {
    token.starts_with('<') && token.ends_with('>') && !token.contains(char::is_whitespace)
}

/// A Lark name from a hint: lowercase for rules, uppercase for terminals,
/// other characters as `_`.
pub(super) fn ident(hint: &str, terminal: bool) -> String {
    let mut out: String = hint
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect();
    out = match terminal {
        true => out.to_ascii_uppercase(),
        false => out.to_ascii_lowercase(),
    };
    let out = out
        .trim_start_matches(|c: char| c == '_' || c.is_ascii_digit())
        .to_string();
    match (out.is_empty(), terminal) {
        (true, true) => "T".into(),
        (true, false) => "r".into(),
        _ => out,
    }
}
