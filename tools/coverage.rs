//! Coverage report: what the analysis detects for every template in a folder.
//!
//! ```text
//! cargo run --release --example coverage -- ../shared/corpus/llamacpp --out docs/coverage.md
//! ```
//!
//! Writes Markdown to stdout: the command that produced it, a summary table
//! (templates by tool class and reasoning mode), one row per template (reasoning
//! mode and markers, content wrapper, tool class, section and call markers, name,
//! arguments and id slots, unsupported comparisons), the templates whose
//! analysis failed, cases and passes per deviation class over the `.jinja`
//! templates given (the generator `tests/common/deviations.rs`, which the parser
//! tests run too), and the per-template counts the vectors test and the
//! grammar-engine tiers wrote.
//!
//! Markers are shown with `markers::visible` escapes (`\n`) inside code spans,
//! with `|` escaped for Markdown tables. The output depends only on the
//! templates and the analysis: no dates, no paths other than those given, so
//! regenerating it after a change shows exactly what changed.

#[path = "../tests/common/deviations.rs"]
mod deviations;
#[path = "../tests/common/roundtrip.rs"]
mod roundtrip;
#[path = "template_dir.rs"]
mod template_dir;
#[path = "../tests/common/turns.rs"]
mod turns;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use chat_autoparser::analysis::{
    visible, ArgumentsSlot, ComparisonStatus, IdSlot, NameSlot, ReasoningMode,
};
use chat_autoparser::Analysis;

const TOOL_CLASSES: [&str; 5] = [
    "json-native",
    "tag-json",
    "tag-tagged",
    "python-call",
    "none",
];
const REASONING_MODES: [&str; 6] = [
    "none",
    "tag",
    "delimiter",
    "forced-open",
    "forced-closed",
    "tools-only",
];

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--out FILE` writes the report after it is made: a shell's `> FILE`
    // would empty docs/coverage.md before the blocks kept from it are read.
    let out = match args.iter().position(|a| a == "--out") {
        Some(i) if i + 1 < args.len() => Some(args.drain(i..i + 2).nth(1).unwrap_or_default()),
        _ => None,
    };
    if args.is_empty()
        || args
            .iter()
            .any(|a| a == "-h" || a == "--help" || a == "--out")
    {
        eprintln!("usage: cargo run --release --example coverage -- DIR_OR_TEMPLATE... [--out docs/coverage.md]");
        return ExitCode::from(2);
    }
    let mut paths = Vec::new();
    for arg in &args {
        match template_dir::templates_in(Path::new(arg)) {
            Ok(found) => paths.extend(found),
            Err(e) => {
                eprintln!("coverage: {arg}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let results: Vec<(String, Result<Analysis, String>)> = paths
        .iter()
        .map(|p| {
            (
                p.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                analyze(p),
            )
        })
        .collect();
    let jinja: Vec<std::path::PathBuf> = paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .cloned()
        .collect();
    let text = report(&args, &results) + &deviation_section(&jinja);
    match out {
        None => print!("{text}"),
        Some(path) => {
            if let Err(e) = std::fs::write(&path, text) {
                eprintln!("coverage: {path}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// Compiles and analyzes one template the way `chat-autoparser analyze` does.
fn analyze(path: &Path) -> Result<Analysis, String> {
    template_dir::load(path)?
        .analyze()
        .map_err(|e| e.to_string())
}

fn report(args: &[String], results: &[(String, Result<Analysis, String>)]) -> String {
    let mut out = String::new();
    let analyzed: Vec<(&str, &Analysis)> = results
        .iter()
        .filter_map(|(n, r)| r.as_ref().ok().map(|a| (n.as_str(), a)))
        .collect();
    let failed: Vec<(&str, &str)> = results
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|e| (n.as_str(), e.as_str())))
        .collect();

    out.push_str("# Analysis coverage\n\n");
    out.push_str("What `chat-autoparser analyze` detects for each template. Generated, with the other generated docs, by\n");
    out.push_str("`bash tools/regen_docs.sh` (from the crate root, with `../shared`); the analysis tables alone by:\n\n");
    out.push_str(&format!(
        "```sh\ncargo run --release --example coverage -- {} --out docs/coverage.md\n```\n\n",
        args.iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    out.push_str("Do not edit by hand; rerun the command. Markers are shown raw inside code spans, with newlines as `\\n`;\n");
    out.push_str("`∅` is an empty marker, `—` means not applicable; `NAME`, `K`, `V` and `ID` stand for the function name,\n");
    out.push_str("an argument's name and value, and the call id.\n\n");

    // Summary.
    out.push_str("## Summary\n\n");
    let with_tools = analyzed.iter().filter(|(_, a)| a.tools.is_some()).count();
    let with_reasoning = analyzed
        .iter()
        .filter(|(_, a)| a.reasoning.mode != ReasoningMode::None)
        .count();
    out.push_str(&format!(
        "{} templates: {} analyzed, {} failed; {with_tools} with tool calls, {with_reasoning} with reasoning.\n\n",
        results.len(),
        analyzed.len(),
        failed.len()
    ));
    let mut grid: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, a) in &analyzed {
        *grid
            .entry((class_name(a), enum_name(&a.reasoning.mode)))
            .or_default() += 1;
    }
    let count = |class: Option<&str>, mode: Option<&str>| -> usize {
        grid.iter()
            .filter(|((c, m), _)| class.is_none_or(|x| x == c) && mode.is_none_or(|x| x == m))
            .map(|(_, n)| n)
            .sum()
    };
    out.push_str("| tool class \\ reasoning mode |");
    for mode in REASONING_MODES {
        out.push_str(&format!(" {mode} |"));
    }
    out.push_str(" total |\n|---|");
    out.push_str(&"---:|".repeat(REASONING_MODES.len() + 1));
    out.push('\n');
    for class in TOOL_CLASSES {
        out.push_str(&format!("| {class} |"));
        for mode in REASONING_MODES {
            out.push_str(&format!(" {} |", count(Some(class), Some(mode))));
        }
        out.push_str(&format!(" **{}** |\n", count(Some(class), None)));
    }
    out.push_str("| **total** |");
    for mode in REASONING_MODES {
        out.push_str(&format!(" **{}** |", count(None, Some(mode))));
    }
    out.push_str(&format!(" **{}** |\n\n", analyzed.len()));

    // Per template.
    out.push_str("## Templates\n\n");
    out.push_str("| Template | Reasoning | Content | Tools | Section / call | Name | Arguments | Id | Unsupported |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for (name, a) in &analyzed {
        let cells = row(name, a);
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
    out.push_str("Unsupported: the comparisons (`docs/analysis.md`) recorded as unsupported: a variant the template refused\n");
    out.push_str("(for example a second call), an input it does not read (`enable_thinking` for R2), or a needle it does\n");
    out.push_str("not write. `chat-autoparser analyze TEMPLATE` gives each one's reason.\n\n");

    if !failed.is_empty() {
        out.push_str("## Failed analyses\n\n| Template | Error |\n|---|---|\n");
        for (name, error) in &failed {
            out.push_str(&format!("| {} | {} |\n", cell_text(name), code(error)));
        }
        out.push('\n');
    }

    out.push_str("## Parser vectors\n\n");
    out.push_str("Per-template pass counts of llama.cpp's parser expectations (`../shared/vectors/llamacpp-test-chat.jsonl`,\n");
    out.push_str("463 cases over 58 templates), measured by `cargo test --test parser vectors::`; every miss is explained\n");
    out.push_str("by cause in `docs/parser.md`.\n\n");
    out.push_str(&kept_block("vectors"));
    out.push_str("\n## Grammar engines, per template\n\n");
    out.push_str("Each export checked inside its real consumer (`docs/grammar.md` says how and lists every miss);\n");
    out.push_str(
        "each table is measured by its tier's corpus run (`bash tools/test.sh` runs them all). A run checks that\n\
         its table (and the vectors' above) says what it measured and fails when not; tests write no file:\n\
         `bash tools/regen_docs.sh` rewrites the tables (`CHAT_AUTOPARSER_REGEN=1` on those runs).\n\n",
    );
    for key in [
        "engine-llamacpp",
        "engine-llguidance",
        "engine-xgrammar",
        "engine-response-template",
    ] {
        out.push_str(&kept_block(key));
        out.push('\n');
    }
    out
}

/// Cases and passes per deviation class over the `.jinja` templates given
/// (the generator `tests/parser/deviations.rs` runs, shared).
fn deviation_section(paths: &[std::path::PathBuf]) -> String {
    let mut out = String::from("\n## Deviations\n\n");
    out.push_str("What real models write that templates never render (issue 16): each class applied to the\n");
    out.push_str("round-trip outputs of every template given where it applies, parsed batch and streamed in 1-, 3-\n");
    out.push_str("and 7-byte chunks (`tests/common/deviations.rs`; misses listed by `cargo test --release --test\n");
    out.push_str("parser deviations:: -- --nocapture`; the rules are in `docs/parser.md`, \"What we accept beyond the\n");
    out.push_str("template\").\n\n");
    out.push_str(&deviations::markdown_table(&deviations::tally(paths)));
    out
}

/// The block `key` as its test last regenerated it (kept across
/// regenerations of this report; `tests/common/coverage.rs`), or empty
/// markers for it to fill.
fn kept_block(key: &str) -> String {
    let (start, end) = (
        format!("<!-- {key}:start -->"),
        format!("<!-- {key}:end -->"),
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/coverage.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    match (doc.find(&start), doc.find(&end)) {
        (Some(a), Some(b)) if a < b => format!("{}{end}\n", &doc[a..b]),
        _ => format!("{start}\n{end}\n"),
    }
}

/// One table row: the cells for one analyzed template.
fn row(name: &str, a: &Analysis) -> Vec<String> {
    let r = &a.reasoning;
    let reasoning = match r.mode {
        ReasoningMode::None => "none".to_owned(),
        mode => {
            let mut cell = format!("{} {} … {}", enum_name(&mode), code(&r.start), code(&r.end));
            if let (Some(on), Some(off)) = (r.thinking_on, r.thinking_off) {
                cell.push_str(&format!(
                    " (thinking on: {}, off: {})",
                    enum_name(&on),
                    enum_name(&off)
                ));
            }
            cell
        }
    };
    let content = if a.content.start.is_empty() && a.content.end.is_empty() {
        "—".to_owned()
    } else {
        format!("{} … {}", code(&a.content.start), code(&a.content.end))
    };
    let Some(t) = &a.tools else {
        return vec![
            cell_text(name),
            reasoning,
            content,
            "none".into(),
            "—".into(),
            "—".into(),
            "—".into(),
            "—".into(),
            unsupported(a),
        ];
    };
    let mut framing = Vec::new();
    if !t.section_start.is_empty() || !t.section_end.is_empty() {
        framing.push(format!(
            "section {} … {}",
            code(&t.section_start),
            code(&t.section_end)
        ));
    }
    framing.push(format!(
        "call {} … {}",
        code(&t.call_start),
        code(&t.call_end)
    ));
    if t.parallel {
        framing.push(format!("sep {}", code(&t.call_separator)));
    } else {
        framing.push("one call only".into());
    }
    let name_slot = match &t.name {
        NameSlot::JsonField { path } => format!("JSON {}", code(&path.join("."))),
        NameSlot::JsonKey => "JSON key".into(),
        NameSlot::Tagged { prefix, suffix } => match &t.name_echo {
            Some(echo) => format!("{} NAME {} NAME {}", code(prefix), code(suffix), code(echo)),
            None => format!("{} NAME {}", code(prefix), code(suffix)),
        },
        other => code(&format!("{other:?}")),
    };
    let arguments = match &t.arguments {
        ArgumentsSlot::Json {
            path, as_string, ..
        } => {
            let at = if path.is_empty() {
                "JSON object".to_owned()
            } else {
                format!("JSON {}", code(&path.join(".")))
            };
            if *as_string {
                format!("{at} (as text)")
            } else {
                at
            }
        }
        ArgumentsSlot::Python { .. } => "Python keywords".into(),
        ArgumentsSlot::Tagged(g) => {
            let mut cell = format!(
                "{} K {} {} V {}",
                code(&g.name_prefix),
                code(&g.name_suffix),
                code(&g.value_prefix),
                code(&g.value_suffix)
            );
            if let Some(after) = &g.named_close {
                cell.push_str(&format!(" K {}", code(after)));
            }
            if !g.separator.is_empty() {
                cell.push_str(&format!(" sep {}", code(&g.separator)));
            }
            if !g.end.is_empty() {
                cell.push_str(&format!(" end {}", code(&g.end)));
            }
            if let Some(typed) = &g.typed_value_prefix {
                cell.push_str(&format!(" (non-string V after {})", code(typed)));
            }
            if !g.raw_strings {
                cell.push_str(" (strings JSON-quoted)");
            }
            if let Some((open, close)) = &g.escaped_value {
                cell.push_str(&format!(
                    " (markup values in {} ... {})",
                    code(open),
                    code(close)
                ));
            }
            cell
        }
        other => code(&format!("{other:?}")),
    };
    let id = match &t.id {
        None => "—".to_owned(),
        Some(IdSlot::JsonField { path, .. }) => format!("JSON {}", code(&path.join("."))),
        Some(IdSlot::Tagged {
            prefix,
            suffix,
            before_name,
        }) => format!(
            "{} ID {} ({} name)",
            code(prefix),
            code(suffix),
            if *before_name { "before" } else { "after" }
        ),
        Some(IdSlot::Counted { separator }) => format!("NAME{}N", code(separator)),
        Some(other) => code(&format!("{other:?}")),
    };
    vec![
        cell_text(name),
        reasoning,
        content,
        enum_name(&t.class),
        framing.join("; "),
        name_slot,
        arguments,
        id,
        unsupported(a),
    ]
}

/// Names of the comparisons that were not supported.
fn unsupported(a: &Analysis) -> String {
    let names: Vec<&str> = a
        .comparisons
        .iter()
        .filter(|c| matches!(c.status, ComparisonStatus::Unsupported(_)))
        .map(|c| c.name.as_str())
        .collect();
    if names.is_empty() {
        "—".into()
    } else {
        names.join(", ")
    }
}

fn class_name(a: &Analysis) -> String {
    a.tools
        .as_ref()
        .map_or_else(|| "none".to_owned(), |t| enum_name(&t.class))
}

/// The serde (kebab-case) name of an enum value, as in the analysis JSON.
fn enum_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A marker as a Markdown code span inside a table cell: control characters
/// escaped (`\n`), pipes escaped, and a fence longer than any backtick run.
fn code(text: &str) -> String {
    if text.is_empty() {
        return "∅".into();
    }
    let shown = visible(text).replace('|', "\\|");
    let longest = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A code span strips one space at each end when both are present (unless
    // it is all spaces); pad when the content starts or ends with a backtick
    // or a space.
    let pad = (shown.starts_with(['`', ' ']) || shown.ends_with(['`', ' ']))
        && !shown.chars().all(|c| c == ' ');
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{shown}{pad}{fence}")
}

/// Plain text for a table cell (template names).
fn cell_text(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;")
}

/// An argument as a shell word, quoted when needed.
fn shell_word(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
