//! The batch parse of an output, checked against streaming it, and the
//! small helpers the dialect tests read a template and a message with.
//!
//! Every dialect test wants the same guarantee next to its exact
//! expectations: pushing the output in small chunks gives the message the
//! batch parse gives. One copy of that loop here instead of one per test file;
//! a test crate includes it with `#[path = "common/streaming.rs"] mod streaming;`.

#![allow(dead_code)] // Each test crate uses the part it needs.

use chat_autoparser::parser::char_chunks;
use chat_autoparser::parser::{ForeignMarkers, Parsed};
use chat_autoparser::{
    Analysis, AssistantMessage, ChatTemplate, OutputParser, Policy, TemplateConfig,
};
use serde_json::{json, Value};

/// `compatible` with other formats' markers read as markup and left out
/// (`foreign_markers: drop`; the preset's own value is `text`).
pub fn dropping_foreign() -> Policy {
    Policy::compatible().with_foreign_markers(ForeignMarkers::Drop)
}

/// One tool, `get_weather`, with a required string argument `city`.
pub fn weather_tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}),
    ]
}

/// The analysis of a template written for a test (it must compile and analyse).
pub fn analyze(source: &str) -> Analysis {
    ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

/// Each call's name and arguments text, in order.
pub fn calls(m: &AssistantMessage) -> Vec<(&str, &str)> {
    m.tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect()
}

/// `parser.parse(output)`, after asserting that streams in 1-, 4- and
/// 7-byte chunks (cut forward to character boundaries) end with the same
/// message.
pub fn parse_and_stream(parser: &OutputParser, output: &str) -> AssistantMessage {
    let batch = parser.parse(output);
    for size in [1, 4, 7] {
        let mut stream = parser.stream();
        for chunk in char_chunks(output, size) {
            stream.push(chunk);
        }
        stream.finish();
        assert_eq!(stream.message(), batch, "chunks of {size}: {output:?}");
    }
    batch
}

/// `parser.parse_report(output, false)`, after asserting that streams in
/// 1-, 2-, 3- and 7-byte pieces (on character boundaries) end with the same
/// message and the same diagnostics.
pub fn report_and_stream(parser: &OutputParser, output: &str) -> Parsed {
    report_and_stream_at(parser, output, [1, 2, 3, 7])
}

/// [`report_and_stream`] with streams cut in pieces of each of `sizes`
/// bytes.
pub fn report_and_stream_at(
    parser: &OutputParser,
    output: &str,
    sizes: impl IntoIterator<Item = usize>,
) -> Parsed {
    let batch = parser.parse_report(output, false);
    for size in sizes {
        let mut stream = parser.stream();
        for piece in char_chunks(output, size) {
            stream.push(piece);
        }
        stream.finish();
        assert_eq!(stream.message(), batch.message, "{size}: {output:?}");
        assert_eq!(
            stream.diagnostics(),
            batch.diagnostics,
            "{size}: {output:?}"
        );
    }
    batch
}
