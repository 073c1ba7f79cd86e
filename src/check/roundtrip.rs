//! Parsing a probe output back, whole and streamed at every chunking, and
//! comparing the message with the turn that was rendered.
//!
//! Whole: content and reasoning must match the turn's (trimmed), names
//! exactly, arguments as JSON values. Streamed: the output is pushed as
//! bytes in chunks of 1 to [`MAX_CHUNK`] bytes (so chunks split characters
//! and markers everywhere), and the deltas, added up, must give the batch
//! message.
//!
//! Invariant: never panics; every disagreement is one line of text.

use serde_json::Value;

use super::turn::{content_inside_reasoning, Turn};
use crate::analysis::Analysis;
use crate::message::{AssistantMessage, MessageBuilder};
use crate::parser::OutputParser;

/// The largest chunk size streamed (every size from 1 up is tried).
pub const MAX_CHUNK: usize = 7;

/// The turn with its content as reasoning, when the output writes the
/// content inside the template's reasoning block (see
/// [`content_inside_reasoning`]) and the turn has no reasoning of its own.
pub fn content_as_reasoning(
    analysis: &Analysis,
    prompt: &str,
    output: &str,
    turn: &Turn,
) -> Option<Turn> {
    let inside = turn.reasoning.is_empty()
        && content_inside_reasoning(analysis, prompt, output, turn.content.trim());
    inside.then(|| Turn {
        content: String::new(),
        reasoning: turn.content.clone(),
        calls: turn.calls.clone(),
    })
}

/// Compares a parsed message with the turn: `Err` says the first difference.
pub fn compare(got: &AssistantMessage, want: &Turn) -> Result<(), String> {
    let content = got.content_text().trim();
    if content != want.content.trim() {
        return Err(format!("content {content:?}, expected {:?}", want.content));
    }
    let reasoning = got.reasoning_content.trim();
    if reasoning != want.reasoning.trim() {
        return Err(format!(
            "reasoning {reasoning:?}, expected {:?}",
            want.reasoning
        ));
    }
    if got.tool_calls.len() != want.calls.len() {
        return Err(format!(
            "{} tool calls, expected {}",
            got.tool_calls.len(),
            want.calls.len()
        ));
    }
    for (call, (name, args)) in got.tool_calls.iter().zip(&want.calls) {
        if call.function.name != *name {
            return Err(format!("name {:?}, expected {name:?}", call.function.name));
        }
        let expected: Option<Value> = serde_json::from_str(args).ok();
        let parsed: Option<Value> = serde_json::from_str(&call.function.arguments).ok();
        if parsed.is_none() || parsed != expected {
            return Err(format!(
                "arguments {}, expected {args}",
                call.function.arguments
            ));
        }
    }
    Ok(())
}

/// The chunk sizes whose stream does not add up to `batch`, with the first
/// difference of the first one.
pub fn stream_mismatches(
    parser: &OutputParser,
    output: &str,
    batch: &AssistantMessage,
) -> (Vec<usize>, Option<String>) {
    let mut failed = Vec::new();
    let mut first = None;
    for size in 1..=MAX_CHUNK {
        let streamed = streamed(parser, output.as_bytes(), size);
        if streamed != *batch {
            if first.is_none() {
                first = Some(difference(&streamed, batch));
            }
            failed.push(size);
        }
    }
    (failed, first)
}

/// The message the deltas of a stream in `size`-byte chunks add up to.
fn streamed(parser: &OutputParser, bytes: &[u8], size: usize) -> AssistantMessage {
    let mut stream = parser.stream();
    let mut built = MessageBuilder::default();
    // Each push replaces the buffer's deltas: add them up as a client does.
    let mut deltas = Vec::new();
    for chunk in bytes.chunks(size) {
        stream.push_bytes_into(chunk, &mut deltas);
        deltas.iter().for_each(|d| built.apply(d));
    }
    stream.finish_into(&mut deltas);
    deltas.iter().for_each(|d| built.apply(d));
    for &index in stream.withdrawn_calls() {
        built.withdraw(index);
    }
    built.into_message()
}

/// One line on how a streamed message differs from the batch one.
fn difference(streamed: &AssistantMessage, batch: &AssistantMessage) -> String {
    let show = |m: &AssistantMessage| serde_json::to_string(m).unwrap_or_default();
    format!("streamed {} != batch {}", show(streamed), show(batch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::turn::USER_MESSAGE;
    use crate::template::{ChatTemplate, TemplateConfig};

    fn hermes_think() -> Analysis {
        let source = include_str!("../../templates/hermes-think.jinja");
        let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
        template.analyze().unwrap()
    }

    /// Content a template writes after a reasoning opener with no closer
    /// before it is reasoning to any parser; content after the closer, or
    /// with no opener, is content.
    #[test]
    fn content_inside_the_reasoning_block_is_read_as_reasoning() {
        let analysis = hermes_think();
        let prompt = format!("<|im_start|>user\n{USER_MESSAGE}<|im_end|>\n<|im_start|>assistant\n");
        let call = (
            "get_weather".to_string(),
            r#"{"city": "Paris"}"#.to_string(),
        );
        let turn = Turn {
            content: "Let me check.".into(),
            reasoning: String::new(),
            calls: vec![call.clone()],
        };
        let inside = "<think>\nLet me check.\n</think>\n\n<tool_call>";
        let as_reasoning = content_as_reasoning(&analysis, &prompt, inside, &turn).unwrap();
        assert_eq!(
            as_reasoning,
            Turn {
                content: String::new(),
                reasoning: "Let me check.".into(),
                calls: vec![call],
            }
        );
        // The prompt opened the block: the content is inside it too.
        let opened = format!("{prompt}<think>\n");
        assert!(content_as_reasoning(&analysis, &opened, "Let me check.", &turn).is_some());
        for outside in [
            "Let me check.\n<tool_call>",
            "<think>\nhm\n</think>\n\nLet me check.",
        ] {
            assert_eq!(
                content_as_reasoning(&analysis, &prompt, outside, &turn),
                None,
                "{outside:?}"
            );
        }
        // A turn with reasoning of its own is taken as written.
        let reasoned = Turn {
            reasoning: "hm".into(),
            ..turn
        };
        assert_eq!(
            content_as_reasoning(&analysis, &prompt, inside, &reasoned),
            None
        );
    }
}
