//! The prompt side of `check`: how the tool path is rendered (the
//! template's own or our polyfill), whether a growing conversation's
//! prompts are prefix-stable, and the training spans of its assistant turns.
//!
//! The conversation: a system message, a user question, an assistant call,
//! its result, an answer, a second question and a second answer. Its
//! prompts (after each user or tool message, with the generation prompt)
//! should each be a byte prefix of the next, so a server's KV cache is
//! reused; each break is reported with where it is and why (the generation
//! prompt is not how the turn renders once it is history, or earlier text
//! is rewritten). Renders go through `render_chat`, as a server renders.
//!
//! Invariant: never fails: a conversation the template refuses is reported
//! as such.

use serde::Serialize;
use serde_json::{json, Value};

use crate::analysis::Analysis;
use crate::spans::render_with_spans;
use crate::template::{ChatTemplate, RenderRequest, ToolFormatting};

/// How a part of the tool path is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Rendering {
    /// By the template itself.
    Native,
    /// By our polyfill (Hermes style, or calls in the model's own format).
    Polyfilled,
}

/// One place where a prompt is not a prefix of the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PrefixBreak {
    /// The message count of the earlier prompt.
    pub after_messages: usize,
    /// The byte where the two prompts part.
    pub at: usize,
    /// The earlier prompt's text from there (a few dozen bytes).
    pub was: String,
    /// The later prompt's text from there.
    pub now: String,
    /// Why, in one line.
    pub why: String,
}

/// One assistant turn's training span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Span {
    /// `[start, end)` byte range in the rendered conversation.
    pub range: (usize, usize),
    /// The span's text (what the model is trained to write).
    pub text: String,
}

/// What the prompt side looks like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PromptReport {
    /// How the tool definitions are rendered.
    pub tool_block: Rendering,
    /// How earlier calls and their results are rendered in a conversation
    /// that has them.
    pub tool_history: Rendering,
    /// Every prompt of the conversation is a byte prefix of the next.
    pub prefix_stable: bool,
    /// Where they are not.
    pub prefix_breaks: Vec<PrefixBreak>,
    /// The assistant turns' training spans.
    pub spans: Vec<Span>,
    /// What is wrong with the spans or the renders, one line each.
    pub problems: Vec<String>,
}

/// The probe conversation (see the module doc).
fn conversation() -> Vec<Value> {
    vec![
        json!({"role": "system", "content": "You are a helpful assistant."}),
        json!({"role": "user", "content": "What is the weather in Paris?"}),
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call00001", "content": "{\"sky\": \"sunny\"}"}),
        json!({"role": "assistant", "content": "It is sunny in Paris."}),
        json!({"role": "user", "content": "And tomorrow?"}),
        json!({"role": "assistant", "content": "Sunny again tomorrow."}),
    ]
}

/// The prompt side of `template` (with the front door's polyfills).
pub fn inspect(template: &ChatTemplate, analysis: &Analysis, tools: &[Value]) -> PromptReport {
    let messages = conversation();
    let request = |n: usize, generation_prompt: bool| {
        RenderRequest::default()
            .with_messages(messages[..n].to_vec())
            .with_tools(Some(tools.to_vec()))
            .with_add_generation_prompt(generation_prompt)
    };
    let caps = template.capabilities();
    let whole = request(messages.len(), false);
    let manual = template.tool_formatting_for(&whole) == ToolFormatting::Manual;
    let tool_history = match manual || !caps.tool_calls || !caps.tool_responses {
        true => Rendering::Polyfilled,
        false => Rendering::Native,
    };
    let tool_block = match manual || !caps.tools {
        true => Rendering::Polyfilled,
        false => Rendering::Native,
    };
    let mut problems = Vec::new();
    let prefix_breaks = prefix_breaks(template, &messages, &request, &mut problems);
    let spans = spans(template, analysis, &whole, &mut problems);
    PromptReport {
        tool_block,
        tool_history,
        prefix_stable: prefix_breaks.is_empty(),
        prefix_breaks,
        spans,
        problems,
    }
}

/// Where each prompt (after a user or tool message) stops being a prefix of the next.
fn prefix_breaks(
    template: &ChatTemplate,
    messages: &[Value],
    request: &dyn Fn(usize, bool) -> RenderRequest,
    problems: &mut Vec<String>,
) -> Vec<PrefixBreak> {
    // A server sends a prompt after a user or tool message, never after the system one alone.
    let ends: Vec<usize> = (1..=messages.len())
        .filter(|&n| matches!(messages[n - 1]["role"].as_str(), Some("user" | "tool")))
        .collect();
    let mut prompts = Vec::new();
    for &n in &ends {
        match template.render_chat(&request(n, true)) {
            Ok(text) => prompts.push((n, text)),
            Err(e) => problems.push(format!(
                "the prompt after {n} messages does not render: {e}"
            )),
        }
    }
    prompts
        .windows(2)
        .filter(|w| !w[1].1.starts_with(&w[0].1))
        .map(|w| {
            let (n, was) = (&w[0].0, &w[0].1);
            let now = &w[1].1;
            let at = crate::check::turn::common_prefix(was, now);
            let history = template
                .render_chat(&request(*n, false))
                .unwrap_or_default();
            let why = if now.starts_with(&history) && at >= history.len() {
                "the generation prompt is not how the assistant turn starts once it is history"
            } else {
                "text of earlier messages is rewritten when the conversation grows"
            };
            PrefixBreak {
                after_messages: *n,
                at,
                was: excerpt(was, at),
                now: excerpt(now, at),
                why: why.into(),
            }
        })
        .collect()
}

/// Up to 40 bytes of `text` from `at` (on character boundaries).
fn excerpt(text: &str, at: usize) -> String {
    let mut end = (at + 40).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(at..end).unwrap_or("").to_owned()
}

/// The spans of the whole conversation, and a problem for each assistant
/// turn without one or whose span misses its text.
fn spans(
    template: &ChatTemplate,
    analysis: &Analysis,
    whole: &RenderRequest,
    problems: &mut Vec<String>,
) -> Vec<Span> {
    let spanned = match render_with_spans(template, analysis, whole) {
        Ok(spanned) => spanned,
        Err(e) => {
            problems.push(format!("the conversation does not render: {e}"));
            return Vec::new();
        }
    };
    let spans: Vec<Span> = spanned
        .assistant_spans
        .iter()
        .map(|&(start, end)| Span {
            range: (start, end),
            text: spanned.text[start..end].to_owned(),
        })
        .collect();
    let wanted = [
        "get_weather",
        "It is sunny in Paris.",
        "Sunny again tomorrow.",
    ];
    if spans.len() != wanted.len() {
        problems.push(format!(
            "{} training spans for {} assistant turns",
            spans.len(),
            wanted.len()
        ));
    }
    for (span, want) in spans.iter().zip(wanted) {
        if !span.text.contains(want) {
            problems.push(format!(
                "the span {:?} misses its turn's text {want:?}",
                span.range
            ));
        }
    }
    spans
}
