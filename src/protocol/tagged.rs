//! Marker-tagged arguments (`<parameter=city>Paris</parameter>`,
//! `<arg_key>city</arg_key><arg_value>Paris</arg_value>`) as a call's
//! layout holds them: the analysis's `TaggedArguments` read once, into
//! the markers an argument is written with and what they mean for a
//! reader.
//!
//! Two kinds of fact live here:
//! - what the template writes: the markers around a key and a value, the
//!   separator and the end, how strings, nested values and typed values
//!   are spelled ([`TaggedLayout::notation`], [`TaggedLayout::type_word`]);
//! - what ends a value where the model left out a marker the template
//!   writes ([`TaggedLayout::unclosed_value_ends`],
//!   [`TaggedLayout::stray_value_closer`], [`TaggedLayout::unopened_value`]):
//!   leniency, which the parser reads and the grammars never print.
//!
//! The outline's lowering, the call writer and the parser read both from
//! here, so none of them interprets the analysis type again (issue 30).
//!
//! Invariant: built only by [`TaggedLayout::new`], from the analysis's
//! arguments and the call's end marker; every derived field is a function
//! of those two.

use super::{Marker, Notation};
use crate::analysis::{Elements, TaggedArguments};

/// Marker-tagged arguments of one format, with the call's end they sit in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaggedLayout {
    /// Before an argument's name (`<parameter=`, `<arg_key>`).
    pub name_prefix: String,
    /// After an argument's name (`>\n`, `</arg_key>\n`).
    pub name_suffix: String,
    /// Before a string value (`<arg_value>`).
    pub value_prefix: String,
    /// Before a non-string value, when the template marks typed values
    /// apart (` string="false">`; blank: a bare value, `days:3`).
    pub typed_value_prefix: Option<String>,
    /// After a value (`\n</parameter>`); when the closer repeats the
    /// argument's name, the part before that name (`</`).
    pub value_suffix: String,
    /// When the closer repeats the argument's name: the text after it (`>`).
    pub named_close: Option<String>,
    /// Between two arguments.
    pub separator: String,
    /// After the last argument, before the call's end.
    pub end: String,
    /// String values are written raw (else JSON-quoted).
    pub raw_strings: bool,
    /// Wrapper around values holding `<`, `&` or a newline (`<![CDATA[`, `]]>`).
    pub escaped_value: Option<(String, String)>,
    /// Objects and lists written as nested elements.
    pub elements: Option<Elements>,
    /// Objects written as Python literals (`str()`), so other non-string
    /// values are Python literals too (`True`, `None`).
    pub python_values: bool,
    /// The template's own notation for nested values (`{a:<|"|>x<|"|>}`),
    /// where its non-string values are bare and its strings quoted.
    pub notation: Option<Notation>,
    /// The word inside the typed prefix, when the prefix names a type.
    pub type_word: Option<TypeWord>,
    /// The first cores that end a bare (typed, unmarked) value: the
    /// separator's, the end's and the call end's (`,` and `}` when none).
    pub bare_value_stops: Vec<String>,
    /// Where a value left unclosed ends: the closers around it, so it
    /// never swallows them (`NYC\n</function>` with no `</parameter>`),
    /// and the next argument's opener where it opens the element the
    /// value's closer closes. Empty where the closer names its argument.
    pub unclosed_value_ends: Vec<Marker>,
    /// A value's closer a call with no arguments may write before its end
    /// (`list_mailboxes</arg_value></tool_call>`): it closes nothing.
    pub stray_value_closer: Option<StrayValueCloser>,
    /// A value whose opening element the model left out, its closer
    /// written (`query</arg_key>vacation days</arg_value>`).
    pub unopened_value: Option<UnopenedValue>,
}

/// The word of a typed prefix and the text around it (` type="` `number`
/// `"<|sep|>`): the probes render only some types, so readers take any
/// word there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TypeWord {
    /// The prefix's text before the word.
    pub before: String,
    /// The prefix's text after the word.
    pub after: String,
    /// The two words the template writes (typed and string), sorted.
    pub written: [String; 2],
    /// The words are `false` and `true`: a flag (`string="false"`), not a
    /// type's name.
    pub flag: bool,
}

/// A value's closer where nothing is open (see
/// [`TaggedLayout::stray_value_closer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StrayValueCloser {
    /// The closer, from its first bracketed token on.
    pub closer: Marker,
    /// What must follow it: the arguments' end, or the call's.
    pub before: Marker,
}

/// A value whose opener the model left out (see
/// [`TaggedLayout::unopened_value`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnopenedValue {
    /// The opener left out (`<arg_value>`): the value may not begin with it.
    pub opener: String,
    /// The value's text runs up to the first of these: its closer, its
    /// opener, and the arguments' other markers. Only text that the closer
    /// ends is such a value.
    pub stops: Vec<String>,
}

impl TaggedLayout {
    /// `t`, in a call that ends with `call_end`, in a section that ends
    /// with `section_end`.
    pub fn new(t: &TaggedArguments, call_end: &str, section_end: &str) -> TaggedLayout {
        TaggedLayout {
            name_prefix: t.name_prefix.clone(),
            name_suffix: t.name_suffix.clone(),
            value_prefix: t.value_prefix.clone(),
            typed_value_prefix: t.typed_value_prefix.clone(),
            value_suffix: t.value_suffix.clone(),
            named_close: t.named_close.clone(),
            separator: t.separator.clone(),
            end: t.end.clone(),
            raw_strings: t.raw_strings,
            escaped_value: t.escaped_value.clone(),
            elements: t.elements.clone(),
            python_values: t.python_values,
            notation: notation(t),
            type_word: type_word(t),
            bare_value_stops: bare_value_stops(t, call_end),
            unclosed_value_ends: unclosed_value_ends(t, call_end, section_end),
            stray_value_closer: stray_value_closer(t, call_end),
            unopened_value: unopened_value(t),
        }
    }

    /// The raw text after the value of the argument `key`.
    pub fn close_for(&self, key: &str) -> String {
        crate::markers::value_close(&self.value_suffix, self.named_close.as_deref(), key)
    }
}

/// The notation of arguments whose non-string values are bare (no marker
/// before them) and whose strings are quoted: only there can a value be
/// a nested structure written in the same notation.
fn notation(t: &TaggedArguments) -> Option<Notation> {
    let bare = t
        .typed_value_prefix
        .as_deref()
        .is_some_and(|p| p.trim().is_empty());
    let (open, close) = (t.value_prefix.trim(), t.value_suffix.trim());
    let (key_end, separator) = (t.name_suffix.trim(), t.separator.trim());
    if !bare
        || [open, close, key_end, separator]
            .iter()
            .any(|m| m.is_empty())
    {
        return None;
    }
    Some(Notation {
        quote_open: open.to_string(),
        quote_close: close.to_string(),
        key_end: key_end.to_string(),
        separator: separator.to_string(),
    })
}

/// The typed prefix's word, when the typed and the string prefix differ
/// by that one word (` type="number"<|sep|>` against ` type="string"<|sep|>`).
fn type_word(t: &TaggedArguments) -> Option<TypeWord> {
    let (before, after) = t.typed_word()?;
    let typed = t.typed_value_prefix.as_deref()?;
    let word = |prefix: &str| {
        let end = prefix.len().saturating_sub(after.len());
        prefix
            .get(before.len()..end)
            .unwrap_or_default()
            .to_string()
    };
    let mut written = [word(typed), word(&t.value_prefix)];
    written.sort();
    let flag = written == ["false", "true"];
    Some(TypeWord {
        before: before.to_string(),
        after: after.to_string(),
        written,
        flag,
    })
}

fn bare_value_stops(t: &TaggedArguments, call_end: &str) -> Vec<String> {
    let stops: Vec<String> = [t.separator.as_str(), t.end.as_str(), call_end]
        .into_iter()
        .filter_map(|m| Marker::new(m).first_core().map(str::to_string))
        .collect();
    match stops.is_empty() {
        true => vec![",".into(), "}".into()],
        false => stops,
    }
}

/// The closers around a value (the arguments', the call's and the
/// section's) and, where an argument opens the element
/// its value's closer closes, the next argument's opener: those with a
/// distinctive first core (a bracketed token) other than the value's own
/// closer's. None where the value's closer names its argument (`</city>`):
/// such values are read by nesting.
fn unclosed_value_ends(t: &TaggedArguments, call_end: &str, section_end: &str) -> Vec<Marker> {
    if t.named_close.is_some() {
        return Vec::new();
    }
    let own = Marker::new(&t.value_suffix)
        .first_core()
        .map(str::to_string);
    let mut out: Vec<Marker> = Vec::new();
    let mut candidates = vec![t.end.as_str(), call_end, section_end];
    if opens_the_values_element(t) {
        candidates.push(&t.name_prefix);
    }
    for m in candidates.into_iter().map(Marker::new) {
        let distinct = m.first_core().is_some_and(|core| {
            core.len() >= 3
                && core.starts_with(['<', '['])
                && own.as_deref().is_some_and(|own| own != core)
        });
        if distinct && !out.iter().any(|o| o.first_core() == m.first_core()) {
            out.push(m);
        }
    }
    out
}

/// Whether an argument opens the element its value's closer closes
/// (`<parameter=city>…</parameter>`, `<parameter name="city">…</parameter>`):
/// then a second opener before the closer starts the next argument, since
/// such an element never holds one of its own kind (`Paris\n<parameter=days>`
/// ends `Paris`, as vLLM's and SGLang's Qwen3-Coder readers do). A key and a
/// value in elements of their own (`<arg_key>…</arg_key><arg_value>…</arg_value>`)
/// say nothing of that kind: both engines read such a value to its closer.
fn opens_the_values_element(t: &TaggedArguments) -> bool {
    let opener = Marker::new(&t.name_prefix);
    let closer = Marker::new(&t.value_suffix);
    let (Some(opener), Some(closer)) = (opener.first_core(), closer.first_core()) else {
        return false;
    };
    let opened = element_name(opener.strip_prefix('<').unwrap_or(""));
    let closed = element_name(closer.strip_prefix("</").unwrap_or(""));
    opened.is_some() && opened == closed
}

/// The element name a tag's text starts with (`parameter` of `parameter=`,
/// `parameter name="`, `parameter>`).
fn element_name(tag: &str) -> Option<&str> {
    let end = tag.find([' ', '=', '>']).unwrap_or(tag.len());
    Some(&tag[..end]).filter(|name| !name.is_empty())
}

/// The value's closer from its first token on, before the arguments' end
/// or the call's; not a quote token its opener repeats (`<|"|>`), which
/// may open a value as well.
fn stray_value_closer(t: &TaggedArguments, call_end: &str) -> Option<StrayValueCloser> {
    let closer = Marker::new(&t.value_suffix).from_first_token()?;
    let opener = Marker::new(&t.value_prefix);
    if closer.first_core() == opener.first_core() {
        return None;
    }
    let before = [t.end.as_str(), call_end]
        .map(Marker::new)
        .into_iter()
        .find(|m| !m.is_blank())?;
    Some(StrayValueCloser { closer, before })
}

/// Only where the opener is an element of its own (`<arg_value>`; not the
/// rest of the key's tag, ` string="true">`, nor a quote that the closer
/// repeats, `<|"|>`).
fn unopened_value(t: &TaggedArguments) -> Option<UnopenedValue> {
    let closer = Marker::new(&t.value_suffix).first_core()?.to_string();
    let opener = Marker::element_opener(&t.value_prefix, &t.value_suffix)?;
    let others = [&t.name_prefix, &t.name_suffix, &t.end, &t.separator]
        .into_iter()
        .filter_map(|m| Marker::new(m).first_core().map(str::to_string));
    let stops = [closer, opener.clone()].into_iter().chain(others).collect();
    Some(UnopenedValue { opener, stops })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cores(markers: &[Marker]) -> Vec<&str> {
        markers.iter().filter_map(Marker::first_core).collect()
    }

    /// Qwen3-Coder's shape: an argument opens the element its value's
    /// closer closes, so the next opener ends an unclosed value too.
    #[test]
    fn an_unclosed_parameter_ends_at_the_closers_around_it_and_the_next_parameter() {
        let t = TaggedArguments {
            name_prefix: "<parameter=".into(),
            name_suffix: ">\n".into(),
            value_suffix: "\n</parameter>\n".into(),
            end: "".into(),
            raw_strings: true,
            ..Default::default()
        };
        let t = TaggedLayout::new(&t, "</function>\n</tool_call>", "");
        assert_eq!(
            cores(&t.unclosed_value_ends),
            ["</function>", "<parameter="]
        );
        assert_eq!(t.bare_value_stops, ["</function>"]);
        let stray = t.stray_value_closer.as_ref().expect("stray closer");
        assert_eq!(stray.closer.first_core(), Some("</parameter>"));
        assert_eq!(stray.before.first_core(), Some("</function>"));
        assert_eq!(t.unopened_value, None, "the value has no opener");
        assert_eq!(t.close_for("city"), "\n</parameter>\n");
    }

    /// GLM's shape: key and value in elements of their own.
    #[test]
    fn a_value_element_may_be_stray_or_unopened_but_never_ends_at_the_next_key() {
        let t = TaggedArguments {
            name_prefix: "<arg_key>".into(),
            name_suffix: "</arg_key>\n".into(),
            value_prefix: "<arg_value>".into(),
            value_suffix: "</arg_value>\n".into(),
            raw_strings: true,
            ..Default::default()
        };
        let t = TaggedLayout::new(&t, "</tool_call>", "");
        assert_eq!(cores(&t.unclosed_value_ends), ["</tool_call>"]);
        let stray = t.stray_value_closer.expect("stray closer");
        assert_eq!(stray.closer.first_core(), Some("</arg_value>"));
        assert_eq!(stray.before.first_core(), Some("</tool_call>"));
        let unopened = t.unopened_value.expect("unopened value");
        assert_eq!(unopened.opener, "<arg_value>");
        assert_eq!(
            unopened.stops,
            ["</arg_value>", "<arg_value>", "<arg_key>", "</arg_key>"]
        );
    }

    /// gemma-4's shape: bare typed values, quoted strings; the type word of
    /// a typed prefix, and a flag that is no type's name.
    #[test]
    fn a_notation_needs_bare_typed_values_and_a_typed_prefix_may_name_a_type() {
        let gemma = TaggedArguments {
            name_suffix: ":".into(),
            value_prefix: "<|\"|>".into(),
            typed_value_prefix: Some(String::new()),
            value_suffix: "<|\"|>".into(),
            separator: ",".into(),
            ..Default::default()
        };
        let notation = TaggedLayout::new(&gemma, "}", "")
            .notation
            .expect("notation");
        assert_eq!(
            (notation.quote_open.as_str(), notation.key_end.as_str()),
            ("<|\"|>", ":")
        );
        let typed = |string: &str, typed: &str| {
            let t = TaggedArguments {
                value_prefix: string.into(),
                typed_value_prefix: Some(typed.into()),
                ..Default::default()
            };
            TaggedLayout::new(&t, "", "").type_word.expect("a word")
        };
        let word = typed(" type=\"string\">", " type=\"number\">");
        assert_eq!(
            (word.before.as_str(), word.after.as_str(), word.flag),
            (" type=\"", "\">", false)
        );
        assert_eq!(word.written, ["number", "string"]);
        assert!(typed(" string=\"true\">", " string=\"false\">").flag);
    }
}
