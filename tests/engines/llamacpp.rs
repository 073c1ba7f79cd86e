//! The GBNF export inside llama.cpp (issue 14; invariant 6 of `docs/architecture.md`).
//!
//! For every corpus template with tools (`../shared/corpus/llamacpp`), the
//! tool-call turns the template itself renders (one call, content + call,
//! parallel calls, nested arguments, reasoning + call; thinking on and off)
//! are cut at the generation prompt, and the grammar exported for the same
//! tools, thinking switch and prompt is run the way llama.cpp runs it:
//!
//! - every trigger pattern compiles with `std::regex` (ECMAScript), and one of
//!   the triggers fires on the output (`llama-triggers`, tools/llama_triggers.cpp,
//!   which mirrors llama.cpp's lazy-grammar trigger search);
//! - llama.cpp's own GBNF parser and matcher (`test-gbnf-validator`) accept the
//!   output from where the trigger puts the grammar's start;
//! - `tool_choice` required and a named function (eager grammars) accept the
//!   whole output of call-only turns;
//! - mutations (unknown tool, missing required argument, wrong argument type,
//!   a second call with parallel calls off) are rejected.
//!
//! Both binaries come from `tools/llama_gbnf.sh` (the path in
//! `CHAT_AUTOPARSER_LLAMA_BIN`, else its default cache); the test skips with a
//! message when they or the corpus are absent. Counts are printed; every miss
//! must be listed in [`KNOWN`] with its cause (and in docs/grammar.md).

use std::path::PathBuf;
use std::process::Command;

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::{
    Analysis, ChatTemplate, Gbnf, Options, TemplateConfig, ToolChoice, TriggerKind,
};
use serde_json::{json, Value};

use crate::common::turns;
use turns::{render_turn, turn, Rendered};

/// The llama-cpp-python version `tools/llama_gbnf.sh` pins (its default cache).
const LLAMA_VERSION: &str = "0.3.36";

/// Share of the accepted cases below which the tier fails (issue 14: 95%).
const MIN_SHARE: f64 = 0.95;

/// Misses whose cause is known: (template, words the case label contains
/// (empty: every case), cause). Each is listed in docs/grammar.md; any other
/// miss fails the test.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "NVIDIA-Nemotron-Nano-v2",
        "content+call",
        "the template renders content and calls as two turns (a stop marker and a new header between); a model writes one",
    ),
    ("google-gemma-4-31B-it", "content+call", "the template writes the next turn's `<|tool_response>` token after the content"),
];

/// `check`'s probe tools, but `save_note`'s `meta` has typed properties
/// (nested arguments for the grammar to constrain).
fn tools() -> Vec<Value> {
    let weather = chat_autoparser::check::probe_tools().swap_remove(0);
    vec![
        weather,
        json!({"type": "function", "function": {
            "name": "save_note",
            "description": "Saves a note.",
            "parameters": {"type": "object", "properties": {
                "text": {"type": "string"},
                "meta": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "pinned": {"type": "boolean"},
                    "score": {"type": "number"}}},
            }, "required": ["text"]}}}),
    ]
}

/// One turn to render: label, content, reasoning, calls.
struct Case {
    what: &'static str,
    content: &'static str,
    reasoning: &'static str,
    calls: Vec<(&'static str, String)>,
}

fn weather(city: &str, days: u32) -> (&'static str, String) {
    (
        "get_weather",
        json!({"city": city, "days": days}).to_string(),
    )
}

fn cases(analysis: &Analysis) -> Vec<Case> {
    let parallel = analysis.tools.as_ref().is_some_and(|t| t.parallel);
    let nested = json!({"text": "Buy milk & \"eggs\" <b>today</b>\nthen rest — café", "meta": {"tags": ["a", "b"], "pinned": true, "score": 2.5}});
    let mut out = vec![
        Case {
            what: "call",
            content: "",
            reasoning: "",
            calls: vec![weather("Paris", 3)],
        },
        Case {
            what: "content+call",
            content: "Let me check the weather.",
            reasoning: "",
            calls: vec![weather("Paris", 3)],
        },
        Case {
            what: "nested",
            content: "",
            reasoning: "",
            calls: vec![("save_note", nested.to_string())],
        },
    ];
    if parallel {
        out.push(Case {
            what: "parallel",
            content: "",
            reasoning: "",
            calls: vec![weather("Paris", 3), weather("Tokyo", 1)],
        });
    }
    if analysis.reasoning.mode != ReasoningMode::None {
        out.push(Case {
            what: "reasoning+call",
            content: "",
            reasoning: "I need the forecast, so I will call the weather tool.",
            calls: vec![weather("Paris", 3)],
        });
    }
    out
}

/// Mutated calls that every grammar must reject: (label, calls).
fn mutations() -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    vec![
        (
            "unknown tool",
            vec![("delete_everything", json!({"city": "Paris"}).to_string())],
        ),
        (
            "missing required argument",
            vec![("get_weather", json!({"days": 3}).to_string())],
        ),
        (
            "wrong argument type",
            vec![(
                "get_weather",
                json!({"city": "Paris", "days": "three"}).to_string(),
            )],
        ),
    ]
}

/// The two llama.cpp-side binaries.
struct Llama {
    validator: PathBuf,
    triggers: PathBuf,
    scratch: PathBuf,
}

impl Llama {
    fn find() -> Option<Llama> {
        let bin = std::env::var_os("CHAT_AUTOPARSER_LLAMA_BIN")
            .map(PathBuf::from)
            .or_else(|| {
                let cache = std::env::var_os("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| {
                        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"))
                    })?;
                Some(cache.join(format!("chat-autoparser/llama-{LLAMA_VERSION}/bin")))
            })?;
        let (validator, triggers) = (bin.join("test-gbnf-validator"), bin.join("llama-triggers"));
        if !validator.is_file() || !triggers.is_file() {
            println!(
                "skipped: no test-gbnf-validator / llama-triggers in {} (run tools/llama_gbnf.sh)",
                bin.display()
            );
            return None;
        }
        // One folder per instance: tests run in parallel in one process.
        static INSTANCES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch =
            std::env::temp_dir().join(format!("chat-autoparser-llama-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&scratch).ok()?;
        Some(Llama {
            validator,
            triggers,
            scratch,
        })
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.scratch.join(name);
        std::fs::write(&path, text).expect("scratch file is writable");
        path
    }

    /// Whether llama.cpp's GBNF matcher accepts all of `text` (a grammar it
    /// cannot load accepts nothing).
    fn accepts(&self, gbnf: &str, text: &str) -> bool {
        let grammar = self.write("grammar.gbnf", gbnf);
        let input = self.write("input.txt", text);
        let Ok(out) = Command::new(&self.validator)
            .arg(&grammar)
            .arg(&input)
            .output()
        else {
            return false;
        };
        String::from_utf8_lossy(&out.stdout)
            .contains("Input string is valid according to the grammar.")
    }

    /// The triggers as llama.cpp compiles and searches them in `output`.
    fn fire(&self, g: &Gbnf, output: &str) -> Fired {
        let input = self.write("output.txt", output);
        let args: Vec<String> = g
            .triggers
            .iter()
            .map(|t| match t.kind {
                // Sampling that token is where its text appears.
                TriggerKind::Word | TriggerKind::Token => format!("word:{}", t.value),
                TriggerKind::Pattern => format!("pattern:{}", t.value),
                TriggerKind::PatternFull => format!("pattern_full:{}", t.value),
                other => panic!("a trigger kind this tier does not know: {other:?}"),
            })
            .collect();
        let Ok(out) = Command::new(&self.triggers)
            .arg(&input)
            .args(&args)
            .output()
        else {
            return Fired {
                errors: vec!["llama-triggers did not run".into()],
                start: None,
            };
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let errors = text
            .lines()
            .filter_map(|l| l.strip_prefix("error: "))
            .map(str::to_owned)
            .collect();
        let start = text
            .lines()
            .find_map(|l| l.strip_prefix("fired "))
            .and_then(|rest| rest.split(' ').nth(1))
            .and_then(|n| n.parse().ok());
        Fired { errors, start }
    }
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// What the trigger search found: patterns `std::regex` rejects, and where
/// the grammar starts (a byte offset) if a trigger fired.
struct Fired {
    errors: Vec<String>,
    start: Option<usize>,
}

struct Template {
    name: String,
    tmpl: ChatTemplate,
    analysis: Analysis,
}

fn corpus() -> Vec<Template> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp");
    turns::jinja_files(&dir)
        .into_iter()
        .filter_map(|p| {
            let source = std::fs::read_to_string(&p).ok()?;
            let tmpl = ChatTemplate::new(&source, &TemplateConfig::default()).ok()?;
            let analysis = tmpl.analyze().ok()?;
            analysis.tools.as_ref()?;
            Some(Template {
                name: p.file_stem()?.to_string_lossy().into_owned(),
                tmpl,
                analysis,
            })
        })
        .collect()
}

/// The thinking settings to render with: on and off for templates that reason.
fn thinking_settings(analysis: &Analysis) -> Vec<Option<bool>> {
    if analysis.reasoning.mode == ReasoningMode::None {
        vec![None]
    } else {
        vec![Some(true), Some(false)]
    }
}

fn config(
    rendered: &Rendered,
    thinking: Option<bool>,
    choice: ToolChoice,
    parallel: bool,
) -> Options {
    Options::default()
        .with_tools(tools())
        .with_tool_choice(choice)
        .with_parallel_tool_calls(parallel)
        .with_enable_thinking(thinking)
        .with_prompt(Some(rendered.generation_prompt.clone()))
}

#[derive(Default)]
struct Tally {
    templates: usize,
    patterns: usize,
    patterns_compiled: usize,
    cases: usize,
    fired: usize,
    accepted: usize,
    eager: usize,
    eager_accepted: usize,
    mutations: usize,
    rejected: usize,
    /// Outputs given the end of the reasoning block the prompt opened.
    closed: usize,
    /// Reasoning that names the section opener: cases, and those where the
    /// trigger waited for the reasoning's end and the call was accepted.
    musings: usize,
    free_musings: usize,
    /// (template, label, why)
    misses: Vec<(String, String, String)>,
    notes: Vec<String>,
}

impl Tally {
    fn miss(&mut self, t: &Template, label: String, why: String) {
        self.misses.push((t.name.clone(), label, why));
    }
}

/// The lazy (auto) grammar on one rendered turn: triggers compile, one fires,
/// llama.cpp accepts the output from there. Returns where the grammar starts.
fn check_auto(
    llama: &Llama,
    tally: &mut Tally,
    t: &Template,
    label: &str,
    g: &Gbnf,
    output: &str,
) -> Option<usize> {
    tally.cases += 1;
    // llama.cpp's server takes a single-token trigger only if it is preserved.
    let unpreserved = g
        .triggers
        .iter()
        .find(|tr| tr.kind == TriggerKind::Token && !g.preserved_tokens.contains(&tr.value));
    if let Some(tr) = unpreserved {
        tally.miss(
            t,
            label.into(),
            format!("token trigger {:?} is not a preserved token", tr.value),
        );
    }
    let fired = llama.fire(g, output);
    tally.patterns += g.triggers.len();
    tally.patterns_compiled += g.triggers.len() - fired.errors.len();
    if let Some(e) = fired.errors.first() {
        tally.miss(
            t,
            label.into(),
            format!("std::regex rejects a trigger ({e}): {:?}", g.triggers),
        );
        return None;
    }
    let Some(at) = fired.start else {
        tally.miss(
            t,
            label.into(),
            format!("no trigger fires {:?} on {output:?}", g.triggers),
        );
        return None;
    };
    tally.fired += 1;
    if llama.accepts(&g.gbnf, &output[at..]) {
        tally.accepted += 1;
    } else {
        tally.miss(
            t,
            label.into(),
            format!("llama.cpp rejects from {at}: {:?}", &output[at..]),
        );
    }
    Some(at)
}

/// An eager grammar on a whole output.
fn check_eager(
    llama: &Llama,
    tally: &mut Tally,
    t: &Template,
    label: String,
    g: &Gbnf,
    output: &str,
) {
    tally.eager += 1;
    if llama.accepts(&g.gbnf, output) {
        tally.eager_accepted += 1;
    } else {
        tally.miss(t, label, format!("llama.cpp rejects {output:?}"));
    }
}

fn grammar(t: &Template, config: &Options) -> Option<Gbnf> {
    t.analysis.grammar(config).ok()
}

fn run_template(llama: &Llama, tally: &mut Tally, t: &Template) {
    tally.templates += 1;
    for thinking in thinking_settings(&t.analysis) {
        // A model writes reasoning only with thinking on.
        for case in cases(&t.analysis)
            .into_iter()
            .filter(|c| c.reasoning.is_empty() || thinking == Some(true))
        {
            run_case(llama, tally, t, &case, thinking);
        }
    }
}

/// One rendered turn through every check that applies to it.
fn run_case(llama: &Llama, tally: &mut Tally, t: &Template, case: &Case, thinking: Option<bool>) {
    let switch = match thinking {
        Some(true) => " thinking on",
        Some(false) => " thinking off",
        None => "",
    };
    let label = format!("{}{switch}", case.what);
    let turn = turn(case.content, case.reasoning, &case.calls);
    let rendered = match render_turn(&t.tmpl, &t.analysis, &tools(), &turn, thinking) {
        Ok(r) => r,
        Err(e) => {
            return tally.notes.push(format!(
                "{} [{label}]: not rendered ({})",
                t.name,
                e.lines().next().unwrap_or("")
            ))
        }
    };
    let (rendered, closed) = close_open_block(&t.analysis, rendered);
    tally.closed += usize::from(closed);
    if !case
        .calls
        .iter()
        .all(|(name, _)| rendered.output.contains(name))
    {
        return tally.notes.push(format!(
            "{} [{label}]: the template drops the calls",
            t.name
        ));
    }
    let Some(auto) = grammar(t, &config(&rendered, thinking, ToolChoice::Auto, true)) else {
        return tally.miss(t, label, "no grammar".into());
    };
    let start = check_auto(llama, tally, t, &label, &auto, &rendered.output);
    if case.content.is_empty() {
        eager_cases(llama, tally, t, &label, case, &rendered, thinking);
    }
    match (case.what, start) {
        ("parallel", _) => second_call(llama, tally, t, &label, &rendered, thinking),
        ("call", Some(at)) => mutated(llama, tally, t, &auto, at, switch, thinking),
        ("reasoning+call", _) => musing(llama, tally, t, &label, thinking),
        _ => {}
    }
}

/// Reasoning that names the section's opening marker as text: the trigger
/// must not fire before the reasoning is over (a model thinking aloud about
/// `<tool_call>` stays free), and the call after it is accepted.
fn musing(llama: &Llama, tally: &mut Tally, t: &Template, label: &str, thinking: Option<bool>) {
    let Some(format) = &t.analysis.tools else {
        return;
    };
    let opener = [&format.section_start, &format.call_start]
        .into_iter()
        .map(|m| m.trim())
        .find(|m| !m.is_empty());
    let Some(opener) = opener else { return };
    let reasoning = format!("Maybe I should write {opener} now; first I think.");
    let calls = [weather("Paris", 3)];
    let turn = turn("", &reasoning, &calls);
    let Ok(r) = render_turn(&t.tmpl, &t.analysis, &tools(), &turn, thinking) else {
        return;
    };
    let (r, _) = close_open_block(&t.analysis, r);
    let Some(after) = r.output.find(&reasoning).map(|at| at + reasoning.len()) else {
        return;
    };
    let Some(g) = grammar(t, &config(&r, thinking, ToolChoice::Auto, true)) else {
        return;
    };
    tally.musings += 1;
    match llama.fire(&g, &r.output).start {
        Some(at) if at >= after && llama.accepts(&g.gbnf, &r.output[at..]) => {
            tally.free_musings += 1
        }
        Some(at) if at < after => tally.miss(
            t,
            format!("{label} musing"),
            format!(
                "the trigger fires at {at}, inside the reasoning: {:?}",
                r.output
            ),
        ),
        at => tally.miss(
            t,
            format!("{label} musing"),
            format!("not accepted (trigger at {at:?}): {:?}", r.output),
        ),
    }
}

/// A turn cut at the common prefix whose prompt leaves a reasoning block
/// open gets the block's end first (see `turns::reasoning_end_owed`);
/// counted apart.
fn close_open_block(analysis: &Analysis, mut r: Rendered) -> (Rendered, bool) {
    let owed = match r.by_common_prefix {
        true => turns::reasoning_end_owed(analysis, &r.generation_prompt, &r.output),
        false => None,
    };
    if let Some(end) = owed {
        r.output = format!("{end}\n{}", r.output);
    }
    (r, owed.is_some())
}

/// `tool_choice` required, and named (when every call is to that function).
fn eager_cases(
    llama: &Llama,
    tally: &mut Tally,
    t: &Template,
    label: &str,
    case: &Case,
    r: &Rendered,
    thinking: Option<bool>,
) {
    if let Some(g) = grammar(t, &config(r, thinking, ToolChoice::Required, true)) {
        check_eager(llama, tally, t, format!("{label} required"), &g, &r.output);
    }
    if case.calls.iter().all(|(name, _)| *name == "get_weather") {
        if let Some(g) = grammar(
            t,
            &config(
                r,
                thinking,
                ToolChoice::Function("get_weather".into()),
                true,
            ),
        ) {
            check_eager(llama, tally, t, format!("{label} named"), &g, &r.output);
        }
    }
}

/// Two calls where the request allows one: the lazy grammar must reject them.
fn second_call(
    llama: &Llama,
    tally: &mut Tally,
    t: &Template,
    label: &str,
    r: &Rendered,
    thinking: Option<bool>,
) {
    let Some(g) = grammar(t, &config(r, thinking, ToolChoice::Auto, false)) else {
        return;
    };
    tally.mutations += 1;
    let accepted = llama
        .fire(&g, &r.output)
        .start
        .is_some_and(|at| llama.accepts(&g.gbnf, &r.output[at..]));
    if accepted {
        tally.miss(
            t,
            format!("{label} second call, parallel off"),
            format!("accepted: {:?}", r.output),
        );
    } else {
        tally.rejected += 1;
    }
}

/// The mutated calls, rendered like the accepted one, from the same start.
fn mutated(
    llama: &Llama,
    tally: &mut Tally,
    t: &Template,
    auto: &Gbnf,
    at: usize,
    switch: &str,
    thinking: Option<bool>,
) {
    for (what, calls) in mutations() {
        let turn = turn("", "", &calls);
        let Ok(r) = render_turn(&t.tmpl, &t.analysis, &tools(), &turn, thinking) else {
            continue;
        };
        let (r, _) = close_open_block(&t.analysis, r);
        if at > r.output.len() || !r.output.is_char_boundary(at) {
            continue;
        }
        tally.mutations += 1;
        let required = grammar(t, &config(&r, thinking, ToolChoice::Required, true));
        if llama.accepts(&auto.gbnf, &r.output[at..])
            || required.is_some_and(|g| llama.accepts(&g.gbnf, &r.output))
        {
            tally.miss(
                t,
                format!("{what}{switch}"),
                format!("accepted: {:?}", r.output),
            );
        } else {
            tally.rejected += 1;
        }
    }
}

#[test]
fn corpus_grammars_work_in_llama_cpp() {
    let templates = corpus();
    if templates.is_empty() {
        println!("skipped: no template corpus at ../shared/corpus/llamacpp (../shared is absent)");
        return;
    }
    let Some(llama) = Llama::find() else { return };
    let mut tally = Tally::default();
    let mut rows = std::collections::BTreeMap::new();
    for t in &templates {
        let (good, all) = (tally.good(), tally.checks());
        run_template(&llama, &mut tally, t);
        rows.insert(t.name.clone(), (tally.good() - good, tally.checks() - all));
    }
    let summary = format!(
        "llama.cpp's GBNF matcher and `std::regex`: {} of {} checks pass (outputs accepted from the trigger, \
         required/named accepted, mutations rejected; `cargo test --release --test engines llamacpp::`).",
        tally.good(),
        tally.checks()
    );
    crate::common::coverage::record_block("engine-llamacpp", &summary, &rows);
    report(&tally);
}

impl Tally {
    /// Checks that passed: outputs accepted, mutations rejected.
    fn good(&self) -> usize {
        self.accepted + self.eager_accepted + self.rejected
    }

    /// Checks run.
    fn checks(&self) -> usize {
        self.cases + self.eager + self.mutations
    }
}

fn report(tally: &Tally) {
    println!(
        "llama.cpp tier: {} templates with tools; trigger patterns compiled by std::regex: {}/{}; \
         auto: trigger fired {}/{}, accepted {}/{}; required/named: {}/{} accepted; mutations: {}/{} rejected",
        tally.templates,
        tally.patterns_compiled,
        tally.patterns,
        tally.fired,
        tally.cases,
        tally.accepted,
        tally.cases,
        tally.eager_accepted,
        tally.eager,
        tally.rejected,
        tally.mutations
    );
    println!(
        "  reasoning naming the section opener: trigger after it and call accepted {}/{}",
        tally.free_musings, tally.musings
    );
    println!("  {} outputs cut at the common prefix were given the end of the reasoning block their prompt opened", tally.closed);
    for n in &tally.notes {
        println!("  note: {n}");
    }
    let known = |(name, label, _): &&(String, String, String)| {
        KNOWN.iter().any(|(n, l, _)| n == name && label.contains(l))
    };
    let (known_misses, unexpected): (Vec<_>, Vec<_>) = tally.misses.iter().partition(known);
    println!("known misses ({}):", known_misses.len());
    for (name, label, why) in &known_misses {
        let cause = KNOWN
            .iter()
            .find(|(n, l, _)| n == name && label.contains(l))
            .map_or("", |k| k.2);
        println!("  {name} [{label}]: {cause}\n      {why}");
    }
    for (name, l, _) in KNOWN {
        if !tally
            .misses
            .iter()
            .any(|(n, label, _)| n == name && label.contains(l))
        {
            println!("  note: known miss {name} [{l}] no longer misses; drop it from KNOWN");
        }
    }
    for (name, label, why) in &unexpected {
        println!("  MISS {name} [{label}]: {why}");
    }
    let (good, total) = (tally.good(), tally.checks());
    println!(
        "llama.cpp tier: {good}/{total} checks pass ({:.1}%)",
        100.0 * good as f64 / total.max(1) as f64
    );
    assert!(
        tally.accepted as f64 >= MIN_SHARE * tally.cases as f64,
        "auto: {}/{} accepted, under 95%",
        tally.accepted,
        tally.cases
    );
    assert!(
        unexpected.is_empty(),
        "{} miss(es) not in KNOWN (see above)",
        unexpected.len()
    );
}

/// The schema feature table (`tests/common/schemas.rs`) as a response
/// format, through llama.cpp's own GBNF parser and matcher: every valid
/// answer accepted, every invalid one rejected.
#[test]
fn schema_features_in_llama_cpp() {
    let Some(llama) = Llama::find() else { return };
    let (_, analysis) = crate::common::shipped_template("bare-json");
    let (mut accepted, mut rejected) = (0, 0);
    for case in crate::common::schemas::schema_features() {
        let options = Options::default()
            .with_tool_choice(ToolChoice::None)
            .with_response_schema(Some(case.schema.clone()));
        let g = analysis.grammar(&options).unwrap();
        assert!(g.warnings.is_empty(), "{}: {:?}", case.schema, g.warnings);
        for (text, valid) in case.answers() {
            let got = llama.accepts(&g.gbnf, text);
            assert_eq!(got, valid, "{}: {text}\n{}", case.schema, g.gbnf);
            *(if valid { &mut accepted } else { &mut rejected }) += 1;
        }
    }
    println!("schema features in llama.cpp: {accepted} valid answers accepted, {rejected} invalid rejected");
}
