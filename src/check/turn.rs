//! One assistant turn rendered as the model would write it: the probe
//! outputs `check` parses back and feeds to the grammar exports.
//!
//! The turn is rendered after one user message (arguments passed as the
//! template wants them, via [`template_messages`]); the prompt is the same
//! conversation without the turn, rendered with the generation prompt. When
//! the rendered turn starts with the prompt, what follows, less the
//! end-of-turn text, is the output; when it does not, the output starts
//! where the two texts part, backed off to before a marker that point cuts
//! (as llama.cpp's harness cuts, `init_delta` in its `tests/test-chat.cpp`).
//!
//! There is no output-grammar generator yet (issue 30): the outputs are the
//! template's own renders of assistant turns, which is what a model trained
//! on the template writes.
//!
//! Invariants: never panics; a template that refuses a turn gives `Err`
//! with its reason; the output is a suffix of the rendered conversation.

use serde_json::{json, Map, Value};

use crate::analysis::Analysis;
use crate::prompt::template_messages;
use crate::template::{ChatTemplate, RenderRequest};

/// One assistant turn: content, reasoning and calls `(name, arguments as JSON text)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    /// Visible text.
    pub content: String,
    /// Reasoning text.
    pub reasoning: String,
    /// Calls: name and arguments as JSON text.
    pub calls: Vec<(String, String)>,
}

impl Turn {
    /// The turn a parsed message stands for.
    pub fn of(message: &crate::message::AssistantMessage) -> Turn {
        Turn {
            content: message.content_text().to_owned(),
            reasoning: message.reasoning_content.clone(),
            calls: message
                .tool_calls
                .iter()
                .map(|c| (c.function.name.clone(), c.function.arguments.clone()))
                .collect(),
        }
    }
}

/// A rendered turn: the prompt it continues and the model's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedTurn {
    /// The text the output continues: the conversation up to the turn with
    /// the generation prompt, or, when the turn does not render after it,
    /// the render up to where the two part.
    pub prompt: String,
    /// The conversation up to the turn rendered with the generation prompt,
    /// whole: `prompt` unless `by_common_prefix` cut it.
    pub generation_prompt: String,
    /// What the model writes after the prompt.
    pub output: String,
    /// The render did not start with the prompt; cut at the common prefix.
    pub by_common_prefix: bool,
}

/// The user message every probe turn answers.
pub const USER_MESSAGE: &str = "What is the weather in Paris?";

/// Whether `content` is inside the template's reasoning block as the
/// parser reads `output` after `prompt`: after the last reasoning opener
/// since the user's message (in the output, or at the end of the prompt),
/// with no reasoning closer between them (gpt-oss writes a call turn's
/// content in its analysis channel). Delimiter reasoning (no opener) never
/// holds content so.
pub fn content_inside_reasoning(
    analysis: &Analysis,
    prompt: &str,
    output: &str,
    content: &str,
) -> bool {
    let (start, end) = (
        analysis.reasoning.start.trim(),
        analysis.reasoning.end.trim(),
    );
    if content.is_empty() || start.is_empty() || end.is_empty() {
        return false;
    }
    let Some(at) = output.find(content) else {
        return false;
    };
    let text = format!("{prompt}{}", &output[..at]);
    let turn = text
        .rfind(USER_MESSAGE)
        .map_or(text.as_str(), |u| &text[u..]);
    turn.rfind(start).is_some_and(|s| !turn[s..].contains(end))
}

/// The assistant message for `turn`, as OpenAI sends it (content `null`
/// beside calls when the template wants it so).
pub fn assistant_message(analysis: &Analysis, turn: &Turn) -> Value {
    let null_content = analysis
        .tools
        .as_ref()
        .is_some_and(|t| t.input.null_content);
    let mut message = json!({"role": "assistant"});
    message["content"] = if turn.content.is_empty() && !turn.calls.is_empty() && null_content {
        Value::Null
    } else {
        Value::String(turn.content.clone())
    };
    if !turn.reasoning.is_empty() {
        // OpenAI's field; `template_messages` moves it where the template reads it.
        message["reasoning_content"] = Value::String(turn.reasoning.clone());
    }
    if !turn.calls.is_empty() {
        let calls: Vec<Value> = turn
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": call_id(analysis, name, i), "type": "function",
                       "function": {"name": name, "arguments": args}})
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// The id of a turn's call `index` (of function `name`) as the template
/// wants it: `call00000`, or where the template writes the id in the
/// name's place ([`ToolInput::named_ids`](crate::analysis::ToolInput)),
/// an id that names the function, `functions.get_weather:0`.
pub fn call_id(analysis: &Analysis, name: &str, index: usize) -> String {
    match analysis.tools.as_ref().is_some_and(|t| t.input.named_ids) {
        true => format!("functions.{name}:{index}"),
        false => format!("call{index:05}"),
    }
}

/// Renders `turn` after one user message, with `thinking` as the request's
/// thinking switch (on: `enable_thinking` and `reasoning_effort: "high"`,
/// the two switches templates read). `Err` says why the template refused.
pub fn render_turn(
    template: &ChatTemplate,
    analysis: &Analysis,
    tools: &[Value],
    turn: &Turn,
    thinking: Option<bool>,
) -> Result<RenderedTurn, String> {
    let message = assistant_message(analysis, turn);
    render_message(
        template,
        analysis,
        tools,
        message,
        thinking,
        thinking_on(thinking),
    )
}

/// The template variables beside `enable_thinking` that switch thinking on:
/// `reasoning_effort: "high"` (gpt-oss, Hy3) when `thinking` is on, else none.
pub fn thinking_on(thinking: Option<bool>) -> Map<String, Value> {
    let mut extra = Map::new();
    if thinking == Some(true) {
        extra.insert("reasoning_effort".into(), json!("high"));
    }
    extra
}

/// Renders the assistant `message` (OpenAI shape) after one user message,
/// with `thinking` as `enable_thinking` and `extra` as further template
/// variables. `Err` says why the template refused.
pub fn render_message(
    template: &ChatTemplate,
    analysis: &Analysis,
    tools: &[Value],
    message: Value,
    thinking: Option<bool>,
    mut extra: Map<String, Value>,
) -> Result<RenderedTurn, String> {
    // As a server's prompt renders them (`prompt::continuation_prompt`):
    // variables the template needs and does not default, empty.
    for name in &analysis.assumed_empty {
        extra
            .entry(name.clone())
            .or_insert_with(|| Value::String(String::new()));
    }
    let user = json!({"role": "user", "content": USER_MESSAGE});
    let request = |messages: Vec<Value>, generation_prompt: bool| {
        RenderRequest::default()
            .with_messages(template_messages(analysis, &messages))
            .with_tools(Some(tools.to_vec()))
            .with_add_generation_prompt(generation_prompt)
            .with_enable_thinking(thinking)
            .with_extra(extra.clone())
    };
    let prompt = template
        .render(&request(vec![user.clone()], true))
        .map_err(|e| format!("prompt: {e}"))?;
    let full = template
        .render(&request(vec![user.clone(), message], false))
        .map_err(|e| e.to_string())?;
    let closing = template
        .render(&request(vec![user], false))
        .unwrap_or_default();
    let cut = match full.starts_with(prompt.as_str()) {
        true => prompt.len(),
        false => common_prefix(&prompt, &full),
    };
    let output = strip_end(&full[cut..], analysis, &closing).to_owned();
    Ok(RenderedTurn {
        by_common_prefix: cut != prompt.len() || !full.starts_with(prompt.as_str()),
        prompt: full[..cut].to_owned(),
        generation_prompt: prompt,
        output,
    })
}

/// Where `full` leaves `prompt`: their longest common prefix, backed off to
/// before a marker it cuts (an unclosed `<` or `[`).
pub fn common_prefix(prompt: &str, full: &str) -> usize {
    let mut at = prompt
        .bytes()
        .zip(full.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !full.is_char_boundary(at) {
        at -= 1;
    }
    let head = &full[..at];
    let open = head
        .rfind(['<', '['])
        .filter(|&i| !head[i..].contains(['>', ']']));
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
        if let Some((at, _)) = rest
            .match_indices(eot)
            .find(|(at, _)| closing.ends_with(&rest[*at..]))
        {
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
