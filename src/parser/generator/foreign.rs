//! Other formats' call markers, which a model mixing dialects writes around
//! bare JSON calls (`[TOOL_CALLS]{...}`, `<tool_call>{...}</tool_call>`) and
//! Python call lists (`<|tool_call_start|>[f(x=1)]<|tool_call_end|>`): the
//! openers and closers the grammar captures `FOREIGN` so the
//! `foreign_markers` policy decides them; and the formats of the calls
//! they hold.
//!
//! Invariant: a marker the template itself knows (its formats', its
//! preserved and spare tokens) is never foreign.

use crate::analysis::{tool_tokens, ToolClass, ToolFormat};
use crate::protocol::outline::SectionMarks;
use crate::protocol::Protocol;
use std::sync::OnceLock;

/// Tool-call wrappers of widely trained formats beyond the fallback
/// dialects (Mistral's `[TOOL_CALLS]`, Llama's `<|python_tag|>` and
/// `<|python_start|>...<|python_end|>`): openers, then closers.
const WRAPPER_DIALECTS: ([&str; 3], [&str; 1]) = (
    ["[TOOL_CALLS]", "<|python_tag|>", "<|python_start|>"],
    ["<|python_end|>"],
);

/// The closing code fence of a fenced JSON call (its openers are
/// [`JSON_FENCES`](super::JSON_FENCES)): a wrapper of another format on
/// templates whose calls are not bare JSON (see [`bare_json_call_format`]).
pub(super) const FENCE_CLOSER: [&str; 1] = ["```"];

/// A bare JSON call (`{"name": ..., "arguments": {...}}`, no markers): what
/// a model mixing dialects writes in a Markdown code fence
/// (`Sure.\n```json\n{...}\n````) or inside another format's wrapper
/// whatever its template's format, and the JSON calls a Python call list
/// may hold (`[{"name": ...}]` where `[f(x=1)]` is the format). The JSON
/// fallback dialect's format (`analysis::fallback`) with its markers and
/// separator left out (calls in a fence are separated as bare calls are).
pub(super) fn bare_json_call_format() -> &'static ToolFormat {
    static FORMAT: OnceLock<ToolFormat> = OnceLock::new();
    FORMAT.get_or_init(|| {
        fallback_format(ToolClass::JsonNative, |format| {
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

/// A Python call list with no markers of its own (`[f(a="x"), g()]`): what
/// a model mixing dialects writes inside another format's wrapper
/// (`<|tool_call_start|>[...]<|tool_call_end|>` of LFM2-style templates,
/// `<|python_tag|>[...]`) whatever its template's format. The Python-list
/// fallback dialect's format (`analysis::fallback`) with the list's
/// brackets for its section markers.
pub(super) fn bracketed_python_call_format() -> &'static ToolFormat {
    static FORMAT: OnceLock<ToolFormat> = OnceLock::new();
    FORMAT.get_or_init(|| {
        fallback_format(ToolClass::PythonCall, |format| {
            format.section_start = "[".into();
            format.section_end = "]".into();
        })
    })
}

/// The markers around the calls of a fixed format above: its section's
/// (the template's formats have theirs read off the parser's outline).
pub(super) fn marks_of(format: &'static ToolFormat) -> SectionMarks<'static> {
    SectionMarks {
        start: &format.section_start,
        separator: &format.call_separator,
        end: &format.section_end,
    }
}

/// The fallback dialect's format (`analysis::fallback`) whose calls are of
/// `class`, with `edit`'s changes to its markers: the one way the fixed
/// formats above are made.
fn fallback_format(class: ToolClass, edit: impl FnOnce(&mut ToolFormat)) -> ToolFormat {
    let dialects = crate::analysis::fallback_dialect_formats();
    let found = dialects.iter().find(|f| f.class == class);
    let mut format = found.expect("a fallback dialect per fixed format").clone();
    edit(&mut format);
    format
}

/// Another format's call markers a model mixing dialects writes around
/// bare JSON calls: openers, then closers. They are the fallback
/// dialects' section and call markers (`analysis::fallback`) and
/// [`WRAPPER_DIALECTS`], less every marker the template itself knows (its
/// formats', its preserved and spare tokens): those are never foreign.
pub(super) fn foreign_markers(
    protocol: &Protocol,
    formats: &[ToolFormat],
) -> (Vec<String>, Vec<String>) {
    let own_formats: Vec<String> = formats.iter().flat_map(tool_tokens).collect();
    let own = |m: &&String| {
        protocol.preserved_tokens.contains(m)
            || protocol.markup.spare_tokens.contains(m)
            || own_formats.contains(m)
    };
    let (openers, closers) = dialect_tokens();
    let foreign = |list: &[String]| list.iter().filter(|m| !own(m)).cloned().collect();
    (foreign(openers), foreign(closers))
}

/// Every dialect's openers and closers (see [`foreign_markers`]), sorted,
/// each once: the same for every template, found once per process.
fn dialect_tokens() -> &'static (Vec<String>, Vec<String>) {
    static TOKENS: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    TOKENS.get_or_init(|| {
        let dialects = crate::analysis::fallback_dialect_formats();
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
