//! The arguments of a call written as Python (`name(city="Paris", days=3)`):
//! keyword arguments whose values are Python literals or bare words.
//!
//! Invariant: each value is committed to once its `=` is read, so a long
//! value streams and is never held back for a later alternative.

use super::names::{identifier, space_set};
use crate::parser::tags::*;
use chat_autoparser_peg::{
    cap, choice, class, commit, cut, lit, not, opt, plus, python, seq, star, ws, ByteSet, Expr,
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

/// A Python literal, or a bare word. A value that cannot start a bare word
/// (a quote, a bracket, a digit) is a literal, committed to at once: trying
/// a bare word after it would make the engine keep all of a long value.
fn python_value() -> Expr {
    choice([
        seq([not(class(word_start())), cut(), python()]),
        python(),
        bare_word_value(),
    ])
}

/// A value written without quotes (`city=Paris`), as templates that print
/// values with `{{ v }}` render strings: it starts with a letter (numbers,
/// strings and containers are Python literals, tried first) and runs to the
/// next `,` or `)`, over line ends (such a template prints a multi-line
/// string as it is), less the whitespace before that end. `to_json`
/// rejects it, so it decodes as a string.
fn bare_word_value() -> Expr {
    let space = space_set();
    let text = class(ByteSet::of(b",)").union(space).complement());
    seq([
        class(word_start()),
        star(text.clone()),
        star(seq([plus(class(space)), plus(text)])),
    ])
}

/// The bytes a bare word starts with: ASCII letters and `_`.
fn word_start() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::of(b"_"))
}
