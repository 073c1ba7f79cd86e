//! What counts as a marker, and small facts about markers.
//!
//! A marker is a bracketed token a template uses as structure: `<think>`,
//! `</tool_call>`, `<|im_end|>`, `<｜tool▁sep｜>`, `<function=`...`>`,
//! `[TOOL_CALLS]`, `[/INST]`. Recognition is purely lexical (no list of known
//! markers): `<` + up to [`MAX_MARKER`] bytes without `<`, `>` or newline + `>`;
//! or `[` + letters, digits, `_ / | - ▁` and spaces + `]` (so JSON arrays such
//! as `["a", 1]` are never markers).
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
    let end = bytes.iter().skip(1).position(|&b| b == close || b == open || b == b'\n')? + 1;
    if bytes[end] != close || end == 1 {
        return None;
    }
    let inner = &rest[1..end];
    let ok = if open == b'<' {
        true
    } else {
        inner.chars().any(char::is_alphabetic)
            && inner.chars().all(|c| c.is_alphanumeric() || "_/|- ▁".contains(c))
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

/// The closing marker conventionally paired with an opening one:
/// `<x>` → `</x>`, `<|START_X|>` → `<|END_X|>`, `<|x|>` → `<|/x|>`, `[X]` → `[/X]`.
pub fn closing_for(open: &str) -> Option<String> {
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
        assert_eq!(tokens("a<think>b</think>[TOOL_CALLS][{\"x\": [1]}]<|im_end|>"), vec!["<think>", "</think>", "[TOOL_CALLS]", "<|im_end|>"]);
        assert_eq!(tokens("<｜tool▁sep｜>x<function=foo>"), vec!["<｜tool▁sep｜>", "<function=foo>"]);
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
    fn closing_markers_follow_conventions() {
        assert_eq!(closing_for("<think>").as_deref(), Some("</think>"));
        assert_eq!(closing_for("<|START_THINKING|>").as_deref(), Some("<|END_THINKING|>"));
        assert_eq!(closing_for("[THINK]").as_deref(), Some("[/THINK]"));
        assert_eq!(closing_for("</think>"), None);
    }
}
