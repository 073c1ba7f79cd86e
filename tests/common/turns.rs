//! Rendering one assistant turn as a model would write it, for the tests that
//! check what a template's outputs look like to the parser and to grammars:
//! the library's own renderer (`chat_autoparser::check::turn`, which `check`
//! renders its probes with), plus the template loading and tool sets the
//! test tiers share. A test's prompt is the whole generation prompt
//! (`RenderedTurn::generation_prompt`), also when the output was cut at the
//! common prefix. A test crate includes it with
//! `#[path = "common/turns.rs"] mod turns;`.

#![allow(dead_code)] // Each test uses the part it needs.

use chat_autoparser::{Analysis, ChatTemplate, TemplateConfig, TemplateSource};
use serde_json::{json, Value};

/// The template at `path` with its analysis (default configuration); `None`
/// when it does not load, compile or analyze.
pub fn analyzed(path: &std::path::Path) -> Option<(ChatTemplate, Analysis)> {
    let source = TemplateSource::load(path).ok()?;
    let tmpl = ChatTemplate::from_source(&source, &TemplateConfig::default()).ok()?;
    let analysis = tmpl.analyze().ok()?;
    Some((tmpl, analysis))
}

/// How many cases a property runs: the number in the environment variable
/// `var` when set (a longer search), `default` otherwise.
pub fn case_count(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The `.jinja` files of `dir`, sorted (none when it does not exist).
pub fn jinja_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    files.sort();
    files
}

/// The tools the grammar-engine tiers (llguidance, xgrammar) constrain
/// calls to: an enum, an integer, a nested object with an array and a
/// boolean, required and optional arguments.
pub fn engine_tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}
            },
            "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "search", "description": "Search", "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "exact": {"type": "boolean"}}},
                "limit": {"type": "integer"}
            },
            "required": ["query"]}}}),
    ]
}

/// `check`'s render of a probe turn: reasoning goes where the template
/// reads it (its own field, or a thinking content part), as `check` sends it.
#[allow(unused_imports)] // Each test uses the part it needs.
pub use chat_autoparser::check::turn::{
    call_id, render_message, render_turn, RenderedTurn as Rendered, Turn,
};

/// Both thinking switches templates read, on or off: `reasoning_effort`
/// `high` or `low` (gpt-oss, Hy3) beside `enable_thinking`.
pub fn thinking_switch(on: bool) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert(
        "reasoning_effort".into(),
        json!(if on { "high" } else { "low" }),
    );
    extra
}

/// The library's [`Turn`] for borrowed parts: calls `(name, arguments as JSON text)`.
pub fn turn(content: &str, reasoning: &str, calls: &[(&str, String)]) -> Turn {
    Turn {
        content: content.into(),
        reasoning: reasoning.into(),
        calls: calls
            .iter()
            .map(|(name, args)| (name.to_string(), args.clone()))
            .collect(),
    }
}

/// Calls of [`engine_tools`] a grammar must reject: (what, calls).
pub fn argument_mutations() -> Vec<(&'static str, Vec<(&'static str, Value)>)> {
    vec![
        (
            "unknown tool",
            vec![("delete_everything", json!({"city": "Paris"}))],
        ),
        (
            "missing required argument",
            vec![("get_weather", json!({"unit": "celsius"}))],
        ),
        (
            "wrong argument type",
            vec![("get_weather", json!({"city": "Paris", "days": "three"}))],
        ),
    ]
}

/// The end of the reasoning block `generation_prompt` leaves open (`...<think>\n`,
/// or delimiter reasoning, which every output begins in) when `output`, a
/// turn cut at the common prefix, never writes it: the template writes past
/// turns without the block, but a model continuing that prompt writes its
/// reasoning, empty here, and the end marker first. The grammars require
/// that marker before a section that is not a special token (a model may
/// muse about `<tool_calls>` as text), so a harness gives the output the
/// marker, as the model would write it.
#[allow(dead_code)] // The engine tiers use it.
pub fn reasoning_end_owed<'a>(
    analysis: &'a Analysis,
    generation_prompt: &str,
    output: &str,
) -> Option<&'a str> {
    let r = &analysis.reasoning;
    let (open, end) = (r.start.trim(), r.end.trim());
    let delimiter = r.mode == chat_autoparser::analysis::ReasoningMode::Delimiter;
    let left_open = delimiter || (!open.is_empty() && generation_prompt.trim_end().ends_with(open));
    (left_open && !end.is_empty() && !output.contains(end)).then_some(end)
}
