//! Compiling a grammar into instructions for the parsing machine.
//!
//! The instruction set is the one of a backtracking PEG machine (in the style
//! of LPeg's): `Choice` pushes a backtrack entry, `Commit` pops it after the
//! alternative matched, failure pops entries until a live one resumes its
//! alternative. Text-consuming instructions are coarse on purpose (a literal,
//! a literal set, a byte class run, `until`, a whole JSON or Python value):
//! each is resumable at the end of partial input, which is what makes
//! streaming cheap (see [`machine`](super::machine)).
//!
//! Layout: the start expression, `End`, then each rule's body followed by
//! `Ret`. Jump targets are absolute instruction indices.
//!
//! Invariants the machine relies on, guaranteed here:
//! - every `Commit`, `PartialCommit`, `BackCommit` and `FailTwice` runs with
//!   the backtrack entry of its own construct on top of the stack (a
//!   sub-expression that succeeded leaves the stack as it found it);
//! - `Cut` is only emitted where the top entry belongs to the innermost
//!   enclosing choice-like construct (never directly inside a lookahead);
//! - every jump target, set index and matcher index is in range.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::bytes::ByteSet;
use super::capture::Tag;
use super::grammar::{Expr, Grammar};
use super::json::JsonKind;
use super::matcher::MultiLiteral;

/// Most instructions a program may have (bounded repetitions are unrolled).
const MAX_INSTS: usize = 1 << 20;

/// One machine instruction.
#[derive(Debug, Clone)]
pub(crate) enum Inst {
    /// Match these bytes (shared with the grammar's literal).
    Lit(Arc<[u8]>),
    /// Match one byte of `sets[i]`.
    Set(u32),
    /// Match bytes of `sets[i]` while there are any.
    Span(u32),
    /// Match one UTF-8 character.
    AnyChar,
    /// Match the longest literal of `matchers[i]`.
    Literals(u32),
    /// Match the longest literal of the program's name set `i` (see
    /// [`Program::with_names`]).
    Names(u32),
    /// Advance to the first occurrence of a literal of `matchers[i]`.
    Until(u32),
    /// Advance to the end of the input.
    Rest,
    /// Match the end of the input.
    Eoi,
    /// Match a JSON value.
    Json(JsonKind),
    /// Match a Python literal.
    Python,
    /// Push a backtrack entry resuming at the target.
    Choice(u32),
    /// `Choice(target)` whose alternative reads first a byte of
    /// `sets[first]` (or fails where it starts: see [`guard_choices`]),
    /// and, unless `ends`, fails at the end of the final input. With
    /// another byte at the position, or at that end, the machine goes
    /// straight to the target, as the pushed entry would after the
    /// alternative failed.
    Guarded(u32, u32, bool),
    /// `Choice(target)` whose alternative reads first this literal, before
    /// it only captures and rule calls (see [`guard_choices`]): input that
    /// does not start with it (nor, before the end, with part of it) sends
    /// the machine straight to the target.
    GuardedLit(u32, Arc<[u8]>),
    /// Push a lookahead entry (a boundary for `CommitAll`).
    Look(u32),
    /// Pop the top entry, jump.
    Commit(u32),
    /// Update the top entry to the current state and jump (loops); a step
    /// that consumed nothing exits the loop instead.
    PartialCommit(u32),
    /// Pop the top entry restoring its position and log, jump (`&e`).
    BackCommit(u32),
    /// Pop the top entry, then fail (`!e`).
    FailTwice,
    /// Fail.
    Fail,
    /// Make the top entry dead (it no longer catches failures).
    Cut,
    /// Push a recovery entry resuming at the target (see `recover`).
    Recover(u32),
    /// Pop the top (recovery) entry, jump.
    PopRecover(u32),
    /// Make every entry dead down to the innermost lookahead entry.
    CommitAll,
    /// Call a rule.
    Call(u32),
    /// Return from a rule.
    Ret,
    /// Log a capture opening.
    Open(Tag),
    /// Log a capture closing.
    Close,
    /// The start expression matched.
    End,
}

/// A compiled grammar, cheap to clone and to share between threads.
///
/// Parse with [`Program::parse`] (whole input), [`Program::parse_partial`]
/// (a prefix, possibly needing more) or [`Program::stream`] (chunks).
#[derive(Clone)]
pub struct Program {
    pub(crate) inner: Arc<Inner>,
}

/// A program: its code (shared by every program with other names) and its
/// name sets.
pub(crate) struct Inner {
    code: Arc<Code>,
    /// The name sets `Inst::Names` reads ([`Program::with_names`]).
    pub names: Vec<Arc<MultiLiteral>>,
}

impl std::ops::Deref for Inner {
    type Target = Code;
    fn deref(&self) -> &Code {
        &self.code
    }
}

pub(crate) struct Code {
    pub insts: Vec<Inst>,
    pub sets: Vec<ByteSet>,
    pub matchers: Vec<Arc<MultiLiteral>>,
    pub max_depth: usize,
    /// The grammar's special tokens ([`Grammar::special_tokens`]), `None`
    /// when it declares none: then no match looks at token spans.
    pub special: Option<MultiLiteral>,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Program (max depth {}):", self.inner.max_depth)?;
        for (i, inst) in self.inner.insts.iter().enumerate() {
            match inst {
                Inst::Lit(b) => writeln!(f, "{i:5}  Lit {:?}", String::from_utf8_lossy(b))?,
                Inst::Set(s) | Inst::Span(s) => {
                    let name = if matches!(inst, Inst::Set(_)) {
                        "Set"
                    } else {
                        "Span"
                    };
                    writeln!(f, "{i:5}  {name} {:?}", self.inner.sets.get(*s as usize))?
                }
                Inst::Literals(m) | Inst::Until(m) => {
                    let name = if matches!(inst, Inst::Until(_)) {
                        "Until"
                    } else {
                        "Literals"
                    };
                    writeln!(
                        f,
                        "{i:5}  {name} {:?}",
                        self.inner.matchers.get(*m as usize)
                    )?
                }
                other => writeln!(f, "{i:5}  {other:?}")?,
            }
        }
        Ok(())
    }
}

impl Program {
    /// This program reading `sets` as its name sets ([`names`](crate::names)
    /// slot `i` is `sets[i]`), sharing its code: building it costs the sets'
    /// automata (each built once per process for the same strings) and no
    /// compile.
    pub fn with_names<S: AsRef<[u8]>>(&self, sets: &[&[S]]) -> Program {
        let names = sets
            .iter()
            .map(|set| {
                let set: Vec<Box<[u8]>> = set.iter().map(|s| s.as_ref().into()).collect();
                MultiLiteral::shared(&set)
            })
            .collect();
        Program {
            inner: Arc::new(Inner {
                code: Arc::clone(&self.inner.code),
                names,
            }),
        }
    }

    /// Whether `other` runs the same code (the same compile, whatever its
    /// name sets).
    pub fn same_code(&self, other: &Program) -> bool {
        Arc::ptr_eq(&self.inner.code, &other.inner.code)
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.inner.insts.len()
    }

    /// Whether the program is empty (never: it has at least `End`).
    pub fn is_empty(&self) -> bool {
        self.inner.insts.is_empty()
    }
}

/// Why a grammar does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrammarError {
    /// A [`rule`](super::rule) names no rule of the grammar.
    UndefinedRule(String),
    /// Two rules have the same name.
    DuplicateRule(String),
    /// [`until`](super::until) was given an empty delimiter.
    EmptyDelimiter,
    /// A repetition's `max` is below its `min`.
    BadRepeat {
        /// Fewest repetitions.
        min: u32,
        /// Most repetitions.
        max: u32,
    },
    /// The program would exceed a million instructions.
    TooLarge,
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrammarError::UndefinedRule(r) => write!(f, "undefined rule `{r}`"),
            GrammarError::DuplicateRule(r) => write!(f, "rule `{r}` is defined twice"),
            GrammarError::EmptyDelimiter => write!(f, "`until` with an empty delimiter"),
            GrammarError::BadRepeat { min, max } => write!(f, "repetition {min}..={max} is empty"),
            GrammarError::TooLarge => write!(f, "grammar compiles to too many instructions"),
        }
    }
}

impl std::error::Error for GrammarError {}

/// FNV-1a over 8-byte words: the compiler's maps are keyed by the
/// grammar's rule names, literal sets and byte sets, a few hundred keys
/// hashed once per occurrence, where SipHash cost more than the lookups
/// (and FNV byte by byte most of a literal set's lookup: its stop sets
/// hold dozens of markers). A word's high bytes reach only the high bits
/// of the state, so [`Hasher::finish`] folds them down before the table
/// takes its low bits. Keys come from the grammar, and a map lives for one
/// compile: an unlucky spread costs that compile only.
struct Fnv(u64);

const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            h = (h ^ word).wrapping_mul(FNV_PRIME);
        }
        for &b in words.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        (self.0 ^ (self.0 >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// A map of one compile (see [`Fnv`]).
type CompileMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

struct Compiler<'g> {
    insts: Vec<Inst>,
    sets: Vec<ByteSet>,
    matchers: Vec<Arc<MultiLiteral>>,
    /// Each distinct literal set's matcher: generated grammars repeat the
    /// same stop sets (a label's "not a marker" test per character), and
    /// building a matcher is most of a small compile.
    matcher_ids: CompileMap<&'g [Box<[u8]>], u32>,
    rules: CompileMap<&'g str, usize>,
    calls: Vec<(usize, usize)>,
    /// Where each shared sequence or choice was compiled, by its parts'
    /// address, kind and `cut_ok` (see [`Compiler::expr`]).
    compiled: CompileMap<(usize, bool, bool), (usize, usize)>,
    /// Jumps waiting for their target, for every choice and bounded
    /// repetition being compiled (each owns the entries above the length
    /// it found): one stack, not a vector per construct.
    pending: Vec<usize>,
}

impl Grammar {
    /// Compiles the grammar.
    pub fn compile(&self) -> Result<Program, GrammarError> {
        compile(self)
    }
}

thread_local! {
    /// The length of this thread's last program: the next one's first
    /// guess (a server builds parsers of the same few sizes), so its
    /// instructions are not copied a dozen times while their vector grows.
    static LAST_LEN: Cell<usize> = const { Cell::new(0) };
    /// The sizes of this thread's last literal-set and shared-code maps:
    /// the next compile's first guess, for the reason above (growing them
    /// rehashed every key a few times, about 1% of a cold build).
    static LAST_MAPS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    /// The lengths of this thread's last byte-set and rule-call tables,
    /// for the same reason (matchers number as the literal-set map's keys).
    static LAST_TABLES: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Capacities beyond this are not guessed: a map grows past them if it must.
const MAX_GUESSED_KEYS: usize = 4096;

fn compile_map<K, V>(guess: usize) -> CompileMap<K, V> {
    CompileMap::with_capacity_and_hasher(guess.min(MAX_GUESSED_KEYS), Default::default())
}

fn compile(g: &Grammar) -> Result<Program, GrammarError> {
    let (last_matchers, last_compiled) = LAST_MAPS.get();
    let (last_sets, last_calls) = LAST_TABLES.get();
    let guess = |n: usize| n.min(MAX_GUESSED_KEYS);
    let mut c = Compiler {
        insts: Vec::with_capacity(LAST_LEN.get().min(MAX_INSTS)),
        sets: Vec::with_capacity(guess(last_sets)),
        matchers: Vec::with_capacity(guess(last_matchers)),
        matcher_ids: compile_map(last_matchers),
        rules: compile_map(g.rules.len()),
        calls: Vec::with_capacity(guess(last_calls)),
        compiled: compile_map(last_compiled),
        pending: Vec::new(),
    };
    for (i, (name, _)) in g.rules.iter().enumerate() {
        if c.rules.insert(name, i).is_some() {
            return Err(GrammarError::DuplicateRule(name.to_string()));
        }
    }
    c.expr(&g.root, false)?;
    c.emit(Inst::End)?;
    let mut addr = Vec::with_capacity(g.rules.len());
    for (_, body) in &g.rules {
        addr.push(c.here());
        c.expr(body, false)?;
        c.emit(Inst::Ret)?;
    }
    for &(at, rule) in &c.calls {
        c.insts[at] = Inst::Call(addr[rule]);
    }
    guard_choices(&mut c.insts, &mut c.sets, &c.matchers);
    LAST_LEN.set(c.insts.len());
    LAST_MAPS.set((c.matcher_ids.len(), c.compiled.len()));
    LAST_TABLES.set((c.sets.len(), c.calls.len()));
    // In place: a program never holds more than it uses.
    c.insts.shrink_to_fit();
    Ok(Program {
        inner: Arc::new(Inner {
            code: Arc::new(Code {
                special: special_in_use(&g.special, &c.insts, &c.matchers),
                insts: c.insts,
                sets: c.sets,
                matchers: c.matchers,
                max_depth: g.max_depth,
            }),
            names: Vec::new(),
        }),
    })
}

/// The special tokens some literal of the program holds, as one automaton:
/// a vocabulary has hundreds or thousands, a grammar's markers name a few.
/// Each literal is looked at only where a special token could start (a
/// byte that starts one), for each length special tokens have.
fn special_in_use(
    special: &[Box<[u8]>],
    insts: &[Inst],
    matchers: &[Arc<MultiLiteral>],
) -> Option<MultiLiteral> {
    let tokens: HashSet<&[u8]> = special.iter().map(|t| &t[..]).collect();
    let mut starts = [false; 256];
    let mut lengths: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    for t in &tokens {
        starts[t[0] as usize] = true;
    }
    let lits = insts.iter().filter_map(|i| match i {
        Inst::Lit(b) => Some(&b[..]),
        _ => None,
    });
    let mut used: BTreeSet<&[u8]> = BTreeSet::new();
    for lit in lits.chain(
        matchers
            .iter()
            .flat_map(|m| m.literals().iter().map(|l| &l[..])),
    ) {
        for (i, &b) in lit.iter().enumerate() {
            if !starts[b as usize] {
                continue;
            }
            let found = lengths.iter().filter_map(|&n| lit.get(i..i + n));
            used.extend(found.filter(|t| tokens.contains(t)));
        }
    }
    (!used.is_empty()).then(|| MultiLiteral::new(used))
}

/// Rule calls a guard's analysis follows before it gives up; the machine
/// takes a guard only with this many calls to spare below the depth limit
/// (so a call the alternative makes could not have failed as too deep).
pub(crate) const GUARD_CALLS: usize = 4;

/// Instructions a guard's analysis looks at per choice: the build stays
/// linear in the program's size.
const GUARD_BUDGET: u32 = 48;

/// Turns each `Choice` whose alternative's first byte is known into a
/// `Guarded` one. A short output spends much of its parse trying the
/// alternatives its start may open (markers, fences, wrappers), each a
/// pushed entry, a failed literal and an unwinding; the guard skips those
/// with one byte test.
///
/// Sound by construction: [`first_bytes`] follows only instructions that,
/// at a position holding a byte outside the set, fail right there without
/// consuming (`Lit`, `Set`, `Literals`, `Json`, `Eoi`, `Fail`), consume
/// nothing (`Span` of other bytes, `Open`, `Close`), or branch to such
/// code (`Choice`, `Look`, `Call`). So every path of the alternative fails
/// at the choice's position, having only pushed entries and log entries
/// its failure pops again, and the machine resumes at the target with the
/// state it had: the guard does that directly (recording the failure
/// position, as the failure would). At the end of the final input the
/// same holds of every one of them but `Eoi`, so the guard also skips an
/// alternative with no `Eoi` on its way there (the second run of a batch
/// parse, at `finish`, tries what may follow the last call). Anything else
/// on the way (a lookahead's end, a cut or commit, a recovery, a scan that
/// may match nothing) gives no guard.
///
/// An alternative that reads a literal first, after only captures and rule
/// calls ([`lead_literal`]), is guarded by the whole literal
/// (`GuardedLit`): the same reasoning, for input that does not start with
/// it. A JSON call's keys all start with `"`: a byte guard lets each
/// through to fail at its literal.
fn guard_choices(insts: &mut [Inst], sets: &mut Vec<ByteSet>, matchers: &[Arc<MultiLiteral>]) {
    // A set's index, found by hashing: a scan of `sets` per choice was a
    // third of the guard pass on a parser build.
    let mut index: CompileMap<ByteSet, u32> = compile_map(sets.len());
    for (i, &s) in sets.iter().enumerate().rev() {
        index.insert(s, i as u32);
    }
    for pc in 0..insts.len() {
        let Inst::Choice(target) = insts[pc] else {
            continue;
        };
        if let Some(lit) = lead_literal(insts, pc + 1) {
            insts[pc] = Inst::GuardedLit(target, lit);
            continue;
        }
        let mut budget = GUARD_BUDGET;
        let Some((first, ends)) = first_bytes(insts, sets, matchers, pc + 1, &mut budget, 0) else {
            continue;
        };
        let at = *index.entry(first).or_insert_with(|| {
            sets.push(first);
            sets.len() as u32 - 1
        });
        insts[pc] = Inst::Guarded(target, at, ends);
    }
}

/// The literal the code from `pc` on reads first, when only captures and
/// up to [`GUARD_CALLS`] rule calls come before it: at a position where
/// the input does not start with it, the code fails there without
/// consuming, having only pushed what its failure pops. A JSON call's keys
/// all start with `"`, so a byte guard lets each of them through to fail
/// at its literal; this one does not.
fn lead_literal(insts: &[Inst], mut pc: usize) -> Option<Arc<[u8]>> {
    let mut calls = 0;
    loop {
        match insts.get(pc)? {
            Inst::Lit(b) if !b.is_empty() => return Some(b.clone()),
            Inst::Open(_) | Inst::Close => pc += 1,
            Inst::Call(target) if calls < GUARD_CALLS => {
                calls += 1;
                pc = *target as usize;
            }
            _ => return None,
        }
    }
}

/// The bytes the code from `pc` on may consume first, when every path of
/// it either consumes one of them first or fails at its start without
/// consuming, and whether a path may match at the end of the final input
/// (it passes an `Eoi`; everything else it follows fails there); `None`
/// when that is not known (see [`guard_choices`]).
fn first_bytes(
    insts: &[Inst],
    sets: &[ByteSet],
    matchers: &[Arc<MultiLiteral>],
    mut pc: usize,
    budget: &mut u32,
    mut calls: usize,
) -> Option<(ByteSet, bool)> {
    // Bytes of the spans passed on the way (they may consume nothing).
    let mut passed = ByteSet::empty();
    loop {
        *budget = budget.checked_sub(1)?;
        let first = match insts.get(pc)? {
            Inst::Lit(b) => ByteSet::of(&b[..1.min(b.len())]),
            Inst::Set(s) => *sets.get(*s as usize)?,
            Inst::Literals(m) => matchers.get(*m as usize)?.first_bytes()?,
            Inst::Json(kind) => match kind {
                JsonKind::Object => ByteSet::of(b"{"),
                JsonKind::Array => ByteSet::of(b"["),
                JsonKind::String => ByteSet::of(b"\""),
                JsonKind::Value => ByteSet::of(b"{[\"-0123456789tfn"),
            },
            // With a byte at the position, both fail there.
            Inst::Fail => ByteSet::empty(),
            Inst::Eoi => return Some((passed, true)),
            Inst::Span(s) => {
                passed = passed.union(*sets.get(*s as usize)?);
                pc += 1;
                continue;
            }
            Inst::Open(_) | Inst::Close => {
                pc += 1;
                continue;
            }
            // A lookahead's entry resumes at its target like a choice's
            // when what it looks at fails (`&e`: a `Fail` there).
            Inst::Choice(target)
            | Inst::Guarded(target, ..)
            | Inst::GuardedLit(target, _)
            | Inst::Look(target) => {
                let target = *target as usize;
                let here = first_bytes(insts, sets, matchers, pc + 1, budget, calls)?;
                let there = first_bytes(insts, sets, matchers, target, budget, calls)?;
                return Some((passed.union(here.0).union(there.0), here.1 || there.1));
            }
            Inst::Call(target) if calls < GUARD_CALLS => {
                calls += 1;
                pc = *target as usize;
                continue;
            }
            _ => return None,
        };
        // An empty literal matches without consuming.
        if matches!(insts.get(pc)?, Inst::Lit(b) if b.is_empty()) {
            return None;
        }
        return Some((passed.union(first), false));
    }
}

impl<'g> Compiler<'g> {
    fn here(&self) -> u32 {
        self.insts.len() as u32
    }

    fn emit(&mut self, inst: Inst) -> Result<usize, GrammarError> {
        if self.insts.len() >= MAX_INSTS {
            return Err(GrammarError::TooLarge);
        }
        self.insts.push(inst);
        Ok(self.insts.len() - 1)
    }

    /// Points the jump of instruction `at` to the current end.
    fn patch(&mut self, at: usize) {
        let here = self.here();
        if let Some(
            Inst::Choice(t)
            | Inst::Look(t)
            | Inst::Commit(t)
            | Inst::PartialCommit(t)
            | Inst::BackCommit(t)
            | Inst::Recover(t)
            | Inst::PopRecover(t),
        ) = self.insts.get_mut(at)
        {
            *t = here;
        }
    }

    /// Points the jumps pending above `base` to the current end.
    fn patch_pending(&mut self, base: usize) {
        for i in base..self.pending.len() {
            self.patch(self.pending[i]);
        }
        self.pending.truncate(base);
    }

    fn matcher(&mut self, lits: &'g [Box<[u8]>]) -> u32 {
        // One entry: a set of dozens of markers is hashed once, not again
        // to insert it.
        let matchers = &mut self.matchers;
        *self.matcher_ids.entry(lits).or_insert_with(|| {
            matchers.push(MultiLiteral::shared(lits));
            (matchers.len() - 1) as u32
        })
    }

    fn set(&mut self, s: ByteSet) -> u32 {
        match self.sets.iter().position(|&x| x == s) {
            Some(i) => i as u32,
            None => {
                self.sets.push(s);
                (self.sets.len() - 1) as u32
            }
        }
    }

    /// Compiles `e`. `cut_ok`: the top backtrack entry while `e` runs belongs
    /// to the innermost choice-like construct around `e`, so `cut` may kill it.
    ///
    /// A sequence or choice compiled before (the same shared parts, under
    /// the same `cut_ok`) is copied from its first instructions rather than
    /// compiled again: generated grammars read one expression in many places.
    fn expr(&mut self, e: &'g Expr, cut_ok: bool) -> Result<(), GrammarError> {
        // Parts held once are read in one place only: not worth a lookup.
        let key = match e {
            Expr::Seq(parts) if Arc::strong_count(parts) > 1 => {
                Some((parts.as_ptr() as usize, false, cut_ok))
            }
            Expr::Choice(alts) if Arc::strong_count(alts) > 1 => {
                Some((alts.as_ptr() as usize, true, cut_ok))
            }
            _ => None,
        };
        let Some(key) = key else {
            return self.node(e, cut_ok);
        };
        if let Some(&(start, end)) = self.compiled.get(&key) {
            return self.replay(start, end);
        }
        let start = self.insts.len();
        self.node(e, cut_ok)?;
        self.compiled.insert(key, (start, self.insts.len()));
        Ok(())
    }

    /// Appends a copy of the instructions `start..end`, the whole code of
    /// one expression: its jumps all land in `start..=end`, and move with
    /// it; its rule calls are recorded for patching like the originals.
    fn replay(&mut self, start: usize, end: usize) -> Result<(), GrammarError> {
        if self.insts.len() + (end - start) > MAX_INSTS {
            return Err(GrammarError::TooLarge);
        }
        let at = self.insts.len();
        let shift = |t: &mut u32| *t = *t - start as u32 + at as u32;
        self.insts.extend_from_within(start..end);
        for inst in &mut self.insts[at..] {
            if let Inst::Choice(t)
            | Inst::Look(t)
            | Inst::Commit(t)
            | Inst::PartialCommit(t)
            | Inst::BackCommit(t)
            | Inst::Recover(t)
            | Inst::PopRecover(t) = inst
            {
                shift(t);
            }
        }
        let first = self.calls.partition_point(|&(c, _)| c < start);
        let last = self.calls.partition_point(|&(c, _)| c < end);
        for i in first..last {
            let (c, rule) = self.calls[i];
            self.calls.push((c - start + at, rule));
        }
        Ok(())
    }

    /// Compiles `e` itself (see [`Compiler::expr`]).
    fn node(&mut self, e: &'g Expr, cut_ok: bool) -> Result<(), GrammarError> {
        match e {
            Expr::Empty => {}
            Expr::Fail => {
                self.emit(Inst::Fail)?;
            }
            Expr::Lit(b) => {
                self.emit(Inst::Lit(b.clone()))?;
            }
            Expr::Literals(alts) => {
                if alts.is_empty() {
                    self.emit(Inst::Fail)?;
                } else {
                    let m = self.matcher(alts);
                    self.emit(Inst::Literals(m))?;
                }
            }
            Expr::Names(slot) => {
                self.emit(Inst::Names(u32::from(*slot)))?;
            }
            Expr::Class(s) => {
                let s = self.set(*s);
                self.emit(Inst::Set(s))?;
            }
            Expr::AnyChar => {
                self.emit(Inst::AnyChar)?;
            }
            Expr::Until(delims) => {
                if delims.iter().any(|d| d.is_empty()) {
                    return Err(GrammarError::EmptyDelimiter);
                }
                if delims.is_empty() {
                    self.emit(Inst::Rest)?;
                } else {
                    let m = self.matcher(delims);
                    self.emit(Inst::Until(m))?;
                }
            }
            Expr::Rest => {
                self.emit(Inst::Rest)?;
            }
            Expr::Eoi => {
                self.emit(Inst::Eoi)?;
            }
            Expr::Json(kind) => {
                self.emit(Inst::Json(*kind))?;
            }
            Expr::Python => {
                self.emit(Inst::Python)?;
            }
            Expr::Seq(parts) => {
                for p in parts.iter() {
                    self.expr(p, cut_ok)?;
                }
            }
            Expr::Choice(alts) => match alts.split_last() {
                None => {
                    self.emit(Inst::Fail)?;
                }
                Some((last, firsts)) => {
                    let commits = self.pending.len();
                    for alt in firsts {
                        let choice = self.emit(Inst::Choice(0))?;
                        self.expr(alt, true)?;
                        let commit = self.emit(Inst::Commit(0))?;
                        self.pending.push(commit);
                        self.patch(choice);
                    }
                    self.expr(last, false)?;
                    self.patch_pending(commits);
                }
            },
            Expr::Repeat { expr, min, max } => {
                if let Some(max) = *max {
                    if max < *min {
                        return Err(GrammarError::BadRepeat { min: *min, max });
                    }
                }
                for _ in 0..*min {
                    self.expr(expr, false)?;
                }
                match *max {
                    None => {
                        if let Expr::Class(s) = **expr {
                            let s = self.set(s);
                            self.emit(Inst::Span(s))?;
                        } else {
                            let choice = self.emit(Inst::Choice(0))?;
                            let body = self.here();
                            self.expr(expr, true)?;
                            self.emit(Inst::PartialCommit(body))?;
                            self.patch(choice);
                        }
                    }
                    Some(max) => {
                        let exits = self.pending.len();
                        for _ in *min..max {
                            let exit = self.emit(Inst::Choice(0))?;
                            self.pending.push(exit);
                            self.expr(expr, true)?;
                            let next = self.here() + 1;
                            self.emit(Inst::Commit(next))?;
                        }
                        self.patch_pending(exits);
                    }
                }
            }
            Expr::And(inner) => {
                let look = self.emit(Inst::Look(0))?;
                self.expr(inner, false)?;
                let back = self.emit(Inst::BackCommit(0))?;
                self.patch(look);
                self.emit(Inst::Fail)?;
                self.patch(back);
            }
            Expr::Not(inner) => {
                let look = self.emit(Inst::Look(0))?;
                self.expr(inner, false)?;
                self.emit(Inst::FailTwice)?;
                self.patch(look);
            }
            Expr::Cut => {
                if cut_ok {
                    self.emit(Inst::Cut)?;
                }
            }
            Expr::Commit => {
                self.emit(Inst::CommitAll)?;
            }
            Expr::Capture(tag, inner) => {
                self.emit(Inst::Open(*tag))?;
                self.expr(inner, cut_ok)?;
                self.emit(Inst::Close)?;
            }
            Expr::Recover(body, fallback) => {
                let push = self.emit(Inst::Recover(0))?;
                self.expr(body, false)?;
                let pop = self.emit(Inst::PopRecover(0))?;
                self.patch(push);
                self.expr(fallback, cut_ok)?;
                self.patch(pop);
            }
            Expr::Rule(name) => {
                let Some(&rule) = self.rules.get(&**name) else {
                    return Err(GrammarError::UndefinedRule(name.to_string()));
                };
                let at = self.emit(Inst::Call(0))?;
                self.calls.push((at, rule));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::grammar::*;
    use super::*;

    /// The program's layout, guards shown as the choices they are.
    fn listing(e: Expr) -> Vec<String> {
        let p = unguarded(&Grammar::new(e).compile().unwrap());
        p.inner.insts.iter().map(|i| format!("{i:?}")).collect()
    }

    /// `p` with every guard back to a plain `Choice`.
    fn unguarded(p: &Program) -> Program {
        let insts = p.inner.insts.iter().map(|i| match *i {
            Inst::Guarded(target, ..) | Inst::GuardedLit(target, _) => Inst::Choice(target),
            ref other => other.clone(),
        });
        Program {
            inner: Arc::new(Inner {
                code: Arc::new(Code {
                    insts: insts.collect(),
                    sets: p.inner.sets.clone(),
                    matchers: p.inner.matchers.clone(),
                    max_depth: p.inner.max_depth,
                    special: p.inner.special.clone(),
                }),
                names: p.inner.names.clone(),
            }),
        }
    }

    fn guards(e: Expr) -> Vec<bool> {
        let p = Grammar::new(e).compile().unwrap();
        let choices = p.inner.insts.iter().filter_map(|i| match i {
            Inst::Choice(_) => Some(false),
            Inst::Guarded(..) | Inst::GuardedLit(..) => Some(true),
            _ => None,
        });
        choices.collect()
    }

    /// A name set given to the compiled program reads as the same strings
    /// written into the grammar as literals, whole and partial, with its
    /// choices unguarded; one code serves other sets; no set matches nothing.
    #[test]
    fn a_name_set_reads_as_its_literals_written_in() {
        let shape = |name: Expr| {
            let call = seq([cap(Tag(1), name), lit("(")]);
            Grammar::new(seq([choice([call, lit("x")]), star(any_char())]))
        };
        let sets: [&[&str]; 3] = [&["get", "get_weather"], &["a b", "a"], &[]];
        let named = shape(names(0)).compile().unwrap();
        assert_eq!(guards(seq([choice([names(0), lit("x")])])), [false]);
        let inputs = [
            "get_weather(",
            "get(",
            "get_w",
            "get_weathe",
            "a b(",
            "a(",
            "x(",
            "",
            "g",
        ];
        for set in sets {
            let given = named.with_names(&[set]);
            assert!(given.same_code(&named));
            let written = shape(literals(set.iter().copied())).compile().unwrap();
            for input in inputs {
                let input = input.as_bytes();
                let show = |r: Result<crate::Match, crate::ParseError>| format!("{r:?}");
                assert_eq!(show(given.parse(input)), show(written.parse(input)));
                assert_eq!(
                    show(given.parse_partial(input)),
                    show(written.parse_partial(input))
                );
            }
        }
        // No set given: `x` still matches, a name never does.
        assert!(named.parse(b"x").is_ok());
        assert!(named.parse(b"get(").is_err());
    }

    #[test]
    fn only_alternatives_that_fail_where_they_start_are_guarded() {
        // Literals, classes, JSON values, through spans, captures and
        // inner choices: guarded.
        let opener = seq([star(class(ByteSet::of(b" "))), cap(Tag(1), lit("<a>"))]);
        assert_eq!(guards(choice([opener, json_object()])), [true]);
        assert_eq!(
            guards(choice([choice([lit("x"), lit("y")]), empty()])),
            [true, true]
        );
        // A literal after captures: guarded by the whole literal.
        let key = |k: &str| seq([cap(Tag(1), lit(k)), json()]);
        let lit_guard = Grammar::new(choice([key("\"a\""), key("\"b\"")]))
            .compile()
            .unwrap();
        assert!(matches!(&lit_guard.inner.insts[0], Inst::GuardedLit(_, l) if &l[..] == b"\"a\""));
        // Text that may match nothing, a cut before any byte, a recovery,
        // an empty alternative: not.
        assert_eq!(guards(choice([until(["</a>"]), lit("b")])), [false]);
        assert_eq!(guards(choice([seq([cut(), lit("a")]), lit("b")])), [false]);
        assert_eq!(
            guards(choice([recover(lit("a"), rest()), lit("b")])),
            [false]
        );
        assert_eq!(
            guards(choice([star(class(ByteSet::of(b" "))), lit("b")])),
            [false]
        );
    }

    /// Every input over a small alphabet up to `len` bytes.
    fn inputs(alphabet: &[u8], len: usize) -> Vec<Vec<u8>> {
        let mut all = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..len {
            let next: Vec<Vec<u8>> = last
                .iter()
                .flat_map(|s: &Vec<u8>| {
                    alphabet.iter().map(move |&b| {
                        let mut t = s.clone();
                        t.push(b);
                        t
                    })
                })
                .collect();
            all.extend(next.iter().cloned());
            last = next;
        }
        all
    }

    /// A guard changes no result: whole and partial parses, captures and
    /// error offsets equal the same program's with plain choices.
    #[test]
    fn guarded_programs_parse_as_unguarded_ones() {
        let ws = || star(class(ByteSet::of(b" ")));
        let call = || seq([lit("<c>"), ws(), cap(Tag(2), json_object()), lit("</c>")]);
        let grammars = [
            seq([
                star(choice([
                    call(),
                    seq([ws(), lit("[")]),
                    cap(Tag(1), class(ByteSet::of(b"ab{} "))),
                ])),
                eoi(),
            ]),
            seq([
                not(lit("<")),
                choice([and(lit("a")), lit("b"), fail()]),
                choice([cap(Tag(3), json()), lit("a"), rest()]),
            ]),
            star(seq([choice([lit("ab"), lit("a<"), eoi()]), ws()])),
            // An alternative that matches at the end of the input.
            star(seq([lit("a"), choice([seq([ws(), eoi()]), lit("<")])])),
            // The guard's failure is the furthest one: the error says where.
            seq([not(seq([lit("a"), opt(lit("b"))])), rest()]),
            // Literals sharing their first byte (keys of a JSON object):
            // guarded by the whole literal, cut by the end or not.
            star(choice([
                seq([cap(Tag(4), lit("\"ab")), lit("}")]),
                cap(Tag(5), seq([lit("\"a<"), ws()])),
                seq([lit("{"), ws()]),
            ])),
        ];
        for grammar in grammars {
            let guarded = Grammar::new(grammar).compile().unwrap();
            assert!(guarded
                .inner
                .insts
                .iter()
                .any(|i| matches!(i, Inst::Guarded(..) | Inst::GuardedLit(..))));
            let plain = unguarded(&guarded);
            for input in inputs(b"ab<c>{} [\"1", 4) {
                assert_eq!(guarded.parse(&input), plain.parse(&input), "{input:?}");
                let partial = (guarded.parse_partial(&input), plain.parse_partial(&input));
                assert_eq!(partial.0, partial.1, "partial {input:?}");
            }
        }
    }

    #[test]
    fn programs_share_the_automaton_of_a_literal_set() {
        let grammar = || Grammar::new(seq([until(["<|shared a|>", "<|shared b|>"]), rest()]));
        let (first, second) = (grammar().compile().unwrap(), grammar().compile().unwrap());
        let (a, b) = (&first.inner.matchers[0], &second.inner.matchers[0]);
        assert!(Arc::ptr_eq(a, b), "one automaton for both programs");
        assert_eq!(second.parse(b"x<|shared b|>y").unwrap().end, 14);
    }

    #[test]
    fn one_matcher_per_distinct_literal_set() {
        let stops = || literals(["<|a|>", "<|b|>"]);
        let e = seq([
            not(stops()),
            any_char(),
            not(stops()),
            literals(["x"]),
            not(stops()),
        ]);
        let p = Grammar::new(e).compile().unwrap();
        assert_eq!(p.inner.matchers.len(), 2);
        let listing: Vec<String> = p.inner.insts.iter().map(|i| format!("{i:?}")).collect();
        assert_eq!(listing.iter().filter(|i| *i == "Literals(0)").count(), 3);
        assert_eq!(listing.iter().filter(|i| *i == "Literals(1)").count(), 1);
    }

    /// A grammar reading `part()` in several places, under and outside
    /// a choice (where a cut inside it is live or a no-op), with a rule
    /// call inside it.
    fn reads_in_several_places(part: impl Fn() -> Expr) -> Grammar {
        Grammar::new(seq([
            part(),
            choice([seq([part(), lit("!")]), part()]),
            star(part()),
            rule("r"),
        ]))
        .rule("r", seq([lit(";"), part()]))
    }

    #[test]
    fn shared_expressions_compile_as_if_written_out() {
        let part = || {
            seq([
                choice([seq([lit("a"), cut(), lit("b")]), rule("r2"), lit("c")]),
                opt(lit("d")),
            ])
        };
        let shared = part();
        let with_shared = reads_in_several_places(|| shared.clone()).rule("r2", lit("e"));
        let written_out = reads_in_several_places(part).rule("r2", lit("e"));
        let listing = |g: &Grammar| {
            let p = g.compile().unwrap();
            p.inner
                .insts
                .iter()
                .map(|i| format!("{i:?}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(listing(&with_shared), listing(&written_out));
        let p = with_shared.compile().unwrap();
        let input = b"abdc!eab;c";
        assert_eq!(p.parse(input).unwrap().end, input.len());
    }

    #[test]
    fn choice_layout() {
        assert_eq!(
            listing(choice([lit("a"), seq([lit("b"), cut()]), lit("c")])),
            [
                "Choice(3)",
                "Lit([97])",
                "Commit(8)",
                "Choice(7)",
                "Lit([98])",
                "Cut",
                "Commit(8)",
                "Lit([99])",
                "End"
            ]
        );
    }

    #[test]
    fn cut_in_last_alternative_or_lookahead_is_a_no_op() {
        assert_eq!(
            listing(choice([lit("a"), seq([lit("b"), cut()])])),
            ["Choice(3)", "Lit([97])", "Commit(4)", "Lit([98])", "End"]
        );
        assert_eq!(
            listing(not(seq([lit("a"), cut()]))),
            ["Look(3)", "Lit([97])", "FailTwice", "End"]
        );
        assert_eq!(listing(seq([lit("a"), cut()])), ["Lit([97])", "End"]);
    }

    #[test]
    fn repetitions() {
        assert_eq!(
            listing(star(lit("a"))),
            ["Choice(3)", "Lit([97])", "PartialCommit(1)", "End"]
        );
        assert_eq!(listing(star(class(ByteSet::of(b"a")))), ["Span(0)", "End"]);
        assert_eq!(
            listing(repeat(lit("a"), 1, Some(3))),
            [
                "Lit([97])",
                "Choice(7)",
                "Lit([97])",
                "Commit(4)",
                "Choice(7)",
                "Lit([97])",
                "Commit(7)",
                "End"
            ]
        );
        assert_eq!(
            listing(and(lit("a"))),
            ["Look(3)", "Lit([97])", "BackCommit(4)", "Fail", "End"]
        );
    }

    #[test]
    fn rules_and_errors() {
        let p = Grammar::new(rule("a"))
            .rule("a", cap(Tag(1), lit("x")))
            .compile()
            .unwrap();
        let l: Vec<String> = p.inner.insts.iter().map(|i| format!("{i:?}")).collect();
        assert_eq!(
            l,
            [
                "Call(2)",
                "End",
                "Open(Tag(1))",
                "Lit([120])",
                "Close",
                "Ret"
            ]
        );
        assert_eq!(p.len(), 6);
        assert!(!p.is_empty());
        assert!(format!("{p:?}").contains("Lit \"x\""));
        let err = |g: Grammar| g.compile().unwrap_err();
        assert_eq!(
            err(Grammar::new(rule("b"))),
            GrammarError::UndefinedRule("b".into())
        );
        assert_eq!(
            err(Grammar::new(empty()).rule("a", empty()).rule("a", empty())),
            GrammarError::DuplicateRule("a".into())
        );
        assert_eq!(
            err(Grammar::new(until(["x", ""]))),
            GrammarError::EmptyDelimiter
        );
        assert_eq!(
            err(Grammar::new(repeat(lit("a"), 3, Some(2)))),
            GrammarError::BadRepeat { min: 3, max: 2 }
        );
        assert_eq!(
            err(Grammar::new(repeat(lit("a"), 0, Some(2_000_000)))),
            GrammarError::TooLarge
        );
        assert_eq!(
            GrammarError::EmptyDelimiter.to_string(),
            "`until` with an empty delimiter"
        );
        assert_eq!(listing(literals(Vec::<&str>::new())), ["Fail", "End"]);
        assert_eq!(listing(choice([])), ["Fail", "End"]);
    }
}
