//! The parser's grammars, pinned: for every shipped template (and every
//! corpus template, when `../shared` is present) under a fixed set of
//! request shapes, a hash of what a build makes from the protocol — the
//! PEG grammar before it is compiled, and the parts of the parser read
//! beside it (nested notations, the start, the prompt's prefixes, the
//! channel state).
//!
//! What it is for: issue 30 moves the generator from the protocol's format
//! types to the output grammar (`docs/parser-from-outline.md`). A step of
//! that move is right when every hash stays the same, which is a stronger
//! check than comparing parses: the grammar is the same expression, so it
//! reads every output the same way. A step that means to change a grammar
//! regenerates the file and says why in its commit.
//!
//! Each request's prompt is the template's render of one user message with
//! its generation prompt (`ChatTemplate::render`), as the protocol takes it.
//!
//! Regenerating: `UPDATE_GOLDEN=1 cargo test --lib parser::grammar_golden`.
//! The file holds one line per template: its name, then one 8-hex-digit
//! hash per shape of [`shapes`], in order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::policy::{CallsInReasoning, ForeignMarkers, UnknownTool};
use super::prefill::{Prefill, PrefillPart};
use super::{Build, OutlineParts, ParserConfig, Policy, ReasoningFormat};
use crate::protocol::{Options, Protocol, ToolChoice};
use crate::template::{ChatTemplate, RenderRequest, TemplateConfig};

/// One request shape: its label (in failure messages), what the model may
/// write, and how the parser reports it.
struct Shape {
    label: String,
    options: Options,
    config: ParserConfig,
}

fn tools() -> Vec<Value> {
    let tool = |name: &str, props: Value| {
        json!({"type": "function", "function": {"name": name,
            "description": "d", "parameters": {"type": "object", "properties": props}}})
    };
    vec![
        tool("get_weather", json!({"city": {"type": "string"}})),
        tool(
            "lookup_id",
            json!({"id": {"type": "integer"}, "tags": {"type": "array"}}),
        ),
    ]
}

/// A policy that reads what the presets do not: any name, calls in
/// reasoning, foreign markers as text.
fn mixed_policy() -> Policy {
    Policy::default()
        .with_unknown_tool(UnknownTool::Call)
        .with_calls_in_reasoning(CallsInReasoning::Both)
        .with_foreign_markers(ForeignMarkers::Text)
}

/// The shapes, in the order of each line's hashes. Appending a shape
/// needs a regeneration; reordering breaks every line. Each request's
/// prompt is the template's render of one user message (see [`prompt`]).
fn shapes() -> Vec<Shape> {
    let thinking = [(None, "default"), (Some(true), "on"), (Some(false), "off")];
    let policies = [
        (Policy::default(), "lossless"),
        (Policy::compatible(), "compatible"),
        (mixed_policy(), "mixed"),
    ];
    let mut shapes = Vec::new();
    let mut push = |label: String, options: Options, config: ParserConfig| {
        shapes.push(Shape {
            label,
            options,
            config,
        })
    };
    let config = |policy: Policy| ParserConfig::default().with_policy(policy);
    for (policy, p) in &policies[..2] {
        for (think, t) in thinking {
            let options = Options {
                enable_thinking: think,
                ..Options::default()
            };
            push(
                format!("no tools/{p}/thinking {t}"),
                options,
                config(*policy),
            );
        }
    }
    let choices = [
        (ToolChoice::Auto, "auto"),
        (ToolChoice::Required, "required"),
        (ToolChoice::Function("get_weather".into()), "named"),
        (ToolChoice::None, "none"),
    ];
    for (choice, c) in &choices {
        for (policy, p) in &policies {
            for (think, t) in thinking {
                let options = Options {
                    enable_thinking: think,
                    ..Options::default()
                        .with_tools(tools())
                        .with_tool_choice(choice.clone())
                };
                push(format!("{c}/{p}/thinking {t}"), options, config(*policy));
            }
        }
    }
    let auto = || Options::default().with_tools(tools());
    let lossless = ParserConfig::default;
    push(
        "inline reasoning".into(),
        auto(),
        lossless().with_reasoning(ReasoningFormat::Inline),
    );
    push(
        "response schema".into(),
        auto().with_response_schema(Some(json!({"type": "object"}))),
        lossless(),
    );
    push(
        "one call".into(),
        auto().with_parallel_tool_calls(false),
        lossless(),
    );
    push(
        "special tokens".into(),
        auto(),
        lossless().with_special_tokens(
            [
                "<tool_call>",
                "</tool_call>",
                "<think>",
                "</think>",
                "[TOOL_CALLS]",
                "<|channel|>",
            ]
            .map(String::from)
            .to_vec(),
        ),
    );
    let prefill = Prefill {
        content: String::new(),
        reasoning: "Let me".into(),
        part: PrefillPart::Reasoning,
    };
    push(
        "prefill in reasoning".into(),
        auto(),
        lossless().with_prefill(prefill),
    );
    shapes
}

/// The prompt of one user message under `options`, as the template renders
/// it with its generation prompt (empty when it refuses).
fn prompt(template: &ChatTemplate, options: &Options) -> String {
    let request = RenderRequest::default()
        .with_messages(vec![json!({"role": "user", "content": "?"})])
        .with_tools((!options.tools.is_empty()).then(|| options.tools.clone()))
        .with_add_generation_prompt(true)
        .with_enable_thinking(options.enable_thinking);
    template.render(&request).unwrap_or_default()
}

/// FNV-1a, 64 bits, folded to 32: stable across Rust versions (the
/// standard hasher is not promised to be).
fn hash(text: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// What a build of `protocol` under `config` makes besides the compiled
/// code (which is the grammar's), as text; or why it made nothing.
fn fingerprint(protocol: &Protocol, config: &ParserConfig) -> String {
    let build = match Build::new(protocol, config) {
        Ok(build) => build,
        Err(e) => return format!("no build: {e}"),
    };
    let outline = protocol.parser_outline();
    let grammar = format!(
        "{:?}",
        build.grammar(protocol, config, &OutlineParts::of(&outline))
    );
    let code = match build.compile(protocol, config) {
        Ok(code) => code,
        Err(e) => return format!("no compile: {e}"),
    };
    let p = build.parser(protocol, config, code);
    format!(
        "{grammar}|{:?}|{:?}|{:?}|{:?}|{:?}",
        p.nested, p.start, p.prefix, p.reasoning_prefix, p.channels
    )
}

/// One golden line: the template's name and a hash per shape.
fn line(name: &str, source: &str, shapes: &[Shape]) -> String {
    let mut out = name.to_string();
    let analysed = ChatTemplate::new(source, &TemplateConfig::default())
        .map_err(|e| e.to_string())
        .and_then(|t| t.analyze().map(|a| (t, a)).map_err(|e| e.to_string()));
    match analysed {
        Ok((template, analysis)) => {
            for shape in shapes {
                let mut options = shape.options.clone();
                options.prompt = Some(prompt(&template, &options));
                let protocol = Protocol::new(&analysis, &options);
                let config = ParserConfig {
                    options,
                    ..shape.config.clone()
                };
                let text = fingerprint(&protocol, &config);
                write!(out, " {:08x}", hash(&text)).unwrap();
            }
        }
        Err(e) => write!(out, " no analysis: {:08x}", hash(&e)).unwrap(),
    }
    out
}

fn templates(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|e| e == "jinja"));
    paths.sort();
    paths
}

/// Compares the lines for the templates in `dir` with `golden` (or
/// writes them, with `UPDATE_GOLDEN=1`).
fn check(dir: &Path, golden: &str) {
    let shapes = shapes();
    let lines: Vec<String> = templates(dir)
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            let source = std::fs::read_to_string(path).unwrap();
            line(&name, &source, &shapes)
        })
        .collect();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/parser_grammars")
        .join(golden);
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, lines.join("\n") + "\n").unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (UPDATE_GOLDEN=1 cargo test --lib parser::grammar_golden)",
            golden.display()
        )
    });
    let mut differences = Vec::new();
    for (got, want) in lines.iter().zip(expected.lines()) {
        let (got, want): (Vec<&str>, Vec<&str>) =
            (got.split(' ').collect(), want.split(' ').collect());
        if got[0] != want[0] || got.len() != want.len() {
            differences.push(format!(
                "{}: not the golden's template line {}",
                got[0], want[0]
            ));
            continue;
        }
        for (i, shape) in shapes.iter().enumerate() {
            if got.get(i + 1) != want.get(i + 1) {
                differences.push(format!("{}: {}", got[0], shape.label));
            }
        }
    }
    if lines.len() != expected.lines().count() {
        differences.push(format!(
            "{} templates, the golden has {}",
            lines.len(),
            expected.lines().count()
        ));
    }
    assert!(
        differences.is_empty(),
        "the parser's grammar changed for {} template × shape(s):\n{}\n\
         If the change is intended, regenerate: UPDATE_GOLDEN=1 cargo test --lib parser::grammar_golden",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn shipped_templates_build_their_pinned_grammars() {
    check(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("templates"),
        "shipped.txt",
    );
}

#[test]
fn corpus_templates_build_their_pinned_grammars() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp");
    if !corpus.is_dir() {
        eprintln!("skipped: {} is absent", corpus.display());
        return;
    }
    check(&corpus, "corpus.txt");
}

#[test]
fn the_hash_is_fnv1a_folded() {
    // FNV-1a 64 of "a" is af63dc4c8601ec8c (the published test vector).
    assert_eq!(hash("a"), 0xaf63_dc4c ^ 0x8601_ec8c);
    assert_eq!(hash(""), 0xcbf2_9ce4 ^ 0x8422_2325);
}
