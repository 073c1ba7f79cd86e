//! What a template can render, found by rendering probe conversations.
//!
//! Each capability is one question answered by one or a few renders of a
//! conversation with needles (see `needles`): does the system text appear,
//! does a tool definition, does a call's argument value, does a tool result...
//! Nothing here reads the template text, so a capability is true exactly when
//! the template renders that part of a conversation, whatever its branches look
//! like. Polyfills (`polyfill`) and the linter build on these answers.
//!
//! Invariants: detection never fails (a template that renders nothing has every
//! capability false); the result depends only on the template and its
//! configuration, so it is computed once per [`ChatTemplate`] and cached.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use super::needles::{self as n, CallShape, Probe};
use super::ChatTemplate;

/// What a template renders, each answer found by rendering (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// A single user turn with a generation prompt renders at all.
    pub renders: bool,
    /// A `system` message renders and its text appears.
    pub system_role: bool,
    /// Tool definitions passed as `tools` appear in the prompt.
    pub tools: bool,
    /// An assistant turn's `tool_calls` appear (name and argument value).
    pub tool_calls: bool,
    /// A `tool` message's content appears.
    pub tool_responses: bool,
    /// Two calls in one assistant turn both appear.
    pub parallel_calls: bool,
    /// The template variable that switches thinking (`enable_thinking` or
    /// another caller variable), when the generation prompt depends on one.
    pub thinking_toggle: Option<String>,
    /// A content given as a list of typed parts (`[{"type": "text", ...}]`) renders as its text.
    pub typed_content: bool,
    /// Call `arguments` given as an object render as JSON (not a Python dict, not an error).
    pub object_arguments: bool,
    /// Call `arguments` given as JSON text render once (not re-encoded as a JSON string).
    pub string_arguments: bool,
    /// Calls render only with a top-level `name`/`arguments` beside `function`.
    pub flat_calls: bool,
    /// A tool-call turn with `content: null` renders.
    pub null_content: bool,
    /// What happens to an earlier answer's reasoning once a new user turn follows.
    pub history_reasoning: HistoryReasoning,
    /// Caller variables the template needs without a default; probes set them to empty text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumed_empty: Vec<String>,
}

/// Reasoning of an earlier assistant answer, once a later user turn exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum HistoryReasoning {
    /// The reasoning is rendered in later prompts too.
    Kept,
    /// Rendered on the last turn only; dropped once the turn is history.
    Dropped,
    /// Never rendered, not even on the last turn.
    #[default]
    NotRendered,
}

/// Shapes tried for a tool call, most common first.
const SHAPES: [CallShape; 6] = [
    CallShape {
        null_content: true,
        object_args: true,
        flat: false,
    },
    CallShape {
        null_content: false,
        object_args: true,
        flat: false,
    },
    CallShape {
        null_content: true,
        object_args: false,
        flat: false,
    },
    CallShape {
        null_content: false,
        object_args: false,
        flat: false,
    },
    CallShape {
        null_content: false,
        object_args: true,
        flat: true,
    },
    CallShape {
        null_content: false,
        object_args: false,
        flat: true,
    },
];

/// Runs every probe on `template`.
pub(crate) fn detect(template: &ChatTemplate) -> Capabilities {
    let Some(probe) = Probe::new(template) else {
        return Capabilities::default();
    };
    let working: Vec<CallShape> = SHAPES
        .into_iter()
        .filter(|s| call_renders(&probe, *s))
        .collect();
    let shape = working.first().copied();
    Capabilities {
        renders: true,
        system_role: shows(
            &probe,
            &[n::system(n::SYSTEM), n::user(n::USER)],
            None,
            n::SYSTEM,
        ),
        tools: shows(&probe, &[n::user(n::USER)], Some(n::tools()), n::NAME),
        tool_calls: shape.is_some(),
        tool_responses: tool_responses(&probe, shape),
        parallel_calls: shape.is_some_and(|s| parallel(&probe, s)),
        thinking_toggle: thinking_toggle(&probe),
        typed_content: typed_content(&probe),
        object_arguments: working.iter().any(|s| s.object_args),
        string_arguments: working.iter().any(|s| !s.object_args),
        flat_calls: !working.is_empty() && working.iter().all(|s| s.flat),
        null_content: working.iter().any(|s| s.null_content),
        history_reasoning: history_reasoning(&probe),
        assumed_empty: probe.extra.keys().cloned().collect(),
    }
}

/// The best shape for tool calls: the first of [`SHAPES`] that renders, with
/// `content: ""` preferred over `null` when the template prints `None`.
pub(crate) fn best_shape(caps: &Capabilities) -> CallShape {
    CallShape {
        null_content: caps.null_content,
        object_args: caps.object_arguments || !caps.string_arguments,
        flat: caps.flat_calls,
    }
}

/// Whether `messages` render (with a generation prompt, else without) and show `needle`.
fn shows(probe: &Probe<'_>, messages: &[Json], tools: Option<Vec<Json>>, needle: &str) -> bool {
    render_either(probe, messages, tools).is_some_and(|text| text.contains(needle))
}

/// Renders with a generation prompt, else without (templates that refuse one
/// after a tool turn), else with a closing user turn (templates that refuse to
/// end on an assistant turn).
fn render_either(probe: &Probe<'_>, messages: &[Json], tools: Option<Vec<Json>>) -> Option<String> {
    let mut closed = messages.to_vec();
    closed.push(n::user(n::USER2));
    probe
        .render(messages, tools.clone(), true)
        .or_else(|_| probe.render(messages, tools.clone(), false))
        .or_else(|_| probe.render(&closed, tools, true))
        .ok()
}

/// One call in `shape` renders its name and value the way the shape means:
/// an object as JSON (not a Python dict), text once (not re-quoted), no
/// `None` for a null content. Counted against the same conversation without
/// the call, since tool definitions may print the same things.
fn call_renders(probe: &Probe<'_>, shape: CallShape) -> bool {
    let call = n::call(n::NAME, &n::args(n::VALUE), n::ID, shape);
    let messages = [n::user(n::USER), n::assistant_calls(vec![call], shape)];
    let Some(text) = render_either(probe, &messages, Some(n::tools())) else {
        return false;
    };
    let base = render_either(probe, &[n::user(n::USER)], Some(n::tools())).unwrap_or_default();
    let added = |needle: &str| text.matches(needle).count() > base.matches(needle).count();
    let python_dict = added(&format!("'{}'", n::ARG));
    let requoted = added(&format!("\\\"{}\\\"", n::ARG));
    let shows_none = shape.null_content && added("None");
    text.contains(n::VALUE) && !python_dict && !requoted && !shows_none
}

fn tool_responses(probe: &Probe<'_>, shape: Option<CallShape>) -> bool {
    let mut messages = vec![n::user(n::USER)];
    if let Some(shape) = shape {
        messages.push(n::assistant_calls(
            vec![n::call(n::NAME, &n::args(n::VALUE), n::ID, shape)],
            shape,
        ));
    }
    messages.push(n::tool_result(n::ID, n::RESULT));
    shows(probe, &messages, Some(n::tools()), n::RESULT)
}

fn parallel(probe: &Probe<'_>, shape: CallShape) -> bool {
    let calls = vec![
        n::call(n::NAME, &n::args(n::VALUE), n::ID, shape),
        n::call(n::NAME2, &n::args(n::VALUE2), n::ID2, shape),
    ];
    let messages = [n::user(n::USER), n::assistant_calls(calls, shape)];
    render_either(probe, &messages, Some(n::tools()))
        .is_some_and(|t| t.contains(n::VALUE) && t.contains(n::VALUE2))
}

/// `enable_thinking` when the generation prompt depends on it, else the first
/// caller variable that changes the prompt between two values.
fn thinking_toggle(probe: &Probe<'_>) -> Option<String> {
    // Bounded: a template reading hundreds of variables is not worth probing each.
    const MAX_VARIABLES: usize = 16;
    let mut candidates = vec!["enable_thinking".to_owned()];
    candidates.extend(
        super::needles::caller_variables(probe.template)
            .into_iter()
            .take(MAX_VARIABLES),
    );
    candidates
        .into_iter()
        .find(|var| changes_prompt(probe, var))
}

/// Whether two values of `var` give different generation prompts (the text
/// the prompt adds after the user turn): a variable that only changes the
/// system text (`model_identity`, `custom_tools`) is not a thinking switch.
fn changes_prompt(probe: &Probe<'_>, var: &str) -> bool {
    let prompt = |value: Json| {
        let vars: Map<String, Json> = [(var.to_owned(), value)].into_iter().collect();
        let with = probe
            .render_with(&[n::user(n::USER)], None, true, &vars)
            .ok()?;
        let without = probe
            .render_with(&[n::user(n::USER)], None, false, &vars)
            .unwrap_or_default();
        let shared = with
            .bytes()
            .zip(without.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        Some(with.get(shared..).unwrap_or_default().to_owned())
    };
    [(json!(true), json!(false)), (json!("high"), json!("low"))]
        .into_iter()
        .any(|(a, b)| match (prompt(a), prompt(b)) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        })
}

fn typed_content(probe: &Probe<'_>) -> bool {
    let messages = [json!({"role": "user", "content": [{"type": "text", "text": n::USER}]})];
    render_either(probe, &messages, None)
        .is_some_and(|t| t.contains(n::USER) && !t.contains("'text'") && !t.contains("\"text\""))
}

fn history_reasoning(probe: &Probe<'_>) -> HistoryReasoning {
    let answer = n::assistant_reasoning(n::CONTENT, n::REASONING);
    let later = [n::user(n::USER), answer.clone(), n::user(n::USER2)];
    if shows(probe, &later, None, n::REASONING) {
        return HistoryReasoning::Kept;
    }
    match probe.render(&[n::user(n::USER), answer], None, false) {
        Ok(text) if text.contains(n::REASONING) => HistoryReasoning::Dropped,
        _ => HistoryReasoning::NotRendered,
    }
}

impl ChatTemplate {
    /// What this template renders (see [`Capabilities`]); probed on first use, then cached.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
            .get_or_init(|| {
                // The probes are one run: they share one render's fuel.
                let _run = super::limits::RunFuel::start(&self.config.limits);
                detect(self)
            })
            .clone()
    }
}
