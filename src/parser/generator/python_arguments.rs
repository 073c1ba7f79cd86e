//! The arguments of a call written as Python (`name(city="Paris", days=3)`):
//! keyword arguments whose values are Python literals or bare words.
//!
//! Invariant: each value is committed to once its `=` is read, so a long
//! value streams and is never held back for a later alternative.

use super::names::{identifier, space_set};
use crate::parser::tags::*;
use chat_autoparser_peg::{
    and, cap, choice, class, commit, cut, lit, not, opt, plus, python, seq, star, ws, ByteSet, Expr,
};
use std::sync::LazyLock;

/// `name=value, ...)` of a Python call (the name's suffix `(` is in the head).
/// The comma between two arguments may be missing (`city="Paris"days=3`):
/// a template whose `first` flag is loop-scoped renders none, and the next
/// `name=` cannot be part of the value before it.
///
/// The same for every parser: built once per process (as
/// [`json_arguments`](super::json_call::json_arguments) is), each use a
/// reference count; the compiler reads a second use as the first.
pub(super) fn python_arguments() -> Expr {
    static ARGUMENTS: LazyLock<Expr> = LazyLock::new(|| {
        let arg = cap(
            ARG,
            seq([
                cap(ARG_KEY, identifier()),
                ws(),
                lit("="),
                commit(),
                ws(),
                cap(ARG_PYTHON, python_value()),
            ]),
        );
        seq([
            ws(),
            opt(seq([
                arg.clone(),
                star(seq([ws(), opt(lit(",")), ws(), arg])),
                ws(),
                opt(lit(",")),
            ])),
            ws(),
            lit(")"),
        ])
    });
    ARGUMENTS.clone()
}

/// A Python literal, or a bare word. A value that opens with a quote or a
/// bracket is a literal, committed to at once: trying a bare word after it
/// would make the engine keep all of a long value. A short literal (a
/// number, `True`, `None`) is one only when the word ends with it: `3pm`,
/// `2024-01-15`, `10:30` and `Trueish` are bare words.
fn python_value() -> Expr {
    choice([
        seq([and(class(ByteSet::of(b"'\"[{("))), cut(), python()]),
        seq([python(), not(class(word_part()))]),
        bare_word_value(),
    ])
}

/// A value written without quotes (`city=Paris`), as templates that print
/// values with `{{ v }}` render strings: it starts as a word or a number
/// does (literals are tried first) and runs to the next `,` or `)`, over
/// line ends (such a template prints a multi-line string as it is), less
/// the whitespace before that end. `to_json` rejects it, so it decodes as
/// a string.
fn bare_word_value() -> Expr {
    let space = space_set();
    let text = class(ByteSet::of(b",)").union(space).complement());
    seq([
        class(word_start()),
        star(text.clone()),
        star(seq([plus(class(space)), plus(text)])),
    ])
}

/// The bytes a bare word starts with: ASCII letters and digits, `_`, and
/// a number's sign or point.
fn word_start() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::range(b'0', b'9'))
        .union(ByteSet::of(b"_-+."))
}

/// The bytes that go on a word after a literal's end (`3` of `3pm`,
/// `2024` of `2024-01-15`): a word's, and `:` and `/`.
fn word_part() -> ByteSet {
    word_start().union(ByteSet::of(b":/"))
}
