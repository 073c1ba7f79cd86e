//! `chat-autoparser check TEMPLATE|DIR [--json] [--engines] [--policy ...]`:
//! a verdict with evidence (see `chat_autoparser::check` and docs/check.md),
//! the parsers under the output policy given (as `parse --policy`).
//!
//! Exit codes: 0 works, 3 works with warnings, 4 unsupported, 1 a template
//! or input error, 2 bad usage. A folder of templates (or model folders)
//! gets one table row each (one JSON line with `--json`) and exits with the
//! worst verdict's code, or 1 when any template could not be checked.
//! Progress goes to stderr, only on a terminal and never with `--json`.
//! `--emit-response-template FILE` writes the `response_template` into a
//! `tokenizer_config.json` (created, or its other keys kept);
//! `--response-template FILE` cross-checks a hand-written one with
//! transformers' `parse_response` (see `check_engines`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chat_autoparser::analysis::visible;
use chat_autoparser::check::{Acceptance, CheckReport, ProbeReport, Rendering, Source};
use chat_autoparser::{Chat, Error, ErrorKind, Verdict};
use serde_json::{json, Map, Value};

use crate::analyze_cmd::{is_template_folder, templates_in};
use crate::check_engines::{self, EngineStatus};
use crate::parse_cmd::PolicyArgs;
use crate::{input_failure, load_path, write_out, Failure, TemplateArg};

/// Exit code of a template that works with warnings.
pub const EXIT_WARNINGS: u8 = 3;
/// Exit code of an unsupported template.
pub const EXIT_UNSUPPORTED: u8 = 4;
/// The `--json` schema's version (docs/check.md).
pub const JSON_VERSION: u32 = 1;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 works, 3 works with warnings, 4 unsupported, \
1 template or input error, 2 bad usage. The verdict rules and the JSON schema are in docs/check.md."
)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// Print the report as JSON (one line per template for a folder)
    #[arg(long)]
    json: bool,
    /// Also run the installed engines: llama.cpp's GBNF validator
    /// (CHAT_AUTOPARSER_LLAMA_BIN), xgrammar and transformers (CHAT_AUTOPARSER_PYTHON)
    #[arg(long)]
    engines: bool,
    /// Write the response_template into FILE, a tokenizer_config.json (created, or its other keys kept)
    #[arg(long, value_name = "FILE")]
    emit_response_template: Option<PathBuf>,
    /// Cross-check a hand-written response_template (a tokenizer_config.json
    /// holding one, or the template alone) against our parse of the probes
    #[arg(long, value_name = "FILE")]
    response_template: Option<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
}

/// One checked template: the report, what the engines did, and the time.
struct Checked {
    report: CheckReport,
    engines: Vec<EngineStatus>,
    time: Duration,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let path = &args.template.template;
    if is_template_folder(path) {
        if args.emit_response_template.is_some() || args.response_template.is_some() {
            return Err(Failure::Usage(
                "--emit-response-template and --response-template take one template, not a folder"
                    .into(),
            ));
        }
        return folder(args);
    }
    let checked = check_one(args, path)?;
    if args.json {
        let line = json_of(&shown(path), &checked);
        write_out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&line).unwrap_or_default()
        ))?;
    } else {
        write_out(&human(&checked))?;
    }
    exit_for(checked.report.verdict)
}

/// The verdict's exit code, as a failure that prints nothing (0: success).
fn exit_for(verdict: Verdict) -> Result<(), Failure> {
    match verdict {
        Verdict::Works => Ok(()),
        Verdict::Unsupported => Err(Failure::Exit(EXIT_UNSUPPORTED)),
        _ => Err(Failure::Exit(EXIT_WARNINGS)),
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// Loads, analyses and checks one template (engines and response
/// templates as the arguments ask).
fn check_one(args: &Args, path: &Path) -> Result<Checked, Failure> {
    let start = Instant::now();
    let template = load_path(path, args.template.template_name.as_deref(), true)?;
    let chat = Chat::new(template)?;
    let mut report = chat.check_with_policy(args.policy.policy()?);
    let mut engines = Vec::new();
    if args.engines {
        engines = check_engines::run(&mut report);
    }
    if let Some(file) = &args.response_template {
        let theirs = read_response_template(file)?;
        let (status, disagreements) = check_engines::cross_check(&report, &theirs);
        if let EngineStatus::Skipped { why, .. } = &status {
            return Err(input_failure(format!(
                "--response-template needs transformers: {why}"
            )));
        }
        for d in disagreements {
            report.add_warning(d);
        }
        engines.push(status);
    }
    if let Some(file) = &args.emit_response_template {
        emit_response_template(&report, file)?;
    }
    Ok(Checked {
        report,
        engines,
        time: start.elapsed(),
    })
}

/// The `response_template` of `file`: a `tokenizer_config.json`'s, or the
/// file's whole object when it is the template itself.
fn read_response_template(file: &Path) -> Result<Value, Failure> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Library(Error::new(ErrorKind::Io, format!("{shown}: {e}"))))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| input_failure(format!("{shown}: {e}")))?;
    match value.get("response_template") {
        Some(t) if t.is_object() => Ok(t.clone()),
        _ if value.get("version").is_some() => Ok(value),
        _ => Err(input_failure(format!(
            "{shown}: no response_template (expected a tokenizer_config.json with one, or the template itself)"
        ))),
    }
}

/// Writes the default shape's `response_template` into `file` (a
/// `tokenizer_config.json`, where transformers loads it from a model folder).
fn emit_response_template(report: &CheckReport, file: &Path) -> Result<(), Failure> {
    let Some(template) = check_engines::our_response_template(report) else {
        return Err(input_failure(
            "no response_template can be exported for this template".into(),
        ));
    };
    let shown = file.display();
    let mut config = match std::fs::read_to_string(file) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            _ => {
                return Err(input_failure(format!(
                    "{shown}: not a JSON object; not overwritten"
                )))
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => {
            return Err(Failure::Library(Error::new(
                ErrorKind::Io,
                format!("{shown}: {e}"),
            )))
        }
    };
    config.insert("response_template".into(), template);
    let text = serde_json::to_string_pretty(&Value::Object(config)).unwrap_or_default();
    std::fs::write(file, text + "\n")
        .map_err(|e| Failure::Library(Error::new(ErrorKind::Io, format!("{shown}: {e}"))))
}

/// The `--json` document of one template (docs/check.md).
fn json_of(template: &str, checked: &Checked) -> Value {
    let mut doc = json!({
        "check_version": JSON_VERSION,
        "template": template,
        "time_ms": checked.time.as_millis() as u64,
        "engines": checked.engines,
    });
    if let (Value::Object(out), Ok(Value::Object(report))) =
        (&mut doc, serde_json::to_value(&checked.report))
    {
        out.extend(report);
    }
    doc
}

/// One row per template of the folder, or one JSON line each.
fn folder(args: &Args) -> Result<(), Failure> {
    let dir = &args.template.template;
    let paths = templates_in(dir)?;
    let progress = !args.json && std::io::stderr().is_terminal();
    let mut rows = vec![row_header()];
    let mut lines = String::new();
    let mut worst: Option<Verdict> = None;
    let mut errors = 0;
    for (i, path) in paths.iter().enumerate() {
        let name = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        if progress {
            eprint!("\r\x1b[2K[{}/{}] {name}", i + 1, paths.len());
        }
        match check_one(args, path) {
            Ok(checked) => {
                worst = Some(worse(worst, checked.report.verdict));
                if args.json {
                    lines.push_str(&format!("{}\n", json_of(&name, &checked)));
                } else {
                    rows.push(row(&name, &checked));
                }
            }
            Err(f) => {
                errors += 1;
                let text = failure_text(&f);
                match args.json {
                    true => {
                        lines.push_str(&format!("{}\n", json!({"template": name, "error": text})))
                    }
                    false => rows.push([name, "error".into(), String::new(), text, String::new()]),
                }
            }
        }
    }
    if progress {
        eprint!("\r\x1b[2K");
    }
    write_out(&if args.json { lines } else { table(&rows) })?;
    match (errors, worst) {
        (0, Some(v)) => exit_for(v),
        _ => Err(Failure::Exit(1)),
    }
}

/// The worse of two verdicts.
fn worse(a: Option<Verdict>, b: Verdict) -> Verdict {
    let rank = |v: Verdict| match v {
        Verdict::Works => 0,
        Verdict::Unsupported => 2,
        _ => 1,
    };
    match a {
        Some(a) if rank(a) >= rank(b) => a,
        _ => b,
    }
}

fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Library(e) => e.to_string(),
        Failure::Usage(m) => m.clone(),
        Failure::ReaderGone => "stdout closed".into(),
        Failure::Exit(code) => format!("exit {code}"),
    }
}

fn row_header() -> [String; 5] {
    ["template", "verdict", "formats", "warnings", "time"].map(String::from)
}

fn row(name: &str, checked: &Checked) -> [String; 5] {
    let r = &checked.report;
    let warnings = match r.warnings.first() {
        None => "0".into(),
        Some(w) => format!("{}: {}", r.warnings.len(), w.what),
    };
    [
        name.into(),
        r.verdict.as_str().into(),
        formats(r),
        warnings,
        format!("{} ms", checked.time.as_millis()),
    ]
}

/// `reasoning tools` in a few words: `tag tag-json`, `- hermes?`.
fn formats(r: &CheckReport) -> String {
    let d = &r.detection;
    let reasoning = match d.reasoning.source {
        Source::None => "-".to_owned(),
        _ => kebab(&d.reasoning.mode),
    };
    let tools: Vec<String> = d
        .tool_formats
        .iter()
        .map(|t| match t.source {
            Source::Instructions => format!("{}?", t.dialect.unwrap_or("fallback")),
            Source::Prose => "instructed?".to_owned(),
            _ => kebab(&t.class),
        })
        .collect();
    let tools = if tools.is_empty() {
        "-".into()
    } else {
        tools.join(",")
    };
    format!("{reasoning} {tools}")
}

fn kebab<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Columns padded to their widest cell; the last one free.
fn table(rows: &[[String; 5]]) -> String {
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let w4 = width(4);
    rows.iter()
        .map(|r| {
            let warnings: String = r[3].chars().take(100).collect();
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {:>w4$}  {}",
                r[0], r[1], r[2], r[4], warnings
            )
            .trim_end()
            .to_owned()
                + "\n"
        })
        .collect()
}

/// The human-readable report of one template.
fn human(checked: &Checked) -> String {
    let r = &checked.report;
    let mut out = String::new();
    let verdict = match r.verdict {
        Verdict::Works => "works",
        Verdict::Unsupported => "unsupported",
        _ => "works with warnings",
    };
    out.push_str(&format!(
        "verdict: {verdict} ({} ms)\n",
        checked.time.as_millis()
    ));
    for w in &r.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    out.push_str(&detected(r));
    out.push_str(&probes(r));
    let rendering = |r: Rendering| kebab(&r);
    out.push_str(&format!(
        "prompt: tool block {}, tool history {}, {}, {} training spans\n",
        rendering(r.prompt.tool_block),
        rendering(r.prompt.tool_history),
        if r.prompt.prefix_breaks.is_empty() {
            "prefix-stable"
        } else {
            "not prefix-stable"
        },
        r.prompt.spans.len()
    ));
    for e in &checked.engines {
        out.push_str(&format!("engine: {e}\n"));
    }
    for n in &r.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// What the analysis found, and where from.
fn detected(r: &CheckReport) -> String {
    let d = &r.detection;
    let q = |s: &str| format!("\"{}\"", visible(s));
    let mut out = format!("stop marker: {}\n", q(&d.stop_marker));
    match d.reasoning.source {
        Source::None => out.push_str("reasoning: none\n"),
        source => out.push_str(&format!(
            "reasoning: {} {} ... {} ({})\n",
            kebab(&d.reasoning.mode),
            q(&d.reasoning.start),
            q(&d.reasoning.end),
            match source {
                Source::Prose => "not rendered: named by the template's instructions",
                _ => "rendered",
            }
        )),
    }
    if let Some(switch) = &d.thinking_switch {
        out.push_str(&format!("thinking switch: {switch}\n"));
    }
    if d.tool_formats.is_empty() {
        out.push_str("tools: none\n");
    }
    for t in &d.tool_formats {
        let from = match t.source {
            Source::Instructions => format!(
                "not rendered: the {} dialect, assumed from the template's instructions",
                t.dialect.unwrap_or("fallback")
            ),
            Source::Prose => "not rendered: shown by the template's instructions".into(),
            _ => "rendered".into(),
        };
        out.push_str(&format!(
            "tools: {} {} {} ... {} ({from})\n",
            kebab(&t.class),
            q(&t.section_start),
            q(&t.call_start),
            q(&t.call_end)
        ));
    }
    out
}

/// The probes: a count, one line per shape, and each failure in full.
fn probes(r: &CheckReport) -> String {
    let all: Vec<&ProbeReport> = r.shapes.iter().flat_map(|s| &s.probes).collect();
    let ran: Vec<&&ProbeReport> = all.iter().filter(|p| p.skipped.is_none()).collect();
    let parsed = ran
        .iter()
        .filter(|p| p.parse_error.is_none() && p.stream_failures.is_empty())
        .count();
    let mut out = format!(
        "probes: {parsed} of {} parse back whole and streamed (1..7-byte chunks)",
        ran.len()
    );
    let mut by: Vec<(String, usize, usize)> = Vec::new();
    for e in ran.iter().flat_map(|p| &p.exports) {
        let key = format!("{} ({})", e.export, e.by);
        let accepted = matches!(e.acceptance, Acceptance::Accepted) as usize;
        let checked = !matches!(e.acceptance, Acceptance::NotChecked(_)) as usize;
        match by.iter_mut().find(|(k, _, _)| *k == key) {
            Some(entry) => (entry.1, entry.2) = (entry.1 + accepted, entry.2 + checked),
            None => by.push((key, accepted, checked)),
        }
    }
    for (key, accepted, checked) in by {
        out.push_str(&match checked {
            0 => format!("; {key} not checked"),
            _ => format!("; {key} accepts {accepted} of {checked}"),
        });
    }
    out.push('\n');
    for s in &r.shapes {
        let names: Vec<String> = s
            .probes
            .iter()
            .map(|p| match (p.skipped.is_some(), p.passed()) {
                (true, _) => format!("({})", p.name),
                (false, true) => p.name.to_owned(),
                (false, false) => format!("{}!", p.name),
            })
            .collect();
        out.push_str(&format!("  {:<15} {}\n", s.shape.name, names.join(" ")));
        for p in s
            .probes
            .iter()
            .filter(|p| p.skipped.is_none() && !p.passed())
        {
            out.push_str(&format!("    {}! {}\n", p.name, probe_cell(p)));
        }
    }
    out
}

/// What failed, for one probe that ran.
fn probe_cell(p: &ProbeReport) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &p.parse_error {
        let alike = match p.renders_alike {
            true => " (the template writes both alike)",
            false => "",
        };
        parts.push(format!("parsed back wrong{alike}: {e}"));
    }
    if !p.stream_failures.is_empty() {
        parts.push(format!(
            "streams wrong in {:?}-byte chunks",
            p.stream_failures
        ));
    }
    for e in &p.exports {
        if let Acceptance::Rejected(why) = &e.acceptance {
            parts.push(format!("{} ({}) rejects: {why}", e.export, e.by));
        }
    }
    parts.join("; ")
}
