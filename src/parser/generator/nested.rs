//! Nested argument values: a recursive rule per notation that reads a
//! bracketed value (`{...}`, `[...]`) to its matching bracket, skipping
//! quoted strings; and a recursive rule per element notation that reads
//! text and whole elements (`<item>...</item>`), each closed at its own
//! depth.
//!
//! Invariant: the rules are named once per notation (`notation_rule_name`,
//! `elements_rule_name`) and added to the grammar by the conductor; values
//! refer to them by name.

use super::names::{identifier, space_set};
use crate::parser::marker::Marker;
use crate::parser::tags::*;
use crate::protocol::outline::Elements;
use crate::protocol::Notation;
use chat_autoparser_peg::{
    and, any_char, cap, choice, class, lit, not, rule, seq, star, until, ws, Expr,
};

pub(super) fn elements_rule_name(e: &Elements) -> String {
    format!("elements {}", e.open_prefix)
}

/// Text and whole elements (`open NAME open-suffix content close NAME
/// close-suffix`), up to a closing marker at this depth. The closing name is
/// not checked against the opening one here: nesting, not names, decides
/// which tag closes an element (the engine has no back-references);
/// `elements` reads a value with a mismatched pair as the text written. A
/// tag that opens no whole element is text.
pub(super) fn elements_rule(e: &Elements) -> Expr {
    let (open, open_end) = (Marker::new(&e.open_prefix), Marker::new(&e.open_suffix));
    let (close, close_end) = (Marker::new(&e.close_prefix), Marker::new(&e.close_suffix));
    let tag_name = |end: &Marker| match end.first_core() {
        Some(core) => seq([not(class(space_set())), until([core, "\n"])]),
        None => identifier(),
    };
    let element = seq([
        not(close.expr()),
        open.expr(),
        tag_name(&open_end),
        open_end.expr_exact_tail(),
        rule(&elements_rule_name(e)),
        close.expr_exact_head(),
        tag_name(&close_end),
        close_end.expr(),
    ]);
    let mut stops = open.delimiters();
    stops.extend(close.delimiters());
    let text = seq([not(close.expr()), any_char(), until(stops)]);
    star(choice([element, text]))
}

/// A value that starts with an element (or is empty), read as text and
/// whole elements when the argument's close follows it. Other values are
/// text up to the first closing marker, which streams as it arrives.
pub(super) fn elements_value(e: &Elements, close: &Expr) -> Expr {
    let opens = seq([
        ws(),
        not(Marker::new(&e.close_prefix).expr()),
        Marker::new(&e.open_prefix).expr(),
    ]);
    seq([
        and(choice([opens, close.clone()])),
        cap(ARG_ELEMENTS, rule(&elements_rule_name(e))),
        ws(),
        and(close.clone()),
    ])
}

pub(super) fn notation_rule_name(n: &Notation) -> String {
    format!("nested value {}", n.quote_open)
}

/// `{...}` or `[...]` up to the matching bracket; quoted strings may hold
/// brackets.
pub(super) fn notation_rule(n: &Notation) -> Expr {
    let open = n.quote_open.as_str();
    let quoted = seq([
        lit(open),
        until([n.quote_close.as_str()]),
        lit(&n.quote_close),
    ]);
    let structural = [open, "{", "}", "[", "]"];
    let text = seq([
        not(choice(structural.map(lit))),
        any_char(),
        until(structural),
    ]);
    let item = choice([quoted, rule(&notation_rule_name(n)), text]);
    choice([
        seq([lit("{"), star(item.clone()), lit("}")]),
        seq([lit("["), star(item), lit("]")]),
    ])
}
