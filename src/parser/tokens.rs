//! Token accounting: which of the tokens fed to a stream wrote each part
//! of the message. A server reports `usage.completion_tokens_details.
//! reasoning_tokens` (vLLM's `count_reasoning_tokens`) from it, and can
//! point at the tokens behind the reasoning, the content or one call.
//!
//! A token is one [`OutputStream::push_token`](super::OutputStream::push_token).
//! A part's span runs from the token whose push made the part's first text
//! final to the token whose push made its last text final, both included.
//! A stream holds back text that may still begin a marker (`<` before
//! `</think>`), so a span can end a token later than the byte that wrote
//! its last character; markers themselves belong to no part, so the tokens
//! of `<think>` and `</think>` count only where they also released text.
//!
//! Invariants: spans are half-open ranges of token indices inside
//! `0..tokens`; a part that got no text has no span; what the finishing
//! step makes final belongs to the last token; counting reads the deltas a
//! push returns and nothing else, so it costs O(deltas).

use std::ops::Range;

use crate::message::Delta;

/// The tokens behind each part of a streamed message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenSpans {
    /// How many tokens were pushed.
    pub tokens: usize,
    /// The tokens that wrote reasoning text.
    pub reasoning: Option<Range<usize>>,
    /// The tokens that wrote content text.
    pub content: Option<Range<usize>>,
    /// Per call index, the tokens that wrote its id, name or arguments.
    pub calls: Vec<Option<Range<usize>>>,
}

impl TokenSpans {
    /// The number of reasoning tokens, as vLLM's usage reports it: the
    /// reasoning span's length (0 with no reasoning).
    pub fn reasoning_tokens(&self) -> usize {
        self.reasoning.as_ref().map_or(0, |span| span.len())
    }

    /// Counts one more token, whose push returned `deltas`.
    pub(crate) fn push(&mut self, deltas: &[Delta]) {
        self.tokens += 1;
        self.record(self.tokens - 1, deltas);
    }

    /// Gives `deltas` (the finishing step's) to the last token, if any.
    pub(crate) fn finish(&mut self, deltas: &[Delta]) {
        if let Some(last) = self.tokens.checked_sub(1) {
            self.record(last, deltas);
        }
    }

    fn record(&mut self, token: usize, deltas: &[Delta]) {
        for delta in deltas {
            if delta
                .reasoning_content
                .as_deref()
                .is_some_and(|t| !t.is_empty())
            {
                widen(&mut self.reasoning, token);
            }
            if delta.content.as_deref().is_some_and(|t| !t.is_empty()) {
                widen(&mut self.content, token);
            }
            for call in &delta.tool_calls {
                if self.calls.len() <= call.index {
                    self.calls.resize(call.index + 1, None);
                }
                widen(&mut self.calls[call.index], token);
            }
        }
    }
}

/// `span` grown to hold `token` (tokens come in order).
fn widen(span: &mut Option<Range<usize>>, token: usize) {
    match span {
        Some(span) => span.end = token + 1,
        None => *span = Some(token..token + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_runs_from_the_first_token_with_text_to_the_last() {
        let mut spans = TokenSpans::default();
        spans.push(&[]);
        spans.push(&[Delta::reasoning("a")]);
        spans.push(&[Delta::reasoning("")]);
        spans.push(&[Delta::reasoning("b"), Delta::content("c")]);
        spans.finish(&[Delta::content("d")]);
        assert_eq!(spans.reasoning, Some(1..4));
        assert_eq!(spans.reasoning_tokens(), 3);
        assert_eq!(spans.content, Some(3..4));
        assert_eq!(spans.tokens, 4);
    }

    #[test]
    fn finishing_with_no_token_counts_nothing() {
        let mut spans = TokenSpans::default();
        spans.finish(&[Delta::content("d")]);
        assert_eq!(spans, TokenSpans::default());
    }
}
