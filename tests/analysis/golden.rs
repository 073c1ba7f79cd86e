//! Golden analyses of the shipped templates (`templates/*.jinja`).
//!
//! Each shipped template is the reference example of one format family (see
//! `templates/README.md`). For each one:
//!
//! - `golden_<template>` analyzes it exactly as `chat-autoparser analyze --json`
//!   does and compares the whole [`Analysis`] JSON with
//!   `tests/golden/<template>.json` (as `serde_json::Value`s). A mismatch
//!   prints every differing field as a JSON pointer with both values.
//! - `markers_<template>` spells out, readably, the markers that matter most
//!   for that family, so that a regeneration of the goldens cannot silently
//!   accept a wrong marker.
//!
//! The expected values were decided by reading each template, not by copying
//! the analysis output: a wrong value is fixed in the analysis, never frozen.
//!
//! Regenerating: `UPDATE_GOLDEN=1 cargo test --test analysis golden::` writes the
//! files instead of comparing. Review the diff (`git diff tests/golden`) before
//! committing: the `markers_*` tests still run and still check the key markers.

use std::path::{Path, PathBuf};

use chat_autoparser::analysis::{
    ArgumentsSlot, ComparisonStatus, IdSlot, NameSlot, PromptEffect, ReasoningMode,
    TaggedArguments, ToolClass, ToolFormat,
};
use chat_autoparser::{Analysis, ChatTemplate, TemplateConfig, TemplateSource};
use serde_json::{json, Value};

/// The shipped family templates that have a golden analysis.
const TEMPLATES: [&str; 8] = [
    "hermes-think",
    "bare-json",
    "mistral-tool-calls",
    "qwen-coder-xml",
    "glm-arg-pairs",
    "tag-json-args",
    "python-calls",
    "channel-harmony",
];

/// Shipped templates that are tested elsewhere and need no golden analysis.
/// (`qwen3_5-fixed` has its own fixtures T01–T17 in `tests/rendering/qwen3_5_fixed.rs`.)
const NOT_GOLDEN: [&str; 1] = ["qwen3_5-fixed"];

// ---------------------------------------------------------------------------
// Helpers

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn template_path(name: &str) -> PathBuf {
    root().join("templates").join(format!("{name}.jinja"))
}

fn golden_path(name: &str) -> PathBuf {
    root()
        .join("tests")
        .join("golden")
        .join(format!("{name}.json"))
}

/// Analyzes a shipped template the way `chat-autoparser analyze` does.
fn analyze(name: &str) -> Analysis {
    let path = template_path(name);
    let source = TemplateSource::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let template = ChatTemplate::from_source(&source, &TemplateConfig::default())
        .unwrap_or_else(|e| panic!("{name}: compile: {e}"));
    template
        .analyze()
        .unwrap_or_else(|e| panic!("{name}: analyze: {e}"))
}

fn updating() -> bool {
    std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1")
}

/// Compares (or, with `UPDATE_GOLDEN=1`, writes) the golden analysis of `name`.
fn check_golden(name: &str) {
    let analysis = analyze(name);
    let actual = serde_json::to_value(&analysis).expect("analysis serializes");
    let path = golden_path(name);
    if updating() {
        write_golden(&path, &actual);
        eprintln!("wrote {}", path.display());
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\n(run `UPDATE_GOLDEN=1 cargo test --test analysis golden::` to create it)",
            path.display()
        )
    });
    let golden: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The stored golden is itself a loadable analysis.
    if let Err(e) = serde_json::from_value::<Analysis>(golden.clone()) {
        panic!("{}: not a valid Analysis: {e}", path.display());
    }
    let mut diffs = Vec::new();
    diff_values("", &golden, &actual, &mut diffs);
    if !diffs.is_empty() {
        panic!(
            "analysis of templates/{name}.jinja differs from {} in {} field(s):\n{}\n\
             If the change is intended, regenerate with `UPDATE_GOLDEN=1 cargo test --test analysis golden::` \
             and review `git diff tests/golden`.",
            path.display(),
            diffs.len(),
            diffs.join("\n")
        );
    }
}

fn write_golden(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).expect("create tests/golden");
    let mut text = serde_json::to_string_pretty(value).expect("serializes");
    text.push('\n');
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Collects one readable line per differing leaf, as JSON pointers.
fn diff_values(at: &str, golden: &Value, actual: &Value, out: &mut Vec<String>) {
    match (golden, actual) {
        (Value::Object(g), Value::Object(a)) => {
            for (k, gv) in g {
                let p = format!("{at}/{}", escape_pointer(k));
                match a.get(k) {
                    Some(av) => diff_values(&p, gv, av, out),
                    None => out.push(format!(
                        "  {p}: golden {}, analysis has no such field",
                        show(gv)
                    )),
                }
            }
            for (k, av) in a {
                if !g.contains_key(k) {
                    let p = format!("{at}/{}", escape_pointer(k));
                    out.push(format!("  {p}: new field in the analysis: {}", show(av)));
                }
            }
        }
        (Value::Array(g), Value::Array(a)) if g.len() == a.len() => {
            for (i, (gv, av)) in g.iter().zip(a).enumerate() {
                diff_values(&format!("{at}/{i}"), gv, av, out);
            }
        }
        _ if golden == actual => {}
        _ => out.push(format!(
            "  {}:\n      golden:   {}\n      analysis: {}",
            if at.is_empty() { "/" } else { at },
            show(golden),
            show(actual)
        )),
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn show(v: &Value) -> String {
    serde_json::to_string(v).expect("serializes")
}

fn tools(a: &Analysis) -> &ToolFormat {
    a.tools.as_ref().expect("tool calls should be detected")
}

fn tagged_name(t: &ToolFormat) -> (&str, &str) {
    match &t.name {
        NameSlot::Tagged { prefix, suffix } => (prefix, suffix),
        other => panic!("expected a tagged name slot, got {other:?}"),
    }
}

fn json_field(path: &[&str]) -> NameSlot {
    NameSlot::JsonField {
        path: path.iter().map(|s| s.to_string()).collect(),
    }
}

fn json_args(path: &[&str]) -> ArgumentsSlot {
    ArgumentsSlot::Json {
        path: path.iter().map(|s| s.to_string()).collect(),
        as_string: false,
        before_name: false,
    }
}

fn tagged_args(t: &ToolFormat) -> &TaggedArguments {
    match &t.arguments {
        ArgumentsSlot::Tagged(args) => args,
        other => panic!("expected tagged arguments, got {other:?}"),
    }
}

fn status<'a>(a: &'a Analysis, name: &str) -> &'a ComparisonStatus {
    &a.comparisons
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no comparison {name}"))
        .status
}

fn no_reasoning(a: &Analysis) {
    assert_eq!(a.reasoning.mode, ReasoningMode::None);
    assert_eq!(a.reasoning.start, "");
    assert_eq!(a.reasoning.end, "");
}

fn no_content_wrapper(a: &Analysis) {
    assert_eq!(a.content.start, "");
    assert_eq!(a.content.end, "");
}

fn preserved(a: &Analysis) -> Vec<&str> {
    a.preserved_tokens.iter().map(String::as_str).collect()
}

// ---------------------------------------------------------------------------
// Bookkeeping

#[test]
fn every_shipped_template_has_a_golden() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("templates"))
        .expect("templates/")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "jinja")
                .then(|| p.file_stem()?.to_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    names.sort();
    for name in &names {
        assert!(
            TEMPLATES.contains(&name.as_str()) || NOT_GOLDEN.contains(&name.as_str()),
            "templates/{name}.jinja has no golden analysis: add it to TEMPLATES in tests/analysis/golden.rs"
        );
    }
    for name in TEMPLATES {
        assert!(
            names.iter().any(|n| n == name),
            "templates/{name}.jinja is missing"
        );
        if !updating() {
            assert!(
                golden_path(name).exists(),
                "{} is missing",
                golden_path(name).display()
            );
        }
    }
}

#[test]
fn golden_diff_reports_each_field() {
    let golden = json!({"a": {"b": "x", "c": [1, 2]}, "d": 1});
    let actual = json!({"a": {"b": "y", "c": [1, 3]}, "e": 2});
    let mut out = Vec::new();
    diff_values("", &golden, &actual, &mut out);
    let text = out.join("\n");
    assert_eq!(out.len(), 4, "{text}");
    for pointer in ["/a/b", "/a/c/1", "/d", "/e"] {
        assert!(text.contains(pointer), "{pointer} missing from:\n{text}");
    }
}

// ---------------------------------------------------------------------------
// hermes-think: ChatML, Hermes JSON calls in <tool_call>, <think> reasoning.

#[test]
fn golden_hermes_think() {
    check_golden("hermes-think");
}

#[test]
fn markers_hermes_think() {
    let a = analyze("hermes-think");
    assert_eq!(a.reasoning.mode, ReasoningMode::Tag);
    assert_eq!(a.reasoning.start, "<think>");
    assert_eq!(a.reasoning.end, "</think>");
    assert_eq!(a.reasoning.default_prompt, PromptEffect::None);
    assert_eq!(a.reasoning.thinking_on, Some(PromptEffect::None));
    assert_eq!(a.reasoning.thinking_off, Some(PromptEffect::Closes));
    assert!(!a.reasoning.only_with_tool_calls);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::JsonNative);
    assert_eq!((t.section_start.as_str(), t.section_end.as_str()), ("", ""));
    assert_eq!(t.call_start, "<tool_call>\n");
    assert_eq!(t.call_end, "\n</tool_call>");
    assert_eq!(t.call_separator, "\n");
    assert!(t.parallel);
    assert_eq!(t.name, json_field(&["name"]));
    assert_eq!(t.arguments, json_args(&["arguments"]));
    assert_eq!(t.id, None);
    assert!(t.content_with_calls);
    assert_eq!(a.turn.end_of_turn, "<|im_end|>\n");
    assert_eq!(a.turn.stop_marker, "<|im_end|>");
    assert_eq!(a.turn.generation_prompt.default, "<|im_start|>assistant\n");
    assert_eq!(
        a.turn.generation_prompt.thinking_on.as_deref(),
        Some("<|im_start|>assistant\n")
    );
    assert_eq!(
        a.turn.generation_prompt.thinking_off.as_deref(),
        Some("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    );
    assert_eq!(
        preserved(&a),
        [
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<|im_end|>"
        ]
    );
}

// ---------------------------------------------------------------------------
// bare-json: Llama-3 headers, one bare {"name", "parameters"} object per turn.

#[test]
fn golden_bare_json() {
    check_golden("bare-json");
}

#[test]
fn markers_bare_json() {
    let a = analyze("bare-json");
    no_reasoning(&a);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::JsonNative);
    for marker in [
        &t.section_start,
        &t.section_end,
        &t.call_start,
        &t.call_end,
        &t.call_separator,
    ] {
        assert_eq!(marker, "", "a bare JSON call has no markers");
    }
    assert!(!t.parallel, "two calls raise");
    assert!(
        matches!(status(&a, "T2"), ComparisonStatus::Unsupported(why) if why.contains("at most one function"))
    );
    assert_eq!(t.name, json_field(&["name"]));
    assert_eq!(t.arguments, json_args(&["parameters"]));
    assert_eq!(t.id, None);
    assert!(
        !t.content_with_calls,
        "content is not rendered on a tool-call turn"
    );
    assert_eq!(a.turn.end_of_turn, "<|eot_id|>");
    assert_eq!(a.turn.stop_marker, "<|eot_id|>");
    assert_eq!(
        a.turn.generation_prompt.default,
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(preserved(&a), ["<|eot_id|>"]);
}

// ---------------------------------------------------------------------------
// mistral-tool-calls: [INST] turns, [TOOL_CALLS][...] array with ids.

#[test]
fn golden_mistral_tool_calls() {
    check_golden("mistral-tool-calls");
}

#[test]
fn markers_mistral_tool_calls() {
    let a = analyze("mistral-tool-calls");
    no_reasoning(&a);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::JsonNative);
    assert_eq!(t.section_start, "[TOOL_CALLS][");
    assert_eq!(t.section_end, "]");
    assert_eq!((t.call_start.as_str(), t.call_end.as_str()), ("", ""));
    assert_eq!(t.call_separator, ", ");
    assert!(t.parallel);
    assert_eq!(t.name, json_field(&["name"]));
    assert_eq!(t.arguments, json_args(&["arguments"]));
    assert_eq!(
        t.id,
        Some(IdSlot::JsonField {
            path: vec!["id".into()],
            before_name: false
        })
    );
    assert!(t.content_with_calls);
    assert_eq!(a.turn.end_of_turn, "</s>");
    assert_eq!(a.turn.stop_marker, "</s>");
    assert_eq!(
        a.turn.generation_prompt.default, "",
        "[/INST] already opens the assistant turn"
    );
    assert_eq!(preserved(&a), ["[TOOL_CALLS]", "</s>"]);
}

// ---------------------------------------------------------------------------
// qwen-coder-xml: ChatML, <function=NAME> with <parameter=K> V </parameter>.

#[test]
fn golden_qwen_coder_xml() {
    check_golden("qwen-coder-xml");
}

#[test]
fn markers_qwen_coder_xml() {
    let a = analyze("qwen-coder-xml");
    no_reasoning(&a);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::TagTagged);
    assert_eq!((t.section_start.as_str(), t.section_end.as_str()), ("", ""));
    assert_eq!(t.call_start, "<tool_call>\n");
    assert!(t.call_end.ends_with("</tool_call>"), "{:?}", t.call_end);
    assert_eq!(t.call_separator, "\n");
    assert!(t.parallel);
    assert_eq!(tagged_name(t), ("<function=", ">\n"));
    let args = tagged_args(t);
    assert_eq!(args.name_prefix, "<parameter=");
    assert_eq!(args.name_suffix, ">\n");
    assert_eq!(args.value_prefix, "");
    assert_eq!(
        args.typed_value_prefix, None,
        "integers are written like strings, only unquoted"
    );
    assert_eq!(args.value_suffix, "\n</parameter>\n");
    assert_eq!(args.separator, "");
    assert!(args.raw_strings);
    assert_eq!(t.id, None);
    assert_eq!(a.turn.end_of_turn, "<|im_end|>\n");
    assert_eq!(a.turn.stop_marker, "<|im_end|>");
    assert_eq!(a.turn.generation_prompt.default, "<|im_start|>assistant\n");
    for token in [
        "<tool_call>",
        "</function>",
        "</parameter>",
        "</tool_call>",
        "<|im_end|>",
    ] {
        assert!(
            a.preserved_tokens.iter().any(|t| t == token),
            "{token} not preserved: {:?}",
            a.preserved_tokens
        );
    }
}

#[test]
fn qwen_coder_xml_function_close_is_arguments_end() {
    let a = analyze("qwen-coder-xml");
    let t = tools(&a);
    assert_eq!(tagged_args(t).end, "</function>\n");
    assert_eq!(t.call_end, "</tool_call>");
}

// ---------------------------------------------------------------------------
// glm-arg-pairs: GLM role tokens, <think>, <tool_call>NAME <arg_key>/<arg_value>.

#[test]
fn golden_glm_arg_pairs() {
    check_golden("glm-arg-pairs");
}

#[test]
fn markers_glm_arg_pairs() {
    let a = analyze("glm-arg-pairs");
    assert_eq!(a.reasoning.mode, ReasoningMode::Tag);
    assert_eq!(a.reasoning.start, "<think>");
    assert_eq!(a.reasoning.end, "</think>");
    assert_eq!(a.reasoning.default_prompt, PromptEffect::None);
    assert_eq!(a.reasoning.thinking_off, Some(PromptEffect::Closes));
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::TagTagged);
    assert_eq!((t.section_start.as_str(), t.section_end.as_str()), ("", ""));
    assert_eq!(t.call_start, "<tool_call>");
    assert_eq!(t.call_end, "</tool_call>");
    assert_eq!(t.call_separator, "\n");
    assert!(t.parallel);
    assert_eq!(
        tagged_name(t),
        ("", "\n"),
        "the name follows <tool_call> directly"
    );
    let args = tagged_args(t);
    assert_eq!(args.name_prefix, "<arg_key>");
    assert_eq!(args.name_suffix, "</arg_key>\n");
    assert_eq!(args.value_prefix, "<arg_value>");
    assert_eq!(args.typed_value_prefix, None);
    assert_eq!(args.value_suffix, "</arg_value>\n");
    assert_eq!(args.separator, "");
    assert_eq!(args.end, "");
    assert!(args.raw_strings);
    assert_eq!(a.turn.end_of_turn, "", "the next role token ends a turn");
    assert_eq!(a.turn.generation_prompt.default, "<|assistant|>\n");
    assert_eq!(
        a.turn.generation_prompt.thinking_off.as_deref(),
        Some("<|assistant|>\n<think></think>\n")
    );
    assert_eq!(
        preserved(&a),
        [
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>"
        ]
    );
}

// ---------------------------------------------------------------------------
// tag-json-args: Llama-3 headers, <function=NAME>{json}</function> per call.

#[test]
fn golden_tag_json_args() {
    check_golden("tag-json-args");
}

#[test]
fn markers_tag_json_args() {
    let a = analyze("tag-json-args");
    no_reasoning(&a);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::TagJson);
    assert_eq!((t.section_start.as_str(), t.section_end.as_str()), ("", ""));
    assert_eq!(t.call_start, "");
    assert_eq!(tagged_name(t), ("<function=", ">"));
    assert_eq!(
        t.arguments,
        json_args(&[]),
        "raw JSON object right after the name's tag"
    );
    assert_eq!(t.call_end, "</function>");
    assert_eq!(t.call_separator, "", "calls are concatenated");
    assert!(t.parallel);
    assert!(t.content_with_calls);
    assert_eq!(t.id, None);
    assert_eq!(a.turn.end_of_turn, "<|eot_id|>");
    assert_eq!(
        a.turn.generation_prompt.default,
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    );
}

// ---------------------------------------------------------------------------
// python-calls: ChatML, <|tool_call_start|>[f(k="v"), g()]<|tool_call_end|>.

#[test]
fn golden_python_calls() {
    check_golden("python-calls");
}

#[test]
fn markers_python_calls() {
    let a = analyze("python-calls");
    no_reasoning(&a);
    no_content_wrapper(&a);
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::PythonCall);
    assert_eq!(t.section_start, "<|tool_call_start|>[");
    assert_eq!(t.section_end, "]<|tool_call_end|>");
    assert_eq!((t.call_start.as_str(), t.call_end.as_str()), ("", ""));
    assert_eq!(t.call_separator, ", ");
    assert!(t.parallel);
    assert_eq!(tagged_name(t), ("", "("));
    assert_eq!(
        t.arguments,
        ArgumentsSlot::Python {
            raw_strings: false,
            bare_strings: false
        }
    );
    assert_eq!(t.id, None);
    assert!(t.content_with_calls);
    assert_eq!(a.turn.end_of_turn, "<|im_end|>\n");
    assert_eq!(a.turn.generation_prompt.default, "<|im_start|>assistant\n");
    assert_eq!(
        preserved(&a),
        ["<|tool_call_start|>", "<|tool_call_end|>", "<|im_end|>"]
    );
}

// ---------------------------------------------------------------------------
// channel-harmony: gpt-oss-like channels (analysis / final / commentary).

#[test]
fn golden_channel_harmony() {
    check_golden("channel-harmony");
}

#[test]
fn markers_channel_harmony() {
    let a = analyze("channel-harmony");
    assert_eq!(a.reasoning.mode, ReasoningMode::Tag);
    assert!(
        a.reasoning.start.contains("<|channel|>analysis<|message|>"),
        "{:?}",
        a.reasoning.start
    );
    assert_eq!(a.reasoning.start, "<|channel|>analysis<|message|>");
    // The analysis message ends with <|end|>; the next message's header
    // (<|start|>assistant) follows before the final or commentary channel.
    assert_eq!(a.reasoning.end, "<|end|><|start|>assistant");
    assert_eq!(a.reasoning.default_prompt, PromptEffect::None);
    assert!(
        a.content.start.contains("<|channel|>final<|message|>"),
        "{:?}",
        a.content.start
    );
    assert_eq!(a.content.start, "<|channel|>final<|message|>");
    assert_eq!(
        a.content.end, "",
        "<|end|> is the end of turn, not also a content wrapper"
    );
    let t = tools(&a);
    assert_eq!(t.class, ToolClass::TagJson);
    assert_eq!((t.section_start.as_str(), t.section_end.as_str()), ("", ""));
    // The name sits inside the call header: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
    let (prefix, suffix) = tagged_name(t);
    assert_eq!(
        format!("{}{prefix}", t.call_start),
        "<|channel|>commentary to=functions."
    );
    assert_eq!(suffix, " <|constrain|>json<|message|>");
    assert_eq!(t.arguments, json_args(&[]));
    assert_eq!(t.call_end, "<|call|>");
    assert_eq!(t.call_separator, "<|start|>assistant");
    assert!(t.parallel);
    assert_eq!(t.id, None);
    assert_eq!(a.turn.end_of_turn, "<|end|>");
    assert_eq!(a.turn.stop_marker, "<|end|>");
    assert_eq!(a.turn.generation_prompt.default, "<|start|>assistant");
    for token in [
        "<|channel|>",
        "<|message|>",
        "<|end|>",
        "<|start|>",
        "<|call|>",
        "<|constrain|>",
    ] {
        assert!(
            a.preserved_tokens.iter().any(|t| t == token),
            "{token} not preserved: {:?}",
            a.preserved_tokens
        );
    }
}
