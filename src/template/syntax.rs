//! The template language's settings, as transformers renders: what every
//! compile of a template, and the `~` rewrite's parse of it, use.
//!
//! Invariant: one definition, so the text the rewrite parses and the text
//! minijinja compiles are read alike.

use minijinja::syntax::SyntaxConfig;
use minijinja::Error;

/// transformers' whitespace handling: `trim_blocks`, `lstrip_blocks`, and
/// jinja2's default of dropping one trailing newline.
pub(super) fn syntax() -> Result<SyntaxConfig, Error> {
    SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(false)
        .build()
}
