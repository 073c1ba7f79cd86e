//! Writing GBNF text: escaping, rule naming, and the rule set.
//!
//! Everything here targets llama.cpp's GBNF dialect: rule names are
//! `[a-zA-Z0-9-]+`, literals are `"..."` with `\n \r \t \\ \" \xHH` escapes,
//! character classes are `[...]` with `\\ \] \[` escaped and `-` `^` in hex, repetition is
//! `* + ? {m} {m,} {m,n}`, one rule per line.
//!
//! Invariants: the same calls in the same order give the same text byte for
//! byte (rules are kept in insertion order, names come from hints plus a
//! counter, never from a hash); every name handed out is unique and valid;
//! two rules with the same body share one name.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Names of the shared rules ([`Rules::fixed`]); hints never receive them.
/// Repetition counts above this (`maxLength`, `maxItems`, a pattern's
/// `{m,n}`) are written unbounded: llama.cpp copies a bounded repetition
/// out, rule by rule.
pub const MAX_BOUND: u64 = 64;

pub const RESERVED: &[&str] = &[
    "root",
    "space",
    "ws",
    "value",
    "object",
    "array",
    "string",
    "char",
    "number",
    "integer",
    "integral-part",
    "decimal-part",
    "boolean",
    "null",
    "member",
    "py-value",
    "py-object",
    "py-array",
    "py-string",
    "py-member",
    "py-boolean",
    "py-null",
    "any-text",
    "reasoning",
    "calls",
    "call",
    "answer",
    "tool-name",
    "elements-any",
];

/// An ordered set of named rules.
#[derive(Debug, Default)]
pub struct Rules {
    /// `(name, body)` in the order the rules were added.
    rules: Vec<(String, String)>,
    /// Every name in use.
    used: HashSet<String>,
    /// Per base name, the next counter to try.
    next: HashMap<String, usize>,
    /// Body → name, so identical rules are written once.
    by_body: HashMap<String, String>,
    /// (Stop text, one line only) → the [`until`] / [`until_in_line`] rule
    /// already built for it.
    untils: HashMap<(String, bool), String>,
    /// Name → index in `rules`, for [`Rules::define`].
    index: HashMap<String, usize>,
}

impl Rules {
    /// Adds a rule named after `hint` (made valid and unique) and returns its
    /// name; an identical body added before returns the earlier name.
    pub fn add(&mut self, hint: &str, body: String) -> String {
        if let Some(name) = self.by_body.get(&body) {
            return name.clone();
        }
        let name = self.fresh(hint);
        self.by_body.insert(body.clone(), name.clone());
        self.rules.push((name.clone(), body));
        name
    }

    /// Reserves a unique name now and fills in its body later with
    /// [`Rules::define`]: what recursive schemas (`$ref`) need.
    pub fn reserve(&mut self, hint: &str) -> String {
        let name = self.fresh(hint);
        self.index.insert(name.clone(), self.rules.len());
        self.rules.push((name.clone(), String::new()));
        name
    }

    /// Sets the body of a reserved rule.
    pub fn define(&mut self, name: &str, body: String) {
        if let Some(&i) = self.index.get(name) {
            self.rules[i].1 = body;
        }
    }

    /// Adds a shared rule under exactly `name` (one of [`RESERVED`]) unless it
    /// is there already.
    pub fn fixed(&mut self, name: &str, body: &str) -> String {
        if self.used.insert(name.to_owned()) {
            self.rules.push((name.to_owned(), body.to_owned()));
        }
        name.to_owned()
    }

    /// Whether a rule named `name` exists.
    pub fn has(&self, name: &str) -> bool {
        self.used.contains(name)
    }

    /// A valid name not used yet, derived from `hint`.
    fn fresh(&mut self, hint: &str) -> String {
        let base = rule_name(hint);
        let mut n = self.next.get(&base).copied().unwrap_or(1);
        loop {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            n += 1;
            if !RESERVED.contains(&name.as_str()) && self.used.insert(name.clone()) {
                self.next.insert(base, n);
                return name;
            }
        }
    }

    /// The grammar text: `root` first, then the other rules in insertion order.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let ordered = self
            .rules
            .iter()
            .filter(|(n, _)| n == "root")
            .chain(self.rules.iter().filter(|(n, _)| n != "root"));
        for (name, body) in ordered {
            // A reserved rule never defined would be invalid text; `""` keeps it valid.
            let body = if body.is_empty() { "\"\"" } else { body };
            let _ = writeln!(out, "{name} ::= {body}");
        }
        out
    }
}

/// A valid GBNF rule name from any text: ASCII letters and digits are kept,
/// other characters become `-`, non-ASCII characters their code point in hex
/// (so `名` and `前` stay distinguishable), runs of `-` collapse.
pub fn rule_name(hint: &str) -> String {
    let mut out = String::new();
    for c in hint.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if c.is_ascii() {
            out.push('-');
        } else {
            let _ = write!(out, "-u{:x}-", c as u32);
        }
        if out.len() > 48 {
            break;
        }
    }
    let mut collapsed = String::new();
    for c in out.chars() {
        if !(c == '-' && collapsed.ends_with('-')) {
            collapsed.push(c);
        }
    }
    let trimmed = collapsed.trim_matches('-');
    if trimmed.is_empty() {
        "r".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// A GBNF string literal for `text` (`""` for empty text).
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_literal(&mut out, text);
    out
}

/// Appends the GBNF string literal for `text` to `out`.
pub fn push_literal(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One character escaped for use inside a `[...]` class.
pub fn class_char(c: char) -> String {
    match c {
        '\\' => "\\\\".into(),
        ']' => "\\]".into(),
        '[' => "\\[".into(),
        // llama.cpp knows no `\-` or `\^` escape: hex keeps them literal.
        '-' => "\\x2D".into(),
        '^' => "\\x5E".into(),
        '"' => "\\\"".into(),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    }
}

/// `[^...]`: any character except those given (deduplicated, in order).
pub fn not_class(chars: &[char]) -> String {
    let mut seen = Vec::new();
    for &c in chars {
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    let inner: String = seen.into_iter().map(class_char).collect();
    format!("[^{inner}]")
}

/// Alternatives, parenthesised when there is more than one.
pub fn alt(options: &[String]) -> String {
    match options {
        [] => "\"\"".into(),
        [one] => one.clone(),
        many => format!("( {} )", many.join(" | ")),
    }
}

/// A sequence; empty parts are dropped, an empty sequence is `""`.
pub fn seq(parts: &[String]) -> String {
    let kept: Vec<&str> = parts
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    if kept.is_empty() {
        "\"\"".into()
    } else {
        kept.join(" ")
    }
}

/// A rule matching any text that does not contain `stop` (then `stop` follows).
///
/// Built from the KMP automaton of `stop`, so it is exact even for stops that
/// overlap themselves: state `k` means "the text ends with the first `k`
/// characters of `stop`", and no transition reaches the full length. Each
/// state is a rule; the text may end in any state.
pub fn until(rules: &mut Rules, hint: &str, stop: &str) -> String {
    automaton(rules, hint, stop, false)
}

/// Like [`until`], on one line: the text holds no newline either (the rest
/// of a header, which the parser reads up to its close or a newline).
pub fn until_in_line(rules: &mut Rules, hint: &str, stop: &str) -> String {
    automaton(rules, hint, stop, true)
}

fn automaton(rules: &mut Rules, hint: &str, stop: &str, in_line: bool) -> String {
    let key = (stop.to_owned(), in_line);
    if let Some(name) = rules.untils.get(&key) {
        return name.clone();
    }
    let d: Vec<char> = stop.chars().collect();
    if d.is_empty() {
        return if in_line {
            rules.fixed("line-text", "[^\\n]*")
        } else {
            rules.fixed("any-text", "[\\x00-\\U0010FFFF]*")
        };
    }
    let k = d.len();
    let fail = failure(&d);
    let next = |state: usize, c: char| -> usize {
        let mut s = state;
        loop {
            if d[s] == c {
                return s + 1;
            }
            if s == 0 {
                return 0;
            }
            s = fail[s - 1];
        }
    };
    let names: Vec<String> = (0..k)
        .map(|s| {
            if s == 0 {
                rules.reserve(hint)
            } else {
                rules.reserve(&format!("{hint}-{s}"))
            }
        })
        .collect();
    let mut distinct: Vec<char> = Vec::new();
    for &c in &d {
        if !distinct.contains(&c) {
            distinct.push(c);
        }
    }
    for s in 0..k {
        // Characters that restart the match all go to state 0 through one
        // negated class; only the others need their own alternative.
        let special: Vec<char> = distinct
            .iter()
            .copied()
            .filter(|&c| next(s, c) != 0)
            .collect();
        let mut barred = special.clone();
        if in_line {
            barred.push('\n');
        }
        let mut options = vec![format!("{} {}", not_class(&barred), names[0])];
        for &c in special.iter().filter(|&&c| !(in_line && c == '\n')) {
            let t = next(s, c);
            if t < k {
                options.push(format!("{} {}", literal(&c.to_string()), names[t]));
            }
        }
        options.push("\"\"".into());
        rules.define(&names[s], options.join(" | "));
    }
    rules.untils.insert(key, names[0].clone());
    names[0].clone()
}

/// KMP failure function: `fail[i]` is the length of the longest proper
/// prefix of `d[..=i]` that is also its suffix.
fn failure(d: &[char]) -> Vec<usize> {
    let mut fail = vec![0; d.len()];
    let mut k = 0;
    for i in 1..d.len() {
        while k > 0 && d[i] != d[k] {
            k = fail[k - 1];
        }
        if d[i] == d[k] {
            k += 1;
        }
        fail[i] = k;
    }
    fail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_and_unique() {
        let mut r = Rules::default();
        assert_eq!(r.add("a b", "\"1\"".into()), "a-b");
        assert_eq!(r.add("a_b", "\"2\"".into()), "a-b-2");
        assert_eq!(r.add("a-b", "\"3\"".into()), "a-b-3");
        assert_eq!(r.add("a b", "\"1\"".into()), "a-b", "same body, same rule");
        assert_eq!(r.add("名前", "\"4\"".into()), "u540d-u524d");
        assert_eq!(r.add("", "\"5\"".into()), "r");
        assert_eq!(r.add("a-b-2", "\"6\"".into()), "a-b-2-2");
    }

    #[test]
    fn literals_escape_what_gbnf_needs() {
        assert_eq!(literal("a\"b\\c\nd\te\u{1}é"), r#""a\"b\\c\nd\te\x01é""#);
        assert_eq!(not_class(&['<', ']', '\n', '<']), r"[^<\]\n]");
    }

    #[test]
    fn until_is_the_kmp_automaton() {
        let mut r = Rules::default();
        let name = until(&mut r, "v", "aab");
        assert_eq!(name, "v");
        assert_eq!(
            r.render(),
            "v ::= [^a] v | \"a\" v-1 | \"\"\n\
             v-1 ::= [^a] v | \"a\" v-2 | \"\"\n\
             v-2 ::= [^ab] v | \"a\" v-2 | \"\"\n"
        );
    }
}
