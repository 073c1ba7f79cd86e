//! Request options that narrow what a call may write, in the GBNF export
//! (in-process recognizer): `tool_choice`'s `allowed_tools` keeps every
//! tool in the prompt but lets calls name only the listed ones; a `strict`
//! tool's arguments match its schema exactly (no key it does not declare).

use chat_autoparser::grammar::Recognizer;
use serde_json::json;

use crate::common::request_options::{allowed_tools, call, prepared, tools};

#[test]
fn allowed_tools_keep_every_tool_in_the_prompt_and_only_the_listed_in_the_gbnf() {
    let p = prepared(tools(false), allowed_tools("required", &["get_weather"]));
    let prompt = p.prompt.as_deref().unwrap();
    assert!(prompt.contains("\"get_time\"") && prompt.contains("\"get_weather\""));
    let g = p.gbnf().unwrap();
    assert!(
        !g.lazy,
        "required: the grammar applies from the first token"
    );
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(
        r.accepts(&call("get_weather", r#"{"city": "Paris"}"#)),
        "{}",
        g.gbnf
    );
    assert!(!r.accepts(&call("get_time", "{}")), "{}", g.gbnf);
    assert!(
        !r.accepts("It is sunny."),
        "required: a call must be written"
    );
}

#[test]
fn allowed_tools_naming_a_tool_the_request_lacks_is_an_input_error() {
    let p = prepared(tools(false), allowed_tools("auto", &["get_news"]));
    let e = p.gbnf().unwrap_err();
    assert_eq!(e.kind(), chat_autoparser::ErrorKind::Input);
    assert_eq!(
        e.message(),
        "tool_choice allowed_tools names what is not among the tools: \"get_news\""
    );
}

#[test]
fn strict_tools_take_no_undeclared_key_in_the_gbnf() {
    for (strict, extra_accepted) in [(false, true), (true, false)] {
        let p = prepared(tools(strict), json!("required"));
        let g = p.gbnf().unwrap();
        let r = Recognizer::new(&g.gbnf).unwrap();
        assert!(r.accepts(&call("get_time", "{}")));
        assert!(r.accepts(&call("get_weather", r#"{"city": "Paris"}"#)));
        // An undeclared key: refused by every schema with properties, and by
        // a strict tool without (`get_time`'s any object, closed).
        assert!(!r.accepts(&call("get_weather", r#"{"city": "Paris", "unit": "C"}"#)));
        assert_eq!(
            r.accepts(&call("get_time", r#"{"zone": "UTC"}"#)),
            extra_accepted,
            "strict {strict}\n{}",
            g.gbnf
        );
    }
}

/// What an export cannot hold a `strict` tool to is said, once, naming the
/// tool; a warning about another tool (`get.time`, whose name `get`
/// begins) is not taken for it.
#[test]
fn a_strict_tool_held_loosely_is_named_in_the_warnings() {
    let lookbehind = json!({"type": "string", "pattern": "(?<=a)b"});
    let tool = |name: &str, strict: bool, key: &str| {
        json!({"type": "function", "function": {"name": name, "strict": strict,
            "parameters": {"type": "object", "properties": {key: lookbehind}}}})
    };
    let tools = vec![
        tool("get_weather", true, "city"),
        tool("get.time", false, "zone"),
        json!({"type": "function", "function": {"name": "get", "strict": true}}),
    ];
    let p = prepared(tools, json!("auto"));
    let strict_lines = |warnings: Vec<String>| -> Vec<String> {
        warnings
            .into_iter()
            .filter(|w| w.contains("strict"))
            .collect()
    };
    let want = ["get_weather: a `strict` tool, held to a looser rule than its schema (above)"];
    assert_eq!(strict_lines(p.gbnf().unwrap().warnings), want);
    assert_eq!(strict_lines(p.lark().unwrap().warnings), want);
}
