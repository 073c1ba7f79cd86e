//! The request's tools and `tool_choice`, read once for every back end.
//!
//! Invariants: reading tools never fails: an entry without a name, or a
//! name given twice, is skipped with a warning; a tool without parameters
//! takes any object. A request whose tools lack a name is refused
//! downstream all the same ([`nameless_tool`], reported by the protocol's
//! checks): a server cannot dispatch a call to a function it cannot name.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};

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
}

impl ToolChoice {
    /// `"auto"`, `"required"`, `"none"`, or the function's name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
            ToolChoice::Function(name) => name,
        }
    }

    /// Reads a request's `tool_choice` JSON (a string or OpenAI's
    /// `{"type": "function", "function": {"name": ...}}`); anything else is `auto`.
    pub fn from_json(value: &Value) -> ToolChoice {
        ToolChoice::deserialize(value).unwrap_or_default()
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
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // OpenAI also sends `{"type": "function", "function": {"name": ...}}`.
        let value = Value::deserialize(d)?;
        if let Some(text) = value.as_str() {
            return Ok(ToolChoice::parse(text));
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
    /// Its parameters' JSON schema (`{"type": "object"}` when absent).
    pub parameters: Value,
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
        out.push(Tool {
            name: name.to_owned(),
            parameters,
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
}
