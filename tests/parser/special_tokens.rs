//! Token ids (issue 27): a marker that is one of the vocabulary's special
//! tokens is a marker only where the model sampled that token. On the
//! shipped hermes-think template, whose `<think>`, `</think>`,
//! `<tool_call>` and `</tool_call>` are special tokens of its models.
//!
//! - the same bytes typed as ordinary tokens are content, byte-exact;
//! - sampled as the special token, they are a call;
//! - streamed in 1-, 2-, 3- and 7-byte pieces (spans cut across pieces
//!   too), the message and the deltas equal the batch parse; a proptest
//!   does the same for random outputs, random span choices and chunkings;
//! - without token information the parser reads characters, as always;
//! - malformed spans are an `Input` error and push nothing.

use std::ops::Range;

use chat_autoparser::message::MessageBuilder;
use chat_autoparser::{AssistantMessage, ErrorKind, Options, OutputParser, ParserConfig};
use proptest::prelude::*;

use crate::common::shipped_template;
use crate::common::streaming::{calls, weather_tools};

const SPECIAL: [&str; 6] = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<|im_start|>",
];

fn parser() -> OutputParser {
    let (_, analysis) = shipped_template("hermes-think");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()))
        .with_special_tokens(SPECIAL.map(String::from).to_vec());
    analysis.parser(&config).unwrap()
}

const CALL: &str = r#"<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>"#;

/// The spans of every occurrence of `markers` in `text`.
fn spans_of(text: &str, markers: &[&str]) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = markers
        .iter()
        .flat_map(|m| text.match_indices(m).map(|(at, m)| at..at + m.len()))
        .collect();
    spans.sort_by_key(|s| s.start);
    spans
}

/// The batch parse with `special`, after checking that streams in 1-, 2-,
/// 3- and 7-byte pieces (on character boundaries) give the same message,
/// and that their deltas add up to it.
fn parse(p: &OutputParser, output: &str, special: &[Range<usize>]) -> AssistantMessage {
    let batch = p.parse_tokens_report(output, special, false).unwrap();
    for size in [1, 2, 3, 7] {
        assert_eq!(
            stream(p, output, special, size),
            batch.message,
            "{size}: {output:?}"
        );
    }
    batch.message
}

/// `output` pushed in pieces of about `size` bytes, each with the spans
/// (or the parts of them) that fall in it.
fn stream(
    p: &OutputParser,
    output: &str,
    special: &[Range<usize>],
    size: usize,
) -> AssistantMessage {
    let mut s = p.stream();
    let mut builder = MessageBuilder::default();
    let mut at = 0;
    while at < output.len() {
        let mut end = (at + size).min(output.len());
        while !output.is_char_boundary(end) {
            end += 1;
        }
        // A special token is one token: it comes whole, in one push.
        if let Some(cut) = special.iter().find(|s| s.start < end && s.end > end) {
            end = cut.end;
        }
        let inside: Vec<Range<usize>> = special
            .iter()
            .filter(|s| s.start >= at && s.end <= end)
            .map(|s| s.start - at..s.end - at)
            .collect();
        for d in s.push_tokens(&output[at..end], &inside).unwrap() {
            builder.apply(&d);
        }
        at = end;
    }
    for d in s.finish() {
        builder.apply(&d);
    }
    for &index in s.withdrawn_calls() {
        builder.withdraw(index);
    }
    assert_eq!(builder.message(), s.message(), "deltas add up: {output:?}");
    s.message()
}

#[test]
fn a_call_typed_as_plain_text_is_content() {
    let p = parser();
    let output = format!("Write it like this: {CALL}");
    let m = parse(&p, &output, &[]);
    assert_eq!(m.content.as_deref(), Some(output.as_str()));
    assert!(m.tool_calls.is_empty());
}

#[test]
fn a_call_sampled_as_special_tokens_is_a_call() {
    let p = parser();
    let output = format!("Checking.\n{CALL}");
    let m = parse(&p, &output, &spans_of(&output, &SPECIAL));
    assert_eq!(m.content.as_deref(), Some("Checking."));
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
}

#[test]
fn plain_markers_beside_sampled_ones_stay_text() {
    let p = parser();
    // The model quotes a call in its reasoning and in its content, then
    // makes one: only the sampled markers count.
    let output = format!(
        "<think>The user typed {CALL} and </think> too.</think>\n\nSee {CALL} — now:\n{CALL}"
    );
    let quoted = output.rfind("<tool_call>").unwrap();
    let mut special = spans_of(&output[..20], &["<think>"]);
    let close = output.match_indices("</think>").nth(1).unwrap().0;
    special.push(close..close + "</think>".len());
    special.extend(
        spans_of(&output[quoted..], &["<tool_call>", "</tool_call>"])
            .into_iter()
            .map(|s| s.start + quoted..s.end + quoted),
    );
    let m = parse(&p, &output, &special);
    assert_eq!(
        m.reasoning_content,
        format!("The user typed {CALL} and </think> too.")
    );
    assert_eq!(
        m.content.as_deref(),
        Some(format!("See {CALL} — now:").as_str())
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
}

#[test]
fn without_token_information_characters_decide() {
    let p = parser();
    let output = format!("Write it like this: {CALL}");
    assert_eq!(
        calls(&p.parse(&output)),
        [("get_weather", r#"{"city": "Paris"}"#)]
    );
    let mut s = p.stream();
    s.push(&output);
    s.finish();
    assert_eq!(s.message().tool_calls.len(), 1);
}

#[test]
fn malformed_spans_are_an_input_error() {
    let p = parser();
    // Past the end, reversed, overlapping, out of order, inside `é`.
    let bad: [&[(usize, usize)]; 5] = [
        &[(0, 99)],
        &[(3, 1)],
        &[(2, 5), (4, 6)],
        &[(5, 6), (0, 1)],
        &[(1, 2)],
    ];
    for bad in bad {
        let bad: Vec<Range<usize>> = bad.iter().map(|&(a, b)| a..b).collect();
        let mut s = p.stream();
        let e = s.push_tokens("aé<tool_call>", &bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input, "{bad:?}");
        // Nothing was pushed.
        s.push("x");
        s.finish();
        assert_eq!(s.message().content.as_deref(), Some("x"), "{bad:?}");
    }
}

/// Pieces of output: markers (sampled or typed), text, a call's JSON.
fn piece() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        (proptest::sample::select(SPECIAL.to_vec()), any::<bool>())
            .prop_map(|(m, sampled)| (m.to_string(), sampled)),
        "[a-z é\n]{0,6}".prop_map(|t| (t, false)),
        Just((
            r#"{"name": "get_weather", "arguments": {"city": "<tool_call>"}}"#.to_string(),
            false
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Stream equals batch at any chunking, whichever markers are sampled.
    #[test]
    fn streaming_equals_batch_with_token_spans(
        pieces in proptest::collection::vec(piece(), 0..12),
        size in 1usize..9,
    ) {
        let p = parser();
        let mut output = String::new();
        let mut special = Vec::new();
        for (text, sampled) in &pieces {
            if *sampled {
                special.push(output.len()..output.len() + text.len());
            }
            output.push_str(text);
        }
        let batch = p.parse_tokens_report(&output, &special, false).unwrap().message;
        prop_assert_eq!(stream(&p, &output, &special, size), batch.clone());
        if special.is_empty() {
            // Nothing sampled: no marker, the output is content (or, for
            // a leading `<think>`-free output, nothing else).
            prop_assert!(batch.tool_calls.is_empty());
            prop_assert_eq!(batch.reasoning_content.as_str(), "");
        }
    }
}
