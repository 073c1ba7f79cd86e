//! Polyfills: rewriting a conversation so a template that lacks a capability
//! still renders it.
//!
//! [`ToolFormatting`] decides how the tool path (definitions, calls, results)
//! is rendered. `Native` is the template as written. `Manual` describes the
//! tools in the system turn in the Hermes style (`# Tools` ... `<tools></tools>`
//! ... `<tool_call>` instructions), writes calls into the assistant text as
//! `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>` and results
//! as user turns wrapped in `<tool_response>`, and passes no `tools` to the
//! template. `Auto` is native when the template renders every part of the
//! path the conversation uses (definitions, earlier calls, results), so a
//! first turn with tools keeps a template's own tools block even when it
//! cannot replay calls; when the conversation needs a part the template
//! lacks, the template's [`CallWriter`] (set by the front door from the
//! analysis, see [`ChatTemplate::with_call_writer`]) writes the earlier calls
//! in the model's own format when only calls are missing, and otherwise all
//! three parts are manual: it never activates half a path in two formats
//! (native definitions with Hermes calls would teach the model two formats).
//! Independently of the tool path, `Auto` and `Manual` merge the
//! system text into the first user turn when the template has no system role,
//! and pass calls the way the template renders them (object or JSON-text
//! `arguments`, a top-level `name`/`arguments` when needed, `content` never
//! missing, `""` for `null` where `null` fails).
//!
//! Invariants: polyfills only rewrite the request, never the template; a
//! capability the template has is never polyfilled under `Auto`; the rewrite
//! is a pure function of the request, the capabilities and the call writer
//! (byte-stable).
//!
//! [`ChatTemplate::with_call_writer`]: super::ChatTemplate::with_call_writer

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use super::capabilities::{best_shape, Capabilities};
use super::needles::CallShape;
use super::{pyjson, pyvalue, RenderRequest};

/// How the tool path of a request is rendered (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ToolFormatting {
    /// The template as written, no polyfill at all.
    Native,
    /// Hermes-style tools, calls and results written by us.
    Manual,
    /// Native where probing says the whole tool path works, else manual.
    #[default]
    Auto,
}

/// The Hermes tools block, before and after the one-JSON-per-line tool list.
const TOOLS_HEAD: &str =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const TOOLS_TAIL: &str = "\n</tools>\n\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": \
<args-json-object>}\n</tool_call>";

/// Writes an assistant turn's calls as text in the model's own call format,
/// for `Auto` on a template that lists tools and renders results but never
/// renders an assistant's calls.
pub trait CallWriter: Send + Sync + std::fmt::Debug {
    /// `calls` (OpenAI `tool_calls`) as the model writes them; `None` when
    /// they cannot be written faithfully (the polyfill then goes manual).
    fn write_calls(&self, calls: &[Json]) -> Option<String>;
}

/// What the polyfill does for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Tools, calls and results are written by us.
    pub manual_tools: bool,
    /// Only earlier calls are written by us, by the call writer; the
    /// template renders definitions and results itself.
    pub written_calls: bool,
    /// System text goes into the first user turn.
    pub merge_system: bool,
}

/// The plan for `formatting` on a template with `caps`, for `request`.
pub(crate) fn plan(
    formatting: ToolFormatting,
    caps: &Capabilities,
    request: &RenderRequest,
    writer: Option<&dyn CallWriter>,
) -> Plan {
    let merge_system = formatting != ToolFormatting::Native && !caps.system_role;
    let (manual_tools, written_calls) = match formatting {
        ToolFormatting::Native => (false, false),
        ToolFormatting::Manual => (true, false),
        ToolFormatting::Auto => {
            let (others, calls) = native_covers(caps, request);
            match (others, calls) {
                (true, true) => (false, false),
                (true, false) if writable(request, writer) => (false, true),
                _ => (true, false),
            }
        }
    };
    Plan {
        manual_tools,
        written_calls,
        merge_system,
    }
}

/// Whether the template renders the parts of the tool path `request` uses:
/// definitions and results, and earlier calls.
fn native_covers(caps: &Capabilities, request: &RenderRequest) -> (bool, bool) {
    let defines = request.tools.as_ref().is_some_and(|t| !t.is_empty());
    let calls = request.messages.iter().any(has_calls);
    let results = request.messages.iter().any(|m| role(m) == "tool");
    (
        (!defines || caps.tools) && (!results || caps.tool_responses),
        !calls || caps.tool_calls,
    )
}

/// Whether `writer` can write every call turn of `request`.
fn writable(request: &RenderRequest, writer: Option<&dyn CallWriter>) -> bool {
    writer.is_some_and(|w| {
        request
            .messages
            .iter()
            .filter(|m| has_calls(m))
            .all(|m| w.write_calls(calls_of(m)).is_some())
    })
}

/// What the OpenAI API leaves optional, filled as servers fill it: a tool
/// without `description` gets `""`, without `parameters` an empty object
/// schema; a message without `content` (but an assistant turn with calls,
/// whose content the call shaping decides) gets `""`. Templates then never
/// meet an undefined value where the API allowed one. `None` when nothing
/// was missing.
pub(crate) fn fill_optional(request: &RenderRequest) -> Option<RenderRequest> {
    let mut out = request.clone();
    fill_tool_defaults(out.tools.iter_mut().flatten());
    for message in &mut out.messages {
        let skip = role(message) == "assistant" && has_calls(message);
        if let (false, Some(map)) = (skip, message.as_object_mut()) {
            map.entry("content").or_insert_with(|| Json::from(""));
        }
    }
    (out != *request).then_some(out)
}

/// Fills what the OpenAI API leaves optional in tool definitions: a
/// missing `description` becomes `""`, missing `parameters` an empty object
/// schema (in `function`, or in the tool itself when it has no `function`
/// object).
pub(crate) fn fill_tool_defaults<'a>(tools: impl Iterator<Item = &'a mut Json>) {
    for tool in tools {
        let function = match tool.get("function") {
            Some(Json::Object(_)) => &mut tool["function"],
            _ => &mut *tool,
        };
        if let Some(map) = function.as_object_mut() {
            map.entry("description").or_insert_with(|| Json::from(""));
            map.entry("parameters")
                .or_insert_with(|| json!({"type": "object", "properties": {}}));
        }
    }
}

/// The request rewritten by `plan`; `None` when nothing needs to change.
pub(crate) fn apply(
    request: &RenderRequest,
    caps: &Capabilities,
    max_bytes: usize,
    writer: Option<&dyn CallWriter>,
) -> Option<RenderRequest> {
    if request.tool_formatting == ToolFormatting::Native {
        return None;
    }
    let plan = plan(request.tool_formatting, caps, request, writer);
    let mut out = request.clone();
    if plan.manual_tools && uses_tools(request) {
        out.messages = manual_tool_path(&request.messages, request.tools.as_deref(), max_bytes);
        out.tools = None;
    } else if let (true, Some(writer)) = (plan.written_calls, writer) {
        out.messages = out
            .messages
            .iter()
            .map(|m| written_call_turn(m, writer))
            .collect();
    } else {
        let shape = best_shape(caps);
        out.messages = out
            .messages
            .iter()
            .map(|m| native_call_turn(m, shape))
            .collect();
    }
    if plan.merge_system {
        out.messages = merge_system(&out.messages);
    }
    (out != *request).then_some(out)
}

/// Whether the request touches the tool path at all.
fn uses_tools(request: &RenderRequest) -> bool {
    request.tools.as_ref().is_some_and(|t| !t.is_empty())
        || request
            .messages
            .iter()
            .any(|m| role(m) == "tool" || has_calls(m))
}

fn role(message: &Json) -> &str {
    message.get("role").and_then(Json::as_str).unwrap_or("")
}

fn has_calls(message: &Json) -> bool {
    !calls_of(message).is_empty()
}

fn calls_of(message: &Json) -> &[Json] {
    message
        .get("tool_calls")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// An assistant turn with its calls written after its content by `writer`
/// (the template renders content, not calls); other turns unchanged.
fn written_call_turn(message: &Json, writer: &dyn CallWriter) -> Json {
    let Some(calls) = writer
        .write_calls(calls_of(message))
        .filter(|_| has_calls(message))
    else {
        return message.clone();
    };
    let mut out = message.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("tool_calls");
        map.insert("content".into(), Json::String(text_of(message) + &calls));
    }
    out
}

/// Text of a message's content: a string as is, text parts joined, else empty.
fn text_of(message: &Json) -> String {
    match message.get("content") {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Json::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Python's `json.dumps` text of `value` (what `tojson` writes), so manual
/// tool text looks like a template's own.
fn dumps(value: &Json, max_bytes: usize) -> String {
    pyjson::dumps(
        &pyvalue::from_json(value),
        &pyjson::Options::default(),
        max_bytes,
    )
    .unwrap_or_else(|_| value.to_string())
}

// ---------------------------------------------------------------- manual path

fn manual_tool_path(messages: &[Json], tools: Option<&[Json]>, max_bytes: usize) -> Vec<Json> {
    let mut out: Vec<Json> = Vec::with_capacity(messages.len() + 1);
    let mut after_result = false;
    for message in messages {
        match role(message) {
            "tool" => push_tool_result(&mut out, &text_of(message), after_result),
            "assistant" if has_calls(message) => out.push(calls_as_text(message, max_bytes)),
            _ => out.push(message.clone()),
        }
        after_result = role(message) == "tool";
    }
    match tools.filter(|t| !t.is_empty()) {
        Some(tools) => with_tools_block(out, &tools_block(tools, max_bytes)),
        None => out,
    }
}

fn tools_block(tools: &[Json], max_bytes: usize) -> String {
    let mut text = String::from(TOOLS_HEAD);
    for tool in tools {
        let function = tool.get("function").unwrap_or(tool);
        text.push('\n');
        text.push_str(&dumps(
            &json!({"type": "function", "function": function}),
            max_bytes,
        ));
    }
    text.push_str(TOOLS_TAIL);
    text
}

/// The tools block appended to the first system message (after a blank line),
/// or as a new system message in front.
fn with_tools_block(mut messages: Vec<Json>, block: &str) -> Vec<Json> {
    match messages.iter_mut().find(|m| role(m) == "system") {
        Some(system) => {
            let text = text_of(system);
            let joined = if text.is_empty() {
                block.to_owned()
            } else {
                format!("{text}\n\n{block}")
            };
            system["content"] = Json::String(joined);
        }
        None => messages.insert(0, json!({"role": "system", "content": block})),
    }
    messages
}

/// An assistant turn with its calls written into its text, Hermes style.
fn calls_as_text(message: &Json, max_bytes: usize) -> Json {
    let mut text = text_of(message);
    for call in calls_of(message) {
        if !text.is_empty() {
            text.push('\n');
        }
        let function = call.get("function").unwrap_or(call);
        let name = function.get("name").cloned().unwrap_or(Json::from(""));
        let arguments = match function.get("arguments") {
            Some(Json::String(s)) => s.clone(),
            None | Some(Json::Null) => "{}".to_owned(),
            Some(other) => dumps(other, max_bytes),
        };
        text.push_str(&format!(
            "<tool_call>\n{{\"name\": {}, \"arguments\": {arguments}}}\n</tool_call>",
            dumps(&name, max_bytes)
        ));
    }
    let mut out = message.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("tool_calls");
        map.insert("content".into(), Json::String(text));
    }
    out
}

/// A tool result as a user turn; a result right after another joins its turn.
fn push_tool_result(out: &mut Vec<Json>, text: &str, after_result: bool) {
    let wrapped = format!("<tool_response>\n{text}\n</tool_response>");
    match out.last_mut() {
        Some(last) if after_result => {
            let joined = format!("{}\n{wrapped}", text_of(last));
            last["content"] = Json::String(joined);
        }
        _ => out.push(json!({"role": "user", "content": wrapped})),
    }
}

// ---------------------------------------------------------------- native path

/// An assistant turn's calls passed the way the template renders them.
fn native_call_turn(message: &Json, shape: CallShape) -> Json {
    if role(message) != "assistant" {
        return message.clone();
    }
    let mut out = message.clone();
    let calls = has_calls(message);
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    let content_missing = matches!(map.get("content"), None | Some(Json::Null));
    if content_missing {
        let null = calls && shape.null_content;
        map.insert(
            "content".into(),
            if null { Json::Null } else { Json::from("") },
        );
    }
    if let Some(Json::Array(list)) = map.get_mut("tool_calls") {
        for call in list.iter_mut() {
            *call = native_call(call, shape);
        }
    }
    out
}

/// One call with `function.name`/`function.arguments` in the template's form,
/// plus top-level `name`/`arguments` when the template reads those.
fn native_call(call: &Json, shape: CallShape) -> Json {
    let function = call.get("function").unwrap_or(call);
    let name = function.get("name").cloned().unwrap_or(Json::from(""));
    let arguments = arguments_as(function.get("arguments"), shape.object_args);
    let mut out = call.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert("type".into(), "function".into());
        map.insert(
            "function".into(),
            json!({"name": name.clone(), "arguments": arguments.clone()}),
        );
        if shape.flat {
            map.insert("name".into(), name);
            map.insert("arguments".into(), arguments);
        }
    }
    out
}

/// Arguments as an object or as JSON text; text that is not a JSON object
/// stays text (it cannot become an object without inventing one).
fn arguments_as(arguments: Option<&Json>, object: bool) -> Json {
    match (arguments, object) {
        (None | Some(Json::Null), true) => json!({}),
        (None | Some(Json::Null), false) => Json::from("{}"),
        (Some(Json::String(text)), true) => match serde_json::from_str::<Json>(text) {
            Ok(parsed @ Json::Object(_)) => parsed,
            _ => Json::String(text.clone()),
        },
        (Some(Json::String(text)), false) => Json::String(text.clone()),
        (Some(other), true) => other.clone(),
        (Some(other), false) => Json::String(other.to_string()),
    }
}

// ---------------------------------------------------------------- system merge

/// System (and developer) text joined into the first user turn, after a blank
/// line; with no user turn, it becomes one.
fn merge_system(messages: &[Json]) -> Vec<Json> {
    let system: Vec<String> = messages
        .iter()
        .filter(|m| matches!(role(m), "system" | "developer"))
        .map(text_of)
        .filter(|t| !t.is_empty())
        .collect();
    let mut out: Vec<Json> = messages
        .iter()
        .filter(|m| !matches!(role(m), "system" | "developer"))
        .cloned()
        .collect();
    if system.is_empty() {
        return out;
    }
    let system = system.join("\n\n");
    match out.iter_mut().find(|m| role(m) == "user") {
        Some(first) => {
            let joined = format!("{system}\n\n{}", text_of(first));
            first["content"] = Json::String(joined);
        }
        None => out.insert(0, json!({"role": "user", "content": system})),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_tool_results_share_one_user_turn() {
        let messages = [
            json!({"role": "tool", "content": "a"}),
            json!({"role": "tool", "content": "b"}),
        ];
        let out = manual_tool_path(&messages, None, 1 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0]["content"],
            "<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response>"
        );
    }

    #[test]
    fn calls_become_hermes_text() {
        let turn = json!({"role": "assistant", "content": "Hi", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
            {"type": "function", "function": {"name": "g", "arguments": "{\"b\": 2}"}}]});
        let out = calls_as_text(&turn, 1 << 20);
        assert_eq!(
            out["content"],
            "Hi\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": 2}}\n</tool_call>"
        );
        assert!(out.get("tool_calls").is_none());
    }

    #[test]
    fn arguments_convert_both_ways() {
        assert_eq!(
            arguments_as(Some(&json!("{\"a\": 1}")), true),
            json!({"a": 1})
        );
        assert_eq!(
            arguments_as(Some(&json!({"a": 1})), false),
            json!("{\"a\":1}")
        );
        assert_eq!(
            arguments_as(Some(&json!("not json")), true),
            json!("not json")
        );
    }

    #[test]
    fn system_joins_the_first_user_turn() {
        let out = merge_system(&[
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "U"}),
        ]);
        assert_eq!(out, vec![json!({"role": "user", "content": "S\n\nU"})]);
    }
}
