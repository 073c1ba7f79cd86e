//! `chat-autoparser analyze TEMPLATE [--json]`: what the analysis detected.

use chat_autoparser::analysis::{
    fallback_dialect_name, markers::visible, Analysis, ArgumentsSlot, ComparisonStatus, IdSlot, NameSlot,
};

use crate::{load_template, template_and_json, write_out, Failure};

pub fn run(args: &[String]) -> Result<(), Failure> {
    let (path, json) = template_and_json("analyze", args)?;
    let analysis = load_template(&path)?.analyze()?;
    if json {
        let text = serde_json::to_string_pretty(&analysis).expect("analysis serializes");
        write_out(&format!("{text}\n"))
    } else {
        write_out(&table(&analysis))
    }
}

/// The human-readable table.
pub fn table(a: &Analysis) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
    let q = |s: &str| format!("\"{}\"", visible(s));
    row("reasoning", format!("{:?}", a.reasoning.mode).to_lowercase());
    if !a.reasoning.end.is_empty() {
        row("  start / end", format!("{} / {}", q(&a.reasoning.start), q(&a.reasoning.end)));
        row("  default prompt", format!("{:?}", a.reasoning.default_prompt));
        if let (Some(on), Some(off)) = (a.reasoning.thinking_on, a.reasoning.thinking_off) {
            row("  thinking on / off", format!("{on:?} / {off:?}"));
        }
        if a.reasoning.bare_end {
            row("  no reasoning", format!("{} alone", q(&a.reasoning.end)));
        }
    }
    if !a.content.start.is_empty() || !a.content.end.is_empty() {
        row("content wrapper", format!("{} ... {}", q(&a.content.start), q(&a.content.end)));
    }
    match &a.tools {
        None if !a.fallback_tools.is_empty() => {
            let names: Vec<&str> = a.fallback_tools.iter().map(|t| fallback_dialect_name(t).unwrap_or("unnamed")).collect();
            row("tools", format!("not rendered by the template; parsing fallback dialects: {}", names.join(", ")));
            for (t, name) in a.fallback_tools.iter().zip(names) {
                let mut parts = vec![format!("{:?}", t.class)];
                for (what, start, end) in [("section", &t.section_start, &t.section_end), ("call", &t.call_start, &t.call_end)] {
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
            let optional = if t.section_end_optional { " (optional: written only after two calls)" } else { "" };
            row("  section", format!("{} ... {}{optional}", q(&t.section_start), q(&t.section_end)));
            row("  call", format!("{} ... {}", q(&t.call_start), q(&t.call_end)));
            row("  separator", format!("{} (parallel: {})", q(&t.call_separator), t.parallel));
            row("  name", match &t.name {
                NameSlot::JsonField { path } => format!("JSON field {}", path.join(".")),
                NameSlot::JsonKey => "JSON key".into(),
                NameSlot::Tagged { prefix, suffix } => format!(
                    "{} NAME {}{}", q(prefix), q(suffix),
                    t.name_echo.as_ref().map(|e| format!(" NAME {}", q(e))).unwrap_or_default()
                ),
            });
            row("  arguments", match &t.arguments {
                ArgumentsSlot::Json { path, as_string } => format!(
                    "JSON {}{}",
                    if path.is_empty() { "object".to_owned() } else { format!("field {}", path.join(".")) },
                    if *as_string { " (as text)" } else { "" }
                ),
                ArgumentsSlot::Python => "Python keyword arguments".into(),
                ArgumentsSlot::Tagged(g) => format!(
                    "{} KEY {} {} VALUE {}{} sep {}{}{}",
                    q(&g.name_prefix), q(&g.name_suffix), q(&g.value_prefix), q(&g.value_suffix),
                    g.named_close.as_ref().map(|c| format!(" KEY {}", q(c))).unwrap_or_default(),
                    q(&g.separator),
                    g.typed_value_prefix.as_ref().map(|p| format!(", non-string prefix {}", q(p))).unwrap_or_default(),
                    g.escaped_value.as_ref().map(|(o, c)| format!(", markup values in {} ... {}", q(o), q(c))).unwrap_or_default()
                ),
            });
            if let Some(id) = &t.id {
                row("  id", match id {
                    IdSlot::JsonField { path, .. } => format!("JSON field {}", path.join(".")),
                    IdSlot::Tagged { prefix, suffix, before_name } => format!(
                        "{} ID {} ({} the name)", q(prefix), q(suffix), if *before_name { "before" } else { "after" }
                    ),
                    IdSlot::Counted { separator } => format!("NAME {} N (the name's prefix, the name and a call counter)", q(separator)),
                });
            }
        }
    }
    row("end of turn", q(&a.turn.end_of_turn));
    for h in &a.turn.headers {
        row("section header", format!("{} LABEL {}", q(&h.open), q(&h.close)));
    }
    if !a.turn.message_start.is_empty() {
        row("message break", format!("{} then {}", q(&a.turn.message_end), q(&a.turn.message_start)));
    }
    row("generation prompt", q(&a.turn.generation_prompt.default));
    if let Some(on) = &a.turn.generation_prompt.thinking_on {
        row("  thinking on", q(on));
    }
    if let Some(off) = &a.turn.generation_prompt.thinking_off {
        row("  thinking off", q(off));
    }
    row("preserved tokens", a.preserved_tokens.join(" "));
    let width = rows.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut out: String = rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect();
    out.push_str("\ncomparisons:\n");
    for c in &a.comparisons {
        let (status, detail) = match &c.status {
            ComparisonStatus::Found(d) => ("found", d.clone()),
            ComparisonStatus::NoDifference => ("same", String::new()),
            ComparisonStatus::Unsupported(r) => ("unsupported", r.clone()),
        };
        out.push_str(&format!("  {:<4} {:<12} {:<42} {}\n", c.name, status, c.what, detail));
    }
    out
}
