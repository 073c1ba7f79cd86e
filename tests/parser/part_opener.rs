//! Turns written as parts opened by a recipient, on a small template written
//! for this test (as functionary v3.2 writes them): `>>>all\n` before
//! content, `>>>NAME\n` before a call's JSON arguments, and a generation
//! prompt that ends with the first `>>>`.
//!
//! The analysis learns `all\n` as a content wrapper and `>>>` as the call
//! separator. The parser must treat `>>>` as what opens every part after the
//! first (so content followed by a call splits there), and the wrapper word
//! only where a part opens: `all` inside the content (`call`, `really`) is
//! text.

use chat_autoparser::Options;
use chat_autoparser::{Analysis, AssistantMessage, ParserConfig};
use serde_json::json;

use crate::common::streaming;

use streaming::{calls, weather_tools as tools};

const TEMPLATE: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|>
{%- if m.content -%}>>>all
{{ m.content }}{%- endif -%}
{%- for c in m.tool_calls or [] -%}>>>{{ c.function.name }}
{{ c.function.arguments | tojson }}{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>>>>{%- endif -%}"#;

fn analysis() -> Analysis {
    streaming::analyze(TEMPLATE)
}

/// The batch parse, checked against streams in 1-, 4- and 7-byte chunks.
fn parse(output: &str) -> AssistantMessage {
    streaming::parse_and_stream(
        &analysis()
            .parser(&ParserConfig::from(Options::default().with_tools(tools())))
            .unwrap(),
        output,
    )
}

#[test]
fn the_analysis_learns_the_wrapper_word_and_the_separator() {
    let a = analysis();
    assert_eq!(a.content.start, "all\n");
    let tools = a.tools.expect("tools");
    assert_eq!(tools.call_separator, ">>>");
    assert!(a.turn.generation_prompt.default.ends_with(">>>"));
}

#[test]
fn the_wrapper_word_inside_content_is_text() {
    let m = parse("all\nI will call you, really. All set.");
    assert_eq!(m.content_text(), "I will call you, really. All set.");
    assert!(m.tool_calls.is_empty());
}

#[test]
fn content_then_a_call_splits_at_the_opener() {
    let m = parse("all\nLet me check the weather.>>>get_weather\n{\"city\": \"Paris\"}");
    assert_eq!(m.content_text(), "Let me check the weather.");
    assert_eq!(calls(&m), [("get_weather", "{\"city\": \"Paris\"}")]);
}

#[test]
fn calls_then_content() {
    let m = parse("get_weather\n{\"city\": \"Paris\"}>>>get_weather\n{\"city\": \"Rome\"}>>>all\nDone, all right.");
    assert_eq!(m.content_text(), "Done, all right.");
    assert_eq!(
        calls(&m),
        [
            ("get_weather", "{\"city\": \"Paris\"}"),
            ("get_weather", "{\"city\": \"Rome\"}")
        ]
    );
}

#[test]
fn an_opener_that_opens_nothing_known_is_text() {
    let m = parse("all\nArrows >>> here, and >>>nobody\nknows.");
    assert_eq!(m.content_text(), "Arrows >>> here, and >>>nobody\nknows.");
    assert!(m.tool_calls.is_empty());
}

#[test]
fn a_bare_name_is_a_call_only_once_its_arguments_begin() {
    let parser = analysis().parser(&ParserConfig::default()).unwrap();
    let m = streaming::parse_and_stream(&parser, "all\nHello\nthere");
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({"role": "assistant", "content": "Hello\nthere"})
    );
    let m = streaming::parse_and_stream(&parser, "ping\n{\"n\": 1}");
    assert_eq!(calls(&m), [("ping", "{\"n\": 1}")]);
}

/// After the wrapper word the part is content: a first line that reads
/// like a name (`Paris`) is no call of an unknown tool, and is not
/// reported as one.
#[test]
fn content_after_the_wrapper_word_is_no_unknown_call() {
    let parser = analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap();
    for (output, content) in [
        ("all\nParis", "Paris"),
        ("all\nParis\nis nice", "Paris\nis nice"),
        (
            "get_weather\n{\"city\": \"Rome\"}>>>all\nRome\nnext",
            "Rome\nnext",
        ),
    ] {
        let report = parser.parse_report(output, false);
        assert_eq!(report.message.content_text(), content, "{output:?}");
        assert_eq!(report.diagnostics, [], "{output:?}");
    }
}
