//! Resource bounds for rendering, and the output buffer that enforces the size bound.
//!
//! A chat template is code from the internet. Fuel bounds the number of VM
//! instructions (so infinite-looking loops end), the recursion limit bounds macro
//! recursion, and [`BoundedBuffer`] stops the render once the output is too large.

use std::io;

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
