//! Whitespace where text meets a reasoning block: content is the output's
//! text outside the blocks byte for byte (only the message's own edges
//! trimmed), and each reasoning block is its text without the whitespace
//! just inside its markers, the first block as every later one. Streams in
//! 1-, 2-, 3- and 7-byte pieces equal the batch, under both presets.

use chat_autoparser::parser::char_chunks;
use chat_autoparser::{AssistantMessage, Options, OutputParser, ParserConfig, Policy};

use crate::common::{corpus_template, shipped_template};

/// The batch message, after checking that every chunking and both presets
/// give the same one.
fn message(
    parsers: impl Fn(Policy) -> Option<OutputParser>,
    output: &str,
) -> Option<AssistantMessage> {
    let mut messages = Vec::new();
    for policy in [Policy::lossless(), Policy::compatible()] {
        let p = parsers(policy)?;
        let batch = p.parse_report(output, false).message;
        for size in [1, 2, 3, 7] {
            let mut stream = p.stream();
            for piece in char_chunks(output, size) {
                stream.push(piece);
            }
            stream.finish();
            assert_eq!(stream.message(), batch, "{size}: {output:?}");
        }
        messages.push(batch);
    }
    assert_eq!(messages[0], messages[1], "presets differ: {output:?}");
    messages.pop()
}

fn hermes(policy: Policy) -> Option<OutputParser> {
    let (_, analysis) = shipped_template("hermes-think");
    let config = ParserConfig::from(Options::default()).with_policy(policy);
    Some(analysis.parser(&config).unwrap())
}

fn gemma(policy: Policy) -> Option<OutputParser> {
    let analysis = corpus_template("google-gemma-4-31B-it")?.analyze().unwrap();
    let mut options = Options::default();
    options.enable_thinking = Some(true);
    let config = ParserConfig::from(options).with_policy(policy);
    Some(analysis.parser(&config).unwrap())
}

fn fields(m: &AssistantMessage) -> (Option<&str>, &str) {
    (m.content.as_deref(), &m.reasoning_content)
}

#[test]
fn text_between_reasoning_blocks_keeps_its_whitespace() {
    for (output, content) in [
        (
            "<think>a</think>middle <think>b</think> done",
            "middle  done",
        ),
        ("<think>a</think>x\t<think>b</think>\ny", "x\t\ny"),
        (
            "<think>\na\n</think>\n\nmiddle  <think>\nb\n</think>  done",
            "middle    done",
        ),
    ] {
        let m = message(hermes, output).unwrap();
        assert_eq!(fields(&m), (Some(content), "ab"), "{output:?}");
    }
}

#[test]
fn every_reasoning_block_drops_the_whitespace_inside_its_markers() {
    let output = "<|channel>thought\na\n<channel|>mid  <|channel>thought\nb\n<channel|>done";
    let Some(m) = message(gemma, output) else {
        return;
    };
    assert_eq!(fields(&m), (Some("mid  done"), "ab"));
}
