//! The request shapes `check` tries and the assistant turns it renders for
//! each: no call, one call, two calls, content and a call, and calls whose
//! arguments are hard to carry (quotes, newlines, markup, the template's own
//! markers inside strings, unicode, nested objects).
//!
//! A shape is a request's options: the thinking switch, `tool_choice` and
//! `parallel_tool_calls`. Only shapes the template supports are planned:
//! thinking shapes when it marks reasoning or reads the switch, tool shapes
//! when it takes tools, two calls when it renders them.
//!
//! Invariant: the plan is a pure function of the analysis (deterministic).

use serde::Serialize;
use serde_json::{json, Value};

use super::turn::Turn;
use crate::analysis::{Analysis, ArgumentsSlot, ReasoningMode};
use crate::protocol::ToolChoice;

/// One request shape: the options a server passes with the probe's tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Shape {
    /// Short name (`default`, `thinking-on`, `required`, ...).
    pub name: &'static str,
    /// The `enable_thinking` switch (`None`: not passed).
    pub thinking: Option<bool>,
    /// `tool_choice`.
    #[serde(serialize_with = "choice_name")]
    pub tool_choice: ToolChoice,
    /// `parallel_tool_calls`.
    pub parallel: bool,
}

fn choice_name<S: serde::Serializer>(c: &ToolChoice, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&c.as_str())
}

/// One probe: a named assistant turn.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Short name (`call`, `two-calls`, `tricky-args`, ...).
    pub name: &'static str,
    /// What the model writes.
    pub turn: Turn,
}

/// The tools every probe request gives: a flat one and one with free text,
/// an object and a list; every parameter described, as clients send them
/// (templates that print `param.description` with `+` fail without one).
pub fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "description": "Days ahead"}
            }, "required": ["city"]}}}),
        json!({"type": "function", "function": {
            "name": "save_note",
            "description": "Saves a note.",
            "parameters": {"type": "object", "properties": {
                "text": {"type": "string", "description": "The note"},
                "meta": {"type": "object", "description": "Anything else"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels"}
            }, "required": ["text"]}}}),
    ]
}

const CONTENT: &str = "Hello! How can I help you today?";
const REASONING: &str = "The user asks about the weather; I should look it up.";

fn turn(content: &str, reasoning: &str, calls: Vec<(String, String)>) -> Turn {
    Turn {
        content: content.into(),
        reasoning: reasoning.into(),
        calls,
    }
}

fn weather(city: &str, days: u32) -> (String, String) {
    (
        "get_weather".into(),
        json!({"city": city, "days": days}).to_string(),
    )
}

/// Quotes, a newline, markup, a backslash, unicode and nested values.
fn tricky_note() -> (String, String) {
    let args = json!({
        "text": "He said \"hi\" <b>bold</b> & 'more'\nline two — café 東京 🌧",
        "meta": {"nested": {"a": [1, 2.5, {"b": null}], "ok": true}, "path": "C:\\tmp\\x"},
        "tags": ["x", "<y>", "a & b"]
    });
    ("save_note".into(), args.to_string())
}

/// The template's own markers (reasoning end, call and section markers)
/// inside a string argument, when it has any.
fn marker_note(analysis: &Analysis) -> Option<(String, String)> {
    let mut markers: Vec<&str> = vec![analysis.reasoning.end.trim()];
    if let Some(t) = &analysis.tools {
        markers.extend([
            t.section_start.trim(),
            t.call_start.trim(),
            t.call_end.trim(),
        ]);
        if let ArgumentsSlot::Tagged(a) = &t.arguments {
            markers.extend([a.name_prefix.trim(), a.value_suffix.trim()]);
        }
    }
    markers.retain(|m| !m.is_empty());
    markers.dedup();
    if markers.is_empty() {
        return None;
    }
    let text = format!("quoting the markers {} here", markers.join(" and "));
    Some(("save_note".into(), json!({ "text": text }).to_string()))
}

/// The shapes the template supports, each with its probes.
pub fn plan(analysis: &Analysis) -> Vec<(Shape, Vec<Probe>)> {
    let reasoning = analysis.reasoning.mode != ReasoningMode::None;
    let switch = analysis.turn.generation_prompt.thinking_off.is_some();
    let calls = analysis.tools.is_some() || !analysis.fallback_tools.is_empty();
    let parallel = analysis.tool_formats().next().is_some_and(|t| t.parallel);
    let shape = |name, thinking, tool_choice, parallel| Shape {
        name,
        thinking,
        tool_choice,
        parallel,
    };
    let probe = |name, turn| Probe { name, turn };
    let mut default = vec![probe("no-call", turn(CONTENT, "", vec![]))];
    if calls {
        default.push(probe("one-call", turn("", "", vec![weather("Paris", 3)])));
        if parallel {
            let two = vec![weather("Paris", 3), weather("Tokyo", 1)];
            default.push(probe("two-calls", turn("", "", two)));
        }
        let with_content = "Let me check the weather.";
        default.push(probe(
            "content+call",
            turn(with_content, "", vec![weather("Paris", 3)]),
        ));
        default.push(probe("tricky-args", turn("", "", vec![tricky_note()])));
        if let Some(note) = marker_note(analysis) {
            default.push(probe("markers-in-args", turn("", "", vec![note])));
        }
    }
    let mut plan = vec![(shape("default", None, ToolChoice::Auto, true), default)];
    if reasoning {
        let mut on = vec![probe("reasoning+content", turn(CONTENT, REASONING, vec![]))];
        if calls {
            on.push(probe(
                "reasoning+call",
                turn("", REASONING, vec![weather("Paris", 3)]),
            ));
        }
        plan.push((shape("thinking-on", Some(true), ToolChoice::Auto, true), on));
    }
    if switch {
        let mut off = vec![probe("no-call", turn(CONTENT, "", vec![]))];
        if calls {
            off.push(probe("one-call", turn("", "", vec![weather("Paris", 3)])));
        }
        plan.push((
            shape("thinking-off", Some(false), ToolChoice::Auto, true),
            off,
        ));
    }
    if calls {
        let mut required = vec![probe("one-call", turn("", "", vec![weather("Paris", 3)]))];
        if parallel {
            let two = vec![weather("Paris", 3), weather("Tokyo", 1)];
            required.push(probe("two-calls", turn("", "", two)));
        }
        plan.push((
            shape("required", None, ToolChoice::Required, true),
            required,
        ));
        let named = ToolChoice::Function("get_weather".into());
        let one = || vec![probe("one-call", turn("", "", vec![weather("Paris", 3)]))];
        plan.push((shape("named-function", None, named, true), one()));
        plan.push((shape("parallel-off", None, ToolChoice::Auto, false), one()));
    }
    plan
}
