//! Grammar export: from an [`Analysis`] to a GBNF grammar that makes a model
//! write output the parser accepts (constrained decoding).
//!
//! [`Analysis::grammar`] takes a [`GrammarConfig`] (tools, [`ToolChoice`],
//! parallel calls, an optional response schema) and returns a [`Grammar`]:
//!
//! - `auto` with tools: a *lazy* grammar over the tool section, with
//!   [`Trigger`]s where the section starts; everything before (reasoning,
//!   content) is free;
//! - `required` or a named function: an *eager* grammar, optional reasoning,
//!   an optional empty content block, then at least one call (of that
//!   function);
//! - a template that renders no calls but has fallback dialects (see
//!   `Analysis::fallback_tools`): any of the dialects' sections, with each
//!   dialect's triggers and markers, and a warning;
//! - `none`, or no tools: no tool grammar (`gbnf` is empty) unless a response
//!   schema asks for an eager JSON answer (reasoning still allowed first);
//! - `parallel_tool_calls` false, or a template that renders one call per
//!   turn: exactly one call.
//!
//! Modules, one concept each: `gbnf` (text, names, escaping), `markers`
//! (template whitespace as flexible `ws`), `walk` (the schema walk the value
//! notations share), `schema` (JSON Schema → rules in JSON or Python
//! literals), `elements` (JSON Schema → rules in a format's nested-element
//! notation), `tools` (calls per format family), `triggers` (where lazy
//! grammars start), `syntax` (the GBNF language, `grammars/gbnf.pest`) and
//! `recognizer` (is a text in a GBNF grammar, with context-free semantics).
//!
//! Invariants: deterministic byte for byte (rules in construction order,
//! names from hints); never panics; every non-empty `gbnf` parses with
//! `grammars/gbnf.pest` and uses only llama.cpp's dialect; a schema we cannot
//! express yields a looser rule and an entry in [`Grammar::warnings`].

mod elements;
mod gbnf;
mod markers;
pub mod recognizer;
mod schema;
pub mod syntax;
mod tools;
mod walk;
mod triggers;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::analysis::{tool_tokens, Analysis, Header, ReasoningMode, ToolFormat};
use crate::parser::{start_state, Start};
use crate::{Error, ErrorKind, Result};

pub use gbnf::rule_name;
pub use recognizer::Recognizer;
pub use triggers::{Trigger, TriggerKind};

use gbnf::{literal, until, Rules};
use markers::Pieces;
use schema::{primitive, Compiler, Dialect};
use tools::{read_tools, Builder, Tool};

/// Which tool calls the model may or must make (OpenAI's `tool_choice`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ToolChoice {
    /// The model decides; calls are constrained once they start.
    #[default]
    Auto,
    /// At least one call.
    Required,
    /// No calls.
    None,
    /// At least one call, of this function.
    Function(String),
}

impl ToolChoice {
    /// `"auto"`, `"required"`, `"none"`, or the function's name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
            ToolChoice::Function(name) => name,
        }
    }

    /// Reads a request's `tool_choice` JSON (a string or OpenAI's
    /// `{"type": "function", "function": {"name": ...}}`); anything else is `auto`.
    pub fn from_json(value: &Value) -> ToolChoice {
        ToolChoice::deserialize(value).unwrap_or_default()
    }

    /// Reads `"auto"`, `"required"`, `"none"`, or any other text as a function name.
    pub fn parse(text: &str) -> ToolChoice {
        match text {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Function(name.to_owned()),
        }
    }
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // OpenAI also sends `{"type": "function", "function": {"name": ...}}`.
        let value = Value::deserialize(d)?;
        if let Some(text) = value.as_str() {
            return Ok(ToolChoice::parse(text));
        }
        value
            .pointer("/function/name")
            .and_then(Value::as_str)
            .map(|n| ToolChoice::Function(n.to_owned()))
            .ok_or_else(|| serde::de::Error::custom("tool_choice: expected a string or {\"function\": {\"name\": ...}}"))
    }
}

/// What to constrain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrammarConfig {
    /// OpenAI-format tool definitions, in the order given.
    #[serde(default)]
    pub tools: Vec<Value>,
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Several calls in one turn (when the template renders them).
    #[serde(default = "yes")]
    pub parallel_tool_calls: bool,
    /// A JSON schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// The thinking switch the prompt was rendered with (used when `prompt`
    /// is not given): with thinking off, no reasoning block comes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_thinking: Option<bool>,
    /// The rendered prompt the output continues: a prompt that opens or
    /// closes a reasoning block moves where the grammar starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for GrammarConfig {
    fn default() -> Self {
        GrammarConfig {
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            response_schema: None,
            enable_thinking: None,
            prompt: None,
        }
    }
}

/// A grammar for a llama.cpp-style sampler (DESIGN §5 JSON shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grammar {
    /// GBNF text, `root` first; empty when nothing is constrained.
    pub gbnf: String,
    /// Applies only from a trigger on (else from the first token).
    pub lazy: bool,
    /// Where a lazy grammar starts.
    pub triggers: Vec<Trigger>,
    /// Tokens the sampler must keep whole for the triggers and markers.
    pub preserved_tokens: Vec<String>,
    /// Schemas or tools that could only be expressed loosely, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Grammar {
    /// The GBNF text.
    pub fn gbnf(&self) -> &str {
        &self.gbnf
    }

    /// Whether there is anything to constrain.
    pub fn is_empty(&self) -> bool {
        self.gbnf.is_empty()
    }
}

impl Analysis {
    /// The grammar for `config` in this template's format. Errors (kind
    /// `input`) when calls are required but the template has no tool format,
    /// no usable tool is given, or the named function is not among the tools.
    pub fn grammar(&self, config: &GrammarConfig) -> Result<Grammar> {
        let mut warnings = Vec::new();
        let mut tools = read_tools(&config.tools, &mut warnings);
        let forced = match &config.tool_choice {
            ToolChoice::None => {
                tools.clear();
                false
            }
            ToolChoice::Auto => false,
            ToolChoice::Required => true,
            ToolChoice::Function(name) => {
                tools.retain(|t| &t.name == name);
                if tools.is_empty() {
                    return Err(input(format!("tool_choice names {name:?}, which is not among the tools")));
                }
                true
            }
        };
        if forced && tools.is_empty() {
            return Err(input("tool_choice requires a call but no usable tool was given"));
        }
        let formats = self.formats_for(&tools, forced, &mut warnings)?;
        let mut rules = Rules::default();
        let parallel = config.parallel_tool_calls;
        let headers = &self.turn.headers;
        let section = (!formats.is_empty()).then(|| sections(&mut rules, &mut warnings, formats, headers, &tools, parallel));
        let answer = config.response_schema.as_ref().map(|s| self.answer(&mut rules, &mut warnings, s));
        // Where the output starts relative to reasoning, read as the parser reads it.
        let start = start_state(self, config.prompt.as_deref(), config.enable_thinking);
        let preserved_tokens = self.grammar_tokens(formats);
        let (root, lazy, triggers) = match (section, answer) {
            (None, None) => return Ok(Grammar { warnings, ..Grammar::default() }),
            (Some(section), None) if !forced => {
                let mut triggers: Vec<Trigger> = Vec::new();
                let each = |f| triggers::triggers(f, &self.reasoning, start, &tools, &preserved_tokens);
                for t in formats.iter().flat_map(each) {
                    if !triggers.contains(&t) {
                        triggers.push(t);
                    }
                }
                (section, true, triggers)
            }
            (Some(section), answer) => {
                let section = self.after_empty_content(&mut rules, section);
                let body = match answer {
                    Some(a) => format!("( {section} | {a} )"),
                    None => section,
                };
                (self.eager(&mut rules, body, start), false, Vec::new())
            }
            (None, Some(a)) => (self.eager(&mut rules, a, start), false, Vec::new()),
        };
        rules.fixed("root", &root);
        if root.contains("ws") {
            primitive(&mut rules, "ws", false);
        }
        Ok(Grammar { gbnf: rules.render(), lazy, triggers, preserved_tokens, warnings })
    }

    /// The tool formats the grammar allows: none without tools; the
    /// template's own; else its fallback dialects, with a warning. Errors
    /// when a call is required and there is no format at all.
    fn formats_for(&self, tools: &[Tool], forced: bool, warnings: &mut Vec<String>) -> Result<&[ToolFormat]> {
        if tools.is_empty() {
            return Ok(&[]);
        }
        let formats = self.tool_formats();
        if formats.is_empty() {
            if forced {
                return Err(input("the template does not render tool calls"));
            }
            warnings.push("the template does not render tool calls; no tool grammar".into());
        } else if self.tools.is_none() {
            warnings.push("the template does not render tool calls; the grammar allows the fallback dialects".into());
        }
        Ok(formats)
    }

    /// The template's preserved tokens, and the markers of fallback dialects
    /// in use (a silent template writes none of them itself).
    fn grammar_tokens(&self, formats: &[ToolFormat]) -> Vec<String> {
        let mut out = self.preserved_tokens.clone();
        if self.tools.is_none() {
            for token in formats.iter().flat_map(tool_tokens) {
                if !out.contains(&token) {
                    out.push(token);
                }
            }
        }
        out
    }

    /// Optional reasoning, then `body`: what an eager grammar leaves free.
    /// `start` is where the output starts relative to reasoning: inside a
    /// block the prompt opened, the start marker is not written. (After a
    /// closed block the optional block stays: reading a prompt's tail can take
    /// an earlier message's end for a closed block, as in channel formats, and
    /// an optional block costs a model that writes none nothing.)
    fn eager(&self, rules: &mut Rules, body: String, start: Start) -> String {
        let r = &self.reasoning;
        if r.end.is_empty() {
            return format!("ws {body}");
        }
        let text = until(rules, "reasoning-text", &r.end);
        let mut block = Pieces::new();
        // Opened by the prompt (or no start marker): the text begins inside the block.
        let start_optional = start == Start::InReasoning
            || matches!(r.mode, ReasoningMode::ForcedOpen | ReasoningMode::Delimiter)
            || r.start.trim().is_empty();
        block.ws();
        if start_optional {
            block.expr(text);
        } else if r.bare_end {
            // The template closes empty blocks it never opened: `</think>` alone.
            let mut opened = Pieces::new();
            opened.marker(&r.start).expr(text);
            block.optional(&opened);
        } else {
            block.marker(&r.start).expr(text);
        }
        block.lit(&r.end).ws();
        let reasoning = rules.fixed("reasoning", &block.render());
        format!("{reasoning}? ws {body}")
    }

    /// `body` after an optional empty content block: templates with a
    /// content wrapper may write it, empty, before the calls
    /// (`<|open|>response<|sep|><|close|>response<|sep|>`), as the analysis
    /// reads their call outputs.
    fn after_empty_content(&self, rules: &mut Rules, body: String) -> String {
        let (start, end) = (&self.content.start, &self.content.end);
        if start.trim().is_empty() || end.trim().is_empty() {
            return body;
        }
        let mut block = Pieces::new();
        block.marker(start).ws().marker(end).ws();
        let block = rules.add("empty-content", block.render());
        format!("{block}? {body}")
    }

    /// The JSON answer: the content wrapper (if any), then the schema's value.
    fn answer(&self, rules: &mut Rules, warnings: &mut Vec<String>, schema: &Value) -> String {
        let mut c = Compiler::new(rules, warnings, Dialect::Json, schema);
        let value = c.compile(schema, "answer-value");
        let mut p = Pieces::new();
        if !self.content.start.trim().is_empty() {
            let mut start = Pieces::new();
            start.marker(&self.content.start);
            p.optional(&start).ws();
        }
        p.expr(value).ws();
        if !self.content.end.trim().is_empty() {
            p.marker(&self.content.end);
        }
        format!("( {} )", p.render())
    }
}

/// The tool section rule text: one format's section, or a choice between
/// several (the fallback dialects), each followed by optional space.
fn sections(
    rules: &mut Rules,
    warnings: &mut Vec<String>,
    formats: &[ToolFormat],
    headers: &[Header],
    tools: &[Tool],
    parallel: bool,
) -> String {
    let rendered: Vec<String> = formats
        .iter()
        .map(|f| {
            let mut b = Builder { rules: &mut *rules, warnings: &mut *warnings, format: f, headers };
            let mut p = b.section(tools, parallel && f.parallel);
            p.ws();
            p.render()
        })
        .collect();
    match rendered.as_slice() {
        [one] => one.clone(),
        many => format!("( {} )", many.join(" | ")),
    }
}

fn input(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Input, message)
}

/// A literal for callers building on grammar text (escaping as GBNF wants).
pub fn gbnf_literal(text: &str) -> String {
    literal(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_choice_serde() {
        for (text, choice) in [
            ("\"auto\"", ToolChoice::Auto),
            ("\"required\"", ToolChoice::Required),
            ("\"none\"", ToolChoice::None),
            ("\"get_weather\"", ToolChoice::Function("get_weather".into())),
        ] {
            assert_eq!(serde_json::from_str::<ToolChoice>(text).unwrap(), choice);
            assert_eq!(serde_json::to_string(&choice).unwrap(), text);
        }
        let object: ToolChoice = serde_json::from_str(r#"{"type": "function", "function": {"name": "f"}}"#).unwrap();
        assert_eq!(object, ToolChoice::Function("f".into()));
    }
}
