//! The template's own call markers where they open or close nothing (issue
//! 26): a closer after plain text (`Hello there</tool_call>`), a section's
//! wrapper around text that is no call
//! (`<|tool_call_start|>I will check.<|tool_call_end|>`), with exact
//! messages and diagnostics under both presets, and streaming equal to batch
//! at 1-, 2-, 3- and 7-byte pieces. Such a marker is the template's
//! scaffolding: never content, and named by a `stray_marker` diagnostic
//! with its range, so under `lossless` every byte is still accounted for
//! (no `dropped` range). The one exception is a lone closer under
//! `foreign_markers: text` (`compatible`'s): where the policy reads no
//! markers around plain text, the closer is text, as vLLM's and SGLang's
//! parsers leave it.

use chat_autoparser::parser::{Diagnostic, DiagnosticKind, Parsed};
use chat_autoparser::{Options, OutputParser, ParserConfig, Policy};

use crate::common::shipped_template;
use crate::common::streaming::{report_and_stream, weather_tools};

fn parser(template: &str, policy: Policy) -> OutputParser {
    let (_, analysis) = shipped_template(template);
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

/// The report of `output` on `template` under both presets, which must
/// agree (a stray marker is scaffolding, not a policy's choice).
fn report(template: &str, output: &str) -> Parsed {
    let lossless = report_and_stream(&parser(template, Policy::lossless()), output);
    let compatible = report_and_stream(&parser(template, Policy::compatible()), output);
    assert_eq!(lossless, compatible, "{output:?}");
    lossless
}

/// The report of `output` (plain text ending in or holding a lone closer)
/// on `template` under `lossless` and `compatible` with
/// `foreign_markers: drop`, which must agree; under `compatible` the
/// closer is text: the content is the output, byte for byte.
fn report_lone_closer(template: &str, output: &str) -> Parsed {
    let dropping = crate::common::streaming::dropping_foreign();
    let lossless = report_and_stream(&parser(template, Policy::lossless()), output);
    let other = report_and_stream(&parser(template, dropping), output);
    assert_eq!(lossless, other, "{output:?}");
    let as_text = report_and_stream(&parser(template, Policy::compatible()), output);
    assert_eq!(as_text.message.content.as_deref(), Some(output));
    assert!(as_text.diagnostics.is_empty(), "{output:?}");
    lossless
}

fn stray(offset: usize, end: usize) -> Diagnostic {
    Diagnostic::range(DiagnosticKind::StrayMarker, offset, end)
}

const HERMES_CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#[test]
fn a_lone_own_closer_after_text_is_named_and_not_content() {
    let parsed = report_lone_closer("hermes-think", "Hello there</tool_call>");
    assert_eq!(parsed.message.content.as_deref(), Some("Hello there"));
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.diagnostics, [stray(11, 23)]);
    assert_eq!(
        parsed.diagnostics[0].to_string(),
        "the template's own call marker where it opens or closes nothing, left out of the content at bytes 11..23"
    );
}

#[test]
fn a_lone_own_closer_inside_text_is_named_and_not_content() {
    let parsed = report_lone_closer("hermes-think", "Hello</tool_call> there.");
    assert_eq!(parsed.message.content.as_deref(), Some("Hello there."));
    assert_eq!(parsed.diagnostics, [stray(5, 17)]);
}

#[test]
fn a_second_closer_after_a_call_closes_nothing() {
    let output = format!("{HERMES_CALL}</tool_call>");
    let parsed = report_and_stream(&parser("hermes-think", Policy::lossless()), &output);
    assert_eq!(parsed.message.tool_calls.len(), 1);
    assert_eq!(parsed.message.content, None);
    let at = HERMES_CALL.len();
    assert_eq!(parsed.diagnostics, [stray(at, at + 12)]);
    // `compatible`: text after the call, left out as such.
    let compatible = report_and_stream(&parser("hermes-think", Policy::compatible()), &output);
    assert_eq!(compatible.message.tool_calls, parsed.message.tool_calls);
    assert_eq!(compatible.message.content, None);
    let dropped = Diagnostic::range(DiagnosticKind::Dropped, at, at + 12);
    assert_eq!(compatible.diagnostics, [dropped]);
}

#[test]
fn an_unknown_tools_call_keeps_its_closer_in_its_content() {
    let output = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let parsed = report_and_stream(&parser("hermes-think", Policy::lossless()), output);
    assert_eq!(parsed.message.content.as_deref(), Some(output));
    assert_eq!(
        parsed.diagnostics,
        [Diagnostic::new(DiagnosticKind::UnknownTool, 0)]
    );
}

#[test]
fn a_lone_own_section_closer_is_named_on_a_python_list_template() {
    let parsed = report_lone_closer("python-calls", "It is sunny.<|tool_call_end|>");
    assert_eq!(parsed.message.content.as_deref(), Some("It is sunny."));
    assert_eq!(parsed.diagnostics, [stray(12, 29)]);
}

#[test]
fn an_opener_no_call_follows_keeps_its_closer_in_the_content() {
    // The call's text went to the content: its closer is that text's.
    for output in [
        "Use <tool_call> then </tool_call>.",
        "<tool_call>\n{\"name\": get_weather}\n</tool_call>",
    ] {
        let parsed = report("hermes-think", output);
        assert_eq!(parsed.message.content.as_deref(), Some(output));
        assert!(parsed.diagnostics.is_empty(), "{output:?}");
    }
}

/// A Llama-4-like template written for this test: Python calls, the
/// section between `<|python_start|>` and `<|python_end|>`.
const PYTHON_BLOCK: &str = r#"
{%- for message in messages %}
{{- '<|header_start|>' + message.role + '<|header_end|>\n\n' }}
{%- if message.tool_calls %}
{{- '<|python_start|>' }}
{%- for tc in message.tool_calls %}
{%- set args = tc.function.arguments %}
{{- tc.function.name + '(' }}{%- for k, v in args.items() %}{{ k }}="{{ v }}"{{ ', ' if not loop.last }}{%- endfor %}{{- ')' }}{{ ', ' if not loop.last }}
{%- endfor %}
{{- '<|python_end|>' }}
{%- else %}
{{- message.content }}
{%- endif %}
{{- '<|eot|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\n\n' }}{%- endif %}
"#;

fn python_block(policy: Policy) -> OutputParser {
    let analysis = crate::common::streaming::analyze(PYTHON_BLOCK);
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

#[test]
fn text_inside_a_python_call_wrapper_is_content_without_its_markers() {
    let output = "<|tool_call_start|>I will check the weather.<|tool_call_end|>";
    let parsed = report("python-calls", output);
    assert_eq!(
        parsed.message.content.as_deref(),
        Some("I will check the weather.")
    );
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.diagnostics, [stray(0, 19), stray(44, 61)]);
}

#[test]
fn text_inside_a_python_block_is_content_without_its_markers() {
    let output = "Sure. <|python_start|>Let me look that up.<|python_end|>";
    for policy in [Policy::lossless(), Policy::compatible()] {
        let parsed = report_and_stream(&python_block(policy), output);
        assert_eq!(
            parsed.message.content.as_deref(),
            Some("Sure. Let me look that up.")
        );
        assert_eq!(parsed.diagnostics, [stray(6, 22), stray(42, 56)]);
    }
    // A call in the block is still a call.
    let call = "<|python_start|>get_weather(city=\"Paris\")<|python_end|>";
    let parsed = report_and_stream(&python_block(Policy::lossless()), call);
    assert_eq!(parsed.message.tool_calls.len(), 1);
    assert_eq!(parsed.message.content, None);
}

#[test]
fn call_like_text_inside_the_wrapper_stays_content_verbatim() {
    // What starts like the section (its `[`) is a call that did not parse:
    // its text is content, markers and all.
    let output = "<|tool_call_start|>[123]<|tool_call_end|>";
    let parsed = report("python-calls", output);
    assert_eq!(parsed.message.content.as_deref(), Some(output));
    assert!(parsed.diagnostics.is_empty());
}

/// A value's closer inside a call with no arguments, right before the
/// call's end (`<tool_call>f</arg_value></tool_call>`, as GLM-family models
/// write for tools without parameters): it closes nothing. The call is
/// read with its name clean and no arguments, the closer named. Without
/// the call's end after it, nothing is read as a call and nothing named:
/// the text is content, as before.
#[test]
fn a_value_closer_in_a_call_without_arguments_is_named() {
    let call = "<tool_call>get_weather";
    let output = format!("{call}</arg_value>\n</tool_call>");
    let parsed = report("glm-arg-pairs", &output);
    assert_eq!(
        crate::common::streaming::calls(&parsed.message),
        [("get_weather", "{}")]
    );
    assert_eq!(parsed.message.content, None);
    // The closer with the newline the template writes after it.
    assert_eq!(parsed.diagnostics, [stray(call.len(), call.len() + 13)]);

    let cut = format!("{call}</arg_value>");
    let parsed = report_and_stream(&parser("glm-arg-pairs", Policy::lossless()), &cut);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some(cut.as_str()));
    assert!(parsed
        .diagnostics
        .iter()
        .all(|d| d.kind != DiagnosticKind::StrayMarker));
    // `compatible` leaves a call the output ends in out, closer and all.
    let left = report_and_stream(&parser("glm-arg-pairs", Policy::compatible()), &cut);
    assert!(left.message.tool_calls.is_empty());
    let dropped = Diagnostic::range(DiagnosticKind::Dropped, 0, cut.len());
    assert!(left.diagnostics.contains(&dropped), "{left:?}");
}
