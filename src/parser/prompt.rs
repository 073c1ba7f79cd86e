//! The prompt an output continues, rendered from the request's
//! conversation: the generation prompt, or an assistant prefill
//! (`continue_final_message`) cut where the model goes on writing.
//!
//! The parser reads the prompt's tail to know whether the output starts
//! inside a reasoning block (`start`), and a prefill's text is the start of
//! the message the output completes.

use serde_json::Value;

use crate::message::reasoning_field_of;
use crate::analysis::{thinking_parts, Analysis, ReasoningMode, THINKING_PART};
use crate::template::{ChatTemplate, RenderRequest};
use crate::Result;

/// What an assistant prefill already holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefill {
    /// Content already written.
    pub content: String,
    /// Reasoning already written.
    pub reasoning: String,
}

/// Renders the prompt for `request`. When `continue_final` is true and the
/// last message is an assistant turn, the prompt ends where that turn's text
/// ends (its content, or its reasoning when it has no content yet), and the
/// prefill is returned; otherwise the request is rendered as given.
/// Variables in [`Analysis::assumed_empty`] the request does not set are
/// rendered empty, as the analysis rendered them.
pub fn continuation_prompt(
    template: &ChatTemplate,
    analysis: &Analysis,
    request: &RenderRequest,
    continue_final: bool,
) -> Result<(String, Option<Prefill>)> {
    let mut extra = request.extra.clone();
    for name in &analysis.assumed_empty {
        // Variables the template needs and does not default (a `datetime`
        // it concatenates): the analysis rendered them empty, and only the
        // prompt's tail matters here, so the prompt does too.
        extra.entry(name.clone()).or_insert_with(|| Value::String(String::new()));
    }
    let last = request.messages.last();
    let request = &RenderRequest { messages: template_messages(analysis, &request.messages), extra, ..request.clone() };
    let is_assistant = last.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant");
    if !continue_final || !is_assistant {
        return Ok((template.render(request)?, None));
    }
    let last = last.cloned().unwrap_or(Value::Null);
    let text = |key: &str| last.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let prefill = Prefill {
        content: text("content"),
        reasoning: reasoning_field_of(&last).map(text).unwrap_or_default(),
    };
    let rendered = template.render(&RenderRequest { add_generation_prompt: false, ..request.clone() })?;
    let mut prefill = prefill;
    if analysis.reasoning.mode == ReasoningMode::None {
        // The template has no reasoning at all: the model never saw it, and
        // the message cannot carry it. A template with reasoning markers
        // keeps it, even if it drops it on this turn.
        prefill.reasoning.clear();
    }
    let anchor = if prefill.content.is_empty() { &prefill.reasoning } else { &prefill.content };
    let prompt = match rendered.rfind(anchor.as_str()).filter(|_| !anchor.is_empty()) {
        Some(at) => rendered[..at + anchor.len()].to_string(),
        None => rendered,
    };
    Ok((prompt, Some(prefill)))
}

/// OpenAI messages as the template wants them: tool-call `arguments` as
/// objects when the analysis found the template reads objects (OpenAI sends
/// JSON text), and an assistant's reasoning where the template reads it: a
/// thinking content part, or its own field (`reasoning_content` is OpenAI's;
/// gpt-oss reads `thinking`).
pub fn template_messages(analysis: &Analysis, messages: &[Value]) -> Vec<Value> {
    let objects = analysis.tools.as_ref().is_some_and(|t| t.input.object_arguments);
    let mut out = messages.to_vec();
    for message in &mut out {
        if analysis.reasoning.field == THINKING_PART {
            reasoning_as_part(message);
        } else {
            move_reasoning(message, &analysis.reasoning.field);
        }
        if !objects {
            continue;
        }
        let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else { continue };
        for call in calls {
            let Some(args) = call.pointer_mut("/function/arguments") else { continue };
            if let Some(parsed) = args.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok()) {
                *args = parsed;
            }
        }
    }
    out
}

/// Moves an assistant message's reasoning field into a leading thinking part.
fn reasoning_as_part(message: &mut Value) {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return;
    }
    let Some(reasoning) = reasoning_field_of(message).and_then(|k| message.as_object_mut()?.remove(k)) else { return };
    let Some(map) = message.as_object_mut() else { return };
    let content = map.get("content").cloned().unwrap_or(Value::Null);
    map.insert("content".into(), thinking_parts(reasoning.as_str().unwrap_or_default(), &content));
}

/// Copies OpenAI's `reasoning_content` into `field` when the message has
/// no `field` of its own.
fn move_reasoning(message: &mut Value, field: &str) {
    const OPENAI: &str = "reasoning_content";
    if field.is_empty() || field == OPENAI || message.get(field).is_some() {
        return;
    }
    let Some(reasoning) = message.get(OPENAI).cloned() else { return };
    if let Some(object) = message.as_object_mut() {
        object.insert(field.to_string(), reasoning);
    }
}
