//! The analysis over the real-template corpus (`../shared/corpus/llamacpp/*.jinja`).
//!
//! For every template: the analysis completes without error; its JSON is
//! byte-identical across two independent runs (compile + analyze twice;
//! invariant 4 of `docs/architecture.md`); the JSON round-trips through
//! serde (deserialize → equal analysis → identical bytes); a template that
//! renders its calls gains no format from its prose (every corpus example
//! call, in Qwen's, Hermes' or Apriel's instructions, opens with the markers
//! the template renders; `docs/analysis.md`). A summary line with counts (templates analyzed,
//! with tools, with reasoning, by tool class and reasoning mode) is printed;
//! see it with `cargo test --test analysis corpus:: -- --nocapture`.
//!
//! The corpus lives outside the repository (`../shared`, read-only); without
//! it the test prints a message and passes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::{Analysis, ChatTemplate, TemplateConfig, TemplateSource};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp")
}

/// The corpus templates, sorted by file name; `None` when the corpus is absent.
fn corpus() -> Option<Vec<PathBuf>> {
    let dir = corpus_dir();
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    Some(paths)
}

/// Compiles and analyzes one template the way `chat-autoparser analyze` does.
fn analyze(path: &std::path::Path) -> Result<Analysis, String> {
    let source = TemplateSource::load(path).map_err(|e| format!("load: {e}"))?;
    let template = ChatTemplate::from_source(&source, &TemplateConfig::default())
        .map_err(|e| format!("compile: {e}"))?;
    template.analyze().map_err(|e| format!("analyze: {e}"))
}

fn name_of(path: &std::path::Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn corpus_analyses_complete_deterministic_and_round_trip() {
    let Some(paths) = corpus() else {
        println!(
            "skipped: no corpus at {} (../shared is absent)",
            corpus_dir().display()
        );
        return;
    };
    assert!(
        !paths.is_empty(),
        "no .jinja files in {}",
        corpus_dir().display()
    );

    let mut errors = Vec::new();
    let mut nondeterministic = Vec::new();
    let mut round_trip = Vec::new();
    let mut prose_beside_own = Vec::new();
    let mut analyzed = 0;
    let mut with_tools = 0;
    let mut with_reasoning = 0;
    let mut by_class: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_mode: BTreeMap<String, usize> = BTreeMap::new();

    for path in &paths {
        let name = name_of(path);
        let first = match analyze(path) {
            Ok(a) => a,
            Err(e) => {
                errors.push(format!("  {name}: {e}"));
                continue;
            }
        };
        analyzed += 1;
        let text = serde_json::to_string(&first).expect("analysis serializes");

        // Determinism: a second, independent compile + analysis.
        match analyze(path).map(|a| serde_json::to_string(&a).expect("analysis serializes")) {
            Ok(again) if again == text => {}
            Ok(again) => {
                let at = text
                    .bytes()
                    .zip(again.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                let show = |s: &str| {
                    s.get(at.saturating_sub(40)..(at + 40).min(s.len()))
                        .unwrap_or("")
                        .to_owned()
                };
                nondeterministic.push(format!(
                    "  {name}: first difference at byte {at}: {:?} vs {:?}",
                    show(&text),
                    show(&again)
                ));
            }
            Err(e) => nondeterministic.push(format!("  {name}: second run failed: {e}")),
        }

        // Round trip: JSON → Analysis → JSON.
        match serde_json::from_str::<Analysis>(&text) {
            Ok(back) if back == first => {
                let again = serde_json::to_string(&back).expect("analysis serializes");
                if again != text {
                    round_trip.push(format!("  {name}: re-serialized JSON differs"));
                }
            }
            Ok(back) => {
                round_trip.push(format!("  {name}: deserialized analysis differs: {back:?}"))
            }
            Err(e) => round_trip.push(format!("  {name}: does not deserialize: {e}")),
        }

        if let (Some(_), Some(example)) = (&first.tools, &first.prose.tool_call) {
            prose_beside_own.push(format!("  {name}: {example}"));
        }
        if let Some(tools) = &first.tools {
            with_tools += 1;
            *by_class.entry(json_name(&tools.class)).or_default() += 1;
        } else {
            *by_class.entry("none".into()).or_default() += 1;
        }
        if first.reasoning.mode != ReasoningMode::None {
            with_reasoning += 1;
        }
        *by_mode.entry(json_name(&first.reasoning.mode)).or_default() += 1;
    }

    let counts = |m: &BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "corpus: {} templates, {analyzed} analyzed, {} failed; {with_tools} with tools, {with_reasoning} with reasoning; \
         tool class: {}; reasoning mode: {}",
        paths.len(),
        errors.len(),
        counts(&by_class),
        counts(&by_mode),
    );

    let mut report = String::new();
    for (what, list) in [
        ("analysis failed", &errors),
        (
            "analysis JSON not byte-identical across runs",
            &nondeterministic,
        ),
        ("analysis JSON does not round-trip", &round_trip),
        (
            "a format from prose beside the rendered one",
            &prose_beside_own,
        ),
    ] {
        if !list.is_empty() {
            report.push_str(&format!(
                "{what} for {} template(s):\n{}\n",
                list.len(),
                list.join("\n")
            ));
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// The serde (kebab-case) name of an enum value, as in the analysis JSON.
fn json_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Python calls: which templates write string values raw (`'` + value +
/// `'`, nothing escaped), which the `response_template` export must read
/// per call since `python-call-list` refuses them (`docs/grammar.md`).
#[test]
fn python_call_templates_say_whether_strings_are_raw() {
    use chat_autoparser::analysis::ArgumentsSlot;
    let Some(paths) = corpus() else {
        println!("skipped: no corpus (../shared is absent)");
        return;
    };
    let mut seen = BTreeMap::new();
    for path in &paths {
        let analysis = analyze(path).unwrap_or_else(|e| panic!("{}: {e}", name_of(path)));
        if let Some(ArgumentsSlot::Python { raw_strings, .. }) =
            analysis.tools.as_ref().map(|f| f.arguments.clone())
        {
            seen.insert(name_of(path), raw_strings);
        }
    }
    // The corpus's other Python-call templates render no calls: the
    // polyfill writes theirs (escaped JSON strings), so they have no rendered
    // format here.
    let expected: BTreeMap<String, bool> = [("LFM2.5-8B-A1B", true)]
        .into_iter()
        .map(|(n, raw)| (n.to_string(), raw))
        .collect();
    assert_eq!(seen, expected);
}
