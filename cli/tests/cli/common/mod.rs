//! What the CLI tests share: running the binary, and the workspace root
//! whose `templates/` (and `../shared`) the tests name by relative path.
#![allow(dead_code)] // Each test module uses the part it needs.

pub mod cli;

use std::path::Path;

/// The workspace root (the library's crate folder), where the binary runs.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the CLI crate sits in the workspace")
}
