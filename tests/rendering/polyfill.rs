//! Polyfills: a template without a tools branch renders tools, calls and
//! results in the Hermes style, and the analysis of the polyfilled template
//! finds the Hermes JSON format; system text joins the first user turn when
//! there is no system role; `Native` renders the template as written; with
//! a call writer, `Auto` replays earlier calls through it and keeps the
//! template's tools block and results, unless it refuses a call.

use chat_autoparser::analysis::ToolClass;
use chat_autoparser::template::ToolFormatting;
use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig};
use serde_json::{json, Value as Json};

/// ChatML with neither tools, tool calls, tool role nor system role: a
/// system message raises, other roles render their content.
const PLAIN: &str = "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}{% endif %}\
<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

fn template() -> ChatTemplate {
    ChatTemplate::new(PLAIN, &TemplateConfig::default()).unwrap()
}

fn tools() -> Vec<Json> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
    ]
}

fn conversation() -> Vec<Json> {
    vec![
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "Weather in Paris?"}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}),
        json!({"role": "tool", "tool_call_id": "c2", "content": "warm"}),
    ]
}

#[test]
fn capabilities_show_what_is_missing() {
    let caps = template().capabilities();
    assert!(
        !caps.tools && !caps.tool_calls && !caps.system_role,
        "{caps:?}"
    );
}

#[test]
fn tools_calls_results_and_system_are_polyfilled() {
    let request = RenderRequest::default()
        .with_messages(conversation())
        .with_tools(Some(tools()))
        .with_add_generation_prompt(true);
    let text = template().render_chat(&request).unwrap();
    let expected = concat!(
        "<|im_start|>user\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n",
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather.\", ",
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}\n</tools>\n\n",
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n",
        "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n\nWeather in Paris?<|im_end|>\n",
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n",
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nwarm\n</tool_response><|im_end|>\n",
        "<|im_start|>assistant\n",
    );
    assert_eq!(text, expected);
}

#[test]
fn native_renders_as_written() {
    let request = RenderRequest::default()
        .with_messages(conversation()[1..].to_vec())
        .with_tools(Some(tools()))
        .with_tool_formatting(ToolFormatting::Native);
    let text = template().render_chat(&request).unwrap();
    assert_eq!(text, template().render(&request).unwrap());
    assert!(!text.contains("<tool_call>"));
}

#[test]
fn analysis_of_the_polyfilled_template_finds_hermes_json() {
    let plain = template().analyze().unwrap();
    assert!(plain.tools.is_none());
    let polyfilled = template().with_polyfills().analyze().unwrap();
    let tools = polyfilled.tools.expect("tool format found");
    assert_eq!(tools.class, ToolClass::JsonNative);
    assert_eq!(
        (tools.call_start.as_str(), tools.call_end.as_str()),
        ("<tool_call>\n", "\n</tool_call>")
    );
}

#[test]
fn auto_keeps_a_native_tool_path() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    let t = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let request = RenderRequest::default()
        .with_messages(conversation())
        .with_tools(Some(tools()));
    let native = request.clone().with_tool_formatting(ToolFormatting::Native);
    // Auto only normalises the call (string arguments stay strings: the template renders both).
    assert_eq!(
        t.render_chat(&request).unwrap(),
        t.render_chat(&native).unwrap()
    );
    let manual = request.with_tool_formatting(ToolFormatting::Manual);
    assert!(t
        .render_chat(&manual)
        .unwrap()
        .contains("<|im_start|>user\n<tool_response>"));
}

/// Lists tools and renders results, never an assistant's calls.
const SILENT_CALLS: &str = "{%- if tools %}{{ 'Tools: ' + (tools | map(attribute='function.name') | join(',')) + '\\n' }}{% endif %}\
{%- for m in messages %}{{ m.role + ': ' + m.content + '\\n' }}{% endfor %}";

/// Writes calls as `[name]`; refuses a call named `refused`.
#[derive(Debug)]
struct Brackets;

impl chat_autoparser::template::CallWriter for Brackets {
    fn write_calls(&self, calls: &[Json]) -> Option<String> {
        let names: Vec<&str> = calls
            .iter()
            .map(|c| c["function"]["name"].as_str().unwrap_or(""))
            .collect();
        (!names.contains(&"refused")).then(|| format!("[{}]", names.join(",")))
    }
}

fn replay(name: &str) -> RenderRequest {
    RenderRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Go."}),
            json!({"role": "assistant", "content": "On it.", "tool_calls": [
                {"type": "function", "function": {"name": name, "arguments": "{}"}}]}),
            json!({"role": "tool", "content": "done"}),
        ])
        .with_tools(Some(tools()))
}

#[test]
fn a_call_writer_replays_calls_and_the_rest_stays_native() {
    let t = ChatTemplate::new(SILENT_CALLS, &TemplateConfig::default())
        .unwrap()
        .with_call_writer(std::sync::Arc::new(Brackets));
    assert_eq!(
        t.render_chat(&replay("get_weather")).unwrap(),
        "Tools: get_weather\nuser: Go.\nassistant: On it.[get_weather]\ntool: done\n"
    );
    assert_eq!(
        t.tool_formatting_for(&replay("get_weather")),
        ToolFormatting::Auto
    );
}

#[test]
fn a_call_the_writer_refuses_sends_the_whole_path_manual() {
    let t = ChatTemplate::new(SILENT_CALLS, &TemplateConfig::default())
        .unwrap()
        .with_call_writer(std::sync::Arc::new(Brackets));
    let text = t.render_chat(&replay("refused")).unwrap();
    assert!(!text.starts_with("Tools:"), "{text}");
    assert!(
        text.contains("assistant: On it.\n<tool_call>\n{\"name\": \"refused\", \"arguments\": {}}\n</tool_call>\n"),
        "{text}"
    );
    assert_eq!(
        t.tool_formatting_for(&replay("refused")),
        ToolFormatting::Manual
    );
}
