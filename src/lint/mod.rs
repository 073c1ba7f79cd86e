//! The template linter: rendering defects a server or a fine-tuning run would
//! trip over, found by rendering named probe conversations.
//!
//! [`lint`] returns the template's [`Capabilities`] and a list of
//! [`Finding`]s; each finding names the conversation that shows it (see
//! `checks` for the conversations and the exact rule of every check) and
//! says in one line what the render did.
//!
//! The checks follow the reasoning rules of a correct chat template (those of
//! `templates/qwen3_5-fixed.jinja`, in `docs/lint.md`): an earlier answer may
//! lose its whole think block once a new user turn follows, and the last turn
//! may render an empty block; neither is a finding. What is a finding: an
//! earlier answer's block collapsed to an empty block, a tool-call turn losing
//! its reasoning or its prefill later on, and any other rewrite of text a KV
//! cache already holds.
//!
//! Invariants: linting never fails and never panics (a template that renders
//! nothing gets one finding saying so); the report is deterministic.

mod checks;

use serde::{Deserialize, Serialize};

use crate::template::{Capabilities, ChatTemplate};

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FindingKind {
    /// Not even one user turn renders.
    DoesNotRender,
    /// An earlier answer's reasoning is still rendered after a later user turn.
    ThinkKeptInHistory,
    /// An earlier answer renders an empty reasoning block where its reasoning was.
    ThinkCollapsedToEmpty,
    /// A tool-call turn's reasoning disappears once a later user turn follows.
    ThinkDroppedOnToolCall,
    /// An assistant turn with `content: null` fails to render.
    NullContentFails,
    /// An assistant turn with `content: null` renders the text `None`.
    NullContentPrintsNone,
    /// An assistant turn without a `content` key fails to render.
    MissingContentFails,
    /// Characters inside tool JSON come out HTML-escaped (`&lt;`, `&#34;`...).
    HtmlEscapedJson,
    /// A second system message makes the render fail.
    MultipleSystemRejected,
    /// A second system message is rendered as a turn of its own.
    MultipleSystemSeparate,
    /// A second system message does not appear at all.
    MultipleSystemDropped,
    /// The non-thinking prefill's whitespace differs from the template's own
    /// (emptied) thinking block, so prompt + reply is not the rendered turn.
    PrefillWhitespace,
    /// The non-thinking prefill of a tool-call turn disappears from later prompts.
    PrefillDropped,
    /// Arguments holding quotes or `"""` make the render fail.
    QuotesBreakRender,
    /// Arguments holding quotes or `"""` render neither verbatim nor JSON-escaped.
    QuotesMangled,
    /// Adding a message rewrites text an earlier prompt already held.
    NotPrefixStable,
}

impl FindingKind {
    /// The kebab-case name used in reports.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// One defect, and the probe conversation that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Finding {
    /// The defect.
    pub kind: FindingKind,
    /// Name of the probe conversation (see `checks`).
    pub conversation: String,
    /// What the render did, one line.
    pub detail: String,
}

/// Everything the linter found about one template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LintReport {
    /// What the template renders (tools, calls, results, reasoning...).
    pub capabilities: Capabilities,
    /// The defects found, in probe order.
    pub findings: Vec<Finding>,
}

impl LintReport {
    /// The kinds found, sorted and without repeats.
    pub fn kinds(&self) -> Vec<FindingKind> {
        let mut kinds: Vec<FindingKind> = self.findings.iter().map(|f| f.kind).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

/// Lints `template` (see the module doc).
pub fn lint(template: &ChatTemplate) -> LintReport {
    // All the probe renders share one render's fuel (see `template::RunFuel`).
    let _run = crate::template::RunFuel::start(&template.config().limits);
    let capabilities = template.capabilities();
    let findings = checks::run(template, &capabilities);
    LintReport {
        capabilities,
        findings,
    }
}

impl ChatTemplate {
    /// Lints this template; see [`lint`].
    pub fn lint(&self) -> LintReport {
        lint(self)
    }
}
