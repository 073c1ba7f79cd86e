//! Lowering pass: other dialects' calls and markers, which a model mixing
//! dialects writes whatever its template's format.
//!
//! - A bare JSON call (`{"name": ..., "arguments": {...}}`, no markers):
//!   what a model writes in a Markdown code fence (`Sure.\n```json\n{...}\n````)
//!   or inside another format's wrapper, and the JSON calls a Python call
//!   list may hold (`[{"name": ...}]` where `[f(x=1)]` is the format).
//! - A Python call list with no markers of its own (`[f(a="x"), g()]`):
//!   what a model writes inside another format's wrapper
//!   (`<|tool_call_start|>[...]<|tool_call_end|>`, `<|python_tag|>[...]`).
//! - Foreign markers: the fallback dialects' section and call markers and
//!   other widely trained wrappers ([`WRAPPER_DIALECTS`]), which the parser
//!   reads around those calls, and (closers) alone.
//!
//! Both calls are the fallback dialects' (`analysis::fallback`) with their
//! markers changed, the same for every template: laid out once per process.
//!
//! Invariant: a marker the template itself knows (its formats', its
//! preserved and spare tokens) is never foreign.

use std::sync::{Arc, OnceLock};

use crate::analysis::{fallback_dialect_formats, ToolClass, ToolFormat};

use super::super::{CallLayout, Protocol};
use super::{ParserCall, SectionMarks, PLACEHOLDER};

/// Tool-call wrappers of widely trained formats beyond the fallback
/// dialects (Mistral's `[TOOL_CALLS]`, Llama's `<|python_tag|>` and
/// `<|python_start|>...<|python_end|>`): openers, then closers.
const WRAPPER_DIALECTS: ([&str; 3], [&str; 1]) = (
    ["[TOOL_CALLS]", "<|python_tag|>", "<|python_start|>"],
    ["<|python_end|>"],
);

/// A call of another dialect, as the parser reads it: its layout (the
/// name the placeholder) and the markers around its calls.
#[derive(Debug)]
#[non_exhaustive]
pub struct DialectCall {
    /// One call, laid out with the placeholder for its name.
    pub layout: Arc<CallLayout>,
    start: String,
    separator: String,
    end: String,
}

impl DialectCall {
    /// The markers around the dialect's calls.
    pub fn marks(&self) -> SectionMarks<'_> {
        SectionMarks {
            start: &self.start,
            separator: &self.separator,
            end: &self.end,
        }
    }

    /// The fallback dialect's format whose calls are of `class`, with
    /// `edit`'s changes to its markers.
    fn of(class: ToolClass, edit: impl FnOnce(&mut ToolFormat)) -> DialectCall {
        let found = fallback_dialect_formats().iter().find(|f| f.class == class);
        let mut format = found.expect("a fallback dialect per call").clone();
        edit(&mut format);
        DialectCall {
            layout: Arc::new(CallLayout::new(&format, PLACEHOLDER)),
            start: format.section_start,
            separator: format.call_separator,
            end: format.section_end,
        }
    }
}

/// A bare JSON call: the JSON fallback dialect with its markers and
/// separator left out (calls in a fence are separated as bare calls are).
pub fn bare_json_call() -> &'static DialectCall {
    static CALL: OnceLock<DialectCall> = OnceLock::new();
    CALL.get_or_init(|| {
        DialectCall::of(ToolClass::JsonNative, |format| {
            for marker in [
                &mut format.section_start,
                &mut format.section_end,
                &mut format.call_start,
                &mut format.call_end,
                &mut format.call_separator,
            ] {
                marker.clear();
            }
        })
    })
}

/// A Python call list: the Python-list fallback dialect with the list's
/// brackets for its section markers.
pub fn bracketed_python_call() -> &'static DialectCall {
    static CALL: OnceLock<DialectCall> = OnceLock::new();
    CALL.get_or_init(|| {
        DialectCall::of(ToolClass::PythonCall, |format| {
            format.section_start = "[".into();
            format.section_end = "]".into();
        })
    })
}

/// Other formats' call markers a model mixing dialects writes around
/// calls, less every marker the template knows itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Foreign {
    /// Openers, sorted, each once.
    pub openers: Vec<String>,
    /// Closers, sorted, each once.
    pub closers: Vec<String>,
}

impl Foreign {
    /// No foreign markers.
    pub const NONE: Foreign = Foreign {
        openers: Vec::new(),
        closers: Vec::new(),
    };
}

impl Protocol {
    /// The foreign markers of this protocol, whose own calls are `calls`:
    /// every dialect's (see [`dialect_tokens`]) less the template's own
    /// markers (its calls' tokens, preserved and spare tokens).
    pub(super) fn foreign(&self, calls: &[ParserCall]) -> Foreign {
        let own = |m: &&String| {
            self.preserved_tokens.contains(m)
                || self.markup.spare_tokens.contains(m)
                || calls.iter().any(|c| c.tokens.contains(m))
        };
        let (openers, closers) = dialect_tokens();
        let foreign = |list: &[String]| list.iter().filter(|m| !own(m)).cloned().collect();
        Foreign {
            openers: foreign(openers),
            closers: foreign(closers),
        }
    }
}

/// Every dialect's openers and closers: the fallback dialects' section
/// and call markers and [`WRAPPER_DIALECTS`], sorted, each once; the same
/// for every template, found once per process.
fn dialect_tokens() -> &'static (Vec<String>, Vec<String>) {
    static TOKENS: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let dialects = fallback_dialect_formats();
        let openers = dialect_markers(
            dialects,
            |f| [&f.section_start, &f.call_start],
            &WRAPPER_DIALECTS.0,
        );
        let closers = dialect_markers(
            dialects,
            |f| [&f.call_end, &f.section_end],
            &WRAPPER_DIALECTS.1,
        );
        (openers, closers)
    })
}

/// The tokens in the markers `pick` takes of each of `dialects`, and
/// `wrappers`: sorted, each once.
fn dialect_markers(
    dialects: &[ToolFormat],
    pick: impl Fn(&ToolFormat) -> [&String; 2],
    wrappers: &[&str],
) -> Vec<String> {
    let tokens = |raw: [&String; 2]| -> Vec<String> {
        let found = raw.into_iter().flat_map(|m| crate::markers::tokens(m));
        found.map(str::to_string).collect()
    };
    let mut list: Vec<String> = dialects
        .iter()
        .flat_map(|f| tokens(pick(f)))
        .chain(wrappers.iter().map(|w| w.to_string()))
        .collect();
    list.sort();
    list.dedup();
    list
}
