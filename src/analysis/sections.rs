//! Sections of one turn: headers and message breaks.
//!
//! Channel formats write an assistant turn as several messages, each opened
//! by a header naming its section: `<|channel|>analysis<|message|>` before
//! reasoning, `<|channel|>final<|message|>` before content; header formats
//! open and close named sections (`<|open|>think<|sep|>` ...
//! `<|close|>think<|sep|>`). Both are learned from markers already read:
//!
//! - a *header* is the shape two markers share when they are compounds
//!   (`marker label marker`) differing only in the label: content's and
//!   reasoning's starts, or their ends. Any text of that shape is a header,
//!   whatever its label (models write channels the probes never render);
//! - a *message break* is reasoning's end marker when it ends with the
//!   generation prompt: the turn's message ends (`<|end|>`) and the next
//!   one opens as the prompt opened the first (`<|start|>assistant`).
//!
//! Invariant: every string here is copied from markers the analysis read
//! from renders; a template without such markers gets no headers and empty
//! break markers.

use super::model::{ContentFormat, Header, Reasoning};
use crate::markers::compound_parts;

/// Header shapes shared by content's and reasoning's markers.
pub fn headers(content: &ContentFormat, reasoning: &Reasoning) -> Vec<Header> {
    let mut out: Vec<Header> = Vec::new();
    for (a, b) in [
        (&content.start, &reasoning.start),
        (&content.end, &reasoning.end),
    ] {
        let (Some((o1, l1, c1)), Some((o2, l2, c2))) =
            (compound_parts(a.trim()), compound_parts(b.trim()))
        else {
            continue;
        };
        let header = Header {
            open: o1.to_owned(),
            close: c1.to_owned(),
        };
        if o1 == o2 && c1 == c2 && l1 != l2 && !out.contains(&header) {
            out.push(header);
        }
    }
    out
}

/// The message break inside reasoning's end marker: (message end, message
/// start), both empty when reasoning's end does not reopen the turn.
pub fn message_break(reasoning: &Reasoning, generation_prompt: &str) -> (String, String) {
    let prompt = generation_prompt.trim();
    match reasoning.end.strip_suffix(prompt) {
        Some(end) if !prompt.is_empty() && !end.trim().is_empty() => {
            (end.trim().to_owned(), prompt.to_owned())
        }
        _ => (String::new(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{PromptEffect, ReasoningMode};

    fn reasoning(start: &str, end: &str) -> Reasoning {
        Reasoning {
            mode: ReasoningMode::Tag,
            start: start.into(),
            end: end.into(),
            default_prompt: PromptEffect::None,
            thinking_on: None,
            thinking_off: None,
            only_with_tool_calls: false,
            bare_end: false,
            field: "reasoning_content".into(),
        }
    }

    #[test]
    fn headers_are_compounds_differing_in_the_label() {
        let content = ContentFormat {
            start: "<|c|>final<|m|>".into(),
            end: String::new(),
            calls_only: false,
        };
        let found = headers(&content, &reasoning("<|c|>analysis<|m|>", "<|end|>"));
        assert_eq!(
            found,
            [Header {
                open: "<|c|>".into(),
                close: "<|m|>".into()
            }]
        );
        let content = ContentFormat {
            start: "<response>".into(),
            end: "</response>".into(),
            calls_only: false,
        };
        assert!(headers(&content, &reasoning("<think>", "</think>")).is_empty());
    }

    #[test]
    fn a_break_is_an_end_that_reopens_the_turn() {
        let r = reasoning("<|c|>analysis<|m|>", "<|end|><|start|>assistant");
        assert_eq!(
            message_break(&r, "<|start|>assistant"),
            ("<|end|>".into(), "<|start|>assistant".into())
        );
        assert_eq!(
            message_break(&reasoning("<think>", "</think>"), "<|im_start|>assistant\n"),
            (String::new(), String::new())
        );
    }
}
