//! Special tokens in the GBNF export (issue 27 item 3): given the serving
//! model's special tokens, the markers among them are written in llama.cpp's
//! token syntax (`<tool_call>`), so a model must sample the token rather than
//! spell its text; other markers stay text, with a warning. A request's
//! special tokens reach the GBNF, Lark and structural tag exports of
//! `Prepared`.

use chat_autoparser::grammar::{gbnf, gbnf_with, Recognizer};
use chat_autoparser::{Chat, ChatRequest, GbnfOptions, Options, Protocol, ToolChoice};
use serde_json::json;

use crate::common::shipped_template;
use crate::common::streaming::weather_tools;

const CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

fn options() -> Options {
    Options::default()
        .with_tools(weather_tools())
        .with_tool_choice(ToolChoice::Required)
}

/// A vocabulary's list: the markers among many other tokens.
fn vocabulary() -> Vec<String> {
    let mut tokens: Vec<String> = (0..5000).map(|i| format!("<extra_{i}>")).collect();
    tokens.extend(
        [
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            "<|im_end|>",
        ]
        .map(String::from),
    );
    tokens
}

#[test]
fn markers_that_are_special_tokens_are_written_as_tokens() {
    let (_, analysis) = shipped_template("hermes-think");
    let protocol = Protocol::new(&analysis, &options());
    let text = gbnf(&protocol).unwrap();
    let tokens = gbnf_with(
        &protocol,
        &GbnfOptions::default().with_special_tokens(vocabulary()),
    )
    .unwrap();
    assert!(text.gbnf.contains("\"<tool_call>\""), "{}", text.gbnf);
    assert!(!tokens.gbnf.contains("\"<tool_call>\""), "{}", tokens.gbnf);
    assert!(tokens.gbnf.contains(" <tool_call> "), "{}", tokens.gbnf);
    assert!(tokens.gbnf.contains(" </tool_call>"), "{}", tokens.gbnf);
    assert!(
        !tokens.gbnf.contains("extra_"),
        "only the grammar's markers are named"
    );
    assert!(tokens.warnings.is_empty(), "{:?}", tokens.warnings);
    // The same language over text (a recognizer of text cannot tell a token
    // from its spelling; llama.cpp can).
    let recognizer = Recognizer::new(&tokens.gbnf).unwrap();
    assert!(recognizer.accepts(CALL));
    assert!(
        !recognizer.accepts("<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>")
    );
}

#[test]
fn a_marker_without_token_syntax_stays_text_with_a_warning() {
    let (_, analysis) = shipped_template("mistral-tool-calls");
    let protocol = Protocol::new(&analysis, &options());
    let special = vec!["[TOOL_CALLS]".to_string()];
    let text = gbnf(&protocol).unwrap();
    let g = gbnf_with(
        &protocol,
        &GbnfOptions::default().with_special_tokens(special),
    )
    .unwrap();
    assert_eq!(g.gbnf, text.gbnf);
    assert_eq!(
        g.warnings,
        ["\"[TOOL_CALLS]\" has no GBNF token syntax (<...>); written as text"]
    );
}

#[test]
fn a_requests_special_tokens_reach_the_token_aware_exports() {
    let (template, _) = shipped_template("hermes-think");
    let chat = Chat::new(template).unwrap();
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(weather_tools())
        .with_tool_choice(ToolChoice::Required)
        .with_special_tokens(vocabulary());
    let prepared = chat.prepare(&request);
    let g = prepared.gbnf().unwrap();
    assert!(g.gbnf.contains(" <tool_call> "), "{}", g.gbnf);
    let lark = prepared.lark().unwrap();
    assert!(
        lark.lark.contains("<tool_call>") && !lark.lark.contains("\"<tool_call>\""),
        "{}",
        lark.lark
    );
    assert!(
        !lark.warnings.iter().any(|w| w.contains("extra_")),
        "{:?}",
        lark.warnings
    );
    let tag = prepared.structural_tag().unwrap();
    let calls = &tag.structural_tag["format"]["elements"][1]["elements"][1];
    assert_eq!(calls["trigger_tokens"], json!(["<tool_call>"]), "{calls}");
    assert_eq!(
        calls["tags"][0]["begin"],
        json!({"type": "token", "token": "<tool_call>"})
    );
    assert!(tag.warnings.is_empty(), "{:?}", tag.warnings);
}
