//! Opening the files a template is loaded from, so that no file can make
//! loading read what it should not, wait forever, or grow without end.
//!
//! A model folder is often a cloned repository: its files may be symbolic
//! links to anything (`chat_template.jinja -> /proc/self/environ` would
//! render the server's environment into the prompt), FIFOs, devices or
//! files of gigabytes. So:
//!
//! - only regular files are read: a FIFO, a device or a directory is an
//!   `Input` error, found before opening (opening a FIFO waits for a writer)
//!   and checked again on the opened handle;
//! - at most [`MAX_FILE_BYTES`] are read from any template or metadata file
//!   (read with `take`, so a file that grows while read, or a `/proc` file
//!   that reports no size, cannot go past it); a larger file is an `Input`
//!   error;
//! - a model folder's file is read only where it really lives inside the
//!   folder (see [`ModelFolder`]).
//!
//! A file named directly by the caller (a `.jinja`, `.json` or GGUF path) is
//! the caller's choice wherever it lives, a link included, but it too must be
//! a regular file and is read under the same bound.
//!
//! The checks are made on paths, then on the opened handle; a folder being
//! changed by someone else while it is read (a file swapped for a FIFO
//! between the check and the open) is outside what they guard.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// The most bytes read from one template or metadata file (64 MiB): the
/// largest real tokenizer files are a few tens of MB.
pub(crate) const MAX_FILE_BYTES: u64 = 64 << 20;

/// Opens `path`, which must be a regular file; errors name `shown`.
pub(crate) fn open_regular(path: &Path, shown: &Path) -> Result<File> {
    // Before opening: opening a FIFO blocks until someone writes to it.
    let before = std::fs::metadata(path).map_err(|e| io_error(shown, e))?;
    if !before.is_file() {
        return Err(not_regular(shown));
    }
    let file = File::open(path).map_err(|e| io_error(shown, e))?;
    // Again on the handle: that is the file the bytes will come from.
    let opened = file.metadata().map_err(|e| io_error(shown, e))?;
    if !opened.is_file() {
        return Err(not_regular(shown));
    }
    Ok(file)
}

/// The text of an opened file, at most [`MAX_FILE_BYTES`] of UTF-8.
pub(crate) fn read_text(file: File, shown: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(shown, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::Input,
            format!(
                "{}: larger than {} MiB, the most read from a template or metadata file",
                shown.display(),
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::new(
            ErrorKind::Input,
            format!("{}: not UTF-8 text", shown.display()),
        )
    })
}

/// A Hugging Face model folder whose files are read only where they really
/// live inside it.
///
/// The rule: a file of the folder (a link or not) is read when its canonical
/// path, every link resolved, is inside the folder's own canonical path; or,
/// when the folder is a Hugging Face cache snapshot (its canonical parent is
/// named `snapshots`), inside that cache entry's `blobs` folder, which is
/// where the cache's `snapshots/<rev>/f -> ../../blobs/<hash>` links lead.
/// `blobs` is taken as it is named, not resolved: a `blobs` that is itself a
/// link admits nothing. A link whose target does not exist counts as a
/// missing file. The folder itself may be reached through links: it is the
/// caller's choice.
pub(crate) struct ModelFolder {
    /// The folder as the caller named it, for messages.
    shown: PathBuf,
    /// Its canonical path.
    real: PathBuf,
    /// `<entry>/blobs` when the folder is `<entry>/snapshots/<rev>`.
    blobs: Option<PathBuf>,
}

impl ModelFolder {
    /// The model folder at `dir`.
    pub(crate) fn new(dir: &Path) -> Result<ModelFolder> {
        let real = dir.canonicalize().map_err(|e| io_error(dir, e))?;
        let snapshots = real
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "snapshots"));
        let blobs = snapshots.and_then(Path::parent).map(|e| e.join("blobs"));
        Ok(ModelFolder {
            shown: dir.to_owned(),
            real,
            blobs,
        })
    }

    /// The path of the folder's file `name`, as the caller would name it.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.shown.join(name)
    }

    /// The text of the folder's file `name`; `None` when there is none.
    pub(crate) fn read(&self, name: &str) -> Result<Option<String>> {
        let shown = self.file(name);
        match std::fs::symlink_metadata(&shown) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&shown, e)),
            Ok(_) => {}
        }
        let target = match shown.canonicalize() {
            // A link to nothing: as if the file were not there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&shown, e)),
            Ok(target) => target,
        };
        if !self.holds(&target) {
            return Err(Error::new(
                ErrorKind::Input,
                format!(
                    "{}: links to {}, outside the model folder",
                    shown.display(),
                    target.display()
                ),
            ));
        }
        // The resolved path: the one just checked.
        read_text(open_regular(&target, &shown)?, &shown).map(Some)
    }

    /// Whether a canonical path is inside the folder (or its cache blobs).
    fn holds(&self, target: &Path) -> bool {
        target.starts_with(&self.real) || self.blobs.as_ref().is_some_and(|b| target.starts_with(b))
    }
}

fn not_regular(shown: &Path) -> Error {
    Error::new(
        ErrorKind::Input,
        format!("{}: not a regular file", shown.display()),
    )
}

pub(crate) fn io_error(shown: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {e}", shown.display())).caused_by(e)
}
