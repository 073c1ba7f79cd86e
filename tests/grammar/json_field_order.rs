//! JSON call objects in the grammar keep the field order the template
//! renders: an id field written before the name (`tool_call_id` first, as
//! Cohere's command-r7b does) comes first in the grammar too, and the lazy
//! trigger of a bare JSON call opens with that optional field's key or, when
//! the call leaves it out, with the name's. Small templates written for this
//! test.

use chat_autoparser::analysis::IdSlot;
use chat_autoparser::grammar::Recognizer;
use chat_autoparser::{
    Analysis, ChatTemplate, Options, ParserConfig, TemplateConfig, ToolChoice, TriggerKind,
};
use serde_json::{json, Value};

/// The template numbers calls itself in `tool_call_id`, written first.
const NUMBERED_FIRST: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- if m.tool_calls -%}<|action|>[
{%- for c in m.tool_calls -%}{"tool_call_id": "{{ loop.index0 }}", "tool_name": "{{ c.function.name }}", "parameters": {{ c.function.arguments | tojson }}}{{ ", " if not loop.last }}{%- endfor -%}
]<|/action|>{%- endif -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

/// Bare JSON calls carrying the caller's id, written before the name.
const ID_FIRST_BARE: &str = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}{"id": "{{ c.id }}", "name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
{% endfor -%}<|end|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;

fn analysis(source: &str) -> Analysis {
    ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap()
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "ping", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}),
    ]
}

fn recognizer(a: &Analysis, choice: ToolChoice) -> (Recognizer, chat_autoparser::Gbnf) {
    let g = a
        .grammar(
            &Options::default()
                .with_tools(tools())
                .with_tool_choice(choice),
        )
        .unwrap();
    (Recognizer::new(&g.gbnf).unwrap(), g)
}

#[test]
fn an_id_written_first_is_learned_first() {
    let a = analysis(NUMBERED_FIRST);
    assert_eq!(
        a.tools.as_ref().unwrap().id,
        Some(IdSlot::JsonField {
            path: vec!["tool_call_id".into()],
            before_name: true
        })
    );
    let a = analysis(ID_FIRST_BARE);
    assert_eq!(
        a.tools.as_ref().unwrap().id,
        Some(IdSlot::JsonField {
            path: vec!["id".into()],
            before_name: true
        })
    );
}

#[test]
fn the_grammar_writes_the_id_where_the_template_does() {
    let a = analysis(NUMBERED_FIRST);
    let (r, g) = recognizer(&a, ToolChoice::Required);
    let id_first = r#"<|action|>[{"tool_call_id": "0", "tool_name": "ping", "parameters": {"n": 1}}]<|/action|>"#;
    assert!(r.accepts(id_first), "{}", g.gbnf);
    assert!(
        r.accepts(r#"<|action|>[{"tool_name": "ping", "parameters": {"n": 1}}]<|/action|>"#),
        "the id stays optional"
    );
    assert!(!r.accepts(r#"<|action|>[{"tool_name": "ping", "parameters": {"n": 1}, "tool_call_id": "0"}]<|/action|>"#));
    assert!(!r.accepts(r#"<|action|>[{"tool_call_id": "0", "tool_name": "pong", "parameters": {"n": 1}}]<|/action|>"#));
    // The parser reads what the grammar lets through.
    let parser = a
        .parser(&ParserConfig::from(Options::default().with_tools(tools())))
        .unwrap();
    let m = parser.parse(id_first);
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(
        (
            m.tool_calls[0].id.as_deref(),
            m.tool_calls[0].function.name.as_str()
        ),
        (Some("0"), "ping")
    );
}

#[test]
fn a_bare_call_opening_with_its_id_triggers_there() {
    let a = analysis(ID_FIRST_BARE);
    let (r, g) = recognizer(&a, ToolChoice::Auto);
    // Where the first pattern trigger puts the grammar's start in `output`.
    let start = |output: &str| {
        g.triggers
            .iter()
            .filter(|t| t.kind == TriggerKind::Pattern)
            .find_map(|t| {
                regex::Regex::new(&t.value)
                    .unwrap()
                    .captures(output)
                    .and_then(|c| c.get(1))
                    .map(|m| m.start())
            })
            .unwrap_or_else(|| panic!("no trigger fires on {output}: {:?}", g.triggers))
    };
    let output = r#"Sure. {"id": "c1", "name": "ping", "arguments": {"n": 2}}"#;
    let at = start(output);
    assert_eq!(&output[at..at + 7], r#"{"id": "#);
    assert!(r.accepts(&output[at..]), "{}", g.gbnf);
    // The id is optional in the trigger as in the grammar: a call without it opens too.
    let output = r#"Sure. {"name": "ping", "arguments": {"n": 2}}"#;
    let at = start(output);
    assert_eq!(&output[at..], r#"{"name": "ping", "arguments": {"n": 2}}"#);
    assert!(r.accepts(&output[at..]), "{}", g.gbnf);
    assert!(!r.accepts(r#"{"name": "ping", "arguments": {"n": 2}, "id": "c1"}"#));
}
