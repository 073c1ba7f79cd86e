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
    assert!(!g.lazy, "required: the grammar applies from the first token");
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(r.accepts(&call("get_weather", r#"{"city": "Paris"}"#)), "{}", g.gbnf);
    assert!(!r.accepts(&call("get_time", "{}")), "{}", g.gbnf);
    assert!(!r.accepts("It is sunny."), "required: a call must be written");
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
