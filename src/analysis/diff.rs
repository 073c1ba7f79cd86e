//! Common prefix / suffix splitting that never cuts through a marker.
//!
//! Two renders that differ in one thing share a prefix and a suffix; what is
//! left in the middle is what the change produced. A byte-level split can land
//! inside a marker (`<tool_call>` vs `<tool_response>` share `<tool_`), so every
//! split point is moved outward to the nearest marker boundary: the shared part
//! only ever ends (or starts) between markers.
//!
//! Invariant: for `split(a, b)`, `prefix + a_mid + suffix == a` and
//! `prefix + b_mid + suffix == b`, and no split point is inside a marker span
//! of either string (as found by [`crate::markers::spans`]).

use crate::markers;

/// Two strings cut into shared prefix, the two differing middles, shared suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    pub prefix: &'a str,
    pub left: &'a str,
    pub right: &'a str,
    pub suffix: &'a str,
}

/// Splits `a` and `b` into common prefix, middles and common suffix.
pub fn split<'a>(a: &'a str, b: &'a str) -> Split<'a> {
    let p = common_prefix_len(&[a, b]);
    let s = common_suffix_len(&[&a[p..], &b[p..]]);
    let s = resnap_suffix(a, b, s);
    Split {
        prefix: &a[..p],
        left: &a[p..a.len() - s],
        right: &b[p..b.len() - s],
        suffix: &a[a.len() - s..],
    }
}

/// Length of the longest prefix shared by every string, moved back so that it
/// ends at a char boundary and outside any marker of any string.
pub fn common_prefix_len(strings: &[&str]) -> usize {
    let Some((first, rest)) = strings.split_first() else {
        return 0;
    };
    let mut len = first.len();
    for s in rest {
        len = len.min(raw_prefix_len(first, s));
    }
    loop {
        let snapped = strings.iter().fold(len, |l, s| markers::snap_back(s, l));
        if snapped == len {
            return len;
        }
        len = snapped;
    }
}

/// Length of the longest suffix shared by every string, moved forward (shorter)
/// so that it starts at a char boundary and outside any marker of any string.
pub fn common_suffix_len(strings: &[&str]) -> usize {
    let Some((first, rest)) = strings.split_first() else {
        return 0;
    };
    let mut len = first.len();
    for s in rest {
        len = len.min(raw_suffix_len(first, s));
    }
    loop {
        let snapped = strings
            .iter()
            .fold(len, |l, s| s.len() - markers::snap_forward(s, s.len() - l));
        if snapped == len {
            return len;
        }
        len = snapped;
    }
}

/// Re-snaps a suffix length against both full strings (the suffix was computed
/// on the tails after the prefix, so markers straddling the prefix are seen).
fn resnap_suffix(a: &str, b: &str, mut s: usize) -> usize {
    loop {
        let sa = a.len() - markers::snap_forward(a, a.len() - s);
        let sb = b.len() - markers::snap_forward(b, b.len() - s);
        let next = sa.min(sb);
        if next == s {
            return s;
        }
        s = next;
    }
}

fn raw_prefix_len(a: &str, b: &str) -> usize {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    floor_boundary(a, n)
}

fn raw_suffix_len(a: &str, b: &str) -> usize {
    let n = a
        .bytes()
        .rev()
        .zip(b.bytes().rev())
        .take_while(|(x, y)| x == y)
        .count();
    a.len() - ceil_boundary(a, a.len() - n)
}

impl Split<'_> {
    /// The middles with a marker the prefix ends in moved to their front,
    /// when both middles end in that same marker (an equally valid split).
    ///
    /// `<|channel|>` + `analysis..<|channel|>` / `` reads better, and parses
    /// the same, as `<|channel|>analysis..` / `<|channel|>`: a block should
    /// start with its marker, not end with the next block's. The same holds
    /// for a header's partial label the prefix ends in (` to=` of
    /// ` to=self<|message|>R<|eom|>... to=` / ``): the text after the
    /// prefix's last whitespace, that whitespace included, moves too.
    pub fn markers_first(&self) -> (String, String) {
        let (mut prefix, mut left, mut right) =
            (self.prefix, self.left.to_owned(), self.right.to_owned());
        while let Some(m) = markers::tokens(prefix)
            .last()
            .copied()
            .filter(|m| prefix.ends_with(m))
        {
            let movable = |s: &str| s.is_empty() || s.ends_with(m);
            if !(movable(&left) && movable(&right)) || (left.is_empty() && right.is_empty()) {
                break;
            }
            let rotate = |s: &str| {
                if s.is_empty() {
                    String::new()
                } else {
                    format!("{m}{}", &s[..s.len() - m.len()])
                }
            };
            left = rotate(&left);
            right = rotate(&right);
            prefix = &prefix[..prefix.len() - m.len()];
        }
        // A label is text, not a marker, and not whitespace alone.
        let label = prefix
            .rfind(char::is_whitespace)
            .map_or("", |at| &prefix[at..]);
        let is_label = !label.trim().is_empty() && markers::tokens(label).is_empty();
        let movable = |s: &str| s.is_empty() || s.ends_with(label);
        if !(is_label && movable(&left) && movable(&right)) || (left.is_empty() && right.is_empty())
        {
            return (left, right);
        }
        let rotate = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{label}{}", &s[..s.len() - label.len()])
            }
        };
        (rotate(&left), rotate(&right))
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_cuts_a_tag() {
        let sp = split("a<tool_call>x", "a<tool_response>y");
        assert_eq!(
            (sp.prefix, sp.left, sp.right, sp.suffix),
            ("a", "<tool_call>x", "<tool_response>y", "")
        );
    }

    #[test]
    fn never_cuts_a_special_token() {
        let sp = split(
            "<|im_start|>assistant\nXYZ<|im_end|>",
            "<|im_start|>assistant\n<think>R</think>XYZ<|im_end|>",
        );
        assert_eq!(sp.prefix, "<|im_start|>assistant\n");
        assert_eq!(sp.left, "");
        assert_eq!(sp.right, "<think>R</think>");
        assert_eq!(sp.suffix, "XYZ<|im_end|>");
    }

    #[test]
    fn suffix_does_not_start_inside_a_marker() {
        let sp = split("x</think>", "y<think>");
        assert_eq!(sp.suffix, "");
        let sp = split("a[TOOL_CALLS]", "b[/TOOL_CALLS]");
        assert_eq!(
            (sp.left, sp.right, sp.suffix),
            ("a[TOOL_CALLS]", "b[/TOOL_CALLS]", "")
        );
    }

    #[test]
    fn markers_move_to_the_front_of_middles() {
        let sp = split("<|c|>final<|m|>X", "<|c|>analysis<|m|>R<|c|>final<|m|>X");
        assert_eq!(sp.right, "analysis<|m|>R<|c|>");
        assert_eq!(
            sp.markers_first(),
            (String::new(), "<|c|>analysis<|m|>R".to_owned())
        );
    }

    #[test]
    fn a_partial_label_moves_with_its_header() {
        let sp = split(
            " to=user<|m|>X",
            " to=self<|m|>R<|eom|><|start|>a to=user<|m|>X",
        );
        assert_eq!(
            sp.markers_first(),
            (String::new(), " to=self<|m|>R<|eom|><|start|>a".to_owned())
        );
    }

    #[test]
    fn multibyte_characters_are_not_split() {
        let sp = split("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>");
        assert_eq!(sp.prefix, "");
        let sp = split("éa", "éb");
        assert_eq!((sp.prefix, sp.left, sp.right), ("é", "a", "b"));
    }
}
