//! Peak memory of parsing a large output (issue 17 item 5), measured as a
//! child process's peak RSS (`VmHWM`): this test binary runs itself with
//! `STREAM_MEMORY_CHILD` set to `batch` or `stream1`, parses an output of
//! `STREAM_MEMORY_MB` megabytes (8 unless set) with the shipped
//! `hermes-think` parser, and prints its peak and its baseline (the peak
//! before the parse, the output already built for `batch`, nothing for
//! `stream1`, which pushes it one byte at a time from a generator).
//!
//! The output is content with a tool call at its end, so the content grows
//! and the engine's window of the output must not. What the parse adds
//! over the baseline is asserted against bounds measured (so regressions
//! fail); `docs/reliability.md` has the 50 MB figures:
//!
//! ```text
//! STREAM_MEMORY_MB=50 cargo test --release --test properties stream_memory:: -- --nocapture
//! ```

use chat_autoparser::Options;
use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use chat_autoparser::{ChatTemplate, OutputParser, ParserConfig, TemplateConfig};
use serde_json::json;

fn parser() -> OutputParser {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
    ];
    analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools)))
        .unwrap()
}

const LINE: &str = "The weather in Paris is sunny, with a light breeze from the west.\n";
const CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

/// Counts live heap bytes and their peak (what RSS cannot tell apart:
/// capacity reserved but never touched).
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    // The system's own `realloc`, as without this allocator: a large buffer
    // grows in place (remapped), where the default (allocate, copy, free)
    // would touch old and new at once and put that in the peak RSS.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Peak resident memory of this process so far, in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

static HEAP0: AtomicUsize = AtomicUsize::new(0);

fn megabytes() -> usize {
    std::env::var("STREAM_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// The child's side: parse, print `baseline peak content_len calls`.
fn child(mode: &str) {
    let size = megabytes() << 20;
    let p = parser();
    let lines = size / LINE.len();
    let (baseline, message) = match mode {
        "batch" => {
            let mut output = String::with_capacity(lines * LINE.len() + CALL.len());
            (0..lines).for_each(|_| output.push_str(LINE));
            output.push_str(CALL);
            let baseline = peak_rss();
            HEAP0.store(LIVE.load(Relaxed), Relaxed);
            PEAK.store(0, Relaxed);
            PEAK.store(LIVE.load(Relaxed), Relaxed);
            (baseline, p.parse(&output))
        }
        _ => {
            let baseline = peak_rss();
            HEAP0.store(LIVE.load(Relaxed), Relaxed);
            PEAK.store(LIVE.load(Relaxed), Relaxed);
            let mut stream = p.stream();
            let mut deltas = Vec::new();
            for _ in 0..lines {
                for i in 0..LINE.len() {
                    stream.push_into(&LINE[i..i + 1], &mut deltas);
                }
            }
            stream.push_into(CALL, &mut deltas);
            stream.finish_into(&mut deltas);
            (baseline, stream.into_message())
        }
    };
    eprintln!(
        "HEAP added peak {}",
        PEAK.load(Relaxed) - HEAP0.load(Relaxed)
    );
    eprintln!(
        "MEMORY {baseline} {} {} {}",
        peak_rss(),
        message.content_text().len(),
        message.tool_calls.len()
    );
}

/// The libtest name of [`child_entry`]: its module path without the crate.
fn child_test_name() -> String {
    let path = module_path!();
    let module = path.split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::child_entry")
}

/// Runs the child for `mode`; returns (baseline, peak, content length).
fn measure(mode: &str) -> (usize, usize, usize) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            &child_test_name(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STREAM_MEMORY_CHILD", mode)
        .output()
        .unwrap();
    // The line may come on either stream, as the harness captures it or not.
    let stdout = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("MEMORY "))
        .unwrap_or_else(|| panic!("child {mode}: {stdout}"));
    let v: Vec<usize> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    assert_eq!(v[3], 1, "{mode}: the call is found");
    (v[0], v[1], v[2])
}

#[test]
fn child_entry() {
    if let Ok(mode) = std::env::var("STREAM_MEMORY_CHILD") {
        child(&mode);
    }
}

#[test]
fn parsing_keeps_memory_in_proportion_to_the_output() {
    if std::env::var("STREAM_MEMORY_CHILD").is_ok() {
        return;
    }
    let mb = |b: usize| b as f64 / (1 << 20) as f64;
    for mode in ["batch", "stream1"] {
        let (baseline, peak, content) = measure(mode);
        let added = peak.saturating_sub(baseline);
        let ratio = added as f64 / content as f64;
        println!(
            "{mode}: output {:.1} MB, baseline {:.1} MB, peak {:.1} MB, added {:.1} MB = {ratio:.2}x the output",
            mb(content),
            mb(baseline),
            mb(peak),
            mb(added)
        );
        // Measured (8 MB, release): batch 1.02x, 1-byte streaming 1.04x:
        // the message's content, and a window of the output in the engine
        // (`peg::Stream::release`). Both were 2x (and 3x for the stream,
        // when this allocator copied on `realloc`) while the engine kept the
        // whole output. Bounds with some headroom.
        let bound = 1.3;
        assert!(
            ratio < bound,
            "{mode}: the parse added {ratio:.2}x the output"
        );
    }
}
