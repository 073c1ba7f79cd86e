//! Rendering: our renders against jinja2/transformers, the shipped templates, server requests, polyfills, spans, incremental rendering, and the bounds on hostile templates.
//!
//! One test binary per concern (`cargo test --test rendering`); each module below
//! was a binary of its own. Shared fixtures live in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod crlf;
mod error_source;
mod fidelity;
mod front_door;
mod hostile;
mod incremental;
mod polyfill;
mod qwen3_5_fixed;
mod server_requests;
mod shipped;
mod spans;
