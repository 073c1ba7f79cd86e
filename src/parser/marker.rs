//! Raw markers from the analysis, as parsing expressions.
//!
//! The analysis keeps markers raw, with the template's own whitespace
//! (`"<tool_call>\n"`, `"\n</parameter>\n"`). Models are looser than
//! templates about that whitespace, so a marker is split into its *cores*
//! (runs of non-whitespace) and whitespace runs; cores must match exactly,
//! whitespace is matched flexibly. A markdown code fence (a run of
//! backticks) starts a core of its own. Where the text after a marker is a raw
//! value whose whitespace matters, only the template's exact trailing
//! whitespace may be skipped ([`Marker::expr_exact_tail`]).
//!
//! Invariant: a marker with no core (empty or whitespace only) never makes a
//! delimiter, so `until` never gets an empty delimiter.

use crate::peg::{lit, opt, seq, ws, Expr};

/// A raw marker split into cores and whitespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Core(String),
    Space(String),
}

impl Marker {
    /// Splits `raw` into cores and whitespace runs.
    pub fn new(raw: &str) -> Marker {
        let mut pieces: Vec<Piece> = Vec::new();
        for ch in raw.chars() {
            let space = ch.is_ascii_whitespace();
            if ch == '`' && matches!(pieces.last(), Some(Piece::Core(c)) if !c.ends_with('`')) {
                // A code fence is its own core: models write `]\n```` where
                // a template writes `]````.
                pieces.push(Piece::Space(String::new()));
            }
            match pieces.last_mut() {
                Some(Piece::Space(s)) if space => s.push(ch),
                Some(Piece::Core(s)) if !space => s.push(ch),
                _ if space => pieces.push(Piece::Space(ch.to_string())),
                _ => pieces.push(Piece::Core(ch.to_string())),
            }
        }
        Marker { pieces }
    }

    /// The marker has no non-whitespace text.
    pub fn is_blank(&self) -> bool {
        self.first_core().is_none()
    }

    /// The first core (what a text scan looks for to find the marker).
    pub fn first_core(&self) -> Option<&str> {
        self.pieces.iter().find_map(|p| match p {
            Piece::Core(c) => Some(c.as_str()),
            Piece::Space(_) => None,
        })
    }

    /// Delimiters that end raw text before this marker: the template's own
    /// leading whitespace plus the first core (so that whitespace is not part
    /// of the text), and the core alone.
    pub fn delimiters(&self) -> Vec<String> {
        let Some(core) = self.first_core() else { return Vec::new() };
        match self.pieces.first() {
            Some(Piece::Space(s)) => vec![format!("{s}{core}"), core.to_string()],
            _ => vec![core.to_string()],
        }
    }

    /// Cores exactly, any whitespace around and between them.
    pub fn expr(&self) -> Expr {
        seq(self.pieces.iter().map(|p| match p {
            Piece::Core(c) => lit(c),
            Piece::Space(_) => ws(),
        }))
    }

    /// Like [`Marker::expr`], but only the template's exact trailing
    /// whitespace (or none) may follow the last core: the text after it is
    /// raw and its own whitespace is data.
    pub fn expr_exact_tail(&self) -> Expr {
        let n = self.pieces.len();
        seq(self.pieces.iter().enumerate().map(|(i, p)| match p {
            Piece::Core(c) => lit(c),
            Piece::Space(s) if i + 1 == n => opt(lit(s)),
            Piece::Space(_) => ws(),
        }))
    }

    /// Only the template's exact leading whitespace (or none) before the
    /// first core: for a marker that ends raw text found by
    /// [`Marker::delimiters`].
    pub fn expr_exact_head(&self) -> Expr {
        seq(self.pieces.iter().enumerate().map(|(i, p)| match p {
            Piece::Core(c) => lit(c),
            Piece::Space(s) if i == 0 => opt(lit(s)),
            Piece::Space(_) => ws(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cores_and_space() {
        let m = Marker::new("\n</parameter>\n");
        assert_eq!(m.first_core(), Some("</parameter>"));
        assert_eq!(m.delimiters(), ["\n</parameter>", "</parameter>"]);
        assert!(Marker::new(" \n  ").is_blank());
        assert!(Marker::new("").delimiters().is_empty());
        assert_eq!(Marker::new("<tool_call>\n").delimiters(), ["<tool_call>"]);
    }

    #[test]
    fn a_code_fence_is_its_own_core() {
        let m = Marker::new("\n]```\n");
        assert_eq!(m.first_core(), Some("]"));
        let program = crate::peg::Grammar::new(seq([m.expr(), crate::peg::eoi()])).compile().unwrap();
        for text in ["]```", "\n]\n```\n", "] ```"] {
            assert!(program.parse(text.as_bytes()).is_ok(), "{text:?}");
        }
        assert_eq!(Marker::new("```json\n[").first_core(), Some("```json"));
    }
}
