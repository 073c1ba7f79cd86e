//! Special tokens in GBNF: the markers a model samples as one special token
//! written in llama.cpp's token syntax (`<think>`), so the grammar holds the
//! marker to that token and a model cannot spell it with ordinary tokens
//! (which a parser given token ids reads as text: `OutputStream::push_tokens`).
//!
//! llama.cpp reads `<...>` in a grammar as the one token whose text it is
//! (`grammars/README.md`, "Tokens"; the grammar fails to load when the text
//! is not exactly one token of the model's vocabulary), so only texts that
//! open with `<`, close with `>` and hold no other `>` have the syntax;
//! others stay text, with a warning.
//!
//! This is a pass over a finished grammar: every string literal is split at
//! the listed tokens, each written as a token, the rest as literals
//! (grouped when a repetition follows). Character classes, rule names and
//! operators are copied unchanged.
//!
//! Invariants: with no usable token the output is the input, byte for
//! byte; the pass reads each byte once; a literal it cannot read (an
//! unclosed one: our printers write none) is copied unchanged.

use super::gbnf::push_literal;

/// `gbnf` with each of `tokens` written as a token wherever a literal holds
/// it, and a warning for each token without llama.cpp's token syntax.
pub fn name_tokens(gbnf: &str, tokens: &[String], warnings: &mut Vec<String>) -> String {
    let usable: Vec<&str> = tokens
        .iter()
        .filter(|t| {
            let ok = has_token_syntax(t);
            if !ok {
                warn(warnings, t);
            }
            ok
        })
        .map(String::as_str)
        .collect();
    if usable.is_empty() {
        return gbnf.to_string();
    }
    let mut out = String::with_capacity(gbnf.len());
    let mut rest = gbnf;
    while let Some(at) = rest.find(['"', '[', '#']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (len, literal) = match rest.as_bytes()[0] {
            b'"' => closed_len(rest, b'"').map_or((rest.len(), None), |n| (n, Some(n))),
            b'[' => (closed_len(rest, b']').unwrap_or(rest.len()), None),
            _ => (rest.find('\n').unwrap_or(rest.len()), None),
        };
        match literal.and_then(|n| unescape(&rest[1..n - 1])) {
            Some(text) => {
                let repeated = rest[len..].starts_with(['*', '+', '?', '{']);
                out.push_str(&split_literal(&text, &usable, repeated));
            }
            None => out.push_str(&rest[..len]),
        }
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// Whether llama.cpp's grammar parser reads `text` as a token by its text.
pub fn has_token_syntax(text: &str) -> bool {
    text.len() > 2
        && text.starts_with('<')
        && text.ends_with('>')
        && !text[..text.len() - 1].contains('>')
}

fn warn(warnings: &mut Vec<String>, token: &str) {
    let warning = format!("{token:?} has no GBNF token syntax (<...>); written as text");
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// `text` as GBNF: literals with the tokens among them, one group when
/// several pieces are followed by a repetition.
fn split_literal(text: &str, tokens: &[&str], repeated: bool) -> String {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some((at, token)) = first_token(rest, tokens) {
        if at > 0 {
            pieces.push(literal(&rest[..at]));
        }
        pieces.push(token.to_string());
        rest = &rest[at + token.len()..];
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(literal(rest));
    }
    match pieces.len() > 1 && repeated {
        true => format!("( {} )", pieces.join(" ")),
        false => pieces.join(" "),
    }
}

/// The first of `tokens` in `text`, and where; the longest of those that
/// start there (a token may be the head of another, `[TOOL_CALLS]` of
/// `[TOOL_CALLS][`, where texts need not end at `>`).
pub(super) fn first_token<'t>(text: &str, tokens: &[&'t str]) -> Option<(usize, &'t str)> {
    tokens
        .iter()
        .filter(|t| !t.is_empty())
        .filter_map(|t| text.find(t).map(|at| (at, *t)))
        .min_by_key(|(at, t)| (*at, std::cmp::Reverse(t.len())))
}

fn literal(text: &str) -> String {
    let mut out = String::new();
    push_literal(&mut out, text);
    out
}

/// The length of the literal (`"`) or class (`[`) `s` opens, up to its
/// first unescaped `close` included; `None` when it never closes.
fn closed_len(s: &str, close: u8) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate().skip(1) {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b) if b == close => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// A literal's text from its escaped body (the escapes `push_literal`
/// writes, and llama.cpp's `\u`/`\U`); `None` for one it does not know.
fn unescape(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let c = match chars.next()? {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            c @ ('\\' | '"' | '[' | ']') => c,
            x @ ('x' | 'u' | 'U') => {
                let digits = match x {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(digits).collect();
                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
            }
            _ => return None,
        };
        out.push(c);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(gbnf: &str, tokens: &[&str]) -> (String, Vec<String>) {
        let tokens: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
        let mut warnings = Vec::new();
        (name_tokens(gbnf, &tokens, &mut warnings), warnings)
    }

    #[test]
    fn a_marker_in_a_literal_becomes_its_token() {
        let gbnf = "root ::= \"<tool_call>\" ws \"{\\\"name\\\": \" x \"}</tool_call>\"\n";
        let (out, warnings) = named(gbnf, &["<tool_call>", "</tool_call>"]);
        assert_eq!(
            out,
            "root ::= <tool_call> ws \"{\\\"name\\\": \" x \"}\" </tool_call>\n"
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn classes_comments_and_other_literals_are_copied() {
        let gbnf = "a ::= [^<\"] \"<b\" # <think> here\nb ::= \"\\x01<think>\"*\n";
        let (out, _) = named(gbnf, &["<think>"]);
        assert_eq!(
            out,
            "a ::= [^<\"] \"<b\" # <think> here\nb ::= ( \"\\x01\" <think> )*\n"
        );
    }

    #[test]
    fn texts_without_token_syntax_stay_text_with_a_warning() {
        let gbnf = "root ::= \"[TOOL_CALLS]\"\n";
        let (out, warnings) = named(gbnf, &["[TOOL_CALLS]", "<a>b>"]);
        assert_eq!(out, gbnf);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn a_literal_that_is_a_token_is_the_token_alone() {
        let (out, _) = named("r ::= \"<|im_end|>\"?\n", &["<|im_end|>"]);
        assert_eq!(out, "r ::= <|im_end|>?\n");
    }
}
