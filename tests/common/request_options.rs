//! One request on hermes-think with two tools, `get_weather(city, days?)`
//! and `get_time()`, for the tests of request options that narrow what a
//! call may write (`tool_choice`'s `allowed_tools`, `strict` tools), and the
//! outputs they are checked with.

use chat_autoparser::{Chat, ChatRequest, Prepared, ToolChoice};
use serde_json::{json, Value};

/// The two tools; `strict` marks both `function.strict: true`.
pub fn tools(strict: bool) -> Vec<Value> {
    let weather = json!({"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]});
    vec![
        json!({"type": "function", "function": {"name": "get_weather",
            "strict": strict, "parameters": weather}}),
        json!({"type": "function", "function": {"name": "get_time", "strict": strict}}),
    ]
}

/// The request prepared on hermes-think (thinking off) with `tools` and
/// the `tool_choice` JSON `choice`.
pub fn prepared(tools: Vec<Value>, choice: Value) -> Prepared {
    let (template, analysis) = super::shipped_template("hermes-think");
    let chat = Chat::with_analysis(template, analysis);
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(Some(tools))
        .with_tool_choice(ToolChoice::from_json(&choice).unwrap())
        .with_enable_thinking(Some(false));
    chat.prepare(&request)
}

/// `allowed_tools` in Chat Completions' shape, of `names`.
pub fn allowed_tools(mode: &str, names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"type": "function", "function": {"name": n}}))
        .collect();
    json!({"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}})
}

/// A hermes call of `name` with `arguments` (JSON text).
pub fn call(name: &str, arguments: &str) -> String {
    format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>")
}
