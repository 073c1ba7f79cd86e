//! Protocol markers as parsing expressions: cores exactly, the template's
//! whitespace flexibly (see `protocol::marker`). Where the text after a
//! marker is a raw value whose whitespace matters, only the template's exact
//! trailing whitespace may be skipped ([`Marker::expr_exact_tail`]).

use crate::peg::{lit, opt, seq, ws, Expr};
use crate::protocol::marker::Piece;

pub use crate::protocol::Marker;

impl Marker {
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
    fn a_code_fence_is_its_own_core() {
        let m = Marker::new("\n]```\n");
        assert_eq!(m.first_core(), Some("]"));
        let program = crate::peg::Grammar::new(seq([m.expr(), crate::peg::eoi()])).compile().unwrap();
        for text in ["]```", "\n]\n```\n", "] ```"] {
            assert!(program.parse(text.as_bytes()).is_ok(), "{text:?}");
        }
    }
}
