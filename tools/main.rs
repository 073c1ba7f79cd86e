//! `chat-autoparser`: the debug command line over the library.
//!
//! Contract (DESIGN §5): exit 0 on success, 2 on bad usage, 1 on a template or
//! input error with a one-line message on stderr. Human output by default,
//! `--json` for machines.

mod analyze_cmd;
mod batch_cmd;
mod grammar_cmd;
mod lint_cmd;
mod parse_cmd;
mod render_cmd;

use std::io::Write;
use std::process::ExitCode;

use chat_autoparser::{ChatTemplate, Error, ErrorKind, TemplateConfig, TemplateSource};

const USAGE: &str = "usage:
  chat-autoparser analyze TEMPLATE [--json]
  chat-autoparser parse   TEMPLATE [--tools FILE] [--messages FILE] [--thinking on|off]
                          [--reasoning extract|inline] [--partial] [--strict]  < output
  chat-autoparser render  TEMPLATE --messages FILE [--tools FILE] [--add-generation-prompt]
                          [--thinking on|off] [--tool-formatting auto|native|manual]
  chat-autoparser render  TEMPLATE --jsonl [--messages FILE.jsonl] [flags as above]
                          (one {\"messages\": [...], \"tools\": [...]} per input line, from stdin
                          without --messages; one rendered text per output line, as a JSON string)
  chat-autoparser grammar TEMPLATE [--tools FILE] [--tool-choice auto|required|none|NAME] [--parallel]
                          [--thinking on|off] [--messages FILE] [--json]
  chat-autoparser lint    TEMPLATE [--json]
  chat-autoparser batch   < requests.jsonl > results.jsonl
TEMPLATE is a .jinja file or a tokenizer_config.json";

/// A command-line failure: bad usage (exit 2), a library error (exit 1), or
/// stdout closed by its reader (`| head`): the output ends quietly, exit 0,
/// as Unix tools end (a panic on the broken pipe before).
pub enum Failure {
    Usage(String),
    Library(Error),
    ReaderGone,
}

/// Writes `text` to stdout.
pub fn write_out(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(stdout_failure)
}

/// A failed write to stdout: the reader went away, or an I/O error.
pub fn stdout_failure(e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::ReaderGone,
        _ => Failure::Library(Error::new(ErrorKind::Io, format!("stdout: {e}"))),
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Library(e)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) | Err(Failure::ReaderGone) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("chat-autoparser: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Library(e)) => {
            eprintln!("chat-autoparser: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    match args.first().map(String::as_str) {
        Some("analyze") => analyze_cmd::run(&args[1..]),
        Some("parse") => parse_cmd::run(&args[1..]),
        Some("batch") => batch_cmd::run(&args[1..]),
        Some("render") => render_cmd::run(&args[1..]),
        Some("lint") => lint_cmd::run(&args[1..]),
        Some("grammar") => grammar_cmd::run(&args[1..]),
        Some("-h" | "--help" | "help") => write_out(&format!("{USAGE}\n")),
        Some(other) => Err(Failure::Usage(format!("unknown command {other:?}"))),
        None => Err(Failure::Usage("missing command".into())),
    }
}

/// The arguments of a command that takes `TEMPLATE [--json]` (`analyze`,
/// `lint`): the template path and whether JSON was asked for.
pub fn template_and_json(command: &str, args: &[String]) -> Result<(String, bool), Failure> {
    let mut path = None;
    let mut json = false;
    for arg in args {
        match arg.as_str() {
            "--json" => json = true,
            flag if flag.starts_with("--") => return Err(Failure::Usage(format!("unknown option {flag}"))),
            p if path.is_none() => path = Some(p.to_owned()),
            extra => return Err(Failure::Usage(format!("unexpected argument {extra:?}"))),
        }
    }
    let path = path.ok_or_else(|| Failure::Usage(format!("{command} needs a TEMPLATE")))?;
    Ok((path, json))
}

/// Loads and compiles the template named on the command line.
pub fn load_template(path: &str) -> Result<ChatTemplate, Failure> {
    let source = TemplateSource::load(std::path::Path::new(path))?;
    Ok(ChatTemplate::from_source(&source, &TemplateConfig::default())?)
}
