//! A turn that ends with more special tokens than its analysed end: a model
//! (or a template's call turn) writes `<|im_end|><|stop|>` where the analysis
//! learned `<|im_end|>`. At the very end of the output they close nothing;
//! anywhere else they are text. Likewise the end of a tool section with no
//! opening marker, which a template writes after the text that follows the
//! calls (Gemma-4's `<|tool_response>`). On small templates written here.

use chat_autoparser::{ChatTemplate, ParserConfig, TemplateConfig};

const CHATML: &str =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

fn parse(output: &str) -> Option<String> {
    let template = ChatTemplate::new(CHATML, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    assert_eq!(analysis.turn.stop_marker, "<|im_end|>");
    let parser = analysis.parser(&ParserConfig::default()).unwrap();
    let batch = parser.parse(output);
    let streamed = crate::common::streaming::parse_and_stream(&parser, output);
    assert_eq!(batch, streamed, "{output:?}");
    batch.content
}

#[test]
fn special_tokens_after_the_stop_marker_at_the_end_close_nothing() {
    for output in [
        "It is sunny.<|im_end|><|endofturn|>\n",
        "It is sunny.<|im_end|> <|stop|><|eot_id|>",
    ] {
        assert_eq!(parse(output).as_deref(), Some("It is sunny."), "{output:?}");
    }
}

#[test]
fn the_same_tokens_inside_the_text_are_text() {
    for output in [
        "Use <|im_end|> <|x|> tokens.",
        "It is sunny.<|im_end|><|endofturn|> and more",
        "It is sunny.<|im_end|><| spaced |>",
    ] {
        assert_eq!(parse(output).as_deref(), Some(output), "{output:?}");
    }
}

/// Gemma-4 style: a call turn ends with the marker that opens the tool's
/// response, after the text written after the calls; the tool section has
/// no opening marker of its own.
const CALLS_THEN_TEXT: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|turn>model
{%- for tc in m.tool_calls or [] -%}<|tool_call>{{ tc.function.name }}{{ tc.function.arguments | tojson }}<tool_call|>{%- endfor -%}
{{- m.content or '' -}}
{%- if m.tool_calls -%}<|tool_response>{%- else -%}<turn|>{%- endif -%}
{%- else -%}<|turn>{{ m.role }}
{{ m.content }}<turn|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|turn>model{%- endif -%}"#;

#[test]
fn the_end_of_a_section_without_an_opener_at_the_end_closes_nothing() {
    let template = ChatTemplate::new(CALLS_THEN_TEXT, &TemplateConfig::default()).unwrap();
    let analysis = template.analyze().unwrap();
    let tools = analysis.tools.as_ref().expect("calls are rendered");
    assert_eq!(
        (tools.section_start.as_str(), tools.section_end.as_str()),
        ("", "<|tool_response>")
    );
    let parser = analysis.parser(&ParserConfig::default()).unwrap();
    let output =
        "<|tool_call>get_weather{\"city\": \"Paris\"}<tool_call|>Let me check.<|tool_response>";
    let batch = parser.parse(output);
    assert_eq!(
        batch,
        crate::common::streaming::parse_and_stream(&parser, output)
    );
    assert_eq!(batch.content.as_deref(), Some("Let me check."));
    assert_eq!(batch.tool_calls.len(), 1);
    assert_eq!(
        batch.tool_calls[0].function.arguments,
        r#"{"city": "Paris"}"#
    );
    // Inside the text the marker is text.
    let inside = "Use <|tool_response> here.";
    assert_eq!(parser.parse(inside).content.as_deref(), Some(inside));
    // The transformers export reads it so too: the implicit content field
    // closes on the marker at the end of the text.
    let protocol =
        chat_autoparser::protocol::Protocol::new(&analysis, &ParserConfig::default().options);
    let exported = chat_autoparser::grammar::response_template(&protocol).unwrap();
    assert_eq!(
        exported.response_template["fields"]["content"]["close_pattern"],
        r"<\|tool_response>\s*\Z"
    );
    // A call to a function the request does not have is content, verbatim,
    // the section's end included.
    let config = ParserConfig::from(chat_autoparser::Options::default().with_tools(vec![
        serde_json::json!({"type": "function", "function": {"name": "search",
            "parameters": {"type": "object", "properties": {}}}}),
    ]));
    let parser = analysis.parser(&config).unwrap();
    let unknown = "<|tool_call>get_weather{\"city\": \"Paris\"}<tool_call|><|tool_response>";
    let batch = parser.parse(unknown);
    assert_eq!(
        batch,
        crate::common::streaming::parse_and_stream(&parser, unknown)
    );
    assert_eq!(batch.content.as_deref(), Some(unknown));
    assert!(batch.tool_calls.is_empty());
}

/// The stop marker and the next assistant turn's opening header inside one
/// output (`<|im_end|>\n<|im_start|>assistant\n`): the model ran on into a
/// second turn of its own. Scaffolding, dropped; the text on both sides is
/// the message's.
#[test]
fn a_stop_marker_followed_by_the_assistant_header_joins_the_turns() {
    let output = "It is sunny.<|im_end|>\n<|im_start|>assistant\nIt is warm.";
    assert_eq!(parse(output).as_deref(), Some("It is sunny.It is warm."));
    // Another header after the stop marker is text, as before.
    let user = "It is sunny.<|im_end|>\n<|im_start|>user\nThanks";
    assert_eq!(parse(user).as_deref(), Some(user));
}

/// DeepSeek-R1-Distill-Qwen renders a call turn's content as a second
/// assistant turn after the calls: `<｜tool▁calls▁end｜><｜end▁of▁sentence｜>`
/// then `<｜Assistant｜>` and the content. The content is in the render, the
/// seam between the turns is not content.
#[test]
fn content_rendered_as_a_second_turn_after_the_calls_is_the_content() {
    let Some(template) = crate::common::corpus_template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")
    else {
        return;
    };
    let analysis = template.analyze().unwrap();
    let parser = analysis.parser(&ParserConfig::default()).unwrap();
    let output = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n\
```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>\
<｜Assistant｜>Let me check the weather.<｜end▁of▁sentence｜>";
    let batch = parser.parse(output);
    assert_eq!(
        batch,
        crate::common::streaming::parse_and_stream(&parser, output)
    );
    assert_eq!(batch.content.as_deref(), Some("Let me check the weather."));
    assert_eq!(batch.tool_calls.len(), 1);
    assert_eq!(
        batch.tool_calls[0].function.arguments,
        r#"{"city": "Paris"}"#
    );
}

/// Nemotron-Nano-v2's prompt opens `<think>\n` and its template writes a
/// last turn's content there, then its calls as a second turn
/// (`\n<SPECIAL_12>\n<SPECIAL_11>Assistant\n<TOOLCALL>[...]`), whose header
/// opens no reasoning. Inside the reasoning the seam ends the block, as the
/// render says: scaffolding, never reasoning text; what follows is the
/// second turn's content and calls. Both presets, every chunking.
#[test]
fn a_turn_seam_inside_reasoning_ends_the_block() {
    use crate::common::streaming::{report_and_stream, weather_tools};
    use chat_autoparser::{Options, Policy};
    let Some(template) = crate::common::corpus_template("NVIDIA-Nemotron-Nano-v2") else {
        return;
    };
    let analysis = template.analyze().unwrap();
    let seam = "\n<SPECIAL_12>\n<SPECIAL_11>Assistant\n";
    let call = r#"<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>"#;
    for (output, reasoning, content, calls) in [
        (
            format!("Let me check.{seam}{call}"),
            "Let me check.",
            None,
            1,
        ),
        (
            format!("Let me think.{seam}It is sunny."),
            "Let me think.",
            Some("It is sunny."),
            0,
        ),
    ] {
        for policy in [Policy::lossless(), Policy::compatible()] {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            let parser = analysis.parser(&config.with_policy(policy)).unwrap();
            let m = report_and_stream(&parser, &output).message;
            assert_eq!(m.reasoning_content, reasoning, "{output:?}: {m:?}");
            assert_eq!(m.content.as_deref(), content, "{output:?}: {m:?}");
            assert_eq!(m.tool_calls.len(), calls, "{output:?}: {m:?}");
        }
    }
}
