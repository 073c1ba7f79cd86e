//! `chat-autoparser render TEMPLATE [--messages FILE] [--tools FILE]
//! [--add-generation-prompt] [--thinking on|off] [--tool-formatting auto|native|manual] [--jsonl]`:
//! the prompt a server would send (`docs/cli.md`), polyfills included
//! (`ChatTemplate::render_chat`). The conversation is read from `--messages
//! FILE`, else from stdin (`--messages -` names it; without `--messages`,
//! stdin on a terminal is a usage error rather than a silent wait).
//!
//! With `--jsonl`, each input line `{"messages": [...], "tools": [...]}` (from
//! `--messages FILE` when given, else stdin; `tools` optional, blank lines
//! skipped) becomes one output line: the rendered text as a JSON string, i.e.
//! the conversation in the model's own training format. With `--spans`, the
//! line is `{"text": ..., "assistant_spans": [[start, end], ...]}` instead:
//! the byte ranges of the text the model generated (see `spans`). The other
//! flags apply to every line. A bad line stops the run with exit 1 and its
//! line number.
//!
//! Earlier calls on a template that lists tools but never renders calls are
//! written in the model's own format as its analysis finds it (the front
//! door's template, `Chat`); the analysis runs only for a render that needs
//! it, and for every `--jsonl` run (training text replays calls).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use chat_autoparser::spans::render_with_spans;
use chat_autoparser::template::ToolFormatting;
use chat_autoparser::{Chat, ChatTemplate, Error, ErrorKind, RenderRequest};
use serde_json::{Map, Value as Json};

use crate::{
    input_failure as input_error, kwargs, load_template, parse_array, read_array, read_stdin,
    stdout_failure, write_out, Failure, OnOff, TemplateArg,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// The conversation (a JSON array); with --jsonl, a file of JSONL lines; - for stdin [default: stdin]
    #[arg(long, value_name = "FILE")]
    messages: Option<PathBuf>,
    /// OpenAI-format tools (a JSON array)
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Append the assistant header so the model continues as the assistant
    #[arg(long)]
    add_generation_prompt: bool,
    /// Set the template's enable_thinking variable
    #[arg(long, value_enum)]
    thinking: Option<OnOff>,
    /// How the tool path is rendered: polyfilled where the template lacks it (auto),
    /// as written (native), or always the Hermes block (manual)
    #[arg(long, value_enum, default_value = "auto")]
    tool_formatting: Formatting,
    /// Training text: one {"messages", "tools"} per input line, one rendered JSON string per output line
    #[arg(long)]
    jsonl: bool,
    /// With --jsonl: {"text", "assistant_spans": [[start, end], ...]}, the byte ranges the model generated
    #[arg(long, requires = "jsonl")]
    spans: bool,
    /// Further template variables, a JSON object (e.g. '{"reasoning_effort": "high"}')
    #[arg(long, value_name = "JSON", value_parser = kwargs)]
    kwargs: Option<Map<String, Json>>,
}

/// `--tool-formatting`.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum Formatting {
    Auto,
    Native,
    Manual,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let tools = args.tools.as_deref().map(read_array).transpose()?;
    if args.jsonl {
        // Each line may or may not give tools: pick the named template as if it does when --tools is given.
        let template = load_template(&args.template, tools.is_some())?;
        let renderer = match args.spans {
            // Spans are found from the analysis: it must run.
            true => Renderer::Chat(Box::new(Chat::new(template)?)),
            false => Renderer::new(template),
        };
        return render_lines(&renderer, args);
    }
    let messages = match messages_file(args) {
        Some(path) => read_array(path)?,
        None if args.messages.is_none() && std::io::stdin().is_terminal() => {
            return Err(Failure::Usage(
                "render needs --messages FILE or a conversation on stdin".into(),
            ))
        }
        None => parse_array("stdin", &read_stdin()?)?,
    };
    let template = load_template(&args.template, tools.is_some())?;
    let request = request(args, messages, tools);
    // Auto would go manual on a template with its own tools block: the
    // analysis may know the model's call format.
    let analyse = request.tool_formatting == ToolFormatting::Auto
        && template.capabilities().tools
        && template.tool_formatting_for(&request) == ToolFormatting::Manual;
    let renderer = match analyse {
        true => Renderer::new(template),
        false => Renderer::Plain(Box::new(template)),
    };
    write_out(&renderer.template().render_chat(&request)?)
}

/// The file `--messages` names; `None` for stdin (`-`, or no `--messages`).
fn messages_file(args: &Args) -> Option<&Path> {
    args.messages.as_deref().filter(|p| *p != Path::new("-"))
}

/// What renders: the front door's template when the analysis runs, else the
/// template alone (a template the analysis refuses still renders).
enum Renderer {
    Chat(Box<Chat>),
    Plain(Box<ChatTemplate>),
}

impl Renderer {
    fn new(template: ChatTemplate) -> Renderer {
        match template.analyze() {
            Ok(analysis) => Renderer::Chat(Box::new(Chat::with_analysis(template, analysis))),
            Err(_) => Renderer::Plain(Box::new(template)),
        }
    }

    fn template(&self) -> &ChatTemplate {
        match self {
            Renderer::Chat(chat) => chat.template(),
            Renderer::Plain(template) => template,
        }
    }
}

fn request(o: &Args, messages: Vec<Json>, tools: Option<Vec<Json>>) -> RenderRequest {
    RenderRequest::default()
        .with_messages(messages)
        .with_tools(tools)
        .with_add_generation_prompt(o.add_generation_prompt)
        .with_enable_thinking(OnOff::get(o.thinking))
        .with_tool_formatting(match o.tool_formatting {
            Formatting::Auto => ToolFormatting::Auto,
            Formatting::Native => ToolFormatting::Native,
            Formatting::Manual => ToolFormatting::Manual,
        })
        .with_extra(o.kwargs.clone().unwrap_or_default())
}

fn read(path: &std::path::Path) -> Result<String, Failure> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| {
            Failure::Library(Error::new(
                ErrorKind::Io,
                format!("{}: {e}", path.display()),
            ))
        })
}

/// One JSONL line: `{"messages": [...], "tools": [...]}`.
fn line_request(o: &Args, line: &str) -> Result<RenderRequest, String> {
    let value: Json = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let array = |key: &str| match value.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Array(items)) => Ok(Some(items.clone())),
        Some(_) => Err(format!("\"{key}\" must be an array")),
    };
    let messages = array("messages")?.ok_or("missing \"messages\"")?;
    Ok(request(o, messages, array("tools")?))
}

fn render_lines(renderer: &Renderer, o: &Args) -> Result<(), Failure> {
    let template = renderer.template();
    let input: Box<dyn BufRead> = match messages_file(o) {
        Some(path) => Box::new(std::io::Cursor::new(read(path)?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let analysis = match (renderer, o.spans) {
        (Renderer::Chat(chat), true) => Some(chat.analysis()),
        _ => None,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| input_error(format!("line {}: {e}", i + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        let request =
            line_request(o, &line).map_err(|e| input_error(format!("line {}: {e}", i + 1)))?;
        let encoded = match &analysis {
            Some(analysis) => {
                render_with_spans(template, analysis, &request).map(|s| serde_json::to_string(&s))
            }
            None => template
                .render_chat(&request)
                .map(|text| serde_json::to_string(&text)),
        }
        .map_err(|e| input_error(format!("line {}: {e}", i + 1)))?
        .unwrap_or_default();
        writeln!(out, "{encoded}").map_err(stdout_failure)?;
    }
    out.flush().map_err(stdout_failure)
}
