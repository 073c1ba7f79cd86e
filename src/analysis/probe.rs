//! The probe conversations: one user turn followed by one assistant turn, with
//! needles in every slot the analysis wants to find.
//!
//! Every variant differs from its partner in exactly one thing (a name, a value,
//! an argument, the call count...). Needles are strings that do not occur in
//! template scaffolding, so finding one locates the slot it fills.
//!
//! Invariant: a variant that the template refuses is recorded as an error, never
//! propagated: the analysis must complete on templates that lack a branch.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

use crate::error::Error;
use crate::message::REASONING_FIELDS;
use crate::template::{ChatTemplate, RenderRequest};

/// Needles. All are ASCII, distinct, and unlikely in real scaffolding.
pub const USER: &str = "UUUU";
pub const CONTENT: &str = "XYZ";
pub const CONTENT2: &str = "QQQ";
pub const REASONING: &str = "RRRR";
pub const NAME: &str = "foofoo";
pub const NAME2: &str = "barbar";
pub const ARG: &str = "first";
pub const ARG2: &str = "second";
pub const NUM_ARG: &str = "third";
pub const VALUE: &str = "XXXX";
pub const VALUE2: &str = "YYYY";
pub const NUM_VALUE: i64 = 7777;
/// A value with the characters markup-based formats must protect.
pub const MARKUP_VALUE: &str = "X<&\nY";
/// An object value `{second: XXXX}` and a list value `[XXXX, YYYY]` (A5).
pub fn object_value() -> Json {
    json!({ ARG2: VALUE })
}
pub fn list_value() -> Json {
    json!([VALUE, VALUE2])
}
pub const ID: &str = "call00001";
pub const ID2: &str = "call99999";

/// One tool call in a probe.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: &'static str,
    pub args: Json,
    pub id: &'static str,
}

impl Call {
    pub fn new(name: &'static str, args: Json, id: &'static str) -> Call {
        Call { name, args, id }
    }
}

/// One assistant turn in a probe.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub content: Option<&'static str>,
    pub reasoning: Option<&'static str>,
    pub calls: Vec<Call>,
}

/// How this template wants tool calls fed to it, found by trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoding {
    /// Content of a tool-call turn without text: `None` or `""`.
    pub null_content: bool,
    /// `arguments` as a JSON object (true) or as JSON text.
    pub object_args: bool,
    /// Call ids that name the function, `functions.NAME:N` (N counting
    /// the turn's calls), the convention of templates that write the id
    /// where the name goes (Kimi's): the name is then in the render.
    pub named_ids: bool,
}

/// The tool definitions every probe passes.
pub fn tools() -> Vec<Json> {
    [NAME, NAME2]
        .iter()
        .map(|name| {
            json!({"type": "function", "function": {
                "name": name,
                "description": "Probe tool.",
                "parameters": {"type": "object", "properties": {
                    ARG: {"type": "string", "description": "A text."},
                    ARG2: {"type": "string", "description": "A text."},
                    NUM_ARG: {"type": "integer", "description": "A number."}
                }, "required": [ARG]}
            }})
        })
        .collect()
}

/// Renders probes of one template.
pub struct Prober<'t> {
    template: &'t ChatTemplate,
    /// The probe tools; `None` once the template failed with them and
    /// rendered without (see `outputs::first_prompt`).
    tools: Option<Vec<Json>>,
    /// Why the template failed with tools, once it did.
    tools_refused: Option<String>,
    /// Template variables every render gets (e.g. a pinned `enable_thinking`).
    pub extra: Map<String, Json>,
    /// The message field that carries reasoning for this template.
    pub reasoning_field: &'static str,
    /// Every message's text is given as OpenAI content parts
    /// (`[{"type": "text", "text": ...}]`), for templates that read
    /// `message['content'][0]['text']` and cannot render a string.
    pub content_parts: bool,
    /// Renders already made, by request.
    cache: RefCell<HashMap<String, Result<String, Error>>>,
}

/// The pseudo-field for reasoning written as a content part,
/// `{"type": "thinking", "thinking": "..."}` (Mistral's chunked content).
pub const THINKING_PART: &str = "content:thinking";

/// The reasoning field a template reads: [`THINKING_PART`] when it compares a
/// content part's type with `'thinking'`, else the first of
/// [`REASONING_FIELDS`] accessed as an attribute or item in its source
/// (generic inspection of what the template reads), else `reasoning_content`.
pub fn reasoning_field(source: &str) -> &'static str {
    if reads_thinking_parts(source) {
        return THINKING_PART;
    }
    REASONING_FIELDS
        .into_iter()
        .find(|field| {
            [
                format!(".{field}"),
                format!("['{field}']"),
                format!("[\"{field}\"]"),
                format!("'{field}' in"),
                format!("\"{field}\" in"),
            ]
            .iter()
            .any(|form| {
                source.match_indices(form.as_str()).any(|(i, _)| {
                    // `.reasoning` must not match `.reasoning_content`.
                    !source[i + form.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })
        .unwrap_or(REASONING_FIELDS[0])
}

/// `type == 'thinking'` in any quoting and access form.
fn reads_thinking_parts(source: &str) -> bool {
    static TYPE_TEST: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = TYPE_TEST.get_or_init(|| {
        regex::Regex::new(r#"(\.type|\[\s*['"]type['"]\s*\])\s*==\s*['"]thinking['"]"#)
            .expect("valid regex")
    });
    re.is_match(source)
}

/// A message's `content` with reasoning as a leading thinking part, for
/// templates that read [`THINKING_PART`].
pub fn thinking_parts(reasoning: &str, content: &Json) -> Json {
    let mut parts = vec![json!({"type": "thinking", "thinking": reasoning})];
    match content {
        Json::String(text) if !text.is_empty() => parts.push(json!({"type": "text", "text": text})),
        Json::Array(items) => parts.extend(items.iter().cloned()),
        _ => {}
    }
    Json::Array(parts)
}

impl<'t> Prober<'t> {
    pub fn new(template: &'t ChatTemplate) -> Prober<'t> {
        let reasoning_field = reasoning_field(template.source());
        Prober {
            template,
            tools: Some(tools()),
            tools_refused: None,
            extra: Map::new(),
            reasoning_field,
            content_parts: false,
            cache: RefCell::default(),
        }
    }

    /// The generation prompt after a user turn: the text the prompt adds to
    /// the rendered user turn (which is rendered with the same switch, since
    /// some templates change their system text with it).
    pub fn generation_prompt(&self, enable_thinking: Option<bool>) -> Result<String, Error> {
        let with = self.render(vec![user()], true, enable_thinking)?;
        let without = self
            .render(vec![user()], false, enable_thinking)
            .unwrap_or_default();
        let shared = super::diff::common_prefix_len(&[&with, &without]);
        Ok(with[shared..].to_owned())
    }

    /// The conversation user → assistant `turn`, without a generation prompt;
    /// with `follow_up`, a second user turn closes the assistant turn (for
    /// templates that refuse to end on an assistant turn).
    pub fn turn(&self, turn: &Turn, encoding: Encoding, follow_up: bool) -> Result<String, Error> {
        self.turn_thinking(turn, encoding, follow_up, None)
    }

    /// [`Prober::turn`] with the thinking switch set.
    pub fn turn_thinking(
        &self,
        turn: &Turn,
        encoding: Encoding,
        follow_up: bool,
        enable_thinking: Option<bool>,
    ) -> Result<String, Error> {
        let mut messages = vec![user(), assistant(turn, encoding, self.reasoning_field)];
        if follow_up {
            messages.push(json!({"role": "user", "content": USER}));
        }
        self.render(messages, false, enable_thinking)
    }

    /// The user turn followed by the generation prompt, in full.
    pub fn prompt(&self) -> Result<String, Error> {
        self.render(vec![user()], true, None)
    }

    /// Renders every probe without tools from now on: the template fails
    /// when given them, for the reason `why`.
    pub fn drop_tools(&mut self, why: String) {
        self.tools = None;
        self.tools_refused = Some(why);
        self.cache.borrow_mut().clear();
    }

    /// Why the template fails when given tools, when it does.
    pub fn tools_refused(&self) -> Option<&str> {
        self.tools_refused.as_deref()
    }

    /// The user turn followed by the generation prompt, rendered without
    /// tools: what the template writes whatever the request (its role and
    /// turn markers), beside [`Prober::prompt`].
    pub fn prompt_without_tools(&self) -> Result<String, Error> {
        let messages = match self.content_parts {
            true => vec![text_parts(user())],
            false => vec![user()],
        };
        let request = RenderRequest {
            messages,
            add_generation_prompt: true,
            extra: self.extra.clone(),
            ..Default::default()
        };
        self.template.render(&request)
    }

    /// Renders once per distinct request: several comparisons share renders
    /// (the generation prompt, the one-call turn), and rendering is most of
    /// the analysis' cost.
    fn render(
        &self,
        messages: Vec<Json>,
        add_generation_prompt: bool,
        enable_thinking: Option<bool>,
    ) -> Result<String, Error> {
        let messages = match self.content_parts {
            true => messages.into_iter().map(text_parts).collect(),
            false => messages,
        };
        let key = (
            Json::Array(messages),
            add_generation_prompt,
            enable_thinking,
            Json::Object(self.extra.clone()),
        );
        let text_key = serde_json::to_string(&key).unwrap_or_default();
        if let Some(hit) = self.cache.borrow().get(&text_key) {
            return hit.clone();
        }
        let Json::Array(messages) = key.0 else {
            unreachable!("built as an array above")
        };
        let request = RenderRequest {
            messages,
            tools: self.tools.clone(),
            add_generation_prompt,
            enable_thinking,
            extra: self.extra.clone(),
            ..Default::default()
        };
        // The switch as a server passes it (`render_chat`).
        let request = self.template.thinking_alias(&request).unwrap_or(request);
        let result = self.template.render(&request);
        self.cache.borrow_mut().insert(text_key, result.clone());
        result
    }
}

/// `message` with a string `content` as one text part.
fn text_parts(mut message: Json) -> Json {
    if let Some(text) = message.get("content").and_then(Json::as_str) {
        message["content"] = json!([{"type": "text", "text": text}]);
    }
    message
}

fn user() -> Json {
    json!({"role": "user", "content": USER})
}

fn assistant(turn: &Turn, encoding: Encoding, reasoning_field: &str) -> Json {
    let mut msg = Map::new();
    msg.insert("role".into(), "assistant".into());
    let content = match (turn.content, turn.calls.is_empty(), encoding.null_content) {
        (Some(text), _, _) => Json::from(text),
        (None, false, true) => Json::Null,
        (None, _, _) => Json::from(""),
    };
    msg.insert("content".into(), content);
    match turn.reasoning {
        Some(reasoning) if reasoning_field == THINKING_PART => {
            let parts = thinking_parts(reasoning, &msg["content"]);
            msg.insert("content".into(), parts);
        }
        Some(reasoning) => {
            msg.insert(reasoning_field.into(), reasoning.into());
        }
        None => {}
    }
    if !turn.calls.is_empty() {
        let calls: Vec<Json> = (turn.calls.iter().enumerate())
            .map(|(i, c)| call_json(c, i, encoding))
            .collect();
        msg.insert("tool_calls".into(), Json::Array(calls));
    }
    Json::Object(msg)
}

fn call_json(call: &Call, index: usize, encoding: Encoding) -> Json {
    let arguments = if encoding.object_args {
        call.args.clone()
    } else {
        Json::String(call.args.to_string())
    };
    let id = match encoding.named_ids {
        true => format!("functions.{}:{index}", call.name),
        false => call.id.to_string(),
    };
    json!({"id": id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
}

#[cfg(test)]
mod tests {
    use super::reasoning_field;

    #[test]
    fn reasoning_field_is_the_one_the_template_reads() {
        assert_eq!(
            reasoning_field("{{ message.reasoning_content }}"),
            "reasoning_content"
        );
        assert_eq!(
            reasoning_field("{% if message.thinking %}{{ message['thinking'] }}"),
            "thinking"
        );
        assert_eq!(
            reasoning_field("{{ m.reasoning_content }}{{ m.reasoning }}"),
            "reasoning_content"
        );
        assert_eq!(
            reasoning_field("{{ m.reasoning_effort }}"),
            "reasoning_content"
        );
        assert_eq!(reasoning_field("no reasoning"), "reasoning_content");
        let mistral = "{%- elif block['type'] == 'thinking' %}{{ '[THINK]' + block['thinking'] + '[/THINK]' }}";
        assert_eq!(reasoning_field(mistral), super::THINKING_PART);
        assert_eq!(
            reasoning_field("{% if part.type == \"thinking\" %}"),
            super::THINKING_PART
        );
    }
}
