//! Reasoning: the prelude at the start of the output (what the prompt's
//! start state implies), and reasoning blocks opened by their start marker
//! anywhere in the body (interleaved thinking).
//!
//! - A prompt that opened a reasoning block is continued inside it, unless
//!   the output opens a content section straight away.
//! - Inside a block the prompt opened, the block's own opener written again
//!   (`<think>` after `...<think>\n`, as DeepSeek-R1 models do) is dropped;
//!   any other repeated marker stays reasoning text.
//! - A block the model forgot to close ends where a tool call or a section
//!   header (`<|channel|>`) starts, but only when the block never closes
//!   later.
//! - Under `calls_in_reasoning: call` or `both` ([`ThoughtCalls`]), a tool
//!   section written whole inside a block that closes after it is read as
//!   calls, captured `REASONING_CALLS` inside the `REASONING` capture (the
//!   decoder takes its text out of the reasoning or leaves it there); a
//!   broken or unclosed one, or one of a function the request does not
//!   have (under `unknown_tool: content`), is reasoning text. Only formats
//!   whose sections open with a marker take part: a bare JSON object is
//!   reasoning text.
//!
//! Invariant: reasoning text is captured `REASONING` byte for byte; the
//! markers around it are never part of it, and whitespace after the end
//! marker belongs to the text that follows.

use super::Plan;
use crate::parser::marker::Marker;
use crate::parser::sections::{label, HeaderMarks, Words};
use crate::parser::tags::*;
use crate::protocol::{Protocol, ReasoningMarkers, Start};
use chat_autoparser_peg::{
    and, any_char, cap, choice, commit, empty, eoi, lit, literals, not, opt, seq, star, until, ws,
    Expr,
};

/// The reasoning markers, when the block has an opening marker.
pub(super) fn reasoning_with_start(protocol: &Protocol) -> Option<&ReasoningMarkers> {
    let r = protocol.markup.reasoning.as_ref()?;
    (!Marker::blank(&r.start)).then_some(r)
}

pub(super) fn has_start_marker(protocol: &Protocol) -> bool {
    reasoning_with_start(protocol).is_some()
}

/// What a reasoning block reads as calls (`calls_in_reasoning: call` or
/// `both`): built by the body, which has the tool grammars.
#[derive(Clone)]
pub(super) struct ThoughtCalls {
    /// A tool section written whole (the strict tool grammars'): tried in a
    /// lookahead first, as its call rules commit.
    pub(super) section: Expr,
    /// A call's start up to a name the request does not have (fails when
    /// none): reported (`UNKNOWN_TOOL`), its text stays reasoning.
    pub(super) unknown: Expr,
}

impl ThoughtCalls {
    /// At a tool section's start: the section, when it is whole and the
    /// block goes on `past` it, read once in a lookahead and then for real
    /// (the same text twice at most: the cost stays linear).
    fn read(&self, past: Expr) -> Expr {
        seq([
            and(seq([self.section.clone(), past])),
            cap(REASONING_CALLS, self.section.clone()),
        ])
    }

    /// Where a call of an unknown tool starts, its report.
    fn unknown_mark(&self) -> Expr {
        opt(seq([and(self.unknown.clone()), cap(UNKNOWN_TOOL, empty())]))
    }
}

/// What a reasoning block stops at or reads besides its text, when tools
/// are parsed: the literals a tool section starts with (see
/// [`reasoning_body`]), and the calls it reads.
pub(super) struct Inside<'a> {
    pub(super) stops: &'a [String],
    pub(super) calls: Option<&'a ThoughtCalls>,
    /// The turn seam, which ends the block (see [`reasoning_body`]).
    pub(super) seam: Option<&'a Seam>,
    /// The turn's section headers (see [`reasoning_body`]).
    pub(super) headers: &'a [HeaderMarks<'a>],
}

/// The turn's stop marker then the assistant turn's own header, the
/// reasoning opener left out (`<|im_end|>\n<|im_start|>assistant\n`): the
/// model ran on into a second turn of its own. Built by the body.
pub(super) struct Seam {
    /// The stop marker's first core, where the seam starts.
    pub(super) stop: String,
    pub(super) expr: Expr,
}

/// Reasoning at the start of the output (see [`Inside`]).
pub(super) fn prelude(protocol: &Protocol, plan: Plan<'_>, inside: &Inside<'_>) -> Expr {
    let Some(r) = &protocol.markup.reasoning else {
        return empty();
    };
    let left_open = left_open_block(protocol);
    if !plan.extract_reasoning {
        // Inline reasoning: the block's opening is content, unless the model left it.
        return match plan.start {
            Start::InReasoning => opt(seq([not(left_open), cap(OPENED, empty())])),
            _ => empty(),
        };
    }
    let end = Marker::new(&r.end);
    if end.is_blank() {
        return empty();
    }
    match plan.start {
        // The prompt closed the block: its end marker written again is scaffolding.
        Start::AfterReasoning => seq([ws(), opt(seq([end.expr_exact_head(), ws()]))]),
        // A model may write the opener the prompt already wrote: scaffolding.
        Start::InReasoning => choice([
            seq([left_open, ws()]),
            seq([
                reopened(protocol),
                reasoning_body(&end, inside, &header_opens(inside.headers)),
            ]),
        ]),
        // A lone end marker first closes an empty block (some templates
        // write one; models write it where their prompt opened none).
        Start::Free if has_start_marker(protocol) => opt(seq([ws(), end.expr(), ws()])),
        // Delimiter reasoning: from the start to the end marker, if there is one.
        Start::Free => opt(seq([
            cap(REASONING, until(end.delimiters())),
            end.expr_exact_head(),
            ws(),
        ])),
    }
}

/// Matches (without consuming) an output that opens a content section
/// straight away: the model left the reasoning block the prompt opened
/// (`<|open|>response<|sep|>` after `<|open|>think<|sep|>`), so no text of it
/// is reasoning. Fails for formats without a content wrapper.
fn left_open_block(protocol: &Protocol) -> Expr {
    match Marker::new(&protocol.content.start).first_core() {
        Some(core) => and(seq([ws(), lit(core)])),
        None => chat_autoparser_peg::fail(),
    }
}

/// The reasoning opener written again at the start of a block the prompt
/// opened (`<think>` after `...<think>\n`), when the template has one.
fn reopened(protocol: &Protocol) -> Expr {
    match reasoning_with_start(protocol) {
        Some(r) => opt(seq([ws(), Marker::new(&r.start).expr()])),
        None => empty(),
    }
}

/// A reasoning block opened by its start marker (at the start or later);
/// `inside` as for [`prelude`].
pub(super) fn tagged_reasoning(protocol: &Protocol, inside: &Inside<'_>) -> Expr {
    let Some(r) = reasoning_with_start(protocol) else {
        return chat_autoparser_peg::fail();
    };
    let (start, end) = (Marker::new(&r.start), Marker::new(&r.end));
    let opener = match labelled_opener(&start) {
        Some(token) => choice([start.expr(), lit(token)]),
        None => start.expr(),
    };
    seq([
        stuttered_token(&start),
        opener,
        commit(),
        reasoning_body(&end, inside, &header_opens(inside.headers)),
    ])
}

/// The special token of an opener that is one token and a label word
/// (`<|channel>` of `<|channel>thought`): models also write the token
/// alone, or with another label, and what follows is the block's text.
pub(super) fn labelled_opener(start: &Marker) -> Option<&str> {
    let (token, label) = leading_token(start)?;
    let word = !label.is_empty() && label.chars().all(char::is_alphanumeric);
    word.then_some(token)
}

/// A marker's first core split after the special token it starts with
/// (`<|channel>` and `thought`; `<|end|>` and `<|start|>assistant`).
fn leading_token(marker: &Marker) -> Option<(&str, &str)> {
    let core = marker.first_core()?;
    let token = crate::markers::marker_at(core, 0)?;
    Some(core.split_at(token.end))
}

/// The opener's first token written once too often right before the
/// opener (`<|channel><|channel>thought`, as gemma-4 models do): a stutter,
/// dropped only where the whole opener follows.
fn stuttered_token(start: &Marker) -> Expr {
    match leading_token(start) {
        Some((token, _)) => opt(seq([lit(token), and(start.expr())])),
        None => empty(),
    }
}

/// Reasoning text up to the end marker, or the end of the output.
///
/// A tool call inside the block is reasoning when the block closes later;
/// when it never closes, the block ended where the call starts (models
/// forget the end marker before calling). Deciding that needs a look ahead
/// to the end marker, so only text from such a call on is held back. Calls
/// read inside the block ([`ThoughtCalls`]) are decided there too: whole,
/// before any of their text is sent.
///
/// An end marker of several tokens (`<|end|><|start|>assistant`) cut after
/// its first at the very end of the output closes the block: a stop string
/// took the rest; so does that token before a section header (`headers`:
/// their openings) or a call's start, the model having skipped the role
/// header between. Elsewhere that token is reasoning text. A section
/// header ends a block that does not close later, as a call's start does. The rest of such
/// a marker without its first token (`<|start|>assistant`, the next
/// message's header) ends a block that does not close later: the model
/// left out the message end, and the header is read as such.
///
/// The turn seam ends the block, dropped as scaffolding: the second turn's
/// header opens no reasoning (Nemotron-Nano-v2 renders a last turn's
/// content after the `<think>` its prompt opens, then its calls as a second
/// turn), so what follows is the body's.
fn reasoning_body(end: &Marker, inside: &Inside<'_>, headers: &[String]) -> Expr {
    let tool_starts: Vec<String> = inside
        .stops
        .iter()
        .filter(|t| t.len() > 1)
        .cloned()
        .collect();
    // A section header ends a block that does not close later, as a call
    // does: the model left out the message end (`...<|channel|>final`).
    let mut starts = tool_starts.clone();
    starts.extend(headers.iter().cloned());
    starts.extend(inside.seam.map(|s| s.stop.clone()));
    let seam = inside
        .seam
        .map_or_else(chat_autoparser_peg::fail, |s| s.expr.clone());
    // Whitespace after the end marker is the text's that follows: content
    // between two blocks is kept byte for byte.
    let close = end.expr_exact_head();
    // The end's first token, and the rest, when it is several.
    let (cut, rest) = match leading_token(end) {
        Some((token, rest)) if !rest.is_empty() => (Some(token.to_string()), rest),
        _ => (None, ""),
    };
    // Its first token then the end of the output (a stop string took the
    // rest), or then the next section's header or a call's start (the
    // model skipped the role header between: `<|end|><|channel|>final`,
    // `<|end|>to=functions.f<|channel|>`).
    let next_parts: Vec<String> = headers.iter().chain(&tool_starts).cloned().collect();
    let cut_close = cut.as_ref().map(|t| {
        let next = match next_parts.is_empty() {
            true => eoi(),
            false => choice([eoi(), and(literals(&next_parts))]),
        };
        seq([lit(t), ws(), next])
    });
    let text = if starts.is_empty() && cut.is_none() {
        until(end.delimiters())
    } else {
        let mut stops = end.delimiters();
        stops.extend(starts);
        stops.extend(cut.clone());
        if rest.starts_with(['<', '[']) {
            stops.push(rest.to_string());
        }
        let closes_later = and(seq([until(end.delimiters()), end.expr_exact_head()]));
        let stopped = Stopped {
            stops,
            close: choice([close.clone(), seam.clone()]),
            calls: inside.calls,
        };
        match (&cut, &cut_close) {
            (Some(token), Some(cut_close)) => {
                // The end's first token goes on as text, unless it opens a
                // whole header (`<|close|>response<|sep|>` in a block
                // `<|close|>think<|sep|>` ends): that ends a block that
                // does not close later, as any header does.
                let goes_on = match whole_header(inside.headers, token) {
                    Some(header) => seq([not(header), and(lit(token))]),
                    None => and(lit(token)),
                };
                stopped.text(choice([goes_on, closes_later]), Some(cut_close))
            }
            _ => stopped.text(closes_later, None),
        }
    };
    let closing = match cut_close {
        Some(cut_close) => choice([close, cut_close, seam]),
        None => choice([close, seam]),
    };
    seq([cap(REASONING, text), opt(closing)])
}

/// Reasoning text that stops where a tool section may start (`stops`, the
/// end marker's delimiters among them): past such a stop the block goes on
/// only when it closes later (or, for an end marker of several tokens, at
/// its cut first token).
struct Stopped<'a> {
    stops: Vec<String>,
    close: Expr,
    calls: Option<&'a ThoughtCalls>,
}

impl Stopped<'_> {
    /// Past a stop where the block goes on (`past` holds): a tool section
    /// read as calls (when the block goes on past it too), or one more
    /// character of text.
    fn step(&self, past: Expr) -> Expr {
        match self.calls {
            Some(calls) => choice([
                calls.read(past.clone()),
                seq([past, calls.unknown_mark(), any_char()]),
            ]),
            None => seq([past, any_char()]),
        }
    }

    /// Text up to a stop where the block does not go on: `past` is
    /// looked for at every stop, and for an end marker of several tokens
    /// its first token alone (`cut_close`) may close the block there. A
    /// look repeated before the end it found costs nothing (the `until`
    /// in it remembers where its last scan stopped), so the text costs
    /// time linear in its length however many stops it holds.
    fn text(self, past: Expr, cut_close: Option<&Expr>) -> Expr {
        let not_cut = cut_close.map_or_else(empty, |c| not(c.clone()));
        seq([
            until(self.stops.clone()),
            star(seq([
                not(self.close.clone()),
                not_cut,
                self.step(past),
                until(self.stops.clone()),
            ])),
        ])
    }
}

/// A whole section header opened by `token` (`<|close|>LABEL<|sep|>`), its
/// label one word or one word and markup; `None` where no header opens so.
fn whole_header(headers: &[HeaderMarks], token: &str) -> Option<Expr> {
    let whole: Vec<Expr> = headers
        .iter()
        .filter(|h| h.open == token)
        .map(|h| seq([lit(h.open), label(h, &[], &[], Words::Markup), lit(h.close)]))
        .collect();
    (!whole.is_empty()).then(|| choice(whole))
}

/// The opening markers of the turn's section headers (`<|channel|>`).
fn header_opens(headers: &[HeaderMarks]) -> Vec<String> {
    headers.iter().map(|h| h.open.to_string()).collect()
}
