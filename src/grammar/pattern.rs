//! A JSON Schema string `pattern` (and the string `format`s that are
//! patterns in disguise) as a GBNF expression for the string's body, the
//! text between its quotes as JSON writes it.
//!
//! The pattern is parsed by `regex-syntax` with ECMAScript's ASCII classes
//! (`\d` is `[0-9]`, `\w` is `[A-Za-z0-9_]`) and translated node by node:
//! literals, classes, repetitions, groups, alternations. A character the
//! pattern allows is written the way JSON writes it: `"` as `\"`, `\` as
//! `\\`, a newline as `\n`; other control characters are left out.
//!
//! Invariants: the expression never accepts a string body the pattern
//! rejects, except where it is looser on purpose: look-arounds other than
//! `^` / `$` are dropped, repetition bounds above [`MAX_BOUND`] (or past
//! [`MAX_COPIES`] copies, nested ones multiplied) become unbounded, and a
//! pattern anchored in some branches only is read as unanchored. A pattern that cannot be translated (syntax `regex-syntax`
//! does not read, a non-ASCII class) gives `None`, and the caller falls back
//! to any string with a warning. Never panics.

use regex_syntax::hir::{Class, Hir, HirKind, Look};
use regex_syntax::ParserBuilder;

use super::gbnf::{alt, literal, seq, MAX_BOUND};

/// Patterns longer than this are not translated (a grammar the size of the
/// pattern's expansion is not worth it).
const MAX_PATTERN: usize = 1000;

/// The string body `pattern` matches (JSON Schema: the pattern may match
/// anywhere in the string unless anchored), as a GBNF expression in which
/// `char` names one JSON string character; `None` when it cannot be
/// translated.
pub fn string_body(pattern: &str, char_rule: &str) -> Option<String> {
    if pattern.len() > MAX_PATTERN {
        return None;
    }
    let hir = ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    let body = expr(&hir, 1)?;
    let props = hir.properties();
    let any = format!("{char_rule}*");
    let before = (!props.look_set_prefix().contains(Look::Start)).then(|| any.clone());
    let after = (!props.look_set_suffix().contains(Look::End)).then_some(any);
    Some(seq(&[
        before.unwrap_or_default(),
        body,
        after.unwrap_or_default(),
    ]))
}

/// The pattern of a string `format`, for the formats with a fixed syntax
/// (RFC 3339 dates and times, UUIDs); `None` for the others.
pub fn format_pattern(format: &str) -> Option<&'static str> {
    Some(match format {
        "date" => r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$",
        "time" => {
            r"^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
        }
        "date-time" => concat!(
            r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]",
            r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
        ),
        "uuid" => r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        _ => return None,
    })
}

/// Copies of one node an engine may make, all repetitions counted: a
/// repetition nested deeper is written unbounded (`(a{64}){64}` is 4096
/// copies of `a` where llama.cpp expands bounded repetitions).
const MAX_COPIES: u32 = 4096;

/// One node, as a GBNF expression (`""` for what matches only the empty
/// string); `None` for a node that cannot be written. `copies`: how many
/// times the enclosing repetitions repeat it.
fn expr(hir: &Hir, copies: u32) -> Option<String> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Some("\"\"".into()),
        HirKind::Literal(lit) => Some(text(&String::from_utf8_lossy(&lit.0))),
        HirKind::Class(class) => class_expr(class),
        HirKind::Capture(cap) => expr(&cap.sub, copies),
        HirKind::Concat(parts) => {
            let parts: Option<Vec<String>> = parts.iter().map(|p| expr(p, copies)).collect();
            Some(seq(&parts?
                .into_iter()
                .filter(|p| p != "\"\"")
                .collect::<Vec<_>>()))
        }
        HirKind::Alternation(options) => {
            let options: Option<Vec<String>> = options.iter().map(|o| expr(o, copies)).collect();
            Some(alt(&options?))
        }
        HirKind::Repetition(rep) => {
            let fits = |n: u32| n <= MAX_BOUND as u32 && copies.saturating_mul(n) <= MAX_COPIES;
            let bounded = rep.max.filter(|&max| max >= rep.min && fits(max));
            // Past the bounds a repetition is written unbounded, and its
            // least count (which engines also copy out) at most 1.
            let min = match fits(rep.min) {
                true => rep.min,
                false => rep.min.min(1),
            };
            let sub = expr(
                &rep.sub,
                copies.saturating_mul(bounded.unwrap_or(min).max(1)),
            )?;
            let times = match bounded {
                Some(max) => match (min, max) {
                    (0, 1) => "?".to_string(),
                    (m, x) if m == x => format!("{{{m}}}"),
                    (m, x) => format!("{{{m},{x}}}"),
                },
                _ => match min {
                    0 => "*".to_string(),
                    1 => "+".to_string(),
                    m => format!("{{{m},}}"),
                },
            };
            Some(format!("( {sub} ){times}"))
        }
    }
}

/// Characters as JSON writes them inside a string, as a GBNF literal.
fn text(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_default();
    literal(&json[1..json.len() - 1])
}

/// A class of bytes (ASCII mode): its ASCII ranges as characters, and any
/// non-ASCII character when it holds bytes from 0x80 (`.` and negated
/// classes do). Unicode classes only come from non-ASCII syntax in the
/// pattern, which is not translated.
fn class_expr(class: &Class) -> Option<String> {
    let Class::Bytes(bytes) = class else {
        return None;
    };
    let mut ranges = Vec::new();
    let mut non_ascii = false;
    for r in bytes.ranges() {
        let (lo, hi) = (r.start(), r.end());
        if hi >= 0x80 {
            non_ascii = true;
        }
        if lo < 0x80 {
            ranges.push((char::from(lo), char::from(hi.min(0x7F))));
        }
    }
    if non_ascii {
        ranges.push(('\u{80}', char::MAX));
    }
    chars_expr(&ranges)
}

/// Characters in `ranges`, each written as JSON writes it.
fn chars_expr(ranges: &[(char, char)]) -> Option<String> {
    let mut plain = String::new();
    let mut escaped = Vec::new();
    let holds = |c: char| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
    for (c, json) in [
        ('"', "\\\""),
        ('\\', "\\\\"),
        ('\n', "\\n"),
        ('\r', "\\r"),
        ('\t', "\\t"),
    ] {
        if holds(c) {
            escaped.push(literal(json));
        }
    }
    for &(lo, hi) in ranges {
        // Control characters, `"`, `\` and DEL are written escaped (above)
        // or not at all.
        for (lo, hi) in split_out(
            lo,
            hi,
            &[
                ('\0', '\u{1F}'),
                ('"', '"'),
                ('\\', '\\'),
                ('\u{7F}', '\u{7F}'),
            ],
        ) {
            plain.push_str(&class_char(lo));
            if hi > lo {
                plain.push('-');
                plain.push_str(&class_char(hi));
            }
        }
    }
    let mut options = escaped;
    if !plain.is_empty() {
        options.insert(0, format!("[{plain}]"));
    }
    match options.is_empty() {
        true => None,
        false => Some(alt(&options)),
    }
}

/// `lo..=hi` without the ranges in `holes` (sorted, disjoint).
fn split_out(lo: char, hi: char, holes: &[(char, char)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut from = lo as u32;
    let hi = hi as u32;
    for &(a, b) in holes {
        let (a, b) = (a as u32, b as u32);
        if b < from || a > hi {
            continue;
        }
        if a > from {
            out.push((from, a - 1));
        }
        from = from.max(b + 1);
    }
    if from <= hi {
        out.push((from, hi));
    }
    out.into_iter()
        .filter_map(|(a, b)| Some((char::from_u32(a)?, char::from_u32(b)?)))
        .collect()
}

/// A character inside a GBNF class, escaped so any reader takes it.
fn class_char(c: char) -> String {
    match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' => c.to_string(),
        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
        c => format!("\\U{:08X}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_pattern_is_exact() {
        assert_eq!(string_body("^[a-c]+$", "char").unwrap(), "( [a-c] )+");
    }

    #[test]
    fn unanchored_pattern_allows_text_around() {
        assert_eq!(string_body("ab", "char").unwrap(), "char* \"ab\" char*");
    }

    #[test]
    fn quotes_and_backslashes_are_written_as_json_escapes() {
        let body = string_body(r#"^["\\]$"#, "char").unwrap();
        assert_eq!(body, r#"( "\\\"" | "\\\\" )"#);
        assert_eq!(string_body(r#"^a"b$"#, "char").unwrap(), r#""a\\\"b""#);
    }

    #[test]
    fn dot_takes_any_character_but_newline() {
        let body = string_body("^.$", "char").unwrap();
        assert!(body.contains("\\u0080-\\U0010FFFF"), "{body}");
        assert!(!body.contains("\"\\\\n\""), "{body}");
    }

    #[test]
    fn nested_repetitions_are_bounded_in_copies() {
        // 64 × 64 copies fit; the innermost level is written unbounded.
        assert_eq!(
            string_body("^((a{64}){64}){64}$", "char").unwrap(),
            r#"( ( ( "a" )+ ){64} ){64}"#
        );
        assert_eq!(string_body("^a{2,}$", "char").unwrap(), r#"( "a" ){2,}"#);
        assert_eq!(string_body("^a{100,}$", "char").unwrap(), r#"( "a" )+"#);
    }

    #[test]
    fn untranslatable_patterns_give_none() {
        assert_eq!(string_body("(?<=a)b", "char"), None);
        assert_eq!(string_body("[é]", "char"), None);
    }

    #[test]
    fn formats_with_a_syntax_are_patterns() {
        for f in ["date", "time", "date-time", "uuid"] {
            assert!(
                string_body(format_pattern(f).unwrap(), "char").is_some(),
                "{f}"
            );
        }
        assert_eq!(format_pattern("email"), None);
    }
}
