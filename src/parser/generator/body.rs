//! The output's top level: an optional echo of the prompt's last marker,
//! the reasoning prelude, then a repetition of the body's alternatives,
//! tried in order, the last being content text.
//!
//! ```text
//! body := ( tools | reasoning-block | silent-marker | scaffolding
//!         | turn-seam | unknown-call | lone-closer | stray-closer | content )*
//! content := commit CONTENT( any-char until(triggers) )
//! ```
//!
//! - Silent markers are dropped: content wrappers' first cores, code
//!   fences when the content is JSON for a response schema, and the turn's
//!   stop marker (on a channel format the message end too) and a stray
//!   reasoning end marker when nothing but whitespace follows; on a
//!   channel format, the model's end-of-generation tokens after its last
//!   message (see [`GenerationEnd`]). A wrapper that is a plain word (`all\n`) counts
//!   only at the start or after the part opener.
//! - `triggers` are the first cores of the markers that can start a tool
//!   section, a reasoning block, a header or a content wrapper; content
//!   text stops before them (and before any partial one at the end of a
//!   chunk).
//! - `scaffolding` is what channel and header formats write between the
//!   sections of one turn (see `sections`).
//! - `turn-seam` is the stop marker then the assistant turn's own header
//!   (`<|im_end|>\n<|im_start|>assistant\n`): the output ran on into a
//!   second turn of its own; dropped.
//! - `stray-closer` is a closer of the template's own call format where no
//!   call or section is open (`Hello</tool_call>`): captured `STRAY`, left
//!   out of the content and named, unless a call's text given back to the
//!   content comes before it (the decoder decides).
//! - `echo` is the marker the prompt ends with, written again by the model
//!   (`<|CHATBOT_TOKEN|>` after `...<|CHATBOT_TOKEN|>`): scaffolding the
//!   prompt already holds, so it is dropped. Not when it opens a tool
//!   section.
//!
//! Invariant: content is the last alternative and takes at least one
//! character of anything, so the repetition always advances and the root
//! matches every input.

use super::reasoning::{
    has_start_marker, labelled_opener, prelude, reasoning_with_start, tagged_reasoning, Inside,
    Seam, ThoughtCalls,
};
use super::tool_section::{tool_grammars, ToolGrammar};
use super::{Plan, JSON_FENCES};
use crate::parser::marker::{is_token, Marker};
use crate::parser::sections::HeaderMarks;
use crate::parser::sections::Sections;
use crate::parser::tags::*;
use crate::parser::vocabulary::{special_token, Vocabulary};
use crate::protocol::{Protocol, Start};
use chat_autoparser_peg::{
    and, any_char, cap, choice, commit, empty, eoi, lit, literals, not, opt, plus, seq, star,
    until, ws, Expr,
};
use std::rc::Rc;

/// The root expression for `analysis` under `plan`, and the tool
/// grammars whose call rules it names (the strict ones of calls read
/// inside reasoning too).
pub(super) fn root<'a>(protocol: &'a Protocol, plan: Plan<'a>) -> (Expr, Vec<ToolGrammar<'a>>) {
    let vocabulary = Rc::new(Vocabulary::of(plan.scaffolding));
    let checked: &[String] = if plan.any_name { &[] } else { plan.names };
    // A fenced JSON call is read only for the request's tools.
    let fenced = !plan.names.is_empty() && !plan.json_response;
    let names = (checked, plan.names);
    let tool_sections = tool_grammars(protocol, plan, names, &vocabulary, fenced);
    // Tool sections keep their text when tools are not parsed: a header
    // never takes their opening marker. A code fence ends no reasoning.
    let tool_starts: Vec<String> = tool_sections
        .iter()
        .filter(|t| !t.fenced)
        .flat_map(|t| t.triggers.iter().cloned())
        .collect();
    // Where a reasoning block the model forgot to close ends.
    let reasoning_stops = match plan.parse_tools {
        true => tool_starts.clone(),
        false => Vec::new(),
    };
    let calls = if plan.parse_tools {
        tool_sections
    } else {
        Vec::new()
    };
    let strict = match plan.calls_in_reasoning {
        true => strict_grammars(&calls),
        false => Vec::new(),
    };
    let (words, wrappers): (Vec<Marker>, Vec<Marker>) =
        content_wrappers(protocol).into_iter().partition(is_word);
    let mut body = Body {
        protocol,
        plan,
        sections: Sections::new(
            protocol,
            plan.headers,
            &vocabulary,
            plan.extract_reasoning,
            tool_starts,
        ),
        silent: silent_markers(&wrappers, plan),
        opener: plan.part_opener.map(str::to_string),
        closers: final_closers(protocol, plan),
        generation_end: GenerationEnd::new(protocol, plan.headers),
        triggers: Vec::new(),
        stray: Vec::new(),
        call_text: empty(),
        to_trigger: empty(),
        reasoning_stops,
        thought_calls: thought_calls(&calls, &strict),
        seam: turn_seam(protocol),
        words,
        calls,
    };
    body.triggers = body.triggers();
    body.stray = body.stray_closers();
    // A call's text given back to the content runs on over its closers.
    body.call_text = content(&until(&body.triggers));
    let stray_cores = body.stray.iter().filter_map(Marker::first_core);
    body.triggers.extend(stray_cores.map(str::to_string));
    // The same for the end of generation: the call's text keeps it.
    let generation_end = body.generation_end.as_ref().map(|g| g.trigger.clone());
    body.triggers.extend(generation_end);
    body.triggers.sort();
    body.triggers.dedup();
    body.to_trigger = until(&body.triggers);
    // What follows a wrapper word is content, up to the next part: never
    // a call, so never an unknown one.
    let word_content = opt(seq([
        not(literals(&body.triggers)),
        content(&body.to_trigger),
    ]));
    let alternatives = body.alternatives(&word_content);
    // A wrapper word opens the first part without an opener: the prompt wrote it.
    let first_part = opt(seq([
        choice(body.words.iter().map(Marker::expr)),
        ws(),
        word_content,
    ]));
    let root = seq([
        body.echo(),
        prelude(protocol, plan, &body.inside_reasoning()),
        first_part,
        star(choice(alternatives)),
        eoi(),
    ]);
    let mut grammars = body.calls;
    grammars.extend(strict);
    (root, grammars)
}

/// The strict grammars (see [`ToolGrammar::strict`]) of the formats whose
/// sections open with a marker: the calls a reasoning block may hold.
fn strict_grammars<'a>(calls: &[ToolGrammar<'a>]) -> Vec<ToolGrammar<'a>> {
    calls
        .iter()
        .filter(|t| !t.is_bare_json())
        .map(ToolGrammar::strict)
        .collect()
}

/// What a reasoning block reads as calls: a whole section of a `strict`
/// grammar, and the start of a call of an unknown tool in the lenient
/// ones (`None` when no format takes part).
fn thought_calls(calls: &[ToolGrammar<'_>], strict: &[ToolGrammar<'_>]) -> Option<ThoughtCalls> {
    if strict.is_empty() {
        return None;
    }
    let unknown: Vec<Expr> = calls
        .iter()
        .filter(|t| !t.is_bare_json())
        .filter_map(ToolGrammar::unknown_head)
        .map(|(opener, head)| seq([opener, head]))
        .collect();
    Some(ThoughtCalls {
        section: choice(strict.iter().map(ToolGrammar::section)),
        unknown: match unknown.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => choice(unknown),
        },
    })
}

/// What the body's alternatives are made of, computed once per grammar.
struct Body<'a, 's> {
    protocol: &'a Protocol,
    plan: Plan<'a>,
    /// The tool grammars whose sections the body reads (none when tools
    /// are not parsed).
    calls: Vec<ToolGrammar<'a>>,
    /// Channel and header scaffolding (see `sections`).
    sections: Sections<'s>,
    /// Content wrappers that are plain words (see [`is_word`]).
    words: Vec<Marker>,
    /// The first cores of markers dropped wherever they stand.
    silent: Vec<String>,
    /// The part opener (`Plan::part_opener`).
    opener: Option<String>,
    /// Markers dropped at the very end (see [`final_closers`]).
    closers: Vec<String>,
    /// The model's end-of-generation tokens after the last message (see
    /// [`GenerationEnd`]).
    generation_end: Option<GenerationEnd>,
    /// What content text stops before, sorted.
    triggers: Vec<String>,
    /// The text up to the next trigger (`until`), built once: content and
    /// the text inside a wrapper read it (the compiler reads a second use
    /// of one expression as the first).
    to_trigger: Expr,
    /// The tool formats' own closers read where they close nothing (see
    /// [`Body::stray_closers`]).
    stray: Vec<Marker>,
    /// The text of a call given back to the content ([`content`]): it
    /// stops before the triggers less the stray closers.
    call_text: Expr,
    /// Where a reasoning block the model forgot to close ends.
    reasoning_stops: Vec<String>,
    /// The calls a reasoning block reads (`calls_in_reasoning`).
    thought_calls: Option<ThoughtCalls>,
    /// The turn seam (see [`turn_seam`]).
    seam: Option<Seam>,
}

impl Body<'_, '_> {
    /// What a reasoning block stops at and reads besides its text.
    fn inside_reasoning(&self) -> Inside<'_> {
        Inside {
            stops: &self.reasoning_stops,
            calls: self.thought_calls.as_ref(),
            seam: self.seam.as_ref(),
            headers: self.plan.headers,
        }
    }

    /// The first cores of every marker that can start another alternative.
    fn triggers(&self) -> Vec<String> {
        let mut triggers = self.silent.clone();
        triggers.extend(self.opener.clone());
        triggers.extend(self.sections.triggers());
        for t in &self.calls {
            triggers.extend(t.triggers.iter().cloned());
        }
        let reasoning = reasoning_with_start(self.protocol).filter(|_| self.plan.extract_reasoning);
        if let Some(r) = reasoning {
            // A reasoning block after content (interleaved thinking) is still reasoning.
            let start = Marker::new(&r.start);
            let core = labelled_opener(&start).or(start.first_core());
            triggers.extend(core.map(str::to_string));
        }
        triggers.extend(self.closers.iter().cloned());
        triggers.sort();
        triggers.dedup();
        triggers
    }

    /// The body's alternatives, in the order they are tried; content last.
    fn alternatives(&self, word_content: &Expr) -> Vec<Expr> {
        let (protocol, plan) = (self.protocol, self.plan);
        let mut alternatives = Vec::new();
        alternatives.extend(self.calls.iter().map(ToolGrammar::section));
        if plan.extract_reasoning && has_start_marker(protocol) {
            alternatives.push(tagged_reasoning(protocol, &self.inside_reasoning()));
        }
        alternatives.extend(self.silent_alternatives());
        if let Some(opener) = &self.opener {
            alternatives.extend(
                self.words
                    .iter()
                    .map(|w| seq([lit(opener), ws(), w.expr(), ws(), word_content.clone()])),
            );
        }
        alternatives.extend(self.sections.alternatives());
        // A closing marker at the very end closes nothing the content needs;
        // anywhere else it is text.
        alternatives.extend(
            self.closers
                .iter()
                .map(|core| seq([lit(core), ws(), eoi()])),
        );
        alternatives.extend(stop_then_tokens(protocol));
        alternatives.extend(self.generation_end.as_ref().map(|g| g.expr.clone()));
        alternatives.extend(self.seam.as_ref().map(|s| s.expr.clone()));
        alternatives.extend(self.unknown_calls());
        // Another format's markers with no call of the template's in
        // them are markup only where the policy reads other formats.
        let foreign_markup = self.plan.foreign_calls;
        let lone = self.calls.iter().filter_map(ToolGrammar::lone_closer);
        alternatives.extend(lone.filter(|_| foreign_markup));
        // The template's own closer after plain text: scaffolding where
        // the policy reads markers around text, text where it does not.
        if !self.stray.is_empty() {
            let closers = self.stray.iter().map(Marker::expr_exact_tail);
            let tag = if foreign_markup { STRAY } else { CONTENT };
            alternatives.push(cap(tag, choice(closers)));
        }
        let wrapped = self.calls.iter().map(|t| t.wrapped_text(&self.to_trigger));
        alternatives.extend(wrapped.flatten());
        let foreign = self
            .calls
            .iter()
            .map(|t| t.foreign_wrapped_text(&self.to_trigger));
        alternatives.extend(foreign.flatten().filter(|_| foreign_markup));
        alternatives.extend(self.failed_opener());
        alternatives.push(content(&self.to_trigger));
        alternatives
    }

    /// The tool formats' own closers (see [`ToolGrammar::own_closers`])
    /// whose first core starts nothing else: read at the top level, where
    /// no call or section is open, one closes nothing. It is captured
    /// `STRAY`; the decoder leaves it out of the content, named, unless a
    /// call's text went to the content before it (then it is that text's).
    fn stray_closers(&self) -> Vec<Marker> {
        let mut stray: Vec<Marker> = self.calls.iter().flat_map(|t| t.own_closers()).collect();
        stray.retain(|m| {
            let core = m.first_core().unwrap_or_default();
            !self.triggers.iter().any(|t| t == core)
        });
        stray.dedup();
        stray
    }

    /// A tool section's own opening token (`<tool_call>`) where no call
    /// follows: content with the text after it, its closers included,
    /// marked `CALL_TEXT`, so that the decoder keeps later closers in the
    /// content too.
    fn failed_opener(&self) -> Option<Expr> {
        let openers: Vec<&String> = self.calls.iter().flat_map(|t| &t.triggers).collect();
        let openers: Vec<&String> = openers.into_iter().filter(|o| is_token(o)).collect();
        if openers.is_empty() || self.stray.is_empty() {
            return None;
        }
        Some(seq([
            and(literals(openers)),
            cap(CALL_TEXT, empty()),
            self.call_text.clone(),
        ]))
    }

    /// The silent markers, each dropped with the whitespace after it.
    fn silent_alternatives(&self) -> Vec<Expr> {
        // A wrapper is recognised by its first core: the model stops before
        // the rest of an end marker (`<|END_RESPONSE|>` of `<|END_RESPONSE|><|END_OF_TURN_TOKEN|>`).
        // The content wrapper's opener opens a channel's message, its closer
        // ends it (`decode`: text after it is in no channel).
        let core_of = |raw: &str| Marker::new(raw).first_core().map(str::to_string);
        let content = &self.protocol.content;
        let (opens, closes) = (core_of(&content.start), core_of(&content.end));
        self.silent
            .iter()
            .map(|core| match Some(core) {
                c if c == opens.as_ref() => seq([lit(core), ws(), cap(CHANNEL, empty())]),
                c if c == closes.as_ref() => seq([cap(CHANNEL_END, empty()), lit(core), ws()]),
                _ => seq([lit(core), ws()]),
            })
            .collect()
    }

    /// A call of a function the request does not have is content, reported.
    /// Its text is all content, verbatim: the section end that closes the
    /// output after it too (which after a known call closes nothing).
    fn unknown_calls(&self) -> Vec<Expr> {
        let section_end = bare_section_end(self.plan).map_or_else(empty, |end| {
            opt(seq([cap(CONTENT, lit(&end)), ws(), eoi()]))
        });
        // The opener is content too, so that a call opener inside the section
        // (a trigger) is not tried, and reported, a second time.
        let unknown = |t: &ToolGrammar<'_>| {
            let (opener, head) = t.unknown_head()?;
            Some(seq([
                and(seq([opener.clone(), head])),
                cap(UNKNOWN_TOOL, empty()),
                cap(CONTENT, opener),
                self.call_text.clone(),
                section_end.clone(),
            ]))
        };
        self.calls.iter().filter_map(unknown).collect()
    }

    /// The marker the prompt ends with, written again: dropped (see the
    /// module's doc).
    fn echo(&self) -> Expr {
        self.protocol
            .prompt
            .trailing_marker
            .as_deref()
            .filter(|m| self.plan.start != Start::InReasoning && !tool_starts_with(&self.calls, m))
            .map_or_else(empty, |m| opt(seq([ws(), lit(m), ws()])))
    }
}

/// The first cores of content wrappers that are markers, and the code
/// fences around JSON content: dropped wherever they stand.
fn silent_markers(wrappers: &[Marker], plan: Plan<'_>) -> Vec<String> {
    let mut silent: Vec<String> = wrappers
        .iter()
        .filter_map(|m| m.first_core().map(str::to_string))
        .collect();
    if plan.json_response {
        silent.extend(JSON_FENCES.map(str::to_string));
    }
    silent
}

/// The stop marker followed only by special tokens at the very end: a
/// turn that ends with more than its analysed end (`<|im_end|><|stop|>`
/// after a call turn, `<|im_end|><|endofturn|>`) closes nothing either.
fn stop_then_tokens(protocol: &Protocol) -> Option<Expr> {
    let marker = Marker::new(&protocol.turn.stop_marker);
    let stop = marker.first_core()?;
    let tokens = plus(seq([ws(), special_token()]));
    Some(seq([lit(stop), tokens, ws(), eoi()]))
}

/// On a turn made of headed messages whose end is a special token
/// (harmony's `<|end|>`), the special tokens a model writes after its last
/// message at the very end of the output, in place of the message end or
/// after it: its end-of-generation token (`<|return|>`, which harmony
/// models write where their template renders `<|end|>`). It ends the
/// message as the message end does: scaffolding, under every policy.
/// A token that opens a header or a message opens something, one of the
/// tool formats' is a call's (`<|call|>` after a call's text given back to
/// the content is that text's), and anywhere but the very end a special
/// token is text.
struct GenerationEnd {
    /// What content stops before: the opening of a special token (`<|`).
    trigger: String,
    expr: Expr,
}

impl GenerationEnd {
    fn new(protocol: &Protocol, headers: &[HeaderMarks]) -> Option<GenerationEnd> {
        let turn = &protocol.turn;
        let end = Marker::new(&turn.message_end);
        let shaped = end
            .first_core()
            .is_some_and(|c| c.starts_with("<|") && c.ends_with("|>"));
        if headers.is_empty() || !shaped {
            return None;
        }
        let start = Marker::new(&turn.message_start);
        let openers = headers.iter().map(|h| h.open);
        let mut taken: Vec<String> = openers
            .chain(start.first_core())
            .map(String::from)
            .collect();
        let call_tokens = protocol
            .markup
            .call_marker_texts()
            .flat_map(crate::markers::tokens);
        for token in call_tokens {
            if !taken.iter().any(|t| t == token) {
                taken.push(token.to_string());
            }
        }
        let token = seq([ws(), not(literals(&taken)), special_token()]);
        Some(GenerationEnd {
            trigger: "<|".to_string(),
            expr: seq([plus(token), ws(), eoi()]),
        })
    }
}

/// The stop marker, then the header that opens an assistant turn
/// (`<|im_end|>\n<|im_start|>assistant\n`): the output runs on into a
/// second turn of the assistant's own, as a model past its stop does or a
/// template that renders a call turn's content as a turn after the calls
/// (`<｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜Assistant｜>text`). The seam
/// is scaffolding, dropped; the text on both sides is the message's. Any
/// other header after the stop marker stays text.
fn turn_seam(protocol: &Protocol) -> Option<Seam> {
    let seam = protocol.turn_seam()?;
    let header = Marker::new(&seam.header);
    let expr = seq([lit(&seam.stop), ws(), header.expr(), ws()]);
    Some(Seam {
        stop: seam.stop,
        expr,
    })
}

/// A content wrapper that is a plain word (functionary's `all\n`), not a
/// marker: in the text a model writes it is only a wrapper where a part of
/// the turn opens, never inside the content (`call`, `really`).
fn is_word(marker: &Marker) -> bool {
    marker
        .first_core()
        .is_some_and(|c| c.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
}

/// Whether `marker` starts a tool section (then it is the call, not an echo).
fn tool_starts_with(calls: &[ToolGrammar<'_>], marker: &str) -> bool {
    calls
        .iter()
        .flat_map(|t| &t.triggers)
        .any(|t| marker.starts_with(t.as_str()) || t.starts_with(marker))
}

/// Markers dropped when nothing but whitespace follows them: the turn's stop
/// marker (the model stopping), the end of a tool section that has no
/// opening marker (a template that ends call turns with it writes text after
/// the calls before it: `<tool_call|>Let me check.<|tool_response>`) and,
/// when reasoning is extracted, a stray reasoning end marker (one with no
/// block open closes nothing).
fn final_closers(protocol: &Protocol, plan: Plan<'_>) -> Vec<String> {
    let stop_marker = Marker::new(&protocol.turn.stop_marker);
    let stop = stop_marker.first_core();
    let mut out: Vec<String> = stop.map(str::to_string).into_iter().collect();
    // On a turn made of messages the last one may end with the message
    // end (`<|end|>` where the turn's stop is `<|return|>`).
    if !plan.headers.is_empty() {
        out.extend(
            Marker::new(&protocol.turn.message_end)
                .first_core()
                .map(str::to_string),
        );
    }
    out.extend(bare_section_end(plan));
    // The turn's tail after the stop marker (`<|eos|><think>\n\n</think>`).
    if let Some(stop) = stop.filter(|_| !protocol.turn.tail.is_empty()) {
        out.push(format!("{stop}{}", protocol.turn.tail));
    }
    if let Some(r) = protocol
        .markup
        .reasoning
        .as_ref()
        .filter(|_| plan.extract_reasoning)
    {
        out.extend(Marker::new(&r.end).first_core().map(str::to_string));
    }
    out
}

/// The first core of the end of a tool section that has no opening marker.
fn bare_section_end(plan: Plan<'_>) -> Option<String> {
    let marks = plan.sections.first().filter(|_| plan.parse_tools)?;
    if !Marker::blank(marks.start) {
        return None;
    }
    Marker::new(marks.end).first_core().map(str::to_string)
}

/// Content text: at least one character (a trigger that did not start what
/// it announced is text too), then `rest` (up to the next trigger).
fn content(rest: &Expr) -> Expr {
    // Commit only once there is a character: at the end of the output the
    // repetition around must still be able to stop.
    seq([
        and(any_char()),
        commit(),
        cap(CONTENT, seq([any_char(), rest.clone()])),
    ])
}

/// Markers around visible content (`<|START_RESPONSE|>`...), consumed silently.
fn content_wrappers(protocol: &Protocol) -> Vec<Marker> {
    [&protocol.content.start, &protocol.content.end]
        .into_iter()
        .map(|raw| Marker::new(raw))
        .filter(|m| !m.is_blank())
        .collect()
}
