//! The grammar on a header format (sections opened and closed by
//! `<|open|>LABEL<|sep|>` ... `<|close|>LABEL<|sep|>`, as Kimi-K3 writes
//! them), on a small template written for this test:
//!
//! - a call's header holds attributes the template varies per call
//!   (`index="1"`, `index="2"`): after the name's closing quote, the rest of
//!   the header is free text on one line, as the parser reads it;
//! - a typed argument's type word (`type="number"`, the only typed prefix
//!   the probes render) may be any word (`type="object"`), as in the parser;
//! - an eager grammar lets the empty content block the template writes
//!   before the calls through.

use chat_autoparser::analysis::{ArgumentsSlot, Header, NameSlot};
use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{
    Analysis, ChatTemplate, Gbnf, Options, ParserConfig, TemplateConfig, ToolChoice,
};
use serde_json::{json, Value};

const TEMPLATE: &str = r#"{%- macro vtype(v) -%}{%- if v is boolean -%}boolean{%- elif v is number -%}number{%- elif v is string -%}string{%- elif v is mapping -%}object{%- else -%}array{%- endif -%}{%- endmacro -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|open|>message<|sep|>
{%- if m.reasoning_content -%}<|open|>think<|sep|>{{ m.reasoning_content }}<|close|>think<|sep|>{%- endif -%}
<|open|>response<|sep|>{{ m.content or '' }}<|close|>response<|sep|>
{%- if m.tool_calls -%}<|open|>tools<|sep|>
{%- for tc in m.tool_calls -%}<|open|>call tool="{{ tc.function.name }}" index="{{ loop.index }}"<|sep|>
{%- for k, v in tc.function.arguments.items() -%}<|open|>argument key="{{ k }}" type="{{ vtype(v) }}"<|sep|>{{ v if v is string else v | tojson }}<|close|>argument<|sep|>{%- endfor -%}
<|close|>call<|sep|>
{%- endfor -%}<|close|>tools<|sep|>{%- endif -%}<|close|>message<|sep|>
{%- else -%}<|open|>{{ m.role }}<|sep|>{{ m.content }}<|close|>{{ m.role }}<|sep|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|open|>message<|sep|>{%- endif -%}"#;

fn analysis() -> Analysis {
    ChatTemplate::new(TEMPLATE, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "search", "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "filters": {"type": "object"}, "limit": {"type": "integer"}},
        "required": ["query"]}}}),
    ]
}

fn grammar(choice: ToolChoice) -> (Gbnf, Recognizer) {
    let g = analysis()
        .grammar(
            &Options::default()
                .with_tools(tools())
                .with_tool_choice(choice),
        )
        .unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    (g, r)
}

fn call(index: &str, args: &str) -> String {
    format!("<|open|>call tool=\"search\"{index}<|sep|>{args}<|close|>call<|sep|>")
}

fn arg(key: &str, kind: &str, value: &str) -> String {
    format!("<|open|>argument key=\"{key}\" type=\"{kind}\"<|sep|>{value}<|close|>argument<|sep|>")
}

fn section(calls: &[String]) -> String {
    format!(
        "<|open|>tools<|sep|>{}<|close|>tools<|sep|>",
        calls.concat()
    )
}

#[test]
fn the_analysis_learns_the_headers_and_the_rendered_index() {
    let a = analysis();
    assert!(
        a.turn.headers.contains(&Header {
            open: "<|open|>".into(),
            close: "<|sep|>".into()
        }),
        "{:?}",
        a.turn.headers
    );
    let t = a.tools.as_ref().expect("tools");
    assert_eq!(
        t.name,
        NameSlot::Tagged {
            prefix: "call tool=\"".into(),
            suffix: "\" index=\"1\"<|sep|>".into()
        }
    );
    let ArgumentsSlot::Tagged(args) = &t.arguments else {
        panic!("tagged arguments")
    };
    assert_eq!(
        args.typed_value_prefix.as_deref(),
        Some(" type=\"number\"<|sep|>")
    );
    assert_eq!(args.typed_word(), Some((" type=\"", "\"<|sep|>")));
}

#[test]
fn every_call_index_and_any_type_word_is_accepted() {
    let (g, r) = grammar(ToolChoice::Auto);
    let first = call(" index=\"1\"", &arg("query", "string", "rust"));
    let second = call(
        " index=\"2\"",
        &[
            arg("query", "string", "x"),
            arg("filters", "object", r#"{"tags": ["a"]}"#),
            arg("limit", "number", "5"),
        ]
        .concat(),
    );
    for text in [
        section(&[first.clone(), second.clone()]),
        section(&[call("", &arg("query", "string", "y"))]),
    ] {
        assert!(r.accepts(&text), "{text}\n{}", g.gbnf);
        let m = analysis()
            .parser(&ParserConfig::from(Options::default().with_tools(tools())))
            .unwrap()
            .parse(&text);
        assert!(
            m.tool_calls.iter().all(|c| c.function.name == "search"),
            "the parser reads it too: {m:?}"
        );
    }
    // The name still ends at its quote, the header on its line, the value's type is still checked.
    for bad in [
        call(" index=\"1\"", &arg("query", "string", "rust")).replace("search\"", "searches\""),
        call(" index=\"1\n\"", &arg("query", "string", "rust")),
        call(
            " index=\"1\"",
            &[arg("query", "string", "x"), arg("limit", "number", "five")].concat(),
        ),
        call(
            " index=\"1\"",
            &[arg("query", "string", "x"), arg("limit", "obj ect", "5")].concat(),
        ),
    ] {
        assert!(!r.accepts(&section(std::slice::from_ref(&bad))), "{bad}");
    }
}

#[test]
fn required_calls_may_follow_an_empty_content_block() {
    let (g, r) = grammar(ToolChoice::Required);
    let calls = section(&[call(" index=\"1\"", &arg("query", "string", "rust"))]);
    for prefix in ["", "<|open|>response<|sep|><|close|>response<|sep|>", "<|open|>think<|sep|>hm<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>"] {
        assert!(r.accepts(&format!("{prefix}{calls}")), "{prefix}\n{}", g.gbnf);
    }
    assert!(
        !r.accepts(&format!(
            "<|open|>response<|sep|>Hello<|close|>response<|sep|>{calls}"
        )),
        "the block stays empty"
    );
}
