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
//! is non-blank and the call's non-string values are bare (it is read off
//! the arguments once, as [`TaggedLayout::notation`](super::TaggedLayout::notation)).

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
