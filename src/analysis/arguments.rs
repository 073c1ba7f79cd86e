//! Tagged-argument markers (T5, T6, A1, A3).
//!
//! In `NAME X1 first X2 XXXX ...`, X1 is the name's suffix plus an argument's
//! name prefix, X2 the argument's name suffix plus value prefix. The zero-arg
//! render (`NAME Z`) shares only the name's suffix with X1; the two-arg render
//! shows what lies between two arguments (value suffix + separator + name
//! prefix); the integer-argument render shows whether non-string values get a
//! different prefix (typed attributes) or are quoted; the markup-value render
//! (A4) shows a wrapper such as CDATA around values holding `<`, `&`, newlines;
//! the render with the other argument name (A1) shows whether the closing
//! marker repeats the name (`<first>XXXX</first>`); the renders with an
//! object and a list value (A5) show whether those are written as nested
//! elements (`<second>XXXX</second>`, `<item>XXXX</item><item>YYYY</item>`).
//!
//! Invariant: every returned marker is text taken from a render.

use super::diff::common_prefix_len;
use super::model::{Elements, TaggedArguments};
use super::outputs::{Outputs, Variant};
use super::probe::{ARG, ARG2, MARKUP_VALUE, NAME, NUM_ARG, NUM_VALUE, VALUE, VALUE2};
use super::report::Report;
use crate::markers;

/// Reads the tagged-argument markers; returns the function name's suffix too.
pub fn tagged(
    outputs: &Outputs,
    lead: &str,
    one: &str,
    after_name: usize,
    report: &mut Report,
) -> (String, TaggedArguments) {
    let arg_at = one[after_name..]
        .find(ARG)
        .map_or(after_name, |i| after_name + i);
    let value_at = one[arg_at..].find(VALUE).map_or(arg_at, |i| arg_at + i);
    let x1 = &one[after_name..arg_at];
    let x2 = &one[arg_at + ARG.len()..value_at];
    let post = &one[value_at + VALUE.len()..];
    let variant = |v| outputs.ok(v).and_then(|t| t.strip_prefix(lead));

    // T5: the zero-argument render shares only the name's suffix with X1.
    let name_suffix_len = match variant(Variant::CallNoArgs).and_then(|z| after(z, NAME)) {
        Some(z) => {
            report.found(
                "T5",
                format!(
                    "after the name with no arguments: \"{}\"",
                    markers::visible(z)
                ),
            );
            common_prefix_len(&[x1, z])
        }
        None => {
            report.default_unsupported("T5", "the zero-argument call did not render");
            leading_markers_len(x1)
        }
    };
    let name_prefix = &x1[name_suffix_len..];

    // T6: between two arguments.
    let (value_suffix, separator) =
        match variant(Variant::CallTwoArgs).and_then(|t| between(t, VALUE, ARG2)) {
            Some(m) => {
                report.found(
                    "T6",
                    format!("between arguments: \"{}\"", markers::visible(m)),
                );
                let suffix_len = common_prefix_len(&[m, post]);
                let rest = &m[suffix_len..];
                let sep = rest.strip_suffix(name_prefix).unwrap_or(rest);
                (&m[..suffix_len], sep)
            }
            None => {
                report.default_unsupported("T6", "the two-argument call did not render");
                (leading_text(post), "")
            }
        };
    let (value_suffix, named_close) =
        read_arg_name(variant(Variant::CallArg2), outputs, value_suffix, report);

    // A3: integers may be written with a different prefix (a typed
    // attribute such as ` string="false"`): the name's suffix is what both
    // prefixes share, up to where an attribute starts.
    let number =
        variant(Variant::CallNumber).and_then(|t| between(t, NUM_ARG, &NUM_VALUE.to_string()));
    let ((name_suffix, value_prefix), typed_value_prefix) = match number {
        Some(x2n) if x2n != x2 => {
            report.found(
                "A3",
                format!(
                    "integers: \"{}\", strings: \"{}\"",
                    markers::visible(x2n),
                    markers::visible(x2)
                ),
            );
            let shared = attribute_boundary(x2, common_prefix_len(&[x2, x2n]));
            (x2.split_at(shared), Some(x2n[shared..].to_owned()))
        }
        Some(_) => {
            report.same("A3");
            let (name_suffix, value_prefix) = split_pair(x2);
            let bare = is_quote_marker(value_prefix, value_suffix).then(String::new);
            ((name_suffix, value_prefix), bare)
        }
        None => {
            report.default_unsupported("A3", "the integer-argument call did not render");
            (split_pair(x2), None)
        }
    };
    let escaped_value = escaped_value(variant(Variant::CallMarkup), x2, value_suffix, report);
    let elements = elements(outputs, lead, &one[..value_at], post, report);
    let python_values = elements.is_none() && python_object(outputs, lead, &one[..value_at], post);
    let tagged = TaggedArguments {
        name_prefix: name_prefix.to_owned(),
        name_suffix: name_suffix.to_owned(),
        value_prefix: value_prefix.to_owned(),
        typed_value_prefix,
        value_suffix: value_suffix.to_owned(),
        named_close: named_close.map(str::to_owned),
        separator: separator.to_owned(),
        end: String::new(),
        raw_strings: !(x2.ends_with('"') && value_suffix.starts_with('"')),
        escaped_value,
        elements,
        python_values,
    };
    (x1[..name_suffix_len].to_owned(), tagged)
}

/// A value wrapped in one marker on both sides (`<escape>V<escape>`) is
/// quoted by it, whatever the template prints inside: it writes numbers
/// quoted only because it prints every value with `{{ value }}`. Models of
/// such formats write non-string values bare (`count:3`, `{k:<escape>v<escape>}`),
/// as the formats whose templates type their values do (gemma-4's `<|"|>`),
/// so their non-string prefix is empty. A one-character quote (`"`) is not
/// taken for one: there the quoting may be the value's own.
fn is_quote_marker(value_prefix: &str, value_suffix: &str) -> bool {
    let marker = value_prefix.trim();
    marker.chars().count() > 1 && marker == value_suffix.trim()
}

/// Moves a shared-prefix length back to where an attribute starts (the last
/// space), so `" string="true">` / `" string="false">` share `"`.
fn attribute_boundary(text: &str, shared: usize) -> usize {
    text[..shared].rfind(' ').unwrap_or(shared)
}

/// A4: the wrapper (`<![CDATA[`...`]]>`) some templates put around values
/// holding `<`, `&` or a newline, when the value is still written verbatim.
fn escaped_value(
    render: Option<&str>,
    x2: &str,
    value_suffix: &str,
    report: &mut Report,
) -> Option<(String, String)> {
    let Some(render) = render else {
        report.default_unsupported("A4", "the markup-value call did not render");
        return None;
    };
    let Some(at) = render.find(MARKUP_VALUE) else {
        report.unsupported(
            "A4",
            "a value with markup characters is not written verbatim (escaped)",
        );
        return None;
    };
    let before = between(render, ARG, MARKUP_VALUE)?;
    let after = &render[at + MARKUP_VALUE.len()..];
    let prefix = before.strip_prefix(x2).unwrap_or(before);
    let suffix = after.find(value_suffix.trim()).map_or("", |i| &after[..i]);
    if prefix.is_empty() && suffix.trim().is_empty() {
        report.same("A4");
        return None;
    }
    report.found(
        "A4",
        format!(
            "values with markup wrapped in \"{}\" ... \"{}\"",
            markers::visible(prefix),
            markers::visible(suffix)
        ),
    );
    Some((prefix.to_owned(), suffix.to_owned()))
}

/// A5: the object `{second: XXXX}` and the list `[XXXX, YYYY]` in place of
/// the string value, between the same text as the string (`before`,
/// `after`). Nested elements are recorded; anything else (JSON or Python
/// text) is a value the parser reads as text.
fn elements(
    outputs: &Outputs,
    lead: &str,
    before: &str,
    after: &str,
    report: &mut Report,
) -> Option<Elements> {
    let inner = |v| {
        let text = outputs.get(v)?;
        Ok::<_, String>(
            text.strip_prefix(lead)
                .and_then(|t| t.strip_prefix(before))
                .and_then(|t| t.strip_suffix(after)),
        )
    };
    let (object, list) = match (inner(Variant::CallObject), inner(Variant::CallList)) {
        (Ok(o), Ok(l)) => (o, l),
        (Err(e), _) | (_, Err(e)) => {
            report.unsupported("A5", e);
            return None;
        }
    };
    let found = object
        .zip(list)
        .and_then(|(o, l)| Some((o, l, read_elements(o, l)?)));
    let Some((o, l, elements)) = found else {
        report.found("A5", "objects and lists written as text");
        return None;
    };
    let shown = format!("\"{}\", \"{}\"", markers::visible(o), markers::visible(l));
    report.found(
        "A5",
        format!("objects and lists written as nested elements: {shown}"),
    );
    Some(elements)
}

/// Whether the object value's render (between `before` and `after`) is
/// the Python literal `{'second': 'XXXX'}`, as `str()` prints it, where
/// `tojson` prints `{"second": "XXXX"}`.
fn python_object(outputs: &Outputs, lead: &str, before: &str, after: &str) -> bool {
    let inner = outputs.ok(Variant::CallObject).and_then(|t| {
        t.strip_prefix(lead)?
            .strip_prefix(before)?
            .strip_suffix(after)
    });
    inner.is_some_and(|o| o.trim() == format!("{{'{ARG2}': '{VALUE}'}}"))
}

/// `P second S XXXX C second D` (the object) and `P item S XXXX C item D`
/// then the same around `YYYY` (the list), with markup in P, S and C.
fn read_elements(object: &str, list: &str) -> Option<Elements> {
    let (open_prefix, rest) = object.split_once(ARG2)?;
    let (open_suffix, rest) = rest.split_once(VALUE)?;
    let (close_prefix, close_suffix) = rest.split_once(ARG2)?;
    let markup = [open_prefix, open_suffix, close_prefix]
        .iter()
        .all(|m| !m.trim().is_empty());
    if !markup || close_suffix.contains(ARG2) {
        return None;
    }
    let item = list.strip_prefix(open_prefix)?.split_once(open_suffix)?.0;
    let is_name = !item.is_empty()
        && item
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.:".contains(c));
    let element =
        |v: &str| format!("{open_prefix}{item}{open_suffix}{v}{close_prefix}{item}{close_suffix}");
    (is_name && list == format!("{}{}", element(VALUE), element(VALUE2))).then(|| Elements {
        open_prefix: open_prefix.to_owned(),
        open_suffix: open_suffix.to_owned(),
        close_prefix: close_prefix.to_owned(),
        close_suffix: close_suffix.to_owned(),
        item: item.to_owned(),
    })
}

/// The text after the first `needle`.
fn after<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.find(needle).map(|i| &text[i + needle.len()..])
}

/// The text between the first `a` and the next `b` after it.
fn between<'a>(text: &'a str, a: &str, b: &str) -> Option<&'a str> {
    let rest = after(text, a)?;
    rest.find(b).map(|i| &rest[..i])
}

/// Splits `</arg_key>\n<arg_value>` into the name's suffix and the value's
/// prefix at the last marker, when the text ends in a marker preceded by more.
fn split_pair(x2: &str) -> (&str, &str) {
    let last = markers::tokens(x2).last().copied();
    match last {
        Some(m)
            if x2.ends_with(m)
                && x2.len() > m.len()
                && !x2[..x2.len() - m.len()].trim().is_empty() =>
        {
            x2.split_at(x2.len() - m.len())
        }
        _ => (x2, ""),
    }
}

/// Length of the complete markers (and whitespace) at the start of `text`.
fn leading_markers_len(text: &str) -> usize {
    let mut i = 0;
    loop {
        let ws = text[i..].len() - text[i..].trim_start().len();
        match markers::marker_at(text, i + ws) {
            Some(r) => i = r.end,
            None => return i + ws,
        }
    }
}

/// The first marker (with surrounding whitespace) of `text`, or its first line.
fn leading_text(text: &str) -> &str {
    let n = leading_markers_len(text);
    if n > 0 {
        &text[..n]
    } else {
        text.split_inclusive('\n').next().unwrap_or("")
    }
}

/// A1: the argument name must be written verbatim. When the value's suffix
/// holds it too, and the render with the other argument name has that name
/// there instead, the closing marker names the argument (`</first>`): the
/// suffix is split around the name.
fn read_arg_name<'a>(
    renamed: Option<&str>,
    outputs: &Outputs,
    value_suffix: &'a str,
    report: &mut Report,
) -> (&'a str, Option<&'a str>) {
    let renamed = match (renamed, outputs.get(Variant::CallArg2)) {
        (Some(t), _) if t.contains(ARG2) => t,
        (_, Err(e)) => {
            report.unsupported("A1", e);
            return (value_suffix, None);
        }
        _ => {
            report.unsupported("A1", "argument name not written");
            return (value_suffix, None);
        }
    };
    if let Some(at) = value_suffix.find(ARG) {
        let (before, after_name) = (&value_suffix[..at], &value_suffix[at + ARG.len()..]);
        let renamed_close = format!("{before}{ARG2}{after_name}");
        if after(renamed, VALUE).is_some_and(|t| t.starts_with(&renamed_close)) {
            report.found(
                "A1",
                format!(
                    "argument name written verbatim, and again in the closing marker \"{}\"",
                    markers::visible(value_suffix)
                ),
            );
            return (before, Some(after_name));
        }
    }
    report.found("A1", "argument name written verbatim");
    (value_suffix, None)
}
