//! Framing models write around JSON calls that templates never render
//! (issue 16), with exact messages, batch and streamed:
//!
//! - spare special tokens (`analysis::spare`) around bare JSON calls: a
//!   leading `<|python_tag|>`, an outer `<|python_start|>...<|python_end|>`;
//!   without a call after it, such a token is content;
//! - several bare calls as a list, one after another, or separated by `;`;
//! - OpenAI's `{"type": "function", "function": {...}}` wrapper, its id the call's;
//! - a call of a function the request does not have: content, verbatim,
//!   with an `unknown_tool` diagnostic at its start (strict: the error).

use chat_autoparser::parser::{Diagnostic, DiagnosticKind, OutputParser};
use chat_autoparser::Options;
use chat_autoparser::{Analysis, ParserConfig};

use crate::common::streaming;

use streaming::{analyze, calls, parse_and_stream, weather_tools};

/// A Llama-4-like template written for this test: a call is one bare JSON
/// object; a built-in tool call (a branch the probes never reach) is
/// written between `<|python_start|>` and `<|python_end|>`.
const PYTHON_BLOCK: &str = r#"
{%- for message in messages %}
{{- '<|header_start|>' + message.role + '<|header_end|>\n\n' }}
{%- if message.tool_calls %}
{%- for tc in message.tool_calls %}
{%- if tc.function.name in builtin_tools | default([]) %}
{{- '<|python_start|>' + tc.function.name + '.call()<|python_end|>' }}
{%- else %}
{{- '{"name": "' + tc.function.name + '", "parameters": ' + tc.function.arguments | tojson + '}' }}
{%- endif %}
{%- endfor %}
{%- else %}
{{- message.content }}
{%- endif %}
{{- '<|eot|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\n\n' }}{%- endif %}
"#;

fn parser(analysis: &Analysis) -> OutputParser {
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config).unwrap()
}

fn bare_json() -> Analysis {
    let path = format!("{}/templates/bare-json.jinja", env!("CARGO_MANIFEST_DIR"));
    analyze(&std::fs::read_to_string(path).unwrap())
}

const CALL: &str = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
const ARGS: &str = r#"{"city": "Paris"}"#;

#[test]
fn an_outer_python_block_is_the_calls_framing() {
    let analysis = analyze(PYTHON_BLOCK);
    assert_eq!(
        analysis.spare_tokens,
        ["<|python_start|>", "<|python_end|>"]
    );
    let p = parser(&analysis);
    let m = parse_and_stream(&p, &format!("<|python_start|>{CALL}<|python_end|>"));
    assert_eq!(calls(&m), [("get_weather", ARGS)]);
    assert_eq!(m.content, None);
}

#[test]
fn a_spare_token_without_a_call_is_content() {
    let p = parser(&analyze(PYTHON_BLOCK));
    let text = "Use <|python_start|> to start code. {not a call}";
    let m = parse_and_stream(&p, text);
    assert_eq!(m.content_text(), text);
    assert!(m.tool_calls.is_empty());
}

#[test]
fn a_template_without_spare_tokens_keeps_them_as_content() {
    // bare-json.jinja's text holds no `<|python_tag|>`: nothing frames.
    let analysis = bare_json();
    assert!(analysis.spare_tokens.is_empty());
    let m = parse_and_stream(&parser(&analysis), &format!("<|python_tag|>{CALL}"));
    assert_eq!(m.content_text(), "<|python_tag|>");
    assert_eq!(calls(&m), [("get_weather", ARGS)]);
}

#[test]
fn bare_calls_as_a_list_in_a_row_or_separated_by_semicolons() {
    let p = parser(&bare_json());
    let two = [("get_weather", ARGS), ("get_weather", ARGS)];
    for output in [
        format!("[{CALL}, {CALL}]"),
        format!("{CALL}{CALL}"),
        format!("{CALL}\n{CALL}"),
        format!("{CALL}; {CALL};"),
        format!("```json\n[{CALL},\n {CALL}]\n```"),
    ] {
        let m = parse_and_stream(&p, &output);
        assert_eq!(calls(&m), two, "{output}");
        assert_eq!(m.content, None, "{output}");
    }
}

/// An xLAM-like template written for this test: the calls of a turn are
/// one JSON list, its brackets the tool section's markers.
const JSON_LIST: &str = r#"
{%- for message in messages %}
{{- '<|im_start|>' + message.role + '\n' }}
{%- if message.tool_calls %}
{{- '[' }}
{%- for tc in message.tool_calls %}
{{- '{"name": "' + tc.function.name + '", "arguments": ' + tc.function.arguments | tojson + '}' }}
{%- if not loop.last %}{{- ', ' }}{%- endif %}
{%- endfor %}
{{- ']' }}
{%- else %}
{{- message.content }}
{%- endif %}
{{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"#;

#[test]
fn a_json_list_section_reads_as_bare_calls_fenced_or_not() {
    let analysis = analyze(JSON_LIST);
    let format = analysis.tools.as_ref().unwrap();
    assert_eq!(
        (format.section_start.as_str(), format.section_end.as_str()),
        ("[", "]")
    );
    let p = parser(&analysis);
    let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    for output in [
        format!("[{call}]"),
        format!("```json\n[{call}]\n```"),
        format!("```\n[{call}]\n```"),
        call.to_string(),
    ] {
        let m = parse_and_stream(&p, &output);
        assert_eq!(calls(&m), [("get_weather", ARGS)], "{output}");
        assert_eq!(m.content, None, "{output}");
    }
}

#[test]
fn an_openai_wrapper_holds_the_call() {
    let p = parser(&bare_json());
    for output in [
        r#"{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}"#,
        r#"{"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}"#,
        r#"{"function": {"name": "get_weather", "parameters": {"city": "Paris"}}, "type": "function"}"#,
    ] {
        let m = parse_and_stream(&p, output);
        assert_eq!(calls(&m), [("get_weather", ARGS)], "{output}");
        assert_eq!(m.content, None, "{output}");
    }
}

#[test]
fn an_openai_wrappers_id_is_the_calls_id() {
    let p = parser(&bare_json());
    for (output, id) in [
        (
            r#"{"id": "call_9", "type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}}"#,
            "call_9",
        ),
        (
            r#"{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}, "id": "call_7"}"#,
            "call_7",
        ),
    ] {
        let m = parse_and_stream(&p, output);
        assert_eq!(calls(&m), [("get_weather", ARGS)], "{output}");
        assert_eq!(m.tool_calls[0].id.as_deref(), Some(id), "{output}");
    }
}

#[test]
fn an_unknown_function_is_content_with_a_diagnostic() {
    let p = parser(&bare_json());
    let output = r#"Sure. {"name": "get_time", "parameters": {}}"#;
    let report = p.parse_report(output, false);
    assert_eq!(report.message.content_text(), output);
    assert!(report.message.tool_calls.is_empty());
    let unknown = || Diagnostic::new(DiagnosticKind::UnknownTool, 6);
    assert_eq!(report.diagnostics, [unknown()]);
    let err = p.parse_strict(output).unwrap_err();
    assert_eq!(err, unknown());
    assert_eq!(
        err.to_string(),
        "tool call to a function the request does not have at byte 6"
    );
}

#[test]
fn an_unknown_function_in_a_tagged_call_is_reported_at_its_marker() {
    let path = format!(
        "{}/templates/hermes-think.jinja",
        env!("CARGO_MANIFEST_DIR")
    );
    let p = parser(&analyze(&std::fs::read_to_string(path).unwrap()));
    let output = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let report = p.parse_report(output, false);
    assert_eq!(report.message.content_text(), output);
    assert_eq!(
        report.diagnostics,
        [Diagnostic::new(DiagnosticKind::UnknownTool, 0)]
    );
}

#[test]
fn without_tools_in_the_request_any_name_is_a_call() {
    let p = bare_json().parser(&ParserConfig::default()).unwrap();
    let report = p.parse_report(r#"{"name": "get_time", "parameters": {}}"#, false);
    assert_eq!(calls(&report.message), [("get_time", "{}")]);
    assert!(report.diagnostics.is_empty());
}
