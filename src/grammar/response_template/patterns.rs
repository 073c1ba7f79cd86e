//! Patterns of Python's `regex` for the markers and fixed text of the
//! output: a marker's cores exact (escaped as `re.escape` escapes), its
//! whitespace any (or none); JSON text with whitespace around its
//! punctuation; a call counter's digits any number.
//!
//! Invariants: every pattern here is valid for `regex` whatever its input
//! (every special character is escaped); pure functions, never panic.

/// `(?:MARKER)?` with the marker's leading space, or nothing for a blank one.
pub(super) fn optional(marker: &str) -> String {
    if is_blank(marker) {
        String::new()
    } else {
        format!("(?:{})?", flex(marker))
    }
}

/// A raw marker as a pattern: its text exact, its whitespace any (or none).
pub(super) fn flex(raw: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            if !space {
                out.push_str(r"\s*");
            }
            space = true;
            continue;
        }
        space = false;
        push_escaped(&mut out, c);
    }
    out
}

/// A call marker as a pattern, its numbers any number: a call counter the
/// template writes into the call's header (`index="1"`, then `index="2"`).
pub(super) fn flex_counted(raw: &str) -> String {
    let mut out = String::new();
    for (i, run) in raw.split(|c: char| c.is_ascii_digit()).enumerate() {
        if i > 0 && !out.ends_with(r"\d+") {
            out.push_str(r"\d+");
        }
        out.push_str(&flex(run));
    }
    out
}

/// A marker's text without its edge whitespace.
pub(super) fn core_flex(raw: &str) -> String {
    flex(raw.trim())
}

/// JSON text as a pattern: whitespace allowed around its punctuation.
pub(super) fn flex_json(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let space = c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']' | ':' | ',');
        if space && !out.ends_with(r"\s*") {
            out.push_str(r"\s*");
        }
        if !c.is_whitespace() {
            push_escaped(&mut out, c);
            if space {
                out.push_str(r"\s*");
            }
        }
    }
    out
}

pub(super) fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// The characters Python's `re.escape` escapes are escaped; every other
/// character stands for itself.
fn push_escaped(out: &mut String, c: char) {
    if "()[]{}?*+-|^$\\.&~# ".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// `pattern` without repeated `\s*` (where two flexible runs meet).
pub(super) fn tidy(pattern: String) -> String {
    let mut out = pattern;
    while out.contains(r"\s*\s*") {
        out = out.replace(r"\s*\s*", r"\s*");
    }
    out
}

/// A marker before a value as a pattern: its trailing whitespace exact and
/// optional, the rest as [`flex`] makes it.
pub(super) fn flex_open(raw: &str) -> String {
    let core = raw.trim_end();
    format!("{}{}", flex(core), optional_exact(&raw[core.len()..]))
}

/// Whitespace exactly as written, optional (`(?:\n)?`), or nothing.
pub(super) fn optional_exact(space: &str) -> String {
    let mut out = String::new();
    for c in space.chars() {
        match c {
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c => push_escaped(&mut out, c),
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("(?:{out})?")
    }
}

pub(super) fn is_blank(raw: &str) -> bool {
    raw.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_escape_markers_and_loosen_their_space() {
        assert_eq!(flex("<|im_end|>\n"), r"<\|im_end\|>\s*");
        assert_eq!(flex("\n</tool_call>"), r"\s*</tool_call>");
        assert_eq!(flex("<｜tool▁sep｜>"), "<｜tool▁sep｜>");
        assert_eq!(flex("[TOOL_CALLS]$.^"), r"\[TOOL_CALLS\]\$\.\^");
        assert_eq!(flex_json(r#"{"name": ""#), r#"\s*\{\s*"name"\s*:\s*""#);
        assert_eq!(
            flex_counted("\" index=\"12\"<|sep|>"),
            r#""\s*index="\d+"<\|sep\|>"#
        );
    }
}
