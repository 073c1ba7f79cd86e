//! A call's name slot never runs over markers or whitespace.
//!
//! The template written here addresses every message of a turn in its
//! header, as muse-glimmer does: ` to=self<|m|>` before reasoning,
//! ` to=user<|m|>` before the answer, ` to=NAME<|m|><call>` before a call.
//! The call's name slot (`to=` ... `<|m|><call>`) then also starts where the
//! reasoning header does; a name that ran on to the next `<|m|><call>` would
//! take the reasoning, the message break and the next header for a name.
//! Each test asserts the exact analysis slots or the exact message.

use chat_autoparser::analysis::NameSlot;
use chat_autoparser::{Analysis, ChatTemplate, Options, ParserConfig, TemplateConfig};
use serde_json::{json, Value};

use crate::common::prompted;

const ADDRESSED: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- if m.reasoning_content -%}<|start|>assistant to=self<|m|>{{ m.reasoning_content }}<|eom|>{%- endif -%}
{%- if m.tool_calls -%}
{%- for tc in m.tool_calls -%}<|start|>assistant to={{ tc.function.name }}<|m|><call>{{ tc.function.arguments | tojson }}</call>{{ '<|eot|>' if loop.last else '<|eom|>' }}{%- endfor -%}
{%- else -%}<|start|>assistant to=user<|m|>{{ m.content }}<|eot|>
{%- endif -%}
{%- else -%}<|start|>{{ m.role }}<|m|>{{ m.content }}<|eot|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"#;

fn template() -> ChatTemplate {
    ChatTemplate::new(ADDRESSED, &TemplateConfig::default()).expect("template compiles")
}

fn analysis() -> Analysis {
    template().analyze().expect("analysis")
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}}}}),
    ]
}

/// The message parsed from `output`, after the template's own generation prompt.
fn parse(output: &str) -> Value {
    let user = vec![json!({"role": "user", "content": "Weather in Paris?"})];
    serde_json::to_value(prompted::parse_after_prompt(
        &template(),
        &analysis(),
        user,
        tools(),
        output,
    ))
    .unwrap()
}

fn call(name: &str, arguments: &str) -> Value {
    json!({"id": null, "type": "function", "function": {"name": name, "arguments": arguments}})
}

#[test]
fn the_name_slot_starts_where_the_reasoning_header_does() {
    let a = analysis();
    assert_eq!(
        (a.reasoning.start.as_str(), a.reasoning.end.as_str()),
        ("to=self<|m|>", "<|eom|><|start|>assistant")
    );
    let tools = a.tools.expect("tools found");
    assert_eq!(
        tools.name,
        NameSlot::Tagged {
            prefix: "to=".into(),
            suffix: "<|m|><call>".into()
        }
    );
}

#[test]
fn reasoning_before_a_call_is_not_the_calls_name() {
    let output = " to=self<|m|>I need the forecast.<|eom|><|start|>assistant to=get_weather<|m|><call>{\"city\": \"Paris\"}</call><|eot|>";
    assert_eq!(
        parse(output),
        json!({"role": "assistant", "content": null, "reasoning_content": "I need the forecast.",
            "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]})
    );
}

#[test]
fn calls_and_answers_without_reasoning_still_parse() {
    let output = " to=get_weather<|m|><call>{\"city\": \"Paris\"}</call><|eom|><|start|>assistant to=get_weather<|m|><call>{\"city\": \"Rome\"}</call><|eot|>";
    assert_eq!(
        parse(output),
        json!({"role": "assistant", "content": null,
            "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}"), call("get_weather", "{\"city\": \"Rome\"}")]})
    );
    let output = " to=self<|m|>Easy.<|eom|><|start|>assistant to=user<|m|>Sunny.<|eot|>";
    assert_eq!(
        parse(output),
        json!({"role": "assistant", "content": "Sunny.", "reasoning_content": "Easy."})
    );
}

#[test]
fn a_name_never_holds_whitespace() {
    // Not a name: the header stays text the model wrote.
    let output = " to=get weather<|m|><call>{\"city\": \"Paris\"}</call><|eot|>";
    assert_eq!(
        parse(output),
        json!({"role": "assistant", "content": output.trim_start().trim_end_matches("<|eot|>")})
    );
}

#[test]
fn a_name_stops_at_a_special_token() {
    // gpt-oss models write `<|constrain|>` glued to the name: it is the
    // rest of the header, not part of the name.
    let Some(template) = crate::common::corpus_template("openai-gpt-oss-120b") else {
        return;
    };
    let analysis = template.analyze().unwrap();
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let output = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let m = analysis.parser(&config).unwrap().parse(output);
    assert_eq!(
        serde_json::to_value(m).unwrap(),
        json!({"role": "assistant", "content": null, "reasoning_content": "Need weather.",
            "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]})
    );
}

#[test]
fn a_declared_name_with_spaces_is_read_whole() {
    // The slot stops at whitespace, but a name the request declares with
    // spaces is read as declared.
    let spaced = vec![
        json!({"type": "function", "function": {"name": "get weather now", "parameters": {"type": "object"}}}),
        json!({"type": "function", "function": {"name": "get weather", "parameters": {"type": "object"}}}),
    ];
    let user = vec![json!({"role": "user", "content": "Weather in Paris?"})];
    let output = " to=get weather now<|m|><call>{\"city\": \"Paris\"}</call><|eot|>";
    let m = prompted::parse_after_prompt(&template(), &analysis(), user, spaced, output);
    assert_eq!(
        serde_json::to_value(m).unwrap(),
        json!({"role": "assistant", "content": null,
            "tool_calls": [call("get weather now", "{\"city\": \"Paris\"}")]})
    );
}

/// Parses `output` with the shipped template `name` and one tool named
/// `function` whose argument is `key`.
fn parse_shipped(name: &str, function: &str, key: &str, output: &str) -> Value {
    let (template, analysis) = crate::common::shipped_template(name);
    let tools = vec![json!({"type": "function", "function": {"name": function,
        "parameters": {"type": "object", "properties": {key: {"type": "string"}}}}})];
    let user = vec![json!({"role": "user", "content": "天气?"})];
    serde_json::to_value(prompted::parse_after_prompt(
        &template, &analysis, user, tools, output,
    ))
    .unwrap()
}

#[test]
fn names_and_keys_may_be_non_ascii() {
    // A name that ends at a line break (GLM's `<tool_call>NAME\n`): the
    // slot reads a word, and a word may be `获取天气`.
    let glm =
        "<tool_call>获取天气\n<arg_key>城市</arg_key>\n<arg_value>北京</arg_value>\n</tool_call>";
    assert_eq!(
        parse_shipped("glm-arg-pairs", "获取天气", "城市", glm)["tool_calls"],
        json!([call("获取天气", "{\"城市\": \"北京\"}")])
    );
    // A Python call's keyword argument is an identifier, which may be `城市`.
    let python = "<|tool_call_start|>[获取天气(城市=\"北京\")]<|tool_call_end|>";
    assert_eq!(
        parse_shipped("python-calls", "获取天气", "城市", python)["tool_calls"],
        json!([call("获取天气", "{\"城市\": \"北京\"}")])
    );
}
