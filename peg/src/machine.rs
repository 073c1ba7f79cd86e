//! The parsing machine: a backtracking PEG machine that can stop at the end of
//! partial input and resume where it stopped.
//!
//! State: the current instruction `pc`, the position `pos`, a stack of
//! backtrack entries and rule return addresses, and a log of capture
//! openings and closings. An entry remembers where to resume, the position and
//! the log length to restore, whether it is *live* (dead entries, made by
//! `cut`/`commit`, are skipped when a failure unwinds) and whether it belongs
//! to a lookahead.
//!
//! Partial input: an instruction that cannot decide without bytes beyond the
//! end of the input *suspends*: the machine returns `Run::NeedMore` with its
//! state intact, and the next run re-executes that one instruction on the
//! longer input. Instructions are written so that re-executing is cheap and
//! gives the same result as running once on the whole input:
//!
//! - `Lit`, `Literals`, `Set`, `AnyChar`, `Eoi` suspend without consuming
//!   (re-checking costs at most the literal's length);
//! - `Span`, `Until`, `Rest` consume what is certain (for `Until`, up to the
//!   safe point before a possible delimiter start) and suspend there; resuming
//!   from that point is equivalent because those bytes cannot change the
//!   result;
//! - `Json` and `Python` keep their scanner's state across the suspension and
//!   continue with the new bytes only.
//!
//! So a run over the whole input and a sequence of runs over growing prefixes
//! execute the same instructions with the same results, and the extra work of
//! the sequence is bounded by the re-checked tails.
//!
//! An `Until` remembers, per matcher, where its last scan started and the
//! delimiter it stopped at (`ScanStop`): a later scan from a position between
//! the two stops there without scanning. Only definite stops are kept (a
//! delimiter found, or the end of final input), which more input cannot
//! move, so streamed and whole runs still agree.
//!
//! Commit point (what a stream may report): the log entries before the
//! bottom-most live entry's saved log length can never be truncated, and the
//! position can never again go below that entry's saved position (nor below
//! the current one); `Vm::commit_point` returns both. Live entries' saved
//! positions and log lengths never decrease from the bottom of the stack to
//! the top, so the bottom-most live entry gives the minimum.

use std::fmt;

use super::bytes::ByteSet;
use super::capture::LogEntry;
use super::compile::{Inner, Inst, GUARD_CALLS};
use super::json::{JsonKind, JsonScanner, Scan, ScanErrorKind, DEFAULT_MAX_DEPTH, STRING_STOPS};
use super::matcher::{Find, Longest, MultiLiteral};
use super::python::PyScanner;
use super::utf8;

/// Why a parse failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    /// The furthest position at which the grammar failed to match (for
    /// [`ParseErrorKind::TooDeep`] from rule recursion: where it happened).
    pub offset: usize,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

/// The kinds of parse errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The grammar does not match the input.
    NoMatch,
    /// The furthest failure was a JSON or Python value nested deeper than the
    /// limit, or rules recursed deeper than the limit.
    TooDeep,
    /// A bug in the engine (an instruction found the stack in a state the
    /// compiler rules out). Reported rather than panicking.
    Internal,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParseErrorKind::NoMatch => {
                write!(f, "no match (furthest failure at byte {})", self.offset)
            }
            ParseErrorKind::TooDeep => write!(f, "nesting too deep at byte {}", self.offset),
            ParseErrorKind::Internal => write!(f, "internal parser error at byte {}", self.offset),
        }
    }
}

impl std::error::Error for ParseError {}

/// One stack frame.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Frame {
    /// A backtrack entry; `depth`: captures open when it was pushed.
    Alt {
        pc: u32,
        pos: usize,
        log: usize,
        live: bool,
        look: bool,
        depth: u32,
    },
    Ret {
        pc: u32,
    },
    /// A recovery entry: a failure that reaches it continues at `pc` from
    /// the failure position, closing the captures opened since (`depth`).
    /// Not live: it never holds back the commit point.
    Recover {
        pc: u32,
        depth: u32,
    },
}

/// Every byte stops plain text: outside a string, a JSON value's bytes go
/// to the scanner.
const EVERY_BYTE: ByteSet = ByteSet::range(0, 255);

/// How a suspended machine takes plain text without a step
/// ([`Vm::plain_text`]), and how far such text has gone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plain {
    /// Text without these bytes is plain whatever came before it.
    pub stops: ByteSet,
    /// In an `Until`: its matcher, for text with stop bytes that still
    /// completes no delimiter. `None` in a `Json` value: text with stop
    /// bytes goes to the scanner ([`Vm::feed_json`]).
    pub until: Option<u32>,
    /// In an `Until`: the automaton's state at the end of the input, not
    /// the root (0) when a delimiter prefix is held back.
    pub held: u32,
    /// The open captures' text is final up to here (the start of the held
    /// delimiter prefix; the end of the input in a JSON value).
    pub sent: usize,
}

/// The input the machine reads: `bytes` are the input from `base` on (a
/// stream drops what no step can read again). Positions are absolute.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window<'a> {
    pub bytes: &'a [u8],
    pub base: usize,
    /// Where the input says which bytes were sampled as special tokens
    /// ([`Stream::special_spans`](crate::Stream::special_spans)): their
    /// spans, sorted; `None` when it does not say.
    pub spans: Option<&'a [(usize, usize)]>,
}

impl<'a> Window<'a> {
    /// All of `bytes`, from position 0.
    #[inline]
    pub fn whole(bytes: &'a [u8]) -> Window<'a> {
        Window {
            bytes,
            base: 0,
            spans: None,
        }
    }

    /// The end of the input (absolute).
    #[inline]
    pub fn end(&self) -> usize {
        self.base + self.bytes.len()
    }

    /// Where `pos` is in `bytes`. Callers never ask below `base`
    /// ([`Vm::oldest_needed`]); if one did, it would see the window's start.
    #[inline]
    fn index(&self, pos: usize) -> usize {
        debug_assert!(
            pos >= self.base,
            "position {pos} before the window at {}",
            self.base
        );
        pos.saturating_sub(self.base)
    }

    /// The bytes from `pos` to the end.
    #[inline]
    pub fn from(&self, pos: usize) -> &'a [u8] {
        self.bytes.get(self.index(pos)..).unwrap_or(&[])
    }

    /// The bytes `from..to`, if the window has them.
    #[inline]
    pub fn get(&self, from: usize, to: usize) -> Option<&'a [u8]> {
        self.bytes
            .get(from.checked_sub(self.base)?..to.checked_sub(self.base)?)
    }

    /// [`utf8::safe_end`] at an absolute position.
    #[inline]
    pub fn safe_end(&self, end: usize) -> usize {
        self.base + utf8::safe_end(self.bytes, self.index(end))
    }

    /// [`MultiLiteral::find`] from an absolute position.
    #[inline]
    fn find(&self, m: &MultiLiteral, from: usize, at_end: bool) -> Find {
        match m.find(self.bytes, self.index(from), at_end) {
            Find::Found(at) => Find::Found(self.base + at),
            Find::NeedMore { safe } => Find::NeedMore {
                safe: self.base + safe,
            },
            Find::None => Find::None,
        }
    }

    /// [`MultiLiteral::longest_at`] at an absolute position.
    #[inline]
    fn longest_at(&self, m: &MultiLiteral, at: usize, at_end: bool) -> Longest {
        m.longest_at(self.bytes, self.index(at), at_end)
    }

    /// Whether `lit`, matched at `at`, came from the tokens it names: each
    /// special token in it (leftmost-longest, `special`) spans exactly one
    /// special-token span of the input. Always when the input gives no
    /// spans or the grammar declares no special tokens.
    #[inline]
    fn sampled(&self, special: Option<&MultiLiteral>, lit: &[u8], at: usize) -> bool {
        let (Some(special), Some(spans)) = (special, self.spans) else {
            return true;
        };
        let mut from = 0;
        while let Find::Found(start) = special.find(lit, from, true) {
            let Longest::Match(len) = special.longest_at(lit, start, true) else {
                return true;
            };
            if spans
                .binary_search(&(at + start, at + start + len))
                .is_err()
            {
                return false;
            }
            from = start + len;
        }
        true
    }

    /// The longest literal of `m` at `at` that came from its tokens
    /// ([`sampled`](Self::sampled)), after `longest_at` found one of `n`
    /// bytes there.
    fn longest_sampled(
        &self,
        special: Option<&MultiLiteral>,
        m: &MultiLiteral,
        at: usize,
        n: usize,
    ) -> Longest {
        let rest = self.from(at);
        if self.sampled(special, &rest[..n.min(rest.len())], at) {
            return Longest::Match(n);
        }
        m.literals()
            .iter()
            .filter(|l| l.len() < n && rest.starts_with(l))
            .map(|l| l.len())
            .filter(|&len| self.sampled(special, &rest[..len], at))
            .max()
            .map_or(Longest::NoMatch, Longest::Match)
    }

    /// [`find`](Self::find), skipping delimiters that did not come from
    /// their tokens ([`sampled`](Self::sampled)).
    #[inline]
    fn find_sampled(
        &self,
        special: Option<&MultiLiteral>,
        m: &MultiLiteral,
        from: usize,
        at_end: bool,
    ) -> Find {
        let mut from = from;
        loop {
            match self.find(m, from, at_end) {
                Find::Found(at) if special.is_some() => {
                    match self.delimiter_sampled(special, m, at, at_end) {
                        Some(true) => return Find::Found(at),
                        Some(false) => from = at + 1,
                        None => return Find::NeedMore { safe: at },
                    }
                }
                found => return found,
            }
        }
    }

    /// After `find` found a delimiter of `m` at `at`: whether one that came
    /// from its tokens starts there (`Some(true)`), none can
    /// (`Some(false)`: the scan goes on past `at`), or a longer delimiter
    /// cut by the end of the input still may (`None`, unless `at_end`).
    fn delimiter_sampled(
        &self,
        special: Option<&MultiLiteral>,
        m: &MultiLiteral,
        at: usize,
        at_end: bool,
    ) -> Option<bool> {
        let rest = self.from(at);
        let mut cut = false;
        for l in m.literals() {
            if rest.starts_with(l) {
                if self.sampled(special, l, at) {
                    return Some(true);
                }
            } else if l.starts_with(rest) {
                cut = true;
            }
        }
        (at_end || !cut).then_some(false)
    }
}

/// Where a scan of an `Until` matcher stopped: started at `from`, it
/// stopped at `to`, a delimiter (or the end of final input). A scan of the
/// same matcher from any position in `from..=to` stops at `to` too: `to`
/// is the leftmost delimiter from `from` on, so from every later position
/// up to it. So a look ahead for the same delimiters repeated at many
/// positions before them (`and(seq([until(end), end]))` at every call
/// marker of a reasoning block: does the block close later?) scans once,
/// not once per position. `sampled`: whether delimiters had to come from
/// their tokens (a stream that starts saying where its special tokens are
/// scans differently).
#[derive(Debug, Clone, Copy)]
struct ScanStop {
    from: usize,
    to: usize,
    sampled: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    NeedMore,
    Matched,
    Failed(ParseError),
}

/// The machine's state.
#[derive(Debug, Clone)]
pub(crate) struct Vm {
    pub pc: u32,
    pub pos: usize,
    pub stack: Vec<Frame>,
    /// Capture log; entry `i` of the vector is entry `log_base + i` overall.
    pub log: Vec<LogEntry>,
    pub log_base: usize,
    /// Captures currently open on the log.
    depth: u32,
    calls: usize,
    /// A `Json`/`Python` instruction is suspended mid-value.
    scanning: bool,
    /// A scanner verdict reached by [`Vm::resume_suspended`], for `run`.
    pending: Option<(Scan, usize)>,
    json: JsonScanner,
    py: PyScanner,
    farthest: usize,
    farthest_deep: bool,
    /// By matcher: where its last `Until` scan stopped ([`ScanStop`]).
    scan_stops: Vec<Option<ScanStop>>,
    /// An `Until` suspended at `pc`: where its scan started (it resumes
    /// from the safe point, but what it finds holds from the start).
    until_from: Option<(u32, usize)>,
}

impl Vm {
    pub fn new() -> Vm {
        // Room for a short output's parse: grown from empty, the stack and
        // the log were reallocated about five times per parse, 8% of a
        // 66-byte parse's instructions.
        Vm {
            pc: 0,
            pos: 0,
            stack: Vec::with_capacity(32),
            log: Vec::with_capacity(32),
            log_base: 0,
            depth: 0,
            calls: 0,
            scanning: false,
            pending: None,
            json: JsonScanner::new(),
            py: PyScanner::new(),
            farthest: 0,
            farthest_deep: false,
            scan_stops: Vec::new(),
            until_from: None,
        }
    }

    /// As new, keeping the allocations of the stack, the log, the scanners
    /// and the scan stops (`Stream::reset`). Every field is named, so a new
    /// one cannot be forgotten here.
    pub fn reset(&mut self) {
        let Vm {
            pc,
            pos,
            stack,
            log,
            log_base,
            depth,
            calls,
            scanning,
            pending,
            json,
            py,
            farthest,
            farthest_deep,
            scan_stops,
            until_from,
        } = self;
        (*pc, *pos, *log_base, *depth, *calls) = (0, 0, 0, 0, 0);
        (*scanning, *pending, *until_from) = (false, None, None);
        (*farthest, *farthest_deep) = (0, false);
        stack.clear();
        log.clear();
        scan_stops.clear();
        json.reset_to(JsonKind::Value, DEFAULT_MAX_DEPTH);
        py.reset_to(DEFAULT_MAX_DEPTH);
    }

    /// Pushes a choice's (or a lookahead's) entry: it resumes at `pc`
    /// with the position, log and depth the machine has now.
    #[inline(always)]
    fn push_alt(&mut self, pc: u32, look: bool) {
        let (pos, log, depth) = (self.pos, self.log_len(), self.depth);
        self.stack.push(Frame::Alt {
            pc,
            pos,
            log,
            live: true,
            look,
            depth,
        });
    }

    /// The overall length of the log.
    pub fn log_len(&self) -> usize {
        self.log_base + self.log.len()
    }

    /// `(log, pos)`: log entries before `log` are final, and the position
    /// will never again be below `pos`.
    #[inline]
    pub fn commit_point(&self) -> (usize, usize) {
        match self.first_live() {
            Some((log, pos)) => (log, pos.min(self.pos)),
            None => (self.log_len(), self.pos),
        }
    }

    /// The saved log length and position of the oldest live entry.
    #[inline]
    pub fn first_live(&self) -> Option<(usize, usize)> {
        self.stack.iter().find_map(|f| match *f {
            Frame::Alt {
                live: true,
                pos,
                log,
                ..
            } => Some((log, pos)),
            _ => None,
        })
    }

    /// The lowest position the machine may read again: the current one, or
    /// one a backtrack entry restores (a live entry on failure, a
    /// lookahead's entry when the lookahead ends, live or cut).
    pub fn oldest_needed(&self) -> usize {
        self.stack
            .iter()
            .filter_map(|f| match *f {
                Frame::Alt {
                    pos, live, look, ..
                } if live || look => Some(pos),
                _ => None,
            })
            .fold(self.pos, usize::min)
    }

    /// Forgets log entries before `upto` (which must be final).
    pub fn drain_log(&mut self, upto: usize) {
        let k = upto.saturating_sub(self.log_base).min(self.log.len());
        self.log.drain(..k);
        self.log_base += k;
    }

    /// Where a scan of matcher `index` from the current position stops,
    /// when its last scan already says ([`ScanStop`]).
    #[inline]
    fn known_stop(&self, index: u32, sampled: bool) -> Option<usize> {
        let stop = (*self.scan_stops.get(index as usize)?)?;
        let covers = stop.from <= self.pos && self.pos <= stop.to;
        (covers && stop.sampled == sampled).then_some(stop.to)
    }

    fn remember_stop(&mut self, index: u32, stop: ScanStop) {
        let index = index as usize;
        if self.scan_stops.len() <= index {
            self.scan_stops.resize(index + 1, None);
        }
        self.scan_stops[index] = Some(stop);
    }

    fn internal(&self) -> Run {
        Run::Failed(ParseError {
            offset: self.pos,
            kind: ParseErrorKind::Internal,
        })
    }

    /// A guarded choice whose alternative `fails` here goes straight to
    /// the next one at `target`, leaving what pushing the entry and failing
    /// the alternative at this position would (`compile::guard_choices`);
    /// true when it did. Near the depth bound the alternative is tried, as
    /// an unguarded choice's would be.
    #[inline(always)]
    fn skips_guarded(&mut self, fails: bool, target: u32, max_depth: usize) -> bool {
        if !(fails && self.calls + GUARD_CALLS < max_depth) {
            return false;
        }
        self.failed_at(self.pos, false);
        self.scanning = false;
        self.pc = target;
        true
    }

    /// Records a failure at `at` as the furthest one, if it is.
    #[inline]
    fn failed_at(&mut self, at: usize, deep: bool) {
        if at > self.farthest {
            self.farthest = at;
            self.farthest_deep = deep;
        } else if at == self.farthest && deep {
            self.farthest_deep = true;
        }
    }

    /// Records a failure at `at` and unwinds to the nearest live entry.
    /// `Some(error)` when none is left.
    fn fail(&mut self, at: usize, deep: bool) -> Option<ParseError> {
        self.failed_at(at, deep);
        self.scanning = false;
        loop {
            match self.stack.pop() {
                None => {
                    let kind = if self.farthest_deep {
                        ParseErrorKind::TooDeep
                    } else {
                        ParseErrorKind::NoMatch
                    };
                    return Some(ParseError {
                        offset: self.farthest,
                        kind,
                    });
                }
                Some(Frame::Ret { .. }) => self.calls = self.calls.saturating_sub(1),
                Some(Frame::Alt { live: false, .. }) => {}
                Some(Frame::Alt {
                    pc,
                    pos,
                    log,
                    live: true,
                    depth,
                    ..
                }) => {
                    self.pc = pc;
                    self.pos = pos;
                    self.log.truncate(log.saturating_sub(self.log_base));
                    self.depth = depth;
                    return None;
                }
                Some(Frame::Recover { pc, depth }) => {
                    // Keep everything the body did; close what it left open
                    // where it failed, and go on from there.
                    let at = at.max(self.pos);
                    for _ in depth..self.depth {
                        self.log.push(LogEntry {
                            pos: at,
                            tag: Default::default(),
                            open: false,
                        });
                    }
                    self.depth = depth;
                    self.pos = at;
                    self.pc = pc;
                    return None;
                }
            }
        }
    }

    fn pop_alt(&mut self) -> Option<(u32, usize, usize)> {
        match self.stack.pop() {
            Some(Frame::Alt { pc, pos, log, .. }) => Some((pc, pos, log)),
            _ => None,
        }
    }

    /// Resumes a suspended text instruction (`Until`, `Span`, `Rest`, or a
    /// `Json` value in progress) on more input when it suspends again, which
    /// is what most pushes of a stream do; `false` when the full machine must
    /// run. Does exactly what [`Vm::run`] would do for that instruction.
    #[inline]
    pub fn resume_suspended(&mut self, p: &Inner, input: Window) -> bool {
        if self.pending.is_some() {
            return false;
        }
        let len = input.end();
        match p.insts.get(self.pc as usize) {
            Some(Inst::Until(m)) => match p
                .matchers
                .get(*m as usize)
                .map(|m| input.find(m, self.pos, false))
            {
                Some(Find::NeedMore { safe }) => {
                    self.pos = self.pos.max(safe);
                    true
                }
                _ => false,
            },
            Some(Inst::Span(s)) => {
                let Some(set) = p.sets.get(*s as usize) else {
                    return false;
                };
                let rest = input.from(self.pos);
                let pos = self.pos + rest.iter().take_while(|&&b| set.contains(b)).count();
                if pos < len {
                    return false;
                }
                self.pos = pos;
                true
            }
            Some(Inst::Rest) => {
                self.pos = len.max(self.pos);
                true
            }
            Some(inst @ (Inst::Json(_) | Inst::Python)) if self.scanning => {
                let piece = input.from(self.pos);
                let (start, scan) = if matches!(inst, Inst::Json(_)) {
                    (
                        self.pos.saturating_sub(self.json.consumed()),
                        self.json.feed(piece),
                    )
                } else {
                    (
                        self.pos.saturating_sub(self.py.consumed()),
                        self.py.feed(piece),
                    )
                };
                if scan == Scan::NeedMore {
                    self.pos = len.max(self.pos);
                    true
                } else {
                    // The value ended or failed: `run` takes the verdict over.
                    self.pending = Some((scan, start));
                    false
                }
            }
            _ => false,
        }
    }

    /// How plain text appended at `at`, the end of the input, moves the
    /// suspended machine without a step, or `None` when it cannot (see
    /// [`Plain`]): in an `Until` with nothing pending but a held-back
    /// delimiter prefix `input[pos..at]`, text that completes no delimiter
    /// only moves the scan along; in a JSON value scanned up to `at`, text
    /// the value goes on past only moves the scanner (inside a string, text
    /// without [`STRING_STOPS`] without looking at it).
    #[inline]
    pub fn plain_text(&self, p: &Inner, input: Window, at: usize) -> Option<Plain> {
        if self.pending.is_some() || self.pos > at {
            return None;
        }
        match p.insts.get(self.pc as usize)? {
            Inst::Until(m) if !self.scanning => {
                let matcher = p.matchers.get(*m as usize)?;
                let stops = matcher.first_bytes()?;
                // The held-back bytes are a delimiter prefix: rescanned from
                // the root they give the state the scan stopped in.
                let held = matcher.scan_plain(0, input.get(self.pos, at)?)?;
                let plain = Plain {
                    stops,
                    until: Some(*m),
                    held: held as u32,
                    sent: self.pos,
                };
                (matcher.depth(held) == at - self.pos).then_some(plain)
            }
            Inst::Json(_) if self.scanning && self.pos == at => Some(Plain {
                stops: self.json_stops(),
                until: None,
                held: 0,
                sent: at,
            }),
            _ => None,
        }
    }

    /// In a suspended `Json` value: the bytes the scanner must see
    /// ([`feed_json`](Self::feed_json)); others only continue a string.
    #[inline]
    pub fn json_stops(&self) -> ByteSet {
        if self.json.in_plain_string() {
            STRING_STOPS
        } else {
            EVERY_BYTE
        }
    }

    /// Feeds `piece`, appended at `pos`, to the suspended `Json` value:
    /// `true` when the value goes on past it (the machine moves to its
    /// end), else `false` with the verdict pending for [`run`](Self::run),
    /// as [`resume_suspended`](Self::resume_suspended) leaves it.
    pub fn feed_json(&mut self, piece: &[u8]) -> bool {
        let start = self.pos.saturating_sub(self.json.consumed());
        match self.json.feed(piece) {
            Scan::NeedMore => {
                self.pos += piece.len();
                true
            }
            scan => {
                self.pending = Some((scan, start));
                false
            }
        }
    }

    /// Moves the suspended instruction over plain text ([`Plain`]) up to
    /// `to`, of which it has seen up to `seen`; an `Until` stops at `sent`,
    /// before the delimiter prefix it holds back, and rescans that.
    #[inline]
    pub fn skip_text(&mut self, plain: &Plain, seen: usize, to: usize) {
        if plain.until.is_some() {
            self.pos = plain.sent;
        } else {
            self.pos = to;
            self.json.skip_plain(to - seen);
        }
    }

    /// Runs until the program matches, fails, or needs input beyond `input`
    /// (only when `fin` is false: `fin` says `input` is the whole input).
    pub fn run(&mut self, p: &Inner, input: Window, fin: bool) -> Run {
        macro_rules! fail {
            ($at:expr) => {{
                let at = $at;
                if let Some(e) = self.fail(at, false) {
                    return Run::Failed(e);
                }
                continue;
            }};
        }
        let len = input.end();
        // Special tokens to check literals against, when the input has spans.
        let special = p.special.as_ref().filter(|_| input.spans.is_some());
        loop {
            let Some(inst) = p.insts.get(self.pc as usize) else {
                return self.internal();
            };
            match inst {
                Inst::Lit(lit) => {
                    let rest = input.from(self.pos);
                    if rest.len() >= lit.len() {
                        if rest[..lit.len()] == lit[..] && input.sampled(special, lit, self.pos) {
                            self.pos += lit.len();
                            self.pc += 1;
                        } else {
                            fail!(self.pos)
                        }
                    } else if !fin && lit.starts_with(rest) {
                        return Run::NeedMore;
                    } else {
                        fail!(self.pos)
                    }
                }
                Inst::Set(s) => {
                    let Some(set) = p.sets.get(*s as usize) else {
                        return self.internal();
                    };
                    match input.from(self.pos).first() {
                        Some(&b) if set.contains(b) => {
                            self.pos += 1;
                            self.pc += 1;
                        }
                        Some(_) => fail!(self.pos),
                        None if fin => fail!(self.pos),
                        None => return Run::NeedMore,
                    }
                }
                Inst::Span(s) => {
                    let Some(set) = p.sets.get(*s as usize) else {
                        return self.internal();
                    };
                    let rest = input.from(self.pos);
                    self.pos += rest.iter().take_while(|&&b| set.contains(b)).count();
                    if self.pos >= len && !fin {
                        return Run::NeedMore;
                    }
                    self.pc += 1;
                }
                Inst::AnyChar => {
                    let rest = input.from(self.pos);
                    let Some(&b) = rest.first() else {
                        if fin {
                            fail!(self.pos)
                        }
                        return Run::NeedMore;
                    };
                    let need = utf8::char_len(b);
                    if need <= 1 {
                        self.pos += 1;
                    } else {
                        let avail = rest.len();
                        let seen = need.min(avail);
                        let valid = (1..seen).all(|j| utf8::is_continuation(rest[j]));
                        if valid && avail < need && !fin {
                            return Run::NeedMore;
                        }
                        self.pos += if valid && avail >= need { need } else { 1 };
                    }
                    self.pc += 1;
                }
                Inst::Literals(_) | Inst::Names(_) => {
                    let m = match inst {
                        Inst::Literals(m) => p.matchers.get(*m as usize),
                        Inst::Names(slot) => match p.names.get(*slot as usize) {
                            Some(set) => Some(set),
                            // No set given: nothing is a name there.
                            None => fail!(self.pos),
                        },
                        _ => None,
                    };
                    let Some(m) = m else {
                        return self.internal();
                    };
                    let longest = match input.longest_at(m, self.pos, fin) {
                        Longest::Match(n) if special.is_some() => {
                            input.longest_sampled(special, m, self.pos, n)
                        }
                        longest => longest,
                    };
                    match longest {
                        Longest::Match(n) => {
                            self.pos += n;
                            self.pc += 1;
                        }
                        Longest::NoMatch => fail!(self.pos),
                        Longest::NeedMore => return Run::NeedMore,
                    }
                }
                Inst::Until(index) => {
                    let Some(m) = p.matchers.get(*index as usize) else {
                        return self.internal();
                    };
                    // A resumed scan: it started before its safe point.
                    let from = match self.until_from.take() {
                        Some((pc, from)) if pc == self.pc => from,
                        _ => self.pos,
                    };
                    let sampled = special.is_some();
                    if let Some(to) = self.known_stop(*index, sampled) {
                        self.pos = to;
                        self.pc += 1;
                        continue;
                    }
                    let to = match input.find_sampled(special, m, self.pos, fin) {
                        Find::Found(at) => at,
                        Find::NeedMore { safe } => {
                            self.pos = self.pos.max(safe);
                            self.until_from = Some((self.pc, from));
                            return Run::NeedMore;
                        }
                        Find::None => len,
                    };
                    self.remember_stop(*index, ScanStop { from, to, sampled });
                    self.pos = to;
                    self.pc += 1;
                }
                Inst::Rest => {
                    self.pos = len.max(self.pos);
                    if !fin {
                        return Run::NeedMore;
                    }
                    self.pc += 1;
                }
                Inst::Eoi => {
                    if self.pos < len {
                        fail!(self.pos)
                    }
                    if !fin {
                        return Run::NeedMore;
                    }
                    self.pc += 1;
                }
                Inst::Json(kind) => {
                    let (scan, start) = match self.pending.take() {
                        Some(verdict) => verdict,
                        None => {
                            if !self.scanning {
                                self.json.reset_to(*kind, p.max_depth);
                                self.scanning = true;
                            }
                            let start = self.pos.saturating_sub(self.json.consumed());
                            (self.json.feed(input.from(self.pos)), start)
                        }
                    };
                    if scan == Scan::NeedMore {
                        self.pos = len.max(self.pos);
                    }
                    let finished = fin && scan == Scan::NeedMore && self.json.finish();
                    if let Some(run) = self.after_scan(scan, start, fin, finished) {
                        return run;
                    }
                }
                Inst::Python => {
                    let (scan, start) = match self.pending.take() {
                        Some(verdict) => verdict,
                        None => {
                            if !self.scanning {
                                self.py.reset_to(p.max_depth);
                                self.scanning = true;
                            }
                            let start = self.pos.saturating_sub(self.py.consumed());
                            (self.py.feed(input.from(self.pos)), start)
                        }
                    };
                    if scan == Scan::NeedMore {
                        self.pos = len.max(self.pos);
                    }
                    let finished = fin && scan == Scan::NeedMore && self.py.finish();
                    if let Some(run) = self.after_scan(scan, start, fin, finished) {
                        return run;
                    }
                }
                Inst::Guarded(target, first, ends) => {
                    let Some(first) = p.sets.get(*first as usize) else {
                        return self.internal();
                    };
                    let fails = match input.from(self.pos).first() {
                        Some(&b) => !first.contains(b),
                        None => fin && !ends,
                    };
                    if self.skips_guarded(fails, *target, p.max_depth) {
                        continue;
                    }
                    self.push_alt(*target, false);
                    self.pc += 1;
                }
                Inst::GuardedLit(target, lit) => {
                    let rest = input.from(self.pos);
                    // What the alternative's `Lit` would make of the input.
                    let fails = match rest.get(..lit.len()) {
                        Some(head) => head != &lit[..],
                        None => fin || !lit.starts_with(rest),
                    };
                    if self.skips_guarded(fails, *target, p.max_depth) {
                        continue;
                    }
                    self.push_alt(*target, false);
                    self.pc += 1;
                }
                Inst::Choice(target) | Inst::Look(target) => {
                    self.push_alt(*target, matches!(inst, Inst::Look(_)));
                    self.pc += 1;
                }
                Inst::Commit(target) => {
                    if self.pop_alt().is_none() {
                        return self.internal();
                    }
                    self.pc = *target;
                }
                Inst::PartialCommit(target) => {
                    let log_len = self.log_len();
                    match self.stack.last_mut() {
                        Some(Frame::Alt {
                            pc, pos, log, live, ..
                        }) => {
                            if *pos == self.pos {
                                // The step consumed nothing: leave the loop.
                                self.pc = *pc;
                                self.stack.pop();
                            } else {
                                *pos = self.pos;
                                *log = log_len;
                                *live = true;
                                self.pc = *target;
                            }
                        }
                        _ => return self.internal(),
                    }
                }
                Inst::BackCommit(target) => {
                    let Some((_, pos, log)) = self.pop_alt() else {
                        return self.internal();
                    };
                    self.pos = pos;
                    self.log.truncate(log.saturating_sub(self.log_base));
                    self.pc = *target;
                }
                Inst::FailTwice => {
                    // `!e` matched `e`: fail where the lookahead started.
                    let Some((_, pos, _)) = self.pop_alt() else {
                        return self.internal();
                    };
                    self.pos = pos;
                    fail!(pos)
                }
                Inst::Fail => fail!(self.pos),
                Inst::Recover(target) => {
                    self.stack.push(Frame::Recover {
                        pc: *target,
                        depth: self.depth,
                    });
                    self.pc += 1;
                }
                Inst::PopRecover(target) => match self.stack.pop() {
                    Some(Frame::Recover { .. }) => self.pc = *target,
                    _ => return self.internal(),
                },
                Inst::Cut => {
                    if let Some(Frame::Alt { live, .. }) = self.stack.last_mut() {
                        *live = false;
                    }
                    self.pc += 1;
                }
                Inst::CommitAll => {
                    for f in self.stack.iter_mut().rev() {
                        match f {
                            Frame::Alt { look: true, .. } => break,
                            Frame::Alt { live, .. } => *live = false,
                            Frame::Ret { .. } | Frame::Recover { .. } => {}
                        }
                    }
                    self.pc += 1;
                }
                Inst::Call(target) => {
                    if self.calls >= p.max_depth {
                        return Run::Failed(ParseError {
                            offset: self.pos,
                            kind: ParseErrorKind::TooDeep,
                        });
                    }
                    self.calls += 1;
                    self.stack.push(Frame::Ret { pc: self.pc + 1 });
                    self.pc = *target;
                }
                Inst::Ret => match self.stack.pop() {
                    Some(Frame::Ret { pc }) => {
                        self.calls = self.calls.saturating_sub(1);
                        self.pc = pc;
                    }
                    _ => return self.internal(),
                },
                Inst::Open(tag) => {
                    self.log.push(LogEntry {
                        pos: self.pos,
                        tag: *tag,
                        open: true,
                    });
                    self.depth += 1;
                    self.pc += 1;
                }
                Inst::Close => {
                    self.log.push(LogEntry {
                        pos: self.pos,
                        tag: Default::default(),
                        open: false,
                    });
                    self.depth = self.depth.saturating_sub(1);
                    self.pc += 1;
                }
                Inst::End => return Run::Matched,
            }
        }
    }

    /// Applies a scanner's verdict to a `Json`/`Python` instruction. `None`:
    /// keep running.
    fn after_scan(&mut self, scan: Scan, start: usize, fin: bool, finished: bool) -> Option<Run> {
        match scan {
            Scan::Done(n) => {
                self.pos += n;
                self.scanning = false;
                self.pc += 1;
                None
            }
            Scan::NeedMore => {
                // Every byte so far belongs to the value (`pos` is at the end).
                if !fin {
                    return Some(Run::NeedMore);
                }
                self.scanning = false;
                if finished {
                    self.pc += 1;
                    None
                } else {
                    let at = self.pos;
                    self.fail(at, false).map(Run::Failed)
                }
            }
            Scan::Error(e) => {
                let at = start + e.offset;
                self.fail(at, e.kind == ScanErrorKind::TooDeep)
                    .map(Run::Failed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::capture::Tag;
    use super::super::grammar::*;
    use super::*;

    fn run_all(g: Expr, input: &str) -> (Run, usize) {
        let p = Grammar::new(g).compile().unwrap();
        let mut vm = Vm::new();
        let r = vm.run(&p.inner, Window::whole(input.as_bytes()), true);
        (r, vm.pos)
    }

    fn run_partial(g: Expr, input: &str) -> (Run, usize) {
        let p = Grammar::new(g).compile().unwrap();
        let mut vm = Vm::new();
        let r = vm.run(&p.inner, Window::whole(input.as_bytes()), false);
        (r, vm.pos)
    }

    fn no_match(offset: usize) -> Run {
        Run::Failed(ParseError {
            offset,
            kind: ParseErrorKind::NoMatch,
        })
    }

    #[test]
    fn literals_wait_at_a_partial_marker() {
        let g = || seq([lit("ab"), lit("<tool_call>")]);
        assert_eq!(run_partial(g(), "ab<tool_ca"), (Run::NeedMore, 2));
        assert_eq!(run_partial(g(), "ab<tool_x"), (no_match(2), 2));
        assert_eq!(run_all(g(), "ab<tool_ca"), (no_match(2), 2));
        assert_eq!(run_all(g(), "ab<tool_call>"), (Run::Matched, 13));
    }

    #[test]
    fn until_stops_before_a_possible_delimiter() {
        let g = || seq([until(["</think>"]), lit("</think>")]);
        assert_eq!(run_partial(g(), "abc </th"), (Run::NeedMore, 4));
        assert_eq!(run_partial(g(), "abc </x"), (Run::NeedMore, 7));
        assert_eq!(run_all(g(), "abc </th"), (no_match(8), 8));
        assert_eq!(run_all(g(), "abc </think>"), (Run::Matched, 12));
    }

    #[test]
    fn resuming_continues_where_it_stopped() {
        let p = Grammar::new(seq([until(["</think>"]), lit("</think>"), json(), eoi()]))
            .compile()
            .unwrap();
        let mut vm = Vm::new();
        let full = "abc</think>{\"a\": [1, 2]}";
        let mut fed = String::new();
        for (k, ch) in full.chars().enumerate() {
            fed.push(ch);
            let r = vm.run(&p.inner, Window::whole(fed.as_bytes()), false);
            assert_eq!(r, Run::NeedMore, "after {k} chars");
        }
        assert_eq!(
            vm.run(&p.inner, Window::whole(fed.as_bytes()), true),
            Run::Matched
        );
        assert_eq!(vm.pos, full.len());
    }

    #[test]
    fn ordered_choice_and_lookahead() {
        assert_eq!(
            run_all(choice([lit("a"), lit("ab")]), "ab"),
            (Run::Matched, 1)
        );
        assert_eq!(
            run_all(seq([and(lit("a")), lit("ab")]), "ab"),
            (Run::Matched, 2)
        );
        assert_eq!(
            run_all(seq([not(lit("b")), any_char()]), "é"),
            (Run::Matched, 2)
        );
        assert_eq!(
            run_all(seq([not(lit("a")), any_char()]), "ab"),
            (no_match(0), 0)
        );
        assert_eq!(
            run_all(star(seq([not(lit("<")), any_char()])), "ab<c"),
            (Run::Matched, 2)
        );
    }

    #[test]
    fn cut_turns_backtracking_into_failure() {
        let g = || choice([seq([lit("<a>"), cut(), lit("x")]), lit("<a>y")]);
        assert_eq!(run_all(g(), "<a>y"), (no_match(3), 3));
        let g = || choice([seq([lit("<a>"), lit("x")]), lit("<a>y")]);
        assert_eq!(run_all(g(), "<a>y"), (Run::Matched, 4));
        // A cut in a loop step commits that step only.
        let g = || seq([star(seq([lit("a"), cut(), lit("b")])), lit("c")]);
        assert_eq!(run_all(g(), "ababc"), (Run::Matched, 5));
        assert_eq!(run_all(g(), "abac"), (no_match(3), 3));
    }

    #[test]
    fn commit_drops_every_pending_alternative() {
        let g = || {
            choice([
                seq([opt(seq([lit("<a>"), commit(), lit("x")])), lit("z")]),
                lit("<a>y"),
            ])
        };
        assert_eq!(run_all(g(), "<a>y"), (no_match(3), 3));
        assert_eq!(run_all(g(), "<a>xz"), (Run::Matched, 5));
        // Inside a lookahead, commit stops at the lookahead.
        let g = || {
            choice([
                seq([not(seq([lit("a"), commit(), lit("b")])), lit("ac")]),
                lit("q"),
            ])
        };
        assert_eq!(run_all(g(), "ac"), (Run::Matched, 2));
    }

    #[test]
    fn commit_point_follows_the_oldest_live_entry() {
        let p = Grammar::new(seq([
            cap(Tag(1), until(["<"])),
            opt(seq([lit("<x>"), cap(Tag(2), until(["</x>"]))])),
            rest(),
        ]))
        .compile()
        .unwrap();
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"hello <x>wor"), false),
            Run::NeedMore
        );
        // The option's entry is live: its capture is not final.
        assert_eq!(vm.commit_point(), (2, 6));
        let p = Grammar::new(seq([
            cap(Tag(1), until(["<"])),
            opt(seq([lit("<x>"), cut(), cap(Tag(2), until(["</x>"]))])),
            rest(),
        ]))
        .compile()
        .unwrap();
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"hello <x>wor"), false),
            Run::NeedMore
        );
        assert_eq!(vm.commit_point(), (3, 12));
    }

    #[test]
    fn depth_limits() {
        let p = Grammar::new(rule("r"))
            .rule("r", choice([seq([lit("("), rule("r"), lit(")")]), empty()]))
            .max_depth(4)
            .compile()
            .unwrap();
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"((()))"), true),
            Run::Matched
        );
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"((((("), true),
            Run::Failed(ParseError {
                offset: 4,
                kind: ParseErrorKind::TooDeep
            })
        );
        let p = Grammar::new(json()).max_depth(2).compile().unwrap();
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"[[[]]]"), true),
            Run::Failed(ParseError {
                offset: 2,
                kind: ParseErrorKind::TooDeep
            })
        );
    }

    #[test]
    fn json_and_python_values() {
        assert_eq!(
            run_all(seq([json(), lit(" x")]), "{\"a\": 1} x"),
            (Run::Matched, 10)
        );
        assert_eq!(run_all(seq([json(), lit("x")]), "12x"), (Run::Matched, 3));
        assert_eq!(run_all(json(), "12"), (Run::Matched, 2));
        assert_eq!(run_all(json(), "[1,]"), (no_match(3), 0));
        assert_eq!(run_all(json(), "[1"), (no_match(2), 2));
        assert_eq!(run_partial(json(), "[1"), (Run::NeedMore, 2));
        assert_eq!(
            run_all(seq([python(), lit(")")]), "('a', None))"),
            (Run::Matched, 12)
        );
        assert_eq!(run_all(json_object(), "[]"), (no_match(0), 0));
        assert_eq!(run_all(json_string(), "\"a\\\"b\""), (Run::Matched, 6));
    }

    #[test]
    fn any_char_waits_for_a_whole_character() {
        let e = "é".as_bytes();
        let p = Grammar::new(seq([any_char(), eoi()])).compile().unwrap();
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(&e[..1]), false),
            Run::NeedMore
        );
        assert_eq!(vm.pos, 0);
        assert_eq!(vm.run(&p.inner, Window::whole(e), true), Run::Matched);
        // An invalid sequence is one byte, at once.
        let mut vm = Vm::new();
        assert_eq!(
            vm.run(&p.inner, Window::whole(b"\xC3("), false),
            Run::Failed(ParseError {
                offset: 1,
                kind: ParseErrorKind::NoMatch
            })
        );
        let mut vm = Vm::new();
        assert_eq!(vm.run(&p.inner, Window::whole(b"\xC3"), true), Run::Matched);
    }

    #[test]
    fn literal_sets_and_classes() {
        let names = || literals(["get", "get_weather"]);
        assert_eq!(
            run_all(seq([names(), lit("\"")]), "get_weather\""),
            (Run::Matched, 12)
        );
        assert_eq!(
            run_partial(seq([names(), lit("\"")]), "get_wea"),
            (Run::NeedMore, 0)
        );
        assert_eq!(
            run_all(seq([names(), lit("\"")]), "get\""),
            (Run::Matched, 4)
        );
        assert_eq!(
            run_all(plus(class(ByteSet::range(b'0', b'9'))), "123a"),
            (Run::Matched, 3)
        );
        assert_eq!(
            run_partial(plus(class(ByteSet::range(b'0', b'9'))), "123"),
            (Run::NeedMore, 3)
        );
        assert_eq!(
            run_all(repeat(class(ByteSet::of(b"a")), 2, Some(3)), "aaaa"),
            (Run::Matched, 3)
        );
        assert_eq!(
            run_all(repeat(class(ByteSet::of(b"a")), 2, Some(3)), "ab"),
            (no_match(1), 1)
        );
    }

    #[test]
    fn empty_loop_steps_end_the_loop() {
        assert_eq!(
            run_all(seq([star(opt(lit("a"))), lit("b")]), "aab"),
            (Run::Matched, 3)
        );
        assert_eq!(run_all(star(empty()), ""), (Run::Matched, 0));
    }
}
