//! Arbitrary bytes as model output, in fuzzer-chosen chunks, through the
//! parser of every shipped template: no panic, streaming equals batch (under
//! both output-policy presets), and a final message's call arguments are
//! JSON text (under `lossless`: `compatible` salvages broken ones).
//!
//! Input layout: byte 0 picks the template, byte 1 the number of chunk
//! sizes (0-7), the next bytes those sizes (1-32 bytes each); the rest is
//! the output, decoded as lossy UTF-8 (as the CLI reads stdin).

#![no_main]

use chat_autoparser_fuzz::{
    assert_arguments_are_json, assert_streaming_equals_batch, chunks, shipped,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let all = shipped();
    let (Some(&pick), Some(&count)) = (data.first(), data.get(1)) else {
        return;
    };
    let s = &all[pick as usize % all.len()];
    let count = (count % 8) as usize;
    let Some(sizes) = data.get(2..2 + count) else {
        return;
    };
    let sizes: Vec<usize> = sizes.iter().map(|&b| 1 + (b % 32) as usize).collect();
    let output = String::from_utf8_lossy(&data[2 + count..]);

    s.parser.parse_partial(&output);
    s.parser.parse_report(&output, true);
    let chunks = chunks(&output, &sizes);
    let message = assert_streaming_equals_batch(s, &s.parser, &output, &chunks);
    assert_arguments_are_json(s, &output, &message);
    // Salvaged calls keep arguments that are not JSON, by design.
    assert_streaming_equals_batch(s, &s.compatible, &output, &chunks);
});
