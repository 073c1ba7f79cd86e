//! Whitespace where text meets a reasoning block: content is the output's
//! text outside the blocks byte for byte (only the message's own edges
//! trimmed), and the reasoning is its blocks' texts, the whitespace just
//! inside the markers dropped at the reasoning's own edges and kept where
//! one block ends and the next begins, so two blocks' words do not run
//! together (blocks with no whitespace there join as written). Streams in
//! 1-, 2-, 3- and 7-byte pieces equal the batch, under both presets.

use chat_autoparser::{AssistantMessage, Options, OutputParser, ParserConfig, Policy};

use crate::common::streaming::{report_and_stream, weather_tools};
use crate::common::{corpus_template, shipped_template};

/// The batch message under `policy`, after checking that every chunking
/// gives the same one.
fn message_under(
    policy: Policy,
    parsers: impl Fn(Policy) -> Option<OutputParser>,
    output: &str,
) -> Option<AssistantMessage> {
    let p = parsers(policy)?;
    Some(report_and_stream(&p, output).message)
}

/// The batch message, the same under both presets and every chunking.
fn message(
    parsers: impl Fn(Policy) -> Option<OutputParser>,
    output: &str,
) -> Option<AssistantMessage> {
    let lossless = message_under(Policy::lossless(), &parsers, output)?;
    let compatible = message_under(Policy::compatible(), &parsers, output)?;
    assert_eq!(lossless, compatible, "presets differ: {output:?}");
    Some(lossless)
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
    for (output, content, reasoning) in [
        (
            "<think>a</think>middle <think>b</think> done",
            "middle  done",
            "ab",
        ),
        ("<think>a</think>x\t<think>b</think>\ny", "x\t\ny", "ab"),
        (
            "<think>\na\n</think>\n\nmiddle  <think>\nb\n</think>  done",
            "middle    done",
            "a\nb",
        ),
    ] {
        let m = message(hermes, output).unwrap();
        assert_eq!(fields(&m), (Some(content), reasoning), "{output:?}");
    }
}

#[test]
fn reasoning_blocks_keep_the_whitespace_at_their_join_only() {
    let output = "<|channel>thought\na\n<channel|>mid  <|channel>thought\nb\n<channel|>done";
    let Some(m) = message(gemma, output) else {
        return;
    };
    assert_eq!(fields(&m), (Some("mid  done"), "a\n\nb"));
    // A block of whitespace only adds nothing, and the last block's
    // trailing whitespace is the reasoning's edge.
    let output = "<|channel>thought\na\n<channel|>mid<|channel>thought\n \n<channel|>done";
    let m = message(gemma, output).unwrap();
    assert_eq!(fields(&m), (Some("middone"), "a"));
}

fn hermes_tools(policy: Policy) -> Option<OutputParser> {
    let (_, analysis) = shipped_template("hermes-think");
    let options = Options::default().with_tools(weather_tools());
    Some(
        analysis
            .parser(&ParserConfig::from(options).with_policy(policy))
            .unwrap(),
    )
}

const CALL: &str =
    r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#;

/// Whitespace around a tool section is the text's: the call's markers
/// hold none on their outer sides. Whitespace between calls is the
/// separator's (scaffolding).
#[test]
fn text_around_tool_calls_keeps_its_whitespace() {
    for (output, content) in [
        (format!("a {CALL} b"), "a  b"),
        (format!("a {CALL} {CALL} b"), "a  b"),
        (format!("a\n\n{CALL}\n\nb"), "a\n\n\n\nb"),
        (format!("a{CALL}\n{CALL}  \n b"), "a  \n b"),
    ] {
        let m = message_under(Policy::lossless(), hermes_tools, &output).unwrap();
        assert_eq!(m.content.as_deref(), Some(content), "{output:?}");
        assert!(!m.tool_calls.is_empty(), "{output:?}");
        // `compatible` drops the text after the calls.
        let m = message_under(Policy::compatible(), hermes_tools, &output).unwrap();
        assert_eq!(m.content.as_deref(), Some("a"), "{output:?}");
    }
}
