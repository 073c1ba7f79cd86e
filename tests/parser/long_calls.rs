//! A call longer than `LONGEST_CALL` (4 MiB) while open is withdrawn at
//! once (issue 28 item 8): the parser would otherwise keep its text twice
//! (the message's arguments, and the output for a withdrawal at its close)
//! and a Python value not at all until it closes. Its whole text is
//! content, verbatim, with an `oversized_tool_call` diagnostic; a stream
//! sent the call's deltas up to there and names it in `withdrawn_calls`.
//! A call up to the limit is kept. The three argument readers: JSON
//! (`hermes-think`), tagged values (`qwen-coder-xml`), Python
//! (`python-calls`). Batch and streams in several chunkings agree.

use chat_autoparser::message::MessageBuilder;
use chat_autoparser::parser::{char_chunks, DiagnosticKind, LONGEST_CALL};
use chat_autoparser::{AssistantMessage, OutputParser};
use serde_json::{json, Value};

fn parser(template: &str) -> OutputParser {
    crate::common::weather_parser(template)
}

/// Where a call of `template` starts in its text: after the section's
/// opening marker, when that is not the call's own (a Python list's).
fn call_at(template: &str) -> usize {
    match template {
        "python-calls" => "<|tool_call_start|>[".len(),
        _ => 0,
    }
}

/// A call of `template` whose one argument is `value`: the call's text and
/// where the value starts in it.
fn call(template: &str, value: &str) -> (String, usize) {
    let (head, tail) = match template {
        "hermes-think" => (
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
            "\"}}\n</tool_call>",
        ),
        "qwen-coder-xml" => (
            "<tool_call>\n<function=get_weather>\n<parameter=city>\n",
            "\n</parameter>\n</function>\n</tool_call>",
        ),
        _ => (
            "<|tool_call_start|>[get_weather(city=\"",
            "\")]<|tool_call_end|>",
        ),
    };
    (format!("{head}{value}{tail}"), head.len())
}

const TEMPLATES: [&str; 3] = ["hermes-think", "qwen-coder-xml", "python-calls"];

/// Panics with where `got` and `want` part (they are megabytes long).
fn same(got: &AssistantMessage, want: &AssistantMessage, what: &str) {
    if got == want {
        return;
    }
    let (a, b) = (got.content_text(), want.content_text());
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let near = |t: &str| {
        t.get(at.saturating_sub(20)..(at + 20).min(t.len()))
            .map(str::to_string)
    };
    panic!(
        "{what}: content parts at byte {at} of {} and {}: {:?} against {:?}; calls {} and {}",
        a.len(),
        b.len(),
        near(a),
        near(b),
        got.tool_calls.len(),
        want.tool_calls.len()
    );
}

/// The batch message and diagnostics; streams in several chunkings give
/// the same message, and their deltas add up to it less the withdrawn
/// calls.
fn parse(p: &OutputParser, output: &str) -> (AssistantMessage, Vec<(DiagnosticKind, usize)>) {
    let batch = p.parse_report(output, false);
    for size in [7, 4099, 1 << 16] {
        let mut stream = p.stream();
        let mut builder = MessageBuilder::default();
        let mut deltas = Vec::new();
        for piece in char_chunks(output, size) {
            stream.push_into(piece, &mut deltas);
            deltas.iter().for_each(|d| builder.apply(d));
        }
        stream.finish_into(&mut deltas);
        deltas.iter().for_each(|d| builder.apply(d));
        same(
            &stream.message(),
            &batch.message,
            &format!("{size}-byte chunks"),
        );
        for &index in stream.withdrawn_calls() {
            builder.withdraw(index);
        }
        same(
            &builder.into_message(),
            &batch.message,
            &format!("{size}-byte deltas"),
        );
    }
    let problems = batch.diagnostics.iter().map(|d| (d.kind, d.offset));
    (batch.message, problems.collect())
}

#[test]
fn a_call_longer_than_the_limit_is_content() {
    for template in TEMPLATES {
        let p = parser(template);
        // `é` straddles the limit: the text is cut on a character boundary.
        let value = "Sunny é. ".repeat(LONGEST_CALL / 10 + 1);
        let (call, _) = call(template, &value);
        let output = format!("Checking.\n{call}\nDone.");
        let (m, problems) = parse(&p, &output);
        let want = AssistantMessage {
            content: Some(output.clone()),
            ..m.clone()
        };
        assert_eq!(m.tool_calls.len(), 0, "{template}");
        same(&m, &want, template);
        assert_eq!(
            problems,
            [(
                DiagnosticKind::OversizedToolCall,
                "Checking.\n".len() + call_at(template)
            )],
            "{template}"
        );
    }
}

#[test]
fn a_call_up_to_the_limit_is_kept() {
    for template in TEMPLATES {
        let p = parser(template);
        let (call, head) = call(template, "");
        // The call's text exactly the limit long.
        let value = "x".repeat(LONGEST_CALL - call.len());
        let (call, _) = self::call(template, &value);
        assert_eq!(call.len(), LONGEST_CALL);
        let (m, problems) = parse(&p, &call);
        assert_eq!(
            (m.content.as_deref(), problems),
            (None, vec![]),
            "{template} at {head}"
        );
        let arguments: Value = serde_json::from_str(&m.tool_calls[0].function.arguments).unwrap();
        assert_eq!(arguments, json!({"city": value}), "{template}");
    }
}
