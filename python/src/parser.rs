//! `Parser` and `Stream`: model output to OpenAI messages and deltas.
//!
//! A `Parser` is immutable and shared: any number of threads may parse
//! with it at once, each with streams of its own, and parsing (`parse`,
//! `push`, `finish`) runs with the GIL released. A `Stream` is one output's
//! incremental parse; `push` takes `str` or `bytes` and returns the deltas
//! that chunk made final. Bytes may end inside a UTF-8 character: the
//! incomplete tail waits in the stream ([`Utf8Carry`]) until the next push
//! completes it. A stream used by two threads at once is refused by PyO3's
//! borrow check (`RuntimeError`), never shared unsynchronised.
//!
//! Invariants: the deltas of a stream add up (OpenAI accumulation) to
//! `parse` of the whole output, whatever the chunking, `str` or `bytes`;
//! invalid UTF-8 is a `UnicodeDecodeError` and leaves the stream as it was
//! (with `errors="replace"`, U+FFFD instead, as Python's decoder does).

use std::borrow::Cow;
use std::sync::Arc;

use chat_autoparser::protocol::Start;
use chat_autoparser::{Delta, OutputParser, OutputStream};
use pyo3::exceptions::{PyRuntimeError, PyUnicodeDecodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::convert::{deltas_to_py, message_to_py, serde_to_py};
use crate::errors::parse_error;

/// Model output as it comes from Python: text, or bytes to decode.
pub enum Output {
    Text(PyBackedStr),
    Bytes(PyBackedBytes),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Output {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<pyo3::types::PyByteArray>() {
            return Ok(Output::Bytes(obj.extract()?));
        }
        Ok(Output::Text(obj.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("model output must be str or bytes")
        })?))
    }
}

impl Output {
    /// The whole output as text; bytes must be valid UTF-8.
    fn text(&self, py: Python<'_>) -> PyResult<Cow<'_, str>> {
        match self {
            Output::Text(s) => Ok(Cow::Borrowed(s)),
            Output::Bytes(b) => std::str::from_utf8(b)
                .map(Cow::Borrowed)
                .map_err(|e| decode_error(py, b, e)),
        }
    }
}

fn decode_error(py: Python<'_>, bytes: &[u8], e: std::str::Utf8Error) -> PyErr {
    match PyUnicodeDecodeError::new_utf8(py, bytes, e) {
        Ok(err) => PyErr::from_value(err.into_any()),
        Err(err) => err,
    }
}

/// A parser for one template and request shape.
#[pyclass(module = "chat_autoparser", frozen)]
pub struct Parser {
    inner: Arc<OutputParser>,
}

impl Parser {
    pub fn new(inner: OutputParser) -> Parser {
        Parser {
            inner: Arc::new(inner),
        }
    }
}

#[pymethods]
impl Parser {
    /// Parses a complete output into an OpenAI assistant message dict. Never
    /// fails on odd output: what is not a well-formed call stays content.
    fn parse<'py>(&self, py: Python<'py>, output: Output) -> PyResult<Bound<'py, PyDict>> {
        let text = output.text(py)?;
        let parser = &self.inner;
        let message = py.detach(|| parser.parse(&text));
        message_to_py(py, &message)
    }

    /// Parses an output cut off mid-stream: the message so far.
    fn parse_partial<'py>(&self, py: Python<'py>, output: Output) -> PyResult<Bound<'py, PyDict>> {
        let text = output.text(py)?;
        let parser = &self.inner;
        let message = py.detach(|| parser.parse_partial(&text));
        message_to_py(py, &message)
    }

    /// Parses a complete output; raises `ParseError` (with `kind` and byte
    /// `offset`) at the first problem: a call broken after its name, an
    /// extra call when parallel calls are off.
    fn parse_strict<'py>(&self, py: Python<'py>, output: Output) -> PyResult<Bound<'py, PyDict>> {
        let text = output.text(py)?;
        let parser = &self.inner;
        match py.detach(|| parser.parse_strict(&text)) {
            Ok(message) => message_to_py(py, &message),
            Err(d) => Err(parse_error(&d)),
        }
    }

    /// `(message, diagnostics)`: the lenient parse and the problems it
    /// found, each `{"kind", "offset"}`.
    #[pyo3(signature = (output, partial=false))]
    fn parse_report<'py>(
        &self,
        py: Python<'py>,
        output: Output,
        partial: bool,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyAny>)> {
        let text = output.text(py)?;
        let parser = &self.inner;
        let parsed = py.detach(|| parser.parse_report(&text, partial));
        Ok((
            message_to_py(py, &parsed.message)?,
            serde_to_py(py, &parsed.diagnostics)?,
        ))
    }

    /// Parses a complete output given as tokens: `pieces` is a list of
    /// `(text, special)` pairs, each a token's text (or a run of ordinary
    /// tokens') and whether it was sampled as a special token. A marker
    /// that is one of the parser's `special_tokens` counts only where it is
    /// a special piece: typed as ordinary tokens, it is content.
    #[pyo3(signature = (pieces, partial=false))]
    fn parse_tokens<'py>(
        &self,
        py: Python<'py>,
        pieces: Vec<(PyBackedStr, bool)>,
        partial: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (text, special) = joined(&pieces);
        let parser = &self.inner;
        let parsed = py
            .detach(|| parser.parse_tokens_report(&text, &special, partial))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        message_to_py(py, &parsed.message)
    }

    /// Mean microseconds of one `parse(output)` inside Rust, over `repeat`
    /// parses (no Python call, no dict): the Rust time `benches/bench.py`
    /// compares the Python call with. Not part of the API.
    fn _rust_parse_us(&self, py: Python<'_>, output: Output, repeat: u32) -> PyResult<f64> {
        let text = output.text(py)?;
        let parser = &self.inner;
        let repeat = repeat.max(1);
        let elapsed = py.detach(|| {
            let started = std::time::Instant::now();
            for _ in 0..repeat {
                std::hint::black_box(parser.parse(std::hint::black_box(&text)));
            }
            started.elapsed()
        });
        Ok(elapsed.as_secs_f64() * 1e6 / f64::from(repeat))
    }

    /// Where outputs start relative to reasoning, as the prompt left it:
    /// `"free"` (the model may open a reasoning block), `"in_reasoning"`
    /// (the prompt opened one) or `"after_reasoning"` (the prompt closed it,
    /// or thinking is off). A server gating a grammar on the end of
    /// reasoning (vLLM's `is_reasoning_end`) reads it.
    #[getter]
    fn start(&self) -> &'static str {
        match self.inner.start() {
            Start::InReasoning => "in_reasoning",
            Start::AfterReasoning => "after_reasoning",
            // `Free`, and whatever a later version adds (the enum is non-exhaustive).
            _ => "free",
        }
    }

    /// A stream for one output. `errors`: `"strict"` (invalid UTF-8 in
    /// bytes raises `UnicodeDecodeError`) or `"replace"` (U+FFFD).
    #[pyo3(signature = (errors="strict"))]
    fn stream(&self, errors: &str) -> PyResult<Stream> {
        let replace = match errors {
            "strict" => false,
            "replace" => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "errors takes \"strict\" or \"replace\", not {other:?}"
                )))
            }
        };
        Ok(Stream {
            inner: self.inner.stream(),
            carry: Utf8Carry::default(),
            replace,
            out: Vec::new(),
            finished: false,
        })
    }
}

/// One output's incremental parse.
#[pyclass(module = "chat_autoparser")]
pub struct Stream {
    inner: OutputStream,
    carry: Utf8Carry,
    replace: bool,
    /// Reused by every push (the crate's `push_into`).
    out: Vec<Delta>,
    finished: bool,
}

#[pymethods]
impl Stream {
    /// Appends a chunk (`str`, or `bytes` that may split a character);
    /// returns the OpenAI delta dicts it made final.
    fn push<'py>(&mut self, py: Python<'py>, chunk: Output) -> PyResult<Bound<'py, PyList>> {
        self.check_open()?;
        let Stream {
            inner,
            carry,
            replace,
            out,
            ..
        } = self;
        match &chunk {
            Output::Text(s) => {
                let text: &str = s;
                py.detach(|| inner.push_into(text, out));
            }
            // When the crate's stream takes bytes itself, this arm becomes
            // `py.detach(|| inner.push_bytes_into(bytes, out))` and `Utf8Carry` goes.
            Output::Bytes(b) => {
                let text = carry
                    .decode(b, *replace)
                    .map_err(|e| decode_error(py, e.bytes(), e.error))?;
                py.detach(|| inner.push_into(&text, out));
            }
        }
        deltas_to_py(py, out)
    }

    /// Appends tokens: `pieces` is a list of `(text, special)` pairs, each
    /// a token's text (or a run of ordinary tokens') and whether it was
    /// sampled as a special token; returns the delta dicts they made final.
    /// From the first such push on, a marker that is one of the parser's
    /// `special_tokens` counts only where it came as a special piece: the
    /// same characters typed as ordinary tokens are content.
    fn push_tokens<'py>(
        &mut self,
        py: Python<'py>,
        pieces: Vec<(PyBackedStr, bool)>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.check_open()?;
        if !self.carry.is_empty() {
            return Err(PyValueError::new_err(
                "push_tokens after bytes that end inside a character",
            ));
        }
        let (text, special) = joined(&pieces);
        let inner = &mut self.inner;
        let deltas = py
            .detach(|| inner.push_tokens(&text, &special))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        deltas_to_py(py, &deltas)
    }

    /// Declares the output complete; returns the last deltas.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.check_open()?;
        let Stream {
            inner,
            carry,
            replace,
            out,
            ..
        } = self;
        let tail = if carry.is_empty() {
            None
        } else {
            Some(
                carry
                    .finish(*replace)
                    .map_err(|e| decode_error(py, e.bytes(), e.error))?,
            )
        };
        // Closing what the output left open can be milliseconds of parsing.
        let deltas = py.detach(|| {
            let mut deltas = Vec::new();
            if let Some(tail) = tail {
                inner.push_into(&tail, out);
                deltas.append(out);
            }
            inner.finish_into(out);
            deltas.append(out);
            deltas
        });
        self.finished = true;
        deltas_to_py(py, &deltas)
    }

    /// The message the deltas so far add up to.
    fn message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        message_to_py(py, &self.inner.message())
    }

    /// Problems found so far, each `{"kind", "offset"}`.
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, self.inner.diagnostics())
    }

    /// Whether `finish` was called.
    #[getter]
    fn finished(&self) -> bool {
        self.finished
    }
}

impl Stream {
    fn check_open(&self) -> PyResult<()> {
        if self.finished {
            return Err(PyRuntimeError::new_err("the stream is finished"));
        }
        Ok(())
    }
}

/// `pieces` as one text and the byte ranges of its special pieces.
fn joined(pieces: &[(PyBackedStr, bool)]) -> (String, Vec<std::ops::Range<usize>>) {
    let mut text = String::with_capacity(pieces.iter().map(|(t, _)| t.len()).sum());
    let mut special = Vec::new();
    for (piece, is_special) in pieces {
        let start = text.len();
        text.push_str(piece);
        if *is_special && !piece.is_empty() {
            special.push(start..text.len());
        }
    }
    (text, special)
}

/// The bytes of a UTF-8 character split between pushes: held until the
/// next push completes it (at most 3 bytes).
#[derive(Default)]
struct Utf8Carry {
    pending: Vec<u8>,
}

/// Bytes that are not UTF-8, with the error found in them.
struct BadBytes {
    bytes: Vec<u8>,
    error: std::str::Utf8Error,
}

impl BadBytes {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Utf8Carry {
    fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The text `bytes` completes: what was held plus `bytes`, less a new
    /// incomplete tail (held for the next push). Invalid bytes fail and
    /// change nothing (or become U+FFFD with `replace`).
    fn decode<'a>(&mut self, bytes: &'a [u8], replace: bool) -> Result<Cow<'a, str>, BadBytes> {
        if self.pending.is_empty() {
            if let Ok(text) = std::str::from_utf8(bytes) {
                return Ok(Cow::Borrowed(text));
            }
        }
        let mut all = std::mem::take(&mut self.pending);
        all.extend_from_slice(bytes);
        let cut = all.len() - incomplete_tail(&all);
        let text = match std::str::from_utf8(&all[..cut]) {
            Ok(text) => text.to_owned(),
            Err(_) if replace => String::from_utf8_lossy(&all[..cut]).into_owned(),
            Err(error) => {
                self.pending = all[..all.len() - bytes.len()].to_vec();
                return Err(BadBytes { bytes: all, error });
            }
        };
        self.pending = all[cut..].to_vec();
        Ok(Cow::Owned(text))
    }

    /// The held bytes at the end of the output: an incomplete character.
    fn finish(&mut self, replace: bool) -> Result<String, BadBytes> {
        match std::str::from_utf8(&self.pending) {
            Err(error) if !replace => Err(BadBytes {
                bytes: self.pending.clone(),
                error,
            }),
            _ => Ok(String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned()),
        }
    }
}

/// How many bytes at the end of `bytes` start a character they do not finish.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match b {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}
