//! chat-autoparser: read any LLM chat template, work out how the model writes
//! reasoning, content and tool calls, and serve requests for it: the prompt,
//! a parser for the output and grammars that constrain it.
//!
//! A server goes through one front door, [`request`]: a [`Chat`] per model
//! (the template and its analysis), and per request a [`ChatRequest`] that
//! [`Chat::prepare`] turns into a [`Prepared`]: the prompt, and on demand
//! the [`OutputParser`] and the grammar exports, all from one [`Protocol`].
//!
//! ```
//! use chat_autoparser::{Chat, ChatRequest, ChatTemplate, TemplateConfig};
//! use serde_json::json;
//!
//! // Once per model: compile and analyse (cache `chat.analysis()`; it is serde).
//! let source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
//!               {% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let chat = Chat::new(ChatTemplate::new(source, &TemplateConfig::default())?)?;
//!
//! // Per request: the prompt to send, then the parser for what comes back.
//! let prepared = chat.prepare(
//!     &ChatRequest::default().with_messages(vec![json!({"role": "user", "content": "hi"})]),
//! );
//! assert_eq!(prepared.prompt.as_deref(), Some("<|user|>hi\n<|assistant|>"));
//! let message = prepared.parser()?.parse("Hello!");
//! assert_eq!(message.content.as_deref(), Some("Hello!"));
//! // Nothing to constrain without tools or a response schema.
//! assert!(prepared.gbnf()?.is_empty());
//! # Ok::<(), chat_autoparser::Error>(())
//! ```
//!
//! Behind the front door, one module per stage:
//!
//! - [`template`]: compile and render a chat template with transformers'
//!   semantics ([`ChatTemplate`]);
//! - [`analysis`]: render paired variants, diff them, and collect the markers
//!   into an [`Analysis`];
//! - [`protocol`]: what the model may write for one request ([`Protocol`]);
//! - [`lint`]: rendering defects of a template, found by probe conversations;
//! - [`chat_autoparser_peg`] (its own crate, `peg/`): the PEG engine for model
//!   output that knows about partial input and streams;
//! - [`parser`]: the output parser generated from an [`Analysis`]: model
//!   output to an [`AssistantMessage`], complete or streamed as [`message::Delta`]s;
//! - [`grammar`]: GBNF, structural tag, Lark and `response_template` exports;
//! - [`spans`]: training text with the byte ranges of each assistant turn;
//! - [`check`](mod@check): a verdict with evidence: probes parsed back, exports checked.
//!
//! What follows is the README: its library example walks a server through
//! the front door with a cached analysis, minted call ids, streaming bytes
//! and the grammar, and runs as a doctest.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

#[macro_use]
mod setters;

pub mod analysis;
pub mod check;
mod error;
pub mod grammar;
mod json_schema;
pub mod lint;
mod markers;
pub mod message;
pub mod parser;
pub mod prompt;
pub mod protocol;
pub mod request;
pub mod spans;
pub mod template;

pub use analysis::Analysis;
pub use check::{check, check_with_policy, CheckReport, Verdict};
pub use error::{Error, ErrorKind, Location, Result};
pub use grammar::{Gbnf, GbnfOptions, Trigger, TriggerKind};
pub use message::{AssistantMessage, Delta, FunctionCall, ToolCall};
pub use parser::{OutputParser, OutputStream, ParserConfig, Policy, ReasoningFormat, TokenSpans};
pub use protocol::{Options, Protocol, ToolChoice};
pub use request::{Chat, ChatRequest, Export, Prepared};
pub use template::{ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
