//! The `chat_autoparser` Python extension module (PyO3, abi3 for CPython
//! 3.9 and later): the crate's template rendering, analysis, output parser,
//! streaming deltas and grammar export, for Python servers.
//!
//! Modules: `template` (`ChatTemplate`), `parser` (`Parser`, `Stream`),
//! `convert` (Python values to JSON and back, OpenAI dict shapes),
//! `errors` (the crate's error kinds as exception classes). The Python
//! package around it (`python/chat_autoparser/`) adds the stubs and helpers.
//!
//! Invariants: no crate call can panic across the boundary unnoticed (pyo3
//! turns a panic into `PanicException`); results are plain dicts and lists
//! equal to the crate's serde JSON; long calls release the GIL.

mod convert;
mod errors;
mod parser;
mod template;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<template::PyChatTemplate>()?;
    m.add_class::<parser::Parser>()?;
    m.add_class::<parser::Stream>()?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
