//! What the criterion benches share: the `--summary` entry point and the
//! median timer behind the summaries.
//!
//! Each bench target includes this module with `mod support;`. A summary is
//! a table the targets are read from; criterion's own runs stay as
//! they are.

#![allow(dead_code)] // Each bench uses the part it needs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;

/// `main` of a bench: `--summary` prints only the summary; a criterion run
/// (`--bench`) prints it after criterion's report; criterion's test mode
/// (`cargo test --benches`) runs each bench once and prints nothing more.
pub fn main_with_summary(benches: fn(), summary: fn()) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--summary") {
        summary();
        return;
    }
    let bench_mode = args.iter().any(|a| a == "--bench");
    benches();
    Criterion::default().configure_from_args().final_summary();
    if bench_mode {
        summary();
    }
}

/// Median time of `f` over at least 50 runs or one second, after 10 warm-up runs.
pub fn median<T>(mut f: impl FnMut() -> T) -> Duration {
    for _ in 0..10 {
        black_box(f());
    }
    let mut times = Vec::new();
    let begin = Instant::now();
    while times.len() < 50 || begin.elapsed() < Duration::from_secs(1) {
        let t = Instant::now();
        black_box(f());
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}
