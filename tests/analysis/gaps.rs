//! Reasoning and call formats the analysis reads on templates outside the
//! shared corpus (issue 16), each on a small template written for this test
//! in the style of the real one named beside it. Every rule is read from the
//! renders, never from a model's name or a template's text.

use chat_autoparser::analysis::{ReasoningMode, ToolClass};
use chat_autoparser::{AssistantMessage, ChatTemplate, TemplateConfig};
use serde_json::{json, Value};

use crate::common::prompted;
use crate::common::streaming;

fn template(source: &str) -> ChatTemplate {
    ChatTemplate::new(source, &TemplateConfig::default()).unwrap()
}

/// `output` parsed after the prompt for one user turn, batch and streamed
/// (the same message either way).
fn parse(t: &ChatTemplate, tools: Vec<Value>, output: &str) -> AssistantMessage {
    let user = vec![json!({"role": "user", "content": "What is 2+2?"})];
    let prompt = prompted::generation_prompt(t, user, &tools);
    let config = chat_autoparser::ParserConfig::from(
        chat_autoparser::Options::default()
            .with_tools(tools)
            .with_prompt(Some(prompt)),
    );
    let parser = t.analyze().unwrap().parser(&config).unwrap();
    streaming::parse_and_stream(&parser, output)
}

/// The reasoning block's start and end markers the analysis learned.
fn reasoning_markers(a: &chat_autoparser::Analysis) -> (&str, &str) {
    (a.reasoning.start.as_str(), a.reasoning.end.as_str())
}

fn message(content: &str, reasoning: &str) -> AssistantMessage {
    AssistantMessage {
        role: "assistant".into(),
        content: Some(content.into()),
        reasoning_content: reasoning.into(),
        tool_calls: Vec::new(),
    }
}

/// Gemma-4 style: history drops the thought channel; the prompt writes an
/// empty channel named `thought` when thinking is off, nothing when it is on.
const NAMED_CHANNEL: &str = r#"
{%- for m in messages -%}
{{- '<|turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' + m.content + '<turn|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|turn>model\n' -}}
{%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\n<channel|>' -}}{%- endif -%}
{%- endif -%}"#;

/// Asserts that `source` has the thought channel's markers and that, with
/// thinking on, the channel is read as reasoning; returns the analysis and
/// the parser.
fn reads_the_thought_channel(
    source: &str,
) -> (chat_autoparser::Analysis, chat_autoparser::OutputParser) {
    let a = template(source).analyze().unwrap();
    assert_eq!(reasoning_markers(&a), ("<|channel>thought", "<channel|>"));
    let config = chat_autoparser::ParserConfig::from(
        chat_autoparser::Options::default().with_enable_thinking(Some(true)),
    );
    let parser = a.parser(&config).unwrap();
    assert_eq!(
        streaming::parse_and_stream(&parser, "<|channel>thought\nTwo and two.<channel|>4"),
        message("4", "Two and two.")
    );
    (a, parser)
}

#[test]
fn an_empty_named_channel_in_the_prompt_gives_the_reasoning_markers() {
    let (a, parser) = reads_the_thought_channel(NAMED_CHANNEL);
    assert_eq!(a.reasoning.mode, ReasoningMode::ForcedClosed);
    assert_eq!(streaming::parse_and_stream(&parser, "4"), message("4", ""));
}

/// Gemma-4 "empty thought" style: every model turn writes the thought
/// channel, empty when the turn has no reasoning, and the prompt with
/// thinking off writes the same empty channel. The reasoning needle shows
/// the closer only; the prompt's empty block names the opener.
const EMPTY_CHANNEL_EVERY_TURN: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{{- '<|turn>model\n<|channel>thought\n' + (m.reasoning_content or '') + '<channel|>' + m.content + '<turn|>\n' -}}
{%- else -%}
{{- '<|turn>' + m.role + '\n' + m.content + '<turn|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|turn>model\n' -}}
{%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\n<channel|>' -}}{%- endif -%}
{%- endif -%}"#;

#[test]
fn an_empty_channel_every_turn_writes_still_names_the_opener() {
    reads_the_thought_channel(EMPTY_CHANNEL_EVERY_TURN);
}

/// OLMo-3-Think style: the generation prompt opens `<think>`, no render
/// ever closes it and the template text never names `</think>`.
const PROMPT_OPENS: &str = r#"
{%- for m in messages -%}
{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n<think>' -}}{%- endif -%}"#;

/// The same, its prompt ending with a role header that history writes too.
const PROMPT_HEADER: &str = r#"
{%- for m in messages -%}
{{- '<|' + m.role + '|>\n' + m.content + '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"#;

#[test]
fn an_opener_only_the_prompt_writes_is_forced_open_reasoning() {
    let t = template(PROMPT_OPENS);
    let a = t.analyze().unwrap();
    assert_eq!(reasoning_markers(&a), ("<think>", "</think>"));
    assert_eq!(a.reasoning.mode, ReasoningMode::ForcedOpen);
    assert_eq!(
        parse(&t, vec![], "Two and two.</think>4"),
        message("4", "Two and two.")
    );
    // A role header history writes too opens nothing.
    let a = template(PROMPT_HEADER).analyze().unwrap();
    assert_eq!(a.reasoning.mode, ReasoningMode::None);
}

/// Python calls printed with `{{ v }}`: strings come out unquoted
/// (`f(city=Paris)`), and a model trained on the template writes them so.
const PYTHON_UNQUOTED: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}[{%- for tc in m.tool_calls -%}{{ tc.function.name }}(
{%- for k, v in tc.function.arguments.items() %}{{ k }}={{ v }}{% if not loop.last %}, {% endif %}{% endfor %})
{%- if not loop.last %}, {% endif %}{%- endfor -%}]{%- endif -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}})
}

/// The one call `message` holds: its name and arguments.
fn only_call(message: &AssistantMessage) -> (&str, &str) {
    assert_eq!(message.tool_calls.len(), 1, "{message:?}");
    let f = &message.tool_calls[0].function;
    (f.name.as_str(), f.arguments.as_str())
}

#[test]
fn unquoted_python_values_are_strings() {
    let t = template(PYTHON_UNQUOTED);
    let tools = vec![weather_tool()];
    let m = parse(&t, tools.clone(), "[get_weather(city=Paris, days=3)]");
    assert_eq!(m.content, None);
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "Paris", "days": 3}"#)
    );
    let m = parse(&t, tools.clone(), "[get_weather(city=New York, days=2)]");
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "New York", "days": 2}"#)
    );
    // Literals still read as literals.
    let m = parse(&t, tools.clone(), "[get_weather(city='Paris', days=None)]");
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "Paris", "days": null}"#)
    );
    // A word that starts like a literal and goes on (a date, a time, `3pm`,
    // `Trueish`) is a word, not a literal and a broken call.
    for (value, json) in [
        ("2024-01-15", r#""2024-01-15""#),
        ("10:30", r#""10:30""#),
        ("3pm", r#""3pm""#),
        ("1.2.3", r#""1.2.3""#),
        ("Trueish", r#""Trueish""#),
        ("-5", "-5"),
        ("2.5", "2.5"),
    ] {
        let m = parse(
            &t,
            tools.clone(),
            &format!("[get_weather(city={value}, days=1)]"),
        );
        assert_eq!(m.content, None, "{value}");
        let want = format!(r#"{{"city": {json}, "days": 1}}"#);
        assert_eq!(only_call(&m), ("get_weather", want.as_str()), "{value}");
    }
}

/// Command-R7B style: the system text tells the model to plan between
/// `<|START_THINKING|>` and `<|END_THINKING|>`; a call turn writes the plan
/// (`tool_plan`, a field the probes do not fill) in that block before the
/// action, a plain answer goes between response markers.
const PLAN_BEFORE_CALLS: &str = r#"
{{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Write <|START_THINKING|> and your plan, close it with <|END_THINKING|>, then act.<|END_OF_TURN_TOKEN|>' -}}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}
{%- if m.tool_calls -%}
{{- '<|START_THINKING|>' + (m.tool_plan or '') + '<|END_THINKING|><|START_ACTION|>[' -}}
{%- for tc in m.tool_calls -%}
{{- '\n    {"tool_name": "' + tc.function.name + '", "parameters": ' + tc.function.arguments | tojson + '}' -}}
{%- if not loop.last %},{% endif -%}
{%- endfor -%}
{{- '\n]<|END_ACTION|>' -}}
{%- else -%}
{{- '<|START_RESPONSE|>' + m.content + '<|END_RESPONSE|>' -}}
{%- endif -%}
{{- '<|END_OF_TURN_TOKEN|>' -}}
{%- else -%}
{{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + m.content + '<|END_OF_TURN_TOKEN|>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' -}}{%- endif -%}"#;

#[test]
fn an_empty_block_before_every_call_holds_the_plan() {
    let t = template(PLAN_BEFORE_CALLS);
    let a = t.analyze().unwrap();
    assert_eq!(
        reasoning_markers(&a),
        ("<|START_THINKING|>", "<|END_THINKING|>")
    );
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert_eq!(tools.section_start, "<|START_ACTION|>[");
    let m = parse(
        &t,
        vec![weather_tool()],
        "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>",
    );
    assert_eq!(m.reasoning_content, "I will look it up.");
    assert_eq!(only_call(&m), ("get_weather", r#"{"city": "Paris"}"#));
    // A plain answer is content, never reasoning.
    assert_eq!(
        parse(
            &t,
            vec![weather_tool()],
            "<|START_RESPONSE|>It is 4.<|END_RESPONSE|>"
        ),
        message("It is 4.", "")
    );
    assert_eq!(parse(&t, vec![], "It is 4."), message("It is 4.", ""));
}

/// vLLM's granite-20b-fc example (Apache-2.0, `tests/fixtures/README.md`):
/// JSON calls after `<function_call> `, a template whose macros hosts have
/// seen raise on `str + iterator`. It analyses, and its calls parse.
#[test]
fn the_granite_function_call_example_analyses() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vllm-granite-20b-fc.jinja"
    );
    let t = template(&std::fs::read_to_string(path).unwrap());
    let a = t.analyze().unwrap();
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert_eq!(
        (tools.call_start.as_str(), tools.call_end.as_str()),
        ("<function_call> ", "\n")
    );
    let m = parse(
        &t,
        vec![weather_tool()],
        "<function_call> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
    );
    assert_eq!(only_call(&m), ("get_weather", r#"{"city": "Paris"}"#));
    assert_eq!(parse(&t, vec![], "It is 4."), message("It is 4.", ""));
}

/// Hunyuan-7B style: with thinking off, every render ends with an empty
/// `<think>` block, after the conversation and outside the generation
/// prompt, so a turn cut from a render ends `<|eos|><think>\n\n</think>\n`.
const TAIL_AFTER_END: &str = r#"
{{- bos_token -}}
{%- for m in messages -%}
{%- if m.role == 'user' -%}{{ m.content + '<|extra_0|>' }}
{%- elif m.role == 'assistant' -%}{{ m.content + '<|eos|>' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and messages[-1].role != 'user' -%}{{ '<|extra_0|>' }}{%- endif -%}
{%- if enable_thinking is defined and not enable_thinking -%}{{ '<think>\n\n</think>\n' }}{%- endif -%}"#;

#[test]
fn the_tail_a_template_writes_after_the_turn_closes_nothing() {
    let t = template(TAIL_AFTER_END);
    let a = t.analyze().unwrap();
    assert_eq!(
        (a.turn.stop_marker.as_str(), a.turn.tail.as_str()),
        ("<|eos|>", "<think>\n\n</think>")
    );
    let config = chat_autoparser::ParserConfig::from(
        chat_autoparser::Options::default().with_enable_thinking(Some(false)),
    );
    let parser = a.parser(&config).unwrap();
    let four = message("It is 4.", "");
    assert_eq!(
        streaming::parse_and_stream(&parser, "It is 4.<|eos|><think>\n\n</think>\n"),
        four
    );
    assert_eq!(
        streaming::parse_and_stream(&parser, "It is 4.<|eos|>"),
        four
    );
    // The empty block the switch appends also names the reasoning markers
    // (`docs/analysis.md`, prompt-only reasoning): inside the text it is an
    // empty reasoning block, the stop marker before it text.
    assert_eq!(reasoning_markers(&a), ("<think>", "</think>"));
    assert_eq!(
        streaming::parse_and_stream(&parser, "A<|eos|><think>\n\n</think>B"),
        message("A<|eos|>B", "")
    );
    // vLLM's Hunyuan-A13B example (Apache-2.0, `tests/fixtures/README.md`)
    // writes the same tail.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/vllm-hunyuan-a13b.jinja"
    );
    let hy = template(&std::fs::read_to_string(path).unwrap());
    let a = hy.analyze().unwrap();
    assert_eq!(a.turn.tail, "<think>\n\n</think>");
    let parser = a.parser(&config).unwrap();
    assert_eq!(
        streaming::parse_and_stream(&parser, "It is 4.<|eos|><think>\n\n</think>\n"),
        four
    );
    // A template without the tail has none.
    assert_eq!(template(PROMPT_OPENS).analyze().unwrap().turn.tail, "");
}

/// axolotl's Command-A training template (Apache-2.0, `tests/fixtures/README.md`):
/// its system text tells the model to write `<|START_THINKING|>` blocks, and
/// its generation prompt ends with `<|START_RESPONSE|>`, the opener history
/// writes right before every answer. That opener starts the answer: a plain
/// answer is content, not reasoning.
#[test]
fn a_prompt_ending_with_the_content_opener_opens_no_reasoning() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/axolotl-command-a.jinja"
    );
    let t = template(&std::fs::read_to_string(path).unwrap());
    let a = t.analyze().unwrap();
    assert_eq!(a.reasoning.mode, ReasoningMode::None);
    assert_eq!(a.turn.generation_prompt.default, "<|START_RESPONSE|>");
    assert_eq!(
        parse(&t, vec![], "Hello there.<|END_RESPONSE|>"),
        message("Hello there.", "")
    );
    // After every conversation the template opens the next turn, with no
    // text: a turn cut from a render ends with that tail.
    assert_eq!(
        a.turn.tail,
        "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    );
    assert_eq!(
        parse(
            &t,
            vec![],
            "Hello there.<|END_RESPONSE|><|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
        ),
        message("Hello there.", "")
    );
}

/// DeepSeek-V3.1 style (vLLM's indented example): history writes the
/// assistant header with other whitespace on each kind of turn than the
/// generation prompt does. The header is not part of any output marker.
const INDENTED_HEADER: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}{{ '<|User|>' + m.content }}
{%- elif m.tool_calls -%}
{{- '    <|Assistant|></think>      <|calls_begin|>' -}}
{%- for tc in m.tool_calls -%}
{{- '<|call_begin|>' + tc.function.name + '<|sep|>' + tc.function.arguments | tojson + '<|call_end|>' -}}
{%- endfor -%}
{{- '<|calls_end|><|eos|>' -}}
{%- else -%}{{ '    <|Assistant|>   </think>  ' + m.content + '<|eos|>' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '  <|Assistant|> </think>' }}{%- endif -%}"#;

#[test]
fn a_header_history_indents_otherwise_is_not_a_marker() {
    let t = template(INDENTED_HEADER);
    let a = t.analyze().unwrap();
    assert_eq!((a.content.start.as_str(), a.content.end.as_str()), ("", ""));
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert_eq!(
        (tools.section_start.as_str(), tools.call_start.as_str()),
        ("<|calls_begin|>", "<|call_begin|>")
    );
    let call = "<|calls_begin|><|call_begin|>get_weather<|sep|>{\"city\": \"Paris\"}<|call_end|><|calls_end|>";
    for output in [call.to_owned(), format!("      {call}")] {
        let m = parse(&t, vec![weather_tool()], &output);
        assert_eq!(m.content, None, "{output:?}");
        assert_eq!(only_call(&m), ("get_weather", r#"{"city": "Paris"}"#));
    }
    assert_eq!(parse(&t, vec![], "It is 4."), message("It is 4.", ""));
}

/// Llama-4 style (vLLM's JSON example): a call turn starts its header on a
/// new line, a plain turn does not; the prompt writes the new line. Bare
/// JSON calls follow the header.
const HEADER_NEW_LINE_ON_CALLS: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}{{ '<|header_start|>user<|header_end|>\n\n' + m.content + '<|eot|>' }}
{%- elif m.tool_calls -%}
{{- '\n<|header_start|>assistant<|header_end|>\n\n' -}}
{%- for tc in m.tool_calls -%}
{{- '{"name": "' + tc.function.name + '", "parameters": ' + tc.function.arguments | tojson + '}' -}}
{%- endfor -%}
{{- '<|eot|>' -}}
{%- else -%}{{ '<|header_start|>assistant<|header_end|>\n\n' + m.content + '<|eot|>' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '\n<|header_start|>assistant<|header_end|>\n\n' }}{%- endif -%}"#;

#[test]
fn a_header_only_call_turns_start_on_a_new_line_is_not_a_marker() {
    let t = template(HEADER_NEW_LINE_ON_CALLS);
    let a = t.analyze().unwrap();
    assert_eq!((a.content.start.as_str(), a.content.end.as_str()), ("", ""));
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert_eq!(
        (tools.section_start.as_str(), tools.call_start.as_str()),
        ("", "")
    );
    let m = parse(
        &t,
        vec![weather_tool()],
        r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#,
    );
    assert_eq!(m.content, None);
    assert_eq!(only_call(&m), ("get_weather", r#"{"city": "Paris"}"#));
    assert_eq!(parse(&t, vec![], "It is 4."), message("It is 4.", ""));
}

/// ToolACE style (vLLM's example): the template opens the next assistant
/// turn with a Llama-3 header after every conversation, asked or not, so a
/// turn cut from a render ends `<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`.
const HEADER_AFTER_EVERY_TURN: &str = r#"
{%- for m in messages -%}
{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' -}}
{%- if m.tool_calls -%}[
{%- for tc in m.tool_calls -%}{{ tc.function.name }}(
{%- for k, v in tc.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, {% endif %}{% endfor %})
{%- if not loop.last %}, {% endif %}{%- endfor -%}]
{%- else -%}{{ m.content }}{%- endif -%}<|eot_id|>
{%- endfor -%}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}"#;

#[test]
fn a_header_the_template_writes_after_every_turn_closes_nothing() {
    let t = template(HEADER_AFTER_EVERY_TURN);
    let a = t.analyze().unwrap();
    assert_eq!(
        (a.turn.stop_marker.as_str(), a.turn.tail.as_str()),
        (
            "<|eot_id|>",
            "<|start_header_id|>assistant<|end_header_id|>"
        )
    );
    let tail = "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    assert_eq!(
        parse(&t, vec![], &format!("It is 4.{tail}")),
        message("It is 4.", "")
    );
    let m = parse(
        &t,
        vec![weather_tool()],
        &format!("[get_weather(city=\"Paris\", days=3)]{tail}"),
    );
    assert_eq!(m.content, None);
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "Paris", "days": 3}"#)
    );
    // Inside the text, the same markers are text.
    let inside = format!("A{tail}B");
    assert_eq!(parse(&t, vec![], &inside), message(&inside, ""));
    // A follow-up user turn after the answer (a template that refuses to end
    // on an assistant turn) is no tail: its word between markers is the user's.
    let refuses = format!(
        "{{%- if messages[-1].role == 'assistant' -%}}{{{{ raise_exception('end on a user turn') }}}}{{%- endif -%}}{HEADER_AFTER_EVERY_TURN}"
    );
    let a = template(&refuses).analyze().unwrap();
    assert_eq!(
        (a.turn.stop_marker.as_str(), a.turn.tail.as_str()),
        ("<|eot_id|>", "")
    );
}

/// Llama-4 pythonic style (vLLM's example): every value is written quoted,
/// numbers too (`days="3"`).
const PYTHON_ALL_QUOTED: &str = r#"
{%- for m in messages -%}
{%- if m.tool_calls -%}<|assistant|>[
{%- for tc in m.tool_calls -%}{{ tc.function.name }}(
{%- for k, v in tc.function.arguments.items() %}{{ k }}="{{ v }}"{% if not loop.last %}, {% endif %}{% endfor %})
{%- if not loop.last %}, {% endif %}{%- endfor -%}]<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_quoted_value_of_a_type_without_strings_is_the_scalar_it_spells() {
    let t = template(PYTHON_ALL_QUOTED);
    let flag = json!({"type": "function", "function": {"name": "set", "parameters": {
        "type": "object",
        "properties": {"on": {"type": "boolean"}, "level": {"type": ["number", "null"]},
                       "code": {"type": ["string", "integer"]}, "tag": {}}}}});
    let m = parse(
        &t,
        vec![weather_tool()],
        r#"[get_weather(city="Paris", days="3")]"#,
    );
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "Paris", "days": 3}"#)
    );
    let m = parse(
        &t,
        vec![flag.clone()],
        r#"[set(on="true", level="2.5", code="7", tag="1")]"#,
    );
    assert_eq!(
        only_call(&m),
        (
            "set",
            r#"{"on": true, "level": 2.5, "code": "7", "tag": "1"}"#
        )
    );
    // Text that spells no value of the type stays the string it is.
    let m = parse(
        &t,
        vec![weather_tool(), flag],
        r#"[get_weather(city="3", days="three")]"#,
    );
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "3", "days": "three"}"#)
    );
}

/// Gemma-3 pythonic style (vLLM's example): a `first` flag set inside the
/// loop is loop-scoped in Jinja, so no comma is ever written between two
/// arguments (`city="Paris"days=3`).
const PYTHON_NO_COMMA: &str = r#"
{%- for m in messages -%}
{%- if m.tool_calls -%}<|assistant|>[
{%- for tc in m.tool_calls -%}{{ tc.function.name }}(
{%- set first = true -%}
{%- for k, v in tc.function.arguments.items() -%}
{%- if not first %}, {% endif -%}{{ k }}={{ v | tojson }}{%- set first = false -%}
{%- endfor %})
{%- if not loop.last %}, {% endif %}{%- endfor -%}]<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn python_arguments_without_a_comma_between_them_parse() {
    let t = template(PYTHON_NO_COMMA);
    let request = chat_autoparser::RenderRequest::default().with_messages(vec![
        json!({"role": "assistant", "tool_calls": [{"type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]}),
    ]);
    assert_eq!(
        t.render(&request).unwrap(),
        "<|assistant|>[get_weather(city=\"Paris\"days=3)]<|end|>"
    );
    for output in [
        r#"[get_weather(city="Paris"days=3)]"#,
        r#"[get_weather(city="Paris" days=3)]"#,
        r#"[get_weather(city="Paris", days=3)]"#,
    ] {
        let m = parse(&t, vec![weather_tool()], output);
        assert_eq!(m.content, None, "{output:?}");
        assert_eq!(
            only_call(&m),
            ("get_weather", r#"{"city": "Paris", "days": 3}"#)
        );
    }
}

/// Phi-4-mini style (vLLM's example): the arguments are printed with
/// `{{ }}`, so an object comes out as Python's `repr` (`{'city': 'Paris'}`)
/// while JSON text, the OpenAI API's form, comes out as the JSON the system
/// text asks for.
const ARGUMENTS_PRINTED: &str = r#"
{{- '<|system|>Call tools as {"name": ..., "arguments": JSON}.<|end|>' -}}
{%- for m in messages -%}
{%- if m.tool_calls -%}<|assistant|>
{%- for tc in m.tool_calls -%}{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments }}}{{ "," if not loop.last }}{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn arguments_printed_as_they_come_are_passed_as_json_text() {
    let t = template(ARGUMENTS_PRINTED);
    let a = t.analyze().unwrap();
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert_eq!(tools.class, ToolClass::JsonNative);
    assert!(!tools.input.object_arguments);
    let m = parse(
        &t,
        vec![weather_tool()],
        r#"{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}"#,
    );
    assert_eq!(m.content, None);
    assert_eq!(
        only_call(&m),
        ("get_weather", r#"{"city": "Paris", "days": 3}"#)
    );
    // History hands the template the JSON text, so it prints JSON.
    let history = vec![
        json!({"role": "assistant", "content": null, "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
    ];
    let request = chat_autoparser::RenderRequest::default()
        .with_messages(chat_autoparser::prompt::template_messages(&a, &history));
    assert!(t.render(&request).unwrap().ends_with(
        r#"<|assistant|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|end|>"#
    ));
}

/// The thinking switch given a default in its own assignment, as Gemma-4,
/// Nemotron-3 and Laguna templates do: the template reads it, and the
/// analysis sees both prompts.
const SWITCH_DEFAULTED: &str = r#"
{%- set enable_thinking = enable_thinking | default(false) -%}
{%- for m in messages -%}
{%- set text = m.content -%}{%- set text = text | trim -%}
{%- for word in [m.role] -%}{%- set word = word | upper -%}{%- endfor -%}
<|im_start|>{{ m.role }}
{{ text }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% if not enable_thinking %}<think>

</think>

{% endif -%}
{%- endif -%}"#;

#[test]
fn a_switch_defaulted_in_its_own_assignment_is_read() {
    let t = template(SWITCH_DEFAULTED);
    assert_eq!(
        t.variables(),
        ["add_generation_prompt", "enable_thinking", "messages"]
    );
    let prompts = t.analyze().unwrap().turn.generation_prompt;
    assert_eq!(
        (
            prompts.thinking_on.as_deref(),
            prompts.thinking_off.as_deref()
        ),
        (
            Some("<|im_start|>assistant\n"),
            Some("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        )
    );
}

/// In the style of Gemma 4's template: the tool calls first, then the
/// turn's content. A model trained on it writes content after its calls.
const CONTENT_AFTER_CALLS: &str = r#"{%- for m in messages -%}
{%- if m.role == 'user' -%}{{- '<start>user\n' + m.content + '<end>\n' -}}
{%- elif m.role == 'assistant' -%}{{- '<start>model\n' -}}
{%- for c in m.tool_calls or [] -%}{{- '<call>' + c.function.name + c.function.arguments | tojson + '</call>' -}}{%- endfor -%}
{{- (m.content or '') + '<end>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start>model\n' -}}{%- endif -%}"#;

#[test]
fn content_the_template_writes_after_the_calls_is_read_there() {
    let t = template(CONTENT_AFTER_CALLS);
    let a = t.analyze().unwrap();
    let tools = a.tools.as_ref().expect("calls are rendered");
    assert!(tools.content_after_calls && tools.content_with_calls);
    let m = parse(
        &t,
        vec![weather_tool()],
        r#"<call>get_weather{"city": "Paris"}</call>Let me check."#,
    );
    assert_eq!(only_call(&m), ("get_weather", r#"{"city": "Paris"}"#));
    assert_eq!(m.content_text(), "Let me check.");
    // The templates in this file that write content first say so.
    let first = template(PLAN_BEFORE_CALLS).analyze().unwrap();
    assert!(!first.tools.unwrap().content_after_calls);
}

/// Nemotron-Super-v1.5 style: thinking is switched by a directive in the
/// system message, the prompt opens no block, and history cuts the block
/// out of an assistant's content (`content.split('</think>')[-1]`).
const CUT_FROM_CONTENT: &str = r#"
{%- set thinking = true -%}
{%- if messages[0].role == 'system' and '/quiet' in messages[0].content -%}{%- set thinking = false -%}{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- set content = m.content.split('</think>')[-1].lstrip() if '</think>' in m.content else m.content -%}
{{- '<|assistant|>\n' + content + '<|end|>\n' -}}
{%- else -%}{{- '<|' + m.role + '|>\n' + m.content + '<|end|>\n' -}}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- if not thinking -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}{%- endif -%}"#;

/// The same, history keeping the content as written: no block is learned.
const CONTENT_KEPT: &str = r#"
{%- for m in messages -%}
{{- '<|' + m.role + '|>\n' + m.content + '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}
{#- a comment naming <think> and </think> -#}"#;

#[test]
fn a_block_history_cuts_from_the_content_is_reasoning() {
    let t = template(CUT_FROM_CONTENT);
    let a = t.analyze().unwrap();
    assert_eq!(reasoning_markers(&a), ("<think>", "</think>"));
    assert_eq!(a.reasoning.mode, ReasoningMode::Tag);
    assert_eq!(
        parse(&t, vec![], "<think>\nTwo and two.\n</think>\n\n4"),
        message("4", "Two and two.")
    );
    let a = template(CONTENT_KEPT).analyze().unwrap();
    assert_eq!(a.reasoning.mode, ReasoningMode::None);
}

/// DeepSeek-V4 (SGLang's example) style: the tool block is built with
/// `list.append`, which jinja2's sandbox (and ours) refuses; without tools
/// the template renders. MiroThinker's `set dict.key` fails the same way.
const FAILS_WITH_TOOLS: &str = r#"
{%- set lines = [] -%}
{%- for t in tools or [] -%}{%- set _ = lines.append(t.function.name) -%}{%- endfor -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{{- '<|assistant|>' + ('<think>' + m.reasoning_content + '</think>' if m.reasoning_content else '') + m.content + '<|end|>' -}}
{%- else -%}{{- '<|' + m.role + '|>' + m.content + '<|end|>' -}}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"#;

#[test]
fn a_template_that_fails_with_tools_is_analysed_without_them() {
    use chat_autoparser::analysis::ComparisonStatus;
    let t = template(FAILS_WITH_TOOLS);
    let a = t.analyze().unwrap();
    assert_eq!(reasoning_markers(&a), ("<think>", "</think>"));
    assert!(a.tools.is_none());
    let t1 = a.comparisons.iter().find(|c| c.name == "T1").unwrap();
    let ComparisonStatus::Unsupported(why) = &t1.status else {
        panic!("T1 is {:?}", t1.status)
    };
    assert!(
        why.starts_with("the template fails when given tools: ")
            && why.contains("'append' of 'list' object is unsafe"),
        "{why}"
    );
    assert_eq!(
        parse(&t, vec![], "<think>Two and two.</think>4"),
        message("4", "Two and two.")
    );
}

/// Llama 4 style (vLLM's llama4_json example): a call turn writes its
/// content inside `<|python_start|>…<|python_end|>`, then bare JSON calls;
/// a plain answer is bare. The pair is the content's wrapper before calls,
/// not the section's start (the diff took the empty pair for it).
const CONTENT_BLOCK_BEFORE_CALLS: &str = r#"
{%- for m in messages -%}
{{- '<|header_start|>' + m.role + '<|header_end|>\n\n' -}}
{%- if m.tool_calls -%}
{{- '<|python_start|>' + (m.content or '') + '<|python_end|>' -}}
{%- for c in m.tool_calls -%}
{{- '{"name": "' + c.function.name + '", "parameters": ' + c.function.arguments | tojson + '}' -}}
{%- endfor -%}
{%- else -%}{{- m.content -}}{%- endif -%}
{{- '<|eot|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|header_start|>assistant<|header_end|>\n\n' -}}{%- endif -%}"#;

#[test]
fn a_content_block_written_only_before_calls_is_the_contents() {
    let t = template(CONTENT_BLOCK_BEFORE_CALLS);
    let a = t.analyze().unwrap();
    let content = &a.content;
    assert_eq!(
        (
            content.start.as_str(),
            content.end.as_str(),
            content.calls_only
        ),
        ("<|python_start|>", "<|python_end|>", true)
    );
    let tools = a.tools.as_ref().unwrap();
    assert_eq!(
        (tools.class, tools.section_start.as_str()),
        (ToolClass::JsonNative, "")
    );
    let tools_json = vec![
        json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
    ];
    let call = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
    for (output, content) in [
        (
            format!("<|python_start|>Let me check.<|python_end|>{call}"),
            Some("Let me check."),
        ),
        (format!("<|python_start|><|python_end|>{call}"), None),
        (call.to_string(), None),
        (format!("Let me check. {call}"), Some("Let me check.")),
    ] {
        let m = parse(&t, tools_json.clone(), &output);
        assert_eq!(m.content.as_deref(), content, "{output:?}");
        assert_eq!(m.tool_calls.len(), 1, "{output:?}");
        assert_eq!(m.tool_calls[0].function.arguments, r#"{"city": "Paris"}"#);
    }
    assert_eq!(
        parse(&t, tools_json, "It is sunny in Paris."),
        message("It is sunny in Paris.", "")
    );
}

/// A call object's members that hold no slot and render the same in every
/// call are the format's fixed members, in their rendered place (`"type"`
/// after the id, before `"function"`); a member that numbers the calls
/// (`"index"`) is none. The parser reads a call with or without them.
#[test]
fn fixed_members_of_a_json_call_object_are_learned() {
    let t = template(concat!(
        "{%- for m in messages -%}<|{{ m.role }}|>",
        "{%- if m.tool_calls -%}[{%- for c in m.tool_calls -%}",
        "{%- if not loop.first %}, {% endif -%}",
        "{{ {'id': c.id, 'type': 'function', 'index': loop.index0, 'function': c.function} | tojson }}",
        "{%- endfor -%}]{%- else -%}{{ m.content }}{%- endif -%}<|end|>",
        "{%- endfor -%}{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}",
    ));
    let analysis = t.analyze().unwrap();
    let format = analysis.tools.as_ref().expect("calls");
    assert_eq!(format.class, ToolClass::JsonNative);
    let fixed: Vec<(String, Value, usize)> = format
        .json_constants
        .iter()
        .map(|c| (c.path.join("."), c.value.clone(), c.after))
        .collect();
    assert_eq!(fixed, vec![("type".to_string(), json!("function"), 1)]);
    let with = r#"[{"id": "c1", "type": "function", "index": 0, "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]"#;
    let without = r#"[{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]"#;
    for output in [with, without] {
        assert_eq!(
            only_call(&parse(&t, vec![weather_tool()], output)),
            ("get_weather", r#"{"city": "Paris"}"#),
            "{output}"
        );
    }
}
