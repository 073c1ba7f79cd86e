//! The request's tools and `tool_choice`, read once for every back end.
//!
//! A `strict` tool's parameters are closed here, once
//! (`json_schema::strictly_closed`): the parser and every export read them so.
//!
//! Invariants: reading tools never fails: an entry without a name, or a
//! name given twice, is skipped with a warning; a tool without parameters
//! takes any object. A request whose tools lack a name is refused
//! downstream all the same ([`nameless_tool`], reported by the protocol's
//! checks): a server cannot dispatch a call to a function it cannot name.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::json_schema::strictly_closed;

/// Which tool calls the model may or must make (OpenAI's `tool_choice`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides; calls are constrained once they start.
    #[default]
    Auto,
    /// At least one call.
    Required,
    /// No calls.
    None,
    /// At least one call, of this function.
    Function(String),
    /// OpenAI's `allowed_tools`: the prompt lists every tool (so it stays
    /// cacheable) but calls may name only these; `required`: at least one.
    AllowedTools {
        /// The functions a call may name, in the request's order.
        names: Vec<String>,
        /// At least one call (mode `required`), else the model decides (`auto`).
        required: bool,
    },
}

impl ToolChoice {
    /// `"auto"`, `"required"`, `"none"`, the function's name, or
    /// `allowed_tools(auto: a, b)`.
    pub fn as_str(&self) -> Cow<'_, str> {
        match self {
            ToolChoice::Auto => "auto".into(),
            ToolChoice::Required => "required".into(),
            ToolChoice::None => "none".into(),
            ToolChoice::Function(name) => name.as_str().into(),
            ToolChoice::AllowedTools { names, required } => {
                format!("allowed_tools({}: {})", mode(*required), names.join(", ")).into()
            }
        }
    }

    /// Reads a request's `tool_choice` JSON: a string, OpenAI's
    /// `{"type": "function", "function": {"name": ...}}`, or its
    /// `{"type": "allowed_tools", ...}` (Chat Completions' nested shape or
    /// the Responses API's flat one). Other values are `auto`, as before;
    /// an `allowed_tools` object that is malformed errors (kind `Input`).
    pub fn from_json(value: &Value) -> Result<ToolChoice> {
        if value.get("type").and_then(Value::as_str) == Some("allowed_tools") {
            return allowed_tools(value).map_err(|why| {
                Error::new(
                    ErrorKind::Input,
                    format!("tool_choice allowed_tools: {why}"),
                )
            });
        }
        Ok(ToolChoice::deserialize(value).unwrap_or_default())
    }

    /// Reads `"auto"`, `"required"`, `"none"`, or any other text as a function name.
    pub fn parse(text: &str) -> ToolChoice {
        match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Function(name.to_owned()),
        }
    }

    /// The JSON a request gives (OpenAI's shapes), which [`ToolChoice::from_json`] reads back.
    pub fn to_json(&self) -> Value {
        match self {
            ToolChoice::Function(name) => json!({"type": "function", "function": {"name": name}}),
            ToolChoice::AllowedTools { names, required } => {
                let tools: Vec<Value> = names
                    .iter()
                    .map(|n| json!({"type": "function", "function": {"name": n}}))
                    .collect();
                json!({"type": "allowed_tools",
                    "allowed_tools": {"mode": mode(*required), "tools": tools}})
            }
            other => Value::from(other.as_str()),
        }
    }
}

fn mode(required: bool) -> &'static str {
    if required {
        "required"
    } else {
        "auto"
    }
}

/// Reads `{"type": "allowed_tools", "allowed_tools": {"mode", "tools"}}`,
/// or the flat `{"type": "allowed_tools", "mode", "tools"}`; each tool
/// `{"type": "function", "function": {"name"}}` or `{"type": "function",
/// "name"}`. Why not, when it is malformed.
fn allowed_tools(value: &Value) -> std::result::Result<ToolChoice, String> {
    let body = value.get("allowed_tools").unwrap_or(value);
    let required = match body.get("mode").and_then(Value::as_str) {
        Some("auto") => false,
        Some("required") => true,
        _ => return Err("`mode` must be \"auto\" or \"required\"".into()),
    };
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Err("`tools` must be a list of {\"type\": \"function\", ...}".into());
    };
    let mut names: Vec<String> = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let name = tool_name(tool).ok_or_else(|| format!("tools[{i}] has no function name"))?;
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    if names.is_empty() {
        return Err("`tools` is empty".into());
    }
    Ok(ToolChoice::AllowedTools { names, required })
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ToolChoice::AllowedTools { .. } => self.to_json().serialize(s),
            other => s.serialize_str(&other.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // OpenAI also sends `{"type": "function", "function": {"name": ...}}`
        // and `{"type": "allowed_tools", ...}`.
        let value = Value::deserialize(d)?;
        if let Some(text) = value.as_str() {
            return Ok(ToolChoice::parse(text));
        }
        if value.get("type").and_then(Value::as_str) == Some("allowed_tools") {
            return allowed_tools(&value).map_err(|why| {
                serde::de::Error::custom(format!("tool_choice allowed_tools: {why}"))
            });
        }
        value
            .pointer("/function/name")
            .and_then(Value::as_str)
            .map(|n| ToolChoice::Function(n.to_owned()))
            .ok_or_else(|| {
                serde::de::Error::custom(
                    "tool_choice: expected a string or {\"function\": {\"name\": ...}}",
                )
            })
    }
}

/// A tool as the protocol needs it: its name and parameters schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// Its parameters' JSON schema (`{"type": "object"}` when absent);
    /// a strict tool's with every object closed
    /// (`json_schema::strictly_closed`).
    pub parameters: Value,
    /// OpenAI's `function.strict: true`: the arguments match the schema
    /// exactly; an export that can only write a looser rule says so.
    pub strict: bool,
}

/// Why `tools` cannot be served: the first entry without a (non-empty)
/// `function.name`, by its index.
pub fn nameless_tool(tools: &[Value]) -> Option<String> {
    let index = tools.iter().position(|tool| tool_name(tool).is_none())?;
    Some(format!("tool {index} has no function.name"))
}

/// A tool's name: `function.name`, or `name` of the inner object alone.
fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("function")
        .unwrap_or(tool)
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// Reads OpenAI-format tools (`{"type": "function", "function": {...}}`, or
/// the inner object alone; the schema under `parameters`, or Anthropic's
/// `input_schema`); unusable entries and repeated names are skipped with a
/// warning.
pub fn read_tools(tools: &[Value], warnings: &mut Vec<String>) -> Vec<Tool> {
    let mut out: Vec<Tool> = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let function = tool.get("function").unwrap_or(tool);
        let Some(name) = tool_name(tool) else {
            warnings.push(format!("tool {i} has no name; skipped"));
            continue;
        };
        if out.iter().any(|t| t.name == name) {
            warnings.push(format!(
                "tool {name:?} is defined twice; the first definition is used"
            ));
            continue;
        }
        let parameters = function
            .get("parameters")
            .or_else(|| function.get("input_schema"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        // Closed here, once: every export and the parser read these.
        let strict = function.get("strict") == Some(&Value::Bool(true));
        out.push(Tool {
            name: name.to_owned(),
            parameters: match strict {
                true => strictly_closed(&parameters),
                false => parameters,
            },
            strict,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_choice_serde() {
        for (text, choice) in [
            ("\"auto\"", ToolChoice::Auto),
            ("\"required\"", ToolChoice::Required),
            ("\"none\"", ToolChoice::None),
            (
                "\"get_weather\"",
                ToolChoice::Function("get_weather".into()),
            ),
        ] {
            assert_eq!(serde_json::from_str::<ToolChoice>(text).unwrap(), choice);
            assert_eq!(serde_json::to_string(&choice).unwrap(), text);
        }
        let object: ToolChoice =
            serde_json::from_str(r#"{"type": "function", "function": {"name": "f"}}"#).unwrap();
        assert_eq!(object, ToolChoice::Function("f".into()));
    }

    #[test]
    fn allowed_tools_read_in_both_shapes() {
        let want = ToolChoice::AllowedTools {
            names: vec!["get_weather".into(), "get_time".into()],
            required: true,
        };
        let nested = json!({"type": "allowed_tools", "allowed_tools": {"mode": "required",
            "tools": [{"type": "function", "function": {"name": "get_weather"}},
                      {"type": "function", "function": {"name": "get_time"}}]}});
        let flat = json!({"type": "allowed_tools", "mode": "required",
            "tools": [{"type": "function", "name": "get_weather"},
                      {"type": "function", "name": "get_time"}]});
        assert_eq!(ToolChoice::from_json(&nested).unwrap(), want);
        assert_eq!(ToolChoice::from_json(&flat).unwrap(), want);
        assert_eq!(serde_json::from_value::<ToolChoice>(flat).unwrap(), want);
        assert_eq!(
            want.as_str(),
            "allowed_tools(required: get_weather, get_time)"
        );
        // Written back as Chat Completions' shape, and read again.
        assert_eq!(serde_json::to_value(&want).unwrap(), nested);
        assert_eq!(ToolChoice::from_json(&want.to_json()).unwrap(), want);
    }

    #[test]
    fn malformed_allowed_tools_is_an_input_error() {
        for (value, why) in [
            (
                json!({"type": "allowed_tools", "allowed_tools": {"mode": "any", "tools": []}}),
                "`mode` must be \"auto\" or \"required\"",
            ),
            (
                json!({"type": "allowed_tools", "mode": "auto"}),
                "`tools` must be a list of {\"type\": \"function\", ...}",
            ),
            (
                json!({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function"}]}),
                "tools[0] has no function name",
            ),
            (
                json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
                "`tools` is empty",
            ),
        ] {
            let e = ToolChoice::from_json(&value).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Input);
            assert_eq!(
                e.to_string(),
                format!("input error: tool_choice allowed_tools: {why}")
            );
        }
        // Other unknown objects read as `auto`, as before.
        assert_eq!(
            ToolChoice::from_json(&json!({"type": "custom"})).unwrap(),
            ToolChoice::Auto
        );
    }
}
