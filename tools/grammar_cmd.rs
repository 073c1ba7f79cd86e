//! `chat-autoparser grammar TEMPLATE [--tools FILE] [--tool-choice auto|required|none|NAME] [--parallel] [--json]`:
//! the GBNF grammar that constrains the model to the template's tool format.
//!
//! Human output is the GBNF text, then whether it is lazy, its triggers and
//! preserved tokens (and any schema warnings); `--json` prints DESIGN §5's
//! shape. Without `--parallel` the grammar allows exactly one call.

use std::path::PathBuf;

use chat_autoparser::{Grammar, GrammarConfig, ToolChoice};

use crate::{load_template, read_array, write_out, Failure, TemplateArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// OpenAI-format tools (a JSON array)
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// auto, required, none, or a function name
    #[arg(long, value_name = "CHOICE", default_value = "auto")]
    tool_choice: String,
    /// Allow several calls (without it, exactly one)
    #[arg(long)]
    parallel: bool,
    /// Print DESIGN §5's JSON shape
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let tools = args.tools.as_deref().map(read_array).transpose()?;
    let template = load_template(&args.template, tools.is_some())?;
    let config = GrammarConfig {
        tools: tools.unwrap_or_default(),
        tool_choice: ToolChoice::parse(&args.tool_choice),
        parallel_tool_calls: args.parallel,
        ..GrammarConfig::default()
    };
    let grammar = template.analyze()?.grammar(&config)?;
    if args.json {
        return write_out(&format!("{}\n", serde_json::to_string_pretty(&grammar).unwrap_or_default()));
    }
    write_out(&text(&grammar))
}

/// The human form: the GBNF, then lazy, triggers, preserved tokens and warnings.
fn text(grammar: &Grammar) -> String {
    let mut out = if grammar.is_empty() { "(no grammar: nothing to constrain)\n".to_owned() } else { grammar.gbnf.clone() };
    out.push_str(&format!("\nlazy: {}\n", grammar.lazy));
    for t in &grammar.triggers {
        let kind = serde_json::to_value(t.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        out.push_str(&format!("trigger ({kind}): {}\n", t.value));
    }
    out.push_str(&format!("preserved tokens: {}\n", grammar.preserved_tokens.join(" ")));
    for w in &grammar.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
