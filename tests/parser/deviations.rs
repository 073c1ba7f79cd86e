//! The deviation corpus (issue 16) over the shared corpus and the shipped
//! templates: the classes and the generator are in `common/deviations.rs`.
//!
//! Prints cases and passes per class with every miss; asserts floors at the
//! counts measured when the test was written, so that regressions fail.

use std::collections::BTreeMap;

use crate::common::deviations;
use crate::common::roundtrip;
use crate::common::turns;
use deviations::{print, tally, Tally};
use roundtrip::crate_dir;
use turns::jinja_files;

fn run(label: &str, files: &[std::path::PathBuf]) -> BTreeMap<&'static str, Tally> {
    let tallies = tally(files);
    print(label, &tallies);
    tallies
}

/// Passes per class must not fall below these floors (measured when set).
fn assert_floors(tallies: &BTreeMap<&'static str, Tally>, floors: &[(&str, usize)]) {
    for (class, floor) in floors {
        let passes = tallies.get(class).map_or(0, |t| t.passes);
        assert!(passes >= *floor, "{class}: {passes} passes, floor {floor}");
    }
}

#[test]
fn deviations_corpus() {
    let dir = crate_dir().join("../shared/corpus/llamacpp");
    let files = jinja_files(&dir);
    if files.is_empty() {
        println!(
            "skipped: no template corpus at {} (../shared is absent)",
            dir.display()
        );
        return;
    }
    let tallies = run("corpus", &files);
    let floors = [
        ("arguments-string", 63),
        ("call-opener-dropped", 22),
        ("end-of-turn", 237),
        ("fenced-json", 6),
        ("forced-open-call", 18),
        ("json-list", 6),
        ("json-newline", 6),
        ("json-semicolon", 6),
        ("lone-closer", 73),
        ("marker-newline", 83),
        ("missing-id", 7),
        ("marker-space", 22),
        ("missing-closer", 136),
        ("openai-wrapper", 63),
        ("reopened-reasoning", 36),
        ("section-closer-for-call", 25),
        ("spare-token", 16),
        ("stripped-tokens", 15),
        ("stuttered-opener", 18),
        ("unknown-tool", 90),
        ("value-newline", 7),
        ("value-opener-dropped", 32),
    ];
    assert_floors(&tallies, &floors);
}

#[test]
fn deviations_shipped() {
    let tallies = run(
        "shipped templates",
        &jinja_files(&crate_dir().join("templates")),
    );
    let floors = [
        ("arguments-string", 16),
        ("end-of-turn", 44),
        ("fenced-json", 2),
        ("json-list", 2),
        ("json-newline", 2),
        ("json-semicolon", 2),
        ("lone-closer", 28),
        ("marker-newline", 13),
        ("marker-space", 8),
        ("missing-closer", 28),
        ("openai-wrapper", 16),
        ("stuttered-opener", 8),
        // No shipped template's prompt opens a block since the fixed
        // Qwen3.5 template's thinking-on prompt stopped doing so.
        ("unknown-tool", 18),
        ("value-opener-dropped", 5),
    ];
    assert_floors(&tallies, &floors);
}
