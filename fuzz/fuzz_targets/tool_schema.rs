//! Arbitrary JSON as tool schemas (and as a response schema) through the
//! grammar export of every shipped template, so every emitter sees it: the
//! GBNF text must parse and have no left recursion (llama.cpp refuses it).
//!
//! Input: JSON text. An array is a tool list; anything else is the
//! parameters of one tool. Text that is not JSON is skipped.

#![no_main]

use chat_autoparser::grammar::syntax;
use chat_autoparser::{Options, ToolChoice};
use chat_autoparser_fuzz::shipped;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let tools = match &value {
        Value::Array(tools) => tools.clone(),
        schema => {
            vec![json!({"type": "function", "function": {"name": "f", "parameters": schema}})]
        }
    };
    let configs = [
        Options::default()
            .with_tools(tools.clone())
            .with_tool_choice(ToolChoice::Required),
        Options::default()
            .with_tools(tools)
            .with_tool_choice(ToolChoice::Auto)
            .with_parallel_tool_calls(false),
        Options::default().with_response_schema(Some(value.clone())),
    ];
    for s in shipped() {
        for config in &configs {
            let Ok(grammar) = s.analysis.grammar(config) else {
                continue;
            };
            if grammar.is_empty() {
                continue;
            }
            let parsed = syntax::parse(grammar.gbnf()).unwrap_or_else(|e| {
                panic!(
                    "[{}] exported GBNF does not parse: {e}\n{}",
                    s.name,
                    grammar.gbnf()
                )
            });
            if let Some(cycle) = syntax::left_recursion(&parsed) {
                panic!(
                    "[{}] exported GBNF is left-recursive through {cycle}\n{}",
                    s.name,
                    grammar.gbnf()
                );
            }
        }
    }
});
