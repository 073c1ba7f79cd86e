//! Model output the parser used to lose (issue 17), on the corpus templates
//! whose formats showed each loss (`../shared/corpus/llamacpp`; the tests
//! skip with a message when it is absent). Each output is parsed after the
//! template's own generation prompt, in one piece and streamed in 1-, 3-
//! and 7-byte chunks (the same message), and its message and problems are
//! asserted exactly:
//!
//! - a corrupted header closer (`<|message|X>`) is no header: the sentence
//!   after it stays content, verbatim, and the call after it is still read;
//! - a label that is free text (`<|channel|>final and here is a long
//!   sentence<|message|>`) is no label: all of it is content;
//! - a member of a JSON call object the format does not have (`"note"`) is
//!   content, with a diagnostic; OpenAI's `"type"` is skipped;
//! - a DSML flag attribute with another value (`string="maybe"`) is content,
//!   with a diagnostic; with its `">` missing, the call is content, whole;
//! - a corrupted closing marker (`]<]minimaXx[>[</invoke>`) is content;
//! - a header label, a call header's attribute or label, or a type
//!   attribute holding a word the template never writes (`<|channel|>notes`,
//!   `index="1" note="urgent"`, `type="strnig"`) is content, reported
//!   (issue 28); so is a repeated name or a closing tag's name that is not
//!   the one it repeats (`<invoke name="get_time">` after `to=get_weather`,
//!   `</cty>` closing `<city>`), and a corrupted marker between two
//!   arguments no longer hides the second;
//! - mutated round-trip outputs of every template lose no word
//!   (`common/mutations.rs`);
//! - a tool marker with a header's shape (Kimi-K3's `<|close|>argument<|sep|>`
//!   beside its `<|close|>response<|sep|>` header) in the text of a call
//!   given back to the content (an unknown tool) stays there.

use chat_autoparser::parser::{Diagnostic, DiagnosticKind};
use chat_autoparser::Options;
use chat_autoparser::{AssistantMessage, ChatTemplate, ParserConfig, RenderRequest};
use chat_autoparser::{OutputParser, TemplateConfig};
use serde_json::{json, Value};

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City."},
            "days": {"type": "integer", "description": "Days."}}, "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "save_note", "description": "Note.",
        "parameters": {"type": "object", "properties": {
            "text": {"type": "string"}, "meta": {"type": "object"}}, "required": ["text"]}}}),
    ]
}

/// The parser of corpus template `name` after its generation prompt for one
/// user turn, or `None` (with a message) when the corpus is absent.
fn corpus_parser(name: &str) -> Option<OutputParser> {
    let template = crate::common::corpus_template(name)?;
    let analysis = template.analyze().unwrap();
    let request = RenderRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(Some(tools()))
        .with_add_generation_prompt(true);
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools())
            .with_prompt(Some(template.render(&request).unwrap()))
            .with_enable_thinking(Some(false)),
    );
    Some(analysis.parser(&config).unwrap())
}

/// The message and the problems' kinds and offsets; streaming in 1-, 3- and
/// 7-byte chunks gives the same message.
fn parse(p: &OutputParser, output: &str) -> (AssistantMessage, Vec<(DiagnosticKind, usize)>) {
    let parsed = p.parse_report(output, false);
    for size in [1, 3, 7] {
        let mut stream = p.stream();
        for piece in chat_autoparser::parser::char_chunks(output, size) {
            stream.push(piece);
        }
        stream.finish();
        assert_eq!(stream.message(), parsed.message, "in {size}-byte chunks");
    }
    let problems = parsed
        .diagnostics
        .iter()
        .map(|d: &Diagnostic| (d.kind, d.offset));
    (parsed.message.clone(), problems.collect())
}

fn calls(m: &AssistantMessage) -> Vec<(&str, &str)> {
    m.tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect()
}

#[test]
fn a_corrupted_header_closer_stays_content() {
    let Some(p) = corpus_parser("openai-gpt-oss-120b") else {
        return;
    };
    let sentence = "<|channel|>analysis<|message|X>Let me check that for you.";
    let output = format!(
        "{sentence}<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{{\"city\": \"Paris\"}}<|call|>"
    );
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some(sentence));
    assert_eq!(m.reasoning_content, "");
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(problems, []);
}

#[test]
fn a_label_that_is_free_text_stays_content() {
    let Some(p) = corpus_parser("openai-gpt-oss-120b") else {
        return;
    };
    let output = "<|channel|>final and here is a long sentence<|message|>Sunny.";
    let (m, problems) = parse(&p, output);
    assert_eq!(m.content.as_deref(), Some(output));
    assert_eq!(problems, []);
    // A label of a few short words is still a header (`<|constrain|>` is
    // no marker this template's analysis learned).
    let output = "<|channel|>final <|constrain|>json<|message|>{\"a\": 1}";
    let (m, _) = parse(&p, output);
    assert_eq!(m.content.as_deref(), Some("{\"a\": 1}"));
    // Words of text after the first are no channel's name either.
    let output = "<|channel|>commentary json<|message|>{\"a\": 1}";
    assert_eq!(parse(&p, output).0.content.as_deref(), Some(output));
    // 65 characters are too many for a label; 64 are not (the label is
    // the template's words, numbers and punctuation).
    let long = ["analysis"; 7].join("-") + "-12";
    assert_eq!(long.len(), 65);
    let output = format!("<|channel|>{long}<|message|>Sunny.");
    assert_eq!(
        parse(&p, &output).0.content.as_deref(),
        Some(output.as_str())
    );
    let output = format!("<|channel|>{}<|message|>Sunny.", &long[..64]);
    assert_eq!(parse(&p, &output).0.content.as_deref(), Some("Sunny."));
}

#[test]
fn a_label_the_template_never_writes_is_content() {
    let Some(p) = corpus_parser("openai-gpt-oss-120b") else {
        return;
    };
    // One word, but not one of the template's (`analysis`, `commentary`,
    // `final`): the header is text the model wrote, reported.
    let output = "<|channel|>notes<|message|>Sunny.";
    let (m, problems) = parse(&p, output);
    assert_eq!(m.content.as_deref(), Some(output));
    assert_eq!(problems, [(DiagnosticKind::UnknownLabel, 0)]);
    let header = "<|channel|>finaI<|message|>Sunny.";
    let output = format!("<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant{header}");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some(header));
    assert_eq!(m.reasoning_content, "Hmm.");
    let at = output.find(header).unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownLabel, at)]);
    // Kimi-K3's headers: the same.
    let Some(p) = corpus_parser("Kimi-K3") else {
        return;
    };
    let output = "<|close|>think<|sep|><|open|>responce<|sep|>Sunny.<|close|>response<|sep|>";
    let (m, problems) = parse(&p, output);
    assert_eq!(m.content.as_deref(), Some("<|open|>responce<|sep|>Sunny."));
    assert_eq!(problems, [(DiagnosticKind::UnknownLabel, 21)]);
}

const KIMI_TOOLS: &str =
    "<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>";

/// A Kimi-K3 call of `get_weather` for Paris, its header's label and rest
/// and its argument's type attribute as given.
fn kimi_call(label: &str, rest: &str, kind: &str) -> String {
    format!(
        "{KIMI_TOOLS}<|open|>{label} tool=\"get_weather\"{rest}<|sep|>\
         <|open|>argument key=\"city\" type=\"{kind}\"<|sep|>Paris<|close|>argument<|sep|>\
         <|close|>call<|sep|><|close|>tools<|sep|>"
    )
}

#[test]
fn attributes_and_labels_of_a_call_the_template_never_writes_are_content() {
    let Some(p) = corpus_parser("Kimi-K3") else {
        return;
    };
    let paris = [("get_weather", r#"{"city": "Paris"}"#)];
    // The template's own words, and another counter: scaffolding.
    let output = kimi_call("call", " index=\"7\"", "string");
    let (m, problems) = parse(&p, &output);
    assert_eq!((m.content.as_deref(), calls(&m)), (None, paris.to_vec()));
    assert_eq!(problems, []);
    // An attribute the template never writes, after its own.
    let output = kimi_call("call", " index=\"1\" note=\"urgent\"", "string");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("note=\"urgent\""));
    assert_eq!(calls(&m), paris);
    let at = output.find(" note").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
    // A value that is no number, and a misspelt attribute.
    for rest in [" index=\"first\"", " indx=\"1\""] {
        let output = kimi_call("call", rest, "string");
        let (m, problems) = parse(&p, &output);
        assert_eq!(m.content.as_deref(), Some(rest.trim()), "{rest}");
        assert_eq!(calls(&m), paris);
        assert_eq!(
            problems,
            [(DiagnosticKind::UnknownMember, output.find(rest).unwrap())]
        );
    }
    // A label before the name that is not the template's `call`.
    let output = kimi_call("calls", " index=\"1\"", "string");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("calls"));
    assert_eq!(calls(&m), paris);
    let at = output.find("calls").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
    // A type that is no JSON Schema type's name: the attribute is content.
    let output = kimi_call("call", " index=\"1\"", "strnig");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("type=\"strnig\"<|sep|>"));
    assert_eq!(calls(&m), paris);
    let at = output.find(" type=\"strnig").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
}

#[test]
fn a_gpt_oss_header_rest_the_template_never_writes_is_content() {
    let Some(p) = corpus_parser("openai-gpt-oss-120b") else {
        return;
    };
    let paris = [("get_weather", r#"{"city": "Paris"}"#)];
    let args = "<|message|>{\"city\": \"Paris\"}<|call|>";
    // A corrupted channel token after the name, and a label word the
    // template never writes before it.
    for (output, extra) in [
        (
            format!(" to=functions.get_weather<|chanel|>commentary json{args}"),
            "<|chanel|>commentary json",
        ),
        (
            format!("<|channel|>notes to=functions.get_weather{args}"),
            "notes",
        ),
        (
            format!("<|channel|>commentary to=functions.get_weather <|constrain|>jsn{args}"),
            "<|constrain|>jsn",
        ),
    ] {
        let (m, problems) = parse(&p, &output);
        assert_eq!(m.content.as_deref(), Some(extra), "{output}");
        assert_eq!(calls(&m), paris);
        let at = output.find(extra).unwrap();
        let at = if output[..at].ends_with(' ') {
            at - 1
        } else {
            at
        };
        assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)], "{output}");
    }
    // gpt-oss models write `<|constrain|>`, which the template never
    // renders: markup in a header, glued to the name or after a word.
    for output in [
        format!("<|channel|>commentary to=functions.get_weather<|constrain|>json{args}"),
        format!(" to=functions.get_weather<|channel|>commentary <|constrain|>json{args}"),
    ] {
        let (m, problems) = parse(&p, &output);
        assert_eq!(
            (m.content.as_deref(), calls(&m)),
            (None, paris.to_vec()),
            "{output}"
        );
        assert_eq!(problems, []);
    }
}

#[test]
fn a_repeated_name_that_differs_is_content() {
    let Some(p) = corpus_parser("muse-glimmer") else {
        return;
    };
    let body = "<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
    let output = format!(
        " to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_time\">\n{body}"
    );
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("get_time"));
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    let at = output.find("get_time").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
    // The same name again is the template's own writing.
    let output = output.replace("get_time", "get_weather");
    let (m, problems) = parse(&p, &output);
    assert_eq!((m.content, problems), (None, vec![]));
}

const M3: &str = "]<]minimax[>[";

/// A MiniMax-M3 call of `name` with `arguments` (written as the template
/// writes them, each marker after `M3`).
fn m3_call(name: &str, arguments: &str) -> String {
    format!(
        "{M3}<tool_call>\n{M3}<invoke name=\"{name}\">{arguments}{M3}</invoke>\n{M3}</tool_call>"
    )
}

#[test]
fn a_closing_tag_of_another_name_is_content() {
    let Some(p) = corpus_parser("MiniMax-M3") else {
        return;
    };
    let output = m3_call(
        "get_weather",
        &format!("{M3}<city>Paris{M3}</cty>{M3}<days>3{M3}</days>"),
    );
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("cty"));
    assert_eq!(
        calls(&m),
        [("get_weather", r#"{"city": "Paris", "days": 3}"#)]
    );
    assert_eq!(
        problems,
        [(DiagnosticKind::UnknownMember, output.find("cty").unwrap())]
    );
    // Inside a nested value, an element closed by another name is no
    // element: the value is the text written.
    let output = m3_call(
        "save_note",
        &format!("{M3}<text>Note{M3}</text>{M3}<meta>{M3}<level>2{M3}</levl>{M3}</meta>"),
    );
    let (m, problems) = parse(&p, &output);
    let meta = format!("{M3}<level>2{M3}</levl>");
    let args = serde_json::json!({"text": "Note", "meta": meta});
    let got: Value = serde_json::from_str(calls(&m)[0].1).unwrap();
    assert_eq!((m.content, got, problems), (None, args, vec![]));
}

#[test]
fn a_corrupted_element_marker_keeps_the_next_argument() {
    let Some(p) = corpus_parser("MiniMax-M3") else {
        return;
    };
    // The marker between two arguments corrupted, or cut short: the first
    // argument's closing name no longer runs on over the second, which is
    // content, with the call broken there.
    for broken in ["]<]minimaXx[>[", "]<]minimax>["] {
        let output = m3_call(
            "get_weather",
            &format!("{M3}<city>Paris{M3}</city>{broken}<days>3{M3}</days>"),
        );
        let (m, problems) = parse(&p, &output);
        assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
        let content = m.content.unwrap_or_default();
        assert!(
            content.starts_with(&format!(">{broken}<days>3")),
            "{content}"
        );
        let at = output.find(&format!(">{broken}")).unwrap();
        assert_eq!(problems, [(DiagnosticKind::BrokenToolCall, at)]);
    }
}

/// Every round-trip output of every corpus and shipped template, mutated
/// (`common/mutations.rs`: markers corrupted, labels and attribute values
/// replaced, attributes added): no word of the output is lost, reported
/// or not.
#[test]
fn mutated_outputs_lose_no_text() {
    use crate::common::{mutations, roundtrip::crate_dir, turns::jinja_files};
    let mut files = jinja_files(&crate_dir().join("../shared/corpus/llamacpp"));
    if files.is_empty() {
        println!("note: no template corpus at ../shared; shipped templates only");
    }
    files.extend(jinja_files(&crate_dir().join("templates")));
    let tally = mutations::tally(&files);
    mutations::print("mutated outputs", &tally);
    assert!(tally.total() > 1000, "{} mutations", tally.total());
    assert_eq!(
        tally.losses.len(),
        0,
        "outputs that lose words (listed above)"
    );
}

#[test]
fn an_unknown_member_of_a_json_call_is_content() {
    let Some(p) = corpus_parser("CohereForAI-c4ai-command-r7b-12-2024-tool_use") else {
        return;
    };
    let output = "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"note\": \"IMPORTANT TEXT\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>";
    let (m, problems) = parse(&p, output);
    assert_eq!(m.content.as_deref(), Some("\"note\": \"IMPORTANT TEXT\""));
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(m.tool_calls[0].id.as_deref(), Some("0"));
    let at = output.find("\"note\"").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
    // OpenAI's own fields say nothing of the call: skipped, no problem.
    let output = "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}, \"type\": \"function\", \"index\": 0}\n]<|END_ACTION|>";
    let (m, problems) = parse(&p, output);
    assert_eq!(m.content, None);
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(problems, []);
}

const DSML: &str = "<\u{ff5c}DSML\u{ff5c}";

fn dsml_call(parameter: &str) -> String {
    let end = "</\u{ff5c}DSML\u{ff5c}";
    format!(
        "\n\n{DSML}tool_calls>\n{DSML}invoke name=\"get_weather\">\n{parameter}\n{end}invoke>\n{end}tool_calls>"
    )
}

#[test]
fn a_dsml_attribute_value_is_never_dropped() {
    let Some(p) = corpus_parser("deepseek-ai-DeepSeek-V4") else {
        return;
    };
    let end = "</\u{ff5c}DSML\u{ff5c}parameter>";
    let maybe = format!("{DSML}parameter name=\"city\" string=\"maybe\">Paris{end}");
    let days = format!("{DSML}parameter name=\"days\" string=\"false\">3{end}");
    let output = format!("Checking.{}", dsml_call(&format!("{maybe}\n{days}")));
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some("Checking.\n\nstring=\"maybe\">"));
    assert_eq!(
        calls(&m),
        [("get_weather", r#"{"city": "Paris", "days": 3}"#)]
    );
    let at = output.find(" string=\"maybe\"").unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownMember, at)]);
    // With its `">` missing, the argument never completes: the call is
    // withdrawn and all of it is content.
    let call = dsml_call(&format!(
        "{DSML}parameter name=\"city\" string=\"truParis{end}"
    ));
    let output = format!("Checking.{call}");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some(output.as_str()));
    assert_eq!(m.tool_calls, []);
    // It breaks where the attribute's `">` should have been.
    let broken = output.find(&format!("Paris{end}")).unwrap() + "Paris".len();
    let invoke = output.find(&format!("{DSML}invoke")).unwrap();
    assert_eq!(
        problems,
        [
            (DiagnosticKind::BrokenToolCall, broken),
            (DiagnosticKind::WithdrawnToolCall, invoke)
        ]
    );
}

#[test]
fn a_corrupted_closing_marker_is_content() {
    let Some(p) = corpus_parser("MiniMax-M3") else {
        return;
    };
    let m3 = "]<]minimax[>[";
    let output = format!(
        "Checking.{m3}<tool_call>\n{m3}<invoke name=\"get_weather\">{m3}<city>Paris{m3}</city>{m3}]<]minimaXx[>[</invoke>\n{m3}</tool_call>"
    );
    let (m, problems) = parse(&p, &output);
    assert_eq!(
        m.content.as_deref(),
        Some("Checking.]<]minimaXx[>[</invoke>")
    );
    assert_eq!(calls(&m), [("get_weather", r#"{"city": "Paris"}"#)]);
    let at = output.find("]<]minimaXx").unwrap();
    assert_eq!(problems, [(DiagnosticKind::BrokenToolCall, at)]);
}

#[test]
fn a_prompt_that_does_not_render_is_left_out() {
    let Some(template) = crate::common::corpus_template("CohereForAI-c4ai-command-r-plus-tool_use")
    else {
        return;
    };
    let analysis = template.analyze().unwrap();
    // The template concatenates each parameter's description: a tool
    // without one does not render.
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather",
        "description": "Weather.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}}}}),
    ];
    let request = chat_autoparser::ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(Some(tools));
    let chat = chat_autoparser::Chat::with_analysis(template, analysis);
    let prepared = chat.prepare(&request);
    assert_eq!(prepared.prompt, None);
    // minijinja's debug builds add which name was undefined; the rest is fixed.
    let [why] = prepared.diagnostics.as_slice() else {
        panic!("{:?}", prepared.diagnostics)
    };
    assert!(
        why.starts_with("the prompt does not render (render error at line 104, column 11: invalid operation: tried to use + operator on unsupported types string and undefined")
            && why.ends_with("); parsed without it"),
        "{why}"
    );
    let parser = prepared.parser().unwrap();
    assert_eq!(parser.parse("Sunny.").content.as_deref(), Some("Sunny."));
}

/// A call the output cuts inside a Python value, or before its arguments
/// begin, is no call: all of its text is content (its arguments would be
/// JSON, but not the ones the model meant).
#[test]
fn a_call_cut_before_its_arguments_or_inside_a_value_is_content() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let cases = [
        ("python-calls", "<|tool_call_start|>[get_weather(city="),
        ("python-calls", "<|tool_call_start|>[get_weather(city=\"Par"),
        (
            "hermes-think",
            "<tool_call>\n{\"name\": \"get_weather\", \"",
        ),
    ];
    for (name, output) in cases {
        let source = std::fs::read_to_string(format!("{dir}/templates/{name}.jinja")).unwrap();
        let template = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
        let config = ParserConfig::from(Options::default().with_tools(tools()));
        let parser = template.analyze().unwrap().parser(&config).unwrap();
        let (m, kinds) = parse(&parser, output);
        assert!(m.tool_calls.is_empty(), "{name} {output:?}: {m:?}");
        assert_eq!(m.content.as_deref(), Some(output), "{name}");
        assert!(
            kinds
                .iter()
                .any(|(k, _)| *k == DiagnosticKind::WithdrawnToolCall),
            "{name}: {kinds:?}"
        );
    }
}

#[test]
fn a_tool_marker_shaped_like_a_header_stays_in_a_call_given_back() {
    let Some(p) = corpus_parser("Kimi-K3") else {
        return;
    };
    let call = "<|open|>tools<|sep|><|open|>call tool=\"get_time\" index=\"1\"<|sep|>\
                <|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>\
                <|close|>call<|sep|><|close|>tools<|sep|>";
    let output =
        format!("<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>{call}");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some(call));
    assert_eq!(calls(&m), []);
    // Reported once, where the section opens: the call's own opener inside
    // it is not tried as a second call.
    let at = output.find(call).unwrap();
    assert_eq!(problems, [(DiagnosticKind::UnknownTool, at)]);
    // Two unknown calls in one section: one report each.
    let second = "<|open|>call tool=\"get_date\" index=\"2\"<|sep|><|close|>call<|sep|>";
    let two = call.replace("<|close|>tools", &format!("{second}<|close|>tools"));
    let output =
        format!("<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|>{two}");
    let (m, problems) = parse(&p, &output);
    assert_eq!(m.content.as_deref(), Some(two.as_str()));
    let at = output.find(&two).unwrap();
    let second_at = output.find(second).unwrap();
    assert_eq!(
        problems,
        [
            (DiagnosticKind::UnknownTool, at),
            (DiagnosticKind::UnknownTool, second_at)
        ]
    );
    // Free text holding such a marker keeps it too; a header of the
    // template's own shape with another label is still scaffolding.
    let text = "Hello <|close|>argument<|sep|> world";
    let (m, _) = parse(&p, &format!("<|close|>think<|sep|>{text}"));
    assert_eq!(m.content.as_deref(), Some(text));
    let (m, _) = parse(&p, "<|close|>think<|sep|>Hello <|open|>message<|sep|>world");
    assert_eq!(m.content.as_deref(), Some("Hello world"));
    // One of another label is text the model wrote.
    let text = "Hello <|close|>note<|sep|>world";
    let (m, problems) = parse(&p, &format!("<|close|>think<|sep|>{text}"));
    assert_eq!(m.content.as_deref(), Some(text));
    assert_eq!(problems, [(DiagnosticKind::UnknownLabel, 27)]);
}
