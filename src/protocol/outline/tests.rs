//! The lowering on shipped templates: what each pass makes of them.

use serde_json::{json, Value};

use super::*;
use crate::protocol::testing::{two_tool_protocol, weather_parameters, weather_protocol};
use crate::protocol::{Naming, ToolChoice};

fn outline(template: &str, choice: ToolChoice, parallel: bool) -> Outline {
    outline_for(template, weather_parameters(), choice, parallel)
}

/// The outline of `template` for one tool, `get_weather`, of `parameters`.
fn outline_for(template: &str, parameters: Value, choice: ToolChoice, parallel: bool) -> Outline {
    weather_protocol(template, parameters, choice, parallel).outline()
}

const HERMES: &str = include_str!("../../../templates/hermes-think.jinja");
const QWEN_XML: &str = include_str!("../../../templates/qwen-coder-xml.jinja");
const PYTHON: &str = include_str!("../../../templates/python-calls.jinja");

/// Every node of the tree, rules included, depth first.
fn nodes(outline: &Outline) -> Vec<&Node> {
    let mut out = Vec::new();
    let mut stack: Vec<&Node> = vec![&outline.root];
    stack.extend(outline.rules.iter().map(|r| &r.node));
    while let Some(node) = stack.pop() {
        out.push(node);
        stack.extend(node.children());
    }
    out
}

#[test]
fn auto_is_free_text_or_content_up_to_a_lazy_section() {
    let o = outline(HERMES, ToolChoice::Auto, true);
    let free = &auto_options(&o)[0];
    assert!(matches!(&free.kind, Kind::Optional(t) if t.produces == Produces::Content));
    let with_calls = with_calls(&o);
    assert_eq!(
        with_calls[0].kind,
        Kind::Optional(Box::new(
            Node::new(Kind::Until {
                stops: vec!["<tool_call>".into()]
            })
            .producing(Produces::Content)
        ))
    );
    assert!(with_calls[1].lazy_start, "{:?}", with_calls[1]);
    let repeat = nodes(&o).into_iter().find_map(|n| match &n.kind {
        Kind::Repeat { min, max, .. } => Some((*min, *max)),
        _ => None,
    });
    assert_eq!(repeat, Some((1, None)));
    let call = o.rule(0);
    assert_eq!(call.produces, Produces::Call);
    let names: Vec<&Node> = nodes(&o)
        .into_iter()
        .filter(|n| n.produces == Produces::Name)
        .collect();
    assert_eq!(
        names[0].kind,
        Kind::ToolName {
            name: "get_weather".into(),
            quoted: true
        }
    );
}

#[test]
fn required_and_single_calls_are_applied_once() {
    let o = outline(HERMES, ToolChoice::Required, false);
    assert!(
        !nodes(&o)
            .iter()
            .any(|n| matches!(n.kind, Kind::FreeText { .. })),
        "no free text beside a required call"
    );
    assert!(nodes(&o)
        .iter()
        .any(|n| matches!(n.kind, Kind::Repeat { max: Some(1), .. })));
    let none = outline(HERMES, ToolChoice::None, true);
    assert!(none.rules.is_empty());
}

#[test]
fn tagged_arguments_are_members_with_raw_or_typed_values() {
    let o = outline(QWEN_XML, ToolChoice::Auto, true);
    let members = first_members(&o);
    let keys: Vec<(&str, bool)> = members
        .iter()
        .map(|m| (m.key.as_str(), m.required))
        .collect();
    assert_eq!(keys, [("city", true), ("days", false)]);
    assert!(raw(&members[0]), "a string is raw up to its closer");
    assert!(!raw(&members[1]), "an integer is typed");
}

/// The members of the first object in the tree.
fn first_members(o: &Outline) -> Vec<Member> {
    nodes(o)
        .into_iter()
        .find_map(|n| match &n.kind {
            Kind::Members { list, .. } => Some(list.clone()),
            _ => None,
        })
        .unwrap()
}

/// Whether a member's value may be raw text up to its closer.
fn raw(m: &Member) -> bool {
    let mut stack = vec![&m.node];
    while let Some(n) = stack.pop() {
        if n.produces == Produces::Value && matches!(n.kind, Kind::Until { .. }) {
            return true;
        }
        stack.extend(n.children());
    }
    false
}

#[test]
fn values_no_branch_of_which_is_a_string_are_typed_as_in_the_exports() {
    let parameters = json!({"type": "object", "properties": {
        "when": {"anyOf": [{"type": "integer"}, {"type": "object"}]},
        "where": {"properties": {"lat": {"type": "number"}}},
        "unit": {"anyOf": [{"type": "string"}, {"const": "C"}]}}});
    let o = outline_for(QWEN_XML, parameters, ToolChoice::Auto, true);
    let raw: Vec<(String, bool)> = first_members(&o)
        .iter()
        .map(|m| (m.key.clone(), raw(m)))
        .collect();
    let expected = [("when", false), ("where", false), ("unit", true)];
    let expected: Vec<(String, bool)> = expected.iter().map(|(k, r)| (k.to_string(), *r)).collect();
    assert_eq!(raw, expected);
}

#[test]
fn python_calls_are_keyword_members() {
    let o = outline(PYTHON, ToolChoice::Auto, true);
    let arguments = nodes(&o)
        .into_iter()
        .find(|n| n.produces == Produces::Arguments)
        .unwrap();
    let Kind::Members { separator, .. } = &arguments.kind else {
        panic!("{arguments:?}")
    };
    assert_eq!(separator.kind, Kind::Literal(", ".into()));
}

/// The tool names the outline's calls may write.
fn call_names(o: &Outline) -> Vec<String> {
    let mut names: Vec<String> = nodes(o)
        .into_iter()
        .filter_map(|n| match &n.kind {
            Kind::ToolName { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn allowed(names: &[&str], required: bool) -> ToolChoice {
    ToolChoice::AllowedTools {
        names: names.iter().map(|n| n.to_string()).collect(),
        required,
    }
}

#[test]
fn allowed_tools_narrow_the_calls_and_required_drops_free_text() {
    let all = two_tool_protocol(HERMES, ToolChoice::Auto).outline();
    assert_eq!(call_names(&all), ["get_time", "get_weather"]);
    let auto = two_tool_protocol(HERMES, allowed(&["get_weather"], false)).outline();
    assert_eq!(call_names(&auto), ["get_weather"]);
    let free_text = |o: &Outline| {
        nodes(o)
            .iter()
            .any(|n| matches!(n.kind, Kind::FreeText { .. }))
    };
    assert!(
        free_text(&auto),
        "auto: the model may answer without a call"
    );
    let required = two_tool_protocol(HERMES, allowed(&["get_weather"], true)).outline();
    assert_eq!(call_names(&required), ["get_weather"]);
    assert!(
        !free_text(&required),
        "required: no free text beside the calls"
    );
}

#[test]
fn allowed_tools_naming_a_missing_tool_is_an_input_error() {
    let p = two_tool_protocol(HERMES, allowed(&["get_weather", "get_news"], false));
    let e = p.check_servable().unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Input);
    assert_eq!(
        e.to_string(),
        "input error: tool_choice allowed_tools names what is not among the tools: \"get_news\""
    );
    assert!(p.check_tools().is_ok(), "the parser still reads the output");
}

/// A raw string value may be written inside the template's escape wrapper
/// (`<![CDATA[` … `]]>`): an option of its own, its text up to the
/// wrapper's end (the GBNF export offered it before it printed the
/// outline; the outline lacked it).
#[test]
fn a_raw_value_may_be_escaped_in_the_templates_wrapper() {
    let g = crate::analysis::TaggedArguments {
        value_prefix: ">".into(),
        value_suffix: "</param>".into(),
        raw_strings: true,
        escaped_value: Some(("<![CDATA[".into(), "]]>".into())),
        ..Default::default()
    };
    let g = crate::protocol::TaggedLayout::new(&g, "", "");
    let schema = serde_json::json!({"type": "string"});
    let root = std::sync::Arc::new(schema.clone());
    let value = super::values::tagged_value(&g, "city", &schema, &root);
    let Kind::Choice(options) = &value.kind else {
        panic!("{value:?}")
    };
    let escaped = Node::seq([
        Node::marker(">"),
        Node::marker("<![CDATA["),
        Node::new(Kind::Until {
            stops: vec!["]]>".into()],
        })
        .producing(Produces::Value),
        Node::marker("]]>"),
        Node::marker("</param>"),
    ]);
    assert_eq!(options.len(), 2, "{options:?}");
    assert_eq!(options[1], escaped);
}

/// The options of the `auto` body (after the reasoning part): free text,
/// then one per section.
fn auto_options(o: &Outline) -> &[Node] {
    let Kind::Sequence(parts) = &o.root.kind else {
        panic!("{:?}", o.root)
    };
    let Kind::Choice(body) = &parts[1].kind else {
        panic!("{:?}", parts[1])
    };
    body
}

/// The `auto` body's option with calls: `[content up to the section, …]`.
fn with_calls(o: &Outline) -> &[Node] {
    let option = &auto_options(o)[1];
    let Kind::Sequence(with_calls) = &option.kind else {
        panic!("{option:?}")
    };
    with_calls
}

#[test]
fn content_the_template_writes_after_the_calls_may_follow_the_section() {
    let mut p = weather_protocol(HERMES, weather_parameters(), ToolChoice::Auto, true);
    let before = p.outline();
    assert!(with_calls(&before)[1].lazy_start);
    for f in &mut p.tools.as_mut().unwrap().formats {
        f.content_after_calls = true;
    }
    let after = p.outline();
    // The lazy start is the section and the text after it, which a lazy
    // grammar reads from its trigger on.
    let after = &with_calls(&after)[1];
    assert!(after.lazy_start);
    let Kind::Sequence(section_then_text) = &after.kind else {
        panic!("{after:?}")
    };
    let mut section = with_calls(&before)[1].clone();
    section.lazy_start = false;
    assert_eq!(section_then_text[0], section);
    assert_eq!(
        section_then_text[1].kind,
        Kind::Optional(Box::new(
            Node::new(Kind::Until {
                stops: vec!["<tool_call>".into()]
            })
            .producing(Produces::Content)
        ))
    );
}

/// Every node of `node`, depth first.
fn descendants(node: &Node) -> Vec<&Node> {
    let mut out = vec![node];
    for child in node.children() {
        out.extend(descendants(child));
    }
    out
}

#[test]
fn the_parser_reads_one_generic_call_per_format() {
    let p = weather_protocol(HERMES, weather_parameters(), ToolChoice::Auto, true);
    let calls = p.parser_outline();
    assert_eq!(
        calls.sections.len(),
        p.tools.as_ref().unwrap().formats.len()
    );
    let first = descendants(&calls.sections[0]);
    let name = first.iter().find(|n| n.produces == Produces::Name).unwrap();
    assert_eq!(name.kind, Kind::NameSlot { quoted: true });
    assert!(
        !first
            .iter()
            .any(|n| matches!(&n.kind, Kind::ToolName { .. })),
        "a generic call names no tool"
    );
    assert!(calls.notations().is_empty() && calls.elements().is_empty());
}

#[test]
fn a_generic_calls_open_arguments_are_typed_as_the_format_writes_values() {
    let p = weather_protocol(QWEN_XML, weather_parameters(), ToolChoice::Auto, true);
    let calls = p.parser_outline();
    let all = descendants(&calls.sections[0]);
    let name = all.iter().find(|n| n.produces == Produces::Name).unwrap();
    assert_eq!(name.kind, Kind::NameSlot { quoted: false });
    let notations: Vec<&ValueNotation> = all
        .iter()
        .filter_map(|n| match &n.kind {
            Kind::Value(v) => Some(&v.notation),
            _ => None,
        })
        .collect();
    // Raw strings up to the close, else JSON or a Python literal.
    assert_eq!(notations, [&ValueNotation::Json, &ValueNotation::Python]);
    assert!(
        all.iter()
            .any(|n| matches!(&n.kind, Kind::Until { stops } if stops == &["\n</parameter>\n"])),
        "{all:#?}"
    );
}

#[test]
fn without_tools_the_parser_reads_the_formats_the_model_writes() {
    let mut p = weather_protocol(QWEN_XML, weather_parameters(), ToolChoice::Auto, true);
    p.tools = None;
    let calls = p.parser_outline();
    // The template's own format: its text stays whole content.
    assert_eq!(calls.sections.len(), 1);
    assert_eq!(calls.sections.len(), p.markup.formats.len());
}

/// The parser reads a section's markers off its node: the Python call
/// list's opening and closing markers and the separator between calls;
/// blanks where hermes writes its calls with no section markers.
#[test]
fn the_parser_reads_a_sections_markers_off_its_node() {
    let p = weather_protocol(PYTHON, weather_parameters(), ToolChoice::Auto, true);
    let outline = p.parser_outline();
    let marks: Vec<(&str, &str, &str)> = outline
        .section_marks()
        .map(|m| (m.start, m.separator, m.end))
        .collect();
    assert_eq!(
        marks,
        [("<|tool_call_start|>[", ", ", "]<|tool_call_end|>")]
    );
    let p = weather_protocol(HERMES, weather_parameters(), ToolChoice::Auto, true);
    let outline = p.parser_outline();
    let marks: Vec<SectionMarks<'_>> = outline.section_marks().collect();
    assert_eq!(marks.len(), 1);
    assert!(matches!(
        outline.sections[0].kind,
        Kind::Repeat { max: None, .. }
    ));
    assert_eq!(marks[0].start, "");
    assert_eq!(marks[0].end, "");
}

#[test]
fn the_parser_reads_the_turns_headers_as_nodes() {
    let source = include_str!("../../../templates/channel-harmony.jinja");
    let p = weather_protocol(source, weather_parameters(), ToolChoice::Auto, true);
    let outline = p.parser_outline();
    let markers: Vec<(&str, &str)> = outline.header_markers().collect();
    assert_eq!(markers, [("<|channel|>", "<|message|>")]);
    assert!(
        weather_protocol(HERMES, weather_parameters(), ToolChoice::Auto, true)
            .parser_outline()
            .headers
            .is_empty()
    );
}

/// Each format's generic call as the parser reads it: how it names its
/// function (a JSON member for hermes' call object, a Python call for
/// the LFM2-like list) and its marker tokens; and other formats' markers,
/// never one the template knows itself.
#[test]
fn the_parser_reads_each_call_and_the_foreign_markers_off_its_outline() {
    let hermes = weather_protocol(HERMES, weather_parameters(), ToolChoice::Auto, true);
    let outline = hermes.parser_outline();
    assert_eq!(outline.calls.len(), outline.sections.len());
    let call = &outline.calls[0];
    assert_eq!(
        call.layout.naming,
        Naming::JsonMember {
            name: vec!["name".into()],
            arguments: Some(vec!["arguments".into()]),
            id: None,
        }
    );
    assert_eq!(call.tokens, ["<tool_call>", "</tool_call>"]);
    let foreign = &outline.foreign;
    assert!(foreign.openers.contains(&"[TOOL_CALLS]".to_string()));
    assert!(foreign.openers.contains(&"<|tool_call_start|>".to_string()));
    for own in &call.tokens {
        assert!(!foreign.openers.contains(own) && !foreign.closers.contains(own));
    }

    let python = weather_protocol(PYTHON, weather_parameters(), ToolChoice::Auto, true);
    let outline = python.parser_outline();
    assert_eq!(outline.calls[0].layout.naming, Naming::Python);
    let own = "<|tool_call_start|>".to_string();
    assert!(!outline.foreign.openers.contains(&own));

    // Other dialects' calls: a bare JSON object, a Python list in brackets.
    let bare = bare_json_call();
    assert!(matches!(bare.layout.naming, Naming::JsonMember { .. }));
    assert_eq!((bare.marks().start, bare.marks().end), ("", ""));
    let list = bracketed_python_call();
    assert_eq!(list.layout.naming, Naming::Python);
    assert_eq!((list.marks().start, list.marks().end), ("[", "]"));
}
