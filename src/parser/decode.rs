//! The decoder: capture events become OpenAI-shaped deltas.
//!
//! The grammar decides where each byte goes (see `tags`); the decoder only
//! turns captures into text:
//!
//! - content and reasoning stream as they arrive, with the whitespace at
//!   their edges dropped (it is the template's scaffolding: `</think>\n\n`);
//!   trailing whitespace is held back until more text follows, so nothing
//!   sent is ever retracted;
//! - a call is announced (index, id, name) when its name is complete;
//!   argument text that arrives earlier is held until then;
//! - tagged and Python arguments are rebuilt as a JSON object, streaming
//!   string values and typing the others by the tool's schema;
//! - a broken call's rest becomes content and is reported;
//! - a call whose arguments do not end as JSON text (`{"days": 3x}`, a
//!   string cut by the end of the output) is withdrawn: the message leaves
//!   it out and its whole text, with its section's framing, is content
//!   (reported). Its deltas were sent and stay sent: a stream cannot take
//!   them back, but every final message hands a server JSON arguments. It
//!   is decided when the call closes (or breaks), so a partial parse may
//!   still show a call whose arguments are incomplete;
//! - a call whose text passes [`LONGEST_CALL`] while open is withdrawn at
//!   once, and its text is content (see [`Decoder::outgrows`]);
//! - a tool section read inside a reasoning block (`REASONING_CALLS`,
//!   `calls_in_reasoning: call` or `both`) holds calls as any section
//!   does, reported with its range; under `call` the reasoning text it
//!   encloses leaves out the section's span (the bytes are in the calls),
//!   but a member the format does not have and the whole of a section with
//!   a withdrawn call stay reasoning. The spans are known before the
//!   reasoning text around them comes (the grammar reads such a section
//!   whole, in one step), so the reasoning is the same at every chunking;
//! - the output [`Policy`] decides what off-script text becomes: content
//!   after the first kept call, a call the output ends in (its break opens
//!   during the finishing step: only the end of the output decides there
//!   is no closer, whatever the chunking; inside a block whose events wait
//!   for the end, a call broken earlier counts so too, which only the
//!   non-default `unclosed_call_at_end` choices can tell), a broken call, an unknown
//!   tool's call. Text a policy leaves out is reported as `Dropped` ranges,
//!   merged where the dropped text is contiguous, so the ranges do not
//!   depend on the chunking either.
//!
//! Invariant: the deltas depend only on the events, and the events of a
//! stream equal those of a batch parse, so streaming equals batch.

use std::sync::Arc;

use serde_json::Value;

use crate::message::{FunctionDelta, ToolCallDelta};
use crate::protocol::outline::Elements;
use chat_autoparser_peg::{json::decode_string, python, Event, Tag};

use super::diagnostic::{Diagnostic, DiagnosticKind};
use super::generator::NAMESPACE;
use super::json_check;
use super::policy::{
    CallsInReasoning, ForeignMarkers, MalformedSection, Policy, TextAfterCalls,
    TextOutsideChannels, UnclosedCall, UnknownTool,
};
use super::schema::{ArgType, ToolSchemas};
use super::sink::{Field, Sink};
use super::tags::*;
use crate::protocol::Notation;

/// The tags whose `Close` text the decoder never reads (`Decoder::close`
/// has no arm for them): their text comes through `Text` events only, so
/// the stream lets the engine drop the output behind them while they are
/// open (`peg::Stream::text_only`). A tag added to `close` leaves this list.
pub const TEXT_ONLY: [Tag; 5] = [REASONING, CONTENT, ARGS, BROKEN, REASONING_CALLS];

/// The tags of a tagged argument's value.
const VALUES: [Tag; 4] = [ARG_STRING, ARG_JSON, ARG_NOTATION, ARG_ELEMENTS];

/// The longest a call's text may grow while it is open, in bytes (4 MiB):
/// a longer call is withdrawn at once, and its text, that far and on, is
/// content. A call is kept whole (the engine keeps its text) until it
/// closes, in case it has to be withdrawn; this bounds what a stream holds
/// for an open call.
pub const LONGEST_CALL: usize = 4 << 20;

/// Turns events into deltas; one per parse.
#[derive(Debug)]
pub struct Decoder {
    /// How nested argument values are written (`ARG_NOTATION`).
    notation: Option<Notation>,
    /// How objects and lists are written as elements (`ARG_ELEMENTS`).
    elements: Option<Arc<Elements>>,
    schemas: Arc<ToolSchemas>,
    parallel: bool,
    content: Edges,
    reasoning: Edges,
    next_index: usize,
    call: Option<Call>,
    arg: Option<Arg>,
    /// Content an `OPENED` capture stands for (the inline reasoning opening).
    opened: String,
    /// Reasoning the prompt wrote where the block starts, written when the
    /// `REASONING` capture opens (see `start::prompt_reasoning`).
    reasoning_prefix: String,
    /// End of the last byte any event covered.
    pub consumed: usize,
    /// A reused buffer for escaping streamed string values.
    scratch: String,
    /// Problems found so far.
    pub diagnostics: Vec<Diagnostic>,
    /// A tool section's opening marker, waiting for its first call.
    lead: String,
    /// The last call that closed was withdrawn (framing after it is content).
    after_withdrawn: bool,
    /// Indices of the calls withdrawn so far.
    pub withdrawn: Vec<usize>,
    /// What off-script text becomes.
    policy: Policy,
    /// The events being applied come from the finishing step: the output
    /// has ended (set by the stream).
    pub at_end: bool,
    /// Where the output ends, once it has (set by the stream).
    pub output_end: Option<usize>,
    /// A call was kept: content from here on is text after the calls.
    after_calls: bool,
    /// The last call that closed was dropped (framing after it is too).
    after_dropped: bool,
    /// The raw end of the last dropped text, and whether a `Dropped`
    /// diagnostic covers the run it ends (contiguous drops merge).
    drop_chain: Option<(usize, bool)>,
    /// Whether the text here is in a channel's message, when content
    /// outside channels is dropped (`None`: it never is).
    in_channel: Option<bool>,
    /// A call's text went to the content (or was left out) since the last
    /// call opened: an unknown tool's, a broken or withdrawn call's, or the
    /// text after an opener no call followed. Own closers after it are
    /// that text's, not stray (`STRAY`).
    call_text_in_content: bool,
    /// The tool section open inside a reasoning block.
    thought: Option<ThoughtSection>,
    /// Output spans the open reasoning block's text leaves out: its
    /// sections read as calls (`calls_in_reasoning: call`), in order.
    thought_skips: Vec<(usize, usize)>,
}

/// A tool section inside a reasoning block (`REASONING_CALLS`).
#[derive(Debug, Default)]
struct ThoughtSection {
    start: usize,
    /// A call of it was kept.
    kept: bool,
    /// A call of it was withdrawn: all its text stays reasoning.
    withdrawn: bool,
    /// Spans of text its calls hold that the format does not have
    /// (`EXTRA`): reasoning text, in order.
    extra: Vec<(usize, usize)>,
}

impl ThoughtSection {
    /// The section's span up to `end`, less its extra text.
    fn spans(&self, end: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut at = self.start;
        for &(from, to) in &self.extra {
            out.push((at, from));
            at = to;
        }
        out.push((at, end));
        out.retain(|(from, to)| from < to);
        out
    }
}

/// The call being decoded.
#[derive(Debug, Default)]
struct Call {
    index: usize,
    /// The engine's id of its capture.
    capture: u32,
    /// Withdrawn while open, for its length ([`LONGEST_CALL`]): its text
    /// from here on is content.
    oversized: Option<usize>,
    id: Option<String>,
    name: Option<String>,
    /// Argument text seen before the name.
    held: String,
    /// Any argument text was sent (or held).
    any_arguments: bool,
    /// Tagged or Python arguments seen (the decoder writes the braces).
    pairs: usize,
    /// Where the call starts in the output.
    start: usize,
    /// Its section's opening marker (when it is the section's first call).
    lead: String,
    /// Its arguments cannot end as JSON: its text goes to content whole.
    withdrawn: bool,
    /// Its name is none of the request's (under `unknown_tool: content`):
    /// withdrawn, and named by an `UnknownTool` diagnostic instead.
    unknown: bool,
    /// A value was cut short by the end of the output: the call is not
    /// what the model meant to write, whatever JSON it would make.
    cut_value: bool,
    /// The output ended where the call's closer was due.
    unclosed: bool,
    /// Kept with its arguments as written, JSON or not (`salvage`): its
    /// broken rest is more of them, up to the call's closer.
    salvaged: bool,
    /// Whitespace at the end of the salvaged text so far: the closer's,
    /// unless more text comes.
    salvaged_space: String,
    /// Its name was a JSON string: the call is one JSON object (name and
    /// arguments inside), which nothing can salvage once it is broken.
    named_in_json: bool,
    /// Read inside a reasoning block: a broken one stays reasoning text.
    in_reasoning: bool,
    /// Its text is left out, not content (a policy's `drop`).
    dropped: bool,
    /// Members the format does not have (`EXTRA`), content once the call
    /// is known to be kept (a withdrawn call's text holds them already),
    /// and where each starts.
    extra: String,
    extra_at: Vec<usize>,
}

impl Call {
    /// Broken (`complete`: its arguments are whole JSON all the same), under
    /// `malformed_section: salvage`: kept with its arguments as written, up
    /// to its closer, when they stand alone between markers (JSON after a
    /// raw name, `get_weather[ARGS]{...`). A broken call object (`{"name":
    /// ..., "arguments": ...}`) or broken argument pairs hold no arguments
    /// text of their own to keep: their text is content, as under
    /// `content` (the engines that salvage return such text as content).
    fn salvage(&mut self, complete: bool) {
        if complete || self.unknown {
            return;
        }
        // JSON arguments text seen, and no pairs: a slot of their own.
        let standalone = self.any_arguments && self.pairs == 0 && !self.named_in_json;
        match standalone {
            true => self.salvaged = true,
            false => self.withdrawn = true,
        }
    }

    /// The output cut the call before its arguments began (a named call
    /// with no argument text: `{"name": "f", "`) or inside a value: it is
    /// no call, whatever JSON its arguments would make.
    fn cut_short(&self) -> bool {
        let unstarted = self.name.is_some() && !self.any_arguments && self.pairs == 0;
        unstarted || self.cut_value
    }
}

/// The tagged or Python argument being decoded.
#[derive(Debug, Default)]
struct Arg {
    key: String,
    kind: ArgType,
    /// A string value being streamed (its opening quote is sent).
    streaming: bool,
}

/// How values nested in an argument are written, when the template has a
/// notation of its own for them.
#[derive(Debug, Clone, Default)]
pub struct Nested {
    pub notation: Option<Notation>,
    pub elements: Option<Arc<Elements>>,
}

/// Where plain text goes while only more text of the open captures arrives
/// ([`Decoder::run`]): the decoder's state changes only on an opening or a
/// closing, so this holds from one engine step to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// No open capture takes text (a name being read, scaffolding).
    Nowhere,
    Content,
    Reasoning,
    /// Argument text of call `index`, as written (JSON arguments).
    Arguments(usize),
    /// Argument text of call `index`, escaped into a JSON string (a tagged
    /// string value).
    Escaped(usize),
    /// Content a policy leaves out.
    Dropped,
}

/// Which field a prefill left open: its leading whitespace is text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Continues {
    pub content: bool,
    pub reasoning: bool,
}

/// What a decoder starts from: its parser's settings, the same for each
/// of the parser's streams.
pub struct Setup<'a> {
    pub schemas: &'a Arc<ToolSchemas>,
    pub parallel: bool,
    pub continues: Continues,
    /// The text an `OPENED` capture writes as content.
    pub opened: &'a str,
    /// Reasoning the prompt wrote where the block starts
    /// (`Decoder::reasoning_prefix`).
    pub reasoning_prefix: &'a str,
    /// How nested values are written (`ARG_NOTATION`, `ARG_ELEMENTS`).
    pub nested: &'a Nested,
    pub policy: Policy,
    /// `Some(opened)`: a channel format, and the prompt opened a channel's
    /// message or not.
    pub in_channel: Option<bool>,
}

impl Decoder {
    pub fn new(setup: &Setup) -> Decoder {
        Decoder {
            notation: setup.nested.notation.clone(),
            elements: setup.nested.elements.clone(),
            opened: setup.opened.to_string(),
            reasoning_prefix: setup.reasoning_prefix.to_string(),
            schemas: setup.schemas.clone(),
            parallel: setup.parallel,
            content: Edges {
                started: setup.continues.content,
                ..Edges::default()
            },
            reasoning: Edges {
                started: setup.continues.reasoning,
                ..Edges::default()
            },
            next_index: 0,
            call: None,
            arg: None,
            consumed: 0,
            scratch: String::new(),
            diagnostics: Vec::new(),
            lead: String::new(),
            after_withdrawn: false,
            withdrawn: Vec::new(),
            policy: setup.policy,
            at_end: false,
            output_end: None,
            after_calls: false,
            after_dropped: false,
            drop_chain: None,
            in_channel: setup.in_channel,
            call_text_in_content: false,
            thought: None,
            thought_skips: Vec::new(),
        }
    }

    /// As [`new`](Self::new) with `setup`, in place and keeping the
    /// buffers' allocations (a parser's spare stream, reused). Every field
    /// is named, so a new one cannot be forgotten here.
    pub fn reset(&mut self, setup: &Setup) {
        let Decoder {
            notation,
            elements,
            schemas,
            parallel,
            content,
            reasoning,
            next_index,
            call,
            arg,
            opened,
            reasoning_prefix,
            consumed,
            scratch,
            diagnostics,
            lead,
            after_withdrawn,
            withdrawn,
            policy,
            at_end,
            output_end,
            after_calls,
            after_dropped,
            drop_chain,
            in_channel,
            call_text_in_content,
            thought,
            thought_skips,
        } = self;
        notation.clone_from(&setup.nested.notation);
        elements.clone_from(&setup.nested.elements);
        schemas.clone_from(setup.schemas);
        opened.clear();
        opened.push_str(setup.opened);
        reasoning_prefix.clear();
        reasoning_prefix.push_str(setup.reasoning_prefix);
        content.restart(setup.continues.content);
        reasoning.restart(setup.continues.reasoning);
        (*parallel, *policy, *in_channel) = (setup.parallel, setup.policy, setup.in_channel);
        (*next_index, *consumed) = (0, 0);
        (*call, *arg, *thought) = (None, None, None);
        (*output_end, *drop_chain) = (None, None);
        (*after_withdrawn, *at_end, *after_calls) = (false, false, false);
        (*after_dropped, *call_text_in_content) = (false, false);
        scratch.clear();
        diagnostics.clear();
        lead.clear();
        withdrawn.clear();
        thought_skips.clear();
    }

    /// Content text from here on is left out: after the calls, or outside
    /// any channel, as the policy says.
    fn drops_content_text(&self) -> bool {
        let outside = self.in_channel == Some(false);
        self.drops_content()
            || (outside && self.policy.text_outside_channels == TextOutsideChannels::Drop)
    }

    /// The channel's message ended (its block, its call, a message break).
    fn leave_channel(&mut self) {
        if self.in_channel.is_some() {
            self.in_channel = Some(false);
        }
    }

    /// Content from here on is left out (`text_after_calls: drop`). A
    /// channel's message the model opens after its calls
    /// (`<|start|>assistant<|channel|>final<|message|>...`) is addressed to
    /// the user, not narration after the calls: it is kept (as vLLM's
    /// harmony reading keeps it).
    fn drops_content(&self) -> bool {
        let in_message = self.in_channel == Some(true);
        self.after_calls && self.policy.text_after_calls == TextAfterCalls::Drop && !in_message
    }

    /// Content text of the output, ending where the decoder is: content,
    /// or left out when the policy drops it.
    fn output_content(&mut self, text: &str, out: &mut Sink) {
        if self.drops_content() {
            self.drop_text(text);
        } else {
            self.raw_content(text, out);
        }
    }

    /// Leaves out `text`, which ends where the decoder is.
    fn drop_text(&mut self, text: &str) {
        let end = self.consumed;
        let start = end.saturating_sub(text.len());
        let lead = text.len() - text.trim_start().len();
        let trail = text.len() - text.trim_end().len();
        self.drop_range(start, end, (start + lead).min(end), end - trail);
    }

    /// Reports output `start..end` left out; `seen_from..seen_to` is the
    /// part that is not edge whitespace (empty: none), reported merged with
    /// the run of dropped text it continues.
    fn drop_range(&mut self, start: usize, end: usize, seen_from: usize, seen_to: usize) {
        let contiguous = self.drop_chain.filter(|&(at, _)| at == start);
        let reported = if seen_from < seen_to {
            match (contiguous, self.diagnostics.last_mut()) {
                (Some((_, true)), Some(last)) if last.kind == DiagnosticKind::Dropped => {
                    last.end = Some(seen_to);
                }
                _ => self.diagnostics.push(Diagnostic::range(
                    DiagnosticKind::Dropped,
                    seen_from,
                    seen_to,
                )),
            }
            true
        } else {
            contiguous.is_some_and(|(_, reported)| reported)
        };
        self.drop_chain = Some((end, reported));
    }

    /// Content text that bypasses the grammar (a prefix, or bytes after an
    /// engine error), with the same edge handling.
    pub fn raw_content(&mut self, text: &str, out: &mut Sink) {
        self.content.push(text, |t| out.content(t));
    }

    /// Decodes one event; `text` is the event's text (the whole span for a
    /// close).
    pub fn apply(&mut self, event: &Event, text: &str, out: &mut Sink) {
        match *event {
            _ if self.call.as_ref().is_some_and(|c| c.oversized.is_some()) => {
                self.apply_oversized(event, text, out)
            }
            Event::Open { tag, id, start, .. } => self.open(tag, id, start, out),
            Event::Text { tag, end, .. } => self.more_text(tag, end, text, out),
            Event::Close { tag, end, .. } => {
                self.consumed = self.consumed.max(end);
                if self.output_end == Some(end) && VALUES.contains(&tag) {
                    // The value runs to the end of the output: no closer
                    // came, so it is cut short (as a JSON string cut by
                    // the end is), however it would read.
                    if let Some(call) = self.call.as_mut() {
                        call.cut_value = true;
                    }
                }
                self.close(tag, text, out);
            }
        }
    }

    /// When `event` is the first past [`LONGEST_CALL`] from the open call's
    /// start: the range of output the call has covered so far (to where
    /// the decoder is: its later text comes in the call's `Text` events),
    /// which the caller passes to
    /// [`withdraw_oversized`](Self::withdraw_oversized) before applying
    /// `event`. Decided on positions only (a call longer than the limit
    /// has an event past it), so a stream and a batch parse withdraw the
    /// same calls, with the same text.
    pub fn outgrows(&self, event: &Event) -> Option<(usize, usize)> {
        // A call inside reasoning is held whole by the lookahead that read
        // it (`reasoning`): withdrawing it would save nothing.
        let call = self
            .call
            .as_ref()
            .filter(|c| c.oversized.is_none() && !c.in_reasoning)?;
        let at = match *event {
            Event::Open { start, .. } => start,
            Event::Text { end, .. } | Event::Close { end, .. } => end,
        };
        (at > call.start + LONGEST_CALL).then_some((call.start, self.consumed))
    }

    /// Withdraws the open call for its length: `text` (its text so far,
    /// from [`outgrows`](Self::outgrows)) is content, and so is the rest of
    /// it as it comes; nothing inside it is decoded any more.
    pub fn withdraw_oversized(&mut self, text: &str, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        call.oversized = Some(call.start + text.len());
        let (start, index, named) = (call.start, call.index, call.name.is_some());
        let lead = std::mem::take(&mut call.lead);
        self.diagnostics
            .push(Diagnostic::new(DiagnosticKind::OversizedToolCall, start));
        self.call_text_in_content = true;
        self.retract(index, named, out);
        self.arg = None;
        self.raw_content(&lead, out);
        self.raw_content(text, out);
    }

    /// The engine's id of the open call when it was withdrawn for its
    /// length: the decoder reads it and what it holds through text only.
    pub fn oversized_call(&self) -> Option<u32> {
        self.call
            .as_ref()
            .filter(|c| c.oversized.is_some())
            .map(|c| c.capture)
    }

    /// An event inside a call withdrawn for its length: the call's own text
    /// past what was given already is content; the call's close ends it.
    fn apply_oversized(&mut self, event: &Event, text: &str, out: &mut Sink) {
        match *event {
            Event::Text {
                tag: CALL,
                start,
                end,
                ..
            } => {
                self.consumed = self.consumed.max(end);
                let given = self.call.as_ref().and_then(|c| c.oversized).unwrap_or(0);
                let skip = given.saturating_sub(start).min(text.len());
                self.raw_content(text.get(skip..).unwrap_or_default(), out);
            }
            Event::Close { tag: CALL, end, .. } => {
                self.consumed = self.consumed.max(end);
                self.call = None;
                self.after_withdrawn = true;
            }
            Event::Text { end, .. } | Event::Close { end, .. } => {
                self.consumed = self.consumed.max(end);
            }
            Event::Open { .. } => {}
        }
    }

    /// A capture tagged `tag` grew by `text`, which ends at `end`.
    #[inline]
    pub fn more_text(&mut self, tag: Tag, end: usize, text: &str, out: &mut Sink) {
        self.consumed = self.consumed.max(end);
        match tag {
            REASONING => self.reasoning_text(text, end, out),
            _ => self.text(tag, text, out),
        }
    }

    /// What more text of the open captures (`tags`, outermost first) does,
    /// when one capture at most takes it and that is all
    /// [`text`](Self::text) would do; `None` otherwise (argument text held
    /// until the name is known, two captures taking text).
    pub fn run(&self, tags: impl Iterator<Item = Tag>) -> Option<Run> {
        let mut run = Run::Nowhere;
        let oversized = self.call.as_ref().is_some_and(|c| c.oversized.is_some());
        for tag in tags {
            let this = match tag {
                // A call withdrawn for its length: its text is content.
                CALL if oversized => Run::Content,
                _ if oversized => continue,
                // Its calls' decoding, and the reasoning's spans, are per event.
                REASONING_CALLS => return None,
                CONTENT if self.drops_content_text() => Run::Dropped,
                CONTENT => Run::Content,
                // As `text` does: a withdrawn call's rest comes with the
                // whole call, even where content is dropped.
                BROKEN if self.call.as_ref().is_some_and(|c| c.withdrawn) => continue,
                // Salvaged arguments: per event, as argument text.
                BROKEN if self.call.as_ref().is_some_and(|c| c.salvaged) => return None,
                BROKEN if self.call.as_ref().is_some_and(|c| c.dropped) => Run::Dropped,
                BROKEN if self.drops_content() => Run::Dropped,
                BROKEN => Run::Content,
                REASONING => Run::Reasoning,
                ARGS | ARG_STRING => {
                    let streaming = self.arg.as_ref().is_some_and(|a| a.streaming);
                    match self.call.as_ref() {
                        None => continue,
                        Some(_) if tag == ARG_STRING && !streaming => continue,
                        // Held, or `any_arguments` still to be set.
                        Some(c) if c.name.is_none() || !c.any_arguments => return None,
                        Some(c) if tag == ARGS => Run::Arguments(c.index),
                        Some(c) => Run::Escaped(c.index),
                    }
                }
                _ => continue,
            };
            if run != Run::Nowhere {
                return None;
            }
            run = this;
        }
        Some(run)
    }

    /// Decodes `text` as more text of the open captures whose
    /// [`run`](Self::run) is `run`: what their `Text` events would do, except
    /// that JSON argument text (`Run::Arguments`, written as it comes) goes
    /// to the deltas only: the caller owes it to the message. The caller
    /// moves `consumed` over it.
    /// Always inlined into the stream's push: as a call it made a 4-byte
    /// push of the think bench 10% slower.
    #[inline(always)]
    pub fn run_text(&mut self, run: Run, text: &str, out: &mut Sink) {
        match run {
            Run::Nowhere => {}
            Run::Content => self.content.push(text, |t| out.put(Field::Content, t)),
            Run::Dropped => self.drop_text(text),
            Run::Reasoning => self.reasoning.push(text, |t| out.put(Field::Reasoning, t)),
            Run::Arguments(index) => out.delta(Field::Arguments(index), text),
            // Most pieces of a value have nothing to escape.
            Run::Escaped(index) if !text.bytes().any(needs_escape) => {
                out.put(Field::Arguments(index), text)
            }
            Run::Escaped(index) => {
                self.scratch.clear();
                escape_json(text, &mut self.scratch);
                out.put(Field::Arguments(index), &self.scratch);
            }
        }
    }

    fn open(&mut self, tag: Tag, id: u32, start: usize, out: &mut Sink) {
        match tag {
            CALL => {
                let index = self.next_index;
                self.next_index += 1;
                if index > 0 && !self.parallel {
                    self.diagnostics
                        .push(Diagnostic::new(DiagnosticKind::ExtraToolCall, start));
                }
                self.after_withdrawn = false;
                self.after_dropped = false;
                self.call_text_in_content = false;
                self.call = Some(Call {
                    index,
                    capture: id,
                    start,
                    lead: std::mem::take(&mut self.lead),
                    in_reasoning: self.thought.is_some(),
                    ..Call::default()
                });
            }
            REASONING_CALLS => {
                self.thought = Some(ThoughtSection {
                    start,
                    ..ThoughtSection::default()
                })
            }
            ARG => self.arg = Some(Arg::default()),
            BROKEN => {
                self.call_text_in_content = true;
                self.diagnostics
                    .push(Diagnostic::new(DiagnosticKind::BrokenToolCall, start));
                // The arguments are all there: decide now whether the rest
                // streams as content or comes with the whole call.
                let cut = self.call.as_ref().is_some_and(Call::cut_short);
                let complete = !cut && self.arguments_complete(out);
                let (at_end, policy) = (self.at_end, self.policy);
                if let Some(call) = self.call.as_mut() {
                    call.unclosed = at_end;
                    match (
                        at_end,
                        policy.unclosed_call_at_end,
                        policy.malformed_section,
                    ) {
                        (true, UnclosedCall::Recover, _) => call.withdrawn = !complete,
                        (true, UnclosedCall::Drop, _) => {
                            (call.withdrawn, call.dropped) = (true, true)
                        }
                        (true, UnclosedCall::Content, _) => call.withdrawn = true,
                        (false, _, MalformedSection::Content) => call.withdrawn = !complete,
                        (false, _, MalformedSection::Drop) => {
                            (call.withdrawn, call.dropped) = (!complete, true)
                        }
                        (false, _, MalformedSection::Salvage) => call.salvage(complete),
                    }
                    // A call of a function the request lacks stays withdrawn.
                    call.withdrawn |= call.unknown;
                }
                let kept = self.call.as_ref().is_some_and(|c| !c.withdrawn);
                if kept {
                    self.keep_extra(out);
                }
            }
            UNKNOWN_TOOL => {
                self.call_text_in_content = true;
                self.diagnostics
                    .push(Diagnostic::new(DiagnosticKind::UnknownTool, start))
            }
            CALL_TEXT => self.call_text_in_content = true,
            UNKNOWN_LABEL => self
                .diagnostics
                .push(Diagnostic::new(DiagnosticKind::UnknownLabel, start)),
            CHANNEL if self.in_channel.is_some() => self.in_channel = Some(true),
            CHANNEL_END => self.leave_channel(),
            REASONING if !self.reasoning_prefix.is_empty() => {
                let prefix = std::mem::take(&mut self.reasoning_prefix);
                self.reasoning.push(&prefix, |t| out.reasoning(t));
            }
            ARG_STRING => {
                let streaming = self.arg.as_ref().is_some_and(|a| a.kind.is_string_only());
                if streaming {
                    if let Some(a) = self.arg.as_mut() {
                        a.streaming = true;
                    }
                    self.arguments("\"", out);
                }
            }
            _ => {}
        }
    }

    fn text(&mut self, tag: Tag, text: &str, out: &mut Sink) {
        match tag {
            BROKEN if self.call.as_ref().is_some_and(|c| c.withdrawn) => {}
            BROKEN if self.call.as_ref().is_some_and(|c| c.salvaged) => self.salvaged(text, out),
            BROKEN if self.call.as_ref().is_some_and(|c| c.dropped) => self.drop_text(text),
            CONTENT if self.drops_content_text() => self.drop_text(text),
            CONTENT | BROKEN => self.output_content(text, out),
            ARGS => self.arguments(text, out),
            ARG_STRING if self.arg.as_ref().is_some_and(|a| a.streaming) => {
                let mut escaped = std::mem::take(&mut self.scratch);
                escaped.clear();
                escape_json(text, &mut escaped);
                self.arguments(&escaped, out);
                self.scratch = escaped;
            }
            _ => {}
        }
    }

    fn close(&mut self, tag: Tag, text: &str, out: &mut Sink) {
        match tag {
            NAME => self.announce(text, out),
            ID => self.set_id(text, out),
            ARGS_STRING => {
                let decoded = decode_string(text.as_bytes()).unwrap_or_else(|| text.to_string());
                self.arguments(&decoded, out);
            }
            // Not convertible: the text as written, which is no JSON, so
            // the call is withdrawn (or salvaged) as any broken one. A
            // string converts to a JSON one, decoded as `ARGS_STRING` is.
            ARGS_PYTHON => {
                let json = python::to_json(text.as_bytes()).unwrap_or_else(|_| text.to_string());
                let json = match json.starts_with('"') {
                    true => decode_string(json.as_bytes()).unwrap_or(json),
                    false => json,
                };
                self.arguments(&json, out);
            }
            // The reasoning's edges are trimmed, not each block's: the
            // whitespace just inside the markers where one block ends and
            // the next begins is kept between their texts (`first\n\nsecond`
            // of `<think>\nfirst\n</think>…<think>\nsecond\n</think>`), so
            // their words do not run together; held, it is sent only when
            // the next block writes text.
            REASONING => {
                self.thought_skips.clear();
                self.leave_channel();
            }
            REASONING_CALLS => self.end_thought_section(),
            ARG_KEY => self.begin_pair(text.trim(), out),
            ARG_STRING => {
                let piece = match self.arg.as_ref() {
                    Some(a) if a.streaming => "\"".to_string(),
                    Some(a) => a.kind.encode(text),
                    None => Value::String(text.to_string()).to_string(),
                };
                self.arguments(&piece, out);
            }
            ARG_JSON => {
                let kind = self
                    .arg
                    .as_ref()
                    .map(|a| a.kind.clone())
                    .unwrap_or_default();
                let piece = match serde_json::from_str::<Value>(text.trim()) {
                    Ok(v @ Value::String(_)) => v.to_string(),
                    _ => kind.encode(text.trim()),
                };
                self.arguments(&piece, out);
            }
            ARG_NOTATION => {
                let kind = self
                    .arg
                    .as_ref()
                    .map(|a| a.kind.clone())
                    .unwrap_or_default();
                let piece = match self.notation.as_ref().and_then(|n| n.to_json(text)) {
                    Some(json) => kind.encode_converted(&json, text.trim()),
                    None => kind.encode(text.trim()),
                };
                self.arguments(&piece, out);
            }
            ARG_ELEMENTS => {
                let piece = match (self.elements.as_deref(), self.arg.as_ref()) {
                    (Some(e), Some(a)) => a.kind.encode_elements(e, &a.key, text),
                    _ => Value::String(text.to_string()).to_string(),
                };
                self.arguments(&piece, out);
            }
            ARG_PYTHON => {
                let piece = python::to_json(text.as_bytes());
                // A quoted number or boolean of a type without strings is
                // that scalar (a template that quotes every value). Only
                // such a type reads the value again (it may be large).
                let kind = self.arg.as_ref().map(|a| &a.kind);
                let piece = piece.map(|json| match kind.filter(|k| k.unquotes()) {
                    Some(k) => match serde_json::from_str::<Value>(&json) {
                        Ok(Value::String(s)) => k.unquoted(&s).map_or(json, |v| v.to_string()),
                        _ => json,
                    },
                    None => json,
                });
                let piece = piece.unwrap_or_else(|_| {
                    // No literal: a bare word (`city=Paris`, `2024-01-15`) is
                    // a string; a quoted or bracketed value is one the output
                    // cut short (`city="Par`), as is one not begun (`city=`).
                    if text.is_empty() || text.starts_with(['\'', '"', '[', '{', '(']) {
                        if let Some(call) = self.call.as_mut() {
                            call.cut_value = true;
                        }
                    }
                    Value::String(text.to_string()).to_string()
                });
                self.arguments(&piece, out);
            }
            ARG => self.arg = None,
            CALL => {
                self.end_call(text, out);
                self.leave_channel();
            }
            EXTRA => self.extra(text),
            FOREIGN => self.foreign(text, out),
            STRAY => self.stray(text, out),
            // A repeated name, or a closing tag's, that is not the one it
            // repeats is text the model wrote.
            ECHO if self.call.as_ref().and_then(|c| c.name.as_deref()) != Some(text.trim()) => {
                self.extra(text)
            }
            CLOSE_NAME if self.arg.as_ref().map(|a| a.key.as_str()) != Some(text.trim()) => {
                self.extra(text)
            }
            // A section inside reasoning: its framing is reasoning text, or
            // left out of it with the section.
            SECTION_OPEN | FRAME if self.thought.is_some() => {}
            SECTION_OPEN | FRAME if self.after_dropped => self.drop_text(text),
            SECTION_OPEN | FRAME if self.after_withdrawn => self.output_content(text, out),
            SECTION_OPEN => self.lead.push_str(text),
            OPENED => {
                let opened = std::mem::take(&mut self.opened);
                self.raw_content(&opened, out);
            }
            _ => {}
        }
    }

    /// `text` (which ends where the decoder is) is another format's call
    /// marker: content, named by a diagnostic, or left out. Under `text`
    /// it is only read around a bare JSON call of the template's own
    /// format, whose framing it is: left out, as under `drop`.
    fn foreign(&mut self, text: &str, out: &mut Sink) {
        if self.policy.foreign_markers != ForeignMarkers::Content {
            return self.drop_text(text);
        }
        let start = self.consumed.saturating_sub(text.len());
        self.diagnostics.push(Diagnostic::range(
            DiagnosticKind::ForeignMarker,
            start,
            self.consumed,
        ));
        self.output_content(text, out);
    }

    /// `text` (which ends where the decoder is) is a marker of the
    /// template's own format read where no call is open: the text of a call
    /// given back to the content before it keeps it (verbatim); otherwise
    /// it closes nothing, and is left out, named. (Under
    /// `foreign_markers: text` a lone closer after text is no marker: the
    /// grammar reads it as content.)
    fn stray(&mut self, text: &str, out: &mut Sink) {
        if self.call_text_in_content {
            return self.output_content(text, out);
        }
        let start = self.consumed.saturating_sub(text.len());
        let stray = Diagnostic::range(DiagnosticKind::StrayMarker, start, self.consumed);
        self.diagnostics.push(stray);
    }

    /// `text` (which ends where the decoder is) is text of the current call
    /// the format does not have: content once the call is kept.
    fn extra(&mut self, text: &str) {
        let at = self.consumed.saturating_sub(text.len());
        if let Some(section) = self.thought.as_mut() {
            // Inside reasoning it is reasoning text, where it stands.
            section.extra.push((at, self.consumed));
            if let Some(call) = self.call.as_mut() {
                call.extra_at.push(at);
            }
            return;
        }
        if let Some(call) = self.call.as_mut() {
            if !call.extra.is_empty() {
                call.extra.push(' ');
            }
            call.extra.push_str(text.trim());
            call.extra_at.push(at);
        }
    }

    fn announce(&mut self, raw: &str, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let quoted = decode_quoted(raw);
        call.named_in_json = quoted.is_some();
        let name = quoted.unwrap_or_else(|| raw.trim().to_string());
        // A request's function in OpenAI's namespace or with a call counter
        // (`functions.NAME`, `NAME:0`) is that function where a name the
        // request lacks would be content; where such a name is a call
        // (`unknown_tool: call`), the name is what was written, as vLLM's
        // and SGLang's parsers return it.
        let name = match addressed_function(&name) {
            bare if self.policy.unknown_tool == UnknownTool::Content
                && !self.schemas.knows(&name)
                && self.schemas.knows(bare) =>
            {
                bare.to_string()
            }
            _ => name,
        };
        match self.policy.unknown_tool {
            _ if self.schemas.knows(&name) => {}
            UnknownTool::Call => self
                .diagnostics
                .push(Diagnostic::new(DiagnosticKind::UnknownToolCall, call.start)),
            // A name the grammar let through by its known start
            // (`get_weather!` where the slot reads to its closer): no
            // call a server could dispatch, so its text is content.
            UnknownTool::Content => {
                (call.withdrawn, call.unknown) = (true, true);
                self.diagnostics
                    .push(Diagnostic::new(DiagnosticKind::UnknownTool, call.start));
            }
        }
        call.name = Some(name.clone());
        out.tool_call(ToolCallDelta {
            index: call.index,
            id: call.id.clone(),
            // The message's calls are all functions (`MessageBuilder`).
            kind: out.writes_deltas().then(|| "function".into()),
            function: FunctionDelta {
                name: Some(name),
                arguments: None,
            },
        });
        out.arguments(call.index, &call.held);
        call.held = String::new();
    }

    fn set_id(&mut self, raw: &str, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let id = decode_quoted(raw.trim()).unwrap_or_else(|| raw.trim().to_string());
        if call.name.is_some() {
            out.tool_call(ToolCallDelta {
                index: call.index,
                id: Some(id.clone()),
                ..Default::default()
            });
        }
        call.id = Some(id);
    }

    /// `{"key": ` or `, "key": ` before a tagged or Python value.
    fn begin_pair(&mut self, key: &str, out: &mut Sink) {
        let (tool, first) = match self.call.as_mut() {
            Some(call) => {
                call.pairs += 1;
                (call.name.clone().unwrap_or_default(), call.pairs == 1)
            }
            None => return,
        };
        let kind = self.schemas.arg_type(&tool, key);
        if let Some(arg) = self.arg.as_mut() {
            arg.key = key.to_string();
            arg.kind = kind;
        }
        let lead = if first { "{" } else { ", " };
        self.arguments(&format!("{lead}{}: ", Value::String(key.to_string())), out);
    }

    /// The call closes; `text` is all of it.
    fn end_call(&mut self, text: &str, out: &mut Sink) {
        let complete = self.arguments_complete(out);
        if let Some(call) = self.call.take() {
            let broken = call.withdrawn || call.cut_value || !complete;
            match call.in_reasoning {
                true => self.end_thought_call(call, broken, out),
                false => self.end_output_call(call, broken, text, out),
            }
        }
        self.arg = None;
    }

    /// A call of the output's own sections closes (`broken`: its arguments
    /// are not JSON text): kept, salvaged, dropped or withdrawn.
    fn end_output_call(&mut self, mut call: Call, broken: bool, text: &str, out: &mut Sink) {
        if broken && !call.unclosed && !call.withdrawn {
            // Broken at its close (arguments that are not JSON, a
            // value the output cut): the malformed-section policy.
            match self.policy.malformed_section {
                MalformedSection::Content => {}
                MalformedSection::Drop => call.dropped = true,
                MalformedSection::Salvage => call.salvage(false),
            }
        }
        if call.salvaged {
            self.diagnostics.push(Diagnostic::new(
                DiagnosticKind::SalvagedToolCall,
                call.start,
            ));
            self.after_withdrawn = false;
            self.after_dropped = false;
            self.after_calls = true;
        } else if broken && call.dropped {
            self.discard(call, out);
        } else if broken {
            self.withdraw(call, text, out);
        } else {
            self.keep(call, out);
        }
    }

    /// `call` closed whole: its arguments' closing, and its extra members.
    fn keep(&mut self, call: Call, out: &mut Sink) {
        if let Some(c) = closing(&call) {
            out.arguments(call.index, c);
        }
        self.call = Some(call);
        self.keep_extra(out);
        self.call = None;
        self.after_calls = true;
    }

    /// A call read inside a reasoning block closes. Kept, or withdrawn when
    /// its arguments are not JSON text: then its section's text is all
    /// reasoning (no policy for broken calls applies: the text stays where
    /// the model wrote it).
    fn end_thought_call(&mut self, call: Call, broken: bool, out: &mut Sink) {
        if !broken {
            self.keep(call, out);
            if let Some(section) = self.thought.as_mut() {
                section.kept = true;
            }
            return;
        }
        self.diagnostics.push(Diagnostic::new(
            DiagnosticKind::WithdrawnToolCall,
            call.start,
        ));
        self.retract(call.index, call.name.is_some(), out);
        if let Some(section) = self.thought.as_mut() {
            section.withdrawn = true;
        }
    }

    /// Takes back the call at `index` from the message, when it was
    /// `named`: the message holds a call only once its name is read.
    fn retract(&mut self, index: usize, named: bool, out: &mut Sink) {
        if named {
            out.withdraw(index);
            self.withdrawn.push(index);
        }
    }

    /// A tool section inside a reasoning block closes where the decoder is:
    /// reported when it held a kept call, and under `call` left out of the
    /// reasoning text unless a call of it was withdrawn.
    fn end_thought_section(&mut self) {
        let Some(section) = self.thought.take() else {
            return;
        };
        if !section.kept {
            return;
        }
        self.diagnostics.push(Diagnostic::range(
            DiagnosticKind::CallInReasoning,
            section.start,
            self.consumed,
        ));
        if self.policy.calls_in_reasoning == CallsInReasoning::Call && !section.withdrawn {
            self.thought_skips.extend(section.spans(self.consumed));
        }
    }

    /// Reasoning text that ends at `end`, less the spans of sections read
    /// out of it ([`Decoder::thought_skips`]).
    fn reasoning_text(&mut self, text: &str, end: usize, out: &mut Sink) {
        if self.thought_skips.is_empty() {
            return self.reasoning.push(text, |t| out.reasoning(t));
        }
        let start = end.saturating_sub(text.len());
        let mut at = start;
        let mut kept = String::new();
        for &(from, to) in &self.thought_skips {
            if to <= at || from >= end {
                continue;
            }
            kept.push_str(
                text.get(at - start..from.max(at) - start)
                    .unwrap_or_default(),
            );
            at = to.min(end);
        }
        kept.push_str(text.get(at - start..).unwrap_or_default());
        self.reasoning.push(&kept, |t| out.reasoning(t));
    }

    /// The current call is kept: the members it had that the format does
    /// not have are content now, reported.
    fn keep_extra(&mut self, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let extra = std::mem::take(&mut call.extra);
        for at in call.extra_at.drain(..) {
            self.diagnostics
                .push(Diagnostic::new(DiagnosticKind::UnknownMember, at));
        }
        self.raw_content(&extra, out);
    }

    /// Whether the current call's arguments, closed as [`closing`] closes
    /// them, are JSON text (true without a named call: nothing was sent).
    fn arguments_complete(&self, out: &mut Sink) -> bool {
        let Some(call) = self.call.as_ref().filter(|c| c.name.is_some()) else {
            return true;
        };
        let closing = closing(call).unwrap_or_default();
        out.with_arguments_closed(call.index, closing, json_check::is_readable)
    }

    /// Leaves `call` out of the message: its framing and `text` (the whole
    /// call) are content.
    fn withdraw(&mut self, call: Call, text: &str, out: &mut Sink) {
        if !call.unknown {
            self.diagnostics.push(Diagnostic::new(
                DiagnosticKind::WithdrawnToolCall,
                call.start,
            ));
        }
        self.call_text_in_content = true;
        self.retract(call.index, call.name.is_some(), out);
        if self.drops_content() {
            let start = call.start.saturating_sub(call.lead.len());
            let end = self.consumed;
            self.drop_range(start, end, start, end);
        } else {
            self.raw_content(&call.lead, out);
            self.raw_content(text, out);
        }
        self.after_withdrawn = true;
        self.after_dropped = false;
    }

    /// Leaves `call` out of the message and its text too (a policy's
    /// `drop`): its framing and text, to where the decoder is, are
    /// reported as dropped.
    fn discard(&mut self, call: Call, out: &mut Sink) {
        self.retract(call.index, call.name.is_some(), out);
        let start = call.start.saturating_sub(call.lead.len());
        let end = self.consumed;
        self.drop_range(start, end, start, end);
        self.after_withdrawn = false;
        self.after_dropped = true;
        self.call_text_in_content = true;
    }

    /// More of a salvaged call's arguments, as written up to its closer,
    /// less the whitespace just before the closer (the closer's, as a
    /// marker's edge whitespace always is).
    fn salvaged(&mut self, text: &str, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        let body = text.trim_end();
        if body.is_empty() {
            call.salvaged_space.push_str(text);
            return;
        }
        let mut piece = std::mem::take(&mut call.salvaged_space);
        piece.push_str(body);
        call.salvaged_space.push_str(&text[body.len()..]);
        self.arguments(&piece, out);
    }

    /// Sends argument text for the current call (held until its name is known).
    fn arguments(&mut self, text: &str, out: &mut Sink) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        if text.is_empty() {
            return;
        }
        call.any_arguments = true;
        if call.name.is_none() {
            call.held.push_str(text);
        } else {
            out.arguments(call.index, text);
        }
    }
}

/// What the decoder writes after a call's last argument: the braces of
/// tagged or Python arguments, or `{}` for a call with none.
fn closing(call: &Call) -> Option<&'static str> {
    if call.pairs > 0 {
        Some("}")
    } else if !call.any_arguments {
        Some("{}")
    } else {
        None
    }
}

/// Appends `text` as the inside of a JSON string, escaped exactly as
/// `serde_json` escapes it (without allocating per piece).
fn escape_json(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut from = 0;
    // A tight search for the next byte to escape: most bytes need none.
    while let Some(k) = bytes[from..].iter().position(|&b| needs_escape(b)) {
        let i = from + k;
        out.push_str(&text[from..i]);
        push_escape(bytes[i], out);
        from = i + 1;
    }
    out.push_str(&text[from..]);
}

/// Whether `b` is escaped in a JSON string: a quote, a backslash or a
/// control byte.
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Appends the JSON escape of `b`, a quote, a backslash or a control byte.
fn push_escape(b: u8, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        }
    }
}

/// Drops whitespace at both edges of a streamed text without retracting:
/// leading whitespace is skipped, trailing whitespace is held until more
/// text follows it.
#[derive(Debug, Default)]
struct Edges {
    started: bool,
    held: String,
}

impl Edges {
    /// As new, `started` or not, keeping the allocation.
    fn restart(&mut self, started: bool) {
        self.started = started;
        self.held.clear();
    }

    /// Passes `send` what of `text` is final now: the held whitespace, then
    /// the text up to its own trailing whitespace (pieces may be empty).
    #[inline]
    fn push(&mut self, text: &str, mut send: impl FnMut(&str)) {
        // Most pieces: text after text, ending in a visible ASCII byte.
        if self.started
            && self.held.is_empty()
            && matches!(text.as_bytes().last(), Some(b'!'..=0x7f))
        {
            send(text);
            return;
        }
        self.push_edges(text, send);
    }

    /// [`push`](Self::push) at an edge.
    fn push_edges(&mut self, text: &str, mut send: impl FnMut(&str)) {
        let text = if self.started {
            text
        } else {
            text.trim_start()
        };
        if text.is_empty() {
            return;
        }
        self.started = true;
        // Whitespace is at most U+0020 in ASCII: a piece that ends in any
        // other ASCII byte (most do) has no tail to hold.
        let body = match text.as_bytes().last() {
            Some(b'!'..=0x7f) => text,
            _ => text.trim_end(),
        };
        if !body.is_empty() {
            if !self.held.is_empty() {
                send(&self.held);
                self.held.clear();
            }
            send(body);
        }
        // Most pieces have no tail: skip the (empty) copy.
        if body.len() < text.len() {
            self.held.push_str(&text[body.len()..]);
        }
    }
}

/// The function a name addresses: without OpenAI's namespace and a call
/// counter after it (`functions.get_weather:0` → `get_weather`).
fn addressed_function(name: &str) -> &str {
    let bare = name.strip_prefix(NAMESPACE).unwrap_or(name);
    match bare.rsplit_once(':') {
        Some((function, counter))
            if !counter.is_empty() && counter.bytes().all(|b| b.is_ascii_digit()) =>
        {
            function
        }
        _ => bare,
    }
}

/// The text of a quoted string as a call object writes one: JSON's, or a
/// Python literal's (`'get_weather'`, a call object written as a dict);
/// `None` for any other text.
fn decode_quoted(raw: &str) -> Option<String> {
    if let Some(plain) = plain_json_string(raw) {
        return Some(plain.to_string());
    }
    match raw.as_bytes().first() {
        Some(b'"') => decode_string(raw.as_bytes()),
        Some(b'\'') => match serde_json::from_str(&python::to_json(raw.as_bytes()).ok()?) {
            Ok(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The text of a JSON string token without escapes or control characters
/// (a name, mostly): what [`decode_string`] decodes it to, without asking
/// serde_json (about a fifth of a short call's close). `None` for any other
/// token, which [`decode_string`] then reads.
fn plain_json_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let plain = inner.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
    plain.then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut decodes as serde_json does, and only plain tokens.
    #[test]
    fn plain_strings_decode_as_serde_json_decodes_them() {
        let tokens = [
            r#""get_weather""#,
            r#""café 東京""#,
            r#""""#,
            r#""a\"b""#,
            r#""a\u00e9""#,
            r#""a"b""#,
            r#""a" "#,
            "\"tab\there\"",
            r#""open"#,
            r#"""#,
            "'single'",
        ];
        for token in tokens {
            if let Some(plain) = plain_json_string(token) {
                let serde = decode_string(token.as_bytes());
                assert_eq!(Some(plain.to_string()), serde, "{token}");
            }
            let general = match token.starts_with('"') {
                true => decode_string(token.as_bytes()),
                false => Some("single".to_string()),
            };
            assert_eq!(decode_quoted(token), general, "{token}");
        }
        assert_eq!(plain_json_string(r#""get_weather""#), Some("get_weather"));
        assert_eq!(plain_json_string(r#""""#), Some(""));
        assert_eq!(plain_json_string(r#""a"b""#), None);
        assert_eq!(plain_json_string("\"tab\there\""), None);
        assert_eq!(plain_json_string(r#""a\"b""#), None);
    }

    #[test]
    fn edges_never_retract() {
        let mut e = Edges::default();
        let pieces: Vec<String> = ["\n\n", "Hi", " \n", "there", "\n"]
            .iter()
            .map(|t| {
                let mut sent = String::new();
                e.push(t, |piece| sent.push_str(piece));
                sent
            })
            .collect();
        assert_eq!(pieces, ["", "Hi", "", " \nthere", ""]);
    }

    #[test]
    fn escapes_as_serde_json() {
        let all: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é東🌧\u{2028}".chars())
            .collect();
        for text in [all.as_str(), "plain", "", "a\"b\\c\nd"] {
            let mut ours = String::new();
            escape_json(text, &mut ours);
            let theirs = Value::String(text.into()).to_string();
            assert_eq!(ours, theirs[1..theirs.len() - 1]);
        }
    }
}
