//! `chat-autoparser batch < requests.jsonl > results.jsonl` (DESIGN §5).
//!
//! One JSON request per line, one JSON result per line, in order. Each
//! template's compile and analysis is cached by path. A request that fails
//! gives `{"id", "ok": false, "error": {"kind", "message"}}` and the batch
//! goes on; only unreadable stdin/stdout end it. Each request line becomes
//! a `ChatRequest` for the library's front door (`Chat::prepare`).
//!
//! Fields besides DESIGN's: `chunk: N` feeds `parse` input through the
//! streaming parser in N-byte pieces (on character boundaries) and returns the
//! message the deltas add up to; `timing: true` adds `elapsed_us`;
//! `template_name` picks among named templates; `kwargs` (an object) adds
//! template variables; `call_ids: SEED` mints call ids; `repeat: N` parses
//! the input N times and adds `parse_us`, the mean time of one parse alone;
//! `format` picks a grammar export (`gbnf`, `structural-tag`, `lark`,
//! `response-template`). A field the batch
//! does not know is refused (a misspelt field must not be ignored quietly).
//! A parse whose prompt cannot render is parsed without it, with the reason
//! in `"warnings"` beside the result.
//!
//! Lines are read as bytes: invalid UTF-8 and JSON's lone surrogates
//! (`"\ud800"`, which serde_json refuses) become U+FFFD instead of failing
//! the request. On a terminal, a progress line on stderr counts the requests.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

use chat_autoparser::parser::{char_chunks, Continue};
use chat_autoparser::{Chat, ChatRequest, ErrorKind, Export, OutputParser, ToolChoice};
use serde_json::{json, Value};

use crate::parse_cmd::{default_messages, reasoning_format};
use crate::{load_path, stdout_failure, Failure};

/// The request fields `batch` knows (DESIGN §5 and the ones above).
const FIELDS: &[&str] = &[
    "id",
    "op",
    "template",
    "template_name",
    "messages",
    "tools",
    "enable_thinking",
    "reasoning",
    "tool_choice",
    "parallel_tool_calls",
    "add_generation_prompt",
    "continue_final_message",
    "response_schema",
    "partial",
    "input",
    "chunk",
    "timing",
    "kwargs",
    "call_ids",
    "repeat",
    "format",
];

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Requests: {\"id\", \"op\": parse|analyze|grammar|render, \"template\": PATH, ...} (DESIGN §5)."
)]
pub struct Args {}

/// Compiled templates and their analyses, by path, template name and
/// whether tools were given (which picks among named templates).
#[derive(Default)]
struct Cache {
    templates: HashMap<(String, Option<String>, bool), Chat>,
}

impl Cache {
    fn get(&mut self, path: &str, name: Option<&str>, tools: bool) -> Result<&Chat, Failure> {
        let key = (path.to_owned(), name.map(str::to_owned), tools);
        if !self.templates.contains_key(&key) {
            let template = load_path(std::path::Path::new(path), name, tools)?;
            self.templates.insert(key.clone(), Chat::new(template)?);
        }
        Ok(&self.templates[&key])
    }
}

pub fn run(_args: &Args) -> Result<(), Failure> {
    let mut cache = Cache::default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut progress = Progress::new();
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if input
            .read_until(b'\n', &mut line)
            .map_err(|e| io_failure(format!("stdin: {e}")))?
            == 0
        {
            break;
        }
        let text = lenient_json_text(&line);
        if text.trim().is_empty() {
            continue;
        }
        let result = answer(&mut cache, &text);
        writeln!(out, "{result}").map_err(stdout_failure)?;
        progress.tick();
    }
    progress.done();
    Ok(())
}

/// A request line as JSON text serde_json accepts: invalid UTF-8 and lone
/// UTF-16 surrogate escapes become U+FFFD (what a lenient decoder makes of
/// them), everything else unchanged.
pub fn lenient_json_text(bytes: &[u8]) -> Cow<'_, str> {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains("\\u") {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        let unit = |s: &str| {
            s.strip_prefix("\\u")
                .and_then(|h| h.get(..4))
                .and_then(|h| u16::from_str_radix(h, 16).ok())
        };
        let taken = match unit(escape) {
            // A high surrogate with its low one: a character, kept.
            Some(0xD800..=0xDBFF)
                if escape
                    .get(6..)
                    .and_then(unit)
                    .is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) =>
            {
                12
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str("\\uFFFD");
                rest = &escape[6..];
                continue;
            }
            // Any other escape: the backslash and the character after it.
            _ => escape.chars().take(2).map(char::len_utf8).sum(),
        };
        out.push_str(&escape[..taken]);
        rest = &escape[taken..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The progress line a long batch shows on a terminal (none otherwise).
struct Progress {
    on: bool,
    done: u64,
    shown: Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            done: 0,
            shown: Instant::now(),
        }
    }

    fn tick(&mut self) {
        self.done += 1;
        // Twice a second at most: the line is for people, not a log.
        if self.on && self.shown.elapsed() >= Duration::from_millis(500) {
            eprint!("\rchat-autoparser: {} requests answered", self.done);
            self.shown = Instant::now();
        }
    }

    fn done(&self) {
        if self.on && self.done > 0 {
            eprint!("\r\x1b[2K");
        }
    }
}

fn io_failure(message: String) -> Failure {
    Failure::Library(chat_autoparser::Error::new(ErrorKind::Io, message))
}

/// The result line for one request line.
fn answer(cache: &mut Cache, line: &str) -> Value {
    let request: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return failure(Value::Null, "input", &format!("request is not JSON: {e}")),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let started = Instant::now();
    match dispatch(cache, &request) {
        Ok((mut result, warnings)) => {
            if request.get("timing").and_then(Value::as_bool) == Some(true) {
                if let Some(obj) = result.as_object_mut() {
                    obj.insert(
                        "elapsed_us".into(),
                        json!(started.elapsed().as_micros() as u64),
                    );
                }
            }
            match warnings {
                None => json!({"id": id, "ok": true, "result": result}),
                Some(w) => json!({"id": id, "ok": true, "result": result, "warnings": [w]}),
            }
        }
        Err(Failure::Usage(m)) => failure(id, "usage", &m),
        // A request writes nothing to stdout itself; only the result line does.
        Err(Failure::ReaderGone) => failure(id, "input", "stdout closed"),
        Err(Failure::Library(e)) => {
            let kind = match e.kind() {
                ErrorKind::Input | ErrorKind::Io => "input",
                _ => "template",
            };
            failure(id, kind, &e.to_string())
        }
    }
}

fn failure(id: Value, kind: &str, message: &str) -> Value {
    json!({"id": id, "ok": false, "error": {"kind": kind, "message": message}})
}

/// The result of one request, and a warning to report beside it.
fn dispatch(cache: &mut Cache, request: &Value) -> Result<(Value, Option<String>), Failure> {
    if let Some(unknown) = request
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !FIELDS.contains(&k.as_str()))
    {
        return Err(Failure::Usage(format!(
            "unknown request field {unknown:?} (known: {})",
            FIELDS.join(", ")
        )));
    }
    let op = request.get("op").and_then(Value::as_str).unwrap_or("parse");
    let path = request
        .get("template")
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::Usage("request needs a \"template\" path".into()))?;
    let name = request.get("template_name").and_then(Value::as_str);
    let tools = request.get("tools").is_some_and(|t| !t.is_null());
    let chat = cache.get(path, name, tools)?;
    match op {
        "parse" => parse(chat, request),
        "analyze" => Ok((
            serde_json::to_value(chat.analysis()).unwrap_or_default(),
            None,
        )),
        "grammar" => Ok((grammar(chat, request)?, None)),
        "render" => Ok((render(chat, request)?, None)),
        other => Err(Failure::Usage(format!(
            "unknown op {other:?} (parse, analyze, grammar, render)"
        ))),
    }
}

/// The chat request a batch request gives.
pub fn options(request: &Value) -> Result<ChatRequest, Failure> {
    let mut o = ChatRequest::default().with_messages(default_messages());
    if let Some(m) = request.get("messages").and_then(Value::as_array) {
        o.messages = m.clone();
    }
    o.tools = request.get("tools").and_then(Value::as_array).cloned();
    o.enable_thinking = request.get("enable_thinking").and_then(Value::as_bool);
    if let Some(r) = request.get("reasoning").and_then(Value::as_str) {
        o.reasoning = reasoning_format(r)?;
    }
    if let Some(c) = request.get("tool_choice") {
        o.tool_choice = ToolChoice::from_json(c);
    }
    if let Some(p) = request.get("parallel_tool_calls").and_then(Value::as_bool) {
        o.parallel_tool_calls = p;
    }
    if let Some(a) = request
        .get("add_generation_prompt")
        .and_then(Value::as_bool)
    {
        o.add_generation_prompt = a;
    }
    if let Some(c) = request.get("continue_final_message") {
        o.continue_final_message = Continue::from_json(c).ok_or_else(|| {
            Failure::Usage(format!(
                "continue_final_message {c} (true, false, none, auto, reasoning, content)"
            ))
        })?;
    }
    o.response_schema = request
        .get("response_schema")
        .filter(|v| !v.is_null())
        .cloned();
    match request.get("kwargs") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => o.kwargs = map.clone(),
        Some(other) => {
            return Err(Failure::Usage(format!(
                "kwargs must be an object, not {other}"
            )))
        }
    }
    o.call_ids = request.get("call_ids").and_then(Value::as_u64);
    Ok(o)
}

fn parse(chat: &Chat, request: &Value) -> Result<(Value, Option<String>), Failure> {
    let prepared = chat.prepare(&options(request)?);
    let (parser, warning) = (prepared.parser()?, prepared.diagnostics.into_iter().next());
    let input = request.get("input").and_then(Value::as_str).unwrap_or("");
    let partial = request
        .get("partial")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let chunk = request.get("chunk").and_then(Value::as_u64).unwrap_or(0) as usize;
    let message = if chunk == 0 {
        parser.parse_report(input, partial).message
    } else {
        let mut stream = parser.stream();
        for piece in char_chunks(input, chunk) {
            stream.push(piece);
        }
        if !partial {
            stream.finish();
        }
        // What the deltas add up to (plus the prefill, which is not re-sent).
        stream.message()
    };
    let mut result = serde_json::to_value(message).unwrap_or_default();
    if let Some(n) = request
        .get("repeat")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
    {
        if let Some(obj) = result.as_object_mut() {
            obj.insert(
                "parse_us".into(),
                json!(mean_parse_us(&parser, input, partial, n)),
            );
        }
    }
    Ok((result, warning))
}

/// The mean time of one parse of `input`, over `n` parses: the parser is
/// built once, no JSON is written, so harnesses compare the library alone.
fn mean_parse_us(parser: &OutputParser, input: &str, partial: bool, n: u64) -> f64 {
    let started = Instant::now();
    for _ in 0..n {
        std::hint::black_box(parser.parse_report(std::hint::black_box(input), partial));
    }
    started.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// `op: grammar`: the export `format` names for the request's tools and choices.
fn grammar(chat: &Chat, request: &Value) -> Result<Value, Failure> {
    let format = request
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or("gbnf");
    let format = Export::from_name(format).ok_or_else(|| {
        Failure::Usage(format!(
            "unknown grammar format {format:?} ({})",
            Export::NAMES
        ))
    })?;
    // A conversation the template refuses leaves the thinking switch to say
    // where reasoning stands when the output starts.
    Ok(chat.prepare(&options(request)?).export(format)?)
}

/// `op: render`: the prompt text (`{"text": ...}`), polyfills applied where needed.
fn render(chat: &Chat, request: &Value) -> Result<Value, Failure> {
    let o = options(request)?.with_add_generation_prompt(
        request
            .get("add_generation_prompt")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    );
    Ok(json!({"text": chat.template().render_chat(&o.render_request())?}))
}
