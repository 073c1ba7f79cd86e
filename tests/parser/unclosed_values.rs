//! Tagged values whose closer never came (issue 26 item 2), on the shipped
//! qwen-coder-xml (`<parameter=city>\nV\n</parameter>`) and glm-arg-pairs
//! (`<arg_value>V</arg_value>`) templates:
//! - a value cut by the end of the output is no call (its text is content),
//!   as a JSON string cut there is: a missing *last* closer may recover, a
//!   missing value closer may not;
//! - a value left unclosed ends at the first closer around it (the
//!   arguments', the call's or the section's end), which then closes the
//!   call, instead of swallowing them and the text after them; or where
//!   the next argument opens the element the value's closer closes
//!   (`Paris\n<parameter=days>`), as vLLM's and SGLang's Qwen3-Coder
//!   readers end it;
//! - a closer of several cores written in part closes what it closes
//!   (python-calls' section end `]<|tool_call_end|>`): its last token alone,
//!   or its first cores at the very end of the output; nothing of it is
//!   left in the content.

use chat_autoparser::parser::DiagnosticKind;
use chat_autoparser::{ChatTemplate, Options, OutputParser, ParserConfig, TemplateConfig};

use crate::common::streaming::{calls, parse_and_stream, weather_tools};

fn parser(template: &str) -> OutputParser {
    let path = format!("{}/templates/{template}.jinja", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).unwrap();
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let options = Options::default().with_tools(weather_tools());
    analysis.parser(&ParserConfig::from(options)).unwrap()
}

/// The kinds of the diagnostics of a batch parse of `output`.
fn diagnostic_kinds(p: &OutputParser, output: &str) -> Vec<DiagnosticKind> {
    let report = p.parse_report(output, false);
    report.diagnostics.iter().map(|d| d.kind).collect()
}

const QWEN_OPEN: &str = "<tool_call>\n<function=get_weather>\n<parameter=city>\n";
const GLM_OPEN: &str = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>";

#[test]
fn a_value_cut_by_the_end_is_no_call() {
    for (template, output) in [
        ("qwen-coder-xml", format!("{QWEN_OPEN}Par")),
        ("glm-arg-pairs", format!("{GLM_OPEN}Par")),
    ] {
        let p = parser(template);
        let m = parse_and_stream(&p, &output);
        assert!(m.tool_calls.is_empty(), "{template}: {m:?}");
        assert_eq!(m.content.as_deref(), Some(output.as_str()), "{template}");
        let kinds = diagnostic_kinds(&p, &output);
        assert!(
            kinds.contains(&DiagnosticKind::WithdrawnToolCall),
            "{template}: {kinds:?}"
        );
    }
}

#[test]
fn a_missing_last_closer_still_recovers() {
    for (template, output) in [
        (
            "qwen-coder-xml",
            format!("{QWEN_OPEN}Paris\n</parameter>\n</function>"),
        ),
        ("qwen-coder-xml", format!("{QWEN_OPEN}Paris\n</parameter>")),
        ("glm-arg-pairs", format!("{GLM_OPEN}Paris</arg_value>")),
    ] {
        let m = parse_and_stream(&parser(template), &output);
        assert_eq!(
            calls(&m),
            [("get_weather", r#"{"city": "Paris"}"#)],
            "{output:?}"
        );
        assert_eq!(m.content, None, "{output:?}");
    }
}

#[test]
fn an_unclosed_value_ends_at_the_closers_around_it() {
    for (template, output) in [
        (
            "qwen-coder-xml",
            format!("{QWEN_OPEN}NYC\n</function>\n</tool_call>\nThen more."),
        ),
        (
            "glm-arg-pairs",
            format!("{GLM_OPEN}NYC\n</tool_call>\nThen more."),
        ),
    ] {
        let m = parse_and_stream(&parser(template), &output);
        assert_eq!(
            calls(&m),
            [("get_weather", r#"{"city": "NYC"}"#)],
            "{output:?}"
        );
        assert_eq!(m.content.as_deref(), Some("Then more."), "{output:?}");
    }
}

#[test]
fn an_unclosed_value_ends_where_the_next_argument_opens_its_element() {
    // `<parameter=…>` opens the element `</parameter>` closes: a second one
    // starts the next argument.
    let output = format!(
        "{QWEN_OPEN}Paris\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>"
    );
    let m = parse_and_stream(&parser("qwen-coder-xml"), &output);
    assert_eq!(
        calls(&m),
        [("get_weather", r#"{"city": "Paris", "unit": "celsius"}"#)]
    );
    assert_eq!(m.content, None);
    // A key in an element of its own (`<arg_key>`) is no second value
    // element: the value reads to its closer, as both engines read it.
    let output = format!(
        "{GLM_OPEN}Paris\n<arg_key>unit</arg_key>\n<arg_value>celsius</arg_value>\n</tool_call>"
    );
    let m = parse_and_stream(&parser("glm-arg-pairs"), &output);
    assert_eq!(
        calls(&m),
        [(
            "get_weather",
            r#"{"city": "Paris\n<arg_key>unit</arg_key>\n<arg_value>celsius"}"#
        )]
    );
    assert_eq!(m.content, None);
}

#[test]
fn part_of_a_multi_part_closer_closes_the_section() {
    let p = parser("python-calls");
    let open = r#"<|tool_call_start|>[get_weather(city="Paris")"#;
    for (output, content) in [
        (format!("{open}]"), None),
        (format!("{open}<|tool_call_end|>"), None),
        (format!("{open}<|tool_call_end|> After."), Some("After.")),
        (format!("{open}]<|tool_call_end|> After."), Some("After.")),
        // A bracket with text after it is text: only the end of the output
        // says the rest of the closer was eaten.
        (format!("{open}] After."), Some("] After.")),
    ] {
        let m = parse_and_stream(&p, &output);
        assert_eq!(
            calls(&m),
            [("get_weather", r#"{"city": "Paris"}"#)],
            "{output:?}"
        );
        assert_eq!(m.content.as_deref(), content, "{output:?}");
    }
}

/// The section's closer where the call's was due
/// (`…{"city": "Paris"}<|tool_calls_section_end|>`, Kimi-K2 from the
/// corpus): it closes the call and the section, and is never content; the
/// call is reported as recovered. Skipped when the corpus is absent.
#[test]
fn a_section_closer_where_the_calls_was_due_closes_both() {
    let Some(template) = crate::common::corpus_template("moonshotai-Kimi-K2") else {
        return;
    };
    let analysis = template.analyze().unwrap();
    let options = Options::default().with_tools(weather_tools());
    let p = analysis.parser(&ParserConfig::from(options)).unwrap();
    let call = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}";
    for (output, content) in [
        (format!("{call}<|tool_calls_section_end|>"), None),
        (
            format!("{call}<|tool_calls_section_end|>After."),
            Some("After."),
        ),
    ] {
        let m = parse_and_stream(&p, &output);
        assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
        assert_eq!(m.content.as_deref(), content, "{output:?}");
        let kinds = diagnostic_kinds(&p, &output);
        assert_eq!(kinds, [DiagnosticKind::BrokenToolCall], "{output:?}");
    }
}

/// A template whose calls sit in a section with a closer of its own
/// (`<calls>` … `</calls>` around `<invoke name="f">` … `</invoke>`, the
/// shape of MiniMax-M2's and DeepSeek-V3.2's): an unclosed value ends at
/// the section's closer as it does at the call's, instead of holding it.
#[test]
fn an_unclosed_value_ends_at_the_section_closer_too() {
    let source = concat!(
        "{%- for m in messages -%}<|{{ m.role }}|>",
        "{%- if m.tool_calls -%}<calls>\n{%- for c in m.tool_calls -%}",
        "<invoke name=\"{{ c.function.name }}\">\n",
        "{%- for k, v in c.function.arguments.items() -%}",
        "<parameter name=\"{{ k }}\">{{ v if v is string else v | tojson }}</parameter>\n",
        "{%- endfor -%}</invoke>\n{%- endfor -%}</calls>",
        "{%- else -%}{{ m.content }}{%- endif -%}<|end|>",
        "{%- endfor -%}{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}",
    );
    let analysis = ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let options = Options::default().with_tools(weather_tools());
    let p = analysis.parser(&ParserConfig::from(options)).unwrap();
    let open = "<calls>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">";
    for closer in ["</invoke>", "</calls>"] {
        let output = format!("{open}NYC {closer} then</parameter>\n</invoke>\n</calls>");
        let m = parse_and_stream(&p, &output);
        assert_eq!(
            calls(&m),
            [("get_weather", r#"{"city": "NYC "}"#)],
            "{output:?}"
        );
    }
}
