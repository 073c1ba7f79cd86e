//! Parsing an output as the continuation of the prompt a template renders.
//!
//! Tests of how the parser reads the prompt (where reasoning starts, what
//! the prompt's last marker is) render one conversation with its generation
//! prompt and parse the output after it; one copy of that here. A test
//! crate includes it with `#[path = "common/prompted.rs"] mod prompted;`.

#![allow(dead_code)] // Each test uses the part it needs.

use chat_autoparser::Options;
use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, ParserConfig, RenderRequest};
use serde_json::Value;

/// What `template` renders for `messages` (and `tools`, when there are
/// any), ending with its generation prompt.
pub fn generation_prompt(template: &ChatTemplate, messages: Vec<Value>, tools: &[Value]) -> String {
    let tools = (!tools.is_empty()).then(|| tools.to_vec());
    let request = RenderRequest::default()
        .with_messages(messages)
        .with_tools(tools)
        .with_add_generation_prompt(true);
    template.render(&request).expect("the prompt renders")
}

/// `output` parsed by `analysis`'s parser for `tools`, as the continuation
/// of [`generation_prompt`].
pub fn parse_after_prompt(
    template: &ChatTemplate,
    analysis: &Analysis,
    messages: Vec<Value>,
    tools: Vec<Value>,
    output: &str,
) -> AssistantMessage {
    let prompt = generation_prompt(template, messages, &tools);
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools)
            .with_prompt(Some(prompt)),
    );
    analysis.parser(&config).expect("parser").parse(output)
}
