//! Exact GBNF for small cases, one per tool-format family, on the shipped
//! templates (`templates/*.jinja`). The expected texts were written from the
//! formats in templates/README.md: markers literal, the template's newlines
//! as `ws`, JSON arguments as schema rules, tagged string values as raw text
//! up to the closing marker, Python keywords as `k=v`.

use chat_autoparser::grammar::{syntax, Recognizer};
use chat_autoparser::{
    Analysis, ChatTemplate, Gbnf, Options, ParserConfig, TemplateConfig, TemplateSource,
    ToolChoice, TriggerKind,
};
use serde_json::json;

/// The analysis of the shipped template `name` (in `templates/`).
fn shipped(name: &str) -> Analysis {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates")
        .join(name);
    crate::common::turns::analyzed(&path).unwrap().1
}

fn grammar(template: &str, choice: ToolChoice, parallel: bool) -> Gbnf {
    let analysis = shipped(template);
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}}),
    ];
    let g = analysis
        .grammar(
            &Options::default()
                .with_tools(tools)
                .with_tool_choice(choice)
                .with_parallel_tool_calls(parallel),
        )
        .unwrap();
    if !g.gbnf.is_empty() {
        syntax::parse(&g.gbnf).expect("pest parses the grammar");
    }
    g
}

const JSON_PRIMITIVES: &str = r#"ws ::= [ \t\r\n]{0,24}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= "-"? integral-part
integral-part ::= [0] | [1-9] [0-9]{0,15}
get-weather-args ::= "{" ws "\"city\"" ws ":" ws string ( ws "," ws "\"days\"" ws ":" ws integer )? ws "}"
"#;

#[test]
fn tag_json_one_call() {
    let g = grammar("tag-json-args.jinja", ToolChoice::Auto, false);
    let expected = format!(
        "root ::= tool-call ws\n{JSON_PRIMITIVES}\
         call-get-weather ::= \"<function=get_weather>\" get-weather-args \"</function>\"\n\
         tool-call ::= call-get-weather\n"
    );
    assert_eq!(g.gbnf, expected);
    assert!(g.lazy);
    assert_eq!(
        (g.triggers[0].kind, g.triggers[0].value.as_str()),
        (TriggerKind::Word, "<function=")
    );
}

#[test]
fn json_native_parallel_with_reasoning_triggers() {
    let g = grammar("hermes-think.jinja", ToolChoice::Auto, true);
    let expected = format!(
        "root ::= tool-call ( ws tool-call )* ws\n{JSON_PRIMITIVES}\
         call-get-weather ::= \"<tool_call>\" ws \"{{\" ws \"\\\"name\\\"\" ws \":\" ws \"\\\"get_weather\\\"\" ws \",\" ws \"\\\"arguments\\\"\" ws \":\" ws get-weather-args ws \"}}\" ws \"</tool_call>\"\n\
         tool-call ::= call-get-weather\n"
    );
    assert_eq!(g.gbnf, expected);
    // Reasoning stays free: the trigger only fires after `</think>` or when no block opens the output.
    let values: Vec<&str> = g.triggers.iter().map(|t| t.value.as_str()).collect();
    // Anchored at the output's start, so a full pattern (llama.cpp matches it on the whole output so far).
    assert!(
        g.triggers
            .iter()
            .all(|t| t.kind == TriggerKind::PatternFull),
        "{:?}",
        g.triggers
    );
    assert_eq!(
        values[0],
        r"^\s*<think>[\s\S]*?</think>[\s\S]*?(<tool_call>)[\s\S]*$"
    );
    let re = regex::Regex::new(values[1]).unwrap();
    assert!(re.captures("<think>I could use <tool_call> here").is_none());
    assert_eq!(
        re.captures("Sure.\n<tool_call>\n{")
            .unwrap()
            .get(1)
            .unwrap()
            .start(),
        6
    );
}

#[test]
fn tag_tagged_raw_string_values() {
    let g = grammar("qwen-coder-xml.jinja", ToolChoice::Auto, false);
    let raw: String = [
        "raw-parameter-text ::= [^<] raw-parameter-text | \"<\" raw-parameter-text-1 | \"\"",
        "raw-parameter-text-1 ::= [^</] raw-parameter-text | \"<\" raw-parameter-text-1 | \"/\" raw-parameter-text-2 | \"\"",
    ]
    .join("\n");
    assert!(g.gbnf.contains(&raw), "{}", g.gbnf);
    for line in [
        "root ::= tool-call ws",
        "get-weather-city-arg ::= \"<parameter=city>\" ws raw-parameter-text \"</parameter>\" ws",
        "get-weather-days-arg ::= \"<parameter=days>\" ws integer ws \"</parameter>\" ws",
        "get-weather-args ::= get-weather-city-arg ( ws get-weather-days-arg )?",
        "call-get-weather ::= \"<tool_call>\" ws \"<function=get_weather>\" ws get-weather-args \"</function>\" ws \"</tool_call>\"",
    ] {
        assert!(g.gbnf.lines().any(|l| l == line), "missing {line:?} in\n{}", g.gbnf);
    }
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(r.accepts("<tool_call>\n<function=get_weather>\n<parameter=city>\na </b> & \"q\"\n</parameter>\n</function>\n</tool_call>"));
    assert!(!r.accepts("<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
}

/// A value of an enum of strings in a format that writes strings raw is one
/// of its words, raw: quoted (`"celsius"`) the parser would read the quotes
/// as part of a string outside the enum.
#[test]
fn tagged_enum_values_are_their_raw_words_only() {
    let analysis = shipped("qwen-coder-xml.jinja");
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}}}}),
    ];
    let options = Options::default()
        .with_tools(tools)
        .with_tool_choice(ToolChoice::Required);
    let g = analysis.grammar(&options).unwrap();
    let r = Recognizer::new(&g.gbnf).unwrap();
    let call = |v: &str| {
        format!("<tool_call>\n<function=get_weather>\n<parameter=unit>\n{v}\n</parameter>\n</function>\n</tool_call>")
    };
    let parser = analysis.parser(&ParserConfig::from(options)).unwrap();
    let read = parser.parse(&call("celsius"));
    assert_eq!(
        read.tool_calls[0].function.arguments,
        r#"{"unit": "celsius"}"#
    );
    assert_eq!(
        ["celsius", "\"celsius\"", "'celsius'", "kelvin"].map(|v| r.accepts(&call(v))),
        [true, false, false, false]
    );
}

/// A content wrapper that opens with the call's trigger word
/// (`<|channel|>final<|message|>` beside `<|channel|>commentary to=...`):
/// the lazy grammar starts at the call, never at the content, with thinking
/// on or off.
#[test]
fn a_content_wrapper_sharing_the_trigger_word_does_not_fire_it() {
    let content = "<|channel|>final<|message|>Hi.";
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"P\"}<|call|>";
    let reasoning = "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant";
    for thinking in [true, false] {
        let analysis = shipped("channel-harmony.jinja");
        let tools = vec![
            json!({"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}),
        ];
        let g = analysis
            .grammar(
                &Options::default()
                    .with_tools(tools)
                    .with_enable_thinking(thinking),
            )
            .unwrap();
        let at = |text: &str| crate::common::first_trigger(&g, text);
        assert_eq!(at(content), None, "thinking {thinking}: {:?}", g.triggers);
        let both = format!("{content}{call}");
        assert_eq!(at(&both), Some(content.len()), "thinking {thinking}");
        if thinking {
            let all = format!("{reasoning}{content}{call}");
            assert_eq!(at(&all), Some(reasoning.len() + content.len()));
        }
    }
}

#[test]
fn python_call_keywords() {
    let g = grammar("python-calls.jinja", ToolChoice::Auto, false);
    // `k=v` as the template writes it: no whitespace around `=`.
    let expected = "root ::= \"<|tool_call_start|>[\" tool-call \"]<|tool_call_end|>\" ws\n\
         py-string ::= \"\\\"\" ( [^\"\\\\] | \"\\\\\" . )* \"\\\"\" | \"'\" ( [^'\\\\] | \"\\\\\" . )* \"'\"\n\
         integer ::= \"-\"? integral-part\n\
         integral-part ::= [0] | [1-9] [0-9]{0,15}\n\
         get-weather-args ::= \"city=\" py-string ( ws \",\" ws \"days=\" integer )?\n\
         call-get-weather ::= \"get_weather(\" get-weather-args ws \")\"\n\
         tool-call ::= call-get-weather\n\
         ws ::= [ \\t\\r\\n]{0,24}\n";
    assert_eq!(g.gbnf, expected);
    assert_eq!(g.triggers[0].value, "<|tool_call_start|>[");
}

#[test]
fn bare_json_has_a_pattern_trigger() {
    let g = grammar("bare-json.jinja", ToolChoice::Auto, true);
    assert_eq!(g.triggers.len(), 1);
    assert_eq!(
        (g.triggers[0].kind, g.triggers[0].value.as_str()),
        (TriggerKind::PatternFull, r#"^\s*(\{\s*"name")[\s\S]*$"#)
    );
}

#[test]
fn required_and_named_are_eager_none_is_empty() {
    let g = grammar("hermes-think.jinja", ToolChoice::Required, true);
    assert!(!g.lazy && g.triggers.is_empty());
    assert!(
        g.gbnf
            .starts_with("root ::= ws ( \"<think>\" reasoning-text \"</think>\" )? ws tool-call ( ws tool-call )* ws\n"),
        "{}",
        g.gbnf
    );
    let r = Recognizer::new(&g.gbnf).unwrap();
    assert!(r.accepts("<think>\nhmm <tool_call>\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\"}}\n</tool_call>"));
    assert!(!r.accepts("Hello"));
    let named = grammar(
        "hermes-think.jinja",
        ToolChoice::Function("get_weather".into()),
        true,
    );
    assert!(!named.lazy);
    let none = grammar("hermes-think.jinja", ToolChoice::None, true);
    assert!(none.gbnf.is_empty() && none.triggers.is_empty());
}

#[test]
fn unknown_function_is_an_input_error() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/hermes-think.jinja");
    let source = TemplateSource::load(&path).unwrap();
    let analysis = ChatTemplate::from_source(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let config = Options::default().with_tool_choice(ToolChoice::Function("nope".into()));
    let err = analysis.grammar(&config).unwrap_err();
    assert_eq!(err.kind(), chat_autoparser::ErrorKind::Input);
}

#[test]
fn deterministic_byte_for_byte() {
    let a = grammar("glm-arg-pairs.jinja", ToolChoice::Auto, true);
    let b = grammar("glm-arg-pairs.jinja", ToolChoice::Auto, true);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

/// The prompt the output continues moves where the lazy grammar starts: a
/// prompt that opened the block needs its end first, one that closed it
/// needs nothing, and without a prompt the thinking switch decides.
#[test]
fn the_prompt_and_thinking_switch_move_the_trigger() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/hermes-think.jinja");
    let source = TemplateSource::load(&path).unwrap();
    let analysis = ChatTemplate::from_source(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![
        json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}),
    ];
    let triggers = |prompt: Option<&str>, thinking: Option<bool>| {
        let config = Options::default()
            .with_tools(tools.clone())
            .with_prompt(prompt.map(str::to_owned))
            .with_enable_thinking(thinking);
        let g = analysis.grammar(&config).unwrap();
        g.triggers
            .into_iter()
            .map(|t| (t.kind, t.value))
            .collect::<Vec<_>>()
    };
    let opened = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n";
    assert_eq!(
        triggers(Some(opened), None),
        [(
            TriggerKind::PatternFull,
            r"^[\s\S]*?</think>[\s\S]*?(<tool_call>)[\s\S]*$".to_owned()
        )]
    );
    let closed = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    assert_eq!(
        triggers(Some(closed), Some(true)),
        [(TriggerKind::Token, "<tool_call>".to_owned())]
    );
    assert_eq!(
        triggers(None, Some(false)),
        [(TriggerKind::Token, "<tool_call>".to_owned())]
    );
    assert_eq!(
        triggers(None, Some(true)).len(),
        2,
        "an optional block: with it, or without it"
    );
}
