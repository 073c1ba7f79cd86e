//! Scaffolding between the sections of one turn, as parsing expressions.
//!
//! Channel and header formats write a turn as several sections (see
//! `analysis::sections`): headers naming each section
//! (`<|channel|>final<|message|>`, `<|close|>response<|sep|>`) and message
//! breaks (`<|end|><|start|>assistant`). What a section holds goes to
//! reasoning, content or calls; the scaffolding around it goes nowhere:
//!
//! - a header of a learned shape is dropped when its label is made of the
//!   template's words (`vocabulary`: any word of a learned marker, a number,
//!   punctuation), so channels no probe rendered as a header (`commentary`,
//!   `final <|constrain|>json`) still introduce content. A label holding
//!   another word (`<|channel|>notes<|message|>`) is text the model wrote:
//!   the header stays content, verbatim, reported. A label is a short token
//!   ([`label`]: one word, or one word and markup, at most 64 characters,
//!   on one line, holding no learned marker): free text between a header's opening and
//!   closing (`<|channel|>final and here is a long sentence<|message|>`,
//!   `<|open|>call tool="f"<|sep|>`) or a corrupted closing
//!   (`<|channel|>analysis<|message|X>...<|end|>`) is no header, and stays
//!   in the content, verbatim. So does a tool marker of the header's shape
//!   (`<|close|>argument<|sep|>` beside the header `<|close|>response<|sep|>`):
//!   it is the text of a call given back to the content. A header cut short
//!   by the next header (`<|channel|>commentary to=assistant<|channel|>final...`),
//!   its label a short token of the template's words, opens no message and
//!   is dropped;
//! - a message break is dropped, with or without the message end before it,
//!   and so is a message end right before a header or a tool call's start
//!   (the role header skipped);
//! - inline reasoning (not extracted) keeps its own block verbatim, up to and
//!   including the message end: only the break's reopening is scaffolding.
//! - a header that opens a message leaves an empty `CHANNEL` capture after
//!   it; a message break, and a header of the closing shape (the shape the
//!   content's or the reasoning's end marker has: `<|close|>message<|sep|>`),
//!   an empty `CHANNEL_END` before it: the decoder knows which content is
//!   outside any channel (`text_outside_channels`).
//!
//! Invariant: every expression here starts with a learned marker's first
//! core, and those cores are content triggers ([`Sections::triggers`]), so
//! content never swallows scaffolding and scaffolding never swallows text
//! that does not start with a marker.

use crate::protocol::Protocol;
use chat_autoparser_peg::{
    and, any_char, cap, choice, empty, lit, literals, not, opt, repeat, seq, star, until, ws, Expr,
};

use super::marker::Marker;
use super::tags::{CHANNEL, CHANNEL_END, CONTENT, UNKNOWN_LABEL};
use super::vocabulary::Vocabulary;

/// A section header's markers (`<|channel|>` LABEL `<|message|>`), as the
/// parser's outline gives them
/// ([`ParserOutline::header_markers`](crate::protocol::outline::ParserOutline::header_markers)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderMarks<'a> {
    /// The marker before the label.
    pub open: &'a str,
    /// The marker after it.
    pub close: &'a str,
}

/// The section scaffolding of one protocol.
pub struct Sections<'a> {
    protocol: &'a Protocol,
    /// The turn's section headers.
    headers: &'a [HeaderMarks<'a>],
    /// The template's words: a label of other words is no header.
    vocabulary: &'a Vocabulary,
    /// Reasoning is extracted (else its markers are content).
    extract_reasoning: bool,
    /// Literals a header may not start with (tool sections, reasoning when inline).
    reserved: Vec<String>,
}

impl<'a> Sections<'a> {
    /// `reserved`: literals that start something other than a header (the
    /// tool section's triggers), even when they have a header's shape.
    pub fn new(
        protocol: &'a Protocol,
        headers: &'a [HeaderMarks<'a>],
        vocabulary: &'a Vocabulary,
        extract_reasoning: bool,
        mut reserved: Vec<String>,
    ) -> Sections<'a> {
        if let Some(r) = protocol.markup.reasoning.as_ref() {
            if !extract_reasoning {
                reserved.extend(Marker::new(&r.start).first_core().map(str::to_string));
            }
        }
        // A literal no longer than a header's opening would reserve every header.
        reserved
            .retain(|r| !r.is_empty() && !headers.iter().any(|h| h.open.starts_with(r.as_str())));
        Sections {
            protocol,
            headers,
            vocabulary,
            extract_reasoning,
            reserved,
        }
    }

    /// First cores of the scaffolding: content stops before them.
    pub fn triggers(&self) -> Vec<String> {
        let turn = &self.protocol.turn;
        let mut out: Vec<String> = self.headers.iter().map(|h| h.open.to_string()).collect();
        for raw in [&turn.message_end, &turn.message_start] {
            out.extend(Marker::new(raw).first_core().map(str::to_string));
        }
        out
    }

    /// The alternatives that consume scaffolding silently (or, for inline
    /// reasoning, as content), in the order they must be tried.
    pub fn alternatives(&self) -> Vec<Expr> {
        let mut out = Vec::new();
        out.extend(self.inline_reasoning());
        out.extend(self.headers.iter().map(|h| self.header(h)));
        out.extend(self.message_break());
        out
    }

    /// `open LABEL close`, the label a short token ([`label`]) of the
    /// template's words ([`known_label`]). A header of that shape with
    /// another word in its label (`<|channel|>notes<|message|>`) is text
    /// the model wrote: it stays content, verbatim, reported
    /// (`UNKNOWN_LABEL`).
    fn header(&self, h: &HeaderMarks) -> Expr {
        let reserved = self.reserved.iter().map(|r| not(lit(r)));
        // A label here names a channel: one word, or one word and markup
        // after it (`final <|constrain|>json`). Words of text after the
        // first (`call tool="f" index="1"`) are what the model wrote, not
        // a channel's name, and stay content.
        let markers = &self.protocol.preserved_tokens;
        let opens: Vec<&str> = self.headers.iter().map(|h| h.open).collect();
        let shape = |label: &dyn Fn(Words) -> Expr| {
            // A header the model broke off to start the next one
            // (`<|channel|>commentary to=assistant<|channel|>final...`)
            // opens no message: its label is scaffolding, as a whole
            // header's is.
            choice([
                seq([lit(h.open), label(Words::Markup), lit(h.close)]),
                seq([lit(h.open), label(Words::Any), and(literals(&opens))]),
            ])
        };
        let known = shape(&|later| known_label(h, markers, &[], later, self.vocabulary));
        let unknown = seq([
            and(shape(&|later| label(h, markers, &[], later))),
            cap(UNKNOWN_LABEL, empty()),
            cap(CONTENT, lit(h.open)),
        ]);
        let own = self.tool_markers(h).map(not);
        let header = match self.closes(h) {
            true => seq([cap(CHANNEL_END, empty()), known, ws()]),
            false => seq([known, ws(), cap(CHANNEL, empty())]),
        };
        seq(reserved.chain(own).chain([choice([header, unknown])]))
    }

    /// The header shape `h` closes what it names (`<|close|>` LABEL
    /// `<|sep|>` beside `<|open|>` LABEL `<|sep|>`): the content's or the
    /// reasoning's end marker is written in it and neither start marker
    /// is. Text after such a header (`<|close|>message<|sep|>` then
    /// narration) is in no channel, as text after a message end is.
    fn closes(&self, h: &HeaderMarks) -> bool {
        let shaped = |raw: &&str| {
            let m = raw.trim();
            m.len() > h.open.len() + h.close.len() && m.starts_with(h.open) && m.ends_with(h.close)
        };
        let content = &self.protocol.content;
        let reasoning = self.protocol.markup.reasoning.as_ref();
        let ends = [
            Some(content.end.as_str()),
            reasoning.map(|r| r.end.as_str()),
        ];
        let starts = [
            Some(content.start.as_str()),
            reasoning.map(|r| r.start.as_str()),
        ];
        ends.iter().flatten().any(shaped) && !starts.iter().flatten().any(shaped)
    }

    /// The tool format's own markers that have `h`'s shape (Kimi-K3's
    /// `<|close|>argument<|sep|>` beside its `<|close|>response<|sep|>`
    /// header): text of a call the parser gave back to the content (an
    /// unknown tool, a withdrawn call), which must stay there, not
    /// scaffolding to drop.
    fn tool_markers(&self, h: &HeaderMarks) -> Option<Expr> {
        let own: Vec<&str> = self
            .protocol
            .markup
            .call_marker_texts()
            .map(str::trim)
            .filter(|m| m.starts_with(h.open) && m.ends_with(h.close))
            .filter(|m| m.len() > h.open.len() + h.close.len())
            .collect();
        (!own.is_empty()).then(|| literals(own))
    }

    /// `message-end? message-start`: one message of the turn ends, the next
    /// opens. The message end right before a header or a tool call's start
    /// is a break too: the model skipped the role header between two
    /// messages (`<|end|><|channel|>final`, `<|end|>to=functions.f<|channel|>`).
    fn message_break(&self) -> Option<Expr> {
        let turn = &self.protocol.turn;
        let start = Marker::new(&turn.message_start);
        if start.is_blank() {
            return None;
        }
        let end = Marker::new(&turn.message_end);
        let opens = self.headers.iter().map(|h| h.open);
        let calls = self.reserved.iter().filter(|r| r.len() > 1);
        let next: Vec<&str> = opens.chain(calls.map(String::as_str)).collect();
        let mut ways = vec![seq([opt(seq([end.expr(), ws()])), start.expr(), ws()])];
        if !end.is_blank() && !next.is_empty() {
            ways.push(seq([end.expr(), ws(), and(literals(&next))]));
        }
        Some(seq([cap(CHANNEL_END, empty()), choice(ways)]))
    }

    /// Inline reasoning in a turn with message breaks: the reasoning block,
    /// markers and message end included, is content.
    fn inline_reasoning(&self) -> Option<Expr> {
        let turn = &self.protocol.turn;
        let r = self.protocol.markup.reasoning.as_ref()?;
        let start = Marker::new(&r.start);
        let end = Marker::new(&turn.message_end);
        if self.extract_reasoning || start.is_blank() || end.is_blank() {
            return None;
        }
        Some(seq([
            cap(CHANNEL, empty()),
            cap(
                CONTENT,
                seq([start.expr(), until(end.delimiters()), end.expr_exact_head()]),
            ),
        ]))
    }
}

/// The longest label, in characters.
const LABEL_CHARS: u32 = 64;
/// The most spaces a label holds (`commentary to=functions.f <|constrain|>json`).
const LABEL_SPACES: u32 = 3;

/// What may follow a label's first word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// Any words (the label before a call's address: `commentary`, `call`).
    Any,
    /// Only markup: words that start with `<` (`<|constrain|>json`).
    Markup,
}

/// A header's label: at most [`LABEL_CHARS`] characters and
/// [`LABEL_SPACES`] spaces, on one line, without `h`'s markers, any of
/// `markers` (the learned ones) or any of `stops`; after its first word,
/// the words `later` allows. What is longer, holds more words or runs into
/// a marker is text the model wrote, not a label: taking it for one would
/// drop it (a sentence after a corrupted closing marker ran on to the next
/// message's header and vanished).
pub fn label(h: &HeaderMarks, markers: &[String], stops: &[&str], later: Words) -> Expr {
    let stops = label_stops(h, markers, stops);
    let char = || seq([not(stops.clone()), any_char()]);
    let word = || star(seq([not(lit(" ")), char()]));
    let too_long = repeat(char(), LABEL_CHARS + 1, Some(LABEL_CHARS + 1));
    let next = match later {
        Words::Any => seq([lit(" "), word()]),
        Words::Markup => seq([lit(" "), and(lit("<")), word()]),
    };
    seq([not(too_long), word(), repeat(next, 0, Some(LABEL_SPACES))])
}

/// A [`label`] whose every word is one the template writes (see
/// `vocabulary`): scaffolding. A label of another word is text the model
/// wrote.
pub fn known_label(
    h: &HeaderMarks,
    markers: &[String],
    stops: &[&str],
    later: Words,
    vocabulary: &Vocabulary,
) -> Expr {
    let ends = choice([label_stops(h, markers, stops), lit(" ")]);
    let word = vocabulary.known_word(&ends);
    let markup = vocabulary.known_markup(&ends);
    let next = match later {
        Words::Any => seq([lit(" "), choice([markup, word.clone()])]),
        Words::Markup => seq([lit(" "), and(lit("<")), markup]),
    };
    seq([
        and(label(h, markers, stops, later)),
        word,
        repeat(next, 0, Some(LABEL_SPACES)),
    ])
}

/// What a label never holds: `h`'s markers, a line end, a learned marker
/// or one of `stops`.
fn label_stops(h: &HeaderMarks, markers: &[String], stops: &[&str]) -> Expr {
    let mut all: Vec<&str> = vec![h.open, h.close, "\n"];
    all.extend(markers.iter().map(String::as_str).filter(|m| !m.is_empty()));
    all.extend(stops.iter().copied().filter(|s| !s.is_empty()));
    literals(all)
}
