//! Where a lazy tool grammar starts: trigger words and patterns.
//!
//! The grammar applies from the trigger on, the trigger text included (a
//! word), or from a pattern's first capture group. The trigger is the first
//! literal of the tool section: the section marker, else the call marker,
//! else the name's prefix; formats with no marker at all (a bare JSON object,
//! a bare Python call) get a pattern on the call's opening (`{"name"`,
//! `get_weather(`).
//!
//! When the template has reasoning markers, the trigger becomes a pattern that
//! only fires after the reasoning block: a model thinking aloud about
//! `<tool_call>` must stay free. Forced-open and delimiter-only reasoning need
//! the closing marker first; an optional block (`<think>...</think>`) is
//! skipped when the output opens with it.
//!
//! Invariants: every pattern compiles with the `regex` crate and has exactly
//! one capture group, which begins where the grammar's root begins.

use serde::{Deserialize, Serialize};

use super::markers::first_word;
use super::tools::Tool;
use crate::analysis::{ArgumentsSlot, IdSlot, NameSlot, PromptEffect, Reasoning, ReasoningMode, ToolFormat};

/// What a trigger matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    /// A literal word; the grammar starts at it.
    Word,
    /// A regex searched in the output; the grammar starts at its first capture group.
    Pattern,
    /// A regex the whole output so far must match; the grammar starts at its
    /// first capture group.
    PatternFull,
    /// A special token (one of the preserved tokens), by its text; the grammar
    /// starts with it.
    Token,
}

/// A point in the output where a lazy grammar takes over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    pub kind: TriggerKind,
    pub value: String,
}

/// The opening of the tool section: a literal word, or a regex for
/// marker-less formats.
enum Opening {
    Word(String),
    Pattern(String),
}

/// The triggers of a tool section in `format` for `tools`.
pub fn triggers(format: &ToolFormat, reasoning: &Reasoning, tools: &[Tool]) -> Vec<Trigger> {
    let opening = opening(format, tools);
    // A marker-less call is only recognisable as the whole output (after
    // reasoning); a marker may follow content.
    let anchored = matches!(opening, Opening::Pattern(_)) && !format.content_with_calls;
    let body = match &opening {
        Opening::Word(w) => regex::escape(w),
        Opening::Pattern(p) => p.clone(),
    };
    if reasoning.end.is_empty() {
        return plain(opening, anchored, &body);
    }
    let gap = if anchored { "\\s*" } else { "[\\s\\S]*?" };
    let end = regex::escape(&reasoning.end);
    let start = reasoning.start.trim();
    match reasoning.default_prompt {
        // The prompt already closed the block: what follows is not reasoning.
        PromptEffect::Closes => return plain(opening, anchored, &body),
        // The prompt opened it (or there is no start marker): the block must close first.
        PromptEffect::Opens => return vec![pattern(&format!("^[\\s\\S]*?{end}{gap}({body})"))],
        PromptEffect::None if start.is_empty() || reasoning.mode == ReasoningMode::ForcedOpen => {
            return vec![pattern(&format!("^[\\s\\S]*?{end}{gap}({body})"))]
        }
        PromptEffect::None => {}
    }
    let with_block = format!("^\\s*{}[\\s\\S]*?{end}{gap}({body})", regex::escape(start));
    // `??`: prefer no skipped text, so the first call is where the grammar starts.
    let without_block = format!("^\\s*(?:(?:{}){gap})??({body})", not_starting_with(start));
    vec![pattern(&with_block), pattern(&without_block)]
}

/// Triggers with no reasoning to skip.
fn plain(opening: Opening, anchored: bool, body: &str) -> Vec<Trigger> {
    match opening {
        Opening::Word(w) => vec![Trigger { kind: TriggerKind::Word, value: w }],
        Opening::Pattern(_) if anchored => vec![pattern(&format!("^\\s*({body})"))],
        Opening::Pattern(_) => vec![pattern(&format!("({body})"))],
    }
}

fn pattern(value: &str) -> Trigger {
    Trigger { kind: TriggerKind::Pattern, value: value.to_owned() }
}

/// A regex for "a text that does not begin with `start`": it differs from
/// `start` at some character (the `regex` crate has no lookahead).
fn not_starting_with(start: &str) -> String {
    let chars: Vec<char> = start.chars().collect();
    let mut options = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        let prefix: String = chars[..i].iter().collect();
        let other = if i == 0 { format!("[^\\s{}]", class_escape(*c)) } else { format!("[^{}]", class_escape(*c)) };
        options.push(format!("{}{other}", regex::escape(&prefix)));
    }
    options.join("|")
}

fn class_escape(c: char) -> String {
    if c.is_ascii_alphanumeric() || !c.is_ascii() {
        c.to_string()
    } else {
        format!("\\x{{{:X}}}", c as u32)
    }
}

/// The first thing the tool section writes.
fn opening(format: &ToolFormat, tools: &[Tool]) -> Opening {
    for marker in [&format.section_start, &format.call_start] {
        if let Some(w) = first_word(marker) {
            return Opening::Word(w);
        }
    }
    let names = || {
        let alts: Vec<String> = tools.iter().map(|t| regex::escape(&t.name)).collect();
        format!("(?:{})", alts.join("|"))
    };
    match &format.name {
        NameSlot::Tagged { prefix, suffix } => match first_word(prefix) {
            Some(w) => Opening::Word(w),
            None => {
                let after = first_word(suffix).map(|s| regex::escape(&s)).unwrap_or_default();
                let after = if matches!(format.arguments, ArgumentsSlot::Python) { "\\(".to_owned() } else { after };
                let after = if after.is_empty() || after == "\\(" { after } else { format!("\\s*{after}") };
                Opening::Pattern(format!("{}{after}", names()))
            }
        },
        NameSlot::JsonKey => Opening::Pattern(format!("\\{{\\s*\"{}\"", names())),
        NameSlot::JsonField { path } => {
            // The object opens with the id when the template writes it first.
            let path = match &format.id {
                Some(IdSlot::JsonField { path: id, before_name: true }) => id,
                _ => path,
            };
            let key = path.first().map(|k| regex::escape(&serde_json::to_string(k).unwrap_or_default())).unwrap_or_default();
            Opening::Pattern(format!("\\{{\\s*{key}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_starting_with_rejects_only_the_start() {
        let re = regex::Regex::new(&format!("^(?:{})", not_starting_with("<think>"))).unwrap();
        assert!(!re.is_match("<think>"));
        assert!(re.is_match("<thinx"));
        assert!(re.is_match("Hello"));
        assert!(!re.is_match(" Hello"), "whitespace is skipped before, not matched here");
    }
}
