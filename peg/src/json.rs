//! JSON values over partial input: an incremental scanner and its helpers.
//!
//! [`JsonScanner`] recognises one JSON value (RFC 8259) fed in any number of
//! pieces. It keeps only a small state (the open containers and where it is in
//! the current token), so feeding a value in `k` pieces costs the same as
//! feeding it at once. The engine's `json` instructions run on it; callers can
//! also use it directly to ask how far a partial value got.
//!
//! The value starts at the first byte fed (no leading whitespace) and ends at
//! its last byte: for a top-level number the end is only known when a byte
//! that cannot continue it arrives, or when the input is declared final
//! ([`JsonScanner::finish`]).
//!
//! Helpers on complete or partial text:
//! - [`complete`] turns a prefix of a value into a complete value, for showing
//!   a message that was cut off (partial strings and containers are closed, a
//!   dangling member is dropped);
//! - [`decode_string`] decodes a complete JSON string token.
//!
//! Invariants: nesting deeper than the scanner's limit is an error
//! ([`ScanErrorKind::TooDeep`]), never a stack overflow (the scanner does not
//! recurse); an error names the offset of the first byte that cannot belong to
//! a value; no input panics.

use std::fmt;

use super::bytes::ByteSet;

/// Default bound on the nesting of containers in a JSON or Python value.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// What a scanner made of the bytes fed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The value ended; this many bytes of the last piece belong to it.
    Done(usize),
    /// Every byte fed belongs to the value, which is not finished yet.
    NeedMore,
    /// The bytes are not a value.
    Error(ScanError),
}

/// Why a scanner rejected its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanError {
    /// Offset from the start of the value of the first byte that cannot
    /// belong to a value (or of the container that is too deep).
    pub offset: usize,
    /// What went wrong.
    pub kind: ScanErrorKind,
}

/// The kinds of scan errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanErrorKind {
    /// A byte that the syntax does not allow here (or the input ended early).
    Syntax,
    /// Containers nested deeper than the limit.
    TooDeep,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ScanErrorKind::Syntax => write!(f, "syntax error at byte {}", self.offset),
            ScanErrorKind::TooDeep => write!(f, "nesting too deep at byte {}", self.offset),
        }
    }
}

impl std::error::Error for ScanError {}

/// Which JSON values a scanner accepts at the top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonKind {
    /// Any value.
    Value,
    /// An object `{...}`.
    Object,
    /// An array `[...]`.
    Array,
    /// A string `"..."`.
    String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    fn accepting(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Nothing fed yet: the first byte starts the value.
    Start,
    /// After `:` or `,` in an array: whitespace, then a value.
    Value,
    /// After `[`: whitespace, then a value or `]`.
    ArrFirst,
    /// After `{`: whitespace, then a key or `}`.
    ObjFirst,
    /// After `,` in an object: whitespace, then a key.
    ObjKey,
    /// After a key: whitespace, then `:`.
    Colon,
    /// After a value in a container: whitespace, then `,` or the closer.
    After,
    Str {
        key: bool,
    },
    Esc {
        key: bool,
    },
    Hex {
        key: bool,
        left: u8,
    },
    Num(Num),
    Word {
        word: u8,
        at: u8,
    },
    Done,
}

/// The bytes that end or interrupt plain text in a string: the quote, the
/// backslash, and the control bytes (invalid in a string).
pub const STRING_STOPS: ByteSet = ByteSet::range(0, 0x1f).union(ByteSet::of(b"\"\\"));

const WORDS: [&[u8]; 3] = [b"true", b"false", b"null"];

/// Where a JSON string's plain bytes stop in `bytes`: the first `"`, `\\`
/// or control byte (below 0x20), looked for eight bytes at a time (long
/// arguments are mostly plain string bytes).
fn string_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    let mut words = bytes.chunks_exact(8);
    for (k, word) in words.by_ref().enumerate() {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let quote = w ^ (ONES * u64::from(b'"'));
        let slash = w ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is zero (or, for the third
        // term, below 0x20); bits above the first such byte may be set by
        // a borrow, the lowest one never is.
        let hits = (quote.wrapping_sub(ONES) & !quote)
            | (slash.wrapping_sub(ONES) & !slash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let hits = hits & HIGHS;
        if hits != 0 {
            return Some(k * 8 + (hits.trailing_zeros() / 8) as usize);
        }
    }
    let tail = words.remainder();
    let at = bytes.len() - tail.len();
    tail.iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| at + k)
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// An incremental recogniser of one JSON value.
///
/// ```
/// use chat_autoparser_peg::json::{JsonScanner, Scan};
/// let mut s = JsonScanner::new();
/// assert_eq!(s.feed(br#"{"city": "Par"#), Scan::NeedMore);
/// assert_eq!(s.depth(), 1);
/// assert!(s.in_string());
/// assert_eq!(s.feed(br#"is"} tail"#), Scan::Done(4));
/// assert!(s.is_done());
/// assert_eq!(s.consumed(), 17);
/// ```
#[derive(Debug, Clone)]
pub struct JsonScanner {
    state: St,
    kind: JsonKind,
    max_depth: usize,
    /// Open containers: the opener and where dropping the current member or
    /// element would cut the text (for [`complete`]).
    stack: Vec<(u8, usize)>,
    /// Bytes consumed since the start of the value.
    consumed: usize,
    /// Offset of the backslash of an unfinished escape.
    esc_at: usize,
}

impl Default for JsonScanner {
    fn default() -> Self {
        JsonScanner::new()
    }
}

impl JsonScanner {
    /// A scanner for any JSON value, nesting limited to [`DEFAULT_MAX_DEPTH`].
    pub fn new() -> JsonScanner {
        JsonScanner::with_kind(JsonKind::Value, DEFAULT_MAX_DEPTH)
    }

    /// A scanner that accepts only `kind` at the top level and at most
    /// `max_depth` nested containers.
    pub fn with_kind(kind: JsonKind, max_depth: usize) -> JsonScanner {
        JsonScanner {
            state: St::Start,
            kind,
            max_depth,
            stack: Vec::new(),
            consumed: 0,
            esc_at: 0,
        }
    }

    /// Starts over, keeping the kind, limit and allocations.
    pub fn reset(&mut self) {
        self.state = St::Start;
        self.stack.clear();
        self.consumed = 0;
        self.esc_at = 0;
    }

    /// Starts over with another kind and limit, keeping allocations.
    pub fn reset_to(&mut self, kind: JsonKind, max_depth: usize) {
        self.reset();
        self.kind = kind;
        self.max_depth = max_depth;
    }

    /// Bytes of the value consumed so far.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// Containers currently open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Whether the scanner is inside a string (a key or a value).
    pub fn in_string(&self) -> bool {
        matches!(self.state, St::Str { .. } | St::Esc { .. } | St::Hex { .. })
    }

    /// Whether the value has ended.
    pub fn is_done(&self) -> bool {
        self.state == St::Done
    }

    /// Whether bytes without a quote, backslash or control byte
    /// ([`STRING_STOPS`]) only continue the current string: the scanner is
    /// inside one, not in an escape.
    #[inline]
    pub fn in_plain_string(&self) -> bool {
        matches!(self.state, St::Str { .. })
    }

    /// Consumes `n` bytes of plain string text (see
    /// [`in_plain_string`](Self::in_plain_string)): what [`feed`](Self::feed)
    /// does with them, without looking at them.
    #[inline]
    pub fn skip_plain(&mut self, n: usize) {
        self.consumed += n;
    }

    /// Declares the input final: whether the bytes fed are a complete value
    /// (a top-level number needs this to end).
    pub fn finish(&mut self) -> bool {
        match self.state {
            St::Done => true,
            St::Num(n) if n.accepting() && self.stack.is_empty() => {
                self.state = St::Done;
                true
            }
            _ => false,
        }
    }

    fn err(&self, at: usize, kind: ScanErrorKind) -> Scan {
        Scan::Error(ScanError {
            offset: self.consumed + at,
            kind,
        })
    }

    /// A value (or, with `close`, a container closer) begins with `b`, at
    /// index `i` of the current piece.
    #[inline]
    fn begin_value(&mut self, b: u8, i: usize) -> Result<(), Scan> {
        self.state = match b {
            b'{' | b'[' => {
                if self.stack.len() >= self.max_depth {
                    return Err(self.err(i, ScanErrorKind::TooDeep));
                }
                self.stack.push((b, self.consumed + i + 1));
                if b == b'{' {
                    St::ObjFirst
                } else {
                    St::ArrFirst
                }
            }
            b'"' => St::Str { key: false },
            b'-' => St::Num(Num::Minus),
            b'0' => St::Num(Num::Zero),
            b'1'..=b'9' => St::Num(Num::Int),
            b't' => St::Word { word: 0, at: 1 },
            b'f' => St::Word { word: 1, at: 1 },
            b'n' => St::Word { word: 2, at: 1 },
            _ => return Err(self.err(i, ScanErrorKind::Syntax)),
        };
        Ok(())
    }

    #[inline]
    fn value_done(&mut self) {
        self.state = if self.stack.is_empty() {
            St::Done
        } else {
            St::After
        };
    }

    /// Feeds the next piece of the value.
    ///
    /// Returns [`Scan::Done`] with the number of bytes of `piece` that end the
    /// value (the rest is not looked at), [`Scan::NeedMore`] when all of
    /// `piece` belongs to an unfinished value, or the error. Feeding after
    /// `Done` or an error returns `Done(0)` or the error again.
    pub fn feed(&mut self, piece: &[u8]) -> Scan {
        let n = piece.len();
        let mut i = 0usize;
        while i < n {
            let b = piece[i];
            match self.state {
                St::Done => return Scan::Done(0),
                St::Start => {
                    let ok = match self.kind {
                        JsonKind::Value => true,
                        JsonKind::Object => b == b'{',
                        JsonKind::Array => b == b'[',
                        JsonKind::String => b == b'"',
                    };
                    if !ok {
                        return self.err(i, ScanErrorKind::Syntax);
                    }
                    if let Err(e) = self.begin_value(b, i) {
                        return e;
                    }
                    i += 1;
                }
                St::Value | St::ArrFirst => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b']' && self.state == St::ArrFirst {
                        self.stack.pop();
                        self.value_done();
                    } else if let Err(e) = self.begin_value(b, i) {
                        return e;
                    }
                    i += 1;
                }
                St::ObjFirst | St::ObjKey => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b'"' {
                        self.state = St::Str { key: true };
                    } else if b == b'}' && self.state == St::ObjFirst {
                        self.stack.pop();
                        self.value_done();
                    } else {
                        return self.err(i, ScanErrorKind::Syntax);
                    }
                    i += 1;
                }
                St::Colon => {
                    if b == b':' {
                        self.state = St::Value;
                    } else if !is_ws(b) {
                        return self.err(i, ScanErrorKind::Syntax);
                    }
                    i += 1;
                }
                St::After => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    let Some(&(open, _)) = self.stack.last() else {
                        return self.err(i, ScanErrorKind::Syntax);
                    };
                    match (open, b) {
                        (b'{', b',') => {
                            self.state = St::ObjKey;
                            self.set_member_start(i);
                        }
                        (b'[', b',') => {
                            self.state = St::Value;
                            self.set_member_start(i);
                        }
                        (b'{', b'}') | (b'[', b']') => {
                            self.stack.pop();
                            self.value_done();
                        }
                        _ => return self.err(i, ScanErrorKind::Syntax),
                    }
                    i += 1;
                }
                St::Str { key } => {
                    // Hot loop: plain string bytes.
                    match string_stop(&piece[i..]) {
                        None => i = n,
                        Some(k) => {
                            i += k;
                            match piece[i] {
                                b'"' => {
                                    if key {
                                        self.state = St::Colon;
                                    } else {
                                        self.value_done();
                                    }
                                }
                                b'\\' => {
                                    self.esc_at = self.consumed + i;
                                    self.state = St::Esc { key };
                                }
                                _ => return self.err(i, ScanErrorKind::Syntax),
                            }
                            i += 1;
                        }
                    }
                }
                St::Esc { key } => {
                    self.state = match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => St::Str { key },
                        b'u' => St::Hex { key, left: 4 },
                        _ => return self.err(i, ScanErrorKind::Syntax),
                    };
                    i += 1;
                }
                St::Hex { key, left } => {
                    if !b.is_ascii_hexdigit() {
                        return self.err(i, ScanErrorKind::Syntax);
                    }
                    self.state = if left == 1 {
                        St::Str { key }
                    } else {
                        St::Hex {
                            key,
                            left: left - 1,
                        }
                    };
                    i += 1;
                }
                St::Num(num) => {
                    let next = match (num, b) {
                        (Num::Minus, b'0') => Some(Num::Zero),
                        (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                        (Num::Int, b'0'..=b'9') => Some(Num::Int),
                        (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                        (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
                        (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
                        (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => {
                            Some(Num::ExpDigits)
                        }
                        _ => None,
                    };
                    match next {
                        Some(next) => {
                            self.state = St::Num(next);
                            i += 1;
                        }
                        None if num.accepting() => {
                            // The number ended before this byte; look at the
                            // byte again in the state after the value.
                            self.value_done();
                            if self.state == St::Done {
                                return end_of_chunk(&mut self.consumed, i, true);
                            }
                        }
                        None => return self.err(i, ScanErrorKind::Syntax),
                    }
                }
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

    fn set_member_start(&mut self, i: usize) {
        let at = self.consumed + i;
        if let Some(top) = self.stack.last_mut() {
            top.1 = at;
        }
    }

    /// How to complete the bytes fed so far into a value: keep this many of
    /// them and append the returned text. `None` before the value has begun,
    /// and for a scanner that has failed.
    fn completion(&self) -> Option<(usize, String)> {
        let mut keep = self.consumed;
        let mut tail = String::new();
        // Whether the innermost object's current member is unfinished.
        let mut drop_member = false;
        match self.state {
            St::Start => return None,
            St::Done => return Some((keep, tail)),
            St::Str { key: false } => tail.push('"'),
            St::Esc { key: false } | St::Hex { key: false, .. } => {
                keep = self.esc_at;
                tail.push('"');
            }
            St::Str { key: true }
            | St::Esc { key: true }
            | St::Hex { key: true, .. }
            | St::Colon => drop_member = true,
            St::ObjKey => drop_member = true,
            St::Value => match self.stack.last() {
                Some((b'{', _)) => drop_member = true,
                // After `,` in an array: drop the comma.
                Some((_, at)) => keep = *at,
                None => return None,
            },
            St::ObjFirst | St::ArrFirst | St::After => {}
            St::Num(n) => {
                if !n.accepting() {
                    tail.push('0');
                }
            }
            St::Word { word, at } => {
                let w = WORDS[word as usize];
                tail.push_str(std::str::from_utf8(&w[at as usize..]).unwrap_or(""));
            }
        }
        if drop_member {
            keep = self.stack.last().map_or(keep, |&(_, at)| at);
        }
        for &(open, _) in self.stack.iter().rev() {
            tail.push(if open == b'{' { '}' } else { ']' });
        }
        Some((keep, tail))
    }
}

/// Completes a prefix of a JSON value into a value: unfinished strings and
/// containers are closed, an unfinished escape or object member and a
/// dangling `,` are dropped, an unfinished number or literal is finished
/// (`1.` → `1.0`, `tr` → `true`). A complete value is returned as is (bytes
/// after it are ignored). `None` when `prefix` is not the start of a value.
///
/// ```
/// use chat_autoparser_peg::json::complete;
/// assert_eq!(complete(br#"{"a": "hel"#).as_deref(), Some(r#"{"a": "hel"}"#));
/// assert_eq!(complete(br#"{"a": 1, "b"#).as_deref(), Some(r#"{"a": 1}"#));
/// assert_eq!(complete(br#"[1, 2,"#).as_deref(), Some("[1, 2]"));
/// assert_eq!(complete(b"[tr").as_deref(), Some("[true]"));
/// assert_eq!(complete(b"{]"), None);
/// ```
pub fn complete(prefix: &[u8]) -> Option<String> {
    let mut s = JsonScanner::new();
    match s.feed(prefix) {
        Scan::Done(n) => return String::from_utf8(prefix[..n].to_vec()).ok(),
        Scan::Error(_) => return None,
        Scan::NeedMore => {}
    }
    let (mut keep, tail) = s.completion()?;
    keep = keep.min(prefix.len());
    if s.in_string() {
        keep -= super::utf8::incomplete_tail(&prefix[..keep]);
    }
    let mut out = String::from_utf8_lossy(&prefix[..keep]).into_owned();
    out.push_str(&tail);
    Some(out)
}

/// Decodes a complete JSON string token (quotes included). `None` when the
/// token is not exactly one JSON string.
///
/// ```
/// use chat_autoparser_peg::json::decode_string;
/// assert_eq!(decode_string(br#""a\"b\u00e9""#).as_deref(), Some("a\"bé"));
/// assert_eq!(decode_string(br#""open"#), None);
/// ```
pub fn decode_string(token: &[u8]) -> Option<String> {
    serde_json::from_slice::<String>(token).ok()
}

/// Scans a complete value at the start of `text`; returns its length.
pub fn value_len(text: &[u8]) -> Result<usize, ScanError> {
    let mut s = JsonScanner::new();
    match s.feed(text) {
        Scan::Done(n) => Ok(n),
        Scan::Error(e) => Err(e),
        Scan::NeedMore if s.finish() => Ok(text.len()),
        Scan::NeedMore => Err(ScanError {
            offset: text.len(),
            kind: ScanErrorKind::Syntax,
        }),
    }
}

/// One step of matching a keyword literal (`true`, `None`...) byte by byte.
pub(super) enum WordStep {
    /// `b` is not the keyword's next byte.
    Mismatch,
    /// `b` completed the keyword.
    Done,
    /// `b` matched; the next byte to check is at this index.
    Next(u8),
}

/// Matches `b` against byte `at` of `word`.
pub(super) fn word_step(word: &[u8], at: u8, b: u8) -> WordStep {
    match word.get(at as usize) {
        Some(&w) if w == b && at as usize + 1 == word.len() => WordStep::Done,
        Some(&w) if w == b => WordStep::Next(at + 1),
        _ => WordStep::Mismatch,
    }
}

/// Accounts for `used` bytes of a chunk and says how the scan stands.
pub(super) fn end_of_chunk(consumed: &mut usize, used: usize, done: bool) -> Scan {
    *consumed += used;
    if done {
        Scan::Done(used)
    } else {
        Scan::NeedMore
    }
}

#[cfg(test)]
mod tests {
    /// The word-at-a-time search finds what a byte-at-a-time one finds, at
    /// every offset of texts that mix stops, UTF-8 and plain bytes.
    #[test]
    fn string_stop_finds_the_first_stop() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        let texts: [&[u8]; 6] = [
            b"plain text without any stop at all, long enough for words",
            "café 東京 🌧 \"quoted\" and\\ back\tslash".as_bytes(),
            b"\x1f\x00\x7f\x80\xff\x20\x21\x22\x5b\x5c\x5d\x60",
            b"!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEF\\\"",
            b"\x21\x22\x21\x22\x21\x22\x21\x22\x21\x22\x5c\x5c\x5c",
            b"\xa2\xa2\xa2\xa2\xa2\xa2\xa2\xa2\xa2\xdc\xdc\x1f",
        ];
        for text in texts {
            for from in 0..text.len() {
                for to in from..=text.len() {
                    let slice = &text[from..to];
                    assert_eq!(super::string_stop(slice), naive(slice), "{slice:?}");
                }
            }
        }
    }

    use super::*;

    fn scan_all(text: &str) -> Result<usize, ScanError> {
        value_len(text.as_bytes())
    }

    #[test]
    fn complete_values() {
        assert_eq!(
            scan_all(r#"{"a": [1, -2.5e+3, true, false, null, "x\n\u00e9"]}"#),
            Ok(51)
        );
        assert_eq!(scan_all("0"), Ok(1));
        assert_eq!(scan_all("-0.5E7 x"), Ok(6));
        assert_eq!(scan_all("[] ,"), Ok(2));
        assert_eq!(scan_all("{ }"), Ok(3));
        assert_eq!(scan_all(r#""""#), Ok(2));
        assert_eq!(scan_all("nullx"), Ok(4));
        assert_eq!(scan_all("12]"), Ok(2));
    }

    #[test]
    fn syntax_errors_name_the_byte() {
        let syntax = |offset| {
            Err(ScanError {
                offset,
                kind: ScanErrorKind::Syntax,
            })
        };
        assert_eq!(scan_all(" 1"), syntax(0));
        assert_eq!(scan_all("[1,]"), syntax(3));
        assert_eq!(scan_all(r#"{"a" 1}"#), syntax(5));
        assert_eq!(scan_all(r#"{"a":1,}"#), syntax(7));
        assert_eq!(scan_all("01"), Ok(1)); // a value, then a stray byte
        assert_eq!(scan_all("[01]"), syntax(2));
        assert_eq!(scan_all("-"), syntax(1));
        assert_eq!(scan_all("1."), syntax(2));
        assert_eq!(scan_all("\"a\nb\""), syntax(2));
        assert_eq!(scan_all(r#""\x""#), syntax(2));
        assert_eq!(scan_all(r#""\u12G4""#), syntax(5));
        assert_eq!(scan_all("trUe"), syntax(2));
        assert_eq!(scan_all("[1 2]"), syntax(3));
        assert_eq!(scan_all("{1:2}"), syntax(1));
        assert_eq!(scan_all("[1}"), syntax(2));
        assert_eq!(scan_all(""), syntax(0));
        assert_eq!(scan_all("[1, 2"), syntax(5));
    }

    #[test]
    fn kinds() {
        let mut s = JsonScanner::with_kind(JsonKind::Object, 8);
        assert_eq!(
            s.feed(b"[1]"),
            Scan::Error(ScanError {
                offset: 0,
                kind: ScanErrorKind::Syntax
            })
        );
        let mut s = JsonScanner::with_kind(JsonKind::String, 8);
        assert_eq!(s.feed(b"\"ab\"c"), Scan::Done(4));
        let mut s = JsonScanner::with_kind(JsonKind::Array, 8);
        assert_eq!(s.feed(b"[[]]"), Scan::Done(4));
    }

    #[test]
    fn depth_limit() {
        let mut s = JsonScanner::with_kind(JsonKind::Value, 3);
        assert_eq!(s.feed(b"[[[1]]]"), Scan::Done(7));
        s.reset();
        assert_eq!(
            s.feed(b"[{\"a\":[["),
            Scan::Error(ScanError {
                offset: 7,
                kind: ScanErrorKind::TooDeep
            })
        );
        let deep = "[".repeat(100_000);
        let mut s = JsonScanner::new();
        assert!(matches!(
            s.feed(deep.as_bytes()),
            Scan::Error(ScanError {
                offset: 128,
                kind: ScanErrorKind::TooDeep
            })
        ));
    }

    #[test]
    fn pieces_equal_whole() {
        let text = br#"{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2.5e3], "ok": true}} rest"#;
        let whole = value_len(text).unwrap();
        for size in 1..8 {
            let mut s = JsonScanner::new();
            let mut fed = 0;
            let mut end = None;
            for piece in text.chunks(size) {
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

    #[test]
    fn top_level_number_needs_an_end() {
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(b"12"), Scan::NeedMore);
        assert_eq!(s.feed(b"3"), Scan::NeedMore);
        assert!(s.finish());
        assert!(s.is_done());
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(b"12."), Scan::NeedMore);
        assert!(!s.finish());
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(b"[12"), Scan::NeedMore);
        assert!(!s.finish());
    }

    #[test]
    fn progress_reports() {
        let mut s = JsonScanner::new();
        assert_eq!(s.feed(br#"{"a": [1, {"b": "x"#), Scan::NeedMore);
        assert_eq!(s.depth(), 3);
        assert!(s.in_string());
        assert_eq!(s.consumed(), 18);
        assert!(!s.is_done());
    }

    #[test]
    fn completions() {
        let c = |t: &str| complete(t.as_bytes());
        assert_eq!(c("{").as_deref(), Some("{}"));
        assert_eq!(c(r#"{"na"#).as_deref(), Some("{}"));
        assert_eq!(c(r#"{"name""#).as_deref(), Some("{}"));
        assert_eq!(c(r#"{"name": "#).as_deref(), Some("{}"));
        assert_eq!(c(r#"{"name": "f", "#).as_deref(), Some(r#"{"name": "f"}"#));
        assert_eq!(
            c(r#"{"name": "f", "arguments": {"a": 1"#).as_deref(),
            Some(r#"{"name": "f", "arguments": {"a": 1}}"#)
        );
        assert_eq!(c(r#"{"a": "x\"#).as_deref(), Some(r#"{"a": "x"}"#));
        assert_eq!(c(r#"{"a": "x\u00"#).as_deref(), Some(r#"{"a": "x"}"#));
        assert_eq!(c(r#"["x\n"#).as_deref(), Some(r#"["x\n"]"#));
        assert_eq!(c("[-").as_deref(), Some("[-0]"));
        assert_eq!(c("[1.").as_deref(), Some("[1.0]"));
        assert_eq!(c("[1e+").as_deref(), Some("[1e+0]"));
        assert_eq!(c("[12").as_deref(), Some("[12]"));
        assert_eq!(c("[").as_deref(), Some("[]"));
        assert_eq!(c("[[1], ").as_deref(), Some("[[1]]"));
        assert_eq!(c("nu").as_deref(), Some("null"));
        assert_eq!(c("\"é").as_deref(), Some("\"é\""));
        assert_eq!(complete(&"\"é".as_bytes()[..2]).as_deref(), Some("\"\""));
        assert_eq!(c("").as_deref(), None);
        assert_eq!(c("x"), None);
        assert_eq!(c("[1] x").as_deref(), Some("[1]"));
        // Every completion is valid JSON.
        let text = r#"{"a": [1, {"b": "x\"y"}, -2.5e3, null], "c": {}}"#;
        for cut in 1..text.len() {
            let done = complete(&text.as_bytes()[..cut]).unwrap();
            assert!(
                serde_json::from_str::<serde_json::Value>(&done).is_ok(),
                "{cut}: {done}"
            );
        }
    }

    #[test]
    fn decode() {
        assert_eq!(decode_string(br#""\ud83d\ude00""#).as_deref(), Some("😀"));
        assert_eq!(decode_string(b"\"a\" "), Some("a".into()));
        assert_eq!(decode_string(b"1"), None);
    }
}
