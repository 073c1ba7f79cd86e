//! Marker text as grammar pieces: the template's whitespace is scaffolding.
//!
//! A raw marker such as `"\n<tool_call>\n"` becomes `ws "<tool_call>" ws`:
//! whitespace at either end, and any interior run holding a newline, turns
//! into the flexible `ws` rule; spaces between words (`to=functions.x <|c|>`)
//! stay literal because they are part of the marker.
//!
//! Invariants: the pieces match the raw marker itself; adjacent literals are
//! merged and adjacent `ws` collapse into one, so sequences built from many
//! markers stay small and are not needlessly ambiguous.

use super::gbnf::push_literal;

/// One element of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Flexible whitespace (`ws`).
    Ws,
    /// Exact text.
    Lit(String),
    /// A GBNF expression (rule reference, group).
    Expr(String),
}

impl Piece {
    /// About the length of its GBNF text (escapes aside).
    fn len(&self) -> usize {
        match self {
            Piece::Ws => 2,
            Piece::Lit(t) => t.len() + 2,
            Piece::Expr(e) => e.len(),
        }
    }
}

/// A sequence under construction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pieces(pub Vec<Piece>);

impl Pieces {
    pub fn new() -> Pieces {
        Pieces::default()
    }

    /// Appends flexible whitespace (collapsing with a previous `ws`).
    pub fn ws(&mut self) -> &mut Self {
        if self.0.last() != Some(&Piece::Ws) {
            self.0.push(Piece::Ws);
        }
        self
    }

    /// Appends exact text (merged with a previous literal).
    pub fn lit(&mut self, text: &str) -> &mut Self {
        if text.is_empty() {
            return self;
        }
        if let Some(Piece::Lit(prev)) = self.0.last_mut() {
            prev.push_str(text);
        } else {
            self.0.push(Piece::Lit(text.to_owned()));
        }
        self
    }

    /// Appends an expression.
    pub fn expr(&mut self, e: impl Into<String>) -> &mut Self {
        let e = e.into();
        if !e.is_empty() {
            self.0.push(Piece::Expr(e));
        }
        self
    }

    /// Appends a raw marker, its whitespace made flexible.
    pub fn marker(&mut self, raw: &str) -> &mut Self {
        for piece in split(raw) {
            match piece {
                Piece::Ws => self.ws(),
                Piece::Lit(t) => self.lit(&t),
                Piece::Expr(e) => self.expr(e),
            };
        }
        self
    }

    /// Appends `inner` as an optional group: `( inner )?`.
    pub fn optional(&mut self, inner: &Pieces) -> &mut Self {
        self.expr(format!("( {} )?", inner.render()))
    }

    /// Appends every piece of `other`.
    pub fn extend(&mut self, other: &Pieces) -> &mut Self {
        for p in &other.0 {
            match p {
                Piece::Ws => self.ws(),
                Piece::Lit(t) => self.lit(t),
                Piece::Expr(e) => self.expr(e.clone()),
            };
        }
        self
    }

    /// The GBNF sequence (`""` when empty).
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            return "\"\"".into();
        }
        let len: usize = self.0.iter().map(Piece::len).sum();
        let mut out = String::with_capacity(len + self.0.len());
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            match p {
                Piece::Ws => out.push_str("ws"),
                Piece::Lit(t) => push_literal(&mut out, t),
                Piece::Expr(e) => out.push_str(e),
            }
        }
        out
    }
}

/// Splits a raw marker into literal and whitespace pieces.
pub fn split(raw: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let ws_len = rest.len() - rest.trim_start().len();
        if ws_len > 0 {
            let run = &rest[..ws_len];
            let at_edge = ws_len == rest.len() || out.is_empty();
            if at_edge || run.contains('\n') {
                out.push(Piece::Ws);
            } else {
                push_lit(&mut out, run);
            }
            rest = &rest[ws_len..];
            continue;
        }
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        push_lit(&mut out, &rest[..word_len]);
        rest = &rest[word_len..];
    }
    out
}

fn push_lit(out: &mut Vec<Piece>, text: &str) {
    if let Some(Piece::Lit(prev)) = out.last_mut() {
        prev.push_str(text);
    } else {
        out.push(Piece::Lit(text.to_owned()));
    }
}

/// The first literal of a marker: where a grammar that starts at it begins.
pub fn first_word(raw: &str) -> Option<String> {
    split(raw).into_iter().find_map(|p| match p {
        Piece::Lit(t) => Some(t),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_and_newlines_are_flexible() {
        assert_eq!(
            Pieces::new().marker("\n<tool_call>\n").render(),
            r#"ws "<tool_call>" ws"#
        );
        assert_eq!(Pieces::new().marker("a b\n c").render(), r#""a b" ws "c""#);
        assert_eq!(
            Pieces::new().marker("x\n").marker("\ny").render(),
            r#""x" ws "y""#
        );
        assert_eq!(Pieces::new().marker("").render(), r#""""#);
        assert_eq!(first_word(" \n  functools[ "), Some("functools[".into()));
    }
}
