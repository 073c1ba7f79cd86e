//! `chat-autoparser grammar TEMPLATE [--tools FILE] [--tool-choice auto|required|none|NAME|JSON] [--parallel [on|off]]
//! [--thinking on|off] [--messages FILE] [--format gbnf|structural-tag|lark|response-template]
//! [--special-tokens] [--json]`:
//! the grammar that constrains the model to the template's own format, for
//! the engine `--format` names.
//!
//! The grammar starts where the output does: `--messages` (default one user
//! turn) is rendered with the generation prompt and `--thinking`, and a prompt
//! that opens or closes a reasoning block moves where the grammar starts.
//!
//! Human output of GBNF is its text, then whether it is lazy, its triggers
//! and preserved tokens; its warnings go to stderr, never into the grammar
//! a caller pipes on. The other formats and `--json` print the JSON
//! shape of `docs/cli.md` (warnings included, as data). Several calls
//! are allowed unless `--parallel off` (OpenAI's default, as in `batch`
//! and Python). With `--special-tokens` (a model folder or GGUF), the
//! markers that are special tokens of its vocabulary are written as tokens
//! (GBNF `<tool_call>`, Lark's token syntax, xgrammar's token format), for
//! an engine serving that model. A shell over the library's front door (`Chat::prepare`,
//! `Prepared::export`).

use std::path::PathBuf;

use chat_autoparser::{Chat, ChatRequest, Export, Gbnf, TemplateSource, ToolChoice};

use crate::parse_cmd::default_messages;
use crate::{compile, input_failure, read_array, write_out, Failure, OnOff, TemplateArg};

/// The grammar languages the command exports, one per engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GrammarFormat {
    /// GBNF and lazy triggers for llama.cpp
    Gbnf,
    /// xgrammar's structural tag (vLLM, SGLang)
    StructuralTag,
    /// llguidance's Lark (vLLM, SGLang, llguidance users)
    Lark,
    /// transformers' response_template (parse_response)
    ResponseTemplate,
}

impl GrammarFormat {
    /// The library's export of this name.
    fn export(self) -> Export {
        match self {
            GrammarFormat::Gbnf => Export::Gbnf,
            GrammarFormat::StructuralTag => Export::StructuralTag,
            GrammarFormat::Lark => Export::Lark,
            GrammarFormat::ResponseTemplate => Export::ResponseTemplate,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// OpenAI-format tools (a JSON array)
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// auto, required, none, a function name, or OpenAI's JSON object (`allowed_tools` too)
    #[arg(long, value_name = "CHOICE", default_value = "auto")]
    tool_choice: String,
    /// Several calls per turn (on, the default, as OpenAI's `parallel_tool_calls`), or exactly one (off)
    #[arg(long, value_enum, value_name = "on|off", default_value = "on", num_args = 0..=1, default_missing_value = "on")]
    parallel: OnOff,
    /// The thinking switch the prompt is rendered with
    #[arg(long, value_enum)]
    thinking: Option<OnOff>,
    /// The conversation the output continues (a JSON array; default one user turn)
    #[arg(long, value_name = "FILE")]
    messages: Option<PathBuf>,
    /// The grammar language: the engine it is for
    #[arg(long, value_enum, default_value = "gbnf")]
    format: GrammarFormat,
    /// Write the markers that are special tokens of the model's vocabulary (a model folder or GGUF) as tokens (GBNF `<tool_call>`, Lark's token syntax, xgrammar's token format), for an engine serving that model
    #[arg(long)]
    special_tokens: bool,
    /// Print the JSON shape (docs/cli.md)
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let tools = args.tools.as_deref().map(read_array).transpose()?;
    let mut request = ChatRequest::default()
        .with_messages(default_messages())
        .with_tools(tools)
        .with_tool_choice(tool_choice(&args.tool_choice)?)
        .with_parallel_tool_calls(args.parallel == OnOff::On)
        .with_enable_thinking(OnOff::get(args.thinking));
    if let Some(path) = &args.messages {
        request.messages = read_array(path)?;
    }
    let source = TemplateSource::load_named(
        &args.template.template,
        args.template.template_name.as_deref(),
        request.tools.is_some(),
    )?;
    if args.special_tokens {
        if source.special_tokens.is_empty() {
            return Err(input_failure(
                "--special-tokens: the template comes with no vocabulary (give a model folder or a GGUF)".into(),
            ));
        }
        request.special_tokens = source.special_tokens.clone();
    }
    let chat = Chat::new(compile(&source)?)?;
    // A conversation the template refuses leaves the thinking switch alone to decide.
    let prepared = chat.prepare(&request);
    if args.format != GrammarFormat::Gbnf || args.json {
        let value = prepared.export(args.format.export())?;
        return write_out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    let grammar = prepared.gbnf()?;
    for w in &grammar.warnings {
        eprintln!("chat-autoparser: warning: {w}");
    }
    write_out(&text(&grammar))
}

/// The human form: the GBNF, then lazy, triggers and preserved tokens.
fn text(grammar: &Gbnf) -> String {
    let mut out = if grammar.is_empty() {
        "(no grammar: nothing to constrain)\n".to_owned()
    } else {
        grammar.gbnf.clone()
    };
    out.push_str(&format!("\nlazy: {}\n", grammar.lazy));
    for t in &grammar.triggers {
        let kind = serde_json::to_value(t.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push_str(&format!("trigger ({kind}): {}\n", t.value));
    }
    out.push_str(&format!(
        "preserved tokens: {}\n",
        grammar.preserved_tokens.join(" ")
    ));
    out
}

/// `--tool-choice`: a word or a name, or JSON text when it opens an object
/// (`{"type": "allowed_tools", ...}`).
fn tool_choice(text: &str) -> Result<ToolChoice, Failure> {
    if !text.trim_start().starts_with('{') {
        return Ok(ToolChoice::parse(text));
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| input_failure(format!("--tool-choice is not JSON: {e}")))?;
    Ok(ToolChoice::from_json(&value)?)
}
