//! Rendering chat templates with the semantics HuggingFace transformers gives them.
//!
//! transformers renders `chat_template` in a jinja2 `ImmutableSandboxedEnvironment`
//! with `trim_blocks`, `lstrip_blocks`, loop controls, a `tojson` built on Python's
//! `json.dumps`, `raise_exception` and `strftime_now`. [`ChatTemplate`] reproduces
//! that environment on minijinja so prompts are byte-identical to Python's:
//! `pyvalue` gives the caller's data Python's behaviour (`None` is not iterable,
//! `d.items` is a method), `pyfilters`/`pymethods` transcribe jinja2's filters
//! and Python's string methods, `pyrepr`/`pyjson` print like `str()` and
//! `json.dumps`, and `rewrite` adapts the statements minijinja lacks or treats
//! differently (`{% generation %}`, `{% set ns.x %}`, `{% raw %}`).
//! `tests/rendering/fidelity.rs` checks all of it against jinja2 itself, and lists
//! the two known divergences (Markup `+` escaping, `tojson` of a generator).
//!
//! Invariants:
//! - rendering never panics and is bounded: fuel (instructions), recursion depth
//!   and output size come from [`Limits`]; exceeding one is an [`ErrorKind::Limit`]
//!   error;
//! - the same request renders to the same bytes (the clock is injectable; the
//!   analysis pins it);
//! - values print the way Python prints them (`True`, `None`, `{'a': 1}`).

pub(crate) mod capabilities;
mod clock;
mod concat;
mod cpu_budget;
mod environment;
mod files;
mod gguf;
mod guarded;
mod incremental;
mod limit_error;
mod limits;
mod model_json;
mod namespace;
pub(crate) mod needles;
mod polyfill;
mod prescan;
mod pyfilters;
mod pyjson;
mod pylist;
mod pymethods;
mod pynone;
mod pyrepr;
mod pyvalue;
mod rewrite;
mod source;
mod storage;
mod syntax;

use std::sync::Arc;

use minijinja::Environment;
use serde_json::{Map, Value as Json};

use crate::error::{Error, ErrorKind, Location, Result};

pub use capabilities::{Capabilities, HistoryReasoning};
pub use clock::{Clock, FixedClock, SystemClock};
pub use incremental::{IncrementalRenderer, PromptDelta};
pub use limits::Limits;
pub(crate) use limits::RunFuel;
pub use polyfill::{CallWriter, ToolFormatting};
pub use source::TemplateSource;

/// The error of a render refused because its analysis or lint run has used
/// up its fuel.
pub(crate) const RUN_OUT_OF_FUEL: &str =
    "the run ran out of fuel (too many instructions over all its renders)";

/// The error of a render the template engine itself panicked in.
const ENGINE_FAILED: &str =
    "the template engine failed on this template (a panic inside minijinja, caught)";

/// Name under which the template is registered in its environment.
const TEMPLATE_NAME: &str = "chat_template";

/// Settings that do not change between renders of one template.
#[derive(Clone)]
#[non_exhaustive]
pub struct TemplateConfig {
    /// The tokenizer's BOS token, exposed to the template as `bos_token`.
    pub bos_token: Option<String>,
    /// The tokenizer's EOS token, exposed to the template as `eos_token`.
    pub eos_token: Option<String>,
    /// Resource bounds for every render.
    pub limits: Limits,
    /// Source of `strftime_now`'s time.
    pub clock: Arc<dyn Clock>,
}

impl Default for TemplateConfig {
    fn default() -> Self {
        TemplateConfig {
            bos_token: None,
            eos_token: None,
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

setters!(TemplateConfig {
    /// Sets the resource bounds for every render.
    with_limits => limits: Limits,
    /// Sets the source of `strftime_now`'s time.
    with_clock => clock: Arc<dyn Clock>;
    optional:
    /// Sets the BOS token.
    with_bos_token => bos_token: String,
    /// Sets the EOS token.
    with_eos_token => eos_token: String,
});

impl std::fmt::Debug for TemplateConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateConfig")
            .field("bos_token", &self.bos_token)
            .field("eos_token", &self.eos_token)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// One render: the conversation and the switches a chat API passes to the template.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RenderRequest {
    /// OpenAI-format messages (`role`, `content`, `tool_calls`, `reasoning_content`, ...).
    pub messages: Vec<Json>,
    /// OpenAI-format tool definitions; `None` renders with `tools = None` as transformers does.
    pub tools: Option<Vec<Json>>,
    /// Append the assistant header so the model continues as the assistant.
    pub add_generation_prompt: bool,
    /// Sets the `enable_thinking` template variable when given.
    pub enable_thinking: Option<bool>,
    /// Further template variables (`reasoning_effort`, `builtin_tools`, ...).
    pub extra: Map<String, Json>,
    /// How [`ChatTemplate::render_chat`] renders the tool path (polyfills).
    pub tool_formatting: ToolFormatting,
}

setters!(RenderRequest {
    /// Sets the messages.
    with_messages => messages: Vec<Json>,
    /// Appends the assistant header, or not.
    with_add_generation_prompt => add_generation_prompt: bool,
    /// Sets further template variables.
    with_extra => extra: Map<String, Json>,
    /// Sets how `render_chat` renders the tool path.
    with_tool_formatting => tool_formatting: ToolFormatting;
    optional:
    /// Sets the tool definitions (`None` renders `tools = None`).
    with_tools => tools: Vec<Json>,
    /// Sets the `enable_thinking` template variable.
    with_enable_thinking => enable_thinking: bool,
});

impl RenderRequest {
    /// This request with what the OpenAI API leaves optional in its tools
    /// filled as [`ChatTemplate::render_chat`] fills it: a missing
    /// `description` is `""`, missing `parameters` an empty object schema.
    /// For a caller of [`ChatTemplate::render`] (the template as written)
    /// whose tools come from an API request: many templates read both.
    pub fn with_tool_defaults(mut self) -> RenderRequest {
        polyfill::fill_tool_defaults(self.tools.iter_mut().flatten());
        self
    }
}

/// A compiled chat template, ready to render.
pub struct ChatTemplate {
    env: Environment<'static>,
    source: String,
    /// The text minijinja compiled, and how its offsets map back to `source`.
    rewritten: rewrite::Rewritten,
    config: TemplateConfig,
    /// The last tool list rendered, with its template values.
    tools_memo: std::sync::Mutex<Option<(Vec<Json>, minijinja::Value)>>,
    /// Probed on first use (see `capabilities`).
    capabilities: std::sync::OnceLock<Capabilities>,
    /// `render` applies polyfills as `render_chat` does (see `with_polyfills`).
    polyfilled: bool,
    /// Writes replayed calls in the model's format (see `with_call_writer`).
    call_writer: Option<Arc<dyn CallWriter>>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source_len", &self.source.len())
            .field("config", &self.config)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles `source`. A syntax error carries the line and column.
    /// Newlines (`\r\n`, `\r`) become `\n` first, as jinja2's lexer makes
    /// them, so a template saved with Windows line endings renders as
    /// transformers renders it.
    pub fn new(source: &str, config: &TemplateConfig) -> Result<ChatTemplate> {
        let normalized = normalize_newlines(source);
        let source: &str = &normalized;
        let first = rewrite::rewrite(source);
        // The pre-scan reads the text before the `~` rewrite, which parses it:
        // that rewrite keeps each chain's depth (see `concat`).
        if let Err(refusal) = prescan::check(&first.text) {
            let at = offset_location(first.original_offset(refusal.offset), source);
            return Err(Error::new(ErrorKind::Limit, refusal.message).at(at));
        }
        let (rewritten, compiled) = compile_on_own_stack(first, config);
        match compiled {
            Ok(env) => Ok(ChatTemplate {
                env,
                source: source.to_owned(),
                rewritten,
                config: config.clone(),
                tools_memo: Default::default(),
                capabilities: Default::default(),
                polyfilled: false,
                call_writer: None,
            }),
            Err(e) if e.kind() == minijinja::ErrorKind::SyntaxError => {
                Err(syntax_error(e, source, &rewritten))
            }
            Err(e) => Err(from_jinja(e, source, &rewritten)),
        }
    }

    /// Compiles a template loaded with [`TemplateSource::load`], taking BOS/EOS from it.
    pub fn from_source(source: &TemplateSource, config: &TemplateConfig) -> Result<ChatTemplate> {
        let mut config = config.clone();
        if config.bos_token.is_none() {
            config.bos_token = source.bos_token.clone();
        }
        if config.eos_token.is_none() {
            config.eos_token = source.eos_token.clone();
        }
        ChatTemplate::new(&source.template, &config)
    }

    /// The template text as compiled: as given, newlines normalised to `\n`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The configuration the template was compiled with.
    pub fn config(&self) -> &TemplateConfig {
        &self.config
    }

    /// Renders one request to prompt text, with the template as written
    /// (byte-identical to transformers; `tool_formatting` is not applied),
    /// unless this template was made by [`ChatTemplate::with_polyfills`].
    pub fn render(&self, request: &RenderRequest) -> Result<String> {
        if self.polyfilled {
            return self.render_chat(request);
        }
        self.render_as_written(request)
    }

    /// Renders one request the way a chat server should: what the OpenAI API
    /// leaves optional filled (a tool's `description` and `parameters`, a
    /// message's `content`), and polyfills where the template lacks a
    /// capability, as `request.tool_formatting` says (see [`ToolFormatting`]).
    pub fn render_chat(&self, request: &RenderRequest) -> Result<String> {
        // What the OpenAI API leaves optional is filled first, whatever the formatting.
        if let Some(filled) = polyfill::fill_optional(request) {
            return self.render_chat(&filled);
        }
        if let Some(aliased) = self.thinking_alias(request) {
            return self.render_chat(&aliased);
        }
        if request.tool_formatting == ToolFormatting::Native {
            return self.render_as_written(request);
        }
        let caps = self.capabilities();
        let max = self.config.limits.max_output_bytes;
        match polyfill::apply(request, &caps, max, self.call_writer.as_deref()) {
            Some(rewritten) => self.render_as_written(&rewritten),
            None => self.render_as_written(request),
        }
    }

    /// The request with its `enable_thinking` also under the name a
    /// template reads instead (`thinking`: DeepSeek-V3.1's, Kimi-K3's), when
    /// the template never mentions `enable_thinking` and the request does
    /// not set `thinking` itself; `None` otherwise. A server's switch then
    /// reaches the template (`render`, the template as written, does not
    /// do this: transformers passes `enable_thinking` alone).
    pub(crate) fn thinking_alias(&self, request: &RenderRequest) -> Option<RenderRequest> {
        let on = request.enable_thinking?;
        let other_name =
            self.source.contains("thinking") && !self.source.contains("enable_thinking");
        if !other_name || request.extra.contains_key("thinking") {
            return None;
        }
        let mut out = request.clone();
        out.extra.insert("thinking".into(), on.into());
        Some(out)
    }

    /// The tool formatting `render_chat` uses for `request`: `Auto` resolves
    /// to `Manual` when the conversation needs a part of the tool path the
    /// template lacks (and the call writer, if any, cannot supply it), and
    /// stays `Auto` otherwise.
    pub fn tool_formatting_for(&self, request: &RenderRequest) -> ToolFormatting {
        match request.tool_formatting {
            ToolFormatting::Auto
                if polyfill::plan(
                    ToolFormatting::Auto,
                    &self.capabilities(),
                    request,
                    self.call_writer.as_deref(),
                )
                .manual_tools =>
            {
                ToolFormatting::Manual
            }
            other => other,
        }
    }

    /// This template, with `render` applying polyfills like `render_chat`:
    /// what a server renders, so that analysing it describes the prompts the
    /// model actually sees (a template without a tools branch then shows the
    /// Hermes tool format).
    pub fn with_polyfills(mut self) -> ChatTemplate {
        self.polyfilled = true;
        self
    }

    /// This template, with `render_chat`'s `Auto` writing earlier calls with
    /// `writer` when the template lists tools and renders results but never
    /// an assistant's calls (see [`ToolFormatting`]). The front door
    /// ([`crate::Chat`]) sets one from the analysis, so replayed calls are in
    /// the model's own format rather than Hermes.
    pub fn with_call_writer(mut self, writer: Arc<dyn CallWriter>) -> ChatTemplate {
        self.call_writer = Some(writer);
        self
    }

    /// The template as written: no polyfill, whatever `tool_formatting` says.
    pub(crate) fn render_as_written(&self, request: &RenderRequest) -> Result<String> {
        let fuel = match limits::RunFuel::left() {
            Some(0) => return Err(Error::new(ErrorKind::Limit, RUN_OUT_OF_FUEL)),
            Some(left) => left.min(self.config.limits.fuel),
            None => self.config.limits.fuel,
        };
        // Near the end of a run's fuel, a copy of the environment with less
        // fuel (cloning shares the compiled template), so that the run as a
        // whole stays within one render's fuel.
        let env = match fuel < self.config.limits.fuel {
            true => {
                let mut env = self.env.clone();
                env.set_fuel(Some(fuel));
                std::borrow::Cow::Owned(env)
            }
            false => std::borrow::Cow::Borrowed(&self.env),
        };
        let context = self.context(request);
        let template = env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| from_jinja(e, &self.source, &self.rewritten))?;
        let _budget = cpu_budget::start(self.config.limits.max_cpu_time);
        let meter = limits::meter(self.config.limits.max_total_bytes);
        let mut out = limits::BoundedBuffer::new(self.config.limits.max_output_bytes);
        // A panic inside the engine is its bug, not the caller's: the template
        // fails to render (minijinja 3.0.5 indexed past an empty list on
        // `[][::-1]`; whatever else hides there ends the same way).
        let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            template.render_captured_to(context, &mut out)
        }));
        let Ok(result) = rendered else {
            limits::RunFuel::spend(fuel);
            return Err(Error::new(ErrorKind::Render, ENGINE_FAILED));
        };
        limits::RunFuel::spend(match &result {
            Ok(captured) => captured.state().fuel_levels().map_or(0, |(used, _)| used),
            Err(e) if e.kind() == minijinja::ErrorKind::OutOfFuel => fuel,
            Err(_) => meter.fuel_seen(),
        });
        drop(meter);
        match result {
            Ok(_) => Ok(out.into_string()),
            Err(_) if out.overflowed() => Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "output exceeds {} bytes",
                    self.config.limits.max_output_bytes
                ),
            )),
            Err(e) => Err(from_jinja(e, &self.source, &self.rewritten)),
        }
    }

    /// Names of the variables the template reads but does not define
    /// (`messages`, `tools`, `enable_thinking`, ...), sorted.
    pub fn variables(&self) -> Vec<String> {
        let Ok(template) = self.env.get_template(TEMPLATE_NAME) else {
            return Vec::new();
        };
        // Our bound and loop functions are called only from rewritten code.
        let mut names: Vec<String> = template
            .undeclared_variables(false)
            .into_iter()
            .filter(|n| {
                ![
                    limits::BOUND_FUNCTION,
                    limits::RELEASE_FUNCTION,
                    guarded::LOOP_FUNCTION,
                ]
                .contains(&n.as_str())
            })
            .collect();
        for name in defaulted_variables(&self.source) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.sort();
        names
    }

    /// The variables transformers passes to `render`, as Python-shaped values
    /// (see `pyvalue`): JSON `null` becomes a `None` that cannot be iterated.
    fn context(&self, request: &RenderRequest) -> minijinja::Value {
        use std::collections::BTreeMap;
        let mut root: BTreeMap<String, minijinja::Value> = BTreeMap::new();
        // Caller extras first so the named fields below win on a clash.
        for (k, v) in &request.extra {
            root.insert(k.clone(), pyvalue::from_json(v));
        }
        root.insert(
            "messages".into(),
            pyvalue::from_json_items(&request.messages),
        );
        root.insert("tools".into(), self.tools_value(request.tools.as_deref()));
        root.entry("documents".into()).or_insert_with(pyvalue::none);
        root.insert(
            "add_generation_prompt".into(),
            request.add_generation_prompt.into(),
        );
        if let Some(on) = request.enable_thinking {
            root.insert("enable_thinking".into(), on.into());
        }
        // transformers always passes the tokenizer's special tokens; a template
        // given without a tokenizer still gets them, as empty text, so that
        // `bos_token + ...` does not fail on an undefined value.
        let token = |t: &Option<String>| minijinja::Value::from(t.as_deref().unwrap_or_default());
        root.insert("bos_token".into(), token(&self.config.bos_token));
        root.insert("eos_token".into(), token(&self.config.eos_token));
        // The root stays a plain map: variable lookup must not see dict methods.
        minijinja::Value::from(root)
    }

    /// The tool list as template values. Conversion is memoized on the last
    /// list seen: callers render many times with the same tools, and template
    /// values are immutable, so sharing one is safe.
    fn tools_value(&self, tools: Option<&[Json]>) -> minijinja::Value {
        let Some(tools) = tools else {
            return pyvalue::none();
        };
        let mut memo = self
            .tools_memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match memo.as_ref() {
            Some((json, value)) if json.as_slice() == tools => value.clone(),
            _ => {
                let value = pyvalue::from_json_items(tools);
                *memo = Some((tools.to_vec(), value.clone()));
                value
            }
        }
    }
}

/// `source` with every `\r\n` and lone `\r` as `\n`: jinja2 splits the
/// source on those and joins the lines with `\n` before lexing.
fn normalize_newlines(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains('\r') {
        return std::borrow::Cow::Borrowed(source);
    }
    std::borrow::Cow::Owned(source.replace("\r\n", "\n").replace('\r', "\n"))
}

/// A syntax error as the template's author wrote it: the error of the source
/// without our namespace rewrite, whose inserted text would show in messages.
fn syntax_error(err: minijinja::Error, source: &str, rewritten: &rewrite::Rewritten) -> Error {
    let plain = rewrite::rewrite_for_diagnostics(source);
    match environment::check_syntax(&plain.text) {
        Err(plain_err) => from_jinja(plain_err, source, &plain),
        Ok(()) => from_jinja(err, source, rewritten),
    }
}

/// Stack of the thread that compiles a template: enough for the deepest
/// expression the pre-scan lets through (1000 operators) with a wide
/// margin, whatever the caller's thread has (2 MiB for a spawned thread,
/// less for some runtimes' workers).
const COMPILE_STACK: usize = 16 << 20;

/// Applies the `~` rewrite to `first` and compiles the result, on a thread
/// of its own with [`COMPILE_STACK`], since minijinja's parser and code
/// generator recurse once per level of an expression; on the caller's thread
/// if no thread can be started. (minijinja does not panic on any input the
/// fuzz targets found; if it did, the panic would end that thread only and
/// read as a compile error here.)
fn compile_on_own_stack(
    first: rewrite::Rewritten,
    config: &TemplateConfig,
) -> (
    rewrite::Rewritten,
    std::result::Result<Environment<'static>, minijinja::Error>,
) {
    let compile = |first: rewrite::Rewritten| {
        let rewritten = concat::bound_concats(first);
        let env = environment::build(&rewritten, config);
        (rewritten, env)
    };
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("chat-autoparser-compile".into())
            .stack_size(COMPILE_STACK);
        // The template is needed back if no thread starts: keep a copy.
        let fallback = first.clone();
        match spawned.spawn_scoped(scope, || compile(first)) {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                let failed = minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    "the template compiler failed",
                );
                (fallback, Err(failed))
            }),
            Err(_) => compile(fallback),
        }
    })
}

/// Converts a minijinja error into ours, keeping the source location.
fn from_jinja(err: minijinja::Error, source: &str, rewritten: &rewrite::Rewritten) -> Error {
    use minijinja::ErrorKind as K;
    // Our own errors may sit underneath minijinja's (a filter called by `map`).
    let detail = innermost_detail(&err);
    let kind = match err.kind() {
        K::SyntaxError | K::BadEscape => ErrorKind::Syntax,
        K::OutOfFuel => ErrorKind::Limit,
        _ if environment::is_raised(&detail) => ErrorKind::Raised,
        _ if limits::is_limit(&detail) => ErrorKind::Limit,
        _ if detail.contains("recursion") => ErrorKind::Limit,
        _ => ErrorKind::Render,
    };
    let message = match kind {
        ErrorKind::Raised => environment::raised_message(&detail).to_owned(),
        ErrorKind::Limit if err.kind() == K::OutOfFuel => {
            "template ran out of fuel (too many instructions)".to_owned()
        }
        ErrorKind::Limit if limits::is_limit(&detail) => {
            detail.trim_start_matches(limits::LIMIT).to_owned()
        }
        _ if detail.is_empty() => err.kind().to_string(),
        _ => format!("{}: {}", err.kind(), detail),
    };
    let location = location(&err, source, rewritten);
    Error::new(kind, message).at(location).caused_by(err)
}

/// The detail of the deepest error in the chain that has one marker of ours,
/// else the outer detail.
fn innermost_detail(err: &minijinja::Error) -> String {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(detail) = e
            .downcast_ref::<minijinja::Error>()
            .and_then(minijinja::Error::detail)
        {
            if environment::is_raised(detail) || limits::is_limit(detail) {
                return detail.to_owned();
            }
        }
        current = e.source();
    }
    err.detail().unwrap_or("").to_owned()
}

fn location(
    err: &minijinja::Error,
    source: &str,
    rewritten: &rewrite::Rewritten,
) -> Option<Location> {
    if let Some(range) = err.range() {
        return offset_location(rewritten.original_offset(range.start), source);
    }
    err.line().map(|line| Location { line, column: 1 })
}

/// The line and column of a byte offset of `source`.
fn offset_location(offset: usize, source: &str) -> Option<Location> {
    let before = source.get(..offset.min(source.len()))?;
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Some(Location { line, column })
}

/// Variables a template reads first in their own assignment
/// (`{% set enable_thinking = enable_thinking | default(false) %}`):
/// minijinja's tracker records the assignment before reading its value, so
/// `undeclared_variables` misses them. Only a name whose first mention in the
/// source is that statement counts: a loop variable or an earlier assignment
/// is mentioned before.
fn defaulted_variables(source: &str) -> Vec<String> {
    use regex::Regex;
    use std::sync::OnceLock;
    static SET: OnceLock<Regex> = OnceLock::new();
    let set = SET.get_or_init(|| {
        Regex::new(r"(?s)\{%[-+]?\s*set\s+([A-Za-z_][A-Za-z0-9_]*)\s*=(.*?)[-+]?%\}")
            .expect("static regex")
    });
    let mentions = |text: &str, name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            !text[..i].ends_with(word) && !text[i + name.len()..].starts_with(word)
        })
    };
    set.captures_iter(source)
        .filter_map(|c| {
            let (whole, name, value) = (c.get(0)?, c.get(1)?.as_str(), c.get(2)?.as_str());
            (mentions(value, name) && !mentions(&source[..whole.start()], name))
                .then(|| name.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside a render (here a test-only function; minijinja 3.0.5's
    /// `[][::-1]` was one) is a render error, and the next render works.
    #[test]
    fn a_panic_inside_the_engine_is_a_render_error() {
        let source = "{% if messages %}{{ __panic_for_tests() }}{% endif %}ok";
        let t = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
        let user = serde_json::json!({"role": "user", "content": "hi"});
        let err = t
            .render(&RenderRequest {
                messages: vec![user],
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(
            (err.kind(), err.message()),
            (ErrorKind::Render, ENGINE_FAILED)
        );
        assert_eq!(t.render(&RenderRequest::default()).unwrap(), "ok");
    }
}
