//! Channel and header formats: a turn written as several sections, each
//! opened by a header naming it.
//!
//! Two small templates written here (not from the corpus) pin what the
//! analysis learns and how the parser treats the scaffolding between
//! sections:
//!
//! - `CHANNELS`: harmony-like messages, `<|start|>assistant<|channel|>NAME<|message|>
//!   ... <|end|>`, calls addressed in the header (`to=functions.NAME`);
//! - `HEADERS`: named open/close sections, `<|begin|>NAME<|go|> ... <|finish|>NAME<|go|>`,
//!   with a per-call counter in the call's header, and a generation prompt
//!   that opens the reasoning section.
//!
//! Each test asserts exact markers or exact messages.

use chat_autoparser::analysis::{Header, ReasoningMode};
use chat_autoparser::parser::OutputParser;
use chat_autoparser::Options;
use chat_autoparser::{
    Analysis, AssistantMessage, ChatTemplate, ParserConfig, Policy, ReasoningFormat, RenderRequest,
    TemplateConfig,
};
use serde_json::{json, Value};

const CHANNELS: &str = r#"
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|start|>user<|message|>{{ m.content }}<|end|>
{%- elif m.role == 'assistant' -%}
{%- if m.reasoning_content -%}<|start|>assistant<|channel|>analysis<|message|>{{ m.reasoning_content }}<|end|>{%- endif -%}
{%- if m.content -%}<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>{%- endif -%}
{%- for tc in m.tool_calls or [] -%}<|start|>assistant<|channel|>commentary to=functions.{{ tc.function.name }} <|constrain|>json<|message|>{{ tc.function.arguments | tojson }}<|call|>{%- endfor -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}
"#;

const HEADERS: &str = r#"
{%- for m in messages -%}
<|begin|>{{ m.role }}<|go|>
{%- if m.role == 'assistant' -%}
<|begin|>reason<|go|>{{ m.reasoning_content or '' }}<|finish|>reason<|go|><|begin|>answer<|go|>{{ m.content or '' }}<|finish|>answer<|go|>
{%- if m.tool_calls -%}<|begin|>calls<|go|>
{%- for tc in m.tool_calls -%}<|begin|>call name="{{ tc.function.name }}" n="{{ loop.index }}"<|go|>{{ tc.function.arguments | tojson }}<|finish|>call<|go|>{%- endfor -%}
<|finish|>calls<|go|>{%- endif -%}
{%- else -%}{{ m.content }}{%- endif -%}
<|finish|>{{ m.role }}<|go|>
{%- endfor -%}
{%- if add_generation_prompt -%}<|begin|>assistant<|go|><|begin|>reason<|go|>{%- endif -%}
"#;

fn analyze(source: &str) -> Analysis {
    ChatTemplate::new(source, &TemplateConfig::default())
        .expect("compiles")
        .analyze()
        .expect("analyzes")
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}),
    ]
}

fn prompt(source: &str) -> String {
    let request = RenderRequest::default()
        .with_messages(vec![json!({"role": "user", "content": "Hi"})])
        .with_tools(Some(tools()))
        .with_add_generation_prompt(true);
    ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .render(&request)
        .unwrap()
}

/// The parser for `source` after its prompt for one user turn, with tools.
fn parser(source: &str, reasoning: ReasoningFormat, policy: Policy) -> OutputParser {
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools())
            .with_prompt(Some(prompt(source))),
    )
    .with_reasoning(reasoning)
    .with_policy(policy);
    analyze(source).parser(&config).expect("parser builds")
}

fn parse(source: &str, reasoning: ReasoningFormat, output: &str) -> AssistantMessage {
    let parser = parser(source, reasoning, Policy::lossless());
    // Streamed in 1-, 4- and 7-byte chunks, the same message.
    crate::common::streaming::parse_and_stream(&parser, output)
}

fn extract(source: &str, output: &str) -> AssistantMessage {
    parse(source, ReasoningFormat::Extract, output)
}

fn calls(m: &AssistantMessage) -> Vec<(String, Value)> {
    m.tool_calls
        .iter()
        .map(|c| {
            (
                c.function.name.clone(),
                serde_json::from_str(&c.function.arguments).unwrap_or(Value::Null),
            )
        })
        .collect()
}

#[test]
fn channel_markers_are_learned() {
    let a = analyze(CHANNELS);
    assert_eq!(a.reasoning.start, "<|channel|>analysis<|message|>");
    assert_eq!(a.reasoning.end, "<|end|><|start|>assistant");
    assert_eq!(a.content.start, "<|channel|>final<|message|>");
    assert_eq!(
        a.turn.headers,
        [Header {
            open: "<|channel|>".into(),
            close: "<|message|>".into()
        }]
    );
    assert_eq!(
        (a.turn.message_end.as_str(), a.turn.message_start.as_str()),
        ("<|end|>", "<|start|>assistant")
    );
}

#[test]
fn channels_split_reasoning_content_and_calls() {
    let m = extract(CHANNELS, "<|channel|>analysis<|message|>Sunny?<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.");
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "It is sunny.")
    );

    let out = "<|channel|>final<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let m = extract(CHANNELS, out);
    assert_eq!(m.content_text(), "Checking.");
    assert_eq!(
        calls(&m),
        [("get_weather".to_string(), json!({"city": "Paris"}))]
    );
}

#[test]
fn an_end_marker_cut_after_its_first_token_closes_reasoning_at_the_end() {
    // A stop string took `<|start|>assistant` of `<|end|><|start|>assistant`.
    let m = extract(CHANNELS, "<|channel|>analysis<|message|>Sunny?<|end|>");
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "")
    );
    // Anywhere else the token is reasoning text.
    let m = extract(CHANNELS, "<|channel|>analysis<|message|>a<|end|>b");
    assert_eq!(m.reasoning_content.as_str(), "a<|end|>b");
}

#[test]
fn the_next_header_ends_reasoning_the_model_left_open() {
    // `<|end|>` left out: the next message's header ends the block.
    let m = extract(
        CHANNELS,
        "<|channel|>analysis<|message|>Sunny?<|start|>assistant<|channel|>final<|message|>It is sunny.",
    );
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "It is sunny.")
    );
    // When the block closes later, the header text is reasoning.
    let m = extract(
        CHANNELS,
        "<|channel|>analysis<|message|>a<|start|>assistant b<|end|><|start|>assistant<|channel|>final<|message|>c",
    );
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("a<|start|>assistant b", "c")
    );
}

#[test]
fn unseen_channels_and_header_variants_are_scaffolding() {
    // A channel the probes never rendered still introduces content.
    let m = extract(CHANNELS, "<|channel|>commentary<|message|>Hello");
    assert_eq!(m.content_text(), "Hello");
    // The call's header may carry other words before its close.
    let m = extract(
        CHANNELS,
        "<|channel|>analysis to=functions.get_weather<|message|>{\"days\": 2}",
    );
    assert_eq!(calls(&m), [("get_weather".to_string(), json!({"days": 2}))]);
    // A header cut short by the next one opens no message: scaffolding.
    let m = extract(
        CHANNELS,
        "<|channel|>commentary to=assistant<|channel|>final<|message|>Hello",
    );
    assert_eq!(m.content_text(), "Hello");
    // Text that is no label (a line break, too many words) stays, verbatim.
    let out = "<|channel|>I was going to say\nsomething<|channel|>final<|message|>Hello";
    assert_eq!(
        extract(CHANNELS, out).content_text(),
        "<|channel|>I was going to say\nsomethingHello"
    );
}

#[test]
fn inline_reasoning_keeps_its_block_and_drops_the_break() {
    let out = "<|channel|>analysis<|message|>Sunny?<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.";
    let m = parse(CHANNELS, ReasoningFormat::Inline, out);
    assert_eq!(
        m.content_text(),
        "<|channel|>analysis<|message|>Sunny?<|end|>It is sunny."
    );
    assert_eq!(m.reasoning_content, "");
}

#[test]
fn malformed_headers_stay_in_content() {
    for out in [
        "<|channel|>final",
        "<|channel|>final\n<|message|>x",
        "<|end|> and more",
    ] {
        assert_eq!(extract(CHANNELS, out).content_text(), out, "{out:?}");
    }
}

#[test]
fn header_markers_are_learned() {
    let a = analyze(HEADERS);
    assert_eq!(a.reasoning.mode, ReasoningMode::ForcedOpen);
    assert_eq!(
        (a.reasoning.start.as_str(), a.reasoning.end.as_str()),
        ("<|begin|>reason<|go|>", "<|finish|>reason<|go|>")
    );
    assert_eq!(
        (a.content.start.as_str(), a.content.end.as_str()),
        ("<|begin|>answer<|go|>", "<|finish|>answer<|go|>")
    );
    assert_eq!(
        a.turn.headers,
        [
            Header {
                open: "<|begin|>".into(),
                close: "<|go|>".into()
            },
            Header {
                open: "<|finish|>".into(),
                close: "<|go|>".into()
            }
        ]
    );
    assert_eq!(a.turn.end_of_turn, "<|finish|>assistant<|go|>");
    assert_eq!(a.turn.stop_marker, "<|finish|>assistant<|go|>");
    let tools = a.tools.expect("calls are rendered");
    // The empty answer section written before calls is not the calls' framing.
    assert_eq!(tools.section_start, "<|begin|>calls<|go|>");
}

#[test]
fn header_sections_parse_and_the_turn_end_is_dropped() {
    let out = "Sunny?<|finish|>reason<|go|><|begin|>answer<|go|>It is sunny.<|finish|>answer<|go|><|finish|>assistant<|go|>";
    let m = extract(HEADERS, out);
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "It is sunny.")
    );
}

#[test]
fn an_output_that_opens_the_answer_has_left_the_reasoning_block() {
    let out = "<|begin|>answer<|go|>It is sunny.<|finish|>answer<|go|>";
    let m = extract(HEADERS, out);
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("", "It is sunny.")
    );
    // Inline, the block the prompt opened is not written back either.
    assert_eq!(
        parse(HEADERS, ReasoningFormat::Inline, out).content_text(),
        "It is sunny."
    );
    // An unclosed block is all reasoning.
    assert_eq!(
        extract(HEADERS, "still thinking").reasoning_content,
        "still thinking"
    );
}

#[test]
fn numbered_call_headers_parse_in_parallel() {
    let out = concat!(
        "<|finish|>reason<|go|><|begin|>answer<|go|><|finish|>answer<|go|><|begin|>calls<|go|>",
        "<|begin|>call name=\"get_weather\" n=\"1\"<|go|>{\"city\": \"Paris\"}<|finish|>call<|go|>",
        "<|begin|>call name=\"get_weather\" n=\"2\"<|go|>{\"city\": \"Tokyo\"}<|finish|>call<|go|>",
        "<|finish|>calls<|go|><|finish|>assistant<|go|>"
    );
    let m = extract(HEADERS, out);
    assert_eq!(m.content_text(), "");
    assert_eq!(
        calls(&m),
        [
            ("get_weather".to_string(), json!({"city": "Paris"})),
            ("get_weather".to_string(), json!({"city": "Tokyo"}))
        ]
    );
}

#[test]
fn a_header_after_the_message_end_ends_reasoning_without_the_role_header() {
    // The model skipped `<|start|>assistant` between two channels: the
    // message end and the next header still end the block, and no special
    // token is left in the reasoning or the content.
    let output =
        "<|channel|>analysis<|message|>Sunny?<|end|><|channel|>final<|message|>It is sunny.";
    let m = extract(CHANNELS, output);
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "It is sunny.")
    );
    // With the header on the next line.
    let m = extract(CHANNELS, &output.replace("<|end|>", "<|end|>\n"));
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("Sunny?", "It is sunny.")
    );
    // Inside the block, the same token before other text is still text.
    let m = extract(CHANNELS, "<|channel|>analysis<|message|>a<|end|>b<|end|><|start|>assistant<|channel|>final<|message|>c");
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("a<|end|>b", "c")
    );
}

#[test]
fn a_header_after_the_message_end_ends_content_without_the_role_header() {
    // The same skip after a content channel: the message end before the next
    // header is scaffolding, never content.
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let output = format!("<|channel|>final<|message|>Let me check.<|end|>{call}");
    let m = extract(CHANNELS, &output);
    assert_eq!(m.content_text(), "Let me check.");
    assert_eq!(
        calls(&m),
        [("get_weather".to_string(), json!({"city": "Paris"}))]
    );
    // Two content channels read as they do with the role header between.
    let skipped =
        "<|channel|>final<|message|>It is sunny.<|end|>\n<|channel|>final<|message|> Bye.";
    let with_header = skipped.replace("<|end|>\n", "<|end|>\n<|start|>assistant");
    assert_eq!(extract(CHANNELS, skipped), extract(CHANNELS, &with_header));
    assert_eq!(
        extract(CHANNELS, skipped).content_text(),
        "It is sunny.Bye."
    );
    // Inside the content, the same token before other text is still text.
    let m = extract(CHANNELS, "<|channel|>final<|message|>a<|end|>b");
    assert_eq!(m.content_text(), "a<|end|>b");
}

#[test]
fn a_call_addressed_without_the_namespace_is_the_call() {
    // `to=get_weather` where the template writes `to=functions.get_weather`.
    let output = "<|channel|>commentary to=get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let m = extract(CHANNELS, output);
    assert_eq!(
        calls(&m),
        [("get_weather".to_string(), json!({"city": "Paris"}))]
    );
    assert_eq!(m.content, None);
    // gpt-oss's own template, the address in the role header too.
    let Some(template) = crate::common::corpus_template("openai-gpt-oss-120b") else {
        return;
    };
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let parser = template.analyze().unwrap().parser(&config).unwrap();
    for output in [
        output.to_string(),
        "<|channel|>analysis<|message|>Sunny?<|end|><|start|>assistant to=get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>".to_string(),
    ] {
        let m = crate::common::streaming::parse_and_stream(&parser, &output);
        assert_eq!(
            calls(&m),
            [("get_weather".to_string(), json!({"city": "Paris"}))],
            "{output:?}"
        );
        assert_eq!(m.content, None, "{output:?}");
    }
}

/// Whitespace after the address (`to= functions.f`) and before the header's
/// next token (` <|channel|>`, ` <|constrain|>`), in both header orders
/// gpt-oss writes (the address in the role header, or after the channel's
/// name): the call, with no special token in the reasoning or the content,
/// under both presets and every chunking, on gpt-oss's template, and in the
/// order it renders on the shipped one.
#[test]
fn whitespace_around_a_headers_address_is_scaffolding() {
    let role_header = |to: &str| format!("<|start|>assistant to={to}<|channel|>commentary json");
    let channel_header =
        |to: &str| format!("<|start|>assistant<|channel|>commentary to={to}<|constrain|>json");
    let (_, shipped) = crate::common::shipped_template("channel-harmony");
    assert_addressed_calls(&shipped, channel_header);
    if let Some(template) = crate::common::corpus_template("openai-gpt-oss-120b") {
        let analysis = template.analyze().unwrap();
        assert_addressed_calls(&analysis, channel_header);
        assert_addressed_calls(&analysis, role_header);
    }
}

/// Each call header `header` makes of an address with whitespace around it
/// is the call, alone and after reasoning (see
/// [`whitespace_around_a_headers_address_is_scaffolding`]).
fn assert_addressed_calls(analysis: &Analysis, header: impl Fn(&str) -> String) {
    use crate::common::streaming::report_and_stream;
    use chat_autoparser::Policy;
    let args = "<|message|>{\"city\": \"Paris\"}<|call|>";
    for to in [
        " functions.get_weather",
        " functions.get_weather ",
        "\tget_weather ",
    ] {
        for reasoning in ["", "Sunny?"] {
            let output = match reasoning {
                "" => format!("{}{args}", header(to)),
                r => format!(
                    "<|channel|>analysis<|message|>{r}<|end|>{}{args}",
                    header(to)
                ),
            };
            for policy in [Policy::lossless(), Policy::compatible()] {
                let config = ParserConfig::from(Options::default().with_tools(tools()));
                let parser = analysis.parser(&config.with_policy(policy)).unwrap();
                let m = report_and_stream(&parser, &output).message;
                assert_eq!(
                    calls(&m),
                    [("get_weather".to_string(), json!({"city": "Paris"}))],
                    "{output:?}: {m:?}"
                );
                assert_eq!(m.content, None, "{output:?}");
                assert_eq!(m.reasoning_content, reasoning, "{output:?}");
            }
        }
    }
}

/// On harmony templates (the shipped channel-harmony, gpt-oss's own), what
/// a model writes between an analysis block and the next message: the
/// message end and the role header, either alone, or neither; then a call
/// header in either order gpt-oss writes (the address after the channel's
/// name, or before the channel, with or without a space), or the final
/// channel. The next header ends the block, the call is the call, and no
/// special token is left in the reasoning or the content, under both
/// presets and every chunking.
#[test]
fn the_next_channel_header_ends_the_block_in_both_header_orders() {
    use crate::common::streaming::report_and_stream;
    use chat_autoparser::Policy;
    let mut analyses = vec![crate::common::shipped_template("channel-harmony").1];
    if let Some(template) = crate::common::corpus_template("openai-gpt-oss-120b") {
        analyses.push(template.analyze().unwrap());
    }
    let call_headers = [
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        "to=functions.get_weather<|channel|>commentary json<|message|>",
        " to=functions.get_weather<|channel|>commentary json<|message|>",
    ];
    let reasoning = "<|channel|>analysis<|message|>Need weather.";
    for analysis in &analyses {
        for sep in [
            "<|end|>",
            "<|end|><|start|>assistant",
            "<|start|>assistant",
            "",
        ] {
            let calls_after = call_headers
                .iter()
                .filter(|h| !(sep.is_empty() && h.starts_with(' ')))
                .map(|h| {
                    (
                        format!("{reasoning}{sep}{h}{{\"city\": \"Paris\"}}<|call|>"),
                        None,
                    )
                });
            let answer = format!("{reasoning}{sep}<|channel|>final<|message|>It is sunny.");
            for (output, content) in calls_after.chain([(answer, Some("It is sunny."))]) {
                for policy in [Policy::lossless(), Policy::compatible()] {
                    let config = ParserConfig::from(Options::default().with_tools(tools()));
                    let parser = analysis.parser(&config.with_policy(policy)).unwrap();
                    let m = report_and_stream(&parser, &output).message;
                    assert_eq!(m.reasoning_content, "Need weather.", "{output:?}: {m:?}");
                    assert_eq!(m.content.as_deref(), content, "{output:?}: {m:?}");
                    let want = match content {
                        Some(_) => vec![],
                        None => vec![("get_weather".to_string(), json!({"city": "Paris"}))],
                    };
                    assert_eq!(calls(&m), want, "{output:?}: {m:?}");
                }
            }
        }
    }
}

/// The same after a content message: its message end, then a call header
/// whose address comes first, with or without the role header between:
/// the call, and the content without the message end, under both presets
/// and every chunking, on both harmony templates.
#[test]
fn a_call_address_after_the_message_end_ends_content() {
    use crate::common::streaming::report_and_stream;
    use chat_autoparser::Policy;
    let mut analyses = vec![crate::common::shipped_template("channel-harmony").1];
    if let Some(template) = crate::common::corpus_template("openai-gpt-oss-120b") {
        analyses.push(template.analyze().unwrap());
    }
    let call = "to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>";
    for analysis in &analyses {
        for sep in ["<|end|>", "<|end|>\n", "<|end|><|start|>assistant "] {
            let output = format!("<|channel|>final<|message|>Let me check.{sep}{call}");
            for policy in [Policy::lossless(), Policy::compatible()] {
                let config = ParserConfig::from(Options::default().with_tools(tools()));
                let parser = analysis.parser(&config.with_policy(policy)).unwrap();
                let m = report_and_stream(&parser, &output).message;
                assert_eq!(m.content.as_deref(), Some("Let me check."), "{output:?}");
                assert_eq!(
                    calls(&m),
                    [("get_weather".to_string(), json!({"city": "Paris"}))],
                    "{output:?}"
                );
            }
        }
    }
}

/// A header of the closing shape (`<|finish|>NAME<|go|>`, the shape the
/// answer's and the reasoning's end markers have) ends the section it
/// names: text after it is in no channel. `compatible` leaves it out, as
/// it does text after a message end (`text_outside_channels: drop`);
/// `lossless` keeps it. A header of the opening shape still opens one.
#[test]
fn text_after_a_closing_header_is_outside_any_channel() {
    use chat_autoparser::parser::DiagnosticKind;
    let parse_under = |policy: Policy, output: &str| {
        let parser = parser(HEADERS, ReasoningFormat::Extract, policy);
        crate::common::streaming::report_and_stream(&parser, output)
    };
    let closed = "Sunny?<|finish|>reason<|go|><|begin|>answer<|go|>It is sunny.<|finish|>answer<|go|>\nNarration.";
    let lossless = parse_under(Policy::lossless(), closed);
    // The whitespace after a header is its scaffolding, as an opening one's is.
    assert_eq!(lossless.message.content_text(), "It is sunny.Narration.");
    assert!(
        lossless.diagnostics.is_empty(),
        "{:?}",
        lossless.diagnostics
    );
    let compatible = parse_under(Policy::compatible(), closed);
    assert_eq!(compatible.message.content_text(), "It is sunny.");
    assert_eq!(compatible.message.reasoning_content, "Sunny?");
    let dropped: Vec<_> = compatible
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Dropped)
        .map(|d| &closed[d.offset..d.end.unwrap_or(closed.len())])
        .collect();
    assert_eq!(dropped, ["Narration."]);
    // Reopened: the answer goes on.
    let reopened = "Sunny?<|finish|>reason<|go|><|begin|>answer<|go|>Sunny.<|finish|>answer<|go|><|begin|>answer<|go|>Warm.";
    let m = parse_under(Policy::compatible(), reopened).message;
    assert_eq!(m.content_text(), "Sunny.Warm.");
}

/// A block the prompt opened and the model never closes, ended by a
/// header of the closing shape that shares the end marker's first token
/// (`<|finish|>answer<|go|>` where `<|finish|>reason<|go|>` was due): the
/// header ends the block, as any header does, and is scaffolding, never
/// reasoning text; the calls after it are calls.
#[test]
fn a_closing_header_ends_reasoning_the_model_left_open() {
    let out = concat!(
        "Sunny?<|finish|>answer<|go|><|begin|>calls<|go|>",
        "<|begin|>call name=\"get_weather\" n=\"1\"<|go|>{\"city\": \"Paris\"}<|finish|>call<|go|>",
        "<|finish|>calls<|go|>"
    );
    let m = extract(HEADERS, out);
    assert_eq!(m.reasoning_content, "Sunny?");
    assert_eq!(m.content_text(), "");
    assert_eq!(
        calls(&m),
        [("get_weather".to_string(), json!({"city": "Paris"}))]
    );
    // The end's first token with no header after it is still text.
    let m = extract(HEADERS, "a<|finish|> b<|finish|>reason<|go|>c");
    assert_eq!(
        (m.reasoning_content.as_str(), m.content_text()),
        ("a<|finish|> b", "c")
    );
}
