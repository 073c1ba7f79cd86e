//! The Lark export's text: shipped templates through the whole export, and
//! small hand-made outlines through the printer (one lexing rule each).

use super::printer::Printer;
use super::*;
use crate::protocol::outline::{Kind, Node, Outline, Produces};
use crate::protocol::testing::{weather_parameters, weather_protocol};
use crate::protocol::ToolChoice;

fn protocol(template: &str, choice: ToolChoice, parallel: bool) -> Protocol {
    weather_protocol(template, weather_parameters(), choice, parallel)
}

const HERMES: &str = include_str!("../../../templates/hermes-think.jinja");
const QWEN_XML: &str = include_str!("../../../templates/qwen-coder-xml.jinja");

/// The grammar of an outline whose root is `root`.
fn printed(root: Node) -> String {
    let outline = Outline {
        root,
        rules: Vec::new(),
        prompt_reasoning: String::new(),
        warnings: Vec::new(),
    };
    let options = LarkOptions::default();
    Printer::new(&options, &outline).print(&outline)
}

fn until(stop: &str) -> Node {
    Node::new(Kind::Until {
        stops: vec![stop.into()],
    })
    .producing(Produces::Content)
}

fn free() -> Node {
    Node::new(Kind::FreeText {
        exclude: Vec::new(),
    })
    .producing(Produces::Content)
}

#[test]
fn auto_is_text_or_text_up_to_the_call_marker() {
    let out = lark(&protocol(HERMES, ToolChoice::Auto, true)).unwrap();
    let text = &out.lark;
    assert!(
        text.starts_with(
            "start: ( OPEN reasoning_until )? ( TEXT? | head call_0_get_weather_rest ( WS? call_0_get_weather ( WS? call_0_get_weather )* )? ) WS?\n"
        ),
        "{text}"
    );
    assert!(text.contains("head[lazy]: HEAD\n"), "{text}");
    assert!(
        text.contains(r"HEAD: /(?s:.*)<tool_call>/ & ~/[ \t\r\n]*(<think>)(?s:.*)/"),
        "{text}"
    );
    assert!(
        text.contains(r"TEXT: /(?s:.+)/ & ~/[ \t\r\n]*(<think>|<tool_call>)(?s:.*)/"),
        "{text}"
    );
    assert!(
        text.contains(r#""additionalProperties":false,"x-guidance":{"lenient":true"#),
        "{text}"
    );
    assert_eq!(
        out,
        lark(&protocol(HERMES, ToolChoice::Auto, true)).unwrap(),
        "deterministic"
    );
}

#[test]
fn required_none_and_one_call() {
    let required = lark(&protocol(HERMES, ToolChoice::Required, true))
        .unwrap()
        .lark;
    assert!(
        required.starts_with("start: ( OPEN reasoning_until )? OPEN_2 call_0_get_weather_rest"),
        "{required}"
    );
    assert!(
        required.contains("OPEN_2: /[ \\t\\r\\n]*<tool_call>/"),
        "{required}"
    );
    assert!(
        !required.contains("TEXT"),
        "no free text under required: {required}"
    );
    let none = lark(&protocol(HERMES, ToolChoice::None, true))
        .unwrap()
        .lark;
    assert!(
        none.starts_with("start: ( OPEN reasoning_until )? TEXT? WS?\n"),
        "{none}"
    );
    assert!(!none.contains("get_weather"), "{none}");
    let single = lark(&protocol(HERMES, ToolChoice::Auto, false))
        .unwrap()
        .lark;
    assert!(!single.contains(")*"), "one call only: {single}");
    let missing = protocol(HERMES, ToolChoice::Function("nope".into()), true);
    assert!(lark(&missing).is_err());
}

#[test]
fn tagged_strings_are_raw_up_to_the_closer() {
    let text = lark(&protocol(QWEN_XML, ToolChoice::Auto, true))
        .unwrap()
        .lark;
    assert!(
        text.contains(r"raw_until[lazy]: /(?s:.*)<\/parameter>/"),
        "{text}"
    );
    assert!(
        text.contains(r#"arg_get_weather_city: "<parameter=" "city" ">" WS? raw_until WS?"#),
        "{text}"
    );
    assert!(
        text.contains("( value_get_weather_days | PY_INT )"),
        "{text}"
    );
}

#[test]
fn listed_special_tokens_use_token_syntax() {
    let options = LarkOptions {
        special_tokens: vec!["<tool_call>".into(), "[TOOL_CALLS]".into()],
    };
    let out = lark_with(&protocol(HERMES, ToolChoice::Required, true), &options).unwrap();
    assert!(
        out.lark.contains("\ncall_0_get_weather: <tool_call> WS?"),
        "{}",
        out.lark
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("[TOOL_CALLS]")),
        "{:?}",
        out.warnings
    );
}

/// Text up to a marker is one lazy lexeme ending with the marker's core;
/// the marker's rest follows it.
#[test]
fn text_up_to_a_marker_ends_with_its_core() {
    let root = Node::seq([until("\n</think>\n"), Node::marker("\n</think>\n")]);
    assert_eq!(
        printed(root),
        "start: content_until WS?\ncontent_until[lazy]: /(?s:.*)<\\/think>/\nWS: /[ \\t\\r\\n]+/\n"
    );
}

/// Two options beginning where one's first core begins the other's
/// (`to=` and `to=self<|m|>`): both begin with the shorter, as one lexeme.
#[test]
fn a_core_beginning_with_a_rivals_begins_with_its_lexeme() {
    let root = Node::choice(vec![
        Node::seq([Node::marker("to=self<|m|>"), free()]),
        Node::seq([Node::marker("to="), Node::literal("f")]),
    ]);
    let text = printed(root);
    assert!(
        text.starts_with("start: ( OPEN \"self<|m|>\" TEXT | OPEN \"f\" ) WS?\n"),
        "{text}"
    );
    assert!(text.contains("OPEN: /[ \\t\\r\\n]*to=/\n"), "{text}");
}

/// An optional wrapper opening before text up to a marker: the lazy head
/// may not begin with the opening (it would run past it), and lenient
/// nodes are left out.
#[test]
fn an_optional_opening_before_the_head_is_excluded_from_it() {
    let wrapper = Node::optional(Node::seq([Node::marker("<|final|>"), until("<call>")]));
    let call = Node::seq([Node::marker("<call>"), Node::literal("f")]);
    let lenient = Node::marker("<|lenient|>").lenient();
    let root = Node::choice(vec![Node::seq([wrapper, call]), lenient]);
    let text = printed(root);
    assert!(text.starts_with("start: OPEN? head \"f\" WS?\n"), "{text}");
    assert!(
        text.contains("HEAD: /(?s:.*)<call>/ & ~/[ \\t\\r\\n]*(<\\|final\\|>)(?s:.*)/\n"),
        "{text}"
    );
    assert!(!text.contains("lenient"), "{text}");
}

/// A header's attributes after a tagged name (` index="2"`): any text on
/// the line up to the header's close, one lazy lexeme.
#[test]
fn header_attributes_are_text_on_the_line_up_to_the_close() {
    let root = Node::seq([
        Node::marker("<|open|>call tool=\""),
        Node::literal("f"),
        Node::marker("\""),
        Node::new(Kind::Attributes {
            written: " index=\"1\"".into(),
            close: "<|sep|>".into(),
        }),
        Node::marker("<|sep|>"),
    ]);
    let text = printed(root);
    assert!(
        text.starts_with("start: OPEN \"f\" \"\\\"\" attributes WS?\n"),
        "{text}"
    );
    assert!(
        text.contains("attributes[lazy]: /[^\\n]*<\\|sep\\|>/\n"),
        "{text}"
    );
}

/// Objects and lists in nested-element notation: elements of any name
/// holding elements or text up to their closing tag; scalars stay typed.
#[test]
fn element_values_are_nested_elements() {
    use crate::protocol::outline::Elements;
    use crate::protocol::outline::{ValueNode, ValueNotation};
    use std::sync::Arc;
    let elements = Elements {
        open_prefix: "<".into(),
        open_suffix: ">".into(),
        close_prefix: "</".into(),
        close_suffix: ">".into(),
        item: "item".into(),
    };
    let value = |schema: serde_json::Value| {
        Node::new(Kind::Value(Box::new(ValueNode {
            schema: schema.clone(),
            root: Arc::new(schema),
            notation: ValueNotation::Element {
                tags: elements.clone(),
                raw_strings: true,
            },
        })))
        .producing(Produces::Value)
    };
    let root = Node::seq([
        value(serde_json::json!({"type": "object"})),
        Node::marker("|"),
        value(serde_json::json!({"type": "integer"})),
    ]);
    let text = printed(root);
    assert!(
        text.starts_with(
            "start: WS? ( ( WS? el_element )* WS? | EL_SCALAR ) \"|\" ( value__ | PY_INT ) WS?\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "el_element: \"<\" EL_NAME \">\" ( el_text | ( WS? el_element )* WS? \"</\" ) EL_NAME \">\"\n"
        ),
        "{text}"
    );
    assert!(text.contains("el_text[lazy]: EL_TEXT\n"), "{text}");
}

#[test]
fn tagged_arguments_are_in_the_schemas_order_or_sorted_by_key() {
    let parameters = serde_json::json!({
        "type": "object",
        "properties": {"unit": {"type": "string"}, "city": {"type": "string"}},
        "required": ["city"],
    });
    let p = weather_protocol(QWEN_XML, parameters, ToolChoice::Auto, true);
    let text = lark(&p).unwrap().lark;
    let args: Vec<&str> = text.lines().filter(|l| l.starts_with("args_")).collect();
    let listed = "( arg_get_weather_unit arg_get_weather_city | arg_get_weather_city )";
    let sorted = "( arg_get_weather_city ( arg_get_weather_unit )? )";
    assert_eq!(
        args,
        [format!("args_get_weather: ( {listed} | {sorted} )")],
        "{text}"
    );
}

/// A call's JSON id member is the model's to make up: written where the
/// template writes it, or left out, as the GBNF export and its trigger
/// always allowed (the Lark export used to require it).
#[test]
fn a_json_id_member_is_optional() {
    const MISTRAL: &str = include_str!("../../../templates/mistral-tool-calls.jinja");
    let text = lark(&protocol(MISTRAL, ToolChoice::Required, true))
        .unwrap()
        .lark;
    assert!(
        text.contains(
            r#"args_get_weather ( WS? "," WS? "\"id\"" WS? ":" WS? JSON_STRING )? WS? "}""#
        ),
        "{text}"
    );
}

/// After a prompt that closed the reasoning block, templates that render
/// its end again in the turn (`</think>` then the calls) are read by the
/// parser and allowed by the grammar: the Lark export used to leave the
/// marker out (a lenient node), rejecting those outputs in llguidance.
#[test]
fn an_end_marker_after_a_prompt_closed_block_is_optional() {
    let analysis = crate::ChatTemplate::new(HERMES, &crate::TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![serde_json::json!({"type": "function", "function": {
        "name": "get_weather", "parameters": weather_parameters()}})];
    let options = crate::Options {
        tools,
        tool_choice: ToolChoice::Required,
        enable_thinking: Some(false),
        ..Default::default()
    };
    let text = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
    assert!(text.starts_with("start: OPEN? "), "{text}");
    assert!(text.contains("OPEN: /[ \\t\\r\\n]*<\\/think>/"), "{text}");
}
