//! `batch` at its edges: a `repeat` beyond its maximum, a wrong-typed
//! field, many spellings (and copies) of one template file.

use crate::common::cli::run;

use serde_json::{json, Value};

const HERMES: &str = "templates/hermes-think.jinja";

/// The result lines of `batch` for these requests, one per request.
fn batch(requests: &[Value]) -> Vec<Value> {
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let out = run(&["batch"], input.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), requests.len());
    lines
}

fn usage_error(message: &str) -> Value {
    json!({"ok": false, "error": {"kind": "usage", "message": message}})
}

/// The line without its `id`.
fn without_id(mut line: Value) -> Value {
    line.as_object_mut().unwrap().remove("id");
    line
}

#[test]
fn a_repeat_beyond_the_maximum_is_refused() {
    let lines = batch(&[
        json!({"template": HERMES, "input": "hi", "repeat": 10_001}),
        json!({"template": HERMES, "input": "hi", "repeat": 1_000_000_000_000u64}),
        json!({"template": HERMES, "input": "hi", "repeat": 3}),
    ]);
    for (line, given) in lines.iter().zip(["10001", "1000000000000"]) {
        assert_eq!(
            without_id(line.clone()),
            usage_error(&format!(
                "request field \"repeat\" must be an integer from 0 to 10000, not the number {given}"
            ))
        );
    }
    assert_eq!(lines[2]["result"]["content"], "hi");
    assert!(lines[2]["result"]["parse_us"].is_f64(), "{}", lines[2]);
}

#[test]
fn each_wrong_typed_field_gets_an_error_line() {
    let cases = [
        ("op", json!(1), "a string", "the number 1"),
        ("template", json!(["t"]), "a string", "an array"),
        ("template_name", json!(false), "a string", "a boolean"),
        ("messages", json!("notalist"), "an array", "a string"),
        ("tools", json!({"a": 1}), "an array", "an object"),
        ("enable_thinking", json!("yes"), "a boolean", "a string"),
        ("reasoning", json!(true), "a string", "a boolean"),
        (
            "tool_choice",
            json!(1),
            "a string or an object",
            "the number 1",
        ),
        ("parallel_tool_calls", json!(1), "a boolean", "the number 1"),
        (
            "add_generation_prompt",
            json!("no"),
            "a boolean",
            "a string",
        ),
        (
            "continue_final_message",
            json!(1),
            "a boolean or a string",
            "the number 1",
        ),
        (
            "response_schema",
            json!("x"),
            "an object or a boolean",
            "a string",
        ),
        ("partial", json!(0), "a boolean", "the number 0"),
        ("input", json!(["a"]), "a string", "an array"),
        (
            "chunk",
            json!(-5),
            "a non-negative integer",
            "the number -5",
        ),
        (
            "chunk",
            json!(2.5),
            "a non-negative integer",
            "the number 2.5",
        ),
        ("timing", json!("on"), "a boolean", "a string"),
        ("kwargs", json!([1]), "an object", "an array"),
        (
            "call_ids",
            json!("seed"),
            "a non-negative integer",
            "a string",
        ),
        (
            "repeat",
            json!(-1),
            "an integer from 0 to 10000",
            "the number -1",
        ),
        ("format", json!({}), "a string", "an object"),
    ];
    let requests: Vec<Value> = cases
        .iter()
        .map(|(field, value, _, _)| {
            let mut request = json!({"template": HERMES, "input": "hi"});
            request[*field] = value.clone();
            request
        })
        .collect();
    let lines = batch(&requests);
    for ((field, _, expected, given), line) in cases.iter().zip(lines) {
        assert_eq!(
            without_id(line),
            usage_error(&format!(
                "request field {field:?} must be {expected}, not {given}"
            ))
        );
    }
}

#[test]
fn null_is_an_absent_field() {
    let lines = batch(&[json!({
        "id": 1, "template": HERMES, "input": "<think>a</think>b", "messages": null,
        "tools": null, "chunk": null, "repeat": null, "partial": null, "kwargs": null,
    })]);
    assert_eq!(
        lines[0],
        json!({"id": 1, "ok": true, "result": {"role": "assistant", "content": "b", "reasoning_content": "a"}})
    );
}

/// Spellings of one file: `./` prefixes, doubled slashes, `..` detours,
/// the absolute path, a symlink to it and a copy of it.
fn spellings(count: usize, scratch: &std::path::Path) -> Vec<String> {
    let root = crate::common::root().display();
    let link = scratch.join("link.jinja");
    let copy = scratch.join("copy.jinja");
    std::os::unix::fs::symlink(format!("{root}/{HERMES}"), &link).unwrap();
    std::fs::copy(format!("{root}/{HERMES}"), &copy).unwrap();
    let mut all = vec![
        format!("{root}/{HERMES}"),
        "templates//hermes-think.jinja".to_owned(),
        "templates/../templates/hermes-think.jinja".to_owned(),
        link.display().to_string(),
        copy.display().to_string(),
    ];
    all.extend((all.len()..count).map(|i| format!("{}{HERMES}", "./".repeat(i))));
    all
}

#[test]
fn spellings_of_one_template_share_one_analysis() {
    let scratch = std::env::temp_dir().join(format!("cap-cli-batch-{}", std::process::id()));
    std::fs::remove_dir_all(&scratch).ok();
    std::fs::create_dir_all(&scratch).unwrap();
    let mut requests: Vec<Value> = spellings(300, &scratch)
        .into_iter()
        .map(|path| json!({"template": path, "input": "<think>a</think>b", "timing": true}))
        .collect();
    // Another template's contents are analysed on their own.
    requests
        .push(json!({"template": "templates/qwen-coder-xml.jinja", "input": "b", "timing": true}));
    let lines = batch(&requests);
    let cached: Vec<&Value> = lines.iter().map(|l| &l["result"]["cached"]).collect();
    assert_eq!(cached[0], false, "{}", lines[0]);
    assert!(cached[1..300].iter().all(|c| *c == true), "{cached:?}");
    assert_eq!(cached[300], false, "{}", lines[300]);
    assert!(lines[..300].iter().all(|l| l["result"]["content"] == "b"));
    std::fs::remove_dir_all(&scratch).ok();
}

#[test]
fn parse_lines_take_a_policy() {
    let input = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>\nDone.";
    let request = |policy: Value| json!({"template": HERMES, "input": input, "policy": policy});
    let lines = batch(&[
        request(json!("compatible")),
        request(json!({"preset": "compatible", "text_after_calls": "keep"})),
        request(json!("strict")),
    ]);
    assert_eq!(lines[0]["result"]["content"], Value::Null, "{}", lines[0]);
    assert_eq!(lines[1]["result"]["content"], "Done.", "{}", lines[1]);
    assert_eq!(lines[2]["ok"], false);
    assert!(
        lines[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("policy takes"),
        "{}",
        lines[2]
    );
}

/// `tool_choice` `allowed_tools` on batch lines: the grammar calls only the
/// listed tool, a parse reads another tool's call as content (an unknown
/// tool), and a malformed object is an input error.
#[test]
fn allowed_tools_narrow_grammar_and_parse_lines() {
    let tools = json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time"}},
    ]);
    let allowed = json!({"type": "allowed_tools", "allowed_tools": {"mode": "required",
        "tools": [{"type": "function", "function": {"name": "get_weather"}}]}});
    let time_call = r#"<tool_call>{"name": "get_time", "arguments": {}}</tool_call>"#;
    let lines = batch(&[
        json!({"op": "grammar", "template": HERMES, "tools": tools, "tool_choice": allowed}),
        json!({"template": HERMES, "tools": tools, "tool_choice": allowed, "input": time_call}),
        json!({"op": "grammar", "template": HERMES, "tools": tools,
            "tool_choice": {"type": "allowed_tools", "mode": "sometimes", "tools": []}}),
    ]);
    let gbnf = lines[0]["result"]["gbnf"].as_str().unwrap();
    assert!(
        gbnf.contains("get_weather") && !gbnf.contains("get_time"),
        "{gbnf}"
    );
    assert_eq!(lines[1]["result"]["content"], time_call, "{}", lines[1]);
    assert_eq!(
        without_id(lines[2].clone()),
        json!({"ok": false, "error": {"kind": "input",
            "message": "input error: tool_choice allowed_tools: `mode` must be \"auto\" or \"required\""}})
    );
}
