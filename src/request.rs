//! The front door: one chat request in, everything a server needs for it
//! out.
//!
//! A server holds one [`Chat`] per model (the compiled template and its
//! analysis, made once and cached) and hands each request to
//! [`Chat::prepare`] as a [`ChatRequest`] (the OpenAI request's messages,
//! tools, `tool_choice`, `parallel_tool_calls`, thinking switch, template
//! kwargs, response schema, `continue_final_message`). The [`Prepared`]
//! answer holds the prompt to send the model and gives, on demand, the
//! [`OutputParser`] that reads what the model writes back and the grammar
//! exports that constrain it (GBNF with its triggers and preserved tokens,
//! xgrammar's structural tag, llguidance's Lark, transformers'
//! `response_template`), all taken from one [`Protocol`], so prompt, parser
//! and grammars agree.
//!
//! Invariants: preparing a request never fails; a prompt that does not
//! render leaves the parser and grammars built without it (the thinking
//! switch decides where reasoning stands) and [`Prepared::diagnostics`] says
//! why. The prompt is rendered by [`ChatTemplate::render_chat`] (what the
//! OpenAI API leaves optional is filled, missing tool parts are polyfilled,
//! and replayed calls on a template that never renders calls are written in
//! the model's own format, see [`crate::template::ToolFormatting`]). A
//! template's parser and grammars read the tool format its prompts show.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::analysis::{Analysis, ToolFormat};
use crate::error::Result;
use crate::grammar::{
    self, Gbnf, GbnfOptions, Lark, LarkOptions, ResponseTemplate, StructuralTag,
    StructuralTagOptions,
};
use crate::parser::{OutputParser, ParserCache, ParserConfig, Prefill};
use crate::parser::{Policy, ReasoningFormat, Start};
use crate::prompt::{continuation_prompt, Continue};
use crate::protocol::{write, Options, Protocol, ToolChoice};
use crate::template::{CallWriter, ChatTemplate, RenderRequest};

/// One chat request, as an OpenAI-compatible server receives it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatRequest {
    /// OpenAI-format messages (`role`, `content`, `tool_calls`, ...).
    pub messages: Vec<Value>,
    /// OpenAI-format tool definitions; `None`: the request gives none.
    pub tools: Option<Vec<Value>>,
    /// Whether calls are allowed, required, or of one function.
    pub tool_choice: ToolChoice,
    /// Several calls in one turn (when the template renders them).
    pub parallel_tool_calls: bool,
    /// The `enable_thinking` template switch, when given.
    pub enable_thinking: Option<bool>,
    /// Further template variables (`reasoning_effort`, `builtin_tools`, ...).
    pub kwargs: Map<String, Value>,
    /// A JSON schema the answer must follow (`response_format`).
    pub response_schema: Option<Value>,
    /// Whether the output continues the last (assistant) message.
    pub continue_final_message: Continue,
    /// Append the assistant header (ignored when continuing a message).
    pub add_generation_prompt: bool,
    /// Reasoning to `reasoning_content`, or left in the content.
    pub reasoning: ReasoningFormat,
    /// Mint OpenAI-style call ids from this seed where the model wrote none.
    pub call_ids: Option<u64>,
    /// What the parser does with output written off script.
    pub policy: Policy,
    /// A prompt the server rendered itself: used as given, nothing is
    /// rendered. Without it and without messages, no prompt is rendered and
    /// the thinking switch alone says where reasoning stands.
    pub prompt: Option<String>,
    /// The vocabulary's special tokens: markers holding one count only
    /// where the model sampled it ([`ParserConfig::special_tokens`]).
    pub special_tokens: Vec<String>,
}

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest {
            messages: Vec::new(),
            tools: None,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            enable_thinking: None,
            kwargs: Map::new(),
            response_schema: None,
            continue_final_message: Continue::No,
            add_generation_prompt: true,
            reasoning: ReasoningFormat::Extract,
            call_ids: None,
            policy: Policy::default(),
            prompt: None,
            special_tokens: Vec::new(),
        }
    }
}

setters!(ChatRequest {
    /// Sets the messages.
    with_messages => messages: Vec<Value>,
    /// Sets `tool_choice`.
    with_tool_choice => tool_choice: ToolChoice,
    /// Allows or forbids several calls in one turn.
    with_parallel_tool_calls => parallel_tool_calls: bool,
    /// Sets further template variables.
    with_kwargs => kwargs: Map<String, Value>,
    /// Continues the last (assistant) message, or not.
    with_continue_final_message => continue_final_message: Continue,
    /// Appends the assistant header, or not.
    with_add_generation_prompt => add_generation_prompt: bool,
    /// Extracts reasoning or leaves it inline.
    with_reasoning => reasoning: ReasoningFormat,
    /// Sets the output policy.
    with_policy => policy: Policy,
    /// Sets the vocabulary's special tokens.
    with_special_tokens => special_tokens: Vec<String>;
    optional:
    /// Sets the tool definitions (`None`: the request gives none).
    with_tools => tools: Vec<Value>,
    /// Sets the `enable_thinking` switch.
    with_enable_thinking => enable_thinking: bool,
    /// Sets the JSON schema the answer must follow.
    with_response_schema => response_schema: Value,
    /// Mints call ids from this seed.
    with_call_ids => call_ids: u64,
    /// Uses this prompt as given instead of rendering one.
    with_prompt => prompt: String,
});

impl ChatRequest {
    /// The render this request asks for (a continued message has no
    /// generation prompt after it).
    pub fn render_request(&self) -> RenderRequest {
        RenderRequest {
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            add_generation_prompt: self.add_generation_prompt
                && !self.continue_final_message.is_continued(),
            enable_thinking: self.enable_thinking,
            extra: self.kwargs.clone(),
            ..Default::default()
        }
    }

    /// The options that shape what the model may write after `prompt`.
    pub fn options(&self, prompt: Option<String>) -> Options {
        Options {
            tools: self.tools.clone().unwrap_or_default(),
            tool_choice: self.tool_choice.clone(),
            parallel_tool_calls: self.parallel_tool_calls,
            enable_thinking: self.enable_thinking,
            prompt,
            response_schema: self.response_schema.clone(),
        }
    }
}

/// One model's template and analysis: what a server keeps per model.
#[derive(Debug)]
pub struct Chat {
    template: ChatTemplate,
    analysis: Analysis,
    /// Parsers built for this model's requests, kept per request shape.
    pub(crate) parsers: Arc<ParserCache>,
}

impl Chat {
    /// Analyses `template` (deterministic: cache [`Chat::analysis`] and use
    /// [`Chat::with_analysis`] next time).
    pub fn new(template: ChatTemplate) -> Result<Chat> {
        let analysis = template.analyze()?;
        Ok(Chat::with_analysis(template, analysis))
    }

    /// `template` with an analysis made earlier (a cached one).
    pub fn with_analysis(template: ChatTemplate, analysis: Analysis) -> Chat {
        let writer = analysis.tool_formats().next().cloned().map(|format| {
            let writer: Arc<dyn CallWriter> = Arc::new(FormatWriter(format));
            writer
        });
        let template = match writer {
            Some(writer) => template.with_call_writer(writer),
            None => template,
        };
        Chat {
            template: template.with_polyfills(),
            analysis,
            parsers: Arc::default(),
        }
    }

    /// The template; it renders as [`ChatTemplate::render_chat`] does.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// The analysis.
    pub fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    /// The prompt, parser and grammars for `request`. Never fails: a
    /// prompt that does not render is reported in [`Prepared::diagnostics`],
    /// and the parser and grammars are built (on demand) without it.
    pub fn prepare(&self, request: &ChatRequest) -> Prepared {
        let mut diagnostics = Vec::new();
        let (prompt, prefill) = match self.prompt(request) {
            Ok(rendered) => rendered,
            Err(e) => {
                diagnostics.push(format!(
                    "the prompt does not render ({e}); parsed without it"
                ));
                (None, None)
            }
        };
        let options = request.options(prompt.clone());
        let protocol = Protocol::new(&self.analysis, &options);
        let parser = ParserConfig {
            options,
            reasoning: request.reasoning,
            prefill: prefill.clone(),
            call_ids: request.call_ids,
            policy: request.policy,
            special_tokens: request.special_tokens.clone(),
        };
        Prepared {
            protocol,
            parser,
            prompt,
            prefill,
            diagnostics,
            parsers: Arc::clone(&self.parsers),
        }
    }
}

impl Chat {
    /// The prompt `request` gives or renders, and the prefill it continues.
    fn prompt(&self, request: &ChatRequest) -> Result<(Option<String>, Option<Prefill>)> {
        if request.prompt.is_some() || request.messages.is_empty() {
            return Ok((request.prompt.clone(), None));
        }
        let (prompt, prefill) = continuation_prompt(
            &self.template,
            &self.analysis,
            &request.render_request(),
            request.continue_final_message,
        )?;
        Ok((Some(prompt), prefill))
    }
}

/// The grammar exports, one per constrained-decoding engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Export {
    /// GBNF with lazy triggers (llama.cpp).
    Gbnf,
    /// xgrammar's structural tag (vLLM, SGLang).
    StructuralTag,
    /// llguidance's Lark.
    Lark,
    /// transformers' `response_template`.
    ResponseTemplate,
}

impl Export {
    /// The names [`Export::from_name`] knows, for error messages.
    pub const NAMES: &'static str = "gbnf, structural-tag, lark, response-template";

    /// The export called `name` (`gbnf`, `structural-tag`, `lark`, `response-template`).
    pub fn from_name(name: &str) -> Option<Export> {
        match name {
            "gbnf" => Some(Export::Gbnf),
            "structural-tag" => Some(Export::StructuralTag),
            "lark" => Some(Export::Lark),
            "response-template" => Some(Export::ResponseTemplate),
            _ => None,
        }
    }
}

/// What a server needs for one request (see [`Chat::prepare`]): the prompt,
/// and on demand the parser and each grammar export, so a request pays
/// only for what it uses.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(crate) parser: ParserConfig,
    /// The prompt to send the model; `None` when it does not render (see
    /// `diagnostics`).
    pub prompt: Option<String>,
    /// What the continued assistant message already holds
    /// (`continue_final_message`).
    pub prefill: Option<Prefill>,
    /// What the model may write for this request; the grammars are its exports.
    pub protocol: Protocol,
    /// Problems preparing the request, one line each (a prompt that did
    /// not render).
    pub diagnostics: Vec<String>,
    /// The chat's parsers, kept per request shape.
    parsers: Arc<ParserCache>,
}

impl Prepared {
    /// The parser for what the model writes: whole ([`OutputParser::parse`])
    /// or streamed ([`OutputParser::stream`]); build it once per request and
    /// share it. Built from [`Prepared::protocol`], the decisions made
    /// once by [`Chat::prepare`]; the [`Chat`] keeps the last few parsers it
    /// built, so a request of a shape seen before (same tools, `tool_choice`,
    /// thinking, policy, prompt state; any conversation) gets a clone of
    /// one instead of a build. Errors (kind `Input`) when a tool has no
    /// name, and (kind `Analysis`) when the analysis describes a format the
    /// parser cannot be built for.
    pub fn parser(&self) -> Result<OutputParser> {
        self.parsers.parser(&self.protocol, &self.parser)
    }

    /// Where the output starts relative to reasoning.
    pub fn start(&self) -> Start {
        self.protocol.start
    }

    /// The GBNF grammar, its lazy triggers and preserved tokens (llama.cpp).
    /// Errors (kind `Input`) when calls are required but cannot be written.
    /// The request's special tokens are written as tokens (see
    /// [`GbnfOptions`]).
    pub fn gbnf(&self) -> Result<Gbnf> {
        let options =
            GbnfOptions::default().with_special_tokens(self.parser.special_tokens.clone());
        grammar::gbnf_with(&self.protocol, &options)
    }

    /// xgrammar's structural tag (vLLM, SGLang).
    /// The request's special tokens are written as tokens (see
    /// [`StructuralTagOptions`]).
    pub fn structural_tag(&self) -> Result<StructuralTag> {
        let options =
            StructuralTagOptions::default().with_special_tokens(self.parser.special_tokens.clone());
        grammar::structural_tag_with(&self.protocol, &options)
    }

    /// llguidance's Lark grammar.
    /// The request's special tokens are written as tokens (see
    /// [`LarkOptions`]).
    pub fn lark(&self) -> Result<Lark> {
        // The vocabulary cut to the grammar's markers, as `gbnf_with` cuts
        // it: Lark takes its list as given, each entry looked up per literal.
        let tokens =
            grammar::markers_among(&self.protocol.preserved_tokens, &self.parser.special_tokens);
        grammar::lark_with(
            &self.protocol,
            &LarkOptions::default().with_special_tokens(tokens),
        )
    }

    /// transformers' `response_template` (for `parse_response`).
    pub fn response_template(&self) -> Result<ResponseTemplate> {
        grammar::response_template(&self.protocol)
    }

    /// The export `which` as JSON (the shape for each engine in `docs/cli.md`).
    pub fn export(&self, which: Export) -> Result<Value> {
        let value = match which {
            Export::Gbnf => serde_json::to_value(self.gbnf()?),
            Export::StructuralTag => serde_json::to_value(self.structural_tag()?),
            Export::Lark => serde_json::to_value(self.lark()?),
            Export::ResponseTemplate => serde_json::to_value(self.response_template()?),
        };
        Ok(value.unwrap_or_default())
    }

    /// Tokens a sampler must keep whole (markers of reasoning, calls, turns).
    pub fn preserved_tokens(&self) -> &[String] {
        &self.protocol.preserved_tokens
    }
}

/// Writes replayed calls in the format the analysis found.
#[derive(Debug)]
struct FormatWriter(ToolFormat);

impl CallWriter for FormatWriter {
    fn write_calls(&self, calls: &[Value]) -> Option<String> {
        write::calls_text(&self.0, calls)
    }
}

/// Straight from an analysis, for a caller without a chat request: the
/// request's options are decided into a [`Protocol`] here, as
/// [`Chat::prepare`] decides them.
impl Analysis {
    /// Builds an output parser for this template and `config` (see
    /// [`OutputParser::from_protocol`]).
    pub fn parser(&self, config: &ParserConfig) -> Result<OutputParser> {
        OutputParser::from_protocol(&Protocol::new(self, &config.options), config)
    }

    /// The GBNF grammar for `config` in this template's format (see
    /// [`grammar::gbnf`]).
    pub fn grammar(&self, config: &Options) -> Result<Gbnf> {
        grammar::gbnf(&Protocol::new(self, config))
    }
}
