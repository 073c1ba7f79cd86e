//! A model output made by the template itself: an assistant turn rendered
//! after a user message, less the prompt before it and the end of turn
//! after it. Shared by the round-trip test (parse it back) and the grammar
//! engine tiers (every export must accept it); a test crate includes it with
//! `#[path = "common/rendered.rs"] mod rendered;`.
//!
//! The prompt is the same conversation without the turn, rendered with
//! `add_generation_prompt`. When the rendered turn does not start with it
//! ("not prefix-renderable": the generation prompt writes what a past turn
//! does not, `<think>` or an empty thought channel), the output starts where
//! the two texts part, backed off to before a marker that point cuts, as
//! llama.cpp's harness cuts (`init_delta` in its `tests/test-chat.cpp`).

#![allow(dead_code)] // Each test crate uses the part it needs.

use chat_autoparser::parser::template_messages;
use chat_autoparser::{Analysis, ChatTemplate, RenderRequest};
use serde_json::{json, Value};

/// An output cut from a render, with the prompt it continues.
pub struct Rendered {
    pub prompt: String,
    pub output: String,
    /// Cut where prompt and render part, not after the whole prompt.
    pub by_common_prefix: bool,
}

/// The assistant `turn` (OpenAI shape) rendered after one user message with
/// `tools`, as the output that continues the generation prompt. `thinking`
/// sets both switches templates read (`enable_thinking`, `reasoning_effort`).
/// `Err` when the template refuses to render.
pub fn render_turn(
    tmpl: &ChatTemplate,
    analysis: &Analysis,
    tools: &[Value],
    turn: Value,
    thinking: Option<bool>,
) -> Result<Rendered, String> {
    let user = json!({"role": "user", "content": "What is the weather in Paris?"});
    let request = |messages: Vec<Value>, gen: bool| RenderRequest {
        messages: template_messages(analysis, &messages),
        tools: Some(tools.to_vec()),
        add_generation_prompt: gen,
        enable_thinking: thinking,
        extra: match thinking {
            Some(on) => thinking_switch(on),
            None => Default::default(),
        },
        ..Default::default()
    };
    let prompt = tmpl.render(&request(vec![user.clone()], true)).map_err(|e| format!("prompt: {e}"))?;
    let full = tmpl.render(&request(vec![user.clone(), turn], false)).map_err(|e| e.to_string())?;
    let closing = tmpl.render(&request(vec![user], false)).unwrap_or_default();
    let (rest, by_common_prefix) = match full.strip_prefix(prompt.as_str()) {
        Some(rest) => (rest, false),
        None => (&full[common_prefix(&prompt, &full)..], true),
    };
    let output = strip_end(rest, analysis, &closing).to_string();
    Ok(Rendered { prompt, output, by_common_prefix })
}

/// `reasoning_effort`: the other thinking switch (gpt-oss, Hy3).
pub fn thinking_switch(on: bool) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("reasoning_effort".into(), json!(if on { "high" } else { "low" }));
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
