//! `chat-autoparser batch < requests.jsonl > results.jsonl` (the contract: `docs/cli.md`).
//!
//! One JSON request per line, one JSON result per line, in order. A request
//! that fails gives `{"id", "ok": false, "error": {"kind", "message"}}` and
//! the batch goes on; only unreadable stdin/stdout end it. Each request line
//! becomes a `ChatRequest` for the library's front door (`Chat::prepare`).
//!
//! Fields besides the commands' flags: `chunk: N` feeds `parse` input through the
//! streaming parser in N-byte pieces (on character boundaries) and returns the
//! message the deltas add up to; `timing: true` adds `elapsed_us` and
//! `cached` (whether the template's compile and analysis came from the
//! cache, so were not timed); `template_name` picks among named templates;
//! `kwargs` (an object) adds template variables; `call_ids: SEED` mints call
//! ids; `policy` (a preset's name, `lossless` or `compatible`, or an object of
//! policy fields, with an optional `preset` under them; docs/policies.md)
//! chooses what off-script output becomes; `repeat: N` (at most 10 000) parses the input N times and adds
//! `parse_us`, the mean time of one parse alone; `format` picks a grammar
//! export (`gbnf`, `structural-tag`, `lark`, `response-template`).
//!
//! Every field is checked before anything runs: a field the batch does not
//! know, or one of the wrong JSON type, is a usage error naming it (a
//! misspelt or mistyped field must not be ignored quietly); `null` is an
//! absent field. A parse whose prompt cannot render is parsed without it,
//! with the reason in `"warnings"` beside the result.
//!
//! Templates are compiled and analysed once: the cache keys on the file's
//! canonical path (so `./t.jinja`, `a/../t.jinja` and a symlink are one file)
//! and on what the file holds (so copies share one analysis); it keeps the
//! last 64 files and 64 contents used. A file is read once per batch: an
//! edit during the batch is not seen while the file stays cached.
//!
//! Lines are read as bytes: invalid UTF-8 and JSON's lone surrogates
//! (`"\ud800"`, which serde_json refuses) become U+FFFD instead of failing
//! the request. On a terminal, a progress line on stderr counts the requests.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::Hash;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use chat_autoparser::parser::char_chunks;
use chat_autoparser::prompt::Continue;
use chat_autoparser::{
    Chat, ChatRequest, ErrorKind, Export, OutputParser, Policy, TemplateSource, ToolChoice,
};
use serde_json::{json, Value};

use crate::parse_cmd::{default_messages, reasoning_format};
use crate::{compile, stdout_failure, Failure};

/// The most parses one request's `repeat` asks for: enough to time a parse,
/// few enough that a request ends (a typo of `1e12` must not run for days).
const MAX_REPEAT: u64 = 10_000;

/// How many template files, and how many template contents, the cache keeps
/// compiled and analysed (the least recently used go first).
const CACHE_CAPACITY: usize = 64;

/// The request fields `batch` knows (`docs/cli.md` and the ones above), with
/// what each holds.
const FIELDS: &[(&str, Type)] = &[
    ("id", Type::Any),
    ("op", Type::Text),
    ("template", Type::Text),
    ("template_name", Type::Text),
    ("messages", Type::List),
    ("tools", Type::List),
    ("enable_thinking", Type::Flag),
    ("reasoning", Type::Text),
    ("tool_choice", Type::TextOrObject),
    ("parallel_tool_calls", Type::Flag),
    ("add_generation_prompt", Type::Flag),
    ("continue_final_message", Type::FlagOrText),
    ("response_schema", Type::Schema),
    ("partial", Type::Flag),
    ("input", Type::Text),
    ("chunk", Type::Count(u64::MAX)),
    ("timing", Type::Flag),
    ("kwargs", Type::Object),
    ("call_ids", Type::Count(u64::MAX)),
    ("policy", Type::TextOrObject),
    ("repeat", Type::Count(MAX_REPEAT)),
    ("format", Type::Text),
];

/// The JSON a request field holds (besides `null`, which means absent).
#[derive(Clone, Copy)]
enum Type {
    Any,
    Text,
    Flag,
    List,
    Object,
    /// An integer from 0 to the bound.
    Count(u64),
    /// `tool_choice`: a name, or OpenAI's `{"type": "function", ...}` or
    /// `{"type": "allowed_tools", ...}`.
    TextOrObject,
    /// `continue_final_message`: `true`/`false` or a mode's name.
    FlagOrText,
    /// A JSON Schema: an object, or `true`/`false`.
    Schema,
}

impl Type {
    fn admits(self, value: &Value) -> bool {
        match self {
            Type::Any => true,
            Type::Text => value.is_string(),
            Type::Flag => value.is_boolean(),
            Type::List => value.is_array(),
            Type::Object => value.is_object(),
            Type::Count(max) => value.as_u64().is_some_and(|n| n <= max),
            Type::TextOrObject => value.is_string() || value.is_object(),
            Type::FlagOrText => value.is_boolean() || value.is_string(),
            Type::Schema => value.is_object() || value.is_boolean(),
        }
    }

    fn expected(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Type::Any => "any JSON",
            Type::Text => "a string",
            Type::Flag => "a boolean",
            Type::List => "an array",
            Type::Object => "an object",
            Type::Count(u64::MAX) => "a non-negative integer",
            Type::Count(max) => return Cow::Owned(format!("an integer from 0 to {max}")),
            Type::TextOrObject => "a string or an object",
            Type::FlagOrText => "a boolean or a string",
            Type::Schema => "an object or a boolean",
        })
    }
}

/// What a wrong value is, in an error message: numbers as written, the
/// rest by their type (a wrong 10 MB string is not repeated back).
fn described(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Refuses a request with a field `batch` does not know or of the wrong type.
fn check_fields(request: &Value) -> Result<(), Failure> {
    for (field, value) in request.as_object().into_iter().flatten() {
        let Some((_, ty)) = FIELDS.iter().find(|(name, _)| name == field) else {
            let known: Vec<&str> = FIELDS.iter().map(|(name, _)| *name).collect();
            return Err(Failure::Usage(format!(
                "unknown request field {field:?} (known: {})",
                known.join(", ")
            )));
        };
        if !value.is_null() && !ty.admits(value) {
            return Err(Failure::Usage(format!(
                "request field {field:?} must be {}, not {}",
                ty.expected(),
                described(value)
            )));
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Requests: {\"id\", \"op\": parse|analyze|grammar|render, \"template\": PATH, ...}.\n\
                  Every field and result shape: docs/cli.md."
)]
pub struct Args {}

/// A map of at most `capacity` entries that drops the least recently used.
struct Lru<K, V> {
    entries: HashMap<K, (V, u64)>,
    /// Counts uses: an entry's stamp is its last use.
    clock: u64,
    capacity: usize,
}

impl<K: Hash + Eq, V> Lru<K, V> {
    fn new(capacity: usize) -> Self {
        Lru {
            entries: HashMap::new(),
            clock: 0,
            capacity,
        }
    }

    fn get(&mut self, key: &K) -> Option<&V> {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        entry.1 = self.clock;
        Some(&entry.0)
    }

    fn insert(&mut self, key: K, value: V) {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            // Stamps are distinct, so this drops exactly one entry.
            if let Some(oldest) = self.entries.values().map(|(_, used)| *used).min() {
                self.entries.retain(|_, (_, used)| *used != oldest);
            }
        }
        self.clock += 1;
        self.entries.insert(key, (value, self.clock));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// What a template compiles from (all `ChatTemplate::from_source` reads):
/// two files that hold the same share one analysis.
#[derive(PartialEq, Eq, Hash)]
struct Content {
    template: String,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl Content {
    fn of(source: &TemplateSource) -> Content {
        Content {
            template: source.template.clone(),
            bos_token: source.bos_token.clone(),
            eos_token: source.eos_token.clone(),
        }
    }
}

/// A template file as requests name it: its canonical path, the template
/// name asked for and whether tools were given (which picks among named
/// templates).
type FileKey = (PathBuf, Option<String>, bool);

/// Compiled templates and their analyses, by file and by content.
struct Cache {
    by_file: Lru<FileKey, Rc<Chat>>,
    by_content: Lru<Content, Rc<Chat>>,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache {
            by_file: Lru::new(capacity),
            by_content: Lru::new(capacity),
        }
    }

    /// The compiled, analysed template at `path`, and whether the cache had it.
    fn get(
        &mut self,
        path: &Path,
        name: Option<&str>,
        tools: bool,
    ) -> Result<(Rc<Chat>, bool), Failure> {
        let canonical = std::fs::canonicalize(path)
            .map_err(|e| io_failure(format!("{}: {e}", path.display())))?;
        let file = (canonical, name.map(str::to_owned), tools);
        if let Some(chat) = self.by_file.get(&file) {
            return Ok((Rc::clone(chat), true));
        }
        // Loaded by the caller's spelling, so errors name the path as given.
        let source = TemplateSource::load_named(path, name, tools)?;
        let content = Content::of(&source);
        let (chat, cached) = match self.by_content.get(&content) {
            Some(chat) => (Rc::clone(chat), true),
            None => {
                let chat = Rc::new(Chat::new(compile(&source)?)?);
                self.by_content.insert(content, Rc::clone(&chat));
                (chat, false)
            }
        };
        self.by_file.insert(file, Rc::clone(&chat));
        Ok((chat, cached))
    }
}

pub fn run(_args: &Args) -> Result<(), Failure> {
    let mut cache = Cache::new(CACHE_CAPACITY);
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
        Ok(mut answered) => {
            if request.get("timing").and_then(Value::as_bool) == Some(true) {
                if let Some(obj) = answered.result.as_object_mut() {
                    obj.insert(
                        "elapsed_us".into(),
                        json!(started.elapsed().as_micros() as u64),
                    );
                    obj.insert("cached".into(), json!(answered.cached));
                }
            }
            match answered.warning {
                None => json!({"id": id, "ok": true, "result": answered.result}),
                Some(w) => {
                    json!({"id": id, "ok": true, "result": answered.result, "warnings": [w]})
                }
            }
        }
        Err(Failure::Usage(m)) => failure(id, "usage", &m),
        // A request writes nothing to stdout itself; only the result line does.
        Err(Failure::ReaderGone) => failure(id, "input", "stdout closed"),
        // No batch request runs a command with an exit code of its own.
        Err(Failure::Exit(code)) => failure(id, "input", &format!("exit {code}")),
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

/// What one request gave.
struct Answered {
    result: Value,
    /// A warning to report beside the result.
    warning: Option<String>,
    /// Whether the template's compile and analysis came from the cache.
    cached: bool,
}

fn dispatch(cache: &mut Cache, request: &Value) -> Result<Answered, Failure> {
    check_fields(request)?;
    let op = request.get("op").and_then(Value::as_str).unwrap_or("parse");
    let path = request
        .get("template")
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::Usage("request needs a \"template\" path".into()))?;
    let name = request.get("template_name").and_then(Value::as_str);
    let tools = request.get("tools").is_some_and(|t| !t.is_null());
    let (chat, cached) = cache.get(Path::new(path), name, tools)?;
    let (result, warning) = match op {
        "parse" => parse(&chat, request)?,
        "analyze" => (
            serde_json::to_value(chat.analysis()).unwrap_or_default(),
            None,
        ),
        "grammar" => (grammar(&chat, request)?, None),
        "render" => (render(&chat, request)?, None),
        other => {
            return Err(Failure::Usage(format!(
                "unknown op {other:?} (parse, analyze, grammar, render)"
            )))
        }
    };
    Ok(Answered {
        result,
        warning,
        cached,
    })
}

/// The chat request a batch request gives (its fields' types checked).
fn options(request: &Value) -> Result<ChatRequest, Failure> {
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
        o.tool_choice = ToolChoice::from_json(c).map_err(Failure::Library)?;
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
    if let Some(map) = request.get("kwargs").and_then(Value::as_object) {
        o.kwargs = map.clone();
    }
    o.call_ids = request.get("call_ids").and_then(Value::as_u64);
    if let Some(p) = request.get("policy").filter(|v| !v.is_null()) {
        o.policy = Policy::from_json(p).map_err(Failure::Usage)?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lru_drops_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get(&"a"), Some(&1));
        lru.insert("c", 3);
        let kept = |lru: &mut Lru<&str, i32>, key| lru.get(&key).copied();
        assert_eq!(
            (
                kept(&mut lru, "a"),
                kept(&mut lru, "b"),
                kept(&mut lru, "c")
            ),
            (Some(1), None, Some(3))
        );
        lru.insert("c", 4);
        assert_eq!((lru.len(), kept(&mut lru, "a")), (2, Some(1)));
    }

    /// A scratch folder holding `t.jinja`, a symlink to it, a copy of it
    /// and a different template.
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cap-batch-{test}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let text = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
        std::fs::write(dir.join("t.jinja"), text).unwrap();
        std::fs::write(dir.join("copy.jinja"), text).unwrap();
        std::fs::write(dir.join("other.jinja"), format!("{text}!")).unwrap();
        std::os::unix::fs::symlink(dir.join("t.jinja"), dir.join("link.jinja")).unwrap();
        dir
    }

    #[test]
    fn the_cache_keys_on_the_canonical_file_and_its_contents() {
        let dir = scratch("keys");
        let spellings = [
            "t.jinja",
            "./t.jinja",
            ".//t.jinja",
            "sub/../t.jinja",
            "link.jinja",
            "copy.jinja",
        ];
        let mut cache = Cache::new(CACHE_CAPACITY);
        let first = cache.get(&dir.join("t.jinja"), None, false).ok().unwrap();
        assert!(!first.1);
        for spelling in spellings {
            let (chat, cached) = cache.get(&dir.join(spelling), None, false).ok().unwrap();
            assert!(cached, "{spelling}");
            assert!(Rc::ptr_eq(&chat, &first.0), "{spelling}");
        }
        // Two files (`t.jinja`, which the link leads to, and its copy), one content.
        assert_eq!((cache.by_file.len(), cache.by_content.len()), (2, 1));
        let (_, cached) = cache
            .get(&dir.join("other.jinja"), None, false)
            .ok()
            .unwrap();
        assert!(!cached);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity() {
        let dir = scratch("capacity");
        let mut cache = Cache::new(1);
        for name in ["t.jinja", "other.jinja", "t.jinja"] {
            let (_, cached) = cache.get(&dir.join(name), None, false).ok().unwrap();
            assert!(!cached, "{name}: dropped, so analysed again");
        }
        assert_eq!((cache.by_file.len(), cache.by_content.len()), (1, 1));
        std::fs::remove_dir_all(&dir).ok();
    }
}
