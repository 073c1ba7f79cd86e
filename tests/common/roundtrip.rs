//! The round-trip cases: assistant turns (content, reasoning, calls) and the
//! tools they call, rendered by `turns` into the model output each stands
//! for, with the parser options that read it back. Shared by the round-trip
//! tier (`parser_roundtrip.rs`) and the deviation corpus
//! (`tests/parser/deviations.rs`), which change these outputs the way real models
//! do; a test crate includes `common/turns.rs` as `turns` and this file as
//! `roundtrip` (`#[path = ...]`).

#![allow(dead_code)] // Each test crate uses the part it needs.

use chat_autoparser::Options;
use std::path::PathBuf;

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, ParserConfig};
use serde_json::{json, Value};

use super::turns::{render_turn, turn};

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tools the cases call: `check`'s probe tools (a flat one and one
/// with free text, an object and a list).
pub use chat_autoparser::check::probe_tools as tools;

/// One assistant turn to render and parse back.
#[derive(Clone)]
pub struct Case {
    pub name: &'static str,
    pub content: &'static str,
    pub reasoning: &'static str,
    /// (name, arguments as JSON text)
    pub calls: Vec<(&'static str, String)>,
}

pub fn cases(analysis: &Analysis) -> Vec<Case> {
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
    let mut out = vec![Case {
        name: "content",
        content: "Hello! How can I help you today?",
        reasoning: "",
        calls: vec![],
    }];
    if reasoning {
        out.push(Case {
            name: "reasoning+content",
            content: "It is sunny in Paris.",
            reasoning: "The user asks about the weather; I know it is sunny.",
            calls: vec![],
        });
    }
    if has_tools {
        out.push(Case {
            name: "call",
            content: "",
            reasoning: "",
            calls: vec![weather()],
        });
        out.push(Case {
            name: "content+call",
            content: "Let me check the weather.",
            reasoning: "",
            calls: vec![weather()],
        });
        if parallel {
            out.push(Case {
                name: "parallel",
                content: "",
                reasoning: "",
                calls: vec![
                    weather(),
                    ("get_weather", r#"{"city": "Tokyo", "days": 1}"#.to_string()),
                ],
            });
        }
        out.push(Case {
            name: "tricky-args",
            content: "",
            reasoning: "",
            calls: vec![("save_note", tricky)],
        });
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

/// A case rendered: the prompt, the model output, and the parser options
/// that read it back.
pub struct Rendered {
    pub prompt: String,
    pub output: String,
    /// The rendered turn starts with the prompt (else the output starts
    /// where the two texts part).
    pub prefix_renderable: bool,
    pub config: ParserConfig,
}

/// Renders `case` (see `turns`), or says why it cannot be rendered. A
/// model writes reasoning only with thinking on: asked for as a server would.
pub fn render_case(
    tmpl: &ChatTemplate,
    analysis: &Analysis,
    case: &Case,
) -> Result<Rendered, String> {
    let thinking = (!case.reasoning.is_empty()).then_some(true);
    let turn = turn(case.content, case.reasoning, &case.calls);
    let r = render_turn(tmpl, analysis, &tools(), &turn, thinking)?;
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools())
            .with_prompt(Some(r.generation_prompt.clone()))
            .with_enable_thinking(thinking),
    );
    Ok(Rendered {
        prompt: r.generation_prompt,
        output: r.output,
        prefix_renderable: !r.by_common_prefix,
        config,
    })
}

/// Compares a parsed message with the case: content and reasoning trimmed,
/// names exactly, arguments as parsed JSON.
pub fn compare(got: &AssistantMessage, case: &Case) -> Result<(), String> {
    if got.content_text().trim() != case.content.trim() {
        return Err(format!(
            "content {:?} != {:?}",
            got.content_text().trim(),
            case.content
        ));
    }
    if got.reasoning_content.trim() != case.reasoning.trim() {
        return Err(format!(
            "reasoning {:?} != {:?}",
            got.reasoning_content.trim(),
            case.reasoning
        ));
    }
    if got.tool_calls.len() != case.calls.len() {
        return Err(format!(
            "{} tool calls, expected {}",
            got.tool_calls.len(),
            case.calls.len()
        ));
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
