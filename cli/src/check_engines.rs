//! `check --engines` and `check --response-template`: the probe outputs
//! run through the real engines that are installed, each reported as run
//! or skipped (with why), never a failure of the command:
//!
//! - llama.cpp (`CHAT_AUTOPARSER_LLAMA_BIN`, the folder `tools/llama_gbnf.sh`
//!   prints): its trigger search (`llama-triggers`) finds where the lazy
//!   grammar starts and its own validator (`test-gbnf-validator`) takes the
//!   output from there;
//! - xgrammar (`CHAT_AUTOPARSER_PYTHON` with xgrammar): the structural tag,
//!   compiled and matched over the whole output (`cli/src/xgrammar_check.py`);
//! - transformers (`CHAT_AUTOPARSER_PYTHON` with transformers ≥ 5.13):
//!   `parse_response` with the exported `response_template` (or an
//!   author's, for `--response-template`) must give the message our parser
//!   gives (`cli/src/response_template_check.py`).
//!
//! The Python checkers are compiled into the binary and run with
//! `python -c`, so the command needs no checkout. Each runs as one process
//! for the whole command (a folder pays its import once).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use chat_autoparser::check::{Acceptance, Built, CheckReport, ExportCheck, Warning, KEPT_AS_TEXT};
use chat_autoparser::grammar::{Gbnf, TriggerKind};
use serde::Serialize;
use serde_json::{json, Value};

const RESPONSE_TEMPLATE_CHECK: &str = include_str!("response_template_check.py");
const XGRAMMAR_CHECK: &str = include_str!("xgrammar_check.py");

/// What one engine did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum EngineStatus {
    /// It ran over `checked` outputs and rejected (or disagreed on) `failed`.
    Ran {
        engine: &'static str,
        export: &'static str,
        checked: usize,
        failed: usize,
    },
    /// It is not installed (or not configured).
    Skipped { engine: &'static str, why: String },
}

impl std::fmt::Display for EngineStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineStatus::Ran {
                engine,
                export,
                checked,
                failed,
            } => write!(
                f,
                "{engine} ({export}): {failed} of {checked} outputs failed"
            ),
            EngineStatus::Skipped { engine, why } => write!(f, "{engine}: skipped ({why})"),
        }
    }
}

/// Runs every installed engine over the probes, adds their verdicts to the
/// probes' exports and decides the verdict again.
pub fn run(report: &mut CheckReport) -> Vec<EngineStatus> {
    let python = python();
    let statuses = vec![
        llama(report),
        match &python {
            Ok(p) => xgrammar(report, p),
            Err(why) => skipped("xgrammar", why),
        },
        match &python {
            Ok(p) => transformers(report, p),
            Err(why) => skipped("transformers", why),
        },
    ];
    report.decide();
    statuses
}

fn skipped(engine: &'static str, why: &str) -> EngineStatus {
    EngineStatus::Skipped {
        engine,
        why: why.into(),
    }
}

/// `CHAT_AUTOPARSER_PYTHON`, or why there is none.
fn python() -> Result<PathBuf, String> {
    std::env::var_os("CHAT_AUTOPARSER_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| "CHAT_AUTOPARSER_PYTHON is not set".into())
}

/// Each probe that has an output: (shape index, probe index, output).
fn outputs(report: &CheckReport) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for (s, shape) in report.shapes.iter().enumerate() {
        for (p, probe) in shape.probes.iter().enumerate() {
            if let Some(output) = &probe.output {
                out.push((s, p, output.clone()));
            }
        }
    }
    out
}

/// The built export `name` among `built`, as JSON.
fn export<'a>(built: &'a [Built], name: &str) -> Option<&'a Value> {
    built
        .iter()
        .find(|b| b.export == name)
        .and_then(|b| b.value.as_ref().ok())
}

/// Records one engine verdict; the count of rejections.
fn record(
    report: &mut CheckReport,
    (s, p): (usize, usize),
    export: &'static str,
    engine: &str,
    acceptance: Acceptance,
) -> usize {
    let rejected = matches!(acceptance, Acceptance::Rejected(_)) as usize;
    report.shapes[s].probes[p]
        .exports
        .push(ExportCheck::new(export, engine, acceptance));
    rejected
}

/// A Python checker started once and kept for the whole command, so a
/// folder of templates pays the engine's import (seconds) once, not once per
/// template. The checkers answer one line per line, in order, and flush.
struct Worker {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The end of its stderr (drained by a thread so that it never blocks).
    stderr: Arc<Mutex<String>>,
    _child: Child,
}

/// The workers started so far, by script, or why one could not start (or died).
type Workers = Vec<(&'static str, Result<Worker, String>)>;

static WORKERS: Mutex<Workers> = Mutex::new(Vec::new());

/// How much of a worker's stderr is kept for the error message.
const STDERR_KEPT: usize = 4096;

impl Worker {
    /// Checks that the script imports (`--probe`), then starts it.
    fn start(python: &Path, script: &str) -> Result<Worker, String> {
        let probe = Command::new(python)
            .args(["-c", script, "--probe"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        if !probe.status.success() {
            let err = String::from_utf8_lossy(&probe.stderr);
            return Err(format!(
                "it does not import: {}",
                err.lines().last().unwrap_or("failed")
            ));
        }
        let mut child = Command::new(python)
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", python.display()))?;
        let (Some(stdin), Some(stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("no pipes to the checker".into());
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                if let Ok(mut text) = kept.lock() {
                    text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    let cut = text.len().saturating_sub(STDERR_KEPT);
                    let cut = (cut..text.len())
                        .find(|&i| text.is_char_boundary(i))
                        .unwrap_or(0);
                    text.drain(..cut);
                }
            }
        });
        Ok(Worker {
            stdin,
            stdout: BufReader::new(stdout),
            stderr,
            _child: child,
        })
    }

    /// One answer line per input line.
    fn ask(&mut self, input: &str) -> Result<Vec<String>, String> {
        let mut answers = Vec::new();
        for line in input.lines() {
            let mut answer = String::new();
            let wrote = writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush());
            let read = wrote.and_then(|()| self.stdout.read_line(&mut answer));
            if !matches!(read, Ok(1..)) {
                return Err(self.death());
            }
            answers.push(answer.trim_end_matches(['\r', '\n']).to_owned());
        }
        Ok(answers)
    }

    /// Why the worker stopped answering: the last line of its stderr.
    fn death(&self) -> String {
        // Give the drain thread a moment to collect the traceback.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let text = self.stderr.lock().map(|t| t.clone()).unwrap_or_default();
        let last = text.lines().last().unwrap_or("the checker stopped");
        format!("the checker stopped: {last}")
    }
}

/// `input` (JSON lines) through the worker of `script`, started on first
/// use; its answer lines. A worker that fails stays failed (same why).
fn run_python(python: &Path, script: &'static str, input: &str) -> Result<Vec<String>, String> {
    let mut workers = WORKERS.lock().map_err(|_| "checker lock poisoned")?;
    let at = match workers.iter().position(|(s, _)| std::ptr::eq(*s, script)) {
        Some(at) => at,
        None => {
            workers.push((script, Worker::start(python, script)));
            workers.len() - 1
        }
    };
    let slot = &mut workers[at].1;
    let answers = match slot {
        Ok(worker) => worker.ask(input),
        Err(why) => return Err(why.clone()),
    };
    if let Err(why) = &answers {
        *slot = Err(why.clone());
    }
    answers
}

/// llama.cpp's trigger search and GBNF validator on every output.
fn llama(report: &mut CheckReport) -> EngineStatus {
    let Some(bin) = std::env::var_os("CHAT_AUTOPARSER_LLAMA_BIN").map(PathBuf::from) else {
        return skipped("llama.cpp", "CHAT_AUTOPARSER_LLAMA_BIN is not set");
    };
    let (validator, triggers) = (bin.join("test-gbnf-validator"), bin.join("llama-triggers"));
    if !validator.is_file() || !triggers.is_file() {
        let why = format!(
            "no test-gbnf-validator / llama-triggers in {}",
            bin.display()
        );
        return skipped("llama.cpp", &why);
    }
    let scratch =
        std::env::temp_dir().join(format!("chat-autoparser-check-{}", std::process::id()));
    if std::fs::create_dir_all(&scratch).is_err() {
        return skipped("llama.cpp", "no scratch folder");
    }
    let (mut checked, mut failed) = (0, 0);
    for (s, p, output) in outputs(report) {
        let grammar: Option<Gbnf> = export(&report.shapes[s].probes[p].built, "gbnf")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let Some(grammar) = grammar.filter(|g| !g.is_empty()) else {
            continue;
        };
        checked += 1;
        let calls = report.shapes[s].probes[p].turn.calls.len();
        let acceptance = llama_accepts(&scratch, &validator, &triggers, &grammar, &output, calls);
        failed += record(report, (s, p), "gbnf", "llama.cpp", acceptance);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    EngineStatus::Ran {
        engine: "llama.cpp",
        export: "gbnf",
        checked,
        failed,
    }
}

fn llama_accepts(
    scratch: &Path,
    validator: &Path,
    triggers: &Path,
    g: &Gbnf,
    output: &str,
    calls: usize,
) -> Acceptance {
    let write = |name: &str, text: &str| {
        let path = scratch.join(name);
        std::fs::write(&path, text).map(|()| path)
    };
    let (Ok(grammar), Ok(input)) = (write("grammar.gbnf", &g.gbnf), write("output.txt", output))
    else {
        return Acceptance::NotChecked("scratch files".into());
    };
    let start = if g.lazy {
        let args: Vec<String> = g
            .triggers
            .iter()
            .map(|t| match t.kind {
                TriggerKind::Pattern => format!("pattern:{}", t.value),
                TriggerKind::PatternFull => format!("pattern_full:{}", t.value),
                _ => format!("word:{}", t.value),
            })
            .collect();
        let Ok(out) = Command::new(triggers).arg(&input).args(&args).output() else {
            return Acceptance::NotChecked("llama-triggers did not run".into());
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(e) = text.lines().find_map(|l| l.strip_prefix("error: ")) {
            return Acceptance::Rejected(format!("std::regex refuses a trigger: {e}"));
        }
        text.lines()
            .find_map(|l| l.strip_prefix("fired "))
            .and_then(|rest| rest.split(' ').nth(1))
            .and_then(|n| n.parse::<usize>().ok())
    } else {
        Some(0)
    };
    let Some(at) = start.filter(|&at| output.is_char_boundary(at)) else {
        return match calls {
            0 => Acceptance::Accepted,
            _ => Acceptance::Rejected("no trigger fires on the calls".into()),
        };
    };
    let Ok(input) = write("input.txt", &output[at..]) else {
        return Acceptance::NotChecked("scratch files".into());
    };
    match Command::new(validator).arg(&grammar).arg(&input).output() {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .contains("Input string is valid according to the grammar.") =>
        {
            Acceptance::Accepted
        }
        Ok(_) => Acceptance::Rejected(format!("rejected from byte {at}")),
        Err(e) => Acceptance::NotChecked(format!("test-gbnf-validator: {e}")),
    }
}

/// xgrammar's matcher on every output, one job per shape.
fn xgrammar(report: &mut CheckReport, python: &Path) -> EngineStatus {
    let mut jobs = String::new();
    let mut ids = Vec::new();
    for (s, p, output) in outputs(report) {
        let built = &report.shapes[s].probes[p].built;
        let Some(tag) = export(built, "structural-tag").and_then(|v| v.get("structural_tag"))
        else {
            continue;
        };
        let job = json!({"id": ids.len(), "tag": tag, "texts": [output]});
        jobs.push_str(&format!("{job}\n"));
        ids.push((s, p));
    }
    let lines = match run_python(python, XGRAMMAR_CHECK, &jobs) {
        Ok(lines) => lines,
        Err(why) => return skipped("xgrammar", &format!("xgrammar: {why}")),
    };
    let (mut checked, mut failed) = (0, 0);
    for line in lines {
        let Ok(answer) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(&at) = answer["id"].as_u64().and_then(|id| ids.get(id as usize)) else {
            continue;
        };
        checked += 1;
        let acceptance = match (answer.get("accepted"), answer.get("error")) {
            (Some(a), _) if a[0].as_bool() == Some(true) => Acceptance::Accepted,
            (Some(_), _) => Acceptance::Rejected("the matcher refuses the output".into()),
            (None, e) => Acceptance::Rejected(format!(
                "xgrammar refuses the tag: {}",
                e.and_then(Value::as_str).unwrap_or("?")
            )),
        };
        failed += record(report, at, "structural-tag", "xgrammar", acceptance);
    }
    EngineStatus::Ran {
        engine: "xgrammar",
        export: "structural-tag",
        checked,
        failed,
    }
}

/// transformers' `parse_response` with our exports, against our parse.
fn transformers(report: &mut CheckReport, python: &Path) -> EngineStatus {
    let ours = |built: &[Built]| {
        export(built, "response-template")
            .and_then(|v| v.get("response_template"))
            .cloned()
    };
    let answers = match parse_responses(report, python, &ours) {
        Ok(answers) => answers,
        Err(why) => return skipped("transformers", &why),
    };
    let (mut checked, mut failed) = (0, 0);
    for ((s, p), disagreement) in answers {
        checked += 1;
        let acceptance = match disagreement {
            None => Acceptance::Accepted,
            Some(why) => Acceptance::Rejected(why),
        };
        failed += record(
            report,
            (s, p),
            "response-template",
            "transformers",
            acceptance,
        );
    }
    EngineStatus::Ran {
        engine: "transformers",
        export: "response-template",
        checked,
        failed,
    }
}

/// An author's `response_template` against our parse of every probe: the
/// status, and one warning per disagreement.
pub fn cross_check(report: &CheckReport, theirs: &Value) -> (EngineStatus, Vec<Warning>) {
    let python = match python() {
        Ok(p) => p,
        Err(why) => return (skipped("transformers", &why), Vec::new()),
    };
    let answers = match parse_responses(report, &python, &|_| Some(theirs.clone())) {
        Ok(answers) => answers,
        Err(why) => return (skipped("transformers", &why), Vec::new()),
    };
    let checked = answers.len();
    let warnings: Vec<Warning> = answers
        .into_iter()
        .filter_map(|((s, p), d)| {
            let at = format!(
                "{}/{}",
                report.shapes[s].shape.name, report.shapes[s].probes[p].name
            );
            d.map(|why| {
                Warning::new(
                    format!("{at}: your response_template disagrees with our parse: {why}"),
                    "fix the response_template (compare with --emit-response-template)",
                )
            })
        })
        .collect();
    let status = EngineStatus::Ran {
        engine: "transformers",
        export: "your response-template",
        checked,
        failed: warnings.len(),
    };
    (status, warnings)
}

/// `parse_response` on every parsed probe with the template `template_of`
/// gives for the probe's exports: per probe, `None` when transformers'
/// message is ours, else how they differ.
#[allow(clippy::type_complexity)]
fn parse_responses(
    report: &CheckReport,
    python: &Path,
    template_of: &dyn Fn(&[Built]) -> Option<Value>,
) -> Result<Vec<((usize, usize), Option<String>)>, String> {
    let tools = report.tools();
    let mut lines = String::new();
    let mut asked = Vec::new();
    for (s, p, output) in outputs(report) {
        let probe = &report.shapes[s].probes[p];
        let (Some(template), Some(ours)) = (template_of(&probe.built), &probe.parsed) else {
            continue;
        };
        let prefix = probe.prompt.clone();
        let line = json!({"text": output, "template": template, "prefix": prefix, "tools": tools});
        lines.push_str(&format!("{line}\n"));
        asked.push(((s, p), serde_json::to_value(ours).unwrap_or_default()));
    }
    let answers = run_python(python, RESPONSE_TEMPLATE_CHECK, &lines)
        .map_err(|why| format!("transformers' parse_response: {why}"))?;
    if answers.len() != asked.len() {
        return Err(format!(
            "{} answers to {} outputs",
            answers.len(),
            asked.len()
        ));
    }
    Ok(asked
        .into_iter()
        .zip(answers)
        .map(|((at, ours), line)| {
            let answer: Value = serde_json::from_str(&line).unwrap_or_default();
            let verdict = match answer.get("message") {
                Some(theirs) if answer["ok"] == true => differ(&ours, theirs),
                _ => Some(format!(
                    "parse_response fails: {}",
                    answer["error"].as_str().unwrap_or("?")
                )),
            };
            (at, verdict)
        })
        .collect())
}

/// How two messages differ (content and reasoning trimmed, empty = absent;
/// calls by name and arguments as JSON values), or `None`.
fn differ(ours: &Value, theirs: &Value) -> Option<String> {
    let (a, b) = (reduce(ours), reduce(theirs));
    if a == b {
        return None;
    }
    match kept_as_text(&a, &b) {
        true => Some(format!("ours {a}, theirs {b}; {KEPT_AS_TEXT}")),
        false => Some(format!("ours {a}, theirs {b}")),
    }
}

/// Whether the two reduced messages differ only in argument values that
/// transformers kept as a string where our parser read a structure or a
/// literal: everything else (texts, names, keys) is equal.
fn kept_as_text(ours: &Value, theirs: &Value) -> bool {
    let calls = |m: &Value| m["calls"].as_array().cloned().unwrap_or_default();
    let (a, b) = (calls(ours), calls(theirs));
    let texts_equal =
        ours["content"] == theirs["content"] && ours["reasoning"] == theirs["reasoning"];
    let call_kept = |(x, y): (&Value, &Value)| {
        let (Some(x_args), Some(y_args)) = (x[1].as_object(), y[1].as_object()) else {
            return false;
        };
        x[0] == y[0]
            && x_args.len() == y_args.len()
            && x_args.iter().all(|(k, v)| match y_args.get(k) {
                Some(w) if w == v => true,
                Some(Value::String(_)) => !v.is_string(),
                _ => false,
            })
    };
    texts_equal && a.len() == b.len() && a.iter().zip(&b).all(call_kept)
}

fn reduce(message: &Value) -> Value {
    let text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned()
    };
    let calls: Vec<Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let f = c.get("function").unwrap_or(c);
            let args = match f.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => Value::Null,
            };
            json!([f.get("name").cloned().unwrap_or_default(), args])
        })
        .collect();
    json!({"content": text("content"), "reasoning": text("reasoning_content"), "calls": calls})
}

/// The default shape's `response_template`, as transformers loads it.
pub fn our_response_template(report: &CheckReport) -> Option<Value> {
    report
        .shapes
        .iter()
        .find(|s| s.shape.name == "default")
        .and_then(|s| export(&s.exports, "response-template"))
        .and_then(|v| v.get("response_template"))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structure_transformers_kept_as_text_is_named_as_such() {
        let ours = json!({"content": "", "tool_calls": [{"function": {"name": "f",
            "arguments": "{\"text\": \"x\", \"meta\": {\"ok\": true}}"}}]});
        let kept = json!({"tool_calls": [{"function": {"name": "f",
            "arguments": {"text": "x", "meta": "{'ok': True}"}}}]});
        let why = differ(&ours, &kept).unwrap();
        assert!(why.ends_with(KEPT_AS_TEXT), "{why}");
        // Any other difference is only a difference.
        let lost = json!({"content": "x", "tool_calls": []});
        let why = differ(&ours, &lost).unwrap();
        assert!(!why.contains(KEPT_AS_TEXT), "{why}");
        assert_eq!(differ(&ours, &ours), None);
    }
}
