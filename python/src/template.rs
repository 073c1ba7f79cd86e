//! `ChatTemplate`: load, render, inspect and analyse a chat template, and
//! build parsers and grammars from its analysis.
//!
//! Invariants: `render` is the crate's `ChatTemplate::render` (the template
//! as written, byte-identical to transformers' `apply_chat_template(...,
//! tokenize=False)`); the analysis is computed once per object (or taken
//! from `analysis=`, the JSON that `analysis_json()` wrote) and shared by
//! every parser and grammar made from it; `parser()` and `grammar()` are
//! shells over the crate's front door (`Chat::prepare`), as the command
//! line's `parse`/`grammar`/`batch` are, so a Python parser and the CLI
//! given the same request agree byte for byte.
//! Long work (analysis, rendering) runs with the GIL released.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use chat_autoparser::prompt::Continue;
use chat_autoparser::{
    Analysis, Chat, ChatRequest, ChatTemplate, Export, Policy, ReasoningFormat, RenderRequest,
    TemplateConfig, TemplateSource, ToolChoice,
};
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{json, Map, Value};

use crate::convert::{serde_to_py, to_json, to_json_list};
use crate::errors::{input, IntoPy};
use crate::parser::Parser;

/// A compiled chat template (see the module stub for the Python API).
#[pyclass(name = "ChatTemplate", module = "chat_autoparser", frozen)]
pub struct PyChatTemplate {
    template: Arc<ChatTemplate>,
    analysis: OnceLock<Arc<Analysis>>,
    chat: OnceLock<Arc<Chat>>,
}

#[pymethods]
impl PyChatTemplate {
    /// Compiles template text. `analysis`: a cached `analysis_json()` (str or dict) to skip analysing.
    #[staticmethod]
    #[pyo3(signature = (text, *, bos_token=None, eos_token=None, analysis=None))]
    fn from_str(
        py: Python<'_>,
        text: String,
        bos_token: Option<String>,
        eos_token: Option<String>,
        analysis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let source = TemplateSource {
            template: text,
            bos_token,
            eos_token,
            ..TemplateSource::default()
        };
        Self::compile(py, source, analysis)
    }

    /// Loads a `.jinja` file, a `tokenizer_config.json`, or a model folder (as `from_pretrained`).
    #[staticmethod]
    #[pyo3(signature = (path, *, bos_token=None, eos_token=None, analysis=None))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        bos_token: Option<String>,
        eos_token: Option<String>,
        analysis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut source = TemplateSource::load(&path).py_err()?;
        source.bos_token = bos_token.or(source.bos_token);
        source.eos_token = eos_token.or(source.eos_token);
        Self::compile(py, source, analysis)
    }

    /// Loads the chat template of a model folder: `chat_template.jinja`,
    /// else `chat_template.json`, else `tokenizer_config.json`'s
    /// `chat_template`; BOS/EOS from `tokenizer_config.json`.
    #[staticmethod]
    #[pyo3(signature = (directory, *, analysis=None))]
    fn from_pretrained(
        py: Python<'_>,
        directory: PathBuf,
        analysis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // The crate reads a model folder as transformers lays it out.
        let source = TemplateSource::load(&directory).py_err()?;
        Self::compile(py, source, analysis)
    }

    /// The template text.
    #[getter]
    fn source(&self) -> &str {
        self.template.source()
    }

    /// The BOS token the template renders as `bos_token` (None when not given).
    #[getter]
    fn bos_token(&self) -> Option<String> {
        self.template.config().bos_token.clone()
    }

    /// The EOS token the template renders as `eos_token` (None when not given).
    #[getter]
    fn eos_token(&self) -> Option<String> {
        self.template.config().eos_token.clone()
    }

    /// Renders a conversation to prompt text, as transformers'
    /// `apply_chat_template(messages, tools=tools, add_generation_prompt=...,
    /// tokenize=False, **template_kwargs)` does; `continue_final_message=True`
    /// ends the prompt inside the final message (no generation prompt), as there.
    /// A tool without `description` or `parameters` (the OpenAI API allows
    /// both) renders as one with `""` and an empty object schema, as the
    /// command line and the front door fill them: many templates read both.
    #[pyo3(signature = (messages, tools=None, add_generation_prompt=true, **template_kwargs))]
    fn render(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        tools: Option<&Bound<'_, PyAny>>,
        add_generation_prompt: bool,
        template_kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let mut extra = kwargs_map(template_kwargs)?;
        let continued = extra
            .remove("continue_final_message")
            .is_some_and(|v| v != Value::Bool(false) && !v.is_null());
        let mut request = RenderRequest::default()
            .with_messages(to_json_list(messages, "messages")?)
            .with_tools(optional_list(tools, "tools")?)
            .with_add_generation_prompt(add_generation_prompt && !continued)
            .with_extra(extra)
            .with_tool_defaults();
        let template = &self.template;
        if !continued {
            return py.detach(|| template.render(&request)).py_err();
        }
        let final_text = tag_final_message(&mut request.messages, template.source())?;
        let rendered = py.detach(|| template.render(&request)).py_err()?;
        cut_at_tag(rendered, &final_text)
    }

    /// What the template renders (system role, tools, calls, thinking switch...), as a dict.
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let template = &self.template;
        let caps = py.detach(|| template.capabilities());
        serde_to_py(py, &caps)
    }

    /// The analysis (markers for reasoning, content and tool calls) as a dict.
    fn analyze<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let analysis = self.analysis(py)?;
        serde_to_py(py, &*analysis)
    }

    /// `check`: will this template work? The verdict and its evidence, as
    /// the command line's `check --json` (docs/check.md) minus the engines.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let chat = self.chat(py)?;
        let report = py.detach(|| chat.check());
        serde_to_py(py, &report)
    }

    /// The analysis as JSON text, to cache and pass back as `analysis=` (deterministic).
    fn analysis_json(&self, py: Python<'_>) -> PyResult<String> {
        let analysis = self.analysis(py)?;
        serde_json::to_string(&*analysis).map_err(|e| input(e.to_string()))
    }

    /// A parser for outputs of a request with these options. The prompt the
    /// output continues is `prompt` when given, else rendered from
    /// `messages` (default: one user turn) with these tools and switches, as
    /// the command line does; a prompt that does not render gives a
    /// `UserWarning` and a parser built without it. `call_ids`: a seed from
    /// which calls the model wrote without an id get OpenAI-style ones
    /// (`call_` + 24 letters and digits; the same seed, the same ids). `policy` says what
    /// off-script output becomes: `"lossless"` (the default), `"compatible"`
    /// or a dict of policy fields (`{"unknown_tool": "call"}`, over
    /// `"lossless"` or the preset its `"preset"` key names; docs/policies.md).
    #[pyo3(signature = (
        tools=None, tool_choice=None, parallel_tool_calls=true, enable_thinking=None, prompt=None,
        *, messages=None, reasoning="extract", response_schema=None, continue_final_message=None,
        call_ids=None, policy=None, special_tokens=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn parser(
        &self,
        py: Python<'_>,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        parallel_tool_calls: bool,
        enable_thinking: Option<bool>,
        prompt: Option<String>,
        messages: Option<&Bound<'_, PyAny>>,
        reasoning: &str,
        response_schema: Option<&Bound<'_, PyAny>>,
        continue_final_message: Option<&Bound<'_, PyAny>>,
        call_ids: Option<u64>,
        policy: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<Vec<String>>,
    ) -> PyResult<Parser> {
        let policy = match policy {
            Some(p) => Policy::from_json(&to_json(p)?).map_err(input)?,
            None => Policy::default(),
        };
        let request = ChatRequest::default()
            .with_messages(match messages {
                Some(m) => to_json_list(m, "messages")?,
                None => vec![json!({"role": "user", "content": "Hi"})],
            })
            .with_tools(optional_list(tools, "tools")?)
            .with_tool_choice(choice(tool_choice)?)
            .with_parallel_tool_calls(parallel_tool_calls)
            .with_enable_thinking(enable_thinking)
            .with_reasoning(reasoning_format(reasoning)?)
            .with_response_schema(schema(response_schema)?)
            .with_continue_final_message(continue_mode(continue_final_message)?)
            .with_policy(policy)
            .with_prompt(prompt)
            .with_call_ids(call_ids)
            .with_special_tokens(special_tokens.unwrap_or_default());
        let chat = self.chat(py)?;
        let (parser, diagnostics) = py.detach(|| {
            let prepared = chat.prepare(&request);
            (prepared.parser(), prepared.diagnostics)
        });
        // A prompt that does not render is no error: the parse goes on
        // without it, and Python hears why as a UserWarning.
        for d in diagnostics {
            let category = py.get_type::<PyUserWarning>();
            let message = CString::new(d).unwrap_or_default();
            PyErr::warn(py, &category, &message, 1)?;
        }
        Ok(Parser::new(parser.py_err()?))
    }

    /// A grammar for constrained decoding, in `docs/cli.md`'s shape for the
    /// engine `format` names: `"gbnf"` (llama.cpp: `gbnf`, `lazy`,
    /// `triggers`), `"structural-tag"` (xgrammar), `"lark"` (llguidance) or
    /// `"response-template"` (transformers' `parse_response`), each beside
    /// `preserved_tokens` and, when something was loosened, `warnings`.
    /// `prompt` (or `enable_thinking`) says where reasoning stands when the
    /// output starts.
    #[pyo3(signature = (tools=None, tool_choice=None, parallel_tool_calls=true, response_schema=None, *, format="gbnf", enable_thinking=None, prompt=None, special_tokens=None))]
    #[allow(clippy::too_many_arguments)]
    fn grammar<'py>(
        &self,
        py: Python<'py>,
        tools: Option<&Bound<'_, PyAny>>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        parallel_tool_calls: bool,
        response_schema: Option<&Bound<'_, PyAny>>,
        format: &str,
        enable_thinking: Option<bool>,
        prompt: Option<String>,
        special_tokens: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let export = Export::from_name(format).ok_or_else(|| {
            let names = Export::NAMES;
            input(format!("grammar format {format:?} is not one of {names}"))
        })?;
        // No messages: the grammar starts where `prompt` (or the switch) says.
        let request = ChatRequest::default()
            .with_tools(optional_list(tools, "tools")?)
            .with_tool_choice(choice(tool_choice)?)
            .with_parallel_tool_calls(parallel_tool_calls)
            .with_response_schema(schema(response_schema)?)
            .with_enable_thinking(enable_thinking)
            .with_prompt(prompt)
            .with_special_tokens(special_tokens.unwrap_or_default());
        let chat = self.chat(py)?;
        let value = py
            .detach(|| chat.prepare(&request).export(export))
            .py_err()?;
        serde_to_py(py, &value)
    }

    fn __repr__(&self) -> String {
        format!("<ChatTemplate ({} bytes)>", self.template.source().len())
    }
}

impl PyChatTemplate {
    fn compile(
        py: Python<'_>,
        source: TemplateSource,
        analysis: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let cached = analysis.map(cached_analysis).transpose()?;
        let template = py
            .detach(|| ChatTemplate::from_source(&source, &TemplateConfig::default()))
            .py_err()?;
        let cell = OnceLock::new();
        if let Some(a) = cached {
            let _ = cell.set(Arc::new(a));
        }
        Ok(PyChatTemplate {
            template: Arc::new(template),
            analysis: cell,
            chat: OnceLock::new(),
        })
    }

    /// The analysis, computed on first use with the GIL released.
    fn analysis(&self, py: Python<'_>) -> PyResult<Arc<Analysis>> {
        if let Some(a) = self.analysis.get() {
            return Ok(a.clone());
        }
        let template = &self.template;
        let analysis = py.detach(|| template.analyze()).py_err()?;
        Ok(self.analysis.get_or_init(|| Arc::new(analysis)).clone())
    }

    /// The front door for this template, made on first use: a second
    /// compile of the source (cheap beside the analysis), since `render`
    /// keeps the template as written and the front door renders as a
    /// server does.
    fn chat(&self, py: Python<'_>) -> PyResult<Arc<Chat>> {
        if let Some(chat) = self.chat.get() {
            return Ok(chat.clone());
        }
        let analysis = self.analysis(py)?;
        let (source, config) = (self.template.source(), self.template.config());
        let template = py.detach(|| ChatTemplate::new(source, config)).py_err()?;
        let chat = Chat::with_analysis(template, (*analysis).clone());
        Ok(self.chat.get_or_init(|| Arc::new(chat)).clone())
    }
}

/// A response schema; `None` (Python's) is none.
fn schema(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    Ok(obj.map(to_json).transpose()?.filter(|v| !v.is_null()))
}

/// What transformers appends to the final message to find where it ends
/// in the render (`continue_final_message`).
const CONTINUE_TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";

/// Appends [`CONTINUE_TAG`] to the final message's content (its last text
/// part when the content is a list), as transformers does; returns the
/// content as it was.
fn tag_final_message(messages: &mut [Value], source: &str) -> PyResult<String> {
    let last = messages
        .last_mut()
        .ok_or_else(|| input("continue_final_message is set but the conversation is empty"))?;
    if !source.contains("content") {
        return Err(input(
            "continue_final_message is set but the template never reads \"content\"",
        ));
    }
    let text =
        match last.get_mut("content") {
            Some(Value::String(text)) => text,
            Some(Value::Array(parts)) => parts
                .iter_mut()
                .rev()
                .find_map(|p| {
                    p.get_mut("text").and_then(|t| {
                        if let Value::String(s) = t {
                            Some(s)
                        } else {
                            None
                        }
                    })
                })
                .ok_or_else(|| {
                    input("continue_final_message is set but the final message has no text part")
                })?,
            _ => return Err(input(
                "continue_final_message is set but the final message has no content to continue",
            )),
        };
    let before = text.clone();
    text.push_str(CONTINUE_TAG);
    Ok(before)
}

/// The render cut where the final message ends (transformers' rule: at
/// the tag, or before the spacing the template trimmed from it).
fn cut_at_tag(rendered: String, final_text: &str) -> PyResult<String> {
    let tag = CONTINUE_TAG.trim();
    let Some(at) = rendered
        .rfind(tag)
        .filter(|_| rendered.contains(final_text.trim()))
    else {
        return Err(input(
            "continue_final_message is set but the template does not render the final message",
        ));
    };
    if rendered[at..].starts_with(CONTINUE_TAG) {
        return Ok(rendered[..at].to_string());
    }
    Ok(rendered[..at].trim_end().to_string())
}

/// A cached analysis given as JSON text or as the dict `analyze()` returned.
fn cached_analysis(obj: &Bound<'_, PyAny>) -> PyResult<Analysis> {
    let json = match obj.cast::<PyString>() {
        Ok(text) => serde_json::from_str::<Value>(&text.to_cow()?)
            .map_err(|e| input(format!("analysis: {e}")))?,
        Err(_) => to_json(obj)?,
    };
    let version = json.get("format_version").cloned().unwrap_or(Value::Null);
    if version.as_u64() != Some(u64::from(chat_autoparser::analysis::FORMAT_VERSION)) {
        return Err(input(format!(
            "analysis has format_version {version}; this library reads {}: analyse again",
            chat_autoparser::analysis::FORMAT_VERSION
        )));
    }
    serde_json::from_value(json).map_err(|e| input(format!("analysis: {e}")))
}

fn optional_list(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<Value>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(to_json_list(o, what)?)),
        _ => Ok(None),
    }
}

fn kwargs_map(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Map<String, Value>> {
    match kwargs.map(|k| to_json(k.as_any())).transpose()? {
        Some(Value::Object(map)) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// `tool_choice`: `"auto"`, `"required"`, `"none"`, a function name, or OpenAI's dict
/// (`{"type": "function", ...}` or `{"type": "allowed_tools", ...}`).
fn choice(obj: Option<&Bound<'_, PyAny>>) -> PyResult<ToolChoice> {
    match obj {
        Some(o) if !o.is_none() => ToolChoice::from_json(&to_json(o)?).py_err(),
        _ => Ok(ToolChoice::Auto),
    }
}

fn reasoning_format(text: &str) -> PyResult<ReasoningFormat> {
    match text {
        "extract" => Ok(ReasoningFormat::Extract),
        "inline" => Ok(ReasoningFormat::Inline),
        other => Err(input(format!(
            "reasoning takes \"extract\" or \"inline\", not {other:?}"
        ))),
    }
}

fn continue_mode(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Continue> {
    let Some(obj) = obj else {
        return Ok(Continue::No);
    };
    let value = to_json(obj)?;
    Continue::from_json(&value).ok_or_else(|| {
        input(format!("continue_final_message takes True, False, \"none\", \"auto\", \"reasoning\" or \"content\", not {value}"))
    })
}
