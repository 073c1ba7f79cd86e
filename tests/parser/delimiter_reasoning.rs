//! Delimiter reasoning (no start marker: the model reasons from the start of
//! its turn up to an end marker) in a template without an end-of-turn
//! marker, whose system text names the end marker to the model, as
//! Apriel-1.6 does; on a small template written for this test.
//!
//! Where the output starts is read from the prompt's current turn. With no
//! end-of-turn marker to cut at, that turn starts at the generation prompt's
//! opening marker (`<|asst|>`), not at the start of the prompt: the `[ANSWER]`
//! of the system text does not close a reasoning block.
//!
//! A generation prompt that writes text after its opening marker (Apriel's
//! `Here are my reasoning steps:\n`) starts the reasoning block: a rendered
//! turn writes its reasoning right after the marker, so the message renders
//! back as prompt and output only with that text in its reasoning.

use chat_autoparser::{AssistantMessage, ChatTemplate, RenderRequest, TemplateConfig};
use serde_json::{json, Value};

use crate::common::prompted;

const TEMPLATE: &str = r#"
{{- 'Think step by step, then write the answer after [ANSWER].' -}}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{{- '\n<|asst|>\n' -}}
{%- if m.reasoning_content and loop.last -%}{{ m.reasoning_content + '\n[ANSWER]\n' }}{%- endif -%}
{{- m.content -}}
{%- else -%}
{{- '\n<|' + m.role + '|>\n' + m.content -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '\n<|asst|>\nGENERATION' -}}{%- endif -%}"#;

/// The template, its generation prompt writing `opening` after `<|asst|>`.
fn template_opening(opening: &str) -> ChatTemplate {
    let source = TEMPLATE.replace("GENERATION", opening);
    ChatTemplate::new(&source, &TemplateConfig::default()).unwrap()
}

fn template() -> ChatTemplate {
    template_opening("")
}

/// Parses `output` as the continuation of the prompt after `messages`.
fn parse(messages: Vec<Value>, output: &str) -> AssistantMessage {
    parse_with(&template(), messages, output)
}

fn parse_with(template: &ChatTemplate, messages: Vec<Value>, output: &str) -> AssistantMessage {
    prompted::parse_after_prompt(
        template,
        &template.analyze().unwrap(),
        messages,
        Vec::new(),
        output,
    )
}

fn message(content: &str, reasoning: &str) -> AssistantMessage {
    AssistantMessage {
        role: "assistant".into(),
        content: Some(content.into()),
        reasoning_content: reasoning.into(),
        tool_calls: Vec::new(),
    }
}

#[test]
fn the_analysis_finds_delimiter_reasoning_and_no_end_of_turn() {
    let a = template().analyze().unwrap();
    assert_eq!(
        (a.reasoning.start.as_str(), a.reasoning.end.as_str()),
        ("", "[ANSWER]")
    );
    assert_eq!(a.turn.stop_marker, "");
    assert_eq!(a.turn.generation_prompt.default, "\n<|asst|>\n");
}

#[test]
fn the_system_text_naming_the_marker_does_not_end_reasoning() {
    let user = vec![json!({"role": "user", "content": "What is 2+2?"})];
    assert_eq!(
        parse(user.clone(), "Two and two.\n[ANSWER]\n4"),
        message("4", "Two and two.")
    );
    // Without the end marker, nothing is reasoning.
    assert_eq!(parse(user, "4"), message("4", ""));
}

#[test]
fn a_later_turn_starts_at_the_last_opening_marker() {
    let history = vec![
        json!({"role": "user", "content": "What is 2+2?"}),
        json!({"role": "assistant", "content": "4"}),
        json!({"role": "user", "content": "And 3+3? [ANSWER] goes last."}),
    ];
    assert_eq!(
        parse(history, "Three and three.\n[ANSWER]\n6"),
        message("6", "Three and three.")
    );
}

#[test]
fn text_the_generation_prompt_writes_starts_the_reasoning() {
    let t = template_opening("Let me think:\\n");
    assert_eq!(
        t.analyze().unwrap().turn.generation_prompt.default,
        "\n<|asst|>\nLet me think:\n"
    );
    let user = vec![json!({"role": "user", "content": "What is 2+2?"})];
    assert_eq!(
        parse_with(&t, user.clone(), "Two and two.\n[ANSWER]\n4"),
        message("4", "Let me think:\nTwo and two.")
    );
    // Rendered back, the message is the prompt and the output.
    let mut turn = user.clone();
    turn.push(json!({"role": "assistant", "content": "4", "reasoning_content": "Let me think:\nTwo and two."}));
    let prompt = prompted::generation_prompt(&t, user.clone(), &[]);
    let rendered = t
        .render(&RenderRequest::default().with_messages(turn))
        .unwrap();
    assert_eq!(rendered, format!("{prompt}Two and two.\n[ANSWER]\n4"));
    // No reasoning block in the output: no reasoning, the prompt's text aside.
    assert_eq!(parse_with(&t, user, "4"), message("4", ""));
}
