//! Render → parse round trip (issue 3, "How it is checked").
//!
//! Over every corpus template (`../shared/corpus/llamacpp/*.jinja`, skipped
//! with a message when absent) whose analysis found tool calls, and over the
//! shipped `templates/*.jinja`, each case is an assistant turn:
//!
//! - `content`: content only;
//! - `reasoning+content`: reasoning then content (templates with reasoning);
//! - `call`: one call;
//! - `content+call`: content then one call;
//! - `parallel`: two calls (only when `analysis.tools.parallel`);
//! - `tricky-args`: arguments with quotes, `<tags>`, `&`, newlines,
//!   non-ASCII, nested objects and arrays;
//! - `reasoning+call`: reasoning then a call (templates with reasoning).
//!
//! The turn is rendered with the template after a user message (arguments
//! passed as the template wants them, via `template_messages`; reasoning in
//! `analysis.reasoning.field`, with thinking on: `enable_thinking` and
//! `reasoning_effort: "high"`, the two switches templates read). The prompt
//! is the same conversation without the turn, rendered with
//! `add_generation_prompt`; when the rendered turn starts with it, what
//! follows it, less the end-of-turn text, is the model output. When it does
//! not ("not prefix-renderable": the generation prompt writes what a past
//! turn does not, `<think>` or an empty thought channel), the output starts
//! where the two texts part, backed off to before a marker that point cuts,
//! as llama.cpp's harness cuts (`init_delta` in its `tests/test-chat.cpp`);
//! these cases are counted apart. Some
//! templates write text after every conversation whether or not a
//! generation prompt is asked for (command-r7b opens the next assistant
//! turn, `<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>...`, unconditionally):
//! the end of turn followed by the text the user turn alone also ends with
//! is the template's, not the model's, which stops at its end of turn. It is parsed
//! with `ParserConfig` with the tools and the prompt and compared with the turn:
//! content and reasoning trimmed, names exactly, arguments as parsed JSON.
//!
//! Skipped cases, reported apart from the recovered/total counts:
//! - "not rendered": the template raises on the case;
//! - "dropped": the template does not write a field of the turn (content on
//!   a tool-call turn, reasoning on some turns), so nothing can recover it;
//! - "content as reasoning": the template writes the turn's content inside
//!   its own reasoning block (after a reasoning opener, in the output or at
//!   the end of the prompt, with no closer before it: gpt-oss writes a call
//!   turn's content in its analysis channel, Nemotron-Nano-v2 a last turn's
//!   content after the `<think>` its prompt opens), so no parser can tell it
//!   from reasoning. A case that misses so is parsed again against the
//!   turn with its content as reasoning, and counted apart: read back as
//!   reasoning (and the calls as the calls), or not.
//!
//! Prints a per-template table and every miss; asserts floors at the counts
//! measured when the test was written, so that regressions fail.
//! llama.cpp recovers 346 of 365 such cases over the same corpus.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chat_autoparser::check::turn::content_inside_reasoning;
use chat_autoparser::{Analysis, ChatTemplate, ParserConfig, TemplateConfig};

use crate::common::roundtrip;
use crate::common::turns;
use roundtrip::{cases, compare, crate_dir, render_case, Case};
use turns::jinja_files;

/// Recovered prefix-renderable cases over the corpus must not fall below this.
const MIN_CORPUS_RECOVERED: usize = 275;
/// Recovered cases cut at the common prefix must not fall below this.
const MIN_COMMON_PREFIX_RECOVERED: usize = 60;
/// Cases whose content the template writes inside its reasoning block that
/// read back as reasoning must not fall below this.
const MIN_CONTENT_AS_REASONING: usize = 7;
/// Recovered cases over the shipped templates must not fall below this.
const MIN_SHIPPED_RECOVERED: usize = 51;

enum Outcome {
    Recovered,
    Missed(String),
    NotRendered(String),
    /// Not prefix-renderable; cut at the common prefix instead: `None`
    /// when recovered, else why not.
    ByCommonPrefix(Option<String>),
    Dropped(&'static str),
    /// The template writes the content inside its reasoning block: `None`
    /// when it parses back as reasoning, else why not.
    ContentAsReasoning(Option<String>),
}

fn run_case(tmpl: &ChatTemplate, analysis: &Analysis, case: &Case) -> Outcome {
    let r = match render_case(tmpl, analysis, case) {
        Ok(r) => r,
        Err(why) => return Outcome::NotRendered(why),
    };
    let outcome = parse_back(analysis, &r.config, &r.output, case);
    if matches!(outcome, Outcome::Missed(_))
        && content_inside_reasoning(analysis, &r.prompt, &r.output, case.content)
    {
        let as_reasoning = Case {
            content: "",
            reasoning: case.content,
            ..case.clone()
        };
        return match parse_back(analysis, &r.config, &r.output, &as_reasoning) {
            Outcome::Recovered => Outcome::ContentAsReasoning(None),
            Outcome::Missed(why) => Outcome::ContentAsReasoning(Some(why)),
            other => other,
        };
    }
    match (outcome, r.prefix_renderable) {
        (Outcome::Recovered, false) => Outcome::ByCommonPrefix(None),
        (Outcome::Missed(why), false) => Outcome::ByCommonPrefix(Some(why)),
        (other, _) => other,
    }
}

/// Parses `output` (the render after the prompt, less the end of turn) back
/// with `config` and compares it with the case.
fn parse_back(analysis: &Analysis, config: &ParserConfig, output: &str, case: &Case) -> Outcome {
    if !case.reasoning.is_empty() && !output.contains(case.reasoning) {
        return Outcome::Dropped("reasoning");
    }
    if !case.content.is_empty() && !output.contains(case.content) {
        return Outcome::Dropped("content");
    }
    let parser = match analysis.parser(config) {
        Ok(p) => p,
        Err(e) => return Outcome::Missed(format!("parser does not build: {e}")),
    };
    let got = parser.parse(output);
    match compare(&got, case) {
        Ok(()) => Outcome::Recovered,
        Err(why) => Outcome::Missed(format!(
            "{why}\n      output: {output:?}\n      got:    {}",
            serde_json::to_string(&got).unwrap_or_default()
        )),
    }
}

#[derive(Default)]
struct Row {
    recovered: usize,
    total: usize,
    not_rendered: usize,
    /// Not prefix-renderable, cut at the common prefix: (recovered, total).
    by_common_prefix: (usize, usize),
    dropped: usize,
    /// Content written inside the reasoning block: (read back as
    /// reasoning, total).
    content_as_reasoning: (usize, usize),
}

/// What [`run_set`] counts: prefix-renderable cases recovered and run, and
/// the same for cases cut at the common prefix.
struct Counts {
    recovered: usize,
    total: usize,
    common_prefix: (usize, usize),
    /// Content written as reasoning, read back as reasoning.
    content_as_reasoning: usize,
}

/// Runs every case of every template in `files`.
fn run_set(label: &str, files: &[PathBuf], only_with_tools: bool) -> Counts {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut common_prefix_misses = Vec::new();
    let mut notes = Vec::new();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let source = std::fs::read_to_string(path).expect("template is readable");
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
            notes.push(format!("{stem}: does not compile"));
            continue;
        };
        let Ok(analysis) = tmpl.analyze() else {
            notes.push(format!("{stem}: does not analyze"));
            continue;
        };
        if only_with_tools && analysis.tools.is_none() {
            continue;
        }
        let row = rows.entry(stem.clone()).or_default();
        for case in cases(&analysis) {
            match run_case(&tmpl, &analysis, &case) {
                Outcome::Recovered => {
                    row.recovered += 1;
                    row.total += 1;
                }
                Outcome::Missed(why) => {
                    row.total += 1;
                    misses.push(format!("  [{stem}] {}: {why}", case.name));
                }
                Outcome::NotRendered(why) => {
                    row.not_rendered += 1;
                    notes.push(format!(
                        "{stem} {}: not rendered ({})",
                        case.name,
                        why.lines().next().unwrap_or("")
                    ));
                }
                Outcome::ByCommonPrefix(None) => {
                    row.by_common_prefix.0 += 1;
                    row.by_common_prefix.1 += 1;
                }
                Outcome::ByCommonPrefix(Some(why)) => {
                    row.by_common_prefix.1 += 1;
                    common_prefix_misses.push(format!("  [{stem}] {}: {why}", case.name));
                }
                Outcome::ContentAsReasoning(None) => {
                    row.content_as_reasoning.0 += 1;
                    row.content_as_reasoning.1 += 1;
                }
                Outcome::ContentAsReasoning(Some(why)) => {
                    row.content_as_reasoning.1 += 1;
                    misses.push(format!(
                        "  [{stem}] {} (content as reasoning): {why}",
                        case.name
                    ));
                }
                Outcome::Dropped(field) => {
                    row.dropped += 1;
                    notes.push(format!(
                        "{stem} {}: the template drops the {field}",
                        case.name
                    ));
                }
            }
        }
    }
    let recovered: usize = rows.values().map(|r| r.recovered).sum();
    let total: usize = rows.values().map(|r| r.total).sum();
    let sum = |f: fn(&Row) -> usize| rows.values().map(f).sum::<usize>();
    let (cp_recovered, cp_total) = (sum(|r| r.by_common_prefix.0), sum(|r| r.by_common_prefix.1));
    println!(
        "\n{label}: {recovered} of {total} cases recovered over {} templates",
        rows.len()
    );
    println!(
        "  and {cp_recovered} of {cp_total} not prefix-renderable cases cut at the common prefix (together {} of {})",
        recovered + cp_recovered,
        total + cp_total
    );
    println!(
        "  {:<55} {:>9} {:>8} {:>13} {:>7}",
        "template", "recovered", "rendered", "common-prefix", "dropped"
    );
    for (name, r) in &rows {
        println!(
            "  {:<55} {:>5}/{:<3} {:>8} {:>9}/{:<3} {:>7}",
            name,
            r.recovered,
            r.total,
            r.not_rendered,
            r.by_common_prefix.0,
            r.by_common_prefix.1,
            r.dropped
        );
    }
    println!(
        "  skipped: {} not rendered, {} dropped by the template; content written as reasoning by the template: {} of {} read back as reasoning",
        sum(|r| r.not_rendered),
        sum(|r| r.dropped),
        sum(|r| r.content_as_reasoning.0),
        sum(|r| r.content_as_reasoning.1)
    );
    for n in &notes {
        println!("  note: {n}");
    }
    for (kind, list) in [
        ("misses", &misses),
        ("misses cut at the common prefix", &common_prefix_misses),
    ] {
        if !list.is_empty() {
            println!("{label} {kind} ({}):", list.len());
            for m in list {
                println!("{m}");
            }
        }
    }
    Counts {
        recovered,
        total,
        common_prefix: (cp_recovered, cp_total),
        content_as_reasoning: sum(|r| r.content_as_reasoning.0),
    }
}

#[test]
fn roundtrip_corpus() {
    let dir = crate_dir().join("../shared/corpus/llamacpp");
    let files = jinja_files(&dir);
    if files.is_empty() {
        println!(
            "skipped: no template corpus at {} (../shared is absent)",
            dir.display()
        );
        return;
    }
    let c = run_set("corpus (templates with tools)", &files, true);
    println!("llama.cpp recovers 346 of 365 such cases over the same corpus");
    assert!(
        c.recovered >= MIN_CORPUS_RECOVERED,
        "only {} of {} corpus cases recovered (floor {MIN_CORPUS_RECOVERED})",
        c.recovered,
        c.total
    );
    assert!(
        c.common_prefix.0 >= MIN_COMMON_PREFIX_RECOVERED,
        "only {} of {} corpus cases cut at the common prefix recovered (floor {MIN_COMMON_PREFIX_RECOVERED})",
        c.common_prefix.0,
        c.common_prefix.1
    );
    assert!(
        c.content_as_reasoning >= MIN_CONTENT_AS_REASONING,
        "only {} corpus cases with content written as reasoning read back as reasoning (floor {MIN_CONTENT_AS_REASONING})",
        c.content_as_reasoning
    );
}

#[test]
fn roundtrip_shipped() {
    let files = jinja_files(&crate_dir().join("templates"));
    assert!(!files.is_empty(), "templates/ holds the shipped templates");
    let c = run_set("shipped templates", &files, false);
    assert!(
        c.recovered >= MIN_SHIPPED_RECOVERED,
        "only {} of {} shipped cases recovered (floor {MIN_SHIPPED_RECOVERED})",
        c.recovered,
        c.total
    );
}
