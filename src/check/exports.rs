//! The grammar exports of one request shape, and whether each accepts the
//! shape's probe outputs in-process.
//!
//! Built: GBNF (llama.cpp), the structural tag (xgrammar), Lark
//! (llguidance) and the `response_template` (transformers). Checked
//! in-process: GBNF, with the crate's Earley recognizer when it is built
//! with the `gbnf-check` feature (a lazy grammar from its first trigger, as
//! llama.cpp starts it; an eager one over the whole output). The other
//! exports have no checker in this crate's dependencies: their acceptance
//! is the engines' to say (`--engines` on the command line).
//!
//! Invariant: never panics; an export that cannot be built is a status
//! with the error's text, not a failure of the check.

use serde::Serialize;
use serde_json::Value;

use crate::grammar::{Gbnf, TriggerKind};
use crate::request::Prepared;

/// Ends a transformers rejection whose only difference is argument values
/// transformers kept as text: a limit of its `response_template` spec
/// (docs/grammar.md), not a fault of the export.
pub const KEPT_AS_TEXT: &str = "transformers keeps as text what its parsers cannot read as JSON \
     (values written as Python literals, `{'a': True}`: docs/grammar.md)";

/// The exports' names, in report order.
pub const EXPORTS: [&str; 4] = ["gbnf", "structural-tag", "lark", "response-template"];

/// One export of a shape, as built.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Built {
    /// `gbnf`, `structural-tag`, `lark` or `response-template`.
    pub export: &'static str,
    /// The export (the JSON shape in docs/cli.md), or why it could not be built.
    #[serde(skip)]
    pub value: Result<Value, String>,
    /// Its error, when it could not be built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it could only serve loosely, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Whether one export accepts one probe output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Acceptance {
    /// The export takes the output.
    Accepted,
    /// The export refuses it; the detail says where.
    Rejected(String),
    /// Nothing checked it; the detail says why.
    NotChecked(String),
}

/// One export's verdict on one probe output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExportCheck {
    /// The export's name.
    pub export: &'static str,
    /// Who checked it: `in-process`, or the engine's name.
    pub by: String,
    /// What came of it.
    #[serde(flatten)]
    pub acceptance: Acceptance,
}

impl ExportCheck {
    /// `by`'s verdict on the output for `export`.
    pub fn new(export: &'static str, by: impl Into<String>, acceptance: Acceptance) -> ExportCheck {
        ExportCheck {
            export,
            by: by.into(),
            acceptance,
        }
    }
}

/// Every export of `prepared`.
pub fn build(prepared: &Prepared) -> Vec<Built> {
    let built = |export, result: crate::error::Result<(Value, Vec<String>)>| {
        let (value, error, warnings) = match result {
            Ok((value, warnings)) => (Ok(value), None, warnings),
            Err(e) => (Err(e.to_string()), Some(e.to_string()), Vec::new()),
        };
        Built {
            export,
            value,
            error,
            warnings,
        }
    };
    vec![
        built(
            EXPORTS[0],
            prepared.gbnf().map(|g| (json(&g), g.warnings.clone())),
        ),
        built(
            EXPORTS[1],
            prepared
                .structural_tag()
                .map(|t| (json(&t), t.warnings.clone())),
        ),
        built(
            EXPORTS[2],
            prepared.lark().map(|l| (json(&l), l.warnings.clone())),
        ),
        built(
            EXPORTS[3],
            prepared
                .response_template()
                .map(|r| (json(&r), r.warnings.clone())),
        ),
    ]
}

fn json<T: Serialize>(export: &T) -> Value {
    serde_json::to_value(export).unwrap_or_default()
}

/// The in-process GBNF checker of one shape: the grammar and, with the
/// `gbnf-check` feature, its compiled recognizer.
pub struct GbnfChecker {
    grammar: Option<Gbnf>,
    #[cfg(feature = "gbnf-check")]
    recognizer: Option<crate::grammar::Recognizer>,
}

impl GbnfChecker {
    /// The checker of the GBNF export in `built`.
    pub fn new(built: &[Built]) -> GbnfChecker {
        let grammar: Option<Gbnf> = built
            .iter()
            .find(|b| b.export == EXPORTS[0])
            .and_then(|b| b.value.as_ref().ok())
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        GbnfChecker {
            #[cfg(feature = "gbnf-check")]
            recognizer: grammar
                .as_ref()
                .filter(|g| !g.is_empty())
                .and_then(|g| crate::grammar::Recognizer::new(&g.gbnf).ok()),
            grammar,
        }
    }

    /// Whether the grammar accepts `output`, which holds `calls` calls.
    pub fn check(&self, output: &str, calls: usize) -> ExportCheck {
        let acceptance = match &self.grammar {
            None => Acceptance::NotChecked("the grammar could not be built".into()),
            Some(g) if g.is_empty() => Acceptance::Accepted,
            Some(g) => self.accepts(g, output, calls),
        };
        ExportCheck {
            export: EXPORTS[0],
            by: "in-process".into(),
            acceptance,
        }
    }

    #[cfg(feature = "gbnf-check")]
    fn accepts(&self, g: &Gbnf, output: &str, calls: usize) -> Acceptance {
        let Some(recognizer) = &self.recognizer else {
            return Acceptance::Rejected("the grammar does not parse as GBNF".into());
        };
        let Some(at) = grammar_start(g, output) else {
            return match calls {
                0 => Acceptance::Accepted,
                _ => Acceptance::Rejected("no trigger fires on the calls".into()),
            };
        };
        match recognizer.accepts(&output[at..]) {
            true => Acceptance::Accepted,
            false => Acceptance::Rejected(format!("rejected from byte {at}")),
        }
    }

    #[cfg(not(feature = "gbnf-check"))]
    fn accepts(&self, _: &Gbnf, _: &str, _: usize) -> Acceptance {
        Acceptance::NotChecked("built without the gbnf-check feature".into())
    }
}

/// Where `g` starts constraining `text`: 0 for an eager grammar; for a lazy
/// one the earliest trigger (a pattern's first capture group, as llama.cpp
/// starts it), `None` when none fires.
pub fn grammar_start(g: &Gbnf, text: &str) -> Option<usize> {
    if !g.lazy {
        return Some(0);
    }
    g.triggers
        .iter()
        .filter_map(|t| match t.kind {
            TriggerKind::Pattern | TriggerKind::PatternFull => {
                // A full pattern ends with `[\s\S]*$`: searched, it matches the output so far.
                let re = regex::Regex::new(&t.value).ok()?;
                let caps = re.captures(text)?;
                Some(caps.get(1).unwrap_or(caps.get(0)?).start())
            }
            _ => text.find(&t.value),
        })
        .min()
}
