//! Fallback tool-call dialects, on a small template written for this test:
//! it lists the tools in its system prompt but never renders an assistant's
//! calls (like LFM2's). The analysis reports no tool format of its own and
//! the fallback dialects instead (`Analysis::fallback_tools`); the parser
//! reads calls in any of them, keeps malformed ones as content verbatim, and
//! streams what it parses in one go. A template that renders calls, or one
//! that takes no tools, gets no fallback.

use chat_autoparser::analysis::{ArgumentsSlot, ToolClass};
use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{
    Analysis, AssistantMessage, ChatTemplate, Options, ParserConfig, TemplateConfig, ToolChoice,
    TriggerKind,
};
use serde_json::{json, Value};

use crate::common::streaming;

use streaming::calls;

/// Takes tools, writes them into the system turn, renders only the content
/// of assistant turns.
const SILENT: &str = r#"
{%- if tools -%}
<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif -%}
{%- for m in messages -%}
<|im_start|>{{ m.role }}
{{ m.content if m.content is string else '' }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"#;

/// The same turns, without tools.
const NO_TOOLS: &str = r#"
{%- for m in messages -%}
<|im_start|>{{ m.role }}
{{ m.content if m.content is string else '' }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"#;

fn analyze(source: &str) -> Analysis {
    ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_time",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}),
        // A dotted name, as Python-call models write methods.
        json!({"type": "function", "function": {"name": "Calendar.create_event", "parameters": {"type": "object"}}}),
    ]
}

/// Parses `output` whole, and checks that streaming it a byte at a time and
/// in 3-byte chunks gives the same message.
fn parse(output: &str) -> AssistantMessage {
    streaming::parse_and_stream(
        &analyze(SILENT)
            .parser(&ParserConfig::from(Options::default().with_tools(tools())))
            .unwrap(),
        output,
    )
}

/// The names of the analysis's fallback dialects.
fn dialect_names(a: &Analysis) -> Vec<Option<&'static str>> {
    let name = chat_autoparser::analysis::fallback_dialect_name;
    a.fallback_tools.iter().map(name).collect()
}

/// `(name, arguments)` of each call.
#[test]
fn a_silent_template_gets_the_fallback_dialects() {
    let a = analyze(SILENT);
    assert!(a.tools.is_none());
    let classes: Vec<ToolClass> = a.fallback_tools.iter().map(|t| t.class).collect();
    assert_eq!(classes, [ToolClass::PythonCall, ToolClass::JsonNative]);
    assert_eq!(a.fallback_tools[0].section_start, "<|tool_call_start|>[");
    assert_eq!(
        a.fallback_tools[0].arguments,
        ArgumentsSlot::Python {
            raw_strings: false,
            bare_strings: false
        }
    );
    assert_eq!(a.fallback_tools[1].call_start.trim(), "<tool_call>");
    assert!(a.tool_formats().eq(&a.fallback_tools));
}

#[test]
fn python_list_calls_parse() {
    let m = parse(
        "Let me check.<|tool_call_start|>[get_time(city=\"Paris\"), \
         Calendar.create_event(all_day=True, note=None, meta={\"tags\": [\"a\", \"b\"], \"n\": 2})]<|tool_call_end|>",
    );
    assert_eq!(m.content.as_deref(), Some("Let me check."));
    assert_eq!(
        calls(&m),
        [
            ("get_time", r#"{"city": "Paris"}"#),
            // Nested Python values are written as compact JSON.
            (
                "Calendar.create_event",
                r#"{"all_day": true, "note": null, "meta": {"tags":["a","b"],"n":2}}"#
            ),
        ]
    );
}

#[test]
fn a_python_string_may_hold_a_raw_newline() {
    // Python refuses it; models write multi-line values so.
    let m = parse("<|tool_call_start|>[get_time(city='line1\nline2')]<|tool_call_end|>");
    assert_eq!(m.content, None);
    assert_eq!(calls(&m), [("get_time", r#"{"city": "line1\nline2"}"#)]);
}

#[test]
fn hermes_calls_parse() {
    let m = parse(
        "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n\
         <tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
    );
    assert_eq!(m.content.as_deref(), Some("Checking."));
    assert_eq!(
        calls(&m),
        [
            ("get_time", r#"{"city": "Paris"}"#),
            ("get_time", r#"{"city": "Rome"}"#)
        ]
    );
}

#[test]
fn malformed_calls_stay_in_the_content_verbatim() {
    for text in [
        "See <|tool_call_start|>[not a call]<|tool_call_end|> here.",
        "See <tool_call>\nplain words\n</tool_call> here.",
        "A list [get_time] and a tag <tool_call",
    ] {
        let m = parse(text);
        assert!(m.tool_calls.is_empty(), "{text:?}: {m:?}");
        assert_eq!(m.content.as_deref(), Some(text));
    }
}

#[test]
fn a_cut_call_is_a_partial_call() {
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let parser = analyze(SILENT).parser(&config).unwrap();
    let m = parser.parse_partial("<|tool_call_start|>[get_time(city=");
    assert_eq!(m.tool_calls.len(), 1, "{m:?}");
    assert_eq!(m.tool_calls[0].function.name, "get_time");
    assert_eq!(m.content.as_deref().unwrap_or(""), "");
}

#[test]
fn tool_choice_none_keeps_calls_as_content() {
    let config = ParserConfig::from(Options::default().with_tool_choice(ToolChoice::None));
    let text = "<|tool_call_start|>[get_time(city=\"Paris\")]<|tool_call_end|>";
    let m = analyze(SILENT).parser(&config).unwrap().parse(text);
    assert!(m.tool_calls.is_empty());
    assert_eq!(m.content.as_deref(), Some(text));
}

#[test]
fn templates_that_render_calls_get_no_fallback() {
    let root = env!("CARGO_MANIFEST_DIR");
    for name in ["python-calls", "hermes-think", "qwen-coder-xml"] {
        let source = std::fs::read_to_string(format!("{root}/templates/{name}.jinja")).unwrap();
        let a = analyze(&source);
        assert!(a.tools.is_some() && a.fallback_tools.is_empty(), "{name}");
    }
}

/// A template that knows nothing of tools is served through `render_chat`'s
/// polyfill, which asks for Hermes calls: with tools in the request, Hermes
/// calls are read, and the other dialect's call list as a model mixing
/// dialects writes it inside another format's wrapper (its markers kept as
/// content under `lossless`); without, nothing is a call.
#[test]
fn templates_that_take_no_tools_read_the_polyfill_dialect() {
    let a = analyze(NO_TOOLS);
    assert!(a.tools.is_none());
    assert_eq!(dialect_names(&a), [Some("hermes")]);
    let hermes =
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let plain = a.parser(&ParserConfig::default()).unwrap().parse(hermes);
    assert!(
        plain.tool_calls.is_empty(),
        "no tools in the request, no calls"
    );
    assert_eq!(plain.content.as_deref(), Some(hermes));
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let parser = a.parser(&config).unwrap();
    let m = parser.parse(hermes);
    assert_eq!(m.content, None);
    assert_eq!(m.tool_calls.len(), 1, "{m:?}");
    assert_eq!(m.tool_calls[0].function.name, "get_time");
    assert_eq!(m.tool_calls[0].function.arguments, "{\"city\": \"Paris\"}");
    let python = "<|tool_call_start|>[get_time(city=\"Paris\")]<|tool_call_end|>";
    let m = parser.parse(python);
    assert_eq!(m.tool_calls.len(), 1, "{m:?}");
    assert_eq!(m.tool_calls[0].function.name, "get_time");
    assert_eq!(m.tool_calls[0].function.arguments, "{\"city\": \"Paris\"}");
    let markers = "<|tool_call_start|><|tool_call_end|>";
    assert_eq!(m.content.as_deref(), Some(markers));
}

/// The polyfill dialect's call of `get_time(city="Paris")`.
const HERMES_GET_TIME: &str =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

/// Each output, parsed batch and streamed with the request's tools, is the
/// call `get_time(city="Paris")` and nothing else.
fn each_is_the_get_time_call(a: &Analysis, outputs: [&str; 2]) {
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    for output in outputs {
        let m = streaming::parse_and_stream(&a.parser(&config).unwrap(), output);
        assert_eq!(m.content, None, "{output}");
        assert_eq!(
            calls(&m),
            [("get_time", r#"{"city": "Paris"}"#)],
            "{output}"
        );
    }
}

/// Renders calls in a format of its own but never reads `tools`.
const NATIVE_NO_TOOLS: &str = r#"
{%- for m in messages -%}
<|im_start|>{{ m.role }}
{{ m.content if m.content is string else '' }}
{%- for call in m.tool_calls or [] -%}
<|call|>{{ call.function.name }}
{{ call.function.arguments | tojson }}<|end_call|>
{%- endfor %}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"#;

/// A template that renders its own calls but drops `tools` is served
/// through the polyfill too, which lists the tools and asks for Hermes
/// calls: with tools in the request both formats are calls, the template's
/// first; without, only the template's own.
#[test]
fn templates_that_render_calls_but_take_no_tools_also_read_the_polyfill_dialect() {
    let a = analyze(NATIVE_NO_TOOLS);
    let own = a.tools.clone().expect("the template renders calls");
    assert_eq!(own.call_start.trim(), "<|call|>");
    assert_eq!(dialect_names(&a), [Some("hermes")]);
    assert_eq!(a.tool_formats().next(), Some(&own));
    let native = "<|call|>get_time\n{\"city\": \"Paris\"}<|end_call|>";
    let hermes = HERMES_GET_TIME;
    each_is_the_get_time_call(&a, [native, hermes]);
    let plain = a.parser(&ParserConfig::default()).unwrap();
    assert_eq!(plain.parse(hermes).content.as_deref(), Some(hermes));
    assert_eq!(plain.parse(native).tool_calls.len(), 1);
    let g = a.grammar(&Options::default().with_tools(tools())).unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(r.accepts(native), "{}", g.gbnf);
    assert!(r.accepts(hermes), "{}", g.gbnf);
    assert!(g.preserved_tokens.iter().any(|t| t == "<tool_call>"));
}

/// Reads `tools` but lists them only when given as `custom_tools` (as
/// vLLM's Llama-4 pythonic example does), and renders Python call lists.
const READS_TOOLS_LISTS_NONE: &str = r#"
{%- if custom_tools is defined and custom_tools -%}{%- set listing = custom_tools | tojson -%}{%- endif -%}
{%- if tools is not none and tools is defined -%}<|system|>Call functions as [f(a=1)].{{ listing or '' }}<|eot|>{%- endif -%}
{%- for m in messages -%}
<|{{ m.role }}|>{{ m.content if m.content is string else '' }}
{%- if m.tool_calls -%}[{%- for c in m.tool_calls -%}{{ c.function.name }}(
{%- for k, v in c.function.arguments | items -%}{{ k }}={{ v | tojson }}{{ ', ' if not loop.last }}{%- endfor -%}
){{ ', ' if not loop.last }}{%- endfor -%}]{%- endif -%}<|eot|>
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// The polyfill's test is whether the prompt shows the tools, not whether
/// the template reads the variable: a template that reads `tools` and lists
/// nothing is served with the polyfill's tool list, so its Hermes calls are
/// read besides the template's own.
#[test]
fn a_template_that_reads_tools_but_lists_none_also_reads_the_polyfill_dialect() {
    let a = analyze(READS_TOOLS_LISTS_NONE);
    assert_eq!(
        a.tools.as_ref().map(|t| t.class),
        Some(ToolClass::PythonCall)
    );
    assert_eq!(dialect_names(&a), [Some("hermes")]);
    each_is_the_get_time_call(&a, [r#"[get_time(city="Paris")]"#, HERMES_GET_TIME]);
}

#[test]
fn the_grammar_allows_either_dialect() {
    let config = Options::default().with_tools(tools());
    let g = analyze(SILENT).grammar(&config).unwrap();
    assert!(g.lazy);
    let words: Vec<(TriggerKind, &str)> = g
        .triggers
        .iter()
        .map(|t| (t.kind, t.value.as_str()))
        .collect();
    // A trigger that is a whole preserved token fires on that token.
    assert_eq!(
        words,
        [
            (TriggerKind::Word, "<|tool_call_start|>["),
            (TriggerKind::Token, "<tool_call>")
        ]
    );
    for token in [
        "<|tool_call_start|>",
        "<|tool_call_end|>",
        "<tool_call>",
        "</tool_call>",
    ] {
        assert!(
            g.preserved_tokens.iter().any(|t| t == token),
            "{token} in {:?}",
            g.preserved_tokens
        );
    }
    assert!(
        g.warnings.iter().any(|w| w.contains("fallback")),
        "{:?}",
        g.warnings
    );
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(
        r.accepts("<|tool_call_start|>[get_time(city=\"Paris\")]<|tool_call_end|>"),
        "{}",
        g.gbnf
    );
    assert!(r.accepts("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"), "{}", g.gbnf);
    assert!(!r.accepts("<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
    let required = config.with_tool_choice(ToolChoice::Required);
    assert!(!analyze(SILENT).grammar(&required).unwrap().lazy);
}
