//! `chat-autoparser lint TEMPLATE [--json]`: the template's capabilities and
//! the rendering defects the linter finds, each with the probe conversation
//! that shows it. Exit 0 whether or not there are findings (they are the
//! output, not an error); 1 when the template cannot be loaded.

use chat_autoparser::lint::LintReport;

use crate::{load_template, template_and_json, write_out, Failure};

pub fn run(args: &[String]) -> Result<(), Failure> {
    let (path, json) = template_and_json("lint", args)?;
    let report = load_template(&path)?.lint();
    if json {
        write_out(&format!("{}\n", serde_json::to_string_pretty(&report).expect("lint report serializes")))
    } else {
        write_out(&text(&report))
    }
}

/// The human-readable report.
pub fn text(report: &LintReport) -> String {
    let caps = serde_json::to_value(&report.capabilities).unwrap_or_default();
    let mut out = String::from("capabilities:\n");
    for (key, value) in caps.as_object().into_iter().flatten() {
        out.push_str(&format!("  {key:<20} {value}\n"));
    }
    if report.findings.is_empty() {
        out.push_str("findings: none\n");
    } else {
        out.push_str(&format!("findings: {}\n", report.findings.len()));
        for f in &report.findings {
            out.push_str(&format!("  {:<28} [{}] {}\n", f.kind.name(), f.conversation, f.detail));
        }
    }
    out
}
