//! Grammar export: from an [`Analysis`] to a GBNF grammar that makes a model
//! write output the parser accepts (constrained decoding).
//!
//! [`Analysis::grammar`] takes the request's [`Options`] (tools, [`ToolChoice`],
//! parallel calls, an optional response schema) and returns a [`Gbnf`]:
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
//! `recognizer` (is a text in a GBNF grammar, with context-free semantics),
//! the last two test machinery behind the `gbnf-check` feature; `lark` (the
//! Lark export, a printer of `Protocol::outline`).
//!
//! Invariants: deterministic byte for byte (rules in construction order,
//! names from hints); never panics; every non-empty `gbnf` parses with
//! `grammars/gbnf.pest` and uses only llama.cpp's dialect; a schema we cannot
//! express yields a looser rule and an entry in [`Gbnf::warnings`].

mod bounds;
mod elements;
mod gbnf;
mod gbnf_tokens;
mod lark;
mod markers;
mod pattern;
#[cfg(feature = "gbnf-check")]
pub mod recognizer;
mod response_template;
mod schema;
mod structural_tag;
#[cfg(feature = "gbnf-check")]
pub mod syntax;
mod tools;
mod triggers;
mod walk;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::{Analysis, Header};
use crate::error::Result;
use crate::protocol::{Options, Protocol, ToolSection};

pub use crate::protocol::ToolChoice;

pub use gbnf::rule_name;
pub use lark::{lark, lark_with, Lark, LarkOptions};
#[cfg(feature = "gbnf-check")]
pub use recognizer::Recognizer;
pub use response_template::{response_template, ResponseTemplate};
pub use structural_tag::{
    legacy, structural_tag, structural_tag_with, LegacyStructuralTag, StructuralTag,
    StructuralTagOptions,
};
pub use triggers::{Trigger, TriggerKind};

use gbnf::{literal, until, Rules};
use markers::Pieces;
use schema::{primitive, Compiler, ValueSyntax};
use tools::Builder;

/// A GBNF grammar for llama.cpp's sampler, with its lazy triggers and
/// preserved tokens (its JSON shape is in `docs/cli.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Gbnf {
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

impl Gbnf {
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
    /// The grammar for `config` in this template's format (see [`gbnf`]).
    pub fn grammar(&self, config: &Options) -> Result<Gbnf> {
        gbnf(&Protocol::new(self, config))
    }
}

/// Options of the GBNF export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GbnfOptions {
    /// The serving model's special tokens (its whole list will do, as
    /// `ParserConfig::special_tokens` takes it): the grammar's markers
    /// among them are written in llama.cpp's token syntax (`<tool_call>`),
    /// so the model must sample the token, not spell the text. Only texts
    /// of the form `<...>` have the syntax; other markers stay text, with a
    /// warning. Each must be one token of the vocabulary, or llama.cpp
    /// refuses the grammar.
    pub special_tokens: Vec<String>,
}

setters!(GbnfOptions {
    /// Sets the marker cores that are special tokens of the serving model.
    with_special_tokens => special_tokens: Vec<String>,
});

/// The GBNF grammar of `protocol`, every marker as text. Errors (kind
/// `input`) when calls are required but cannot be written (see
/// [`Protocol::check_servable`]).
pub fn gbnf(protocol: &Protocol) -> Result<Gbnf> {
    gbnf_with(protocol, &GbnfOptions::default())
}

/// The GBNF grammar of `protocol`, with `options`.
pub fn gbnf_with(protocol: &Protocol, options: &GbnfOptions) -> Result<Gbnf> {
    let mut out = gbnf_text(protocol)?;
    let tokens = markers_among(&out.preserved_tokens, &options.special_tokens);
    if !out.gbnf.is_empty() {
        out.gbnf = gbnf_tokens::name_tokens(&out.gbnf, &tokens, &mut out.warnings);
    }
    Ok(out)
}

/// The grammar's markers (`preserved`) that are among a vocabulary's
/// special tokens: a vocabulary lists thousands, and only the markers can
/// be written as tokens, so an export looks up those few.
pub(crate) fn markers_among(preserved: &[String], vocabulary: &[String]) -> Vec<String> {
    let vocabulary: HashSet<&str> = vocabulary.iter().map(String::as_str).collect();
    (preserved.iter())
        .filter(|t| vocabulary.contains(t.as_str()))
        .cloned()
        .collect()
}

fn gbnf_text(protocol: &Protocol) -> Result<Gbnf> {
    protocol.check_servable()?;
    let mut warnings = protocol.warnings.clone();
    let mut rules = Rules::default();
    let calls = protocol.tools.as_ref().filter(|s| !s.tools.is_empty());
    let forced = calls.is_some_and(|s| s.required);
    let section = calls.map(|s| sections(&mut rules, &mut warnings, s, protocol.headers()));
    let answer = protocol
        .response_schema
        .as_ref()
        .map(|s| answer(protocol, &mut rules, &mut warnings, s));
    protocol.note_strict(&mut warnings);
    let (root, lazy, triggers) = match (section, answer) {
        (None, None) => {
            // Nothing to constrain, but an engine still drops special tokens
            // it is not told to keep (llama-server's `preserved_tokens`).
            return Ok(Gbnf {
                warnings,
                preserved_tokens: protocol.preserved_tokens.clone(),
                ..Gbnf::default()
            });
        }
        (Some(section), None) if !forced => (
            section,
            true,
            calls
                .map(|s| lazy_triggers(protocol, s))
                .unwrap_or_default(),
        ),
        (Some(section), answer) => {
            let section = after_empty_content(protocol, &mut rules, section);
            let body = match answer {
                Some(a) => format!("( {section} | {a} )"),
                None => section,
            };
            (eager(protocol, &mut rules, body), false, Vec::new())
        }
        (None, Some(a)) => (eager(protocol, &mut rules, a), false, Vec::new()),
    };
    rules.fixed("root", &root);
    if root.contains("ws") {
        primitive(&mut rules, "ws", false);
    }
    let preserved_tokens = protocol.preserved_tokens.clone();
    Ok(Gbnf {
        gbnf: rules.render(),
        lazy,
        triggers,
        preserved_tokens,
        warnings,
    })
}

/// Where a lazy grammar over `section` starts: each format's triggers, once.
fn lazy_triggers(protocol: &Protocol, section: &ToolSection) -> Vec<Trigger> {
    let mut out: Vec<Trigger> = Vec::new();
    let each = |f| {
        triggers::triggers(
            f,
            protocol.reasoning.as_ref(),
            &protocol.content.start,
            &section.tools,
            &protocol.preserved_tokens,
        )
    };
    for t in section.formats.iter().flat_map(each) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The reasoning block the protocol allows, then `body`: what an eager
/// grammar leaves free.
fn eager(protocol: &Protocol, rules: &mut Rules, body: String) -> String {
    let Some(r) = &protocol.reasoning else {
        // After a prompt that closed the block, its end marker written
        // again is scaffolding (the parser drops it too).
        return match &protocol.closed_by_prompt {
            Some(end) => format!("( ws {} )? ws {body}", literal(end.trim())),
            None => format!("ws {body}"),
        };
    };
    let text = until(rules, "reasoning-text", &r.end);
    let mut block = Pieces::new();
    block.ws();
    if r.opened {
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
    // Optional even when the output starts inside the block: the parser
    // reads a call written before the block's end as ending it.
    format!("{reasoning}? ws {body}")
}

/// `body` after an optional empty content block: templates with a content
/// wrapper may write it, empty, before the calls
/// (`<|open|>response<|sep|><|close|>response<|sep|>`), as the analysis reads
/// their call outputs.
fn after_empty_content(protocol: &Protocol, rules: &mut Rules, body: String) -> String {
    let (start, end) = (&protocol.content.start, &protocol.content.end);
    if start.trim().is_empty() || end.trim().is_empty() {
        return body;
    }
    let mut block = Pieces::new();
    block.marker(start).ws().marker(end).ws();
    let block = rules.add("empty-content", block.render());
    format!("{block}? {body}")
}

/// The JSON answer: the content wrapper (if any), then the schema's value.
fn answer(
    protocol: &Protocol,
    rules: &mut Rules,
    warnings: &mut Vec<String>,
    schema: &Value,
) -> String {
    let mut c = Compiler::new(rules, warnings, ValueSyntax::Json, schema);
    let value = c.compile(schema, "answer-value");
    let mut p = Pieces::new();
    if !protocol.content.start.trim().is_empty() {
        let mut start = Pieces::new();
        start.marker(&protocol.content.start);
        p.optional(&start).ws();
    }
    p.expr(value).ws();
    if !protocol.content.end.trim().is_empty() {
        p.marker(&protocol.content.end);
    }
    format!("( {} )", p.render())
}

/// The tool section rule text: one format's section, or a choice between
/// several (the fallback dialects), each followed by optional space.
fn sections(
    rules: &mut Rules,
    warnings: &mut Vec<String>,
    section: &ToolSection,
    headers: &[Header],
) -> String {
    let rendered: Vec<String> = section
        .formats
        .iter()
        .map(|f| {
            let mut b = Builder {
                rules: &mut *rules,
                warnings: &mut *warnings,
                format: f,
                headers,
                refs: Default::default(),
            };
            let mut p = b.section(&section.tools, section.parallel && f.parallel);
            p.ws();
            p.render()
        })
        .collect();
    match rendered.as_slice() {
        [one] => one.clone(),
        many => format!("( {} )", many.join(" | ")),
    }
}

/// A literal for callers building on grammar text (escaping as GBNF wants).
pub fn gbnf_literal(text: &str) -> String {
    literal(text)
}
