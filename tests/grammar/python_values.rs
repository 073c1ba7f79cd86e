//! Tagged values a template prints with Python's `str()` (ByteDance-Seed-OSS
//! style, `<parameter=meta>{'k': True}</parameter>`): the analysis tells
//! them from `tojson` printing by its object render, the GBNF export takes
//! the Python literals the template writes (its Python syntax also takes
//! JSON's `true`, `null`, as models write both), and the structural tag, whose
//! xgrammar XML styles read JSON values, loosens those arguments with a
//! warning instead of rejecting what the template writes.

use chat_autoparser::analysis::ArgumentsSlot;
use chat_autoparser::grammar::{gbnf, structural_tag, Recognizer};
use chat_autoparser::{Analysis, ChatTemplate, Options, Protocol, TemplateConfig, ToolChoice};
use serde_json::json;

const QWEN_XML: &str = include_str!("../../templates/qwen-coder-xml.jinja");
const TOJSON: &str = "{{ value if value is string else value | tojson }}";

/// qwen-coder-xml as a template printing values with `str()` (`{{ value }}`).
fn printed_with_str() -> String {
    assert!(QWEN_XML.contains(TOJSON));
    QWEN_XML.replace(TOJSON, "{{ value }}")
}

fn analysis(source: &str) -> Analysis {
    let template = ChatTemplate::new(source, &TemplateConfig::default()).expect("compiles");
    template.analyze().expect("analyses")
}

fn python_values(a: &Analysis) -> bool {
    match &a.tools.as_ref().expect("tools").arguments {
        ArgumentsSlot::Tagged(t) => t.python_values,
        other => panic!("tagged arguments expected: {other:?}"),
    }
}

fn protocol(a: &Analysis) -> Protocol {
    let tool = json!({"type": "function", "function": {"name": "save_note", "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string"}, "meta": {"type": "object"}},
        "required": ["text", "meta"]}}});
    let options = Options::default()
        .with_tools(vec![tool])
        .with_tool_choice(ToolChoice::Required);
    Protocol::new(a, &options)
}

fn call(meta: &str) -> String {
    format!("<tool_call>\n<function=save_note>\n<parameter=text>\nhi\n</parameter>\n<parameter=meta>\n{meta}\n</parameter>\n</function>\n</tool_call>")
}

#[test]
fn the_object_render_tells_str_printing_from_tojson() {
    assert!(!python_values(&analysis(QWEN_XML)));
    assert!(python_values(&analysis(&printed_with_str())));
}

#[test]
fn the_gbnf_takes_the_python_literals_the_template_writes() {
    let python = gbnf(&protocol(&analysis(&printed_with_str()))).unwrap();
    let recognizer = Recognizer::new(&python.gbnf).unwrap();
    assert!(recognizer.accepts(&call("{'ok': True, 'n': None}")));
    assert!(
        !recognizer.accepts(&call("{'ok': True")),
        "a literal, whole"
    );
    // A template printing objects with `tojson` may still print scalars
    // with `str()`: both notations.
    let json = gbnf(&protocol(&analysis(QWEN_XML))).unwrap();
    let recognizer = Recognizer::new(&json.gbnf).unwrap();
    assert!(recognizer.accepts(&call("{\"ok\": true}")));
    assert!(recognizer.accepts(&call("{'ok': True}")));
}

#[test]
fn the_structural_tag_loosens_what_no_xml_style_reads() {
    let json = structural_tag(&protocol(&analysis(QWEN_XML))).unwrap();
    assert!(json
        .structural_tag
        .to_string()
        .contains("qwen_xml_parameter"));
    let python = structural_tag(&protocol(&analysis(&printed_with_str()))).unwrap();
    let tag = python.structural_tag.to_string();
    assert!(!tag.contains("qwen_xml_parameter"), "{tag}");
    assert!(
        tag.contains(r#""begin":"<parameter=meta>\n""#),
        "one tag per argument, keys exact: {tag}"
    );
    assert_eq!(
        python.warnings,
        ["save_note: tagged arguments in no xgrammar style; keys exact, values other than strings accepted as any text"]
    );
}
