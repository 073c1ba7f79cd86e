//! Object and list argument values written as nested elements
//! (`<route><stop>Paris</stop></route>`, `<li>a</li><li>b</li>`), as
//! MiniMax-M3 writes them, on a small template written for these tests
//! (`tests/common/elements_template.rs`, shared with the grammar's).
//!
//! The analysis must learn the element notation from the renders of an
//! object and a list value (A5), with the item element's name (`li` here)
//! taken from the render, not assumed. The parser must read a value made of
//! whole elements, each closed at its own depth, and type it by the tool's
//! schema; a string argument keeps such a value as the text written; text
//! that is not whole elements stays a string; streaming equals batch.

use chat_autoparser::analysis::{ArgumentsSlot, ComparisonStatus, Elements};
use chat_autoparser::Options;
use chat_autoparser::ParserConfig;
use serde_json::{json, Value};

use crate::common::streaming;

use crate::common::elements_template;

use elements_template::analysis;

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "plan", "parameters": {
        "type": "object",
        "properties": {
            "route": {"type": "object", "properties": {
                "stops": {"type": "array", "items": {"type": "string"}},
                "days": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
            "limit": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]}
        }}}}),
    ]
}

fn arguments(output: &str) -> String {
    let parser = analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap();
    let m = streaming::parse_and_stream(&parser, output);
    assert_eq!(m.tool_calls.len(), 1, "{output}: {m:?}");
    assert_eq!(m.tool_calls[0].function.name, "plan");
    m.tool_calls[0].function.arguments.clone()
}

#[test]
fn element_notation_is_learned() {
    let a = analysis();
    let ArgumentsSlot::Tagged(t) = &a.tools.as_ref().unwrap().arguments else {
        panic!("tagged arguments")
    };
    let expected = Elements {
        open_prefix: "<".into(),
        open_suffix: ">".into(),
        close_prefix: "</".into(),
        close_suffix: ">".into(),
        item: "li".into(),
    };
    assert_eq!(t.elements.as_ref(), Some(&expected));
    let a5 = a.comparisons.iter().find(|c| c.name == "A5").unwrap();
    assert!(
        matches!(&a5.status, ComparisonStatus::Found(d) if d.contains("nested elements")),
        "{a5:?}"
    );
    assert!(
        !a.preserved_tokens.iter().any(|p| p.contains("li")),
        "no probe name in {:?}",
        a.preserved_tokens
    );
}

#[test]
fn objects_and_lists_become_json_typed_by_the_schema() {
    let out = "<call name=\"plan\"><route><stops><li>Paris</li><li>1</li></stops><days>3</days></route><tags><li>x</li></tags></call>";
    assert_eq!(
        arguments(out),
        r#"{"route": {"stops":["Paris","1"],"days":3}, "tags": ["x"]}"#
    );
    // The first alternative that fits: not an integer, so the object.
    assert_eq!(
        arguments("<call name=\"plan\"><limit><max>10</max></limit></call>"),
        r#"{"limit": {"max":10}}"#
    );
    assert_eq!(
        arguments("<call name=\"plan\"><limit>5</limit></call>"),
        r#"{"limit": 5}"#
    );
    // An empty element is the empty list or object its schema names.
    assert_eq!(
        arguments("<call name=\"plan\"><tags></tags></call>"),
        r#"{"tags": []}"#
    );
}

#[test]
fn a_string_argument_keeps_its_elements_as_text() {
    // The closing tag of the inner element does not end the value.
    let out = "<call name=\"plan\"><note><b>hi</b> there</note><tags><li>a</li></tags></call>";
    assert_eq!(
        arguments(out),
        r#"{"note": "<b>hi</b> there", "tags": ["a"]}"#
    );
    let out = "<call name=\"plan\"><note><b>hi</b></note></call>";
    assert_eq!(arguments(out), r#"{"note": "<b>hi</b>"}"#);
}

#[test]
fn text_that_is_not_whole_elements_stays_a_string() {
    assert_eq!(
        arguments("<call name=\"plan\"><note>x < y</note></call>"),
        r#"{"note": "x < y"}"#
    );
    // A list that does not fit its schema is the text written.
    assert_eq!(
        arguments("<call name=\"plan\"><tags><a>1</a></tags></call>"),
        r#"{"tags": "<a>1</a>"}"#
    );
}

#[test]
fn unknown_tools_read_elements_by_their_shape() {
    let parser = analysis().parser(&ParserConfig::default()).unwrap();
    let m = parser.parse("<call name=\"other\"><q><li>1</li><li><k>true</k></li></q></call>");
    assert_eq!(
        m.tool_calls[0].function.arguments,
        r#"{"q": [1,{"k":true}]}"#
    );
}

#[test]
fn plain_string_values_still_stream() {
    let parser = analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap();
    let m = parser.parse_partial("<call name=\"plan\"><note>hello wor");
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"note": "hello wor"#);
    // A value cut inside its elements is not read yet.
    let m = parser.parse_partial("<call name=\"plan\"><route><days>3</da");
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"route": "#);
}
