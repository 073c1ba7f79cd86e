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
//! `analysis.reasoning.field`). The prompt is the same conversation without
//! the turn, rendered with `add_generation_prompt`; the rendered turn must
//! start with it (else the case is "not prefix-renderable"), and what
//! follows it, less the end-of-turn text, is the model output. Some
//! templates write text after every conversation whether or not a
//! generation prompt is asked for (command-r7b opens the next assistant
//! turn, `<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>...`, unconditionally):
//! the end of turn followed by the text the user turn alone also ends with
//! is the template's, not the model's, which stops at its end of turn. It is parsed
//! with `ParserConfig { tools, prompt, .. }` and compared with the turn:
//! content and reasoning trimmed, names exactly, arguments as parsed JSON.
//!
//! Skipped cases, reported apart from the recovered/total counts:
//! - "not rendered": the template raises on the case;
//! - "not prefix-renderable": the prompt is not a prefix of the rendered turn;
//! - "dropped": the template does not write a field of the turn (content on
//!   a tool-call turn, reasoning on some turns), so nothing can recover it.
//!
//! Prints a per-template table and every miss; asserts floors at the counts
//! measured when the test was written, so that regressions fail.
//! llama.cpp recovers 346 of 365 such cases over the same corpus.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::parser::template_messages;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, ParserConfig, RenderRequest, TemplateConfig};
use serde_json::{json, Value};

/// Recovered cases over the corpus must not fall below this.
const MIN_CORPUS_RECOVERED: usize = 253;
/// Recovered cases over the shipped templates must not fall below this.
const MIN_SHIPPED_RECOVERED: usize = 51;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn jinja_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jinja")).collect();
    files.sort();
    files
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "description": "Days ahead"}
            }, "required": ["city"]}}}),
        json!({"type": "function", "function": {
            "name": "save_note",
            "description": "Saves a note.",
            "parameters": {"type": "object", "properties": {
                "text": {"type": "string"},
                "meta": {"type": "object"},
                "tags": {"type": "array", "items": {"type": "string"}}
            }, "required": ["text"]}}}),
    ]
}

/// One assistant turn to render and parse back.
struct Case {
    name: &'static str,
    content: &'static str,
    reasoning: &'static str,
    /// (name, arguments as JSON text)
    calls: Vec<(&'static str, String)>,
}

fn cases(analysis: &Analysis) -> Vec<Case> {
    let reasoning = analysis.reasoning.mode != ReasoningMode::None;
    let parallel = analysis.tools.as_ref().is_some_and(|t| t.parallel);
    let has_tools = analysis.tools.is_some();
    let weather = || ("get_weather", r#"{"city": "Paris", "days": 3}"#.to_string());
    let tricky = json!({
        "text": "He said \"hi\" <b>bold</b> & 'more'\nline two — café 東京 🌧",
        "meta": {"nested": {"a": [1, 2.5, {"b": null}], "ok": true}, "path": "C:\\tmp\\x"},
        "tags": ["x", "<y>", "a & b"]
    })
    .to_string();
    let mut out = vec![Case { name: "content", content: "Hello! How can I help you today?", reasoning: "", calls: vec![] }];
    if reasoning {
        out.push(Case {
            name: "reasoning+content",
            content: "It is sunny in Paris.",
            reasoning: "The user asks about the weather; I know it is sunny.",
            calls: vec![],
        });
    }
    if has_tools {
        out.push(Case { name: "call", content: "", reasoning: "", calls: vec![weather()] });
        out.push(Case { name: "content+call", content: "Let me check the weather.", reasoning: "", calls: vec![weather()] });
        if parallel {
            out.push(Case {
                name: "parallel",
                content: "",
                reasoning: "",
                calls: vec![weather(), ("get_weather", r#"{"city": "Tokyo", "days": 1}"#.to_string())],
            });
        }
        out.push(Case { name: "tricky-args", content: "", reasoning: "", calls: vec![("save_note", tricky)] });
        if reasoning {
            out.push(Case {
                name: "reasoning+call",
                content: "",
                reasoning: "I need the forecast, so I will call the weather tool.",
                calls: vec![weather()],
            });
        }
    }
    out
}

enum Outcome {
    Recovered,
    Missed(String),
    NotRendered(String),
    NotPrefix,
    Dropped(&'static str),
}

fn run_case(tmpl: &ChatTemplate, analysis: &Analysis, case: &Case) -> Outcome {
    let user = json!({"role": "user", "content": "What is the weather in Paris?"});
    let null_content = analysis.tools.as_ref().is_some_and(|t| t.input.null_content);
    let mut turn = json!({"role": "assistant"});
    turn["content"] = if case.content.is_empty() && !case.calls.is_empty() && null_content {
        Value::Null
    } else {
        Value::String(case.content.into())
    };
    if !case.reasoning.is_empty() {
        let field = if analysis.reasoning.field.is_empty() { "reasoning_content" } else { &analysis.reasoning.field };
        turn[field] = Value::String(case.reasoning.into());
    }
    if !case.calls.is_empty() {
        let calls: Vec<Value> = case
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("call{i:05}"), "type": "function",
                       "function": {"name": name, "arguments": args}})
            })
            .collect();
        turn["tool_calls"] = Value::Array(calls);
    }
    let tools = tools();
    let request = |messages: Vec<Value>, gen: bool| RenderRequest {
        messages: template_messages(analysis, &messages),
        tools: Some(tools.clone()),
        add_generation_prompt: gen,
        enable_thinking: None,
        extra: Default::default(),
        ..Default::default()
    };
    let prompt = match tmpl.render(&request(vec![user.clone()], true)) {
        Ok(p) => p,
        Err(e) => return Outcome::NotRendered(format!("prompt: {e}")),
    };
    let full = match tmpl.render(&request(vec![user.clone(), turn], false)) {
        Ok(p) => p,
        Err(e) => return Outcome::NotRendered(e.to_string()),
    };
    let Some(rest) = full.strip_prefix(prompt.as_str()) else { return Outcome::NotPrefix };
    let closing = tmpl.render(&request(vec![user.clone()], false)).unwrap_or_default();
    let output = strip_end(rest, analysis, &closing);
    if !case.reasoning.is_empty() && !output.contains(case.reasoning) {
        return Outcome::Dropped("reasoning");
    }
    if !case.content.is_empty() && !output.contains(case.content) {
        return Outcome::Dropped("content");
    }
    let config = ParserConfig { tools, prompt: Some(prompt), ..Default::default() };
    let parser = match analysis.parser(&config) {
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

/// The output less the end of turn: `end_of_turn` when the text ends with
/// it, or when what follows it is what `closing` (the user turn rendered
/// alone, without a generation prompt) ends with too: text the template
/// writes after any conversation. Else the stop marker after trailing
/// whitespace.
fn strip_end<'a>(rest: &'a str, analysis: &Analysis, closing: &str) -> &'a str {
    let eot = analysis.turn.end_of_turn.as_str();
    let stop = analysis.turn.stop_marker.as_str();
    if !eot.is_empty() {
        if let Some(s) = rest.strip_suffix(eot) {
            return s;
        }
        if let Some(s) = rest.trim_end().strip_suffix(eot.trim_end()) {
            return s;
        }
        if let Some((at, _)) = rest.match_indices(eot).find(|(at, _)| closing.ends_with(&rest[*at..])) {
            return &rest[..at];
        }
    }
    if !stop.is_empty() {
        if let Some(s) = rest.trim_end().strip_suffix(stop) {
            return s;
        }
    }
    rest
}

fn compare(got: &AssistantMessage, case: &Case) -> Result<(), String> {
    if got.content_text().trim() != case.content.trim() {
        return Err(format!("content {:?} != {:?}", got.content_text().trim(), case.content));
    }
    if got.reasoning_content.trim() != case.reasoning.trim() {
        return Err(format!("reasoning {:?} != {:?}", got.reasoning_content.trim(), case.reasoning));
    }
    if got.tool_calls.len() != case.calls.len() {
        return Err(format!("{} tool calls, expected {}", got.tool_calls.len(), case.calls.len()));
    }
    for (g, (name, args)) in got.tool_calls.iter().zip(&case.calls) {
        if g.function.name != *name {
            return Err(format!("name {:?} != {name:?}", g.function.name));
        }
        let want: Value = serde_json::from_str(args).expect("case arguments are JSON");
        match serde_json::from_str::<Value>(&g.function.arguments) {
            Ok(v) if v == want => {}
            _ => return Err(format!("arguments {} != {args}", g.function.arguments)),
        }
    }
    Ok(())
}

#[derive(Default)]
struct Row {
    recovered: usize,
    total: usize,
    not_rendered: usize,
    not_prefix: usize,
    dropped: usize,
}

/// Runs every case of every template in `files`; returns (recovered, total).
fn run_set(label: &str, files: &[PathBuf], only_with_tools: bool) -> (usize, usize) {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut notes = Vec::new();
    for path in files {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
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
                    notes.push(format!("{stem} {}: not rendered ({})", case.name, why.lines().next().unwrap_or("")));
                }
                Outcome::NotPrefix => {
                    row.not_prefix += 1;
                    notes.push(format!("{stem} {}: not prefix-renderable", case.name));
                }
                Outcome::Dropped(field) => {
                    row.dropped += 1;
                    notes.push(format!("{stem} {}: the template drops the {field}", case.name));
                }
            }
        }
    }
    let recovered: usize = rows.values().map(|r| r.recovered).sum();
    let total: usize = rows.values().map(|r| r.total).sum();
    println!("\n{label}: {recovered} of {total} cases recovered over {} templates", rows.len());
    println!("  {:<55} {:>9} {:>8} {:>9} {:>7}", "template", "recovered", "rendered", "no-prefix", "dropped");
    for (name, r) in &rows {
        println!(
            "  {:<55} {:>5}/{:<3} {:>8} {:>9} {:>7}",
            name,
            r.recovered,
            r.total,
            r.not_rendered,
            r.not_prefix,
            r.dropped
        );
    }
    let sum = |f: fn(&Row) -> usize| rows.values().map(f).sum::<usize>();
    println!(
        "  skipped: {} not rendered, {} not prefix-renderable, {} dropped by the template",
        sum(|r| r.not_rendered),
        sum(|r| r.not_prefix),
        sum(|r| r.dropped)
    );
    for n in &notes {
        println!("  note: {n}");
    }
    if !misses.is_empty() {
        println!("{label} misses ({}):", misses.len());
        for m in &misses {
            println!("{m}");
        }
    }
    (recovered, total)
}

#[test]
fn roundtrip_corpus() {
    let dir = crate_dir().join("../shared/corpus/llamacpp");
    let files = jinja_files(&dir);
    if files.is_empty() {
        println!("skipped: no template corpus at {} (../shared is absent)", dir.display());
        return;
    }
    let (recovered, total) = run_set("corpus (templates with tools)", &files, true);
    println!("llama.cpp recovers 346 of 365 such cases over the same corpus");
    assert!(
        recovered >= MIN_CORPUS_RECOVERED,
        "only {recovered} of {total} corpus cases recovered (floor {MIN_CORPUS_RECOVERED})"
    );
}

#[test]
fn roundtrip_shipped() {
    let files = jinja_files(&crate_dir().join("templates"));
    assert!(!files.is_empty(), "templates/ holds the shipped templates");
    let (recovered, total) = run_set("shipped templates", &files, false);
    assert!(
        recovered >= MIN_SHIPPED_RECOVERED,
        "only {recovered} of {total} shipped cases recovered (floor {MIN_SHIPPED_RECOVERED})"
    );
}
