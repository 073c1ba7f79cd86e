//! How a bound of ours reads as a minijinja error: a marked detail.
//!
//! minijinja's errors carry a kind and a detail string; a bound met inside a
//! render (a value too large, the CPU budget spent) must come out as our
//! `ErrorKind::Limit`, not as the template's own failure. Every such error's
//! detail starts with [`LIMIT`], which the public error conversion strips.
//! Its own module because both the render's meters (`limits`) and the CPU
//! budget (`cpu_budget`, which `limits` starts) make such errors.
//!
//! Invariant: a template's own message never starts with [`LIMIT`] (it is a
//! control character sequence no template writes by accident).

use minijinja::{Error, ErrorKind};

/// Prefix that marks a minijinja error as a resource bound of ours. A control
/// character cannot occur in a template's own message by accident.
pub(crate) const LIMIT: &str = "\u{1}limit\u{1}";

/// Whether a minijinja error detail reports one of our bounds.
pub(crate) fn is_limit(detail: &str) -> bool {
    detail.starts_with(LIMIT)
}

/// The error for a value of `size` bytes (or items) over `limit`.
pub(crate) fn too_large(what: &str, size: usize, limit: usize) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("{LIMIT}{what} would hold {size} bytes or items, over the limit of {limit}"),
    )
}
