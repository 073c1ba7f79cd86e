//! The text lexemes of the Lark export, and markers as lexemes.
//!
//! llguidance's lexer is greedy with no backtracking: of two lexemes that
//! may start at one place, the longer match wins unless one is lazy, and a
//! lexeme that stays viable past the end of a shorter one's match makes
//! that shorter one lose. So:
//!
//! - text up to a marker is one *lazy* lexeme that ends with the marker's
//!   first core (`/(?s:.*)<tool_call>/`): it ends at the core's first
//!   occurrence, and the marker's rest follows it;
//! - free text and text at the start of a choice exclude what the
//!   structure around them begins with (after whitespace), so that they die
//!   where the structure begins;
//! - a marker where free text may begin too takes the whitespace before
//!   its first core into one lexeme with it, so that the core, not the
//!   whitespace, decides (a `WS` lexeme would lose to longer text).
//!
//! Invariant: every regex here matches the marker text it stands for,
//! cores exact and whitespace flexible (as `markers::split` reads them).

use super::super::markers::{split, Piece};
use super::writer::{regex_literal, Item, Seq, Writer};

/// A raw marker: cores exact, whitespace flexible.
pub(super) fn marker(raw: &str) -> Seq {
    let mut s = Seq::default();
    for piece in split(raw) {
        match piece {
            Piece::Ws => s.ws(),
            Piece::Lit(t) => s.lit(&t),
            Piece::Expr(e) => s.expr(e),
        };
    }
    s
}

/// The first core of a raw marker.
pub(super) fn first_core(raw: &str) -> Option<String> {
    split(raw).into_iter().find_map(|p| match p {
        Piece::Lit(t) => Some(t),
        _ => None,
    })
}

/// The marker after its first core (the whitespace before the core goes
/// with it).
pub(super) fn after_first_core(raw: &str) -> Seq {
    let s = marker(raw);
    let at =
        s.0.iter()
            .position(|i| matches!(i, Item::Lit(_)))
            .map_or(s.0.len(), |i| i + 1);
    Seq(s.0[at..].to_vec())
}

/// Free text not beginning with any of `exclude` (after whitespace).
pub(super) fn free_text(w: &mut Writer, exclude: &[String]) -> String {
    match excluded(exclude) {
        Some(ex) => w.terminal("TEXT", &format!("/(?s:.+)/ & ~/{ex}/")),
        None => w.terminal("TEXT", "/(?s:.+)/"),
    }
}

/// Any text (where nothing can end it but the end of output, or a special
/// token the lexer never mistakes for text).
pub(super) fn any(w: &mut Writer) -> String {
    w.terminal("ANY", "/(?s:.+)/")
}

/// Text that holds none of `stops`' first cores (text up to a stop, with
/// nothing after it: the stop never comes), and begins with no whitespace:
/// the whitespace before it is the grammar's, or this greedy lexeme would
/// take the start of a stop (`\n<tool_call` before a second call) and
/// leave the lexer stranded.
pub(super) fn without(w: &mut Writer, stops: &[String]) -> String {
    let cores: Vec<String> = stops
        .iter()
        .filter_map(|s| first_core(s))
        .map(|c| regex_literal(&c))
        .collect();
    match cores.is_empty() {
        true => any(w),
        false => w.terminal(
            "TEXT",
            &format!(
                "/[^ \\t\\r\\n](?s:.*)/ & ~/(?s:.*)({})(?s:.*)/",
                cores.join("|")
            ),
        ),
    }
}

/// Text up to and including `core`, not beginning with any of `exclude`:
/// one lazy lexeme, named after `hint`.
pub(super) fn until(w: &mut Writer, core: &str, exclude: &[String], hint: &str) -> String {
    let rx = format!("/(?s:.*){}/", regex_literal(core));
    match excluded(exclude) {
        Some(ex) => {
            let t = w.terminal(hint, &format!("{rx} & ~/{ex}/"));
            w.lazy(hint, &t)
        }
        None => w.lazy(hint, &rx),
    }
}

/// Text on one line up to and including `core` (a header's attributes):
/// one lazy lexeme.
pub(super) fn line_until(w: &mut Writer, core: &str) -> String {
    w.lazy("attributes", &format!("/[^\\n]*{}/", regex_literal(core)))
}

/// A marker core with the whitespace before it, as one lexeme.
pub(super) fn folded(w: &mut Writer, core: &str) -> String {
    w.terminal("OPEN", &format!("/[ \\t\\r\\n]*{}/", regex_literal(core)))
}

/// `open`, text up to `close`'s first core, the rest of `close`: a string
/// in a template's value notation.
pub(super) fn quoted_text(w: &mut Writer, open: &str, close: &str) -> String {
    let mut s = marker(open);
    match first_core(close) {
        Some(core) if !w.special(&core) => {
            s.expr(until(w, &core, &[], "nt_text_until"));
            s.extend(after_first_core(close));
        }
        _ => {
            s.expr(format!("{}?", any(w)));
            s.extend(marker(close));
        }
    }
    s.render(w)
}

/// The regex of texts beginning with one of `exclude` (after whitespace).
fn excluded(exclude: &[String]) -> Option<String> {
    let exclude: Vec<&String> = exclude.iter().filter(|e| !e.is_empty()).collect();
    if exclude.is_empty() {
        return None;
    }
    let alts: Vec<String> = exclude.iter().map(|e| regex_literal(e)).collect();
    Some(format!("[ \\t\\r\\n]*({})(?s:.*)", alts.join("|")))
}
