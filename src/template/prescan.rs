//! A cheap scan of the template text before compiling, bounding what the
//! compiler handles by native recursion or in proportion to tag count.
//!
//! minijinja's parser guards the nesting of brackets and statements, but a
//! chain of prefix operators (`not not ... x`, `- - ... 1`) recurses once per
//! operator while parsing, and a chain of binary or postfix operators
//! (`1+1+...+1`, `x.a.a...`, `x|f|f...`) builds a tree as deep as the chain
//! that code generation and dropping walk recursively: 100k `not`s or 30k
//! `+`s overflow the stack and abort the process. A million tags take seconds
//! and hundreds of megabytes to compile. Real templates stay far below both
//! bounds (the 70-template corpus: at most 28 operators in one tag, at most
//! 338 tags).
//!
//! Invariant: the scan reads the text of `rewrite` (the `~` rewrite after it
//! parses that text, and keeps each chain's depth: one filter node per `~`), skips string literals and comments the way its lexer
//! does, and over-counts rather than under-counts: every operator that can
//! add a level to an expression tree is counted, so a tag within
//! [`MAX_OPERATORS`] cannot build a tree deeper than that.

/// Operators (and postfix accesses) one tag may hold.
pub(crate) const MAX_OPERATORS: usize = 1_000;
/// Tags (`{{ }}`, `{% %}`) one template may hold.
pub(crate) const MAX_TAGS: usize = 50_000;

/// Why a text is refused, and the offset of the tag that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub message: String,
    pub offset: usize,
}

/// Checks `text` against [`MAX_OPERATORS`] and [`MAX_TAGS`].
pub(crate) fn check(text: &str) -> Result<(), Refusal> {
    let bytes = text.as_bytes();
    let mut tags = 0usize;
    let mut i = 0;
    while let Some(open) = next_opening(bytes, i) {
        if bytes[open + 1] == b'#' {
            i = find(bytes, open + 2, b"#}").map_or(bytes.len(), |c| c + 2);
            continue;
        }
        tags += 1;
        if tags > MAX_TAGS {
            return Err(Refusal {
                message: format!("template holds more than {MAX_TAGS} tags"),
                offset: open,
            });
        }
        let (end, operators) = scan_tag(bytes, open + 2);
        if operators > MAX_OPERATORS {
            let message =
                format!("expression too long: one tag holds more than {MAX_OPERATORS} operators");
            return Err(Refusal {
                message,
                offset: open,
            });
        }
        i = end;
    }
    Ok(())
}

/// The next `{{`, `{%` or `{#` at or after `from`.
fn next_opening(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at + 1 < bytes.len() {
        let brace = at + bytes[at..].iter().position(|&b| b == b'{')?;
        if matches!(bytes.get(brace + 1), Some(b'{' | b'%' | b'#')) {
            return Some(brace);
        }
        at = brace + 1;
    }
    None
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Scans one tag's code from `i` to its closing `}}` or `%}` (outside
/// strings); returns the offset past it and the operators counted.
fn scan_tag(bytes: &[u8], mut i: usize) -> (usize, usize) {
    let mut operators = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => i = skip_string(bytes, i + 1, quote),
            b'}' | b'%' if bytes.get(i + 1) == Some(&b'}') => return (i + 2, operators),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' | b'.' | b'[' | b'(' | b'<' | b'>'
            | b'=' | b'!' => {
                operators += 1;
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                if matches!(
                    &bytes[start..i],
                    b"not" | b"and" | b"or" | b"is" | b"if" | b"in"
                ) {
                    operators += 1;
                }
            }
            _ => i += 1,
        }
    }
    (bytes.len(), operators)
}

/// The offset past the string literal whose body starts at `i`.
fn skip_string(bytes: &[u8], mut i: usize, quote: u8) -> usize {
    while i < bytes.len() && bytes[i] != quote {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_operators_outside_strings() {
        assert_eq!(scan_tag(b" not a.b|c('+++') + 1 }}x", 0), (24, 5));
        assert_eq!(scan_tag(b" 'a %}' %}", 0), (10, 0));
        assert_eq!(scan_tag(b" x", 0), (2, 0));
    }

    #[test]
    fn refuses_long_chains_and_too_many_tags() {
        let chain = format!(
            "ok {{{{ x }}}}\n{{{{ {} }}}}",
            vec!["1"; MAX_OPERATORS + 2].join("+")
        );
        let refusal = check(&chain).unwrap_err();
        assert_eq!(refusal.offset, 11);
        assert!(check(&format!("{{{{ {} }}}}", vec!["1"; MAX_OPERATORS].join("+"))).is_ok());
        assert!(check(&"{{ 1 }}".repeat(MAX_TAGS)).is_ok());
        assert_eq!(
            check(&"{{ 1 }}".repeat(MAX_TAGS + 1)).unwrap_err().offset,
            7 * MAX_TAGS
        );
        // Comments and text are not tags.
        assert!(check(&"{# {{ #} { x } ".repeat(MAX_TAGS + 1)).is_ok());
    }
}
