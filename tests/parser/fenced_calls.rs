//! A JSON call in a Markdown code fence after content, on templates whose
//! calls are not bare JSON (issue 26): models mixing dialects write
//! `Sure.\n```json\n{"name": ..., "arguments": {...}}\n```` whatever their
//! template's format. The fence is another format's wrapper around a bare
//! JSON call: the call is read when it names one of the request's tools (or
//! any, under `unknown_tool: call`), and the fence's markers are decided by
//! the `foreign_markers` policy (content named by `foreign_marker` under
//! `lossless`, dropped under `drop`). `compatible` reads other formats'
//! markers as text (`foreign_markers: text`), as vLLM's and SGLang's parsers
//! do on these formats: there the fenced call is content, byte-exact. A code
//! block holding other JSON stays content, byte-exact. Streaming equals batch at 1-, 2-, 3- and
//! 7-byte pieces (`report_and_stream`).

use chat_autoparser::parser::{DiagnosticKind, Parsed};
use chat_autoparser::{Options, OutputParser, ParserConfig, Policy};

use crate::common::shipped_template;
use crate::common::streaming::{calls, dropping_foreign, report_and_stream, weather_tools};

/// Tool formats of every kind but bare JSON: JSON in tags, a JSON list
/// after a marker, Python calls in a list between tokens.
const TEMPLATES: [&str; 3] = ["hermes-think", "mistral-tool-calls", "python-calls"];

fn parser(template: &str, policy: Policy) -> OutputParser {
    let (_, analysis) = shipped_template(template);
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

/// The output bytes the diagnostics of `kind` name.
fn named<'a>(parsed: &Parsed, kind: DiagnosticKind, output: &'a str) -> Vec<&'a str> {
    let of_kind = parsed.diagnostics.iter().filter(|d| d.kind == kind);
    of_kind.map(|d| &output[d.offset..d.end.unwrap()]).collect()
}

fn kinds(parsed: &Parsed) -> Vec<DiagnosticKind> {
    parsed.diagnostics.iter().map(|d| d.kind).collect()
}

const CALL: &str = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
const ARGS: &str = r#"{"city": "Paris"}"#;

#[test]
fn a_fenced_json_call_after_content_is_a_call() {
    for template in TEMPLATES {
        for fence in ["```json", "```"] {
            let output = format!("Sure.\n{fence}\n{CALL}\n```");
            let kept = report_and_stream(&parser(template, Policy::lossless()), &output);
            assert_eq!(
                calls(&kept.message),
                [("get_weather", ARGS)],
                "{template}: {output:?}"
            );
            assert_eq!(
                kept.message.content_text(),
                format!("Sure.\n{fence}```"),
                "{template}: {output:?}"
            );
            let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
            assert_eq!(foreign, [fence, "```"], "{template}: {output:?}");
            assert_eq!(kinds(&kept).len(), 2, "{template}: {output:?}");

            let left = report_and_stream(&parser(template, dropping_foreign()), &output);
            assert_eq!(calls(&left.message), [("get_weather", ARGS)], "{template}");
            assert_eq!(left.message.content.as_deref(), Some("Sure."), "{template}");
            let dropped = named(&left, DiagnosticKind::Dropped, &output);
            assert_eq!(dropped, [fence, "```"], "{template}: {output:?}");

            let text = report_and_stream(&parser(template, Policy::compatible()), &output);
            assert_eq!(text.message.content_text(), output, "{template}");
            assert!(text.message.tool_calls.is_empty(), "{template}");
            assert!(text.diagnostics.is_empty(), "{template}: {output:?}");
        }
    }
}

#[test]
fn a_fenced_list_of_calls_with_parameters_is_read() {
    let other = r#"{"name": "get_weather", "parameters": {"city": "Rome"}}"#;
    let output = format!("```json\n[{CALL}, {other}]\n```");
    for template in TEMPLATES {
        let parsed = report_and_stream(&parser(template, dropping_foreign()), &output);
        assert_eq!(
            calls(&parsed.message),
            [
                ("get_weather", ARGS),
                ("get_weather", r#"{"city": "Rome"}"#)
            ],
            "{template}"
        );
        assert_eq!(parsed.message.content, None, "{template}");
    }
}

#[test]
fn a_code_block_of_other_json_stays_content_byte_exact() {
    for template in TEMPLATES {
        for output in [
            "Here it is:\n```json\n{\"city\": \"Paris\", \"days\": 3}\n```",
            "```\n[1, 2, 3]\n```\nDone.",
            "Example:\n```json\n{\"name\": \"Ada\", \"role\": \"admin\"}\n```",
            "Use ``` fences: ```python\nprint(1)\n```",
        ] {
            for policy in [Policy::lossless(), Policy::compatible()] {
                let parsed = report_and_stream(&parser(template, policy), output);
                assert_eq!(parsed.message.content_text(), output, "{template}");
                assert!(parsed.message.tool_calls.is_empty(), "{template}");
                assert!(parsed.diagnostics.is_empty(), "{template}: {output:?}");
            }
        }
    }
}

#[test]
fn a_fenced_call_of_an_unknown_tool_is_content_or_a_flagged_call() {
    let output = "Sure.\n```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```";
    for template in TEMPLATES {
        let kept = report_and_stream(&parser(template, Policy::lossless()), output);
        assert_eq!(kept.message.content_text(), output, "{template}");
        assert!(kept.message.tool_calls.is_empty(), "{template}");
        assert!(kept.diagnostics.is_empty(), "{template}");
        let called = report_and_stream(&parser(template, dropping_foreign()), output);
        assert_eq!(calls(&called.message), [("get_time", "{}")], "{template}");
        assert!(
            kinds(&called).contains(&DiagnosticKind::UnknownToolCall),
            "{template}"
        );
    }
}

#[test]
fn without_tools_in_the_request_a_fenced_call_is_content() {
    let output = format!("Sure.\n```json\n{CALL}\n```");
    for template in TEMPLATES {
        let (_, analysis) = shipped_template(template);
        let p = analysis.parser(&ParserConfig::default()).unwrap();
        let parsed = report_and_stream(&p, &output);
        assert_eq!(parsed.message.content_text(), output, "{template}");
        assert!(parsed.message.tool_calls.is_empty(), "{template}");
    }
}

#[test]
fn a_code_block_streams_before_it_closes() {
    // The fence is tried as a call's wrapper, but a block that is no JSON
    // call object is content at once, under both presets: a stream sends
    // it before its closing fence comes.
    let open = "Here:\n```python\nprint(1)\n";
    for template in TEMPLATES {
        for policy in [Policy::lossless(), Policy::compatible()] {
            let p = parser(template, policy);
            let mut stream = p.stream();
            stream.push(open);
            stream.push("x");
            let sent = stream.message().content_text().to_string();
            assert!(sent.starts_with(open.trim_end()), "{template}: {sent:?}");
        }
    }
}
