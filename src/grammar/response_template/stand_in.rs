//! The stand-in call the tool-call field is read from: one tool named
//! [`NAME`] with one argument [`KEY`] of any type, and the pieces of a
//! call's fixed text. Read by `calls` (the call's pieces) and `arguments`
//! (the argument's key).
//!
//! Invariant: [`NAME`] and [`KEY`] are private-use characters, never in a
//! real name or key, so a piece holding one holds the stand-in.

use crate::protocol::IdShape;

/// Stands for the function name in the stand-in call; never in a name.
pub(super) const NAME: &str = "\u{E000}";
/// Stands for the argument's key in the stand-in call; never in a key.
pub(super) const KEY: &str = "\u{E001}";

/// A piece of a call's fixed text: a marker, JSON or punctuation text (the
/// name in it as [`NAME`]), an id.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece {
    Marker(String),
    Text(String),
    Id(IdShape),
}
