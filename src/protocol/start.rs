//! Where the output starts relative to reasoning, from the prompt it
//! continues or, without one, from the thinking switch and the analysis.
//!
//! The generation prompt may open a reasoning block (`...assistant\n<think>\n`)
//! or hold a closed one (`<think>\n\n</think>\n\n`), and an assistant prefill
//! may stop inside either. Reading the prompt's tail covers all of these with
//! one rule: after the last end of turn, a start marker not followed by an
//! end marker means the output starts inside reasoning; an end marker means
//! reasoning is over, unless a marker token follows it (then it was an
//! earlier turn's text).

use crate::analysis::{Analysis, PromptEffect, ReasoningMode};
use crate::markers;

use super::{Marker, Start};

/// The start state for an output that follows `prompt` (when known).
pub fn start_state(
    analysis: &Analysis,
    prompt: Option<&str>,
    enable_thinking: Option<bool>,
) -> Start {
    let r = &analysis.reasoning;
    if r.mode == ReasoningMode::None {
        return Start::Free;
    }
    match prompt {
        Some(prompt) => from_prompt(analysis, prompt),
        None => {
            let effect = match enable_thinking {
                Some(true) => r.thinking_on.unwrap_or(r.default_prompt),
                Some(false) => r.thinking_off.unwrap_or(r.default_prompt),
                None => r.default_prompt,
            };
            match effect {
                PromptEffect::Opens => Start::InReasoning,
                PromptEffect::Closes => Start::AfterReasoning,
                PromptEffect::None => Start::Free,
            }
        }
    }
}

/// The marker `prompt` (else the generation prompt) ends with, whitespace
/// aside: `<|CHATBOT_TOKEN|>` of `<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>`.
/// A model that writes it first repeats what the prompt already holds.
pub fn trailing_marker<'p>(analysis: &'p Analysis, prompt: Option<&'p str>) -> Option<&'p str> {
    let prompt = prompt
        .unwrap_or(&analysis.turn.generation_prompt.default)
        .trim_end();
    if !prompt.ends_with(['>', ']']) {
        return None;
    }
    let span = markers::span_containing(prompt, prompt.len() - 1)?;
    (span.end == prompt.len()).then(|| &prompt[span])
}

/// Reasoning the prompt wrote for the model: in delimiter reasoning (the
/// block starts with the turn), the text of the current turn after the
/// generation prompt's opening marker (`Here are my reasoning steps:\n`).
/// A rendered turn writes nothing between that marker and its reasoning
/// (else the analysis would have found a start marker there), so a message
/// renders back as prompt and output only if its reasoning starts with it.
pub fn prompt_reasoning<'p>(analysis: &'p Analysis, prompt: Option<&'p str>) -> &'p str {
    if analysis.reasoning.mode != ReasoningMode::Delimiter {
        return "";
    }
    let prompt = prompt.unwrap_or(&analysis.turn.generation_prompt.default);
    let turn = current_turn(analysis, prompt).trim_start();
    match turn_opener(analysis).and_then(|opener| turn.strip_prefix(opener)) {
        Some(text) if !text.trim().is_empty() => text.trim_start(),
        _ => "",
    }
}

/// The text of the prompt from its last reasoning start marker, when the
/// output starts inside that block (what inline reasoning puts back in front
/// of the content).
pub fn open_block_text<'p>(analysis: &Analysis, prompt: &'p str) -> Option<&'p str> {
    let start = Marker::new(&analysis.reasoning.start);
    let core = start.first_core()?;
    let at = prompt.rfind(core)?;
    Some(&prompt[at..])
}

fn from_prompt(analysis: &Analysis, prompt: &str) -> Start {
    let tail = current_turn(analysis, prompt);
    let start = Marker::new(&analysis.reasoning.start);
    let end = Marker::new(&analysis.reasoning.end);
    let last_end = end.first_core().and_then(|c| tail.rfind(c));
    let last_start = start.first_core().and_then(|c| tail.rfind(c));
    match (last_start, last_end) {
        (Some(s), Some(e)) if s > e => Start::InReasoning,
        (Some(_), None) => Start::InReasoning,
        (_, Some(e)) if marker_after(tail, e + end_len(&analysis.reasoning.end, &tail[e..])) => {
            Start::Free
        }
        (_, Some(_)) => Start::AfterReasoning,
        (None, None) => Start::Free,
    }
}

/// The length of the end marker `text` starts with: all of it as written
/// (`<|end|><|start|>assistant`), else its first core.
fn end_len(end: &str, text: &str) -> usize {
    let raw = end.trim();
    match text.starts_with(raw) {
        true => raw.len(),
        false => Marker::new(end).first_core().map_or(0, str::len),
    }
}

/// Whether `tail` holds a marker token (`[/INST]`, `<|im_end|>`) from
/// byte `from` on. After the reasoning end marker a prompt that closed the
/// block writes only whitespace (or, in a prefill, the answer's text); a
/// marker after it means the end marker was text of an earlier turn (a
/// system prompt that shows the model `[THINK]...[/THINK]`), in a template
/// whose turns [`current_turn`] cannot cut.
fn marker_after(tail: &str, from: usize) -> bool {
    tail.char_indices()
        .skip_while(|(at, _)| *at < from)
        .any(|(at, c)| matches!(c, '<' | '[') && markers::marker_at(tail, at).is_some())
}

/// The prompt after the last end of turn or from the generation prompt's
/// last opening marker (`<|begin_assistant|>`), whichever is later: the turn
/// the output continues. A system text that names the reasoning end marker
/// to the model is not reasoning over.
fn current_turn<'p>(analysis: &Analysis, prompt: &'p str) -> &'p str {
    let stop = analysis.turn.stop_marker.trim();
    let after_stop = (!stop.is_empty())
        .then(|| prompt.rfind(stop).map(|at| at + stop.len()))
        .flatten();
    // The generation prompt's own opening marker, when it comes later: a
    // user turn ended by another marker than the assistant's stop marker
    // (`<|end|>` before `<|start|>assistant`) is not this turn.
    let at_opener = turn_opener(analysis).and_then(|opener| prompt.rfind(opener));
    after_stop.max(at_opener).map_or(prompt, |at| &prompt[at..])
}

/// The marker the generation prompt starts with, whitespace aside.
fn turn_opener(analysis: &Analysis) -> Option<&str> {
    let prompt = &analysis.turn.generation_prompt.default;
    let first = prompt.find(|c: char| !c.is_whitespace())?;
    let span = markers::span_containing(prompt, first + 1)?;
    (span.start == first).then(|| &prompt[span])
}
