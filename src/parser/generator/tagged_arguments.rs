//! Arguments written between markers (`<parameter=city>Paris</parameter>`,
//! `<arg_key>city</arg_key><arg_value>Paris</arg_value>`): a key, then a
//! string value or a typed one, each up to its closing marker.
//!
//! - A bare (non-string) value that opens `{` or `[` in a format with
//!   quoted strings is read to its matching bracket (see `nested`).
//! - In a format that writes objects and lists as nested elements, a value
//!   that starts with an element is read as text and whole elements when
//!   the argument's close follows (see `nested`).
//! - A value left unclosed ends at the arguments', the call's or the
//!   section's closer, which it never swallows, or where the next argument
//!   opens the element the value's closer closes
//!   ([`TaggedLayout::unclosed_value_ends`]).
//! - A value whose opening element the model left out is read to its
//!   closer ([`unopened_value`]); a value's closer where a call with no
//!   arguments opened none is a stray marker ([`stray_value_closer`]).
//!
//! What ends a value the model left unclosed or unopened, and which
//! closer is stray, is read off the arguments once, by the protocol
//! ([`TaggedLayout`]); this module compiles those readings, it decides none.
//!
//! Invariant: an argument is captured `ARG` (key and value tags inside)
//! and commits after its key, so its value streams.

use super::names::{identifier, space_set};
use super::nested::{elements_value, notation_rule_name};
use crate::parser::marker::Marker;
use crate::parser::tags::*;
use crate::parser::vocabulary::Vocabulary;
use crate::protocol::TaggedLayout;
use chat_autoparser_peg::{
    and, cap, choice, class, commit, cut, empty, fail, lit, not, opt, rule, seq, star, until, ws,
    Expr,
};

/// Marker-wrapped arguments, then the arguments' end marker.
pub(super) fn tagged_arguments(t: &TaggedLayout, call_end: &str) -> Expr {
    let end = Marker::new(&t.end);
    // Text where the arguments or the call end is no argument (`</invoke>`
    // after `<`; `}<end_function_call>` of a call with none).
    let not_end = |m: &Marker| match m.is_blank() {
        true => empty(),
        false => not(m.expr()),
    };
    let arg = seq([
        not_end(&end),
        not_end(&Marker::new(call_end)),
        tagged_argument(t),
    ]);
    let sep = Marker::new(&t.separator);
    let more = if sep.is_blank() {
        star(seq([ws(), arg.clone()]))
    } else {
        star(seq([sep.expr(), arg.clone()]))
    };
    let args = match stray_value_closer(t) {
        Some(stray) => choice([seq([arg, more]), stray]),
        None => seq([arg, more]),
    };
    seq([ws(), opt(args), ws(), end.expr()])
}

/// A value's closing token where a call with no arguments has opened no
/// value, right before the arguments' or the call's end
/// (`<tool_call>list_mailboxes</arg_value></tool_call>`, as GLM-family
/// models write for tools without parameters): it closes nothing, so it is
/// no part of the name or the arguments; captured `STRAY`, as the
/// template's own closers are where nothing is open (the decoder names it).
/// Without the end after it the call is not read (its text stays content),
/// so no marker is named as left out of text that is kept.
fn stray_value_closer(t: &TaggedLayout) -> Option<Expr> {
    let stray = t.stray_value_closer.as_ref()?;
    Some(seq([
        cap(STRAY, stray.closer.expr_exact_tail()),
        and(seq([ws(), stray.before.expr()])),
    ]))
}

/// One `name-prefix KEY name-suffix value` pair.
fn tagged_argument(t: &TaggedLayout) -> Expr {
    let name_suffix = Marker::new(&t.name_suffix);
    let key = match name_suffix.first_core() {
        Some(core) => until([core, "\n"]),
        None => identifier(),
    };
    let value_end = Marker::new(&t.value_suffix);
    let close = argument_close(t, &value_end);
    let string_value = string_value(t, &value_end, &close);
    cap(
        ARG,
        seq([
            Marker::new(&t.name_prefix).expr(),
            cap(ARG_KEY, seq([not(class(space_set())), key])),
            name_suffix.expr_exact_tail(),
            commit(),
            argument_value(t, &value_end, string_value, close),
        ]),
    )
}

/// What ends a value: its closing marker ([`value_close`]); or, for a
/// value whose closer never came, where its arguments or its call close
/// ([`TaggedLayout::unclosed_value_ends`]: those stay for the rules after
/// the value).
fn argument_close(t: &TaggedLayout, value_end: &Marker) -> Expr {
    let ends = &t.unclosed_value_ends;
    match ends.is_empty() {
        true => value_close(t, value_end),
        false => choice([
            value_close(t, value_end),
            and(choice(ends.iter().map(|m| seq([ws(), m.expr()])))),
        ]),
    }
}

/// A string value: escaped between the format's own brackets, nested
/// elements, or raw text up to its closing marker.
fn string_value(t: &TaggedLayout, value_end: &Marker, close: &Expr) -> Expr {
    let raw_value = || {
        let mut stops = value_end.delimiters();
        if !stops.is_empty() {
            // A newline before these is the line the closers sit on, not
            // the value's (`NYC\n</function>`): the template writes the
            // value's own closer there.
            for core in t.unclosed_value_ends.iter().filter_map(Marker::first_core) {
                stops.push(format!("\n{core}"));
                stops.push(core.to_string());
            }
        }
        let text = if stops.is_empty() {
            until([",", "}"])
        } else {
            until(stops)
        };
        cap(if t.raw_strings { ARG_STRING } else { ARG_JSON }, text)
    };
    let string_value = match &t.escaped_value {
        Some((open, close)) => choice([
            seq([
                lit(open),
                cut(),
                cap(ARG_STRING, until([close.as_str()])),
                lit(close),
            ]),
            raw_value(),
        ]),
        None => raw_value(),
    };
    match &t.elements {
        Some(e) => choice([elements_value(e, close), string_value]),
        None => string_value,
    }
}

/// The value after its key: a string value after the value's opening
/// marker, or, in a typed format, a typed value after its typed prefix.
fn argument_value(t: &TaggedLayout, value_end: &Marker, string_value: Expr, close: Expr) -> Expr {
    let value_start = Marker::new(&t.value_prefix);
    // Whitespace the template never writes between the key's marker and
    // the value's (`</arg_key>\n<arg_value>`, as GLM models write) is
    // scaffolding; with no value marker it would be the value's own.
    let value_start_expr = match value_start.is_blank() {
        true => value_start.expr_exact_tail(),
        false => seq([ws(), value_start.expr_exact_tail()]),
    };
    let unopened = unopened_value(t, value_end);
    let Some(typed) = &t.typed_value_prefix else {
        return match unopened {
            Some(unopened) => choice([seq([value_start_expr, string_value, close]), unopened]),
            None => seq([value_start_expr, string_value, close]),
        };
    };
    let typed_marker = Marker::new(typed);
    let typed_value = if typed_marker.is_blank() {
        bare_value(t, value_end)
    } else {
        cap(ARG_JSON, until(value_end.delimiters()))
    };
    let settle = if value_start.is_blank() {
        empty()
    } else {
        cut()
    };
    let mut options = vec![
        seq([value_start_expr, settle, string_value, close.clone()]),
        seq([typed_prefix(t, typed), typed_value, opt(close)]),
    ];
    options.extend(unopened);
    choice(options)
}

/// A value whose opening marker the model left out, its closing marker
/// written (`<arg_key>query</arg_key>vacation days</arg_value>`, as GLM
/// models write under load): the text up to that closer is the value, as
/// when the opener is there ([`TaggedLayout::unopened_value`]).
///
/// Only when the closer ends the text: text that holds any of the
/// arguments' markers first (the opener, a key's, the arguments' or the
/// call's end) is no such value, and the call stays malformed as before.
/// So the value is text the model wrote as one, byte for byte; no
/// scaffolding goes into it and nothing is dropped.
fn unopened_value(t: &TaggedLayout, value_end: &Marker) -> Option<Expr> {
    let unopened = t.unopened_value.as_ref()?;
    let tag = if t.raw_strings { ARG_STRING } else { ARG_JSON };
    // Checked whole before anything is captured: a value begun here and
    // then refused would stay in the call the recovery reads.
    let shape = seq([
        not(seq([ws(), lit(&unopened.opener)])),
        until(unopened.stops.iter()),
        value_close(t, value_end),
    ]);
    Some(seq([
        and(shape),
        cap(tag, until(unopened.stops.iter())),
        value_close(t, value_end),
    ]))
}

/// The prefix of a non-string value; its type word, when it has one
/// ([`TaggedLayout::type_word`]), may name any JSON Schema type
/// (`type="object"`). (The string prefix is tried first.)
///
/// When the two words the template writes are `true` and `false`, the
/// attribute is a flag (`string="false"`), not a type's name. Another word
/// (`string="maybe"`, `type="strnig"`) is text the model wrote, so the
/// value is read as a typed one and the whole attribute is kept as
/// content, with a diagnostic (`EXTRA`), never dropped.
fn typed_prefix(t: &TaggedLayout, typed: &str) -> Expr {
    let Some(words) = &t.type_word else {
        return Marker::new(typed).expr();
    };
    let (before, after) = (&words.before, &words.after);
    let with_word = |word: Expr| seq([Marker::new(before).expr(), word, Marker::new(after).expr()]);
    let known = match words.flag {
        true => Marker::new(typed).expr(),
        false => with_word(Vocabulary::type_word(&words.written)),
    };
    choice([known, cap(EXTRA, with_word(identifier()))])
}

/// A value with no marker before it: a nested object or list in the
/// arguments' notation, when one is complete and a stop follows it; else
/// text up to the next separator or closing marker.
///
/// The value's closing marker right before a stop (`n:3<|q|>}`,
/// `c:{a:1}<|q|>,`) closes nothing the model opened: it ends the value, as
/// the grammars allow it there (the caller reads it as the optional close).
fn bare_value(t: &TaggedLayout, close: &Marker) -> Expr {
    let bare_stops = &t.bare_value_stops;
    let stop = and(seq([ws(), choice(bare_stops.iter().map(lit))]));
    let closed_text = match close.first_core() {
        Some(core) => {
            let stops = bare_stops.iter().map(String::as_str).chain([core]);
            seq([
                cap(ARG_JSON, until(stops)),
                and(seq([close.expr(), stop.clone()])),
            ])
        }
        None => fail(),
    };
    let text = choice([closed_text, cap(ARG_JSON, until(bare_stops))]);
    let Some(notation) = &t.notation else {
        return text;
    };
    let stop = and(seq([opt(close.expr()), stop]));
    choice([
        seq([cap(ARG_NOTATION, rule(&notation_rule_name(notation))), stop]),
        text,
    ])
}

/// The marker after a value: `value_suffix`, and when the closing marker
/// names the argument (`</first>`), a name and the rest of that marker. The
/// grammar does not check the name against the opening one (a model that
/// mismatches them still meant to close the value); the decoder keeps a
/// name that differs as content (`CLOSE_NAME`).
fn value_close(t: &TaggedLayout, value_end: &Marker) -> Expr {
    let Some(after) = &t.named_close else {
        return value_end.expr_exact_head();
    };
    let after = Marker::new(after);
    // The name never holds the character its closing marker starts with:
    // a marker corrupted after it (`</city>]<]minimaXx[>[<days>`) must not
    // make the name run on over the next argument.
    let name = match after.first_core() {
        Some(core) => {
            let first = core.chars().next().map_or(core, |c| &core[..c.len_utf8()]);
            until([core, "\n", first])
        }
        None => identifier(),
    };
    seq([
        value_end.expr_exact_head(),
        not(class(space_set())),
        cap(CLOSE_NAME, name),
        after.expr(),
    ])
}
