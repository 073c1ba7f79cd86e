//! The output protocol: what the model may write for one request.
//!
//! An [`Analysis`] says how a template's model writes reasoning, content and
//! tool calls in general. A request narrows that down: which tools exist,
//! whether a call is allowed, required, named or among an allowed subset
//! (`tool_choice`), which tools are `strict` (their objects closed), whether
//! several calls may follow each other, whether thinking is on, and which
//! prompt the output continues (a prompt that opened a reasoning block puts
//! the output inside it; one that closed it leaves no block to write).
//! [`Protocol::new`] makes those decisions once, and every back end takes
//! them from here:
//!
//! ```text
//! Analysis ─┐
//!           ├─▶ Protocol ─┬─▶ parser (PEG)            parser/
//! Options  ─┘             ├─▶ GBNF + triggers          grammar/
//!                         ├─▶ Lark (llguidance)        grammar/lark
//!                         ├─▶ structural tag (xgrammar) grammar/structural_tag
//!                         └─▶ response_template        grammar/response_template
//! ```
//!
//! Parts, one concept each: `start` (where the output starts relative to
//! reasoning, read from the prompt or the thinking switch), `tools` (the
//! request's tools and `tool_choice`), `layout` (one tool's call as a list
//! of markers, text, id, arguments and optional groups, with the marker
//! that ends a tagged name, a header's attributes and how fixed text is
//! matched), `marker` (raw markers split into the cores a reader matches
//! exactly and the whitespace it may match flexibly).
//!
//! Beside the decisions, a protocol carries the template's [`Markup`]
//! (reasoning markers, every call format, spare tokens: what a reader must
//! recognise even where the request leaves no room for it) and the
//! [`PromptTail`] (what the prompt already wrote). Every back end reads
//! the protocol alone, never the `Analysis`: the PEG builder
//! (`parser/generator/`, `parser/sections.rs`), every grammar export (GBNF,
//! Lark, structural tag, response_template) and the call writer
//! (`write`). All of them take a call's shape from `layout`; GBNF writes
//! the layout's optional groups as optional, the others as required (the
//! flat layout). Each export keeps its own argument value rules (JSON
//! schema, tagged values, Python keywords), chosen by the layout's
//! [`Arguments`]. Still read from the `ToolFormat`s of the protocol
//! ([`ToolSection::formats`], [`Markup::formats`]) rather than from a
//! layout: a tool section's markers and separator, and, in the PEG builder,
//! a JSON call object's key paths (where the name, the arguments and the id
//! sit, read in any order and under more keys than the template writes).
//! GBNF keeps the spaces between words of a marker literal where the
//! parser's [`Marker`] matches any.
//!
//! Invariants: a back end never re-derives a decision made here (start
//! state, allowed formats, required or parallel calls); building a protocol
//! never fails or panics: a request a grammar cannot serve (a call required
//! from a template with no tool format, a named function that is not among
//! the tools) is recorded and reported by [`Protocol::check_servable`]; a
//! request no back end can serve (a tool without a name) by
//! [`Protocol::check_tools`], which the parser and every grammar call.

mod layout;
pub(crate) mod marker;
mod notation;
pub mod outline;
mod seam;
pub(crate) mod start;
mod tagged;
#[cfg(test)]
pub(crate) mod testing;
mod tools;
pub(crate) mod write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::{Analysis, ContentFormat, Header, ReasoningMode, ToolFormat, TurnFormat};
use crate::error::{Error, ErrorKind, Result};

pub(crate) use layout::{text_pieces, HeaderAttributes, TaggedName, TextPiece};
pub use layout::{Arguments, CallLayout, IdShape, Naming, Segment};
pub use marker::Marker;
pub use notation::Notation;
pub use outline::Outline;
pub use seam::TurnSeam;
pub use tagged::{StrayValueCloser, TaggedLayout, TypeWord, UnopenedValue};
pub use tools::{nameless_tool, read_tools, Tool, ToolChoice};

/// Where the output starts, relative to reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Start {
    /// The model may open a reasoning block itself.
    Free,
    /// The prompt opened a reasoning block: the output starts inside it.
    InReasoning,
    /// The prompt closed the reasoning block (or reasoning is off).
    AfterReasoning,
}

/// The request's options that shape what the model may write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Options {
    /// OpenAI tool definitions, in the order given.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// Whether calls are allowed, required, or of one function.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Several calls in one turn (when the template renders them).
    #[serde(default = "yes")]
    pub parallel_tool_calls: bool,
    /// The thinking switch the prompt was rendered with (used when `prompt`
    /// is not given): with thinking off there is no block to skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_thinking: Option<bool>,
    /// The rendered prompt the output continues: one that opened a
    /// reasoning block makes the output start inside it, one that closed it
    /// leaves none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A JSON schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
}

setters!(Options {
    /// Sets the OpenAI tool definitions.
    with_tools => tools: Vec<Value>,
    /// Sets `tool_choice`.
    with_tool_choice => tool_choice: ToolChoice,
    /// Allows or forbids several calls in one turn.
    with_parallel_tool_calls => parallel_tool_calls: bool;
    optional:
    /// Sets the thinking switch the prompt was rendered with.
    with_enable_thinking => enable_thinking: bool,
    /// Sets the rendered prompt the output continues.
    with_prompt => prompt: String,
    /// Sets the JSON schema the answer must follow.
    with_response_schema => response_schema: Value,
});

fn yes() -> bool {
    true
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            enable_thinking: None,
            prompt: None,
            response_schema: None,
        }
    }
}

/// A reasoning block the output may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningBlock {
    /// Opening marker, raw; empty for delimiter-only reasoning.
    pub start: String,
    /// Closing marker, raw.
    pub end: String,
    /// The output starts inside the block: the prompt (or the template's
    /// reasoning mode) wrote the opening, the model writes text and `end`.
    pub opened: bool,
    /// Turns without reasoning begin with `end` alone (an empty block the
    /// template closes without opening).
    pub bare_end: bool,
}

/// The tool calls the output may hold.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSection {
    /// The call formats: the template's own, or its fallback dialects.
    pub formats: Vec<ToolFormat>,
    /// `formats` are fallback dialects (the template renders no calls).
    pub fallback: bool,
    /// The tools a call may name (only the named one for a named choice,
    /// the listed ones for `allowed_tools`: the prompt still lists all);
    /// empty when the request gives none: a parser then reads any name,
    /// a grammar constrains nothing.
    pub tools: Vec<Tool>,
    /// At least one call must be written (`required`, a named function, or
    /// `allowed_tools` in mode `required`).
    pub required: bool,
    /// Calls after the first are allowed.
    pub parallel: bool,
}

/// The reasoning block's markers, raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningMarkers {
    /// Opening marker; empty for delimiter-only reasoning.
    pub start: String,
    /// Closing marker.
    pub end: String,
}

/// The template's markup a reader recognises whatever the request allows:
/// text that starts one of these is never plain content, even where the
/// request leaves no room for what it opens (a tool section under
/// `tool_choice: none`, a reasoning block after a prompt that closed it).
#[derive(Debug, Clone, PartialEq)]
pub struct Markup {
    /// The reasoning block's markers, when the template marks reasoning.
    pub reasoning: Option<ReasoningMarkers>,
    /// The template's own call format, when it renders calls.
    pub own_format: Option<ToolFormat>,
    /// Every call format a model of the template writes: its own, then
    /// the fallback dialects.
    pub formats: Vec<ToolFormat>,
    /// Special tokens the template writes outside any marker
    /// (`<|python_tag|>`): framing around calls.
    pub spare_tokens: Vec<String>,
}

impl Markup {
    /// Every raw marker text of every call format a model of the template
    /// writes (its own, then the fallback dialects), in that order: what a
    /// reader must never take for text.
    pub fn call_marker_texts(&self) -> impl Iterator<Item = &str> {
        self.formats.iter().flat_map(crate::analysis::tool_sources)
    }
}

/// What the prompt the output continues already wrote, as a reader needs
/// it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptTail {
    /// The marker the prompt ends with (`<|CHATBOT_TOKEN|>`): a model that
    /// writes it first repeats the prompt.
    pub trailing_marker: Option<String>,
    /// When the output starts inside a reasoning block, the block's text as
    /// the prompt wrote it (`<think>\n`): inline reasoning puts it back in
    /// front of the content.
    pub opened_block: String,
    /// Reasoning the prompt wrote for the model in delimiter reasoning
    /// (`Here are my reasoning steps:\n`), when the output starts free.
    pub reasoning: String,
}

/// What the model may write for one request: one description that the
/// parser and every grammar export read.
#[derive(Debug, Clone, PartialEq)]
pub struct Protocol {
    /// Where the output starts relative to reasoning.
    pub start: Start,
    /// The reasoning block, when the template marks one and the request
    /// leaves room for it (not after a prompt that closed it).
    pub reasoning: Option<ReasoningBlock>,
    /// The reasoning end marker, raw, when the prompt closed the block: a
    /// model may write it again first (`</think>` after `...</think>\n\n`),
    /// and it is scaffolding.
    pub closed_by_prompt: Option<String>,
    /// Markers around visible content (empty when the template has none).
    pub content: ContentFormat,
    /// Tool calls, unless `tool_choice` is `none` or the template has no format.
    pub tools: Option<ToolSection>,
    /// The JSON schema of the answer, when the request gives one.
    pub response_schema: Option<Value>,
    /// How turns begin and end (stop marker, headers of channel formats).
    pub turn: TurnFormat,
    /// Tokens a tokenizer must keep whole for the markers to be seen.
    pub preserved_tokens: Vec<String>,
    /// The template's markup, whatever the request allows.
    pub markup: Markup,
    /// What the prompt already wrote.
    pub prompt: PromptTail,
    /// Why the request's required call cannot be written, if so.
    unservable: Option<String>,
    /// Why the request's tools are bad input (a tool without a name), if so.
    bad_tools: Option<String>,
    /// What could only be served loosely, one line each.
    pub warnings: Vec<String>,
}

impl Protocol {
    /// This protocol without its tools' list and its warnings: what a
    /// parser's program is compiled from, which reads the tools only through
    /// their names (given to the program apart) and no warning. Every field
    /// named, none copied by `..`: a field added here must be placed in or
    /// out of that key.
    pub(crate) fn without_tools(&self) -> Protocol {
        let Protocol {
            start,
            reasoning,
            closed_by_prompt,
            content,
            tools,
            response_schema,
            turn,
            preserved_tokens,
            markup,
            prompt,
            unservable,
            bad_tools,
            warnings: _,
        } = self;
        let tools = tools.as_ref().map(|t| ToolSection {
            formats: t.formats.clone(),
            fallback: t.fallback,
            tools: Vec::new(),
            required: t.required,
            parallel: t.parallel,
        });
        Protocol {
            start: *start,
            reasoning: reasoning.clone(),
            closed_by_prompt: closed_by_prompt.clone(),
            content: content.clone(),
            tools,
            response_schema: response_schema.clone(),
            turn: turn.clone(),
            preserved_tokens: preserved_tokens.clone(),
            markup: markup.clone(),
            prompt: prompt.clone(),
            unservable: unservable.clone(),
            bad_tools: bad_tools.clone(),
            warnings: Vec::new(),
        }
    }

    /// Decides, for `analysis` and a request's `options`, what the model may
    /// write. Never fails: a request that cannot be served is reported by
    /// [`Protocol::check_servable`].
    pub fn new(analysis: &Analysis, options: &Options) -> Protocol {
        let mut warnings = Vec::new();
        let start =
            start::start_state(analysis, options.prompt.as_deref(), options.enable_thinking);
        let (tools, unservable) = tool_section(analysis, options, &mut warnings);
        Protocol {
            start,
            reasoning: reasoning_block(analysis, start),
            closed_by_prompt: closed_by_prompt(analysis, start),
            content: analysis.content.clone(),
            preserved_tokens: preserved_tokens(analysis, tools.as_ref()),
            markup: markup(analysis),
            prompt: prompt_tail(analysis, options.prompt.as_deref(), start),
            tools,
            response_schema: options.response_schema.clone(),
            turn: analysis.turn.clone(),
            unservable,
            bad_tools: nameless_tool(&options.tools),
            warnings,
        }
    }

    /// Errors (kind `Input`) when the request's tools are bad input: a
    /// tool without a (non-empty) `function.name`, by its index. Neither a
    /// parser nor a grammar serves such a request.
    pub fn check_tools(&self) -> Result<()> {
        match &self.bad_tools {
            Some(why) => Err(Error::new(ErrorKind::Input, why.clone())),
            None => Ok(()),
        }
    }

    /// Errors (kind `Input`) when the request requires a call that cannot
    /// be written: no usable tool, a named function that is not among the
    /// tools, or a template with no tool format; or when the tools are bad
    /// input ([`Protocol::check_tools`]). A grammar cannot serve such a
    /// request; a parser still reads whatever the model writes.
    pub fn check_servable(&self) -> Result<()> {
        self.check_tools()?;
        match &self.unservable {
            Some(why) => Err(Error::new(ErrorKind::Input, why.clone())),
            None => Ok(()),
        }
    }

    /// `warnings` (an export's) with one line added for each `strict` tool
    /// a warning loosens: the export holds its arguments to a looser rule
    /// than its schema. A warning concerns the tool its hint names (the
    /// text before `: `, which is the name, starts with it and `-` or `.`,
    /// or ends with `_` and it), the longest such name when several match.
    pub(crate) fn note_strict(&self, warnings: &mut Vec<String>) {
        let Some(section) = &self.tools else { return };
        let names: Vec<&str> = section.tools.iter().map(|t| t.name.as_str()).collect();
        let mut loosened: Vec<&str> = Vec::new();
        for warning in warnings.iter() {
            let hint = warning.split(": ").next().unwrap_or_default();
            let tool = names
                .iter()
                .filter(|name| names_tool(hint, name))
                .max_by_key(|name| name.len());
            if let Some(name) = tool.filter(|n| !loosened.contains(n)) {
                loosened.push(name);
            }
        }
        for tool in section.tools.iter().filter(|t| t.strict) {
            if loosened.contains(&tool.name.as_str()) {
                warnings.push(format!(
                    "{}: a `strict` tool, held to a looser rule than its schema (above)",
                    tool.name
                ));
            }
        }
    }

    /// The call formats the output may hold: the request's, or, when it
    /// parses no calls, every format a model of the template writes (their
    /// text stays whole content: their markers still end content and
    /// headers).
    pub fn output_formats(&self) -> &[ToolFormat] {
        match &self.tools {
            Some(section) => &section.formats,
            None => &self.markup.formats,
        }
    }

    /// The section headers of channel formats (`<|channel|>` LABEL `<|message|>`).
    pub fn headers(&self) -> &[Header] {
        &self.turn.headers
    }
}

fn markup(analysis: &Analysis) -> Markup {
    let r = &analysis.reasoning;
    Markup {
        reasoning: (r.mode != ReasoningMode::None).then(|| ReasoningMarkers {
            start: r.start.clone(),
            end: r.end.clone(),
        }),
        own_format: analysis.tools.clone(),
        formats: analysis.tool_formats().cloned().collect(),
        spare_tokens: analysis.spare_tokens.clone(),
    }
}

/// What `prompt` (else the generation prompt) wrote, for an output that
/// starts at `start`.
fn prompt_tail(analysis: &Analysis, prompt: Option<&str>, start: Start) -> PromptTail {
    let opened_block = match (start, prompt) {
        (Start::InReasoning, Some(prompt)) => start::open_block_text(analysis, prompt)
            .unwrap_or_default()
            .to_owned(),
        (Start::InReasoning, None) => analysis.reasoning.start.clone(),
        _ => String::new(),
    };
    let reasoning = match start {
        Start::Free => start::prompt_reasoning(analysis, prompt).to_owned(),
        _ => String::new(),
    };
    PromptTail {
        trailing_marker: start::trailing_marker(analysis, prompt).map(str::to_owned),
        opened_block,
        reasoning,
    }
}

/// The reasoning block under `start`: none when the template marks none or
/// the prompt already closed it.
fn reasoning_block(analysis: &Analysis, start: Start) -> Option<ReasoningBlock> {
    let r = &analysis.reasoning;
    if r.mode == ReasoningMode::None || r.end.trim().is_empty() || start == Start::AfterReasoning {
        return None;
    }
    // Delimiter reasoning has no opening: the block starts with the output.
    let opened = start == Start::InReasoning || r.start.trim().is_empty();
    Some(ReasoningBlock {
        start: r.start.clone(),
        end: r.end.clone(),
        opened,
        bare_end: r.bare_end,
    })
}

/// The reasoning end marker a model may repeat after a prompt that closed
/// the block.
fn closed_by_prompt(analysis: &Analysis, start: Start) -> Option<String> {
    let r = &analysis.reasoning;
    let marked = r.mode != ReasoningMode::None && !r.end.trim().is_empty();
    (marked && start == Start::AfterReasoning).then(|| r.end.clone())
}

/// The tools the request allows, in the formats the template has, and why
/// a required call could not be written (if so).
fn tool_section(
    analysis: &Analysis,
    options: &Options,
    warnings: &mut Vec<String>,
) -> (Option<ToolSection>, Option<String>) {
    let mut tools = read_tools(&options.tools, warnings);
    let given = !tools.is_empty();
    let (required, unservable) = match &options.tool_choice {
        ToolChoice::None => return (None, None),
        ToolChoice::Auto => (false, None),
        ToolChoice::Required => (
            true,
            (!given)
                .then(|| "tool_choice requires a call but no usable tool was given".to_string()),
        ),
        ToolChoice::Function(name) => {
            tools.retain(|t| &t.name == name);
            (
                true,
                tools
                    .is_empty()
                    .then(|| format!("tool_choice names {name:?}, which is not among the tools")),
            )
        }
        // The prompt lists every tool; calls may name only the allowed.
        ToolChoice::AllowedTools { names, required } => {
            let missing = missing_names(names, &tools);
            tools.retain(|t| names.contains(&t.name));
            let why = (!missing.is_empty()).then(|| {
                format!("tool_choice allowed_tools names what is not among the tools: {missing}")
            });
            (*required, why)
        }
    };
    let fallback = analysis.tools.is_none();
    // Fallback dialects are what a model was asked for by a prompt that
    // listed tools: without tools in the request, nothing asked for them.
    let formats: Vec<ToolFormat> = match given {
        true => analysis.tool_formats().cloned().collect(),
        false => analysis.tools.iter().cloned().collect(),
    };
    if formats.is_empty() {
        if given && !required {
            warnings.push("the template does not render tool calls; no tool grammar".into());
        }
        let why = required.then(|| {
            unservable.unwrap_or_else(|| "the template does not render tool calls".into())
        });
        return (None, why);
    }
    if fallback {
        warnings.push(match &analysis.prose.tool_call {
            Some(example) => format!("the template does not render tool calls; the grammar allows the format its instructions show: {example}"),
            None => "the template does not render tool calls; the grammar allows the fallback dialects".into(),
        });
    }
    let parallel = options.parallel_tool_calls;
    (
        Some(ToolSection {
            formats,
            fallback,
            tools,
            required,
            parallel,
        }),
        unservable,
    )
}

/// Whether a warning's `hint` names the tool `name` (see
/// [`Protocol::note_strict`]).
fn names_tool(hint: &str, name: &str) -> bool {
    let after = hint.strip_prefix(name);
    after.is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
        || hint
            .strip_suffix(name)
            .is_some_and(|before| before.ends_with('_'))
}

/// The `names` no tool has, quoted and joined (empty when all are there).
fn missing_names(names: &[String], tools: &[Tool]) -> String {
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !tools.iter().any(|t| &&t.name == n))
        .map(|n| format!("{n:?}"))
        .collect();
    missing.join(", ")
}

/// The template's preserved tokens, and the markers of fallback dialects in
/// use (the template writes none of them itself).
fn preserved_tokens(analysis: &Analysis, tools: Option<&ToolSection>) -> Vec<String> {
    let mut out = analysis.preserved_tokens.clone();
    if let Some(section) = tools {
        let dialects = section
            .formats
            .iter()
            .filter(|f| analysis.fallback_tools.contains(f));
        for token in dialects.flat_map(crate::analysis::tool_tokens) {
            if !out.contains(&token) {
                out.push(token);
            }
        }
    }
    out
}
