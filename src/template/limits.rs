//! Resource bounds for rendering, and the output buffer that enforces the size bound.
//!
//! A chat template is code from the internet. Fuel bounds the number of VM
//! instructions (so infinite-looking loops end), the recursion limit bounds macro
//! recursion, and [`BoundedBuffer`] stops the render once the output is too large.
//! Fuel counts instructions, not bytes, so values that grow without output
//! (a string doubled in a namespace on every loop turn) are bounded where our
//! own code creates or stores them: namespace assignments, our filters and
//! methods, and Python-style printing all refuse values larger than
//! `max_output_bytes` (see [`too_large`]).
//!
//! Invariant: every bound is reported as an error whose detail starts with
//! [`LIMIT`], which the public error conversion turns into `ErrorKind::Limit`.

use std::io;

use minijinja::{Error, ErrorKind, Value};

/// Bounds applied to every render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum VM instructions per render (minijinja fuel).
    pub fuel: u64,
    /// Maximum nesting of macro calls and includes.
    pub recursion: usize,
    /// Maximum rendered output in bytes.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    /// Real templates use well under 1% of these bounds on long conversations; a
    /// runaway template hits one of them in well under a second.
    fn default() -> Self {
        Limits { fuel: 20_000_000, recursion: 200, max_output_bytes: 16 << 20 }
    }
}

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

/// Size of a value for the bounds: bytes of a string, items of a container.
/// Containers count their length only: their items were bounded when stored.
pub(crate) fn size_of(value: &Value) -> usize {
    match value.as_str() {
        Some(s) => s.len(),
        None => value.len().unwrap_or(0),
    }
}

/// Fails when `value` is larger than `limit`.
pub(crate) fn check(what: &str, value: &Value, limit: usize) -> Result<(), Error> {
    match size_of(value) {
        size if size > limit => Err(too_large(what, size, limit)),
        _ => Ok(()),
    }
}

/// An output buffer that refuses to grow past a byte limit.
pub(crate) struct BoundedBuffer {
    bytes: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl BoundedBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        BoundedBuffer { bytes: Vec::new(), limit, overflowed: false }
    }

    /// Whether a write was refused because of the limit.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(crate) fn into_string(self) -> String {
        // Only `&str` output is ever written by the template engine.
        String::from_utf8(self.bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

impl io::Write for BoundedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            self.overflowed = true;
            return Err(io::Error::other("output limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
