//! Streaming: push chunks of model output, get OpenAI-shaped deltas.
//!
//! An [`OutputStream`] drives the PEG stream of the generated grammar and
//! the decoder. Each push resumes the machine where it stopped, so a whole
//! output costs time linear in its length however it is chunked
//! (`benches/parser.rs` measures it). A batch parse is one push and a
//! finish, so streaming equals batch by construction.
//!
//! Invariants: deltas are never retracted; after an engine error (which the
//! generated grammars rule out, but the engine reports rather than panics)
//! the rest of the output is content, verbatim, with a diagnostic.

use crate::message::{AssistantMessage, Delta, MessageBuilder};
use crate::peg;

use super::decode::Decoder;
use super::diagnostic::{Diagnostic, DiagnosticKind};
use super::prompt::Prefill;

/// An incremental parse of one output.
#[derive(Debug)]
pub struct OutputStream {
    peg: peg::Stream,
    decoder: Decoder,
    /// Bytes from here on bypass the grammar (after an engine error).
    verbatim_from: Option<usize>,
    builder: MessageBuilder,
}

impl OutputStream {
    /// `prefill`: text the client already has (in the message, not sent).
    pub(crate) fn new(program: &peg::Program, decoder: Decoder, prefill: &Prefill) -> OutputStream {
        let mut builder = MessageBuilder::default();
        builder.apply(&Delta { content: Some(prefill.content.clone()), reasoning_content: Some(prefill.reasoning.clone()), ..Delta::default() });
        OutputStream { peg: program.stream(), decoder, verbatim_from: None, builder }
    }

    /// Appends a chunk of output; returns the deltas it made final.
    pub fn push(&mut self, chunk: &str) -> Vec<Delta> {
        self.step(chunk.as_bytes(), false)
    }

    /// Declares the output complete; returns the last deltas.
    pub fn finish(&mut self) -> Vec<Delta> {
        self.step(&[], true)
    }

    /// The message the deltas so far add up to.
    pub fn message(&self) -> AssistantMessage {
        self.builder.message()
    }

    /// Problems found so far.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.decoder.diagnostics
    }

    fn step(&mut self, chunk: &[u8], fin: bool) -> Vec<Delta> {
        let mut out = Vec::new();
        if self.verbatim_from.is_some() {
            self.decoder.raw_content(&String::from_utf8_lossy(chunk), &mut out);
        } else {
            let result = if fin { self.peg.finish() } else { self.peg.push(chunk) };
            match result {
                Ok(feed) => {
                    for event in feed.events {
                        self.decoder.apply(event, feed.bytes(event), &mut out);
                    }
                }
                Err(error) => self.give_up(error.offset, &mut out),
            }
        }
        for delta in &out {
            self.builder.apply(delta);
        }
        out
    }

    /// The engine stopped: what no event covered is content, verbatim.
    fn give_up(&mut self, offset: usize, out: &mut Vec<Delta>) {
        let from = self.decoder.consumed;
        self.verbatim_from = Some(from);
        self.decoder.diagnostics.push(Diagnostic::new(DiagnosticKind::Unparsed, offset.min(from)));
        let rest = self.peg.input().get(from..).unwrap_or(&[]);
        let text = String::from_utf8_lossy(rest).into_owned();
        self.decoder.raw_content(&text, out);
    }
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
