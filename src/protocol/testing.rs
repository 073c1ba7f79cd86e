//! What the unit tests of the protocol's readers (the outline, the grammar
//! exports) share: one request, for one weather tool, on a template.

use serde_json::{json, Value};

use super::{Options, Protocol, ToolChoice};
use crate::template::{ChatTemplate, TemplateConfig};

/// The parameters of the usual `get_weather`: a required string `city`, an
/// optional integer `days`.
pub(crate) fn weather_parameters() -> Value {
    json!({"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]})
}

/// The protocol of `template` (thinking on) for one tool, `get_weather`
/// taking `parameters`.
pub(crate) fn weather_protocol(
    template: &str,
    parameters: Value,
    choice: ToolChoice,
    parallel: bool,
) -> Protocol {
    let analysis = ChatTemplate::new(template, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![json!({"type": "function", "function": {
        "name": "get_weather", "parameters": parameters}})];
    let options = Options {
        tools,
        tool_choice: choice,
        parallel_tool_calls: parallel,
        enable_thinking: Some(true),
        ..Default::default()
    };
    Protocol::new(&analysis, &options)
}

/// The protocol of `template` (thinking on) for two tools, `get_weather`
/// and `get_time`, under `choice`.
pub(crate) fn two_tool_protocol(template: &str, choice: ToolChoice) -> Protocol {
    let analysis = ChatTemplate::new(template, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tool = |name: &str| {
        json!({"type": "function", "function": {
        "name": name, "parameters": weather_parameters()}})
    };
    let options = Options {
        tools: vec![tool("get_weather"), tool("get_time")],
        tool_choice: choice,
        enable_thinking: Some(true),
        ..Default::default()
    };
    Protocol::new(&analysis, &options)
}
