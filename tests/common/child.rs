//! One case of a test run in a child process (this test binary started
//! again), with what it cost measured: a case that aborts (stack overflow,
//! allocation failure) or runs away must fail its assertion, not take the
//! test run or the machine with it.
//!
//! The parent ([`in_child`]) starts the binary with `--exact NAME` and one
//! environment variable naming the case; the child test reads that variable
//! ([`case`]), runs the case on the test harness's thread (2 MiB of stack, as
//! a server's worker thread has), and prints one result line ([`report`]):
//! the outcome, wall and CPU time of the case alone (`/proc/self/stat`) and
//! the peak resident memory (`VmHWM` in `/proc/self/status`, reset before
//! the case where the kernel allows). The parent kills a child that runs
//! past its wall bound or holds more memory than its bound, and says so.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// What a child's case ran into, with its measured costs.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: String,
    pub wall_ms: u64,
    pub cpu_ms: u64,
    pub peak_kb: u64,
}

/// When the parent gives up on a child: wall time and resident memory.
#[derive(Debug, Clone, Copy)]
pub struct Kill {
    pub wall_ms: u64,
    pub rss_kb: u64,
}

const RESULT: &str = "CHILD-RESULT ";

/// The libtest name of test `test` in module `module_path` (`module_path!()`
/// of the test's module): its path without the crate.
pub fn test_name(module_path: &str, test: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::{test}")
}

/// The case this process was started for (the value of `var`), or `None`
/// in a plain test run.
pub fn case(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// Runs `f` as the child's case and prints its result line.
pub fn report(f: impl FnOnce() -> String) {
    // Writing 5 resets the peak resident size to the current one (Linux 4.0+).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (cpu0, start) = (cpu_ms(), Instant::now());
    let result = f();
    let (wall, cpu) = (start.elapsed().as_millis() as u64, cpu_ms() - cpu0);
    let line = json!({"result": result, "wall_ms": wall, "cpu_ms": cpu, "peak_kb": peak_kb()});
    println!("{RESULT}{line}");
}

/// Runs test `test` (see [`test_name`]) in a child with `var=value`; an
/// error says how the child died or why it was killed.
pub fn in_child(test: &str, var: &str, value: &str, kill: Kill) -> Result<Outcome, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(var, value)
        .env_remove("RUST_MIN_STACK")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let mut killed = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let (wall, rss) = (start.elapsed().as_millis() as u64, rss_kb(child.id()));
        if wall > kill.wall_ms || rss > kill.rss_kb {
            killed = Some(format!(
                "killed after {wall} ms of wall time at {} MB resident",
                rss / 1024
            ));
            let _ = child.kill();
            break child.wait().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if let Some(why) = killed {
        return Err(why);
    }
    // libtest prints the test's name on the same line first.
    let Some(line) = stdout
        .lines()
        .find_map(|l| l.split_once(RESULT).map(|(_, r)| r))
    else {
        return Err(format!(
            "the child died ({status}):\n{}",
            stderr.lines().rev().take(8).collect::<Vec<_>>().join("\n")
        ));
    };
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let num = |k: &str| v[k].as_u64().unwrap_or(u64::MAX);
    Ok(Outcome {
        result: v["result"].as_str().unwrap_or_default().to_owned(),
        wall_ms: num("wall_ms"),
        cpu_ms: num("cpu_ms"),
        peak_kb: num("peak_kb"),
    })
}

/// CPU time of this process (user + system), in milliseconds.
pub fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name: state, then ppid ... cmajflt, utime, stime
    // (fields 14 and 15 of proc(5)), in clock ticks of 10 ms.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) * 10
}

/// Peak resident memory of this process, in kB.
pub fn peak_kb() -> u64 {
    status_kb("/proc/self/status", "VmHWM:")
}

/// Resident memory of process `pid` now, in kB (0 once it is gone).
fn rss_kb(pid: u32) -> u64 {
    status_kb(&format!("/proc/{pid}/status"), "VmRSS:")
}

fn status_kb(path: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(path).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
