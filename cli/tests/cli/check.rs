//! `chat-autoparser check` against its contract (docs/check.md): exit 0
//! for works, 3 for warnings, 4 for unsupported, 1 for a template or input
//! error, 2 for bad usage; the `--json` schema (version 1) key by key; a
//! folder's table; the emitted `response_template` in a
//! `tokenizer_config.json`.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{json, Value};

use crate::common::cli::run;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A ChatML template that lists tools but renders no call: its calls are
/// read in the fallback dialects, a warning.
const SILENT: &str =
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}\
{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// A template that writes every answer twice: what the model writes after
/// the prompt is not the answer, so the plain round trip fails.
const TWICE: &str = "{%- for m in messages %}{% if m.role == 'user' %}<|user|>{{ m.content }}\
{% else %}<|assistant|>{{ m.content }}\n{{ m.content }}<|end|>{% endif %}{% endfor %}\
{%- if add_generation_prompt %}<|assistant|>{% endif %}";

/// A fresh folder under the temp dir holding `files`.
fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("check-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

fn check_json(path: &str) -> (Option<i32>, Value) {
    let out = run(&["check", path, "--json"], b"");
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
    (out.status.code(), doc)
}

fn is_str(v: &Value) -> bool {
    v.is_string()
}

/// Every key docs/check.md promises, with its type.
fn assert_schema(doc: &Value) {
    assert_eq!(doc["check_version"], 1);
    assert!(is_str(&doc["template"]) && doc["time_ms"].is_u64());
    assert!(doc["engines"].is_array() && doc["notes"].is_array() && doc["lint"].is_array());
    let verdict = doc["verdict"].as_str().unwrap();
    assert!(["works", "warnings", "unsupported"].contains(&verdict));
    for w in doc["warnings"].as_array().unwrap() {
        assert!(is_str(&w["what"]) && is_str(&w["todo"]), "{w}");
    }
    let d = &doc["detection"];
    assert!(is_str(&d["stop_marker"]));
    for key in ["mode", "start", "end", "source"] {
        assert!(is_str(&d["reasoning"][key]), "reasoning.{key}");
    }
    assert!(d["thinking_switch"].is_null() || is_str(&d["thinking_switch"]));
    for t in d["tool_formats"].as_array().unwrap() {
        for key in [
            "class",
            "section_start",
            "call_start",
            "call_end",
            "name",
            "arguments",
            "source",
        ] {
            assert!(is_str(&t[key]), "tool_formats.{key} in {t}");
        }
        assert!(t["parallel"].is_boolean());
    }
    assert!(d["unsupported_comparisons"].is_array() && d["preserved_tokens"].is_array());
    for s in doc["shapes"].as_array().unwrap() {
        let shape = &s["shape"];
        assert!(is_str(&shape["name"]) && is_str(&shape["tool_choice"]));
        assert!(shape["thinking"].is_null() || shape["thinking"].is_boolean());
        assert!(shape["parallel"].is_boolean());
        let exports: Vec<&str> = s["exports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["export"].as_str().unwrap())
            .collect();
        assert_eq!(
            exports,
            ["gbnf", "structural-tag", "lark", "response-template"]
        );
        for p in s["probes"].as_array().unwrap() {
            assert!(is_str(&p["name"]));
            if p.get("skipped").is_some() {
                continue;
            }
            assert!(is_str(&p["output"]), "{p}");
            let source = p["source"].as_str().unwrap();
            assert!(["render", "common-prefix", "polyfill"].contains(&source));
            for e in p["exports"].as_array().unwrap() {
                let status = e["status"].as_str().unwrap();
                assert!(
                    ["accepted", "rejected", "not-checked"].contains(&status),
                    "{e}"
                );
                assert!(is_str(&e["by"]));
            }
        }
    }
    let prompt = &doc["prompt"];
    for key in ["tool_block", "tool_history"] {
        let v = prompt[key].as_str().unwrap();
        assert!(["native", "polyfilled"].contains(&v), "{key}: {v}");
    }
    assert!(prompt["prefix_stable"].is_boolean() && prompt["problems"].is_array());
    for b in prompt["prefix_breaks"].as_array().unwrap() {
        assert!(b["after_messages"].is_u64() && b["at"].is_u64() && is_str(&b["why"]));
    }
    for span in prompt["spans"].as_array().unwrap() {
        assert!(span["range"][0].is_u64() && span["range"][1].is_u64() && is_str(&span["text"]));
    }
}

#[test]
fn a_shipped_template_works_and_exits_0() {
    let (code, doc) = check_json("templates/hermes-think.jinja");
    assert_schema(&doc);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(doc["verdict"], "works");
    assert_eq!(doc["warnings"], json!([]));
    let d = &doc["detection"];
    assert_eq!(
        d["reasoning"],
        json!({"mode": "tag", "start": "<think>", "end": "</think>", "source": "rendered"})
    );
    assert_eq!(d["thinking_switch"], "enable_thinking");
    assert_eq!(d["tool_formats"][0]["call_start"], "<tool_call>\n");
    assert_eq!(d["tool_formats"][0]["source"], "rendered");
    let names: Vec<&str> = doc["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["shape"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "default",
            "thinking-on",
            "thinking-off",
            "required",
            "named-function",
            "parallel-off"
        ]
    );
    let default = &doc["shapes"][0]["probes"];
    let one = default
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "one-call")
        .unwrap();
    assert_eq!(
        one["output"],
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"
    );
    assert_eq!(doc["prompt"]["spans"].as_array().unwrap().len(), 3);
    assert_eq!(doc["prompt"]["tool_block"], "native");
}

#[test]
fn a_template_that_renders_no_call_warns_and_exits_3() {
    let dir = folder("silent", &[("silent.jinja", SILENT)]);
    let path = dir.join("silent.jinja");
    let (code, doc) = check_json(path.to_str().unwrap());
    assert_schema(&doc);
    assert_eq!(code, Some(3), "{doc:#}");
    assert_eq!(doc["verdict"], "warnings");
    let formats = doc["detection"]["tool_formats"].as_array().unwrap();
    assert!(
        formats.iter().all(|t| t["source"] == "instructions"),
        "{formats:?}"
    );
    assert!(doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["what"]
            == "the template renders no tool call; calls are read as the hermes dialect"));
    // The human report says the same, one line per warning with what to do.
    let out = run(&["check", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).contains(
            "  warning: the template renders no tool call; calls are read as the hermes dialect: \
         check real model outputs, or make the template render assistant tool_calls\n"
        ),
        "{}",
        stdout(&out)
    );
}

/// [`SILENT`] with an example call in its instructions: the format is read
/// from the example, and the report says so.
const SHOWN: &str = "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}\nCall them as \
<call>{\"name\": \"f\", \"arguments\": {}}</call><|im_end|>\n{% endif %}\
{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#[test]
fn a_format_the_instructions_show_is_reported_as_prose() {
    let dir = folder("shown", &[("shown.jinja", SHOWN)]);
    let path = dir.join("shown.jinja");
    let (code, doc) = check_json(path.to_str().unwrap());
    assert_schema(&doc);
    assert_eq!(code, Some(3), "{doc:#}");
    let formats = doc["detection"]["tool_formats"].as_array().unwrap();
    assert_eq!(formats.len(), 1, "{formats:?}");
    assert_eq!(formats[0]["source"], "prose");
    assert_eq!(formats[0]["call_start"], "<call>");
    assert_eq!(
        formats[0]["example"],
        r#"<call>{"name": "f", "arguments": {}}</call>"#
    );
    let out = run(&["check", path.to_str().unwrap()], b"");
    assert!(
        stdout(&out).contains(
            "tools: json-native \"\" \"<call>\" ... \"</call>\" (not rendered: shown by the template's instructions)\n"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_failing_plain_round_trip_is_unsupported_and_exits_4() {
    let dir = folder("twice", &[("twice.jinja", TWICE)]);
    let (code, doc) = check_json(dir.join("twice.jinja").to_str().unwrap());
    assert_schema(&doc);
    assert_eq!(code, Some(4), "{doc:#}");
    assert_eq!(doc["verdict"], "unsupported");
    let fatal: Vec<&Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["fatal"] == true)
        .collect();
    assert_eq!(fatal.len(), 1, "{fatal:?}");
    assert!(fatal[0]["what"]
        .as_str()
        .unwrap()
        .starts_with("default/no-call: parsed back wrong: content"));
}

#[test]
fn bad_input_is_one_line_and_exit_1_and_bad_usage_exit_2() {
    let out = run(&["check", "templates/no-such.jinja"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let dir = folder(
        "raises",
        &[("raises.jinja", "{{ raise_exception('never') }}")],
    );
    let out = run(&["check", dir.join("raises.jinja").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("chat-autoparser: ") && stderr(&out).lines().count() == 1);
    let empty = folder("empty", &[]);
    let out = run(&["check", empty.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no template found"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &["check", "templates", "--emit-response-template", "x.json"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = run(
        &["check", "templates/hermes-think.jinja", "--no-such-flag"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_folder_is_one_table_with_the_worst_exit_code() {
    let dir = folder(
        "table",
        &[
            ("a-silent.jinja", SILENT),
            (
                "b-hermes.jinja",
                include_str!("../../../templates/hermes-think.jinja"),
            ),
        ],
    );
    let out = run(&["check", dir.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // Piped: no progress on stderr.
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows[0],
        ["template", "verdict", "formats", "time", "warnings"]
    );
    assert_eq!(
        rows[1][..4],
        ["a-silent.jinja", "warnings", "-", "python-list?,hermes?"]
    );
    assert_eq!(
        rows[2][..4],
        ["b-hermes.jinja", "works", "tag", "json-native"]
    );
    assert_eq!(rows[2].last(), Some(&"0"));
    // With a broken template among them: its row says why, and exit 1.
    std::fs::write(dir.join("c-broken.jinja"), "{% if %}").unwrap();
    let out = run(&["check", dir.to_str().unwrap(), "--json"], b"");
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_schema(&lines[1]);
    assert_eq!(lines[2]["template"], "c-broken.jinja");
    assert!(
        lines[2]["error"].as_str().unwrap().contains("syntax"),
        "{}",
        lines[2]
    );
}

#[test]
fn the_response_template_goes_into_a_tokenizer_config() {
    let dir = folder(
        "emit",
        &[("tokenizer_config.json", "{\"bos_token\": \"<s>\"}")],
    );
    let config = dir.join("tokenizer_config.json");
    let out = run(
        &[
            "check",
            "templates/hermes-think.jinja",
            "--emit-response-template",
            config.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    assert_eq!(written["bos_token"], "<s>");
    let template = &written["response_template"];
    assert_eq!(template["version"], 1, "{template:#}");
    assert!(template.to_string().contains("tool_calls"), "{template:#}");
    // Read back as an author's own: a missing key is an input error.
    std::fs::write(&config, "{\"bos_token\": \"<s>\"}").unwrap();
    let out = run(
        &[
            "check",
            "templates/hermes-think.jinja",
            "--response-template",
            config.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no response_template"),
        "{}",
        stderr(&out)
    );
}

/// The interpreter `--engines` and `--response-template` run, when set
/// (`tools/test.sh` sets it to `.venv`'s); the test says so and passes without.
fn python() -> Option<String> {
    let python = std::env::var("CHAT_AUTOPARSER_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    if python.is_none() {
        println!("skipped: CHAT_AUTOPARSER_PYTHON is not set");
    }
    python
}

#[test]
fn a_hand_written_response_template_is_cross_checked_in_transformers() {
    let Some(_) = python() else {
        return;
    };
    let dir = folder("cross", &[]);
    let ours = dir.join("tokenizer_config.json");
    let ours_path = ours.to_str().unwrap();
    let out = run(
        &[
            "check",
            "templates/hermes-think.jinja",
            "--emit-response-template",
            ours_path,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Our own export agrees with our parser on every probe, the one whose
    // string argument holds `</tool_call>` included (a JSON call closes only
    // after its object).
    let (code, doc) = {
        let out = run(
            &[
                "check",
                "templates/hermes-think.jinja",
                "--response-template",
                ours_path,
                "--json",
            ],
            b"",
        );
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        )
    };
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(doc["warnings"], json!([]));
    assert_eq!(doc["engines"][0]["failed"], 0);
    assert!(doc["engines"][0]["checked"].as_u64() > Some(10), "{doc:#}");
    assert_eq!(doc["engines"][0]["engine"], "transformers");
    // An author's template that names the reasoning field otherwise
    // disagrees wherever there is reasoning.
    let text = std::fs::read_to_string(&ours).unwrap().replacen(
        "\"reasoning_content\"",
        "\"thoughts\"",
        1,
    );
    let theirs = dir.join("theirs.json");
    std::fs::write(&theirs, text).unwrap();
    let out = run(
        &[
            "check",
            "templates/hermes-think.jinja",
            "--response-template",
            theirs.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    for probe in [
        "thinking-on/reasoning+content",
        "thinking-on/reasoning+call",
    ] {
        assert!(
            text.contains(&format!(
                "  warning: {probe}: your response_template disagrees with our parse: ours {{"
            )),
            "{probe}: {text}"
        );
    }
}

#[test]
fn absent_engines_are_skipped_with_why() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args([
            "check",
            "templates/hermes-think.jinja",
            "--engines",
            "--json",
        ])
        .current_dir(crate::common::root())
        .env_remove("CHAT_AUTOPARSER_PYTHON")
        .env_remove("CHAT_AUTOPARSER_LLAMA_BIN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&doc);
    assert_eq!(
        doc["engines"],
        json!([
            {"status": "skipped", "engine": "llama.cpp", "why": "CHAT_AUTOPARSER_LLAMA_BIN is not set"},
            {"status": "skipped", "engine": "xgrammar", "why": "CHAT_AUTOPARSER_PYTHON is not set"},
            {"status": "skipped", "engine": "transformers", "why": "CHAT_AUTOPARSER_PYTHON is not set"}
        ])
    );
}

/// A stand-in Python that logs each start and answers every line with a
/// disagreement: enough to count how often a folder starts the checkers.
#[cfg(unix)]
fn logging_python(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let (python, log) = (dir.join("python"), dir.join("starts.log"));
    let _ = std::fs::remove_file(&log);
    let script = format!(
        "#!/bin/sh\n# Called as: python -c SCRIPT [--probe]\n\
         if [ \"$3\" = --probe ]; then echo probe >> {log}; exit 0; fi\n\
         echo run >> {log}\n\
         while read -r line; do echo '{{\"ok\": false, \"error\": \"stand-in\"}}'; done\n",
        log = log.display()
    );
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    (python, log)
}

#[cfg(unix)]
#[test]
fn a_folder_starts_each_python_checker_once() {
    let hermes = include_str!("../../../templates/hermes-think.jinja");
    let dir = folder("one-python", &[("a.jinja", hermes), ("b.jinja", hermes)]);
    let (python, log) = logging_python(
        &std::env::temp_dir().join(format!("check-cli-python-{}", std::process::id())),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chat-autoparser"))
        .args(["check", dir.to_str().unwrap(), "--engines", "--json"])
        .env("CHAT_AUTOPARSER_PYTHON", &python)
        .env_remove("CHAT_AUTOPARSER_LLAMA_BIN")
        .output()
        .unwrap();
    let docs: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{}", stderr(&out));
    for doc in &docs {
        let transformers = &doc["engines"][2];
        assert_eq!(transformers["engine"], "transformers", "{doc}");
        assert_eq!(transformers["status"], "ran", "{doc}");
        assert!(transformers["failed"].as_u64() > Some(0), "{doc}");
    }
    // One import check and one worker per checker (xgrammar, transformers),
    // not one of each per template.
    let starts = std::fs::read_to_string(&log).unwrap();
    assert_eq!(starts, "probe\nrun\nprobe\nrun\n");
}

/// ChatML that writes an assistant turn's calls before its content.
const CALLS_FIRST: &str = "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}\
{%- for m in messages %}<|im_start|>{{ m.role }}\n\
{%- for tc in m.tool_calls or [] %}<tool_call>\n{{ {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}\n</tool_call>\n{% endfor %}\
{{ m.content or '' }}<|im_end|>\n{% endfor %}\
{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// The `content+call` probe of `doc`'s default shape.
fn content_and_call(doc: &Value) -> &Value {
    doc["shapes"][0]["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "content+call")
        .unwrap_or_else(|| panic!("no content+call probe: {doc}"))
}

#[test]
fn the_probes_are_parsed_under_the_policy_given() {
    let dir = folder("policy", &[("calls-first.jinja", CALLS_FIRST)]);
    let template = dir.join("calls-first.jinja");
    let checked = |policy: &str| {
        let args = [
            "check",
            template.to_str().unwrap(),
            "--json",
            "--policy",
            policy,
        ];
        let out = run(&args, b"");
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&out), stderr(&out)));
        doc
    };
    // lossless keeps the text after the call: the turn round-trips.
    let lossless = checked("lossless");
    let probe = content_and_call(&lossless);
    assert_eq!(
        probe["output"].as_str().unwrap().find("<tool_call>"),
        Some(0)
    );
    assert!(probe.get("parse_error").is_none(), "{probe}");
    // compatible drops it (text_after_calls: drop), and says so.
    let compatible = checked("compatible");
    assert_eq!(
        content_and_call(&compatible)["parse_error"],
        "content \"\", expected \"Let me check the weather.\""
    );
    let out = run(
        &["check", template.to_str().unwrap(), "--policy", "strict"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
