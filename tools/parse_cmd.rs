//! `chat-autoparser parse TEMPLATE [--tools FILE] [--thinking on|off]
//! [--reasoning extract|inline] [--partial] [--strict] [--messages FILE]` < output:
//! decode raw model output into an OpenAI-shaped assistant message (JSON).
//!
//! The prompt the output continues is rendered from `--messages` (default: one
//! user turn) so that a generation prompt that opens or closes a reasoning
//! block is taken into account. Problems in the output are printed to stderr
//! as warnings; `--strict` makes the first one an error (exit 1).

use std::io::Read;

use chat_autoparser::parser::{continuation_prompt, Continue, Parsed};
use chat_autoparser::{Analysis, ChatTemplate, OutputParser, ParserConfig, ReasoningFormat, RenderRequest, ToolChoice};
use serde_json::{json, Value};

use crate::{load_template, write_out, Failure};

/// The request fields that shape a parse (shared with `batch`).
#[derive(Debug, Clone)]
pub struct ParseOptions {
    pub messages: Vec<Value>,
    pub tools: Option<Vec<Value>>,
    pub enable_thinking: Option<bool>,
    pub reasoning: ReasoningFormat,
    pub tool_choice: ToolChoice,
    pub parallel_tool_calls: bool,
    pub add_generation_prompt: bool,
    pub continue_final_message: Continue,
    pub response_schema: Option<Value>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            messages: vec![json!({"role": "user", "content": "Hi"})],
            tools: None,
            enable_thinking: None,
            reasoning: ReasoningFormat::Extract,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            add_generation_prompt: true,
            continue_final_message: Continue::No,
            response_schema: None,
        }
    }
}

impl ParseOptions {
    /// Renders the prompt and builds the parser.
    pub fn parser(&self, template: &ChatTemplate, analysis: &Analysis) -> Result<OutputParser, Failure> {
        let request = RenderRequest {
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            add_generation_prompt: self.add_generation_prompt && !self.continue_final_message.is_continued(),
            enable_thinking: self.enable_thinking,
            extra: Default::default(),
            ..Default::default()
        };
        let (prompt, prefill) = continuation_prompt(template, analysis, &request, self.continue_final_message)?;
        let config = ParserConfig {
            tools: self.tools.clone().unwrap_or_default(),
            tool_choice: self.tool_choice.clone(),
            parallel_tool_calls: self.parallel_tool_calls,
            enable_thinking: self.enable_thinking,
            reasoning: self.reasoning,
            prompt: Some(prompt),
            response_schema: self.response_schema.clone(),
            prefill,
            call_ids: None,
        };
        Ok(analysis.parser(&config)?)
    }
}

pub fn run(args: &[String]) -> Result<(), Failure> {
    let mut path = None;
    let mut options = ParseOptions::default();
    let (mut partial, mut strict) = (false, false);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| Failure::Usage(format!("{flag} needs a value")));
        match arg.as_str() {
            "--tools" => options.tools = Some(read_array(&value("--tools")?)?),
            "--messages" => options.messages = read_array(&value("--messages")?)?,
            "--thinking" => options.enable_thinking = Some(on_off(&value("--thinking")?)?),
            "--reasoning" => options.reasoning = reasoning_format(&value("--reasoning")?)?,
            "--partial" => partial = true,
            "--strict" => strict = true,
            flag if flag.starts_with("--") => return Err(Failure::Usage(format!("unknown option {flag}"))),
            p if path.is_none() => path = Some(p.to_owned()),
            extra => return Err(Failure::Usage(format!("unexpected argument {extra:?}"))),
        }
    }
    let path = path.ok_or_else(|| Failure::Usage("parse needs a TEMPLATE".into()))?;
    let template = load_template(&path)?;
    let analysis = template.analyze()?;
    let parser = options.parser(&template, &analysis)?;
    let mut output = String::new();
    std::io::stdin()
        .read_to_string(&mut output)
        .map_err(|e| Failure::Library(chat_autoparser::Error::new(chat_autoparser::ErrorKind::Io, format!("stdin: {e}"))))?;
    let Parsed { message, diagnostics } = parser.parse_report(&output, partial);
    if let (true, Some(first)) = (strict, diagnostics.first()) {
        return Err(Failure::Library(chat_autoparser::Error::new(chat_autoparser::ErrorKind::Input, first.to_string())));
    }
    for d in &diagnostics {
        eprintln!("chat-autoparser: warning: {d}");
    }
    write_out(&format!("{}\n", serde_json::to_string_pretty(&message).expect("messages serialize")))
}

/// Reads a JSON array from a file (`--tools`, `--messages`).
pub fn read_array(path: &str) -> Result<Vec<Value>, Failure> {
    let input = |m: String| Failure::Library(chat_autoparser::Error::new(chat_autoparser::ErrorKind::Input, m));
    let text = std::fs::read_to_string(path).map_err(|e| input(format!("{path}: {e}")))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(input(format!("{path}: expected a JSON array"))),
        Err(e) => Err(input(format!("{path}: {e}"))),
    }
}

pub fn on_off(v: &str) -> Result<bool, Failure> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(Failure::Usage(format!("--thinking takes on or off, not {other:?}"))),
    }
}

pub fn reasoning_format(v: &str) -> Result<ReasoningFormat, Failure> {
    match v {
        "extract" => Ok(ReasoningFormat::Extract),
        "inline" => Ok(ReasoningFormat::Inline),
        other => Err(Failure::Usage(format!("--reasoning takes extract or inline, not {other:?}"))),
    }
}
