//! Grammar export: from an [`Analysis`](crate::Analysis) to a GBNF grammar that makes a model
//! write output the parser accepts (constrained decoding). The GBNF text is
//! a printer of the request's output grammar (`Protocol::outline`), as the
//! Lark export is: neither reads the analysis' format types.
//!
//! [`Analysis::grammar`](crate::Analysis::grammar) takes the request's
//! [`Options`](crate::Options) (tools, [`ToolChoice`],
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
//! notation), `gbnf_printer` (the outline walked into rules), `shape` (what
//! the GBNF and Lark printers decide alike about nodes), `triggers` (where
//! lazy grammars start: the outline's lazy starts), `syntax` (the GBNF
//! language, `grammars/gbnf.pest`) and
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
mod gbnf_printer;
mod gbnf_tokens;
mod lark;
mod markers;
mod pattern;
#[cfg(feature = "gbnf-check")]
pub mod recognizer;
mod response_template;
mod schema;
mod shape;
mod structural_tag;
#[cfg(feature = "gbnf-check")]
pub mod syntax;
mod triggers;
mod walk;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::protocol::outline::{Kind, Node};
use crate::protocol::Protocol;

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

use gbnf::{alt, literal};
use gbnf_printer::Printer;
use markers::Pieces;
use schema::primitive;

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
    let outline = protocol.outline();
    let preserved_tokens = protocol.preserved_tokens.clone();
    let mut printer = Printer::new(&outline);
    let lazy = triggers::lazy_nodes(&outline);
    let root = match (lazy.is_empty(), constrains(&outline.root)) {
        // Nothing to constrain, but an engine still drops special tokens
        // it is not told to keep (llama-server's `preserved_tokens`).
        (true, false) => {
            let mut warnings = printer.warnings;
            protocol.note_strict(&mut warnings);
            return Ok(Gbnf {
                warnings,
                preserved_tokens,
                ..Gbnf::default()
            });
        }
        // Lazy: the sections, from their trigger on.
        (false, _) => {
            let sections: Vec<String> = (lazy.iter())
                .map(|node| {
                    let mut p = printer.node(node, "");
                    p.ws();
                    p.render()
                })
                .collect();
            alt(&sections)
        }
        (true, true) => eager(&mut printer, &outline.root),
    };
    let mut rules = printer.rules;
    rules.fixed("root", &root);
    if root.contains("ws") {
        primitive(&mut rules, "ws", false);
    }
    let mut warnings = printer.warnings;
    protocol.note_strict(&mut warnings);
    let triggers = match lazy.is_empty() {
        true => Vec::new(),
        false => triggers::triggers(&outline, &preserved_tokens),
    };
    Ok(Gbnf {
        gbnf: rules.render(),
        lazy: !lazy.is_empty(),
        triggers,
        preserved_tokens,
        warnings,
    })
}

/// The whole output from its first token: the parts of the root
/// (reasoning, the body) with the template's whitespace between them
/// flexible, as before and after them, and after an optional block that
/// opens the body (an empty content block before calls).
fn eager(printer: &mut Printer, root: &Node) -> String {
    let mut p = Pieces::new();
    p.ws();
    let parts = match &root.kind {
        Kind::Sequence(parts) if !root.lenient => parts.iter().collect(),
        _ => vec![root],
    };
    for part in parts {
        for item in shape::flat(part) {
            p.extend(&printer.node(item, ""));
            if matches!(item.kind, Kind::Optional(_)) {
                p.ws();
            }
        }
        p.ws();
    }
    p.render()
}

/// Whether `node` constrains anything beyond free text and reasoning: a
/// call or a value.
fn constrains(node: &Node) -> bool {
    if node.lenient {
        return false;
    }
    matches!(node.kind, Kind::Rule(_) | Kind::Value(_))
        || node.children().into_iter().any(constrains)
}

/// A literal for callers building on grammar text (escaping as GBNF wants).
pub fn gbnf_literal(text: &str) -> String {
    literal(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::outline::Outline;
    use crate::protocol::testing::{weather_parameters, weather_protocol};

    /// The nodes only the parser's outline holds (a turn's header, a
    /// generic call's name slot) print as what they stand for: a printer
    /// given one never writes a grammar that refuses its text.
    #[test]
    fn the_parser_outlines_own_nodes_print_as_what_they_stand_for() {
        let source = include_str!("../../templates/channel-harmony.jinja");
        let protocol = weather_protocol(source, weather_parameters(), ToolChoice::Auto, true);
        let parser = protocol.parser_outline();
        let outline = Outline {
            root: Node::empty(),
            rules: Vec::new(),
            prompt_reasoning: String::new(),
            warnings: Vec::new(),
        };
        let accepts = |node: &Node, text: &str| {
            let mut printer = Printer::new(&outline);
            let root = printer.node(node, "").render();
            let mut rules = printer.rules;
            rules.fixed("root", &root);
            primitive(&mut rules, "ws", false);
            Recognizer::new(&rules.render()).unwrap().accepts(text)
        };
        let header = &parser.headers[0];
        assert!(accepts(header, "<|channel|>final<|message|>"));
        assert!(!accepts(header, "<|channel|>final"));
        let slot = Node::new(Kind::NameSlot { quoted: true });
        assert!(accepts(&slot, "\"get_weather\""));
        assert!(!accepts(&slot, "get_weather"));
    }
}
