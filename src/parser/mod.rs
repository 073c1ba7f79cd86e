//! The output parser: an [`Analysis`](crate::Analysis) plus the request's options become a
//! parser that decodes raw model output into an [`AssistantMessage`],
//! complete or streamed.
//!
//! ```
//! use chat_autoparser::{ChatTemplate, Options, TemplateConfig};
//! use serde_json::json;
//!
//! let source = std::fs::read_to_string("templates/hermes-think.jinja").unwrap();
//! let analysis = ChatTemplate::new(&source, &TemplateConfig::default())?.analyze()?;
//! let tools = vec![json!({"type": "function", "function": {"name": "get_weather",
//!     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})];
//! let parser = analysis.parser(&Options::default().with_tools(tools).into())?;
//!
//! let output = "<think>Rain?</think>\n\nLet me check.\n<tool_call>\n\
//!               {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
//! let msg = parser.parse(output);
//! assert_eq!(msg.reasoning_content, "Rain?");
//! assert_eq!(msg.content.as_deref(), Some("Let me check."));
//! assert_eq!(msg.tool_calls[0].function.name, "get_weather");
//! assert_eq!(msg.tool_calls[0].function.arguments, r#"{"city": "Paris"}"#);
//!
//! // Streamed in 3-byte chunks, the deltas add up to the same message.
//! let mut stream = parser.stream();
//! for chunk in output.as_bytes().chunks(3) {
//!     let _deltas = stream.push(std::str::from_utf8(chunk).unwrap());
//! }
//! stream.finish();
//! assert_eq!(stream.message(), msg);
//! # Ok::<(), chat_autoparser::Error>(())
//! ```
//!
//! Modules: `cache` (parsers kept for requests of the same shape), `generator` (the PEG grammar the parser runs, a module per part of the
//! grammar: body, reasoning, tool sections, calls, heads, JSON calls,
//! tagged and Python arguments, nested values, names, recovery),
//! `sections` (scaffolding between a turn's sections), `marker` (raw
//! markers as expressions), `tags` (what each capture holds), `decode`
//! (captures to deltas), `sink` (where deltas are written, reusing the
//! caller's buffer), `schema` (argument types), `notation` (nested values
//! in a template's own notation), `elements` (objects and lists written as
//! nested elements), `json_check` (arguments a server can read), `call_id`
//! (ids for calls written without one), `policy` (what is done with output
//! off script), `prefill` (what a continued message already holds; the
//! prompt it continues is `crate::prompt`'s), `stream`,
//! `tokens` (which pushed tokens wrote each part), `diagnostic`,
//! `vocabulary` (the words a label or attribute may hold and still be
//! scaffolding).
//!
//! Invariants (`docs/architecture.md`): parsing never panics and never loses text (what
//! is not a well-formed call stays content); streaming equals batch for any
//! chunking; a stream costs time linear in the output.

mod cache;
mod call_id;
mod decode;
mod diagnostic;
mod elements;
mod generator;
#[cfg(test)]
mod grammar_golden;
mod json_check;
mod marker;
mod notation;
mod policy;
mod prefill;
mod schema;
mod sections;
mod sink;
mod stream;
mod tags;
mod tokens;
mod vocabulary;

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::message::AssistantMessage;
use crate::protocol::{Options, Protocol, Tool};
use chat_autoparser_peg::Program;

pub use crate::protocol::{Start, ToolChoice};
pub(crate) use cache::ParserCache;
pub use decode::LONGEST_CALL;
pub use diagnostic::{Diagnostic, DiagnosticKind};
pub use policy::{
    CallsInReasoning, ForeignMarkers, MalformedSection, Policy, TextAfterCalls,
    TextOutsideChannels, UnclosedCall, UnknownTool, POLICY_FIELDS,
};
pub use prefill::{Prefill, PrefillPart};
pub use schema::ToolSchemas;
pub use stream::{char_chunks, OutputStream};
pub use tokens::TokenSpans;

// How bare nested values are written in tagged arguments: the grammar writes the same.

/// The piece size a batch parse pushes its output in (see
/// `OutputParser::report`); outputs up to this size are one push.
const BATCH_PIECE: usize = 64 << 10;

/// What to do with reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReasoningFormat {
    /// Reasoning goes to `reasoning_content`.
    #[default]
    Extract,
    /// Reasoning stays in the content, markers included.
    Inline,
}

/// The request's options that shape parsing: what the model may write
/// (the [`Options`] the grammar exports take too) and how to report it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ParserConfig {
    /// Tools, `tool_choice`, parallel calls, thinking, the prompt the
    /// output continues, the response schema. Tool schemas type tagged
    /// argument values; `tool_choice: none` leaves tool-call text in the
    /// content; with parallel calls off, calls after the first are
    /// reported (and kept).
    pub options: Options,
    /// Extract reasoning or leave it inline.
    pub reasoning: ReasoningFormat,
    /// The assistant prefill the output continues (`continue_final_message`):
    /// the message starts with its text, and the continued field keeps the
    /// output's leading whitespace.
    pub prefill: Option<Prefill>,
    /// Mint OpenAI-style ids (`call_` + 24 letters and digits) for calls the
    /// model wrote without one, from this seed: the same seed gives the same
    /// ids; a server wanting ids unique across requests passes a fresh one.
    /// A call's first delta carries its id, except in formats where the
    /// model writes ids of its own: there a call that ends without one gets
    /// its minted id at the end of the output. `None` (the default) leaves
    /// such ids `null`.
    pub call_ids: Option<u64>,
    /// What to do with output written off script (`docs/policies.md`);
    /// lossless by default.
    pub policy: Policy,
    /// The vocabulary's special tokens (texts such as `<tool_call>`). A marker holding one is a marker only where the model
    /// sampled that token, once the output says where it did
    /// ([`OutputStream::push_tokens`],
    /// [`OutputParser::parse_tokens_report`]): the same characters made of
    /// ordinary tokens are content. Output pushed as text alone is read by
    /// its characters, as without this list.
    pub special_tokens: Vec<String>,
}

impl From<Options> for ParserConfig {
    fn from(options: Options) -> Self {
        ParserConfig {
            options,
            ..Default::default()
        }
    }
}

// What the model may write comes in through `From<Options>`.
setters!(ParserConfig {
    /// Extracts reasoning or leaves it inline.
    with_reasoning => reasoning: ReasoningFormat,
    /// Sets the output policy.
    with_policy => policy: Policy,
    /// Sets the vocabulary's special tokens.
    with_special_tokens => special_tokens: Vec<String>;
    optional:
    /// Sets the assistant prefill the output continues.
    with_prefill => prefill: Prefill,
    /// Mints call ids from this seed.
    with_call_ids => call_ids: u64,
});

/// A parser for one template and request shape; cheap to share.
#[derive(Debug, Clone)]
pub struct OutputParser {
    program: Program,
    schemas: Arc<ToolSchemas>,
    parallel: bool,
    /// Content that precedes the output (inline reasoning opened by the
    /// prompt), written where the grammar marks it (`tags::OPENED`).
    prefix: String,
    /// Reasoning the prompt wrote for the model (`start::prompt_reasoning`).
    reasoning_prefix: String,
    prefill: Prefill,
    start: Start,
    /// How nested argument values are written (see `notation`, `elements`).
    nested: decode::Nested,
    ids: Option<call_id::CallIdSource>,
    policy: Policy,
    /// A channel format (`Some`), and whether the prompt opened a
    /// channel's message.
    channels: Option<bool>,
    /// The stream of the last batch parse, reset for the next.
    spare: Spare,
}

/// A parser's spare stream: a batch parse takes it (or makes one, when
/// another thread holds it), resets it and puts it back, so a server's
/// short parses do not build and drop a stream each (about a tenth of a
/// short parse's instructions, and most of its allocations). Held behind a
/// lock that a parse only tries, never waits for; a clone of the parser
/// starts without one. Only a stream that read at most [`SPARE_OUTPUT`]
/// bytes is kept, so a parser holds no long output's buffers.
#[derive(Default)]
struct Spare(Mutex<Option<Box<OutputStream>>>);

/// The longest output whose stream a parser keeps ([`Spare`]).
const SPARE_OUTPUT: usize = 16 << 10;

impl Spare {
    fn take(&self) -> Option<Box<OutputStream>> {
        self.0.try_lock().ok()?.take()
    }

    fn put(&self, stream: Box<OutputStream>) {
        if stream.pushed() > SPARE_OUTPUT {
            return;
        }
        if let Ok(mut slot) = self.0.try_lock() {
            *slot = Some(stream);
        }
    }
}

impl Clone for Spare {
    fn clone(&self) -> Spare {
        Spare::default()
    }
}

impl std::fmt::Debug for Spare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spare")
    }
}

/// A parse with the problems found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The message.
    pub message: AssistantMessage,
    /// Problems, in output order (empty for well-formed output).
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    /// What `stream` read: its message and diagnostics.
    fn of(stream: &mut OutputStream) -> Parsed {
        let diagnostics = stream.diagnostics().to_vec();
        Parsed {
            message: stream.take_message(),
            diagnostics,
        }
    }
}

/// Everything a parser's program is compiled from but the request's names
/// (see [`Build::code_shape`]): builds of one shape share one compile.
#[derive(Clone, PartialEq)]
struct CodeShape {
    /// The protocol without its tools (their names are the program's name
    /// sets; nothing else of them is read) and warnings.
    protocol: Protocol,
    start: Start,
    extract: bool,
    json_response: bool,
    policy: Policy,
    special_tokens: Vec<String>,
    /// No names; any name may be called; the names a call must have are
    /// all the request's.
    names: (bool, bool, bool),
}

/// A compiled program without its name sets, and what the parser reads
/// beside it: all of it from the [`CodeShape`], so builds of one shape
/// share it.
#[derive(Debug, Clone)]
struct Code {
    program: Program,
    /// How nested argument values are written (see `notation`, `elements`).
    nested: decode::Nested,
    /// The formats' calls hold ids the model writes.
    model_writes_ids: bool,
}

/// What the grammar reads of the parser's outline
/// ([`ParserOutline`](crate::protocol::outline::ParserOutline)): the
/// notations of nested argument values (each gets a grammar rule, the first
/// decodes), the turn's section headers, the markers of each format's
/// tool section and the texts the scaffolding's words come from.
struct OutlineParts<'o> {
    notations: Vec<crate::protocol::Notation>,
    elements: Vec<crate::protocol::outline::Elements>,
    headers: Vec<sections::HeaderMarks<'o>>,
    sections: Vec<crate::protocol::outline::SectionMarks<'o>>,
    calls: &'o [crate::protocol::outline::ParserCall],
    foreign: &'o crate::protocol::outline::Foreign,
    scaffolding: &'o str,
    part_opener: Option<&'o str>,
}

impl<'o> OutlineParts<'o> {
    fn of(outline: &'o crate::protocol::outline::ParserOutline) -> OutlineParts<'o> {
        OutlineParts {
            notations: outline.notations(),
            elements: outline.elements(),
            headers: outline
                .header_markers()
                .map(|(open, close)| sections::HeaderMarks { open, close })
                .collect(),
            sections: outline.section_marks().collect(),
            calls: &outline.calls,
            foreign: &outline.foreign,
            scaffolding: &outline.scaffolding,
            part_opener: outline.part_opener.as_deref(),
        }
    }
}

/// What a parser is built from besides the protocol: the decisions of
/// `from_protocol`, made once and read by each step of a build (the
/// program's compile, its names, the rest of the parser).
struct Build {
    start: Start,
    extract: bool,
    /// The request's function names.
    names: Vec<String>,
    /// A call may name any function (`unknown_tool: call`).
    any_name: bool,
    /// The names a call must have (empty: any).
    checked: Vec<String>,
    /// The names as the program's name sets, when it does not hold them
    /// (see [`generator::NameSets`]).
    name_sets: Option<generator::NameSets>,
}

impl Build {
    fn new(protocol: &Protocol, config: &ParserConfig) -> Result<Build> {
        protocol.check_tools()?;
        let tools: &[Tool] = protocol.tools.as_ref().map_or(&[], |s| &s.tools);
        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        // A prefill continued in its reasoning stops inside the block,
        // whether or not the template rendered it.
        let in_reasoning = config
            .prefill
            .as_ref()
            .is_some_and(|p| p.part == PrefillPart::Reasoning);
        let any_name = config.policy.unknown_tool == UnknownTool::Call;
        let checked = if any_name { Vec::new() } else { names.clone() };
        Ok(Build {
            start: match in_reasoning {
                true => Start::InReasoning,
                false => protocol.start,
            },
            extract: config.reasoning == ReasoningFormat::Extract,
            name_sets: generator::NameSets::new(&checked, &names),
            any_name,
            checked,
            names,
        })
    }

    /// What this build's program is compiled from, its names left out: two
    /// builds of one shape compile the same program, whatever their tools
    /// are called or declare. `None` when the program holds the names
    /// (see [`generator::NameSets`]).
    fn code_shape(&self, protocol: &Protocol, config: &ParserConfig) -> Option<CodeShape> {
        if !self.names.is_empty() && self.name_sets.is_none() {
            return None;
        }
        Some(CodeShape {
            protocol: protocol.without_tools(),
            start: self.start,
            extract: self.extract,
            json_response: config.options.response_schema.is_some(),
            policy: config.policy,
            special_tokens: config.special_tokens.clone(),
            names: (
                self.names.is_empty(),
                self.checked.is_empty(),
                self.checked == self.names,
            ),
        })
    }

    /// The program for this build, without its name sets, and what the
    /// parser reads beside it.
    fn compile(&self, protocol: &Protocol, config: &ParserConfig) -> Result<Code> {
        let outline = protocol.parser_outline();
        let parts = OutlineParts::of(&outline);
        let program = self
            .grammar(protocol, config, &parts)
            .compile()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Analysis,
                    format!("cannot build the output parser: {e}"),
                )
            })?;
        Ok(Code {
            program,
            nested: decode::Nested {
                notation: parts.notations.into_iter().next(),
                elements: parts.elements.into_iter().next().map(Arc::new),
            },
            model_writes_ids: outline.write_ids(),
        })
    }

    /// The grammar this build's program is compiled from.
    fn grammar(
        &self,
        protocol: &Protocol,
        config: &ParserConfig,
        parts: &OutlineParts<'_>,
    ) -> chat_autoparser_peg::Grammar {
        let plan = generator::Plan {
            start: self.start,
            extract_reasoning: self.extract,
            parse_tools: protocol.tools.is_some(),
            json_response: config.options.response_schema.is_some(),
            names: &self.names,
            any_name: self.any_name,
            calls: parts.calls,
            foreign: parts.foreign,
            notations: &parts.notations,
            elements: &parts.elements,
            headers: &parts.headers,
            sections: &parts.sections,
            scaffolding: parts.scaffolding,
            part_opener: parts.part_opener,
            calls_in_reasoning: config.policy.calls_in_reasoning != CallsInReasoning::Reasoning,
            foreign_calls: config.policy.foreign_markers != ForeignMarkers::Text,
        };
        generator::grammar(protocol, plan).special_tokens(&config.special_tokens)
    }

    /// The parser that runs `code` (this build's program, or one compiled
    /// for the same [`CodeShape`]) with this build's names.
    fn parser(self, protocol: &Protocol, config: &ParserConfig, code: Code) -> OutputParser {
        let program = match &self.name_sets {
            Some(sets) => code.program.with_names(&sets.as_slices()),
            None => code.program,
        };
        let (start, extract) = (self.start, self.extract);
        let tools: &[Tool] = protocol.tools.as_ref().map_or(&[], |s| &s.tools);
        let prefix = match (extract, start) {
            (false, Start::InReasoning) => protocol.prompt.opened_block.clone(),
            _ => String::new(),
        };
        let reasoning_prefix = match (extract, start, &config.prefill) {
            (true, Start::Free, None) => protocol.prompt.reasoning.clone(),
            _ => String::new(),
        };
        let channels = (!protocol.headers().is_empty())
            .then(|| prompt_opened_channel(protocol, config.prefill.as_ref()));
        OutputParser {
            program,
            schemas: Arc::new(ToolSchemas::new(tools)),
            parallel: config.options.parallel_tool_calls,
            prefix,
            reasoning_prefix,
            prefill: config.prefill.clone().unwrap_or_default(),
            start,
            nested: code.nested,
            ids: config
                .call_ids
                .map(|seed| call_id::CallIdSource::new(seed, code.model_writes_ids)),
            policy: config.policy,
            channels,
            spare: Spare::default(),
        }
    }
}

impl OutputParser {
    /// A clone that numbers its streams from 0 (the ids of a stream depend
    /// on its number within the parser): what a kept parser is handed out
    /// as, so it mints exactly the ids a new build would.
    pub(crate) fn restarted(&self) -> OutputParser {
        OutputParser {
            ids: self.ids.as_ref().map(call_id::CallIdSource::restarted),
            ..self.clone()
        }
    }

    /// Builds the parser for a protocol already decided (a prepared
    /// request's, which [`crate::Prepared::parser`] reuses), made from
    /// `config.options`: the protocol holds every decision of those
    /// options; `config` adds only how to report (reasoning, prefill, ids,
    /// policy).
    pub fn from_protocol(protocol: &Protocol, config: &ParserConfig) -> Result<OutputParser> {
        let build = Build::new(protocol, config)?;
        let code = build.compile(protocol, config)?;
        Ok(build.parser(protocol, config, code))
    }

    /// Where outputs start relative to reasoning.
    pub fn start(&self) -> Start {
        self.start
    }

    /// Parses a complete output. Never fails: text that is not a well-formed
    /// call stays in the content.
    pub fn parse(&self, output: &str) -> AssistantMessage {
        self.parse_report(output, false).message
    }

    /// Parses an output cut off mid-stream: the message so far (half
    /// markers and half names are not in it yet).
    pub fn parse_partial(&self, output: &str) -> AssistantMessage {
        self.parse_report(output, true).message
    }

    /// Parses a complete output, failing on the first problem (a call broken
    /// after its name, an extra call when parallel calls are off).
    pub fn parse_strict(&self, output: &str) -> std::result::Result<AssistantMessage, Diagnostic> {
        let parsed = self.parse_report(output, false);
        match parsed.diagnostics.into_iter().next() {
            Some(d) => Err(d),
            None => Ok(parsed.message),
        }
    }

    /// Parses and reports the problems found.
    pub fn parse_report(&self, output: &str, partial: bool) -> Parsed {
        self.report(partial, |stream| {
            for piece in stream::char_chunks(output, BATCH_PIECE) {
                stream.push(piece);
            }
        })
    }

    /// Parses output given as bytes, decoded as `String::from_utf8_lossy`
    /// decodes them (invalid sequences become U+FFFD); reports the problems
    /// found, as [`parse_report`](Self::parse_report).
    pub fn parse_bytes_report(&self, output: &[u8], partial: bool) -> Parsed {
        self.report(partial, |stream| {
            for piece in output.chunks(BATCH_PIECE) {
                stream.push_bytes(piece);
            }
        })
    }

    /// Parses an output whose special tokens are known: `special` are the
    /// byte ranges of `output` the model sampled as special tokens, in
    /// order (see [`OutputStream::push_tokens`]); reports the problems
    /// found, as [`parse_report`](Self::parse_report). Malformed ranges are
    /// an [`ErrorKind::Input`] error.
    pub fn parse_tokens_report(
        &self,
        output: &str,
        special: &[std::ops::Range<usize>],
        partial: bool,
    ) -> Result<Parsed> {
        stream::check_spans(output, special)?;
        Ok(self.report(partial, |stream| {
            let (mut at, mut spans) = (0, special);
            while at < output.len() {
                // A piece of about `BATCH_PIECE` bytes, ending on a
                // character boundary and past any span it would cut.
                let mut end = (at + BATCH_PIECE).min(output.len());
                while !output.is_char_boundary(end) {
                    end += 1;
                }
                if let Some(cut) = spans.iter().find(|s| s.start < end && s.end > end) {
                    end = cut.end;
                }
                let inside = spans.partition_point(|s| s.end <= end);
                let local: Vec<_> = spans[..inside]
                    .iter()
                    .map(|s| s.start - at..s.end - at)
                    .collect();
                // Checked above: the pieces' spans are well formed.
                let _ = stream.push_tokens(&output[at..end], &local);
                spans = &spans[inside..];
                at = end;
            }
        }))
    }

    /// One stream fed by `feed`, finished unless `partial`, and its report.
    /// A batch parse is a stream fed in pieces of [`BATCH_PIECE`] bytes:
    /// the same result as one push (streaming equals batch), and the engine
    /// keeps a window of the output, not a second copy of it.
    /// The stream is the parser's spare one ([`Spare`]) when it is free.
    fn report(&self, partial: bool, feed: impl FnOnce(&mut OutputStream)) -> Parsed {
        let (setup, ids) = self.stream_parts();
        let mut stream = match self.spare.take() {
            Some(mut stream) => {
                stream.reset(&setup, &self.prefill, ids);
                stream
            }
            None => Box::new(OutputStream::new(
                &self.program,
                decode::Decoder::new(&setup),
                &self.prefill,
                ids,
            )),
        };
        // Only the message is returned: no deltas, which would copy its text.
        stream.make_quiet();
        feed(&mut stream);
        if !partial {
            stream.finish();
        }
        let parsed = Parsed::of(&mut stream);
        self.spare.put(stream);
        parsed
    }

    /// A stream for one output.
    pub fn stream(&self) -> OutputStream {
        let (setup, ids) = self.stream_parts();
        OutputStream::new(
            &self.program,
            decode::Decoder::new(&setup),
            &self.prefill,
            ids,
        )
    }

    /// What a stream for one output starts with: its decoder's setup and
    /// its ids.
    fn stream_parts(&self) -> (decode::Setup<'_>, Option<call_id::StreamIds>) {
        let continued = !self.prefill.continued().is_empty();
        let setup = decode::Setup {
            schemas: &self.schemas,
            parallel: self.parallel,
            continues: decode::Continues {
                content: continued && self.prefill.part == PrefillPart::Content,
                reasoning: continued && self.prefill.part == PrefillPart::Reasoning,
            },
            opened: &self.prefix,
            reasoning_prefix: &self.reasoning_prefix,
            nested: &self.nested,
            policy: self.policy,
            in_channel: self.channels,
        };
        (setup, self.ids.as_ref().map(|s| s.next_stream()))
    }
}

/// Whether the output starts inside a channel's message: the prompt ends
/// with a section header's closing marker or the content wrapper's opener
/// (`...<|channel|>final<|message|>`), or a prefill's content goes on.
fn prompt_opened_channel(protocol: &Protocol, prefill: Option<&Prefill>) -> bool {
    if prefill.is_some_and(|p| p.part == PrefillPart::Content && !p.continued().is_empty()) {
        return true;
    }
    let Some(tail) = protocol.prompt.trailing_marker.as_deref() else {
        return false;
    };
    let content_start = protocol.content.start.trim();
    protocol.headers().iter().any(|h| h.close.trim() == tail)
        || (!content_start.is_empty() && content_start.ends_with(tail))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{OutputParser, Parsed, ParserConfig};
    use crate::protocol::Options;
    use crate::template::{ChatTemplate, TemplateConfig};

    /// What a fresh stream reads from `output` (`partial`: not finished):
    /// what every batch parse must read, the spare stream's or not.
    fn fresh(parser: &OutputParser, output: &[u8], partial: bool) -> Parsed {
        let mut stream = parser.stream();
        stream.push_bytes(output);
        if !partial {
            stream.finish();
        }
        Parsed {
            message: stream.message(),
            diagnostics: stream.diagnostics().to_vec(),
        }
    }

    #[test]
    fn a_reused_stream_reads_as_a_fresh_one() {
        let source = include_str!("../../templates/hermes-think.jinja");
        let template = ChatTemplate::new(source, &TemplateConfig::default()).expect("loads");
        let analysis = template.analyze().expect("analyses");
        let tools = vec![
            json!({"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
        ];
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        // Each leaves the stream in another state: matched, a call withdrawn
        // with a diagnostic, an unknown tool, cut inside a block, a value
        // or a character.
        let outputs: Vec<Vec<u8>> = vec![
            format!("<think>Rain?</think>\n\nLet me check.\n{call}").into_bytes(),
            b"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>"
                .to_vec(),
            call.replace("get_weather", "other").into_bytes(),
            b"<think>never closed".to_vec(),
            b"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par".to_vec(),
            b"caf\xC3".to_vec(),
            Vec::new(),
            call.as_bytes().to_vec(),
        ];
        let options = Options::default().with_tools(tools);
        for config in [
            ParserConfig::from(options.clone()),
            ParserConfig::from(options).with_call_ids(7),
        ] {
            let parser = analysis.parser(&config).expect("builds");
            let other = parser.restarted();
            for partial in [false, true, false] {
                for output in &outputs {
                    assert_eq!(
                        parser.parse_bytes_report(output, partial),
                        fresh(&other, output, partial),
                        "{:?}, partial: {partial}",
                        String::from_utf8_lossy(output)
                    );
                }
            }
        }
    }
}
