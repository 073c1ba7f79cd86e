//! Structural tags checked inside the real xgrammar (issue 14): for every
//! template that renders tool calls (the shipped `templates/`, then
//! `../shared/corpus/llamacpp` when present), the assistant turns the
//! template itself renders (one call, content + call, two calls, nested
//! arguments, reasoning + call; thinking on and off) are cut after the
//! generation prompt, the request's structural tag is exported from the
//! protocol for that prompt, compiled by xgrammar and run through its
//! `GrammarMatcher` over a byte-level vocabulary (`cli/src/xgrammar_check.py`).
//! At least 95% must be accepted whole; mutations (unknown tool, missing
//! required argument, wrong type, a second call with parallel calls off)
//! must be rejected. The legacy `{structures, triggers}` form is checked on
//! the one-call outputs and counted apart. A template that renders the turn
//! unlike its generation prompt is cut where the two part, as llama.cpp's
//! harness cuts, with that common prefix as the prompt; those outputs are
//! counted apart too (the 95% holds for both).
//!
//! The engine is the `xgrammar` wheel that `tools/test.sh` installs into
//! `.venv` (`tools/requirements-xgrammar.txt`); without it the test says so
//! and passes. Counts are printed: `cargo test --release --test
//! grammar_xgrammar -- --nocapture`.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chat_autoparser::analysis::{NameSlot, ReasoningMode};
use chat_autoparser::grammar::{legacy, structural_tag};
use chat_autoparser::prompt::template_messages;
use chat_autoparser::protocol::{Options, Protocol};
use chat_autoparser::{Analysis, ChatTemplate, RenderRequest, ToolChoice};
use serde_json::{json, Value};

use crate::common::turns;

fn tools() -> Vec<Value> {
    turns::engine_tools()
}

/// One assistant turn: content, reasoning and calls `(name, arguments)`.
struct Case {
    what: &'static str,
    content: &'static str,
    reasoning: &'static str,
    calls: Vec<(&'static str, Value)>,
}

fn cases() -> Vec<Case> {
    let weather = || ("get_weather", json!({"city": "Paris", "days": 3}));
    vec![
        Case {
            what: "one call",
            content: "",
            reasoning: "",
            calls: vec![weather()],
        },
        Case {
            what: "content+call",
            content: "Let me check.",
            reasoning: "",
            calls: vec![weather()],
        },
        Case {
            what: "two calls",
            content: "",
            reasoning: "",
            calls: vec![weather(), ("search", json!({"query": "rust", "limit": 5}))],
        },
        Case {
            what: "nested",
            content: "",
            reasoning: "",
            calls: vec![(
                "search",
                json!({"query": "x", "filters": {"tags": ["a", "b"], "exact": true}, "limit": 10}),
            )],
        },
        Case {
            what: "reasoning+call",
            content: "",
            reasoning: "I need the forecast first.",
            calls: vec![weather()],
        },
    ]
}

struct Template {
    name: String,
    tmpl: ChatTemplate,
    analysis: Analysis,
}

fn templates() -> Vec<Template> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = turns::jinja_files(&root.join("templates"));
    let corpus = turns::jinja_files(&root.join("../shared/corpus/llamacpp"));
    if corpus.is_empty() {
        println!("note: no corpus in ../shared/corpus/llamacpp (../shared absent); shipped templates only");
    }
    paths.extend(corpus);
    paths
        .into_iter()
        .filter_map(|p| {
            let (tmpl, analysis) = turns::analyzed(&p)?;
            analysis.tools.as_ref()?;
            let dir = p.parent()?.file_name()?.to_string_lossy().into_owned();
            Some(Template {
                name: format!("{dir}/{}", p.file_stem()?.to_string_lossy()),
                tmpl,
                analysis,
            })
        })
        .collect()
}

/// The Python that runs xgrammar, when `tools/test.sh` (or the caller) set
/// one up; `None` with the reason printed otherwise.
fn engine() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var_os("CHAT_AUTOPARSER_XGRAMMAR_PYTHON")
        .or_else(|| std::env::var_os("CHAT_AUTOPARSER_PYTHON"))
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    let probe = Command::new(&python)
        .arg(root.join("cli/src/xgrammar_check.py"))
        .arg("--probe")
        .output();
    match probe {
        Ok(out) if out.status.success() => {
            println!("engine: {}", String::from_utf8_lossy(&out.stdout).trim());
            Some(python)
        }
        Ok(out) => {
            println!(
                "skipped: xgrammar is not importable by {} ({}); run tools/test.sh",
                python.display(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            None
        }
        Err(e) => {
            println!(
                "skipped: no Python at {} ({e}); run tools/test.sh",
                python.display()
            );
            None
        }
    }
}

/// What a checked text is and what xgrammar must say of it.
struct Check {
    label: String,
    kind: Kind,
    output: String,
    /// The template renders the turn unlike its generation prompt, so the
    /// output was cut where the two part (counted apart).
    cut: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// Auto: must be accepted.
    Auto,
    /// Required: must be accepted.
    Required,
    /// A mutation: must be rejected.
    Mutation,
    /// The legacy form: counted apart.
    Legacy,
}

/// Jobs for the checker: texts grouped by their (identical) tag.
#[derive(Default)]
struct Jobs {
    tags: Vec<Value>,
    texts: Vec<Vec<usize>>,
    index: HashMap<String, usize>,
    checks: Vec<Check>,
}

impl Jobs {
    fn add(&mut self, tag: Value, check: Check) {
        let key = tag.to_string();
        let id = *self.index.entry(key).or_insert_with(|| {
            self.tags.push(tag);
            self.texts.push(Vec::new());
            self.tags.len() - 1
        });
        self.texts[id].push(self.checks.len());
        self.checks.push(check);
    }

    /// Runs the checker; per check, `Ok(accepted)` or the compile error.
    fn run(&self, python: &Path) -> Vec<Result<bool, String>> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        // One file per run: tests run in parallel in one process.
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let input =
            std::env::temp_dir().join(format!("xgrammar-jobs-{}-{n}.jsonl", std::process::id()));
        let mut file = std::fs::File::create(&input).unwrap();
        for (id, tag) in self.tags.iter().enumerate() {
            let texts: Vec<&str> = self.texts[id]
                .iter()
                .map(|&c| self.checks[c].output.as_str())
                .collect();
            let mut job = json!({"id": id, "texts": texts});
            let key = if tag.get("structures").is_some() {
                "legacy"
            } else {
                "tag"
            };
            job[key] = tag.clone();
            writeln!(file, "{job}").unwrap();
        }
        drop(file);
        let out = Command::new(python)
            .arg(root.join("cli/src/xgrammar_check.py"))
            .stdin(Stdio::from(std::fs::File::open(&input).unwrap()))
            .output()
            .expect("the checker runs");
        let _ = std::fs::remove_file(&input);
        assert!(
            out.status.success(),
            "checker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut results = vec![Err("no answer".to_string()); self.checks.len()];
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let answer: Value = serde_json::from_str(line).unwrap();
            let id = answer["id"].as_u64().unwrap() as usize;
            for (i, &check) in self.texts[id].iter().enumerate() {
                results[check] = match answer.get("accepted") {
                    Some(a) => Ok(a[i].as_bool().unwrap_or(false)),
                    None => Err(answer["error"].as_str().unwrap_or("?").to_string()),
                };
            }
        }
        results
    }
}

/// The prompt and the output of one assistant turn with `thinking`, when
/// the template renders it and writes every call, the reasoning and the
/// content.
fn render(t: &Template, case: &Case, thinking: bool) -> Option<(String, String, bool)> {
    let format = t.analysis.tools.as_ref()?;
    let calls: Vec<Value> = case
        .calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            let arguments = if format.input.object_arguments { args.clone() } else { Value::String(args.to_string()) };
            json!({"id": turns::call_id(&t.analysis, name, i), "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let mut turn = json!({"role": "assistant", "tool_calls": calls});
    turn["content"] = match case.content {
        "" if format.input.null_content => Value::Null,
        c => json!(c),
    };
    if !case.reasoning.is_empty() {
        let field = if t.analysis.reasoning.field.is_empty() {
            "reasoning_content"
        } else {
            &t.analysis.reasoning.field
        };
        turn[field] = json!(case.reasoning);
    }
    let user = json!({"role": "user", "content": "What is the weather in Paris?"});
    let mut extra = serde_json::Map::new();
    if thinking {
        extra.insert("reasoning_effort".into(), json!("high"));
    }
    let request = |messages: Vec<Value>, gen: bool| {
        RenderRequest::default()
            .with_messages(template_messages(&t.analysis, &messages))
            .with_tools(Some(tools()))
            .with_add_generation_prompt(gen)
            .with_enable_thinking(Some(thinking))
            .with_extra(extra.clone())
    };
    let prompt = t.tmpl.render(&request(vec![user.clone()], true)).ok()?;
    let full = t.tmpl.render(&request(vec![user, turn], false)).ok()?;
    // A template that renders the last turn unlike its generation prompt
    // (a prefilled `<think>\n\n</think>` it drops from the turn) is cut
    // where the two part, as llama.cpp's harness cuts; the output then
    // continues that common prefix, which becomes the prompt.
    let whole = full.starts_with(prompt.as_str());
    let at = if whole {
        prompt.len()
    } else {
        chat_autoparser::check::turn::common_prefix(&prompt, &full)
    };
    let generation_prompt = prompt;
    let (prompt, rest) = (full[..at].to_string(), &full[at..]);
    let stop = &t.analysis.turn.stop_marker;
    let cut = if stop.is_empty() {
        rest
    } else {
        rest.rfind(stop.as_str()).map_or(rest, |i| &rest[..i])
    };
    let written = case.calls.iter().all(|(name, _)| cut.contains(name))
        && cut.contains(case.reasoning)
        && cut.contains(case.content);
    let owed = match whole {
        false => turns::reasoning_end_owed(&t.analysis, &generation_prompt, cut),
        true => None,
    };
    // Given the end it owes, the output continues the generation prompt.
    let (prompt, output) = match owed {
        Some(end) => (generation_prompt, format!("{end}\n{cut}")),
        None => (prompt, cut.to_owned()),
    };
    written.then_some((prompt, output, !whole))
}

fn protocol(
    t: &Template,
    prompt: &str,
    thinking: bool,
    choice: ToolChoice,
    parallel: bool,
) -> Protocol {
    let options = Options::default()
        .with_tools(tools())
        .with_tool_choice(choice)
        .with_parallel_tool_calls(parallel)
        .with_enable_thinking(Some(thinking))
        .with_prompt(Some(prompt.to_owned()))
        .with_response_schema(None);
    Protocol::new(&t.analysis, &options)
}

fn tag(t: &Template, p: &Protocol) -> Value {
    let st = structural_tag(p).unwrap_or_else(|e| panic!("{}: structural tag: {e}", t.name));
    assert_eq!(
        st,
        structural_tag(p).unwrap(),
        "{}: not deterministic",
        t.name
    );
    // `XGRAMMAR_DUMP=NAME` prints the exports of the templates whose name holds NAME.
    if std::env::var("XGRAMMAR_DUMP").is_ok_and(|n| t.name.contains(&n)) {
        println!("{}: {}", t.name, serde_json::to_string_pretty(&st).unwrap());
    }
    st.structural_tag
}

/// The structural tag loosens the arguments so that the mutation `what`
/// cannot be rejected: any text for the whole arguments (a missing key),
/// or for some values (a mistyped one).
fn loose(p: &Protocol, what: &str) -> bool {
    let whole =
        |w: &String| w.contains("up to the call's end") || w.contains("any string accepted");
    let values = |w: &String| whole(w) || w.contains("accepted as any text");
    let st = structural_tag(p).unwrap();
    match what {
        "missing required argument" => st.warnings.iter().any(whole),
        _ => st.warnings.iter().any(values),
    }
}

/// The template writes no marker before a call's name (`get_weather\n{...}`).
fn unmarked(analysis: &Analysis) -> bool {
    let Some(f) = &analysis.tools else {
        return false;
    };
    let prefix = match &f.name {
        NameSlot::Tagged { prefix, .. } => prefix.trim(),
        _ => "{",
    };
    f.section_start.trim().is_empty() && f.call_start.trim().is_empty() && prefix.is_empty()
}

/// Cases left out: turns the template does not render (or renders without
/// a call, the reasoning or the content), and
/// argument mutations of tags that loosen the arguments.
#[derive(Default)]
struct Skipped {
    unrendered: usize,
    loose: usize,
}

/// Adds every check of one template.
fn add_template(jobs: &mut Jobs, t: &Template, skipped: &mut Skipped) {
    let parallel = t.analysis.tools.as_ref().is_some_and(|f| f.parallel);
    let reasoning = t.analysis.reasoning.mode != ReasoningMode::None;
    for thinking in [false, true] {
        let label = |what: &str| {
            format!(
                "{} [{what}, thinking {}]",
                t.name,
                if thinking { "on" } else { "off" }
            )
        };
        for case in cases() {
            // Two calls need a template that renders them; reasoning needs
            // a block and thinking on.
            let two_calls_ok = case.calls.len() < 2 || parallel;
            let reasoning_ok = case.reasoning.is_empty() || (reasoning && thinking);
            if !(two_calls_ok && reasoning_ok) {
                continue;
            }
            let Some((prompt, out, cut)) = render(t, &case, thinking) else {
                skipped.unrendered += 1;
                if std::env::var_os("XGRAMMAR_SKIPPED").is_some() {
                    println!("  not rendered: {}", label(case.what));
                }
                continue;
            };
            let auto = protocol(t, &prompt, thinking, ToolChoice::Auto, true);
            jobs.add(
                tag(t, &auto),
                Check {
                    label: label(case.what),
                    kind: Kind::Auto,
                    output: out.clone(),
                    cut,
                },
            );
            if case.content.is_empty() {
                let required = protocol(t, &prompt, thinking, ToolChoice::Required, true);
                jobs.add(
                    tag(t, &required),
                    Check {
                        label: label(case.what),
                        kind: Kind::Required,
                        output: out.clone(),
                        cut,
                    },
                );
            }
            if case.calls.len() > 1 {
                let single = protocol(t, &prompt, thinking, ToolChoice::Auto, false);
                jobs.add(
                    tag(t, &single),
                    Check {
                        label: label("second call, parallel off"),
                        kind: Kind::Mutation,
                        output: out.clone(),
                        cut,
                    },
                );
            }
            if case.what == "one call" {
                // A format the legacy form cannot express leaves no structures.
                if let Some(l) = legacy(&auto).ok().filter(|l| !l.structures.is_empty()) {
                    let l = json!({"structures": l.structures, "triggers": l.triggers});
                    jobs.add(
                        l,
                        Check {
                            label: label("legacy"),
                            kind: Kind::Legacy,
                            output: out.clone(),
                            cut,
                        },
                    );
                }
            }
        }
        for (what, calls) in turns::argument_mutations() {
            let case = Case {
                what,
                content: "",
                reasoning: "",
                calls,
            };
            let Some((prompt, out, cut)) = render(t, &case, thinking) else {
                continue;
            };
            let auto = protocol(t, &prompt, thinking, ToolChoice::Auto, true);
            if what != "unknown tool" && loose(&auto, what) {
                skipped.loose += 1;
                continue;
            }
            let required = protocol(t, &prompt, thinking, ToolChoice::Required, true);
            jobs.add(
                tag(t, &required),
                Check {
                    label: label(what),
                    kind: Kind::Mutation,
                    output: out.clone(),
                    cut,
                },
            );
            // A call with no marker before its name is free text to an auto
            // tag when it names no tool: only the required tag can refuse it.
            if !(what == "unknown tool" && unmarked(&t.analysis)) {
                jobs.add(
                    tag(t, &auto),
                    Check {
                        label: label(what),
                        kind: Kind::Mutation,
                        output: out,
                        cut,
                    },
                );
            }
        }
    }
}

#[test]
fn structural_tags_compile_in_xgrammar_and_accept_rendered_outputs() {
    let Some(python) = engine() else { return };
    let templates = templates();
    let mut jobs = Jobs::default();
    let mut skipped = Skipped::default();
    let mut loosened = Vec::new();
    for t in &templates {
        add_template(&mut jobs, t, &mut skipped);
        let p = Protocol::new(&t.analysis, &Options::default().with_tools(tools()));
        if loose(&p, "wrong argument type") {
            loosened.push(t.name.as_str());
        }
    }
    let results = jobs.run(&python);
    // (passed, total) per kind, for outputs cut after the prompt and for
    // outputs cut at the common prefix.
    let mut counts: HashMap<(Kind, bool), (usize, usize)> = HashMap::new();
    let mut misses = Vec::new();
    let mut rows: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (check, result) in jobs.checks.iter().zip(&results) {
        let want = check.kind != Kind::Mutation;
        let name = check.label.split(" [").next().unwrap_or_default();
        let row = rows.entry(name.to_string()).or_default();
        row.1 += 1;
        row.0 += usize::from(matches!(result, Ok(a) if *a == want));
        let entry = counts.entry((check.kind, check.cut)).or_default();
        entry.1 += 1;
        let cut = if check.cut {
            ", cut at the common prefix"
        } else {
            ""
        };
        match result {
            Ok(accepted) if *accepted == want => entry.0 += 1,
            Ok(_) => misses.push(format!(
                "{} {:?}{cut} {}: {:?}",
                check.label,
                check.kind,
                if want { "rejected" } else { "accepted" },
                check.output
            )),
            Err(e) => misses.push(format!(
                "{} {:?}{cut} does not compile: {e}",
                check.label, check.kind
            )),
        }
    }
    let count = |k: Kind, cut: bool| counts.get(&(k, cut)).copied().unwrap_or_default();
    let both = |k: Kind| {
        let (a, b) = (count(k, false), count(k, true));
        format!(
            "{}/{} (+ {}/{} cut at the common prefix)",
            a.0, a.1, b.0, b.1
        )
    };
    println!(
        "xgrammar structural tags: {} templates with tools, {} distinct tags\n  auto: {} accepted\n  required: {} accepted\n  \
         mutations: {} rejected\n  legacy form: {} one-call outputs it can express accepted\n  \
         skipped: {} turns not rendered, {} argument mutations of loosened tags",
        templates.len(),
        jobs.tags.len(),
        both(Kind::Auto),
        both(Kind::Required),
        both(Kind::Mutation),
        both(Kind::Legacy),
        skipped.unrendered,
        skipped.loose
    );
    println!(
        "  arguments loosened (no exact structural-tag form) in {} templates: {}",
        loosened.len(),
        loosened.join(", ")
    );
    for miss in &misses {
        println!("  miss: {miss}");
    }
    let sum = |cuts: &[bool]| {
        let pairs = [Kind::Auto, Kind::Required]
            .into_iter()
            .flat_map(|k| cuts.iter().map(move |&c| count(k, c)));
        pairs.fold((0, 0), |acc, (a, b)| (acc.0 + a, acc.1 + b))
    };
    let (whole, all) = (sum(&[false]), sum(&[false, true]));
    assert!(whole.1 > 0, "no output was checked");
    assert!(
        whole.0 * 100 >= whole.1 * 95,
        "only {}/{} rendered outputs accepted",
        whole.0,
        whole.1
    );
    assert!(
        all.0 * 100 >= all.1 * 95,
        "only {}/{} outputs accepted, the cut ones included",
        all.0,
        all.1
    );
    let (good, checks) = rows.values().fold((0, 0), |(g, c), r| (g + r.0, c + r.1));
    let summary = format!(
        "xgrammar 0.2.8 structural tags: {good} of {checks} checks pass over the shipped and corpus templates \
         (outputs accepted, mutations rejected, cut outputs included; `cargo test --release --test engines xgrammar::`)."
    );
    crate::common::coverage::record_block("engine-xgrammar", &summary, &rows);
    let (m, mc) = (count(Kind::Mutation, false), count(Kind::Mutation, true));
    assert_eq!(m.0 + mc.0, m.1 + mc.1, "mutations accepted");
}

/// The schema feature table (`tests/common/schemas.rs`) as a response
/// format: the structural tag hands the schema to xgrammar's
/// `json_schema`, which must accept every valid answer and reject every
/// invalid one.
#[test]
fn schema_features_in_xgrammar() {
    let Some(python) = engine() else { return };
    let (_, analysis) = crate::common::shipped_template("bare-json");
    let mut jobs = Jobs::default();
    for case in crate::common::schemas::schema_features() {
        let options = Options::default()
            .with_tool_choice(ToolChoice::None)
            .with_response_schema(Some(case.schema.clone()));
        let st = structural_tag(&Protocol::new(&analysis, &options)).unwrap();
        // A pattern xgrammar cannot read as JSON Schema means is dropped
        // with a warning: looser, so its invalid answers are not checked.
        let loosened = st.warnings.iter().any(|w| w.contains("pattern"));
        for (text, valid) in case.answers().filter(|&(_, valid)| valid || !loosened) {
            let kind = if valid { Kind::Auto } else { Kind::Mutation };
            let label = format!("{}: {text}", case.schema);
            let output = text.to_string();
            jobs.add(
                st.structural_tag.clone(),
                Check {
                    label,
                    kind,
                    output,
                    cut: false,
                },
            );
        }
    }
    let results = jobs.run(&python);
    let (mut accepted, mut rejected, mut wrong) = (0, 0, Vec::new());
    for (check, result) in jobs.checks.iter().zip(results) {
        match (check.kind, result) {
            (_, Err(e)) => wrong.push(format!("{}: does not compile: {e}", check.label)),
            (Kind::Auto, Ok(true)) => accepted += 1,
            (Kind::Auto, Ok(false)) => wrong.push(format!("{}: should be accepted", check.label)),
            (_, Ok(false)) => rejected += 1,
            (_, Ok(true)) => wrong.push(format!("{}: should be rejected", check.label)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    println!("schema features in xgrammar: {accepted} valid answers accepted, {rejected} invalid rejected");
}

/// `allowed_tools` (required, `get_time` only) over two `strict` tools, in
/// xgrammar: the allowed call with no arguments is accepted; one with a key
/// its schema does not declare, or a call of the other tool, is not.
#[test]
fn allowed_and_strict_tools_in_xgrammar() {
    use crate::common::request_options::{allowed_tools, call, prepared, tools};
    let Some(python) = engine() else { return };
    let p = prepared(tools(true), allowed_tools("required", &["get_time"]));
    let tag = p.structural_tag().unwrap().structural_tag;
    let cases = [
        (call("get_time", "{}"), true),
        (call("get_time", r#"{"zone": "UTC"}"#), false),
        (call("get_weather", r#"{"city": "Paris"}"#), false),
    ];
    assert_accepts(&python, &tag, &cases, "");
}

/// Asserts that xgrammar compiles `tag` and accepts each output of `cases`
/// exactly where it is marked `true`; `context` heads each failure.
fn assert_accepts(python: &Path, tag: &Value, cases: &[(String, bool)], context: &str) {
    let mut jobs = Jobs::default();
    for (output, accept) in cases {
        let kind = match accept {
            true => Kind::Auto,
            false => Kind::Mutation,
        };
        let check = Check {
            label: output.clone(),
            kind,
            output: output.clone(),
            cut: false,
        };
        jobs.add(tag.clone(), check);
    }
    let results = jobs.run(python);
    for (check, result) in jobs.checks.iter().zip(results) {
        let want = check.kind == Kind::Auto;
        assert_eq!(result, Ok(want), "{context}{:?}\n{tag}", check.label);
    }
}

/// Calls opened once by a section marker and never closed (the section of
/// vLLM's Hermes-2-Pro example): xgrammar refused the whole structural tag
/// ("at least one end string must be non-empty"); now it compiles, with
/// parallel calls on and off, and takes the calls with or without the stop
/// marker after them.
#[test]
fn a_section_with_no_end_marker_compiles_in_xgrammar() {
    use chat_autoparser::TemplateConfig;
    let Some(python) = engine() else { return };
    let source = include_str!("../fixtures/open-section.jinja");
    let analysis = ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let one = "<calls>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
    let two =
        format!("{one}{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Oslo\"}}}}\n");
    for parallel in [true, false] {
        let options = Options::default()
            .with_tools(tools())
            .with_parallel_tool_calls(parallel);
        let tag = structural_tag(&Protocol::new(&analysis, &options))
            .unwrap()
            .structural_tag;
        let cases = [
            (one.to_string(), true),
            (format!("{one}<|end|>"), true),
            (two.clone(), parallel),
        ];
        assert_accepts(&python, &tag, &cases, &format!("parallel {parallel}: "));
    }
}
