//! Property tests (proptest; `PROPTEST_CASES` sets the case count): streaming equals batch, nothing lost.
//!
//! One test binary per concern (`cargo test --test properties`); each module below
//! was a binary of its own. Shared fixtures live in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;
mod concurrency;
mod differential;
mod outline;
mod parser;
mod stream_memory;
