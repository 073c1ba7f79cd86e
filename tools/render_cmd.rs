//! `chat-autoparser render TEMPLATE --messages FILE [--tools FILE]
//! [--add-generation-prompt] [--thinking on|off] [--tool-formatting auto|native|manual] [--jsonl]`:
//! the prompt a server would send (DESIGN §5), polyfills included
//! (`ChatTemplate::render_chat`).
//!
//! With `--jsonl`, each input line `{"messages": [...], "tools": [...]}` (from
//! `--messages FILE` when given, else stdin; `tools` optional, blank lines
//! skipped) becomes one output line: the rendered text as a JSON string, i.e.
//! the conversation in the model's own training format. The other flags apply
//! to every line. A bad line stops the run with exit 1 and its line number.

use std::io::{BufRead, Write};

use chat_autoparser::template::ToolFormatting;
use chat_autoparser::{ChatTemplate, Error, ErrorKind, RenderRequest};
use serde_json::Value as Json;

use crate::{load_template, stdout_failure, write_out, Failure};

#[derive(Default)]
struct Options {
    template: Option<String>,
    messages: Option<String>,
    tools: Option<String>,
    add_generation_prompt: bool,
    thinking: Option<bool>,
    tool_formatting: ToolFormatting,
    jsonl: bool,
}

pub fn run(args: &[String]) -> Result<(), Failure> {
    let options = parse(args)?;
    let template = load_template(options.template.as_deref().unwrap_or_default())?;
    if options.jsonl {
        return render_lines(&template, &options);
    }
    let path = options.messages.as_deref().ok_or_else(|| Failure::Usage("render needs --messages FILE".into()))?;
    let messages = json_array(&read(path)?, path)?;
    let tools = options.tools.as_deref().map(|p| read(p).and_then(|t| json_array(&t, p))).transpose()?;
    let text = template.render_chat(&request(&options, messages, tools))?;
    write_out(&text)
}

fn parse(args: &[String]) -> Result<Options, Failure> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| Failure::Usage(format!("{flag} needs a value")));
        match arg.as_str() {
            "--messages" => o.messages = Some(value("--messages")?),
            "--tools" => o.tools = Some(value("--tools")?),
            "--add-generation-prompt" => o.add_generation_prompt = true,
            "--jsonl" => o.jsonl = true,
            "--thinking" => o.thinking = Some(on_off(&value("--thinking")?)?),
            "--tool-formatting" => o.tool_formatting = formatting(&value("--tool-formatting")?)?,
            flag if flag.starts_with("--") => return Err(Failure::Usage(format!("unknown option {flag}"))),
            p if o.template.is_none() => o.template = Some(p.to_owned()),
            extra => return Err(Failure::Usage(format!("unexpected argument {extra:?}"))),
        }
    }
    if o.template.is_none() {
        return Err(Failure::Usage("render needs a TEMPLATE".into()));
    }
    Ok(o)
}

fn on_off(value: &str) -> Result<bool, Failure> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(Failure::Usage(format!("--thinking takes on or off, not {other:?}"))),
    }
}

fn formatting(value: &str) -> Result<ToolFormatting, Failure> {
    match value {
        "auto" => Ok(ToolFormatting::Auto),
        "native" => Ok(ToolFormatting::Native),
        "manual" => Ok(ToolFormatting::Manual),
        other => Err(Failure::Usage(format!("--tool-formatting takes auto, native or manual, not {other:?}"))),
    }
}

fn request(o: &Options, messages: Vec<Json>, tools: Option<Vec<Json>>) -> RenderRequest {
    RenderRequest {
        messages,
        tools,
        add_generation_prompt: o.add_generation_prompt,
        enable_thinking: o.thinking,
        tool_formatting: o.tool_formatting,
        ..Default::default()
    }
}

fn read(path: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| Failure::Library(Error::new(ErrorKind::Io, format!("{path}: {e}"))))
}

fn input_error(message: String) -> Failure {
    Failure::Library(Error::new(ErrorKind::Input, message))
}

/// A JSON array of objects (OpenAI messages or tools).
fn json_array(text: &str, what: &str) -> Result<Vec<Json>, Failure> {
    match serde_json::from_str::<Json>(text) {
        Ok(Json::Array(items)) => Ok(items),
        Ok(_) => Err(input_error(format!("{what}: expected a JSON array"))),
        Err(e) => Err(input_error(format!("{what}: {e}"))),
    }
}

/// One JSONL line: `{"messages": [...], "tools": [...]}`.
fn line_request(o: &Options, line: &str) -> Result<RenderRequest, String> {
    let value: Json = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let array = |key: &str| match value.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Array(items)) => Ok(Some(items.clone())),
        Some(_) => Err(format!("\"{key}\" must be an array")),
    };
    let messages = array("messages")?.ok_or("missing \"messages\"")?;
    Ok(request(o, messages, array("tools")?))
}

fn render_lines(template: &ChatTemplate, o: &Options) -> Result<(), Failure> {
    let input: Box<dyn BufRead> = match o.messages.as_deref() {
        Some(path) => Box::new(std::io::Cursor::new(read(path)?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| input_error(format!("line {}: {e}", i + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        let request = line_request(o, &line).map_err(|e| input_error(format!("line {}: {e}", i + 1)))?;
        let text = template
            .render_chat(&request)
            .map_err(|e| input_error(format!("line {}: {e}", i + 1)))?;
        let encoded = serde_json::to_string(&text).unwrap_or_default();
        writeln!(out, "{encoded}").map_err(stdout_failure)?;
    }
    out.flush().map_err(stdout_failure)
}
