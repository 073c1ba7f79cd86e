//! The prompt an output continues, rendered from the request's
//! conversation: the generation prompt, or an assistant prefill
//! (`continue_final_message`) cut where the model goes on writing; and the
//! request's messages as the template reads them.
//!
//! The protocol reads the prompt's tail to know whether the output starts
//! inside a reasoning block (`start`), and a prefill's text
//! ([`Prefill`](crate::parser::Prefill)) is the start of the message the
//! parser completes.
//!
//! Invariant: with a prefill, the prompt ends where its continued part ends
//! (or, empty, would start) and holds nothing of the turn after it; without
//! one, the request renders as given.

use serde_json::Value;

use crate::analysis::{thinking_parts, Analysis, ReasoningMode, THINKING_PART};
use crate::error::Result;
use crate::message::{reasoning_field_of, REASONING_FIELDS};
use crate::parser::{Prefill, PrefillPart};
use crate::template::{ChatTemplate, RenderRequest};

/// Whether and how the output continues the request's last message
/// (`continue_final_message`). llama.cpp's values are `none`, `auto`,
/// `reasoning` and `content`; `true` and `false` mean `auto` and `none`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Continue {
    /// The request renders as given (with its generation prompt, if asked).
    #[default]
    No,
    /// The prefill's content when it has some, else its reasoning.
    Auto,
    /// The output goes on inside the prefill's reasoning block.
    Reasoning,
    /// The output goes on with the prefill's content (its reasoning, if
    /// any, is over).
    Content,
}

impl Continue {
    /// Reads a request's `continue_final_message`: a yes/no or one of
    /// llama.cpp's names; `None` for anything else.
    pub fn from_json(value: &Value) -> Option<Continue> {
        match value {
            Value::Null | Value::Bool(false) => Some(Continue::No),
            Value::Bool(true) => Some(Continue::Auto),
            Value::String(s) => match s.as_str() {
                "none" => Some(Continue::No),
                "auto" => Some(Continue::Auto),
                "reasoning" => Some(Continue::Reasoning),
                "content" => Some(Continue::Content),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the last message is a prefill the output continues.
    pub fn is_continued(self) -> bool {
        self != Continue::No
    }
}

impl From<bool> for Continue {
    fn from(yes: bool) -> Continue {
        if yes {
            Continue::Auto
        } else {
            Continue::No
        }
    }
}

/// Stands for an empty continued part in a render, to find where it starts.
const CUT: &str = "ContinueHere7f3a";

/// Renders the prompt for `request`. When `continues` says so and the last
/// message is an assistant turn, the prompt ends where the continued part of
/// that turn ends (for `auto`: its content, or its reasoning when it has no
/// content yet), and the prefill is returned; otherwise the request is
/// rendered as given. Variables in [`Analysis::assumed_empty`] the request
/// does not set are rendered empty, as the analysis rendered them.
pub fn continuation_prompt(
    template: &ChatTemplate,
    analysis: &Analysis,
    request: &RenderRequest,
    continues: Continue,
) -> Result<(String, Option<Prefill>)> {
    let mut extra = request.extra.clone();
    for name in &analysis.assumed_empty {
        // Variables the template needs and does not default (a `datetime`
        // it concatenates): the analysis rendered them empty, and only the
        // prompt's tail matters here, so the prompt does too.
        extra
            .entry(name.clone())
            .or_insert_with(|| Value::String(String::new()));
    }
    let request = &RenderRequest {
        extra,
        ..request.clone()
    };
    let render = |messages: &[Value], generation: bool| {
        let messages = template_messages(analysis, messages);
        template.render(&RenderRequest {
            messages,
            add_generation_prompt: generation,
            ..request.clone()
        })
    };
    let Some(prefill) = prefill(analysis, request.messages.last(), continues) else {
        return Ok((
            render(&request.messages, request.add_generation_prompt)?,
            None,
        ));
    };
    let rendered = render(&request.messages, false)?;
    let anchor = prefill.continued();
    if !anchor.is_empty() {
        let prompt = match rendered.rfind(anchor) {
            Some(at) => rendered[..at + anchor.len()].to_string(),
            None => rendered,
        };
        return Ok((prompt, Some(prefill)));
    }
    // Nothing written yet in the continued part: render a stand-in there
    // and cut before it, so the prompt ends where that part would start
    // (after a closed reasoning block, or inside an opened one).
    let mut messages = request.messages.clone();
    if let Some(last) = messages.last_mut() {
        let key = match prefill.part {
            PrefillPart::Content => "content",
            PrefillPart::Reasoning => reasoning_field_of(last).unwrap_or(REASONING_FIELDS[0]),
        };
        last[key] = Value::String(CUT.to_string());
    }
    let prompt = match render(&messages, false)
        .ok()
        .and_then(|r| r.find(CUT).map(|at| r[..at].to_string()))
    {
        Some(cut) => cut,
        None => rendered,
    };
    Ok((prompt, Some(prefill)))
}

/// The prefill `continues` asks for, when the last message is an assistant
/// turn.
fn prefill(analysis: &Analysis, last: Option<&Value>, continues: Continue) -> Option<Prefill> {
    let last = last.filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))?;
    let text = |key: &str| {
        last.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let content = text("content");
    // A template with no reasoning at all: the model never saw it, and the
    // message cannot carry it. A template with reasoning markers keeps it,
    // even if it drops it on this turn.
    let has_reasoning = analysis.reasoning.mode != ReasoningMode::None;
    let reasoning = if has_reasoning {
        reasoning_field_of(last).map(text).unwrap_or_default()
    } else {
        String::new()
    };
    let part = match continues {
        Continue::No => return None,
        Continue::Reasoning if has_reasoning => PrefillPart::Reasoning,
        Continue::Auto if content.is_empty() && !reasoning.is_empty() => PrefillPart::Reasoning,
        _ => PrefillPart::Content,
    };
    Some(Prefill {
        content,
        reasoning,
        part,
    })
}

/// OpenAI messages as the template wants them: tool-call `arguments` as
/// objects when the analysis found the template reads objects (OpenAI sends
/// JSON text), and an assistant's reasoning where the template reads it: a
/// thinking content part, or its own field (`reasoning_content` is OpenAI's;
/// gpt-oss reads `thinking`).
pub fn template_messages(analysis: &Analysis, messages: &[Value]) -> Vec<Value> {
    let objects = analysis
        .tools
        .as_ref()
        .is_some_and(|t| t.input.object_arguments);
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
        let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else {
            continue;
        };
        for call in calls {
            let Some(args) = call.pointer_mut("/function/arguments") else {
                continue;
            };
            if let Some(parsed) = args
                .as_str()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
            {
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
    let Some(reasoning) =
        reasoning_field_of(message).and_then(|k| message.as_object_mut()?.remove(k))
    else {
        return;
    };
    let Some(map) = message.as_object_mut() else {
        return;
    };
    let content = map.get("content").cloned().unwrap_or(Value::Null);
    map.insert(
        "content".into(),
        thinking_parts(reasoning.as_str().unwrap_or_default(), &content),
    );
}

/// Copies OpenAI's `reasoning_content` into `field` when the message has
/// no `field` of its own.
fn move_reasoning(message: &mut Value, field: &str) {
    const OPENAI: &str = "reasoning_content";
    if field.is_empty() || field == OPENAI || message.get(field).is_some() {
        return;
    }
    let Some(reasoning) = message.get(OPENAI).cloned() else {
        return;
    };
    if let Some(object) = message.as_object_mut() {
        object.insert(field.to_string(), reasoning);
    }
}
