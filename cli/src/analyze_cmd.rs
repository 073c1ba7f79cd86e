//! `chat-autoparser analyze TEMPLATE [--json]`: what the analysis detected.
//!
//! TEMPLATE may also be a folder of templates (one that is not itself a
//! model folder): each `.jinja`, `.gguf` and model folder in it, sorted by
//! name, gets one summary row (or, with `--json`, one JSON line
//! `{"template", "analysis"}` or `{"template", "error"}`). A template that
//! fails is a row saying why, not the end of the run; a folder with no
//! template is an input error (exit 1).

use std::path::{Path, PathBuf};

use chat_autoparser::analysis::{
    fallback_dialect_name, visible, Analysis, ArgumentsSlot, ComparisonStatus, IdSlot, NameSlot,
};
use chat_autoparser::{Error, ErrorKind};
use serde_json::json;

use crate::{input_failure, load_path, load_template, write_out, Failure, TemplateArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    template: TemplateArg,
    /// Print the Analysis as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> Result<(), Failure> {
    if is_template_folder(&args.template.template) {
        return summary(args);
    }
    let analysis = load_template(&args.template, false)?.analyze()?;
    if args.json {
        let text = serde_json::to_string_pretty(&analysis).unwrap_or_default();
        write_out(&format!("{text}\n"))
    } else {
        write_out(&table(&analysis))
    }
}

/// A folder holding templates, not a model folder.
pub(crate) fn is_template_folder(path: &Path) -> bool {
    path.is_dir() && !is_model_folder(path)
}

fn is_model_folder(path: &Path) -> bool {
    [
        "tokenizer_config.json",
        "chat_template.jinja",
        "chat_template.json",
    ]
    .iter()
    .any(|f| path.join(f).is_file())
}

/// The templates of a folder: `.jinja` and `.gguf` files and model folders,
/// sorted; a folder with none is an input error (a header alone would look
/// like success).
pub(crate) fn templates_in(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Failure::Library(Error::new(ErrorKind::Io, format!("{}: {e}", dir.display())))
    })?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jinja" || x == "gguf")
                || (p.is_dir() && is_model_folder(p))
        })
        .collect();
    if found.is_empty() {
        return Err(input_failure(format!(
            "{}: no template found (a .jinja or .gguf file, or a model folder)",
            dir.display()
        )));
    }
    found.sort();
    Ok(found)
}

/// One row (or JSON line) per template of the folder.
fn summary(args: &Args) -> Result<(), Failure> {
    let dir = &args.template.template;
    let name = args.template.template_name.as_deref();
    // The last column is free text: an end-of-turn marker or an error.
    let mut rows = vec![[
        "template".to_owned(),
        "reasoning".into(),
        "tools".into(),
        "end of turn".into(),
    ]];
    let mut lines = String::new();
    for path in templates_in(dir)? {
        let shown = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let analysis = load_path(&path, name, false).and_then(|t| Ok(t.analyze()?));
        match (&analysis, args.json) {
            (Ok(a), true) => {
                lines.push_str(&format!("{}\n", json!({"template": shown, "analysis": a})))
            }
            (Err(e), true) => lines.push_str(&format!(
                "{}\n",
                json!({"template": shown, "error": failure_text(e)})
            )),
            (Ok(a), false) => rows.push([
                shown,
                format!("{:?}", a.reasoning.mode).to_lowercase(),
                tools_cell(a),
                format!("\"{}\"", visible(&a.turn.end_of_turn)),
            ]),
            (Err(e), false) => rows.push([shown, "error".into(), String::new(), failure_text(e)]),
        }
    }
    if args.json {
        return write_out(&lines);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let text: String = rows
        .iter()
        .map(|r| {
            format!("{:<w0$}  {:<w1$}  {:<w2$}  {}\n", r[0], r[1], r[2], r[3])
                .trim_end()
                .to_owned()
                + "\n"
        })
        .collect();
    write_out(&text)
}

fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Library(e) => e.to_string(),
        Failure::Usage(m) => m.clone(),
        Failure::ReaderGone => "stdout closed".into(),
        Failure::Exit(code) => format!("exit {code}"),
    }
}

/// The tools cell of a summary row: the format class, or how calls are read without one.
fn tools_cell(a: &Analysis) -> String {
    match &a.tools {
        Some(t) => format!("{:?}", t.class),
        None if a.prose.tool_call.is_some() => "instructed".into(),
        None if !a.fallback_tools.is_empty() => "fallback dialects".into(),
        None => "none".into(),
    }
}

/// The names of the analysis's fallback formats: a dialect's, or
/// `instructed` for the one its instructions show (`Analysis::prose`).
fn dialect_names(a: &Analysis) -> Vec<&'static str> {
    a.fallback_tools
        .iter()
        .map(|t| fallback_dialect_name(t).unwrap_or("instructed"))
        .collect()
}

/// The example call the instructed format was read from.
fn prose_rows(a: &Analysis, row: &mut impl FnMut(&str, String)) {
    if let Some(example) = &a.prose.tool_call {
        row(
            "  example",
            format!("{} (the template's instructions)", visible(example)),
        );
    }
}

/// The human-readable table.
pub fn table(a: &Analysis) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
    let q = |s: &str| format!("\"{}\"", visible(s));
    row(
        "reasoning",
        format!("{:?}", a.reasoning.mode).to_lowercase(),
    );
    if !a.reasoning.end.is_empty() {
        row(
            "  start / end",
            format!("{} / {}", q(&a.reasoning.start), q(&a.reasoning.end)),
        );
        row(
            "  default prompt",
            format!("{:?}", a.reasoning.default_prompt),
        );
        if let (Some(on), Some(off)) = (a.reasoning.thinking_on, a.reasoning.thinking_off) {
            row("  thinking on / off", format!("{on:?} / {off:?}"));
        }
        if a.reasoning.bare_end {
            row("  no reasoning", format!("{} alone", q(&a.reasoning.end)));
        }
        if a.prose.reasoning {
            row(
                "  named by",
                "the template's instructions (not rendered)".into(),
            );
        }
    }
    if !a.content.start.is_empty() || !a.content.end.is_empty() {
        row(
            "content wrapper",
            format!(
                "{} ... {}{}",
                q(&a.content.start),
                q(&a.content.end),
                if a.content.calls_only {
                    " (before calls only)"
                } else {
                    ""
                }
            ),
        );
    }
    match &a.tools {
        None if !a.fallback_tools.is_empty() => {
            let names = dialect_names(a);
            let how = match a.prose.tool_call {
                Some(_) => "the format its instructions show".to_owned(),
                None => format!("fallback dialects: {}", names.join(", ")),
            };
            row(
                "tools",
                format!("not rendered by the template; parsing {how}"),
            );
            prose_rows(a, &mut row);
            for (t, name) in a.fallback_tools.iter().zip(names) {
                let mut parts = vec![format!("{:?}", t.class)];
                for (what, start, end) in [
                    ("section", &t.section_start, &t.section_end),
                    ("call", &t.call_start, &t.call_end),
                ] {
                    if !start.is_empty() || !end.is_empty() {
                        parts.push(format!("{what} {} ... {}", q(start), q(end)));
                    }
                }
                parts.push(format!("separator {}", q(&t.call_separator)));
                row(&format!("  {name}"), parts.join(", "));
            }
        }
        None => row("tools", "not rendered".into()),
        Some(t) => {
            row("tools", format!("{:?}", t.class));
            let optional = if t.section_end_optional {
                " (optional: written only after two calls)"
            } else {
                ""
            };
            row(
                "  section",
                format!(
                    "{} ... {}{optional}",
                    q(&t.section_start),
                    q(&t.section_end)
                ),
            );
            row(
                "  call",
                format!("{} ... {}", q(&t.call_start), q(&t.call_end)),
            );
            row(
                "  separator",
                format!("{} (parallel: {})", q(&t.call_separator), t.parallel),
            );
            row(
                "  name",
                match &t.name {
                    NameSlot::JsonField { path } => format!("JSON field {}", path.join(".")),
                    NameSlot::JsonKey => "JSON key".into(),
                    NameSlot::Tagged { prefix, suffix } => format!(
                        "{} NAME {}{}",
                        q(prefix),
                        q(suffix),
                        t.name_echo
                            .as_ref()
                            .map(|e| format!(" NAME {}", q(e)))
                            .unwrap_or_default()
                    ),
                    other => format!("{other:?}"),
                },
            );
            row(
                "  arguments",
                match &t.arguments {
                    ArgumentsSlot::Json {
                        path,
                        as_string,
                        before_name,
                    } => format!(
                        "JSON {}{}{}",
                        if path.is_empty() {
                            "object".to_owned()
                        } else {
                            format!("field {}", path.join("."))
                        },
                        if *as_string { " (as text)" } else { "" },
                        if *before_name {
                            ", before the name"
                        } else {
                            ""
                        }
                    ),
                    ArgumentsSlot::Python {
                        raw_strings,
                        bare_strings,
                    } => format!(
                        "Python keyword arguments{}{}",
                        if *raw_strings {
                            ", strings raw in quotes"
                        } else {
                            ""
                        },
                        if *bare_strings { ", strings bare" } else { "" }
                    ),
                    ArgumentsSlot::Tagged(g) => format!(
                        "{} KEY {} {} VALUE {}{} sep {}{}{}",
                        q(&g.name_prefix),
                        q(&g.name_suffix),
                        q(&g.value_prefix),
                        q(&g.value_suffix),
                        g.named_close
                            .as_ref()
                            .map(|c| format!(" KEY {}", q(c)))
                            .unwrap_or_default(),
                        q(&g.separator),
                        g.typed_value_prefix
                            .as_ref()
                            .map(|p| format!(", non-string prefix {}", q(p)))
                            .unwrap_or_default(),
                        g.escaped_value
                            .as_ref()
                            .map(|(o, c)| format!(", markup values in {} ... {}", q(o), q(c)))
                            .unwrap_or_default()
                    ),
                    other => format!("{other:?}"),
                },
            );
            if a.prose.tool_call.is_some() {
                row(
                    "  also read",
                    "instructed (the template's instructions show other markers)".into(),
                );
                prose_rows(a, &mut row);
            } else if !a.fallback_tools.is_empty() {
                row(
                    "  also read",
                    format!(
                        "{} (the template's prompt never shows `tools`: a server's prompt asks for it)",
                        dialect_names(a).join(", ")
                    ),
                );
            }
            if let Some(id) = &t.id {
                row(
                    "  id",
                    match id {
                        IdSlot::JsonField { path, .. } => format!("JSON field {}", path.join(".")),
                        IdSlot::Tagged {
                            prefix,
                            suffix,
                            before_name,
                        } => format!(
                            "{} ID {} ({} the name)",
                            q(prefix),
                            q(suffix),
                            if *before_name { "before" } else { "after" }
                        ),
                        IdSlot::Counted { separator } => format!(
                            "NAME {} N (the name's prefix, the name and a call counter)",
                            q(separator)
                        ),
                        other => format!("{other:?}"),
                    },
                );
            }
            for constant in &t.json_constants {
                row(
                    "  fixed member",
                    format!(
                        "JSON field {} = {}",
                        constant.path.join("."),
                        constant.value
                    ),
                );
            }
        }
    }
    row("end of turn", q(&a.turn.end_of_turn));
    for h in &a.turn.headers {
        row(
            "section header",
            format!("{} LABEL {}", q(&h.open), q(&h.close)),
        );
    }
    if !a.turn.message_start.is_empty() {
        row(
            "message break",
            format!(
                "{} then {}",
                q(&a.turn.message_end),
                q(&a.turn.message_start)
            ),
        );
    }
    row("generation prompt", q(&a.turn.generation_prompt.default));
    if let Some(on) = &a.turn.generation_prompt.thinking_on {
        row("  thinking on", q(on));
    }
    if let Some(off) = &a.turn.generation_prompt.thinking_off {
        row("  thinking off", q(off));
    }
    row("preserved tokens", a.preserved_tokens.join(" "));
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out: String = rows
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect();
    out.push_str("\ncomparisons:\n");
    for c in &a.comparisons {
        let (status, detail) = match &c.status {
            ComparisonStatus::Found(d) => ("found", d.clone()),
            ComparisonStatus::NoDifference => ("same", String::new()),
            ComparisonStatus::Unsupported(r) => ("unsupported", r.clone()),
            other => ("other", format!("{other:?}")),
        };
        out.push_str(&format!(
            "  {:<4} {:<12} {:<42} {}\n",
            c.name, status, c.what, detail
        ));
    }
    out
}
