//! The `chat-autoparser` command line against its contract (`docs/cli.md`): exit
//! 0 on success, 2 on bad usage, 1 on a template or input error with one line
//! on stderr; `--json` prints an Analysis that deserializes.

use std::process::{Command, Output};

use chat_autoparser::Analysis;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(args)
        .current_dir(crate::common::root())
        .output()
        .expect("binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn analyze_prints_the_detected_markers() {
    let out = run(&["analyze", "templates/hermes-think.jinja"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "  start / end        \"<think>\" / \"</think>\"",
        "tools                JsonNative",
        "  call               \"<tool_call>\\n\" ... \"\\n</tool_call>\"",
        "end of turn          \"<|im_end|>\\n\"",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in:\n{text}"
        );
    }
}

/// A template that renders no call but shows one in its instructions:
/// the table says the format came from that example.
#[test]
fn analyze_says_a_format_came_from_the_instructions() {
    let dir = std::env::temp_dir().join(format!("cap-cli-prose-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shown.jinja");
    let template = "{%- if tools %}<|system|>Tools: {{ tools | tojson }}\nCall as \
        <call>{\"name\": \"f\", \"arguments\": {}}</call><|end|>{% endif %}\
        {%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}\
        {%- if add_generation_prompt %}<|assistant|>{% endif %}";
    std::fs::write(&path, template).unwrap();
    let out = run(&["analyze", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "tools              not rendered by the template; parsing the format its instructions show",
        "  example          <call>{\"name\": \"f\", \"arguments\": {}}</call> (the template's instructions)",
        "  instructed       JsonNative, call \"<call>\" ... \"</call>\", separator \"\\n\"",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing line {line:?} in:\n{text}"
        );
    }
}

#[test]
fn analyze_json_round_trips() {
    let out = run(&["analyze", "templates/mistral-tool-calls.jinja", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let analysis: Analysis = serde_json::from_slice(&out.stdout).expect("an Analysis");
    let tools = analysis.tools.expect("tools");
    assert_eq!(
        (tools.section_start.as_str(), tools.section_end.as_str()),
        ("[TOOL_CALLS][", "]")
    );
}

#[test]
fn tokenizer_config_supplies_template_and_tokens() {
    let dir = std::env::temp_dir().join(format!("cap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer_config.json");
    let template =
        "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}";
    let config = serde_json::json!({
        "bos_token": {"content": "<s>"}, "eos_token": "</s>",
        "chat_template": [{"name": "default", "template": template}]
    });
    std::fs::write(&path, config.to_string()).unwrap();
    let out = run(&["analyze", path.to_str().unwrap(), "--json"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let analysis: Analysis = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analysis.turn.stop_marker, "</s>");
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &[][..],
        &["analyze"][..],
        &["analyze", "templates/bare-json.jinja", "--bogus"][..],
        &["frobnicate"][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("chat-autoparser: "), "{args:?}");
    }
}

#[test]
fn template_errors_exit_1_with_one_line() {
    let missing = run(&["analyze", "templates/no-such-template.jinja"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).starts_with("chat-autoparser: io error: templates/no-such-template.jinja")
    );

    let path = std::env::temp_dir().join(format!("cap-bad-{}.jinja", std::process::id()));
    std::fs::write(&path, "{% for x in %}").unwrap();
    let broken = run(&["analyze", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(broken.status.code(), Some(1));
    assert_eq!(stderr(&broken).lines().count(), 1, "{}", stderr(&broken));
    assert!(
        stderr(&broken).starts_with("chat-autoparser: syntax error at line 1, column 13: "),
        "{}",
        stderr(&broken)
    );
}

/// The binary, started with piped stdin, stdout and stderr.
fn spawn(args: &[&str]) -> std::process::Child {
    use std::process::Stdio;
    Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(args)
        .current_dir(crate::common::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs")
}

/// Runs the binary with `stdin` as input.
fn run_with_input(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = spawn(args);
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("binary finishes")
}

#[test]
fn parse_prints_the_message() {
    let output = "<think>Rain?</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let out = run_with_input(&["parse", "templates/hermes-think.jinja"], output);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let msg: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON message");
    assert_eq!(
        msg,
        serde_json::json!({"role": "assistant", "content": "Let me check.", "reasoning_content": "Rain?",
            "tool_calls": [{"id": null, "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})
    );
    // --reasoning inline keeps the block in the content.
    let out = run_with_input(
        &[
            "parse",
            "templates/hermes-think.jinja",
            "--reasoning",
            "inline",
        ],
        "<think>a</think>b",
    );
    let msg: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON message");
    assert_eq!(msg["content"], "<think>a</think>b");
}

#[test]
fn parse_strict_fails_on_a_broken_call() {
    let broken = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1 oops}}\n</tool_call>";
    let out = run_with_input(&["parse", "templates/hermes-think.jinja"], broken);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("warning: malformed tool call at byte"),
        "{}",
        stderr(&out)
    );
    let msg: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON message");
    // Its arguments never complete as JSON: the call is withdrawn, all of
    // its text is content.
    assert_eq!(msg["tool_calls"], serde_json::Value::Null);
    assert_eq!(msg["content"], broken);
    let out = run_with_input(
        &["parse", "templates/hermes-think.jinja", "--strict"],
        broken,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(
        run_with_input(
            &[
                "parse",
                "templates/hermes-think.jinja",
                "--thinking",
                "maybe"
            ],
            ""
        )
        .status
        .code()
            == Some(2)
    );
}

#[test]
fn batch_answers_each_line_in_order() {
    let requests = [
        r#"{"id": 1, "op": "parse", "template": "templates/hermes-think.jinja", "input": "<think>a</think>b", "chunk": 2, "timing": true}"#,
        r#"{"id": 2, "op": "analyze", "template": "templates/qwen-coder-xml.jinja"}"#,
        r#"{"id": 3, "op": "parse", "template": "missing.jinja", "input": "x"}"#,
        r#"not json"#,
        r#"{"id": 5, "op": "fly", "template": "templates/hermes-think.jinja"}"#,
        r#"{"id": 6, "op": "grammar", "template": "templates/hermes-think.jinja", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]}"#,
        r#"{"id": 7, "op": "render", "template": "templates/hermes-think.jinja", "messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true}"#,
        r#"{"id": 8, "op": "parse", "template": "templates/hermes-think.jinja", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "reasoning_content": "a"}], "continue_final_message": "content", "input": "b"}"#,
        r#"{"id": 9, "op": "parse", "template": "templates/hermes-think.jinja", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "reasoning_content": "a"}], "continue_final_message": true, "input": " c</think>b"}"#,
        r#"{"id": 10, "op": "parse", "template": "templates/hermes-think.jinja", "continue_final_message": "maybe", "input": "b"}"#,
    ]
    .join("\n");
    let out = run_with_input(&["batch"], &requests);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(
        (
            lines[7]["result"]["content"].clone(),
            lines[7]["result"]["reasoning_content"].clone()
        ),
        ("b".into(), "a".into())
    );
    assert_eq!(
        (
            lines[8]["result"]["content"].clone(),
            lines[8]["result"]["reasoning_content"].clone()
        ),
        ("b".into(), "a c".into())
    );
    assert_eq!(lines[9]["error"]["kind"], "usage");
    assert_eq!(lines[5]["result"]["lazy"], true);
    assert!(
        lines[5]["result"]["gbnf"]
            .as_str()
            .unwrap_or("")
            .contains("\"<tool_call>\""),
        "{}",
        lines[5]
    );
    assert_eq!(
        lines[6]["result"]["text"],
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["result"]["content"], "b");
    assert_eq!(lines[0]["result"]["reasoning_content"], "a");
    assert!(lines[0]["result"]["elapsed_us"].is_u64());
    assert_eq!(lines[1]["result"]["tools"]["class"], "tag-tagged");
    assert_eq!(
        (lines[2]["ok"].clone(), lines[2]["error"]["kind"].clone()),
        (false.into(), "input".into())
    );
    assert_eq!(lines[3]["ok"], false);
    assert_eq!(lines[4]["error"]["kind"], "usage");
}

/// Runs the binary with `stdin` and a stdout whose reader has already gone
/// (as `| head` leaves it once it has read enough).
fn run_with_closed_stdout(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = spawn(args);
    drop(child.stdout.take());
    // The child may exit before reading all of stdin: a failed write here is fine.
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    child.wait_with_output().expect("binary ends")
}

#[test]
fn a_closed_stdout_ends_the_output_quietly() {
    // 400 KB of content: more than a pipe holds, so the write meets the closed pipe.
    let output = "word ".repeat(80_000);
    let request = format!(
        "{}\n",
        serde_json::json!({"op": "parse", "template": "templates/hermes-think.jinja", "input": "hi"})
    );
    for (args, stdin) in [
        (&["parse", "templates/hermes-think.jinja"][..], output),
        (&["batch"][..], request.repeat(20_000)),
    ] {
        let out = run_with_closed_stdout(args, &stdin);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn parse_refuses_a_tool_without_a_name() {
    let tools =
        std::env::temp_dir().join(format!("cap-parse-nameless-{}.json", std::process::id()));
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"parameters": {"type": "object"}}}]"#,
    )
    .unwrap();
    // No output on stdin: the tools are refused before it is read.
    let out = run(&[
        "parse",
        "templates/hermes-think.jinja",
        "--tools",
        tools.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        stderr(&out),
        "chat-autoparser: input error: tool 0 has no function.name\n"
    );
    std::fs::remove_file(&tools).ok();
}

/// `--calls-in-reasoning call` reaches the parser: a call written inside
/// the reasoning block is a call, its text out of the reasoning, named by a
/// warning with its byte range.
#[test]
fn parse_reads_a_call_in_reasoning_when_asked() {
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let output = format!("<think>let me look {call} ok</think>done");
    let args = [
        "parse",
        "templates/hermes-think.jinja",
        "--calls-in-reasoning",
        "call",
    ];
    let out = run_with_input(&args, &output);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        r#"{
  "role": "assistant",
  "content": "done",
  "reasoning_content": "let me look  ok",
  "tool_calls": [
    {
      "id": null,
      "type": "function",
      "function": {
        "name": "get_weather",
        "arguments": "{\"city\": \"Paris\"}"
      }
    }
  ]
}
"#
    );
    assert_eq!(
        stderr(&out),
        "chat-autoparser: warning: tool call inside reasoning, read as a call at bytes 19..99\n"
    );
}

#[test]
fn parse_takes_a_policy_and_per_field_flags() {
    let output = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>\nDone.";
    let content = |args: &[&str]| {
        let out = run_with_input(args, output);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let msg: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON message");
        (msg["content"].clone(), stderr(&out))
    };
    let base = ["parse", "templates/hermes-think.jinja"];
    assert_eq!(content(&base).0, "Done.");
    let (dropped, warnings) = content(&[&base[..], &["--policy", "compatible"]].concat());
    assert_eq!(dropped, serde_json::Value::Null);
    let at = output.find("Done.").unwrap();
    let warning = format!(
        "text left out by the output policy at bytes {at}..{}",
        at + 5
    );
    assert!(warnings.contains(&warning), "{warnings}");
    // A field flag overrides the preset.
    let kept = content(
        &[
            &base[..],
            &["--policy", "compatible", "--text-after-calls", "keep"],
        ]
        .concat(),
    );
    assert_eq!(kept.0, "Done.");
    // Refused before stdin is read (so none is written: no broken pipe).
    let out = run_with_input(&[&base[..], &["--unknown-tool", "maybe"]].concat(), "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown_tool takes content or call, not \"maybe\""));
}
