//! Token accounting (issue 27 item 3): a stream fed one token at a time
//! (`OutputStream::push_token`) says which tokens wrote the reasoning, the
//! content and each call, and how many were reasoning, as vLLM's usage
//! reports `reasoning_tokens`. On the shipped hermes-think template.

use std::ops::Range;

use chat_autoparser::{Options, OutputParser, ParserConfig, TokenSpans};

use crate::common::shipped_template;
use crate::common::streaming::weather_tools;

fn parser() -> OutputParser {
    let (_, analysis) = shipped_template("hermes-think");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()))
        .with_special_tokens(vec!["<think>".into(), "</think>".into()]);
    analysis.parser(&config).unwrap()
}

/// Streams `tokens` (text, sampled as a special token) and returns the
/// spans, after checking the message equals the batch parse given the
/// same special tokens.
fn spans(tokens: &[(&str, bool)]) -> TokenSpans {
    let p = parser();
    let mut stream = p.stream();
    let (mut output, mut special) = (String::new(), Vec::new());
    for (text, is_special) in tokens {
        stream.push_token(text, *is_special).unwrap();
        if *is_special {
            special.push(output.len()..output.len() + text.len());
        }
        output.push_str(text);
    }
    stream.finish();
    let batch = p.parse_tokens_report(&output, &special, false).unwrap();
    assert_eq!(stream.message(), batch.message);
    stream.token_spans().clone()
}

#[test]
fn reasoning_content_and_a_call_each_have_their_tokens() {
    let tokens = [
        ("<think>", true),                                    // 0: a marker, no text
        ("It", false),                                        // 1
        (" rains", false),                                    // 2
        ("</think>", true),         // 3: no text after the reasoning's end
        ("\n\n", false),            // 4: the join, scaffolding
        ("Checking", false),        // 5
        (".", false),               // 6
        ("\n<tool_call>", false),   // 7: the content's last text is final here
        ("\n{\"name\": \"", false), // 8
        ("get_weather", false),     // 9
        ("\", \"arguments\": {\"city\": \"Paris\"}}", false), // 10: the name is closed: the call is announced
        ("\n</tool_call>", false),                            // 11
    ];
    let spans = spans(&tokens);
    assert_eq!(spans.tokens, 12);
    assert_eq!(spans.reasoning, Some(1..3));
    assert_eq!(spans.reasoning_tokens(), 2);
    assert_eq!(spans.content, Some(5..7));
    let call: Option<Range<usize>> = spans.calls[0].clone();
    let call = call.expect("the call has tokens");
    assert_eq!(call.start, 10, "announced once the name is closed");
    assert!(
        call.end >= 11,
        "the arguments' last tokens belong to the call: {call:?}"
    );
}

#[test]
fn markers_typed_as_ordinary_tokens_are_content_tokens_not_reasoning() {
    let tokens = [
        ("<think>", false),
        ("Hi", false),
        ("</think>", false),
        (" there", false),
    ];
    let spans = spans(&tokens);
    assert_eq!(spans.reasoning, None);
    assert_eq!(spans.reasoning_tokens(), 0);
    assert_eq!(spans.content, Some(0..4));
}

#[test]
fn no_tokens_no_spans() {
    let spans = spans(&[]);
    assert_eq!(spans, TokenSpans::default());
}
