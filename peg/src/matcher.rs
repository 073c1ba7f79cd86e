//! Multi-literal matching: a small Aho-Corasick automaton that knows about
//! partial input.
//!
//! One [`MultiLiteral`] answers the two questions the engine asks about a set
//! of literals (markers such as `</think>` and `<tool_call>`, or the names of
//! the tools):
//!
//! - [`MultiLiteral::find`]: where is the leftmost position at which one of the
//!   literals starts? With partial input the answer may be "not yet known":
//!   then it gives the *safe point*, the start of the longest suffix of the
//!   input that is a proper prefix of some literal. Every byte before the safe
//!   point is certainly not the start of a literal, whatever comes next.
//! - [`MultiLiteral::longest_at`]: which is the longest literal that matches at
//!   a position? With partial input that ends while a longer literal is still
//!   possible the answer is "need more", never a shorter literal.
//!
//! Construction: byte classes (bytes that appear in no literal share class 0)
//! keep the transition table small; the table is a complete DFA (failure links
//! resolved at build time), so scanning costs one table lookup per byte, and
//! while the automaton is in its root state it skips ahead to the next byte
//! that can start a literal.
//!
//! Programs built one after another from the same generator repeat the same
//! literal sets (a template's stop markers, per request): [`MultiLiteral::shared`]
//! builds each set's automaton once per process and hands out references to
//! it, from a cache bounded in bytes (emptied when full).
//!
//! Invariants: a state's depth is the length of the longest suffix of the
//! scanned text that is a prefix of a literal; `out[s]` is the length of the
//! longest literal that ends at `s` (0 for none). A transition that raises the
//! depth by exactly one is a trie edge, which is how [`MultiLiteral::longest_at`]
//! walks the trie on the DFA.

use super::bytes::ByteSet;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// What the automata [`MultiLiteral::shared`] keeps may hold in all, in
/// bytes: a few hundred typical sets, far more than one process's templates
/// need. A set larger than this alone is built and not kept.
const SHARED_BYTES: usize = 8 << 20;

/// The automata built so far, by literal set, and the bytes they hold.
type SharedMatchers = (HashMap<Box<[Box<[u8]>]>, Arc<MultiLiteral>>, usize);

/// Where the leftmost literal starts, as far as the input tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Find {
    /// A literal starts at this position (leftmost start).
    Found(usize),
    /// No literal starts before `safe`; the bytes from `safe` to the end of the
    /// input are a proper prefix of some literal and more input decides.
    NeedMore {
        /// The first position that may still start a literal.
        safe: usize,
    },
    /// The input is final and no literal occurs.
    None,
}

/// The longest literal at a position, as far as the input tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Longest {
    /// The longest matching literal has this length.
    Match(usize),
    /// No literal matches here.
    NoMatch,
    /// The input ended while a (longer) literal is still possible.
    NeedMore,
}

/// A set of byte literals compiled for leftmost and longest matching.
#[derive(Clone)]
pub struct MultiLiteral {
    classes: [u8; 256],
    stride: usize,
    trans: Vec<u32>,
    depth: Vec<u32>,
    out: Vec<u32>,
    terminal: Vec<bool>,
    has_child: Vec<bool>,
    first: [bool; 256],
    /// `first` as a set, for [`first_bytes`](Self::first_bytes).
    first_set: ByteSet,
    /// The set holds the empty literal.
    empty: bool,
    literals: Vec<Box<[u8]>>,
}

impl std::fmt::Debug for MultiLiteral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lits: Vec<String> = self
            .literals
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        f.debug_struct("MultiLiteral")
            .field("literals", &lits)
            .field("states", &self.depth.len())
            .finish()
    }
}

const NONE: u32 = u32::MAX;

impl MultiLiteral {
    /// Compiles a set of literals. Duplicates are harmless; the empty literal
    /// matches everywhere (so [`MultiLiteral::find`] reports it at the start).
    pub fn new<I, L>(literals: I) -> MultiLiteral
    where
        I: IntoIterator<Item = L>,
        L: AsRef<[u8]>,
    {
        let literals: Vec<Box<[u8]>> = literals.into_iter().map(|l| l.as_ref().into()).collect();
        let mut classes = [0u8; 256];
        let mut next_class = 1usize;
        for lit in &literals {
            for &b in lit.iter() {
                if classes[b as usize] == 0 {
                    // At most 256 distinct bytes: 255 get their own class and
                    // a 256th would collide with class 0 only if every byte
                    // value is used, in which case class 0 is never a fallback.
                    classes[b as usize] = next_class.min(255) as u8;
                    next_class += 1;
                }
            }
        }
        if next_class > 256 {
            // Every byte value appears: give each its own class (0..=255).
            for (b, c) in classes.iter_mut().enumerate() {
                *c = b as u8;
            }
            next_class = 256;
        }
        let stride = next_class;

        // Trie. A literal adds at most one state per byte: sized once, as
        // this runs for every delimiter set of every parser built.
        let most = 1 + literals.iter().map(|l| l.len()).sum::<usize>();
        let mut trans = Vec::with_capacity(most * stride);
        trans.resize(stride, NONE);
        let mut depth = Vec::with_capacity(most);
        depth.push(0u32);
        let mut terminal = Vec::with_capacity(most);
        terminal.push(false);
        let mut has_child = Vec::with_capacity(most);
        has_child.push(false);
        for lit in &literals {
            let mut s = 0usize;
            for &b in lit.iter() {
                let c = classes[b as usize] as usize;
                let t = trans[s * stride + c];
                s = if t == NONE {
                    let t = depth.len();
                    trans.extend(std::iter::repeat_n(NONE, stride));
                    depth.push(depth[s] + 1);
                    terminal.push(false);
                    has_child.push(false);
                    has_child[s] = true;
                    trans[s * stride + c] = t as u32;
                    t
                } else {
                    t as usize
                };
            }
            terminal[s] = true;
        }

        // Failure links, breadth first, folded into a complete DFA.
        let n = depth.len();
        let mut fail = vec![0u32; n];
        // `out[0]` stays 0: the empty literal is handled by `has_empty`.
        let mut out = vec![0u32; n];
        let mut queue = std::collections::VecDeque::with_capacity(n);
        for t in trans.iter_mut().take(stride) {
            if *t == NONE {
                *t = 0;
            } else {
                fail[*t as usize] = 0;
                queue.push_back(*t as usize);
            }
        }
        while let Some(s) = queue.pop_front() {
            out[s] = if terminal[s] {
                depth[s]
            } else {
                out[fail[s] as usize]
            };
            let f = fail[s] as usize;
            for c in 0..stride {
                let t = trans[s * stride + c];
                if t == NONE {
                    trans[s * stride + c] = trans[f * stride + c];
                } else {
                    fail[t as usize] = trans[f * stride + c];
                    queue.push_back(t as usize);
                }
            }
        }

        let mut first = [false; 256];
        let mut first_set = ByteSet::empty();
        for lit in &literals {
            if let Some(&b) = lit.first() {
                first[b as usize] = true;
                first_set.insert(b);
            }
        }
        let empty = terminal[0];
        MultiLiteral {
            classes,
            stride,
            trans,
            depth,
            out,
            terminal,
            has_child,
            first,
            first_set,
            empty,
            literals,
        }
    }

    /// The automaton of `literals`, shared with every program compiled
    /// before from the same set (in the same order): built once per
    /// process while the cache (bounded by [`SHARED_BYTES`]) holds it.
    pub fn shared(literals: &[Box<[u8]>]) -> Arc<MultiLiteral> {
        static CACHE: LazyLock<Mutex<SharedMatchers>> = LazyLock::new(Mutex::default);
        // A panic elsewhere while the lock was held leaves a consistent map.
        let cached = || CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = cached().0.get(literals) {
            return m.clone();
        }
        // Built outside the lock: another thread may build the same set
        // meanwhile, and both are the same automaton.
        let built = Arc::new(MultiLiteral::new(literals));
        let size = built.bytes();
        let mut cache = cached();
        if cache.1 + size > SHARED_BYTES {
            *cache = SharedMatchers::default();
        }
        if size <= SHARED_BYTES {
            cache.0.insert(literals.into(), built.clone());
            cache.1 += size;
        }
        built
    }

    /// About the memory the automaton holds, in bytes.
    fn bytes(&self) -> usize {
        let states = self.depth.len();
        let literals: usize = self.literals.iter().map(|l| l.len()).sum();
        std::mem::size_of::<Self>() + 4 * self.trans.len() + 10 * states + 2 * literals
    }

    /// The literals, in the order given.
    pub fn literals(&self) -> &[Box<[u8]>] {
        &self.literals
    }

    /// Whether the set holds the empty literal.
    #[inline]
    fn has_empty(&self) -> bool {
        self.empty
    }

    /// The length of the longest literal.
    pub fn max_len(&self) -> usize {
        self.literals.iter().map(|l| l.len()).max().unwrap_or(0)
    }

    /// The bytes a literal starts with; `None` when the set holds the empty
    /// literal. A scan that enters bytes outside them in the root state
    /// leaves it there.
    pub fn first_bytes(&self) -> Option<ByteSet> {
        (!self.empty).then_some(self.first_set)
    }

    /// Scans `bytes` from state `s`, which the text before them left the
    /// automaton in with no literal found: the state after them, or `None`
    /// when a literal ends in them. A stream's plain-text test: text that
    /// ends in the root state (depth 0) holds nothing back.
    #[inline]
    pub fn scan_plain(&self, mut s: usize, bytes: &[u8]) -> Option<usize> {
        for &b in bytes {
            // In the root state only a first byte moves the automaton.
            if s == 0 && !self.first[b as usize] {
                continue;
            }
            s = self.step(s, b);
            if self.out[s] != 0 {
                return None;
            }
        }
        Some(s)
    }

    /// How many bytes state `s` holds back: the length of the longest
    /// suffix of the scanned text that is a prefix of a literal.
    #[inline]
    pub fn depth(&self, s: usize) -> usize {
        self.depth.get(s).map_or(0, |&d| d as usize)
    }

    /// The first position at or after `from` whose byte may start a
    /// literal. Most of a full parse is this scan: blocks of 8 bytes are
    /// checked without a branch per byte, which also keeps its speed from
    /// depending on where the loop lands in the code (a byte loop ran 12 or
    /// 14 µs on the think bench from one build to another).
    #[inline]
    fn next_start(&self, hay: &[u8], from: usize) -> Option<usize> {
        let mut at = from;
        for block in hay[from..].chunks_exact(8) {
            if block
                .iter()
                .fold(false, |hit, &b| hit | self.first[b as usize])
            {
                break;
            }
            at += 8;
        }
        hay[at..]
            .iter()
            .position(|&b| self.first[b as usize])
            .map(|k| at + k)
    }

    #[inline]
    fn step(&self, s: usize, b: u8) -> usize {
        self.trans[s * self.stride + self.classes[b as usize] as usize] as usize
    }

    /// The leftmost position at or after `from` where a literal starts.
    ///
    /// `at_end` says that `hay` is the whole input. Without it, a suffix of
    /// `hay` that could still grow into a literal is reported as
    /// [`Find::NeedMore`] with the safe point before it; so is a match found
    /// while an earlier-starting literal is still incomplete at the end.
    ///
    /// ```
    /// use chat_autoparser_peg::matcher::{Find, MultiLiteral};
    /// let m = MultiLiteral::new(["<tool_call>", "</think>"]);
    /// assert_eq!(m.find(b"hi <tool_call>", 0, false), Find::Found(3));
    /// assert_eq!(m.find(b"hi <tool_ca", 0, false), Find::NeedMore { safe: 3 });
    /// assert_eq!(m.find(b"hi <tool_ca", 0, true), Find::None);
    /// ```
    #[inline]
    pub fn find(&self, hay: &[u8], from: usize, at_end: bool) -> Find {
        let n = hay.len();
        if from > n {
            return if at_end {
                Find::None
            } else {
                Find::NeedMore { safe: n }
            };
        }
        if self.has_empty() {
            return Find::Found(from);
        }
        let mut s = 0usize;
        let mut i = from;
        let mut best = usize::MAX;
        loop {
            if s == 0 {
                match self.next_start(hay, i) {
                    Some(k) => i = k,
                    None => break,
                }
            }
            if i >= n {
                break;
            }
            s = self.step(s, hay[i]);
            i += 1;
            let m = self.out[s] as usize;
            if m != 0 && i - m < best {
                best = i - m;
            }
            // The earliest start still in progress is `i - depth`; once that is
            // not before the best match, nothing can start earlier.
            if best != usize::MAX && i - self.depth[s] as usize >= best {
                return Find::Found(best);
            }
        }
        let pending = n - self.depth[s] as usize;
        if best != usize::MAX {
            if at_end || pending >= best {
                Find::Found(best)
            } else {
                Find::NeedMore { safe: pending }
            }
        } else if at_end {
            Find::None
        } else {
            Find::NeedMore { safe: pending }
        }
    }

    /// The longest literal that matches `hay` at `at`.
    ///
    /// Without `at_end`, input that ends on the way to a longer literal gives
    /// [`Longest::NeedMore`], even when a shorter literal already matched: a
    /// half-seen tool name is never taken for a shorter one.
    ///
    /// ```
    /// use chat_autoparser_peg::matcher::{Longest, MultiLiteral};
    /// let names = MultiLiteral::new(["get", "get_weather"]);
    /// assert_eq!(names.longest_at(b"get_weather\"", 0, false), Longest::Match(11));
    /// assert_eq!(names.longest_at(b"get_w", 0, false), Longest::NeedMore);
    /// assert_eq!(names.longest_at(b"get_w", 0, true), Longest::Match(3));
    /// assert_eq!(names.longest_at(b"got", 0, false), Longest::NoMatch);
    /// ```
    #[inline]
    pub fn longest_at(&self, hay: &[u8], at: usize, at_end: bool) -> Longest {
        match self.literals.len() <= SMALL_SET {
            true => self.longest_compared(hay.get(at..).unwrap_or_default(), at_end),
            false => self.longest_walked(hay, at, at_end),
        }
    }

    /// [`longest_at`](Self::longest_at) by walking the automaton.
    fn longest_walked(&self, hay: &[u8], at: usize, at_end: bool) -> Longest {
        let mut best = if self.has_empty() { Some(0) } else { None };
        let mut s = 0usize;
        let mut i = at;
        while i < hay.len() {
            if !self.has_child[s] {
                break;
            }
            let t = self.step(s, hay[i]);
            if self.depth[t] != self.depth[s] + 1 {
                break;
            }
            s = t;
            i += 1;
            if self.terminal[s] {
                best = Some(i - at);
            }
        }
        if i >= hay.len() && self.has_child[s] && !at_end {
            return Longest::NeedMore;
        }
        match best {
            Some(len) => Longest::Match(len),
            None => Longest::NoMatch,
        }
    }
}

/// Sets of at most this many literals are matched by comparing each
/// (a tool's name and its namespaced form, a few tools): a few `memcmp`s
/// cost less than walking the automaton byte by byte.
const SMALL_SET: usize = 8;

impl MultiLiteral {
    /// [`longest_at`](Self::longest_at) by comparing every literal with
    /// `rest`, the input from the position.
    fn longest_compared(&self, rest: &[u8], at_end: bool) -> Longest {
        // As the automaton: more input is needed while `rest` could still
        // become a longer literal, whatever matched so far.
        let open = |l: &[u8]| l.len() > rest.len() && l.starts_with(rest);
        if !at_end && self.literals.iter().any(|l| open(l)) {
            return Longest::NeedMore;
        }
        let longest = self.literals.iter().filter(|l| rest.starts_with(l));
        match longest.map(|l| l.len()).max() {
            Some(len) => Longest::Match(len),
            None => Longest::NoMatch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: leftmost start by brute force.
    fn naive_find(lits: &[&str], hay: &[u8], from: usize) -> Option<usize> {
        (from..=hay.len()).find(|&p| lits.iter().any(|l| hay[p..].starts_with(l.as_bytes())))
    }

    /// Comparing each literal answers as the automaton does: every input of
    /// up to 5 bytes over a small alphabet, every position, partial and
    /// final, for sets with prefixes of each other, an empty literal and
    /// none.
    #[test]
    fn a_small_set_compared_answers_as_walked() {
        let sets: [&[&str]; 5] = [
            &["ab", "abba", "b"],
            &["", "a"],
            &[],
            &["aaa"],
            &["ba", "bab"],
        ];
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            let longer: Vec<Vec<u8>> = inputs
                .iter()
                .flat_map(|i| [b'a', b'b', b'c'].map(|b| [i.clone(), vec![b]].concat()))
                .collect();
            inputs.extend(longer);
            inputs.dedup();
        }
        for set in sets {
            let m = MultiLiteral::new(set.iter().copied());
            for hay in &inputs {
                for at in 0..=hay.len() + 1 {
                    for at_end in [false, true] {
                        let rest = hay.get(at..).unwrap_or_default();
                        assert_eq!(
                            m.longest_compared(rest, at_end),
                            m.longest_walked(hay, at, at_end),
                            "{set:?} {hay:?} at {at} end {at_end}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn leftmost_start_wins_over_first_end() {
        let m = MultiLiteral::new(["abcd", "bc"]);
        assert_eq!(m.find(b"xabcd", 0, true), Find::Found(1));
        // "bc" ends first but "abcd" started earlier and is still open.
        assert_eq!(m.find(b"xabc", 0, false), Find::NeedMore { safe: 1 });
        // At the end of input the open candidate is dead: "bc" it is.
        assert_eq!(m.find(b"xabc", 0, true), Find::Found(2));
        assert_eq!(m.find(b"xabce", 0, false), Find::Found(2));
    }

    #[test]
    fn safe_point_is_before_a_partial_marker() {
        let m = MultiLiteral::new(["<tool_call>", "</think>"]);
        assert_eq!(m.find(b"abc <", 0, false), Find::NeedMore { safe: 4 });
        assert_eq!(m.find(b"abc </th", 0, false), Find::NeedMore { safe: 4 });
        assert_eq!(m.find(b"abc </x", 0, false), Find::NeedMore { safe: 7 });
        assert_eq!(m.find(b"abc", 0, false), Find::NeedMore { safe: 3 });
        assert_eq!(m.find(b"a</think>b<tool_call>", 2, true), Find::Found(10));
        assert_eq!(m.find(b"<<tool_call>", 0, true), Find::Found(1));
        assert_eq!(m.find(b"abc", 7, false), Find::NeedMore { safe: 3 });
        assert_eq!(m.find(b"abc", 7, true), Find::None);
    }

    #[test]
    fn overlapping_suffixes() {
        let m = MultiLiteral::new(["aab", "ab", "b"]);
        assert_eq!(m.find(b"aaab", 0, true), Find::Found(1));
        let m = MultiLiteral::new(["he", "she", "his", "hers"]);
        assert_eq!(m.find(b"ushers", 0, true), Find::Found(1));
        assert_eq!(m.find(b"ush", 0, false), Find::NeedMore { safe: 1 });
    }

    #[test]
    fn empty_literal_and_empty_set() {
        let m = MultiLiteral::new([""]);
        assert_eq!(m.find(b"abc", 1, false), Find::Found(1));
        assert_eq!(m.longest_at(b"abc", 0, false), Longest::Match(0));
        let m = MultiLiteral::new(Vec::<&str>::new());
        assert_eq!(m.find(b"abc", 0, false), Find::NeedMore { safe: 3 });
        assert_eq!(m.find(b"abc", 0, true), Find::None);
        assert_eq!(m.longest_at(b"abc", 0, false), Longest::NoMatch);
        let m = MultiLiteral::new(["", "ab"]);
        assert_eq!(m.longest_at(b"a", 0, false), Longest::NeedMore);
        assert_eq!(m.longest_at(b"a", 0, true), Longest::Match(0));
        assert_eq!(m.longest_at(b"ab", 0, false), Longest::Match(2));
    }

    #[test]
    fn longest_prefers_longer_and_waits() {
        let m = MultiLiteral::new(["get_weather", "get_weather_v2", "get_time"]);
        assert_eq!(m.longest_at(b"get_weather\"", 0, false), Longest::Match(11));
        assert_eq!(m.longest_at(b"get_weather", 0, false), Longest::NeedMore);
        assert_eq!(m.longest_at(b"get_weather", 0, true), Longest::Match(11));
        assert_eq!(
            m.longest_at(b"get_weather_v2", 0, false),
            Longest::Match(14)
        );
        assert_eq!(m.longest_at(b"xget_time", 1, false), Longest::Match(8));
        assert_eq!(m.longest_at(b"get_tim", 0, true), Longest::NoMatch);
        assert_eq!(m.longest_at(b"", 0, false), Longest::NeedMore);
        assert_eq!(m.longest_at(b"", 0, true), Longest::NoMatch);
        assert_eq!(m.longest_at(b"get", 9, true), Longest::NoMatch);
    }

    #[test]
    fn agrees_with_brute_force() {
        let lits = ["ab", "abab", "bab", "ba", "aaa"];
        let m = MultiLiteral::new(lits);
        // Every string over {a, b} up to length 8.
        for len in 0..=8u32 {
            for bits in 0..(1u32 << len) {
                let hay: Vec<u8> = (0..len)
                    .map(|i| if bits >> i & 1 == 1 { b'b' } else { b'a' })
                    .collect();
                let want = naive_find(&lits, &hay, 0);
                match m.find(&hay, 0, true) {
                    Find::Found(p) => {
                        assert_eq!(Some(p), want, "{:?}", String::from_utf8_lossy(&hay))
                    }
                    Find::None => assert_eq!(want, None),
                    Find::NeedMore { .. } => panic!("final input gave NeedMore"),
                }
                // Partial: a found position must be the true one for every
                // continuation; a safe point must have no literal before it.
                match m.find(&hay, 0, false) {
                    Find::Found(p) => assert_eq!(Some(p), want),
                    Find::NeedMore { safe } => {
                        assert!(want.is_none_or(|w| w >= safe));
                        assert!(
                            lits.iter().any(|l| l.as_bytes().starts_with(&hay[safe..]))
                                || safe == hay.len()
                        );
                    }
                    Find::None => panic!("partial input gave None"),
                }
            }
        }
    }

    #[test]
    fn all_byte_values() {
        let lits: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b, b]).collect();
        let m = MultiLiteral::new(&lits);
        assert_eq!(m.find(&[1, 2, 3, 3], 0, true), Find::Found(2));
        assert_eq!(m.find(&[1, 2, 3], 0, false), Find::NeedMore { safe: 2 });
        assert_eq!(m.longest_at(&[255, 255], 0, false), Longest::Match(2));
        assert_eq!(m.max_len(), 2);
    }
}
