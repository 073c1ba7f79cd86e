//! The round-trip cases: assistant turns rendered by a template after a
//! user message, and the model output each one stands for (the render after
//! the generation prompt, less the end of turn). Shared by the round-trip
//! tier (`parser_roundtrip.rs`) and the deviation corpus
//! (`parser_deviations.rs`), which change these outputs the way real models
//! do; a test crate includes it with `#[path = "common/roundtrip.rs"] mod roundtrip;`.

#![allow(dead_code)] // Each test crate uses the part it needs.

use std::path::{Path, PathBuf};

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::parser::template_messages;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, ParserConfig, RenderRequest};
use serde_json::{json, Value};

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn jinja_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jinja")).collect();
    files.sort();
    files
}

pub fn tools() -> Vec<Value> {
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

/// Renders `case`, or says why it cannot be rendered.
pub fn render_case(tmpl: &ChatTemplate, analysis: &Analysis, case: &Case) -> Result<Rendered, String> {
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
    // A model writes reasoning only with thinking on: asked for as a server
    // would, by either switch templates read.
    let thinking = (!case.reasoning.is_empty()).then_some(true);
    let request = |messages: Vec<Value>, gen: bool| RenderRequest {
        messages: template_messages(analysis, &messages),
        tools: Some(tools()),
        add_generation_prompt: gen,
        enable_thinking: thinking,
        extra: if thinking.is_some() { thinking_on() } else { Default::default() },
        ..Default::default()
    };
    let prompt = tmpl.render(&request(vec![user.clone()], true)).map_err(|e| format!("prompt: {e}"))?;
    let full = tmpl.render(&request(vec![user.clone(), turn], false)).map_err(|e| e.to_string())?;
    let closing = tmpl.render(&request(vec![user], false)).unwrap_or_default();
    let config = ParserConfig { tools: tools(), prompt: Some(prompt.clone()), enable_thinking: thinking, ..Default::default() };
    let (output, prefix_renderable) = match full.strip_prefix(prompt.as_str()) {
        Some(rest) => (strip_end(rest, analysis, &closing).to_string(), true),
        None => (strip_end(&full[common_prefix(&prompt, &full)..], analysis, &closing).to_string(), false),
    };
    Ok(Rendered { prompt, output, prefix_renderable, config })
}

/// `reasoning_effort: "high"`: the other thinking switch (gpt-oss, Hy3).
pub fn thinking_on() -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("reasoning_effort".into(), json!("high"));
    extra
}

/// Where `full` leaves `prompt`: their longest common prefix, backed off to
/// before a marker it cuts (an unclosed `<` or `[`), as llama.cpp's test
/// harness cuts (`init_delta` in `tests/test-chat.cpp`).
pub fn common_prefix(prompt: &str, full: &str) -> usize {
    let mut at = prompt.bytes().zip(full.bytes()).take_while(|(a, b)| a == b).count();
    while !full.is_char_boundary(at) {
        at -= 1;
    }
    let head = &full[..at];
    let open = head.rfind(['<', '[']).filter(|&i| !head[i..].contains(['>', ']']));
    open.unwrap_or(at)
}

/// The output less the end of turn: `end_of_turn` when the text ends with
/// it, or when what follows it is what `closing` (the user turn rendered
/// alone, without a generation prompt) ends with too: text the template
/// writes after any conversation. Else the stop marker after trailing
/// whitespace.
pub fn strip_end<'a>(rest: &'a str, analysis: &Analysis, closing: &str) -> &'a str {
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

/// Compares a parsed message with the case: content and reasoning trimmed,
/// names exactly, arguments as parsed JSON.
pub fn compare(got: &AssistantMessage, case: &Case) -> Result<(), String> {
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

