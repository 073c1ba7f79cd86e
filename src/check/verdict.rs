//! The verdict rules of `check`, and one warning per problem with what to do.
//!
//! - **unsupported**: the probes ran out of render fuel; or the template
//!   does not render a user turn; or no
//!   parser can be built for a plain request; or the default shape's plain
//!   answer (`no-call`) or, for a template that renders calls, its single
//!   call (`one-call`) does not parse back whole: the basic round trip fails.
//!   Outputs cut where the rendered turn parts from the generation prompt
//!   (`common-prefix`: a forced-open block the template drops from
//!   history) are not what a model writes after the real prompt: their
//!   failures are notes.
//! - **warnings**: anything else that fails: a probe that does not parse
//!   back whole or streamed, an export that cannot be built for a shape
//!   that needs it or that rejects a probe output, a tool format assumed
//!   from the template's instructions rather than rendered, a lint finding
//!   that matters for parsing.
//! - **works**: none of these.
//!
//! Notes (no effect on the verdict): probes skipped because the template
//! does not render the turn, prefix-stability breaks and training-span
//! problems (they cost caching or training, not parsing), and the
//! `markers-in-args` probe of a tagged-argument format (its strings are
//! written raw: a value holding the closing marker is ambiguous in the
//! format itself, whatever reads it).

use serde::Serialize;

use super::detection::Source;
use super::exports::Acceptance;
use super::CheckReport;
use crate::lint::FindingKind;

/// What `check` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Verdict {
    /// Every probe parses back and every checked export accepts it.
    Works,
    /// It works, except for what the warnings say.
    Warnings,
    /// The basic round trip fails: do not serve this template with us.
    Unsupported,
}

impl Verdict {
    /// `works`, `warnings` or `unsupported`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Works => "works",
            Verdict::Warnings => "warnings",
            Verdict::Unsupported => "unsupported",
        }
    }
}

/// One problem and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Warning {
    /// What is wrong, one line.
    pub what: String,
    /// What to do, one line.
    pub todo: String,
    /// It makes the template unsupported.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fatal: bool,
}

impl Warning {
    /// A warning that does not make the template unsupported.
    pub fn new(what: impl Into<String>, todo: impl Into<String>) -> Warning {
        Warning {
            what: what.into(),
            todo: todo.into(),
            fatal: false,
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.todo)
    }
}

/// Lint findings that change what a model writes or how it is read.
pub fn affects_parsing(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::DoesNotRender
            | FindingKind::HtmlEscapedJson
            | FindingKind::QuotesBreakRender
            | FindingKind::QuotesMangled
            | FindingKind::NullContentPrintsNone
            | FindingKind::PrefillWhitespace
    )
}

/// How a probe the template refuses to render is skipped.
pub(super) const REFUSED: &str = "the template refuses the turn";

const REPORT: &str = "report it with the template (a parser gap); until then avoid this shape";

fn warning(what: String, todo: &str) -> Warning {
    Warning::new(what, todo)
}

/// The verdict, the warnings and the notes of `report`.
pub fn decide(report: &CheckReport) -> (super::Verdict, Vec<Warning>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    if report.out_of_fuel {
        let mut w = warning(
            "the probes ran out of render fuel: the template is too costly to render them all"
                .into(),
            "raise `Limits::fuel`, or simplify the template",
        );
        w.fatal = true;
        warnings.push(w);
    }
    for f in &report.lint {
        let mut w = warning(
            format!("lint {}: {}", f.kind.name(), f.detail),
            "fix the template (docs/lint.md says how)",
        );
        w.fatal = f.kind == FindingKind::DoesNotRender;
        warnings.push(w);
    }
    let renders_calls = report
        .detection
        .tool_formats
        .iter()
        .any(|t| t.source == Source::Rendered);
    for t in &report.detection.tool_formats {
        if let (Source::Prose, Some(example)) = (t.source, &t.example) {
            warnings.push(warning(
                format!("tool calls are read in the format the template's instructions show ({example}), not one it renders"),
                "check real model outputs, or make the template render assistant tool_calls",
            ));
        }
        let dialect = t.dialect.unwrap_or("fallback");
        if t.source == Source::Instructions && renders_calls {
            // The template's own calls are read as rendered: the dialect
            // is what a server's own tool list asks for besides.
            notes.push(format!(
                "the template's prompt never shows `tools`: a server writes the tool list itself, \
                 whose instructions ask for the {dialect} dialect, so calls in it are read too"
            ));
        } else if t.source == Source::Instructions {
            warnings.push(warning(
                format!(
                    "the template renders no tool call; calls are read as the {dialect} dialect"
                ),
                "check real model outputs, or make the template render assistant tool_calls",
            ));
        }
    }
    // Tagged arguments write strings raw: a value holding the format's own
    // closing marker cannot be told from its end, in any engine.
    let raw_values = report
        .detection
        .tool_formats
        .iter()
        .any(|t| t.arguments == "tagged");
    for s in &report.shapes {
        let name = s.shape.name;
        if let Some(e) = &s.parser_error {
            let mut w = warning(format!("{name}: no parser: {e}"), REPORT);
            w.fatal = name == "default";
            warnings.push(w);
        }
        for b in &s.exports {
            if let Some(e) = &b.error {
                warnings.push(warning(
                    format!("{name}: the {} export cannot be built: {e}", b.export),
                    "serve this shape without constrained decoding",
                ));
            }
        }
        // Every probe of the default shape refused: nothing was parsed
        // back, so nothing says the template works (command-r's tool block
        // requires a description on every parameter).
        let refused = |p: &&super::ProbeReport| {
            p.skipped
                .as_deref()
                .is_some_and(|why| why.starts_with(REFUSED))
        };
        if name == "default" && !s.probes.is_empty() && s.probes.iter().all(|p| refused(&p)) {
            let why = s.probes[0].skipped.as_deref().unwrap_or_default();
            warnings.push(warning(
                format!("{name}: no probe renders, so none was parsed back ({why})"),
                "render your own requests with this template (`render --tools`): it may refuse their tools too",
            ));
        }
        for p in &s.probes {
            if raw_values && p.name == "markers-in-args" && !p.passed() {
                notes.push(format!(
                    "{name}/{}: a string argument holding the format's own markers is misread \
                     (tagged arguments write strings raw; no engine can tell them apart)",
                    p.name
                ));
                continue;
            }
            probe_lines(name, p, renders_calls, &mut warnings, &mut notes);
        }
    }
    let unchecked = report
        .shapes
        .iter()
        .flat_map(|s| &s.probes)
        .flat_map(|p| &p.exports)
        .find_map(|e| match &e.acceptance {
            Acceptance::NotChecked(why) => Some(format!("{}: not checked ({why})", e.export)),
            _ => None,
        });
    if let Some(line) = unchecked {
        notes.push(format!("{line}: --engines runs the real engines"));
    }
    for b in &report.prompt.prefix_breaks {
        notes.push(format!(
            "prompt after {} messages is not a prefix of the next at byte {} ({:?} became {:?}): {}",
            b.after_messages, b.at, b.was, b.now, b.why
        ));
    }
    notes.extend(report.prompt.problems.iter().cloned());
    let verdict = if warnings.iter().any(|w| w.fatal) {
        super::Verdict::Unsupported
    } else if warnings.is_empty() {
        super::Verdict::Works
    } else {
        super::Verdict::Warnings
    };
    (verdict, warnings, notes)
}

/// The warnings and notes of one probe.
fn probe_lines(
    shape: &str,
    p: &super::ProbeReport,
    renders_calls: bool,
    warnings: &mut Vec<Warning>,
    notes: &mut Vec<String>,
) {
    let at = format!("{shape}/{}", p.name);
    if let Some(why) = &p.skipped {
        notes.push(format!("{at} not probed: {why}"));
        return;
    }
    if p.content_as_reasoning {
        notes.push(format!(
            "{at}: the template writes this turn's content inside its reasoning block, \
             so it reads back as reasoning"
        ));
    }
    if p.source == Some(super::OutputSource::CommonPrefix) {
        // The turn renders unlike its generation prompt (a forced-open
        // block dropped from history): the output is cut where the two
        // part, which is not what a model writes after the real prompt.
        let mut found = Vec::new();
        probe_lines_of(&at, p, false, &mut found);
        notes.extend(found.into_iter().map(|w| {
            format!(
                "{} (the output is cut where the rendered turn parts from the prompt, \
                 so a model may write otherwise)",
                w.what
            )
        }));
        return;
    }
    let basic =
        shape == "default" && (p.name == "no-call" || (p.name == "one-call" && renders_calls));
    probe_lines_of(&at, p, basic, warnings);
}

/// The warnings of one probe that ran (`basic`: its parse failing is fatal).
fn probe_lines_of(at: &str, p: &super::ProbeReport, basic: bool, warnings: &mut Vec<Warning>) {
    if let (Some(e), true) = (&p.parse_error, p.renders_alike) {
        warnings.push(warning(
            format!("{at}: the template writes the parsed message as it writes the turn ({e}): no parser can tell them apart"),
            "a model trained on this template cannot write the difference either; keep such values out of arguments, or fix the template",
        ));
    } else if let Some(e) = &p.parse_error {
        let todo = match p.name {
            "markers-in-args" => "the format cannot carry its own markers in a string; keep them out of arguments",
            "tricky-args" => "arguments like these (quotes, newlines, markup, nested values) are misread; report it",
            _ => REPORT,
        };
        let mut w = warning(format!("{at}: parsed back wrong: {e}"), todo);
        w.fatal = basic;
        warnings.push(w);
    }
    if !p.stream_failures.is_empty() {
        warnings.push(warning(
            format!(
                "{at}: streamed in {:?}-byte chunks differs from the whole parse",
                p.stream_failures
            ),
            "parse whole outputs for this shape, and report it",
        ));
    }
    for e in &p.exports {
        if let Acceptance::Rejected(why) = &e.acceptance {
            warnings.push(warning(
                format!(
                    "{at}: the {} export ({}) rejects the output: {why}",
                    e.export, e.by
                ),
                rejection_todo(e.export, why),
            ));
        }
    }
}

/// What to do about an export that rejects a probe. The response_template
/// is a parser, not a constraint: where it reads otherwise, parse with ours;
/// a value its spec cannot read is a known limit, nothing to report.
fn rejection_todo(export: &str, why: &str) -> &'static str {
    match export {
        "response-template" if why.ends_with(super::KEPT_AS_TEXT) => {
            "a limit of transformers' response_template spec: parse outputs with such values with our parser"
        }
        "response-template" => "parse this shape with our parser, not the response_template; report it",
        _ => "do not constrain this shape with that export; report it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::ExportCheck;
    use crate::template::{ChatTemplate, TemplateConfig};
    use crate::Chat;

    /// A transformers rejection says what to do: parse with ours; and a
    /// value the spec cannot read is a known limit, not a fault to report.
    #[test]
    fn a_response_template_rejection_says_to_parse_with_ours() {
        let source = include_str!("../../templates/hermes-think.jinja");
        let chat = Chat::new(ChatTemplate::new(source, &TemplateConfig::default()).unwrap());
        let mut report = chat.unwrap().check();
        assert_eq!(report.verdict, super::super::Verdict::Works);
        let rejected = |why: String| {
            ExportCheck::new(
                "response-template",
                "transformers",
                Acceptance::Rejected(why),
            )
        };
        let probe = &mut report.shapes[0].probes[1];
        probe.exports.push(rejected("ours 1, theirs 2".into()));
        probe.exports.push(rejected(format!(
            "ours 1, theirs 2; {}",
            super::super::KEPT_AS_TEXT
        )));
        report.decide();
        let todos: Vec<&str> = report.warnings.iter().map(|w| w.todo.as_str()).collect();
        assert_eq!(
            todos,
            [
                "parse this shape with our parser, not the response_template; report it",
                "a limit of transformers' response_template spec: parse outputs with such values with our parser",
            ]
        );
    }
}
