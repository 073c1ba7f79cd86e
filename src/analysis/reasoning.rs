//! Reasoning markers (R1), the thinking switch (R2) and tools-only reasoning (R3).
//!
//! R1 reads the markers around the reasoning needle in a turn with reasoning
//! and content. Templates that ignore the reasoning field still reveal markers
//! through their generation prompts (an opened `<think>\n`, or an empty closed
//! block when thinking is off; R2 compares those) or through an empty block
//! written before every answer. A lone opening marker implies its conventional
//! closing marker (`<x>` → `</x>`, see `markers::closing_for`). Last, a
//! template that never renders a block may still tell the model to write one:
//! a caller switch (granite's `thinking`) that adds an instruction naming an
//! empty tag pair (`Write your thoughts between <think></think>`), or two
//! quoted phrases the thoughts and the answer follow (`after 'Here is my
//! thought process:'`, see `prose`), names the markers ("instructed
//! markers").
//!
//! Invariant: `start` and `end` are trimmed marker text; an empty `end` means
//! mode `None`.

use serde_json::{Map, Value};

use super::diff;
use super::model::{PromptEffect, Reasoning, ReasoningMode};
use super::outputs::{Outputs, Variant};
use super::probe::{CONTENT, REASONING};
use super::report::Report;
use crate::markers;
use crate::template::{ChatTemplate, RenderRequest};

/// Runs R1–R3 and summarises the reasoning format; the flag says the
/// markers are instructed ones, named by the template's prose.
pub fn detect(
    outputs: &Outputs,
    template: &ChatTemplate,
    variables: &[String],
    report: &mut Report,
) -> (Reasoning, bool) {
    let from_turns = markers_from_turn(outputs, report);
    let prompts: [Option<&str>; 3] = outputs.prompts.each_ref().map(Option::as_deref);
    let history = outputs.assistant_turn(Variant::Content).unwrap_or("");
    let from_prompts = markers_from_prompts(&prompts, template.source(), history);
    let from_history = || markers_from_history(outputs);
    let instructed = || instructed_markers(template, variables, &outputs.assumed_empty);
    // A turn whose block the prompt's own empty block shares (history
    // writes `<think>R</think>`, the prompt `<think></think>`) shows its
    // end but not its opener: the prompt's block names it, even when
    // history writes that empty block in every turn too
    // (`<|channel>thought\n<channel|>`), since its closer is the one the
    // turn's reasoning ends with.
    let from_turns = match from_turns {
        Some((start, end)) if start.is_empty() => {
            let opener = prompts
                .iter()
                .flatten()
                .find_map(|p| empty_block(p).filter(|(_, close)| *close == end));
            Some((opener.map_or(start, |(open, _)| open), end))
        }
        found => found,
    };
    let from_switch = || switched_off_block(outputs, template);
    let from_cut = || block_cut_from_content(template, &outputs.assumed_empty);
    let rendered = from_turns
        .or(from_prompts)
        .or_else(from_history)
        .or_else(from_switch)
        .or_else(from_cut);
    let from_prose = rendered.is_none();
    let (mut start, end) = rendered.or_else(instructed).unwrap_or_default();
    let from_prose = from_prose && !end.is_empty();
    if start.is_empty() {
        // The prompt may open the block that history renders share with it.
        start = opened_by_prompt(&prompts, &end).unwrap_or_default();
    }
    report_switch(outputs, &prompts, report);

    let effect = |prompt: Option<&str>| prompt.map(|p| prompt_effect(p, &start, &end));
    let default_prompt = effect(prompts[0]).unwrap_or(PromptEffect::None);
    let only_with_tool_calls = tools_only(outputs, report);
    let mode = match (end.is_empty(), only_with_tool_calls, default_prompt) {
        (true, _, _) => ReasoningMode::None,
        (false, true, _) => ReasoningMode::ToolsOnly,
        (false, false, PromptEffect::Opens) => ReasoningMode::ForcedOpen,
        (false, false, PromptEffect::Closes) => ReasoningMode::ForcedClosed,
        (false, false, PromptEffect::None) if start.is_empty() => ReasoningMode::Delimiter,
        _ => ReasoningMode::Tag,
    };
    let (thinking_on, thinking_off) = if outputs.has_thinking_switch {
        (effect(prompts[1]), effect(prompts[2]))
    } else {
        (None, None)
    };
    let field = outputs.reasoning_field.to_owned();
    let bare_end = writes_bare_end(outputs, &start, &end);
    let reasoning = Reasoning {
        mode,
        start,
        end,
        default_prompt,
        thinking_on,
        thinking_off,
        only_with_tool_calls,
        bare_end,
        field,
    };
    (reasoning, from_prose)
}

/// The content turn (no reasoning) begins with the end marker and no start
/// marker: the template closes an empty block it never opened, so models
/// write that lone end marker too.
fn writes_bare_end(outputs: &Outputs, start: &str, end: &str) -> bool {
    !start.is_empty()
        && !end.is_empty()
        && outputs
            .ok(Variant::Content)
            .is_some_and(|o| o.trim_start().starts_with(end))
}

/// R1: markers around the reasoning needle in a reasoning + content turn;
/// for templates that render reasoning only beside tool calls, the same on a
/// reasoning + call turn.
fn markers_from_turn(outputs: &Outputs, report: &mut Report) -> Option<(String, String)> {
    let read = |plain, with| match (outputs.get(plain), outputs.get(with)) {
        (Ok(p), Ok(w)) => Ok(w.contains(REASONING).then(|| block_markers(p, w)).flatten()),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let found = match read(Variant::Content, Variant::Reasoning) {
        Ok(Some(pair)) => Some(pair),
        Ok(None) => {
            report.same("R1");
            read(Variant::Call, Variant::ReasoningCall).ok().flatten()
        }
        Err(e) => {
            report.unsupported("R1", e);
            None
        }
    };
    if let Some((start, end)) = &found {
        report.found(
            "R1",
            format!(
                "start \"{}\", end \"{}\"",
                markers::visible(start),
                markers::visible(end)
            ),
        );
    }
    found
}

/// The reasoning markers in `with`, a render of `plain` plus reasoning.
fn block_markers(plain: &str, with: &str) -> Option<(String, String)> {
    let split = diff::split(plain, with);
    let (left, right) = split.markers_first();
    if left.trim().is_empty() {
        if let Some(at) = right.find(REASONING) {
            let start = right[..at].trim();
            let end = right[at + REASONING.len()..].trim();
            if !end.is_empty() {
                return Some((start.to_owned(), end.to_owned()));
            }
        }
    }
    // `plain` renders an empty block too, so the markers are shared text:
    // take the nearest marker on each side of the needle.
    // A compound marker (`<|close|>think<|sep|>`) is taken whole.
    let at = with.find(REASONING)?;
    let before = &with[..at];
    let start = markers::compound_ending(before)
        .or_else(|| markers::tokens(before).last().copied())
        .unwrap_or("");
    let after = &with[at + REASONING.len()..];
    // The content that follows is no label of a compound marker
    // (`</think>XYZ<|end|>`).
    let after = &after[..after.find(CONTENT).unwrap_or(after.len())];
    let first = markers::spans(after).into_iter().next()?;
    let end = markers::marker_or_compound_at(after, first.start).map(|r| &after[r])?;
    Some((start.to_owned(), end.to_owned()))
}

/// Markers from the generation prompts: an empty closed block, or a trailing
/// opening marker with a conventional closer that the template source also
/// contains or that history's assistant turn (`history`, header included)
/// never writes, when that closer is a tag's (`</think>`, `<|END_THINKING|>`;
/// see `markers::is_tag_closer`). A role header (`<|assistant_start|>`) is
/// in both; an opener only the prompt writes (`<|im_start|>assistant\n<think>`,
/// OLMo-3-Think) is for the model to close. An opener history writes right
/// before the content is the content's, never reasoning's.
fn markers_from_prompts(
    prompts: &[Option<&str>; 3],
    source: &str,
    history: &str,
) -> Option<(String, String)> {
    prompts.iter().flatten().find_map(|prompt| {
        // A labelled block the history turn writes too is a role header
        // (`<|start_header_id|>assistant<|end_header_id|>`), not reasoning.
        if let Some(pair) = empty_block(prompt).filter(|(start, _)| {
            markers::marker_at(start, 0).is_some_and(|m| m.end == start.len())
                || !history.contains(start.as_str())
        }) {
            return Some(pair);
        }
        let tokens = markers::tokens(prompt);
        let open = tokens
            .last()
            .filter(|open| prompt.trim_end().ends_with(**open))?;
        if markers::closing_for(open).is_some_and(|close| wraps_content(history, open, &close)) {
            return None;
        }
        let prompt_only = !history.is_empty() && !history.contains(*open);
        let close = markers::closing_for(open).filter(|c| {
            source.contains(c.as_str()) || (prompt_only && markers::is_tag_closer(c))
        })?;
        Some(((*open).to_owned(), close))
    })
}

/// History's turn writes `open` right before the content and `close` after
/// it: the pair wraps the answer, so a prompt ending with `open` opens the
/// answer, not reasoning (Command-A's `<|START_RESPONSE|>` ... `<|END_RESPONSE|>`).
/// A history turn that writes the opener before the content but never closes
/// it (Nemotron-Nano-v2's `<think>\n` + answer) keeps it as reasoning's.
fn wraps_content(history: &str, open: &str, close: &str) -> bool {
    let content = CONTENT;
    history.match_indices(open).any(|(at, _)| {
        let rest = history[at + open.len()..].trim_start();
        rest.strip_prefix(content)
            .is_some_and(|after| after.trim_start().starts_with(close))
    })
}

/// An empty closed block in `text`: a marker followed, with only whitespace
/// between, by its conventional closer (`<think>\n\n</think>`). A one-word
/// label right after the opener names the block (`<|channel>thought\n<channel|>`)
/// and belongs to the start marker, as R1 reads it from a rendered block.
fn empty_block(text: &str) -> Option<(String, String)> {
    let tokens = markers::tokens(text);
    tokens.windows(2).find_map(|pair| {
        let (open, close) = (pair[0], pair[1]);
        let o = text.find(open)? + open.len();
        let c = o + text[o..].find(close)?;
        let label = markers::block_label(&text[o..c])?;
        (markers::closing_for(open).as_deref() == Some(close))
            .then(|| (format!("{open}{label}"), close.to_owned()))
    })
}

/// Markers of an empty block the template writes before content in history,
/// or at the start of a call turn: Command-R7B writes its tool plan, a field
/// the probe does not fill, as `<|START_THINKING|><|END_THINKING|>` before
/// `<|START_ACTION|>`, and its model writes the plan there.
fn markers_from_history(outputs: &Outputs) -> Option<(String, String)> {
    let before = |variant, needle: &str| {
        let out = outputs.ok(variant)?;
        Some(&out[..out.find(needle)?])
    };
    let leading = |text: &str| {
        empty_block(text).filter(|(start, _)| text.trim_start().starts_with(start.as_str()))
    };
    before(Variant::Content, CONTENT)
        .and_then(empty_block)
        .or_else(|| before(Variant::Call, super::probe::NAME).and_then(leading))
}

/// The empty block the thinking switch turned off adds to a prompt that
/// does not come from the generation prompt (Hunyuan-A13B appends
/// `<think>\n\n</think>\n` after the whole conversation, so the generation
/// prompts with the switch on and off are the same): the one-user-turn
/// prompt rendered with thinking on and off.
fn switched_off_block(outputs: &Outputs, template: &ChatTemplate) -> Option<(String, String)> {
    if !outputs.has_thinking_switch {
        return None;
    }
    let empty = || empty_variables(&outputs.assumed_empty);
    let render = |on| one_user_turn(template, empty(), Some(on));
    let (on, off) = (render(true)?, render(false)?);
    empty_block(diff::split(&on, &off).right)
}

/// A block the template cuts out of an assistant's content in history
/// (`content.split('</think>')[-1]`): its model writes one before the
/// answer, though no probe renders it (Nemotron-Super-v1.5 switches
/// thinking by a directive in the system message, and its prompt opens
/// no block). The candidates are the tag pairs the template's text holds;
/// the render decides: a turn whose content is `<think>\nRRRR\n</think>\n\nXYZ`
/// shows `XYZ` and not `RRRR`.
fn block_cut_from_content(
    template: &ChatTemplate,
    assumed_empty: &[String],
) -> Option<(String, String)> {
    let source = template.source();
    let mut pairs: Vec<(String, String)> = markers::tokens(source)
        .into_iter()
        .filter_map(|open| {
            let close = markers::closing_for(open)?;
            let tag = markers::is_tag_closer(&close) && source.contains(close.as_str());
            tag.then(|| (open.to_owned(), close))
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs.into_iter().take(MAX_CUT_PAIRS).find(|(open, close)| {
        let content = format!("{open}\n{REASONING}\n{close}\n\n{CONTENT}");
        let messages = vec![
            serde_json::json!({"role": "user", "content": super::probe::USER}),
            serde_json::json!({"role": "assistant", "content": content}),
        ];
        let request = RenderRequest {
            messages,
            extra: empty_variables(assumed_empty),
            ..Default::default()
        };
        template
            .render(&request)
            .is_ok_and(|text| text.contains(CONTENT) && !text.contains(REASONING))
    })
}

/// The caller variables the probes set to empty text for the template to
/// render.
fn empty_variables(assumed_empty: &[String]) -> Map<String, Value> {
    assumed_empty
        .iter()
        .map(|v| (v.clone(), Value::from("")))
        .collect()
}

/// One user turn and the generation prompt, with `extra` as template
/// variables and `enable_thinking` (under the name the template reads).
fn one_user_turn(
    template: &ChatTemplate,
    extra: Map<String, Value>,
    enable_thinking: Option<bool>,
) -> Option<String> {
    let messages = vec![serde_json::json!({"role": "user", "content": super::probe::USER})];
    let request = RenderRequest {
        messages,
        add_generation_prompt: true,
        enable_thinking,
        extra,
        ..Default::default()
    };
    let request = template.thinking_alias(&request).unwrap_or(request);
    template.render(&request).ok()
}

/// Caller variables tried as switches; a template reading more is not worth
/// probing each.
const MAX_SWITCHES: usize = 16;

/// Tag pairs of the template's text tried as a block history cuts out of
/// the content, one render each (see [`block_cut_from_content`]).
const MAX_CUT_PAIRS: usize = 16;

/// Markers a caller switch tells the model to write: the first empty tag
/// pair (`<think></think>`), else the quoted phrase pair the thoughts and the
/// answer follow (`prose::reasoning_phrases`), in the text a variable set to `true` adds to the
/// prompt of one user turn (rendered without tools, which some templates
/// instruct about instead).
fn instructed_markers(
    template: &ChatTemplate,
    variables: &[String],
    assumed_empty: &[String],
) -> Option<(String, String)> {
    let empty = empty_variables(assumed_empty);
    let render = |extra| one_user_turn(template, extra, None);
    let off = render(empty.clone())?;
    let switches = variables
        .iter()
        .filter(|v| !crate::template::needles::is_provided(v) && !assumed_empty.contains(v));
    switches.take(MAX_SWITCHES).find_map(|var| {
        let mut extra = empty.clone();
        extra.insert(var.clone(), Value::Bool(true));
        let on = render(extra)?;
        let added = diff::split(&off, &on).right;
        empty_block(added).or_else(|| super::prose::reasoning_phrases(added))
    })
}

/// The opening marker a generation prompt ends with, when `end` closes it:
/// its conventional closer, or a compound with the same label
/// (`<|open|>think<|sep|>` for `<|close|>think<|sep|>`).
fn opened_by_prompt(prompts: &[Option<&str>; 3], end: &str) -> Option<String> {
    prompts.iter().flatten().find_map(|prompt| {
        let prompt = prompt.trim_end();
        if let Some(open) =
            markers::compound_ending(prompt).filter(|open| markers::compound_closes(open, end))
        {
            return Some(open.to_owned());
        }
        let last = markers::tokens(prompt).last().copied()?;
        // The end the turns show names the opener too: `<|think:end|>`
        // after a prompt ending `<|think:start|>`.
        let pairs = markers::closing_for(last).as_deref() == Some(end)
            || (last.contains("start") && last.replacen("start", "end", 1) == end);
        (prompt.ends_with(last) && pairs).then(|| last.to_owned())
    })
}

/// R2: how the thinking switch changes the generation prompt.
fn report_switch(outputs: &Outputs, prompts: &[Option<&str>; 3], report: &mut Report) {
    if !outputs.has_thinking_switch {
        report.unsupported("R2", "template does not read enable_thinking");
        return;
    }
    match (prompts[1], prompts[2]) {
        (Some(on), Some(off)) if on == off => report.same("R2"),
        (Some(on), Some(off)) => report.found(
            "R2",
            format!(
                "on \"{}\", off \"{}\"",
                markers::visible(on),
                markers::visible(off)
            ),
        ),
        _ => report.unsupported(
            "R2",
            "a generation prompt with enable_thinking failed to render",
        ),
    }
}

/// How a generation prompt affects the reasoning block.
fn prompt_effect(prompt: &str, start: &str, end: &str) -> PromptEffect {
    let prompt = prompt.trim_end();
    if end.is_empty() {
        return PromptEffect::None;
    }
    if !start.is_empty() && prompt.ends_with(start) {
        return PromptEffect::Opens;
    }
    if prompt.contains(end) {
        return PromptEffect::Closes;
    }
    PromptEffect::None
}

/// R3: reasoning rendered on a tool-call turn but not on a content turn.
fn tools_only(outputs: &Outputs, report: &mut Report) -> bool {
    let (Some(call), Ok(with_call)) = (
        outputs.ok(Variant::Call),
        outputs.get(Variant::ReasoningCall),
    ) else {
        report.default_unsupported("R3", "tool calls with reasoning did not render");
        return false;
    };
    let on_calls = with_call.contains(REASONING) && !call.contains(REASONING);
    let on_content = outputs
        .ok(Variant::Reasoning)
        .is_some_and(|o| o.contains(REASONING));
    match (on_calls, on_content) {
        (false, _) => report.same("R3"),
        (true, true) => report.found("R3", "reasoning rendered with content and with tool calls"),
        (true, false) => report.found("R3", "reasoning rendered only with tool calls"),
    }
    on_calls && !on_content
}
