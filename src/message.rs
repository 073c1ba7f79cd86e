//! The data the parser produces: an assistant message and the streamed
//! deltas that add up to it, in the OpenAI chat-completions JSON shape.
//!
//! Invariants (the message of `docs/cli.md`):
//! - `content` is `null` when it is empty and the message has tool calls;
//! - `reasoning_content` is omitted when empty;
//! - `arguments` is JSON text (what the model wrote, or its normalisation to
//!   JSON for Python literals and tagged values);
//! - applying a stream's deltas in order to an empty [`MessageBuilder`] gives
//!   exactly the message a batch parse returns.

use chat_autoparser_peg::short::push_short;
use serde::{Deserialize, Serialize};

/// Message fields chat APIs and templates carry reasoning in, OpenAI's first.
pub const REASONING_FIELDS: [&str; 4] = ["reasoning_content", "reasoning", "thinking", "thought"];

/// The first of [`REASONING_FIELDS`] with non-empty text in `message`.
pub(crate) fn reasoning_field_of(message: &serde_json::Value) -> Option<&'static str> {
    REASONING_FIELDS.into_iter().find(|k| {
        message
            .get(*k)
            .and_then(serde_json::Value::as_str)
            .is_some_and(|t| !t.is_empty())
    })
}

/// A decoded assistant turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Always `"assistant"`.
    pub role: String,
    /// Visible text; `None` when empty and there are tool calls.
    pub content: Option<String>,
    /// Extracted reasoning (empty when none, or when reasoning stays inline).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning_content: String,
    /// Tool calls in the order the model wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl AssistantMessage {
    /// The content, empty when `None`.
    pub fn content_text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }
}

/// One tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the model wrote, if the format has one.
    pub id: Option<String>,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name and arguments.
    pub function: FunctionCall,
}

/// A call's function name and arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A streamed piece of a message (an OpenAI `choices[0].delta`).
///
/// A delta carries one kind of text; tool-call deltas carry `id`/`name`
/// once (in the call's first delta) and then argument fragments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// Content text to append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning text to append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tool-call pieces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
}

/// A piece of tool call `index`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Which call (0-based, in output order).
    pub index: usize,
    /// The call id, in the call's first delta when the model wrote one
    /// before its name; later when it wrote it after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `"function"` in the call's first delta.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name (first delta) and argument fragments.
    pub function: FunctionDelta,
}

/// Name and argument fragment of a [`ToolCallDelta`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionDelta {
    /// The function name, in the call's first delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

impl Delta {
    /// A content delta.
    pub fn content(text: impl Into<String>) -> Delta {
        Delta {
            content: Some(text.into()),
            ..Delta::default()
        }
    }

    /// A reasoning delta.
    pub fn reasoning(text: impl Into<String>) -> Delta {
        Delta {
            reasoning_content: Some(text.into()),
            ..Delta::default()
        }
    }

    /// A tool-call delta.
    pub fn tool_call(call: ToolCallDelta) -> Delta {
        Delta {
            tool_calls: vec![call],
            ..Delta::default()
        }
    }
}

/// `text` appended to `field`: moved in when `field` is empty.
fn move_or_push(field: &mut String, text: String) {
    if field.is_empty() {
        *field = text;
    } else {
        field.push_str(&text);
    }
}

/// Adds deltas up into a message.
#[derive(Debug, Clone, Default)]
pub struct MessageBuilder {
    content: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    /// Indices of calls the parser withdrew (arguments that are not JSON):
    /// left out of the message, their text is content.
    withdrawn: Vec<usize>,
}

impl MessageBuilder {
    /// Appends one delta.
    pub fn apply(&mut self, delta: &Delta) {
        if let Some(text) = &delta.content {
            self.content.push_str(text);
        }
        if let Some(text) = &delta.reasoning_content {
            self.reasoning.push_str(text);
        }
        for piece in &delta.tool_calls {
            self.apply_call(piece);
        }
    }

    /// Appends one tool-call piece.
    pub(crate) fn apply_call(&mut self, piece: &ToolCallDelta) {
        let call = self.call(piece.index);
        if let Some(id) = &piece.id {
            call.id = Some(id.clone());
        }
        if let Some(name) = &piece.function.name {
            call.function.name.push_str(name);
        }
        if let Some(args) = &piece.function.arguments {
            call.function.arguments.push_str(args);
        }
    }

    /// Appends one tool-call piece, as [`apply_call`](Self::apply_call), its
    /// strings moved into a call field they start (a batch parse's
    /// announcement: no copy of the name).
    pub(crate) fn take_call(&mut self, piece: ToolCallDelta) {
        let call = self.call(piece.index);
        if piece.id.is_some() {
            call.id = piece.id;
        }
        if let Some(name) = piece.function.name {
            move_or_push(&mut call.function.name, name);
        }
        if let Some(args) = piece.function.arguments {
            move_or_push(&mut call.function.arguments, args);
        }
    }

    /// The indices of the calls that have no id yet.
    pub(crate) fn calls_without_id(&self) -> Vec<usize> {
        (0..self.calls.len())
            .filter(|&i| self.calls[i].id.is_none())
            .collect()
    }

    /// Call `index`, created (with the calls before it) when new. Always
    /// inlined: a stream's plain push of a tagged string value asks it.
    #[inline(always)]
    fn call(&mut self, index: usize) -> &mut ToolCall {
        if self.calls.len() <= index {
            self.add_calls(index);
        }
        &mut self.calls[index]
    }

    /// Creates the calls up to `index`.
    #[cold]
    fn add_calls(&mut self, index: usize) {
        while self.calls.len() <= index {
            self.calls.push(ToolCall {
                kind: "function".into(),
                ..ToolCall::default()
            });
        }
    }

    /// Appends content text (what [`apply`](Self::apply) does for a content delta).
    #[inline]
    pub(crate) fn push_content(&mut self, text: &str) {
        push_short(&mut self.content, text);
    }

    /// Appends reasoning text.
    #[inline]
    pub(crate) fn push_reasoning(&mut self, text: &str) {
        push_short(&mut self.reasoning, text);
    }

    /// Appends argument text to call `index`.
    #[inline]
    pub(crate) fn push_arguments(&mut self, index: usize, text: &str) {
        push_short(&mut self.call(index).function.arguments, text);
    }

    /// `check` of call `index`'s argument text so far with `closing` after
    /// it, without copying the text.
    pub(crate) fn with_arguments_closed<R>(
        &mut self,
        index: usize,
        closing: &str,
        check: impl FnOnce(&str) -> R,
    ) -> R {
        let Some(call) = self.calls.get_mut(index) else {
            return check(closing);
        };
        let arguments = &mut call.function.arguments;
        let len = arguments.len();
        arguments.push_str(closing);
        let result = check(arguments);
        arguments.truncate(len);
        result
    }

    /// Leaves call `index` out of the message: a stream withdrew it after
    /// its deltas were sent (`OutputStream::withdrawn_calls`), and its text
    /// came as content deltas. Its arguments are dropped at once (a call
    /// withdrawn for its length holds megabytes).
    pub fn withdraw(&mut self, index: usize) {
        self.withdrawn.push(index);
        if let Some(call) = self.calls.get_mut(index) {
            call.function.arguments = String::new();
        }
    }

    /// The message so far.
    pub fn message(&self) -> AssistantMessage {
        self.clone().into_message()
    }

    /// The message, without copying it.
    pub fn into_message(mut self) -> AssistantMessage {
        if !self.withdrawn.is_empty() {
            let mut index = 0;
            self.calls.retain(|_| {
                index += 1;
                !self.withdrawn.contains(&(index - 1))
            });
        }
        let content = if self.content.is_empty() && !self.calls.is_empty() {
            None
        } else {
            Some(self.content)
        };
        AssistantMessage {
            role: "assistant".into(),
            content,
            reasoning_content: self.reasoning,
            tool_calls: self.calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shape() {
        let mut b = MessageBuilder::default();
        b.apply(&Delta::reasoning("hmm"));
        b.apply(&Delta::tool_call(ToolCallDelta {
            index: 0,
            id: None,
            kind: Some("function".into()),
            function: FunctionDelta {
                name: Some("f".into()),
                arguments: None,
            },
        }));
        b.apply(&Delta::tool_call(ToolCallDelta {
            index: 0,
            function: FunctionDelta {
                arguments: Some("{\"a\":1}".into()),
                name: None,
            },
            ..Default::default()
        }));
        let json = serde_json::to_string(&b.message()).unwrap();
        assert_eq!(
            json,
            r#"{"role":"assistant","content":null,"reasoning_content":"hmm","tool_calls":[{"id":null,"type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}"#
        );
        let plain = MessageBuilder::default().message();
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"role":"assistant","content":""}"#
        );
    }
}
