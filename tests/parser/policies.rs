//! Output policies (`Policy`, docs/policies.md): what off-script output
//! becomes under each choice, the diagnostic each decision leaves, and
//! streaming equal to batch (message and diagnostics) under every policy.
//! On the shipped hermes-think template (JSON calls in `<tool_call>`).

use chat_autoparser::parser::{
    CallsInReasoning, DiagnosticKind, ForeignMarkers, MalformedSection, Parsed, TextAfterCalls,
    TextOutsideChannels, UnclosedCall, UnknownTool,
};
use chat_autoparser::{Options, OutputParser, ParserConfig, Policy, ToolChoice};

use crate::common::shipped_template;
use crate::common::streaming::{
    dropping_foreign, report_and_stream, report_and_stream_at, weather_tools,
};

fn parser(policy: Policy) -> OutputParser {
    let (_, analysis) = shipped_template("hermes-think");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

/// The batch report, after checking that streams in 1-, 2-, 3- and 7-byte
/// pieces give the same message and the same diagnostics.
fn report(policy: Policy, output: &str) -> Parsed {
    report_and_stream(&parser(policy), output)
}

fn kinds(parsed: &Parsed) -> Vec<DiagnosticKind> {
    parsed.diagnostics.iter().map(|d| d.kind).collect()
}

/// The output bytes the `Dropped` diagnostics name.
fn dropped<'a>(parsed: &Parsed, output: &'a str) -> Vec<&'a str> {
    parsed
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Dropped)
        .map(|d| &output[d.offset..d.end.unwrap()])
        .collect()
}

const CALL: &str = r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}"#;

#[test]
fn text_after_calls_is_kept_or_dropped_with_its_range() {
    let output = format!("Let me check.\n{CALL}</tool_call>\nDone, it is sunny.\n");
    let kept = report(Policy::lossless(), &output);
    assert_eq!(
        kept.message.content.as_deref(),
        // The newlines on both sides of the call are the model's.
        Some("Let me check.\n\nDone, it is sunny.")
    );
    assert!(kept.diagnostics.is_empty());
    let p = Policy::lossless().with_text_after_calls(TextAfterCalls::Drop);
    let parsed = report(p, &output);
    assert_eq!(parsed.message.content.as_deref(), Some("Let me check."));
    assert_eq!(parsed.message.tool_calls.len(), 1);
    assert_eq!(dropped(&parsed, &output), ["Done, it is sunny."]);
}

#[test]
fn text_between_calls_is_after_the_calls() {
    let output = format!("{CALL}</tool_call>\nand then\n{CALL}</tool_call>");
    let parsed = report(Policy::compatible(), &output);
    assert_eq!(parsed.message.tool_calls.len(), 2);
    assert_eq!(parsed.message.content, None);
    assert_eq!(dropped(&parsed, &output), ["and then"]);
}

#[test]
fn an_unknown_tool_is_content_or_a_flagged_call() {
    let output = r#"<tool_call>{"name": "get_time", "arguments": {}}</tool_call>"#;
    let lossless = report(Policy::lossless(), output);
    assert_eq!(lossless.message.content.as_deref(), Some(output));
    assert_eq!(kinds(&lossless), [DiagnosticKind::UnknownTool]);
    let p = Policy::lossless().with_unknown_tool(UnknownTool::Call);
    let parsed = report(p, output);
    assert_eq!(parsed.message.content, None);
    assert_eq!(parsed.message.tool_calls[0].function.name, "get_time");
    assert_eq!(parsed.message.tool_calls[0].function.arguments, "{}");
    assert_eq!(kinds(&parsed), [DiagnosticKind::UnknownToolCall]);
    // A known name is not flagged.
    assert!(report(p, &format!("{CALL}</tool_call>"))
        .diagnostics
        .is_empty());
}

/// Under `allowed_tools`, a call of a tool the request gives but does not
/// allow is a call of an unknown tool: `unknown_tool` decides.
#[test]
fn a_tool_outside_allowed_tools_is_an_unknown_tool() {
    let (_, analysis) = shipped_template("hermes-think");
    let tools = crate::common::request_options::tools(false);
    let choice = crate::common::request_options::allowed_tools("auto", &["get_weather"]);
    let options = Options::default()
        .with_tools(tools)
        .with_tool_choice(ToolChoice::from_json(&choice).unwrap());
    let parser = |policy| {
        let config = ParserConfig::from(options.clone()).with_policy(policy);
        analysis.parser(&config).unwrap()
    };
    let output = r#"<tool_call>{"name": "get_time", "arguments": {}}</tool_call>"#;
    let lossless = report_and_stream(&parser(Policy::lossless()), output);
    assert_eq!(lossless.message.content.as_deref(), Some(output));
    assert_eq!(kinds(&lossless), [DiagnosticKind::UnknownTool]);
    let p = Policy::lossless().with_unknown_tool(UnknownTool::Call);
    let flagged = report_and_stream(&parser(p), output);
    assert_eq!(flagged.message.tool_calls[0].function.name, "get_time");
    assert_eq!(kinds(&flagged), [DiagnosticKind::UnknownToolCall]);
    let allowed = report_and_stream(&parser(p), &format!("{CALL}</tool_call>"));
    assert_eq!(allowed.message.tool_calls[0].function.name, "get_weather");
    assert!(allowed.diagnostics.is_empty());
}

#[test]
fn a_call_the_output_ends_in_is_recovered_dropped_or_content() {
    let recovered = report(Policy::lossless(), CALL);
    assert_eq!(recovered.message.tool_calls.len(), 1);
    assert_eq!(recovered.message.content, None);

    let p = Policy::lossless().with_unclosed_call_at_end(UnclosedCall::Drop);
    let output = format!("Checking.\n{CALL}");
    let parsed = report(p, &output);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some("Checking."));
    assert_eq!(dropped(&parsed, &output), [CALL]);

    let p = Policy::lossless().with_unclosed_call_at_end(UnclosedCall::Content);
    let parsed = report(p, &output);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some(output.as_str()));
    assert!(kinds(&parsed).contains(&DiagnosticKind::WithdrawnToolCall));

    // A call that closes is no unclosed call, whatever the policy.
    let closed = format!("{CALL}</tool_call>");
    assert_eq!(report(p, &closed).message.tool_calls.len(), 1);

    // `compatible` leaves it out, as SGLang's and TensorRT-LLM's parsers
    // do where they need the closer (docs/policies.md).
    let compatible = Policy::compatible();
    assert_eq!(compatible.unclosed_call_at_end, UnclosedCall::Drop);
    let parsed = report(compatible, &output);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some("Checking."));
    assert_eq!(dropped(&parsed, &output), [CALL]);
}

#[test]
fn a_broken_call_is_content_dropped_or_salvaged() {
    let output = r#"<tool_call>{"name": "get_weather", "arguments": {"city": 3x}}</tool_call> ok"#;
    let content = report(Policy::lossless(), output);
    assert!(content.message.tool_calls.is_empty());
    assert_eq!(content.message.content.as_deref(), Some(output));

    let p = Policy::lossless().with_malformed_section(MalformedSection::Drop);
    let parsed = report(p, output);
    assert!(parsed.message.tool_calls.is_empty());
    // The text after the call is not the call's: content (the space
    // after its closer is the closer's).
    assert_eq!(parsed.message.content.as_deref(), Some("ok"));
    assert_eq!(dropped(&parsed, output), [&output[..output.len() - 2]]);

    // A broken call object holds its name and arguments in one JSON text:
    // there are no arguments of its own to keep, so salvage is content.
    let p = Policy::lossless().with_malformed_section(MalformedSection::Salvage);
    let parsed = report(p, output);
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(parsed.message.content.as_deref(), Some(output));
    assert!(kinds(&parsed).contains(&DiagnosticKind::WithdrawnToolCall));
    assert!(!kinds(&parsed).contains(&DiagnosticKind::SalvagedToolCall));
}

#[test]
fn salvage_keeps_arguments_that_stand_alone_whole_up_to_the_closer() {
    let (_, analysis) = shipped_template("tag-json-args");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    let policy = Policy::lossless().with_malformed_section(MalformedSection::Salvage);
    let parser = analysis.parser(&config.with_policy(policy)).unwrap();
    // `<function=NAME>ARGS</function>`: the arguments are all the text up
    // to the closer, JSON or not, less the closer's edge whitespace.
    for output in [
        "<function=get_weather>{\"city\": Paris, days: 3}\n</function> ok",
        "<function=get_weather>{\"city\": Paris, days: 3}</function> ok",
    ] {
        let parsed = report_and_stream(&parser, output);
        let calls = &parsed.message.tool_calls;
        assert_eq!(calls.len(), 1, "{output:?}");
        assert_eq!(calls[0].function.name, "get_weather");
        assert_eq!(calls[0].function.arguments, r#"{"city": Paris, days: 3}"#);
        assert_eq!(parsed.message.content.as_deref(), Some("ok"));
        assert!(kinds(&parsed).contains(&DiagnosticKind::SalvagedToolCall));
    }
    // A call whose arguments are whole JSON is kept as any call.
    let whole = r#"<function=get_weather>{"city": "Paris"}</function>"#;
    let parsed = report_and_stream(&parser, whole);
    assert_eq!(
        parsed.message.tool_calls[0].function.arguments,
        r#"{"city": "Paris"}"#
    );
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
}

#[test]
fn lossless_never_drops() {
    let outputs = [
        format!("{CALL}</tool_call>\nDone."),
        format!("{CALL} trailing</tool_call>"),
        r#"<tool_call>{"name": "nope", "arguments": {}}</tool_call>"#.to_string(),
        format!("<think>hm</think>{CALL}"),
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Par"#.to_string(),
    ];
    for output in &outputs {
        let parsed = report(Policy::lossless(), output);
        assert!(
            !kinds(&parsed).contains(&DiagnosticKind::Dropped),
            "{output:?}: {parsed:?}"
        );
        let compatible = report(Policy::compatible(), output);
        for d in compatible.diagnostics.iter().filter(|d| d.end.is_some()) {
            assert!(d.offset <= d.end.unwrap() && d.end.unwrap() <= output.len());
        }
    }
}

/// `parser` under `policy` and under the same policy over the other
/// preset, each checked against streams cut at every size from 1 byte to
/// the whole output: the batch report under `policy`.
fn every_chunking(parser: impl Fn(Policy) -> OutputParser, policy: Policy, output: &str) -> Parsed {
    let other = match policy.text_after_calls {
        TextAfterCalls::Keep => Policy::compatible(),
        _ => Policy::lossless(),
    };
    let other = other.with_calls_in_reasoning(policy.calls_in_reasoning);
    report_and_stream_at(&parser(other), output, 1..=output.len());
    report_and_stream_at(&parser(policy), output, 1..=output.len())
}

fn in_reasoning(choice: CallsInReasoning) -> Policy {
    Policy::lossless().with_calls_in_reasoning(choice)
}

/// The calls' names and arguments, in order.
fn calls(parsed: &Parsed) -> Vec<(&str, &str)> {
    crate::common::streaming::calls(&parsed.message)
}

const THOUGHT_CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#[test]
fn a_call_in_reasoning_stays_reasoning_by_default() {
    let output = format!("<think>let me look {THOUGHT_CALL} ok</think>done");
    for p in [Policy::lossless(), Policy::compatible()] {
        let parsed = every_chunking(parser, p, &output);
        let reasoning = format!("let me look {THOUGHT_CALL} ok");
        assert_eq!(parsed.message.reasoning_content, reasoning);
        assert_eq!(parsed.message.content.as_deref(), Some("done"));
        assert!(parsed.message.tool_calls.is_empty());
        assert!(parsed.diagnostics.is_empty(), "{parsed:?}");
    }
}

#[test]
fn a_call_in_reasoning_is_taken_out_of_it_under_call() {
    let output = format!("<think>let me look {THOUGHT_CALL} ok</think>done");
    let parsed = every_chunking(parser, in_reasoning(CallsInReasoning::Call), &output);
    // The bytes on both sides of the call, as written.
    assert_eq!(parsed.message.reasoning_content, "let me look  ok");
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(kinds(&parsed), [DiagnosticKind::CallInReasoning]);
    assert_eq!(
        named(&parsed, DiagnosticKind::CallInReasoning, &output),
        [THOUGHT_CALL]
    );
}

#[test]
fn a_call_in_reasoning_is_read_and_kept_there_under_both() {
    let output = format!("<think>let me look {THOUGHT_CALL} ok</think>done");
    let parsed = every_chunking(parser, in_reasoning(CallsInReasoning::Both), &output);
    assert_eq!(
        parsed.message.reasoning_content,
        format!("let me look {THOUGHT_CALL} ok")
    );
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(
        named(&parsed, DiagnosticKind::CallInReasoning, &output),
        [THOUGHT_CALL]
    );
}

#[test]
fn calls_in_reasoning_come_in_order_with_the_calls_after_it() {
    let call = |city: &str| THOUGHT_CALL.replace("Paris", city);
    let output = format!(
        "<think>a {} b\n{}</think>\n{}",
        call("Paris"),
        call("Rome"),
        call("Oslo")
    );
    let parsed = every_chunking(parser, in_reasoning(CallsInReasoning::Call), &output);
    let cities: Vec<&str> = calls(&parsed).iter().map(|c| c.1).collect();
    assert_eq!(
        cities,
        [
            r#"{"city": "Paris"}"#,
            r#"{"city": "Rome"}"#,
            r#"{"city": "Oslo"}"#
        ]
    );
    assert_eq!(parsed.message.reasoning_content, "a  b");
    assert_eq!(parsed.message.content, None);
    let read = named(&parsed, DiagnosticKind::CallInReasoning, &output);
    assert_eq!(read, [call("Paris"), call("Rome")]);
    // Under the compatible preset content after the calls is dropped; the
    // reasoning around them is not content.
    let compatible = Policy::compatible().with_calls_in_reasoning(CallsInReasoning::Call);
    let output = format!("<think>a {} b</think>done", call("Paris"));
    let parsed = every_chunking(parser, compatible, &output);
    assert_eq!(parsed.message.reasoning_content, "a  b");
    assert_eq!(parsed.message.content, None);
    assert_eq!(dropped(&parsed, &output), ["done"]);
}

#[test]
fn a_broken_or_unclosed_call_in_reasoning_stays_reasoning() {
    for choice in [CallsInReasoning::Call, CallsInReasoning::Both] {
        for call in [
            // Arguments that are not JSON.
            THOUGHT_CALL.replace(r#""Paris""#, "3x"),
            // No closer before the block ends.
            THOUGHT_CALL.replace("\n</tool_call>", ""),
            // Cut inside its arguments.
            THOUGHT_CALL.replace(r#""Paris"}}"#, r#""Par"#),
        ] {
            let output = format!("<think>a {call} b</think>done");
            let parsed = every_chunking(parser, in_reasoning(choice), &output);
            assert_eq!(parsed.message.reasoning_content, format!("a {call} b"));
            assert_eq!(parsed.message.content.as_deref(), Some("done"));
            assert!(parsed.message.tool_calls.is_empty(), "{output:?}");
            assert!(parsed.diagnostics.is_empty(), "{output:?}: {parsed:?}");
        }
    }
}

#[test]
fn a_call_in_a_block_that_never_closes_ends_the_block_under_every_choice() {
    let output = format!("<think>let me look {THOUGHT_CALL} ok");
    for choice in [
        CallsInReasoning::Reasoning,
        CallsInReasoning::Call,
        CallsInReasoning::Both,
    ] {
        let parsed = every_chunking(parser, in_reasoning(choice), &output);
        assert_eq!(parsed.message.reasoning_content, "let me look");
        assert_eq!(parsed.message.content.as_deref(), Some("ok"));
        assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
        assert!(parsed.diagnostics.is_empty(), "{parsed:?}");
    }
}

#[test]
fn an_unknown_tool_in_reasoning_follows_unknown_tool() {
    let call = THOUGHT_CALL.replace("get_weather", "get_time");
    let output = format!("<think>a {call} b</think>done");
    let p = in_reasoning(CallsInReasoning::Call);
    let parsed = every_chunking(parser, p, &output);
    assert_eq!(parsed.message.reasoning_content, format!("a {call} b"));
    assert!(parsed.message.tool_calls.is_empty());
    assert_eq!(kinds(&parsed), [DiagnosticKind::UnknownTool]);
    assert_eq!(
        parsed.diagnostics[0].offset,
        output.find("<tool_call>").unwrap()
    );
    let parsed = every_chunking(parser, p.with_unknown_tool(UnknownTool::Call), &output);
    assert_eq!(parsed.message.reasoning_content, "a  b");
    assert_eq!(calls(&parsed), [("get_time", r#"{"city": "Paris"}"#)]);
    assert_eq!(
        kinds(&parsed),
        [
            DiagnosticKind::UnknownToolCall,
            DiagnosticKind::CallInReasoning
        ]
    );
}

/// The shipped glm-arg-pairs template's parser (`<think>` reasoning,
/// `<tool_call>NAME` with `<arg_key>`/`<arg_value>` pairs), for the weather tool.
fn glm(policy: Policy) -> OutputParser {
    let (_, analysis) = shipped_template("glm-arg-pairs");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

#[test]
fn a_tagged_argument_call_in_reasoning_under_each_choice() {
    let call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>";
    let output = format!("<think>let me look {call} ok</think>done");
    let parsed = every_chunking(glm, in_reasoning(CallsInReasoning::Call), &output);
    assert_eq!(parsed.message.reasoning_content, "let me look  ok");
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(
        named(&parsed, DiagnosticKind::CallInReasoning, &output),
        [call]
    );

    let parsed = every_chunking(glm, in_reasoning(CallsInReasoning::Both), &output);
    assert_eq!(
        parsed.message.reasoning_content,
        format!("let me look {call} ok")
    );
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(
        named(&parsed, DiagnosticKind::CallInReasoning, &output),
        [call]
    );

    let parsed = every_chunking(glm, Policy::lossless(), &output);
    assert_eq!(
        parsed.message.reasoning_content,
        format!("let me look {call} ok")
    );
    assert!(parsed.message.tool_calls.is_empty());

    // Without its closer the call is reasoning text.
    let unclosed = call.replace("\n</tool_call>", "");
    let output = format!("<think>a {unclosed} b</think>done");
    let parsed = every_chunking(glm, in_reasoning(CallsInReasoning::Call), &output);
    assert_eq!(parsed.message.reasoning_content, format!("a {unclosed} b"));
    assert!(parsed.message.tool_calls.is_empty());
}

#[test]
fn any_name_is_still_a_name_not_punctuation() {
    // With names unchecked (`unknown_tool: call`), a name still starts with
    // a letter, a digit or `_`: bracket punctuation is text.
    let output = r#"<tool_call>{"name": "[", "arguments": {}}</tool_call>"#;
    let p = Policy::lossless().with_unknown_tool(UnknownTool::Call);
    let parsed = report(p, output);
    assert!(parsed.message.tool_calls.is_empty(), "{parsed:?}");
    assert_eq!(parsed.message.content.as_deref(), Some(output));
}

/// The shipped channel-harmony template's parser (gpt-oss-style channels,
/// calls on `commentary`), for the weather tool.
fn channels(policy: Policy) -> OutputParser {
    let (_, analysis) = crate::common::shipped_template("channel-harmony");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

const FINAL: &str = "<|channel|>final<|message|>";

#[test]
fn text_outside_channels_is_kept_or_dropped_with_its_range() {
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let think = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant";
    for (output, kept, compatible, dropped_text) in [
        // Before the first channel.
        (
            format!("Sure. {FINAL}Hi."),
            "Sure. Hi.",
            "Hi.",
            vec!["Sure."],
        ),
        // After a reasoning block, before the next header.
        (
            format!("{think}stray {FINAL}Hi."),
            "stray Hi.",
            "Hi.",
            vec!["stray"],
        ),
        // After a call.
        (
            format!("{FINAL}Hi.{call} late"),
            "Hi. late",
            "Hi.",
            vec!["late"],
        ),
        // No channel at all.
        (
            "plain text".to_string(),
            "plain text",
            "",
            vec!["plain text"],
        ),
    ] {
        let lossless = report_and_stream(&channels(Policy::lossless()), &output);
        assert_eq!(
            lossless.message.content.as_deref(),
            Some(kept),
            "{output:?}"
        );
        assert!(lossless.diagnostics.is_empty(), "{output:?}: {lossless:?}");
        let only = Policy::lossless().with_text_outside_channels(TextOutsideChannels::Drop);
        for p in [only, Policy::compatible()] {
            let parsed = report_and_stream(&channels(p), &output);
            let content = parsed.message.content.as_deref().unwrap_or("");
            assert_eq!(content, compatible, "{output:?}");
            assert_eq!(dropped(&parsed, &output), dropped_text, "{output:?}");
        }
    }
}

#[test]
fn text_in_channels_is_kept_under_both_presets() {
    let output =
        format!("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant{FINAL}Hi there.");
    for p in [Policy::lossless(), Policy::compatible()] {
        let parsed = report_and_stream(&channels(p), &output);
        assert_eq!(parsed.message.content.as_deref(), Some("Hi there."));
        assert_eq!(parsed.message.reasoning_content, "Think.");
        assert!(parsed.diagnostics.is_empty(), "{parsed:?}");
    }
}

/// A final channel the model opens after its calls is a message to the
/// user, kept under `text_after_calls: drop` (as vLLM's harmony reading
/// keeps it); text after the calls outside any channel is still dropped.
#[test]
fn a_channel_message_after_the_calls_is_kept_under_text_after_calls_drop() {
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let after = format!("{call}<|start|>assistant{FINAL}I asked for the weather.");
    let only_after = Policy::lossless().with_text_after_calls(TextAfterCalls::Drop);
    for p in [only_after, Policy::compatible()] {
        let parsed = report_and_stream(&channels(p), &after);
        assert_eq!(
            parsed.message.content.as_deref(),
            Some("I asked for the weather.")
        );
        assert_eq!(parsed.message.tool_calls.len(), 1);
        assert!(dropped(&parsed, &after).is_empty(), "{parsed:?}");
        let stray = format!("{call} late");
        let parsed = report_and_stream(&channels(p), &stray);
        assert_eq!(parsed.message.content, None);
        assert_eq!(dropped(&parsed, &stray), ["late"]);
    }
}

/// Text of a broken call that comes with the whole call (withdrawn, then
/// dropped as a piece) is not also dropped as it streams: one range, at
/// every chunking (found by the streaming property on glm-arg-pairs).
#[test]
fn a_dropped_broken_call_after_a_call_is_one_range() {
    let (_, analysis) = crate::common::shipped_template("glm-arg-pairs");
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    let p = analysis
        .parser(&config.with_policy(Policy::compatible()))
        .unwrap();
    let call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>";
    let output = format!("{call}<tool_call>ébbbbbbb .bb");
    let parsed = report_and_stream(&p, &output);
    assert_eq!(parsed.message.tool_calls.len(), 1);
    assert_eq!(dropped(&parsed, &output), ["<tool_call>ébbbbbbb .bb"]);
}

/// A Llama-3.x-like template whose calls are bare JSON objects.
fn bare_json(policy: Policy) -> OutputParser {
    let path = format!("{}/templates/bare-json.jinja", env!("CARGO_MANIFEST_DIR"));
    let analysis = crate::common::streaming::analyze(&std::fs::read_to_string(path).unwrap());
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    analysis.parser(&config.with_policy(policy)).unwrap()
}

/// The output bytes the diagnostics of `kind` name.
fn named<'a>(parsed: &Parsed, kind: DiagnosticKind, output: &'a str) -> Vec<&'a str> {
    let of_kind = parsed.diagnostics.iter().filter(|d| d.kind == kind);
    of_kind.map(|d| &output[d.offset..d.end.unwrap()]).collect()
}

const BARE: &str = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;

#[test]
fn foreign_wrappers_around_a_bare_json_call_are_named_or_dropped() {
    for (open, close) in [
        ("[TOOL_CALLS]", ""),
        ("<tool_call>\n", "\n</tool_call>"),
        ("<|tool_call_start|>", "<|tool_call_end|>"),
        ("<|python_tag|>", ""),
        ("<|python_start|>", "<|python_end|>"),
    ] {
        let output = format!("{open}{BARE}{close}");
        let markers: Vec<&str> = [open.trim(), close.trim()]
            .into_iter()
            .filter(|m| !m.is_empty())
            .collect();
        let kept = report_and_stream(&bare_json(Policy::lossless()), &output);
        assert_eq!(kept.message.tool_calls.len(), 1, "{output}");
        assert_eq!(kept.message.content_text(), markers.concat(), "{output}");
        let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
        assert_eq!(foreign, markers, "{output}");
        assert!(dropped(&kept, &output).is_empty(), "{output}");

        let left = report_and_stream(&bare_json(Policy::compatible()), &output);
        assert_eq!(left.message.tool_calls.len(), 1, "{output}");
        assert_eq!(left.message.content, None, "{output}");
        assert_eq!(dropped(&left, &output), markers, "{output}");
        assert_eq!(kinds(&left), vec![DiagnosticKind::Dropped; markers.len()]);
    }
}

/// The same wrappers around a JSON call on a template whose calls have a
/// marker of their own (hermes' `<tool_call>`): the call, its wrapper
/// another format's markers, as a code fence is there.
#[test]
fn foreign_wrappers_around_a_json_call_on_a_marked_format_are_named_or_dropped() {
    let (_, analysis) = crate::common::shipped_template("hermes-think");
    let parser = |policy| {
        let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
        analysis.parser(&config.with_policy(policy)).unwrap()
    };
    for (open, close) in [
        ("[TOOL_CALLS][", "]"),
        ("Sure.<|python_tag|>", ""),
        ("<|python_start|>", "<|python_end|>"),
    ] {
        let output = format!("{open}{BARE}{close}");
        let markers: Vec<&str> = ["[TOOL_CALLS]", "<|python_tag|>", "<|python_start|>"]
            .into_iter()
            .chain(["<|python_end|>"])
            .filter(|m| output.contains(m))
            .collect();
        let text = if open.starts_with("Sure.") {
            "Sure."
        } else {
            ""
        };
        let kept = report_and_stream(&parser(Policy::lossless()), &output);
        assert_eq!(kept.message.tool_calls.len(), 1, "{output}");
        assert_eq!(
            kept.message.content_text(),
            format!("{text}{}", markers.concat()),
            "{output}"
        );
        let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
        assert_eq!(foreign, markers, "{output}");

        let left = report_and_stream(&parser(dropping_foreign()), &output);
        assert_eq!(left.message.tool_calls.len(), 1, "{output}");
        assert_eq!(left.message.content_text(), text, "{output}");
        assert_eq!(dropped(&left, &output), markers, "{output}");

        // `compatible`: another format's call is text, as in vLLM and SGLang.
        let as_text = report_and_stream(&parser(Policy::compatible()), &output);
        assert!(as_text.message.tool_calls.is_empty(), "{output}");
        assert_eq!(as_text.message.content_text(), output, "{output}");
        assert!(as_text.diagnostics.is_empty(), "{output}");
    }
}

#[test]
fn a_lone_foreign_closer_after_text_is_named_or_dropped() {
    let output = "It is sunny in Paris.</tool_call>";
    let kept = report_and_stream(&bare_json(Policy::lossless()), output);
    assert_eq!(kept.message.content_text(), output);
    let foreign = named(&kept, DiagnosticKind::ForeignMarker, output);
    assert_eq!(foreign, ["</tool_call>"]);
    let left = report_and_stream(&bare_json(dropping_foreign()), output);
    assert_eq!(left.message.content_text(), "It is sunny in Paris.");
    assert_eq!(dropped(&left, output), ["</tool_call>"]);
    // `compatible`: a closer after text is text, as in vLLM and SGLang.
    let as_text = report_and_stream(&bare_json(Policy::compatible()), output);
    assert_eq!(as_text.message.content_text(), output);
    assert!(as_text.diagnostics.is_empty());
}

/// Text inside another format's wrapper, no call in it (a model mixing
/// dialects writes its answer in Llama 4's `<|python_start|>...<|python_end|>`):
/// the opener and the closer are decided alike, kept and named or both
/// dropped, never the closer alone, under every chunking.
#[test]
fn text_inside_a_foreign_wrapper_keeps_or_drops_both_markers() {
    for (open, close) in [
        ("<|python_start|>", "<|python_end|>"),
        ("<tool_call>", "</tool_call>"),
    ] {
        let output = format!("{open}It is sunny.{close}");
        let kept = report_and_stream(&bare_json(Policy::lossless()), &output);
        assert_eq!(kept.message.content_text(), output);
        let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
        assert_eq!(foreign, [open, close], "{output}");
        let left = report_and_stream(&bare_json(dropping_foreign()), &output);
        assert_eq!(left.message.content_text(), "It is sunny.", "{output}");
        assert_eq!(dropped(&left, &output), [open, close], "{output}");
        let as_text = report_and_stream(&bare_json(Policy::compatible()), &output);
        assert_eq!(as_text.message.content_text(), output, "{output}");
        assert!(as_text.diagnostics.is_empty(), "{output}");
    }
}

#[test]
fn a_foreign_marker_without_a_call_is_plain_content() {
    // Not adjacent to a call, an opener is text the model wrote about it.
    let output = "Write [TOOL_CALLS] before a call.";
    for policy in [Policy::lossless(), Policy::compatible()] {
        let parsed = report_and_stream(&bare_json(policy), output);
        assert_eq!(parsed.message.content_text(), output);
        assert!(parsed.diagnostics.is_empty());
    }
}

#[test]
fn a_foreign_wrapper_around_a_json_list_of_calls() {
    let output = format!("<tool_call>[{BARE}, {BARE}]</tool_call>");
    let kept = report_and_stream(&bare_json(Policy::lossless()), &output);
    assert_eq!(kept.message.tool_calls.len(), 2);
    assert_eq!(kept.message.content_text(), "<tool_call></tool_call>");
    let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
    assert_eq!(foreign, ["<tool_call>", "</tool_call>"]);
    let left = report_and_stream(&bare_json(Policy::compatible()), &output);
    assert_eq!(left.message.tool_calls.len(), 2);
    assert_eq!(left.message.content, None);
    assert_eq!(dropped(&left, &output), ["<tool_call>", "</tool_call>"]);
}

/// A call whose arguments are a JSON string that holds no JSON is
/// withdrawn (as anywhere); inside reasoning its text stays reasoning.
#[test]
fn a_withdrawn_call_in_reasoning_stays_reasoning() {
    let call = THOUGHT_CALL.replace(r#"{"city": "Paris"}"#, r#""oops""#);
    let output = format!("<think>a {call} b</think>done");
    for choice in [CallsInReasoning::Call, CallsInReasoning::Both] {
        let parsed = every_chunking(parser, in_reasoning(choice), &output);
        assert_eq!(parsed.message.reasoning_content, format!("a {call} b"));
        assert_eq!(parsed.message.content.as_deref(), Some("done"));
        assert!(parsed.message.tool_calls.is_empty());
        assert_eq!(kinds(&parsed), [DiagnosticKind::WithdrawnToolCall]);
    }
}

/// A member the format does not have, in a call read out of reasoning, is
/// reasoning text where it stands (not content, not lost).
#[test]
fn an_unknown_member_of_a_call_in_reasoning_stays_reasoning() {
    let call = THOUGHT_CALL.replace("}}", r#"}, "note": "x"}"#);
    let output = format!("<think>a {call} b</think>done");
    let parsed = every_chunking(parser, in_reasoning(CallsInReasoning::Call), &output);
    assert_eq!(parsed.message.reasoning_content, r#"a "note": "x" b"#);
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(
        kinds(&parsed),
        [
            DiagnosticKind::UnknownMember,
            DiagnosticKind::CallInReasoning
        ]
    );
}

/// A corpus template's parser for the weather tool; `None` when the corpus
/// is absent.
fn corpus(name: &str, thinking: bool) -> Option<impl Fn(Policy) -> OutputParser> {
    let analysis = crate::common::corpus_template(name)?.analyze().unwrap();
    Some(move |policy| {
        let options = Options::default()
            .with_tools(weather_tools())
            .with_enable_thinking(Some(thinking));
        let config = ParserConfig::from(options).with_policy(policy);
        analysis.parser(&config).unwrap()
    })
}

/// The block the prompt opened (QwQ's `<think>\n` with thinking on) reads
/// calls as a block the model opens does.
#[test]
fn a_call_in_the_block_the_prompt_opened() {
    let Some(qwq) = corpus("Qwen-QwQ-32B", true) else {
        return;
    };
    let output = format!("let me look {THOUGHT_CALL} ok</think>done");
    let parsed = every_chunking(&qwq, in_reasoning(CallsInReasoning::Call), &output);
    assert_eq!(parsed.message.reasoning_content, "let me look  ok");
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    let read = named(&parsed, DiagnosticKind::CallInReasoning, &output);
    assert_eq!(read, [THOUGHT_CALL]);
}

/// A format whose section has markers of its own around its calls
/// (Kimi-K2): the whole section is read out of the reasoning, and without
/// its closer it is reasoning text.
#[test]
fn a_section_with_its_own_markers_in_reasoning() {
    let Some(kimi) = corpus("Kimi-K2-Thinking", true) else {
        return;
    };
    let call = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>";
    let section = format!("<|tool_calls_section_begin|>{call}<|tool_calls_section_end|>");
    let output = format!("<think>look {section} ok</think>done");
    let parsed = every_chunking(&kimi, in_reasoning(CallsInReasoning::Call), &output);
    assert_eq!(parsed.message.reasoning_content, "look  ok");
    assert_eq!(parsed.message.content.as_deref(), Some("done"));
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    let read = named(&parsed, DiagnosticKind::CallInReasoning, &output);
    assert_eq!(read, [section.as_str()]);

    let unclosed = format!("<think>look <|tool_calls_section_begin|>{call} ok</think>done");
    let parsed = every_chunking(&kimi, in_reasoning(CallsInReasoning::Call), &unclosed);
    assert!(parsed.message.tool_calls.is_empty());
    assert!(parsed.message.reasoning_content.contains(call));
}

/// A reasoning block full of call markers that open no call (a model
/// writing about `<tool_call>`) is read in time linear in its length, under
/// each choice: the block looks for its end marker at every marker, but a
/// look repeated before the end it found costs nothing (scanning anew each
/// time took minutes for this output in a debug build). So is one
/// full of calls, each a section of its own, which each look past
/// themselves for the block's end: a look repeated before the end it found
/// costs nothing (each scanning anew, the calls took 85 s in a debug
/// build).
#[test]
fn call_markers_in_reasoning_cost_linear_time() {
    let markers = format!("<think>{}</think>done", "<tool_call> x ".repeat(10_000));
    let calls = format!(
        "<think>{}</think>done",
        format!("{THOUGHT_CALL} x ").repeat(10_000)
    );
    for choice in [CallsInReasoning::Reasoning, CallsInReasoning::Call] {
        let read = if choice == CallsInReasoning::Call {
            10_000
        } else {
            0
        };
        for (output, read) in [(&markers, 0), (&calls, read)] {
            let started = std::time::Instant::now();
            let parsed = parser(in_reasoning(choice)).parse_report(output, false);
            let took = started.elapsed();
            assert_eq!(parsed.message.content.as_deref(), Some("done"));
            assert_eq!(parsed.message.tool_calls.len(), read, "{choice:?}");
            assert!(took.as_secs() < 10, "{choice:?}, {read} calls: {took:?}");
        }
    }
}

/// The same with an end marker of several tokens (harmony's
/// `<|end|><|start|>assistant`, whose first token alone may close the block
/// or be text): the block's end is looked for at each marker, but a look
/// repeated before the end it found costs nothing, so the block still costs
/// time linear in its length, and so do calls read in it (which each look
/// past themselves for the block's end). Looked for anew at each marker,
/// the markers took 16 s and the calls 17 s (debug).
#[test]
fn call_markers_in_reasoning_cost_linear_time_with_a_cut_end_marker() {
    let block = |text: String| {
        format!("<|channel|>analysis<|message|>{text}<|end|><|start|>assistant{FINAL}done")
    };
    let markers = block("<|channel|> x ".repeat(10_000));
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|> ";
    let calls = block(call.repeat(4_000));
    for choice in [CallsInReasoning::Reasoning, CallsInReasoning::Call] {
        for (output, read) in [(&markers, 0), (&calls, 4_000)] {
            let read = if choice == CallsInReasoning::Call {
                read
            } else {
                0
            };
            let started = std::time::Instant::now();
            let parser = channels(in_reasoning(choice));
            let parsed = parser.parse_report(output, false);
            // Streamed, a look that waited for more input still remembers
            // where it started.
            let mut stream = parser.stream();
            for piece in chat_autoparser::parser::char_chunks(output, 7) {
                stream.push(piece);
            }
            stream.finish();
            let took = started.elapsed();
            assert_eq!(stream.message(), parsed.message, "{choice:?}");
            assert_eq!(parsed.message.content.as_deref(), Some("done"));
            assert_eq!(parsed.message.tool_calls.len(), read, "{choice:?}");
            assert!(took.as_secs() < 5, "{choice:?}, {read} calls: {took:?}");
        }
    }
}

/// A Python call list inside another format's wrapper, as LFM2-style
/// templates write it (`<|tool_call_start|>[f(a="x"), g(b=1)]<|tool_call_end|>`),
/// on templates whose own format is something else (JSON in tags, JSON
/// after a marker, tagged parameters, bare JSON), or in Llama's wrappers on
/// such a template: each call is a call, the wrapper's markers decided by
/// `foreign_markers` as around a JSON call.
#[test]
fn a_python_call_list_in_a_foreign_wrapper_is_read_on_any_format() {
    let list = r#"[get_weather(city="Paris"), get_weather(city='Rome')]"#;
    let templates = [
        "hermes-think",
        "mistral-tool-calls",
        "qwen-coder-xml",
        "bare-json",
    ];
    // The LFM2-like template's own wrapper is no foreign one: Llama's are.
    let templates = templates.map(|t| (t, "<|tool_call_start|>", "<|tool_call_end|>"));
    let python_list = ("python-calls", "<|python_start|>", "<|python_end|>");
    for (template, wrapper_open, wrapper_close) in templates.into_iter().chain([python_list]) {
        let (_, analysis) = shipped_template(template);
        let parser = |policy| {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            analysis.parser(&config.with_policy(policy)).unwrap()
        };
        for (open, close) in [(wrapper_open, wrapper_close), ("<|python_tag|>", "")] {
            let output = format!("Let me check.{open}{list}{close}");
            let markers: Vec<&str> = [open, close]
                .into_iter()
                .filter(|m| !m.is_empty())
                .collect();
            let want = [
                ("get_weather", r#"{"city": "Paris"}"#),
                ("get_weather", r#"{"city": "Rome"}"#),
            ];
            let kept = report_and_stream(&parser(Policy::lossless()), &output);
            assert_eq!(
                crate::common::streaming::calls(&kept.message),
                want,
                "{template}: {output}"
            );
            assert_eq!(
                kept.message.content_text(),
                format!("Let me check.{}", markers.concat()),
                "{template}: {output}"
            );
            let foreign = named(&kept, DiagnosticKind::ForeignMarker, &output);
            assert_eq!(foreign, markers, "{template}: {output}");

            let left = report_and_stream(&parser(dropping_foreign()), &output);
            assert_eq!(
                crate::common::streaming::calls(&left.message),
                want,
                "{template}: {output}"
            );
            assert_eq!(
                left.message.content_text(),
                "Let me check.",
                "{template}: {output}"
            );
            assert_eq!(dropped(&left, &output), markers, "{template}: {output}");
            // `compatible`: another format's calls are text.
            let as_text = report_and_stream(&parser(Policy::compatible()), &output);
            assert!(
                as_text.message.tool_calls.is_empty(),
                "{template}: {output}"
            );
            assert_eq!(as_text.message.content_text(), output, "{template}");
        }
    }
}

/// The model's end-of-generation token after the last message of a
/// channel format (`<|return|>`, which harmony models write where their
/// template renders `<|end|>`, and the template's own message end where it
/// renders `<|return|>`): it ends the message, scaffolding as a message end
/// is, under both presets and with no diagnostic; with whitespace after it,
/// or after another message end. Before other text it is text.
#[test]
fn an_end_of_generation_token_after_the_last_message_is_scaffolding() {
    let think = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant";
    let shipped = |p| channels(p);
    let gpt_oss = corpus("openai-gpt-oss-120b", false);
    for end in ["<|return|>", "<|end|>", "<|end|><|return|>", "<|return|>\n"] {
        for output in [
            format!("{FINAL}Hi.{end}"),
            format!("{think}{FINAL}Hi.{end}"),
        ] {
            let mut parsers: Vec<&dyn Fn(Policy) -> OutputParser> = vec![&shipped];
            parsers.extend(
                gpt_oss
                    .as_ref()
                    .map(|p| p as &dyn Fn(Policy) -> OutputParser),
            );
            for parser in parsers {
                for policy in [Policy::lossless(), Policy::compatible()] {
                    let parsed = report_and_stream(&parser(policy), &output);
                    assert_eq!(parsed.message.content.as_deref(), Some("Hi."), "{output:?}");
                    assert!(parsed.diagnostics.is_empty(), "{output:?}: {parsed:?}");
                }
            }
        }
    }
    let output = format!("{FINAL}Write <|return|> to stop.");
    for policy in [Policy::lossless(), Policy::compatible()] {
        let parsed = report_and_stream(&channels(policy), &output);
        let content = parsed.message.content.as_deref();
        assert_eq!(content, Some("Write <|return|> to stop."));
    }
}

/// A call object written as a Python dict (single quotes, `True`, `None`)
/// inside another format's wrapper is read as the same object in JSON is,
/// on templates of every call format: the same calls (arguments converted
/// to JSON), the same content and the same diagnostics (the wrapper's
/// markers named or dropped), under both readings of other formats'
/// markers and every chunking.
#[test]
fn a_python_dict_call_in_a_foreign_wrapper_is_read_as_the_json_one() {
    let json_call =
        r#"{"name": "get_weather", "arguments": {"city": "Paris", "metric": true, "note": null}}"#;
    let python_call =
        r#"{'name': 'get_weather', 'arguments': {'city': 'Paris', 'metric': True, 'note': None}}"#;
    let wrappers = [
        ("<tool_call>", "</tool_call>"),
        ("[TOOL_CALLS]", ""),
        ("[TOOL_CALLS][", "]"),
        ("Sure.<|python_tag|>", ""),
        ("<|python_start|>", "<|python_end|>"),
    ];
    let templates = [
        "hermes-think",
        "mistral-tool-calls",
        "qwen-coder-xml",
        "glm-arg-pairs",
        "python-calls",
        "bare-json",
    ];
    let arguments = |parsed: &Parsed| -> Vec<(String, serde_json::Value)> {
        let calls = parsed.message.tool_calls.iter();
        let value = |a: &str| serde_json::from_str(a).unwrap();
        calls
            .map(|c| (c.function.name.clone(), value(&c.function.arguments)))
            .collect()
    };
    for template in templates {
        let (_, analysis) = shipped_template(template);
        for policy in [Policy::lossless(), dropping_foreign()] {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            let parser = analysis.parser(&config.with_policy(policy)).unwrap();
            let mut compared = 0;
            for (open, close) in wrappers {
                let json = report_and_stream(&parser, &format!("{open}{json_call}{close}"));
                if json.message.tool_calls.is_empty() {
                    // Not this template's (`[TOOL_CALLS]` without its list
                    // on Mistral's is text).
                    continue;
                }
                compared += 1;
                let output = format!("{open}{python_call}{close}");
                let python = report_and_stream(&parser, &output);
                assert_eq!(arguments(&python), arguments(&json), "{template}: {output}");
                let content = python.message.content_text();
                assert_eq!(content, json.message.content_text(), "{template}: {output}");
                assert_eq!(python.diagnostics, json.diagnostics, "{template}: {output}");
            }
            assert!(
                compared >= 4,
                "{template}: {compared} wrappers read JSON calls"
            );
        }
    }
}

/// `foreign_markers: text` (`compatible`'s), what vLLM's and SGLang's
/// parsers do (each reads its own format's markers only): on hermes' format
/// a code fence or another format's wrapper around a JSON call, and a lone
/// closer of the template's own format, are all content, byte for byte,
/// with no call read; the template's own call is still read.
#[test]
fn foreign_markers_as_text_leave_fences_wrappers_and_lone_closers_as_content() {
    let text = Policy::compatible();
    assert_eq!(text.foreign_markers, ForeignMarkers::Text);
    for output in [
        format!("```json\n{BARE}\n```"),
        format!("Sure:\n[TOOL_CALLS] [{BARE}, {BARE}] ok"),
        format!("<|python_start|>{BARE}<|python_end|>"),
        "Hello there</tool_call>".to_string(),
    ] {
        let read = report_and_stream(&parser(dropping_foreign()), &output);
        let lone = output.starts_with("Hello");
        assert_eq!(read.message.tool_calls.is_empty(), lone, "{output}");
        let parsed = report_and_stream(&parser(text), &output);
        assert!(parsed.message.tool_calls.is_empty(), "{output}");
        assert_eq!(parsed.message.content_text(), output);
        assert!(
            parsed.diagnostics.is_empty(),
            "{output}: {:?}",
            parsed.diagnostics
        );
    }
    let own = format!("{CALL}</tool_call>");
    let parsed = report_and_stream(&parser(text), &own);
    assert_eq!(calls(&parsed), [("get_weather", r#"{"city": "Paris"}"#)]);
    assert_eq!(parsed.message.content, None);
}
