//! Function names and ids: the character sets names are made of, the
//! lookahead that accepts only the request's functions, and the slots
//! that read a name or an id between markers.
//!
//! Invariant: a name slot reads one line at most and never starts with
//! whitespace; with the request's names, the lookahead accepts those (also
//! in OpenAI's `functions.` namespace) and nothing else.

use crate::parser::marker::Marker;
use crate::parser::tags::*;
use crate::parser::vocabulary::word_bytes;
use chat_autoparser_peg::{
    and, cap, choice, class, empty, lit, not, opt, plus, seq, until, ByteSet, Expr,
};

/// A function name between markers: up to the end marker's first core, on
/// one line; a bare identifier when the end marker is blank.
pub(super) fn tagged_name(end: &Marker, more_stops: &[String]) -> Expr {
    match end.first_core() {
        Some(core) => {
            let mut stops = vec![core.to_string(), "\n".to_string()];
            stops.extend(more_stops.iter().cloned());
            seq([not(class(space_set())), until(stops)])
        }
        None => identifier(),
    }
}

pub(super) fn identifier() -> Expr {
    plus(class(name_chars()))
}

pub(super) fn space_set() -> ByteSet {
    ByteSet::of(b" \t\r\n")
}

/// Matches (without consuming) one of `names` where a function name starts:
/// as a JSON string when `quoted`, else as a word not followed by another
/// name character. Longest names first, so a name that is a prefix of
/// another does not hide it. With no names (no tools, or `unknown_tool:
/// call`): any name that starts as one does. With names,
/// a call of a function the request does not have fails
/// before it commits, and its text stays content, verbatim: a server could
/// not dispatch it.
pub(super) fn known_name(names: &[String], quoted: bool) -> Expr {
    if names.is_empty() {
        // Any name, but a name: it starts with a letter, a digit, `_` or a
        // non-ASCII character, never with punctuation (`[`, `{`).
        let start = class(word_bytes());
        return and(match quoted {
            true => seq([lit("\""), start]),
            false => start,
        });
    }
    and(known_name_alternatives(names, quoted))
}

/// The names in `names` that hold whitespace, as literals, longest first:
/// a name slot stops at whitespace (it ends most names), but a request may
/// declare `get current temperature`, and its model writes it so.
pub(super) fn spaced_names(names: &[String]) -> Expr {
    let mut spaced: Vec<&String> = names
        .iter()
        .filter(|n| n.contains(char::is_whitespace))
        .collect();
    spaced.sort_by_key(|n| std::cmp::Reverse(n.len()));
    match spaced.is_empty() {
        true => chat_autoparser_peg::fail(),
        false => choice(spaced.into_iter().map(lit)),
    }
}

/// One of `names` where a name starts (see [`known_name`]).
pub(super) fn known_name_alternatives(names: &[String], quoted: bool) -> Expr {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_by_key(|n| std::cmp::Reverse(n.len()));
    // Also in OpenAI's namespace (`functions.get_weather`): the decoder
    // reads that as the request's function.
    let word = |n: &String| {
        let (open, rest) = match quoted {
            true => {
                let json = serde_json::to_string(n).unwrap_or_default();
                (lit("\""), lit(&json[1..]))
            }
            false => (empty(), seq([lit(n), not(class(name_chars()))])),
        };
        seq([open, opt(lit(NAMESPACE)), rest])
    };
    choice(sorted.into_iter().map(word))
}

/// OpenAI's namespace of function names, which models write before a
/// name where their template writes none.
pub const NAMESPACE: &str = "functions.";

/// Characters of a function name (or a keyword argument's): ASCII word
/// characters, `-` and `.`, and every non-ASCII character (the bytes of its
/// UTF-8 form), since a request may declare `获取天气` and a Python
/// identifier may be `城市`.
fn name_chars() -> ByteSet {
    word_bytes().union(ByteSet::of(b"-."))
}

/// `prefix NAME separator N`, all of it the id (see `IdSlot::Counted`).
pub(super) fn counted_name(prefix: Expr, separator: &str, stops: &[String]) -> Expr {
    let digits = plus(class(ByteSet::range(b'0', b'9')));
    let name = cap(NAME, tagged_name(&Marker::new(separator), stops));
    // The counter is left out too (`functions.get_weather`): the id is
    // what was written.
    cap(ID, seq([prefix, name, opt(seq([lit(separator), digits]))]))
}

/// A name's prefix that is a namespace (`functions.`): a word and a dot.
pub(super) fn is_namespace(prefix: &str) -> bool {
    let word = prefix.trim().strip_suffix('.').unwrap_or_default();
    !word.is_empty() && word.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The marker starts with a special token (`<|tool_call_argument_begin|>`).
pub(super) fn starts_with_token(marker: &str) -> bool {
    Marker::new(marker)
        .first_core()
        .is_some_and(|c| crate::markers::marker_at(c, 0).is_some())
}

/// An id between markers.
pub(super) fn tagged_id(prefix: &str, suffix: &str) -> Expr {
    let end = Marker::new(suffix);
    let text = match end.first_core() {
        Some(core) => until([core, "\n"]),
        None => plus(class(space_set().complement())),
    };
    seq([Marker::new(prefix).expr(), cap(ID, text), end.expr()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_stop_at_parentheses() {
        let p = chat_autoparser_peg::Grammar::new(seq([cap(NAME, identifier()), lit("(")]))
            .compile()
            .unwrap();
        let m = p.parse(b"get_weather(").unwrap();
        assert_eq!(m.captures[0].span(), 0..11);
    }
}
