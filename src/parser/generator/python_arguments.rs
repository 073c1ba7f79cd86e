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
/// number, `True`, `None`) is one only when the value ends with it, at the
/// next `,` or `)` or the next argument's `name=` (a comma left out):
/// `3pm`, `2024-01-15`, `10:30`, `50%`, `3 apples` and `Trueish` are bare
/// words.
fn python_value() -> Expr {
    let value_end = choice([
        class(ByteSet::of(b",)")),
        seq([identifier(), ws(), lit("=")]),
    ]);
    choice([
        seq([and(class(ByteSet::of(OPENS_A_LITERAL))), cut(), python()]),
        seq([
            python(),
            not(class(word_part())),
            and(seq([ws(), value_end])),
        ]),
        bare_word_value(),
    ])
}

/// The bytes a value that is a literal opens with: quotes and brackets.
const OPENS_A_LITERAL: &[u8] = b"'\"[{(";

/// A value written without quotes (`city=Paris`, `city=東京`), as
/// templates that print values with `{{ v }}` or `str()` render strings:
/// it starts with any byte but whitespace, `,`, `)` and what opens a
/// literal (literals are tried first) and runs to the next `,` or `)`, over
/// line ends (such a template prints a multi-line string as it is), less
/// the whitespace before that end. `to_json` rejects it, so it decodes as
/// a string.
fn bare_word_value() -> Expr {
    let space = space_set();
    let text = class(ByteSet::of(b",)").union(space).complement());
    let start = ByteSet::of(b",)")
        .union(space)
        .union(ByteSet::of(OPENS_A_LITERAL))
        .complement();
    seq([
        class(start),
        star(text.clone()),
        star(seq([plus(class(space)), plus(text)])),
    ])
}

/// The bytes that go on a word after a literal's end (`3` of `3pm`,
/// `2024` of `2024-01-15`): ASCII letters and digits, `_`, a number's sign
/// or point, `:` and `/`.
fn word_part() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::range(b'0', b'9'))
        .union(ByteSet::of(b"_-+.:/"))
}
