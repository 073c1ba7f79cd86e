//! The generator: an [`Analysis`] and a start state become a PEG grammar over
//! the model's output.
//!
//! Shape of every generated grammar:
//!
//! ```text
//! output  := echo? reasoning? word-wrapper? body eoi
//! body    := ( tools | reasoning-block | silent-marker | scaffolding | content )*
//!            (silent markers: content wrappers' first cores, and code
//!            fences when the content is JSON for a response schema, and
//!            the turn's stop marker and a stray reasoning end marker when
//!            nothing but whitespace follows; a wrapper that is a plain
//!            word, `all\n`, only at the start or after the part opener)
//! tools   := section-start call (separator call)* section-end?
//!            (section-start is the optional part opener, `>>>`, when calls
//!            have no opening marker and the generation prompt ends with
//!            their separator)
//!            (one such alternative per tool format: the template's own,
//!            or each fallback dialect when the template renders no calls)
//!            (calls that are bare JSON objects: see `bare_json_section`)
//! call    := CALL( call-start head commit recover(tail call-end, BROKEN) )
//! content := commit CONTENT( any-char until(triggers) )
//! ```
//!
//! - A call whose name is none of the request's tools fails in `head`; an
//!   alternative before `content` then marks where it starts (an empty
//!   `UNKNOWN_TOOL` capture, reported as a diagnostic) and its text is content.
//! - `head` is everything up to and including the function name; before it
//!   completes, a failed call backtracks and its text is content, verbatim.
//!   After it, `commit` lets the arguments stream, and `recover` sends the
//!   rest of a call the model broke to `BROKEN` (content, with a diagnostic).
//! - `triggers` are the first cores of the markers that can start a tool
//!   section or a content wrapper; content text stops before them (and
//!   before any partial one at the end of a chunk).
//! - `scaffolding` is what channel and header formats write between the
//!   sections of one turn: headers of a learned shape, whatever their
//!   label, and message breaks (see `sections`). A tool-call name written
//!   inside such a header may follow any label and precede any rest of it.
//! - A tool-call name never holds whitespace or a marker the analysis
//!   learned: its slot stops there, so a call header that shares its start
//!   with another header (` to=NAME<|message|>`, ` to=self<|message|>`) fails
//!   on the other header instead of naming a call after what follows it.
//! - `echo` is the marker the prompt ends with, written again by the model
//!   (`<|CHATBOT_TOKEN|>` after `...<|CHATBOT_TOKEN|>`): scaffolding the
//!   prompt already holds, so it is dropped. Not when it opens a tool
//!   section. Inside a reasoning block the prompt opened, the block's own
//!   opener written again (`<think>` after `...<think>\n`, as DeepSeek-R1
//!   models do) is dropped the same way; any other repeated marker stays
//!   reasoning text.
//! - Another format's call markers around bare JSON calls (`[TOOL_CALLS]`,
//!   `<tool_call>...</tool_call>`: a model mixing dialects), and its closers
//!   alone, are captured `FOREIGN` (see `foreign_markers`): the policy
//!   makes them content with a diagnostic or leaves them out.
//! - A prompt that opened a reasoning block is continued inside it, unless
//!   the output opens a content section straight away.
//! - A bare (non-string) argument value that opens `{` or `[` in a format
//!   with quoted strings is read to its matching bracket, skipping quoted
//!   strings (a recursive rule per notation; see `notation`).
//! - In a format that writes objects and lists as nested elements, a value
//!   that starts with an element is read as text and whole elements (each
//!   closed at its own depth, whatever its name) when the argument's close
//!   follows; other values are text up to the first closing marker (see
//!   `elements`).
//! - Whitespace around markers is matched flexibly (see `marker`).
//!
//! A call's framing comes from the protocol's `CallLayout` of the format,
//! made with a placeholder name: the call's start and end markers, the
//! argument reader (the layout's `Arguments`), and for a tagged name its
//! prefix, its end marker, a counter's separator, a repeated name and a
//! tagged id before or after it (`TaggedName`). What this module adds on
//! purpose, as it reads more than the template renders: JSON call objects
//! with members in any order, `parameters` for `arguments` and back,
//! OpenAI's wrapper, scalar members it skips or keeps as content (so these
//! still read the `ToolFormat`'s JSON paths), the lookahead that sends a
//! call of an unknown tool to content, broken-call recovery, a dropped
//! section or call opener, a name addressed inside any header, and
//! flexible whitespace around markers. A tool section's markers and
//! separator are the `ToolFormat`'s, as for every grammar export.
//!
//! Invariant: the grammar matches every input (content takes anything the
//! other alternatives refuse), so a parse never fails; a `Match` may only be
//! incomplete.

use crate::analysis::{
    tool_tokens, ArgumentsSlot, Elements, Header, IdSlot, NameSlot, TaggedArguments, ToolClass,
    ToolFormat,
};
use chat_autoparser_peg::{
    and, any_char, cap, choice, class, commit, cut, empty, eoi, fail, json, json_string, lit,
    literals, not, opt, plus, python, recover, rule, seq, star, until, ws, ByteSet, Expr, Grammar,
};

use super::marker::Marker;
use super::sections::{known_label, label, Sections, Words};
use super::tags::*;
use super::vocabulary::{special_token, Vocabulary};
use crate::protocol::{
    Arguments, CallLayout, Notation, Protocol, ReasoningMarkers, Start, TaggedName,
};
use std::rc::Rc;

/// The name a call's layout is made with: the parser reads any name in
/// its place (see [`CallLayout::tagged_name`]).
const NAME_SLOT: &str = "NAME";

/// What the grammar should extract.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub start: Start,
    /// Reasoning goes to its own field (else it stays in the content).
    pub extract_reasoning: bool,
    /// Tool calls are parsed (else their text is content).
    pub parse_tools: bool,
    /// The content is JSON (a response schema): markdown code fences around
    /// it are scaffolding, not content.
    pub json_response: bool,
    /// The request's function names: a call must name one (empty: any).
    pub names: &'a [String],
    /// A call may name any function, the request's or not
    /// (`unknown_tool: call`): the decoder flags the others.
    pub any_name: bool,
    /// The tool formats the output may hold (the protocol's).
    pub formats: &'a [ToolFormat],
}

/// Code fences a model wraps JSON content in, longest first.
const JSON_FENCES: [&str; 2] = ["```json", "```"];

/// The grammar for `analysis` under `plan`: the root expression, and the
/// rules for nested values in each argument notation.
pub fn grammar(protocol: &Protocol, plan: Plan<'_>) -> Grammar {
    let (root, calls) = root(protocol, plan);
    let mut grammar = Grammar::new(root);
    // A call is read in several places (first, after a separator, inside
    // a list, after a wrapper): one rule each, built and compiled once.
    for (name, body) in calls.iter().flat_map(ToolGrammar::rules) {
        grammar = grammar.rule(&name, body);
    }
    for notation in notations(plan.formats) {
        grammar = grammar.rule(&notation_rule_name(&notation), notation_rule(&notation));
    }
    for e in elements(plan.formats) {
        grammar = grammar.rule(&elements_rule_name(&e), elements_rule(&e));
    }
    grammar
}

/// The root expression for `analysis` under `plan`, and the tool
/// grammars whose call rules it names.
fn root<'a>(protocol: &'a Protocol, plan: Plan<'a>) -> (Expr, Vec<ToolGrammar<'a>>) {
    let vocabulary = Rc::new(Vocabulary::new(protocol));
    let checked: &[String] = if plan.any_name { &[] } else { plan.names };
    let tool_sections = tool_grammars(protocol, plan.formats, (checked, plan.names), &vocabulary);
    // Tool sections keep their text when tools are not parsed: a header
    // never takes their opening marker.
    let tool_starts: Vec<String> = tool_sections
        .iter()
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
    let (words, wrappers): (Vec<Marker>, Vec<Marker>) =
        content_wrappers(protocol).into_iter().partition(is_word);
    let opener = part_opener(protocol);
    let sections = Sections::new(protocol, &vocabulary, plan.extract_reasoning, tool_starts);
    let mut silent: Vec<String> = wrappers
        .iter()
        .filter_map(|m| m.first_core().map(str::to_string))
        .collect();
    if plan.json_response {
        silent.extend(JSON_FENCES.map(str::to_string));
    }
    let mut triggers = silent.clone();
    triggers.extend(opener.clone());
    triggers.extend(sections.triggers());
    for t in &calls {
        triggers.extend(t.triggers.iter().cloned());
    }
    if let Some(r) = reasoning_with_start(protocol).filter(|_| plan.extract_reasoning) {
        // A reasoning block after content (interleaved thinking) is still reasoning.
        let start = Marker::new(&r.start);
        let core = labelled_opener(&start).or(start.first_core());
        triggers.extend(core.map(str::to_string));
    }
    let closers = final_closers(protocol, plan);
    triggers.extend(closers.iter().cloned());
    triggers.sort();
    triggers.dedup();
    let mut alternatives = Vec::new();
    alternatives.extend(calls.iter().map(ToolGrammar::section));
    if plan.extract_reasoning && has_start_marker(protocol) {
        alternatives.push(tagged_reasoning(protocol, &reasoning_stops));
    }
    // A wrapper is recognised by its first core: the model stops before
    // the rest of an end marker (`<|END_RESPONSE|>` of `<|END_RESPONSE|><|END_OF_TURN_TOKEN|>`).
    // The content wrapper's opener opens a channel's message (`decode`).
    let opens_content = Marker::new(&protocol.content.start)
        .first_core()
        .map(str::to_string);
    alternatives.extend(
        silent
            .iter()
            .map(|core| match Some(core) == opens_content.as_ref() {
                true => seq([lit(core), ws(), cap(CHANNEL, empty())]),
                false => seq([lit(core), ws()]),
            }),
    );
    // What follows a wrapper word is content, up to the next part: never
    // a call, so never an unknown one.
    let word_content = opt(seq([not(literals(&triggers)), content(&triggers)]));
    if let Some(opener) = &opener {
        alternatives.extend(
            words
                .iter()
                .map(|w| seq([lit(opener), ws(), w.expr(), ws(), word_content.clone()])),
        );
    }
    alternatives.extend(sections.alternatives());
    // A closing marker at the very end closes nothing the content needs;
    // anywhere else it is text.
    alternatives.extend(closers.iter().map(|core| seq([lit(core), ws(), eoi()])));
    // The stop marker followed only by special tokens at the very end: a
    // turn that ends with more than its analysed end (`<|im_end|><|stop|>`
    // after a call turn, `<|im_end|><|endofturn|>`) closes nothing either.
    if let Some(stop) = Marker::new(&protocol.turn.stop_marker).first_core() {
        let tokens = plus(seq([ws(), special_token()]));
        alternatives.push(seq([lit(stop), tokens, ws(), eoi()]));
    }
    // A call of a function the request does not have is content, reported.
    // Its text is all content, verbatim: the section end that closes the
    // output after it too (which after a known call closes nothing).
    let section_end = bare_section_end(protocol, plan).map_or_else(empty, |end| {
        opt(seq([cap(CONTENT, lit(&end)), ws(), eoi()]))
    });
    // The opener is content too, so that a call opener inside the section
    // (a trigger) is not tried, and reported, a second time.
    alternatives.extend(calls.iter().filter_map(|t| {
        let (opener, head) = t.unknown_head()?;
        Some(seq([
            and(seq([opener.clone(), head])),
            cap(UNKNOWN_TOOL, empty()),
            cap(CONTENT, opener),
            content(&triggers),
            section_end.clone(),
        ]))
    }));
    alternatives.extend(calls.iter().filter_map(ToolGrammar::lone_closer));
    alternatives.push(content(&triggers));
    // A wrapper word opens the first part without an opener: the prompt wrote it.
    let first_part = opt(seq([
        choice(words.iter().map(Marker::expr)),
        ws(),
        word_content,
    ]));
    let echo = protocol
        .prompt
        .trailing_marker
        .as_deref()
        .filter(|m| plan.start != Start::InReasoning && !tool_starts_with(&calls, m))
        .map_or_else(empty, |m| opt(seq([ws(), lit(m), ws()])));
    let root = seq([
        echo,
        prelude(protocol, plan, &reasoning_stops),
        first_part,
        star(choice(alternatives)),
        eoi(),
    ]);
    (root, calls)
}

/// A content wrapper that is a plain word (functionary's `all\n`), not a
/// marker: in the text a model writes it is only a wrapper where a part of
/// the turn opens, never inside the content (`call`, `really`).
fn is_word(marker: &Marker) -> bool {
    marker
        .first_core()
        .is_some_and(|c| c.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
}

/// What opens each part of the turn, when calls have no opening marker of
/// their own and the generation prompt ends with the call separator
/// (functionary's `>>>`, written before a recipient: `all` for content or a
/// function name): the prompt wrote the first part's opener, the model
/// writes the others.
fn part_opener(protocol: &Protocol) -> Option<String> {
    let format = protocol.markup.own_format.as_ref()?;
    let opens_calls = !Marker::new(&format.section_start).is_blank()
        || !Marker::new(&format.call_start).is_blank();
    let separator = format.call_separator.trim();
    let prompt = protocol.turn.generation_prompt.default.trim_end();
    (!opens_calls && !separator.is_empty() && prompt.ends_with(separator))
        .then(|| separator.to_string())
}

/// Whether `marker` starts a tool section (then it is the call, not an echo).
fn tool_starts_with(calls: &[ToolGrammar<'_>], marker: &str) -> bool {
    calls
        .iter()
        .flat_map(|t| &t.triggers)
        .any(|t| marker.starts_with(t.as_str()) || t.starts_with(marker))
}

/// The notations of the tool formats' arguments (see `notation`).
pub fn notations(formats: &[ToolFormat]) -> Vec<Notation> {
    let mut out: Vec<Notation> = formats
        .iter()
        .filter_map(|f| match &f.arguments {
            ArgumentsSlot::Tagged(t) => Notation::of(t),
            _ => None,
        })
        .collect();
    out.dedup();
    out
}

/// The element notations of the tool formats' arguments (see `elements`).
pub fn elements(formats: &[ToolFormat]) -> Vec<Elements> {
    let mut out: Vec<Elements> = formats
        .iter()
        .filter_map(|f| match &f.arguments {
            ArgumentsSlot::Tagged(t) => t.elements.clone(),
            _ => None,
        })
        .collect();
    out.dedup();
    out
}

fn elements_rule_name(e: &Elements) -> String {
    format!("elements {}", e.open_prefix)
}

/// Text and whole elements (`open NAME open-suffix content close NAME
/// close-suffix`), up to a closing marker at this depth. The closing name is
/// not checked against the opening one here: nesting, not names, decides
/// which tag closes an element (the engine has no back-references);
/// `elements` reads a value with a mismatched pair as the text written. A
/// tag that opens no whole element is text.
fn elements_rule(e: &Elements) -> Expr {
    let (open, open_end) = (Marker::new(&e.open_prefix), Marker::new(&e.open_suffix));
    let (close, close_end) = (Marker::new(&e.close_prefix), Marker::new(&e.close_suffix));
    let tag_name = |end: &Marker| match end.first_core() {
        Some(core) => seq([not(class(space_set())), until([core, "\n"])]),
        None => identifier(),
    };
    let element = seq([
        not(close.expr()),
        open.expr(),
        tag_name(&open_end),
        open_end.expr_exact_tail(),
        rule(&elements_rule_name(e)),
        close.expr_exact_head(),
        tag_name(&close_end),
        close_end.expr(),
    ]);
    let mut stops = open.delimiters();
    stops.extend(close.delimiters());
    let text = seq([not(close.expr()), any_char(), until(stops)]);
    star(choice([element, text]))
}

/// A value that starts with an element (or is empty), read as text and
/// whole elements when the argument's close follows it. Other values are
/// text up to the first closing marker, which streams as it arrives.
fn elements_value(e: &Elements, close: &Expr) -> Expr {
    let opens = seq([
        ws(),
        not(Marker::new(&e.close_prefix).expr()),
        Marker::new(&e.open_prefix).expr(),
    ]);
    seq([
        and(choice([opens, close.clone()])),
        cap(ARG_ELEMENTS, rule(&elements_rule_name(e))),
        ws(),
        and(close.clone()),
    ])
}

fn notation_rule_name(n: &Notation) -> String {
    format!("nested value {}", n.quote_open)
}

/// `{...}` or `[...]` up to the matching bracket; quoted strings may hold
/// brackets.
fn notation_rule(n: &Notation) -> Expr {
    let open = n.quote_open.as_str();
    let quoted = seq([
        lit(open),
        until([n.quote_close.as_str()]),
        lit(&n.quote_close),
    ]);
    let structural = [open, "{", "}", "[", "]"];
    let text = seq([
        not(choice(structural.map(lit))),
        any_char(),
        until(structural),
    ]);
    let item = choice([quoted, rule(&notation_rule_name(n)), text]);
    choice([
        seq([lit("{"), star(item.clone()), lit("}")]),
        seq([lit("["), star(item), lit("]")]),
    ])
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
    out.extend(bare_section_end(protocol, plan));
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
fn bare_section_end(protocol: &Protocol, plan: Plan<'_>) -> Option<String> {
    let tools = protocol
        .markup
        .own_format
        .as_ref()
        .filter(|_| plan.parse_tools)?;
    if !Marker::new(&tools.section_start).is_blank() {
        return None;
    }
    Marker::new(&tools.section_end)
        .first_core()
        .map(str::to_string)
}

/// The reasoning markers, when the block has an opening marker.
fn reasoning_with_start(protocol: &Protocol) -> Option<&ReasoningMarkers> {
    let r = protocol.markup.reasoning.as_ref()?;
    (!Marker::new(&r.start).is_blank()).then_some(r)
}

fn has_start_marker(protocol: &Protocol) -> bool {
    reasoning_with_start(protocol).is_some()
}

/// Content text: at least one character (a trigger that did not start what
/// it announced is text too), then up to the next trigger.
fn content(triggers: &[String]) -> Expr {
    let rest = if triggers.is_empty() {
        chat_autoparser_peg::rest()
    } else {
        until(triggers)
    };
    // Commit only once there is a character: at the end of the output the
    // repetition around must still be able to stop.
    seq([
        and(any_char()),
        commit(),
        cap(CONTENT, seq([any_char(), rest])),
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

/// Reasoning at the start of the output; `stops`: the literals a tool
/// section starts with, when tools are parsed (see [`reasoning_body`]).
fn prelude(protocol: &Protocol, plan: Plan<'_>, stops: &[String]) -> Expr {
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
                reasoning_body(&end, stops, &header_opens(protocol)),
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
/// `stops` as for [`prelude`].
fn tagged_reasoning(protocol: &Protocol, stops: &[String]) -> Expr {
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
        reasoning_body(&end, stops, &header_opens(protocol)),
    ])
}

/// The special token of an opener that is one token and a label word
/// (`<|channel>` of `<|channel>thought`): models also write the token
/// alone, or with another label, and what follows is the block's text.
fn labelled_opener(start: &Marker) -> Option<&str> {
    let (token, label) = leading_token(start)?;
    let word = !label.is_empty() && label.chars().all(char::is_alphanumeric);
    word.then_some(token)
}

/// A marker's first core split after the special token it starts with
/// (`<|channel>` and `thought`; `<|end|>` and `<|start|>assistant`).
fn leading_token(marker: &Marker) -> Option<(&str, &str)> {
    let core = marker.first_core()?;
    let token = crate::analysis::markers::marker_at(core, 0)?;
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
/// to the end marker, so only text from such a call on is held back.
///
/// An end marker of several tokens (`<|end|><|start|>assistant`) cut after
/// its first at the very end of the output closes the block: a stop string
/// took the rest; so does that token before a section header (`headers`:
/// their openings), the model having skipped the role header between.
/// Elsewhere that token is reasoning text. The rest of such
/// a marker without its first token (`<|start|>assistant`, the next
/// message's header) ends a block that does not close later: the model
/// left out the message end, and the header is read as such.
fn reasoning_body(end: &Marker, tool_starts: &[String], headers: &[String]) -> Expr {
    let starts: Vec<String> = tool_starts
        .iter()
        .filter(|t| t.len() > 1)
        .cloned()
        .collect();
    // Whitespace after the end marker is the text's that follows: content
    // between two blocks is kept byte for byte.
    let close = end.expr_exact_head();
    // The end's first token, and the rest, when it is several.
    let (cut, rest) = match leading_token(end) {
        Some((token, rest)) if !rest.is_empty() => (Some(token.to_string()), rest),
        _ => (None, ""),
    };
    // Its first token then the end of the output (a stop string took the
    // rest), or then the next section's header (the model skipped the role
    // header between: `<|end|><|channel|>final`).
    let cut_close = cut.as_ref().map(|t| {
        let next = match headers.is_empty() {
            true => eoi(),
            false => choice([eoi(), and(literals(headers))]),
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
        let past = match &cut {
            Some(token) => choice([and(lit(token)), closes_later]),
            None => closes_later,
        };
        seq([
            until(stops.clone()),
            star(seq([
                not(close.clone()),
                not(cut_close.clone().unwrap_or_else(chat_autoparser_peg::fail)),
                past,
                any_char(),
                until(stops),
            ])),
        ])
    };
    let closing = match cut_close {
        Some(cut_close) => choice([close, cut_close]),
        None => close,
    };
    seq([cap(REASONING, text), opt(closing)])
}

/// The opening markers of the turn's section headers (`<|channel|>`).
fn header_opens(protocol: &Protocol) -> Vec<String> {
    protocol.headers().iter().map(|h| h.open.clone()).collect()
}

/// One tool grammar per format the output may hold: the template's own, or
/// the fallback dialects when the template renders no calls.
fn tool_grammars<'a>(
    protocol: &'a Protocol,
    formats: &'a [ToolFormat],
    names: (&[String], &[String]),
    vocabulary: &Rc<Vocabulary>,
) -> Vec<ToolGrammar<'a>> {
    let opener = part_opener(protocol);
    let foreign = foreign_markers(protocol, formats);
    formats
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut markers = protocol.preserved_tokens.clone();
            markers.extend(tool_tokens(t));
            let mut g = ToolGrammar::new(t, &protocol.turn.headers, opener.clone(), markers, names);
            g.vocabulary = vocabulary.clone();
            g.rule = format!("call{i}");
            g.with_wrappers(&protocol.markup.spare_tokens)
                .with_foreign(&foreign)
        })
        .collect()
}

/// Tool-call wrappers of widely trained formats beyond the fallback
/// dialects (Mistral's `[TOOL_CALLS]`, Llama's `<|python_tag|>` and
/// `<|python_start|>...<|python_end|>`): openers, then closers.
const WRAPPER_DIALECTS: ([&str; 3], [&str; 1]) = (
    ["[TOOL_CALLS]", "<|python_tag|>", "<|python_start|>"],
    ["<|python_end|>"],
);

/// Another format's call markers a model mixing dialects writes around
/// bare JSON calls: openers, then closers. They are the fallback
/// dialects' section and call markers (`analysis::fallback`) and
/// [`WRAPPER_DIALECTS`], less every marker the template itself knows (its
/// formats', its preserved and spare tokens): those are never foreign.
fn foreign_markers(protocol: &Protocol, formats: &[ToolFormat]) -> (Vec<String>, Vec<String>) {
    let mut own: Vec<String> = protocol.preserved_tokens.clone();
    own.extend(protocol.markup.spare_tokens.iter().cloned());
    own.extend(formats.iter().flat_map(tool_tokens));
    let tokens = |raw: &[&str]| -> Vec<String> {
        let found = raw.iter().flat_map(|m| crate::analysis::markers::tokens(m));
        found.map(str::to_string).collect()
    };
    let dialects = crate::analysis::fallback_dialect_formats();
    let mut openers: Vec<String> = dialects
        .iter()
        .flat_map(|f| tokens(&[&f.section_start, &f.call_start]))
        .chain(WRAPPER_DIALECTS.0.map(str::to_string))
        .collect();
    let mut closers: Vec<String> = dialects
        .iter()
        .flat_map(|f| tokens(&[&f.call_end, &f.section_end]))
        .chain(WRAPPER_DIALECTS.1.map(str::to_string))
        .collect();
    for list in [&mut openers, &mut closers] {
        list.retain(|m| !own.contains(m));
        list.sort();
        list.dedup();
    }
    (openers, closers)
}

/// The tool-call part of the grammar for one format.
struct ToolGrammar<'a> {
    format: &'a ToolFormat,
    /// A call of the format, laid out with [`NAME_SLOT`] for its name:
    /// where the parser takes the call's framing from.
    layout: Rc<CallLayout>,
    /// Section headers of the turn: a name written inside one may sit
    /// after any label and before any rest of the header.
    headers: &'a [Header],
    /// The part opener (see [`part_opener`]): a section after content starts with it.
    opener: Option<String>,
    /// The marker tokens the analysis learned (and this format's own): a
    /// function name never holds one.
    markers: Vec<String>,
    triggers: Vec<String>,
    /// Matches (without consuming) one of the request's function names
    /// where a name starts; empty when the request names no tools.
    known_name: Expr,
    known_json_name: Expr,
    /// The request's names that hold whitespace (where a name slot
    /// otherwise stops), longest first; fails when there are none.
    spaced_names: Expr,
    /// The same for a name that is none of the request's (fails when the
    /// request names no tools).
    unknown_name: Expr,
    unknown_json_name: Expr,
    /// Spare special tokens a model writes around bare JSON calls
    /// (`<|python_tag|>`; see `analysis::spare`): framing of the calls.
    wrappers: Vec<String>,
    /// Other formats' call openers and closers (see [`foreign_markers`]),
    /// read around bare JSON calls and, for closers, alone.
    foreign: (Vec<String>, Vec<String>),
    /// The name of the grammar rule that reads one call.
    rule: String,
    /// The template's words: what a label or the rest of a header may
    /// hold and still be scaffolding.
    vocabulary: Rc<Vocabulary>,
}

impl<'a> ToolGrammar<'a> {
    fn new(
        format: &'a ToolFormat,
        headers: &'a [Header],
        opener: Option<String>,
        markers: Vec<String>,
        (names, all_names): (&[String], &[String]),
    ) -> ToolGrammar<'a> {
        // `names` are the names a call must have (empty: any); `all_names`
        // the request's, which a name slot may hold with spaces in them.
        let (known_name, known_json_name) = (known_name(names, false), known_name(names, true));
        let unknown = |quoted| match names.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => not(known_name_alternatives(names, quoted)),
        };
        let (unknown_name, unknown_json_name) = (unknown(false), unknown(true));
        let mut g = ToolGrammar {
            format,
            layout: Rc::new(CallLayout::new(format, NAME_SLOT)),
            headers,
            opener,
            markers,
            triggers: Vec::new(),
            known_name,
            known_json_name,
            spaced_names: spaced_names(all_names),
            unknown_name,
            unknown_json_name,
            wrappers: Vec::new(),
            foreign: (Vec::new(), Vec::new()),
            rule: "call".into(),
            vocabulary: Rc::default(),
        };
        g.triggers = g.first_literals();
        g
    }

    /// A call's start up to a name that is none of the request's, as its
    /// opening markers and the head after them: what [`ToolGrammar::call`]
    /// refuses for its name alone. `None` when the request names no tools.
    fn unknown_head(&self) -> Option<(Expr, Expr)> {
        if matches!(self.unknown_name, Expr::Fail) {
            return None;
        }
        let start = Marker::new(self.layout.start()).expr();
        let section = Marker::new(&self.format.section_start).expr();
        let head = self.head_naming(&self.unknown_name, &self.unknown_json_name);
        let head = match openai_wrapper(self.format) {
            Some((open, _)) => choice([seq([opt(open), head.clone()]), head]),
            None => head,
        };
        // The call's own opening marker, when the format has one, must be
        // there: an optional one would let any line of text that ends like
        // a name (`Let me check.\n` before `<tool_call>`) pass for a call.
        let opener = match (self.format.section_start.trim(), self.layout.start().trim()) {
            ("", "") => seq([opt(section), opt(start)]),
            (_, "") => seq([section, opt(start)]),
            ("", _) => seq([opt(section), start]),
            _ => choice([seq([section, opt(start.clone())]), start]),
        };
        Some((opener, head))
    }

    /// The same grammar, where bare JSON calls may sit inside `wrappers`
    /// (which then start a section too).
    fn with_wrappers(mut self, wrappers: &[String]) -> ToolGrammar<'a> {
        if self.is_bare_json() {
            self.wrappers = wrappers.to_vec();
            self.triggers.extend(wrappers.iter().cloned());
        }
        self
    }

    /// The same grammar, where bare JSON calls may sit between other
    /// formats' markers `(openers, closers)`, and a closer may stand alone
    /// (both start a section then).
    fn with_foreign(mut self, (openers, closers): &(Vec<String>, Vec<String>)) -> ToolGrammar<'a> {
        if self.is_bare_json() {
            self.foreign = (openers.clone(), closers.clone());
            self.triggers.extend(openers.iter().chain(closers).cloned());
        }
        self
    }

    /// A foreign marker of `list`, captured (fails when there is none).
    fn foreign_expr(list: &[String]) -> Expr {
        match list.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => cap(FOREIGN, choice(list.iter().map(lit))),
        }
    }

    /// A foreign closer with no call before it (`Sure.</tool_call>`).
    fn lone_closer(&self) -> Option<Expr> {
        let closers = &self.foreign.1;
        (!closers.is_empty()).then(|| Self::foreign_expr(closers))
    }

    /// The name's prefix is distinctive enough to start a call by itself
    /// (`<function=`): models sometimes drop the call's opening marker.
    fn distinctive_name_prefix(&self) -> Option<String> {
        let core = Marker::new(self.tagged()?.prefix).first_core()?.to_string();
        let marked =
            core.len() >= 3 && core.starts_with(['<', '[']) && core.contains(['=', ' ', '|']);
        marked.then_some(core)
    }

    /// The call's own opening marker, when the section also has one and the
    /// call's is a whole tag (`<|tool_call_begin|>` inside
    /// `<|tool_calls_section_begin|>`): models sometimes drop the section's.
    fn distinctive_call_start(&self) -> Option<String> {
        Marker::new(&self.format.section_start).first_core()?;
        let core = Marker::new(self.layout.start()).first_core()?.to_string();
        let tag = core.len() >= 3 && core.starts_with(['<', '[']) && core.ends_with(['>', ']']);
        tag.then_some(core)
    }

    /// The literals a tool section can start with.
    fn first_literals(&self) -> Vec<String> {
        for raw in [self.format.section_start.as_str(), self.layout.start()] {
            if let Some(core) = Marker::new(raw).first_core() {
                let mut out = vec![core.to_string()];
                out.extend(self.distinctive_call_start());
                out.extend(self.distinctive_name_prefix());
                return out;
            }
        }
        let tagged = self.tagged();
        let id_before = tagged.and_then(|t| t.id_before);
        let id_core =
            id_before.and_then(|(prefix, _)| Marker::new(prefix).first_core().map(str::to_string));
        if let Some(core) = id_core {
            return vec![core];
        }
        if let Some(opener) = &self.opener {
            return vec![opener.clone()];
        }
        match tagged.map(|t| Marker::new(t.prefix)) {
            Some(prefix) if !prefix.is_blank() => {
                vec![prefix.first_core().unwrap_or_default().to_string()]
            }
            // A fenced call (```json\n{...}) starts at its fence, a list
            // of calls at its bracket.
            None => ["{", "[", "```"].map(String::from).to_vec(),
            // A bare name starts the call: any identifier may; content
            // stops at none (the section only starts where content could).
            Some(_) => Vec::new(),
        }
    }

    /// `section-start call (separator call)* section-end?`
    fn section(&self) -> Expr {
        if self.is_bare_json() {
            return self.bare_json_section();
        }
        let f = self.format;
        let sep = Marker::new(&f.call_separator);
        // Framing is captured so a call withdrawn for arguments that are not
        // JSON goes back to content with it (`decode`).
        let item = if f.call_separator.is_empty() {
            seq([ws(), self.call()])
        } else {
            seq([cap(SECTION_OPEN, seq([ws(), sep.expr()])), self.call()])
        };
        let more = match self.next_in_wrapper() {
            Some(next) => star(choice([item, next])),
            None => star(item),
        };
        let start = cap(SECTION_OPEN, Marker::new(&f.section_start).expr());
        let droppable =
            self.distinctive_name_prefix().is_some() || self.distinctive_call_start().is_some();
        let start = match &self.opener {
            Some(opener) => opt(cap(SECTION_OPEN, lit(opener))),
            None if droppable => opt(start),
            None => start,
        };
        seq([start, self.call(), more, self.section_end()])
    }

    /// The section's closer, when it has one, and the whitespace before it.
    fn section_end(&self) -> Expr {
        let end = Marker::new(&self.format.section_end);
        match end.is_blank() {
            true => empty(),
            false => opt(cap(FRAME, seq([ws(), end.closer_expr()]))),
        }
    }

    /// JSON calls with no marker of their own, as models write them: in a
    /// list (`[{...}, {...}]`) or one after another, bare, or separated by
    /// `,`, `;` or newlines. Framing around them is the calls':
    /// a Markdown fence, a spare special token before or after them
    /// (`<|python_tag|>{...}`, `<|python_start|>{...}<|python_end|>`), and a
    /// trailing `;`. Everything after the first call is optional: the call
    /// has committed, so nothing after it may fail.
    fn bare_json_section(&self) -> Expr {
        let item = self.call();
        let own = match self.format.call_separator.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => Marker::new(&self.format.call_separator).expr(),
        };
        let sep = choice([own, seq([ws(), opt(class(ByteSet::of(b",;"))), ws()])]);
        let run = seq([item.clone(), star(seq([sep, item]))]);
        let listed = seq([lit("["), ws(), run.clone(), opt(seq([ws(), lit("]")]))]);
        let wrapper = || match self.wrappers.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => choice(self.wrappers.iter().map(lit)),
        };
        let (foreign_open, foreign_close) = (
            Self::foreign_expr(&self.foreign.0),
            Self::foreign_expr(&self.foreign.1),
        );
        seq([
            opt(seq([choice(JSON_FENCES.map(lit)), ws()])),
            opt(seq([choice([wrapper(), foreign_open]), ws()])),
            choice([listed, run]),
            opt(seq([ws(), lit(";")])),
            opt(seq([ws(), choice([wrapper(), foreign_close])])),
            ws(),
            opt(seq([lit("```"), ws()])),
        ])
    }

    /// Calls are JSON objects with no marker before them: none at all, or
    /// only a JSON list's brackets around the section (`[{...}, {...}]`),
    /// which the bare reading takes as one of its forms.
    fn is_bare_json(&self) -> bool {
        let f = self.format;
        let list = f.section_start.trim() == "[" && f.section_end.trim() == "]";
        self.tagged().is_none()
            && (Marker::new(&f.section_start).is_blank() || list)
            && Marker::new(self.layout.start()).is_blank()
    }

    /// One call: a reference to the rule of [`ToolGrammar::call_body`].
    fn call(&self) -> Expr {
        rule(&self.rule)
    }

    /// The rules [`ToolGrammar::call`] names: the call; its body, when the
    /// next call may follow inside the same wrapper (read after the start
    /// marker and without it); and, when it may sit in OpenAI's wrapper, its
    /// head and tail (read with the wrapper or without it).
    fn rules(&self) -> Vec<(String, Expr)> {
        let mut out = vec![(self.rule.clone(), self.call_body())];
        if self.shared_wrapper().is_some() {
            out.push((format!("{}.body", self.rule), self.body()));
        }
        if openai_wrapper(self.format).is_some() {
            out.push((format!("{}.head", self.rule), self.head()));
            out.push((format!("{}.tail", self.rule), self.tail()));
        }
        out
    }

    /// One call, captured whole: its start marker, then [`ToolGrammar::body`].
    fn call_body(&self) -> Expr {
        let start = Marker::new(self.layout.start()).expr();
        let start = if self.distinctive_name_prefix().is_some() {
            opt(start)
        } else {
            start
        };
        let one = match self.shared_wrapper() {
            Some(_) => cap(CALL, seq([start, rule(&format!("{}.body", self.rule))])),
            None => cap(CALL, seq([start, self.body()])),
        };
        match self.listed_calls() {
            Some(listed) => choice([listed, one]),
            None => one,
        }
    }

    /// JSON calls a model wrote as a list inside one call wrapper of a
    /// format whose wrapper holds one object (`<tool_call>[{...},
    /// {...}]</tool_call>`, a list-of-calls dialect mixed into the
    /// template's): each object is a call, the brackets and commas are
    /// framing (given back with a withdrawn call, as a separator is).
    /// `None` for other formats: those without a call marker of their own
    /// read lists already.
    fn listed_calls(&self) -> Option<Expr> {
        let json_name = matches!(
            self.format.name,
            NameSlot::JsonField { .. } | NameSlot::JsonKey
        );
        let start = Marker::new(self.layout.start());
        if !json_name || start.is_blank() {
            return None;
        }
        let item = || self.body_ending(and(seq([ws(), choice([lit(","), lit("]")])])));
        let first = cap(CALL, seq([start.expr(), ws(), lit("["), ws(), item()]));
        let next = seq([
            cap(SECTION_OPEN, seq([ws(), lit(","), ws()])),
            cap(CALL, item()),
        ]);
        let end = Marker::new(self.layout.end()).closer_expr();
        let close = opt(cap(FRAME, seq([ws(), lit("]"), ws(), end])));
        Some(seq([first, star(next), close]))
    }

    /// The next call inside the same wrapper (see [`ToolGrammar::shared_wrapper`]).
    fn next_in_wrapper(&self) -> Option<Expr> {
        self.shared_wrapper()?;
        Some(cap(CALL, rule(&format!("{}.body", self.rule))))
    }

    /// Where a call's end marker is the arguments' close and a special
    /// token (`}<tool_call|>`) and its name has a prefix (`call:`), a model
    /// may write several calls in one wrapper
    /// (`<|tool_call>call:a{...}call:b{...}<tool_call|>`): the close alone
    /// ends a call that the next name prefix follows. The close, and the
    /// prefix that must follow it.
    fn shared_wrapper(&self) -> Option<(String, String)> {
        let prefix = Marker::new(self.tagged()?.prefix).first_core()?.to_string();
        let end = self.layout.end().trim();
        let open_at = end.rfind(['<', '['])?;
        let token = crate::analysis::markers::marker_at(end, open_at)?;
        let close = end[..open_at].trim();
        let closes_arguments = !close.is_empty() && close.chars().all(|c| "}])".contains(c));
        (token.end == end.len() && closes_arguments).then(|| (close.to_string(), prefix))
    }

    /// A call after its start marker: head, arguments and end.
    fn body(&self) -> Expr {
        let end = Marker::new(self.layout.end()).closer_expr();
        let end = match self.shared_wrapper() {
            Some((close, prefix)) => choice([end, seq([lit(&close), and(lit(&prefix))])]),
            None => end,
        };
        self.body_ending(end)
    }

    /// A call's head and arguments, then `end`.
    fn body_ending(&self, end: Expr) -> Expr {
        let f = self.format;
        let call = |open: Expr, head: Expr, tail: Expr, close: Expr| {
            seq([
                open,
                head,
                self.bare_name_guard(),
                commit(),
                recover(seq([tail, close, end.clone()]), self.broken()),
            ])
        };
        let body = match openai_wrapper(f) {
            Some((open, close)) => {
                let head = rule(&format!("{}.head", self.rule));
                let tail = rule(&format!("{}.tail", self.rule));
                choice([
                    call(open, head.clone(), tail.clone(), close),
                    call(empty(), head, tail, empty()),
                ])
            }
            None => call(empty(), self.head(), self.tail(), empty()),
        };
        body
    }

    /// A call that starts with a bare name (no marker before it, as in
    /// functionary's `>>>name\n{...}`) is only a call once its JSON
    /// arguments begin: before that, `all\n` or any first line of text
    /// would be taken for a name.
    fn bare_name_guard(&self) -> Expr {
        let bare = self.tagged().is_some_and(|t| {
            Marker::new(t.prefix).is_blank() && Marker::new(self.layout.start()).is_blank()
        });
        match (self.layout.arguments(), bare) {
            (Some(Arguments::Json { as_string: false }), true) => and(seq([ws(), lit("{")])),
            _ => empty(),
        }
    }

    /// The parts around a tagged name, from the layout (`None`: a JSON call).
    fn tagged(&self) -> Option<TaggedName<'_>> {
        self.layout.tagged_name(NAME_SLOT)
    }

    /// What a broken call leaves: text up to the call's end (consumed) or
    /// the next tool section.
    fn broken(&self) -> Expr {
        let end = Marker::new(self.layout.end());
        let mut stops: Vec<String> = end.delimiters();
        stops.extend(self.triggers.iter().cloned());
        stops.retain(|s| !s.is_empty());
        let text = if stops.is_empty() {
            chat_autoparser_peg::rest()
        } else {
            until(stops)
        };
        let close = if end.is_blank() {
            empty()
        } else {
            opt(end.expr())
        };
        seq([cap(BROKEN, text), close])
    }

    /// Up to and including the function name.
    fn head(&self) -> Expr {
        self.head_naming(&self.known_name, &self.known_json_name)
    }

    /// Up to and including a function name that `name` (or, quoted,
    /// `json_name`) accepts where it starts.
    fn head_naming(&self, name: &Expr, json_name: &Expr) -> Expr {
        let f = self.format;
        match (&f.name, f.class) {
            (NameSlot::JsonField { path }, _) => json_head(path, &self.json_paths(), 0, json_name),
            (NameSlot::JsonKey, _) => seq([
                lit("{"),
                ws(),
                json_name.clone(),
                cap(NAME, json_string()),
                ws(),
                lit(":"),
                ws(),
            ]),
            (NameSlot::Tagged { .. }, class) => match self.tagged() {
                Some(t) if class == ToolClass::PythonCall => {
                    let name = seq([name.clone(), cap(NAME, identifier())]);
                    seq([
                        Marker::new(t.prefix).expr(),
                        name,
                        ws(),
                        Marker::new(t.suffix).expr(),
                    ])
                }
                Some(t) => self.tagged_head(&t, name),
                None => chat_autoparser_peg::fail(),
            },
        }
    }

    /// Up to and including a tagged name, and the id around it, as the
    /// layout spells them.
    fn tagged_head(&self, t: &TaggedName<'_>, name: &Expr) -> Expr {
        // A name addressed inside a header opened before it
        // (`<|channel|>commentary to=functions.f`) is followed by the rest of
        // that label; one with no header before it by the suffix's own.
        match self.header_lead(t.prefix) {
            Some(lead) => choice([
                self.tagged_head_after(t, name, seq([lead, Marker::new(t.prefix).expr()]), true),
                self.tagged_head_after(t, name, Marker::new(t.prefix).expr(), false),
            ]),
            None => self.tagged_head_after(t, name, self.name_prefix(t.prefix), true),
        }
    }

    /// [`ToolGrammar::tagged_head`] after `prefix`; `in_label`: a header's
    /// label was written before the name.
    fn tagged_head_after(
        &self,
        t: &TaggedName<'_>,
        name: &Expr,
        prefix: Expr,
        in_label: bool,
    ) -> Expr {
        let suffix_marker = Marker::new(t.suffix);
        let name_end = match (t.id_after, suffix_marker.is_blank()) {
            (Some((p, _)), true) => Marker::new(p),
            _ => suffix_marker.clone(),
        };
        let header_or_suffix = self
            .header_rest(t.suffix, in_label)
            .unwrap_or_else(|| suffix_marker.expr());
        let suffix_expr = match t.echo {
            // The grammar does not check the repeated name against the
            // first one; the decoder keeps one that differs as content.
            Some(after) => {
                let after = Marker::new(after);
                seq([
                    header_or_suffix,
                    not(class(space_set())),
                    cap(ECHO, tagged_name(&after, &self.name_stops())),
                    after.expr(),
                ])
            }
            None => header_or_suffix,
        };
        if let Some(separator) = t.counter {
            // Models write a namespace's name without it (`get_weather:0`
            // for `functions.get_weather:0`), and whitespace before the
            // special token after the id.
            let prefix = match is_namespace(t.prefix) {
                true => choice([seq([prefix, name.clone()]), name.clone()]),
                false => seq([prefix, name.clone()]),
            };
            let space = match starts_with_token(t.suffix) {
                true => ws(),
                false => empty(),
            };
            return seq([
                counted_name(prefix, separator, &self.name_stops()),
                space,
                suffix_expr,
            ]);
        }
        // A model may leave the made-up id out (`[TOOL_CALLS]NAME[ARGS]{...}`
        // where the template renders `NAME[CALL_ID]ID[ARGS]`): what stays is
        // the id's closing marker when nothing else ends the name.
        let mut stops = self.name_stops();
        let id_after = match (t.id_after, suffix_marker.is_blank()) {
            (Some((p, s)), true) => {
                stops.extend(Marker::new(s).first_core().map(str::to_string));
                choice([tagged_id(p, s), Marker::new(s).expr()])
            }
            (Some((p, s)), false) => opt(tagged_id(p, s)),
            (None, _) => empty(),
        };
        // A server that decodes with `skip_special_tokens` drops the tokens
        // between the name and JSON arguments: `[TOOL_CALLS]NAME[ARGS]{...}`
        // reaches it as `[TOOL_CALLS]NAME{...}` (the form vLLM's Mistral
        // parser reads). The arguments' `{` then ends the name.
        let (suffix_expr, id_after) = match self.strippable_tokens(t) {
            true => {
                stops.push("{".into());
                let stripped = and(lit("{"));
                (
                    choice([suffix_expr, stripped.clone()]),
                    choice([id_after, stripped]),
                )
            }
            false => (suffix_expr, id_after),
        };
        let id_before = t
            .id_before
            .map_or_else(empty, |(p, s)| opt(tagged_id(p, s)));
        seq([
            id_before,
            prefix,
            name.clone(),
            cap(
                NAME,
                choice([self.spaced_names.clone(), tagged_name(&name_end, &stops)]),
            ),
            suffix_expr,
            id_after,
        ])
    }

    /// Whether only special tokens stand between a tagged name and its JSON
    /// object arguments (`[ARGS]`, `[CALL_ID]ID[ARGS]`): a decoder that
    /// skips special tokens leaves the name right before the `{`.
    fn strippable_tokens(&self, t: &TaggedName<'_>) -> bool {
        let json = self.layout.arguments() == Some(&Arguments::Json { as_string: false });
        let token = |m: &str| {
            let m = m.trim();
            crate::analysis::markers::marker_at(m, 0).is_some_and(|r| r.len() == m.len())
        };
        let id_tokens = t.id_after.is_none_or(|(p, s)| token(p) && token(s));
        let suffix = t.suffix.trim();
        let suffix_ok = match suffix.is_empty() {
            true => t.id_after.is_some(),
            false => token(suffix),
        };
        json && t.echo.is_none() && id_tokens && suffix_ok
    }

    /// After the name: arguments, and the rest of a JSON call object.
    fn tail(&self) -> Expr {
        match (&self.format.name, self.layout.arguments()) {
            (NameSlot::JsonField { path }, _) => json_tail(path, &self.json_paths()),
            (NameSlot::JsonKey, _) => seq([cap(ARGS, json()), ws(), lit("}")]),
            (_, Some(Arguments::Python)) => python_arguments(),
            (_, Some(Arguments::Tagged(t))) => tagged_arguments(t, self.layout.end()),
            (_, Some(Arguments::Json { as_string: true })) => {
                seq([ws(), cap(ARGS_STRING, json_string()), ws()])
            }
            _ => seq([ws(), json_arguments(), ws()]),
        }
    }

    /// The name's prefix. A call may be addressed from inside a header, after
    /// the section's label: when the call starts with a header's opening,
    /// the label the template wrote before the address (`call` of
    /// `call tool="`) may be any label ([`ToolGrammar::call_label`]). (When
    /// the call's framing has no marker of its own, a header may open before
    /// the prefix: [`ToolGrammar::header_lead`].)
    fn name_prefix(&self, prefix: &str) -> Expr {
        let call_start = self.layout.start().trim();
        let opened = self.headers.iter().find(|h| h.open == call_start);
        let address = prefix
            .trim_end()
            .rsplit_once(char::is_whitespace)
            .map(|(_, a)| a)
            .filter(|a| !a.is_empty());
        match (opened, address) {
            (Some(h), Some(address)) => {
                seq([self.call_label(h, address), Marker::new(address).expr()])
            }
            _ => Marker::new(prefix).expr(),
        }
    }

    /// A header's opening and label that may come before `prefix`, when
    /// the call's framing has no marker of its own and the turn has headers.
    fn header_lead(&self, prefix: &str) -> Option<Expr> {
        if !self.layout.start().trim().is_empty() || self.headers.is_empty() {
            return None;
        }
        let prefix_core = Marker::new(prefix).first_core()?.to_string();
        let leads = self
            .headers
            .iter()
            .filter(|h| !prefix_core.starts_with(h.open.as_str()))
            .map(|h| seq([lit(&h.open), self.call_label(h, &prefix_core)]));
        Some(choice(leads))
    }

    /// The label of a header before a call's address (`commentary` of
    /// `<|channel|>commentary to=functions.f`): scaffolding when it holds
    /// only the template's words, else text the model wrote (`EXTRA`).
    fn call_label(&self, h: &Header, address: &str) -> Expr {
        let (markers, stops) = (&self.markers, &[address]);
        let known = known_label(h, markers, stops, Words::Any, &self.vocabulary);
        choice([
            seq([known, and(lit(address))]),
            cap(EXTRA, label(h, markers, stops, Words::Any)),
        ])
    }

    /// A name suffix that ends a header (`<|channel|>commentary json<|message|>`,
    /// `" index="1"<|sep|>`): the rest of the header up to its close is
    /// scaffolding as far as its words are the template's, and numbers
    /// (`index="2"`, ` <|constrain|>json`); from the first other word on it
    /// is text the model wrote (`EXTRA`: `note="..."` of
    /// `" index="1" note="..."`).
    ///
    /// `in_label`: the header's label was written before the name, so markup
    /// may follow the name at once (`to=functions.f<|constrain|>json`);
    /// else the rest opens as the suffix does (`<|channel|>`), and markup
    /// only follows a word.
    fn header_rest(&self, suffix: &str, in_label: bool) -> Option<Expr> {
        let h = self
            .headers
            .iter()
            .find(|h| suffix.trim_end().ends_with(h.close.as_str()))?;
        let close = lit(&h.close);
        let ends = choice([close.clone(), lit("\n"), lit(" ")]);
        let whole = |word: Expr| seq([word, and(ends.clone())]);
        let word = self.vocabulary.known_word(&ends);
        let markup = self.vocabulary.known_markup(&ends);
        let next = choice([markup.clone(), word.clone()]);
        let first = match in_label {
            true => next.clone(),
            false => word,
        };
        let known = seq([opt(whole(first)), star(seq([lit(" "), whole(next)]))]);
        let other = choice([
            and(close.clone()),
            cap(EXTRA, until([h.close.as_str(), "\n"])),
        ]);
        Some(seq([known, other, close, ws()]))
    }

    /// Where a name ends besides its suffix: at whitespace, at a special
    /// token's opening `<|` (gpt-oss models write `to=functions.f<|constrain|>json`
    /// with no space before the token) and at any marker the analysis
    /// learned (names never hold those; labels, addresses and reasoning
    /// may). Without these stops, a name slot that starts where another
    /// header does (` to=NAME<|message|>` and the reasoning header
    /// ` to=self<|message|>`) would run on to the suffix's next occurrence,
    /// over markers and whole messages.
    fn name_stops(&self) -> Vec<String> {
        let mut out: Vec<String> = [" ", "\t", "\r", "<|"].map(String::from).to_vec();
        for h in self.headers {
            out.extend([h.open.clone(), h.close.clone()]);
        }
        out.extend(self.markers.iter().cloned());
        out.sort();
        out.dedup();
        out
    }

    fn json_paths(&self) -> JsonPaths {
        let f = self.format;
        let args = match &f.arguments {
            ArgumentsSlot::Json { path, .. } if !path.is_empty() => Some(path.clone()),
            _ => None,
        };
        let id = match &f.id {
            Some(IdSlot::JsonField { path, .. }) if !path.is_empty() => Some(path.clone()),
            _ => None,
        };
        JsonPaths { args, id }
    }
}

/// Where arguments and id sit in a JSON call object.
struct JsonPaths {
    args: Option<Vec<String>>,
    id: Option<Vec<String>>,
}

/// `{ other-member* "key": <deeper head or NAME>` for the name path
/// `path[level..]`.
fn json_head(path: &[String], paths: &JsonPaths, level: usize, known: &Expr) -> Expr {
    let Some(key) = path.get(level) else {
        return empty();
    };
    let value = match level + 1 == path.len() {
        true => seq([known.clone(), cap(NAME, json_string())]),
        false => json_head(path, paths, level + 1, known),
    };
    seq([
        lit("{"),
        ws(),
        star(seq([
            member(path, paths, level, false),
            ws(),
            lit(","),
            ws(),
        ])),
        lit(json_key(key)),
        ws(),
        lit(":"),
        ws(),
        value,
    ])
}

/// OpenAI's wrapper around a call object (`{"type": "function", "function":
/// {...}}`), as its opening (up to the inner object) and its close, when the
/// format names the function at the call object's top level: models trained
/// on OpenAI's form write it in any JSON format. The wrapper's other members
/// are OpenAI's scalars: `"type"`, and `"id"`, read as the call's id. Its close
/// cannot fail (the call committed before it): a missing `}` is forgiven.
fn openai_wrapper(f: &ToolFormat) -> Option<(Expr, Expr)> {
    let NameSlot::JsonField { path } = &f.name else {
        return None;
    };
    if path.len() != 1 || path[0] == "function" {
        return None;
    }
    let key = lit(json_key("function"));
    // Only OpenAI's own members: another first key tells a plain call at
    // once, even in a cut output.
    let member = |key: &str, value: Expr| seq([lit(json_key(key)), ws(), lit(":"), ws(), value]);
    let scalar = seq([not(class(ByteSet::of(b"{["))), json()]);
    let scalar = choice([
        member("type", scalar.clone()),
        member("id", choice([cap(ID, json_string()), scalar])),
    ]);
    let open = seq([
        lit("{"),
        ws(),
        star(seq([scalar.clone(), ws(), lit(","), ws()])),
        key,
        ws(),
        lit(":"),
        ws(),
    ]);
    let close = seq([
        star(seq([ws(), lit(","), ws(), scalar])),
        opt(seq([ws(), lit("}")])),
    ]);
    Some((open, close))
}

/// Closes the objects [`json_head`] opened, innermost first.
fn json_tail(path: &[String], paths: &JsonPaths) -> Expr {
    let levels = path.len();
    seq((0..levels).rev().map(|level| {
        seq([
            star(seq([
                ws(),
                lit(","),
                ws(),
                member(path, paths, level, true),
            ])),
            ws(),
            lit("}"),
        ])
    }))
}

/// One member of the object at `level` other than the name path's key:
/// the arguments, the id, or anything else. After the name (`streaming`),
/// a known key commits so the value streams; before it, a key only settles
/// the member's alternatives.
///
/// What a model writes beyond the template's format, read so nothing is
/// lost: arguments as a JSON object or as a string holding one (whichever
/// the template writes; a string is decoded), under the template's key or
/// the other common one ([`argument_keys`]). Any other member may hold a
/// scalar: OpenAI's own call fields (`"type": "function"`, `"index": 0`)
/// carry no data of the call and are skipped; any other (`"note": "..."`)
/// is text the model wrote, so it is kept: as content, with a diagnostic
/// (`EXTRA`). An object or a list under an unknown key is malformed there
/// and the rest of the call stays content.
fn member(path: &[String], paths: &JsonPaths, level: usize, streaming: bool) -> Expr {
    let prefix = &path[..level];
    let settle = || if streaming { commit() } else { cut() };
    let mut alts = Vec::new();
    if let Some(args) = &paths.args {
        if args.len() == level + 1 && args[..level] == *prefix {
            let keys = choice(
                argument_keys(&args[level])
                    .into_iter()
                    .map(|k| lit(json_key(&k))),
            );
            let value = choice([cap(ARGS_STRING, json_string()), json_arguments()]);
            alts.push(seq([keys, settle(), ws(), lit(":"), ws(), value]));
        }
    }
    if let Some(id) = &paths.id {
        if id.len() == level + 1 && id[..level] == *prefix {
            alts.push(seq([
                lit(json_key(&id[level])),
                settle(),
                ws(),
                lit(":"),
                ws(),
                cap(ID, json()),
            ]));
        }
    }
    let own_key = lit(json_key(&path[level]));
    let container = || class(ByteSet::of(b"{["));
    let scalar = || seq([ws(), lit(":"), ws(), not(container()), json()]);
    alts.push(seq([literals(OPENAI_CALL_FIELDS), scalar()]));
    alts.push(seq([
        not(own_key),
        cap(EXTRA, seq([json_string(), scalar()])),
    ]));
    choice(alts)
}

/// Members of OpenAI's tool-call object that say nothing of the call
/// (its kind and position), as JSON keys.
const OPENAI_CALL_FIELDS: [&str; 2] = ["\"type\"", "\"index\""];

/// The keys arguments are read under: the template's, and for the two
/// common ones (`arguments`, OpenAI's; `parameters`, Llama 3's and
/// Cohere's) the other too, as models trained on one format write the
/// other's key (vLLM's Llama parser takes both for the same reason).
fn argument_keys(key: &str) -> Vec<String> {
    match key {
        "arguments" => vec![key.to_owned(), "parameters".to_owned()],
        "parameters" => vec![key.to_owned(), "arguments".to_owned()],
        _ => vec![key.to_owned()],
    }
}

fn json_key(key: &str) -> String {
    serde_json::Value::String(key.to_string()).to_string()
}

/// A function name between markers: up to the end marker's first core, on
/// one line; a bare identifier when the end marker is blank.
fn tagged_name(end: &Marker, more_stops: &[String]) -> Expr {
    match end.first_core() {
        Some(core) => {
            let mut stops = vec![core.to_string(), "\n".to_string()];
            stops.extend(more_stops.iter().cloned());
            seq([not(class(space_set())), until(stops)])
        }
        None => identifier(),
    }
}

fn identifier() -> Expr {
    plus(class(name_chars()))
}

fn space_set() -> ByteSet {
    ByteSet::of(b" \t\r\n")
}

/// Matches (without consuming) one of `names` where a function name starts:
/// as a JSON string when `quoted`, else as a word not followed by another
/// name character. Longest names first, so a name that is a prefix of
/// another does not hide it. With no names (no tools, or `unknown_tool:
/// call`): any name that starts as one does ([`name_start`]). With names,
/// a call of a function the request does not have fails
/// before it commits, and its text stays content, verbatim: a server could
/// not dispatch it.
fn known_name(names: &[String], quoted: bool) -> Expr {
    if names.is_empty() {
        // Any name, but a name: it starts with a letter, a digit, `_` or a
        // non-ASCII character, never with punctuation (`[`, `{`).
        let start = class(name_start());
        return and(match quoted {
            true => seq([lit("\""), start]),
            false => start,
        });
    }
    and(known_name_alternatives(names, quoted))
}

/// The bytes a function name may start with.
fn name_start() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::range(b'0', b'9'))
        .union(ByteSet::of(b"_"))
        .union(ByteSet::range(0x80, 0xFF))
}

/// The names in `names` that hold whitespace, as literals, longest first:
/// a name slot stops at whitespace (it ends most names), but a request may
/// declare `get current temperature`, and its model writes it so.
fn spaced_names(names: &[String]) -> Expr {
    let mut spaced: Vec<&String> = names
        .iter()
        .filter(|n| n.contains(char::is_whitespace))
        .collect();
    spaced.sort_by_key(|n| std::cmp::Reverse(n.len()));
    match spaced.is_empty() {
        true => chat_autoparser_peg::fail(),
        false => choice(spaced.into_iter().map(lit)),
    }
}

/// One of `names` where a name starts (see [`known_name`]).
fn known_name_alternatives(names: &[String], quoted: bool) -> Expr {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_by_key(|n| std::cmp::Reverse(n.len()));
    // Also in OpenAI's namespace (`functions.get_weather`): the decoder
    // reads that as the request's function.
    let word = |n: &String| {
        let (open, rest) = match quoted {
            true => {
                let json = serde_json::to_string(n).unwrap_or_default();
                (lit("\""), lit(&json[1..]))
            }
            false => (empty(), seq([lit(n), not(class(name_chars()))])),
        };
        seq([open, opt(lit(NAMESPACE)), rest])
    };
    choice(sorted.into_iter().map(word))
}

/// OpenAI's namespace of function names, which models write before a
/// name where their template writes none.
pub const NAMESPACE: &str = "functions.";

/// Characters of a function name (or a keyword argument's): ASCII word
/// characters, `-` and `.`, and every non-ASCII character (the bytes of its
/// UTF-8 form), since a request may declare `获取天气` and a Python
/// identifier may be `城市`.
fn name_chars() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::range(b'0', b'9'))
        .union(ByteSet::of(b"_-."))
        .union(ByteSet::range(0x80, 0xFF))
}

/// `prefix NAME separator N`, all of it the id (see `IdSlot::Counted`).
fn counted_name(prefix: Expr, separator: &str, stops: &[String]) -> Expr {
    let digits = plus(class(ByteSet::range(b'0', b'9')));
    let name = cap(NAME, tagged_name(&Marker::new(separator), stops));
    // The counter is left out too (`functions.get_weather`): the id is
    // what was written.
    cap(ID, seq([prefix, name, opt(seq([lit(separator), digits]))]))
}

/// A JSON arguments object, streamed as written; or one a model wrote as
/// a Python dict (its first key single-quoted), converted when whole. The
/// JSON reading comes last so that its text streams.
fn json_arguments() -> Expr {
    let python_dict = seq([lit("{"), ws(), lit("'")]);
    choice([
        seq([and(python_dict), cap(ARGS_PYTHON, python())]),
        cap(ARGS, json()),
    ])
}

/// A name's prefix that is a namespace (`functions.`): a word and a dot.
fn is_namespace(prefix: &str) -> bool {
    let word = prefix.trim().strip_suffix('.').unwrap_or_default();
    !word.is_empty() && word.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The marker starts with a special token (`<|tool_call_argument_begin|>`).
fn starts_with_token(marker: &str) -> bool {
    Marker::new(marker)
        .first_core()
        .is_some_and(|c| crate::analysis::markers::marker_at(c, 0).is_some())
}

/// An id between markers.
fn tagged_id(prefix: &str, suffix: &str) -> Expr {
    let end = Marker::new(suffix);
    let text = match end.first_core() {
        Some(core) => until([core, "\n"]),
        None => plus(class(space_set().complement())),
    };
    seq([Marker::new(prefix).expr(), cap(ID, text), end.expr()])
}

/// `name=value, ...)` of a Python call (the name's suffix `(` is in the head).
/// The comma between two arguments may be missing (`city="Paris"days=3`):
/// a template whose `first` flag is loop-scoped renders none, and the next
/// `name=` cannot be part of the value before it.
fn python_arguments() -> Expr {
    let arg = cap(
        ARG,
        seq([
            cap(ARG_KEY, identifier()),
            ws(),
            lit("="),
            commit(),
            ws(),
            cap(ARG_PYTHON, python_value()),
        ]),
    );
    seq([
        ws(),
        opt(seq([
            arg.clone(),
            star(seq([ws(), opt(lit(",")), ws(), arg])),
            ws(),
            opt(lit(",")),
        ])),
        ws(),
        lit(")"),
    ])
}

/// A Python literal, or a bare word. A value that cannot start a bare word
/// (a quote, a bracket, a digit) is a literal, committed to at once: trying
/// a bare word after it would make the engine keep all of a long value.
fn python_value() -> Expr {
    let word_start = ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::of(b"_"));
    choice([
        seq([not(class(word_start)), cut(), python()]),
        python(),
        bare_word_value(),
    ])
}

/// A value written without quotes (`city=Paris`), as templates that print
/// values with `{{ v }}` render strings: it starts with a letter (numbers,
/// strings and containers are Python literals, tried first) and runs to the
/// next `,` or `)`, over line ends (such a template prints a multi-line
/// string as it is), less the whitespace before that end. `to_json`
/// rejects it, so it decodes as a string.
fn bare_word_value() -> Expr {
    let letter = ByteSet::range(b'a', b'z').union(ByteSet::range(b'A', b'Z'));
    let space = ByteSet::of(b" \t\r\n");
    let text = class(ByteSet::of(b",)").union(space).complement());
    seq([
        class(letter.union(ByteSet::of(b"_"))),
        star(text.clone()),
        star(seq([plus(class(space)), plus(text)])),
    ])
}

/// Marker-wrapped arguments, then the arguments' end marker.
fn tagged_arguments(t: &TaggedArguments, call_end: &str) -> Expr {
    // A bare (typed) value ends at the next separator or closing marker.
    let mut bare_stops: Vec<String> = [&t.separator, &t.end, &call_end.to_string()]
        .iter()
        .filter_map(|m| Marker::new(m).first_core().map(str::to_string))
        .collect();
    if bare_stops.is_empty() {
        bare_stops = vec![",".into(), "}".into()];
    }
    let end = Marker::new(&t.end);
    // Text where the arguments or the call end is no argument (`</invoke>`
    // after `<`; `}<end_function_call>` of a call with none).
    let not_end = |m: &Marker| match m.is_blank() {
        true => empty(),
        false => not(m.expr()),
    };
    let arg = seq([
        not_end(&end),
        not_end(&Marker::new(call_end)),
        tagged_argument(t, &bare_stops, &enclosing_closers(t, call_end)),
    ]);
    let sep = Marker::new(&t.separator);
    let more = if sep.is_blank() {
        star(seq([ws(), arg.clone()]))
    } else {
        star(seq([sep.expr(), arg.clone()]))
    };
    seq([ws(), opt(seq([arg, more])), ws(), end.expr()])
}

/// The closers around a tagged value that a value left unclosed ends at
/// (`NYC\n</function>` with no `</parameter>`: the arguments' and the
/// call's end markers), so an unclosed value never swallows them: those
/// with a distinctive first core (a bracketed token) other than the
/// value's own closer's, in formats whose value closer names no argument.
fn enclosing_closers(t: &TaggedArguments, call_end: &str) -> Vec<Marker> {
    // A closer that names its argument (`</city>`) is read by nesting
    // (`value_close`); its values keep their rules.
    if t.named_close.is_some() {
        return Vec::new();
    }
    let own = Marker::new(&t.value_suffix)
        .first_core()
        .map(str::to_string);
    let mut out: Vec<Marker> = Vec::new();
    for m in [t.end.as_str(), call_end].map(Marker::new) {
        let distinct = m.first_core().is_some_and(|core| {
            core.len() >= 3
                && core.starts_with(['<', '['])
                && own.as_deref().is_some_and(|own| own != core)
        });
        if distinct && !out.iter().any(|o| o.first_core() == m.first_core()) {
            out.push(m);
        }
    }
    out
}

/// One `name-prefix KEY name-suffix value` pair; `enclosing`: the closers
/// an unclosed value ends at (see [`enclosing_closers`]).
fn tagged_argument(t: &TaggedArguments, bare_stops: &[String], enclosing: &[Marker]) -> Expr {
    let name_suffix = Marker::new(&t.name_suffix);
    let key = match name_suffix.first_core() {
        Some(core) => until([core, "\n"]),
        None => identifier(),
    };
    let value_end = Marker::new(&t.value_suffix);
    // A value whose closer never came ends where its arguments or its
    // call close (those stay for the rules after the value).
    let close = match enclosing.is_empty() {
        true => value_close(t, &value_end),
        false => choice([
            value_close(t, &value_end),
            and(choice(enclosing.iter().map(|m| seq([ws(), m.expr()])))),
        ]),
    };
    let raw_value = |tag| {
        let mut stops = value_end.delimiters();
        if !stops.is_empty() {
            // A newline before these is the line the closers sit on, not
            // the value's (`NYC\n</function>`): the template writes the
            // value's own closer there.
            for core in enclosing.iter().filter_map(Marker::first_core) {
                stops.push(format!("\n{core}"));
                stops.push(core.to_string());
            }
        }
        let text = if stops.is_empty() {
            until([",", "}"])
        } else {
            until(stops)
        };
        cap(tag, text)
    };
    let string_value = match &t.escaped_value {
        Some((open, close)) => choice([
            seq([
                lit(open),
                cut(),
                cap(ARG_STRING, until([close.as_str()])),
                lit(close),
            ]),
            raw_value(if t.raw_strings { ARG_STRING } else { ARG_JSON }),
        ]),
        None => raw_value(if t.raw_strings { ARG_STRING } else { ARG_JSON }),
    };
    let string_value = match &t.elements {
        Some(e) => choice([elements_value(e, &close), string_value]),
        None => string_value,
    };
    let value_start = Marker::new(&t.value_prefix);
    // Whitespace the template never writes between the key's marker and
    // the value's (`</arg_key>\n<arg_value>`, as GLM models write) is
    // scaffolding; with no value marker it would be the value's own.
    let value_start_expr = match value_start.is_blank() {
        true => value_start.expr_exact_tail(),
        false => seq([ws(), value_start.expr_exact_tail()]),
    };
    let value = match &t.typed_value_prefix {
        Some(typed) => {
            let typed_marker = Marker::new(typed);
            let typed_value = if typed_marker.is_blank() {
                bare_value(t, bare_stops, &value_end)
            } else {
                cap(ARG_JSON, until(value_end.delimiters()))
            };
            let settle = if value_start.is_blank() {
                empty()
            } else {
                cut()
            };
            choice([
                seq([value_start_expr, settle, string_value, close.clone()]),
                seq([typed_prefix(t, typed), typed_value, opt(close)]),
            ])
        }
        None => seq([value_start_expr, string_value, close]),
    };
    cap(
        ARG,
        seq([
            Marker::new(&t.name_prefix).expr(),
            cap(ARG_KEY, seq([not(class(space_set())), key])),
            name_suffix.expr_exact_tail(),
            commit(),
            value,
        ]),
    )
}

/// The prefix of a non-string value; its type word, when it has one
/// ([`TaggedArguments::typed_word`]), may name any JSON Schema type
/// (`type="object"`). (The string prefix is tried first.)
///
/// When the two words the template writes are `true` and `false`, the
/// attribute is a flag (`string="false"`), not a type's name. Another word
/// (`string="maybe"`, `type="strnig"`) is text the model wrote, so the
/// value is read as a typed one and the whole attribute is kept as
/// content, with a diagnostic (`EXTRA`), never dropped.
fn typed_prefix(t: &TaggedArguments, typed: &str) -> Expr {
    let Some((before, after)) = t.typed_word() else {
        return Marker::new(typed).expr();
    };
    let word = |prefix: &str| {
        prefix
            .get(before.len()..prefix.len().saturating_sub(after.len()))
            .unwrap_or_default()
            .to_string()
    };
    let mut words = [word(typed), word(&t.value_prefix)];
    words.sort();
    let with_word = |word: Expr| seq([Marker::new(before).expr(), word, Marker::new(after).expr()]);
    let known = match words == ["false", "true"] {
        true => Marker::new(typed).expr(),
        false => with_word(Vocabulary::type_word(&words)),
    };
    choice([known, cap(EXTRA, with_word(identifier()))])
}

/// A value with no marker before it: a nested object or list in the
/// arguments' notation, when one is complete and a stop follows it; else
/// text up to the next separator or closing marker.
///
/// The value's closing marker right before a stop (`n:3<|q|>}`,
/// `c:{a:1}<|q|>,`) closes nothing the model opened: it ends the value, as
/// the grammars allow it there (the caller reads it as the optional close).
fn bare_value(t: &TaggedArguments, bare_stops: &[String], close: &Marker) -> Expr {
    let stop = and(seq([ws(), choice(bare_stops.iter().map(lit))]));
    let closed_text = match close.first_core() {
        Some(core) => {
            let stops = bare_stops.iter().map(String::as_str).chain([core]);
            seq([
                cap(ARG_JSON, until(stops)),
                and(seq([close.expr(), stop.clone()])),
            ])
        }
        None => fail(),
    };
    let text = choice([closed_text, cap(ARG_JSON, until(bare_stops))]);
    let Some(notation) = Notation::of(t) else {
        return text;
    };
    let stop = and(seq([opt(close.expr()), stop]));
    choice([
        seq([
            cap(ARG_NOTATION, rule(&notation_rule_name(&notation))),
            stop,
        ]),
        text,
    ])
}

/// The marker after a value: `value_suffix`, and when the closing marker
/// names the argument (`</first>`), a name and the rest of that marker. The
/// grammar does not check the name against the opening one (a model that
/// mismatches them still meant to close the value); the decoder keeps a
/// name that differs as content (`CLOSE_NAME`).
fn value_close(t: &TaggedArguments, value_end: &Marker) -> Expr {
    let Some(after) = &t.named_close else {
        return value_end.expr_exact_head();
    };
    let after = Marker::new(after);
    // The name never holds the character its closing marker starts with:
    // a marker corrupted after it (`</city>]<]minimaXx[>[<days>`) must not
    // make the name run on over the next argument.
    let name = match after.first_core() {
        Some(core) => {
            let first = core.chars().next().map_or(core, |c| &core[..c.len_utf8()]);
            until([core, "\n", first])
        }
        None => identifier(),
    };
    seq([
        value_end.expr_exact_head(),
        not(class(space_set())),
        cap(CLOSE_NAME, name),
        after.expr(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_stop_at_parentheses() {
        let p = chat_autoparser_peg::Grammar::new(seq([cap(NAME, identifier()), lit("(")]))
            .compile()
            .unwrap();
        let m = p.parse(b"get_weather(").unwrap();
        assert_eq!(m.captures[0].span(), 0..11);
    }
}
