//! Parsing entry points: whole input, a prefix, or a stream of chunks.
//!
//! [`Program::parse`] and [`Program::parse_partial`] run the machine once.
//! [`Stream`] keeps one machine alive across chunks: each
//! [`push`](Stream::push) appends the chunk, resumes the machine where it
//! suspended, and reports as [`Event`]s what became final since the last
//! push. Nothing is parsed twice except the few bytes an instruction
//! re-checks when it resumes (see [`machine`](super::machine)). A chunk of
//! plain text inside an `until` (it completes no delimiter) or a JSON value
//! (the value goes on past it) skips the machine altogether
//! (`Stream::extend`): it is only appended (and, outside a string, fed to
//! the JSON scanner), and the next step moves the machine over all such
//! text at once. That is what most pushes of content, reasoning and JSON
//! arguments are.
//!
//! What becomes final after a push (the *commit point* of the machine):
//! - capture openings and closings logged before the oldest live backtrack
//!   entry was pushed: no failure can unwind past a live entry, so no
//!   backtracking can remove them;
//! - for captures that are open, their bytes up to the *frontier*, the lowest
//!   position the machine can ever return to (the oldest live entry's
//!   position, or the current one), moved back so it does not split a UTF-8
//!   character. Whatever the capture's end turns out to be, it is at or after
//!   the frontier.
//!
//! Invariant: for any split of an input into chunks, the events of a stream
//! that ends in a match add up to exactly the captures of
//! [`Program::parse`] on the whole input (same ids, spans, parents).
//!
//! Memory: a stream keeps its input from `base` on; offsets (events,
//! errors, [`Stream::frontier`]) are absolute. Once the caller says how far
//! it reads ([`Stream::release`]), a push that finds the kept input twice as
//! long as at the last look drops the prefix no step can read again: before
//! the caller's mark, `Vm::oldest_needed` (the machine's position and the
//! positions its backtrack entries restore), every open capture's start
//! (its `Close` spans it; for [`Stream::text_only`] tags and captures from
//! [`Stream::text_only_from`] on, what it has not sent) and the plain text's held-back prefix, less 3 bytes (`safe_end`
//! looks back over a cut character). Only a prefix of at least
//! `MIN_DROP` bytes and half of what is kept goes, so the moves cost O(1) a
//! byte.

use super::capture::{build, Emitter, Event, Match, Tag};
use super::compile::Program;
use super::machine::{ParseError, ParseErrorKind, Plain, Run, Vm, Window};
use super::utf8;

impl Program {
    /// Parses the whole `input`.
    ///
    /// The match need not cover the whole input: [`Match::end`] says where
    /// it ended (end the grammar with [`eoi`](super::eoi) to require all of
    /// it).
    pub fn parse(&self, input: &[u8]) -> Result<Match, ParseError> {
        let mut vm = Vm::new();
        match vm.run(&self.inner, Window::whole(input), true) {
            Run::Matched => Ok(Match {
                end: vm.pos,
                captures: build(&vm.log, vm.pos),
                complete: true,
            }),
            Run::Failed(e) => Err(e),
            Run::NeedMore => Err(ParseError {
                offset: vm.pos,
                kind: ParseErrorKind::Internal,
            }),
        }
    }

    /// Parses `input`, a prefix of an input that may continue.
    ///
    /// When the grammar's result depends on bytes not seen yet, the result
    /// has `complete == false`, `end` at the position the parse reached, and
    /// the captures of the alternative being tried (open captures end at
    /// `end`, moved back off a cut UTF-8 character). A prefix that no
    /// continuation can make match is an error.
    pub fn parse_partial(&self, input: &[u8]) -> Result<Match, ParseError> {
        let mut vm = Vm::new();
        match vm.run(&self.inner, Window::whole(input), false) {
            Run::Matched => Ok(Match {
                end: vm.pos,
                captures: build(&vm.log, vm.pos),
                complete: true,
            }),
            Run::Failed(e) => Err(e),
            Run::NeedMore => {
                let end = utf8::safe_end(input, vm.pos);
                Ok(Match {
                    end: vm.pos,
                    captures: build(&vm.log, end),
                    complete: false,
                })
            }
        }
    }

    /// A stream that parses input fed in chunks of bytes.
    pub fn stream(&self) -> Stream {
        Stream::new(self)
    }

    /// A stream that parses text fed in `&str` chunks, and keeps it as a
    /// `String` ([`Stream::text`]): a caller that wants event text as `str`
    /// slices needs no copy of its own.
    pub fn text_stream(&self) -> Stream<String> {
        Stream::new(self)
    }
}

/// Where a stream stands after a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The grammar has not matched yet; more input (or [`Stream::finish`])
    /// decides.
    NeedMore,
    /// The grammar matched, ending at `end`; later input is ignored.
    Matched {
        /// End of the match.
        end: usize,
    },
}

/// What one push (or the finish) produced.
#[derive(Debug)]
pub struct Feed<'a> {
    /// The events that became final, in order.
    pub events: &'a [Event],
    /// The input the stream keeps: all of it, or from `base` on after
    /// [`Stream::release`]. Event offsets are absolute: offset `o` is
    /// `input[o - base]`.
    pub input: &'a [u8],
    /// The offset of `input[0]` in the whole input.
    pub base: usize,
    /// Where the stream stands.
    pub status: Status,
}

impl Feed<'_> {
    /// The bytes an event's range covers (empty for [`Event::Open`]). Every
    /// `Text` event's bytes are kept; a `Close` event's are too, but for a
    /// capture the caller declared [`text_only`](Stream::text_only), whose
    /// start may be gone (then empty).
    #[inline]
    pub fn bytes(&self, event: &Event) -> &[u8] {
        match *event {
            Event::Open { .. } => &[],
            Event::Text { start, end, .. } | Event::Close { start, end, .. } => {
                self.get(start, end).unwrap_or(&[])
            }
        }
    }

    /// The input `from..to` (absolute offsets), if the stream still has it.
    #[inline]
    pub fn get(&self, from: usize, to: usize) -> Option<&[u8]> {
        Window {
            bytes: self.input,
            base: self.base,
            spans: None,
        }
        .get(from, to)
    }

    /// The length of the whole input so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.base + self.input.len()
    }

    /// Whether no input came yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    Running,
    Matched(usize),
    Failed(ParseError),
}

/// An incremental parse (see the module docs).
///
/// ```
/// use chat_autoparser_peg::{cap, lit, until, Event, Grammar, Tag};
/// let program = Grammar::new(cap(Tag(1), until(["<end>"])).then(lit("<end>"))).compile().unwrap();
/// let mut stream = program.stream();
/// let mut text = Vec::new();
/// for chunk in ["Hel", "lo <e", "nd>"] {
///     let feed = stream.push(chunk.as_bytes()).unwrap();
///     for e in feed.events {
///         if let Event::Text { .. } = e {
///             text.push(String::from_utf8_lossy(feed.bytes(e)).into_owned());
///         }
///     }
/// }
/// // `<e` was held back: it could have been (and was) the start of `<end>`.
/// assert_eq!(text, ["Hel", "lo "]);
/// ```
#[derive(Debug, Clone)]
pub struct Stream<I: Input = Vec<u8>> {
    program: Program,
    vm: Vm,
    input: I,
    state: State,
    emitter: Emitter,
    /// Log entries before this (overall index) have been turned into events.
    emitted: usize,
    /// The oldest live backtrack entry's position after the last full run.
    live_pos: Option<usize>,
    events: Vec<Event>,
    /// The machine has seen the input up to here; the rest came through
    /// [`extend`](Stream::extend) and is applied by `sync`.
    synced: usize,
    /// While the input may grow by plain text ([`extend`](Stream::extend)):
    /// how, and how far its text is final.
    plain: Option<Plain>,
    /// The offset of `input`'s first byte: what came before was dropped.
    base: usize,
    /// The caller reads no input before this again ([`release`](Stream::release)).
    released: usize,
    /// Tags whose captures the caller reads through `Text` events only
    /// ([`text_only`](Stream::text_only)).
    text_only: Vec<Tag>,
    /// Captures from this id on are read through `Text` events only
    /// ([`text_only_from`](Stream::text_only_from)).
    text_only_from: u32,
    /// The length of `input` at which to look for a prefix to drop next.
    compact_at: usize,
    /// The spans of the input sampled as special tokens, sorted, once the
    /// caller says ([`special_spans`](Stream::special_spans)).
    spans: Option<Vec<(usize, usize)>>,
}

/// Input is dropped only in pieces of at least this size, and only when
/// they are at least half of what is kept, so the copy that drops them
/// (moving the rest to the front) costs amortised O(1) a byte.
const MIN_DROP: usize = 32 << 10;

/// What a [`Stream`] keeps its input in: bytes (`Vec<u8>`, fed `&[u8]`) or
/// text (`String`, fed `&str`).
pub trait Input: AsRef<[u8]> + Default {
    /// What a push appends.
    type Chunk: ?Sized + AsRef<[u8]>;
    /// Whether every chunk ends on a character boundary (`str` chunks do).
    const WHOLE_CHARS: bool;
    /// Appends `chunk`.
    fn append(&mut self, chunk: &Self::Chunk);
    /// Drops at most the first `n` bytes (text: down to a character
    /// boundary); returns how many it dropped.
    fn drop_front(&mut self, n: usize) -> usize;
    /// Empties it ([`Stream::reset`]); the provided one frees its
    /// allocation.
    fn clear(&mut self) {
        *self = Self::default();
    }
}

impl Input for Vec<u8> {
    type Chunk = [u8];
    const WHOLE_CHARS: bool = false;
    #[inline]
    fn append(&mut self, chunk: &[u8]) {
        self.extend_from_slice(chunk);
    }
    fn drop_front(&mut self, n: usize) -> usize {
        let n = n.min(self.len());
        self.drain(..n);
        n
    }
    fn clear(&mut self) {
        Vec::clear(self);
    }
}

impl Input for String {
    type Chunk = str;
    const WHOLE_CHARS: bool = true;
    #[inline]
    fn append(&mut self, chunk: &str) {
        crate::short::push_short(self, chunk);
    }
    fn drop_front(&mut self, n: usize) -> usize {
        let mut n = n.min(self.len());
        while !self.is_char_boundary(n) {
            n -= 1;
        }
        self.drain(..n);
        n
    }
    fn clear(&mut self) {
        String::clear(self);
    }
}

impl Stream<String> {
    /// The text the stream keeps: all pushed so far, or from
    /// [`base`](Stream::base) on after [`release`](Stream::release).
    pub fn text(&self) -> &str {
        &self.input
    }

    /// The text `from..to` (absolute offsets), if the stream still has it
    /// and neither end cuts a character.
    #[inline]
    pub fn text_get(&self, from: usize, to: usize) -> Option<&str> {
        self.input
            .get(from.checked_sub(self.base)?..to.checked_sub(self.base)?)
    }
}

impl<I: Input> Stream<I> {
    /// A stream for `program`.
    pub fn new(program: &Program) -> Stream<I> {
        Stream {
            program: program.clone(),
            vm: Vm::new(),
            input: I::default(),
            state: State::Running,
            emitter: Emitter::default(),
            emitted: 0,
            live_pos: None,
            // As the machine's stack and log (`Vm::new`): no regrowth in a
            // short output's parse (Mistral's content and call make more
            // than 16 events in one step: a reallocation).
            events: Vec::with_capacity(32),
            synced: 0,
            plain: None,
            base: 0,
            released: 0,
            text_only: Vec::new(),
            text_only_from: u32::MAX,
            compact_at: 2 * MIN_DROP,
            spans: None,
        }
    }

    /// Starts over for a new input, as [`Program::stream`] makes a stream
    /// of the same program, but keeping the allocations of its input, its
    /// machine and its events: a caller parsing many short inputs one after
    /// another (a server's batch parses) allocates them once. Declarations
    /// ([`text_only`](Self::text_only), [`special_spans`](Self::special_spans))
    /// are forgotten too. Every field is named, so a new one cannot be
    /// forgotten here.
    pub fn reset(&mut self) {
        let Stream {
            program: _,
            vm,
            input,
            state,
            emitter,
            emitted,
            live_pos,
            events,
            synced,
            plain,
            base,
            released,
            text_only,
            text_only_from,
            compact_at,
            spans,
        } = self;
        vm.reset();
        input.clear();
        emitter.reset();
        events.clear();
        text_only.clear();
        *state = State::Running;
        (*emitted, *synced, *base, *released) = (0, 0, 0, 0);
        (*live_pos, *plain, *spans) = (None, None, None);
        *text_only_from = u32::MAX;
        *compact_at = 2 * MIN_DROP;
    }

    /// The input the stream keeps: all pushed so far, or from
    /// [`base`](Self::base) on after [`release`](Self::release).
    pub fn input(&self) -> &[u8] {
        self.input.as_ref()
    }

    /// The offset of [`input`](Self::input)'s first byte in the whole input.
    #[inline]
    pub fn base(&self) -> usize {
        self.base
    }

    /// The length of the whole input pushed so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.base + self.input.as_ref().len()
    }

    /// Whether nothing was pushed yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The input `from..to` (absolute offsets), if the stream still has it.
    #[inline]
    pub fn get(&self, from: usize, to: usize) -> Option<&[u8]> {
        self.window().get(from, to)
    }

    #[inline]
    fn window(&self) -> Window<'_> {
        Window {
            bytes: self.input.as_ref(),
            base: self.base,
            spans: self.spans.as_deref(),
        }
    }

    /// Declares which bytes of the input were sampled as special tokens:
    /// absolute spans `start..end` of input pushed next (at or after
    /// [`len`](Self::len)), in order; call it before the push that brings
    /// them. From the first call on, the stream knows where its special
    /// tokens are: a literal holding one of the grammar's special tokens
    /// ([`Grammar::special_tokens`](crate::Grammar::special_tokens))
    /// matches only where that token is one of these spans, and bytes
    /// pushed without a span are ordinary tokens. Call it with no spans to
    /// say so for input that has none. Spans that start before the input's
    /// end, overlap an earlier one or are empty are ignored (the input is
    /// taken as plain there).
    pub fn special_spans(&mut self, spans: impl IntoIterator<Item = std::ops::Range<usize>>) {
        let len = self.len();
        let kept = self.spans.get_or_insert_with(Vec::new);
        for span in spans {
            let after = kept.last().map_or(len, |&(_, end)| end.max(len));
            if span.start >= after && span.end > span.start {
                kept.push((span.start, span.end));
            }
        }
    }

    /// Declares that the caller will read no input before `before` again
    /// (through [`input`](Self::input), [`get`](Self::get) or an earlier
    /// [`Feed`]; a new feed's events are always readable). From then on a
    /// push may drop the input before the oldest position the stream still
    /// needs: `before`, the lowest position its machine can return to, the
    /// start of every open capture (for [`text_only`](Self::text_only)
    /// tags, the start of its unsent text), less a few bytes. It drops only
    /// large prefixes, so a stream keeps O(what is pending), not O(input),
    /// at an amortised cost of O(1) a byte. Offsets stay absolute. Without
    /// a call the stream keeps all its input.
    #[inline]
    pub fn release(&mut self, before: usize) {
        self.released = self.released.max(before);
    }

    /// Declares that the caller reads captures tagged `tags` through their
    /// `Text` events only, not through their `Close` event's span: the
    /// input from such a capture's start need not be kept while it is open
    /// (see [`release`](Self::release)).
    pub fn text_only(&mut self, tags: impl IntoIterator<Item = Tag>) {
        self.text_only.extend(tags);
    }

    /// Declares that the caller reads capture `id`, and every capture
    /// opened after it, through their `Text` events only, as for
    /// [`text_only`](Self::text_only) tags (`None`: no capture by its id).
    /// A caller that stops reading a long capture's `Close` span (a call
    /// it gave up on) lets the stream drop its input.
    pub fn text_only_from(&mut self, id: Option<u32>) {
        self.text_only_from = id.unwrap_or(u32::MAX);
    }

    /// Drops the input nothing can read again when the input has grown
    /// enough since the last look (see [`release`](Self::release)).
    #[inline]
    fn compact(&mut self) {
        if self.input.as_ref().len() >= self.compact_at {
            self.drop_dead();
        }
    }

    #[cold]
    #[inline(never)]
    fn drop_dead(&mut self) {
        // The machine and the open captures move over plain text lazily.
        self.sync();
        let mut keep = self.released.min(self.vm.oldest_needed()).min(
            self.emitter
                .oldest_needed(&self.text_only, self.text_only_from),
        );
        if let Some(plain) = self.plain {
            keep = keep.min(plain.sent);
        }
        // `utf8::safe_end` looks up to 3 bytes back from a position.
        let dead = keep.saturating_sub(3).saturating_sub(self.base);
        let kept = self.input.as_ref().len();
        if dead >= MIN_DROP && dead >= kept / 2 {
            self.base += self.input.drop_front(dead);
            if let Some(spans) = &mut self.spans {
                let gone = spans.partition_point(|&(_, end)| end <= self.base);
                spans.drain(..gone);
            }
        }
        self.compact_at = (2 * self.input.as_ref().len()).max(2 * MIN_DROP);
    }

    /// The events of the last push (or the finish).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Where the text [`extend`](Self::extend) returns starts (it ends
    /// there so far): `None` while every push takes a step.
    #[inline]
    pub fn plain_sent(&self) -> Option<usize> {
        self.plain.map(|p| p.sent)
    }

    /// The frontier: bytes before it are final for every open capture.
    pub fn frontier(&self) -> usize {
        // Text appended by `extend` is final but for a held delimiter prefix.
        let pos = match self.plain {
            Some(plain) if self.synced < self.len() => plain.sent,
            _ => self.vm.commit_point().1,
        };
        self.window().safe_end(pos)
    }

    /// Appends `chunk` and parses as far as the input allows.
    ///
    /// After an error every push returns the same error; after a match,
    /// pushes only store their input.
    #[inline]
    pub fn push(&mut self, chunk: &I::Chunk) -> Result<Feed<'_>, ParseError> {
        if self.push_text(chunk).is_some() {
            return Ok(self.feed(Status::NeedMore));
        }
        self.push_stepped(chunk)
    }

    /// [`push`](Self::push) without trying `push_text`
    /// first, for a caller that just did with the same chunk (checking twice
    /// costs a 4-byte push in a JSON value several percent).
    #[inline]
    pub fn push_stepped(&mut self, chunk: &I::Chunk) -> Result<Feed<'_>, ParseError> {
        self.compact();
        self.sync();
        self.input.append(chunk);
        self.step(false)
    }

    /// The fast path of [`push`](Self::push) for plain text: appends `chunk`
    /// and returns what the push makes (text of the open captures and
    /// [`Status::NeedMore`]), or returns `None` without appending anything,
    /// and the caller pushes the same chunk with
    /// [`push_stepped`](Self::push_stepped). See [`extend`](Self::extend).
    #[inline]
    pub(crate) fn push_text(&mut self, chunk: &I::Chunk) -> Option<Feed<'_>> {
        let (from, to) = self.extend(chunk)?;
        self.events.clear();
        if to > from {
            self.events
                .extend(self.emitter.open().map(|(id, tag)| Event::Text {
                    id,
                    tag,
                    start: from,
                    end: to,
                }));
        }
        Some(self.feed(Status::NeedMore))
    }

    /// Appends `chunk` when it only lengthens the text of every open capture
    /// ([`open_captures`](Self::open_captures)), and returns the range of
    /// input that became final text of each, reporting no event: the
    /// caller knows what they would say. `None`, and nothing appended,
    /// otherwise; the caller then pushes the same chunk with
    /// [`push_stepped`](Self::push_stepped) (a JSON value that ends or fails
    /// in it has its verdict waiting).
    ///
    /// It applies when the machine is suspended in an `until` and `chunk`
    /// completes no delimiter (text with none of the delimiters' first
    /// bytes is plain at once; otherwise the automaton runs over `chunk`,
    /// from the state a held-back delimiter prefix left it in), or in a
    /// JSON value at the end of the input and the value goes on past
    /// `chunk` (inside a string, text without a quote, backslash or control
    /// byte is plain at once; other text the scanner takes now); no live
    /// backtrack entry holds the frontier back; every open capture has sent
    /// all the input up to the held-back prefix; `chunk` does not end in a
    /// cut character. Then a full step would resume that instruction,
    /// consume `chunk`, suspend again (before a delimiter prefix at the new
    /// end) and emit only text up to there: the log and the stack are
    /// untouched, so streaming still equals the full parse. The machine
    /// itself is moved along once, by the next step (`sync`), however many
    /// chunks came this way (the JSON scanner, when it took a chunk, at
    /// once).
    #[inline]
    pub fn extend(&mut self, chunk: &I::Chunk) -> Option<(usize, usize)> {
        // Time to drop input (`release`): the step does it (a call here
        // costs every plain push 2-3%), so the caller need only release
        // before a step.
        if self.input.as_ref().len() >= self.compact_at {
            return None;
        }
        let plain = self.plain.as_mut()?;
        let bytes = chunk.as_ref();
        if !I::WHOLE_CHARS && !ends_whole(bytes) {
            return None;
        }
        let from = plain.sent;
        if plain.held != 0 || plain.stops.any_in(bytes) {
            return match plain.until {
                Some(_) => self.extend_until(chunk),
                None => self.extend_json(chunk),
            };
        }
        plain.sent += bytes.len();
        self.input.append(chunk);
        Some((from, from + bytes.len()))
    }

    /// [`extend`](Self::extend) for a chunk with stop bytes, or after a
    /// held-back delimiter prefix: in an `until`, whether the automaton
    /// meets a delimiter in it. Not inlined: most pushes need not.
    #[inline(never)]
    fn extend_until(&mut self, chunk: &I::Chunk) -> Option<(usize, usize)> {
        let plain = self.plain.as_mut()?;
        let matcher = self.program.inner.matchers.get(plain.until? as usize)?;
        let held = matcher.scan_plain(plain.held as usize, chunk.as_ref())?;
        let from = plain.sent;
        self.input.append(chunk);
        plain.held = held as u32;
        plain.sent = self.base + self.input.as_ref().len() - matcher.depth(held);
        Some((from, plain.sent))
    }

    /// [`extend`](Self::extend) for a chunk with stop bytes in a JSON
    /// value: the scanner takes it now. When the value goes on past it, the
    /// chunk is plain; when it ends or fails in it, the verdict waits in
    /// the machine for the general step the caller takes (`None`). Not
    /// inlined, as `extend_until`.
    #[inline(never)]
    fn extend_json(&mut self, chunk: &I::Chunk) -> Option<(usize, usize)> {
        // The scanner continues from the end of the input: move it over the
        // string text appended since the last step first.
        self.sync();
        if !self.vm.feed_json(chunk.as_ref()) {
            return None;
        }
        let from = self.len();
        self.input.append(chunk);
        let to = self.len();
        self.synced = to;
        self.emitter.advance(to);
        let plain = self.plain.as_mut()?;
        plain.sent = to;
        plain.stops = self.vm.json_stops();
        Some((from, to))
    }

    /// Moves the machine and the open captures over the text
    /// [`extend`](Self::extend) appended since the last step.
    fn sync(&mut self) {
        let len = self.len();
        if let Some(plain) = self.plain.filter(|_| self.synced < len) {
            self.vm.skip_text(&plain, self.synced, len);
            self.emitter.advance(plain.sent);
            self.synced = len;
        }
    }

    /// The captures open after the last push, outermost first: id and tag.
    #[inline]
    pub fn open_captures(&self) -> impl Iterator<Item = (u32, Tag)> + '_ {
        self.emitter.open()
    }

    /// Declares the input complete and finishes the parse.
    pub fn finish(&mut self) -> Result<Feed<'_>, ParseError> {
        self.sync();
        self.step(true)
    }

    #[inline]
    fn step(&mut self, fin: bool) -> Result<Feed<'_>, ParseError> {
        self.events.clear();
        self.synced = self.len();
        self.plain = None;
        match self.state {
            State::Failed(e) => return Err(e),
            State::Matched(end) => return Ok(self.feed(Status::Matched { end })),
            State::Running => {}
        }
        let input = Window {
            bytes: self.input.as_ref(),
            base: self.base,
            spans: self.spans.as_deref(),
        };
        let resumed = !fin && self.vm.resume_suspended(&self.program.inner, input);
        let run = if resumed {
            Run::NeedMore
        } else {
            self.vm.run(&self.program.inner, input, fin)
        };
        let status = match run {
            Run::NeedMore if !fin => Status::NeedMore,
            Run::NeedMore => {
                let e = ParseError {
                    offset: self.vm.pos,
                    kind: ParseErrorKind::Internal,
                };
                self.state = State::Failed(e);
                return Err(e);
            }
            Run::Matched => {
                self.state = State::Matched(self.vm.pos);
                Status::Matched { end: self.vm.pos }
            }
            Run::Failed(e) => {
                self.state = State::Failed(e);
                return Err(e);
            }
        };
        if resumed {
            // Only the suspended instruction moved on: the stack and the log
            // are as the last step left them, so only text can be new.
            let pos = self.live_pos.map_or(self.vm.pos, |p| p.min(self.vm.pos));
            self.emitter
                .emit(&[], input.safe_end(pos), &mut self.events);
        } else {
            let live = self.vm.first_live();
            self.live_pos = live.map(|(_, pos)| pos);
            let (log, pos) = live.map_or((self.vm.log_len(), self.vm.pos), |(log, pos)| {
                (log, pos.min(self.vm.pos))
            });
            let frontier = if fin { pos } else { input.safe_end(pos) };
            let from = self
                .emitted
                .saturating_sub(self.vm.log_base)
                .min(self.vm.log.len());
            let to = log
                .saturating_sub(self.vm.log_base)
                .clamp(from, self.vm.log.len());
            self.emitter
                .emit(&self.vm.log[from..to], frontier, &mut self.events);
            self.emitted = self.vm.log_base + to;
            if to > 256 {
                self.vm.drain_log(self.emitted);
            }
        }
        if status == Status::NeedMore && self.live_pos.is_none() {
            let plain = self.vm.plain_text(&self.program.inner, input, self.synced);
            self.plain = plain.filter(|p| self.emitter.sent_up_to(p.sent));
        }
        Ok(self.feed(status))
    }

    #[inline]
    fn feed(&self, status: Status) -> Feed<'_> {
        Feed {
            events: &self.events,
            input: self.input.as_ref(),
            base: self.base,
            status,
        }
    }
}

/// Whether `chunk`, appended to input that ends on a character boundary,
/// ends on one too. A chunk of 3 bytes or more shows it by itself; a shorter
/// one ending in a non-ASCII byte counts as cut (it takes the general step).
#[inline]
fn ends_whole(chunk: &[u8]) -> bool {
    chunk.last().is_none_or(|&b| b < 0x80)
        || (chunk.len() >= 3 && utf8::incomplete_tail(chunk) == 0)
}

#[cfg(test)]
mod tests {
    use super::super::capture::{Collector, Tag};
    use super::super::grammar::*;
    use super::*;

    const R: Tag = Tag(1);
    const C: Tag = Tag(2);
    const A: Tag = Tag(3);

    fn hermes() -> Program {
        Grammar::new(hermes_expr()).compile().unwrap()
    }

    fn hermes_expr() -> Expr {
        let call = seq([
            lit("<tool_call>"),
            cut(),
            ws(),
            cap(A, json_object()),
            ws(),
            lit("</tool_call>"),
            ws(),
        ]);
        seq([
            opt(seq([
                lit("<think>"),
                cut(),
                cap(R, until(["</think>"])),
                lit("</think>"),
                ws(),
            ])),
            cap(C, until(["<tool_call>"])),
            star(call),
            eoi(),
        ])
    }

    /// Streams `input` in `size`-byte chunks; returns the events with the text
    /// of each, and the input length at the time each was emitted.
    fn stream_events(p: &Program, input: &[u8], size: usize) -> Vec<(Event, String)> {
        events_of(&mut p.stream(), input, size)
    }

    /// [`stream_events`] through the stream `s`.
    fn events_of(s: &mut Stream, input: &[u8], size: usize) -> Vec<(Event, String)> {
        let mut out = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            let feed = s.push(chunk).unwrap();
            out.extend(
                feed.events
                    .iter()
                    .map(|e| (*e, String::from_utf8_lossy(feed.bytes(e)).into_owned())),
            );
        }
        let feed = s.finish().unwrap();
        out.extend(
            feed.events
                .iter()
                .map(|e| (*e, String::from_utf8_lossy(feed.bytes(e)).into_owned())),
        );
        out
    }

    #[test]
    fn full_parse_captures() {
        let input = "<think>hmm</think>\n\nHi!<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
        let m = hermes().parse(input.as_bytes()).unwrap();
        let texts: Vec<(Tag, &str)> = m
            .captures
            .iter()
            .map(|c| (c.tag, &input[c.span()]))
            .collect();
        assert_eq!(
            texts,
            [
                (R, "hmm"),
                (C, "Hi!"),
                (A, r#"{"name": "f", "arguments": {}}"#)
            ]
        );
        assert!(m.complete);
        assert_eq!(m.end, input.len());
    }

    #[test]
    fn streamed_text_is_final_and_complete() {
        let input = "<think>ab</think>cd<tool_call>{\"x\": \"é\"}</tool_call>";
        let events = stream_events(&hermes(), input.as_bytes(), 3);
        let texts: Vec<String> = events
            .iter()
            .map(|(e, t)| match e {
                Event::Open { tag, .. } => format!("open {}", tag.0),
                Event::Text { tag, .. } => format!("{} {t}", tag.0),
                Event::Close { tag, .. } => format!("close {} {t}", tag.0),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "open 1",
                "1 ab",
                "close 1 ab",
                "open 2",
                "2 c",
                "2 d",
                "close 2 cd",
                "open 3",
                "3 {\"x",
                "3 \": ",
                "3 \"é",
                "3 \"}",
                "close 3 {\"x\": \"é\"}",
            ]
        );
    }

    #[test]
    fn a_partial_marker_is_held_back() {
        let p = hermes();
        let mut s = p.stream();
        let feed = s.push(b"Hello <tool_ca").unwrap();
        assert_eq!(feed.status, Status::NeedMore);
        let texts: Vec<&[u8]> = feed.events.iter().map(|e| feed.bytes(e)).collect();
        assert_eq!(texts, [&b""[..], b"Hello "]);
        assert_eq!(s.frontier(), 6);
        // It turns out not to be a marker: now it is content.
        let feed = s.push(b"t").unwrap();
        let texts: Vec<&[u8]> = feed.events.iter().map(|e| feed.bytes(e)).collect();
        assert_eq!(texts, [b"<tool_cat"]);
    }

    #[test]
    fn every_chunking_gives_the_full_parse() {
        let input = "<think>a\u{e9}</think>\n x <tool<tool_call>\n{\"a\": [1, \"</tool_call>\"]}\n</tool_call><tool_call>{}</tool_call>";
        let p = hermes();
        let full = p.parse(input.as_bytes()).unwrap();
        for size in 1..=input.len() {
            let events = stream_events(&p, input.as_bytes(), size);
            let mut col = Collector::default();
            for (e, _) in &events {
                col.apply(e);
            }
            assert_eq!(col.captures, full.captures, "chunk size {size}");
            // Text pieces add up to each capture.
            for (id, c) in full.captures.iter().enumerate() {
                let text: String = events
                    .iter()
                    .filter(|(e, _)| e.id() == id as u32 && matches!(e, Event::Text { .. }))
                    .map(|(_, t)| t.as_str())
                    .collect();
                assert_eq!(text, &input[c.span()], "chunk size {size}, capture {id}");
            }
        }
    }

    #[test]
    fn a_reset_stream_parses_as_a_new_one() {
        let inputs = [
            "<think>a\u{e9}</think>\n x <tool<tool_call>\n{\"a\": [1, \"</tool_call>\"]}\n</tool_call><tool_call>{}</tool_call>",
            "plain text only",
            "x<tool_call>{\"a\": \"</tool_call>\"}</tool_call>",
        ];
        let p = hermes();
        // Left in every state a stream ends in: matched, failed (a broken
        // call after the cut), cut off mid-value, with special spans.
        let leftovers: [&[u8]; 4] = [
            inputs[0].as_bytes(),
            b"x<tool_call>{\"a\" 1}",
            b"<think>a</think>b<tool_call>{\"a\": [",
            b"",
        ];
        for (k, left) in leftovers.iter().enumerate() {
            let mut s = p.stream();
            if k == 3 {
                s.special_spans(std::iter::once(0..3));
            }
            let _ = s.push(left);
            if k < 2 {
                let _ = s.finish();
            }
            for input in inputs {
                for size in [1, 3, input.len()] {
                    s.reset();
                    assert_eq!(
                        events_of(&mut s, input.as_bytes(), size),
                        stream_events(&p, input.as_bytes(), size),
                        "after leftover {k}, chunk size {size}, {input:?}"
                    );
                }
            }
        }
    }

    /// Streams `input` in `size`-byte chunks, declaring `special` before
    /// the chunk each starts in; returns the captures' tags and texts.
    fn stream_tokens(
        p: &Program,
        input: &str,
        special: &[(usize, usize)],
        size: usize,
    ) -> Vec<(Tag, String)> {
        let mut s = p.stream();
        let mut col = Collector::default();
        s.special_spans(std::iter::empty());
        for (i, chunk) in input.as_bytes().chunks(size.max(1)).enumerate() {
            let at = i * size.max(1);
            let starts_here = special
                .iter()
                .filter(|&&(a, _)| a >= at && a < at + chunk.len());
            s.special_spans(starts_here.map(|&(a, b)| a..b));
            s.push(chunk)
                .unwrap()
                .events
                .iter()
                .for_each(|e| col.apply(e));
        }
        s.finish().unwrap().events.iter().for_each(|e| col.apply(e));
        col.captures
            .iter()
            .map(|c| (c.tag, input[c.span()].to_string()))
            .collect()
    }

    #[test]
    fn a_special_token_typed_as_text_is_text() {
        // A vocabulary's worth of tokens the grammar does not hold, too.
        let unused = (0..10_000).map(|i| format!("<|unused_{i}|>"));
        let p = Grammar::new(hermes_expr())
            .special_tokens(["<tool_call>", "</tool_call>", "<think>", "</think>"])
            .special_tokens(unused)
            .compile()
            .unwrap();
        let kept = p.inner.special.as_ref().map(|m| m.literals().len());
        assert_eq!(kept, Some(4));
        let input =
            "<think>a</think>Say <tool_call>{}</tool_call> then<tool_call>{\"b\": 1}</tool_call>";
        let span = |marker: &str, nth: usize| {
            let at = input.match_indices(marker).nth(nth).unwrap().0;
            (at, at + marker.len())
        };
        let think = [span("<think>", 0), span("</think>", 0)];
        let last_call = [span("<tool_call>", 1), span("</tool_call>", 1)];
        let content = |text: &str| (C, text.to_string());
        // Plain throughout: no marker at all (the reasoning too is content).
        for size in [1, 2, 3, 7, input.len()] {
            assert_eq!(
                stream_tokens(&p, input, &[], size),
                [content(input)],
                "size {size}"
            );
        }
        // The second call and the reasoning markers sampled as tokens.
        let spans: Vec<_> = think.iter().chain(&last_call).copied().collect();
        for size in [1, 2, 3, 7, input.len()] {
            assert_eq!(
                stream_tokens(&p, input, &spans, size),
                [
                    (R, "a".to_string()),
                    content("Say <tool_call>{}</tool_call> then"),
                    (A, "{\"b\": 1}".to_string()),
                ],
                "size {size}"
            );
        }
        // Without spans, characters decide, as before: a call.
        let first_call = &input[16..span("</tool_call>", 0).1];
        let m = p.parse(first_call.as_bytes()).unwrap();
        assert_eq!(m.captures[1].tag, A);
    }

    #[test]
    fn plain_text_takes_the_fast_path() {
        let p = hermes();
        let mut s = p.stream();
        let text = |feed: Option<Feed>| feed.map(|f| f.events.len());
        s.push(b"Hi").unwrap();
        assert_eq!(text(s.push_text(b" the")), Some(1));
        assert_eq!(
            s.feed(Status::NeedMore).events,
            [Event::Text {
                id: 0,
                tag: C,
                start: 2,
                end: 6
            }]
        );
        // A byte that may start `<tool_call>`: still plain, held back.
        assert_eq!(text(s.push_text(b"re <")), Some(1));
        assert_eq!(
            s.feed(Status::NeedMore).events,
            [Event::Text {
                id: 0,
                tag: C,
                start: 6,
                end: 9
            }]
        );
        assert_eq!(s.frontier(), 9);
        // A delimiter: declined, nothing appended.
        assert_eq!(text(s.push_text(b"tool_call>")), None);
        assert_eq!(text(s.push_text(b"x <tool_call>")), None);
        assert_eq!(s.input(), b"Hi there <");
        // The held `<` turns out plain.
        assert_eq!(text(s.push_text(b"b ")), Some(1));
        assert_eq!(
            s.feed(Status::NeedMore).events,
            [Event::Text {
                id: 0,
                tag: C,
                start: 9,
                end: 12
            }]
        );
        // A cut character takes the general step and is held back, and so
        // does the byte that completes it; then plain text is fast again.
        let (lead, tail) = "\u{e9}".as_bytes().split_at(1);
        assert_eq!(text(s.push_text(lead)), None);
        assert_eq!(s.push(lead).unwrap().events, []);
        assert_eq!(text(s.push_text(tail)), None);
        assert_eq!(
            s.push(tail).unwrap().events,
            [Event::Text {
                id: 0,
                tag: C,
                start: 12,
                end: 14
            }]
        );
        assert_eq!(text(s.push_text(b"ok")), Some(1));
        // Inside a JSON string: plain text is fast, a quote is not.
        s.push(b"<tool_call>{\"a\": \"x").unwrap();
        assert_eq!(text(s.push_text(b"yz")), Some(1));
        assert_eq!(
            s.feed(Status::NeedMore).events,
            [Event::Text {
                id: 1,
                tag: A,
                start: 35,
                end: 37
            }]
        );
        // JSON structure is plain too while the value goes on; a chunk that
        // ends it is declined, and pushed next.
        assert_eq!(text(s.push_text(b"\", \"b\": [1, {")), Some(1));
        assert_eq!(
            s.feed(Status::NeedMore).events,
            [Event::Text {
                id: 1,
                tag: A,
                start: 37,
                end: 50
            }]
        );
        assert_eq!(text(s.push_text(b"}]}")), None);
        assert_eq!(s.frontier(), 50);
        let feed = s.push_stepped(b"}]}").unwrap();
        assert_eq!(
            feed.events,
            [
                Event::Text {
                    id: 1,
                    tag: A,
                    start: 50,
                    end: 53
                },
                Event::Close {
                    id: 1,
                    tag: A,
                    start: 27,
                    end: 53
                }
            ]
        );
    }

    #[test]
    fn partial_parse_reports_the_prefix() {
        let p = hermes();
        let m = p.parse_partial(b"<think>abc</thi").unwrap();
        assert!(!m.complete);
        assert_eq!(m.captures.len(), 1);
        assert_eq!(
            (
                m.captures[0].tag,
                m.captures[0].span(),
                m.captures[0].closed
            ),
            (R, 7..10, false)
        );
        let m = p
            .parse_partial("Hi <tool_call>{\"a\": \"\u{e9}".as_bytes())
            .unwrap();
        let spans: Vec<_> = m
            .captures
            .iter()
            .map(|c| (c.tag, c.span(), c.closed))
            .collect();
        assert_eq!(spans, [(C, 0..3, true), (A, 14..23, false)]);
        // The é is cut: the open capture stops before it.
        let m = p
            .parse_partial(&"Hi <tool_call>{\"a\": \"\u{e9}".as_bytes()[..22])
            .unwrap();
        assert_eq!(m.captures[1].span(), 14..21);
        let e = p.parse_partial(b"<tool_call>{]").unwrap_err();
        assert_eq!(
            e,
            ParseError {
                offset: 12,
                kind: ParseErrorKind::NoMatch
            }
        );
        assert_eq!(e.to_string(), "no match (furthest failure at byte 12)");
    }

    #[test]
    fn a_json_value_fails_where_the_full_parse_does() {
        // The error comes in a chunk the scanner takes on the fast path, in
        // a string (an escape) or in the structure.
        let p = hermes();
        for input in [
            "<tool_call>{\"a\": [1, 2, {\"b\": \"c\\q\"}]}",
            "<tool_call>{\"a\": [1, 2, {\"b\": tru}]}",
        ] {
            let full = p.parse(input.as_bytes()).unwrap_err();
            for size in 1..=input.len() {
                let mut s = p.stream();
                let error = input
                    .as_bytes()
                    .chunks(size)
                    .find_map(|c| s.push(c).err())
                    .or_else(|| s.finish().err());
                assert_eq!(error, Some(full), "{input:?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn errors_and_after_the_end() {
        let p = hermes();
        let mut s = p.stream();
        assert!(s.push(b"<tool_call>{").is_ok());
        let e = s.push(b"]").unwrap_err();
        assert_eq!(e.offset, 12);
        assert_eq!(s.push(b"more").unwrap_err(), e);
        assert_eq!(s.finish().unwrap_err(), e);

        let p = Grammar::new(lit("ab")).compile().unwrap();
        let mut s = p.stream();
        assert_eq!(s.push(b"a").unwrap().status, Status::NeedMore);
        assert_eq!(s.push(b"bcd").unwrap().status, Status::Matched { end: 2 });
        assert_eq!(s.push(b"e").unwrap().status, Status::Matched { end: 2 });
        assert_eq!(s.finish().unwrap().status, Status::Matched { end: 2 });
        assert_eq!(s.input(), b"abcde");
    }

    /// Streams `input` in `size`-byte chunks, releasing all input after
    /// each push (the events' bytes are read at once); returns the events
    /// with their bytes and the most input the stream kept at once.
    fn stream_released(
        p: &Program,
        input: &[u8],
        size: usize,
        text_only: &[Tag],
    ) -> (Vec<(Event, Vec<u8>)>, usize) {
        let mut s = p.stream();
        s.text_only(text_only.iter().copied());
        let (mut out, mut kept) = (Vec::new(), 0);
        for chunk in input.chunks(size).map(Some).chain([None]) {
            let feed = match chunk {
                Some(chunk) => s.push(chunk).unwrap(),
                None => s.finish().unwrap(),
            };
            out.extend(feed.events.iter().map(|e| (*e, feed.bytes(e).to_vec())));
            kept = kept.max(feed.input.len());
            s.release(usize::MAX);
        }
        (out, kept)
    }

    #[test]
    fn released_input_is_dropped_and_events_stay_the_same() {
        let big = |unit: &str, n: usize| unit.repeat(n);
        let call = |n| {
            format!(
                "<tool_call>{{\"a\": \"{}\"}}</tool_call>",
                big("x\u{e9}y", n)
            )
        };
        let hermes_input = format!(
            "<think>{}</think>{}<tool_ca{}{}{}",
            big("why \u{e9}", 20_000),
            big("so <tool_c", 15_000),
            call(3),
            call(30_000),
            call(5)
        );
        // A choice that stays open over all the text: its alternative
        // starts again from the beginning (or not, with "END").
        let open_choice = Grammar::new(seq([
            choice([seq([cap(A, until(["END"])), lit("END")]), cap(C, rest())]),
            eoi(),
        ]))
        .compile()
        .unwrap();
        let long = big("a\u{e9}", 100_000);
        let cases = [
            (hermes(), hermes_input, 160_000),
            (open_choice.clone(), long.clone(), usize::MAX),
            (open_choice, format!("{long}END"), usize::MAX),
        ];
        for (p, input, bound) in cases {
            let full = p.parse(input.as_bytes()).unwrap();
            for size in [1, 7, 4096, 70_000] {
                let (events, kept) = stream_released(&p, input.as_bytes(), size, &[R, C]);
                assert!(kept < bound, "kept {kept} of {} bytes", input.len());
                let mut col = Collector::default();
                events.iter().for_each(|(e, _)| col.apply(e));
                assert_eq!(col.captures, full.captures, "chunk size {size}");
                for (id, c) in full.captures.iter().enumerate() {
                    let text: Vec<u8> = events
                        .iter()
                        .filter(|(e, _)| e.id() == id as u32 && matches!(e, Event::Text { .. }))
                        .flat_map(|(_, t)| t.iter().copied())
                        .collect();
                    assert_eq!(
                        text,
                        &input.as_bytes()[c.span()],
                        "chunk size {size}, capture {id}"
                    );
                }
                for (e, bytes) in &events {
                    if let Event::Close {
                        tag: A, start, end, ..
                    } = *e
                    {
                        assert_eq!(bytes, &input.as_bytes()[start..end], "chunk size {size}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_capture_read_through_its_text_only_lets_its_input_go() {
        // An outer capture (read at its close) around a long inner one.
        let p = Grammar::new(seq([
            cap(A, seq([lit("<"), cap(C, until([">"])), lit(">")])),
            eoi(),
        ]))
        .compile()
        .unwrap();
        let long = "x".repeat(200_000);
        let kept = |from: Option<u32>| {
            let mut s = p.stream();
            s.text_only([C]);
            s.push(b"<").unwrap();
            s.text_only_from(from);
            let mut kept = 0;
            for chunk in long.as_bytes().chunks(1000) {
                kept = kept.max(s.push(chunk).unwrap().input.len());
                s.release(usize::MAX);
            }
            s.push(b">").unwrap();
            let feed = s.finish().unwrap();
            assert!(matches!(feed.status, Status::Matched { .. }));
            kept
        };
        // The outer capture's start holds all the input; read through its
        // text only (id 0 and the captures after it), little is kept.
        assert!(kept(None) > 200_000);
        assert!(kept(Some(0)) < 2 * MIN_DROP + 2000, "{}", kept(Some(0)));
    }

    #[test]
    fn long_streams_drain_the_log() {
        let p = Grammar::new(seq([star(seq([cap(C, until([";"])), lit(";")])), eoi()]))
            .compile()
            .unwrap();
        let mut s = p.stream();
        let mut col = Collector::default();
        for _ in 0..1000 {
            for e in s.push(b"ab;").unwrap().events {
                col.apply(e);
            }
        }
        for e in s.finish().unwrap().events {
            col.apply(e);
        }
        assert_eq!(col.captures.len(), 1000);
        assert_eq!(col.captures[999].span(), 2997..2999);
        assert!(s.vm.log.len() < 600, "log holds {} entries", s.vm.log.len());
    }
}
