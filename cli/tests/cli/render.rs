//! `chat-autoparser render` and `lint` against the contract (`docs/cli.md`): exit 0
//! on success, 2 on bad usage, 1 on a template or input error with one line on
//! stderr; `render --jsonl` writes one JSON string per input line.

use crate::common::cli;

use serde_json::{json, Value as Json};
use std::process::Output;

fn run(args: &[&str], stdin: &str) -> Output {
    cli::run(args, stdin.as_bytes())
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("cap-cli-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

const FIXED: &str = "templates/qwen3_5-fixed.jinja";

#[test]
fn render_prints_the_prompt() {
    let messages = temp_file("m.json", r#"[{"role": "user", "content": "Hi"}]"#);
    let out = run(
        &[
            "render",
            FIXED,
            "--messages",
            &messages,
            "--add-generation-prompt",
            "--thinking",
            "off",
        ],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
}

/// `render --help`: the conversation comes from stdin when `--messages` is
/// absent, and `--messages -` names stdin.
#[test]
fn render_reads_the_conversation_from_stdin() {
    let conversation = r#"[{"role": "user", "content": "Hi"}]"#;
    let flags = ["--add-generation-prompt", "--thinking", "off"];
    for messages in [&[][..], &["--messages", "-"]] {
        let args: Vec<&str> = ["render", FIXED]
            .iter()
            .chain(&flags)
            .chain(messages)
            .copied()
            .collect();
        let out = run(&args, conversation);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
    }
    // Nothing on stdin is no conversation: an input error, one line.
    let out = run(&["render", FIXED], "");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("chat-autoparser: input error: stdin: "),
        "{err}"
    );
}

#[test]
fn render_jsonl_reads_dash_as_stdin() {
    let input = r#"{"messages": [{"role": "user", "content": "Hi"}]}"#;
    let out = run(&["render", FIXED, "--jsonl", "--messages", "-"], input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "\"<|im_start|>user\\nHi<|im_end|>\\n\"\n"
    );
}

#[test]
fn render_jsonl_writes_one_training_text_per_line() {
    let input = concat!(
        r#"{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}"#,
        "\n\n",
        r#"{"messages": [{"role": "user", "content": "Go"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}"#,
        "\n"
    );
    let out = run(&["render", FIXED, "--jsonl"], input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).expect("a JSON string"))
        .collect();
    assert_eq!(lines.len(), 2);
    // Thinking on (the default) and no think block: the last turn as it is.
    assert_eq!(
        lines[0],
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
    );
    assert!(
        lines[1].starts_with("<|im_start|>system\n# Tools\n"),
        "{}",
        lines[1]
    );
}

#[test]
fn render_jsonl_bad_line_is_an_input_error() {
    let out = run(
        &["render", FIXED, "--jsonl"],
        "{\"messages\": []}\nnot json\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn render_usage_errors_exit_2() {
    assert_eq!(
        run(&["render", FIXED, "--thinking", "maybe"], "")
            .status
            .code(),
        Some(2)
    );
    assert_eq!(run(&["render"], "").status.code(), Some(2));
}

#[test]
fn render_refused_conversation_exits_1() {
    let messages = temp_file("bad.json", r#"[{"role": "wizard", "content": "Hi"}]"#);
    let out = run(
        &[
            "render",
            FIXED,
            "--messages",
            &messages,
            "--tool-formatting",
            "native",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unexpected message role"));
}

#[test]
fn lint_reports_findings_and_json() {
    let out = run(&["lint", FIXED], "");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("findings: none"));
    let out = run(&["lint", "templates/hermes-think.jinja", "--json"], "");
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["findings"][0]["kind"], "think-kept-in-history");
    assert_eq!(report["capabilities"]["tools"], true);
    assert_eq!(run(&["lint"], "").status.code(), Some(2));
    assert_eq!(run(&["lint", "no/such.jinja"], "").status.code(), Some(1));
}

/// Lists tools and renders results, never an assistant's calls.
const SILENT_CALLS: &str = "{%- if tools %}{{ 'Tools: ' + tools | tojson + '\\n' }}{% endif %}\
{%- for m in messages %}{{ m.role + ': ' + m.content + '\\n' }}{% endfor %}\
{%- if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}";

#[test]
fn render_replays_calls_in_the_analysed_format() {
    let template = temp_file("silent.jinja", SILENT_CALLS);
    let tools = temp_file(
        "silent-tools.json",
        r#"[{"type": "function", "function": {"name": "f"}}]"#,
    );
    let messages = temp_file(
        "silent-messages.json",
        r#"[{"role": "user", "content": "Go."},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
             "function": {"name": "f", "arguments": "{\"n\": 1}"}}]},
            {"role": "tool", "content": "ok"}]"#,
    );
    let out = run(
        &[
            "render",
            &template,
            "--messages",
            &messages,
            "--tools",
            &tools,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Tools: [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"\", \
         \"parameters\": {\"type\": \"object\", \"properties\": {}}}}]\n\
         user: Go.\nassistant: <|tool_call_start|>[f(n=1)]<|tool_call_end|>\ntool: ok\n"
    );
}

/// A Qwen3 training example (a `read_file` call, its result, an answer):
/// it renders to exactly the text written out below, with its two
/// assistant turns as spans.
fn design_example() -> Json {
    json!({"messages": [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "what's in config.toml?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "read_file", "arguments": {"path": "config.toml"}}}]},
        {"role": "tool", "content": "[workspace]\npath = \"~/.agent\""},
        {"role": "assistant", "content": "Your config.toml contains the workspace settings."}],
     "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]})
}

#[test]
fn the_design_example_renders_exactly_with_its_spans() {
    let path = crate::common::root().join("../shared/corpus/llamacpp/Qwen-Qwen3-0.6B.jinja");
    if !path.is_file() {
        println!("spans: corpus absent (../shared), skipped");
        return;
    }
    let request = format!("{}\n", design_example());
    let out = cli::run(
        &["render", path.to_str().unwrap(), "--jsonl", "--spans"],
        request.as_bytes(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: Json = serde_json::from_slice(&out.stdout).unwrap();
    let text = line["text"].as_str().unwrap();
    let expected = concat!(
        "<|im_start|>system\nYou are a helpful agent.\n\n# Tools\n\n",
        "You may call one or more functions to assist with the user query.\n\n",
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
        r#"{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}"#,
        "\n</tools>\n\n",
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n",
        "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n",
        "<|im_start|>user\nwhat's in config.toml?<|im_end|>\n",
        "<|im_start|>assistant\n",
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"config.toml\"}}\n</tool_call><|im_end|>\n",
        "<|im_start|>user\n<tool_response>\n[workspace]\npath = \"~/.agent\"\n</tool_response><|im_end|>\n",
        "<|im_start|>assistant\n",
        "<think>\n\n</think>\n\nYour config.toml contains the workspace settings.<|im_end|>\n",
    );
    assert_eq!(text, expected);
    let spans: Vec<(usize, usize)> =
        serde_json::from_value(line["assistant_spans"].clone()).unwrap();
    let pieces: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
    assert_eq!(
        pieces,
        [
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"config.toml\"}}\n</tool_call><|im_end|>\n",
            "<think>\n\n</think>\n\nYour config.toml contains the workspace settings.<|im_end|>\n",
        ]
    );
}
