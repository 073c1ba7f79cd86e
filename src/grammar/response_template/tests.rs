//! The tool-call field read from the outline of shipped templates: each
//! kind of call (a JSON object between markers, tagged parameters, a
//! Python list) and the name group with and without tools.

use serde_json::{json, Value};

use super::response_template;
use crate::protocol::testing::{weather_parameters, weather_protocol};
use crate::protocol::{Protocol, ToolChoice};

const HERMES: &str = include_str!("../../../templates/hermes-think.jinja");
const QWEN_XML: &str = include_str!("../../../templates/qwen-coder-xml.jinja");
const PYTHON: &str = include_str!("../../../templates/python-calls.jinja");

fn protocol(template: &str) -> Protocol {
    weather_protocol(template, weather_parameters(), ToolChoice::Auto, true)
}

fn calls_field(protocol: &Protocol) -> Value {
    let exported = response_template(protocol).unwrap();
    exported.response_template["fields"]["tool_calls"].clone()
}

#[test]
fn a_json_call_object_between_markers_is_parsed_whole() {
    let field = calls_field(&protocol(HERMES));
    assert_eq!(field["open_pattern"], r"<tool_call>\s*");
    assert_eq!(field["close_pattern"], r"(?<=\})\s*</tool_call>");
    assert_eq!(field["content"], "json");
    assert_eq!(
        field["transform"]["function"],
        json!({"name": "{content.name}", "arguments": "{content.arguments}"})
    );
}

#[test]
fn tagged_parameters_are_xml_inline_and_their_end_may_be_missing() {
    let field = calls_field(&protocol(QWEN_XML));
    assert_eq!(
        field["open_pattern"],
        r"<tool_call>\s*<function=(?P<name>get_weather)>\s*"
    );
    // `</function>` is optional before the call's own `</tool_call>`.
    assert_eq!(field["close_pattern"], r"(?:</function>\s*)?</tool_call>");
    assert_eq!(field["content"], "xml-inline");
    assert_eq!(
        field["content_args"]["tag_pattern"],
        r"<parameter=(?P<key>[^\s<>]+?)>(?:\n)?(?P<value>.*?)(?:\n)?(?:</parameter>\s*|\Z)"
    );
}

#[test]
fn without_tools_the_name_is_any_name() {
    let mut p = protocol(QWEN_XML);
    p.tools.as_mut().unwrap().tools.clear();
    let field = calls_field(&p);
    assert_eq!(
        field["open_pattern"],
        r#"<tool_call>\s*<function=(?P<name>(?:[^"\\]|\\.)+?)>\s*"#
    );
}

#[test]
fn python_calls_are_one_bracketed_list() {
    let field = calls_field(&protocol(PYTHON));
    assert_eq!(field["open_pattern"], r"<\|tool_call_start\|>(?=\s*\[)");
    assert_eq!(field["close_pattern"], r"(?<=\])\s*<\|tool_call_end\|>");
    assert_eq!(field["content"], "python-call-list");
    assert_eq!(field["transform_each"], true);
}

/// A value's opener that is an element of its own (`<arg_value>`) may be
/// missing, its closer written, as the parser reads it.
#[test]
fn a_values_element_opener_is_optional() {
    let glm = include_str!("../../../templates/glm-arg-pairs.jinja");
    let field = calls_field(&protocol(glm));
    assert_eq!(
        field["content_args"]["tag_pattern"],
        r"<arg_key>(?P<key>[^\s<>]+?)</arg_key>\s*(?:<arg_value>)?(?P<value>.*?)(?:</arg_value>\s*|\Z)"
    );
}
