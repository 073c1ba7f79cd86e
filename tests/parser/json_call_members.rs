//! JSON call objects as models write them beside the template's format, on
//! two shipped templates: `hermes-think.jinja` (`{"name": ..., "arguments":
//! {...}}`) and `bare-json.jinja` (`{"name": ..., "parameters": {...}}`).
//!
//! - arguments written as a string holding the JSON object (OpenAI's wire
//!   form) are decoded into the arguments text;
//! - `arguments` and `parameters` are read as each other's key;
//! - a member the template does not write holding a scalar (`"type":
//!   "function"`) carries no data and is skipped;
//! - an object under a key the parser does not place would be lost: the
//!   call is malformed there, and the rest stays content, verbatim, with a
//!   diagnostic (an error when strict).

use chat_autoparser::parser::{DiagnosticKind, OutputParser};
use chat_autoparser::Options;
use chat_autoparser::{ChatTemplate, ParserConfig, TemplateConfig};

use crate::common::streaming;

use streaming::{calls, weather_tools as tools};

fn parser(template: &str) -> OutputParser {
    let path = format!("{}/templates/{template}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).unwrap();
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap()
}

fn hermes(call: &str) -> String {
    format!("<tool_call>\n{call}\n</tool_call>")
}

#[test]
fn arguments_in_a_string_are_decoded() {
    let p = parser("hermes-think.jinja");
    let m = streaming::parse_and_stream(
        &p,
        &hermes(r#"{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}"#),
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(m.content, None);
}

#[test]
fn arguments_and_parameters_are_read_as_each_other() {
    let m = streaming::parse_and_stream(
        &parser("hermes-think.jinja"),
        &hermes(r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#),
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    let m = streaming::parse_and_stream(
        &parser("bare-json.jinja"),
        r#"{"name": "get_weather", "arguments": {"city": "Rome"}}"#,
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Rome"}"#)]);
    let m = streaming::parse_and_stream(
        &parser("bare-json.jinja"),
        r#"{"name": "get_weather", "parameters": {"city": "Oslo"}}"#,
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Oslo"}"#)]);
}

#[test]
fn a_scalar_member_the_template_does_not_write_is_skipped() {
    let p = parser("hermes-think.jinja");
    let output = hermes(
        r#"{"type": "function", "name": "get_weather", "arguments": {"city": "Paris"}, "index": 0}"#,
    );
    let m = streaming::parse_and_stream(&p, &output);
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(m.content, None);
    assert!(p.parse_strict(&output).is_ok());
}

#[test]
fn an_object_under_an_unknown_key_stays_content() {
    let p = parser("hermes-think.jinja");
    let output = hermes(r#"{"name": "get_weather", "args": {"city": "Paris"}}"#);
    let m = streaming::parse_and_stream(&p, &output);
    // A call that broke before its arguments began is no call: all of its
    // text is content, byte for byte (a stream that announced the name
    // lists it in `withdrawn_calls`).
    assert_eq!(calls(&m), []);
    assert_eq!(m.content.as_deref(), Some(output.as_str()));
    let error = p.parse_strict(&output).unwrap_err();
    assert_eq!(error.kind, DiagnosticKind::BrokenToolCall);
    assert_eq!(error.offset, output.find(", \"args\"").unwrap());
}
