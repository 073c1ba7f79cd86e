//! Parsers already built, kept for requests of the same shape.
//!
//! A server builds a parser per request, and most requests to one model
//! repeat a shape: the same tools, `tool_choice`, thinking and policy, a
//! different conversation. Building costs tens of microseconds (the PEG
//! grammar generated and compiled); a parser is cheap to clone (its
//! program is shared). [`ParserCache`] keeps the last few parsers built,
//! each under the request shape it was built from, and hands out a clone
//! when the shape comes again.
//!
//! A request of a new shape that differs from a kept one only in its tools
//! (another tool set, the same template, `tool_choice` kind, thinking and
//! policy) reuses that shape's compiled program with its own names (see
//! [`CodeShape`](super::CodeShape)): the program holds no names, only which
//! name sets it reads, so such a build skips the grammar and its compile.
//!
//! Invariants:
//! - a program reused is the one a fresh compile would make: its key is all
//!   the compile reads but the names, which the parser gives it;
//! - a hit is exactly the parser a fresh build would make: the key is the
//!   whole [`Protocol`] and the whole [`ParserConfig`] except the prompt
//!   text, which the parser reads only through the protocol (its start
//!   state and `PromptTail`, both in the key), and a kept parser is handed
//!   out with its stream count back at 0 (minted call ids depend on it);
//! - errors are never kept (a request that fails to build fails again);
//! - at most [`ParserCache::CAPACITY`] parsers are kept, the least
//!   recently used dropped first; the lock is never held while building.

use std::sync::Mutex;

use super::{Build, Code, CodeShape, OutputParser, ParserConfig};
use crate::error::Result;
use crate::protocol::{Options, Protocol};

/// The last parsers built, under the request shapes they were built from.
#[derive(Default)]
pub struct ParserCache {
    /// Most recently used first.
    entries: Mutex<Vec<Entry>>,
    /// Programs compiled, under the shapes they were compiled for; most
    /// recently used first.
    programs: Mutex<Vec<(CodeShape, Code)>>,
}

struct Entry {
    protocol: Protocol,
    config: ParserConfig,
    parser: OutputParser,
}

impl ParserCache {
    /// How many parsers are kept: enough for a server's few request shapes
    /// per model (with and without tools, thinking on and off, a few tool
    /// sets), few enough that a miss costs a short scan.
    pub const CAPACITY: usize = 16;

    /// The parser for `protocol` and `config`: a kept one when the shape
    /// was built before, else a new build (kept when it succeeds).
    pub fn parser(&self, protocol: &Protocol, config: &ParserConfig) -> Result<OutputParser> {
        let key = shape_of(config);
        if let Some(parser) = self.hit(protocol, &key) {
            return Ok(parser);
        }
        let build = Build::new(protocol, config)?;
        let shape = build.code_shape(protocol, config);
        let code = match shape.as_ref().and_then(|s| self.program(s)) {
            Some(code) => code,
            None => {
                let code = build.compile(protocol, config)?;
                if let Some(shape) = shape {
                    self.keep_program(shape, &code);
                }
                code
            }
        };
        let parser = build.parser(protocol, config, code);
        self.keep(protocol, key, &parser);
        Ok(parser)
    }

    /// The program kept for `shape`.
    fn program(&self, shape: &CodeShape) -> Option<Code> {
        let mut programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        let at = programs.iter().position(|(s, _)| s == shape)?;
        let entry = programs.remove(at);
        let program = entry.1.clone();
        programs.insert(0, entry);
        Some(program)
    }

    fn keep_program(&self, shape: CodeShape, program: &Code) {
        let mut programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        programs.truncate(Self::CAPACITY - 1);
        programs.insert(0, (shape, program.clone()));
    }

    fn hit(&self, protocol: &Protocol, config: &ParserConfig) -> Option<OutputParser> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let at = entries
            .iter()
            .position(|e| e.config == *config && e.protocol == *protocol)?;
        let entry = entries.remove(at);
        let parser = entry.parser.restarted();
        entries.insert(0, entry);
        Some(parser)
    }

    fn keep(&self, protocol: &Protocol, config: ParserConfig, parser: &OutputParser) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.truncate(Self::CAPACITY - 1);
        entries.insert(
            0,
            Entry {
                protocol: protocol.clone(),
                config,
                parser: parser.clone(),
            },
        );
    }
}

impl std::fmt::Debug for ParserCache {
    /// How many parsers are kept (their programs are long and say nothing
    /// to a reader of a `Chat`'s debug print).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.entries.lock().map_or(0, |e| e.len());
        f.debug_struct("ParserCache").field("kept", &kept).finish()
    }
}

/// `config` without the prompt text: the parser reads the prompt only
/// through the protocol, so requests that differ in it alone share a parser.
fn shape_of(config: &ParserConfig) -> ParserConfig {
    let o = &config.options;
    // Every field named, none copied by `..`: a field added to either
    // struct must be placed in or out of the key here.
    let options = Options {
        tools: o.tools.clone(),
        tool_choice: o.tool_choice.clone(),
        parallel_tool_calls: o.parallel_tool_calls,
        enable_thinking: o.enable_thinking,
        prompt: None,
        response_schema: o.response_schema.clone(),
    };
    ParserConfig {
        options,
        reasoning: config.reasoning,
        prefill: config.prefill.clone(),
        call_ids: config.call_ids,
        policy: config.policy,
        special_tokens: config.special_tokens.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::{Build, OutputParser, Policy};
    use super::ParserCache;
    use crate::protocol::ToolChoice;
    use crate::request::{Chat, ChatRequest};
    use crate::template::{ChatTemplate, TemplateConfig};

    fn chat() -> Chat {
        let source = include_str!("../../templates/hermes-think.jinja");
        let template = ChatTemplate::new(source, &TemplateConfig::default()).expect("loads");
        Chat::new(template).expect("analyses")
    }

    fn tool(name: &str) -> Value {
        json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
    }

    fn request(question: &str, tool_name: &str) -> ChatRequest {
        ChatRequest::default()
            .with_messages(vec![json!({"role": "user", "content": question})])
            .with_tools(vec![tool(tool_name)])
    }

    fn kept(chat: &Chat) -> usize {
        chat.parsers.entries.lock().unwrap().len()
    }

    fn call(name: &str) -> String {
        format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {{\"city\": \"Paris\"}}}}\n</tool_call>")
    }

    #[test]
    fn another_conversation_of_the_same_shape_reuses_the_parser() {
        let chat = chat();
        let first = chat.prepare(&request("Weather in Paris?", "get_weather"));
        let second = chat.prepare(&request("And in Rome, tomorrow?", "get_weather"));
        assert_ne!(first.prompt, second.prompt);
        let a = first.parser().expect("builds");
        assert_eq!(kept(&chat), 1);
        let b = second.parser().expect("builds");
        assert_eq!(
            kept(&chat),
            1,
            "the second request found the first's parser"
        );
        assert_eq!(a.parse(&call("get_weather")), b.parse(&call("get_weather")));
        assert_eq!(b.parse(&call("get_weather")).tool_calls.len(), 1);
    }

    #[test]
    fn other_tools_get_their_own_parser() {
        let chat = chat();
        let weather = chat.prepare(&request("Weather?", "get_weather")).parser();
        let time = chat.prepare(&request("Time?", "get_time")).parser();
        assert_eq!(kept(&chat), 2);
        // Under the default (lossless) policy an unknown tool's call stays
        // content: a parser shared across tool sets would read it as a call.
        let (weather, time) = (weather.expect("builds"), time.expect("builds"));
        assert_eq!(weather.parse(&call("get_weather")).tool_calls.len(), 1);
        assert_eq!(time.parse(&call("get_weather")).tool_calls.len(), 0);
        assert_eq!(time.parse(&call("get_time")).tool_calls.len(), 1);
    }

    #[test]
    fn a_kept_parser_mints_the_ids_a_new_build_would() {
        let chat = chat();
        let output = call("get_weather");
        let ids = |question: &str| {
            let request = request(question, "get_weather").with_call_ids(7);
            let parser = chat.prepare(&request).parser().expect("builds");
            let message = parser.parse(&output);
            message.tool_calls[0].id.clone()
        };
        let first = ids("Weather in Paris?");
        let again = ids("And in Rome?");
        assert_eq!(kept(&chat), 1);
        assert!(first.as_deref().is_some_and(|id| id.starts_with("call_")));
        assert_eq!(first, again);
    }

    #[test]
    fn the_least_recently_used_parser_goes_first() {
        let chat = chat();
        let names: Vec<String> = (0..=ParserCache::CAPACITY)
            .map(|i| format!("tool_{i}"))
            .collect();
        for name in &names {
            chat.prepare(&request("?", name)).parser().expect("builds");
        }
        assert_eq!(kept(&chat), ParserCache::CAPACITY);
        let entries = chat.parsers.entries.lock().unwrap();
        let newest = &entries[0].config.options.tools[0]["function"]["name"];
        assert_eq!(newest, names.last().unwrap().as_str());
        let oldest_kept = &entries[ParserCache::CAPACITY - 1].config.options.tools[0];
        assert_eq!(
            oldest_kept["function"]["name"], "tool_1",
            "tool_0 was dropped"
        );
    }

    fn programs(chat: &Chat) -> usize {
        chat.parsers.programs.lock().unwrap().len()
    }

    #[test]
    fn another_tool_set_of_a_known_shape_reuses_the_program() {
        let chat = chat();
        let weather = chat.prepare(&request("Weather?", "get_weather"));
        let time = chat.prepare(&request("Time?", "get_time"));
        let (weather, time) = (weather.parser().unwrap(), time.parser().unwrap());
        assert_eq!((kept(&chat), programs(&chat)), (2, 1));
        assert!(time.program.same_code(&weather.program));
        // Each reads its own names: an unknown tool's call stays content.
        assert_eq!(weather.parse(&call("get_weather")).tool_calls.len(), 1);
        assert_eq!(time.parse(&call("get_weather")).tool_calls.len(), 0);
        assert_eq!(time.parse(&call("functions.get_time")).tool_calls.len(), 1);
        // As a fresh build reads them.
        let request = request("Time?", "get_time");
        let fresh = chat.prepare(&request);
        let fresh = OutputParser::from_protocol(&fresh.protocol, &fresh.parser).unwrap();
        assert!(!fresh.program.same_code(&weather.program));
        for output in [
            call("get_time"),
            call("get_weather"),
            call("get_times"),
            call("get"),
        ] {
            for partial in [false, true] {
                let (got, want) = (
                    time.parse_report(&output, partial),
                    fresh.parse_report(&output, partial),
                );
                assert_eq!(got, want, "{output}");
            }
        }
    }

    /// Names a set cannot hold (with a space) are written into the program:
    /// it is compiled for them, never shared.
    #[test]
    fn names_the_program_holds_get_their_own_compile() {
        let chat = chat();
        chat.prepare(&request("?", "get weather")).parser().unwrap();
        chat.prepare(&request("?", "get time")).parser().unwrap();
        assert_eq!((kept(&chat), programs(&chat)), (2, 0));
    }

    /// Over the shipped templates, tool sets (other names, schemas and
    /// counts), `tool_choice` kinds, policies and thinking: whenever two
    /// builds have one code shape, a fresh compile of each gives the same
    /// program. So a kept program is the one a compile would make.
    #[test]
    fn builds_of_one_code_shape_compile_one_program() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        let typed = |name: &str, props: Value| {
            json!({"type": "function", "function": {"name": name,
                "parameters": {"type": "object", "properties": props}}})
        };
        let tool_sets = [
            vec![tool("get_weather")],
            vec![typed(
                "get_time",
                json!({"zone": {"type": "string"}, "n": {"type": "integer"}}),
            )],
            vec![
                tool("search"),
                typed("lookup_id", json!({"id": {"type": "integer"}})),
            ],
        ];
        let mut compared = 0;
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        paths.sort();
        for path in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        {
            let source = std::fs::read_to_string(path).unwrap();
            let Ok(template) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
                continue;
            };
            let Ok(chat) = Chat::new(template) else {
                continue;
            };
            for (choice, policy, thinking) in shapes() {
                let builds: Vec<_> = tool_sets
                    .iter()
                    .filter_map(|tools| {
                        let first = tools[0]["function"]["name"].as_str().unwrap().to_string();
                        let choice = match choice {
                            "named" => ToolChoice::Function(first),
                            "required" => ToolChoice::Required,
                            _ => ToolChoice::Auto,
                        };
                        let mut request = ChatRequest::default()
                            .with_messages(vec![json!({"role": "user", "content": "?"})])
                            .with_tools(tools.clone())
                            .with_tool_choice(choice)
                            .with_policy(policy);
                        request.enable_thinking = thinking;
                        let prepared = chat.prepare(&request);
                        let (protocol, config) = (&prepared.protocol, &prepared.parser);
                        let build = Build::new(protocol, config).ok()?;
                        let shape = build.code_shape(protocol, config)?;
                        let code = build.compile(protocol, config).ok()?;
                        Some((shape, format!("{code:?}")))
                    })
                    .collect();
                for (i, (shape, code)) in builds.iter().enumerate() {
                    for (other_shape, other) in &builds[i + 1..] {
                        if shape == other_shape {
                            compared += 1;
                            assert!(code == other, "{}: {choice} {thinking:?}", path.display());
                        }
                    }
                }
            }
        }
        assert!(compared > 100, "{compared} pairs of one shape compared");
    }

    fn shapes() -> Vec<(&'static str, Policy, Option<bool>)> {
        let mut shapes = Vec::new();
        for choice in ["auto", "required", "named"] {
            for policy in [Policy::default(), Policy::compatible()] {
                for thinking in [None, Some(true), Some(false)] {
                    shapes.push((choice, policy, thinking));
                }
            }
        }
        shapes
    }

    #[test]
    fn a_request_that_fails_to_build_is_not_kept() {
        let chat = chat();
        let nameless = json!({"type": "function", "function": {"parameters": {}}});
        let request = ChatRequest::default()
            .with_messages(vec![json!({"role": "user", "content": "?"})])
            .with_tools(vec![nameless]);
        assert!(chat.prepare(&request).parser().is_err());
        assert_eq!(kept(&chat), 0);
    }
}
