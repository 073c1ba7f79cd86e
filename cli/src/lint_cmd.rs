//! `chat-autoparser lint TEMPLATE [--json]`: the template's capabilities and
//! the rendering defects the linter finds, each with the probe conversation
//! that shows it. Exit 0 whether or not there are findings (they are the
//! output, not an error), unless `--deny`: then findings exit 1 after the
//! report, so a CI step can gate a template; 1 when the template cannot be
//! loaded.

use chat_autoparser::lint::LintReport;

use crate::{input_failure, load_template, write_out, Failure, TemplateArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Exit 1 when there are findings (for CI)
    #[arg(long)]
    deny: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    let report = load_template(&args.template, false)?.lint();
    if args.json {
        write_out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        ))?;
    } else {
        write_out(&text(&report))?;
    }
    match report.findings.len() {
        0 => Ok(()),
        n if args.deny => Err(input_failure(format!(
            "lint: {n} finding{} (--deny)",
            if n == 1 { "" } else { "s" }
        ))),
        _ => Ok(()),
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
            out.push_str(&format!(
                "  {:<28} [{}] {}\n",
                f.kind.name(),
                f.conversation,
                f.detail
            ));
        }
    }
    out
}
