//! Training text with assistant masks: a conversation rendered by its own
//! template, and the byte ranges of it the model generated.
//!
//! A span is one assistant turn: from where the turn's rendered text stops
//! agreeing with the prompt the model saw before it (the conversation up to
//! the turn, rendered with the generation prompt: so the generation prompt
//! is never in a span), through the turn's end-of-turn text (the analysis's
//! `end_of_turn`, e.g. `<|im_end|>\n`, the first one after the start that
//! the analysis's `stop_marker` opens). Templates need no
//! `{% generation %}` blocks; where they have them, the spans are the same
//! when the block starts after the generation prompt (`tests/rendering/spans.rs`).
//!
//! Invariants: spans are ordered, disjoint, on character boundaries and
//! inside the text; an assistant turn that renders nothing gets no span;
//! every render is `render_chat`, so polyfills apply as in serving.

use serde::Serialize;

use crate::analysis::Analysis;
use crate::error::Result;
use crate::template::{ChatTemplate, RenderRequest};

/// A rendered conversation and its assistant spans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SpannedText {
    /// The conversation in the model's own format.
    pub text: String,
    /// `[start, end)` byte ranges of `text` the model generated, one per
    /// assistant turn, in order.
    pub assistant_spans: Vec<(usize, usize)>,
}

/// Renders `request` with `template` and finds its assistant spans from
/// `analysis` (the template's own).
pub fn render_with_spans(
    template: &ChatTemplate,
    analysis: &Analysis,
    request: &RenderRequest,
) -> Result<SpannedText> {
    let text = template.render_chat(request)?;
    // Every prefix renders the tool path as the whole conversation does
    // (a prefix without calls could otherwise keep a native block).
    let request = &RenderRequest {
        tool_formatting: template.tool_formatting_for(request),
        ..request.clone()
    };
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, message) in request.messages.iter().enumerate() {
        if message.get("role").and_then(|r| r.as_str()) != Some("assistant") {
            continue;
        }
        let floor = spans.last().map_or(0, |s| s.1);
        let prompt = template.render_chat(&RenderRequest {
            messages: request.messages[..i].to_vec(),
            add_generation_prompt: true,
            ..request.clone()
        })?;
        let start = turn_start(&text, &prompt).max(floor);
        let through = template.render_chat(&RenderRequest {
            messages: request.messages[..=i].to_vec(),
            add_generation_prompt: false,
            ..request.clone()
        })?;
        // When the conversation through this turn renders as a prefix of the
        // whole, the turn ends there at the latest (a turn that ends with
        // another token than the last turn's, `<|eom_id|>`).
        let through_end = through_bound(&text, &through, start, analysis);
        let end = match (turn_end(&text, start, analysis), through_end) {
            (Some(end), Some(bound)) => end.min(bound),
            (Some(end), None) => end,
            (None, Some(bound)) => bound,
            // No end-of-turn text: where the conversation through this turn stops agreeing.
            (None, None) => common_prefix(&text, &through),
        };
        if end > start {
            spans.push((start, end));
        }
    }
    Ok(SpannedText {
        text,
        assistant_spans: spans,
    })
}

/// The end of the first end-of-turn text at or after `start`: the stop
/// marker, and the rest of `end_of_turn` when the text goes on with it.
fn turn_end(text: &str, start: usize, analysis: &Analysis) -> Option<usize> {
    let stop = analysis.turn.stop_marker.as_str();
    if stop.is_empty() {
        return None;
    }
    let at = start + text.get(start..)?.find(stop)?;
    let after_stop = at + stop.len();
    let rest_of_turn = analysis.turn.end_of_turn.strip_prefix(stop).unwrap_or("");
    Some(if text[after_stop..].starts_with(rest_of_turn) {
        after_stop + rest_of_turn.len()
    } else {
        after_stop
    })
}

/// Where the turn after `prompt` starts in `text`. Mostly where the two stop
/// agreeing; but a template may render the end of the prompt differently
/// once a turn follows it (`</tool_response>\n<|im_end|>` against
/// `</tool_response><|im_end|>`, a system text moved to a later user turn):
/// then the longest end of the prompt's disagreeing rest found just ahead in
/// `text` (at least 6 bytes, or the whole rest) marks the start.
fn turn_start(text: &str, prompt: &str) -> usize {
    let agreed = common_prefix(text, prompt);
    let rest = &prompt[agreed..];
    let ahead = floor_boundary(text, (agreed + rest.len() + 16).min(text.len()));
    let window = &text[agreed..ahead];
    let shortest = rest.len().min(6);
    let rest_start = floor_boundary(rest, rest.len().saturating_sub(512));
    for (i, _) in rest
        .char_indices()
        .filter(|&(i, _)| i >= rest_start && rest.len() - i >= shortest)
    {
        let tail = &rest[i..];
        if let Some(at) = window.find(tail) {
            return agreed + at + tail.len();
        }
    }
    word_start(text, agreed)
}

/// Where the turn ends at the latest, from `through` (the conversation
/// rendered through the turn): its end when it is a prefix of `text` (a turn
/// that ends with another token than the last turn's, `<|eom_id|>`); else
/// where the two stop agreeing, when a message end or stop marker is written
/// there (a last turn closed by `<|return|>`, a historical one by `<|end|>`).
fn through_bound(text: &str, through: &str, start: usize, analysis: &Analysis) -> Option<usize> {
    if text.starts_with(through) {
        return Some(through.len());
    }
    // Agreement that stops inside a word or marker (`<t`: `<think>` against
    // `<tool_call>`) stops before it.
    let agreed = word_start(text, common_prefix(text, through));
    if agreed <= start {
        return None;
    }
    // Only a closer there says the turn ended; disagreement alone may be
    // inside the turn (a call rendered otherwise as the last turn).
    let closers = [
        analysis.turn.end_of_turn.as_str(),
        analysis.turn.stop_marker.as_str(),
        analysis.turn.message_end.as_str(),
    ];
    let closer = closers
        .iter()
        .filter(|c| !c.is_empty() && text[agreed..].starts_with(**c))
        .map(|c| c.len())
        .max()?;
    Some(agreed + closer)
}

/// The largest character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `at`, moved back to the start of the word it cuts: a prompt that ends in
/// a word the turn's text begins alike (`Here are` / `Hello`) agrees with it
/// for a few letters the model still wrote.
fn word_start(text: &str, at: usize) -> usize {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let cuts = text[at..].chars().next().is_some_and(word);
    let at = if cuts {
        text[..at]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| word(c))
            .last()
            .map_or(at, |(i, _)| i)
    } else {
        at
    };
    // Inside a marker (`<|tool_call>` against `<|turn>`): back to its opening.
    match (text[..at].rfind('<'), text[..at].rfind('>')) {
        (Some(open), close) if close.is_none_or(|c| c < open) => open,
        _ => at,
    }
}

/// The length of the longest common prefix of `a` and `b`, on a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_inside_a_word_or_marker_moves_back() {
        assert_eq!(word_start("x\nHello", 4), 2);
        assert_eq!(word_start("<|turn>\n<|tool_call>", 10), 8);
        assert_eq!(word_start("ab <c>d", 3), 3);
    }

    #[test]
    fn a_prompt_rendered_otherwise_once_a_turn_follows_still_marks_the_start() {
        let text = "</r>\n<|end|><|start|>assistant\nHi<|end|>";
        let prompt = "</r><|end|><|start|>assistant\n";
        assert_eq!(&text[turn_start(text, prompt)..], "Hi<|end|>");
    }

    #[test]
    fn common_prefix_stops_on_a_character_boundary() {
        assert_eq!(common_prefix("aé", "aè"), 1);
        assert_eq!(common_prefix("abc", "abd"), 2);
        assert_eq!(common_prefix("ab", "ab"), 2);
    }
}
