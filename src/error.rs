//! The one error type of the crate.
//!
//! Every fallible public function returns [`Error`]. Its [`ErrorKind`] says which
//! stage failed, so a server can tell "the template is broken" (compile), "the
//! template refused this conversation" (raised), "the template ran away" (limit)
//! and "the caller gave bad input" (input) apart without parsing messages.
//! The message is one line, suitable for a CLI's stderr. Where the error
//! comes from another library's (a file's `std::io::Error`, a config's
//! `serde_json::Error`, minijinja's), that error is its
//! [`source`](std::error::Error::source); it is not part of equality or of
//! the JSON form, which carry kind, message and location only.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Which stage of the pipeline failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read.
    Io,
    /// A `tokenizer_config.json` or other input document is malformed.
    Input,
    /// The template text does not compile (syntax error).
    Syntax,
    /// The template called `raise_exception(...)`: it rejects this conversation.
    Raised,
    /// Rendering failed for another reason (type error, unknown filter, ...).
    Render,
    /// Rendering hit a resource bound (fuel, recursion, output size).
    Limit,
    /// The analysis could not make sense of the template.
    Analysis,
}

impl ErrorKind {
    /// The short name used in JSON output (`"template"` for every template-side kind).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::Input => "input",
            ErrorKind::Syntax => "syntax",
            ErrorKind::Raised => "raised",
            ErrorKind::Render => "render",
            ErrorKind::Limit => "limit",
            ErrorKind::Analysis => "analysis",
        }
    }
}

/// Where in the template source an error was found (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

/// The error another library gave, kept as an [`Error`]'s source.
type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// An error from any stage of the pipeline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<Location>,
    #[serde(skip)]
    cause: Option<Cause>,
}

/// Equal when kind, message and location are: the cause only explains.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        (self.kind, &self.message, self.location) == (other.kind, &other.message, other.location)
    }
}

impl Eq for Error {}

impl Error {
    /// A new error of `kind` with a one-line `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let message: String = message.into();
        // One line: CLI contract says stderr gets a single line.
        let message = message.replace('\n', " ");
        Error {
            kind,
            message,
            location: None,
            cause: None,
        }
    }

    /// Keeps `cause`, the other library's error this one reports, as the
    /// [`source`](std::error::Error::source).
    pub(crate) fn caused_by(
        mut self,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        self.cause = Some(Arc::new(cause));
        self
    }

    /// Attaches a source location.
    pub fn at(mut self, location: Option<Location>) -> Error {
        self.location = location;
        self
    }

    /// Which stage failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without location.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The template location, when the error comes from template source.
    pub fn location(&self) -> Option<Location> {
        self.location
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error", self.kind.as_str())?;
        if let Some(loc) = self.location {
            write!(f, " at line {}, column {}", loc.line, loc.column)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
