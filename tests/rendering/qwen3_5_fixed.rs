//! `templates/qwen3_5-fixed.jinja`, the corrected Qwen3.5/3.6 template
//! (its header comment lists the rules), pinned by its 17 fixtures T01–T17.
//!
//! - `t01_plain_chat` ... `t17_last_turn_without_think_thinking_off` each render
//!   one conversation and compare it with the full expected text, written out
//!   by hand from the rules in the template's header comment;
//! - a few rule tests pin what the fixtures do not show on their own (the
//!   suffix switch overriding `enable_thinking` both ways, content parts, the
//!   unknown-role refusal);
//! - `fixtures_match_python_jinja2` renders every fixture with Python's jinja2,
//!   set up as transformers sets it up, and requires identical bytes; it skips
//!   with a message when no Python with jinja2 is found, unless
//!   `CHAT_AUTOPARSER_PYTHON` names one;
//! - `analysis_finds_the_qwen3_format` checks what `ChatTemplate::analyze` reads
//!   from the template: `<think>` reasoning, Hermes JSON calls, the prefill.

use crate::common;

use std::path::Path;

use common::reference::{python_with_jinja2, render_all, request, Outcome};

use chat_autoparser::analysis::ToolClass;
use chat_autoparser::{ChatTemplate, ErrorKind, RenderRequest, TemplateConfig};
use serde_json::{json, Value as Json};

// ---------------------------------------------------------------- helpers

fn template() -> ChatTemplate {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/qwen3_5-fixed.jinja");
    let source =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ChatTemplate::new(&source, &TemplateConfig::default()).expect("qwen3_5-fixed compiles")
}

fn render(request: &RenderRequest) -> String {
    template()
        .render(request)
        .unwrap_or_else(|e| panic!("render: {e}"))
}

fn user(text: &str) -> Json {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Json {
    json!({"role": "assistant", "content": text})
}

fn tool_result(id: &str, content: &str) -> Json {
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

fn call(id: &str, name: &str, arguments: Json) -> Json {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn weather_call() -> Json {
    call("call_1", "get_weather", json!({"city": "Paris"}))
}

fn time_call() -> Json {
    call("call_2", "get_time", json!({"zone": "Europe/Paris"}))
}

/// The fixtures' tools: one in the OpenAI wrapper, one given bare (the
/// template wraps it).
fn tools() -> Option<Vec<Json>> {
    Some(vec![
        json!({"type": "function", "function": {
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}),
        json!({
            "name": "get_time",
            "description": "Current time in a time zone.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}),
    ])
}

/// The tools block `tools()` renders, without the system turn around it.
macro_rules! tools_block {
    () => {
        concat!(
            "# Tools\n",
            "\n",
            "You may call one or more functions to assist with the user query.\n",
            "\n",
            "You are provided with function signatures within <tools></tools> XML tags:\n",
            "<tools>\n",
            r#"{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}"#,
            "\n",
            r#"{"type": "function", "function": {"name": "get_time", "description": "Current time in a time zone.", "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}"#,
            "\n",
            "</tools>\n",
            "\n",
            "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n",
            "<tool_call>\n",
            r#"{"name": <function-name>, "arguments": <args-json-object>}"#,
            "\n",
            "</tool_call>",
        )
    };
}

// ---------------------------------------------------------------- fixtures

/// Every fixture's request, by test name (also what the jinja2 comparison renders).
fn fixtures() -> Vec<(&'static str, RenderRequest)> {
    vec![
        ("t01_plain_chat", t01()),
        ("t02_system_turn", t02()),
        ("t03_tools_with_thinking", t03()),
        ("t04_tool_call_null_content", t04()),
        ("t05_parallel_calls", t05()),
        ("t06_tool_result", t06()),
        ("t07_thinking_on_prompt", t07()),
        ("t08_thinking_off_prompt", t08()),
        ("t09_no_think_suffix", t09()),
        ("t10_historical_think_stripped", t10()),
        ("t11_missing_content_key", t11()),
        ("t12_special_characters_in_arguments", t12()),
        ("t13_historical_tool_call_keeps_think", t13()),
        ("t14_merged_system_messages", t14()),
        ("t15_parallel_tool_responses", t15()),
        ("t16_last_turn_with_think", t16()),
        ("t17_last_turn_without_think_thinking_off", t17()),
        (
            "extra: /think overrides enable_thinking false",
            think_suffix_over_false(),
        ),
        ("extra: content parts", content_parts()),
        (
            "extra: inline think on the last turn",
            inline_think_last_turn(),
        ),
        ("extra: unknown role", unknown_role()),
        (
            "extra: T16 with thinking off",
            t16().with_enable_thinking(Some(false)),
        ),
        (
            "extra: T17 with thinking on",
            t17().with_enable_thinking(Some(true)),
        ),
    ]
}

// T01: a plain exchange; the historical answer has no think block, and the
// default (thinking on) prompt is the bare assistant header: the model writes
// its own `<think>`.
fn t01() -> RenderRequest {
    request(
        vec![
            user("Hi"),
            assistant("Hello! How can I help?"),
            user("Tell me a joke."),
        ],
        None,
        true,
        None,
    )
}

#[test]
fn t01_plain_chat() {
    assert_eq!(
        render(&t01()),
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "Hello! How can I help?<|im_end|>\n",
            "<|im_start|>user\n",
            "Tell me a joke.<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T02: a system message becomes the first turn; no BOS.
fn t02() -> RenderRequest {
    request(
        vec![
            json!({"role": "system", "content": "You are a helpful assistant."}),
            user("Hi"),
        ],
        None,
        true,
        None,
    )
}

#[test]
fn t02_system_turn() {
    assert_eq!(
        render(&t02()),
        concat!(
            "<|im_start|>system\n",
            "You are a helpful assistant.<|im_end|>\n",
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T03: system text, then the tools block (the bare tool wrapped), thinking on.
fn t03() -> RenderRequest {
    request(
        vec![
            json!({"role": "system", "content": "You are a weather bot."}),
            user("Weather in Paris?"),
        ],
        tools(),
        true,
        Some(true),
    )
}

#[test]
fn t03_tools_with_thinking() {
    assert_eq!(
        render(&t03()),
        concat!(
            "<|im_start|>system\n",
            "You are a weather bot.\n",
            "\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T04: `content: null` beside a call; as the last turn it carries an empty
// think block.
fn t04() -> RenderRequest {
    request(
        vec![
            user("Weather in Paris?"),
            json!({"role": "assistant", "content": null, "tool_calls": [weather_call()]}),
        ],
        tools(),
        false,
        None,
    )
}

#[test]
fn t04_tool_call_null_content() {
    assert_eq!(
        render(&t04()),
        concat!(
            "<|im_start|>system\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
        )
    );
}

// T05: content, then two calls joined by a newline; the second call's
// arguments are JSON text and are emitted as given (no spaces added).
fn t05() -> RenderRequest {
    request(
        vec![
            user("Weather and time in Paris?"),
            json!({"role": "assistant", "content": "Let me check both.", "tool_calls": [
                weather_call(),
                call("call_2", "get_time", json!("{\"zone\":\"Europe/Paris\"}")),
            ]}),
        ],
        tools(),
        false,
        None,
    )
}

#[test]
fn t05_parallel_calls() {
    assert_eq!(
        render(&t05()),
        concat!(
            "<|im_start|>system\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather and time in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "Let me check both.\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call>\n",
            "<tool_call>\n",
            r#"{"name": "get_time", "arguments": {"zone":"Europe/Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
        )
    );
}

// T06: a tool result is a user turn with one <tool_response>.
fn t06() -> RenderRequest {
    request(
        vec![
            user("Weather in Paris?"),
            json!({"role": "assistant", "content": null, "tool_calls": [weather_call()]}),
            tool_result("call_1", "{\"temp\": 18}"),
        ],
        tools(),
        true,
        None,
    )
}

#[test]
fn t06_tool_result() {
    assert_eq!(
        render(&t06()),
        concat!(
            "<|im_start|>system\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
            "<|im_start|>user\n",
            "<tool_response>\n",
            r#"{"temp": 18}"#,
            "\n",
            "</tool_response><|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T07: thinking on (also the default) gives the bare assistant header, no
// think prefix: the model opens its own block.
fn t07() -> RenderRequest {
    request(vec![user("Hi")], None, true, Some(true))
}

#[test]
fn t07_thinking_on_prompt() {
    let expected = concat!(
        "<|im_start|>user\n",
        "Hi<|im_end|>\n",
        "<|im_start|>assistant\n"
    );
    assert_eq!(render(&t07()), expected);
    assert_eq!(
        render(&request(vec![user("Hi")], None, true, None)),
        expected,
        "thinking is on by default"
    );
}

// T08: thinking off pre-closes an empty block: 19 characters after the header.
fn t08() -> RenderRequest {
    request(vec![user("Hi")], None, true, Some(false))
}

#[test]
fn t08_thinking_off_prompt() {
    let got = render(&t08());
    assert_eq!(
        got,
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n"
        )
    );
    let prefill = got.rsplit_once("<|im_start|>assistant\n").unwrap().1;
    assert_eq!(prefill.chars().count(), 19);
}

// T09: the last suffix wins over an earlier `/think` and over
// `enable_thinking: true`; the suffixes stay in the text.
fn t09() -> RenderRequest {
    request(
        vec![
            user("What is 2+2? /think"),
            assistant("4"),
            user("And 3+3? /no_think"),
        ],
        None,
        true,
        Some(true),
    )
}

#[test]
fn t09_no_think_suffix() {
    assert_eq!(
        render(&t09()),
        concat!(
            "<|im_start|>user\n",
            "What is 2+2? /think<|im_end|>\n",
            "<|im_start|>assistant\n",
            "4<|im_end|>\n",
            "<|im_start|>user\n",
            "And 3+3? /no_think<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
        )
    );
}

// T10: historical answers lose their whole think block, whether the reasoning
// came as `reasoning_content` or inline in the content.
fn t10() -> RenderRequest {
    request(
        vec![
            user("Hi"),
            json!({"role": "assistant", "content": "Hello!", "reasoning_content": "The user greets me."}),
            user("What is 2+2?"),
            assistant("<think>\nSimple sum.\n</think>\n\n4"),
            user("Thanks!"),
        ],
        None,
        true,
        None,
    )
}

#[test]
fn t10_historical_think_stripped() {
    assert_eq!(
        render(&t10()),
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "Hello!<|im_end|>\n",
            "<|im_start|>user\n",
            "What is 2+2?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "4<|im_end|>\n",
            "<|im_start|>user\n",
            "Thanks!<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T11: no `content` key on a call turn, a tool result and a final turn: all
// render as empty text. The final turn has no think block and thinking is on
// (the default), so it is left as it is: no block injected.
fn t11() -> RenderRequest {
    request(
        vec![
            user("Weather in Paris?"),
            json!({"role": "assistant", "tool_calls": [weather_call()]}),
            json!({"role": "tool", "tool_call_id": "call_1"}),
            json!({"role": "assistant"}),
        ],
        None,
        false,
        None,
    )
}

#[test]
fn t11_missing_content_key() {
    assert_eq!(
        render(&t11()),
        concat!(
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
            "<|im_start|>user\n",
            "<tool_response>\n",
            "\n",
            "</tool_response><|im_end|>\n",
            "<|im_start|>assistant\n",
            "<|im_end|>\n",
        )
    );
}

// T12: quotes, backslashes, control characters, `<`, `&`, `"""` and
// non-ASCII survive: tojson escapes only what JSON requires (no HTML escaping,
// no \u escapes), and JSON-text arguments pass through untouched.
fn t12() -> RenderRequest {
    request(
        vec![
            user("Search."),
            json!({"role": "assistant", "content": null, "tool_calls": [
                call("call_1", "search", json!({
                    "query": "Zürich \"old town\" <b>&amp;</b>",
                    "note": "line1\nline2\t'single' \\ back",
                    "code": "\"\"\"doc\"\"\""})),
                call("call_2", "search", json!("{\"query\": \"São Paulo <&> \\\"x\\\"\"}")),
            ]}),
        ],
        None,
        false,
        None,
    )
}

#[test]
fn t12_special_characters_in_arguments() {
    assert_eq!(
        render(&t12()),
        concat!(
            "<|im_start|>user\n",
            "Search.<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "search", "arguments": {"query": "Zürich \"old town\" <b>&amp;</b>", "note": "line1\nline2\t'single' \\ back", "code": "\"\"\"doc\"\"\""}}"#,
            "\n",
            "</tool_call>\n",
            "<tool_call>\n",
            r#"{"name": "search", "arguments": {"query": "São Paulo <&> \"x\""}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
        )
    );
}

// T13: a historical turn with a tool call keeps its reasoning; the historical
// answer after it loses its own.
fn t13() -> RenderRequest {
    request(
        vec![
            user("Weather in Paris?"),
            json!({"role": "assistant", "content": null, "reasoning_content": "I need the weather tool.",
                   "tool_calls": [weather_call()]}),
            tool_result("call_1", "{\"temp\": 18}"),
            json!({"role": "assistant", "content": "It is 18 degrees.", "reasoning_content": "The tool says 18."}),
            user("Thanks!"),
        ],
        tools(),
        true,
        None,
    )
}

#[test]
fn t13_historical_tool_call_keeps_think() {
    assert_eq!(
        render(&t13()),
        concat!(
            "<|im_start|>system\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "I need the weather tool.\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
            "<|im_start|>user\n",
            "<tool_response>\n",
            r#"{"temp": 18}"#,
            "\n",
            "</tool_response><|im_end|>\n",
            "<|im_start|>assistant\n",
            "It is 18 degrees.<|im_end|>\n",
            "<|im_start|>user\n",
            "Thanks!<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T14: system and developer messages, including one in mid-conversation, join
// one system turn, before the tools block.
fn t14() -> RenderRequest {
    request(
        vec![
            json!({"role": "system", "content": "You are a helpful assistant."}),
            json!({"role": "developer", "content": "Answer briefly."}),
            user("Hi"),
            assistant("Hello!"),
            json!({"role": "system", "content": "Use metric units."}),
            user("Weather in Paris?"),
        ],
        tools(),
        true,
        None,
    )
}

#[test]
fn t14_merged_system_messages() {
    assert_eq!(
        render(&t14()),
        concat!(
            "<|im_start|>system\n",
            "You are a helpful assistant.\n",
            "\n",
            "Answer briefly.\n",
            "\n",
            "Use metric units.\n",
            "\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "Hello!<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T15: consecutive tool results share one user turn.
fn t15() -> RenderRequest {
    request(
        vec![
            user("Weather and time in Paris?"),
            json!({"role": "assistant", "content": null, "tool_calls": [weather_call(), time_call()]}),
            tool_result("call_1", "{\"temp\": 18}"),
            tool_result("call_2", "14:05"),
        ],
        tools(),
        true,
        None,
    )
}

#[test]
fn t15_parallel_tool_responses() {
    assert_eq!(
        render(&t15()),
        concat!(
            "<|im_start|>system\n",
            tools_block!(),
            "<|im_end|>\n",
            "<|im_start|>user\n",
            "Weather and time in Paris?<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "<tool_call>\n",
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
            "\n",
            "</tool_call>\n",
            "<tool_call>\n",
            r#"{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}"#,
            "\n",
            "</tool_call><|im_end|>\n",
            "<|im_start|>user\n",
            "<tool_response>\n",
            r#"{"temp": 18}"#,
            "\n",
            "</tool_response>\n",
            "<tool_response>\n",
            "14:05\n",
            "</tool_response><|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

// T16: the last turn keeps its reasoning verbatim (inner blank line
// included), whatever the thinking switch says.
fn t16() -> RenderRequest {
    request(
        vec![
            user("Hi"),
            json!({"role": "assistant", "content": "Hello! How can I help?",
                   "reasoning_content": "The user greets me.\n\nI should greet back."}),
        ],
        None,
        false,
        None,
    )
}

#[test]
fn t16_last_turn_with_think() {
    let got = render(&t16());
    assert_eq!(
        got,
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "The user greets me.\n",
            "\n",
            "I should greet back.\n",
            "</think>\n",
            "\n",
            "Hello! How can I help?<|im_end|>\n",
        )
    );
    // Prompt (thinking on: the bare header) + reply, the model's own block
    // included, == the rendered conversation.
    let prompt = render(&request(vec![user("Hi")], None, true, None));
    assert_eq!(
        got,
        prompt + "<think>\nThe user greets me.\n\nI should greet back.\n</think>\n\nHello! How can I help?<|im_end|>\n"
    );
    // Kept verbatim with thinking off too: a block present is never replaced.
    let off = t16().with_enable_thinking(Some(false));
    assert_eq!(render(&off), got);
}

// T17: a last turn without reasoning and thinking off gets the empty block,
// byte-identical to the non-thinking prefill; thinking on leaves it as it is.
fn t17() -> RenderRequest {
    request(
        vec![user("Hi"), assistant("Hello!")],
        None,
        false,
        Some(false),
    )
}

#[test]
fn t17_last_turn_without_think_thinking_off() {
    let got = render(&t17());
    assert_eq!(
        got,
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
            "Hello!<|im_end|>\n",
        )
    );
    // Prompt (thinking off) + reply == the rendered conversation.
    assert_eq!(got, render(&t08()) + "Hello!<|im_end|>\n");
    // Thinking on: no block present, none injected; the content as it is.
    let on = t17().with_enable_thinking(Some(true));
    assert_eq!(
        render(&on),
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "Hello!<|im_end|>\n"
        )
    );
    assert_eq!(render(&on), render(&t07()) + "Hello!<|im_end|>\n");
}

// ---------------------------------------------------------------- rules beyond the fixtures

fn think_suffix_over_false() -> RenderRequest {
    request(
        vec![
            user("Hi /no_think"),
            assistant("Hello!"),
            user("Prove it. /think  "),
        ],
        None,
        true,
        Some(false),
    )
}

#[test]
fn think_suffix_overrides_enable_thinking_false() {
    assert_eq!(
        render(&think_suffix_over_false()),
        concat!(
            "<|im_start|>user\n",
            "Hi /no_think<|im_end|>\n",
            "<|im_start|>assistant\n",
            "Hello!<|im_end|>\n",
            "<|im_start|>user\n",
            "Prove it. /think  <|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

fn content_parts() -> RenderRequest {
    request(
        vec![
            json!({"role": "system", "content": [{"type": "text", "text": "Be terse."}]}),
            json!({"role": "user", "content": [
                {"type": "image", "image": "cat.png"},
                {"type": "text", "text": "What is this? /no_think"}]}),
        ],
        None,
        true,
        None,
    )
}

#[test]
fn content_parts_render_as_text_and_vision_placeholders() {
    assert_eq!(
        render(&content_parts()),
        concat!(
            "<|im_start|>system\n",
            "Be terse.<|im_end|>\n",
            "<|im_start|>user\n",
            "<|vision_start|><|image_pad|><|vision_end|>What is this? /no_think<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "\n",
            "</think>\n",
            "\n",
        )
    );
}

fn inline_think_last_turn() -> RenderRequest {
    request(
        vec![
            user("Hi"),
            assistant("<think>\nInline reasoning.\n</think>\n\nHello!"),
        ],
        None,
        false,
        None,
    )
}

#[test]
fn inline_think_on_the_last_turn_is_kept() {
    assert_eq!(
        render(&inline_think_last_turn()),
        concat!(
            "<|im_start|>user\n",
            "Hi<|im_end|>\n",
            "<|im_start|>assistant\n",
            "<think>\n",
            "Inline reasoning.\n",
            "</think>\n",
            "\n",
            "Hello!<|im_end|>\n",
        )
    );
}

fn unknown_role() -> RenderRequest {
    request(
        vec![user("Hi"), json!({"role": "critic", "content": "No."})],
        None,
        true,
        None,
    )
}

#[test]
fn unknown_role_raises() {
    let err = template()
        .render(&unknown_role())
        .expect_err("an unknown role is refused");
    assert_eq!(err.kind(), ErrorKind::Raised);
    assert_eq!(err.message(), "Unexpected message role: critic");
}

// ---------------------------------------------------------------- agreement with Python jinja2

/// The variables transformers passes, as the crate passes them.
fn python_context(request: &RenderRequest) -> Json {
    let mut ctx = json!({
        "messages": request.messages,
        "tools": request.tools,
        "add_generation_prompt": request.add_generation_prompt,
        "bos_token": "",
        "eos_token": "",
    });
    if let Some(on) = request.enable_thinking {
        ctx["enable_thinking"] = json!(on);
    }
    ctx
}

#[test]
fn fixtures_match_python_jinja2() {
    let Some(python) = python_with_jinja2() else {
        println!("qwen3_5-fixed: Python comparison skipped (no python3 with jinja2; set CHAT_AUTOPARSER_PYTHON)");
        return;
    };
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/qwen3_5-fixed.jinja"),
    )
    .unwrap();
    let cases = fixtures();
    let requests: Vec<(&str, Json)> = cases
        .iter()
        .map(|(_, r)| (source.as_str(), python_context(r)))
        .collect();
    let outcomes = render_all(&python, &requests, 0);
    let tmpl = template();
    let mut mismatches = Vec::new();
    for ((name, request), want) in cases.iter().zip(&outcomes) {
        let ours = tmpl.render(request);
        let agree = match (&ours, want) {
            (Ok(text), Outcome::Rendered(theirs)) => text == theirs,
            (Err(e), Outcome::Raised(message)) => {
                e.kind() == ErrorKind::Raised && e.message() == message
            }
            _ => false,
        };
        if !agree {
            mismatches.push(format!("{name}:\n  ours:   {ours:?}\n  python: {want:?}"));
        }
    }
    println!("qwen3_5-fixed: {} renders agree with jinja2", cases.len());
    assert!(
        mismatches.is_empty(),
        "{} differences from jinja2:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

// ---------------------------------------------------------------- analysis

#[test]
fn analysis_finds_the_qwen3_format() {
    let a = template().analyze().expect("analysis");
    assert_eq!(a.reasoning.start, "<think>");
    assert_eq!(a.reasoning.end, "</think>");
    let t = a.tools.as_ref().expect("a tool format");
    assert_eq!(t.class, ToolClass::JsonNative);
    assert_eq!(t.call_start, "<tool_call>\n");
    assert_eq!(t.call_end, "\n</tool_call>");
    assert_eq!(t.call_separator, "\n");
    assert!(t.parallel);
    let off = a
        .turn
        .generation_prompt
        .thinking_off
        .as_deref()
        .expect("a thinking-off prompt");
    assert!(off.ends_with("<think>\n\n</think>\n\n"), "{off:?}");
    assert_eq!(a.turn.end_of_turn, "<|im_end|>\n");
}
