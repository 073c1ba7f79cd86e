//! The record of which comparisons ran, and the preserved-token list.
//!
//! Every comparison (`docs/analysis.md`) leaves one entry: it found something, it found
//! no difference (the template ignores that input), or it was unsupported (a
//! render failed: the reason is the template's own error). Entries keep the
//! order of [`COMPARISONS`] so serialized analyses are stable.

use super::model::{
    ArgumentsSlot, Comparison, ComparisonStatus, ContentFormat, IdSlot, NameSlot, Reasoning,
    ToolFormat, TurnFormat,
};
use crate::markers;

/// Comparison names, in report order, with what each compares.
pub const COMPARISONS: &[(&str, &str)] = &[
    ("R1", "reasoning present vs absent"),
    ("R2", "enable_thinking false vs true"),
    ("R3", "reasoning with content vs with tool calls"),
    ("C1", "content vs tool calls vs reasoning"),
    ("T1", "no tool call vs one"),
    ("T2", "one call vs two"),
    ("T4", "function name foofoo vs barbar"),
    ("T5", "zero arguments vs one"),
    ("T6", "one argument vs two"),
    ("T7", "call id call00001 vs call99999"),
    ("A1", "argument name first vs second"),
    ("A2", "argument value XXXX vs YYYY"),
    ("A3", "string value vs integer value"),
    ("A4", "plain value vs value with <, & and a newline"),
    ("A5", "string value vs object and list values"),
    ("EOT", "content as the last assistant turn"),
];

/// Collects comparison outcomes during one analysis.
#[derive(Debug, Default)]
pub(crate) struct Report {
    entries: Vec<(String, ComparisonStatus)>,
}

impl Report {
    pub fn found(&mut self, name: &str, detail: impl Into<String>) {
        self.set(name, ComparisonStatus::Found(detail.into()));
    }

    pub fn same(&mut self, name: &str) {
        self.set(name, ComparisonStatus::NoDifference);
    }

    pub fn unsupported(&mut self, name: &str, reason: impl Into<String>) {
        self.set(name, ComparisonStatus::Unsupported(reason.into()));
    }

    /// Records `name` only if nothing was recorded for it yet.
    pub fn default_unsupported(&mut self, name: &str, reason: &str) {
        if !self.entries.iter().any(|(n, _)| n == name) {
            self.unsupported(name, reason);
        }
    }

    fn set(&mut self, name: &str, status: ComparisonStatus) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = status,
            None => self.entries.push((name.to_owned(), status)),
        }
    }

    /// The entries in [`COMPARISONS`] order; comparisons never reached are unsupported.
    pub fn finish(mut self) -> Vec<Comparison> {
        COMPARISONS
            .iter()
            .map(|(name, what)| {
                let status = match self.entries.iter().position(|(n, _)| n == name) {
                    Some(i) => self.entries.swap_remove(i).1,
                    None => ComparisonStatus::Unsupported("not reached".into()),
                };
                Comparison {
                    name: (*name).into(),
                    what: (*what).into(),
                    status,
                }
            })
            .collect()
    }
}

/// The marker tokens of every detected marker, deduplicated, in discovery order.
pub(crate) fn preserved_tokens(
    reasoning: &Reasoning,
    content: &ContentFormat,
    tools: Option<&ToolFormat>,
    turn: &TurnFormat,
) -> Vec<String> {
    let mut sources: Vec<&str> = vec![
        &reasoning.start,
        &reasoning.end,
        &content.start,
        &content.end,
    ];
    sources.extend(tools.map(tool_sources).unwrap_or_default());
    sources.push(&turn.stop_marker);
    distinct_tokens(sources)
}

/// The marker tokens of one tool format, deduplicated, in discovery order.
pub fn tool_tokens(t: &ToolFormat) -> Vec<String> {
    distinct_tokens(tool_sources(t))
}

/// Every raw marker text of a tool format.
pub fn tool_sources(t: &ToolFormat) -> Vec<&str> {
    let mut sources: Vec<&str> = [
        &t.section_start,
        &t.call_start,
        &t.call_end,
        &t.call_separator,
        &t.section_end,
    ]
    .map(String::as_str)
    .to_vec();
    if let NameSlot::Tagged { prefix, suffix } = &t.name {
        sources.extend([prefix.as_str(), suffix.as_str()]);
    }
    sources.extend(t.name_echo.as_deref());
    if let ArgumentsSlot::Tagged(a) = &t.arguments {
        sources.extend(
            [
                &a.name_prefix,
                &a.name_suffix,
                &a.value_prefix,
                &a.value_suffix,
                &a.separator,
                &a.end,
            ]
            .map(String::as_str),
        );
        sources.extend(a.named_close.as_deref());
    }
    if let Some(IdSlot::Tagged { prefix, suffix, .. }) = &t.id {
        sources.extend([prefix.as_str(), suffix.as_str()]);
    }
    sources
}

fn distinct_tokens(sources: Vec<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in sources.into_iter().flat_map(markers::tokens) {
        if !out.iter().any(|t| t == token) {
            out.push(token.to_owned());
        }
    }
    out
}
