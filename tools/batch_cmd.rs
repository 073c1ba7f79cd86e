//! `chat-autoparser batch < requests.jsonl > results.jsonl` (DESIGN §5).
//!
//! One JSON request per line, one JSON result per line, in order. Each
//! template's compile and analysis is cached by path. A request that fails
//! gives `{"id", "ok": false, "error": {"kind", "message"}}` and the batch
//! goes on; only unreadable stdin/stdout end it.
//!
//! Fields besides DESIGN's: `chunk: N` feeds `parse` input through the
//! streaming parser in N-byte pieces (on character boundaries) and returns the
//! message the deltas add up to; `timing: true` adds `elapsed_us`.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use chat_autoparser::parser::{char_chunks, Continue};
use chat_autoparser::{Analysis, ChatTemplate, ErrorKind, GrammarConfig, RenderRequest, ToolChoice};
use serde_json::{json, Value};

use crate::parse_cmd::{reasoning_format, ParseOptions};
use crate::{load_template, stdout_failure, Failure};

/// Compiled templates and their analyses, by path.
#[derive(Default)]
struct Cache {
    templates: HashMap<String, (ChatTemplate, Analysis)>,
}

impl Cache {
    fn get(&mut self, path: &str) -> Result<&(ChatTemplate, Analysis), Failure> {
        if !self.templates.contains_key(path) {
            let template = load_template(path)?;
            let analysis = template.analyze()?;
            self.templates.insert(path.to_string(), (template, analysis));
        }
        Ok(&self.templates[path])
    }
}

pub fn run(args: &[String]) -> Result<(), Failure> {
    if let Some(extra) = args.first() {
        return Err(Failure::Usage(format!("batch takes no arguments (got {extra:?}); requests come on stdin")));
    }
    let mut cache = Cache::default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| io_failure(format!("stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let result = answer(&mut cache, &line);
        writeln!(out, "{result}").map_err(stdout_failure)?;
    }
    Ok(())
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
        Ok(mut result) => {
            if request.get("timing").and_then(Value::as_bool) == Some(true) {
                if let Some(obj) = result.as_object_mut() {
                    obj.insert("elapsed_us".into(), json!(started.elapsed().as_micros() as u64));
                }
            }
            json!({"id": id, "ok": true, "result": result})
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

fn dispatch(cache: &mut Cache, request: &Value) -> Result<Value, Failure> {
    let op = request.get("op").and_then(Value::as_str).unwrap_or("parse");
    let path = request
        .get("template")
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::Usage("request needs a \"template\" path".into()))?;
    let (template, analysis) = cache.get(path)?;
    match op {
        "parse" => parse(template, analysis, request),
        "analyze" => Ok(serde_json::to_value(analysis).expect("analysis serializes")),
        "grammar" => grammar(template, analysis, request),
        "render" => render(template, request),
        other => Err(Failure::Usage(format!("unknown op {other:?} (parse, analyze, grammar, render)"))),
    }
}

/// The parse options a request gives.
pub fn options(request: &Value) -> Result<ParseOptions, Failure> {
    let mut o = ParseOptions::default();
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
    if let Some(a) = request.get("add_generation_prompt").and_then(Value::as_bool) {
        o.add_generation_prompt = a;
    }
    if let Some(c) = request.get("continue_final_message") {
        o.continue_final_message = Continue::from_json(c).ok_or_else(|| {
            Failure::Usage(format!("continue_final_message {c} (true, false, none, auto, reasoning, content)"))
        })?;
    }
    o.response_schema = request.get("response_schema").filter(|v| !v.is_null()).cloned();
    Ok(o)
}

fn parse(template: &ChatTemplate, analysis: &Analysis, request: &Value) -> Result<Value, Failure> {
    let parser = options(request)?.parser(template, analysis)?;
    let input = request.get("input").and_then(Value::as_str).unwrap_or("");
    let partial = request.get("partial").and_then(Value::as_bool).unwrap_or(false);
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
    Ok(serde_json::to_value(message).expect("messages serialize"))
}

/// `op: grammar`: the GBNF export for the request's tools and choices.
fn grammar(template: &ChatTemplate, analysis: &Analysis, request: &Value) -> Result<Value, Failure> {
    let o = options(request)?;
    // The conversation's prompt says where reasoning stands when the output
    // starts; a conversation the template refuses leaves the thinking switch.
    let prompt = o.prompt(template, analysis).ok().map(|(prompt, _)| prompt);
    let config = GrammarConfig {
        tools: o.tools.unwrap_or_default(),
        tool_choice: o.tool_choice,
        parallel_tool_calls: o.parallel_tool_calls,
        response_schema: o.response_schema,
        enable_thinking: o.enable_thinking,
        prompt,
    };
    let grammar = analysis.grammar(&config)?;
    Ok(serde_json::to_value(grammar).expect("grammars serialize"))
}

/// `op: render`: the prompt text (`{"text": ...}`), polyfills applied where needed.
fn render(template: &ChatTemplate, request: &Value) -> Result<Value, Failure> {
    let o = options(request)?;
    let render = RenderRequest {
        messages: o.messages,
        tools: o.tools,
        add_generation_prompt: request.get("add_generation_prompt").and_then(Value::as_bool).unwrap_or(false),
        enable_thinking: o.enable_thinking,
        ..Default::default()
    };
    Ok(json!({"text": template.render_chat(&render)?}))
}
