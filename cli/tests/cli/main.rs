//! The command line against its contract (`docs/cli.md`): exit codes, JSON shapes, help, inputs.
//!
//! One test binary per concern (`cargo test -p chat-autoparser-cli --test cli`);
//! each module below was a binary of its own. They live in the CLI's crate
//! because only there does cargo build the binary for them
//! (`CARGO_BIN_EXE_chat-autoparser`); they run it in the workspace root, where
//! `templates/` and `../shared` are.

mod common;

mod batch;
mod check;
mod contract;
mod grammar;
mod inputs;
mod model_files;
mod render;
