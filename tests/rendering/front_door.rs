//! The front door (`Chat::prepare`): one request in, prompt, parser and
//! grammar exports out, from one protocol.
//!
//! - the prompt is `render_chat`'s; the parser and every export follow it;
//! - a prompt that does not render leaves the parse standing, with a
//!   diagnostic;
//! - on a template that lists tools and renders results but never an
//!   assistant's calls, earlier calls are replayed in the model's own format
//!   as the analysis found it (not Hermes), and the template's own tools
//!   block and results stay: one prompt, one tool format.
//!
//! The corpus case skips with a message when ../shared is absent.

use std::path::Path;

use chat_autoparser::parser::Start;
use chat_autoparser::prompt::Continue;
use chat_autoparser::{
    Chat, ChatRequest, ChatTemplate, ErrorKind, Export, TemplateConfig, TemplateSource,
};
use serde_json::{json, Value as Json};

fn chat(source: &str) -> Chat {
    Chat::new(ChatTemplate::new(source, &TemplateConfig::default()).unwrap()).unwrap()
}

fn shipped(name: &str) -> Chat {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates")
        .join(name);
    let source = TemplateSource::load(&path).unwrap();
    Chat::new(ChatTemplate::from_source(&source, &TemplateConfig::default()).unwrap()).unwrap()
}

fn weather() -> Json {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
}

/// A conversation that replays one call and its result.
fn replay() -> Vec<Json> {
    vec![
        json!({"role": "user", "content": "Weather in Paris?"}),
        json!({"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}),
    ]
}

/// Lists the tools and wraps results, never renders an assistant's calls.
const SILENT_CALLS: &str = "{%- if tools %}\
{{ '<|im_start|>system\\nTools: ' + tools | tojson + '<|im_end|>\\n' }}{% endif %}\
{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}\
{%- if m.role == 'tool' %}{{ '<result>' + m.content + '</result>' }}\
{%- else %}{{ m.content }}{% endif %}{{- '<|im_end|>\\n' }}{% endfor %}\
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

#[test]
fn prepare_gives_prompt_parser_and_exports() {
    let chat = shipped("hermes-think.jinja");
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(Some(vec![weather()]));
    let prepared = chat.prepare(&request);
    assert!(
        prepared.diagnostics.is_empty(),
        "{:?}",
        prepared.diagnostics
    );
    let prompt = prepared.prompt.as_deref().unwrap();
    assert!(prompt.ends_with("Weather in Paris?<|im_end|>\n<|im_start|>assistant\n"));
    let message = prepared.parser().unwrap().parse(
        "<think>Rain?</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \
         \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    );
    assert_eq!(message.reasoning_content, "Rain?");
    assert_eq!(message.tool_calls[0].function.name, "get_weather");
    let gbnf = prepared.gbnf().unwrap();
    assert_eq!(gbnf.preserved_tokens, prepared.preserved_tokens());
    assert_eq!(
        prepared.preserved_tokens(),
        [
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<|im_end|>"
        ]
    );
    assert!(gbnf.gbnf.contains("\"<tool_call>\""), "{}", gbnf.gbnf);
    assert!(prepared.structural_tag().is_ok());
    assert!(prepared.lark().is_ok());
    assert!(prepared.response_template().is_ok());
}

#[test]
fn a_request_without_tools_still_preserves_the_markers() {
    // llama-server drops a special token from the text unless it is preserved:
    // with no grammar to send, `<think>` must still be named.
    let chat = shipped("hermes-think.jinja");
    let request =
        ChatRequest::default().with_messages(vec![json!({"role": "user", "content": "Hi"})]);
    let gbnf = chat.prepare(&request).gbnf().unwrap();
    assert!(gbnf.is_empty(), "{}", gbnf.gbnf);
    assert_eq!(
        gbnf.preserved_tokens,
        [
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<|im_end|>"
        ]
    );
}

#[test]
fn a_prompt_that_does_not_render_leaves_the_parse_standing() {
    let chat = chat(
        "{% for m in messages %}{% if not loop.first and m.role == loop.previtem.role %}\
         {{ raise_exception('roles must alternate') }}{% endif %}\
         <|{{ m.role }}|>{{ m.content }}{% endfor %}\
         {% if add_generation_prompt %}<|assistant|>{% endif %}",
    );
    let request = ChatRequest::default().with_messages(vec![
        json!({"role": "user", "content": "U"}),
        json!({"role": "user", "content": "U"}),
    ]);
    let prepared = chat.prepare(&request);
    assert_eq!(prepared.prompt, None);
    assert_eq!(
        prepared.diagnostics,
        ["the prompt does not render (raised error at line 1, column 83: roles must alternate); \
          parsed without it"]
    );
    assert_eq!(
        prepared
            .parser()
            .unwrap()
            .parse("Hello.")
            .content
            .as_deref(),
        Some("Hello.")
    );
}

/// A tool without a name cannot be called: the parser and every export
/// refuse the request as bad input, naming the tool's index.
#[test]
fn a_tool_without_a_name_is_bad_input() {
    let chat = shipped("hermes-think.jinja");
    for nameless in [
        json!({"type": "function", "function": {"parameters": {"type": "object"}}}),
        json!({"type": "function", "function": {"name": ""}}),
        json!("get_weather"),
    ] {
        let request = ChatRequest::default().with_tools(vec![weather(), nameless.clone()]);
        let prepared = chat.prepare(&request);
        let mut errors = vec![prepared.parser().err()];
        for export in [
            Export::Gbnf,
            Export::StructuralTag,
            Export::Lark,
            Export::ResponseTemplate,
        ] {
            errors.push(prepared.export(export).err());
        }
        for error in errors {
            let error = error.unwrap_or_else(|| panic!("{nameless} was accepted"));
            assert_eq!(error.kind(), ErrorKind::Input);
            assert_eq!(error.message(), "tool 1 has no function.name");
        }
    }
}

#[test]
fn a_continued_message_is_the_start_of_the_answer() {
    let chat = shipped("hermes-think.jinja");
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Count."}),
            json!({"role": "assistant", "content": "One,"}),
        ])
        .with_continue_final_message(Continue::Auto);
    let prepared = chat.prepare(&request);
    assert!(prepared.prompt.as_deref().unwrap().ends_with("One,"));
    assert_eq!(
        prepared.parser().unwrap().parse(" two.").content.as_deref(),
        Some("One, two.")
    );
}

#[test]
fn replayed_calls_are_written_in_the_analysed_format() {
    let chat = chat(SILENT_CALLS);
    let request = ChatRequest::default()
        .with_messages(replay())
        .with_tools(Some(vec![weather()]));
    let prompt = chat.prepare(&request).prompt.unwrap();
    assert_eq!(
        prompt,
        concat!(
            "<|im_start|>system\nTools: [{\"type\": \"function\", \"function\": ",
            "{\"name\": \"get_weather\", \"description\": \"Weather.\", ",
            "\"parameters\": {\"type\": \"object\", \"properties\": ",
            "{\"city\": {\"type\": \"string\"}}}}}]<|im_end|>\n",
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\nChecking.",
            "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|><|im_end|>\n",
            "<|im_start|>tool\n<result>sunny</result><|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

#[test]
fn without_the_analysis_render_chat_stays_all_hermes() {
    let template = ChatTemplate::new(SILENT_CALLS, &TemplateConfig::default()).unwrap();
    let request = ChatRequest::default()
        .with_messages(replay())
        .with_tools(Some(vec![weather()]));
    let text = template.render_chat(&request.render_request()).unwrap();
    assert!(!text.contains("Tools: ["), "{text}");
    assert!(text.contains(
        "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \
         \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
    ));
    assert!(text.contains("<|im_start|>user\n<tool_response>\nsunny\n</tool_response>"));
}

#[test]
fn a_first_turn_keeps_the_template_as_written() {
    let chat = chat(SILENT_CALLS);
    let request = ChatRequest::default()
        .with_messages(replay()[..1].to_vec())
        .with_tools(Some(vec![weather()]));
    let prompt = chat.prepare(&request).prompt.unwrap();
    assert_eq!(
        prompt,
        chat.template().render(&request.render_request()).unwrap()
    );
    assert!(prompt.starts_with("<|im_start|>system\nTools: ["));
}

#[test]
fn lfm2_replays_calls_as_python_lists_between_its_tokens() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp/LFM2-8B-A1B.jinja");
    let Ok(source) = TemplateSource::load(&path) else {
        println!("front_door: corpus absent (../shared), skipped");
        return;
    };
    let template = ChatTemplate::from_source(&source, &TemplateConfig::default()).unwrap();
    let chat = Chat::new(template).unwrap();
    let request = ChatRequest::default()
        .with_messages(replay())
        .with_tools(Some(vec![weather()]));
    let prompt = chat.prepare(&request).prompt.unwrap();
    assert_eq!(
        prompt,
        concat!(
            "<|im_start|>system\nList of tools: <|tool_list_start|>",
            "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", ",
            "\"description\": \"Weather.\", \"parameters\": {\"type\": \"object\", ",
            "\"properties\": {\"city\": {\"type\": \"string\"}}}}}]<|tool_list_end|><|im_end|>\n",
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n",
            "<|im_start|>assistant\nChecking.",
            "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|><|im_end|>\n",
            "<|im_start|>tool\n<|tool_response_start|>sunny<|tool_response_end|><|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
}

#[test]
fn a_given_prompt_is_used_as_is_and_no_messages_leave_the_switch() {
    let chat = shipped("qwen3_5-fixed.jinja");
    let given = ChatRequest::default().with_prompt(Some(
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n".into(),
    ));
    let prepared = chat.prepare(&given);
    assert_eq!(prepared.prompt, given.prompt);
    assert_eq!(prepared.start(), Start::InReasoning);
    let off = ChatRequest::default().with_enable_thinking(Some(false));
    let prepared = chat.prepare(&off);
    assert_eq!(
        (prepared.prompt.as_deref(), prepared.diagnostics.len()),
        (None, 0)
    );
    assert_eq!(prepared.start(), Start::AfterReasoning);
}

/// No tools, calls, results or system role.
const NO_TOOLS: &str =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#[test]
fn a_template_without_tools_parses_the_hermes_calls_its_prompt_asks_for() {
    let chat = chat(NO_TOOLS);
    let request = ChatRequest::default()
        .with_messages(replay()[..1].to_vec())
        .with_tools(Some(vec![weather()]));
    let prepared = chat.prepare(&request);
    let prompt = prepared.prompt.as_deref().unwrap();
    assert!(prompt.contains(
        "\n<tool_call>\n{\"name\": <function-name>, \
         \"arguments\": <args-json-object>}\n</tool_call>"
    ));
    let message = prepared.parser().unwrap().parse(
        "<tool_call>\n{\"name\": \"get_weather\", \
         \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    );
    assert_eq!(message.content, None);
    assert_eq!(message.tool_calls[0].function.name, "get_weather");
    assert_eq!(
        message.tool_calls[0].function.arguments,
        "{\"city\": \"Paris\"}"
    );
}

/// A system prompt that shows the model its reasoning markers
/// (`[THINK]...[/THINK]`, as Ministral-3 Reasoning's does), in a template
/// whose turns have no end marker the analysis learns and whose generation
/// prompt is empty.
const MARKERS_IN_SYSTEM_TEXT: &str = "{{ '[SYSTEM_PROMPT]Think first, as [THINK]thoughts[/THINK] then answer.[/SYSTEM_PROMPT]' }}\
{%- for m in messages -%}\
{%- if m.role == 'user' -%}[INST]{{ m.content }}[/INST]\
{%- else -%}{% if m.reasoning_content %}[THINK]{{ m.reasoning_content }}[/THINK]{% endif %}{{ m.content }}</s>{%- endif -%}\
{%- endfor -%}";

/// Reasoning markers named in an earlier turn's text do not close this
/// turn's reasoning: the output starts free, so the model may open a block.
#[test]
fn reasoning_markers_in_system_text_close_no_block() {
    let chat = chat(MARKERS_IN_SYSTEM_TEXT);
    let request =
        ChatRequest::default().with_messages(vec![json!({"role": "user", "content": "Hi"})]);
    let prepared = chat.prepare(&request);
    assert!(prepared
        .prompt
        .as_deref()
        .unwrap()
        .ends_with("[INST]Hi[/INST]"));
    assert_eq!(prepared.start(), Start::Free);
}

/// The parser is built from the prepared protocol (issue 30): what was
/// decided there is the parser's too, not decided again from the analysis.
/// Here the protocol is left without a tool section: the call's text is
/// content.
#[test]
fn the_parser_reads_the_prepared_protocol() {
    let chat = shipped("hermes-think.jinja");
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(vec![weather()]);
    let mut prepared = chat.prepare(&request);
    let output = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let called = prepared.parser().unwrap().parse(output);
    assert_eq!(called.tool_calls.len(), 1, "{called:?}");
    assert_eq!(called.tool_calls[0].function.name, "get_weather");
    prepared.protocol.tools = None;
    let uncalled = prepared.parser().unwrap().parse(output);
    assert!(uncalled.tool_calls.is_empty(), "{uncalled:?}");
    assert_eq!(uncalled.content.as_deref(), Some(output));
}
