//! Protocol markers as parsing expressions: cores exactly, the template's
//! whitespace flexibly (see `protocol::marker`). Where the text after a
//! marker is a raw value whose whitespace matters, only the template's exact
//! trailing whitespace may be skipped ([`Marker::expr_exact_tail`]).

use crate::protocol::marker::Piece;
use chat_autoparser_peg::{choice, eoi, lit, opt, seq, ws, Expr};

pub use crate::protocol::Marker;

impl Marker {
    /// Cores exactly, any whitespace around and between them, and after a
    /// marker that ends with a special token (`<tool_call>`, `[ARGS]`):
    /// models put a space or a newline after one where the template writes
    /// none (`<|function_call|> {...}`, `<tool_call>\nget_weather`).
    pub fn expr(&self) -> Expr {
        let pieces = self.pieces.iter().map(|p| match p {
            Piece::Core(c) => lit(c),
            Piece::Space(_) => ws(),
        });
        match self.ends_with_token() {
            true => seq(pieces.chain([ws()])),
            false => seq(pieces),
        }
    }

    /// A closer of several cores as a model may leave it: whole; its last
    /// cores from one that is a bracketed token on (`<|tool_call_end|>` of
    /// `]<|tool_call_end|>`: the bracket left out); or its first cores at
    /// the very end of the output (`]`: a stop string ate the rest). A
    /// closer of one core is [`Marker::expr`].
    pub fn closer_expr(&self) -> Expr {
        let cores: Vec<usize> = (0..self.pieces.len())
            .filter(|&i| matches!(self.pieces[i], Piece::Core(_)))
            .collect();
        if cores.len() < 2 {
            return self.expr();
        }
        let part = |pieces: &[Piece]| Marker {
            pieces: pieces.to_vec(),
        };
        let mut ways = vec![self.expr()];
        for &i in &cores[1..] {
            if matches!(&self.pieces[i], Piece::Core(c) if is_token(c)) {
                ways.push(part(&self.pieces[i..]).expr());
            }
        }
        for &j in cores[..cores.len() - 1].iter().rev() {
            ways.push(seq([part(&self.pieces[..=j]).expr(), ws(), eoi()]));
        }
        choice(ways)
    }

    /// The last piece is a core closed by a bracket (`>`, `]`).
    fn ends_with_token(&self) -> bool {
        matches!(self.pieces.last(), Some(Piece::Core(c)) if c.ends_with(['>', ']']))
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

/// A bracketed special token (`<|tool_call_end|>`, `</tool_call>`,
/// `[/TOOL_CALLS]`): distinctive enough to close by itself.
fn is_token(core: &str) -> bool {
    core.len() >= 3
        && ((core.starts_with('<') && core.ends_with('>'))
            || (core.starts_with('[') && core.ends_with(']')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_fence_is_its_own_core() {
        let m = Marker::new("\n]```\n");
        assert_eq!(m.first_core(), Some("]"));
        let program =
            chat_autoparser_peg::Grammar::new(seq([m.expr(), chat_autoparser_peg::eoi()]))
                .compile()
                .unwrap();
        for text in ["]```", "\n]\n```\n", "] ```"] {
            assert!(program.parse(text.as_bytes()).is_ok(), "{text:?}");
        }
    }
}
