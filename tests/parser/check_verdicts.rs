//! `check`'s verdict against the round-trip tier (issue 29's target): over
//! every corpus template (`../shared/corpus/llamacpp/*.jinja`, skipped with
//! a message when absent) and the shipped `templates/*.jinja`, a template
//! `check` calls `works` must pass the round-trip tier's own cases
//! (`common/roundtrip.rs`, rendered and compared by that tier's code, not
//! `check`'s): each prefix-renderable case the template writes whole must
//! parse back (or, where the template writes the content inside its
//! reasoning block, parse back with it as reasoning, as the round-trip tier
//! counts it). A template that is not `works` must say why (a warning), and
//! no template may be `unsupported` without a fatal warning. Prints the
//! verdict counts.

use std::collections::BTreeMap;

use chat_autoparser::{Chat, ChatTemplate, TemplateConfig, Verdict};

use chat_autoparser::check::turn::content_inside_reasoning;

use crate::common::roundtrip::{cases, compare, crate_dir, render_case, Case};
use crate::common::turns::jinja_files;

/// Why a `works` template fails a round-trip case, if it does.
fn round_trip_failures(tmpl: &ChatTemplate, chat: &Chat) -> Vec<String> {
    let analysis = chat.analysis();
    let mut failures = Vec::new();
    for case in cases(analysis) {
        let Ok(r) = render_case(tmpl, analysis, &case) else {
            continue; // the template refuses the case
        };
        let written = [case.content, case.reasoning]
            .iter()
            .all(|t| r.output.contains(t.trim()))
            && case.calls.iter().all(|(name, _)| r.output.contains(name));
        if !r.prefix_renderable || !written {
            continue; // counted apart by the round-trip tier too
        }
        let parser = match analysis.parser(&r.config) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: no parser: {e}", case.name));
                continue;
            }
        };
        let parsed = parser.parse(&r.output);
        if let Err(why) = compare(&parsed, &case) {
            // Content the template writes inside its reasoning block is
            // reasoning to any parser: the round-trip tier counts it apart.
            let inside = content_inside_reasoning(analysis, &r.prompt, &r.output, case.content);
            let as_reasoning = Case {
                content: "",
                reasoning: case.content,
                ..case.clone()
            };
            if !inside || compare(&parsed, &as_reasoning).is_err() {
                failures.push(format!("{}: {why}", case.name));
            }
        }
    }
    failures
}

#[test]
fn no_template_works_while_its_round_trip_fails() {
    let corpus = crate_dir().join("../shared/corpus/llamacpp");
    let mut files = jinja_files(&crate_dir().join("templates"));
    let corpus_files = jinja_files(&corpus);
    if corpus_files.is_empty() {
        println!("skipped the corpus: {} is absent", corpus.display());
    }
    files.extend(corpus_files);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for path in &files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(path).unwrap();
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
            continue;
        };
        let Ok(chat) = Chat::new(ChatTemplate::new(&source, &TemplateConfig::default()).unwrap())
        else {
            continue;
        };
        let report = chat.check();
        *counts.entry(report.verdict.as_str()).or_default() += 1;
        match report.verdict {
            Verdict::Works => {
                assert!(report.warnings.is_empty(), "{stem}: works with warnings");
                for failure in round_trip_failures(&tmpl, &chat) {
                    wrong.push(format!("{stem} works but {failure}"));
                }
            }
            Verdict::Unsupported => {
                assert!(
                    report.warnings.iter().any(|w| w.fatal),
                    "{stem}: unsupported without a fatal warning"
                )
            }
            _ => assert!(
                !report.warnings.is_empty(),
                "{stem}: warnings without a warning"
            ),
        }
    }
    println!("check verdicts over {} templates: {counts:?}", files.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        counts.values().sum::<usize>() >= files.len() - 2,
        "most templates analyse"
    );
}

fn corpus_check(name: &str) -> Option<chat_autoparser::CheckReport> {
    let path = crate_dir().join(format!("../shared/corpus/llamacpp/{name}.jinja"));
    let Ok(source) = std::fs::read_to_string(&path) else {
        println!("skipped: {} is absent", path.display());
        return None;
    };
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    Some(Chat::new(template).unwrap().check())
}

/// The probe of the default shape called `name`.
fn default_probe<'r>(
    report: &'r chat_autoparser::CheckReport,
    name: &str,
) -> &'r chat_autoparser::check::ProbeReport {
    report.shapes[0]
        .probes
        .iter()
        .find(|p| p.name == name)
        .unwrap()
}

/// The warning whose text starts with `prefix`.
fn warning_starting<'r>(report: &'r chat_autoparser::CheckReport, prefix: &str) -> &'r str {
    let found = report.warnings.iter().find(|w| w.what.starts_with(prefix));
    &found.unwrap().what
}

/// MiniMax-M3 renders a `null` inside an object as nothing (`{"b": null}`
/// is written as an empty `<item></item>`, as `""` is): its tricky-args
/// probe parses back to `""`, which the template renders to the same bytes.
/// `check` says the template cannot write the difference, not that the
/// parser misread it.
#[test]
fn a_difference_the_template_cannot_write_is_named_as_the_templates() {
    let Some(report) = corpus_check("MiniMax-M3") else {
        return;
    };
    let tricky = default_probe(&report, "tricky-args");
    assert!(tricky.renders_alike, "{tricky:?}");
    let arguments = &tricky.parsed.as_ref().unwrap().tool_calls[0]
        .function
        .arguments;
    assert!(arguments.contains(r#""a":[1,2.5,""]"#), "{arguments}");
    let warning = warning_starting(&report, "default/tricky-args");
    assert!(
        warning.ends_with("no parser can tell them apart"),
        "{warning}"
    );
    // A probe the parser misreads is still the parser's: markers in a
    // string render differently from what they parse back as.
    let markers = default_probe(&report, "markers-in-args");
    assert!(markers.parse_error.is_some() && !markers.renders_alike);
}

/// Nemotron-Nano-v2's prompt opens `<think>` and its template writes a turn
/// without reasoning as the content alone, so a probe's output is the block's
/// end and then the render. An end marker inside a call's string argument
/// closes nothing: the markers-in-args output still gets the end in front,
/// and parses back.
#[test]
fn an_end_marker_inside_an_argument_does_not_close_the_prompts_block() {
    let Some(report) = corpus_check("NVIDIA-Nemotron-Nano-v2") else {
        return;
    };
    let markers = default_probe(&report, "markers-in-args");
    let output = markers.output.as_deref().unwrap();
    assert!(output.starts_with("</think><TOOLCALL>[{"), "{output}");
    assert!(
        output.contains("markers </think> and <TOOLCALL>[ here"),
        "{output}"
    );
    assert_eq!(markers.parse_error, None);
    assert_eq!(report.verdict, Verdict::Works, "{:?}", report.warnings);
}

/// firefunction-v2 concatenates the caller's `functions` and `datetime`,
/// which it does not default: the probes render them empty, as a server's
/// prompt does (`Analysis::assumed_empty`), so they run and parse back.
#[test]
fn probes_render_the_variables_a_server_renders_empty() {
    let Some(report) = corpus_check("fireworks-ai-llama-3-firefunction-v2") else {
        return;
    };
    let default = &report.shapes[0];
    assert!(!default.probes.is_empty());
    assert!(
        default.probes.iter().all(|p| p.passed()),
        "{:?}",
        default.probes
    );
    assert_eq!(report.verdict, Verdict::Works, "{:?}", report.warnings);
}

/// Command R+'s tool block reads a description of every parameter, which
/// the probe tools do not all have (nor do many servers' tools): no probe
/// renders, and `check` says so rather than calling it working.
#[test]
fn a_template_that_refuses_every_probe_is_not_called_working() {
    let Some(report) = corpus_check("CohereForAI-c4ai-command-r-plus-tool_use") else {
        return;
    };
    assert!(report.shapes[0].probes.iter().all(|p| p.skipped.is_some()));
    let warning = warning_starting(&report, "default: no probe renders");
    assert!(
        warning.contains("the template refuses the turn"),
        "{warning}"
    );
    assert_ne!(report.verdict, Verdict::Works);
}

/// A template that writes each call's id where its name goes (Kimi-K2.5's
/// shape: `<|tool_call_begin|>{{ tool_call['id'] }}<|tool_call_argument_begin|>`)
/// is probed with ids that name the function (`functions.get_weather:0`),
/// as its analysis found; with `call00000` ids no call probe wrote its
/// calls and `check` called the template working on its no-call probes
/// alone.
#[test]
fn a_template_that_writes_ids_for_names_is_probed_with_named_ids() {
    let source = concat!(
        "{%- if tools -%}<|system|>{{ tools | tojson }}<|im_end|>{%- endif -%}",
        "{%- for m in messages -%}<|{{ m.role }}|>{{ m.content or '' }}",
        "{%- if m.tool_calls -%}<|tool_calls_section_begin|>",
        "{%- for c in m.tool_calls -%}<|tool_call_begin|>{{ c.id }}<|tool_call_argument_begin|>",
        "{{ c.function.arguments | tojson }}<|tool_call_end|>{%- endfor -%}",
        "<|tool_calls_section_end|>{%- endif -%}<|im_end|>",
        "{%- endfor -%}{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}",
    );
    let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    let chat = Chat::new(template).unwrap();
    let tools = chat.analysis().tools.as_ref().expect("calls");
    assert!(tools.input.named_ids, "{tools:?}");
    let report = chat.check();
    let one_call = default_probe(&report, "one-call");
    assert_eq!(one_call.skipped, None, "{one_call:?}");
    assert_eq!(one_call.parse_error, None, "{one_call:?}");
    assert!(one_call.stream_failures.is_empty(), "{one_call:?}");
    assert_eq!(report.verdict, Verdict::Works, "{:?}", report.warnings);
}
