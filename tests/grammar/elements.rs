//! The grammar on a format that writes object and list argument values as
//! nested elements (`<route><stops><li>Paris</li></stops></route>`, as
//! MiniMax-M3 does), on the small template of tests/parser/nested_elements.rs
//! (`tests/common/elements_template.rs`).
//!
//! Object and array values must follow the tool's schema in the learned
//! element notation: declared members as keyed elements in schema order,
//! required ones present, list items as `li` elements within
//! `minItems`/`maxItems`, scalars as text of their type, extra members any
//! name; JSON is no longer accepted for them. Scalars inside elements are
//! JSON literals (the parser converts no other spelling there), an
//! argument's whole value may be a Python one (`True`), as the parser reads
//! typed arguments. What the grammar accepts, the parser reads back to the
//! JSON written.

use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{ChatTemplate, Options, ParserConfig, TemplateConfig, ToolChoice};
use serde_json::{json, Value};

use crate::common::elements_template;

use elements_template::{analysis, TEMPLATE};

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "plan", "parameters": {
        "type": "object",
        "properties": {
            "route": {"type": "object", "properties": {
                "stops": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "days": {"type": "integer"}}, "required": ["stops"]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2},
            "note": {"type": "string"},
            "limit": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]},
            "meta": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "exact": {"type": "boolean"}
        },
        "required": ["route"]}}}),
    ]
}

/// The eager (`required`) grammar's recognizer.
fn recognizer() -> Recognizer {
    let config = Options::default()
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Required);
    let g = analysis().grammar(&config).unwrap();
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    Recognizer::new(&g.gbnf).unwrap()
}

fn call(args: &str) -> String {
    format!("<call name=\"plan\">{args}</call>")
}

#[test]
fn the_template_s_own_render_is_accepted() {
    let args = json!({"route": {"stops": ["Paris", "Lyon"], "days": 3}, "tags": ["x"], "limit": {"max": 10},
        "meta": {"fast": true}, "grid": [[1, 2.5], []], "exact": false});
    let tool_call =
        json!({"id": "c1", "type": "function", "function": {"name": "plan", "arguments": args}});
    let messages = vec![
        json!({"role": "user", "content": "go"}),
        json!({"role": "assistant", "content": "", "tool_calls": [tool_call]}),
    ];
    let tmpl = ChatTemplate::new(TEMPLATE, &TemplateConfig::default()).unwrap();
    let render = tmpl
        .render(
            &chat_autoparser::RenderRequest::default()
                .with_messages(messages)
                .with_tools(Some(tools())),
        )
        .unwrap();
    let out = render
        .strip_prefix("<|user|>go<|end|><|bot|>")
        .and_then(|r| r.strip_suffix("<|end|>"))
        .unwrap();
    assert_eq!(
        out,
        "<call name=\"plan\"><route><stops><li>Paris</li><li>Lyon</li></stops><days>3</days></route><tags><li>x</li></tags>\
         <limit><max>10</max></limit><meta><fast>true</fast></meta><grid><li><li>1</li><li>2.5</li></li><li></li></grid><exact>false</exact></call>"
    );
    assert!(recognizer().accepts(out), "{out}");
    let m = analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap()
        .parse(out);
    let read: Value = serde_json::from_str(&m.tool_calls[0].function.arguments).unwrap();
    assert_eq!(read, args, "the parser reads back what the grammar accepts");
}

#[test]
fn values_follow_the_schema_in_element_notation() {
    let r = recognizer();
    for args in [
        "<route><stops><li>a</li></stops></route>",
        // Whitespace between sibling elements is scaffolding.
        "<route>\n  <stops>\n    <li>a b</li>\n  </stops>\n  <days>-2</days>\n</route>",
        "<route><stops><li>x &lt; y</li><li></li></stops></route><tags></tags>",
        "<route><stops><li>a</li></stops></route><limit>5</limit>",
        "<route><stops><li>a</li></stops></route><limit></limit><meta></meta>",
        "<route><stops><li>a</li></stops></route><meta><a>true</a><b-2>false</b-2></meta>",
        "<route><stops><li>a</li></stops></route><note><b>hi</b> there</note>",
        "<route><stops><li>a</li></stops></route><grid><li><li>-1e3</li></li></grid>",
        "<route><stops><li>a</li></stops></route><exact>True</exact>",
    ] {
        assert!(r.accepts(&call(args)), "{args}");
    }
    let parser = analysis()
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap();
    let m = parser.parse(&call(
        "<route><stops><li>a</li></stops></route><exact>True</exact>",
    ));
    assert_eq!(
        m.tool_calls[0].function.arguments,
        r#"{"route": {"stops":["a"]}, "exact": true}"#
    );
    for (why, args) in [
        ("JSON object", r#"<route>{"stops": ["a"]}</route>"#),
        ("JSON list", "<route><stops>[\"a\"]</stops></route>"),
        ("required member missing", "<route><days>3</days></route>"),
        ("minItems 1", "<route><stops></stops></route>"),
        (
            "members out of schema order",
            "<route><days>3</days><stops><li>a</li></stops></route>",
        ),
        (
            "undeclared member",
            "<route><stops><li>a</li></stops><speed>3</speed></route>",
        ),
        (
            "item element misnamed",
            "<route><stops><item>a</item></stops></route>",
        ),
        (
            "closing tag misnamed",
            "<route><stops><li>a</li></stops></rout>",
        ),
        (
            "integer as text",
            "<route><stops><li>a</li></stops><days>three</days></route>",
        ),
        (
            "text beside elements",
            "<route>go <stops><li>a</li></stops></route>",
        ),
        (
            "enum",
            "<route><stops><li>a</li></stops></route><tags><li>z</li></tags>",
        ),
        (
            "maxItems 2",
            "<route><stops><li>a</li></stops></route><tags><li>x</li><li>y</li><li>x</li></tags>",
        ),
        (
            "oneOf: neither integer nor object",
            "<route><stops><li>a</li></stops></route><limit>five</limit>",
        ),
        (
            "oneOf: member of the object",
            "<route><stops><li>a</li></stops></route><limit><min>1</min></limit>",
        ),
        (
            "additionalProperties type",
            "<route><stops><li>a</li></stops></route><meta><a>yes</a></meta>",
        ),
        (
            "a Python literal inside elements",
            "<route><stops><li>a</li></stops></route><meta><a>True</a></meta>",
        ),
        (
            "nested list item type",
            "<route><stops><li>a</li></stops></route><grid><li><li>x</li></li></grid>",
        ),
    ] {
        assert!(!r.accepts(&call(args)), "{why}: {args}");
    }
}
