//! Incremental rendering cost (issue 5): the cached render of one new message
//! against a full render of a 20-message conversation.
//!
//! Templates: the shipped `templates/qwen3_5-fixed.jinja`, and from
//! `../shared/corpus/llamacpp` (skipped with a message when absent) the
//! Qwen3.5, Llama 3.1 and gpt-oss templates. Three measurements each:
//! - `full/<name>`: `render_chat` of the 20-message conversation;
//! - `uncached-delta/<name>`: `render_delta` (renders messages 0..19 and 0..20);
//! - `cached-delta/<name>`: `IncrementalRenderer::push` of message 20 onto a
//!   renderer holding messages 0..19 (one render plus the prefix comparison).
//!
//! ```text
//! cargo bench --bench incremental                 # criterion, then the summary
//! cargo bench --bench incremental -- --summary    # the summary only (a few seconds)
//! ```
//!
//! The summary is a median of repeated runs per template (at least 20, until
//! 200 ms), printed in microseconds with the ratio cached / full.

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chat_autoparser::template::IncrementalRenderer;
use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
use criterion::{criterion_group, BenchmarkId, Criterion};
use serde_json::{json, Value as Json};

const CORPUS: [&str; 3] = [
    "Qwen3.5-4B",
    "meta-llama-Llama-3.1-8B-Instruct",
    "openai-gpt-oss-120b",
];

fn templates() -> Vec<(String, ChatTemplate)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![(
        "templates/qwen3_5-fixed".to_owned(),
        root.join("templates/qwen3_5-fixed.jinja"),
    )];
    let corpus = root.join("../shared/corpus/llamacpp");
    if corpus.is_dir() {
        paths.extend(
            CORPUS
                .iter()
                .map(|n| (format!("corpus/{n}"), corpus.join(format!("{n}.jinja")))),
        );
    } else {
        println!(
            "note: no corpus at {}, benchmarking the shipped template only",
            corpus.display()
        );
    }
    paths
        .into_iter()
        .filter_map(|(name, path)| Some((name, load(&path)?)))
        .collect()
}

fn load(path: &Path) -> Option<ChatTemplate> {
    let source = TemplateSource::load(path).ok()?;
    ChatTemplate::from_source(&source, &TemplateConfig::default()).ok()
}

/// 20 messages: system, then alternating user / assistant, ending on a user turn.
fn conversation() -> Vec<Json> {
    let mut messages = vec![json!({"role": "system", "content": "You are a helpful assistant."})];
    for i in 0..19 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": format!("Message {i}: some ordinary text of a chat turn.")}));
    }
    messages
}

fn request(messages: &[Json]) -> RenderRequest {
    RenderRequest::default().with_messages(messages.to_vec())
}

/// A renderer holding messages 0..19, ready for the 20th.
fn primed<'t>(template: &'t ChatTemplate, messages: &[Json]) -> IncrementalRenderer<'t> {
    IncrementalRenderer::new(template, request(&messages[..messages.len() - 1]))
}

fn bench(c: &mut Criterion) {
    let messages = conversation();
    let last = messages[messages.len() - 1].clone();
    let mut group = c.benchmark_group("incremental");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(800));
    for (name, t) in &templates() {
        group.bench_function(BenchmarkId::new("full", name), |b| {
            b.iter(|| black_box(t.render_chat(&request(&messages)).ok()))
        });
        let before = request(&messages[..messages.len() - 1]);
        group.bench_function(BenchmarkId::new("uncached-delta", name), |b| {
            b.iter(|| black_box(t.render_delta(&before, last.clone()).ok()))
        });
        group.bench_function(BenchmarkId::new("cached-delta", name), |b| {
            b.iter_batched(
                || primed(t, &messages),
                |mut r| black_box(r.push(last.clone()).ok()),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);

fn median(mut f: impl FnMut() -> Duration) -> Duration {
    let start = Instant::now();
    let mut runs = Vec::new();
    while runs.len() < 20 || (runs.len() < 2000 && start.elapsed() < Duration::from_millis(200)) {
        runs.push(f());
    }
    runs.sort();
    runs[runs.len() / 2]
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn summary() {
    let messages = conversation();
    let last = messages[messages.len() - 1].clone();
    println!(
        "incremental summary: median µs per operation, 20-message conversation (release build)"
    );
    println!(
        "  {:<42} {:>10} {:>15} {:>13} {:>14}",
        "template", "full", "uncached delta", "cached delta", "cached / full"
    );
    for (name, t) in &templates() {
        let full = median(|| timed(|| _ = black_box(t.render_chat(&request(&messages)))));
        let before = request(&messages[..messages.len() - 1]);
        let uncached = median(|| timed(|| _ = black_box(t.render_delta(&before, last.clone()))));
        let cached = median(|| {
            let mut r = primed(t, &messages);
            timed(|| _ = black_box(r.push(last.clone())))
        });
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "  {name:<42} {:>10.1} {:>15.1} {:>13.1} {:>14.2}",
            us(full),
            us(uncached),
            us(cached),
            us(cached) / us(full)
        );
    }
}

fn main() {
    support::main_with_summary(benches, summary);
}
