//! `chat-autoparser grammar TEMPLATE [--tools FILE] [--tool-choice auto|required|none|NAME] [--parallel]
//! [--thinking on|off] [--messages FILE] [--json]`:
//! the GBNF grammar that constrains the model to the template's tool format.
//!
//! The grammar starts where the output does: `--messages` (default one user
//! turn) is rendered with the generation prompt and `--thinking`, and a prompt
//! that opens or closes a reasoning block moves the triggers accordingly.
//!
//! Human output is the GBNF text, then whether it is lazy, its triggers and
//! preserved tokens (and any schema warnings); `--json` prints DESIGN §5's
//! shape. Without `--parallel` the grammar allows exactly one call.

use chat_autoparser::{Grammar, GrammarConfig, ToolChoice};
use serde_json::Value;

use crate::parse_cmd::{on_off, read_array, ParseOptions};
use crate::{load_template, write_out, Failure};

pub fn run(args: &[String]) -> Result<(), Failure> {
    let mut path = None;
    let mut json = false;
    let mut config = GrammarConfig { parallel_tool_calls: false, ..GrammarConfig::default() };
    let mut options = ParseOptions::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--thinking" => config.enable_thinking = Some(on_off(value(&mut it, "--thinking")?)?),
            "--messages" => options.messages = read_array(value(&mut it, "--messages")?)?,
            "--parallel" => config.parallel_tool_calls = true,
            "--tools" => config.tools = read_tools(value(&mut it, "--tools")?)?,
            "--tool-choice" => config.tool_choice = ToolChoice::parse(value(&mut it, "--tool-choice")?),
            flag if flag.starts_with("--") => return Err(Failure::Usage(format!("unknown option {flag}"))),
            p if path.is_none() => path = Some(p.to_owned()),
            extra => return Err(Failure::Usage(format!("unexpected argument {extra:?}"))),
        }
    }
    let path = path.ok_or_else(|| Failure::Usage("grammar needs a TEMPLATE".into()))?;
    let template = load_template(&path)?;
    let analysis = template.analyze()?;
    options.tools = (!config.tools.is_empty()).then(|| config.tools.clone());
    options.enable_thinking = config.enable_thinking;
    // A conversation the template refuses leaves the thinking switch alone to decide.
    config.prompt = options.prompt(&template, &analysis).ok().map(|(prompt, _)| prompt);
    let grammar = analysis.grammar(&config)?;
    if json {
        return write_out(&format!("{}\n", serde_json::to_string_pretty(&grammar).expect("a grammar serializes")));
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

fn value<'a>(it: &mut std::slice::Iter<'a, String>, flag: &str) -> Result<&'a str, Failure> {
    it.next().map(String::as_str).ok_or_else(|| Failure::Usage(format!("{flag} needs a value")))
}

/// An OpenAI-format tools file: a JSON array.
fn read_tools(path: &str) -> Result<Vec<Value>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Library(chat_autoparser::Error::new(chat_autoparser::ErrorKind::Io, format!("{path}: {e}"))))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(tools)) => Ok(tools),
        Ok(_) => Err(input(format!("{path}: expected a JSON array of tools"))),
        Err(e) => Err(input(format!("{path}: {e}"))),
    }
}

fn input(message: String) -> Failure {
    Failure::Library(chat_autoparser::Error::new(chat_autoparser::ErrorKind::Input, message))
}
