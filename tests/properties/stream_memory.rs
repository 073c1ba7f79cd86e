//! Peak memory of parsing a large output (issue 17 item 5, issue 28 item
//! 8), measured as a child process's peak RSS (`VmHWM`): this test binary
//! runs itself with `STREAM_MEMORY_CHILD` set to `SHAPE MODE` and parses an
//! output of `STREAM_MEMORY_MB` megabytes (8 unless set), `batch` (the
//! output built first) or `stream1` (pushed one byte at a time from a
//! generator, with one reused delta buffer, as a server does). It prints
//! its peak and its baseline (the peak before the parse: the output already
//! built for `batch`, nothing for `stream1`).
//!
//! The shapes: `content`, content with a tool call at its end (the content
//! grows and the engine's window of the output must not), and one call
//! whose single argument holds the whole output, written as each kind of
//! reader takes it: `json` (Hermes JSON arguments, `templates/hermes-think`),
//! `tagged` (an XML parameter value, `templates/qwen-coder-xml`), `python`
//! (a Python keyword argument, `templates/python-calls`). What the parse
//! adds over the baseline is asserted against the text's length (the
//! content's or the argument's), and a stream must send the argument as it
//! arrives, not at `finish`; `docs/reliability.md` has the 50 MB figures:
//!
//! ```text
//! STREAM_MEMORY_MB=50 cargo test --release --test properties stream_memory:: -- --nocapture
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use chat_autoparser::parser::LONGEST_CALL;
use chat_autoparser::OutputParser;

/// The shipped template each shape is written in.
fn template(shape: &str) -> &'static str {
    match shape {
        "tagged" => "qwen-coder-xml",
        "python" => "python-calls",
        _ => "hermes-think",
    }
}

fn parser(shape: &str) -> OutputParser {
    crate::common::weather_parser(template(shape))
}

const LINE: &str = "The weather in Paris is sunny, with a light breeze from the west.\n";
/// A line of an argument value: no newline, which a JSON string cannot hold raw.
const VALUE_LINE: &str = "The weather in Paris is sunny, with a light breeze from the west. ";
const CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

/// The output of `shape`: what comes before the repeated line, the line,
/// and what comes after.
fn output_parts(shape: &str) -> (&'static str, &'static str, &'static str) {
    match shape {
        "json" => (
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
            VALUE_LINE,
            "\"}}\n</tool_call>",
        ),
        "tagged" => (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\n",
            VALUE_LINE,
            "\n</parameter>\n</function>\n</tool_call>",
        ),
        "python" => (
            "<|tool_call_start|>[get_weather(city=\"",
            VALUE_LINE,
            "\")]<|tool_call_end|>",
        ),
        _ => ("", LINE, CALL),
    }
}

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

/// The child's side: parse, print `baseline peak text_len calls
/// streamed` (text the deltas carried before the output's tail was
/// pushed).
fn child(spec: &str) {
    let (shape, mode) = spec.split_once(' ').unwrap_or(("content", spec));
    let size = megabytes() << 20;
    let p = parser(shape);
    let (head, line, tail) = output_parts(shape);
    let lines = size / line.len();
    let mut streamed = 0;
    let (baseline, message) = match mode {
        "batch" => {
            let mut output = String::with_capacity(head.len() + lines * line.len() + tail.len());
            output.push_str(head);
            (0..lines).for_each(|_| output.push_str(line));
            output.push_str(tail);
            let baseline = peak_rss();
            HEAP0.store(LIVE.load(Relaxed), Relaxed);
            PEAK.store(LIVE.load(Relaxed), Relaxed);
            (baseline, p.parse(&output))
        }
        _ => {
            let baseline = peak_rss();
            HEAP0.store(LIVE.load(Relaxed), Relaxed);
            PEAK.store(LIVE.load(Relaxed), Relaxed);
            let mut stream = p.stream();
            let mut deltas = Vec::new();
            let mut push = |text: &str| {
                let mut sent = 0;
                for i in 0..text.len() {
                    stream.push_into(&text[i..i + 1], &mut deltas);
                    sent += deltas.iter().map(delta_text_len).sum::<usize>();
                }
                sent
            };
            // What the deltas carried before the text's end was written.
            streamed += push(head);
            streamed += (0..lines).map(|_| push(line)).sum::<usize>();
            push(tail);
            stream.finish_into(&mut deltas);
            (baseline, stream.into_message())
        }
    };
    let output = head.len() + lines * line.len() + tail.len();
    let arguments: usize = message
        .tool_calls
        .iter()
        .map(|c| c.function.arguments.len())
        .sum();
    eprintln!(
        "HEAP added peak {}",
        PEAK.load(Relaxed) - HEAP0.load(Relaxed)
    );
    eprintln!(
        "MEMORY {baseline} {} {output} {} {} {arguments} {streamed}",
        peak_rss(),
        message.tool_calls.len(),
        message.content_text().len(),
    );
}

/// The text a delta carries (content, reasoning, arguments).
fn delta_text_len(d: &chat_autoparser::message::Delta) -> usize {
    let args = d.tool_calls.iter();
    let args: usize = args
        .filter_map(|c| c.function.arguments.as_ref())
        .map(String::len)
        .sum();
    d.content.as_ref().map_or(0, String::len)
        + d.reasoning_content.as_ref().map_or(0, String::len)
        + args
}

/// The libtest name of [`child_entry`]: its module path without the crate.
fn child_test_name() -> String {
    let path = module_path!();
    let module = path.split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::child_entry")
}

/// What a child measured.
struct Measured {
    baseline: usize,
    peak: usize,
    /// The output's length.
    output: usize,
    calls: usize,
    content: usize,
    arguments: usize,
    /// Text the stream's deltas carried before the output's tail (the
    /// call's or the content's end) was pushed.
    streamed: usize,
}

/// Runs the child for `spec` (`SHAPE MODE`) on an output of `mb` megabytes.
fn measure(spec: &str, mb: usize) -> Measured {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            &child_test_name(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STREAM_MEMORY_CHILD", spec)
        .env("STREAM_MEMORY_MB", mb.to_string())
        .output()
        .unwrap();
    // The line may come on either stream, as the harness captures it or not.
    let stdout = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("MEMORY "))
        .unwrap_or_else(|| panic!("child {spec}: {stdout}"));
    let v: Vec<usize> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    Measured {
        baseline: v[0],
        peak: v[1],
        output: v[2],
        calls: v[3],
        content: v[4],
        arguments: v[5],
        streamed: v[6],
    }
}

#[test]
fn child_entry() {
    if let Ok(spec) = std::env::var("STREAM_MEMORY_CHILD") {
        child(&spec);
    }
}

/// Measures `shape` on `size` megabytes, batch and streamed; asserts what
/// each adds over its baseline against `bound` times the output, and, with
/// `streams`, that a stream sends the text as it comes.
fn check(shape: &str, size: usize, bound: f64, streams: bool) {
    let mb = |b: usize| b as f64 / (1 << 20) as f64;
    for mode in ["batch", "stream1"] {
        let m = measure(&format!("{shape} {mode}"), size);
        let added = m.peak.saturating_sub(m.baseline);
        let ratio = added as f64 / m.output as f64;
        println!(
            "{shape} {mode}: output {:.1} MB, baseline {:.1} MB, peak {:.1} MB, added {:.1} MB = {ratio:.2}x the output",
            mb(m.output),
            mb(m.baseline),
            mb(m.peak),
            mb(added)
        );
        assert!(
            ratio < bound,
            "{shape} {mode}: the parse added {ratio:.2}x the output"
        );
        // Content with a call after it; a call longer than `LONGEST_CALL`
        // is withdrawn, its text content; a shorter one is kept.
        let oversized = shape != "content" && m.output > LONGEST_CALL;
        let (calls, text) = match oversized {
            true => (0, m.content),
            false if shape == "content" => (1, m.content),
            false => (1, m.arguments),
        };
        assert_eq!(m.calls, calls, "{shape} {mode}");
        assert!(
            text as f64 > 0.99 * m.output as f64,
            "{shape} {mode}: {text} of {} bytes in the message",
            m.output
        );
        if mode == "stream1" && streams {
            // The text streams as it arrives: a client has (nearly) all of
            // it before the output's tail, not at the end.
            println!(
                "{shape} {mode}: {:.1} MB sent before the tail",
                mb(m.streamed)
            );
            assert!(
                m.streamed as f64 >= 0.99 * text as f64,
                "{shape}: {} of {text} bytes streamed before the tail",
                m.streamed,
            );
        }
    }
}

#[test]
fn parsing_keeps_memory_in_proportion_to_the_output() {
    if std::env::var("STREAM_MEMORY_CHILD").is_ok() {
        return;
    }
    // Measured (8 MB, release): batch 1.02x, 1-byte streaming 1.04x:
    // the message's content, and a window of the output in the engine
    // (`peg::Stream::release`). Both were 2x (and 3x for the stream,
    // when this allocator copied on `realloc`) while the engine kept the
    // whole output. Bounds with some headroom.
    check("content", megabytes(), 1.3, true);
}

/// One call holding the whole output (issue 28 item 8). Up to
/// `LONGEST_CALL` a call is kept whole, and what it holds (its arguments
/// in the message, its text in the engine in case it is withdrawn, at its
/// close a Python value converted) is bounded by a few times the limit;
/// past it the call is withdrawn and its text streams as content. So the
/// bound holds from a few times the limit on (32 MB at least here):
/// measured 1.25-1.49x at 32 MB, 1.08-1.16x at 100 MB, where an open call
/// held 2.0x (JSON), 3.0x (tagged) and 4.0x (Python) of its argument
/// before, and a Python argument came only at its close.
#[test]
fn an_open_call_keeps_memory_in_proportion_to_the_output() {
    if std::env::var("STREAM_MEMORY_CHILD").is_ok() {
        return;
    }
    for shape in ["json", "tagged", "python"] {
        check(shape, megabytes().max(32), 2.0, true);
    }
}

/// A call under the limit is kept; what it adds is bounded by a few times
/// its size, which the limit bounds: measured (3 MB) 1.9x for JSON and
/// tagged arguments (the message's arguments and the engine's copy of the
/// call), 4.0x batch and 5.0x streamed for a Python value, which is
/// converted at its close (the engine's copy, the literal read, its JSON,
/// the message's arguments, and the delta carrying them) and comes then.
#[test]
fn a_call_under_the_limit_is_kept() {
    if std::env::var("STREAM_MEMORY_CHILD").is_ok() {
        return;
    }
    for (shape, bound) in [("json", 2.5), ("tagged", 2.5), ("python", 5.5)] {
        check(shape, 3, bound, shape != "python");
    }
}
