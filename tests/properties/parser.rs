//! Properties of the output parser over the shipped templates
//! (`templates/{hermes-think, qwen-coder-xml, mistral-tool-calls,
//! glm-arg-pairs, python-calls, tag-json-args, bare-json, channel-harmony}`).
//!
//! Each template is analysed once; its parser is built with two tools and
//! the rendered generation prompt. Realistic outputs are rendered with the
//! template itself: a conversation with an assistant turn (content,
//! reasoning, calls, arguments with quotes, tags, newlines and non-ASCII),
//! less the same conversation rendered without the turn with
//! `add_generation_prompt`, less the end-of-turn text.
//!
//! Properties:
//!
//! (a) never panics: arbitrary bytes (as lossy UTF-8) and arbitrary prefixes
//!     of realistic outputs, through `parse`, `parse_partial`, `parse_report`
//!     and `stream` (random chunking);
//! (b) streaming equals batch: for any chunking on character boundaries,
//!     push + finish gives `stream.message() == parser.parse(output)`, and
//!     the deltas added up by `MessageBuilder` give the same message, also
//!     through `push_into` with one reused buffer, and the stream's
//!     diagnostics are the batch parse's; under both policy presets
//!     (`Policy::lossless`, the default, and `Policy::compatible`), as are
//!     (a), (c) and (e); and with calls read inside reasoning
//!     (`calls_in_reasoning`: `call` over `lossless`, `both` over
//!     `compatible`), as are (a), (c) and, under `call`, (d);
//! (c) deltas never retract: after each push, content, reasoning and each
//!     call's arguments extend what they were, the number of calls does not
//!     shrink, and a call's name and id never change once set;
//! (d) nothing lost:
//!     - content-only text (no marker character at all) comes back as the
//!       content, every non-whitespace character in order;
//!     - outputs built from random pieces (real markers of the template,
//!       strict prefixes of markers, random text, well-formed rendered call
//!       blocks): every non-whitespace character of the random-text pieces
//!       is found in content + reasoning + names + arguments, as a multiset,
//!       after a complete parse (`parse_partial` may hold back text that
//!       could still become a marker or a call, so it is only checked by (a)
//!       and (c)).
//! (e) long outputs (random pieces repeated past 200 KB, beyond the window
//!     the engine keeps, `peg::Stream::release`): streaming in chunks of up
//!     to 4 KB equals batch (fed in its own pieces), and (d) holds.
//!
//! Why the (d) check is sound: the random text is drawn from an alphabet
//! from which every character of every marker of the template (analysis
//! markers, preserved and spare tokens) is removed, as are the JSON/Python
//! structure characters `{}[]()"'=:,` and `;` (which separates and ends bare
//! JSON calls, `{...}; {...};`, as `,` does). Random text can therefore neither
//! complete a marker begun by a neighbouring piece nor form a call on its
//! own, so a correct parser must keep every one of its characters somewhere
//! in the message: as content or reasoning, or (when it ends up inside a
//! call's value) in arguments, where JSON escaping keeps the character itself
//! (`"` → `\"`, `\` → `\\`; newlines are whitespace and are not checked).
//! Random text inside a section header (after its opening marker and
//! before its closing one, `analysis.turn.headers`: `<|channel|>` LABEL
//! `<|message|>`) is that header's label. A label is scaffolding only when
//! every word of it is one the template writes in its markers, or a number
//! (a counter), and punctuation is free (`parser/vocabulary.rs`): since the
//! alphabet has no character of any marker, random text with a letter in
//! it is never such a label, and must be kept (the header is content);
//! random text of digits and punctuation only is not required.
//! Markers, partial markers and call blocks are markup the parser may
//! legitimately consume or normalise (Python `'x'` → `"x"`, `True` →
//! `true`), so their characters are not required; the message only needs
//! to contain at least as many of each random-text character (a multiset
//! inclusion, because content, reasoning and arguments are separate fields).

use chat_autoparser::Options;
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use chat_autoparser::analysis::{ArgumentsSlot, IdSlot, NameSlot, ReasoningMode};
use chat_autoparser::message::MessageBuilder;
use chat_autoparser::parser::{CallsInReasoning, Diagnostic, DiagnosticKind, OutputStream};
use chat_autoparser::prompt::template_messages;
use chat_autoparser::{
    Analysis, AssistantMessage, ChatTemplate, OutputParser, ParserConfig, Policy, RenderRequest,
    TemplateConfig,
};
use proptest::prelude::*;
use serde_json::{json, Value};

const TEMPLATES: [&str; 8] = [
    "hermes-think",
    "qwen-coder-xml",
    "mistral-tool-calls",
    "glm-arg-pairs",
    "python-calls",
    "tag-json-args",
    "bare-json",
    "channel-harmony",
];

/// Everything a property needs about one template.
struct Fixture {
    name: &'static str,
    /// Built with the lossless policy (the default).
    parser: OutputParser,
    /// The same, with the compatible policy: (a), (b), (c) and (e) hold
    /// under it too; (d) is lossless's alone.
    compatible: OutputParser,
    /// Calls read inside reasoning: lossless with `calls_in_reasoning:
    /// call` ((a) to (d) hold), compatible with `both` ((a) to (c)).
    in_reasoning: [OutputParser; 2],
    /// Rendered outputs (generation prompt and end of turn cut off).
    outputs: Vec<String>,
    /// Rendered call-only outputs: well-formed call blocks.
    calls: Vec<String>,
    /// The template's markers (non-empty, deduplicated).
    markers: Vec<String>,
    /// Characters random text may use.
    alphabet: Vec<char>,
    /// Section headers (opening, closing): text between them is a label.
    headers: Vec<(String, String)>,
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "save_note",
            "parameters": {"type": "object", "properties": {
                "text": {"type": "string"}, "meta": {"type": "object"},
                "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["text"]}}}),
    ]
}

fn fixtures() -> &'static [Fixture] {
    static CELL: OnceLock<Vec<Fixture>> = OnceLock::new();
    CELL.get_or_init(|| TEMPLATES.iter().map(|name| fixture(name)).collect())
}

fn fixture(name: &'static str) -> Fixture {
    let path = format!("{}/templates/{name}.jinja", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).expect("shipped template");
    let tmpl = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
    let analysis = tmpl.analyze().expect("analyses");
    let user = json!({"role": "user", "content": "Weather in Paris?"});
    let request = |messages: Vec<Value>, gen: bool| {
        RenderRequest::default()
            .with_messages(template_messages(&analysis, &messages))
            .with_tools(Some(tools()))
            .with_add_generation_prompt(gen)
            .with_enable_thinking(None)
            .with_extra(Default::default())
    };
    let prompt = tmpl
        .render(&request(vec![user.clone()], true))
        .expect("prompt renders");
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools())
            .with_prompt(Some(prompt.clone())),
    );
    let parser = analysis.parser(&config).expect("parser builds");
    let compatible = analysis
        .parser(&config.clone().with_policy(Policy::compatible()))
        .expect("parser builds");
    let in_reasoning = [
        Policy::lossless().with_calls_in_reasoning(CallsInReasoning::Call),
        Policy::compatible().with_calls_in_reasoning(CallsInReasoning::Both),
    ]
    .map(|p| {
        let config = config.clone().with_policy(p);
        analysis.parser(&config).expect("parser builds")
    });

    let call = |i: usize, name: &str, args: Value| {
        json!({"id": chat_autoparser::check::turn::call_id(&analysis, name, i), "type": "function",
               "function": {"name": name, "arguments": args.to_string()}})
    };
    let weather =
        |i: usize, city: &str| call(i, "get_weather", json!({"city": city, "days": i + 1}));
    let tricky = call(
        0,
        "save_note",
        json!({"text": "He said \"hi\" <b>x</b> & 'y'\nline two — café 東京 🌧",
               "meta": {"nested": {"a": [1, 2.5, {"b": null}], "ok": true}}, "tags": ["x", "<y>"]}),
    );
    let long_text =
        "Line one of a long answer.\nSecond line, with <angle> & ampersand — ünïcödé 東京.\n"
            .repeat(3);
    let field = analysis.reasoning.field.clone();
    let reasoning = analysis.reasoning.mode != ReasoningMode::None;
    let mut turns: Vec<(bool, Value)> = vec![
        (false, json!({"role": "assistant", "content": long_text})),
        (
            true,
            json!({"role": "assistant", "content": null, "tool_calls": [weather(0, "Paris")]}),
        ),
        (
            true,
            json!({"role": "assistant", "content": null, "tool_calls": [tricky]}),
        ),
        (
            false,
            json!({"role": "assistant", "content": "Checking.", "tool_calls": [weather(0, "Paris")]}),
        ),
        (
            true,
            json!({"role": "assistant", "content": null,
                       "tool_calls": [weather(0, "Paris"), weather(1, "Zürich")]}),
        ),
    ];
    if reasoning {
        let mut t = json!({"role": "assistant", "content": "It is sunny."});
        t[&field] = json!("Let me think: <b> & \"quotes\"\nsecond line.");
        turns.push((false, t));
        let mut t =
            json!({"role": "assistant", "content": null, "tool_calls": [weather(0, "Oslo")]});
        t[&field] = json!("I need the forecast.");
        turns.push((false, t));
    }
    let (mut outputs, mut calls) = (Vec::new(), Vec::new());
    for (call_only, turn) in turns {
        let Ok(full) = tmpl.render(&request(vec![user.clone(), turn], false)) else {
            continue;
        };
        let Some(rest) = full.strip_prefix(prompt.as_str()) else {
            continue;
        };
        let out = strip_end(rest, &analysis).to_string();
        if call_only {
            calls.push(out.clone());
        }
        outputs.push(out);
    }
    assert!(!outputs.is_empty(), "{name}: no realistic output renders");
    let markers = markers(&analysis);
    let used: BTreeSet<char> = markers.iter().flat_map(|m| m.chars()).collect();
    let alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t.;!?+*#@%&<>/|_-~^$\\éü東🌧—"
        .chars()
        .filter(|c| !used.contains(c) && !"{}[]()\"'=:,;".contains(*c))
        .collect();
    let headers = analysis
        .turn
        .headers
        .iter()
        .filter(|h| !h.open.trim().is_empty())
        .map(|h| (h.open.clone(), h.close.clone()))
        .collect();
    Fixture {
        name,
        parser,
        compatible,
        in_reasoning,
        outputs,
        calls,
        markers,
        alphabet,
        headers,
    }
}

/// Every marker the analysis knows, raw and trimmed, plus the preserved tokens.
fn markers(a: &Analysis) -> Vec<String> {
    let mut m: Vec<String> = vec![
        a.reasoning.start.clone(),
        a.reasoning.end.clone(),
        a.content.start.clone(),
        a.content.end.clone(),
        a.turn.end_of_turn.clone(),
        a.turn.stop_marker.clone(),
    ];
    m.extend(a.preserved_tokens.iter().cloned());
    // Framing around bare JSON calls (`analysis::spare`).
    m.extend(a.spare_tokens.iter().cloned());
    if let Some(t) = &a.tools {
        m.extend(
            [
                &t.section_start,
                &t.section_end,
                &t.call_start,
                &t.call_end,
                &t.call_separator,
            ]
            .map(|s| s.clone()),
        );
        if let NameSlot::Tagged { prefix, suffix } = &t.name {
            m.extend([prefix.clone(), suffix.clone()]);
        }
        m.extend(t.name_echo.clone());
        if let ArgumentsSlot::Tagged(g) = &t.arguments {
            m.extend(
                [
                    &g.name_prefix,
                    &g.name_suffix,
                    &g.value_prefix,
                    &g.value_suffix,
                    &g.separator,
                    &g.end,
                ]
                .map(|s| s.clone()),
            );
            m.extend(g.typed_value_prefix.clone());
            m.extend(g.named_close.clone());
            if let Some((open, close)) = &g.escaped_value {
                m.extend([open.clone(), close.clone()]);
            }
        }
        if let Some(IdSlot::Tagged { prefix, suffix, .. }) = &t.id {
            m.extend([prefix.clone(), suffix.clone()]);
        }
    }
    let mut out: Vec<String> = m
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    out.extend(m.into_iter().filter(|s| !s.trim().is_empty()));
    out.sort();
    out.dedup();
    out
}

fn strip_end<'a>(rest: &'a str, a: &Analysis) -> &'a str {
    let (eot, stop) = (a.turn.end_of_turn.as_str(), a.turn.stop_marker.as_str());
    if !eot.is_empty() {
        if let Some(s) = rest
            .strip_suffix(eot)
            .or_else(|| rest.trim_end().strip_suffix(eot.trim_end()))
        {
            return s;
        }
    }
    if !stop.is_empty() {
        if let Some(s) = rest.trim_end().strip_suffix(stop) {
            return s;
        }
    }
    rest
}

/// Splits `text` into pieces of the given sizes (cycled), moving each cut
/// forward to a character boundary.
fn split<'a>(text: &'a str, sizes: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut k = 0;
    while start < text.len() {
        let size = sizes
            .get(k % sizes.len().max(1))
            .copied()
            .unwrap_or(4)
            .max(1);
        k += 1;
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// Streams `output` in `chunks`; checks (c) on what the deltas add up to
/// after every push, and that the message is that less its withdrawn calls,
/// and returns the final message and the deltas added up, less withdrawn
/// calls.
fn stream_checked(
    p: &OutputParser,
    chunks: &[&str],
    diagnostics: &[Diagnostic],
) -> Result<(AssistantMessage, AssistantMessage), TestCaseError> {
    let mut s = p.stream();
    let mut builder = MessageBuilder::default();
    let mut prev = builder.message();
    let mut added = prev.clone();
    let end = chunks.concat().len();
    for chunk in chunks.iter().map(Some).chain([None]) {
        let deltas = match chunk {
            Some(chunk) => s.push(chunk),
            None => s.finish(),
        };
        for d in deltas {
            builder.apply(&d);
        }
        let now = builder.message();
        extends(&prev, &now)
            .map_err(|why| TestCaseError::fail(format!("after chunk {chunk:?}: {why}")))?;
        let ended = chunk.is_none().then_some(end);
        added = less_withdrawn(&builder, &s, ended)
            .map_err(|why| TestCaseError::fail(format!("after chunk {chunk:?}: {why}")))?;
        prop_assert_eq!(&added, &s.message(), "after chunk {:?}", chunk);
        prev = now;
    }
    prop_assert_eq!(
        s.diagnostics(),
        diagnostics,
        "diagnostics differ from batch"
    );
    Ok((s.message(), added))
}

/// `deltas` (what the deltas add up to) with the calls the stream
/// withdrew left out; each of them has arguments that are not JSON, but
/// the call the output ends in, unclosed, once the stream finished
/// (`ended`: the output's length) under `unclosed_call_at_end: drop`
/// (`compatible`'s), which leaves it out up to the output's end.
fn less_withdrawn(
    deltas: &MessageBuilder,
    stream: &OutputStream,
    ended: Option<usize>,
) -> Result<AssistantMessage, String> {
    let mut less = deltas.clone();
    let sent = deltas.message();
    let cut_at_end = |index: usize| {
        let dropped = |d: &Diagnostic| d.kind == DiagnosticKind::Dropped;
        let at_end = stream
            .diagnostics()
            .iter()
            .any(|d| dropped(d) && d.end == ended);
        at_end && index + 1 == sent.tool_calls.len()
    };
    for &index in stream.withdrawn_calls() {
        let call = &sent.tool_calls[index];
        let json = serde_json::from_str::<Value>(&call.function.arguments).is_ok();
        if json && !cut_at_end(index) {
            return Err(format!(
                "call {index} withdrawn with JSON arguments: {call:?}; {:?}, ended {ended:?}",
                stream.diagnostics()
            ));
        }
        less.withdraw(index);
    }
    Ok(less.into_message())
}

/// (c): `now` only adds to `prev`.
fn extends(prev: &AssistantMessage, now: &AssistantMessage) -> Result<(), String> {
    if !now.content_text().starts_with(prev.content_text()) {
        return Err(format!(
            "content retracted: {:?} -> {:?}",
            prev.content_text(),
            now.content_text()
        ));
    }
    if !now.reasoning_content.starts_with(&prev.reasoning_content) {
        return Err(format!(
            "reasoning retracted: {:?} -> {:?}",
            prev.reasoning_content, now.reasoning_content
        ));
    }
    if now.tool_calls.len() < prev.tool_calls.len() {
        return Err(format!(
            "calls dropped: {} -> {}",
            prev.tool_calls.len(),
            now.tool_calls.len()
        ));
    }
    for (i, (a, b)) in prev.tool_calls.iter().zip(&now.tool_calls).enumerate() {
        if !a.function.name.is_empty() && a.function.name != b.function.name {
            return Err(format!(
                "call {i} renamed: {:?} -> {:?}",
                a.function.name, b.function.name
            ));
        }
        if a.id.is_some() && a.id != b.id {
            return Err(format!("call {i} id changed: {:?} -> {:?}", a.id, b.id));
        }
        if !b.function.arguments.starts_with(&a.function.arguments) {
            return Err(format!(
                "call {i} arguments retracted: {:?} -> {:?}",
                a.function.arguments, b.function.arguments
            ));
        }
    }
    Ok(())
}

/// (b) and (c) for one output and chunking, under both policy presets,
/// and with calls read inside reasoning.
fn check_stream(f: &Fixture, output: &str, sizes: &[usize]) -> Result<(), TestCaseError> {
    check_stream_with(f, &f.parser, output, sizes)?;
    check_stream_with(f, &f.compatible, output, sizes)?;
    for parser in &f.in_reasoning {
        check_stream_with(f, parser, output, sizes)?;
    }
    Ok(())
}

/// (b) and (c) for one parser (the fixture's, under one policy); the
/// diagnostics are the batch parse's too.
fn check_stream_with(
    f: &Fixture,
    parser: &OutputParser,
    output: &str,
    sizes: &[usize],
) -> Result<(), TestCaseError> {
    let report = parser.parse_report(output, false);
    let batch = report.message;
    let chunks = split(output, sizes);
    let (streamed, added) = stream_checked(parser, &chunks, &report.diagnostics)?;
    prop_assert_eq!(
        &streamed,
        &batch,
        "[{}] streaming differs from batch for {:?} in {:?}",
        f.name,
        output,
        chunks
    );
    prop_assert_eq!(
        &added,
        &batch,
        "[{}] the deltas add up to another message for {:?}",
        f.name,
        output
    );
    let reused = stream_reusing(parser, &chunks);
    prop_assert_eq!(
        &reused,
        &batch,
        "[{}] push_into's deltas add up to another message for {:?}",
        f.name,
        output
    );
    Ok(())
}

/// Streams `chunks` with `push_into` and one reused buffer (a server's
/// loop); returns the message the deltas add up to.
fn stream_reusing(p: &OutputParser, chunks: &[&str]) -> AssistantMessage {
    let mut s = p.stream();
    let mut builder = MessageBuilder::default();
    let mut deltas = Vec::new();
    for chunk in chunks {
        s.push_into(chunk, &mut deltas);
        deltas.iter().for_each(|d| builder.apply(d));
    }
    s.finish_into(&mut deltas);
    deltas.iter().for_each(|d| builder.apply(d));
    let ended = Some(chunks.concat().len());
    less_withdrawn(&builder, &s, ended).unwrap_or_else(|why| panic!("{why}"))
}

/// Non-whitespace characters of `s`, counted.
fn counts(s: &str) -> HashMap<char, usize> {
    let mut m = HashMap::new();
    for c in s.chars().filter(|c| !c.is_whitespace()) {
        *m.entry(c).or_insert(0) += 1;
    }
    m
}

/// Random text over the fixture's alphabet: `picks` index into it.
fn text(f: &Fixture, picks: &[usize]) -> String {
    picks
        .iter()
        .map(|&i| f.alphabet[i % f.alphabet.len()])
        .collect()
}

/// One piece of a generated output.
#[derive(Debug, Clone)]
enum Piece {
    Marker(usize),
    Partial(usize, usize),
    Text(Vec<usize>),
    Call(usize),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        2 => any::<usize>().prop_map(Piece::Marker),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(m, n)| Piece::Partial(m, n)),
        3 => prop::collection::vec(any::<usize>(), 0..24).prop_map(Piece::Text),
        2 => any::<usize>().prop_map(Piece::Call),
    ]
}

/// Builds the output; returns it and the random text it holds.
fn assemble(f: &Fixture, pieces: &[Piece]) -> (String, String) {
    let (mut out, mut free) = (String::new(), String::new());
    for p in pieces {
        let label_slot = inside_header(f, &out);
        match p {
            Piece::Marker(i) => {
                let m = &f.markers[i % f.markers.len()];
                out.push_str(m);
            }
            Piece::Partial(i, n) => {
                let m = &f.markers[i % f.markers.len()];
                let cuts: Vec<usize> = (1..m.len()).filter(|&k| m.is_char_boundary(k)).collect();
                if !cuts.is_empty() {
                    out.push_str(&m[..cuts[n % cuts.len()]]);
                }
            }
            Piece::Text(picks) => {
                let t = text(f, picks);
                out.push_str(&t);
                if !label_slot || t.chars().any(char::is_alphabetic) {
                    free.push_str(&t);
                }
            }
            Piece::Call(i) if !f.calls.is_empty() => out.push_str(&f.calls[i % f.calls.len()]),
            Piece::Call(_) => {}
        }
    }
    (out, free)
}

/// The output so far ends inside a header: after an opening with no closing
/// since (a whole marker or a cut one may have left it there).
fn inside_header(f: &Fixture, out: &str) -> bool {
    f.headers
        .iter()
        .any(|(open, close)| match out.rfind(open.trim()) {
            Some(at) => !out[at..].contains(close.trim()),
            None => false,
        })
}

/// 512 cases a property, or `PROPTEST_CASES` when set (a longer search).
fn cases() -> u32 {
    crate::common::turns::case_count("PROPTEST_CASES", 512)
}

/// The length (bytes) of a long output, (e): several times the smallest
/// prefix the engine drops.
const LONG: usize = 200_000;

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..12, 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// (a) Arbitrary bytes never panic.
    #[test]
    fn arbitrary_bytes_never_panic(t in 0..TEMPLATES.len(), bytes in prop::collection::vec(any::<u8>(), 0..200), sizes in sizes()) {
        let f = &fixtures()[t];
        let output = String::from_utf8_lossy(&bytes);
        for parser in [&f.parser, &f.compatible].into_iter().chain(&f.in_reasoning) {
            parser.parse(&output);
            parser.parse_partial(&output);
            parser.parse_report(&output, true);
            let mut s = parser.stream();
            for chunk in split(&output, &sizes) {
                s.push(chunk);
            }
            s.finish();
        }
    }

    /// (a) Prefixes of realistic outputs never panic, and (b)/(c) hold on them.
    #[test]
    fn realistic_prefixes(t in 0..TEMPLATES.len(), which in any::<usize>(), cut in any::<usize>(), sizes in sizes()) {
        let f = &fixtures()[t];
        let output = &f.outputs[which % f.outputs.len()];
        let bounds: Vec<usize> = (0..=output.len()).filter(|&k| output.is_char_boundary(k)).collect();
        let prefix = &output[..bounds[cut % bounds.len()]];
        f.parser.parse_partial(prefix);
        f.parser.parse_report(prefix, false);
        check_stream(f, prefix, &sizes)?;
    }

    /// (b)/(c) Whole realistic outputs, any chunking.
    #[test]
    fn realistic_streaming_equals_batch(t in 0..TEMPLATES.len(), which in any::<usize>(), sizes in sizes()) {
        let f = &fixtures()[t];
        check_stream(f, &f.outputs[which % f.outputs.len()], &sizes)?;
    }

    /// (b)/(c) Outputs built from random pieces, any chunking.
    #[test]
    fn pieces_streaming_equals_batch(t in 0..TEMPLATES.len(), pieces in prop::collection::vec(piece(), 0..10), sizes in sizes()) {
        let f = &fixtures()[t];
        let (output, _) = assemble(f, &pieces);
        check_stream(f, &output, &sizes)?;
    }

    /// (d) Content-only text comes back whole, in order.
    #[test]
    fn content_only_text_is_kept(t in 0..TEMPLATES.len(), picks in prop::collection::vec(any::<usize>(), 0..120)) {
        let f = &fixtures()[t];
        let output = text(f, &picks);
        let msg = f.parser.parse(&output);
        let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        prop_assert_eq!(squash(msg.content_text()), squash(&output), "[{}] {:?} -> {:?}", f.name, output, msg);
        prop_assert!(msg.tool_calls.is_empty() && msg.reasoning_content.is_empty(), "[{}] {:?} -> {:?}", f.name, output, msg);
    }

    /// (d) Random text among markers, partial markers and calls is kept.
    #[test]
    fn random_text_among_markup_is_kept(t in 0..TEMPLATES.len(), pieces in prop::collection::vec(piece(), 0..10)) {
        let f = &fixtures()[t];
        let (output, free) = assemble(f, &pieces);
        for msg in [f.parser.parse(&output), f.in_reasoning[0].parse(&output)] {
            let mut all = format!("{}{}", msg.content_text(), msg.reasoning_content);
            for c in &msg.tool_calls {
                all.push_str(&c.function.name);
                all.push_str(&c.function.arguments);
            }
            let have = counts(&all);
            for (c, n) in counts(&free) {
                let got = have.get(&c).copied().unwrap_or(0);
                prop_assert!(got >= n, "[{}] {:?} appears {} times in the random text but {} in the message\n  output: {:?}\n  message: {:?}",
                    f.name, c, n, got, output, msg);
            }
        }
    }
}

proptest! {
    // A long output costs a few hundred short ones.
    #![proptest_config(ProptestConfig { cases: cases() / 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// (e) Long outputs: streaming equals batch and random text is kept.
    #[test]
    fn long_outputs_stream_in_a_window(t in 0..TEMPLATES.len(), pieces in prop::collection::vec(piece(), 1..10), sizes in prop::collection::vec(1usize..4096, 1..8)) {
        let f = &fixtures()[t];
        let once = assemble(f, &pieces).0.len().max(1);
        let repeated: Vec<Piece> = pieces.iter().cycle().take(pieces.len() * (LONG / once + 1)).cloned().collect();
        let (output, free) = assemble(f, &repeated);
        let compatible = f.compatible.parse(&output);
        let streamed = stream_reusing(&f.compatible, &split(&output, &sizes));
        prop_assert!(streamed == compatible, "[{}] compatible: streaming differs from batch for {:?}", f.name, pieces);
        let batch = f.parser.parse(&output);
        let streamed = stream_reusing(&f.parser, &split(&output, &sizes));
        prop_assert!(streamed == batch, "[{}] streaming differs from batch for {:?}", f.name, pieces);
        let mut all = format!("{}{}", batch.content_text(), batch.reasoning_content);
        for c in &batch.tool_calls {
            all.push_str(&c.function.name);
            all.push_str(&c.function.arguments);
        }
        let have = counts(&all);
        for (c, n) in counts(&free) {
            let got = have.get(&c).copied().unwrap_or(0);
            prop_assert!(got >= n, "[{}] {:?} appears {} times in the random text but {} in the message, for {:?}", f.name, c, n, got, pieces);
        }
    }
}

#[test]
fn fixtures_render() {
    for f in fixtures() {
        println!(
            "{}: {} outputs, {} call blocks, {} markers, alphabet {:?}",
            f.name,
            f.outputs.len(),
            f.calls.len(),
            f.markers.len(),
            f.alphabet.iter().collect::<String>()
        );
        assert!(!f.markers.is_empty(), "{}: no markers", f.name);
        for o in &f.outputs {
            let m = f.parser.parse(o);
            assert!(
                !m.content_text().is_empty() || !m.tool_calls.is_empty(),
                "{}: {o:?} parses to nothing",
                f.name
            );
        }
    }
}
