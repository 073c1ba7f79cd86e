//! Formats a template only describes in prose, on small templates written
//! for this test: none renders an assistant's calls (or its reasoning the
//! way it instructs), but the instructions each renders name the format:
//! an example call between markers with `tools` given, quoted phrases the
//! thoughts and the answer follow with thinking on. The analysis learns the
//! markers from that text (`Analysis::prose`), and the parser reads outputs
//! in them, batch and streamed.

use chat_autoparser::analysis::{ArgumentsSlot, NameSlot, ReasoningMode, ToolClass, ToolFormat};
use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{Analysis, Options, ParserConfig};

use crate::common::streaming::{analyze, calls, report_and_stream, weather_tools};

/// Lists the tools and shows the call list a word opens
/// (`functools[...]`), with placeholders that are not JSON; renders no call.
const WORD_LIST: &str = r#"
{%- if tools -%}
<|system|>You are a helpful assistant with these tools: {{ tools | tojson }}
When you use tools, write all function calls in a single JSON list formatted as functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...].<|end|>
{%- endif -%}
{%- for m in messages -%}
<|{{ m.role }}|>{{ m.content if m.content is string else '' }}<|end|>
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// Shows the call list between a bracketed marker pair; renders no call.
const MARKER_PAIR: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}
[INST]{% if tools and loop.last %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]
To call tools, reply with [TOOL_CALLS] [{"name": "<function-name>", "arguments": {"<arg>": "<value>"}}] [/TOOL_CALLS].
{% endif %}{{ m.content }}[/INST]
{%- elif m.role == 'assistant' -%}
{{ m.content if m.content is string else '' }}</s>
{%- endif -%}
{%- endfor -%}"#;

/// Renders its own calls (`<call>...</call>`) yet instructs the list
/// between `[TOOL_CALLS]` markers.
const OWN_AND_PROSE: &str = r#"
{%- if tools -%}
<|system|>Tools: {{ tools | tojson }}
Call them as [TOOL_CALLS][{"name": "name", "arguments": {}}]<|end|>
{%- endif -%}
{%- for m in messages -%}
<|{{ m.role }}|>{{ m.content if m.content is string else '' }}
{%- for call in m.tool_calls or [] -%}
<call>{{ {"name": call.function.name, "arguments": call.function.arguments} | tojson }}</call>
{%- endfor -%}
<|end|>
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// Names the call's marker and its JSON in words, without an example
/// (`<|tool_call|> followed by a JSON list`); renders no call.
const NAMED_IN_WORDS: &str = r#"
{%- if tools -%}
<|start_of_role|>system<|end_of_role|>You can use these tools. When a tool is required, respond only with <|tool_call|> followed by a JSON list of tools used. If no tool fits, say so.<|end_of_text|>
<|start_of_role|>available_tools<|end_of_role|>{{ tools | tojson }}<|end_of_text|>
{% endif -%}
{%- for m in messages -%}
<|start_of_role|>{{ m.role }}<|end_of_role|>{{ m.content if m.content is string else '' }}<|end_of_text|>
{% endfor -%}
{%- if add_generation_prompt -%}<|start_of_role|>assistant<|end_of_role|>{%- endif -%}"#;

/// With `thinking`, asks for thoughts and answer after quoted phrases;
/// renders no reasoning.
const PHRASES: &str = r#"
{%- if thinking -%}
<|start_of_role|>system<|end_of_role|>You are a careful assistant. Write your thoughts after 'Here is my thought process:' and write your response after 'Here is my response:' for each user query.<|end_of_text|>
{% endif -%}
{%- for m in messages -%}
<|start_of_role|>{{ m.role }}<|end_of_role|>{{ m.content }}<|end_of_text|>
{% endfor -%}
{%- if add_generation_prompt -%}<|start_of_role|>assistant<|end_of_role|>{%- endif -%}"#;

fn json_call(format: &ToolFormat, arguments_key: &str) {
    assert_eq!(format.class, ToolClass::JsonNative);
    assert_eq!(
        format.name,
        NameSlot::JsonField {
            path: vec!["name".into()]
        }
    );
    assert_eq!(
        format.arguments,
        ArgumentsSlot::Json {
            path: vec![arguments_key.into()],
            as_string: false,
            before_name: false,
        }
    );
}

fn parser(a: &Analysis) -> chat_autoparser::OutputParser {
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    a.parser(&config).unwrap()
}

/// `a` renders no call and reads the format its instructions show
/// (`example`), in place of the dialects: a JSON call list between
/// `section`'s markers, returned for further checks.
fn instructed_list<'a>(a: &'a Analysis, example: &str, section: (&str, &str)) -> &'a ToolFormat {
    assert!(a.tools.is_none());
    assert_eq!(a.prose.tool_call.as_deref(), Some(example));
    assert_eq!(a.fallback_tools.len(), 1, "replaces the dialects");
    let f = &a.fallback_tools[0];
    json_call(f, "arguments");
    assert_eq!((f.section_start.as_str(), f.section_end.as_str()), section);
    f
}

#[test]
fn a_word_glued_to_the_list_is_its_section_start() {
    let a = analyze(WORD_LIST);
    let example =
        r#"functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...]"#;
    let f = instructed_list(&a, example, ("functools[", "]"));
    assert_eq!(f.call_separator, ", ");
}

#[test]
fn word_list_calls_parse() {
    let a = analyze(WORD_LIST);
    let output = r#"functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]"#;
    let parsed = report_and_stream(&parser(&a), output);
    assert_eq!(parsed.message.content, None);
    assert_eq!(
        calls(&parsed.message),
        [
            ("get_weather", r#"{"city": "Tokyo"}"#),
            ("get_weather", r#"{"city": "Oslo"}"#)
        ]
    );
    let text = "No tools needed: it is sunny.";
    let parsed = report_and_stream(&parser(&a), text);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some(text));
}

#[test]
fn a_marker_pair_around_the_list_is_the_section() {
    let a = analyze(MARKER_PAIR);
    let example = r#"[TOOL_CALLS] [{"name": "<function-name>", "arguments": {"<arg>": "<value>"}}] [/TOOL_CALLS]"#;
    instructed_list(&a, example, ("[TOOL_CALLS] [", "] [/TOOL_CALLS]"));
}

#[test]
fn marker_pair_calls_parse() {
    let a = analyze(MARKER_PAIR);
    let output = r#"Let me look. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Tokyo"}}] [/TOOL_CALLS]"#;
    let parsed = report_and_stream(&parser(&a), output);
    assert_eq!(parsed.message.content.as_deref(), Some("Let me look."));
    assert_eq!(
        calls(&parsed.message),
        [("get_weather", r#"{"city": "Tokyo"}"#)]
    );
}

#[test]
fn a_marker_named_in_words_opens_a_json_list() {
    let a = analyze(NAMED_IN_WORDS);
    let example = "<|tool_call|> followed by a JSON list of tools used";
    instructed_list(&a, example, ("<|tool_call|>[", "]"));
    let output = r#"Checking.<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Tokyo"}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]"#;
    let parsed = report_and_stream(&parser(&a), output);
    assert_eq!(parsed.message.content.as_deref(), Some("Checking."));
    assert_eq!(
        calls(&parsed.message),
        [
            ("get_weather", r#"{"city": "Tokyo"}"#),
            ("get_weather", r#"{"city": "Oslo"}"#)
        ]
    );
}

#[test]
fn a_prose_format_with_other_markers_is_read_besides_the_rendered_one() {
    let a = analyze(OWN_AND_PROSE);
    let own = a.tools.clone().expect("the template renders calls");
    assert_eq!(
        (own.call_start.as_str(), own.call_end.as_str()),
        ("<call>", "</call>")
    );
    assert_eq!(
        a.prose.tool_call.as_deref(),
        Some(r#"[TOOL_CALLS][{"name": "name", "arguments": {}}]"#)
    );
    assert_eq!(a.fallback_tools.len(), 1);
    assert_eq!(a.fallback_tools[0].section_start, "[TOOL_CALLS][");
    assert_eq!(
        a.tool_formats().next(),
        Some(&own),
        "the rendered one first"
    );
    for output in [
        r#"<call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</call>"#,
        r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Tokyo"}}]"#,
    ] {
        let parsed = report_and_stream(&parser(&a), output);
        assert_eq!(parsed.message.content, None, "{output}");
        assert_eq!(
            calls(&parsed.message),
            [("get_weather", r#"{"city": "Tokyo"}"#)],
            "{output}"
        );
    }
}

#[test]
fn quoted_phrases_are_the_reasoning_markers() {
    let a = analyze(PHRASES);
    assert_eq!(a.reasoning.mode, ReasoningMode::Tag);
    assert_eq!(
        (a.reasoning.start.as_str(), a.reasoning.end.as_str()),
        ("Here is my thought process:", "Here is my response:")
    );
    assert!(a.prose.reasoning);
    assert_eq!(a.prose.tool_call, None);
}

#[test]
fn phrase_reasoning_parses() {
    let a = analyze(PHRASES);
    let output = "Here is my thought process:\nThe user greets me; a short answer will do.\nHere is my response:\nHello! How can I help?";
    let parsed = report_and_stream(&a.parser(&ParserConfig::default()).unwrap(), output);
    assert_eq!(
        parsed.message.reasoning_content,
        "The user greets me; a short answer will do."
    );
    assert_eq!(
        parsed.message.content.as_deref(),
        Some("Hello! How can I help?")
    );
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
}

#[test]
fn the_grammar_allows_the_instructed_format_and_says_so() {
    let a = analyze(WORD_LIST);
    let g = a
        .grammar(&Options::default().with_tools(weather_tools()))
        .unwrap();
    assert_eq!(
        g.warnings,
        [
            r#"the template does not render tool calls; the grammar allows the format its instructions show: functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...]"#
        ]
    );
    let triggers: Vec<&str> = g.triggers.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(triggers, ["functools["]);
    let r = Recognizer::new(&g.gbnf).unwrap();
    let call = r#"functools[{"name": "get_weather", "arguments": {"city": "Tokyo"}}]"#;
    assert!(r.accepts(call), "{}", g.gbnf);
    let dialect = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call>";
    assert!(!r.accepts(dialect), "the dialects are replaced");
}

#[test]
fn the_grammar_allows_both_formats_of_a_template_that_renders_one() {
    let a = analyze(OWN_AND_PROSE);
    let g = a
        .grammar(&Options::default().with_tools(weather_tools()))
        .unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    for output in [
        r#"<call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</call>"#,
        r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Tokyo"}}]"#,
    ] {
        assert!(r.accepts(output), "{output}\n{}", g.gbnf);
    }
    assert!(g.preserved_tokens.iter().any(|t| t == "[TOOL_CALLS]"));
}
