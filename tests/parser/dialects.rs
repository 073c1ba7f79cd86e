//! Small templates, written here, for tool-call dialects the analysis learns
//! from renders: each test asserts the exact analysis slot and the exact
//! message parsed from a model output in that dialect.

use chat_autoparser::analysis::{ArgumentsSlot, IdSlot, NameSlot, ReasoningMode};
use chat_autoparser::parser::PrefillPart;
use chat_autoparser::prompt::{continuation_prompt, Continue};
use chat_autoparser::Options;
use chat_autoparser::{ChatTemplate, ParserConfig, RenderRequest, TemplateConfig};
use serde_json::{json, Value};

fn template(source: &str) -> ChatTemplate {
    ChatTemplate::new(source, &TemplateConfig::default()).expect("template compiles")
}

/// The reasoning block's start and end markers.
fn reasoning_markers(analysis: &chat_autoparser::Analysis) -> (&str, &str) {
    (&analysis.reasoning.start, &analysis.reasoning.end)
}

fn parse(source: &str, output: &str) -> Value {
    let analysis = template(source).analyze().expect("analysis");
    let parser = analysis.parser(&ParserConfig::default()).expect("parser");
    serde_json::to_value(parser.parse(output)).unwrap()
}

/// Calls numbered by the template after the name (`functions.NAME:0`), with
/// the ids queued in a namespace list, as Kimi templates do.
const COUNTED: &str = r#"{%- set q = namespace(ids=[], n=0) -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}<|calls|>
{%- for c in m.tool_calls -%}
{%- set id = 'functions.' + c.function.name + ':' + (q.n | string) -%}{%- set q.n = q.n + 1 -%}{%- set _ = q.ids.append(id) -%}
<|call|>{{ id }}<|args|>{{ c.function.arguments | tojson }}<|/call|>
{%- endfor -%}<|/calls|>{%- endif -%}<|end|>
{%- elif m.role == 'tool' -%}<|tool|>{{ q.ids.pop(0) }}: {{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_counter_after_the_name_is_the_id_and_every_call_parses() {
    let analysis = template(COUNTED).analyze().unwrap();
    let tools = analysis.tools.expect("tools found");
    assert_eq!(
        tools.id,
        Some(IdSlot::Counted {
            separator: ":".into()
        })
    );
    assert_eq!(
        tools.name,
        NameSlot::Tagged {
            prefix: "functions.".into(),
            suffix: "<|args|>".into()
        }
    );
    let out = "<|calls|><|call|>functions.get_time:0<|args|>{\"city\": \"Paris\"}<|/call|><|call|>functions.ping:1<|args|>{}<|/call|><|/calls|>";
    let message = parse(COUNTED, out);
    assert_eq!(
        message["tool_calls"],
        json!([
            {"id": "functions.get_time:0", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}},
            {"id": "functions.ping:1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
        ])
    );
}

/// A JSON call whose id field the template fills with the loop index.
const SELF_NUMBERED: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|assistant|><|action|>[
{%- for c in m.tool_calls -%}{"tool_call_id": "{{ loop.index0 }}", "tool_name": "{{ c.function.name }}", "parameters": {{ c.function.arguments | tojson }}}{{ ", " if not loop.last }}{%- endfor -%}
]<|/action|><|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn an_id_field_the_template_numbers_keeps_the_models_id() {
    let analysis = template(SELF_NUMBERED).analyze().unwrap();
    assert_eq!(
        analysis.tools.unwrap().id,
        Some(IdSlot::JsonField {
            path: vec!["tool_call_id".into()],
            before_name: true
        })
    );
    let out = r#"<|action|>[{"tool_call_id": "7", "tool_name": "ping", "parameters": {"n": 1}}]<|/action|>"#;
    let message = parse(SELF_NUMBERED, out);
    assert_eq!(
        message["tool_calls"],
        json!([{"id": "7", "type": "function", "function": {"name": "ping", "arguments": "{\"n\": 1}"}}])
    );
}

/// Reasoning only on turns with calls, as Kimi-K2-Thinking renders it.
const REASONING_ON_CALLS: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>
{%- if m.tool_calls -%}<think>{{ m.reasoning_content or '' }}</think>{%- endif -%}
{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_prefill_keeps_its_reasoning_when_the_template_has_reasoning() {
    let tmpl = template(REASONING_ON_CALLS);
    let analysis = tmpl.analyze().unwrap();
    assert_eq!(analysis.reasoning.mode, ReasoningMode::ToolsOnly);
    let messages = vec![
        json!({"role": "user", "content": "Hi"}),
        json!({"role": "assistant", "content": "Hello, ", "reasoning_content": "I'm thinking"}),
    ];
    let request = RenderRequest::default().with_messages(messages);
    let (prompt, prefill) = continuation_prompt(&tmpl, &analysis, &request, true.into()).unwrap();
    assert!(prompt.ends_with("<|assistant|>Hello, "), "{prompt:?}");
    let prefill = prefill.unwrap();
    assert_eq!(
        (prefill.content.as_str(), prefill.reasoning.as_str()),
        ("Hello, ", "I'm thinking")
    );
}

/// An assistant turn's reasoning, closed before its content.
const CLOSED_REASONING: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// Parses `output` as the continuation of a reasoning-only prefill.
fn continue_reasoning_only(continues: Continue, output: &str) -> (String, Value) {
    let tmpl = template(CLOSED_REASONING);
    let analysis = tmpl.analyze().unwrap();
    let messages = vec![
        json!({"role": "user", "content": "Hi"}),
        json!({"role": "assistant", "content": "", "reasoning_content": "I'm thinking"}),
    ];
    let request = RenderRequest::default().with_messages(messages);
    let (prompt, prefill) = continuation_prompt(&tmpl, &analysis, &request, continues).unwrap();
    let config = ParserConfig::from(Options::default().with_prompt(Some(prompt.clone())))
        .with_prefill(prefill);
    (
        prompt,
        serde_json::to_value(analysis.parser(&config).unwrap().parse(output)).unwrap(),
    )
}

#[test]
fn a_prefill_continues_the_part_the_request_names() {
    // Its content: the reasoning block is over, the prompt ends after it.
    let (prompt, message) = continue_reasoning_only(Continue::Content, "Hello, world!");
    assert_eq!(
        prompt,
        "<|user|>Hi<|end|><|assistant|><think>I'm thinking</think>"
    );
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello, world!", "reasoning_content": "I'm thinking"})
    );
    // Its reasoning, named or (no content yet) automatic: the block goes on.
    for continues in [Continue::Reasoning, Continue::Auto, true.into()] {
        let (prompt, message) = continue_reasoning_only(continues, " more</think>Hello, world!");
        assert_eq!(prompt, "<|user|>Hi<|end|><|assistant|><think>I'm thinking");
        assert_eq!(
            message,
            json!({"role": "assistant", "content": "Hello, world!", "reasoning_content": "I'm thinking more"})
        );
    }
    // Not continued: the request renders as given, with no prefill.
    let (prompt, _) = continue_reasoning_only(Continue::No, "");
    assert!(
        prompt.ends_with("<think>I'm thinking</think><|end|>"),
        "{prompt:?}"
    );
    assert_eq!(
        Continue::from_json(&json!("content")),
        Some(Continue::Content)
    );
    assert_eq!(Continue::from_json(&json!(false)), Some(Continue::No));
    assert_eq!(Continue::from_json(&json!("maybe")), None);
}

#[test]
fn an_empty_continued_part_cuts_where_it_would_start() {
    let tmpl = template(CLOSED_REASONING);
    let analysis = tmpl.analyze().unwrap();
    let messages = vec![
        json!({"role": "user", "content": "Hi"}),
        json!({"role": "assistant", "content": ""}),
    ];
    let request = RenderRequest::default().with_messages(messages);
    let (prompt, prefill) =
        continuation_prompt(&tmpl, &analysis, &request, Continue::Reasoning).unwrap();
    assert_eq!(prompt, "<|user|>Hi<|end|><|assistant|><think>");
    assert_eq!(prefill.unwrap().part, PrefillPart::Reasoning);
}

/// A generation prompt that ends with a marker (`<|BOT|>`), as Cohere's do.
const BOT_PROMPT: &str = r#"{%- for m in messages -%}<|TURN|><|{{ m.role | upper }}|>{{ m.content }}<|END|>{%- endfor -%}
{%- if add_generation_prompt -%}<|TURN|><|BOT|>{%- endif -%}"#;

#[test]
fn the_prompts_last_marker_written_again_is_scaffolding() {
    assert_eq!(
        parse(BOT_PROMPT, "<|BOT|>Hello, world!<|END|>"),
        json!({"role": "assistant", "content": "Hello, world!"})
    );
    // Only at the start: later it is the model's text.
    assert_eq!(
        parse(BOT_PROMPT, "Hello <|BOT|>"),
        json!({"role": "assistant", "content": "Hello <|BOT|>"})
    );
}

/// A `thinking` switch that only adds an instruction to the system text,
/// as granite-3.3 does: no render shows a reasoning block.
const INSTRUCTED: &str = r#"<|system|>You are helpful.
{%- if thinking %} Write your thoughts between <think></think> and your answer between <answer></answer>.{% endif %}<|end|>
{%- for m in messages -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_tag_pair_the_thinking_instruction_names_is_the_reasoning_block() {
    let tmpl = template(INSTRUCTED);
    let analysis = tmpl.analyze().unwrap();
    assert_eq!(reasoning_markers(&analysis), ("<think>", "</think>"));
    assert_eq!(analysis.reasoning.mode, ReasoningMode::Tag);
    let message = parse(INSTRUCTED, "<think>I'm\nthinking</think>Hello");
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "I'm\nthinking"})
    );
    // A prefill's reasoning is kept, and continued inside the block.
    let messages = vec![
        json!({"role": "user", "content": "Hi"}),
        json!({"role": "assistant", "content": "", "reasoning_content": "I'm"}),
    ];
    let request = RenderRequest::default().with_messages(messages);
    let (prompt, prefill) =
        continuation_prompt(&tmpl, &analysis, &request, Continue::Reasoning).unwrap();
    let config =
        ParserConfig::from(Options::default().with_prompt(Some(prompt))).with_prefill(prefill);
    let message = serde_json::to_value(
        analysis
            .parser(&config)
            .unwrap()
            .parse(" thinking</think>Hello"),
    )
    .unwrap();
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "I'm thinking"})
    );
}

/// gemma-4's argument notation: `KEY:VALUE` pairs, strings between quote
/// markers, other values bare, objects and lists nested in the same notation.
const OWN_NOTATION: &str = r#"{%- macro arg(v) -%}
{%- if v is string -%}<|q|>{{ v }}<|q|>
{%- elif v is mapping -%}{ {%- for k, x in v.items() -%}{{ k }}:{{ arg(x) }}{%- if not loop.last -%},{%- endif -%}{%- endfor -%} }
{%- elif v is sequence -%}[ {%- for x in v -%}{{ arg(x) }}{%- if not loop.last -%},{%- endif -%}{%- endfor -%} ]
{%- else -%}{{ v | tojson }}{%- endif -%}
{%- endmacro -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|>{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}<|call|>{{ c.function.name }}{{ arg(c.function.arguments) }}<|/call|>{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

#[test]
fn nested_values_in_the_templates_notation_become_json() {
    let tools = vec![
        json!({"type": "function", "function": {"name": "set", "parameters": {"type": "object", "properties": {
        "config": {"type": "object"}, "tags": {"type": "array"}, "note": {"type": "string"}, "n": {"type": "integer"}}}}}),
    ];
    let analysis = template(OWN_NOTATION).analyze().unwrap();
    let parser = analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools)))
        .unwrap();
    let output = "<|call|>set{config:{theme:<|q|>dark, blue<|q|>,sizes:[1,2]},tags:[<|q|>a]b<|q|>,<|q|>c<|q|>],note:<|q|>{x}<|q|>,n:3}<|/call|>";
    let call = &parser.parse(output).tool_calls[0];
    assert_eq!(call.function.name, "set");
    assert_eq!(
        call.function.arguments,
        r#"{"config": {"theme":"dark, blue","sizes":[1,2]}, "tags": ["a]b","c"], "note": "{x}", "n": 3}"#
    );
    // A value that does not fit its schema stays the text the model wrote.
    let output = "<|call|>set{n:{a:1}}<|/call|>";
    assert_eq!(
        parser.parse(output).tool_calls[0].function.arguments,
        r#"{"n": "{a:1}"}"#
    );
}

/// A bare value the model closes with the string quote marker (`n:3<|q|>`)
/// is the value: the quote closes nothing, and the grammars admit it there
/// (before `,` or `}`). Elsewhere the marker stays text of the value.
#[test]
fn a_bare_value_closed_by_the_quote_marker_is_the_value() {
    let tools = vec![
        json!({"type": "function", "function": {"name": "set", "parameters": {"type": "object", "properties": {
        "level": {"type": "number"}, "note": {"type": "string"}, "config": {"type": "object"}}}}}),
    ];
    let analysis = template(OWN_NOTATION).analyze().unwrap();
    let parser = analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools)))
        .unwrap();
    for (output, arguments) in [
        (
            "<|call|>set{level:861.5<|q|>}<|/call|>",
            r#"{"level": 861.5}"#,
        ),
        (
            "<|call|>set{level:-2<|q|>,note:<|q|>hi<|q|>}<|/call|>",
            r#"{"level": -2, "note": "hi"}"#,
        ),
        (
            "<|call|>set{level:1<|q|>2}<|/call|>",
            r#"{"level": "1<|q|>2"}"#,
        ),
    ] {
        let report = parser.parse_report(output, false);
        assert_eq!(
            report.message.tool_calls[0].function.arguments, arguments,
            "{output:?}"
        );
        assert_eq!(report.diagnostics, [], "{output:?}");
    }
}

/// The same notation, from a template that prints every value between one
/// quote marker (`n:<|q|>3<|q|>`), as FunctionGemma-style templates do; one
/// call per wrapper, its name after `call:`.
const QUOTES_EVERYTHING: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|>{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}<|call|>call:{{ c.function.name }}{
{%- for k, v in c.function.arguments.items() -%}{{ k }}:<|q|>{{ v }}<|q|>{%- if not loop.last -%},{%- endif -%}{%- endfor -%}
}<|/call|>{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

#[test]
fn a_template_that_quotes_every_value_still_reads_bare_ones() {
    let analysis = template(QUOTES_EVERYTHING).analyze().unwrap();
    let ArgumentsSlot::Tagged(t) = &analysis.tools.as_ref().unwrap().arguments else {
        panic!("tagged arguments expected");
    };
    assert_eq!(
        (t.value_prefix.as_str(), t.value_suffix.as_str()),
        ("<|q|>", "<|q|>")
    );
    assert_eq!(t.typed_value_prefix.as_deref(), Some(""));
    let tools = vec![
        json!({"type": "function", "function": {"name": "set", "parameters": {"type": "object", "properties": {
        "config": {"type": "object"}, "tags": {"type": "array"}, "n": {"type": "integer"}, "on": {"type": "boolean"}}}}}),
    ];
    let parser = analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools)))
        .unwrap();
    let output = "<|call|>call:set{n:3,on:true,tags:[<|q|>a<|q|>,<|q|>b<|q|>],config:{name:<|q|>x<|q|>,size:42}}<|/call|>";
    let m = parser.parse(output);
    assert_eq!(m.content, None);
    assert_eq!(
        m.tool_calls[0].function.arguments,
        r#"{"n": 3, "on": true, "tags": ["a","b"], "config": {"name":"x","size":42}}"#
    );
    // What the template itself renders still reads back, typed by the schema.
    let output = "<|call|>call:set{n:<|q|>3<|q|>}<|/call|>";
    assert_eq!(
        parser.parse(output).tool_calls[0].function.arguments,
        r#"{"n": 3}"#
    );
}

/// Messages addressed by a header whose label follows a shared ` to=`
/// (` to=self<|m|>` reasoning, ` to=user<|m|>` answer), as muse-glimmer writes.
const ADDRESSED: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|start|>assistant{% if m.reasoning_content %} to=self<|m|>{{ m.reasoning_content }}<|eom|><|start|>assistant{% endif %} to=user<|m|>{{ m.content }}<|eot|>
{%- else -%}<|start|>{{ m.role }}<|m|>{{ m.content }}<|eot|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"#;

#[test]
fn a_header_keeps_the_label_text_it_shares_with_the_next_header() {
    let analysis = template(ADDRESSED).analyze().unwrap();
    let r = &analysis.reasoning;
    assert_eq!(
        (r.start.as_str(), r.end.as_str()),
        ("to=self<|m|>", "<|eom|><|start|>assistant")
    );
    let output = " to=self<|m|>I think<|eom|><|start|>assistant to=user<|m|>Hello<|eot|>";
    assert_eq!(
        parse(ADDRESSED, output),
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "I think"})
    );
}

/// Reasoning as a content part (`{"type": "thinking", ...}`), as Mistral's
/// reasoning templates read it.
const THINKING_PARTS: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}[ASSISTANT]
{%- if m.content is string -%}{{ m.content }}
{%- else -%}{%- for block in m.content -%}
{%- if block['type'] == 'thinking' -%}[THINK]{{ block['thinking'] }}[/THINK]
{%- elif block['type'] == 'text' -%}{{ block['text'] }}{%- endif -%}
{%- endfor -%}{%- endif -%}</s>
{%- else -%}[{{ m.role | upper }}]{{ m.content }}{%- endif -%}
{%- endfor -%}"#;

#[test]
fn reasoning_in_a_thinking_content_part_is_found_and_parsed() {
    let tmpl = template(THINKING_PARTS);
    let analysis = tmpl.analyze().unwrap();
    assert_eq!(
        (
            analysis.reasoning.start.as_str(),
            analysis.reasoning.end.as_str()
        ),
        ("[THINK]", "[/THINK]")
    );
    assert_eq!(analysis.reasoning.field, "content:thinking");
    let message = parse(THINKING_PARTS, "[THINK]I'm\nthinking[/THINK]Hello");
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "I'm\nthinking"})
    );
    // A prefill's reasoning goes to the template as a thinking part.
    let messages = vec![
        json!({"role": "user", "content": "Hi"}),
        json!({"role": "assistant", "content": "", "reasoning_content": "I'm"}),
    ];
    let request = RenderRequest::default().with_messages(messages);
    let (prompt, _) = continuation_prompt(&tmpl, &analysis, &request, true.into()).unwrap();
    assert_eq!(prompt, "[USER]Hi[ASSISTANT][THINK]I'm");
}

#[test]
fn with_a_response_schema_code_fences_are_not_content() {
    let analysis = template(THINKING_PARTS).analyze().unwrap();
    let config = ParserConfig::from(
        Options::default().with_response_schema(Some(json!({"type": "object"}))),
    );
    let parser = analysis.parser(&config).unwrap();
    let fenced = "[THINK]JSON it is[/THINK]```json\n{\"amount\": 1}\n```";
    let message = serde_json::to_value(parser.parse(fenced)).unwrap();
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "{\"amount\": 1}", "reasoning_content": "JSON it is"})
    );
    // Without a schema, the fence is the model's content.
    let plain = parse(THINKING_PARTS, fenced);
    assert_eq!(plain["content"], "```json\n{\"amount\": 1}\n```");
}

#[test]
fn the_stop_marker_is_dropped_only_at_the_very_end() {
    let end = |out: &str| parse(COUNTED, out)["content"].clone();
    assert_eq!(end("Hello<|end|>\n"), json!("Hello"));
    assert_eq!(end("A<|end|>B"), json!("A<|end|>B"));
}

/// Calls end the turn without the newline text turns have before the stop
/// marker, so the diff puts the stop marker in the section's end.
const CALLS_END_TURN: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|assistant|><TOOLCALL>[
{%- for c in m.tool_calls -%}{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}{{ ", " if not loop.last }}{%- endfor -%}
]</TOOLCALL><|end|>
{% else -%}<|{{ m.role }}|>{{ m.content }}
<|end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_section_end_stops_before_the_stop_marker() {
    let tools = template(CALLS_END_TURN).analyze().unwrap().tools.unwrap();
    assert_eq!(tools.section_end, "]</TOOLCALL>");
    let message = parse(
        CALLS_END_TURN,
        "<TOOLCALL>[{\"name\": \"ping\", \"arguments\": {}}]</TOOLCALL>\n",
    );
    assert_eq!(
        message["tool_calls"][0]["function"],
        json!({"name": "ping", "arguments": "{}"})
    );
    assert_eq!(message["content"], Value::Null);
}

/// A tool section with its own opening marker around calls with theirs.
const SECTIONED: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}<|calls_begin|>
{%- for c in m.tool_calls -%}<|call_begin|>{{ c.function.name }}<|args|>{{ c.function.arguments | tojson }}<|call_end|>{%- endfor -%}
<|calls_end|>{%- endif -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_call_may_come_without_its_sections_opening_marker() {
    let message = parse(
        SECTIONED,
        "Sure.<|call_begin|>ping<|args|>{\"n\": 1}<|call_end|>",
    );
    assert_eq!(message["content"], json!("Sure."));
    assert_eq!(
        message["tool_calls"][0]["function"],
        json!({"name": "ping", "arguments": "{\"n\": 1}"})
    );
}

#[test]
fn a_stray_reasoning_end_marker_at_the_very_end_is_dropped() {
    let message = parse(REASONING_ON_CALLS, "<think>hm</think>Hello</think>\n");
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "hm"})
    );
    // Anywhere else it is text.
    assert_eq!(
        parse(REASONING_ON_CALLS, "Hello</think>there")["content"],
        json!("Hello</think>there")
    );
}

/// Calls as `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`, an id the model makes up.
const ID_AFTER_NAME: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}[TOOL_CALLS]{{ c.function.name }}[CALL_ID]{{ c.id }}[ARGS]{{ c.function.arguments | tojson }}{%- endfor -%}</s>
{%- else -%}[INST]{{ m.content }}[/INST]{%- endif -%}
{%- endfor -%}"#;

#[test]
fn a_call_without_its_made_up_id_is_still_a_call() {
    let analysis = template(ID_AFTER_NAME).analyze().unwrap();
    assert_eq!(
        analysis.tools.as_ref().unwrap().id,
        Some(IdSlot::Tagged {
            prefix: "[CALL_ID]".into(),
            suffix: "[ARGS]".into(),
            before_name: false
        })
    );
    let call = |id: Value| json!([{"id": id, "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}}]);
    let with_id = parse(
        ID_AFTER_NAME,
        "[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
    );
    assert_eq!(with_id["tool_calls"], call(json!("a1b2c3d4e")));
    let without = parse(
        ID_AFTER_NAME,
        "[TOOL_CALLS]get_time[ARGS]{\"city\": \"Paris\"}",
    );
    assert_eq!(without["tool_calls"], call(Value::Null));
    assert_eq!(without["content"], Value::Null);
}

/// Argument pairs glued together (`<k>K</k><v>V</v>`), as GLM-4.7 renders them.
const GLUED_PAIRS: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}<call>{{ c.function.name }}
{%- for k, v in c.function.arguments.items() -%}<k>{{ k }}</k><v>{{ v }}</v>{%- endfor -%}</call>{%- endfor -%}
{%- else -%}<|{{ m.role }}|>{{ m.content }}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn whitespace_between_argument_markers_is_scaffolding() {
    let expected = json!([{"id": null, "type": "function", "function": {"name": "exec",
        "arguments": "{\"expr\": \" a < b \", \"n\": 2}"}}]);
    for output in [
        "<call>exec<k>expr</k><v> a < b </v><k>n</k><v>2</v></call>",
        "<call>exec\n<k>expr</k>\n<v> a < b </v>\n<k>n</k> <v>2</v>\n</call>",
    ] {
        assert_eq!(
            parse(GLUED_PAIRS, output)["tool_calls"],
            expected,
            "{output}"
        );
    }
}

#[test]
fn several_calls_may_share_one_wrapper() {
    let call = |name: &str, arguments: &str| json!({"id": null, "type": "function", "function": {"name": name, "arguments": arguments}});
    // The arguments' close alone ends a call the next name prefix follows.
    let m = parse(
        QUOTES_EVERYTHING,
        "<|call|>call:find{p:<|q|>a<|q|>}call:find{p:<|q|>b<|q|>}<|/call|>",
    );
    assert_eq!(
        m["tool_calls"],
        json!([
            call("find", "{\"p\": \"a\"}"),
            call("find", "{\"p\": \"b\"}")
        ])
    );
    assert_eq!(m["content"], Value::Null);
    // A call without arguments, then text, then another call.
    let m = parse(
        QUOTES_EVERYTHING,
        "<|call|>call:first{}<|/call|>Some text<|call|>call:second{}<|/call|>",
    );
    assert_eq!(
        m["tool_calls"],
        json!([call("first", "{}"), call("second", "{}")])
    );
    assert_eq!(m["content"], json!("Some text"));
    // An unfinished call after a closed wrapper stays text, whole (the
    // whitespace after the wrapper's token is scaffolding).
    let m = parse(QUOTES_EVERYTHING, "<|call|>call:first{}<|/call|> call:x{");
    assert_eq!(m["tool_calls"], json!([call("first", "{}")]));
    assert_eq!(m["content"], json!("call:x{"));
    // Streamed in 1-, 4- and 7-byte chunks, each gives the same message.
    let parser = template(QUOTES_EVERYTHING)
        .analyze()
        .unwrap()
        .parser(&ParserConfig::default())
        .unwrap();
    for output in [
        "<|call|>call:find{p:<|q|>a<|q|>}call:find{p:<|q|>b<|q|>}<|/call|>",
        "<|call|>call:first{}<|/call|>Some text<|call|>call:second{}<|/call|>",
    ] {
        crate::common::streaming::parse_and_stream(&parser, output);
    }
}

/// Reasoning opened by a token and a label (`<|chan>thought`), as gemma-4 writes it.
const LABELLED_REASONING: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|>
{%- if m.reasoning_content -%}<|chan>thought
{{ m.reasoning_content }}<chan|>{%- endif -%}
{{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- endif -%}"#;

#[test]
fn a_labelled_reasoning_opener_may_come_without_its_label() {
    let analysis = template(LABELLED_REASONING).analyze().unwrap();
    assert_eq!(analysis.reasoning.start, "<|chan>thought");
    let parser = analysis.parser(&ParserConfig::default()).unwrap();
    for (output, reasoning, content) in [
        ("<|chan>thought\nHmm.<chan|>Hi.", "Hmm.", "Hi."),
        ("<|chan>Hmm.<chan|>Hi.", "Hmm.", "Hi."),
        (
            "<|chan>first<chan|><|chan>second<chan|>Hi.",
            "firstsecond",
            "Hi.",
        ),
    ] {
        let m = crate::common::streaming::parse_and_stream(&parser, output);
        assert_eq!(
            (m.reasoning_content.as_str(), m.content_text()),
            (reasoning, content),
            "{output}"
        );
    }
}

/// Writes the call's id where its name would go, the name only in the tool
/// list (as Kimi's published templates do): its models name the function
/// in the id, `functions.NAME:N`.
const ID_FOR_NAME: &str = r#"{%- if tools -%}<|system|>{{ tools | tojson }}<|end|>{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}<|calls|>
{%- for c in m.tool_calls -%}<|call|>{{ c.id }}<|args|>{{ c.function.arguments | tojson }}<|/call|>{%- endfor -%}<|/calls|>{%- endif -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_template_that_writes_the_id_for_the_name_reads_the_name_in_the_id() {
    let tools = template(ID_FOR_NAME)
        .analyze()
        .unwrap()
        .tools
        .expect("tools found");
    assert_eq!(
        tools.name,
        NameSlot::Tagged {
            prefix: "functions.".into(),
            suffix: "<|args|>".into()
        }
    );
    assert_eq!(
        tools.id,
        Some(IdSlot::Counted {
            separator: ":".into()
        })
    );
    let out = "<|calls|><|call|>functions.get_time:0<|args|>{\"city\": \"Paris\"}<|/call|><|call|>functions.ping:1<|args|>{}<|/call|><|/calls|>";
    assert_eq!(
        parse(ID_FOR_NAME, out)["tool_calls"],
        json!([
            {"id": "functions.get_time:0", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\": \"Paris\"}"}},
            {"id": "functions.ping:1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
        ])
    );
}

/// Writes a reasoning block in every assistant turn, empty without
/// reasoning, and closes an empty one in the prompt when thinking is off.
const EMPTY_PAIR: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|><think>{{ m.reasoning_content or '' }}</think>{{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- if enable_thinking is defined and not enable_thinking -%}<think></think>{%- endif -%}{%- endif -%}"#;

#[test]
fn an_empty_pair_in_every_turn_still_names_its_opener() {
    let analysis = template(EMPTY_PAIR).analyze().unwrap();
    assert_eq!(reasoning_markers(&analysis), ("<think>", "</think>"));
    let m = parse(EMPTY_PAIR, "<think>Hmm.</think>Hi.");
    assert_eq!(
        (&m["reasoning_content"], &m["content"]),
        (&json!("Hmm."), &json!("Hi."))
    );
}

/// A prompt that opens the block with `<|think:start|>`, closed by
/// `<|think:end|>`: the end R1 sees names the opener.
const OPENED_BY_NAME: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|bot|><|think:start|>{{ m.reasoning_content or '' }}<|think:end|>{{ m.content }}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|><|think:start|>{%- endif -%}"#;

#[test]
fn a_start_and_end_pair_opened_by_the_prompt_is_found() {
    let analysis = template(OPENED_BY_NAME).analyze().unwrap();
    assert_eq!(
        reasoning_markers(&analysis),
        ("<|think:start|>", "<|think:end|>")
    );
    assert_eq!(analysis.reasoning.mode, ReasoningMode::ForcedOpen);
}

/// A thinking switch named `thinking`, not `enable_thinking`.
const THINKING_SWITCH: &str = r#"{%- for m in messages -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endfor -%}
{%- if add_generation_prompt -%}<|bot|>{%- if thinking -%}<think>{%- else -%}<think></think>{%- endif -%}{%- endif -%}"#;

#[test]
fn a_switch_named_thinking_gets_enable_thinking() {
    use chat_autoparser::analysis::PromptEffect;
    let t = template(THINKING_SWITCH);
    let request = |on: bool| {
        RenderRequest::default()
            .with_messages(vec![json!({"role": "user", "content": "Hi"})])
            .with_add_generation_prompt(true)
            .with_enable_thinking(on)
    };
    // What a server renders passes the switch on under the template's name...
    assert!(t
        .render_chat(&request(true))
        .unwrap()
        .ends_with("<|bot|><think>"));
    assert!(t
        .render_chat(&request(false))
        .unwrap()
        .ends_with("<think></think>"));
    // ...while the template as written gets what transformers passes.
    assert!(t
        .render(&request(true))
        .unwrap()
        .ends_with("<think></think>"));
    let analysis = t.analyze().unwrap();
    assert_eq!(
        (
            analysis.reasoning.thinking_on,
            analysis.reasoning.thinking_off
        ),
        (Some(PromptEffect::Opens), Some(PromptEffect::Closes))
    );
}

/// Reads every message's text as its first content part.
const PARTS_ONLY: &str = r#"{%- for m in messages -%}<|{{ m.role }}|>{{ m['content'][0]['text'] }}<|end|>{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

#[test]
fn a_template_that_takes_only_content_parts_is_analysed() {
    let analysis = template(PARTS_ONLY)
        .analyze()
        .expect("analysed with content parts");
    assert_eq!(analysis.turn.generation_prompt.default, "<|assistant|>");
    assert_eq!(analysis.turn.end_of_turn, "<|end|>");
    assert_eq!(
        parse(PARTS_ONLY, "It is sunny.")["content"],
        json!("It is sunny.")
    );
}

/// Reasoning in a `thought` field, as MiniCPM3's template reads it
/// (`message.thought` between `<|thought_start|>` and `<|thought_end|>`).
const THOUGHT_FIELD: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.role == 'assistant' and m.thought -%}<|thought_start|>
{{ m.thought }}
<|thought_end|>
{% endif -%}{{ m.content }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"#;

#[test]
fn reasoning_in_a_thought_field_is_found_and_parsed() {
    let analysis = template(THOUGHT_FIELD).analyze().unwrap();
    assert_eq!(analysis.reasoning.field, "thought");
    assert_eq!(
        (
            analysis.reasoning.start.as_str(),
            analysis.reasoning.end.as_str()
        ),
        ("<|thought_start|>", "<|thought_end|>")
    );
    let message = parse(
        THOUGHT_FIELD,
        "<|thought_start|>\nSunny, I think.\n<|thought_end|>\nIt is sunny.",
    );
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "It is sunny.", "reasoning_content": "Sunny, I think."})
    );
}

/// The switch turned off appends an empty block after the whole
/// conversation, not from the generation prompt (Hunyuan-A13B's template
/// has no assistant header at all).
const APPENDED_EMPTY_BLOCK: &str = r#"{%- for m in messages -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}<|sep|>{%- else -%}{{ m.content }}<|eos|>{%- endif -%}
{%- endfor -%}
{%- if enable_thinking is defined and enable_thinking is false -%}<think>

</think>
{% endif -%}"#;

#[test]
fn an_empty_block_the_switch_appends_names_the_reasoning_markers() {
    let analysis = template(APPENDED_EMPTY_BLOCK).analyze().unwrap();
    assert_eq!(
        (
            analysis.reasoning.start.as_str(),
            analysis.reasoning.end.as_str()
        ),
        ("<think>", "</think>")
    );
    assert!(!analysis.prose.reasoning, "rendered, not instructed");
    let message = parse(APPENDED_EMPTY_BLOCK, "<think>\nHm.\n</think>\nHello");
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Hello", "reasoning_content": "Hm."})
    );
}

/// Renders a final assistant message as a prefill to continue (its content
/// only, after the generation prompt, as Nemotron's JSON template does), so
/// its calls show only in history, before another user turn.
const CALLS_ONLY_IN_HISTORY: &str = r#"
{%- set last = messages[-1] if messages[-1].role == 'assistant' else none -%}
{%- for m in (messages[:-1] if last else messages) -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}
{% else -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}<TOOLCALL>[{%- for c in m.tool_calls -%}
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}{{ ', ' if not loop.last }}
{%- endfor -%}]</TOOLCALL>{%- endif %}
<|end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt or last -%}<|assistant|>{{ last.content if last else '' }}{%- endif -%}"#;

#[test]
fn calls_shown_only_in_history_are_found_there() {
    let analysis = template(CALLS_ONLY_IN_HISTORY).analyze().unwrap();
    let tools = analysis.tools.as_ref().expect("calls found in history");
    assert_eq!(
        (tools.section_start.as_str(), tools.section_end.as_str()),
        ("<TOOLCALL>[", "]</TOOLCALL>")
    );
    let weather = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let config =
        ParserConfig::from(Options::default().with_tools(weather.as_array().unwrap().clone()));
    let parser = analysis.parser(&config).unwrap();
    let m = parser
        .parse(r#"<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>"#);
    assert_eq!(m.content, None);
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].function.arguments, r#"{"city": "Paris"}"#);
}

/// A JSON call the template glues to its end marker (`}</tool_call>`).
const GLUED_END: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|assistant|>
{%- for c in m.tool_calls -%}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// Whitespace between a JSON call object and an end marker the template
/// glues to it (`}\n</tool_call>`) is JSON's, as models write it: the
/// call is read whole, with no diagnostic, and the text after it is
/// content.
#[test]
fn whitespace_before_a_glued_call_end_is_the_json_objects() {
    let analysis = template(GLUED_END).analyze().unwrap();
    let tools = analysis.tools.as_ref().expect("tools found");
    assert_eq!(
        (tools.call_start.as_str(), tools.call_end.as_str()),
        ("<tool_call>", "</tool_call>")
    );
    let parser = analysis.parser(&ParserConfig::default()).expect("parser");
    for (out, content) in [
        (
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
            None,
        ),
        (
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}} \n </tool_call>\nDone",
            Some("Done"),
        ),
    ] {
        reads_one_call_of_f(&parser, out, content);
    }
}

/// `parser` reads `out` as the call `f({"a": 1})` and `content`, with no
/// diagnostic.
fn reads_one_call_of_f(parser: &chat_autoparser::OutputParser, out: &str, content: Option<&str>) {
    let parsed = parser.parse_report(out, false);
    assert_eq!(parsed.diagnostics, [], "{out:?}");
    let message = serde_json::to_value(&parsed.message).unwrap();
    assert_eq!(
        message["tool_calls"],
        json!([{"id": null, "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]),
        "{out:?}"
    );
    assert_eq!(message["content"], json!(content), "{out:?}");
}

/// A JSON call the template writes arguments first, as Hermes-2-Pro's
/// instructions show it.
const ARGUMENTS_FIRST: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|assistant|>
{%- for c in m.tool_calls -%}<tool_call>
{ "arguments": {{ c.function.arguments | tojson }}, "name": "{{ c.function.name }}"}
</tool_call>{%- endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// The analysis keeps the order of the call object's members; the grammar
/// writes them in that order, the parser reads either.
#[test]
fn a_call_object_written_arguments_first_keeps_its_order() {
    let analysis = template(ARGUMENTS_FIRST).analyze().unwrap();
    let tools = analysis.tools.as_ref().expect("tools found");
    assert_eq!(
        tools.arguments,
        ArgumentsSlot::Json {
            path: vec!["arguments".into()],
            as_string: false,
            before_name: true,
        }
    );
    let tool = json!({"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}}}});
    let options = Options::default().with_tools(vec![tool]);
    let protocol = chat_autoparser::Protocol::new(&analysis, &options);
    let lark = chat_autoparser::grammar::lark(&protocol).unwrap().lark;
    assert!(
        lark.contains(r#""{" WS? "\"arguments\"" WS? ":" WS? args_f WS? "," WS? "\"name\"""#),
        "{lark}"
    );
    let parser = analysis.parser(&ParserConfig::from(options)).unwrap();
    for out in [
        "<tool_call>\n{ \"arguments\": {\"a\": 1}, \"name\": \"f\"}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
    ] {
        reads_one_call_of_f(&parser, out, None);
    }
}
