//! Content wrappers (C1): text a template writes around visible content.
//!
//! Read from the plain content turn: whatever surrounds the content needle,
//! except an empty reasoning block the template writes on every turn (that
//! belongs to reasoning) and the end-of-turn marker. Whitespace-only wrappers
//! are scaffolding, not markers.

use super::model::{ContentFormat, Reasoning};
use super::outputs::{Outputs, Variant};
use super::probe::CONTENT;
use super::report::Report;
use crate::markers::visible;

/// Reads the content wrappers.
pub fn detect(
    outputs: &Outputs,
    reasoning: &Reasoning,
    stop_marker: &str,
    report: &mut Report,
) -> ContentFormat {
    let out = match outputs.get(Variant::Content) {
        Ok(out) => out,
        Err(e) => {
            report.unsupported("C1", e);
            return ContentFormat::default();
        }
    };
    let Some(at) = out.find(CONTENT) else {
        report.unsupported("C1", "content is not rendered");
        return ContentFormat::default();
    };
    let mut start = &out[..at];
    if !reasoning.end.is_empty() {
        if let Some(i) = start.find(&reasoning.end) {
            start = &start[i + reasoning.end.len()..];
        }
    }
    let mut end = &out[at + CONTENT.len()..];
    // The turn's own end marker is not a content wrapper.
    if !stop_marker.is_empty() {
        if let Some(i) = end.find(stop_marker) {
            end = &end[..i];
        }
    }
    let keep = |s: &str| {
        if s.trim().is_empty() {
            String::new()
        } else {
            s.to_owned()
        }
    };
    let format = ContentFormat {
        start: keep(start),
        end: keep(end),
        calls_only: false,
    };
    match format.start.is_empty() && format.end.is_empty() {
        true => report.same("C1"),
        false => report.found(
            "C1",
            format!(
                "content wrapped in \"{}\" ... \"{}\"",
                visible(&format.start),
                visible(&format.end)
            ),
        ),
    }
    format
}
