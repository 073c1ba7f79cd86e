//! Markers a model leaves out inside a call, as GLM-family models are
//! reported to under load (public issue threads of the serving engines):
//! a value whose opening marker is missing, its closer written
//! (`<arg_key>query</arg_key>vacation days</arg_value>`). The value is read
//! as if the opener were there, byte for byte; text that holds any of the
//! arguments' markers before the closer is no such value (the call stays
//! malformed, its text content, as before). Streams equal the batch parse.

use chat_autoparser::{Options, OutputParser, ParserConfig};
use serde_json::json;

use crate::common::shipped_template;
use crate::common::streaming::{calls, report_and_stream};

fn parser(template: &str) -> OutputParser {
    let (_, analysis) = shipped_template(template);
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "search", "parameters": {
            "type": "object", "properties": {"query": {"type": "string"}}}}}),
    ];
    let options = Options::default().with_tools(tools);
    analysis.parser(&ParserConfig::from(options)).unwrap()
}

#[test]
fn a_value_whose_opener_is_missing_is_read_to_its_closer() {
    let p = parser("glm-arg-pairs");
    for (output, expected) in [
        (
            "<tool_call>search\n<arg_key>query</arg_key>\nhow many vacation days left</arg_value>\n</tool_call>",
            ("search", r#"{"query": "how many vacation days left"}"#),
        ),
        // One value with its opener, one without; a typed value too.
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\nParis</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
            ("get_weather", r#"{"city": "Paris", "days": 3}"#),
        ),
        (
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n3</arg_value>\n</tool_call>",
            ("get_weather", r#"{"city": "Paris", "days": 3}"#),
        ),
    ] {
        let report = report_and_stream(&p, output);
        assert_eq!(calls(&report.message), [expected], "{output:?}");
        assert_eq!(report.message.content, None, "{output:?}");
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    }
}

#[test]
fn text_holding_the_arguments_markers_is_no_unopened_value() {
    let p = parser("glm-arg-pairs");
    // A key's closer, or the value's own opener, before the value's closer:
    // the model wrote something else than a value; its call is withdrawn and
    // its text is content, as when no opener is missing.
    for output in [
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_ty</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>value>Paris</arg_value>\n</tool_call>",
        "<tool_call>search\n<arg_key>query</arg_key>\nnews <arg_value>today</arg_value>\n</tool_call>",
    ] {
        let report = report_and_stream(&p, output);
        assert!(report.message.tool_calls.is_empty(), "{output:?}: {:?}", report.message);
        assert_eq!(report.message.content.as_deref(), Some(output));
    }
}
