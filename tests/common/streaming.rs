//! The batch parse of an output, checked against streaming it.
//!
//! Every dialect test wants the same guarantee next to its exact
//! expectations: pushing the output in small chunks gives the message the
//! batch parse gives. One copy of that loop here instead of one per test file;
//! a test crate includes it with `#[path = "common/streaming.rs"] mod streaming;`.

use chat_autoparser::parser::char_chunks;
use chat_autoparser::{AssistantMessage, OutputParser};

/// `parser.parse(output)`, after asserting that streams in 1-, 4- and
/// 7-byte chunks (cut forward to character boundaries) end with the same
/// message.
pub fn parse_and_stream(parser: &OutputParser, output: &str) -> AssistantMessage {
    let batch = parser.parse(output);
    for size in [1, 4, 7] {
        let mut stream = parser.stream();
        for chunk in char_chunks(output, size) {
            stream.push(chunk);
        }
        stream.finish();
        assert_eq!(stream.message(), batch, "chunks of {size}: {output:?}");
    }
    batch
}
