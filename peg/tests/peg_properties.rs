//! Properties of the PEG engine (`chat_autoparser::peg`), over generated
//! model-like outputs and arbitrary bytes:
//!
//! 1. streaming equals batch: for grammars shaped like `reasoning? content
//!    (tool_call)*` (JSON calls, tagged-argument calls, Python calls; with and
//!    without `cut`/`commit`), any input and any split into chunks, the
//!    stream's events add up to the captures of a full parse (or both fail
//!    with the same error), each capture's text pieces are contiguous and add
//!    up to its span, and every prefix of a matching input parses as "need
//!    more" rather than failing;
//! 2. arbitrary bytes, prefixes and chunkings never panic (grammars,
//!    scanners, normalisation, matcher);
//! 3. the partial-marker rule: no streamed text byte of an `until` capture is
//!    the start of a delimiter that the rest of the input completes, and
//!    streamed text never ends inside a UTF-8 character;
//!
//! plus agreement of the JSON scanner with serde_json, of chunked scanning
//! with whole scanning, and of Python-literal normalisation with the JSON
//! value a literal was printed from.

use std::collections::HashMap;

use chat_autoparser_peg::json::{self as pjson, JsonScanner, Scan};
use chat_autoparser_peg::matcher::{Find, Longest, MultiLiteral};
use chat_autoparser_peg::python::{self as ppy, PyScanner};
use chat_autoparser_peg::*;
use proptest::prelude::*;
use serde_json::Value;

const REASONING: Tag = Tag(1);
const CONTENT: Tag = Tag(2);
const CALL: Tag = Tag(3);
const NAME: Tag = Tag(4);
const ARGS: Tag = Tag(5);
const KEY: Tag = Tag(6);
const VALUE: Tag = Tag(7);
const TAIL: Tag = Tag(8);

const NAMES: [&str; 3] = ["get_weather", "get_weather_v2", "get_time"];

fn ident() -> Expr {
    plus(class(
        ByteSet::range(b'a', b'z')
            .union(ByteSet::range(b'A', b'Z'))
            .union(ByteSet::of(b"_0123456789")),
    ))
}

/// Hermes JSON calls; `commit` after `<think>` and `<tool_call>`, `cut` inside
/// the call object. May fail (a broken call after the commit).
fn hermes_commit() -> Program {
    let name = seq([
        lit("\"name\""),
        cut(),
        ws(),
        lit(":"),
        ws(),
        lit("\""),
        cap(NAME, literals(NAMES)),
        lit("\""),
    ]);
    let args = seq([
        lit("\"arguments\""),
        ws(),
        lit(":"),
        ws(),
        cap(ARGS, json()),
    ]);
    let member = choice([name, args]);
    let object = seq([
        lit("{"),
        ws(),
        member.clone(),
        star(seq([ws(), lit(","), cut(), ws(), member])),
        ws(),
        lit("}"),
    ]);
    let call = seq([
        lit("<tool_call>"),
        commit(),
        ws(),
        cap(CALL, object),
        ws(),
        lit("</tool_call>"),
        ws(),
    ]);
    Grammar::new(seq([
        opt(seq([
            lit("<think>"),
            commit(),
            cap(REASONING, until(["</think>"])),
            choice([lit("</think>"), eoi()]),
            ws(),
        ])),
        cap(CONTENT, until(["<tool_call>"])),
        star(seq([call, cap(CONTENT, until(["<tool_call>"]))])),
        eoi(),
    ]))
    .compile()
    .unwrap()
}

/// Hermes JSON calls that stream and never fail: `commit` after the marker,
/// `recover` sends a call broken after it to tail text from where it broke.
fn hermes_recover() -> Program {
    let name = seq([
        lit("\"name\""),
        ws(),
        lit(":"),
        ws(),
        lit("\""),
        cap(NAME, literals(NAMES)),
        lit("\""),
    ]);
    let args = seq([
        lit("\"arguments\""),
        ws(),
        lit(":"),
        ws(),
        cap(ARGS, json()),
    ]);
    let member = choice([name, args]);
    let object = seq([
        lit("{"),
        ws(),
        member.clone(),
        star(seq([ws(), lit(","), ws(), member])),
        ws(),
        lit("}"),
    ]);
    let body = seq([ws(), cap(CALL, object), ws(), lit("</tool_call>"), ws()]);
    let call = seq([
        lit("<tool_call>"),
        commit(),
        recover(body, cap(CONTENT, until(["<tool_call>"]))),
    ]);
    Grammar::new(seq([
        cap(CONTENT, until(["<tool_call>"])),
        star(seq([call, cap(CONTENT, until(["<tool_call>"]))])),
        eoi(),
    ]))
    .compile()
    .unwrap()
}

/// Hermes JSON calls, pure backtracking, total (a broken call is tail text).
fn hermes_backtrack() -> Program {
    let call = seq([
        lit("<tool_call>"),
        ws(),
        cap(CALL, json_object()),
        ws(),
        lit("</tool_call>"),
        ws(),
    ]);
    Grammar::new(seq([
        opt(seq([
            lit("<think>"),
            cap(REASONING, until(["</think>"])),
            lit("</think>"),
            ws(),
        ])),
        cap(CONTENT, until(["<tool_call>"])),
        star(call),
        cap(TAIL, rest()),
        eoi(),
    ]))
    .compile()
    .unwrap()
}

/// Qwen-coder style tagged arguments, names from a set; `cut` after
/// `<parameter=`, total.
fn tagged() -> Program {
    let param = seq([
        lit("<parameter="),
        cut(),
        cap(KEY, until([">"])),
        lit(">"),
        opt(lit("\n")),
        cap(VALUE, until(["</parameter>"])),
        lit("</parameter>"),
        ws(),
    ]);
    let call = seq([
        lit("<tool_call>"),
        ws(),
        lit("<function="),
        cap(NAME, literals(NAMES)),
        lit(">"),
        ws(),
        cap(ARGS, star(param)),
        lit("</function>"),
        ws(),
        lit("</tool_call>"),
        ws(),
    ]);
    Grammar::new(seq([
        cap(CONTENT, until(["<tool_call>"])),
        star(seq([cap(CALL, call), cap(CONTENT, until(["<tool_call>"]))])),
        choice([eoi(), cap(TAIL, rest())]),
    ]))
    .compile()
    .unwrap()
}

/// Python calls in brackets: `[f(a='x', b=[1, 2]), g()]`, recursive rule for
/// the call list; total.
fn python_calls() -> Program {
    let arg = seq([
        cap(KEY, ident()),
        ws(),
        lit("="),
        ws(),
        cap(VALUE, python()),
    ]);
    let args = opt(seq([arg.clone(), star(seq([ws(), lit(","), ws(), arg]))]));
    let call = seq([
        cap(NAME, literals(NAMES)),
        lit("("),
        ws(),
        cap(ARGS, args),
        ws(),
        opt(lit(",")),
        ws(),
        lit(")"),
    ]);
    Grammar::new(seq([
        cap(CONTENT, until(["["])),
        opt(seq([lit("["), rule("calls"), lit("]")])),
        cap(TAIL, rest()),
        eoi(),
    ]))
    .rule(
        "calls",
        seq([
            cap(CALL, call),
            opt(seq([ws(), lit(","), ws(), rule("calls")])),
        ]),
    )
    .compile()
    .unwrap()
}

/// `<tool_call>` JSON `</tool_call>`, the call captured.
fn tool_call() -> Expr {
    seq([
        lit("<tool_call>"),
        ws(),
        cap(CALL, json()),
        ws(),
        lit("</tool_call>"),
    ])
}

/// Content by lookahead and single characters instead of `until`, and calls
/// whose reasoning must be followed by content (positive lookahead).
fn lookahead() -> Program {
    let text = |stop: &'static str| star(seq([not(lit(stop)), any_char()]));
    let call = tool_call();
    Grammar::new(seq([
        opt(seq([
            lit("<think>"),
            cap(REASONING, text("</think>")),
            lit("</think>"),
            and(any_char()),
        ])),
        cap(CONTENT, text("<tool_call>")),
        star(seq([call, cap(CONTENT, text("<tool_call>"))])),
        cap(TAIL, rest()),
    ]))
    .compile()
    .unwrap()
}

/// Reasoning that goes on past a call marker only when the block closes
/// later: a lookahead for the end marker at every marker, by `until` (whose
/// scans are remembered) or, for `by_chars`, character by character (the
/// reference: nothing remembered). The end marker may have a newline of its
/// own, so two delimiters overlap.
fn closes_later(by_chars: bool) -> Program {
    let end = || seq([opt(lit("\n")), lit("</think>")]);
    let to_end = match by_chars {
        true => star(seq([not(end()), any_char()])),
        false => until(["\n</think>", "</think>"]),
    };
    let stops = || until(["\n</think>", "</think>", "<tool_call>"]);
    let reasoning = seq([
        stops(),
        star(seq([
            not(end()),
            and(seq([to_end, end()])),
            any_char(),
            stops(),
        ])),
    ]);
    let call = tool_call();
    // Blocks anywhere: each looks from past the end the last one found.
    Grammar::new(seq([
        star(choice([
            seq([lit("<think>"), cap(REASONING, reasoning), opt(end())]),
            call,
            cap(
                CONTENT,
                seq([any_char(), until(["<think>", "<tool_call>"])]),
            ),
        ])),
        eoi(),
    ]))
    .compile()
    .unwrap()
}

fn grammars() -> Vec<(&'static str, Program)> {
    vec![
        ("hermes_commit", hermes_commit()),
        ("hermes_backtrack", hermes_backtrack()),
        ("hermes_recover", hermes_recover()),
        ("tagged", tagged()),
        ("python_calls", python_calls()),
        ("lookahead", lookahead()),
        ("closes_later", closes_later(false)),
    ]
}

thread_local! {
    static GRAMMARS: Vec<(&'static str, Program)> = grammars();
}

/// Pieces model outputs are made of: markers, partial markers, whole calls,
/// JSON and Python fragments, multi-byte characters.
const PIECES: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_",
    "</thi",
    "<",
    "</",
    ">",
    "\n",
    " ",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n</tool_call>",
    "<tool_call>{\"arguments\": {}, \"name\": \"get_time\"}</tool_call>",
    "{\"name\": \"get_weather_v2\", \"arguments\": {\"q\": \"</tool_call> \\\"é\\\"\"}}",
    "{\"name\": \"get_w",
    "{\"name\": 1}",
    "{\"name\": \"get_time\", \"arguments\": [tru",
    "{",
    "}",
    "\"",
    "\\",
    "<tool_call>\n<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n</function>\n</tool_call>",
    "<tool_call><function=get_weather><parameter=city>Par<is</parameter><parameter=days>3</parameter></function></tool_call>",
    "<function=",
    "<parameter=",
    "</parameter>",
    "</function>",
    "get_weather",
    "get_time",
    "get",
    "[get_weather(city='Paris', days=3), get_time()]",
    "[get_time(tz=\"UTC\", opts={'a': (1, 2.5e3), 'b': None},)]",
    "[get_weather(q='''a'b''', n=-0x1F)",
    "[",
    "]",
    "(",
    ")",
    "=",
    ",",
    "'Paris'",
    "None",
    "é",
    "😀",
    "hello",
    "x",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(PIECES).prop_map(|s| s.to_string()),
        1 => "[a-z<>/ \"{}é]{0,6}",
    ]
}

fn output() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..24).prop_map(|v| v.concat())
}

fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..12, 1..16)
}

/// Splits `input` into chunks of the given sizes, cycling.
fn chunks<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < input.len() {
        let size = sizes[k % sizes.len()].max(1);
        let end = (at + size).min(input.len());
        out.push(&input[at..end]);
        at = end;
        k += 1;
    }
    out
}

/// Capture tags and the delimiters their `until` stops at.
type TagDelimiters = Vec<(Tag, &'static [&'static str])>;

/// One streamed event and the input length when it was emitted.
type Emitted = (Event, usize);

/// Streams `input` in chunks; the events and the final status or error.
fn stream(
    p: &Program,
    input: &[u8],
    sizes: &[usize],
) -> (Vec<Emitted>, Result<Status, ParseError>) {
    let mut s = p.stream();
    let mut events = Vec::new();
    for chunk in chunks(input, sizes) {
        match s.push(chunk) {
            Ok(feed) => {
                let len = feed.input.len();
                events.extend(feed.events.iter().map(|e| (*e, len)));
            }
            Err(e) => return (events, Err(e)),
        }
    }
    match s.finish() {
        Ok(feed) => {
            events.extend(feed.events.iter().map(|e| (*e, input.len())));
            (events, Ok(feed.status))
        }
        Err(e) => (events, Err(e)),
    }
}

/// Checks the event invariants and that they add up to `full`.
fn check_stream_equals_full(
    name: &str,
    p: &Program,
    input: &[u8],
    sizes: &[usize],
) -> Result<(), TestCaseError> {
    let full = p.parse(input);
    let (events, end) = stream(p, input, sizes);
    match (&full, &end) {
        (Ok(m), Ok(status)) => {
            prop_assert_eq!(*status, Status::Matched { end: m.end }, "{}", name);
        }
        (Err(a), Err(b)) => {
            prop_assert_eq!(a, b, "{}", name);
            return Ok(());
        }
        _ => prop_assert!(false, "{name}: full {full:?} vs stream {end:?}"),
    }
    let Ok(m) = full else { return Ok(()) };
    let mut collector = Collector::default();
    // Per capture: next expected text start, closed.
    let mut next: HashMap<u32, (usize, bool)> = HashMap::new();
    for (e, _) in &events {
        collector.apply(e);
        match *e {
            Event::Open {
                id, start, parent, ..
            } => {
                prop_assert!(!next.contains_key(&id), "{name}: capture {id} opened twice");
                if let Some(p) = parent {
                    prop_assert_eq!(
                        next.get(&p).map(|x| x.1),
                        Some(false),
                        "{}: parent not open",
                        name
                    );
                }
                next.insert(id, (start, false));
            }
            Event::Text { id, start, end, .. } => {
                let at = next.get_mut(&id).expect("text before open");
                prop_assert!(!at.1, "{name}: text after close");
                prop_assert_eq!(at.0, start, "{}: text not contiguous", name);
                prop_assert!(end > start, "{name}: empty text event");
                at.0 = end;
            }
            Event::Close { id, start, end, .. } => {
                let at = next.get_mut(&id).expect("close before open");
                prop_assert!(!at.1, "{name}: closed twice");
                prop_assert_eq!(at.0, end, "{}: text does not reach the end", name);
                prop_assert_eq!(m.captures[id as usize].start, start);
                at.1 = true;
            }
        }
    }
    prop_assert_eq!(&collector.captures, &m.captures, "{}", name);
    prop_assert!(collector.captures.iter().all(|c| c.closed));
    Ok(())
}

/// The partial-marker and UTF-8 rules for streamed text of `until` captures.
fn check_no_partial_marker(
    events: &[Emitted],
    input: &[u8],
    tags: &[(Tag, &[&str])],
) -> Result<(), TestCaseError> {
    for (e, _) in events {
        let Event::Text {
            tag, start, end, ..
        } = *e
        else {
            continue;
        };
        prop_assert!(
            std::str::from_utf8(&input[start..end]).is_ok(),
            "text {start}..{end} splits a character"
        );
        let Some((_, delims)) = tags.iter().find(|(t, _)| *t == tag) else {
            continue;
        };
        for p in start..end {
            for d in *delims {
                prop_assert!(
                    !input[p..].starts_with(d.as_bytes()),
                    "streamed byte {p} of {tag:?} starts delimiter {d:?} (text {start}..{end})"
                );
            }
        }
    }
    Ok(())
}

proptest! {
    // 384 cases unless PROPTEST_CASES says otherwise.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(384),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Property 1: streaming equals the full parse, for every grammar, input
    /// and chunking (and byte-by-byte).
    #[test]
    fn streaming_equals_full_parse(input in output(), sizes in chunk_sizes()) {
        GRAMMARS.with(|gs| {
            for (name, p) in gs {
                check_stream_equals_full(name, p, input.as_bytes(), &sizes)?;
                check_stream_equals_full(name, p, input.as_bytes(), &[1])?;
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    /// A lookahead by `until` repeated at many positions (its remembered
    /// scans) gives the same parse as one made character by character, for
    /// the input and each of its prefixes taken as whole. (Prefixes taken
    /// as partial differ in where each waits, not in what they match.)
    #[test]
    fn remembered_scans_change_no_parse(input in output()) {
        let (remembered, reference) = (closes_later(false), closes_later(true));
        let input = input.as_bytes();
        for cut in 0..=input.len() {
            let prefix = &input[..cut];
            prop_assert_eq!(remembered.parse(prefix), reference.parse(prefix));
        }
    }

    /// Property 1 (partial input): every prefix of an input that matches
    /// parses as "need more" (or as a match), never as an error; an open
    /// capture of a prefix never ends inside a character.
    #[test]
    fn prefixes_of_matching_inputs_need_more(input in output()) {
        GRAMMARS.with(|gs| {
            for (name, p) in gs {
                if p.parse(input.as_bytes()).is_err() {
                    continue;
                }
                for cut in 0..=input.len() {
                    let prefix = &input.as_bytes()[..cut];
                    match p.parse_partial(prefix) {
                        Ok(m) => {
                            for c in m.captures.iter().filter(|c| !c.closed) {
                                prop_assert!(std::str::from_utf8(c.bytes(prefix)).is_ok());
                            }
                        }
                        Err(e) => prop_assert!(false, "{name}: prefix {cut} failed: {e}"),
                    }
                }
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    /// Property 3: the partial-marker rule and whole characters.
    #[test]
    fn streamed_text_never_holds_a_partial_marker(input in output(), sizes in chunk_sizes()) {
        GRAMMARS.with(|gs| {
            let rules: [(&str, TagDelimiters); 3] = [
                ("hermes_commit", vec![(CONTENT, &["<tool_call>"][..]), (REASONING, &["</think>"][..])]),
                ("hermes_backtrack", vec![(CONTENT, &["<tool_call>"][..]), (REASONING, &["</think>"][..])]),
                ("tagged", vec![(CONTENT, &["<tool_call>"][..]), (VALUE, &["</parameter>"][..]), (KEY, &[">"][..])]),
            ];
            for (name, tags) in rules {
                let p = &gs.iter().find(|(n, _)| *n == name).unwrap().1;
                let (events, _) = stream(p, input.as_bytes(), &sizes);
                check_no_partial_marker(&events, input.as_bytes(), &tags)?;
                let (events, _) = stream(p, input.as_bytes(), &[1]);
                check_no_partial_marker(&events, input.as_bytes(), &tags)?;
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    /// Property 2: arbitrary bytes, every prefix and any chunking never panic,
    /// and a stream still agrees with the full parse.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            (output(), prop::collection::vec(any::<u8>(), 0..8), any::<prop::sample::Index>())
                .prop_map(|(s, junk, at)| {
                    let mut b = s.into_bytes();
                    let at = at.index(b.len() + 1);
                    b.splice(at..at, junk);
                    b
                }),
        ],
        sizes in chunk_sizes(),
    ) {
        GRAMMARS.with(|gs| {
            for (name, p) in gs {
                for cut in (0..=bytes.len()).step_by(7) {
                    let _ = p.parse_partial(&bytes[..cut]);
                }
                check_stream_equals_full(name, p, &bytes, &sizes)?;
            }
            Ok::<(), TestCaseError>(())
        })?;
        let _ = pjson::complete(&bytes);
        let _ = pjson::value_len(&bytes);
        let _ = pjson::decode_string(&bytes);
        let _ = ppy::to_json(&bytes);
        let _ = ppy::string_value(&bytes);
        let m = MultiLiteral::new(["<tool_call>", "</think>", "<", "\u{e9}"]);
        for at in 0..=bytes.len() {
            let _ = m.find(&bytes, at, false);
            let _ = m.longest_at(&bytes, at, true);
        }
    }

    /// The JSON scanner accepts exactly what serde_json accepts (for text
    /// without leading whitespace or surrogate escapes).
    #[test]
    fn json_scanner_agrees_with_serde_json(text in "[\\[\\]{}\",:0-9.eE+\\- \\\\uabcfnrtsl]{0,24}") {
        let ours = pjson::value_len(text.as_bytes());
        let theirs = serde_json::from_str::<Value>(&text);
        let starts_ws = text.starts_with([' ', '\t', '\n', '\r']);
        match ours {
            Ok(_) if theirs.as_ref().is_err_and(|e| e.to_string().contains("out of range")) => {}
            Ok(n) => {
                let rest_ws = text[n..].bytes().all(|b| b == b' ');
                prop_assert_eq!(theirs.is_ok(), rest_ws, "{:?}", text);
            }
            Err(_) => prop_assert!(theirs.is_err() || starts_ws, "{:?}", text),
        }
    }

    /// Scanning in pieces gives what scanning at once gives (JSON and Python).
    #[test]
    fn scanners_in_pieces_equal_whole(text in output(), sizes in chunk_sizes()) {
        let bytes = text.as_bytes();
        for start in [0, bytes.iter().position(|&b| b == b'{' || b == b'[').unwrap_or(0)] {
            let bytes = &bytes[start..];
            let whole_json = scan_pieces(&mut JsonScanner::new(), bytes, &[usize::MAX]);
            prop_assert_eq!(scan_pieces(&mut JsonScanner::new(), bytes, &sizes), whole_json);
            let whole_py = scan_pieces(&mut PyScanner::new(), bytes, &[usize::MAX]);
            prop_assert_eq!(scan_pieces(&mut PyScanner::new(), bytes, &sizes), whole_py);
        }
    }

    /// Python literals printed from a JSON value normalise back to it.
    #[test]
    fn python_literals_normalise_to_json(v in json_value(), style in any::<u64>()) {
        let mut text = String::new();
        print_python(&v, style, &mut text);
        let json = ppy::to_json(text.as_bytes()).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let back: Value = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(format!("{json}: {e}")))?;
        prop_assert_eq!(back, v, "{}", text);
        let mut s = PyScanner::new();
        let verdict = s.feed(text.as_bytes());
        prop_assert!(verdict == Scan::Done(text.len()) || (verdict == Scan::NeedMore && s.finish()), "{}", text);
    }

    /// The matcher agrees with brute force on small alphabets.
    #[test]
    fn matcher_agrees_with_brute_force(
        lits in prop::collection::vec("[ab<>]{1,4}", 1..5),
        hay in "[ab<>]{0,16}",
        from in 0usize..17,
    ) {
        let m = MultiLiteral::new(&lits);
        let h = hay.as_bytes();
        let want = (from..=h.len()).find(|&p| lits.iter().any(|l| h[p..].starts_with(l.as_bytes())));
        match m.find(h, from, true) {
            Find::Found(p) => prop_assert_eq!(Some(p), want),
            Find::None => prop_assert_eq!(want, None),
            Find::NeedMore { .. } => prop_assert!(false, "NeedMore on final input"),
        }
        if from <= h.len() {
            let longest = lits.iter().filter(|l| h[from..].starts_with(l.as_bytes())).map(|l| l.len()).max();
            let may_grow = lits.iter().any(|l| l.len() > h.len() - from && l.as_bytes().starts_with(&h[from..]));
            let got = m.longest_at(h, from, false);
            if may_grow {
                prop_assert_eq!(got, Longest::NeedMore);
            } else {
                prop_assert_eq!(got, longest.map_or(Longest::NoMatch, Longest::Match));
            }
        }
    }
}

trait Scanner {
    fn feed(&mut self, piece: &[u8]) -> Scan;
    fn finish(&mut self) -> bool;
}

impl Scanner for JsonScanner {
    fn feed(&mut self, piece: &[u8]) -> Scan {
        JsonScanner::feed(self, piece)
    }
    fn finish(&mut self) -> bool {
        JsonScanner::finish(self)
    }
}

impl Scanner for PyScanner {
    fn feed(&mut self, piece: &[u8]) -> Scan {
        PyScanner::feed(self, piece)
    }
    fn finish(&mut self) -> bool {
        PyScanner::finish(self)
    }
}

/// Feeds `bytes` in pieces: the value's end, the error, or "open" at the end.
fn scan_pieces(s: &mut impl Scanner, bytes: &[u8], sizes: &[usize]) -> String {
    let mut fed = 0;
    for piece in chunks(bytes, sizes) {
        match s.feed(piece) {
            Scan::Done(n) => return format!("done {}", fed + n),
            Scan::Error(e) => return format!("error {e}"),
            Scan::NeedMore => fed += piece.len(),
        }
    }
    format!("open, complete at end: {}", s.finish())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z'\"\\\\\n\té😀 ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z'\"]{0,5}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Prints a JSON value as a Python literal, varying quotes, tuples, trailing
/// commas and spacing with `style`'s bits.
fn print_python(v: &Value, style: u64, out: &mut String) {
    let bit = |k: u32| style.rotate_right(k) & 1 == 1;
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => {
            let q = if bit(1) { '\'' } else { '"' };
            out.push(q);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str(if bit(2) { "\\t" } else { "\\x09" }),
                    c if c == q => {
                        out.push('\\');
                        out.push(c);
                    }
                    'é' if bit(3) => out.push_str("\\u00e9"),
                    c => out.push(c),
                }
            }
            out.push(q);
        }
        Value::Array(items) => {
            let tuple = bit(4) && !items.is_empty();
            out.push(if tuple { '(' } else { '[' });
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(if bit(5) { ", " } else { ",\n " });
                }
                print_python(item, style.rotate_left(7 + k as u32), out);
            }
            if tuple && items.len() == 1 || bit(6) && !items.is_empty() {
                out.push(',');
            }
            out.push(if tuple { ')' } else { ']' });
        }
        Value::Object(map) => {
            out.push('{');
            for (k, (key, value)) in map.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                print_python(
                    &Value::String(key.clone()),
                    style.rotate_left(3 + k as u32),
                    out,
                );
                out.push_str(if bit(7) { ": " } else { ":" });
                print_python(value, style.rotate_left(11 + k as u32), out);
            }
            out.push('}');
        }
    }
}

/// The examples of the issue, exactly: a half marker, a half name, a half
/// character, a JSON prefix.
#[test]
fn partial_input_examples() {
    let p = hermes_commit();
    // `<tool_ca` could be `<tool_call>`: need more, content stops before it.
    let m = p.parse_partial(b"Hello <tool_ca").unwrap();
    assert!(!m.complete);
    assert_eq!(m.captures[0].span(), 0..6);
    // Half a tool name: the name capture is open and empty.
    let m = p
        .parse_partial(b"<tool_call>{\"name\": \"get_weather")
        .unwrap();
    let name = m.captures.iter().find(|c| c.tag == NAME).unwrap();
    assert_eq!((name.start, name.end, name.closed), (21, 21, false));
    // `get_weather` could still be `get_weather_v2`.
    let m = p
        .parse_partial(b"<tool_call>{\"name\": \"get_weather_v")
        .unwrap();
    assert!(!m.captures.iter().find(|c| c.tag == NAME).unwrap().closed);
    let m = p
        .parse_partial(b"<tool_call>{\"name\": \"get_weather\"")
        .unwrap();
    let name = m.captures.iter().find(|c| c.tag == NAME).unwrap();
    assert_eq!((name.start, name.end, name.closed), (21, 32, true));
    // Half a character at the end of reasoning.
    let text = "<think>caf\u{e9}";
    let m = p.parse_partial(&text.as_bytes()[..text.len() - 1]).unwrap();
    assert_eq!(m.captures[0].span(), 7..10);
    // A JSON prefix: how far it got, and a completion.
    let input = b"<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UT";
    let m = p.parse_partial(input).unwrap();
    let args = m.captures.iter().find(|c| c.tag == ARGS).unwrap();
    assert_eq!(args.bytes(input), b"{\"tz\": \"UT");
    assert_eq!(
        pjson::complete(args.bytes(input)).as_deref(),
        Some("{\"tz\": \"UT\"}")
    );
}

/// Streaming a Hermes output in 4-byte chunks: the argument text arrives
/// while the call is still open, up to the last byte pushed.
#[test]
fn arguments_stream_before_the_call_closes() {
    let p = hermes_commit();
    let input = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let start = input.find("{\"city").unwrap();
    let end = input.find("}}").unwrap() + 1;
    let mut s = p.stream();
    let mut args = String::new();
    let mut pushes_with_args = 0;
    for chunk in input.as_bytes().chunks(4) {
        let feed = s.push(chunk).unwrap();
        for e in feed.events {
            if let Event::Text { tag: ARGS, .. } = *e {
                args.push_str(std::str::from_utf8(feed.bytes(e)).unwrap());
            }
        }
        let len = feed.input.len();
        if len > start {
            assert_eq!(args, &input[start..len.min(end)], "after {len} bytes");
            pushes_with_args += 1;
        }
    }
    assert_eq!(args, "{\"city\": \"Paris\"}");
    assert!(pushes_with_args > 4);
}
