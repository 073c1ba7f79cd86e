//! Rendering one assistant turn as a model would write it, for the tests that
//! check what a template's outputs look like to the parser and to grammars.
//!
//! The turn is rendered after a user message (arguments passed as the
//! template wants them, via `template_messages`; reasoning in
//! `analysis.reasoning.field`). The prompt is the same conversation without
//! the turn, rendered with `add_generation_prompt`. When the rendered turn
//! starts with it, what follows, less the end-of-turn text, is the model
//! output; when it does not ("not prefix-renderable"), the output starts where
//! the two texts part, backed off to before a marker that point cuts, as
//! llama.cpp's harness cuts (`init_delta` in its `tests/test-chat.cpp`).
//! A test crate includes it with `#[path = "common/turns.rs"] mod turns;`.

#![allow(dead_code)] // Each test uses the part it needs.

use chat_autoparser::parser::template_messages;
use chat_autoparser::{Analysis, ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
use serde_json::{json, Value};

/// The template at `path` with its analysis (default configuration); `None`
/// when it does not load, compile or analyze.
pub fn analyzed(path: &std::path::Path) -> Option<(ChatTemplate, Analysis)> {
    let source = TemplateSource::load(path).ok()?;
    let tmpl = ChatTemplate::from_source(&source, &TemplateConfig::default()).ok()?;
    let analysis = tmpl.analyze().ok()?;
    Some((tmpl, analysis))
}

/// How many cases a property runs: the number in the environment variable
/// `var` when set (a longer search), `default` otherwise.
pub fn case_count(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The `.jinja` files of `dir`, sorted (none when it does not exist).
pub fn jinja_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    files.sort();
    files
}

/// The tools the grammar-engine tiers (llguidance, xgrammar) constrain
/// calls to: an enum, an integer, a nested object with an array and a
/// boolean, required and optional arguments.
pub fn engine_tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}
            },
            "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "search", "description": "Search", "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "exact": {"type": "boolean"}}},
                "limit": {"type": "integer"}
            },
            "required": ["query"]}}}),
    ]
}

/// One assistant turn: content, reasoning and calls `(name, arguments as JSON text)`.
pub struct Turn<'a> {
    pub content: &'a str,
    pub reasoning: &'a str,
    pub calls: &'a [(&'a str, String)],
}

/// A rendered turn: the prompt it continues and the model's output.
pub struct Rendered {
    pub prompt: String,
    pub output: String,
    /// The render did not start with the prompt; cut at the common prefix.
    pub by_common_prefix: bool,
}

/// Calls of [`engine_tools`] a grammar must reject: (what, calls).
pub fn argument_mutations() -> Vec<(&'static str, Vec<(&'static str, Value)>)> {
    vec![
        (
            "unknown tool",
            vec![("delete_everything", json!({"city": "Paris"}))],
        ),
        (
            "missing required argument",
            vec![("get_weather", json!({"unit": "celsius"}))],
        ),
        (
            "wrong argument type",
            vec![("get_weather", json!({"city": "Paris", "days": "three"}))],
        ),
    ]
}

/// The assistant message for `turn`, as OpenAI sends it.
pub fn assistant_message(analysis: &Analysis, turn: &Turn) -> Value {
    let null_content = analysis
        .tools
        .as_ref()
        .is_some_and(|t| t.input.null_content);
    let mut message = json!({"role": "assistant"});
    message["content"] = if turn.content.is_empty() && !turn.calls.is_empty() && null_content {
        Value::Null
    } else {
        Value::String(turn.content.into())
    };
    if !turn.reasoning.is_empty() {
        let field = if analysis.reasoning.field.is_empty() {
            "reasoning_content"
        } else {
            &analysis.reasoning.field
        };
        message[field] = Value::String(turn.reasoning.into());
    }
    if !turn.calls.is_empty() {
        let calls: Vec<Value> = turn
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("call{i:05}"), "type": "function",
                       "function": {"name": name, "arguments": args}})
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// Renders `turn` after one user message, with `thinking` as the request's
/// thinking switch (on: `enable_thinking` and `reasoning_effort: "high"`,
/// the two switches templates read). `Err` says why the template refused.
pub fn render_turn(
    tmpl: &ChatTemplate,
    analysis: &Analysis,
    tools: &[Value],
    turn: &Turn,
    thinking: Option<bool>,
) -> Result<Rendered, String> {
    let extra = if thinking == Some(true) {
        thinking_on()
    } else {
        Default::default()
    };
    render_message(
        tmpl,
        analysis,
        tools,
        assistant_message(analysis, turn),
        thinking,
        extra,
    )
}

/// Renders the assistant `message` (OpenAI shape) after one user message,
/// with `thinking` as `enable_thinking` and `extra` as further template
/// variables. `Err` says why the template refused.
pub fn render_message(
    tmpl: &ChatTemplate,
    analysis: &Analysis,
    tools: &[Value],
    message: Value,
    thinking: Option<bool>,
    extra: serde_json::Map<String, Value>,
) -> Result<Rendered, String> {
    let user = json!({"role": "user", "content": "What is the weather in Paris?"});
    let request = |messages: Vec<Value>, gen: bool| {
        RenderRequest::default()
            .with_messages(template_messages(analysis, &messages))
            .with_tools(Some(tools.to_vec()))
            .with_add_generation_prompt(gen)
            .with_enable_thinking(thinking)
            .with_extra(extra.clone())
    };
    let prompt = tmpl
        .render(&request(vec![user.clone()], true))
        .map_err(|e| format!("prompt: {e}"))?;
    let full = tmpl
        .render(&request(vec![user.clone(), message], false))
        .map_err(|e| e.to_string())?;
    let closing = tmpl.render(&request(vec![user], false)).unwrap_or_default();
    let (rest, by_common_prefix) = match full.strip_prefix(prompt.as_str()) {
        Some(rest) => (rest, false),
        None => (&full[common_prefix(&prompt, &full)..], true),
    };
    let output = strip_end(rest, analysis, &closing).to_owned();
    Ok(Rendered {
        prompt,
        output,
        by_common_prefix,
    })
}

/// Both thinking switches templates read, on or off: `reasoning_effort`
/// `high` or `low` (gpt-oss, Hy3) beside `enable_thinking`.
pub fn thinking_switch(on: bool) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert(
        "reasoning_effort".into(),
        json!(if on { "high" } else { "low" }),
    );
    extra
}

/// `reasoning_effort: "high"`: the other thinking switch (gpt-oss, Hy3).
pub fn thinking_on() -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("reasoning_effort".into(), json!("high"));
    extra
}

// Where a render leaves its prompt, and the output less the end of turn:
// the library's own, which `check` cuts its probe outputs with.
pub use chat_autoparser::check::turn::{common_prefix, strip_end};
