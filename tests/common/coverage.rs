//! Per-template counts that tests keep in `docs/coverage.md`.
//!
//! A test that measures something per corpus template (llama.cpp's
//! vectors, each grammar engine) owns one marked block of that file,
//! `<!-- KEY:start -->` … `<!-- KEY:end -->`; `tools/coverage.rs` keeps the
//! blocks when it regenerates the rest.
//!
//! Tests never write a tracked file on their own. With
//! `CHAT_AUTOPARSER_REGEN=1` (which `tools/regen_docs.sh` sets) a run
//! rewrites its block; otherwise it checks that the block says what the run
//! measured and fails, naming the command, when it does not. Both need the
//! full data: without the corpus (`../shared` absent) a run measures a
//! subset, and its counts would be a false claim, so nothing is written or
//! checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The variable that lets a run rewrite its block.
const REGEN: &str = "CHAT_AUTOPARSER_REGEN";

/// One test at a time reads and rewrites the file: the engine tiers share a
/// binary, and two rewrites at once would lose one block.
static FILE: Mutex<()> = Mutex::new(());

/// Rewrites (under [`REGEN`]) or checks block `key` of `docs/coverage.md`:
/// `summary` and one `| template | passed |` row per entry of `rows`
/// (passes, cases).
pub fn record_block(key: &str, summary: &str, rows: &BTreeMap<String, (usize, usize)>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let regen = std::env::var(REGEN).is_ok_and(|v| v == "1");
    let (doc, corpus) = (
        root.join("docs/coverage.md"),
        root.join("../shared/corpus/llamacpp"),
    );
    record_block_at(&doc, &corpus, regen, key, summary, rows);
}

/// [`record_block`] on the file `doc`, with the corpus at `corpus`.
pub fn record_block_at(
    doc: &Path,
    corpus: &Path,
    regen: bool,
    key: &str,
    summary: &str,
    rows: &BTreeMap<String, (usize, usize)>,
) {
    if !has_corpus(corpus) {
        println!(
            "docs/coverage.md `{key}` left alone: no corpus at {}",
            corpus.display()
        );
        return;
    }
    let _only_me = FILE.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(doc).expect("docs/coverage.md is readable");
    let updated = with_block(&text, key, &table(key, summary, rows))
        .unwrap_or_else(|| panic!("docs/coverage.md has no `{key}` markers"));
    if regen {
        if updated != text {
            std::fs::write(doc, updated).expect("docs/coverage.md is writable");
        }
        return;
    }
    assert!(
        updated == text,
        "docs/coverage.md's `{key}` block differs from this run's counts:\n{summary}\n\
         regenerate it with `bash tools/regen_docs.sh` (docs/coverage.md says how)"
    );
}

/// Whether `dir` holds at least one template of the corpus.
fn has_corpus(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "jinja"))
    })
}

/// The block's text, markers included.
fn table(key: &str, summary: &str, rows: &BTreeMap<String, (usize, usize)>) -> String {
    let mut table =
        format!("<!-- {key}:start -->\n{summary}\n\n| Template | Passed |\n|---|---:|\n");
    for (t, (p, n)) in rows {
        table.push_str(&format!("| {t} | {p}/{n} |\n"));
    }
    table
}

/// `doc` with block `key` replaced by `table`; `None` without its markers.
fn with_block(doc: &str, key: &str, table: &str) -> Option<String> {
    let a = doc.find(&format!("<!-- {key}:start -->"))?;
    let b = doc.find(&format!("<!-- {key}:end -->"))?;
    (a < b).then(|| format!("{}{table}{}", &doc[..a], &doc[b..]))
}
