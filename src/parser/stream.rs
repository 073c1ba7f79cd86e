//! Streaming: push chunks of model output, get OpenAI-shaped deltas.
//!
//! An [`OutputStream`] drives the PEG stream of the generated grammar and
//! the decoder. Each push resumes the machine where it stopped, so a whole
//! output costs time linear in its length however it is chunked
//! (`benches/parser.rs` measures it). A batch parse is one push and a
//! finish, so streaming equals batch by construction.
//!
//! Output may also come as bytes ([`OutputStream::push_bytes`]): tokens
//! split characters. Bytes are decoded exactly as one
//! `String::from_utf8_lossy` of the whole output would decode them: an
//! incomplete sequence at a push's end waits for the next push, an invalid
//! one becomes U+FFFD, and `finish` turns a sequence still incomplete into
//! U+FFFD.
//!
//! Memory: before each step the stream tells the engine how far it has
//! read the output (`peg::Stream::release`: up to the decoder's `consumed`,
//! once the owed arguments are paid), and it reads the captures of
//! `TEXT_ONLY` tags through their text only; the engine drops the output
//! before what it can still read, so a long stream keeps the message and
//! what is pending, not the whole output. A call is kept whole while it is
//! open (the decoder withdraws it verbatim if it breaks), so one longer
//! than `LONGEST_CALL` is withdrawn at once: the stream hands the decoder
//! the call's text so far and declares the call read through text only
//! (`peg::Stream::text_only_from`), and the engine drops it.
//!
//! Special tokens ([`OutputStream::push_tokens`]): a caller that knows which
//! bytes the model sampled as special tokens says so with each push; the
//! engine then takes a marker holding one of the vocabulary's special
//! tokens (`ParserConfig::special_tokens`) only where those bytes are that
//! token (`peg::Stream::special_spans`). A special token comes whole in one
//! push, as a tokenizer decodes it, so every byte the engine looks at has
//! its origin known: streaming still equals batch.
//!
//! Invariants: deltas are never retracted; after an engine error (which the
//! generated grammars rule out, but the engine reports rather than panics)
//! the rest of the output is content, verbatim, with a diagnostic.

use std::borrow::Cow;
use std::ops::Range;

use crate::error::{Error, ErrorKind, Result};
use crate::message::{AssistantMessage, Delta, MessageBuilder};
use chat_autoparser_peg::{self as peg, Event};

use super::call_id::StreamIds;
use super::decode::{Decoder, Run, Setup, TEXT_ONLY};
use super::diagnostic::{Diagnostic, DiagnosticKind};
use super::prefill::Prefill;
use super::sink::{self, Deltas, Field, Sink};
use super::tokens::TokenSpans;

/// An incremental parse of one output.
#[derive(Debug)]
pub struct OutputStream {
    /// The engine, keeping the output as text: an event's text is a slice
    /// of it (checked in O(1) at its ends), not bytes validated again.
    peg: peg::Stream<String>,
    decoder: Decoder,
    /// Bytes from here on bypass the grammar (after an engine error).
    verbatim_from: Option<usize>,
    /// Where plain text goes when the engine takes it without a step
    /// (`peg::Stream::extend`); decided after each step, `None` when only a
    /// step decodes text right.
    run: Option<Run>,
    /// JSON argument text the deltas carried and the builder has not got:
    /// call index and where the text starts; it ends where the engine's
    /// plain text does. Plain pushes of `Run::Arguments` leave the message
    /// to the next step (one copy of each byte, not one per push).
    owed: Option<(usize, usize)>,
    builder: MessageBuilder,
    /// The bytes of a character `push_bytes` got only part of (at most 3).
    utf8_tail: Vec<u8>,
    /// Mints ids for calls the model wrote without one, when asked.
    ids: Option<StreamIds>,
    /// Text goes to the message only, not to deltas (a batch parse).
    quiet: bool,
    /// Which pushed tokens wrote each part (`push_token`).
    token_spans: TokenSpans,
}

impl OutputStream {
    /// `prefill`: text the client already has (in the message, not sent).
    /// A stream reading with `program` and `decoder`, the message starting
    /// with `prefill`, minting call ids with `ids` (`ParserConfig::call_ids`).
    /// Set up in place: the stream is large, and a batch parse of a short
    /// output paid a tenth of its time copying it between builder calls.
    pub(crate) fn new(
        program: &peg::Program,
        decoder: Decoder,
        prefill: &Prefill,
        ids: Option<StreamIds>,
    ) -> OutputStream {
        let mut peg = program.text_stream();
        peg.text_only(TEXT_ONLY);
        OutputStream {
            peg,
            decoder,
            verbatim_from: None,
            run: None,
            owed: None,
            builder: prefilled(prefill),
            utf8_tail: Vec::new(),
            ids,
            quiet: false,
            token_spans: TokenSpans::default(),
        }
    }

    /// Starts this stream over for a new output of the same program, as
    /// [`new`](Self::new) makes one with these arguments (its decoder from
    /// `setup`), keeping the
    /// engine's allocations (`peg::Stream::reset`): a parser's batch parses
    /// reuse one stream. Every field is named, so a new one cannot be
    /// forgotten here.
    pub(crate) fn reset(&mut self, setup: &Setup, prefill: &Prefill, ids: Option<StreamIds>) {
        let OutputStream {
            peg,
            decoder,
            verbatim_from,
            run,
            owed,
            builder,
            utf8_tail,
            ids: old_ids,
            quiet,
            token_spans,
        } = self;
        peg.reset();
        peg.text_only(TEXT_ONLY);
        decoder.reset(setup);
        (*verbatim_from, *run, *owed) = (None, None, None);
        *builder = prefilled(prefill);
        utf8_tail.clear();
        *old_ids = ids;
        *quiet = false;
        *token_spans = TokenSpans::default();
    }

    /// The length of the output pushed so far.
    pub(crate) fn pushed(&self) -> usize {
        self.peg.len()
    }

    /// Makes this stream write text to the message only (a batch parse: its
    /// pushes' deltas carry calls' announcements, for minted ids, but no
    /// text).
    pub(crate) fn make_quiet(&mut self) {
        self.quiet = true;
    }

    /// The deltas a push writes: none at all in a quiet stream that mints
    /// no ids (nothing reads them; `TokenSpans` reads a push's deltas only
    /// for `push_token`, which a batch parse does not call).
    fn deltas(&self) -> Deltas {
        match (self.quiet, self.ids.is_some()) {
            (false, _) => Deltas::All,
            (true, true) => Deltas::Announcements,
            (true, false) => Deltas::None,
        }
    }

    /// Appends a chunk of output; returns the deltas it made final.
    pub fn push(&mut self, chunk: &str) -> Vec<Delta> {
        let mut out = Vec::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// Appends a chunk of output; replaces `out`'s contents with the deltas
    /// it made final. The same as [`push`](Self::push), but a caller that
    /// passes the same buffer to every push (a server sending each push's
    /// deltas) reuses its allocations, deltas' strings included, and text
    /// that continues the same field comes as one delta.
    pub fn push_into(&mut self, chunk: &str, out: &mut Vec<Delta>) {
        if self.utf8_tail.is_empty() {
            return self.push_text(chunk, out);
        }
        // A character cut by `push_bytes` that text does not complete.
        self.utf8_tail.clear();
        self.push_text(&format!("\u{FFFD}{chunk}"), out);
    }

    /// Appends a chunk of output whose special tokens are known; returns
    /// the deltas it made final. `special`: the byte ranges of `chunk` the
    /// model sampled as special tokens, in order, each whole (a token is
    /// never split across pushes); the rest of `chunk` came from ordinary
    /// tokens. From the first such push on, a marker that holds one of the
    /// vocabulary's special tokens (`ParserConfig::special_tokens`, say
    /// `<tool_call>`) is a marker only where it is one of these ranges: a
    /// `<tool_call>` the model (or a user it quotes) wrote as plain
    /// characters is content, or argument text, byte for byte. Text pushed
    /// by [`push`](Self::push) after that counts as ordinary tokens.
    ///
    /// Ranges out of `chunk`, not on character boundaries, empty, or out of
    /// order or overlapping are an [`ErrorKind::Input`] error; nothing is
    /// pushed then.
    ///
    /// ```
    /// # use chat_autoparser::{ChatTemplate, Options, ParserConfig, TemplateConfig};
    /// # let source = std::fs::read_to_string("templates/hermes-think.jinja").unwrap();
    /// # let analysis = ChatTemplate::new(&source, &TemplateConfig::default())?.analyze()?;
    /// # let tools = vec![serde_json::json!({"type": "function", "function": {"name": "f"}})];
    /// let config = ParserConfig::from(Options::default().with_tools(tools))
    ///     .with_special_tokens(vec!["<tool_call>".into(), "</tool_call>".into()]);
    /// let parser = analysis.parser(&config)?;
    /// let mut stream = parser.stream();
    /// // Typed with ordinary tokens: text.
    /// stream.push_tokens("Use <tool_call> tags. ", &[])?;
    /// // Sampled as the special tokens: a call.
    /// stream.push_tokens("<tool_call>", &[0..11])?;
    /// stream.push_tokens(r#"{"name": "f", "arguments": {}}"#, &[])?;
    /// stream.push_tokens("</tool_call>", &[0..12])?;
    /// stream.finish();
    /// let message = stream.message();
    /// assert_eq!(message.content.as_deref(), Some("Use <tool_call> tags."));
    /// assert_eq!(message.tool_calls[0].function.name, "f");
    /// # Ok::<(), chat_autoparser::Error>(())
    /// ```
    pub fn push_tokens(&mut self, chunk: &str, special: &[Range<usize>]) -> Result<Vec<Delta>> {
        check_spans(chunk, special)?;
        let mut chunk = Cow::Borrowed(chunk);
        let mut shift = 0;
        if !self.utf8_tail.is_empty() {
            // A character cut by `push_bytes` that text does not complete.
            self.utf8_tail.clear();
            chunk = Cow::Owned(format!("\u{FFFD}{chunk}"));
            shift = '\u{FFFD}'.len_utf8();
        }
        let at = self.peg.len() + shift;
        self.peg
            .special_spans(special.iter().map(|s| s.start + at..s.end + at));
        let mut out = Vec::new();
        self.push_text(&chunk, &mut out);
        Ok(out)
    }

    /// Appends one token the model sampled: its text, and whether it is a
    /// special token (then, as [`push_tokens`](Self::push_tokens) says, a
    /// marker holding it is read only here). Also counts the token in
    /// [`token_spans`](Self::token_spans), which says which tokens wrote
    /// each part of the message and how many were reasoning.
    ///
    /// ```
    /// # use chat_autoparser::{ChatTemplate, Options, ParserConfig, TemplateConfig};
    /// # let source = std::fs::read_to_string("templates/hermes-think.jinja").unwrap();
    /// # let analysis = ChatTemplate::new(&source, &TemplateConfig::default())?.analyze()?;
    /// let parser = analysis.parser(&ParserConfig::from(Options::default()))?;
    /// let mut stream = parser.stream();
    /// for token in ["<think>", "Rain", "?", "</think>", "\n\n", "Yes", "."] {
    ///     stream.push_token(token, false)?;
    /// }
    /// stream.finish();
    /// assert_eq!(stream.message().reasoning_content, "Rain?");
    /// // "Rain" and "?"; the markers wrote no text.
    /// assert_eq!(stream.token_spans().reasoning_tokens(), 2);
    /// # Ok::<(), chat_autoparser::Error>(())
    /// ```
    pub fn push_token(&mut self, text: &str, special: bool) -> Result<Vec<Delta>> {
        let whole = 0..text.len();
        let ranges: &[Range<usize>] = match special && !text.is_empty() {
            true => std::slice::from_ref(&whole),
            false => &[],
        };
        let out = self.push_tokens(text, ranges)?;
        self.token_spans.push(&out);
        Ok(out)
    }

    /// Which of the tokens pushed by [`push_token`](Self::push_token) wrote
    /// the reasoning, the content and each call (see [`TokenSpans`]).
    pub fn token_spans(&self) -> &TokenSpans {
        &self.token_spans
    }

    /// Appends raw output bytes; returns the deltas they made final. The
    /// bytes are decoded as `String::from_utf8_lossy` decodes the whole
    /// output (see the module doc).
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Vec<Delta> {
        let mut out = Vec::new();
        self.push_bytes_into(bytes, &mut out);
        out
    }

    /// [`push_bytes`](Self::push_bytes) into a reused buffer, as
    /// [`push_into`](Self::push_into).
    pub fn push_bytes_into(&mut self, bytes: &[u8], out: &mut Vec<Delta>) {
        let text = decode_lossy(&mut self.utf8_tail, bytes);
        self.push_text(&text, out);
    }

    /// Appends text (no character cut pending).
    fn push_text(&mut self, chunk: &str, out: &mut Vec<Delta>) {
        self.push_decoded(chunk, out);
        if let Some(ids) = &self.ids {
            ids.fill(out, &mut self.builder);
        }
    }

    fn push_decoded(&mut self, chunk: &str, out: &mut Vec<Delta>) {
        match self
            .run
            .and_then(|run| Some((run, self.peg.extend(chunk)?)))
        {
            Some((run, (from, to))) => {
                self.decoder.consumed = self.decoder.consumed.max(to);
                // Mostly the chunk itself; else a held-back delimiter prefix
                // turned out plain, or the chunk ends in one.
                let whole = to - from == chunk.len() && to == self.peg.len();
                let text = if whole {
                    chunk
                } else {
                    self.peg.text_get(from, to).unwrap_or("")
                };
                if let Run::Arguments(index) = run {
                    // Owed to the builder: the delta is all there is to write.
                    if sink::replace_with(out, Field::Arguments(index), text) {
                        return;
                    }
                }
                let deltas = self.deltas();
                let mut sink = Sink::new(out, &mut self.builder, deltas);
                if from < to {
                    self.decoder.run_text(run, text, &mut sink);
                }
                sink.finish();
            }
            None => self.step(chunk, false, out),
        }
    }

    /// Declares the output complete; returns the last deltas.
    pub fn finish(&mut self) -> Vec<Delta> {
        let mut out = Vec::new();
        self.finish_into(&mut out);
        out
    }

    /// [`finish`](Self::finish) into a reused buffer, as
    /// [`push_into`](Self::push_into).
    pub fn finish_into(&mut self, out: &mut Vec<Delta>) {
        if self.utf8_tail.is_empty() {
            return self.finish_step(out);
        }
        // The output ended inside a character: U+FFFD, as a lossy decode.
        self.utf8_tail.clear();
        self.push_text("\u{FFFD}", out);
        self.token_spans.finish(out);
        let mut last = Vec::new();
        self.finish_step(&mut last);
        out.append(&mut last);
    }

    fn finish_step(&mut self, out: &mut Vec<Delta>) {
        self.step("", true, out);
        if let Some(ids) = &self.ids {
            ids.fill(out, &mut self.builder);
            ids.finish(out, &mut self.builder);
        }
        self.token_spans.finish(out);
    }

    /// The message the deltas so far add up to.
    pub fn message(&self) -> AssistantMessage {
        let mut builder = self.builder.clone();
        pay_owed(&self.peg, self.owed, &mut builder);
        builder.into_message()
    }

    /// The message the deltas add up to, without copying it: the end of a
    /// batch parse.
    pub fn into_message(mut self) -> AssistantMessage {
        self.take_message()
    }

    /// The message, as [`into_message`](Self::into_message), leaving the
    /// stream spent (a batch parse drops it after: no move of it).
    pub(crate) fn take_message(&mut self) -> AssistantMessage {
        pay_owed(&self.peg, self.owed.take(), &mut self.builder);
        std::mem::take(&mut self.builder).into_message()
    }

    /// Problems found so far.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.decoder.diagnostics
    }

    /// Indices of the calls withdrawn so far: calls whose deltas were sent
    /// but whose arguments did not complete as JSON, so the message leaves
    /// them out and their text came as content deltas. A client adding
    /// deltas up calls [`MessageBuilder::withdraw`] with each to get the
    /// message.
    pub fn withdrawn_calls(&self) -> &[usize] {
        &self.decoder.withdrawn
    }

    fn step(&mut self, chunk: &str, fin: bool, out: &mut Vec<Delta>) {
        pay_owed(&self.peg, self.owed.take(), &mut self.builder);
        // Owing nothing now, the stream reads no output before what no
        // event covered (an engine error makes that content): the engine
        // may drop the rest. Only a step drops input (`peg::Stream::extend`
        // declines when it is time), so telling it here is enough.
        self.peg.release(self.decoder.consumed);
        let deltas = self.deltas();
        let mut sink = Sink::new(out, &mut self.builder, deltas);
        if self.verbatim_from.is_some() {
            self.decoder.raw_content(chunk, &mut sink);
        } else {
            // `push_into` tried the plain-text fast path already.
            // Events of the finishing step know the output has ended.
            self.decoder.at_end = fin;
            if fin {
                self.decoder.output_end = Some(self.peg.len());
            }
            let result = if fin {
                self.peg.finish().map(|_| ())
            } else {
                self.peg.push_stepped(chunk).map(|_| ())
            };
            match result {
                Ok(()) => {
                    for event in self.peg.events() {
                        if let Some((from, to)) = self.decoder.outgrows(event) {
                            let text = text_before(&self.peg, from, to);
                            self.decoder.withdraw_oversized(&text, &mut sink);
                        }
                        self.decoder
                            .apply(event, &event_text(&self.peg, event), &mut sink);
                    }
                    // A call withdrawn for its length is read as text only:
                    // the engine need not keep it.
                    self.peg.text_only_from(self.decoder.oversized_call());
                    self.run = self
                        .decoder
                        .run(self.peg.open_captures().map(|(_, tag)| tag));
                    self.owed = match self.run {
                        Some(Run::Arguments(index)) => {
                            self.peg.plain_sent().map(|from| (index, from))
                        }
                        _ => None,
                    };
                }
                Err(error) => {
                    self.run = None;
                    self.verbatim_from = Some(self.decoder.consumed);
                    give_up(&mut self.decoder, &self.peg, error.offset, &mut sink);
                }
            }
        }
        sink.finish();
    }
}

/// A message builder starting with `prefill`'s text.
fn prefilled(prefill: &Prefill) -> MessageBuilder {
    let mut builder = MessageBuilder::default();
    if prefill.content.is_empty() && prefill.reasoning.is_empty() {
        return builder;
    }
    builder.apply(&Delta {
        content: Some(prefill.content.clone()),
        reasoning_content: Some(prefill.reasoning.clone()),
        ..Delta::default()
    });
    builder
}

/// Checks `special` are ranges of `text` as
/// [`OutputStream::push_tokens`] takes them.
pub(crate) fn check_spans(text: &str, special: &[Range<usize>]) -> Result<()> {
    let mut after = 0;
    for span in special {
        let ok = span.start >= after && span.start < span.end && text.get(span.clone()).is_some();
        if !ok {
            return Err(Error::new(
                ErrorKind::Input,
                format!(
                    "special token range {span:?} is not a non-empty range of the {}-byte text, \
                     on character boundaries, after the one before",
                    text.len()
                ),
            ));
        }
        after = span.end;
    }
    Ok(())
}

/// `bytes` after `tail` (the start of a character the last push cut) as
/// text: what `String::from_utf8_lossy` makes of them, but a character cut
/// at the end, which is left in `tail` for the next push.
fn decode_lossy<'a>(tail: &mut Vec<u8>, bytes: &'a [u8]) -> Cow<'a, str> {
    let joined;
    let mut rest = if tail.is_empty() {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return Cow::Borrowed(text);
        }
        bytes
    } else {
        joined = [std::mem::take(tail).as_slice(), bytes].concat();
        joined.as_slice()
    };
    let mut text = String::with_capacity(rest.len());
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                return Cow::Owned(text);
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        text.push('\u{FFFD}');
                        rest = after.get(bad..).unwrap_or_default();
                    }
                    None => {
                        // Incomplete, not invalid: the next push may complete it.
                        tail.extend_from_slice(after);
                        return Cow::Owned(text);
                    }
                }
            }
        }
    }
}

/// Appends to `builder` the argument text it is owed (`OutputStream::owed`).
fn pay_owed(peg: &peg::Stream<String>, owed: Option<(usize, usize)>, builder: &mut MessageBuilder) {
    let Some((index, from)) = owed else { return };
    if let Some(text) = peg.plain_sent().and_then(|to| peg.text_get(from, to)) {
        builder.push_arguments(index, text);
    }
}

/// An event's text: a slice of the output, unless the grammar cut a
/// character (then the bytes, with the cut replaced).
fn event_text<'a>(peg: &'a peg::Stream<String>, event: &Event) -> Cow<'a, str> {
    let (start, end) = match *event {
        Event::Open { .. } => return Cow::Borrowed(""),
        Event::Text { start, end, .. } | Event::Close { start, end, .. } => (start, end),
    };
    match peg.text_get(start, end) {
        Some(t) => Cow::Borrowed(t),
        None => String::from_utf8_lossy(peg.get(start, end).unwrap_or(&[])),
    }
}

/// The output from `from` up to `to`, or up to the character boundary just
/// before it: what the engine still keeps of an open call.
fn text_before(peg: &peg::Stream<String>, from: usize, to: usize) -> Cow<'_, str> {
    match (0..4).find_map(|back| peg.text_get(from, to.saturating_sub(back))) {
        Some(text) => Cow::Borrowed(text),
        None => String::from_utf8_lossy(peg.get(from, to).unwrap_or(&[])),
    }
}

/// The engine stopped at `offset`: what no event covered is content, verbatim.
fn give_up(decoder: &mut Decoder, peg: &peg::Stream<String>, offset: usize, out: &mut Sink) {
    let from = decoder.consumed;
    decoder
        .diagnostics
        .push(Diagnostic::new(DiagnosticKind::Unparsed, offset.min(from)));
    let rest = peg.get(from, peg.len()).unwrap_or(&[]);
    decoder.raw_content(&String::from_utf8_lossy(rest), out);
}

/// Splits `text` into pieces of `size` bytes, each extended to the next
/// character boundary: how a harness or a replay feeds an [`OutputStream`]
/// (`&str` chunks cannot cut a character).
///
/// ```
/// use chat_autoparser::parser::char_chunks;
/// assert_eq!(char_chunks("aébc", 2).collect::<Vec<_>>(), ["aé", "bc"]);
/// assert_eq!(char_chunks("abc", 0).collect::<Vec<_>>(), ["a", "b", "c"]);
/// ```
pub fn char_chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let size = size.max(1);
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}
