//! Function names and ids: the character sets names are made of, the
//! lookahead that accepts only the request's functions, and the slots
//! that read a name or an id between markers.
//!
//! Invariant: a name slot reads one line at most and never starts with
//! whitespace; with the request's names, the lookahead accepts those (also
//! in OpenAI's `functions.` namespace) and nothing else, whether the names
//! are written into the grammar or given to the compiled program as name
//! sets ([`NameSets`]).

use crate::parser::marker::Marker;
use crate::parser::tags::*;
use crate::parser::vocabulary::word_bytes;
use chat_autoparser_peg::{
    and, cap, choice, class, empty, lit, names, not, opt, plus, seq, until, ByteSet, Expr,
};

/// The request's names as the program's name sets (see
/// [`chat_autoparser_peg::names`]), so one compiled program serves every
/// request of a shape, whatever its tools are called:
/// - slot [`NameSets::WORD`]: each name a call must have, bare and in the
///   `functions.` namespace;
/// - slot [`NameSets::JSON`]: the same as JSON strings, the opening quote
///   included (the closing one is read after them, see [`name_in_set`]);
/// - slot [`NameSets::REQUESTED`]: each of the request's names, bare and
///   namespaced.
///
/// A name set reads the longest of its strings. Followed by a check that no
/// name character comes next, that accepts exactly what the ordered choice
/// of [`known_name_alternatives`] accepts when every name is made of name
/// characters (a longer match would run past a non-name character) and
/// none starts with the namespace (the choice reads the namespace first,
/// greedily); other names are written into the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameSets {
    /// The strings of each slot.
    pub sets: [Vec<String>; 3],
}

impl NameSets {
    pub const WORD: u8 = 0;
    pub const JSON: u8 = 1;
    pub const REQUESTED: u8 = 2;

    /// The sets for `checked` (the names a call must have; empty: any)
    /// among `all` (the request's), or `None` when a name cannot be read
    /// from a set (see the type's doc) or there are none.
    pub fn new(checked: &[String], all: &[String]) -> Option<NameSets> {
        if !NameSets::fit(checked, all) {
            return None;
        }
        let words = |names: &[String]| {
            let namespaced = names.iter().map(|n| format!("{NAMESPACE}{n}"));
            names.iter().cloned().chain(namespaced).collect()
        };
        // Without the closing quote, which `name_in_set` reads after an
        // optional call counter.
        let json = checked.iter().flat_map(|n| {
            let quoted = serde_json::to_string(n).unwrap_or_default();
            let open = &quoted[..quoted.len() - 1];
            [open.to_string(), format!("\"{NAMESPACE}{}", &open[1..])]
        });
        Some(NameSets {
            sets: [words(checked), json.collect(), words(all)],
        })
    }

    /// Whether the names can be read from sets (see the type's doc): every
    /// name is made of name characters and none starts with the namespace.
    pub(super) fn fit(checked: &[String], all: &[String]) -> bool {
        let name_chars = name_chars();
        let plain = |n: &String| {
            !n.is_empty() && !n.starts_with(NAMESPACE) && n.bytes().all(|b| name_chars.contains(b))
        };
        !all.is_empty() && all.iter().chain(checked).all(plain)
    }

    /// The sets as `Program::with_names` takes them.
    pub fn as_slices(&self) -> [&[String]; 3] {
        [&self.sets[0], &self.sets[1], &self.sets[2]]
    }
}

/// A name from name set `slot` where a name starts (not consuming), as a
/// word when `quoted` is false (no name character after it).
pub(super) fn name_in_set(slot: u8, quoted: bool) -> Expr {
    match quoted {
        true => seq([names(slot), json_name_end()]),
        false => seq([names(slot), not(class(name_chars()))]),
    }
}

/// The end of a JSON string naming a function: its closing quote, after
/// a call counter models trained on Kimi-style ids write
/// (`"functions.get_weather:0"`), which the decoder takes off.
fn json_name_end() -> Expr {
    seq([
        opt(seq([lit(":"), plus(class(ByteSet::range(b'0', b'9')))])),
        lit("\""),
    ])
}

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
                (
                    lit("\""),
                    seq([lit(&json[1..json.len() - 1]), json_name_end()]),
                )
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
    use chat_autoparser_peg::{any_char, star, Grammar};

    /// The name sets read what the names written in read (the lookahead
    /// `known_name_alternatives`), bare and quoted, whole and partial: every
    /// subset of a pool of plain names (prefixes of each other, `-`, `.`,
    /// non-ASCII), at every input of up to three pieces.
    #[test]
    fn name_sets_read_as_the_names_written_in() {
        let pool = ["a", "ab", "a-b", "a.b", "b", "获取", "x_1"];
        let pieces = [
            "a",
            "b",
            "-",
            ".",
            "(",
            "\"",
            "functions.",
            " ",
            "获取",
            "x_1",
            "\\",
            ":0",
        ];
        let mut inputs = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = inputs
                .iter()
                .flat_map(|i| pieces.iter().map(move |p| format!("{i}{p}")))
                .collect();
            inputs.extend(longer);
        }
        inputs.sort();
        inputs.dedup();
        let program = |e: Expr| Grammar::new(seq([e, star(any_char())])).compile().unwrap();
        let mut compared = 0;
        for mask in 1u32..(1 << pool.len()) {
            let names: Vec<String> = (0..pool.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| pool[i].to_string())
                .collect();
            let sets = NameSets::new(&names, &names).expect("plain names");
            for quoted in [false, true] {
                let written = program(and(known_name_alternatives(&names, quoted)));
                let slot = if quoted {
                    NameSets::JSON
                } else {
                    NameSets::WORD
                };
                let given = program(and(name_in_set(slot, quoted))).with_names(&sets.as_slices());
                for input in &inputs {
                    let input = match quoted {
                        true => format!("\"{input}"),
                        false => input.clone(),
                    };
                    let bytes = input.as_bytes();
                    let show = |r: Result<chat_autoparser_peg::Match, _>| r.is_ok();
                    assert_eq!(
                        show(written.parse(bytes)),
                        show(given.parse(bytes)),
                        "{names:?} {input:?}"
                    );
                    let partial = |p: &chat_autoparser_peg::Program| {
                        format!(
                            "{:?}",
                            p.parse_partial(bytes).map(|_| ()).map_err(|e| e.kind)
                        )
                    };
                    assert_eq!(
                        partial(&written),
                        partial(&given),
                        "{names:?} {input:?} partial"
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 100_000, "{compared}");
    }

    /// Names a set would read differently are written in: with whitespace,
    /// or starting with the namespace the choice reads first.
    #[test]
    fn names_a_set_cannot_read_are_written_in() {
        let sets = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            NameSets::new(&names, &names)
        };
        assert!(sets(&["get weather", "get"]).is_none());
        assert!(sets(&["functions.x"]).is_none());
        assert!(sets(&["get:weather"]).is_none());
        assert!(sets(&[]).is_none());
        let plain = sets(&["get_weather"]).unwrap();
        assert_eq!(
            plain.sets,
            [
                vec!["get_weather".to_string(), "functions.get_weather".into()],
                vec![
                    "\"get_weather".to_string(),
                    "\"functions.get_weather".into()
                ],
                vec!["get_weather".to_string(), "functions.get_weather".into()],
            ]
        );
    }

    #[test]
    fn identifiers_stop_at_parentheses() {
        let p = chat_autoparser_peg::Grammar::new(seq([cap(NAME, identifier()), lit("(")]))
            .compile()
            .unwrap();
        let m = p.parse(b"get_weather(").unwrap();
        assert_eq!(m.captures[0].span(), 0..11);
    }
}
