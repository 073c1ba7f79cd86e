//! llama.cpp's own parser expectations (`../shared/vectors/llamacpp-test-chat.jsonl`,
//! 463 cases over 58 templates), run through the generic parser.
//!
//! Each case renders its conversation with the template (the prompt the
//! output continues), builds a parser from the template's analysis and the
//! case's options, parses the output (as partial when the case says so), and
//! compares with llama.cpp's comparison rules: content and reasoning with
//! surrounding whitespace stripped, names exactly, ids where the expectation
//! has one, arguments as parsed JSON (as text without whitespace when either
//! side is not JSON, as for partial arguments).
//!
//! Also checks, on every case, that streaming in 1-, 4- and 7-byte chunks
//! gives the batch message.
//!
//! The per-template pass counts are checked against `docs/coverage.md`'s
//! `vectors` block (`tests/common/coverage.rs`; `tools/regen_docs.sh`
//! rewrites it); set `VECTORS_FAILURES=path` to dump every miss.

use chat_autoparser::Options;
use std::collections::BTreeMap;
use std::path::PathBuf;

use chat_autoparser::parser::char_chunks;
use chat_autoparser::prompt::{continuation_prompt, Continue};
use chat_autoparser::{
    AssistantMessage, ChatTemplate, ParserConfig, ReasoningFormat, RenderRequest, TemplateConfig,
    ToolChoice,
};
use serde_json::Value;

/// The least number of cases that must pass (issue 3 asks for 440 of 463).
/// 455 until a re-emitted reasoning opener became scaffolding (issue 16):
/// line 15 (Qwen3.5-4B) expects `<think>` written again after a prompt that
/// opened the block to stay in `reasoning_content`; we drop it on purpose,
/// as DeepSeek-R1-0528 writes it and servers expect it gone (docs/parser.md).
/// 455 again since a stuttered opener token (gemma-4's doubled `<|channel>`)
/// is dropped; 457 since a header cut short by the next one is scaffolding.
/// The 6 misses left are explained in docs/parser.md.
const MIN_PASSING: usize = 457;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

struct Outcome {
    template: String,
    passed: bool,
    detail: String,
}

#[test]
fn llamacpp_vectors() {
    let path = shared().join("vectors/llamacpp-test-chat.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "skipped: no vectors at {} (../shared is absent)",
            path.display()
        );
        return;
    };
    let mut cache: BTreeMap<String, Option<(ChatTemplate, chat_autoparser::Analysis)>> =
        BTreeMap::new();
    let mut outcomes = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line).expect("vector line is JSON");
        outcomes.push(run_case(n + 1, &case, &mut cache));
    }
    let passed = outcomes.iter().filter(|o| o.passed).count();
    println!("llama.cpp vectors: {passed} of {} pass", outcomes.len());
    let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for o in &outcomes {
        let e = per.entry(o.template.as_str()).or_default();
        e.1 += 1;
        if o.passed {
            e.0 += 1;
        }
    }
    for (t, (p, n)) in &per {
        if p < n {
            println!("  {t}: {p}/{n}");
        }
    }
    if let Ok(dump) = std::env::var("VECTORS_FAILURES") {
        let misses: Vec<&str> = outcomes
            .iter()
            .filter(|o| !o.passed)
            .map(|o| o.detail.as_str())
            .collect();
        std::fs::write(dump, misses.join("\n\n")).expect("write failures");
    }
    record_coverage(&per, passed, outcomes.len());
    assert!(
        passed >= MIN_PASSING,
        "only {passed} of {} vectors pass (need {MIN_PASSING})",
        outcomes.len()
    );
}

fn run_case(
    line: usize,
    case: &Value,
    cache: &mut BTreeMap<String, Option<(ChatTemplate, chat_autoparser::Analysis)>>,
) -> Outcome {
    let rel = case["template"].as_str().unwrap_or_default().to_string();
    let name = rel
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim_end_matches(".jinja")
        .to_string();
    let fail = |detail: String| Outcome {
        template: name.clone(),
        passed: false,
        detail: format!("line {line} [{name}]: {detail}"),
    };
    let entry = cache.entry(rel.clone()).or_insert_with(|| {
        let source = std::fs::read_to_string(shared().join(&rel)).ok()?;
        let tmpl = ChatTemplate::new(&source, &TemplateConfig::default()).ok()?;
        let analysis = tmpl.analyze().ok()?;
        Some((tmpl, analysis))
    });
    let Some((tmpl, analysis)) = entry.as_ref() else {
        return fail("template does not compile or analyze".into());
    };
    let tools: Option<Vec<Value>> = case["tools"].as_array().cloned();
    let enable_thinking = case["enable_thinking"].as_bool();
    let continues = Continue::from_json(&case["continue_final_message"])
        .expect("a continue_final_message value");
    let request = RenderRequest::default()
        .with_messages(case["messages"].as_array().cloned().unwrap_or_default())
        .with_tools(tools.clone())
        .with_add_generation_prompt(
            !continues.is_continued() && case["add_generation_prompt"].as_bool().unwrap_or(true),
        )
        .with_enable_thinking(enable_thinking)
        .with_extra(Default::default());
    // We render `tools: null` as transformers does (`tools = None`);
    // llama.cpp always passes a list. When a template refuses None, render it
    // as llama.cpp did when it recorded the vector.
    let rendered =
        continuation_prompt(tmpl, analysis, &request, continues).or_else(|e| match request.tools {
            None => continuation_prompt(
                tmpl,
                analysis,
                &request.clone().with_tools(Some(Vec::new())),
                continues,
            ),
            Some(_) => Err(e),
        });
    let (prompt, prefill) = match rendered {
        Ok(p) => p,
        Err(e) => return fail(format!("prompt does not render: {e}")),
    };
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools.unwrap_or_default())
            .with_tool_choice(ToolChoice::from_json(&case["tool_choice"]).unwrap())
            .with_parallel_tool_calls(case["parallel_tool_calls"].as_bool().unwrap_or(false))
            .with_enable_thinking(enable_thinking)
            .with_prompt(Some(prompt))
            .with_response_schema(
                case["json_schema"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .and_then(|s| serde_json::from_str(s).ok()),
            ),
    )
    .with_reasoning(if case["reasoning_format"] == "none" {
        ReasoningFormat::Inline
    } else {
        ReasoningFormat::Extract
    })
    .with_prefill(prefill)
    .with_call_ids(None);
    let parser = match analysis.parser(&config) {
        Ok(p) => p,
        Err(e) => return fail(format!("parser does not build: {e}")),
    };
    let input = case["input"].as_str().unwrap_or_default();
    let partial = case["is_partial"].as_bool().unwrap_or(false);
    let got = if partial {
        parser.parse_partial(input)
    } else {
        parser.parse(input)
    };
    if !partial {
        for size in [1, 4, 7] {
            let mut stream = parser.stream();
            for chunk in char_chunks(input, size) {
                stream.push(chunk);
            }
            stream.finish();
            assert_eq!(
                stream.message(),
                got,
                "line {line} [{name}]: {size}-byte streaming differs from batch"
            );
        }
    }
    match compare(&got, &case["expect"]) {
        Ok(()) => Outcome {
            template: name,
            passed: true,
            detail: String::new(),
        },
        Err(why) => fail(format!(
            "{why}\n  start: {:?}  input: {input:?}\n  got:    {}\n  expect: {}",
            parser.start(),
            serde_json::to_string(&got).unwrap_or_default(),
            case["expect"]
        )),
    }
}

fn compare(got: &AssistantMessage, expect: &Value) -> Result<(), String> {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").trim().to_string();
    if got.content_text().trim() != text(expect, "content") {
        return Err(format!(
            "content {:?} != {:?}",
            got.content_text().trim(),
            text(expect, "content")
        ));
    }
    if got.reasoning_content.trim() != text(expect, "reasoning_content") {
        return Err(format!(
            "reasoning {:?} != {:?}",
            got.reasoning_content.trim(),
            text(expect, "reasoning_content")
        ));
    }
    let calls = expect["tool_calls"].as_array().cloned().unwrap_or_default();
    if calls.len() != got.tool_calls.len() {
        return Err(format!(
            "{} tool calls, expected {}",
            got.tool_calls.len(),
            calls.len()
        ));
    }
    for (g, e) in got.tool_calls.iter().zip(&calls) {
        if g.function.name != e["function"]["name"].as_str().unwrap_or("") {
            return Err(format!(
                "name {:?} != {}",
                g.function.name, e["function"]["name"]
            ));
        }
        if let Some(id) = e["id"].as_str().filter(|s| !s.is_empty()) {
            if g.id.as_deref() != Some(id) {
                return Err(format!("id {:?} != {id:?}", g.id));
            }
        }
        let want = e["function"]["arguments"].as_str().unwrap_or("");
        if !same_arguments(&g.function.arguments, want) {
            return Err(format!("arguments {:?} != {want:?}", g.function.arguments));
        }
    }
    Ok(())
}

fn same_arguments(got: &str, want: &str) -> bool {
    match (
        serde_json::from_str::<Value>(got),
        serde_json::from_str::<Value>(want),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => {
            let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            squash(got) == squash(want)
        }
    }
}

/// Checks (or, when regenerating, rewrites) the vectors block of `docs/coverage.md`.
fn record_coverage(per: &BTreeMap<&str, (usize, usize)>, passed: usize, total: usize) {
    let rows = per.iter().map(|(t, c)| (t.to_string(), *c)).collect();
    let summary = format!(
        "{passed} of {total} llama.cpp parser expectations pass (`cargo test --test parser vectors::`)."
    );
    crate::common::coverage::record_block("vectors", &summary, &rows);
}
