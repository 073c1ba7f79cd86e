//! The command line as a new user meets it: `--help` and `--version`, every
//! kind of TEMPLATE (model folder, GGUF file, named templates), any bytes on
//! stdin, lenient `batch` lines, `--kwargs`, `lint --deny`, `analyze DIR`.
//!
//! The GGUF fixture is written here, metadata and a fake tensor section,
//! with the format's own layout (magic, version, counts, typed pairs).

use crate::common::cli;

use std::path::{Path, PathBuf};
use std::process::Output;

use cli::run;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cap-cli-inputs-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(crate::common::root().join("templates").join(name)).unwrap()
}

/// Tokens the fixtures declare; the token template below prints them.
const TOKENS: &str =
    "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}";

// ---------------------------------------------------------------- GGUF writer

fn gguf_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A GGUF v3 file: the chat template, a token list, bos/eos ids, an array to
/// skip, and bytes standing for tensors.
fn write_gguf(path: &Path, template: &str) {
    let mut f = b"GGUF".to_vec();
    f.extend(3u32.to_le_bytes());
    f.extend(1u64.to_le_bytes()); // tensors
    f.extend(6u64.to_le_bytes()); // metadata pairs
    gguf_string(&mut f, "general.architecture");
    f.extend(8u32.to_le_bytes());
    gguf_string(&mut f, "llama");
    gguf_string(&mut f, "tokenizer.ggml.scores");
    f.extend(9u32.to_le_bytes());
    f.extend(6u32.to_le_bytes());
    f.extend(3u64.to_le_bytes());
    f.extend([0u8; 12]);
    gguf_string(&mut f, "tokenizer.ggml.tokens");
    f.extend(9u32.to_le_bytes());
    f.extend(8u32.to_le_bytes());
    f.extend(3u64.to_le_bytes());
    for t in ["<unk>", "<|begin|>", "<|end|>"] {
        gguf_string(&mut f, t);
    }
    gguf_string(&mut f, "tokenizer.ggml.bos_token_id");
    f.extend(4u32.to_le_bytes());
    f.extend(1u32.to_le_bytes());
    gguf_string(&mut f, "tokenizer.ggml.eos_token_id");
    f.extend(4u32.to_le_bytes());
    f.extend(2u32.to_le_bytes());
    gguf_string(&mut f, "tokenizer.chat_template");
    f.extend(8u32.to_le_bytes());
    gguf_string(&mut f, template);
    f.extend([0x5A; 256]); // tensor infos and data: never read
    std::fs::write(path, f).unwrap();
}

/// A Hugging Face model folder holding `template`.
fn write_model_folder(dir: &Path, template: &str, as_json: bool) {
    if as_json {
        std::fs::write(
            dir.join("chat_template.json"),
            serde_json::json!({"chat_template": template}).to_string(),
        )
        .unwrap();
    } else {
        std::fs::write(dir.join("chat_template.jinja"), template).unwrap();
    }
    let config = serde_json::json!({
        "bos_token": "<|begin|>", "eos_token": {"content": "<|end|>"},
        "added_tokens_decoder": {"7": {"content": "<|end|>"}, "8": {"content": "<|eom|>"}}});
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.join("generation_config.json"),
        r#"{"eos_token_id": [7, 8]}"#,
    )
    .unwrap();
}

// ---------------------------------------------------------------- tests

#[test]
fn help_on_the_binary_and_every_command_exits_0() {
    let top = run(&["--help"], b"");
    assert_eq!(top.status.code(), Some(0));
    for command in ["analyze", "parse", "render", "grammar", "lint", "batch"] {
        assert!(
            stdout(&top).contains(&format!("  {command} ")),
            "{command} listed: {}",
            stdout(&top)
        );
        let out = run(&[command, "--help"], b"");
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(&format!("Usage: chat-autoparser {command}")),
            "{command}: {}",
            stdout(&out)
        );
    }
    let version = run(&["--version"], b"");
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        stdout(&version),
        format!("chat-autoparser {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_give_a_hint_and_exit_2() {
    let out = run(
        &["parse", "templates/hermes-think.jinja", "--thinkin", "on"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("chat-autoparser: error: unexpected argument '--thinkin' found"),
        "{err}"
    );
    assert!(
        err.contains("tip: a similar argument exists: '--thinking'"),
        "{err}"
    );
    let out = run(
        &[
            "render",
            "templates/hermes-think.jinja",
            "--kwargs",
            "[1]",
            "--jsonl",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected a JSON object"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn model_folder_and_gguf_give_the_analysis_of_the_jinja_they_hold() {
    let dir = scratch("same-analysis");
    let template = shipped("hermes-think.jinja");
    let (folder, json_folder, gguf) = (
        dir.join("model"),
        dir.join("model-json"),
        dir.join("model.gguf"),
    );
    for (path, as_json) in [(&folder, false), (&json_folder, true)] {
        std::fs::create_dir_all(path).unwrap();
        write_model_folder(path, &template, as_json);
    }
    write_gguf(&gguf, &template);
    let reference = run(&["analyze", "templates/hermes-think.jinja", "--json"], b"");
    assert_eq!(reference.status.code(), Some(0));
    for path in [&folder, &json_folder, &gguf] {
        let out = run(&["analyze", path.to_str().unwrap(), "--json"], b"");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            stderr(&out)
        );
        assert_eq!(stdout(&out), stdout(&reference), "{}", path.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn model_folder_and_gguf_supply_their_special_tokens() {
    let dir = scratch("tokens");
    let folder = dir.join("model");
    std::fs::create_dir_all(&folder).unwrap();
    write_model_folder(&folder, TOKENS, false);
    let gguf = dir.join("m.gguf");
    write_gguf(&gguf, TOKENS);
    let messages = dir.join("messages.json");
    std::fs::write(&messages, r#"[{"role": "user", "content": "Hi"}]"#).unwrap();
    for path in [&folder, &gguf] {
        let out = run(
            &[
                "render",
                path.to_str().unwrap(),
                "--messages",
                messages.to_str().unwrap(),
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), "<|begin|>Hi<|end|>");
    }
    // generation_config's end tokens, less eos itself.
    let source = chat_autoparser::TemplateSource::load(&folder).unwrap();
    assert_eq!(source.end_tokens, ["<|eom|>"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn named_templates_are_picked_as_transformers_picks_them() {
    let dir = scratch("named");
    let config = dir.join("tokenizer_config.json");
    let named = serde_json::json!({"chat_template": [
        {"name": "default", "template": "D{% for m in messages %}{{ m.content }}{% endfor %}"},
        {"name": "tool_use", "template": "T{% for m in messages %}{{ m.content }}{% endfor %}"},
        {"name": "rag", "template": "R{% for m in messages %}{{ m.content }}{% endfor %}"}]});
    std::fs::write(&config, named.to_string()).unwrap();
    let messages = dir.join("m.json");
    std::fs::write(&messages, r#"[{"role": "user", "content": "x"}]"#).unwrap();
    let tools = dir.join("t.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "f"}}]"#,
    )
    .unwrap();
    let (c, m, t) = (
        config.to_str().unwrap(),
        messages.to_str().unwrap(),
        tools.to_str().unwrap(),
    );
    let render = |extra: &[&str]| {
        let mut args = vec!["render", c, "--messages", m, "--tool-formatting", "native"];
        args.extend_from_slice(extra);
        let out = run(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(render(&[]), "Dx");
    assert_eq!(render(&["--tools", t]), "Tx");
    assert_eq!(render(&["--template-name", "rag", "--tools", t]), "Rx");
    let out = run(&["analyze", c, "--template-name", "nope"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "chat-autoparser: input error: no chat template named \"nope\" (there are: default, tool_use, rag); choose one by name\n");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn invalid_utf8_on_stdin_parses() {
    let out = run(
        &["parse", "templates/hermes-think.jinja"],
        b"<think>caf\xC3\xA9 \xFF</think>\n\nok \xE2\x82",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let msg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        msg,
        serde_json::json!({"role": "assistant", "content": "ok \u{FFFD}", "reasoning_content": "café \u{FFFD}"})
    );
}

#[test]
fn parse_goes_on_when_the_prompt_cannot_render() {
    let dir = scratch("no-prompt");
    let messages = dir.join("m.json");
    // qwen3_5-fixed refuses a role it does not know: the prompt cannot render.
    std::fs::write(&messages, r#"[{"role": "wizard", "content": "Hi"}]"#).unwrap();
    let out = run(
        &[
            "parse",
            "templates/qwen3_5-fixed.jinja",
            "--messages",
            messages.to_str().unwrap(),
        ],
        b"<think>a</think>b",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "chat-autoparser: warning: the prompt does not render (raised error at line 156, column 13: Unexpected message role: wizard); parsed without it\n"
    );
    let msg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        msg,
        serde_json::json!({"role": "assistant", "content": "b", "reasoning_content": "a"})
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn batch_is_lenient_with_bytes_and_strict_with_fields() {
    let mut input = Vec::new();
    input.extend(br#"{"id": 1, "template": "templates/hermes-think.jinja", "input": "a\ud800b\udc00c\ud83d\ude00"}"#);
    input.extend(b"\n");
    input.extend(
        b"{\"id\": 2, \"template\": \"templates/hermes-think.jinja\", \"input\": \"x\xFFy\"}\n",
    );
    input.extend(
        br#"{"id": 3, "template": "templates/hermes-think.jinja", "input": "z", "chunks": 2}"#,
    );
    input.extend(b"\n");
    input.extend(br#"{"id": 4, "op": "render", "template": "templates/qwen3_5-fixed.jinja", "messages": [{"role": "user", "content": "Hi"}], "kwargs": {"enable_thinking": false}, "add_generation_prompt": true}"#);
    input.extend(b"\n");
    input.extend(br#"{"id": 5, "template": "templates/hermes-think.jinja", "input": "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "call_ids": 1}"#);
    input.extend(b"\n");
    let out = run(&["batch"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(
        lines[0]["result"]["content"],
        "a\u{FFFD}b\u{FFFD}c\u{1F600}"
    );
    assert_eq!(lines[1]["result"]["content"], "x\u{FFFD}y");
    assert_eq!(lines[2]["ok"], false);
    assert_eq!(lines[2]["error"]["kind"], "usage");
    assert!(
        lines[2]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown request field \"chunks\" (known: id, op,"),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3]["result"]["text"],
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
    let id = lines[4]["result"]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("call_") && id.len() == 29, "{id}");
}

#[test]
fn kwargs_reach_the_template() {
    let dir = scratch("kwargs");
    let messages = dir.join("m.json");
    std::fs::write(&messages, r#"[{"role": "user", "content": "Hi"}]"#).unwrap();
    let m = messages.to_str().unwrap();
    let out = run(
        &[
            "render",
            "templates/qwen3_5-fixed.jinja",
            "--messages",
            m,
            "--add-generation-prompt",
            "--kwargs",
            r#"{"enable_thinking": false}"#,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn lint_deny_fails_on_findings() {
    let out = run(&["lint", "templates/hermes-think.jinja", "--deny"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "chat-autoparser: input error: lint: 2 findings (--deny)\n"
    );
    assert!(
        stdout(&out).contains("think-kept-in-history"),
        "the report is printed first"
    );
    assert_eq!(
        run(&["lint", "templates/qwen3_5-fixed.jinja", "--deny"], b"")
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn analyze_a_folder_prints_one_row_per_template() {
    let dir = scratch("folder");
    std::fs::write(dir.join("a.jinja"), shipped("hermes-think.jinja")).unwrap();
    std::fs::write(dir.join("b.jinja"), "{% for %}").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a template").unwrap();
    write_gguf(&dir.join("c.gguf"), &shipped("bare-json.jinja"));
    let out = run(&["analyze", dir.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        concat!(
            "template  reasoning  tools       end of turn\n",
            "a.jinja   tag        JsonNative  \"<|im_end|>\\n\"\n",
            "b.jinja   error                  syntax error at line 1, column 8: syntax error: unexpected end of block, expected in\n",
            "c.gguf    none       JsonNative  \"<|eot_id|>\"\n",
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_a_folder_without_templates_is_an_input_error() {
    let dir = scratch("empty-folder");
    std::fs::write(dir.join("notes.txt"), "not a template").unwrap();
    let out = run(&["analyze", dir.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "chat-autoparser: input error: {}: no template found (a .jinja or .gguf file, or a model folder)\n",
            dir.display()
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}
