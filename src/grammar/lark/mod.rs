//! Lark export for llguidance: a printer of the output grammar
//! ([`Protocol::outline`]) as one Lark grammar over the whole output, with
//! JSON values as llguidance's `%json { schema }`.
//!
//! What the output may be is the outline's business (reasoning, free text
//! or calls under `tool_choice`, the call layouts, the values' notations);
//! this module only says it in Lark, the way llguidance's lexer needs it
//! (`lexemes`: lazy text up to markers, text that excludes what the
//! structure begins with, markers' whitespace folded where text may begin
//! too). Modules: `printer` (the walk over the tree), `lexemes` (text and
//! marker lexemes), `values` (a value's schema in its notation, the
//! `%json` safety bounds), `writer` (the rule table).
//!
//! Special tokens: llguidance reads a marker that is a *special token* of
//! the model's tokenizer only as the token (`<|im_end|>` in Lark syntax);
//! the same bytes as text would never match it. Which markers are special
//! tokens is a fact of the tokenizer, not of the template, so by default
//! every marker is text (right for byte-level tokenizers and for markers
//! the tokenizer spells in ordinary pieces), and a server that knows its
//! tokenizer lists the special ones in [`LarkOptions::special_tokens`].
//!
//! Invariants: reads the outline only (never the analysis' format types);
//! strict (lenient nodes left out); deterministic byte for byte (rules in
//! construction order, names from hints); never panics; a schema
//! llguidance cannot honour is compiled leniently (unsupported keywords
//! ignored) with a warning, never a failed request; the `%json` schemas
//! grow with the request, not with the paths through its schemas (see
//! `values`).

mod lexemes;
mod printer;
mod values;
mod writer;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::protocol::Protocol;

/// A Lark grammar for llguidance (`docs/cli.md`'s shape: `{"lark": ..., "preserved_tokens": [...]}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lark {
    /// The grammar text, `start` first.
    pub lark: String,
    /// Tokens a tokenizer must keep whole for the markers to be seen.
    pub preserved_tokens: Vec<String>,
    /// What could only be expressed loosely, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How markers are written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LarkOptions {
    /// Marker cores that are special tokens of the serving tokenizer:
    /// written in llguidance's token syntax (`<|tool_call|>`), which only
    /// names of the form `<...>` have; others stay text, with a warning.
    pub special_tokens: Vec<String>,
}

setters!(LarkOptions {
    /// Sets the marker cores that are special tokens of the serving tokenizer.
    with_special_tokens => special_tokens: Vec<String>,
});

/// The Lark grammar of `protocol`, every marker as text. Errors (kind
/// `input`) when calls are required but cannot be written.
pub fn lark(protocol: &Protocol) -> Result<Lark> {
    lark_with(protocol, &LarkOptions::default())
}

/// The Lark grammar of `protocol`, with `options`.
pub fn lark_with(protocol: &Protocol, options: &LarkOptions) -> Result<Lark> {
    protocol.check_servable()?;
    let outline = protocol.outline();
    let mut printer = printer::Printer::new(options, &outline);
    let lark = printer.print(&outline);
    let mut warnings = printer.w.warnings;
    protocol.note_strict(&mut warnings);
    Ok(Lark {
        lark,
        preserved_tokens: protocol.preserved_tokens.clone(),
        warnings,
    })
}

#[cfg(test)]
mod tests;
