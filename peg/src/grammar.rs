//! Grammar expressions and the builder that makes them.
//!
//! A grammar is an [`Expr`] tree (the start expression) plus named rules that
//! expressions may refer to with [`rule`] (rules may recurse). Expressions are
//! plain data: build them with the free functions of this module ([`lit`],
//! [`seq`], [`choice`], [`until`], [`cap`]...) or the chaining methods on
//! [`Expr`], then [`Grammar::compile`] them into a
//! [`super::Program`].
//!
//! PEG semantics: a sequence matches its parts in order; an ordered choice
//! takes the first alternative that matches and never tries the others after
//! one succeeded; repetition is greedy and possessive; lookaheads consume
//! nothing. Three additions serve streaming (see the module docs of
//! [`peg`](super)):
//!
//! - [`cut`] commits to the current alternative of the innermost enclosing
//!   choice, option or repetition step: if what follows fails, that construct
//!   fails instead of trying its next alternative (no-op where the construct
//!   has no alternative left, e.g. in the last alternative of a choice);
//! - [`commit`] drops every pending alternative, up to the innermost enclosing
//!   lookahead: from here on nothing before it can be re-parsed, which is what
//!   lets a streaming caller receive the text that follows at once;
//! - [`until`], [`literals`], [`json`] and [`python`] are single instructions
//!   that know about partial input (see their docs).
//!
//! Invariant: an `Expr` describes the language only; limits (nesting depth)
//! live on the [`Grammar`].
//!
//! Sub-expressions, literals and literal sets are shared (`Arc`), never
//! copied: cloning an expression to use it in several places costs a
//! reference count, and the compiled program keeps the grammar's literal
//! bytes without copying them.

use std::sync::{Arc, LazyLock};

use super::bytes::ByteSet;
use super::capture::Tag;
use super::json::{JsonKind, DEFAULT_MAX_DEPTH};

/// A grammar expression. Build with the functions of this module.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Matches the empty string.
    Empty,
    /// Never matches.
    Fail,
    /// A byte string.
    Lit(Arc<[u8]>),
    /// The longest of several byte strings (a tool name among the tools).
    Literals(Arc<[Box<[u8]>]>),
    /// The longest string of the program's name set `slot`, given to the
    /// compiled program rather than to the grammar (see [`names`]).
    Names(u8),
    /// One byte in a set.
    Class(ByteSet),
    /// One UTF-8 character (or one byte that starts no valid character).
    AnyChar,
    /// Everything up to the first occurrence of a delimiter, or to the end.
    Until(Arc<[Box<[u8]>]>),
    /// Everything up to the end of the input.
    Rest,
    /// The end of the input.
    Eoi,
    /// One JSON value of a kind.
    Json(JsonKind),
    /// One Python literal.
    Python,
    /// All parts in order.
    Seq(Arc<[Expr]>),
    /// The first alternative that matches.
    Choice(Arc<[Expr]>),
    /// `min` to `max` (unbounded when `None`) repetitions, greedy.
    Repeat {
        /// The repeated expression.
        expr: Arc<Expr>,
        /// Fewest repetitions.
        min: u32,
        /// Most repetitions.
        max: Option<u32>,
    },
    /// Positive lookahead: matches if the expression would, consumes nothing.
    And(Arc<Expr>),
    /// Negative lookahead: matches if the expression would not.
    Not(Arc<Expr>),
    /// Commits to the current alternative of the innermost choice-like construct.
    Cut,
    /// Drops every pending alternative (up to the innermost lookahead).
    Commit,
    /// Records the span matched by the expression under a tag.
    Capture(Tag, Arc<Expr>),
    /// The body; if it fails, the fallback from where it failed (see [`recover`]).
    Recover(Arc<Expr>, Arc<Expr>),
    /// A named rule of the grammar.
    Rule(Arc<str>),
}

fn boxed(bytes: impl AsRef<[u8]>) -> Box<[u8]> {
    bytes.as_ref().into()
}

/// Matches the empty string.
pub fn empty() -> Expr {
    Expr::Empty
}

/// Never matches.
pub fn fail() -> Expr {
    Expr::Fail
}

/// Matches `text` exactly. With partial input that ends inside `text`, the
/// parse waits for more instead of failing.
pub fn lit(text: impl AsRef<[u8]>) -> Expr {
    if text.as_ref().is_empty() {
        Expr::Empty
    } else {
        Expr::Lit(text.as_ref().into())
    }
}

/// Matches the longest of `alternatives` (so `get_weather` wins over `get`).
/// With partial input that could still become a longer alternative, the parse
/// waits: a half-written tool name is never taken for a shorter one.
pub fn literals<I, L>(alternatives: I) -> Expr
where
    I: IntoIterator<Item = L>,
    L: AsRef<[u8]>,
{
    Expr::Literals(alternatives.into_iter().map(boxed).collect())
}

/// The longest string of name set `slot`, as [`literals`] reads its
/// alternatives, where the strings are given to the compiled program
/// ([`Program::with_names`](crate::Program::with_names)) rather than written
/// into the grammar: one program then serves requests that differ only in
/// their names (a server's tools). A program given no set for `slot`
/// matches nothing there. The compiler cannot see the strings, so a choice
/// that starts with a name set is not guarded by its first bytes.
pub fn names(slot: u8) -> Expr {
    Expr::Names(slot)
}

/// One byte in `set`.
pub fn class(set: ByteSet) -> Expr {
    Expr::Class(set)
}

/// JSON whitespace, zero or more bytes.
pub fn ws() -> Expr {
    // Grammars read whitespace around nearly every marker: one shared
    // expression, so each use is a reference count, not an allocation.
    static WS: LazyLock<Expr> = LazyLock::new(|| star(class(ByteSet::json_ws())));
    WS.clone()
}

/// One UTF-8 character; waits for the rest of a character cut by the end of
/// partial input.
pub fn any_char() -> Expr {
    Expr::AnyChar
}

/// Everything up to (not including) the first occurrence of any of
/// `delimiters`, or up to the end of the input. Never fails; may be empty.
/// With partial input, the bytes at the end that could begin a delimiter are
/// not consumed until more input decides.
pub fn until<I, L>(delimiters: I) -> Expr
where
    I: IntoIterator<Item = L>,
    L: AsRef<[u8]>,
{
    let delims: Vec<Box<[u8]>> = delimiters.into_iter().map(boxed).collect();
    if delims.is_empty() {
        Expr::Rest
    } else {
        Expr::Until(delims.into())
    }
}

/// Everything up to the end of the input.
pub fn rest() -> Expr {
    Expr::Rest
}

/// The end of the input (with partial input: waits until the input is final).
pub fn eoi() -> Expr {
    Expr::Eoi
}

/// Any JSON value.
pub fn json() -> Expr {
    Expr::Json(JsonKind::Value)
}

/// A JSON object.
pub fn json_object() -> Expr {
    Expr::Json(JsonKind::Object)
}

/// A JSON string (quotes included).
pub fn json_string() -> Expr {
    Expr::Json(JsonKind::String)
}

/// A Python literal (see the [`python`](mod@super::python) module).
pub fn python() -> Expr {
    Expr::Python
}

/// All of `parts`, in order.
pub fn seq(parts: impl IntoIterator<Item = Expr>) -> Expr {
    Expr::Seq(parts.into_iter().collect())
}

/// The first of `alternatives` that matches.
pub fn choice(alternatives: impl IntoIterator<Item = Expr>) -> Expr {
    Expr::Choice(alternatives.into_iter().collect())
}

/// Zero or one `e`.
pub fn opt(e: Expr) -> Expr {
    repeat(e, 0, Some(1))
}

/// Zero or more `e`. A repetition that matched nothing ends the loop.
pub fn star(e: Expr) -> Expr {
    repeat(e, 0, None)
}

/// One or more `e`.
pub fn plus(e: Expr) -> Expr {
    repeat(e, 1, None)
}

/// `min` to `max` repetitions of `e` (`None`: no upper bound).
pub fn repeat(e: Expr, min: u32, max: Option<u32>) -> Expr {
    Expr::Repeat {
        expr: Arc::new(e),
        min,
        max,
    }
}

/// Positive lookahead.
pub fn and(e: Expr) -> Expr {
    Expr::And(Arc::new(e))
}

/// Negative lookahead.
pub fn not(e: Expr) -> Expr {
    Expr::Not(Arc::new(e))
}

/// Commits to the current alternative of the innermost choice, option or
/// repetition step (see the module docs).
pub fn cut() -> Expr {
    Expr::Cut
}

/// Drops every pending alternative up to the innermost lookahead (see the
/// module docs).
pub fn commit() -> Expr {
    Expr::Commit
}

/// Error recovery: matches `body`; if `body` fails, keeps what it consumed
/// and captured (open captures are closed where it failed) and matches
/// `fallback` from the failure position.
///
/// Unlike a [`choice`], this holds nothing back: text under `body` streams
/// as if there were no alternative, because recovery never goes back. That is
/// what lets a tool call stream its arguments and still end leniently when
/// the model writes garbage halfway through. The failure position is the
/// byte where the failing instruction gave up (for a JSON value: the bad
/// byte), so the result does not depend on how the input was chunked.
///
/// ```
/// use chat_autoparser_peg::*;
/// let g = Grammar::new(seq([
///     lit("<call>"),
///     recover(seq([cap(Tag(1), json()), lit("</call>")]), cap(Tag(2), rest())),
/// ]));
/// let p = g.compile().unwrap();
/// let input = "<call>[1, 2 x]</call>";
/// let m = p.parse(input.as_bytes()).unwrap();
/// let parts: Vec<_> = m.captures.iter().map(|c| (c.tag.0, &input[c.span()])).collect();
/// assert_eq!(parts, [(1, "[1, 2 "), (2, "x]</call>")]);
/// ```
pub fn recover(body: Expr, fallback: Expr) -> Expr {
    Expr::Recover(Arc::new(body), Arc::new(fallback))
}

/// Captures the span of `e` under `tag`.
pub fn cap(tag: impl Into<Tag>, e: Expr) -> Expr {
    Expr::Capture(tag.into(), Arc::new(e))
}

/// A reference to the rule `name` of the grammar.
pub fn rule(name: &str) -> Expr {
    Expr::Rule(name.into())
}

impl Expr {
    /// `self` then `next`.
    pub fn then(self, next: Expr) -> Expr {
        match self {
            Expr::Seq(parts) => seq(parts.iter().cloned().chain([next])),
            e => seq([e, next]),
        }
    }

    /// `self`, or else `other`.
    pub fn or(self, other: Expr) -> Expr {
        match self {
            Expr::Choice(alts) => choice(alts.iter().cloned().chain([other])),
            e => choice([e, other]),
        }
    }

    /// Zero or one `self`.
    pub fn opt(self) -> Expr {
        opt(self)
    }

    /// Zero or more `self`.
    pub fn star(self) -> Expr {
        star(self)
    }

    /// One or more `self`.
    pub fn plus(self) -> Expr {
        plus(self)
    }

    /// `self` captured under `tag`.
    pub fn capture(self, tag: impl Into<Tag>) -> Expr {
        cap(tag, self)
    }
}

/// A start expression, named rules and limits.
///
/// ```
/// use chat_autoparser_peg::{choice, json, lit, rule, seq, Grammar};
/// // A list of JSON values written as `value (; value)*`, via a recursive rule.
/// let g = Grammar::new(rule("list"))
///     .rule("list", seq([json(), choice([seq([lit(";"), rule("list")]), lit("")])]));
/// let program = g.compile().unwrap();
/// assert_eq!(program.parse(b"1;[2];{}").unwrap().end, 8);
/// ```
#[derive(Debug, Clone)]
pub struct Grammar {
    pub(crate) root: Expr,
    pub(crate) rules: Vec<(Arc<str>, Expr)>,
    pub(crate) max_depth: usize,
    pub(crate) special: Vec<Box<[u8]>>,
}

impl Grammar {
    /// A grammar whose start expression is `root`.
    pub fn new(root: Expr) -> Grammar {
        Grammar {
            root,
            rules: Vec::new(),
            max_depth: DEFAULT_MAX_DEPTH,
            special: Vec::new(),
        }
    }

    /// Adds the rule `name`.
    pub fn rule(mut self, name: &str, body: Expr) -> Grammar {
        self.rules.push((name.into(), body));
        self
    }

    /// Bounds the nesting of JSON and Python values and of rule calls
    /// (default [`DEFAULT_MAX_DEPTH`]). Deeper JSON or Python values do not
    /// match; deeper rule recursion ends the parse with an error.
    pub fn max_depth(mut self, depth: usize) -> Grammar {
        self.max_depth = depth;
        self
    }

    /// Declares the vocabulary's special tokens: texts a model emits as one
    /// token of their own (`<tool_call>`, `<|im_end|>`). Where a stream is
    /// told which of its bytes were sampled as special tokens
    /// ([`Stream::special_spans`](crate::Stream::special_spans)), a literal
    /// or delimiter holding such a text matches only where those bytes are
    /// exactly one special token: the same characters from ordinary tokens
    /// (a user's or a model's plain `<tool_call>`) are text. Without span
    /// information the grammar matches characters only, as if undeclared.
    /// Empty texts are ignored.
    pub fn special_tokens<I, L>(mut self, tokens: I) -> Grammar
    where
        I: IntoIterator<Item = L>,
        L: AsRef<[u8]>,
    {
        self.special.extend(
            tokens
                .into_iter()
                .map(|t| Box::<[u8]>::from(t.as_ref()))
                .filter(|t| !t.is_empty()),
        );
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders() {
        assert_eq!(lit(""), Expr::Empty);
        assert_eq!(until(Vec::<&str>::new()), Expr::Rest);
        assert_eq!(
            lit("a").then(lit("b")).then(lit("c")),
            seq([lit("a"), lit("b"), lit("c")])
        );
        assert_eq!(
            lit("a").or(lit("b")).or(lit("c")),
            choice([lit("a"), lit("b"), lit("c")])
        );
        assert_eq!(lit("a").opt(), repeat(lit("a"), 0, Some(1)));
        assert_eq!(lit("a").capture(Tag(3)), cap(Tag(3), lit("a")));
        assert_eq!(
            cap(7u16, empty()),
            Expr::Capture(Tag(7), Arc::new(Expr::Empty))
        );
    }
}
