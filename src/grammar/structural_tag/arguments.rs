//! A call's arguments node as a structural-tag format: JSON arguments as
//! `json_schema`; tagged arguments as the xgrammar XML style that spells
//! their markers, else one `tag` per declared argument, else any text;
//! Python arguments and arguments inside a JSON string loosely, with a
//! warning.
//!
//! The tagged shape is read from the nodes: a pair is the markers before
//! the key, the key, then the value's options (raw text up to its close, a
//! typed value, its escape wrapper), as the outline lowers them.
//!
//! Invariants: reads only outline nodes; never panics.

use serde_json::{json, Value};

use super::{node, optional, sequence, tag, xgrammar_schema, Notes};
use crate::grammar::shape::{close_text, first, fixed, flat, is_options, is_value};
use crate::json_schema::{string_kind, StringKind};
use crate::protocol::outline::{Kind, Member, Node, Order, Produces, ValueNotation};

/// The arguments `node` of the call of `tool`.
pub(super) fn arguments_format(node: &Node, tool: &str, notes: &mut Notes) -> Value {
    match &node.kind {
        Kind::Value(v) if v.notation == ValueNotation::Json => {
            node_of("json_schema", object_schema(&v.root, tool, notes))
        }
        Kind::Value(_) => {
            notes.warn(format!(
                "{tool}: arguments written as a JSON string; any string accepted"
            ));
            json!({"type": "json_schema", "json_schema": {"type": "string"}})
        }
        Kind::Members {
            list,
            separator,
            extra,
            root,
            order,
        } => match Tagging::of(list, separator, extra.as_deref(), *order) {
            Some(t) => tagged_format(&t, list, root, tool, notes),
            None => {
                notes.warn(format!(
                    "{tool}: Python-call arguments; any text accepted up to the call's end"
                ));
                json!({"type": "any_text"})
            }
        },
        _ => json!({"type": "any_text"}),
    }
}

fn node_of(kind: &str, schema: Value) -> Value {
    node(kind, vec![("json_schema", schema)])
}

/// The tool's parameters as an object schema (`{}` and non-objects mean
/// any object).
pub(super) fn object_schema(parameters: &Value, tool: &str, notes: &mut Notes) -> Value {
    match parameters {
        Value::Object(m)
            if m.contains_key("properties") || m.contains_key("type") || m.contains_key("$ref") =>
        {
            xgrammar_schema(parameters, tool, notes)
        }
        _ => json!({"type": "object"}),
    }
}

/// How tagged arguments are spelled, as their pairs' nodes show it.
#[derive(Default)]
struct Tagging {
    /// Before a key.
    name_prefix: String,
    /// Between a key and a raw value (the name's suffix and the value's
    /// prefix together).
    infix: Option<String>,
    /// Between a key and a typed value, when it differs from `infix`.
    typed_infix: Option<String>,
    /// After a value.
    suffix: String,
    /// Strings are written raw.
    raw_strings: bool,
    /// Values may be inside an escape wrapper.
    escaped: bool,
    /// Nested values are elements.
    elements: bool,
    /// Something follows a value's close (a close naming the key).
    named_close: bool,
    /// Between two pairs.
    separator: String,
    /// Typed values are Python literals only (`{'k': True}`): no xgrammar
    /// style reads them, since each reads JSON.
    python_values: bool,
}

/// One way a pair's value is written.
struct ValueOption {
    /// The fixed text before the value, from the key's end.
    prefix: String,
    /// The value is raw text (a string as written, an enum's word).
    raw: bool,
    /// A typed value's prefix names the type (a choice of words).
    typed_word: bool,
    /// The value may be a string (typed values only).
    may_be_string: bool,
    /// Nested values are written as elements.
    elements: bool,
    /// The markers that close the value.
    suffix: String,
    /// More follows the close (the key again, in a named close).
    after_close: bool,
    /// A typed value written as a Python literal only.
    python: bool,
}

impl Tagging {
    /// The tagging of members whose pairs hold markers, `None` for others
    /// (Python keywords, all literal text); members with no pair at all
    /// are tagged when their order may be sorted, as tagged arguments'.
    fn of(
        list: &[Member],
        separator: &Node,
        extra: Option<&Node>,
        order: Order,
    ) -> Option<Tagging> {
        let pairs: Vec<&Node> = list.iter().map(|m| &m.node).chain(extra).collect();
        let marked = |pair: &&Node| flat(pair).iter().any(|n| matches!(n.kind, Kind::Marker(_)));
        let tagged = match pairs.is_empty() {
            true => order == Order::ListedOrSorted,
            false => pairs.iter().all(marked),
        };
        if !tagged {
            return None;
        }
        let mut t = Tagging {
            separator: fixed(separator)?,
            ..Tagging::default()
        };
        let mut raw_seen = false;
        let mut typed_string = false;
        // The first typed value's infix, and whether it names a type.
        let mut typed: Option<(String, bool)> = None;
        for (i, pair) in pairs.iter().enumerate() {
            let pair = Pair::of(pair)?;
            if i == 0 {
                t.name_prefix = pair.name_prefix;
            }
            t.escaped |= pair.options.iter().filter(|o| o.raw).count() > 1;
            for option in pair.options {
                t.elements |= option.elements;
                t.named_close |= option.after_close;
                t.python_values |= option.python;
                if t.suffix.is_empty() {
                    t.suffix = option.suffix.clone();
                }
                raw_seen |= option.raw;
                match option.raw {
                    true => {
                        t.infix.get_or_insert(option.prefix);
                    }
                    false => {
                        typed_string |= option.may_be_string;
                        typed.get_or_insert((option.prefix, option.typed_word));
                    }
                }
            }
        }
        t.raw_strings = raw_seen || !typed_string;
        if t.infix.is_none() {
            // No string value written raw: the typed prefix is the only one.
            t.infix = typed.as_ref().map(|(infix, _)| infix.clone());
        }
        // Typed values have their own prefix when it names a type or is
        // not the raw values' prefix.
        t.typed_infix = typed
            .filter(|(infix, word)| *word || t.infix.as_ref().is_some_and(|raw| raw != infix))
            .map(|(infix, _)| infix);
        Some(t)
    }
}

/// One tagged pair as its nodes spell it.
struct Pair {
    /// Before the key.
    name_prefix: String,
    /// The value's spellings, each prefix starting right after the key.
    options: Vec<ValueOption>,
}

impl Pair {
    /// The pair `node`: markers, the key, the value's options; `None`
    /// when it is not one.
    fn of(node: &Node) -> Option<Pair> {
        let items = flat(node);
        let name = items.iter().position(|n| is_name(n))?;
        let name_prefix: Option<String> = items[..name].iter().map(|n| fixed(n)).collect();
        let rest = &items[name + 1..];
        let lead_len = rest.iter().take_while(|n| fixed(n).is_some()).count();
        let lead: String = rest[..lead_len].iter().filter_map(|n| fixed(n)).collect();
        let mut options = value_options(&rest[lead_len..]);
        for option in &mut options {
            option.prefix.insert_str(0, &lead);
        }
        Some(Pair {
            name_prefix: name_prefix?,
            options,
        })
    }
}

/// Whether `node` is a pair's key: its literal, or any text up to the
/// name's suffix (a member of any key).
fn is_name(node: &Node) -> bool {
    match &node.kind {
        Kind::Literal(_) => true,
        Kind::Until { .. } => node.produces != Produces::Value,
        _ => false,
    }
}

/// The ways a value is written, from the nodes after its pair's key.
fn value_options(items: &[&Node]) -> Vec<ValueOption> {
    match items {
        [one] if is_options(one) => one
            .children()
            .into_iter()
            .filter(|o| !o.lenient)
            .filter_map(|o| value_option(&flat(o)))
            .collect(),
        _ => value_option(items).into_iter().collect(),
    }
}

fn value_option(items: &[&Node]) -> Option<ValueOption> {
    let at = items.iter().position(|n| is_value(n))?;
    let mut prefix = String::new();
    let mut typed_word = false;
    for item in &items[..at] {
        match (&item.kind, fixed(item)) {
            (_, Some(text)) => prefix.push_str(&text),
            (Kind::Choice(words), None) => {
                typed_word = true;
                prefix.push_str(&words.first().and_then(fixed).unwrap_or_default());
            }
            _ => return None,
        }
    }
    let value = items[at];
    let typed: Vec<&Node> = match &value.kind {
        Kind::Choice(options) => options.iter().collect(),
        _ => vec![value],
    };
    let raw = match &value.kind {
        Kind::Until { .. } => true,
        Kind::Value(v) => v.notation == ValueNotation::Raw,
        _ => false,
    };
    let may_be_string = typed.iter().any(|n| match &n.kind {
        Kind::Value(v) => string_kind(&v.schema, &v.root) != StringKind::Never,
        _ => false,
    });
    let elements = typed.iter().any(|n| {
        matches!(&n.kind, Kind::Value(v) if matches!(v.notation, ValueNotation::Element { .. }))
    });
    let python = !typed.is_empty()
        && typed
            .iter()
            .all(|n| matches!(&n.kind, Kind::Value(v) if v.notation == ValueNotation::Python));
    let after = &items[at + 1..];
    let close_len = after.iter().take_while(|n| close_text(n).is_some()).count();
    let suffix = after[..close_len]
        .iter()
        .filter_map(|n| close_text(n))
        .collect();
    Some(ValueOption {
        prefix,
        raw,
        typed_word,
        may_be_string: !raw && may_be_string,
        elements,
        suffix,
        after_close: close_len < after.len(),
        python,
    })
}

/// Tagged arguments in the xgrammar XML style that spells them, else one
/// tag per declared argument, else any text.
fn tagged_format(
    t: &Tagging,
    list: &[Member],
    root: &Value,
    tool: &str,
    notes: &mut Notes,
) -> Value {
    let schema = object_schema(root, tool, notes);
    match xml_style(t) {
        Some("qwen_xml") => node("qwen_xml_parameter", vec![("json_schema", schema)]),
        Some(style) => node(
            "json_schema",
            vec![("json_schema", schema), ("style", Value::from(style))],
        ),
        None => match tagged_pairs(t, list) {
            Some(pairs) => {
                notes.warn(format!("{tool}: tagged arguments in no xgrammar style; keys exact, values other than strings accepted as any text"));
                pairs
            }
            None => {
                notes.warn(format!("{tool}: tagged arguments in no xgrammar style; any text accepted up to the call's end"));
                json!({"type": "any_text"})
            }
        },
    }
}

/// Tagged arguments in a shape no xgrammar style spells, as one tag per
/// declared argument in the declared order (optional ones optional): the
/// keys are exact, a string value is raw text up to its close, an enum one
/// of its values; other values are any text (templates print them as JSON
/// or as Python literals). `None` when the shape is not that simple (no
/// declared arguments, a separator, typed or escaped values).
fn tagged_pairs(t: &Tagging, list: &[Member]) -> Option<Value> {
    let simple = t.raw_strings
        && t.typed_infix.is_none()
        && !t.escaped
        && !t.elements
        && t.separator.is_empty();
    let infix = t.infix.as_deref().unwrap_or_default();
    if !simple || list.is_empty() {
        return None;
    }
    let pairs = list.iter().map(|member| {
        let begin = format!("{}{}{infix}", t.name_prefix, member.key);
        let pair = tag(&begin, raw_value(&member.node), &member_close(member));
        match member.required {
            true => pair,
            false => optional(pair),
        }
    });
    Some(sequence(pairs.collect()))
}

/// The marker that closes a member's value (the first option's).
fn member_close(member: &Member) -> String {
    let options = Pair::of(&member.node).map(|p| p.options);
    let first = options.and_then(|o| o.into_iter().next());
    first.map(|o| o.suffix).unwrap_or_default()
}

/// A raw tagged value: one of a string enum's values, else any text.
fn raw_value(pair: &Node) -> Value {
    let schema = first(pair, |n| match &n.kind {
        Kind::Value(v) => Some(&v.schema),
        _ => None,
    });
    let values = schema
        .and_then(|s| s.get("enum"))
        .and_then(Value::as_array)
        .filter(|v| v.iter().all(Value::is_string));
    match values {
        Some(values) => {
            let words = values
                .iter()
                .map(|v| super::const_string(v.as_str().unwrap_or_default()))
                .collect();
            node("or", vec![("elements", Value::Array(words))])
        }
        None => json!({"type": "any_text"}),
    }
}

/// One of xgrammar's XML argument styles, by its markers without
/// whitespace (which the style leaves to the value or to the space between
/// arguments).
struct XmlStyle {
    name: &'static str,
    /// Before an argument's name.
    prefix: &'static str,
    /// Between the name and the value: the whole text, or for typed styles
    /// (a type attribute the style writes per value) its fixed start.
    infix: &'static str,
    /// After a value.
    suffix: &'static str,
    typed: bool,
}

const XML_STYLES: &[XmlStyle] = &[
    XmlStyle {
        name: "qwen_xml",
        prefix: "<parameter=",
        infix: ">",
        suffix: "</parameter>",
        typed: false,
    },
    XmlStyle {
        name: "minimax_xml",
        prefix: "<parametername=\"",
        infix: "\">",
        suffix: "</parameter>",
        typed: false,
    },
    XmlStyle {
        name: "glm_xml",
        prefix: "<arg_key>",
        infix: "</arg_key><arg_value>",
        suffix: "</arg_value>",
        typed: false,
    },
    XmlStyle {
        name: "deepseek_xml",
        prefix: "<｜DSML｜parametername=\"",
        infix: "\"string=\"",
        suffix: "</｜DSML｜parameter>",
        typed: true,
    },
    XmlStyle {
        name: "kimi_k3_xml",
        prefix: "<|open|>argumentkey=\"",
        infix: "\"type=\"",
        suffix: "<|close|>argument<|sep|>",
        typed: true,
    },
];

/// The style whose markers the tagged arguments use, when nothing else
/// (named closes, escapes, nested elements, a separator) is in play.
fn xml_style(t: &Tagging) -> Option<&'static str> {
    let plain = t.raw_strings
        && !t.python_values
        && !t.named_close
        && !t.escaped
        && !t.elements
        && t.separator.trim().is_empty();
    if !plain {
        return None;
    }
    let (prefix, suffix) = (squeeze(&t.name_prefix), squeeze(&t.suffix));
    let infix = squeeze(t.infix.as_deref()?);
    let fits = |style: &XmlStyle, infix: &str| match style.typed {
        true => infix.starts_with(style.infix),
        false => infix == style.infix,
    };
    let style = XML_STYLES.iter().find(|s| {
        let typed_ok = match &t.typed_infix {
            Some(typed) => s.typed && fits(s, &squeeze(typed)),
            None => true,
        };
        s.prefix == prefix && s.suffix == suffix && fits(s, &infix) && typed_ok
    })?;
    Some(style.name)
}

fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
