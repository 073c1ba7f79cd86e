//! `chat-autoparser parse TEMPLATE [--tools FILE] [--messages FILE] [--thinking on|off]
//! [--reasoning extract|inline] [--partial] [--strict] [--kwargs JSON] [--call-ids SEED]
//! [--policy lossless|compatible] [--unknown-tool ...] [--text-after-calls ...] ...` < output:
//! decode raw model output into an OpenAI-shaped assistant message (JSON).
//!
//! The output is read as bytes and decoded leniently (invalid UTF-8 becomes
//! U+FFFD), so no output is refused. The prompt the output continues is
//! rendered from `--messages` (default: one user turn) so that a generation
//! prompt that opens or closes a reasoning block is taken into account; a
//! prompt that cannot render does not stop the parse: the output is parsed
//! without it and a warning says so. Problems in the output are printed to
//! stderr as warnings; `--strict` makes the first one an error (exit 1).
//! A shell over the library's front door: flags become a `ChatRequest`,
//! `Chat::prepare` does the rest.

use std::path::PathBuf;

use chat_autoparser::parser::{Parsed, POLICY_FIELDS};
use chat_autoparser::{Chat, ChatRequest, Policy, ReasoningFormat};
use serde_json::{json, Map, Value};

use crate::{
    input_failure, kwargs, load_template, read_array, read_stdin, write_out, Failure, OnOff,
    TemplateArg,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// OpenAI-format tools (a JSON array)
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// The conversation the output continues (a JSON array) [default: one user turn]
    #[arg(long, value_name = "FILE")]
    messages: Option<PathBuf>,
    /// The thinking switch the prompt was rendered with
    #[arg(long, value_enum)]
    thinking: Option<OnOff>,
    /// Reasoning to reasoning_content (extract) or left in the content (inline)
    #[arg(long, value_enum, default_value = "extract")]
    reasoning: Reasoning,
    /// The output was cut off mid-stream
    #[arg(long)]
    partial: bool,
    /// Fail (exit 1) on the first problem found in the output
    #[arg(long)]
    strict: bool,
    /// Further template variables, a JSON object (e.g. '{"reasoning_effort": "high"}')
    #[arg(long, value_name = "JSON", value_parser = kwargs)]
    kwargs: Option<Map<String, Value>>,
    /// Mint OpenAI-style call ids (call_...) from this seed where the model wrote none
    #[arg(long, value_name = "SEED")]
    call_ids: Option<u64>,
    #[command(flatten)]
    policy: PolicyArgs,
}

/// `--policy` and its per-field overrides (docs/policies.md).
#[derive(clap::Args, Debug)]
pub struct PolicyArgs {
    /// What off-script output becomes: lossless (nothing lost) or compatible (as vLLM and SGLang)
    #[arg(long, value_name = "PRESET", default_value = "lossless")]
    policy: String,
    /// A call of a function the request does not have: content or call
    #[arg(long, value_name = "CHOICE")]
    unknown_tool: Option<String>,
    /// Content after the first call: keep or drop
    #[arg(long, value_name = "CHOICE")]
    text_after_calls: Option<String>,
    /// A call the output ends in: recover, drop or content
    #[arg(long, value_name = "CHOICE")]
    unclosed_call_at_end: Option<String>,
    /// A call broken before the end: content, salvage or drop
    #[arg(long, value_name = "CHOICE")]
    malformed_section: Option<String>,
    /// A call inside reasoning: reasoning, call or both
    #[arg(long, value_name = "CHOICE")]
    calls_in_reasoning: Option<String>,
    /// Text outside any channel (channel formats): content or drop
    #[arg(long, value_name = "CHOICE")]
    text_outside_channels: Option<String>,
    /// Another format's tool-call marker ([TOOL_CALLS] around a JSON call), a code fence around a call, a lone closer: content, drop or text (not read as markup)
    #[arg(long, value_name = "CHOICE")]
    foreign_markers: Option<String>,
}

impl PolicyArgs {
    /// The preset with the fields given set.
    pub fn policy(&self) -> Result<Policy, Failure> {
        let mut policy = Policy::preset(&self.policy).ok_or_else(|| {
            Failure::Usage(format!(
                "--policy takes lossless or compatible, not {:?}",
                self.policy
            ))
        })?;
        let fields = [
            &self.unknown_tool,
            &self.text_after_calls,
            &self.unclosed_call_at_end,
            &self.malformed_section,
            &self.calls_in_reasoning,
            &self.text_outside_channels,
            &self.foreign_markers,
        ];
        for (name, value) in POLICY_FIELDS.iter().zip(fields) {
            if let Some(value) = value {
                policy.set(name, value).map_err(Failure::Usage)?;
            }
        }
        Ok(policy)
    }
}

/// `--reasoning`.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum Reasoning {
    Extract,
    Inline,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let tools = args.tools.as_deref().map(read_array).transpose()?;
    let mut request = ChatRequest::default()
        .with_messages(default_messages())
        .with_tools(tools)
        .with_enable_thinking(OnOff::get(args.thinking))
        .with_reasoning(match args.reasoning {
            Reasoning::Extract => ReasoningFormat::Extract,
            Reasoning::Inline => ReasoningFormat::Inline,
        })
        .with_kwargs(args.kwargs.clone().unwrap_or_default())
        .with_call_ids(args.call_ids)
        .with_policy(args.policy.policy()?);
    if let Some(path) = &args.messages {
        request.messages = read_array(path)?;
    }
    let chat = Chat::new(load_template(&args.template, request.tools.is_some())?)?;
    let prepared = chat.prepare(&request);
    let (parser, warnings) = (prepared.parser()?, prepared.diagnostics);
    let output = read_stdin()?;
    let Parsed {
        message,
        diagnostics,
    } = parser.parse_bytes_report(&output, args.partial);
    if let (true, Some(first)) = (args.strict, diagnostics.first()) {
        return Err(input_failure(first.to_string()));
    }
    for w in &warnings {
        eprintln!("chat-autoparser: warning: {w}");
    }
    for d in &diagnostics {
        eprintln!("chat-autoparser: warning: {d}");
    }
    write_out(&format!(
        "{}\n",
        serde_json::to_string_pretty(&message).unwrap_or_default()
    ))
}

/// The conversation when none is given: one user turn.
pub fn default_messages() -> Vec<Value> {
    vec![json!({"role": "user", "content": "Hi"})]
}

/// `reasoning` of a batch request.
pub fn reasoning_format(v: &str) -> Result<ReasoningFormat, Failure> {
    match v {
        "extract" => Ok(ReasoningFormat::Extract),
        "inline" => Ok(ReasoningFormat::Inline),
        other => Err(Failure::Usage(format!(
            "reasoning takes extract or inline, not {other:?}"
        ))),
    }
}
