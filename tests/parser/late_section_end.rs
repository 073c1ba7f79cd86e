//! A section end the template writes only after a second call, on a small
//! template written for this test (as DeepSeek-R1-Distill-Llama-8B writes
//! `<｜tool▁calls▁end｜>`): one call renders `<|calls|><|call|>NAME\nARGS<|/call|>`
//! and nothing after it; two calls render the second followed by
//! `<|/calls|><|eos|>`.
//!
//! A model trained on the format writes `<|/calls|>` after every section, one
//! call or more. The analysis must learn it from the two-call render and mark
//! it optional; the parser must drop it as scaffolding (not leave it in the
//! content); the grammar must accept the section with and without it.

use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{Analysis, AssistantMessage, Options, ParserConfig};

use crate::common::streaming;

use streaming::{calls, weather_tools as tools};

const TEMPLATE: &str = r#"
{%- set ns = namespace(first=true) -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|bot|>
{%- for c in m.tool_calls -%}
{%- if ns.first -%}<|calls|><|call|>{{ c.function.name }}
{{ c.function.arguments | tojson }}<|/call|>{%- set ns.first = false -%}
{%- else -%}
<|call|>{{ c.function.name }}
{{ c.function.arguments | tojson }}<|/call|><|/calls|><|eos|>
{%- endif -%}
{%- endfor -%}
{%- elif m.role == 'assistant' -%}<|bot|>{{ m.content }}<|eos|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|eos|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

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

const ONE: &str = "<|calls|><|call|>get_weather\n{\"city\": \"Paris\"}<|/call|>";
const TWO: &str = "<|calls|><|call|>get_weather\n{\"city\": \"Paris\"}<|/call|>\n<|call|>get_weather\n{\"city\": \"Rome\"}<|/call|>";

#[test]
fn the_analysis_learns_the_end_from_two_calls_and_marks_it_optional() {
    let tools = analysis().tools.expect("tools");
    assert_eq!(tools.section_start, "<|calls|>");
    assert_eq!(tools.call_end, "<|/call|>");
    assert_eq!(
        tools.section_end, "<|/calls|>",
        "cut at the stop marker <|eos|>"
    );
    assert!(tools.section_end_optional);
}

#[test]
fn the_end_is_scaffolding_after_one_call_or_two() {
    for output in [format!("{ONE}<|/calls|>"), ONE.to_owned()] {
        let m = parse(&output);
        assert_eq!(m.content, None, "{output}");
        assert_eq!(
            calls(&m),
            [("get_weather", r#"{"city": "Paris"}"#)],
            "{output}"
        );
    }
    for output in [format!("{TWO}<|/calls|>"), TWO.to_owned()] {
        let m = parse(&output);
        assert_eq!(m.content, None, "{output}");
        assert_eq!(
            calls(&m),
            [
                ("get_weather", r#"{"city": "Paris"}"#),
                ("get_weather", r#"{"city": "Rome"}"#)
            ]
        );
    }
}

#[test]
fn the_grammar_accepts_the_section_with_and_without_its_end() {
    let config = Options::default()
        .with_tools(tools())
        .with_parallel_tool_calls(true);
    let g = analysis().grammar(&config).unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    for text in [
        ONE.to_owned(),
        format!("{ONE}<|/calls|>"),
        TWO.to_owned(),
        format!("{TWO}<|/calls|>"),
    ] {
        assert!(r.accepts(&text), "{text}\n{}", g.gbnf);
    }
    assert!(
        !r.accepts(&format!("{ONE}<|/calls|><|/calls|>")),
        "once at most"
    );
}

#[test]
fn an_end_the_template_always_writes_stays_required() {
    let always = r#"
{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|bot|><|calls|>
{%- for c in m.tool_calls -%}
{%- if not loop.first %}
{% endif -%}
<|call|>{{ c.function.name }}
{{ c.function.arguments | tojson }}<|/call|>
{%- endfor -%}<|/calls|><|eos|>
{%- elif m.role == 'assistant' -%}<|bot|>{{ m.content }}<|eos|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|eos|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;
    let a = streaming::analyze(always);
    let tools = a.tools.expect("tools");
    assert_eq!(tools.section_end, "<|/calls|>");
    assert!(!tools.section_end_optional);
}
