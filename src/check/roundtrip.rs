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

use super::turn::Turn;
use crate::message::{AssistantMessage, MessageBuilder};
use crate::parser::OutputParser;

/// The largest chunk size streamed (every size from 1 up is tried).
pub const MAX_CHUNK: usize = 7;

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
