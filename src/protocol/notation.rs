//! A template's own value notation, nested inside a non-string argument:
//! gemma-4 writes `{theme:<|"|>dark<|"|>,count:3}` and
//! `[<|"|>buy milk<|"|>,<|"|>walk dog<|"|>]` for an object and a list.
//!
//! The notation is the one the analysis learned for the call's own
//! arguments (`KEY:VALUE` pairs split by `,`, strings between the template's
//! quote markers, bare scalars), applied inside `{...}` and `[...]`. The
//! parser reads it (and turns it into JSON); the GBNF export writes it.
//!
//! Invariant: a notation exists only where every one of its four markers
//! is non-blank and the call's non-string values are bare.

use crate::analysis::TaggedArguments;

/// The markers of one notation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notation {
    /// Opens a string (`<|"|>`).
    pub quote_open: String,
    /// Closes a string.
    pub quote_close: String,
    /// Ends a key (`:`).
    pub key_end: String,
    /// Between two entries (`,`).
    pub separator: String,
}

impl Notation {
    /// The notation of tagged arguments whose non-string values are bare
    /// (no marker before them) and whose strings are quoted: only there can
    /// a value be a nested structure written in the same notation.
    pub fn of(t: &TaggedArguments) -> Option<Notation> {
        let bare = t
            .typed_value_prefix
            .as_deref()
            .is_some_and(|p| p.trim().is_empty());
        let (open, close) = (t.value_prefix.trim(), t.value_suffix.trim());
        let (key_end, separator) = (t.name_suffix.trim(), t.separator.trim());
        if !bare
            || open.is_empty()
            || close.is_empty()
            || key_end.is_empty()
            || separator.is_empty()
        {
            return None;
        }
        Some(Notation {
            quote_open: open.to_string(),
            quote_close: close.to_string(),
            key_end: key_end.to_string(),
            separator: separator.to_string(),
        })
    }
}
