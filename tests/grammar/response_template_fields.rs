//! The `response_template` export's fields against our parser, without
//! transformers (tests/engines/response_template.rs runs them in it): each
//! text our parser reads into a field has that field in the export.

use chat_autoparser::grammar::response_template;
use chat_autoparser::protocol::Protocol;
use chat_autoparser::{ChatTemplate, ParserConfig, TemplateConfig};

/// ChatML with reasoning whose generation prompt closes the block: the
/// output starts after the reasoning, and a model may still write a block.
const CLOSED_BY_PROMPT: &str = "{%- for m in messages %}<|im_start|>{{ m.role }}\n\
{%- if m.role == 'assistant' %}<think>\n{{ m.reasoning_content or '' }}\n</think>\n\n{% endif %}\
{{ m.content }}<|im_end|>\n{% endfor %}\
{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n\n</think>\n\n{% endif %}";

#[test]
fn a_block_after_a_prompt_that_closed_one_is_reasoning_in_both() {
    let template = ChatTemplate::new(CLOSED_BY_PROMPT, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let config = ParserConfig::default();
    let protocol = Protocol::new(&analysis, &config.options);
    assert!(protocol.reasoning.is_none(), "the prompt closed the block");
    // Our parser reads a block the model writes anyway as reasoning ...
    let parsed = analysis
        .parser(&config)
        .unwrap()
        .parse("<think>\nLet me see.\n</think>\n\nHello.");
    assert_eq!(parsed.reasoning_content, "Let me see.");
    assert_eq!(parsed.content.as_deref(), Some("Hello."));
    // ... and so does the export: a reasoning field opened by the marker
    // (or by the end marker alone first, the prompt's written again).
    let exported = response_template(&protocol).unwrap();
    let field = &exported.response_template["fields"]["reasoning_content"];
    assert_eq!(field["open_pattern"], r"<think>|\A(?=\s*</think>)");
    // The block ends at its end marker, or at a turn seam (left out).
    assert_eq!(
        field["close_pattern"],
        r"</think>|\s*<\|im_end\|>\s*<\|im_start\|>assistant\s*"
    );
}

/// Kimi-K3 (corpus): with thinking off the prompt opens the content wrapper
/// (`<|open|>response<|sep|>`), so the output starts inside it.
#[test]
fn text_the_prompt_opened_the_wrapper_for_is_content_in_both() {
    let path = std::path::Path::new("../shared/corpus/llamacpp/Kimi-K3.jinja");
    let Ok(source) = std::fs::read_to_string(path) else {
        println!("skipped: {} is absent", path.display());
        return;
    };
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let config =
        ParserConfig::from(chat_autoparser::Options::default().with_enable_thinking(false));
    let output = "Hello!<|close|>response<|sep|>";
    let parsed = analysis.parser(&config).unwrap().parse(output);
    assert_eq!(parsed.content.as_deref(), Some("Hello!"));
    let protocol = Protocol::new(&analysis, &config.options);
    let exported = response_template(&protocol).unwrap();
    let content = &exported.response_template["fields"]["content"];
    // Opened by the wrapper, or at the start when nothing else opens there.
    assert_eq!(
        content["open_pattern"],
        concat!(
            r"<\|open\|>response<\|sep\|>|\A(?!\s*(?:<\|open\|>response<\|sep\|>",
            r"|<\|open\|>think<\|sep\|>|<\|close\|>think<\|sep\|>",
            r#"|(?:<\|open\|>tools<\|sep\|>)?<\|open\|>call\s*tool="(?:(?:[^"\\]|\\.)+?)"\s*index="\d+"<\|sep\|>))"#
        )
    );
    assert_eq!(content["close_pattern"], r"<\|close\|>response<\|sep\|>");
}

/// The call's close pattern, for `tools`, of the template at `path`.
fn call_close(source: &str) -> String {
    let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let tools = vec![
        serde_json::json!({"type": "function", "function": {"name": "save_note",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}),
    ];
    let config = ParserConfig::from(chat_autoparser::Options::default().with_tools(tools));
    let protocol = Protocol::new(&analysis, &config.options);
    let exported = response_template(&protocol).unwrap();
    let field = &exported.response_template["fields"]["tool_calls"];
    field["close_pattern"].as_str().unwrap().to_owned()
}

/// A JSON call closes only after its object: the call's end marker quoted
/// in a string argument (`"text": "... </tool_call> ..."`) is text, as our
/// parser reads it (check's `markers-in-args` probe).
#[test]
fn a_json_call_closes_only_after_its_object() {
    let hermes = include_str!("../../templates/hermes-think.jinja");
    assert_eq!(call_close(hermes), r"(?<=\})\s*</tool_call>");
    // Arguments laid out after the name (`functions.f:0<|tool_call_argument_begin|>{...}`).
    let path = std::path::Path::new("../shared/corpus/llamacpp/Kimi-K2-Instruct.jinja");
    let Ok(kimi) = std::fs::read_to_string(path) else {
        println!("skipped: {} is absent", path.display());
        return;
    };
    assert_eq!(
        call_close(&kimi),
        r"(?<=\})<\|tool_call_end\|>(?:<\|tool_calls_section_end\|>)?"
    );
}

/// Kimi-K3 with thinking on: the prompt opened the reasoning block, so the
/// output's start is reasoning, never content.
#[test]
fn an_output_that_starts_in_reasoning_does_not_start_in_content() {
    let path = std::path::Path::new("../shared/corpus/llamacpp/Kimi-K3.jinja");
    let Ok(source) = std::fs::read_to_string(path) else {
        println!("skipped: {} is absent", path.display());
        return;
    };
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let config = ParserConfig::from(chat_autoparser::Options::default().with_enable_thinking(true));
    let protocol = Protocol::new(&analysis, &config.options);
    let exported = response_template(&protocol).unwrap();
    let fields = &exported.response_template["fields"];
    assert!(fields["reasoning_content"]["open_pattern"]
        .as_str()
        .unwrap()
        .starts_with(r"\A"));
    assert_eq!(
        fields["content"]["open_pattern"],
        r"<\|open\|>response<\|sep\|>"
    );
}

/// Qwen-Coder's tagged call, its value's close and its arguments' end
/// (`</function>`) left out: our parser still reads the call up to the
/// call's own end (`</tool_call>`), so the export's close takes that end
/// alone and its value runs to the region's end when its close never comes
/// (transformers' side: tests/engines/response_template.rs).
#[test]
fn a_tagged_call_closes_at_its_own_end_with_its_value_unclosed() {
    let source = include_str!("../../templates/qwen-coder-xml.jinja");
    let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let config = ParserConfig::default();
    let parsed = analysis
        .parser(&config)
        .unwrap()
        .parse("<tool_call>\n<function=save_note>\n<parameter=text>\na note </tool_call>\nDone.");
    assert_eq!(parsed.tool_calls.len(), 1);
    assert_eq!(
        parsed.tool_calls[0].function.arguments,
        r#"{"text": "a note "}"#
    );
    assert_eq!(parsed.content.as_deref(), Some("Done."));
    let protocol = Protocol::new(&analysis, &config.options);
    let exported = response_template(&protocol).unwrap();
    let field = &exported.response_template["fields"]["tool_calls"];
    assert_eq!(field["close_pattern"], r"(?:</function>\s*)?</tool_call>");
    assert_eq!(
        field["content_args"]["tag_pattern"],
        r"<parameter=(?P<key>[^\s<>]+?)>(?:\n)?(?P<value>.*?)(?:\n)?(?:</parameter>\s*|\Z)"
    );
}

/// LFM2.5 (corpus) writes Python strings raw (`text='it's'`): the outline
/// marks that spelling lenient (the grammars leave it out) and the export
/// reads it, one region per call, since `python-call-list` refuses it.
#[test]
fn raw_python_strings_are_read_one_call_at_a_time() {
    let path = std::path::Path::new("../shared/corpus/llamacpp/LFM2.5-8B-A1B.jinja");
    let Ok(source) = std::fs::read_to_string(path) else {
        println!("skipped: {} is absent", path.display());
        return;
    };
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![
        serde_json::json!({"type": "function", "function": {"name": "note",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}),
    ];
    let config = ParserConfig::from(chat_autoparser::Options::default().with_tools(tools));
    let protocol = Protocol::new(&analysis, &config.options);
    let exported = response_template(&protocol).unwrap();
    let field = &exported.response_template["fields"]["tool_calls"];
    assert_eq!(field["content"], "xml-inline");
    assert_eq!(
        field["open_pattern"],
        r"(?:<\|tool_call_start\|>\s*\[\s*|(?<=\)\s*,\s*))(?P<name>note)\("
    );
    assert_eq!(
        field["content_args"]["value_parser"]["args"]["string_delims"],
        serde_json::json!([["='", "',"], ["='", "')"], ["'", "'"]])
    );
    // Our parser reads the same call.
    let parsed = analysis
        .parser(&config)
        .unwrap()
        .parse("<|tool_call_start|>[note(text='it's')]<|tool_call_end|>");
    assert_eq!(parsed.tool_calls.len(), 1);
}
