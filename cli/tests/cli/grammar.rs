//! `chat-autoparser grammar` against its contract (`docs/cli.md`): GBNF then
//! lazy/triggers/preserved tokens for humans, its JSON shape with
//! `--json`; exit 2 on bad usage, 1 on a template or input error.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(args)
        .current_dir(crate::common::root())
        .output()
        .expect("binary runs")
}

/// A file of one tool, its own per call: tests run in parallel in one
/// process, and one rewriting a shared file (truncated, then written) while
/// another's CLI reads it made that read fail now and then.
fn tools_file() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("cap-grammar-tools-{}-{n}.json", std::process::id()));
    let tools = serde_json::json!([{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

#[test]
fn grammar_human_and_json() {
    let tools = tools_file();
    let tools = tools.to_str().unwrap();
    let out = run(&[
        "grammar",
        "templates/qwen-coder-xml.jinja",
        "--tools",
        tools,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("root ::= tool-call ( ws tool-call )* ws\n"),
        "{text}"
    );
    assert!(
        text.contains("\nlazy: true\ntrigger (token): <tool_call>\npreserved tokens: <tool_call>"),
        "{text}"
    );

    let out = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools,
        "--tool-choice",
        "required",
        "--parallel",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lazy"], false);
    assert!(v["gbnf"]
        .as_str()
        .unwrap()
        .starts_with("root ::= ws ( \"<think>\" reasoning-text \"</think>\" )? ws tool-call ( ws tool-call )* ws"));
    assert!(v["triggers"].as_array().unwrap().is_empty());
    assert!(v["preserved_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "<tool_call>"));

    let out = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools,
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["triggers"][0]["kind"], "pattern_full");

    // Thinking off: the prompt closes the block, so the grammar waits for no `</think>`.
    let out = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools,
        "--thinking",
        "off",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["triggers"],
        serde_json::json!([{"kind": "token", "value": "<tool_call>"}])
    );
}

#[test]
fn grammar_errors() {
    let tools = tools_file();
    let tools = tools.to_str().unwrap();
    for args in [
        &["grammar"][..],
        &["grammar", "templates/hermes-think.jinja", "--tools"][..],
        &["grammar", "templates/hermes-think.jinja", "--bogus"][..],
    ] {
        assert_eq!(run(args).status.code(), Some(2), "{args:?}");
    }
    let unknown = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools,
        "--tool-choice",
        "nope",
    ]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .starts_with("chat-autoparser: input error: tool_choice names \"nope\""));
    let missing = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        "no-such-tools.json",
    ]);
    assert_eq!(missing.status.code(), Some(1));
}

/// A tools file of `tools` (a JSON array) named `name`.
fn tools_json(name: &str, tools: serde_json::Value) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("cap-grammar-{name}-{}.json", std::process::id()));
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

#[test]
fn a_tool_without_a_name_is_an_input_error() {
    let named = serde_json::json!({"type": "function", "function": {"name": "f"}});
    for (name, nameless) in [
        (
            "no-name",
            serde_json::json!({"type": "function", "function": {"parameters": {}}}),
        ),
        (
            "empty-name",
            serde_json::json!({"type": "function", "function": {"name": ""}}),
        ),
    ] {
        let tools = tools_json(name, serde_json::json!([named, nameless]));
        let out = run(&[
            "grammar",
            "templates/hermes-think.jinja",
            "--tools",
            tools.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{name}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "chat-autoparser: input error: tool 1 has no function.name\n",
            "{name}"
        );
        std::fs::remove_file(&tools).ok();
    }
}

#[test]
fn grammar_warnings_go_to_stderr() {
    let twice = serde_json::json!({"type": "function", "function": {"name": "f"}});
    let tools = tools_json("twice", serde_json::json!([twice, twice]));
    let out = run(&[
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("warning"), "{text}");
    assert!(text.contains("\nlazy: true\n"), "{text}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "chat-autoparser: warning: tool \"f\" is defined twice; the first definition is used\n"
    );
    std::fs::remove_file(&tools).ok();
}

/// The JSON `grammar --json` prints for hermes-think, one tool, `required`
/// and `extra` flags.
fn required_grammar(tools: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "grammar",
        "templates/hermes-think.jinja",
        "--tools",
        tools,
        "--tool-choice",
        "required",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One default for `parallel_tool_calls`, OpenAI's (true), in the CLI as
/// in `batch` and the library: several calls unless `--parallel off`.
#[test]
fn parallel_calls_are_on_by_default_as_in_batch() {
    let path = tools_file();
    let tools = path.to_str().unwrap();
    let default = required_grammar(tools, &[]);
    let several = "root ::= ws ( \"<think>\" reasoning-text \"</think>\" )? ws tool-call ( ws tool-call )* ws";
    assert!(
        default["gbnf"].as_str().unwrap().starts_with(several),
        "{default}"
    );
    assert_eq!(required_grammar(tools, &["--parallel"]), default);
    assert_eq!(required_grammar(tools, &["--parallel", "on"]), default);
    let one = required_grammar(tools, &["--parallel", "off"]);
    assert!(
        one["gbnf"].as_str().unwrap().starts_with(
            "root ::= ws ( \"<think>\" reasoning-text \"</think>\" )? ws tool-call ws\n"
        ),
        "{one}"
    );

    let request = serde_json::json!({"id": 1, "op": "grammar", "template": "templates/hermes-think.jinja",
        "tools": serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&path).unwrap()).unwrap(),
        "tool_choice": "required"});
    let out = crate::common::cli::run(&["batch"], format!("{request}\n").as_bytes());
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["result"], default, "{line}");
}

/// `--tool-choice` takes OpenAI's JSON object too (`allowed_tools` here);
/// text that opens an object but is no JSON is an input error.
#[test]
fn tool_choice_takes_json() {
    let tools = tools_file();
    let tools = tools.to_str().unwrap();
    let grammar = |choice: &str| {
        let args = ["grammar", "templates/hermes-think.jinja", "--tools", tools];
        run(&[&args[..], &["--tool-choice", choice, "--json"]].concat())
    };
    let allowed = r#"{"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_weather"}]}"#;
    let (json, required) = (grammar(allowed), grammar("required"));
    assert_eq!(
        json.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    assert_eq!(
        json.stdout, required.stdout,
        "one allowed tool, required: as `required`"
    );
    let bad = grammar("{nope");
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr)
        .starts_with("chat-autoparser: input error: --tool-choice is not JSON"));
}
