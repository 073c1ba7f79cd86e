//! Protocol markers as parsing expressions: cores exactly, the template's
//! whitespace flexibly (see `protocol::marker`). Where the text after a
//! marker is a raw value whose whitespace matters, only the template's exact
//! trailing whitespace may be skipped ([`Marker::expr_exact_tail`]).

pub(crate) use crate::protocol::marker::is_token;
use crate::protocol::marker::Piece;
use chat_autoparser_peg::{choice, eoi, lit, opt, seq, ws, Expr};

pub use crate::protocol::Marker;

impl Marker {
    /// Cores exactly, any whitespace around and between them, and after a
    /// marker that ends with a special token (`<tool_call>`, `[ARGS]`) or
    /// opens a JSON list (`[`):
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
    /// the very end of the output (`]`: a stop string ate the rest).
    ///
    /// After its last core it takes only what the template writes there
    /// (or the start of it): any further whitespace is the text's that
    /// follows, so content after a call is the output's bytes. What may
    /// follow a closer inside its section (a separator, the section's
    /// closer) reads its own whitespace before it.
    pub fn closer_expr(&self) -> Expr {
        let cores: Vec<usize> = (0..self.pieces.len())
            .filter(|&i| matches!(self.pieces[i], Piece::Core(_)))
            .collect();
        let part = |pieces: &[Piece]| Marker {
            pieces: pieces.to_vec(),
        };
        if cores.len() < 2 {
            return self.expr_template_tail();
        }
        let mut ways = vec![self.expr_template_tail()];
        for &i in &cores[1..] {
            if matches!(&self.pieces[i], Piece::Core(c) if is_token(c)) {
                ways.push(part(&self.pieces[i..]).expr_template_tail());
            }
        }
        for &j in cores[..cores.len() - 1].iter().rev() {
            ways.push(seq([part(&self.pieces[..=j]).expr(), ws(), eoi()]));
        }
        choice(ways)
    }

    /// The marker after its first core (blank when that is its only one).
    pub fn after_first_core(&self) -> Marker {
        let first = self.pieces.iter().position(|p| matches!(p, Piece::Core(_)));
        let from = first.map_or(self.pieces.len(), |i| i + 1);
        Marker {
            pieces: self.pieces[from..].to_vec(),
        }
    }

    /// Like [`Marker::expr`], but after the last core only the template's
    /// whitespace there, or a start of it (`\n` of `\n\n`).
    fn expr_template_tail(&self) -> Expr {
        let n = self.pieces.len();
        seq(self.pieces.iter().enumerate().map(|(i, p)| match p {
            Piece::Core(c) => lit(c),
            Piece::Space(s) if i + 1 == n => opt(choice(
                (1..=s.len())
                    .rev()
                    .filter(|&k| s.is_char_boundary(k))
                    .map(|k| lit(&s[..k])),
            )),
            Piece::Space(_) => ws(),
        }))
    }

    /// The last piece is a core closed by a bracket (`>`, `]`), or one
    /// that opens a JSON list (`[` of `[TOOL_CALLS][`), inside which
    /// whitespace is JSON's.
    fn ends_with_token(&self) -> bool {
        matches!(self.pieces.last(), Some(Piece::Core(c)) if c.ends_with(['>', ']', '[']))
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
        let program =
            chat_autoparser_peg::Grammar::new(seq([m.expr(), chat_autoparser_peg::eoi()]))
                .compile()
                .unwrap();
        for text in ["]```", "\n]\n```\n", "] ```"] {
            assert!(program.parse(text.as_bytes()).is_ok(), "{text:?}");
        }
    }
}
