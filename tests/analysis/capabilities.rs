//! `ChatTemplate::capabilities` against hand-checked expectations.
//!
//! Each expectation was checked by reading the template and its renders:
//! - `hermes-think`, `qwen3_5-fixed`: every capability, thinking through
//!   `enable_thinking`; the shipped family template keeps historical reasoning,
//!   the fixed Qwen3.5 drops it (its header's rules);
//! - `bare-json`: two calls raise, so no parallel calls; no typed parts;
//! - corpus `google-gemma-2-2b-it`: raises on a system message, has no tools
//!   branch and renders no tool calls;
//! - corpus `Qwen3.5-4B`: calls need object arguments (it iterates
//!   `arguments|items`), reasoning is dropped before the last user query;
//! - corpus `meta-llama-Llama-3.1-8B-Instruct`: one call per turn only.
//!
//! Corpus cases skip with a message when `../shared` is absent.

use std::path::{Path, PathBuf};

use chat_autoparser::template::{Capabilities, HistoryReasoning};
use chat_autoparser::{ChatTemplate, TemplateConfig, TemplateSource};

fn load(path: &Path) -> ChatTemplate {
    let source = TemplateSource::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ChatTemplate::from_source(&source, &TemplateConfig::default()).expect("compiles")
}

fn shipped(name: &str) -> Capabilities {
    load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("templates")
            .join(format!("{name}.jinja")),
    )
    .capabilities()
}

fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: no template corpus at {} (../shared is absent)",
            dir.display()
        );
        None
    }
}

/// All capabilities true, with the given toggle and history rule.
fn full(toggle: Option<&str>, history: HistoryReasoning) -> Capabilities {
    Capabilities {
        renders: true,
        system_role: true,
        tools: true,
        tool_calls: true,
        tool_responses: true,
        parallel_calls: true,
        thinking_toggle: toggle.map(str::to_owned),
        typed_content: true,
        object_arguments: true,
        string_arguments: true,
        flat_calls: false,
        null_content: true,
        history_reasoning: history,
        assumed_empty: vec![],
    }
}

#[test]
fn qwen3_5_fixed_has_every_capability() {
    assert_eq!(
        shipped("qwen3_5-fixed"),
        full(Some("enable_thinking"), HistoryReasoning::Dropped)
    );
}

#[test]
fn hermes_think_keeps_reasoning_and_reads_no_parts() {
    let expected = Capabilities {
        typed_content: false,
        ..full(Some("enable_thinking"), HistoryReasoning::Kept)
    };
    assert_eq!(shipped("hermes-think"), expected);
}

#[test]
fn bare_json_refuses_parallel_calls() {
    let expected = Capabilities {
        parallel_calls: false,
        typed_content: false,
        ..full(None, HistoryReasoning::NotRendered)
    };
    assert_eq!(shipped("bare-json"), expected);
}

#[test]
fn python_calls_need_object_arguments() {
    let caps = shipped("python-calls");
    assert!(caps.object_arguments && !caps.string_arguments, "{caps:?}");
}

#[test]
fn gemma2_has_no_system_role_and_no_tools() {
    let Some(dir) = corpus_dir() else { return };
    let caps = load(&dir.join("google-gemma-2-2b-it.jinja")).capabilities();
    let expected = Capabilities {
        renders: true,
        tool_responses: true, // a tool message renders as an ordinary turn
        ..Capabilities::default()
    };
    assert_eq!(caps, expected);
}

#[test]
fn corpus_qwen3_5_wants_object_arguments_and_drops_history() {
    let Some(dir) = corpus_dir() else { return };
    let caps = load(&dir.join("Qwen3.5-4B.jinja")).capabilities();
    let expected = Capabilities {
        string_arguments: false,
        ..full(Some("enable_thinking"), HistoryReasoning::Dropped)
    };
    assert_eq!(caps, expected);
}

#[test]
fn llama_3_1_renders_one_call_per_turn() {
    let Some(dir) = corpus_dir() else { return };
    let caps = load(&dir.join("meta-llama-Llama-3.1-8B-Instruct.jinja")).capabilities();
    let expected = Capabilities {
        parallel_calls: false,
        typed_content: false,
        string_arguments: false,
        ..full(None, HistoryReasoning::NotRendered)
    };
    assert_eq!(caps, expected);
}

#[test]
fn capabilities_serialize() {
    let text = serde_json::to_string(&shipped("qwen3_5-fixed")).unwrap();
    assert!(
        text.contains("\"thinking_toggle\":\"enable_thinking\""),
        "{text}"
    );
    assert!(text.contains("\"history_reasoning\":\"dropped\""), "{text}");
}
