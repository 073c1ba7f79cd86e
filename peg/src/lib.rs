//! A small PEG engine for parsing LLM output, complete or streamed.
//!
//! Model output is text with markers (`<think>`, `<tool_call>`,
//! `[TOOL_CALLS]`...), JSON or Python values, and free text in between; it
//! arrives a few bytes at a time and may stop anywhere. This engine parses it
//! with a parsing expression grammar whose building blocks are made for that
//! job, and it knows about partial input: at the end of a chunk it can answer
//! "need more" instead of failing, and a stream reports each part of the
//! result once, when it is final, at a total cost linear in the output.
//!
//! # Building blocks
//!
//! | builder | matches |
//! | --- | --- |
//! | [`lit`] | a byte string (a marker) |
//! | [`literals`] | the longest of several byte strings (a tool name) |
//! | [`class`], [`ws`], [`any_char`] | one byte of a set; JSON whitespace; one UTF-8 character |
//! | [`until`] | text up to the first of several delimiters (or the end) |
//! | [`rest`], [`eoi`] | everything left; the end of the input |
//! | [`json()`], [`json_object`], [`json_string`] | one JSON value ([`json`](mod@json) module) |
//! | [`python()`] | one Python literal ([`python`](mod@python) module, with normalisation to JSON) |
//! | [`seq`], [`choice`], [`opt`], [`star`], [`plus`], [`repeat`] | PEG sequence, ordered choice, repetition |
//! | [`and`], [`not`] | lookaheads |
//! | [`cut`], [`commit`] | give up pending alternatives (what makes streaming start early) |
//! | [`cap`] | a capture: the span of an expression under a caller-defined [`Tag`] |
//! | [`recover`] | error recovery: on failure, keep what was matched and go on with a fallback |
//! | [`rule`] | a named rule of the [`Grammar`] (rules may recurse) |
//!
//! # Example
//!
//! A Hermes-style output: optional reasoning, content, then tool calls.
//!
//! ```
//! use chat_autoparser_peg::*;
//!
//! const REASONING: Tag = Tag(0);
//! const CONTENT: Tag = Tag(1);
//! const TOOL_NAME: Tag = Tag(2);
//! const ARGS: Tag = Tag(3);
//!
//! let name = seq([lit("\"name\""), ws(), lit(":"), ws(), lit("\""),
//!                 cap(TOOL_NAME, literals(["get_weather", "get_time"])), lit("\"")]);
//! let args = seq([lit("\"arguments\""), ws(), lit(":"), ws(), cap(ARGS, json_object())]);
//! let call = seq([
//!     lit("<tool_call>"), commit(), ws(),
//!     lit("{"), ws(), name, ws(), lit(","), ws(), args, ws(), lit("}"),
//!     ws(), lit("</tool_call>"), ws(),
//! ]);
//! let grammar = Grammar::new(seq([
//!     opt(seq([lit("<think>"), commit(), cap(REASONING, until(["</think>"])), lit("</think>"), ws()])),
//!     cap(CONTENT, until(["<tool_call>"])),
//!     star(call),
//!     eoi(),
//! ]));
//! let program = grammar.compile().unwrap();
//!
//! let output = "<think>Rain?</think>\n\nLet me check.<tool_call>\n\
//!               {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
//!
//! // Whole input.
//! let m = program.parse(output.as_bytes()).unwrap();
//! let parts: Vec<(Tag, &str)> = m.captures.iter().map(|c| (c.tag, &output[c.span()])).collect();
//! assert_eq!(parts, [
//!     (REASONING, "Rain?"),
//!     (CONTENT, "Let me check."),
//!     (TOOL_NAME, "get_weather"),
//!     (ARGS, r#"{"city": "Paris"}"#),
//! ]);
//!
//! // The same output streamed in 4-byte chunks: the events add up to the
//! // same captures, and text arrives as soon as it is final.
//! let mut stream = program.stream();
//! let mut args_text = String::new();
//! let mut collector = Collector::default();
//! for chunk in output.as_bytes().chunks(4) {
//!     let feed = stream.push(chunk).unwrap();
//!     for event in feed.events {
//!         collector.apply(event);
//!         if let Event::Text { tag: ARGS, .. } = event {
//!             args_text.push_str(std::str::from_utf8(feed.bytes(event)).unwrap());
//!         }
//!     }
//! }
//! for event in stream.finish().unwrap().events {
//!     collector.apply(event);
//! }
//! assert_eq!(collector.captures, m.captures);
//! assert_eq!(args_text, r#"{"city": "Paris"}"#);
//!
//! // A prefix: the parse needs more, and says how far it got.
//! let cut_at = output.find("get_wea").unwrap() + 7;
//! let m = program.parse_partial(&output.as_bytes()[..cut_at]).unwrap();
//! assert!(!m.complete);
//! assert!(m.captures.iter().all(|c| c.tag != TOOL_NAME || !c.closed)); // half a name is no name
//! ```
//!
//! # Partial input
//!
//! Every instruction decides either from the bytes it has or, when those are
//! not enough and the input is not final, by suspending the parse ("need
//! more"). In particular:
//!
//! - a literal whose remaining bytes are a prefix of it (`<tool_ca` for
//!   `<tool_call>`) waits; it is never taken as text;
//! - [`until`] stops before the longest suffix of the input that could begin a
//!   delimiter, so the text it has consumed never includes a half marker;
//! - [`literals`] waits while a longer alternative is still possible, so a
//!   half tool name is never matched as a shorter one;
//! - [`any_char`] waits for the rest of a character, and streamed text never
//!   ends inside a UTF-8 character;
//! - [`json()`] and [`python()`] keep their scanner's state, so a value fed in
//!   pieces costs what it costs at once, and a prefix of a value is reported
//!   as how far it got ([`json::JsonScanner`], [`json::complete`]).
//!
//! # Streaming: what is committed, when, and why it is final
//!
//! [`Stream::push`] appends a chunk and resumes the machine where it
//! suspended; it returns the [`Event`]s that became final. The machine
//! ([`machine`](mod@machine) module) is a backtracking PEG machine whose only way back is
//! a *live* backtrack entry: an ordered choice, option, repetition step or
//! lookahead that may still try another way. Hence:
//!
//! 1. **Committed captures.** Capture openings and closings logged before the
//!    oldest live entry was pushed are committed. A failure unwinds only to a
//!    live entry and truncates the log to that entry's length, which is at
//!    least the oldest one's; new entries save longer lengths. So no future
//!    step can remove them. They are reported once, in log order.
//! 2. **Committed text.** The position never goes below the *frontier*: the
//!    oldest live entry's position (or the current one when there is none),
//!    because positions are only restored from live entries and every entry
//!    saves a position at or after the older ones'. So every open committed
//!    capture will end at or after the frontier, and its bytes up to the
//!    frontier (moved back off a cut UTF-8 character) are reported as
//!    [`Event::Text`]. Partial markers are never in them: the instruction
//!    looking at a partial marker has not consumed it.
//! 3. **When.** Live entries die when their construct succeeds (a choice
//!    commits, an option or repetition step completes) or when the grammar
//!    says so: [`cut`] (this alternative) or [`commit`] (everything pending).
//!    A grammar that writes `lit("<tool_call>"), commit()` streams a call's
//!    arguments as they arrive; without it, they are committed only when the
//!    surrounding repetition step completes. Text under an open choice is
//!    held back until the choice is decided.
//!
//! For a stream that ends in a match, the events, for any split of the input
//! into chunks, add up to exactly the captures of [`Program::parse`] on the
//! whole input (same ids, spans and parents; property-tested in
//! `tests/peg_properties.rs`). A parse that fails reports an error (with the
//! furthest failure offset); events already reported stay reported, so a
//! grammar meant for streaming should not fail after a `commit` (give it a
//! lenient fallback inside the committed part, e.g. `choice([call, garbage])`).
//!
//! # Cost
//!
//! A push costs the bytes it adds, plus what the resumed instruction
//! re-checks (at most the longest delimiter or literal it was matching),
//! plus the events. So `k` pushes of `N` bytes in total cost
//! O(N + k·L) where `L` is the longest marker, for grammars made of markers,
//! `until` text, JSON and Python values, in addition to whatever backtracking
//! the grammar itself does on the whole input. A push that only advances the
//! suspended text instruction (the common case) touches nothing else; one
//! that runs the machine also scans the backtrack stack for the oldest live
//! entry (its depth is bounded by the grammar's nesting and the depth limit). The capture log is trimmed as
//! it is committed. The input is kept whole unless the caller says how far
//! it has read it ([`Stream::release`]): then the stream drops the input
//! before the oldest position it can still read (the oldest live backtrack
//! entry, each open capture's start or, for [`Stream::text_only`] tags, its
//! unsent text), in large pieces, so it keeps O(what is pending), not
//! O(input). Offsets stay absolute.
//!
//! An [`until`] remembers where its last scan stopped: run again from a
//! position between that scan's start and the delimiter it found, it
//! stops there at once (the leftmost delimiter from the start is the
//! leftmost from any later position up to it). So a lookahead for a
//! closing marker made at every one of many positions before it
//! (`and(seq([until(["</think>"]), lit("</think>")]))` at each call
//! marker in a reasoning block) costs one scan, not one per position.
//!
//! # Limits
//!
//! No input makes the engine panic. JSON and Python values and rule
//! recursion are bounded by [`Grammar::max_depth`] (default 128): a deeper
//! value does not match, deeper recursion ends the parse with
//! [`ParseErrorKind::TooDeep`]. Repetitions stop on a step that consumes
//! nothing. The engine memoises nothing else: a grammar with nested
//! ordered choices over long text can backtrack a lot; the grammars above
//! do not.
#![deny(missing_docs)]

pub mod bytes;
pub mod capture;
pub mod compile;
pub mod grammar;
pub mod json;
pub mod machine;
pub mod matcher;
pub mod python;
// Public for the crates built on the engine (chat-autoparser's messages and
// deltas, its parser bench), which append pushes the way a stream does.
#[doc(hidden)]
pub mod short;
pub mod stream;
pub mod utf8;

pub use bytes::ByteSet;
pub use capture::{Capture, Collector, Event, Match, Tag};
pub use compile::{GrammarError, Program};
pub use grammar::{
    and, any_char, cap, choice, class, commit, cut, empty, eoi, fail, json, json_object,
    json_string, lit, literals, names, not, opt, plus, python, recover, repeat, rest, rule, seq,
    star, until, ws, Expr, Grammar,
};
pub use machine::{ParseError, ParseErrorKind};
pub use stream::{Feed, Status, Stream};
