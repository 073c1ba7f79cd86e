//! The command line against its contract (`docs/cli.md`): exit codes, JSON shapes, help, inputs.
//!
//! One test binary per concern (`cargo test --test cli`); each module below
//! was a binary of its own. Shared fixtures live in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;

mod batch;
mod check;
mod contract;
mod grammar;
mod inputs;
mod model_files;
mod render;
