//! The `chat-autoparser` command line against its contract (DESIGN §5): exit
//! 0 on success, 2 on bad usage, 1 on a template or input error with one line
//! on stderr; `--json` prints an Analysis that deserializes.

use std::process::{Command, Output};

use chat_autoparser::Analysis;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
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
        assert!(text.lines().any(|l| l == line), "missing line {line:?} in:\n{text}");
    }
}

#[test]
fn analyze_json_round_trips() {
    let out = run(&["analyze", "templates/mistral-tool-calls.jinja", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let analysis: Analysis = serde_json::from_slice(&out.stdout).expect("an Analysis");
    let tools = analysis.tools.expect("tools");
    assert_eq!((tools.section_start.as_str(), tools.section_end.as_str()), ("[TOOL_CALLS][", "]"));
}

#[test]
fn tokenizer_config_supplies_template_and_tokens() {
    let dir = std::env::temp_dir().join(format!("cap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer_config.json");
    let template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}";
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
    for args in [&[][..], &["analyze"][..], &["analyze", "templates/bare-json.jinja", "--bogus"][..], &["frobnicate"][..]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("chat-autoparser: "), "{args:?}");
    }
}

#[test]
fn template_errors_exit_1_with_one_line() {
    let missing = run(&["analyze", "templates/no-such-template.jinja"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).starts_with("chat-autoparser: io error: templates/no-such-template.jinja"));

    let path = std::env::temp_dir().join(format!("cap-bad-{}.jinja", std::process::id()));
    std::fs::write(&path, "{% for x in %}").unwrap();
    let broken = run(&["analyze", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(broken.status.code(), Some(1));
    assert_eq!(stderr(&broken).lines().count(), 1, "{}", stderr(&broken));
    assert!(stderr(&broken).starts_with("chat-autoparser: syntax error at line 1, column 13: "), "{}", stderr(&broken));
}
