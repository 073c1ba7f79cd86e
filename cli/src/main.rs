//! `chat-autoparser`: the debug command line over the library, a crate of its
//! own (`chat-autoparser-cli`) so that the library never depends on clap.
//!
//! Contract (`docs/cli.md`): exit 0 on success, 2 on bad usage, 1 on a template or
//! input error with a one-line message on stderr. Human output by default,
//! `--json` for machines. Arguments are parsed by clap (derive): `--help` on
//! the binary and every command, `--version`, usage errors with a hint.
//! Every usage error and failure on stderr starts with `chat-autoparser: `.

mod analyze_cmd;
mod batch_cmd;
mod check_cmd;
mod check_engines;
mod grammar_cmd;
mod lint_cmd;
mod parse_cmd;
mod render_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chat_autoparser::{ChatTemplate, Error, ErrorKind, TemplateConfig, TemplateSource};
use clap::{Parser, Subcommand};
use serde_json::{Map, Value};

const TEMPLATE_HELP: &str =
    "TEMPLATE is a .jinja file, a tokenizer_config.json, a Hugging Face model folder \
(chat_template.jinja or chat_template.json beside tokenizer_config.json) or a GGUF file.
Exit codes: 0 success, 1 template or input error (one line on stderr), 2 bad usage.";

#[derive(Parser)]
#[command(name = "chat-autoparser", version, about = "Reads LLM chat templates, parses model output into OpenAI messages, exports grammars.", after_help = TEMPLATE_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// What the analysis detects in a template; for a folder of templates, one summary row each
    Analyze(analyze_cmd::Args),
    /// Decode raw model output (stdin, any bytes) into an OpenAI-shaped assistant message
    Parse(parse_cmd::Args),
    /// The prompt a server sends (polyfills included), or training text with --jsonl
    Render(render_cmd::Args),
    /// The GBNF grammar that constrains the model to the template's tool format
    Grammar(grammar_cmd::Args),
    /// The template's capabilities and the rendering defects found
    Lint(lint_cmd::Args),
    /// One JSON request per stdin line, one JSON result per stdout line
    Batch(batch_cmd::Args),
    /// Will this template work? A verdict with evidence (exit 0 works, 3 warnings, 4 unsupported)
    Check(check_cmd::Args),
}

/// The template every command but `batch` reads.
#[derive(clap::Args, Debug, Clone)]
pub struct TemplateArg {
    /// A .jinja file, a tokenizer_config.json, a model folder or a GGUF file
    #[arg(value_name = "TEMPLATE")]
    pub template: PathBuf,
    /// Among named templates (a list in tokenizer_config.json), the one to use
    /// [default: tool_use when tools are given and it exists, else default]
    #[arg(long, value_name = "NAME")]
    pub template_name: Option<String>,
}

/// `--thinking on|off`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn get(value: Option<OnOff>) -> Option<bool> {
        value.map(|v| v == OnOff::On)
    }
}

/// `--kwargs JSON`: a JSON object of further template variables.
pub fn kwargs(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("expected a JSON object, e.g. '{\"reasoning_effort\": \"high\"}'".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// A command-line failure: bad usage (exit 2), a library error (exit 1),
/// stdout closed by its reader (`| head`): the output ends quietly, exit 0,
/// as Unix tools end (a panic on the broken pipe before); or a command's own
/// exit code, its output written (`check`'s verdicts).
pub enum Failure {
    Usage(String),
    Library(Error),
    ReaderGone,
    Exit(u8),
}

/// Writes `text` to stdout.
pub fn write_out(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(stdout_failure)
}

/// A failed write to stdout: the reader went away, or an I/O error.
pub fn stdout_failure(e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::ReaderGone,
        _ => Failure::Library(Error::new(ErrorKind::Io, format!("stdout: {e}"))),
    }
}

/// An input error (exit 1).
pub fn input_failure(message: String) -> Failure {
    Failure::Library(Error::new(ErrorKind::Input, message))
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Library(e)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_exit(e),
    };
    let result = match cli.command {
        Command::Analyze(a) => analyze_cmd::run(&a),
        Command::Parse(a) => parse_cmd::run(&a),
        Command::Render(a) => render_cmd::run(&a),
        Command::Grammar(a) => grammar_cmd::run(&a),
        Command::Lint(a) => lint_cmd::run(&a),
        Command::Batch(a) => batch_cmd::run(&a),
        Command::Check(a) => check_cmd::run(&a),
    };
    match result {
        Ok(()) | Err(Failure::ReaderGone) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("chat-autoparser: {msg}\nFor more information, try '--help'.");
            ExitCode::from(2)
        }
        Err(Failure::Library(e)) => {
            eprintln!("chat-autoparser: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Exit(code)) => ExitCode::from(code),
    }
}

/// What clap reports: help and version on stdout (exit 0); a usage error on
/// stderr with its hint (exit 2), coloured only on a terminal.
fn usage_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind as K;
    if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
        // Help printed to a closed pipe is no failure either.
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        e.render().ansi().to_string()
    } else {
        e.render().to_string()
    };
    eprint!("chat-autoparser: {text}");
    ExitCode::from(2)
}

/// Loads and compiles the template named on the command line; `tools`
/// says whether the request gives tools (it picks `tool_use` among named
/// templates, as transformers does).
pub fn load_template(arg: &TemplateArg, tools: bool) -> Result<ChatTemplate, Failure> {
    load_path(&arg.template, arg.template_name.as_deref(), tools)
}

/// Loads and compiles the template at `path`.
pub fn load_path(
    path: &std::path::Path,
    name: Option<&str>,
    tools: bool,
) -> Result<ChatTemplate, Failure> {
    compile(&TemplateSource::load_named(path, name, tools)?)
}

/// Compiles a loaded template with its own special tokens.
pub fn compile(source: &TemplateSource) -> Result<ChatTemplate, Failure> {
    Ok(ChatTemplate::from_source(
        source,
        &TemplateConfig::default(),
    )?)
}

/// Reads a JSON array from a file (`--tools`, `--messages`).
pub fn read_array(path: &std::path::Path) -> Result<Vec<Value>, Failure> {
    let shown = path.display();
    let text = std::fs::read(path)
        .map_err(|e| Failure::Library(Error::new(ErrorKind::Io, format!("{shown}: {e}"))))?;
    parse_array(&shown.to_string(), &text)
}

/// Reads all of stdin (`-` for a file, or input left to stdin).
pub fn read_stdin() -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
        .map_err(|e| input_failure(format!("stdin: {e}")))?;
    Ok(bytes)
}

/// `text` (read from `shown`) as a JSON array.
pub fn parse_array(shown: &str, text: &[u8]) -> Result<Vec<Value>, Failure> {
    match serde_json::from_str::<Value>(&batch_cmd::lenient_json_text(text)) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(input_failure(format!("{shown}: expected a JSON array"))),
        Err(e) => Err(input_failure(format!("{shown}: {e}"))),
    }
}
