//! Grammar generation time per template (issue 4): `Analysis::grammar` for a
//! 10-tool set, target under 1 ms per template. The xgrammar structural-tag
//! emitter (issue 14) alone, from a built protocol, for 10 and 128 tools:
//! targets 1 ms and 5 ms.
//!
//! Templates: the shipped `templates/*.jinja` with tools, then
//! `../shared/corpus/llamacpp/*.jinja` when present (or the directory named by
//! `CHAT_AUTOPARSER_CORPUS`). Analyses are computed once, outside the timing.
//!
//! ```text
//! cargo bench --bench grammar                 # criterion per shipped template, then the summary
//! cargo bench --bench grammar -- --summary    # the summary only: median / p90 / max per template
//! cargo bench --bench grammar -- lark         # the Lark export (issue 14), 10 and 128 tools
//! ```
//!
//! The `lark` group times the protocol plus the Lark emitter
//! (`Protocol::new` then `grammar::lark`) per shipped template with tools,
//! for 10 and 128 tools; targets under 1 ms and 5 ms.
//!
//! The summary times `grammar()` in auto mode with parallel calls (the largest
//! grammar: every tool, separators) and in required mode; each template's time
//! is the median of repeated runs (at least 5, until 50 ms or 500 runs).
//!
//! The transformers `response_template` export (issue 14) is timed the same
//! way, protocol included (`Protocol::new` then `response_template`), for 10
//! and 128 tools: targets under 1 ms and 5 ms per template.

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chat_autoparser::grammar::{lark, response_template, structural_tag};
use chat_autoparser::protocol::Protocol;
use chat_autoparser::{
    Analysis, ChatTemplate, Options, TemplateConfig, TemplateSource, ToolChoice,
};
use criterion::{criterion_group, BenchmarkId, Criterion};
use serde_json::{json, Value};

const TARGET_MS: f64 = 1.0;

/// Ten tools covering the schema features: strings, enums, integers, numbers,
/// booleans, nested objects, arrays, optional members, `$ref`.
fn tools() -> Vec<Value> {
    tool_set(10)
}

/// `n` tools of the shape above.
fn tool_set(n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(json!({"type": "function", "function": {"name": format!("tool_{i}"), "description": "d", "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "mode": {"type": "string", "enum": ["fast", "slow", "auto"]},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "exact": {"type": "boolean"},
                "filters": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "since": {"type": "string"}}},
                "point": {"$ref": "#/$defs/point"}
            },
            "required": ["query"],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}
        }}}));
    }
    out
}

fn jinja_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    v.sort();
    v
}

/// `(name, analysis)` for every template that renders tool calls.
fn analyses() -> Vec<(String, Analysis)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = std::env::var_os("CHAT_AUTOPARSER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus/llamacpp"));
    let corpus_files = jinja_files(&corpus);
    if corpus_files.is_empty() {
        println!(
            "note: no corpus at {}; shipped templates only",
            corpus.display()
        );
    }
    let mut out = Vec::new();
    for (prefix, files) in [
        ("templates", jinja_files(&root.join("templates"))),
        ("corpus", corpus_files),
    ] {
        for path in files {
            let Ok(source) = TemplateSource::load(&path) else {
                continue;
            };
            let Ok(t) = ChatTemplate::from_source(&source, &TemplateConfig::default()) else {
                continue;
            };
            let Ok(a) = t.analyze() else { continue };
            if a.tools.is_some() {
                out.push((
                    format!(
                        "{prefix}/{}",
                        path.file_stem().unwrap_or_default().to_string_lossy()
                    ),
                    a,
                ));
            }
        }
    }
    out
}

fn config(choice: ToolChoice) -> Options {
    Options::default()
        .with_tools(tools())
        .with_tool_choice(choice)
        .with_parallel_tool_calls(true)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("grammar");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    let cfg = config(ToolChoice::Auto);
    for (name, a) in analyses()
        .iter()
        .filter(|(n, _)| n.starts_with("templates/"))
    {
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| black_box(a.grammar(black_box(&cfg))).ok())
        });
    }
    group.finish();
    let mut group = c.benchmark_group("response_template");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    for n in [10, 128] {
        let options = Options::default().with_tools(tool_set(n));
        for (name, a) in analyses()
            .iter()
            .filter(|(n, _)| n.starts_with("templates/"))
        {
            let id = BenchmarkId::new(format!("{n} tools"), name);
            group.bench_function(id, |b| {
                b.iter(|| black_box(response_template(&Protocol::new(a, black_box(&options)))).ok())
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("structural_tag");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    for (name, a) in analyses()
        .iter()
        .filter(|(n, _)| n.starts_with("templates/"))
    {
        for n in [10, 128] {
            let protocol = Protocol::new(a, &Options::default().with_tools(tool_set(n)));
            group.bench_function(BenchmarkId::new(name.as_str(), n), |b| {
                b.iter(|| black_box(structural_tag(black_box(&protocol))).ok())
            });
        }
    }
    group.finish();
}

/// The protocol plus the Lark export, for 10 and 128 tools.
fn lark_bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lark");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    for n in [10, 128] {
        let options = Options::default().with_tools(tool_set(n));
        for (name, a) in analyses()
            .iter()
            .filter(|(n, _)| n.starts_with("templates/"))
        {
            let id = BenchmarkId::new(format!("{n} tools"), name);
            group.bench_function(id, |b| {
                b.iter(|| black_box(lark(&Protocol::new(a, black_box(&options)))).ok())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench, lark_bench);

/// One export per template for 10 and 128 tools, protocol included
/// (`Protocol::new`, then `export`): median, p90 and max of the
/// per-template medians, against 1 ms and 5 ms.
fn emitter_summary(label: &str, all: &[(String, Analysis)], export: impl Fn(&Protocol)) {
    for (n, target_ms) in [(10, 1.0), (128, 5.0)] {
        let options = Options::default().with_tools(tool_set(n));
        let mut times: Vec<(f64, &str)> = all
            .iter()
            .map(|(name, a)| {
                (
                    median_time(|| export(&Protocol::new(a, black_box(&options)))).as_secs_f64()
                        * 1e3,
                    name.as_str(),
                )
            })
            .collect();
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let pick = |p: f64| {
            times[(((p / 100.0) * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1].0
        };
        let (worst, which) = times.last().copied().unwrap_or((0.0, ""));
        let verdict = if worst < target_ms { "met" } else { "NOT met" };
        println!(
            "  {label}, {n:>3} tools  median {:.3} ms  p90 {:.3} ms  max {worst:.3} ms ({which}); target < {target_ms} ms per template: {verdict}",
            pick(50.0),
            pick(90.0)
        );
    }
}

fn median_time(mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    let mut runs = Vec::new();
    while runs.len() < 5 || (runs.len() < 500 && start.elapsed() < Duration::from_millis(50)) {
        let t = Instant::now();
        f();
        runs.push(t.elapsed());
    }
    runs.sort();
    runs[runs.len() / 2]
}

fn summary() {
    let all = analyses();
    println!("grammar summary: {} templates with tools, 10-tool set, median per template (release build)", all.len());
    for (label, choice) in [
        ("auto (lazy, parallel)", ToolChoice::Auto),
        ("required (eager)", ToolChoice::Required),
    ] {
        let cfg = config(choice);
        let mut times: Vec<(f64, &str, usize)> = all
            .iter()
            .map(|(name, a)| {
                let size = a.grammar(&cfg).map(|g| g.gbnf.len()).unwrap_or(0);
                (
                    median_time(|| {
                        black_box(a.grammar(black_box(&cfg)).ok());
                    })
                    .as_secs_f64()
                        * 1e3,
                    name.as_str(),
                    size,
                )
            })
            .collect();
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let pick = |p: f64| {
            times[(((p / 100.0) * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1].0
        };
        let worst = times
            .last()
            .map(|t| (t.0, t.1, t.2))
            .unwrap_or((0.0, "", 0));
        let verdict = if worst.0 < TARGET_MS {
            "met"
        } else {
            "NOT met"
        };
        println!(
            "  {label:<22} median {:.3} ms  p90 {:.3} ms  max {:.3} ms ({}, {} bytes of GBNF); target < {TARGET_MS} ms per template: {verdict}",
            pick(50.0),
            pick(90.0),
            worst.0,
            worst.1,
            worst.2
        );
    }
    emitter_summary("response_template", &all, |p| {
        black_box(response_template(black_box(p)).ok());
    });
    emitter_summary("structural tag", &all, |p| {
        black_box(structural_tag(black_box(p)).ok());
    });
    emitter_summary("lark", &all, |p| {
        black_box(lark(black_box(p)).ok());
    });
}

fn main() {
    support::main_with_summary(benches, summary);
}
