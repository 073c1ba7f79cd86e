//! A call's arguments node as a content parser: `json` for a JSON object
//! (and for a `key:value` list in braces, with unquoted keys and the
//! template's string delimiters), `xml-inline` for marker-tagged pairs,
//! one match per argument with its key and value captured.
//!
//! The tagged shape is read from the stand-in argument's pair (see
//! `calls`): the markers before the key, the key, the markers after it,
//! then the value's spellings as the outline lowers them — raw text up to
//! its close, inside the escape wrapper, a typed value (its prefix naming
//! the type, or fixed) — and the close, which holds the key again when the
//! template names it there.
//!
//! Invariants: reads only outline nodes; never panics; values are left as
//! text for `parse_response(..., tools=tools)` to type per the schemas.

use serde_json::{json, Map, Value};

use super::patterns::{flex, flex_open, is_blank, optional_exact, tidy};
use super::stand_in::{Piece, KEY};
use crate::grammar::shape::{close_text, fixed, flat, is_options, is_value};
use crate::protocol::outline::{Kind, Node, Produces, ValueNotation};
use crate::protocol::Marker;

/// The content parser of a call's arguments.
pub(super) struct ArgumentSpec {
    pub parser: &'static str,
    pub args: Map<String, Value>,
    /// The object's braces are the name suffix's last character and the
    /// call end's first: they stay in the region (`call:f{a:1}<tool_call|>`).
    pub braces: bool,
    /// A `key:value` list read as JSON: the arguments have no end marker
    /// of their own in the close.
    pub keyed: bool,
}

/// Tagged arguments as their stand-in pair spells them.
#[derive(Debug, Default)]
pub(super) struct Tagged {
    name_prefix: String,
    name_suffix: String,
    /// Before a raw (string) value.
    value_prefix: String,
    /// Before a typed value, when it differs from `value_prefix`.
    typed_value_prefix: Option<String>,
    /// A typed prefix naming the value's type: the text around the word.
    typed_word: Option<(String, String)>,
    /// The escape wrapper a raw value may be inside.
    escaped_value: Option<(String, String)>,
    /// After a value (before the key, in a named close).
    value_suffix: String,
    /// After the key in a close naming it.
    named_close: Option<String>,
    separator: String,
    /// Strings are written raw.
    raw_strings: bool,
    /// Nested values are elements.
    elements: bool,
}

/// Whether `arguments` are Python keyword arguments: members whose pairs
/// hold no marker.
pub(super) fn is_python(arguments: &Node) -> bool {
    let Kind::Members { list, .. } = &arguments.kind else {
        return false;
    };
    list.iter().all(|m| {
        flat(&m.node)
            .iter()
            .all(|n| !matches!(n.kind, Kind::Marker(_)))
    }) && python_values(arguments)
}

fn python_values(arguments: &Node) -> bool {
    let mut stack = vec![arguments];
    while let Some(n) = stack.pop() {
        if let Kind::Value(v) = &n.kind {
            if v.notation == ValueNotation::Python {
                return true;
            }
        }
        stack.extend(n.children());
    }
    false
}

/// Whether Python arguments' strings may be written other than as
/// literals: raw between quotes (`'it's'`, a lenient spelling beside the
/// literal) or bare as `str()` prints them (`city=Paris`: text up to the
/// next argument, or an enum's word).
pub(super) fn unliteral_python_strings(arguments: &Node) -> bool {
    let mut stack = vec![arguments];
    while let Some(n) = stack.pop() {
        let bare = match &n.kind {
            Kind::Until { .. } => n.produces == Produces::Value,
            Kind::Value(v) => v.notation == ValueNotation::Raw,
            _ => false,
        };
        if bare || (n.lenient && n.produces == Produces::Nothing) {
            return true;
        }
        stack.extend(n.children());
    }
    false
}

/// The tagged shape of `arguments`, when they are marker-tagged pairs.
pub(super) fn tagged(arguments: &Node) -> Option<Tagged> {
    let Kind::Members {
        list, separator, ..
    } = &arguments.kind
    else {
        return None;
    };
    if is_python(arguments) {
        return None;
    }
    let member = list.iter().find(|m| m.key == KEY)?;
    let items = flat(&member.node);
    let key = items
        .iter()
        .position(|n| matches!(&n.kind, Kind::Literal(k) if k == KEY))?;
    let mut t = Tagged {
        name_prefix: fixed_run(&items[..key])?,
        separator: fixed(separator)?,
        ..Tagged::default()
    };
    let rest = &items[key + 1..];
    let lead = rest.iter().take_while(|n| fixed(n).is_some()).count();
    t.name_suffix = fixed_run(&rest[..lead])?;
    let options: Vec<Vec<&Node>> = match &rest[lead..] {
        [one] if is_options(one) => one.children().into_iter().map(flat).collect(),
        other => vec![other.to_vec()],
    };
    let mut word = None;
    for option in &options {
        word = read_option(&mut t, option).or(word);
    }
    t.typed_word = match &t.typed_value_prefix {
        Some(typed) => crate::markers::typed_word(&t.value_prefix, typed)
            .map(|(before, after)| (before.to_string(), after.to_string())),
        None => None,
    }
    .or(word);
    Some(t)
}

/// Reads one spelling of the stand-in value into `t`, in the outline's
/// order: the raw string first, then inside the escape wrapper, then the
/// typed value. The text around a typed prefix's type word, when the
/// prefix is a choice of words.
fn read_option(t: &mut Tagged, items: &[&Node]) -> Option<(String, String)> {
    let at = items.iter().position(|n| is_value(n))?;
    let (before, value, after) = (&items[..at], items[at], &items[at + 1..]);
    let raw = match &value.kind {
        Kind::Until { .. } => true,
        Kind::Value(v) => v.notation == ValueNotation::Raw,
        _ => false,
    };
    match (raw, t.raw_strings) {
        (true, false) => {
            t.raw_strings = true;
            t.value_prefix = fixed_run(before).unwrap_or_default();
            t.read_close(&closes(after));
            None
        }
        (true, true) => {
            // Inside the wrapper: its opening right before the text, its
            // end right after.
            let open = before.last().and_then(|n| fixed(n));
            let end = after.first().and_then(|n| fixed(n));
            if let (Some(open), Some(end)) = (open, end) {
                t.escaped_value = Some((open, end));
            }
            None
        }
        (false, raw_strings) => {
            t.elements |= typed_values(value)
                .iter()
                .any(|v| matches!(v, ValueNotation::Element { .. }));
            let (prefix, word) = typed_prefix(before);
            if raw_strings {
                t.typed_value_prefix = Some(prefix).filter(|p| *p != t.value_prefix);
            } else {
                t.value_prefix = prefix;
                t.read_close(&closes(after));
            }
            word
        }
    }
}

impl Tagged {
    /// The value's close: its suffix, and what follows the key when the
    /// close names it.
    fn read_close(&mut self, close: &str) {
        match close.split_once(KEY) {
            Some((suffix, after)) => {
                self.value_suffix = suffix.to_string();
                self.named_close = Some(after.to_string());
            }
            None => self.value_suffix = close.to_string(),
        }
    }
}

/// The notations of a typed value (one, or a choice of JSON and Python).
fn typed_values(node: &Node) -> Vec<ValueNotation> {
    let nodes = match &node.kind {
        Kind::Choice(options) => options.iter().collect(),
        _ => vec![node],
    };
    nodes
        .iter()
        .filter_map(|n| match &n.kind {
            Kind::Value(v) => Some(v.notation.clone()),
            _ => None,
        })
        .collect()
}

/// The prefix of a typed value, and the text around its type word when it
/// is a choice of words (` type="number"<|sep|>`).
fn typed_prefix(items: &[&Node]) -> (String, Option<(String, String)>) {
    let mut prefix = String::new();
    let mut word = None;
    for item in items {
        match (&item.kind, fixed(item)) {
            (_, Some(text)) => prefix.push_str(&text),
            (Kind::Choice(words), None) => {
                let texts: Vec<String> = words.iter().filter_map(fixed).collect();
                let (before, after) = common_ends(&texts);
                prefix.push_str(texts.first().map_or("", String::as_str));
                word = Some((before, after));
            }
            _ => {}
        }
    }
    (prefix, word)
}

/// The text every one of `texts` starts with and ends with.
fn common_ends(texts: &[String]) -> (String, String) {
    let Some(first) = texts.first() else {
        return (String::new(), String::new());
    };
    let mut start = first.len();
    let mut end = first.len();
    for t in texts {
        start = start.min(
            first
                .char_indices()
                .zip(t.chars())
                .find(|((_, a), b)| a != b)
                .map_or(first.len().min(t.len()), |((i, _), _)| i),
        );
        let shared = first
            .chars()
            .rev()
            .zip(t.chars().rev())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum::<usize>();
        end = end.min(shared);
    }
    (
        first[..start].to_string(),
        first[first.len() - end..].to_string(),
    )
}

/// A value's closing markers, written or optional.
fn closes(items: &[&Node]) -> String {
    items.iter().map_while(|n| close_text(n)).collect()
}

fn fixed_run(items: &[&Node]) -> Option<String> {
    items.iter().map(|n| fixed(n)).collect()
}

/// The content parser of `arguments`, between the call's `head` and `tail`.
pub(super) fn spec(
    arguments: &Node,
    head: &[Piece],
    tail: &[Piece],
    warnings: &mut Vec<String>,
) -> ArgumentSpec {
    let json = || ArgumentSpec {
        parser: "json",
        args: Map::new(),
        braces: false,
        keyed: false,
    };
    match tagged(arguments) {
        Some(t) if t.is_keyed_object() => keyed_object(&t, head, tail, warnings),
        Some(t) => t.xml_inline(warnings),
        None => json(),
    }
}

/// `key:value` pairs in braces (Gemma 4's `{city:<|"|>Paris<|"|>,days:3}`):
/// JSON with unquoted keys and string delimiters.
fn keyed_object(
    t: &Tagged,
    head: &[Piece],
    tail: &[Piece],
    warnings: &mut Vec<String>,
) -> ArgumentSpec {
    let braces = ends_with_core(head, '{') && starts_with_core(tail, '}');
    if !braces {
        warnings.push("response_template: a `key:value` argument list without braces is read as JSON and may fail".into());
    }
    let mut args = Map::new();
    args.insert("unquoted_keys".into(), json!(true));
    if !is_blank(&t.value_prefix) && !is_blank(&t.value_suffix) {
        args.insert(
            "string_delims".into(),
            json!([[t.value_prefix.trim(), t.value_suffix.trim()]]),
        );
    }
    ArgumentSpec {
        parser: "json",
        args,
        braces,
        keyed: true,
    }
}

fn ends_with_core(run: &[Piece], c: char) -> bool {
    matches!(run.last(), Some(Piece::Marker(m) | Piece::Text(m)) if m.trim_end().ends_with(c))
}

fn starts_with_core(run: &[Piece], c: char) -> bool {
    matches!(run.first(), Some(Piece::Marker(m) | Piece::Text(m)) if m.trim_start().starts_with(c))
}

impl Tagged {
    /// `key:value` pairs joined by `,`.
    fn is_keyed_object(&self) -> bool {
        is_blank(&self.name_prefix)
            && self.name_suffix.trim() == ":"
            && self.separator.trim() == ","
    }

    /// Tagged parameters as `xml-inline`: one match per argument, its key
    /// and value captured; values left as text for the tools' schemas to
    /// type.
    fn xml_inline(&self, warnings: &mut Vec<String>) -> ArgumentSpec {
        let t = self;
        if t.elements {
            warnings.push(
                "response_template: objects and lists written as nested elements stay text".into(),
            );
        }
        let key = if is_blank(&t.name_prefix) {
            r"(?P<key>\w+)".to_string()
        } else {
            r"(?P<key>[^\s<>]+?)".to_string()
        };
        // The whitespace the template writes right around a value is the
        // format's, exactly (optional); any more is the value's, as our parser
        // reads it (`\s*` there trimmed `" hello"` to `"hello"`).
        let (name_suffix, value_prefix) = match (&t.typed_word, &t.typed_value_prefix) {
            (Some((before, after)), _) => (
                flex(&t.name_suffix),
                format!(r"{}\w+{}", flex(before), flex_open(after)),
            ),
            (None, Some(typed)) => (
                flex(&t.name_suffix),
                format!("(?:{}|{})", flex_open(&t.value_prefix), flex_open(typed)),
            ),
            (None, None) if is_blank(&t.value_prefix) => (flex_open(&t.name_suffix), String::new()),
            // A value's opener that is an element of its own (`<arg_value>`)
            // may be missing, its closer written, as our parser reads it.
            (None, None) if is_element_opener(&t.value_prefix, &t.value_suffix) => (
                flex(&t.name_suffix),
                format!("(?:{})?", flex_open(&t.value_prefix)),
            ),
            (None, None) => (flex(&t.name_suffix), flex_open(&t.value_prefix)),
        };
        let value = match &t.escaped_value {
            // Inside the wrapper the value runs to the wrapper's close: the
            // argument's closing marker may be quoted in it (`<![CDATA[a</param>]]>`).
            Some((open, close)) => format!(
                r"(?:\s*{}(?P<value>.*?){}\s*|(?P<value>.*?))",
                flex(open),
                flex(close)
            ),
            None => "(?P<value>.*?)".to_string(),
        };
        let suffix = t.value_suffix.trim_start();
        let close = match &t.named_close {
            Some(after) => format!("{}(?P=key){}", flex(suffix), flex(after)),
            None => flex(suffix),
        };
        // A value whose close never comes before the call's (cut off, or the
        // marker forgotten) runs to the call's close, as our parser recovers
        // it; without this `xml-inline` matches nothing and the argument is
        // dropped silently.
        let space = optional_exact(&t.value_suffix[..t.value_suffix.len() - suffix.len()]);
        let pattern = tidy(format!(
            r"{}{key}{name_suffix}{value_prefix}{value}{space}(?:{close}|\Z)",
            flex(&t.name_prefix),
        ));
        let mut args = Map::new();
        args.insert("tag_pattern".into(), json!(pattern));
        if !t.raw_strings {
            args.insert(
                "value_parser".into(),
                json!({"name": "json", "args": {"allow_non_json": true}}),
            );
        }
        ArgumentSpec {
            parser: "xml-inline",
            args,
            braces: false,
            keyed: false,
        }
    }

    /// The markers of a pair and between pairs.
    pub(super) fn markers(&self) -> Vec<String> {
        [
            &self.name_prefix,
            &self.name_suffix,
            &self.value_prefix,
            &self.value_suffix,
            &self.separator,
        ]
        .into_iter()
        .cloned()
        .collect()
    }
}

/// A value's opening marker that is an element of its own
/// ([`Marker::element_opener`]) and the whole of the prefix: one optional
/// group stands for it.
fn is_element_opener(prefix: &str, suffix: &str) -> bool {
    let whole = !prefix.trim().contains(char::is_whitespace);
    whole && Marker::element_opener(prefix, suffix).is_some()
}
