//! Tagged arguments whose closing tag names the argument (`<city>Paris</city>`),
//! and templates that close an empty reasoning block they never opened
//! (`</think>answer`), on a small template written for this test.
//!
//! The analysis must learn the argument name as a slot in the closing marker
//! (A1: argument `first` vs `second`), not as fixed text; the parser and the
//! GBNF export must use that slot; text that is not a well-formed call stays
//! in the content verbatim.

use chat_autoparser::analysis::{ArgumentsSlot, ComparisonStatus, NameSlot, TaggedArguments};
use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{Analysis, ChatTemplate, Options, ParserConfig, TemplateConfig, ToolChoice};
use serde_json::{json, Value};

/// XML-element arguments, and `</think>` alone on turns without reasoning.
const TEMPLATE: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}<|end|>
{%- elif m.role == 'assistant' -%}<|bot|>
{%- if m.reasoning_content -%}<think>{{ m.reasoning_content }}</think>{%- else -%}</think>{%- endif -%}
{{- m.content or '' -}}
{%- for tc in m.tool_calls or [] -%}
<call name="{{ tc.function.name }}">
{%- for k, v in tc.function.arguments.items() -%}<{{ k }}>{{ v }}</{{ k }}>{%- endfor -%}
</call>
{%- endfor -%}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

fn analysis() -> Analysis {
    ChatTemplate::new(TEMPLATE, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}}),
    ]
}

fn tagged(a: &Analysis) -> &TaggedArguments {
    match &a.tools.as_ref().expect("tools").arguments {
        ArgumentsSlot::Tagged(t) => t,
        other => panic!("expected tagged arguments, got {other:?}"),
    }
}

#[test]
fn closing_tag_name_is_a_slot() {
    let a = analysis();
    let t = a.tools.as_ref().unwrap();
    assert_eq!(
        t.name,
        NameSlot::Tagged {
            prefix: "<call name=\"".into(),
            suffix: "\">".into()
        }
    );
    let args = tagged(&a);
    assert_eq!(
        (args.name_prefix.as_str(), args.name_suffix.as_str()),
        ("<", ">")
    );
    assert_eq!(args.value_prefix, "");
    assert_eq!(args.value_suffix, "</");
    assert_eq!(args.named_close.as_deref(), Some(">"));
    assert_eq!(args.close_for("city"), "</city>");
    assert_eq!(args.end, "</call>");
    assert_eq!(t.call_end, "");
    assert!(
        !a.preserved_tokens.iter().any(|p| p.contains("first")),
        "no probe name in {:?}",
        a.preserved_tokens
    );
    let a1 = a.comparisons.iter().find(|c| c.name == "A1").unwrap();
    assert!(
        matches!(&a1.status, ComparisonStatus::Found(d) if d.contains("closing marker")),
        "{a1:?}"
    );
}

#[test]
fn lone_end_marker_is_learned() {
    let a = analysis();
    assert_eq!(
        (a.reasoning.start.as_str(), a.reasoning.end.as_str()),
        ("<think>", "</think>")
    );
    assert!(a.reasoning.bare_end);
}

fn parse(output: &str) -> chat_autoparser::AssistantMessage {
    analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap()
        .parse(output)
}

#[test]
fn parser_reads_named_closes() {
    let m = parse("</think><call name=\"get_weather\"><city>Paris</city><days>3</days></call>");
    assert_eq!(m.content, None);
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].function.name, "get_weather");
    assert_eq!(
        m.tool_calls[0].function.arguments,
        r#"{"city": "Paris", "days": 3}"#
    );

    let m = parse("<call name=\"get_weather\"></call>");
    assert_eq!(
        m.tool_calls[0].function.arguments, "{}",
        "the arguments' end is no argument"
    );

    let m = parse("</think>Sunny.");
    assert_eq!(m.content.as_deref(), Some("Sunny."));
    assert_eq!(m.reasoning_content, "");
}

#[test]
fn text_that_is_no_call_stays_content() {
    for text in [
        "I like <city>Paris</city> a lot.",
        "a </think> b",
        "<call name",
    ] {
        let m = parse(text);
        assert_eq!(m.content.as_deref(), Some(text), "{text:?}");
        assert!(m.tool_calls.is_empty());
    }
}

#[test]
fn grammar_fixes_the_closing_name() {
    let config = Options::default()
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Required);
    let g = analysis().grammar(&config).unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(
        r.accepts(
            "<think>hm</think><call name=\"get_weather\"><city>Paris</city><days>3</days></call>"
        ),
        "{}",
        g.gbnf
    );
    assert!(
        r.accepts("</think><call name=\"get_weather\"><city>Paris</city></call>"),
        "a lone end marker"
    );
    assert!(!r.accepts("<think>hm</think><call name=\"get_weather\"><city>Paris</town></call>"));
    assert!(!r.accepts("<think>hm</think><call name=\"get_weather\"><city>Paris</first></call>"));
}
