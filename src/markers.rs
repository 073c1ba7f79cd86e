//! What counts as a marker, and small facts about markers.
//!
//! A marker is a bracketed token a template uses as structure: `<think>`,
//! `</tool_call>`, `<|im_end|>`, `<｜tool▁sep｜>`, `<function=`...`>`,
//! `[TOOL_CALLS]`, `[/INST]`. Recognition is purely lexical (no list of known
//! markers): `<` + up to `MAX_MARKER` (96) bytes without `<`, `>` or newline + `>`;
//! or `[` + letters, digits, `_ / | - ▁` and spaces + `]` (so JSON arrays such
//! as `["a", 1]` are never markers).
//!
//! A *compound* marker is two markers with a short label between them:
//! `<|channel|>final<|message|>`, `<|close|>think<|sep|>`. Channel and
//! header formats name their sections that way; the label (`final`, `think`)
//! says which section, the two markers say "header". Compounds are not
//! tokens: [`tokens`] and snapping stay single-marker, and callers ask for
//! compounds where a label may belong to a marker ([`compound_at`],
//! [`compound_ending`]).
//!
//! Invariant: snapping only ever moves a split point to a marker boundary or a
//! char boundary; it never moves it past the string's ends.

use std::ops::Range;

/// Longest bracketed run considered one marker.
const MAX_MARKER: usize = 96;

/// The marker span that strictly contains byte position `i` (start < i < end).
pub fn span_containing(s: &str, i: usize) -> Option<Range<usize>> {
    let bytes = s.as_bytes();
    let lo = i.saturating_sub(MAX_MARKER);
    let mut j = i;
    while j > lo {
        j -= 1;
        match bytes[j] {
            b'<' | b'[' => {
                let span = marker_at(s, j)?;
                return (span.end > i).then_some(span);
            }
            b'>' | b']' | b'\n' => return None,
            _ => {}
        }
    }
    None
}

/// The marker starting at byte `start`, if one does.
pub fn marker_at(s: &str, start: usize) -> Option<Range<usize>> {
    let rest = s.get(start..)?;
    let (open, close) = match rest.as_bytes().first()? {
        b'<' => (b'<', b'>'),
        b'[' => (b'[', b']'),
        _ => return None,
    };
    let limit = rest.len().min(MAX_MARKER + 2);
    let bytes = &rest.as_bytes()[..limit];
    let end = bytes
        .iter()
        .skip(1)
        .position(|&b| b == close || b == open || b == b'\n')?
        + 1;
    if bytes[end] != close || end == 1 {
        return None;
    }
    let inner = &rest[1..end];
    let ok = if open == b'<' {
        true
    } else {
        inner.chars().any(char::is_alphabetic)
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || "_/|- ▁".contains(c))
    };
    ok.then_some(start..start + end + 1)
}

/// Moves split point `i` back to the start of the marker containing it, and to
/// a char boundary.
pub fn snap_back(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    span_containing(s, i).map_or(i, |r| r.start)
}

/// Moves split point `i` forward to the end of the marker containing it, and to
/// a char boundary.
pub fn snap_forward(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    span_containing(s, i).map_or(i, |r| r.end)
}

/// The byte ranges of every marker in `s`, in order, non-overlapping.
pub fn spans(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match marker_at(s, i) {
            Some(r) => {
                i = r.end;
                out.push(r);
            }
            None => i += s[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    out
}

/// Every marker in `s`, in order, non-overlapping.
pub fn tokens(s: &str) -> Vec<&str> {
    spans(s).into_iter().map(|r| &s[r]).collect()
}

/// Longest label of a compound marker.
const MAX_LABEL: usize = 64;

/// Length of the label at the start of `s`: text on one line, without
/// brackets, that starts with neither whitespace nor a marker.
fn label_len(s: &str) -> usize {
    if s.starts_with(char::is_whitespace) {
        return 0;
    }
    let n = s.find(['<', '>', '[', ']', '\n', '\r']).unwrap_or(s.len());
    if n > MAX_LABEL {
        0
    } else {
        n
    }
}

/// The label naming an otherwise empty block, from the text between its
/// markers: `""` when that text is whitespace, the word when it is one word
/// right after the opener on a line of its own (`thought\n`), else `None`
/// (the block has content). A word the closer follows at once is a header's
/// label (`<|start_of_role|>user<|end_of_role|>`), not a block's.
pub fn block_label(between: &str) -> Option<&str> {
    let trimmed = between.trim_end();
    let n = label_len(trimmed);
    let own_line = n == 0 || between[n..].starts_with(['\n', '\r']);
    (n == trimmed.len() && own_line && !trimmed.contains(char::is_whitespace)).then_some(trimmed)
}

/// The compound marker (`marker label marker`) starting at byte `start`.
pub fn compound_at(s: &str, start: usize) -> Option<Range<usize>> {
    let first = marker_at(s, start)?;
    let label = label_len(&s[first.end..]);
    if label == 0 || s[first.end..first.end + label].ends_with(char::is_whitespace) {
        return None;
    }
    let second = marker_at(s, first.end + label)?;
    Some(start..second.end)
}

/// The compound marker `s` ends with, if any.
pub fn compound_ending(s: &str) -> Option<&str> {
    let spans = spans(s);
    let [.., a, b] = spans.as_slice() else {
        return None;
    };
    (b.end == s.len())
        .then(|| compound_at(s, a.start))
        .flatten()
        .filter(|r| r.end == s.len())
        .map(|r| &s[r])
}

/// The marker, compound or single, starting at byte `start`.
pub fn marker_or_compound_at(s: &str, start: usize) -> Option<Range<usize>> {
    compound_at(s, start).or_else(|| marker_at(s, start))
}

/// The label of a compound marker and its two markers: `("<|c|>", "final", "<|m|>")`.
pub fn compound_parts(compound: &str) -> Option<(&str, &str, &str)> {
    let r = compound_at(compound, 0).filter(|r| r.end == compound.len())?;
    let first = marker_at(compound, 0)?;
    let label = label_len(&compound[first.end..]);
    let second = first.end + label;
    Some((
        &compound[..first.end],
        &compound[first.end..second],
        &compound[second..r.end],
    ))
}

/// `close` closes the compound `open`: the same label and closing marker
/// after a different opening marker (`<|open|>think<|sep|>` →
/// `<|close|>think<|sep|>`).
pub fn compound_closes(open: &str, close: &str) -> bool {
    match (compound_parts(open), compound_parts(close)) {
        (Some((a, l, b)), Some((c, m, d))) => a != c && l == m && b == d,
        _ => false,
    }
}

/// The closing marker conventionally paired with an opening one:
/// `<x>` → `</x>`, `<|START_X|>` → `<|END_X|>`, `<|x|>` → `<|/x|>`, `[X]` → `[/X]`,
/// and the mirrored `<|x>` → `<x|>` (Gemma 4's `<|channel>` ... `<channel|>`).
pub fn closing_for(open: &str) -> Option<String> {
    if let Some(inner) = open.strip_prefix("<|").and_then(|s| s.strip_suffix('>')) {
        if !inner.ends_with('|') && !inner.is_empty() {
            return Some(format!("<{inner}|>"));
        }
    }
    if let Some(inner) = open.strip_prefix("<|").and_then(|s| s.strip_suffix("|>")) {
        return Some(match inner.strip_prefix("START_") {
            Some(rest) => format!("<|END_{rest}|>"),
            None => match inner.strip_prefix("start_") {
                Some(rest) => format!("<|end_{rest}|>"),
                None => format!("<|/{inner}|>"),
            },
        });
    }
    if let Some(inner) = open.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
        return (!inner.starts_with('/')).then(|| format!("</{inner}>"));
    }
    if let Some(inner) = open.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return (!inner.starts_with('/')).then(|| format!("[/{inner}]"));
    }
    None
}

/// `close` follows a tag convention strong enough to name a block the
/// template never closes: `</x>`, `<|END_X|>`, `[/X]`. The weaker `<|/x|>`
/// and `<x|>` closers are guesses that a role token (`<|CHATBOT_TOKEN|>`)
/// would fit as well.
pub fn is_tag_closer(close: &str) -> bool {
    (close.starts_with("</") && !close.starts_with("</|"))
        || close.starts_with("<|END_")
        || close.starts_with("[/")
}

/// A typed value's prefix around its type word, `(before, after)`, when it
/// differs from the string value's prefix `string` by that one word
/// (` type="number"<|sep|>` against ` type="string"<|sep|>`): the word
/// names the value's type.
pub fn typed_word<'t>(string: &str, typed: &'t str) -> Option<(&'t str, &'t str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let shared = string
        .char_indices()
        .zip(typed.chars())
        .find(|((_, a), b)| a != b)
        .map_or(0, |((i, _), _)| i);
    let start = typed[..shared].trim_end_matches(is_word).len();
    let rest = &typed[start..];
    let word_len = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
    let same_after = string
        .get(start..)
        .is_some_and(|s| s.trim_start_matches(is_word) == &rest[word_len..]);
    (word_len > 0 && same_after).then(|| (&typed[..start], &rest[word_len..]))
}

/// The raw text after the value of the tagged argument `key`:
/// `value_suffix`, or, when the closer repeats the argument's name
/// (`named_close`), `value_suffix`, the name and the text after it
/// (`</` `city` `>`).
pub fn value_close(value_suffix: &str, named_close: Option<&str>, key: &str) -> String {
    match named_close {
        Some(after) => format!("{value_suffix}{key}{after}"),
        None => value_suffix.to_string(),
    }
}

/// `s` with control characters escaped, for human-readable tables.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_markers_lexically() {
        assert_eq!(
            tokens("a<think>b</think>[TOOL_CALLS][{\"x\": [1]}]<|im_end|>"),
            vec!["<think>", "</think>", "[TOOL_CALLS]", "<|im_end|>"]
        );
        assert_eq!(
            tokens("<｜tool▁sep｜>x<function=foo>"),
            vec!["<｜tool▁sep｜>", "<function=foo>"]
        );
        assert!(tokens("a < b and c > d\n").len() == 1); // lexical: harmless for splitting
        assert!(tokens("[\"a\"]").is_empty());
    }

    #[test]
    fn snapping_moves_to_marker_edges() {
        let s = "ab<tool_call>cd";
        assert_eq!(snap_back(s, 6), 2);
        assert_eq!(snap_forward(s, 6), 13);
        assert_eq!(snap_back(s, 2), 2);
        assert_eq!(snap_forward(s, 13), 13);
    }

    #[test]
    fn compounds_are_marker_label_marker() {
        let s = "<|c|>final<|m|>X<|close|>think<|sep|>";
        assert_eq!(compound_at(s, 0), Some(0..15));
        assert_eq!(compound_ending(s), Some("<|close|>think<|sep|>"));
        assert_eq!(
            compound_parts("<|c|>final<|m|>"),
            Some(("<|c|>", "final", "<|m|>"))
        );
        assert!(compound_closes(
            "<|open|>think<|sep|>",
            "<|close|>think<|sep|>"
        ));
        assert!(!compound_closes(
            "<|open|>think<|sep|>",
            "<|close|>response<|sep|>"
        ));
        // A label starts with text and stays on its line.
        assert_eq!(compound_at("<a> x<b>", 0), None);
        assert_eq!(compound_at("<a>x\n<b>", 0), None);
        assert_eq!(compound_ending("</think>\n<b>"), None);
    }

    #[test]
    fn closing_markers_follow_conventions() {
        assert_eq!(closing_for("<think>").as_deref(), Some("</think>"));
        assert_eq!(
            closing_for("<|START_THINKING|>").as_deref(),
            Some("<|END_THINKING|>")
        );
        assert_eq!(closing_for("[THINK]").as_deref(), Some("[/THINK]"));
        assert_eq!(closing_for("</think>"), None);
        assert_eq!(closing_for("<|channel>").as_deref(), Some("<channel|>"));
        assert!(is_tag_closer("</think>") && is_tag_closer("<|END_THINKING|>"));
        assert!(!is_tag_closer("<|/CHATBOT_TOKEN|>") && !is_tag_closer("<channel|>"));
        assert_eq!(
            closing_for("<|im_start|>").as_deref(),
            Some("<|/im_start|>")
        );
    }

    #[test]
    fn empty_blocks_may_carry_a_label() {
        assert_eq!(block_label(" \n"), Some(""));
        assert_eq!(block_label("thought\n"), Some("thought"));
        assert_eq!(block_label("some thought\n"), None);
        assert_eq!(block_label("\nthought"), None);
        assert_eq!(block_label("assistant"), None);
    }
}
