//! Python literals over partial input, and their normalisation to JSON.
//!
//! Models trained on Python-style tool calls (`f(city='Paris', days=[1, 2])`)
//! write argument values as Python literals. This module has two parts:
//!
//! - [`PyScanner`]: an incremental recogniser of one literal, in the style of
//!   [`JsonScanner`](super::json::JsonScanner) (same [`Scan`] results, same
//!   depth limit, constant state per open container). It accepts strings in
//!   either quote, triple-quoted strings, the `r`/`u` prefixes and escapes;
//!   numbers with an optional sign, `_` separators, `0x`/`0o`/`0b`, `1.`,
//!   `.5` and exponents; `True`, `False`, `None` (and JSON's `true`, `false`,
//!   `null`, which models write inside Python calls); lists, tuples (and
//!   parenthesised values), dicts; trailing commas; whitespace, newlines and
//!   `#` comments inside brackets. A raw newline inside a single-quoted
//!   string is part of it (Python refuses it; models write multi-line
//!   arguments so, and the string's own quote still ends it). A quote a
//!   template left bare inside a one-line string (`'He said 'hi', it's'`)
//!   is text when the bytes around it say so (`bare_quote`).
//! - [`to_json`]: the JSON text of a complete literal, as `json.dumps` would
//!   write `ast.literal_eval(text)` (compact separators): tuples become arrays,
//!   dict keys that are numbers, `True`/`False` or `None` become strings
//!   (`"1"`, `"true"`, `"null"`), a repeated key keeps its first position and
//!   last value, `1.` becomes `1.0`, `0x1F` becomes `31`.
//!
//! Not supported (an error, or a documented approximation): bytes literals,
//! sets, complex numbers, implicit concatenation of adjacent strings, tuple
//! keys, integers in other bases beyond 128 bits; `\N{name}` escapes are kept
//! as written. Lone surrogate escapes decode to U+FFFD; a surrogate pair
//! written as two `\u` escapes decodes to its character (as `json.dumps`
//! followed by a JSON parser would).
//!
//! Invariants: no recursion in the scanner; [`to_json`] recurses at most
//! `max_depth` levels; no input panics.

use std::collections::HashMap;
use std::fmt;

use super::json::{
    end_of_chunk, word_step, Scan, ScanError, ScanErrorKind, WordStep, DEFAULT_MAX_DEPTH,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Sign,
    Zero,
    Dec,
    LeadDot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
    Radix(u8),
    RadixDigits(u8),
}

impl Num {
    fn accepting(self) -> bool {
        matches!(
            self,
            Num::Zero | Num::Dec | Num::Frac | Num::ExpDigits | Num::RadixDigits(_)
        )
    }

    fn next(self, b: u8) -> Option<Num> {
        let digit = b.is_ascii_digit();
        Some(match self {
            Num::Sign if b == b'0' => Num::Zero,
            Num::Sign if digit => Num::Dec,
            Num::Sign if b == b'.' => Num::LeadDot,
            Num::Zero if matches!(b, b'x' | b'X') => Num::Radix(16),
            Num::Zero if matches!(b, b'o' | b'O') => Num::Radix(8),
            Num::Zero if matches!(b, b'b' | b'B') => Num::Radix(2),
            Num::Zero | Num::Dec if digit || b == b'_' => Num::Dec,
            Num::Zero | Num::Dec if b == b'.' => Num::Frac,
            Num::LeadDot if digit => Num::Frac,
            Num::Frac if digit || b == b'_' => Num::Frac,
            Num::Zero | Num::Dec | Num::Frac if matches!(b, b'e' | b'E') => Num::Exp,
            Num::Exp if matches!(b, b'+' | b'-') => Num::ExpSign,
            Num::Exp | Num::ExpSign if digit => Num::ExpDigits,
            Num::ExpDigits if digit || b == b'_' => Num::ExpDigits,
            Num::Radix(r) if b == b'_' => Num::Radix(r),
            Num::Radix(r) | Num::RadixDigits(r) if radix_digit(b, r) => Num::RadixDigits(r),
            Num::RadixDigits(r) if b == b'_' => Num::RadixDigits(r),
            _ => return None,
        })
    }
}

fn radix_digit(b: u8, radix: u8) -> bool {
    (b as char).is_digit(radix as u32)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Start,
    /// Inside brackets, before a value; `close_ok`: the closer may come.
    Value {
        close_ok: bool,
    },
    /// After a value inside brackets.
    After,
    /// After a dict key: `:` must come.
    DictColon,
    /// In a `#` comment; returns to `ret` at the newline.
    Comment,
    Prefix {
        raw: bool,
    },
    Quote1 {
        q: u8,
        raw: bool,
    },
    Quote2 {
        q: u8,
        raw: bool,
    },
    /// In a string; `before`: the text byte before the next one (see
    /// [`bare_quote`]), `inner`: a bare-quoted word is open in it.
    Str {
        q: u8,
        raw: bool,
        triple: bool,
        quotes: u8,
        before: Before,
        inner: bool,
    },
    Esc {
        q: u8,
        raw: bool,
        triple: bool,
        inner: bool,
    },
    /// A one-line string's quote, read at the end of a piece: what it is
    /// waits for the byte after it ([`bare_quote`]).
    BareQuote {
        q: u8,
        raw: bool,
        before: Before,
        inner: bool,
    },
    Num(Num),
    Word {
        word: u8,
        at: u8,
    },
    Done,
}

/// The byte before a quote inside a string, as [`bare_quote`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    Space,
    Letter,
    Other,
}

impl Before {
    fn of(b: u8) -> Before {
        if is_ws(b) {
            Before::Space
        } else if b.is_ascii_alphabetic() {
            Before::Letter
        } else {
            Before::Other
        }
    }
}

/// What a quote `q` inside a one-line `q`-quoted string is, from the bytes
/// around it: `None` when it ends the string, else `Some(inner)`, the
/// string goes on and `inner` says whether a quoted word is open in it.
///
/// Templates that write `'` + value + `'` leave the value's own quotes bare
/// (`'He said 'hi' and it's done'`), and models trained on them write the
/// same. A quote after whitespace and before a word character opens a
/// quoted word; the next quote closes that word; a `'` between two ASCII
/// letters is an apostrophe. Any other quote ends the string, as in Python
/// (so an escaped string, or one followed by `,`, `)`, `]`, `}`, `:`,
/// whitespace or the end, reads as before). Only the byte after the quote is
/// looked at, so the scanner decides the same at any chunking.
fn bare_quote(q: u8, before: Before, after: Option<u8>, inner: bool) -> Option<bool> {
    if inner {
        return Some(false);
    }
    let after = after?;
    let word = after.is_ascii_alphanumeric() || after == b'_' || after >= 0x80;
    match before {
        Before::Space if word => Some(true),
        Before::Letter if q == b'\'' && after.is_ascii_alphabetic() => Some(false),
        _ => None,
    }
}

/// Python's constants, then JSON's spellings of them: models that write
/// Python calls often write JSON values inside them (`f(x={"a": true})`).
const WORDS: [&[u8]; 6] = [b"True", b"False", b"None", b"true", b"false", b"null"];

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// An incremental recogniser of one Python literal.
///
/// ```
/// use chat_autoparser_peg::json::Scan;
/// use chat_autoparser_peg::python::PyScanner;
/// let mut s = PyScanner::new();
/// assert_eq!(s.feed(b"{'a': (1, "), Scan::NeedMore);
/// assert_eq!(s.feed(b"True)}, b=2"), Scan::Done(6));
/// ```
#[derive(Debug, Clone)]
pub struct PyScanner {
    state: St,
    ret: St,
    max_depth: usize,
    /// `[`, `(`, `{` (dict awaiting a key) or `:` (dict awaiting a value).
    stack: Vec<u8>,
    consumed: usize,
}

impl Default for PyScanner {
    fn default() -> Self {
        PyScanner::new()
    }
}

impl PyScanner {
    /// A scanner with nesting limited to [`DEFAULT_MAX_DEPTH`].
    pub fn new() -> PyScanner {
        PyScanner::with_max_depth(DEFAULT_MAX_DEPTH)
    }

    /// A scanner with nesting limited to `max_depth` containers.
    pub fn with_max_depth(max_depth: usize) -> PyScanner {
        PyScanner {
            state: St::Start,
            ret: St::Start,
            max_depth,
            stack: Vec::new(),
            consumed: 0,
        }
    }

    /// Starts over with a limit, keeping allocations.
    pub fn reset_to(&mut self, max_depth: usize) {
        self.state = St::Start;
        self.ret = St::Start;
        self.stack.clear();
        self.consumed = 0;
        self.max_depth = max_depth;
    }

    /// Bytes consumed so far.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// Containers currently open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Whether the literal has ended.
    pub fn is_done(&self) -> bool {
        self.state == St::Done
    }

    /// Declares the input final: whether the bytes fed are a complete literal.
    pub fn finish(&mut self) -> bool {
        let ends = match self.state {
            St::Done => true,
            St::Num(n) => n.accepting() && self.stack.is_empty(),
            St::Quote2 { .. } | St::BareQuote { .. } => self.stack.is_empty(),
            _ => false,
        };
        if ends {
            self.state = St::Done;
        }
        ends
    }

    fn err(&self, at: usize, kind: ScanErrorKind) -> Scan {
        Scan::Error(ScanError {
            offset: self.consumed + at,
            kind,
        })
    }

    fn value_done(&mut self) {
        self.state = match self.stack.last() {
            None => St::Done,
            Some(b'{') => St::DictColon,
            Some(_) => St::After,
        };
    }

    fn begin_value(&mut self, b: u8, i: usize) -> Result<(), Scan> {
        self.state = match b {
            b'[' | b'(' | b'{' => {
                if self.stack.len() >= self.max_depth {
                    return Err(self.err(i, ScanErrorKind::TooDeep));
                }
                self.stack.push(b);
                St::Value { close_ok: true }
            }
            b'\'' | b'"' => St::Quote1 { q: b, raw: false },
            b'r' | b'R' => St::Prefix { raw: true },
            b'u' | b'U' => St::Prefix { raw: false },
            b'-' | b'+' => St::Num(Num::Sign),
            b'0' => St::Num(Num::Zero),
            b'1'..=b'9' => St::Num(Num::Dec),
            b'.' => St::Num(Num::LeadDot),
            b'T' => St::Word { word: 0, at: 1 },
            b'F' => St::Word { word: 1, at: 1 },
            b'N' => St::Word { word: 2, at: 1 },
            b't' => St::Word { word: 3, at: 1 },
            b'f' => St::Word { word: 4, at: 1 },
            b'n' => St::Word { word: 5, at: 1 },
            _ => return Err(self.err(i, ScanErrorKind::Syntax)),
        };
        Ok(())
    }

    /// Feeds the next piece; see [`JsonScanner::feed`](super::json::JsonScanner::feed).
    pub fn feed(&mut self, piece: &[u8]) -> Scan {
        let n = piece.len();
        let mut i = 0usize;
        while i < n {
            let b = piece[i];
            match self.state {
                St::Done => return Scan::Done(0),
                St::Start => {
                    if let Err(e) = self.begin_value(b, i) {
                        return e;
                    }
                    i += 1;
                }
                St::Comment => {
                    if b == b'\n' {
                        self.state = self.ret;
                    }
                    i += 1;
                }
                St::Value { close_ok } => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b'#' {
                        self.ret = self.state;
                        self.state = St::Comment;
                        i += 1;
                        continue;
                    }
                    let top = self.stack.last().copied();
                    let closes = matches!(
                        (top, b),
                        (Some(b'['), b']') | (Some(b'('), b')') | (Some(b'{'), b'}')
                    );
                    if closes && close_ok {
                        self.stack.pop();
                        self.value_done();
                    } else if let Err(e) = self.begin_value(b, i) {
                        return e;
                    }
                    i += 1;
                }
                St::After | St::DictColon => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b'#' {
                        self.ret = self.state;
                        self.state = St::Comment;
                        i += 1;
                        continue;
                    }
                    let top = self.stack.last().copied();
                    if self.state == St::DictColon {
                        if b != b':' {
                            return self.err(i, ScanErrorKind::Syntax);
                        }
                        if let Some(t) = self.stack.last_mut() {
                            *t = b':';
                        }
                        self.state = St::Value { close_ok: false };
                        i += 1;
                        continue;
                    }
                    match (top, b) {
                        (Some(_), b',') => {
                            if let Some(t) = self.stack.last_mut() {
                                if *t == b':' {
                                    *t = b'{';
                                }
                            }
                            self.state = St::Value { close_ok: true };
                        }
                        (Some(b'['), b']') | (Some(b'('), b')') | (Some(b':'), b'}') => {
                            self.stack.pop();
                            self.value_done();
                        }
                        _ => return self.err(i, ScanErrorKind::Syntax),
                    }
                    i += 1;
                }
                St::Prefix { raw } => {
                    if b != b'\'' && b != b'"' {
                        return self.err(i, ScanErrorKind::Syntax);
                    }
                    self.state = St::Quote1 { q: b, raw };
                    i += 1;
                }
                St::Quote1 { q, raw } => {
                    self.state = if b == q {
                        St::Quote2 { q, raw }
                    } else if b == b'\\' {
                        St::Esc {
                            q,
                            raw,
                            triple: false,
                            inner: false,
                        }
                    } else {
                        St::Str {
                            q,
                            raw,
                            triple: false,
                            quotes: 0,
                            before: Before::of(b),
                            inner: false,
                        }
                    };
                    i += 1;
                }
                St::Quote2 { q, raw } => {
                    if b == q {
                        self.state = St::Str {
                            q,
                            raw,
                            triple: true,
                            quotes: 0,
                            before: Before::Other,
                            inner: false,
                        };
                        i += 1;
                    } else {
                        // `''` was an empty string; look at `b` again.
                        self.value_done();
                    }
                }
                St::Str {
                    q,
                    raw,
                    triple,
                    quotes,
                    before,
                    inner,
                } => {
                    let found = piece[i..].iter().position(|&c| c == q || c == b'\\');
                    let Some(k) = found else {
                        self.state = St::Str {
                            q,
                            raw,
                            triple,
                            quotes: 0,
                            before: piece.last().map_or(before, |&c| Before::of(c)),
                            inner,
                        };
                        i = n;
                        continue;
                    };
                    let quotes = if k > 0 { 0 } else { quotes };
                    let before = if k > 0 {
                        Before::of(piece[i + k - 1])
                    } else {
                        before
                    };
                    i += k;
                    let c = piece[i];
                    i += 1;
                    if c == b'\\' {
                        self.state = St::Esc {
                            q,
                            raw,
                            triple,
                            inner,
                        };
                    } else if !triple {
                        self.state = St::BareQuote {
                            q,
                            raw,
                            before,
                            inner,
                        };
                    } else if quotes < 2 {
                        self.state = St::Str {
                            q,
                            raw,
                            triple,
                            quotes: quotes + 1,
                            before: Before::Other,
                            inner,
                        };
                    } else {
                        self.value_done();
                    }
                }
                St::BareQuote {
                    q,
                    raw,
                    before,
                    inner,
                } => match bare_quote(q, before, Some(b), inner) {
                    // Either way `b` is looked at again.
                    None => self.value_done(),
                    Some(inner) => {
                        self.state = St::Str {
                            q,
                            raw,
                            triple: false,
                            quotes: 0,
                            before: Before::Other,
                            inner,
                        }
                    }
                },
                St::Esc {
                    q,
                    raw,
                    triple,
                    inner,
                } => {
                    // Any byte may follow a backslash; `\<newline>` continues the line.
                    self.state = St::Str {
                        q,
                        raw,
                        triple,
                        quotes: 0,
                        before: Before::Other,
                        inner,
                    };
                    i += 1;
                }
                St::Num(num) => match num.next(b) {
                    Some(next) => {
                        self.state = St::Num(next);
                        i += 1;
                    }
                    None if num.accepting() => self.value_done(),
                    None => return self.err(i, ScanErrorKind::Syntax),
                },
                St::Word { word, at } => {
                    match word_step(WORDS[word as usize], at, b) {
                        WordStep::Mismatch => return self.err(i, ScanErrorKind::Syntax),
                        WordStep::Done => self.value_done(),
                        WordStep::Next(at) => self.state = St::Word { word, at },
                    }
                    i += 1;
                }
            }
            if self.state == St::Done {
                return end_of_chunk(&mut self.consumed, i, true);
            }
        }
        end_of_chunk(&mut self.consumed, n, self.state == St::Done)
    }
}

/// Why a Python literal could not be normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyError {
    /// Byte offset in the text.
    pub offset: usize,
    /// What went wrong.
    pub kind: PyErrorKind,
}

/// The kinds of normalisation errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyErrorKind {
    /// Not a Python literal.
    Syntax,
    /// Containers nested deeper than the limit.
    TooDeep,
    /// A literal JSON cannot hold (a tuple key, an integer beyond 128 bits in
    /// another base, bytes, a set).
    Unsupported,
}

impl fmt::Display for PyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            PyErrorKind::Syntax => "not a Python literal",
            PyErrorKind::TooDeep => "nesting too deep",
            PyErrorKind::Unsupported => "no JSON equivalent",
        };
        write!(f, "{what} at byte {}", self.offset)
    }
}

impl std::error::Error for PyError {}

/// The JSON text (compact) of the complete Python literal `text`; whitespace
/// around it is allowed. Nesting is limited to [`DEFAULT_MAX_DEPTH`].
///
/// ```
/// use chat_autoparser_peg::python::to_json;
/// assert_eq!(to_json(b"{'city': 'Paris', 'days': (1, 2.), 3: None}").unwrap(),
///            r#"{"city":"Paris","days":[1,2.0],"3":null}"#);
/// assert_eq!(to_json(br#"'it\'s "fine"\n'"#).unwrap(), r#""it's \"fine\"\n""#);
/// assert!(to_json(b"[1, 2").is_err());
/// ```
pub fn to_json(text: &[u8]) -> Result<String, PyError> {
    to_json_with_limit(text, DEFAULT_MAX_DEPTH)
}

/// [`to_json`] with another nesting limit.
pub fn to_json_with_limit(text: &[u8], max_depth: usize) -> Result<String, PyError> {
    let mut p = Norm {
        s: text,
        i: 0,
        depth: 0,
        max_depth,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != text.len() {
        return Err(p.error(PyErrorKind::Syntax));
    }
    let mut out = String::new();
    v.write(&mut out);
    Ok(out)
}

/// The decoded value of a complete Python string literal (prefix and quotes
/// included).
///
/// ```
/// use chat_autoparser_peg::python::string_value;
/// assert_eq!(string_value(br"r'a\n'").as_deref(), Some(r"a\n"));
/// assert_eq!(string_value(b"'''x'y'''").as_deref(), Some("x'y"));
/// assert_eq!(string_value(b"1"), None);
/// ```
pub fn string_value(token: &[u8]) -> Option<String> {
    let mut p = Norm {
        s: token,
        i: 0,
        depth: 0,
        max_depth: 0,
    };
    match p.value() {
        Ok(Py::Str(s)) if p.i == token.len() => Some(s),
        _ => None,
    }
}

/// A parsed literal, ready to be written as JSON.
enum Py {
    Str(String),
    /// JSON number text.
    Num(String),
    Bool(bool),
    None,
    List(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

impl Py {
    fn write(&self, out: &mut String) {
        match self {
            Py::Str(s) => write_str(out, s),
            Py::Num(n) => out.push_str(n),
            Py::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Py::None => out.push_str("null"),
            Py::List(items) => {
                out.push('[');
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Py::Dict(members) => {
                out.push('{');
                for (k, (key, value)) in members.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    write_str(out, key);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
}

struct Norm<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
    max_depth: usize,
}

impl Norm<'_> {
    fn error(&self, kind: PyErrorKind) -> PyError {
        PyError {
            offset: self.i,
            kind,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Whitespace, newlines and comments.
    fn ws(&mut self) {
        while let Some(b) = self.peek() {
            if is_ws(b) {
                self.i += 1;
            } else if b == b'#' {
                while let Some(c) = self.peek() {
                    if c == b'\n' {
                        break;
                    }
                    self.i += 1;
                }
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Py, PyError> {
        let Some(b) = self.peek() else {
            return Err(self.error(PyErrorKind::Syntax));
        };
        match b {
            b'[' | b'(' | b'{' => {
                if self.depth >= self.max_depth {
                    return Err(self.error(PyErrorKind::TooDeep));
                }
                self.depth += 1;
                self.i += 1;
                let v = if b == b'{' {
                    self.dict()?
                } else {
                    self.seq(b)?
                };
                self.depth -= 1;
                Ok(v)
            }
            b'\'' | b'"' | b'r' | b'R' | b'u' | b'U' => self.string().map(Py::Str),
            b'b' | b'B' => Err(self.error(PyErrorKind::Unsupported)),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number().map(Py::Num),
            _ => {
                let words = [
                    (&b"True"[..], Py::Bool(true)),
                    (b"False", Py::Bool(false)),
                    (b"None", Py::None),
                ];
                let json_words = [
                    (&b"true"[..], Py::Bool(true)),
                    (b"false", Py::Bool(false)),
                    (b"null", Py::None),
                ];
                for (word, v) in words.into_iter().chain(json_words) {
                    if self.s[self.i..].starts_with(word) {
                        self.i += word.len();
                        return Ok(v);
                    }
                }
                Err(self.error(PyErrorKind::Syntax))
            }
        }
    }

    /// A list or a tuple (or a parenthesised value), after its opener.
    fn seq(&mut self, open: u8) -> Result<Py, PyError> {
        let close = if open == b'[' { b']' } else { b')' };
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            self.ws();
            if self.eat(close) {
                break;
            }
            items.push(self.value()?);
            self.ws();
            if self.eat(b',') {
                comma = true;
                continue;
            }
            if self.eat(close) {
                break;
            }
            return Err(self.error(PyErrorKind::Syntax));
        }
        if open == b'(' && items.len() == 1 && !comma {
            return Ok(items.pop().unwrap_or(Py::None));
        }
        Ok(Py::List(items))
    }

    fn dict(&mut self) -> Result<Py, PyError> {
        let mut members: Vec<(String, Py)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        loop {
            self.ws();
            if self.eat(b'}') {
                break;
            }
            let at = self.i;
            let key = match self.value()? {
                Py::Str(s) => s,
                Py::Num(n) => n,
                Py::Bool(b) => (if b { "true" } else { "false" }).to_string(),
                Py::None => "null".to_string(),
                Py::List(_) | Py::Dict(_) => {
                    return Err(PyError {
                        offset: at,
                        kind: PyErrorKind::Unsupported,
                    });
                }
            };
            self.ws();
            if !self.eat(b':') {
                let kind = if matches!(self.peek(), Some(b',' | b'}')) {
                    PyErrorKind::Unsupported // a set
                } else {
                    PyErrorKind::Syntax
                };
                return Err(self.error(kind));
            }
            self.ws();
            let value = self.value()?;
            match index.get(&key) {
                Some(&k) => members[k].1 = value,
                None => {
                    index.insert(key.clone(), members.len());
                    members.push((key, value));
                }
            }
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                break;
            }
            return Err(self.error(PyErrorKind::Syntax));
        }
        Ok(Py::Dict(members))
    }

    fn string(&mut self) -> Result<String, PyError> {
        let mut raw = false;
        if let Some(b'r' | b'R' | b'u' | b'U') = self.peek() {
            raw = matches!(self.peek(), Some(b'r' | b'R'));
            self.i += 1;
        }
        let Some(q) = self.peek().filter(|&q| q == b'\'' || q == b'"') else {
            return Err(self.error(PyErrorKind::Syntax));
        };
        let triple = self.s[self.i..].starts_with(&[q, q, q]);
        self.i += if triple { 3 } else { 1 };
        let mut buf: Vec<u8> = Vec::new();
        let mut high: Option<u32> = None;
        // What `PyScanner` tracks for `bare_quote`, tracked the same way.
        let (mut before, mut inner) = (Before::Other, false);
        loop {
            let Some(b) = self.peek() else {
                return Err(PyError {
                    offset: self.s.len(),
                    kind: PyErrorKind::Syntax,
                });
            };
            if b == q && !triple {
                self.i += 1;
                match bare_quote(q, before, self.peek(), inner) {
                    None => break,
                    Some(now) => inner = now,
                }
                flush_high(&mut buf, &mut high);
                buf.push(b);
                before = Before::Other;
                continue;
            }
            if b == q && self.s[self.i..].starts_with(&[q, q, q]) {
                self.i += 3;
                break;
            }
            if b != b'\\' {
                flush_high(&mut buf, &mut high);
                buf.push(b);
                before = Before::of(b);
                self.i += 1;
                continue;
            }
            before = Before::Other;
            // An escape.
            let Some(e) = self.s.get(self.i + 1).copied() else {
                return Err(PyError {
                    offset: self.s.len(),
                    kind: PyErrorKind::Syntax,
                });
            };
            if raw {
                flush_high(&mut buf, &mut high);
                buf.extend_from_slice(&[b'\\', e]);
                self.i += 2;
                continue;
            }
            self.i += 2;
            let simple = match e {
                b'\n' => Some(None),
                b'\\' => Some(Some(b'\\')),
                b'\'' => Some(Some(b'\'')),
                b'"' => Some(Some(b'"')),
                b'a' => Some(Some(0x07)),
                b'b' => Some(Some(0x08)),
                b'f' => Some(Some(0x0C)),
                b'n' => Some(Some(b'\n')),
                b'r' => Some(Some(b'\r')),
                b't' => Some(Some(b'\t')),
                b'v' => Some(Some(0x0B)),
                _ => None,
            };
            if let Some(byte) = simple {
                flush_high(&mut buf, &mut high);
                buf.extend(byte);
                continue;
            }
            let code = match e {
                b'0'..=b'7' => {
                    let mut v = (e - b'0') as u32;
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + (d - b'0') as u32;
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    v
                }
                b'x' | b'u' | b'U' => {
                    let len = match e {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let digits = self.s.get(self.i..self.i + len).unwrap_or(&[]);
                    let parsed = std::str::from_utf8(digits)
                        .ok()
                        .filter(|d| d.len() == len && d.bytes().all(|c| c.is_ascii_hexdigit()))
                        .and_then(|d| u32::from_str_radix(d, 16).ok());
                    match parsed {
                        Some(v) => {
                            self.i += len;
                            v
                        }
                        None => return Err(self.error(PyErrorKind::Syntax)),
                    }
                }
                _ => {
                    // Unknown escape (and `\N{...}`): kept as written.
                    flush_high(&mut buf, &mut high);
                    buf.extend_from_slice(&[b'\\', e]);
                    continue;
                }
            };
            push_code(&mut buf, &mut high, code);
        }
        flush_high(&mut buf, &mut high);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    fn number(&mut self) -> Result<String, PyError> {
        let start = self.i;
        let mut out = String::new();
        match self.peek() {
            Some(b'-') => {
                out.push('-');
                self.i += 1;
            }
            Some(b'+') => self.i += 1,
            _ => {}
        }
        let body_start = self.i;
        let mut state = Num::Sign;
        while let Some(b) = self.peek() {
            match state.next(b) {
                Some(next) => {
                    state = next;
                    self.i += 1;
                }
                None => break,
            }
        }
        if !state.accepting() {
            return Err(self.error(PyErrorKind::Syntax));
        }
        let body: String = self.s[body_start..self.i]
            .iter()
            .filter(|&&b| b != b'_')
            .map(|&b| b as char)
            .collect();
        if let Num::RadixDigits(radix) = state {
            let digits = body.get(2..).unwrap_or("");
            match u128::from_str_radix(digits, radix as u32) {
                Ok(v) => out.push_str(&v.to_string()),
                Err(_) => {
                    return Err(PyError {
                        offset: start,
                        kind: PyErrorKind::Unsupported,
                    })
                }
            }
            return Ok(out);
        }
        let (mantissa, exp) = match body.find(['e', 'E']) {
            Some(k) => (&body[..k], Some(&body[k + 1..])),
            None => (body.as_str(), None),
        };
        let (int, frac) = match mantissa.find('.') {
            Some(k) => (&mantissa[..k], Some(&mantissa[k + 1..])),
            None => (mantissa, None),
        };
        let int = int.trim_start_matches('0');
        out.push_str(if int.is_empty() { "0" } else { int });
        if let Some(frac) = frac {
            out.push('.');
            out.push_str(if frac.is_empty() { "0" } else { frac });
        }
        if let Some(exp) = exp {
            out.push('e');
            out.push_str(exp);
        }
        Ok(out)
    }
}

/// Appends a code point, pairing UTF-16 surrogates written as two escapes.
fn push_code(buf: &mut Vec<u8>, high: &mut Option<u32>, code: u32) {
    if (0xDC00..=0xDFFF).contains(&code) {
        if let Some(h) = high.take() {
            let c = 0x10000 + ((h - 0xD800) << 10) + (code - 0xDC00);
            push_char(buf, char::from_u32(c).unwrap_or('\u{FFFD}'));
            return;
        }
    }
    flush_high(buf, high);
    if (0xD800..=0xDBFF).contains(&code) {
        *high = Some(code);
        return;
    }
    push_char(buf, char::from_u32(code).unwrap_or('\u{FFFD}'));
}

fn flush_high(buf: &mut Vec<u8>, high: &mut Option<u32>) {
    if high.take().is_some() {
        push_char(buf, '\u{FFFD}');
    }
}

fn push_char(buf: &mut Vec<u8>, c: char) {
    let mut tmp = [0u8; 4];
    buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Result<usize, ScanError> {
        let mut s = PyScanner::new();
        match s.feed(text.as_bytes()) {
            Scan::Done(n) => Ok(n),
            Scan::Error(e) => Err(e),
            Scan::NeedMore if s.finish() => Ok(text.len()),
            Scan::NeedMore => Err(ScanError {
                offset: text.len(),
                kind: ScanErrorKind::Syntax,
            }),
        }
    }

    fn json(text: &str) -> String {
        to_json(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn scanner_accepts_literals() {
        for (text, len) in [
            ("'a'", 3),
            ("\"a\"", 3),
            ("''", 2),
            ("'''a'b''c'''", 12),
            ("r'\\''", 5),
            ("u\"x\"", 4),
            ("-1_000.5e-3", 11),
            ("0x_1F", 5),
            ("1.", 2),
            (".5", 2),
            ("True", 4),
            ("None,", 4),
            ("[1, 'a', (2,), {}, {'k': [None]},]", 34),
            ("(\n  1,  # one\n  2\n)", 19),
            ("{'a': 1, 2: 'b',}", 17),
            ("() x", 2),
            ("'a' 'b'", 3),
            // A raw newline in a single-quoted string is part of it.
            ("'a\nb' x", 5),
        ] {
            assert_eq!(scan(text), Ok(len), "{text}");
        }
    }

    #[test]
    fn scanner_rejects() {
        let syntax = |offset| {
            Err(ScanError {
                offset,
                kind: ScanErrorKind::Syntax,
            })
        };
        assert_eq!(scan("{1, 2}"), syntax(2));
        assert_eq!(scan("[1 2]"), syntax(3));
        assert_eq!(scan("Tru"), syntax(3));
        assert_eq!(scan("Trux"), syntax(3));
        assert_eq!(scan("-x"), syntax(1));
        assert_eq!(scan("0x"), syntax(2));
        assert_eq!(scan("'abc"), syntax(4));
        assert_eq!(scan("[1,,]"), syntax(3));
        assert_eq!(scan("{'a' 1}"), syntax(5));
        assert_eq!(scan("(1]"), syntax(2));
        assert_eq!(scan("{'a': }"), syntax(6));
        assert_eq!(scan("b'x'"), syntax(0));
        assert_eq!(scan("x"), syntax(0));
        let mut s = PyScanner::with_max_depth(2);
        assert_eq!(
            s.feed(b"[(["),
            Scan::Error(ScanError {
                offset: 2,
                kind: ScanErrorKind::TooDeep
            })
        );
    }

    #[test]
    fn scanner_pieces_equal_whole() {
        let text =
            "{'a': '''x''y''', \"b\": [1.5e3, -0x1f, None], 'c': r'\\'', # c\n 'd': ('',)} rest";
        let whole = scan(text).unwrap();
        assert_eq!(&text[whole..], " rest");
        for size in 1..6 {
            let mut s = PyScanner::new();
            let mut fed = 0;
            let mut end = None;
            for piece in text.as_bytes().chunks(size) {
                match s.feed(piece) {
                    Scan::Done(k) => {
                        end = Some(fed + k);
                        break;
                    }
                    Scan::NeedMore => fed += piece.len(),
                    Scan::Error(e) => panic!("{e}"),
                }
            }
            assert_eq!(end, Some(whole), "piece size {size}");
        }
    }

    /// Quotes a template left bare in a value (`bare_quote`): the literal
    /// ends at the same byte whole and in pieces, and `to_json` reads the
    /// quotes as text.
    #[test]
    fn bare_quotes_inside_a_string() {
        for (text, rest, json_text) in [
            (
                "'He said 'hi' & it's\n'x' 東京', b",
                ", b",
                r#""He said 'hi' & it's\n'x' 東京""#,
            ),
            ("['a 'b' c', 'd'] z", " z", r#"["a 'b' c","d"]"#),
            ("'don't' z", " z", r#""don't""#),
            ("'a' 'b'", " 'b'", r#""a""#),
            ("'a','b'", ",'b'", r#""a""#),
        ] {
            let end = text.len() - rest.len();
            assert_eq!(scan(text), Ok(end), "{text}");
            assert_eq!(json(&text[..end]), json_text, "{text}");
            for size in 1..4 {
                let mut s = PyScanner::new();
                let mut fed = 0;
                let mut done = None;
                for piece in text.as_bytes().chunks(size) {
                    match s.feed(piece) {
                        Scan::Done(k) => {
                            done = Some(fed + k);
                            break;
                        }
                        _ => fed += piece.len(),
                    }
                }
                assert_eq!(done, Some(end), "{text} in pieces of {size}");
            }
        }
    }

    #[test]
    fn empty_string_needs_the_next_byte() {
        let mut s = PyScanner::new();
        assert_eq!(s.feed(b"''"), Scan::NeedMore);
        assert!(s.finish());
        let mut s = PyScanner::new();
        assert_eq!(s.feed(b"''"), Scan::NeedMore);
        assert_eq!(s.feed(b")"), Scan::Done(0));
        let mut s = PyScanner::new();
        assert_eq!(s.feed(b"12"), Scan::NeedMore);
        assert_eq!(s.feed(b","), Scan::Done(0));
    }

    #[test]
    fn normalises_to_json() {
        assert_eq!(json("'Paris'"), r#""Paris""#);
        assert_eq!(json(r#""say \"hi\"""#), r#""say \"hi\"""#);
        assert_eq!(
            json(r"'a\tb\x41\u00e9\U0001F600\101\0'"),
            "\"a\\tbAé😀A\\u0000\""
        );
        assert_eq!(json(r"'\ud83d\ude00'"), r#""😀""#);
        assert_eq!(json(r"'\ud83d'"), "\"\u{FFFD}\"");
        assert_eq!(json(r"'\q\N{DASH}'"), r#""\\q\\N{DASH}""#);
        assert_eq!(json(r"r'\n\''"), r#""\\n\\'""#);
        assert_eq!(json("'''line1\nline2'''"), r#""line1\nline2""#);
        assert_eq!(json("'line1\nline2'"), r#""line1\nline2""#);
        assert_eq!(json("'a\\\nb'"), r#""ab""#);
        assert_eq!(json("'é'"), r#""é""#);
        assert_eq!(json("1_000"), "1000");
        assert_eq!(json("-007"), "-7");
        assert_eq!(json("+3"), "3");
        assert_eq!(json("1."), "1.0");
        assert_eq!(json(".5e-3"), "0.5e-3");
        assert_eq!(json("1E5"), "1e5");
        assert_eq!(json("0x1F"), "31");
        assert_eq!(json("-0b101"), "-5");
        assert_eq!(json("0o17"), "15");
        assert_eq!(json("True"), "true");
        assert_eq!(json("None"), "null");
        assert_eq!(json(" [1, (2, 3), (4,), (5), ()] "), "[1,[2,3],[4],5,[]]");
        assert_eq!(json("{'a': 1, 'a': 2, 'b': 3}"), r#"{"a":2,"b":3}"#);
        assert_eq!(
            json("{1: 'x', 1.5: 'y', True: 'z', None: 0}"),
            r#"{"1":"x","1.5":"y","true":"z","null":0}"#
        );
        assert_eq!(json("{\n 'a': [  # list\n 1,\n ],\n}"), r#"{"a":[1]}"#);
    }

    #[test]
    fn normalisation_errors() {
        let e = |text: &str| to_json(text.as_bytes()).unwrap_err();
        assert_eq!(
            e("{(1, 2): 3}"),
            PyError {
                offset: 1,
                kind: PyErrorKind::Unsupported
            }
        );
        assert_eq!(e("{1, 2}").kind, PyErrorKind::Unsupported);
        assert_eq!(e("b'x'").kind, PyErrorKind::Unsupported);
        assert_eq!(
            e("0x1_0000_0000_0000_0000_0000_0000_0000_0000").kind,
            PyErrorKind::Unsupported
        );
        assert_eq!(
            e("[1] 2"),
            PyError {
                offset: 4,
                kind: PyErrorKind::Syntax
            }
        );
        assert_eq!(
            e("'abc"),
            PyError {
                offset: 4,
                kind: PyErrorKind::Syntax
            }
        );
        assert_eq!(e(r"'\x4'").kind, PyErrorKind::Syntax);
        assert_eq!(e("").kind, PyErrorKind::Syntax);
        assert_eq!(e("Nope").kind, PyErrorKind::Syntax);
        assert_eq!(
            to_json_with_limit(b"[[[1]]]", 2).unwrap_err(),
            PyError {
                offset: 2,
                kind: PyErrorKind::TooDeep
            }
        );
        let deep = "[".repeat(100_000);
        assert_eq!(
            to_json(deep.as_bytes()).unwrap_err().kind,
            PyErrorKind::TooDeep
        );
    }

    #[test]
    fn string_values() {
        assert_eq!(string_value(b"'a'").as_deref(), Some("a"));
        assert_eq!(string_value(b"'a' ").as_deref(), None);
        assert_eq!(string_value(b"[1]"), None);
    }
}
