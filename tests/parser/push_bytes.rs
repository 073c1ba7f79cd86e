//! Output as bytes (`OutputStream::push_bytes`, `OutputParser::parse_bytes_report`)
//! and minted call ids (`ParserConfig::call_ids`), over the shipped
//! `templates/hermes-think.jinja`.
//!
//! - exact cases: a character cut across pushes, invalid bytes, an output
//!   ending inside a character, text pushed after a cut character;
//! - proptest: byte strings built from the template's markers, characters of
//!   every UTF-8 length, their cut halves and random bytes, pushed in random
//!   splits, give the message of one `String::from_utf8_lossy` of the whole,
//!   parsed; the deltas add up to it;
//! - call ids: `call_` + 24 letters and digits where the model wrote none,
//!   the same in the deltas and the message, repeatable with the same seed;
//!   where the format has ids of its own (`templates/mistral-tool-calls.jinja`)
//!   the model's id is kept, and each call's id is sent once.

use crate::common::streaming;
use chat_autoparser::Options;

use chat_autoparser::message::MessageBuilder;
use chat_autoparser::{OutputParser, ParserConfig};
use proptest::prelude::*;
use streaming::{analyze, weather_tools};

fn parser(call_ids: Option<u64>) -> OutputParser {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    analyze(&source)
        .parser(
            &ParserConfig::from(Options::default().with_tools(weather_tools()))
                .with_call_ids(call_ids),
        )
        .unwrap()
}

/// Pushes `pieces` as bytes, finishes; checks the deltas add up to the
/// message, which it returns.
fn stream_bytes(parser: &OutputParser, pieces: &[&[u8]]) -> chat_autoparser::AssistantMessage {
    let mut stream = parser.stream();
    let mut builder = MessageBuilder::default();
    for piece in pieces {
        for d in stream.push_bytes(piece) {
            builder.apply(&d);
        }
    }
    for d in stream.finish() {
        builder.apply(&d);
    }
    for &index in stream.withdrawn_calls() {
        builder.withdraw(index);
    }
    assert_eq!(
        builder.message(),
        stream.message(),
        "deltas add up to the message: {pieces:?}"
    );
    stream.message()
}

#[test]
fn a_character_cut_across_pushes_is_whole() {
    let p = parser(None);
    // "é" is C3 A9, "😀" is F0 9F 98 80.
    let m = stream_bytes(&p, &[b"caf\xC3", b"\xA9 \xF0\x9F", b"\x98", b"\x80!"]);
    assert_eq!(m.content.as_deref(), Some("café 😀!"));
}

#[test]
fn invalid_bytes_become_replacement_characters() {
    let p = parser(None);
    let m = stream_bytes(&p, &[b"a\xFFb\xC3(c"]);
    assert_eq!(m.content.as_deref(), Some("a\u{FFFD}b\u{FFFD}(c"));
}

#[test]
fn an_output_ending_inside_a_character_ends_with_one_replacement() {
    let p = parser(None);
    let m = stream_bytes(&p, &[b"ok \xE2\x82"]);
    assert_eq!(m.content.as_deref(), Some("ok \u{FFFD}"));
    assert_eq!(p.parse_bytes_report(b"ok \xE2\x82", false).message, m);
}

#[test]
fn text_after_a_cut_character_replaces_it() {
    let p = parser(None);
    let mut stream = p.stream();
    stream.push_bytes(b"x\xE2\x82");
    stream.push("y");
    stream.finish();
    assert_eq!(stream.message().content.as_deref(), Some("x\u{FFFD}y"));
}

#[test]
fn bytes_reach_calls_and_reasoning() {
    let p = parser(None);
    let output = "<think>Pluie à Paris ?</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>";
    let pieces: Vec<&[u8]> = output.as_bytes().chunks(1).collect();
    let m = stream_bytes(&p, &pieces);
    assert_eq!(m.reasoning_content, "Pluie à Paris ?");
    assert_eq!(m.tool_calls[0].function.arguments, "{\"city\": \"Zürich\"}");
    assert_eq!(m, p.parse(output));
}

#[test]
fn minted_call_ids_are_openai_shaped_and_repeatable() {
    let output = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n\
                  <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
    let p = parser(Some(42));
    let mut stream = p.stream();
    let mut announced = Vec::new();
    for chunk in output.as_bytes().chunks(5) {
        for d in stream.push_bytes(chunk) {
            announced.extend(
                d.tool_calls
                    .iter()
                    .filter(|c| c.kind.is_some())
                    .map(|c| c.id.clone()),
            );
        }
    }
    stream.finish();
    let ids: Vec<String> = stream
        .message()
        .tool_calls
        .iter()
        .map(|c| c.id.clone().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        assert_eq!(id.len(), 29, "{id}");
        assert!(
            id.starts_with("call_") && id[5..].bytes().all(|b| b.is_ascii_alphanumeric()),
            "{id}"
        );
    }
    // Each call's first delta carries its id.
    assert_eq!(announced, ids.iter().cloned().map(Some).collect::<Vec<_>>());
    // The same seed and stream number give the same ids; the parser's next stream others.
    let again: Vec<Option<String>> = parser(Some(42))
        .parse(output)
        .tool_calls
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(again, ids.iter().cloned().map(Some).collect::<Vec<_>>());
    let next: Vec<Option<String>> = p
        .parse(output)
        .tool_calls
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_ne!(next[0].as_deref(), Some(ids[0].as_str()));
    // Without the option, ids stay null.
    assert_eq!(parser(None).parse(output).tool_calls[0].id, None);
}

#[test]
fn a_model_written_id_is_kept_and_every_id_is_sent_once() {
    // Mistral's JSON calls carry an "id" member after the arguments: the
    // model's id is the one its template reads back, and a call without
    // one gets a minted id at the end of the output.
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/mistral-tool-calls.jinja"
    ))
    .unwrap();
    let p = analyze(&source)
        .parser(
            &ParserConfig::from(Options::default().with_tools(weather_tools())).with_call_ids(42),
        )
        .unwrap();
    let output = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123XYZ\"}, \
                  {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]";
    let mut stream = p.stream();
    let mut sent: Vec<(usize, String)> = Vec::new();
    let mut deltas = Vec::new();
    for chunk in output.as_bytes().chunks(3) {
        deltas.extend(stream.push_bytes(chunk));
    }
    deltas.extend(stream.finish());
    for d in &deltas {
        sent.extend(
            d.tool_calls
                .iter()
                .filter_map(|c| Some((c.index, c.id.clone()?))),
        );
    }
    let ids: Vec<String> = stream
        .message()
        .tool_calls
        .iter()
        .map(|c| c.id.clone().unwrap())
        .collect();
    assert_eq!(ids[0], "abc123XYZ");
    assert!(ids[1].starts_with("call_") && ids[1].len() == 29, "{ids:?}");
    // One id per call in the deltas, the message's: a client that
    // concatenates what it is sent rebuilds exactly these.
    assert_eq!(sent, vec![(0, ids[0].clone()), (1, ids[1].clone())]);
    let fresh = analyze(&source)
        .parser(
            &ParserConfig::from(Options::default().with_tools(weather_tools())).with_call_ids(42),
        )
        .unwrap();
    assert_eq!(fresh.parse(output), stream.message());
}

/// Pieces that make interesting byte strings: markers, characters of every
/// UTF-8 length, their cut halves, lone continuation and invalid bytes.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let fixed: Vec<&'static [u8]> = vec![
        b"<think>",
        b"</think>",
        b"<tool_call>\n",
        b"\n</tool_call>",
        b"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
        b"\"}}",
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
        b"\xC3",
        b"\xE2\x82",
        b"\xF0\x9F\x98",
        b"\x80",
        b"\xBF",
        b"\xFF",
        b"\xC0\xAF",
        b"\xED\xA0\x80",
        b"Paris",
        b" ",
        b"\n",
    ];
    prop_oneof![
        3 => proptest::sample::select(fixed).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..6),
    ]
}

proptest! {
    #[test]
    fn random_bytes_in_random_splits_equal_one_lossy_decode(
        pieces in proptest::collection::vec(piece(), 0..24),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let p = parser(None);
        let bytes: Vec<u8> = pieces.concat();
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        at.sort_unstable();
        let mut split: Vec<&[u8]> = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([bytes.len()]) {
            split.push(&bytes[from..to]);
            from = to;
        }
        let expected = p.parse(&String::from_utf8_lossy(&bytes));
        prop_assert_eq!(stream_bytes(&p, &split), expected.clone());
        prop_assert_eq!(p.parse_bytes_report(&bytes, false).message, expected);
    }
}
