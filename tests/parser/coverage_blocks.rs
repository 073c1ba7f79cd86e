//! The blocks of `docs/coverage.md` that test runs own
//! (`tests/common/coverage.rs`): a run never writes the file unless
//! regeneration is asked for, checks it against what it measured otherwise,
//! and leaves it alone without the full corpus (whose subset would make a
//! false claim). Each case works on a scratch copy.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::coverage::record_block_at;

const DOC: &str = "intro\n<!-- k:start -->\nold claim\n<!-- k:end -->\nrest\n";

/// A scratch folder with a doc holding block `k`, and a corpus folder that
/// holds a template when `corpus` says so.
fn scratch(test: &str, corpus: bool) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("cap-coverage-{test}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(dir.join("corpus")).unwrap();
    if corpus {
        std::fs::write(dir.join("corpus/a.jinja"), "{{ messages }}").unwrap();
    }
    std::fs::write(dir.join("coverage.md"), DOC).unwrap();
    (dir.join("coverage.md"), dir.join("corpus"))
}

fn rows() -> BTreeMap<String, (usize, usize)> {
    BTreeMap::from([("t".to_owned(), (2, 3))])
}

const NEW: &str = "intro\n<!-- k:start -->\n2 of 3 pass.\n\n| Template | Passed |\n|---|---:|\n| t | 2/3 |\n<!-- k:end -->\nrest\n";

#[test]
fn without_the_corpus_the_doc_is_neither_written_nor_checked() {
    let (doc, corpus) = scratch("absent", false);
    for regen in [false, true] {
        record_block_at(&doc, &corpus, regen, "k", "2 of 3 pass.", &rows());
        assert_eq!(std::fs::read_to_string(&doc).unwrap(), DOC);
    }
}

#[test]
fn a_stale_block_fails_the_run_and_names_the_command() {
    let (doc, corpus) = scratch("stale", true);
    let failed = std::panic::catch_unwind(|| {
        record_block_at(&doc, &corpus, false, "k", "2 of 3 pass.", &rows())
    })
    .unwrap_err();
    let message = failed.downcast_ref::<String>().unwrap();
    assert!(message.contains("`bash tools/regen_docs.sh`"), "{message}");
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), DOC);
}

#[test]
fn regeneration_rewrites_the_block_and_then_it_checks() {
    let (doc, corpus) = scratch("regen", true);
    record_block_at(&doc, &corpus, true, "k", "2 of 3 pass.", &rows());
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), NEW);
    record_block_at(&doc, &corpus, false, "k", "2 of 3 pass.", &rows());
}
