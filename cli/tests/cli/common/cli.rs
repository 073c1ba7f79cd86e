//! Running the `chat-autoparser` binary from a CLI test: one copy of the
//! spawn-write-wait loop.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the binary in the workspace root with `stdin` as input.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(args)
        .current_dir(super::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // The child may exit before reading stdin (help, usage errors).
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    child.wait_with_output().expect("binary finishes")
}
