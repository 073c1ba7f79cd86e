//! Tagged argument values written with Python's `str()`, on a small template
//! written for this test (as Seed-OSS and MiniCPM5 write them): an object or
//! array argument renders as `{'a': [1, None], 'ok': True}`.
//!
//! The parser must read such a value as a Python literal when the tool's
//! schema declares a non-string type and the text is not JSON, and write it
//! as JSON; a value that fits neither stays a string. Streaming in 1-, 4- and
//! 7-byte chunks must give the batch message, delta by delta.

use chat_autoparser::parser::char_chunks;
use chat_autoparser::Options;
use chat_autoparser::{AssistantMessage, ChatTemplate, OutputParser, ParserConfig, TemplateConfig};
use serde_json::{json, Value};

/// Values written with `| string` unless they are strings already.
const TEMPLATE: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}<|end|>
{%- elif m.role == 'assistant' -%}<|bot|>{{ m.content or '' }}
{%- for tc in m.tool_calls or [] -%}
<call><function={{ tc.function.name }}>
{%- for k, v in tc.function.arguments.items() -%}
<parameter={{ k }}>{{ v if v is string else v | string }}</parameter>
{%- endfor -%}
</function></call>
{%- endfor -%}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "save_note", "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "meta": {"type": "object"}, "tags": {"type": "array"}, "flag": {"type": "boolean"}},
        "required": ["text"]}}}),
    ]
}

fn parser() -> OutputParser {
    parser_for(TEMPLATE)
}

fn parser_for(template: &str) -> OutputParser {
    let analysis = ChatTemplate::new(template, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap()
}

fn parse(output: &str) -> AssistantMessage {
    parse_with(&parser(), output)
}

/// The batch parse of `output`, checked against streams in 1-, 2-, 3-, 4-
/// and 7-byte chunks: the concatenated argument deltas equal the batch
/// arguments.
fn parse_with(parser: &OutputParser, output: &str) -> AssistantMessage {
    let batch = parser.parse(output);
    for size in [1, 2, 3, 4, 7] {
        let mut stream = parser.stream();
        let mut arguments = String::new();
        let mut deltas = Vec::new();
        for chunk in char_chunks(output, size) {
            deltas.extend(stream.push(chunk));
        }
        deltas.extend(stream.finish());
        for call in deltas.iter().flat_map(|d| &d.tool_calls) {
            arguments.push_str(call.function.arguments.as_deref().unwrap_or(""));
        }
        assert_eq!(stream.message(), batch, "chunks of {size}");
        assert_eq!(
            arguments, batch.tool_calls[0].function.arguments,
            "deltas in chunks of {size}"
        );
    }
    batch
}

fn arguments(m: &AssistantMessage) -> Value {
    serde_json::from_str(&m.tool_calls[0].function.arguments).expect("arguments are JSON")
}

#[test]
fn python_literals_of_declared_types_become_json() {
    let output = "<call><function=save_note><parameter=text>He said 'hi' & {'x': 1}</parameter>\
<parameter=meta>{'nested': {'a': [1, 2.5, {'b': None}], 'ok': True}, 'path': 'C:\\\\tmp'}</parameter>\
<parameter=tags>['x', '<y>', \"it's\"]</parameter><parameter=flag>True</parameter></function></call>";
    let m = parse(output);
    assert_eq!(m.tool_calls[0].function.name, "save_note");
    assert_eq!(
        arguments(&m),
        json!({
            "text": "He said 'hi' & {'x': 1}",
            "meta": {"nested": {"a": [1, 2.5, {"b": null}], "ok": true}, "path": "C:\\tmp"},
            "tags": ["x", "<y>", "it's"],
            "flag": true
        })
    );
}

#[test]
fn json_values_are_kept_and_misfits_stay_strings() {
    let output = "<call><function=save_note><parameter=text>t</parameter>\
<parameter=meta>{\"a\": null}</parameter><parameter=tags>{'a': 1}</parameter>\
<parameter=flag>maybe</parameter><parameter=other>None</parameter></function></call>";
    let m = parse(output);
    assert_eq!(
        arguments(&m),
        json!({"text": "t", "meta": {"a": null}, "tags": "{'a': 1}", "flag": "maybe", "other": "None"})
    );
}

#[test]
fn the_template_renders_what_the_parser_reads() {
    let tmpl = ChatTemplate::new(TEMPLATE, &TemplateConfig::default()).unwrap();
    let args = json!({"text": "t", "meta": {"a": [1, null], "ok": true}, "tags": ["x"]});
    let request = chat_autoparser::RenderRequest::default().with_messages(vec![
        json!({"role": "user", "content": "hi"}),
        json!({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "save_note", "arguments": args}}]}),
    ]);
    let rendered = tmpl.render(&request).unwrap();
    let output = rendered
        .split_once("<|bot|>")
        .unwrap()
        .1
        .trim_end_matches("<|end|>");
    assert!(
        output.contains("<parameter=meta>{'a': [1, None], 'ok': True}</parameter>"),
        "{output}"
    );
    assert_eq!(arguments(&parse(output)), args);
}

/// A JSON call whose arguments object a model wrote as a Python dict
/// (`{'city': 'Paris', 'ok': True, 'n': None}`, its `str()`): the call, its
/// arguments converted to JSON, under both presets and every chunking.
#[test]
fn python_dict_arguments_of_a_json_call_become_json() {
    use chat_autoparser::Policy;
    let (_, analysis) = crate::common::shipped_template("hermes-think");
    let output = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {'city': 'Paris', 'ok': True, 'n': None, 'l': [1, 'a']}}</tool_call>";
    for policy in [Policy::lossless(), Policy::compatible()] {
        let options = Options::default().with_tools(crate::common::streaming::weather_tools());
        let p = analysis
            .parser(&ParserConfig::from(options).with_policy(policy))
            .unwrap();
        let batch = p.parse_report(output, false);
        assert!(batch.diagnostics.is_empty(), "{batch:?}");
        assert_eq!(batch.message.content, None);
        assert_eq!(batch.message.tool_calls.len(), 1);
        let args: Value =
            serde_json::from_str(&batch.message.tool_calls[0].function.arguments).unwrap();
        assert_eq!(
            args,
            json!({"city": "Paris", "ok": true, "n": null, "l": [1, "a"]})
        );
        for size in [1, 2, 3, 7] {
            let mut stream = p.stream();
            for piece in char_chunks(output, size) {
                stream.push(piece);
            }
            stream.finish();
            assert_eq!(stream.message(), batch.message, "{size}");
        }
    }
}

/// A Python-call template; `VALUE` is how it prints one argument's value.
const CALL_LIST: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}<|end|>
{%- elif m.role == 'assistant' -%}<|bot|>{{ m.content or '' }}
{%- if m.tool_calls -%}<|call|>[
{%- for tc in m.tool_calls -%}{{ tc.function.name }}(
{%- for k, v in tc.function.arguments.items() -%}{{ k }}=VALUE{{ ', ' if not loop.last }}{%- endfor -%})
{{- ', ' if not loop.last }}{%- endfor -%}]<|/call|>
{%- endif -%}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

/// Quotes string values without escaping them (`'` + value + `'`, as LFM2.5
/// writes them), so a value's own quotes are left bare inside it.
fn unescaped_quotes() -> String {
    let value = r#"{{ "'" + v + "'" if v is string else v | string }}"#;
    CALL_LIST.replace("VALUE", value)
}

/// A string value whose own quotes the template left bare: a quoted word
/// inside it (` 'hi'`) and an apostrophe (`it's`) are part of the value;
/// the quote before `,` or `)` ends it. Batch and every chunking agree.
#[test]
fn bare_quotes_inside_a_python_string_stay_in_the_value() {
    let output = "<|call|>[save_note(text='He said 'hi' & it's\nmore 'x' 東京', tags=['a', 'b c'])]<|/call|>";
    let batch = parse_with(&parser_for(&unescaped_quotes()), output);
    assert_eq!(batch.content, None, "{batch:?}");
    assert_eq!(batch.tool_calls.len(), 1, "{batch:?}");
    assert_eq!(
        arguments(&batch),
        json!({"text": "He said 'hi' & it's\nmore 'x' 東京", "tags": ["a", "b c"]})
    );
}

/// A bare value holding a newline (what such a template renders for a
/// multi-line string) is one value, up to the `,` or `)` that ends it.
/// Batch and every chunking agree.
#[test]
fn a_bare_python_value_may_hold_a_newline() {
    // A template that prints values bare (`k={{ v }}`).
    let template = CALL_LIST.replace("VALUE", "{{ v }}");
    let output = "<|call|>[save_note(text=line one\nline two, flag=True)]<|/call|>";
    let batch = parse_with(&parser_for(&template), output);
    assert_eq!(batch.content, None, "{batch:?}");
    assert_eq!(
        arguments(&batch),
        json!({"text": "line one\nline two", "flag": true})
    );
}

/// A bare value is a short literal only when the value ends with it (the
/// next `,`, `)` or `name=`): `50%` and `3 apples` are words; and a bare
/// word may start with any letter (`東京`, `🙂`). Batch and every chunking
/// agree.
#[test]
fn a_bare_python_value_is_a_literal_only_when_it_ends_there() {
    let template = CALL_LIST.replace("VALUE", "{{ v }}");
    let parser = parser_for(&template);
    for (output, want) in [
        (
            "<|call|>[save_note(text=50%, flag=True)]<|/call|>",
            json!({"text": "50%", "flag": true}),
        ),
        (
            "<|call|>[save_note(text=3 apples\nand 東京)]<|/call|>",
            json!({"text": "3 apples\nand 東京"}),
        ),
        (
            "<|call|>[save_note(text=🙂 ok, flag=False)]<|/call|>",
            json!({"text": "🙂 ok", "flag": false}),
        ),
        (
            "<|call|>[save_note(flag=True text=Paris)]<|/call|>",
            json!({"flag": true, "text": "Paris"}),
        ),
    ] {
        let batch = parse_with(&parser, output);
        assert_eq!(batch.content, None, "{output:?}: {batch:?}");
        assert_eq!(arguments(&batch), want, "{output:?}");
    }
}
