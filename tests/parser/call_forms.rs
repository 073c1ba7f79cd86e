//! Calls as models write them beyond their template's form, each the call
//! the template's own form is, under both presets, streams in 1-, 2-, 3-
//! and 7-byte pieces equal to the batch:
//! - a name with a namespace and a call counter (`functions.NAME:0`,
//!   Kimi-K2's layout) with whitespace between the special tokens and the
//!   name or id, without the namespace, without the counter;
//! - a request's function in OpenAI's `functions.` namespace where the
//!   template writes bare names (under `lossless`; `compatible` returns the
//!   name as written, as its unknown names are);
//! - whitespace inside a JSON call list's brackets (`[TOOL_CALLS][ {...} ]`);
//! - a JSON list of calls inside one call wrapper of a format whose calls
//!   are one object each (`<tool_call>[{...}, {...}]</tool_call>`);
//! - a JSON call object (or one written as a Python dict) inside the call
//!   wrapper of a format whose calls are tagged (`<tool_call>{"name": ...}`
//!   where the template writes `<tool_call><function=NAME>...`);
//! - Python calls in a list (`[f(x=1), g()]`) where the template writes
//!   them bare (`f(x=1)<|eom|>`, vLLM's Llama-4 pythonic template).

use chat_autoparser::{Analysis, AssistantMessage, Options, ParserConfig, Policy};

use crate::common::corpus_template;
use crate::common::streaming::{report_and_stream, weather_tools};

/// The batch message under both presets (the same), after checking every
/// chunking; `None` when the corpus is absent.
fn message(output: &str) -> Option<AssistantMessage> {
    let analysis = corpus_template("moonshotai-Kimi-K2")?.analyze().unwrap();
    Some(message_under_both_presets(&analysis, output))
}

/// The batch message of `output` under both presets (the same, with no
/// diagnostic), after checking that 1-, 2-, 3- and 7-byte streams equal it.
fn message_under_both_presets(analysis: &Analysis, output: &str) -> AssistantMessage {
    let mut messages = Vec::new();
    for policy in [Policy::lossless(), Policy::compatible()] {
        let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
        let p = analysis.parser(&config.with_policy(policy)).unwrap();
        let batch = report_and_stream(&p, output);
        assert!(batch.diagnostics.is_empty(), "{output:?}: {batch:?}");
        messages.push(batch.message);
    }
    assert_eq!(messages[0], messages[1], "{output:?}");
    messages.pop().unwrap()
}

/// The message's calls are `get_weather` for each of `cities`, in order,
/// with exactly those arguments.
fn assert_weather_calls(m: &AssistantMessage, cities: &[&str], output: &str) {
    let got: Vec<String> = m
        .tool_calls
        .iter()
        .map(|c| format!("{}{}", c.function.name, c.function.arguments))
        .collect();
    let want: Vec<String> = cities
        .iter()
        .map(|c| format!("get_weather{{\"city\": \"{c}\"}}"))
        .collect();
    assert_eq!(got, want, "{output:?}");
}

fn section(call: &str) -> String {
    format!("<|tool_calls_section_begin|>{call}<|tool_calls_section_end|>")
}

const ARGS: &str = r#"<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>"#;

#[test]
fn counted_names_in_the_shapes_models_write() {
    for (head, id) in [
        ("functions.get_weather:0", "functions.get_weather:0"),
        (" functions.get_weather:0 ", "functions.get_weather:0"),
        ("\nfunctions.get_weather:0\n", "functions.get_weather:0"),
        ("get_weather:0", "get_weather:0"),
        ("functions.get_weather", "functions.get_weather"),
        ("get_weather", "get_weather"),
    ] {
        let output = section(&format!("<|tool_call_begin|>{head}{ARGS}"));
        let Some(m) = message(&output) else {
            return;
        };
        assert_eq!(m.content, None, "{output:?}");
        assert_eq!(m.tool_calls.len(), 1, "{output:?}");
        let call = &m.tool_calls[0];
        assert_eq!(call.function.name, "get_weather", "{output:?}");
        assert_eq!(
            call.function.arguments, r#"{"city": "Paris"}"#,
            "{output:?}"
        );
        assert_eq!(call.id.as_deref(), Some(id), "{output:?}");
    }
}

#[test]
fn a_namespace_alone_is_no_name() {
    // `functions.` with no name after it, or a name the request lacks,
    // stays text.
    for head in ["functions.:0", "functions.get_time:0", "get_time"] {
        let output = section(&format!("<|tool_call_begin|>{head}{ARGS}"));
        let Some(m) = message_lossless(&output) else {
            return;
        };
        assert!(m.tool_calls.is_empty(), "{output:?}: {m:?}");
        assert_eq!(m.content.as_deref(), Some(output.as_str()));
    }
}

fn message_lossless(output: &str) -> Option<AssistantMessage> {
    let analysis = corpus_template("moonshotai-Kimi-K2")?.analyze().unwrap();
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    Some(analysis.parser(&config).unwrap().parse(output))
}

/// A request's function named in OpenAI's `functions.` namespace or with
/// a call counter (`get_weather:0`, as Kimi-style ids spell it), in a
/// template that writes bare names (a JSON name, a tagged one): under
/// `lossless` the call of that function; under `compatible`, whose unknown
/// names are calls, the name as written, flagged as vLLM's and SGLang's
/// parsers return it. Every chunking streams the batch.
#[test]
fn a_namespaced_name_is_the_requests_function_where_unknown_names_are_content() {
    use crate::common::shipped_template;
    use chat_autoparser::parser::DiagnosticKind;
    let forms = [
        "functions.get_weather",
        "functions.get_weather:0",
        "get_weather:12",
    ];
    let outputs = forms.iter().flat_map(|written| {
        [
            ("hermes-think", format!(r#"<tool_call>{{"name": "{written}", "arguments": {{"city": "Paris"}}}}</tool_call>"#)),
            ("qwen-coder-xml", format!("<tool_call>\n<function={written}>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>")),
        ]
        .map(|(template, output)| (*written, template, output))
    });
    for (written, template, output) in outputs {
        let output = output.as_str();
        let (_, analysis) = shipped_template(template);
        for (policy, name, flagged) in [
            (Policy::lossless(), "get_weather", false),
            (Policy::compatible(), written, true),
        ] {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            let p = analysis.parser(&config.with_policy(policy)).unwrap();
            let batch = report_and_stream(&p, output);
            let kinds: Vec<DiagnosticKind> = batch.diagnostics.iter().map(|d| d.kind).collect();
            let want = if flagged {
                vec![DiagnosticKind::UnknownToolCall]
            } else {
                vec![]
            };
            assert_eq!(kinds, want, "{template} {policy:?}");
            let m = &batch.message;
            assert_eq!(m.content, None, "{template}");
            assert_eq!(m.tool_calls.len(), 1, "{template}");
            assert_eq!(m.tool_calls[0].function.name, name, "{template} {policy:?}");
            let args: serde_json::Value =
                serde_json::from_str(&m.tool_calls[0].function.arguments).unwrap();
            assert_eq!(args, serde_json::json!({"city": "Paris"}), "{template}");
        }
    }
}

/// A tagged name that starts as a request's function but goes on past it
/// (`get_weather!`, `get_weather:x`): the name slot reads to its closer, so
/// the call was returned under a name no server can dispatch. Under
/// `lossless` its text is content, named by an `UnknownTool` diagnostic;
/// under `compatible` it is the call as written, flagged.
#[test]
fn a_name_that_only_starts_as_a_requests_function_is_no_call_under_lossless() {
    use crate::common::shipped_template;
    use chat_autoparser::parser::DiagnosticKind;
    let (_, analysis) = shipped_template("qwen-coder-xml");
    for written in ["get_weather!", "get_weather:x"] {
        let output = format!("<tool_call>\n<function={written}>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>");
        for (policy, kind) in [
            (Policy::lossless(), DiagnosticKind::UnknownTool),
            (Policy::compatible(), DiagnosticKind::UnknownToolCall),
        ] {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            let p = analysis.parser(&config.with_policy(policy)).unwrap();
            let batch = report_and_stream(&p, &output);
            let kinds: Vec<DiagnosticKind> = batch.diagnostics.iter().map(|d| d.kind).collect();
            assert_eq!(kinds, vec![kind], "{written} {policy:?}");
            let m = &batch.message;
            match kind {
                DiagnosticKind::UnknownTool => {
                    assert!(m.tool_calls.is_empty(), "{written}: {m:?}");
                    assert_eq!(m.content.as_deref(), Some(output.as_str()));
                }
                _ => assert_eq!(m.tool_calls[0].function.name, written),
            }
        }
    }
}

/// A JSON list of calls opened after a special token, with whitespace
/// inside its brackets (`[TOOL_CALLS][ {...} ]`): JSON whitespace, so the
/// calls, under both presets and every chunking.
#[test]
fn whitespace_inside_a_call_lists_brackets_is_json_whitespace() {
    use crate::common::shipped_template;
    let (_, analysis) = shipped_template("mistral-tool-calls");
    let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    for output in [
        format!("[TOOL_CALLS][ {call} ]"),
        format!("[TOOL_CALLS] [\n  {call} ,\n  {call}\n]"),
    ] {
        for policy in [Policy::lossless(), Policy::compatible()] {
            let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
            let p = analysis.parser(&config.with_policy(policy)).unwrap();
            let batch = report_and_stream(&p, &output);
            assert!(batch.diagnostics.is_empty(), "{output:?}: {batch:?}");
            assert_eq!(batch.message.content, None, "{output:?}");
            assert!(!batch.message.tool_calls.is_empty(), "{output:?}");
        }
    }
}

/// A model that mixes dialects writes a JSON list of calls inside its
/// template's one-object call wrapper (`<tool_call>[{...}, {...}]</tool_call>`):
/// each object is a call, the brackets and commas framing, under both
/// presets and every chunking; with an object of the wrong shape in it the
/// text stays content, verbatim.
#[test]
fn a_json_list_inside_a_call_wrapper_is_its_calls() {
    use crate::common::shipped_template;
    let (_, analysis) = shipped_template("hermes-think");
    let paris = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    let tokyo = r#"{"name": "get_weather", "arguments": {"city": "Tokyo"}}"#;
    for (output, cities) in [
        (
            format!("<tool_call>\n[{paris}]\n</tool_call>"),
            vec!["Paris"],
        ),
        (
            format!("Sure.\n<tool_call>[ {paris},\n {tokyo} ]</tool_call>"),
            vec!["Paris", "Tokyo"],
        ),
    ] {
        let m = message_under_both_presets(&analysis, &output);
        assert_weather_calls(&m, &cities, &output);
        let content = m.content_text();
        assert!(
            content.is_empty() || content == "Sure.",
            "{output:?}: {m:?}"
        );
    }
    let broken = r#"<tool_call>[{"name": "get_weather", "arguments": {"city": }}]</tool_call>"#;
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    let m = analysis.parser(&config).unwrap().parse(broken);
    assert_eq!(m.content_text(), broken);
}

/// A model trained on JSON calls writes them inside its template's Python
/// call list (`<|tool_call_start|>[{"name": ..., "arguments": {...}}]<|tool_call_end|>`,
/// as LFM2 models do): each object is a call, as the Python form would be,
/// under both presets and every chunking.
#[test]
fn json_calls_inside_a_python_call_list_are_its_calls() {
    use crate::common::shipped_template;
    let (_, analysis) = shipped_template("python-calls");
    let paris = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    let tokyo = r#"{"name": "get_weather", "arguments": {"city": "Tokyo"}}"#;
    for (output, cities, content) in [
        (
            format!("<|tool_call_start|>[{paris}]<|tool_call_end|>"),
            vec!["Paris"],
            None,
        ),
        (
            format!("Sure.<|tool_call_start|>[ {paris}, {tokyo} ]<|tool_call_end|>"),
            vec!["Paris", "Tokyo"],
            Some("Sure."),
        ),
    ] {
        let m = message_under_both_presets(&analysis, &output);
        assert_weather_calls(&m, &cities, &output);
        assert_eq!(m.content.as_deref(), content, "{output:?}");
    }
}

/// A model writes its whole call object as a Python dict inside its
/// template's JSON call wrapper (`<tool_call>{'name': ..., 'arguments':
/// {...}}</tool_call>`): it is the call, its arguments converted to JSON,
/// under both presets and every chunking; a name the request lacks stays
/// content, verbatim, as in a JSON call.
#[test]
fn a_python_dict_call_object_is_the_call() {
    use crate::common::shipped_template;
    let (_, analysis) = shipped_template("hermes-think");
    let output = "<tool_call>\n{'name': 'get_weather', 'arguments': \
                  {'city': 'Paris', 'days': 3, 'metric': True}}\n</tool_call>";
    let m = message_under_both_presets(&analysis, output);
    let calls: Vec<(&str, &str)> = m
        .tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [("get_weather", r#"{"city":"Paris","days":3,"metric":true}"#)],
        "{m:?}"
    );
    assert_eq!(m.content_text(), "", "{m:?}");
    let unknown = "<tool_call>\n{'name': 'get_time', 'arguments': {'city': 'Paris'}}\n</tool_call>";
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    let m = analysis.parser(&config).unwrap().parse(unknown);
    assert_eq!(m.content_text(), unknown, "{m:?}");
    assert!(m.tool_calls.is_empty(), "{m:?}");
}

/// The Python-dict call object in each JSON form a model writes: its
/// arguments as a string holding a JSON object, OpenAI's wrapper around it
/// (`{'type': 'function', 'function': {...}}`), a list of them in a call
/// wrapper and in a format whose section is a JSON list. Each is the call,
/// read as its JSON form is, under both presets and every chunking; in the
/// wrapper a name the request lacks stays content, verbatim.
#[test]
fn python_dict_call_objects_in_the_json_forms() {
    use crate::common::shipped_template;
    let paris = "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}";
    let tokyo = "{'name': 'get_weather', 'arguments': {'city': 'Tokyo'}}";
    for (template, output, cities) in [
        (
            "hermes-think",
            r#"<tool_call>{'name': 'get_weather', 'arguments': '{"city": "Paris"}'}</tool_call>"#
                .to_string(),
            vec!["Paris"],
        ),
        (
            "hermes-think",
            format!("<tool_call>\n{{'type': 'function', 'function': {paris}}}\n</tool_call>"),
            vec!["Paris"],
        ),
        (
            "hermes-think",
            format!(
                "<tool_call>[{paris}, {{'type': 'function', 'function': {tokyo}}}]</tool_call>"
            ),
            vec!["Paris", "Tokyo"],
        ),
        (
            "mistral-tool-calls",
            format!("[TOOL_CALLS][{paris}, {tokyo}]"),
            vec!["Paris", "Tokyo"],
        ),
    ] {
        let (_, analysis) = shipped_template(template);
        let m = message_under_both_presets(&analysis, &output);
        let calls: Vec<String> = m
            .tool_calls
            .iter()
            .map(|c| {
                let args: serde_json::Value = serde_json::from_str(&c.function.arguments).unwrap();
                format!("{}{args}", c.function.name)
            })
            .collect();
        let want: Vec<String> = cities
            .iter()
            .map(|c| format!("get_weather{{\"city\":\"{c}\"}}"))
            .collect();
        assert_eq!(calls, want, "{output:?}");
        assert_eq!(m.content_text(), "", "{output:?}: {m:?}");
    }
    let (_, analysis) = shipped_template("hermes-think");
    let unknown = "<tool_call>{'type': 'function', 'function': {'name': 'get_time', \
                   'arguments': {'city': 'Paris'}}}</tool_call>";
    let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
    let m = analysis.parser(&config).unwrap().parse(unknown);
    assert_eq!(m.content_text(), unknown, "{m:?}");
    assert!(m.tool_calls.is_empty(), "{m:?}");
}

/// Whitespace between a tagged name and the special token after it
/// (`<｜tool▁call▁begin｜> get_weather <｜tool▁sep｜>`, `[TOOL_CALLS]get_weather
/// [ARGS]`), as around the name's other tokens: the call, under both
/// presets and every chunking, on DeepSeek-V3.1's and Devstral's templates.
#[test]
fn whitespace_before_the_token_after_a_name_is_scaffolding() {
    let deepseek = |name: &str| {
        format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>\
             {{\"city\": \"Paris\"}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        )
    };
    let devstral = |name: &str| format!("[TOOL_CALLS]{name}[ARGS]{{\"city\": \"Paris\"}}");
    for (template, output) in [
        ("deepseek-ai-DeepSeek-V3.1", deepseek("get_weather ")),
        ("deepseek-ai-DeepSeek-V3.1", deepseek(" get_weather\n")),
        (
            "unsloth-mistral-Devstral-Small-2507",
            devstral("get_weather "),
        ),
        (
            "unsloth-mistral-Devstral-Small-2507",
            devstral(" get_weather\n"),
        ),
    ] {
        let Some(template) = corpus_template(template) else {
            return;
        };
        let m = message_under_both_presets(&template.analyze().unwrap(), &output);
        assert_weather_calls(&m, &["Paris"], &output);
        assert_eq!(m.content, None, "{output:?}");
    }
}

/// Whitespace after a name prefix that ends in `=` or `:` (`<function=
/// get_weather>`, `call: get_weather{...}`), as after a header's address
/// (`to= functions.f`): the call, under both presets and every chunking.
#[test]
fn whitespace_after_a_name_prefixs_equals_sign_is_scaffolding() {
    let function = "<tool_call>\n<function= get_weather>\n<parameter=city>\nParis\n\
                    </parameter>\n</function>\n</tool_call>";
    let seed = "<seed:tool_call>\n<function= get_weather>\n<parameter=city>Paris</parameter>\n\
                </function>\n</seed:tool_call>";
    let gemma = "<|tool_call>call: get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>";
    for (template, output) in [
        ("Qwen3-Coder", function),
        ("ByteDance-Seed-OSS", seed),
        ("google-gemma-4-31B-it", gemma),
    ] {
        let Some(template) = corpus_template(template) else {
            return;
        };
        let m = message_under_both_presets(&template.analyze().unwrap(), output);
        let args: Vec<serde_json::Value> = m
            .tool_calls
            .iter()
            .map(|c| serde_json::from_str(&c.function.arguments).unwrap())
            .collect();
        assert_eq!(args, [serde_json::json!({"city": "Paris"})], "{output:?}");
        assert_eq!(m.tool_calls[0].function.name, "get_weather", "{output:?}");
        assert_eq!(m.content, None, "{output:?}");
    }
}

/// Models trained on hermes' JSON calls write them inside their template's
/// own call wrapper when the template's calls are tagged (Qwen3-Coder's
/// `<tool_call>\n<function=f>\n<parameter=...>`, GLM's
/// `<tool_call>f\n<arg_key>...`): each object is the call, as a JSON object
/// or a Python dict, one per wrapper or one after another, or a JSON list
/// of them in one wrapper; the wrapper is
/// the template's own scaffolding (no diagnostic).
#[test]
fn a_json_call_object_in_a_tagged_formats_own_wrapper_is_the_call() {
    let json = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    let dict = r#"{'name': 'get_weather', 'arguments': {'city': 'Rome'}}"#;
    // The JSON arguments as written; the Python dict's converted to JSON.
    let (paris, rome) = (r#"{"city": "Paris"}"#, r#"{"city":"Rome"}"#);
    for template in ["qwen-coder-xml", "glm-arg-pairs"] {
        let (_, analysis) = crate::common::shipped_template(template);
        for (calls, arguments) in [
            (format!("<tool_call>\n{json}\n</tool_call>"), vec![paris]),
            (format!("<tool_call>{dict}</tool_call>"), vec![rome]),
            (
                format!("<tool_call>\n{json}\n</tool_call>\n<tool_call>\n{dict}\n</tool_call>"),
                vec![paris, rome],
            ),
            (
                format!("<tool_call>\n[{json}, {json}]\n</tool_call>"),
                vec![paris, paris],
            ),
        ] {
            let output = format!("Let me check.\n{calls}");
            let m = message_under_both_presets(&analysis, &output);
            assert_eq!(
                m.content.as_deref(),
                Some("Let me check."),
                "{template}: {output:?}"
            );
            let got: Vec<(&str, &str)> = crate::common::streaming::calls(&m);
            let want: Vec<(&str, &str)> = arguments.iter().map(|a| ("get_weather", *a)).collect();
            assert_eq!(got, want, "{template}: {output:?}");
        }
    }
}

/// A tagged format's call may drop its opener only before the distinctive
/// name prefix that lets it (`<function=f>` without `<tool_call>`): a JSON
/// call object with no wrapper at all, at the output's start too, is no
/// call of the wrapper's (it was read as one whose opener was dropped and
/// whose closer never came) and stays content byte for byte, as vLLM's and
/// SGLang's qwen3_coder parsers return it.
#[test]
fn a_dropped_opener_is_read_only_before_the_name_prefix() {
    let (_, analysis) = crate::common::shipped_template("qwen-coder-xml");
    let bare = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    let m = message_under_both_presets(&analysis, bare);
    assert!(m.tool_calls.is_empty());
    assert_eq!(m.content.as_deref(), Some(bare));
    let dropped =
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";
    let m = message_under_both_presets(&analysis, dropped);
    assert_eq!(m.content, None);
    let got: Vec<(&str, &str)> = crate::common::streaming::calls(&m);
    assert_eq!(got, [("get_weather", r#"{"city": "Paris"}"#)]);
}

/// Calls whose own opener the model left out inside their section, the
/// name on its line before the token that ends it (Kimi-K2's
/// `<|tool_calls_section_begin|>functions.f:0<|tool_call_argument_begin|>{...}`,
/// DeepSeek-V3.1's `<｜tool▁calls▁begin｜>f<｜tool▁sep｜>{...}`, from the
/// corpus): the calls, under both presets and every chunking. Outside a
/// section such a line is text.
#[test]
fn a_calls_dropped_opener_is_read_before_the_token_that_ends_its_name() {
    let kimi = section(&format!(
        "functions.get_weather:0{ARGS}functions.get_weather:1{ARGS}"
    ));
    let Some(m) = message(&kimi) else {
        return;
    };
    assert_weather_calls(&m, &["Paris", "Paris"], &kimi);
    assert_eq!(m.content, None);
    let prose = format!("I would write functions.get_weather:0{ARGS}");
    let m = message_lossless(&prose).unwrap();
    assert!(m.tool_calls.is_empty(), "{m:?}");
    // At the output's start a section may open with its own opener dropped
    // too: a request's function named so is a call.
    let bare = format!("functions.get_weather:0{ARGS}");
    assert_weather_calls(&message(&bare).unwrap(), &["Paris"], &bare);

    let Some(template) = corpus_template("deepseek-ai-DeepSeek-V3.1") else {
        return;
    };
    let deepseek = "<｜tool▁calls▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let m = message_under_both_presets(&template.analyze().unwrap(), deepseek);
    assert_weather_calls(&m, &["Paris"], deepseek);
    assert_eq!(m.content, None);
}

/// Mistral's older JSON call list (`[TOOL_CALLS][{"name": ..., "arguments":
/// {...}, "id": "..."}]`, each call with the id the model made up) on
/// Mistral templates whose own calls are `[TOOL_CALLS]NAME[ARGS]{...}`:
/// the calls, with their ids, and no content, under both presets and
/// every chunking.
#[test]
fn mistrals_json_call_list_with_ids_is_its_calls() {
    let call = |city: &str, id: &str| {
        format!(r#"{{"name": "get_weather", "arguments": {{"city": "{city}"}}, "id": "{id}"}}"#)
    };
    let (paris, rome) = (call("Paris", "a1b2c3d4e"), call("Rome", "f5g6h7i8j"));
    for template in [
        "Mistral-Small-3.2-24B-Instruct-2506",
        "mistralai-Ministral-3-14B-Reasoning-2512",
        "unsloth-mistral-Devstral-Small-2507",
    ] {
        let Some(template) = corpus_template(template) else {
            return;
        };
        let analysis = template.analyze().unwrap();
        for (output, cities, ids) in [
            (
                format!("[TOOL_CALLS][{paris}]"),
                &["Paris"][..],
                &["a1b2c3d4e"][..],
            ),
            (
                format!("[TOOL_CALLS] [{paris}, {rome}]"),
                &["Paris", "Rome"],
                &["a1b2c3d4e", "f5g6h7i8j"],
            ),
        ] {
            let m = message_under_both_presets(&analysis, &output);
            assert_weather_calls(&m, cities, &output);
            let got: Vec<Option<&str>> = m.tool_calls.iter().map(|c| c.id.as_deref()).collect();
            let want: Vec<Option<&str>> = ids.iter().map(|i| Some(*i)).collect();
            assert_eq!(got, want, "{output:?}");
            assert_eq!(m.content, None, "{output:?}");
        }
        // An id that is no string is no id: a member the model added,
        // kept as content.
        let output =
            r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": 7}]"#;
        let config = ParserConfig::from(Options::default().with_tools(weather_tools()));
        let parsed = report_and_stream(&analysis.parser(&config).unwrap(), output);
        assert_weather_calls(&parsed.message, &["Paris"], output);
        assert_eq!(parsed.message.tool_calls[0].id, None);
        assert_eq!(parsed.message.content.as_deref(), Some(r#""id": 7"#));
    }
}

/// Written for this test in the style of vLLM's Llama-4 pythonic template:
/// bare Python calls, `, ` between them, `<|eom|>` after the last.
const BARE_PYTHON_CALLS: &str = r#"
{%- for m in messages -%}
{{- '<|' + m.role + '|>' -}}
{%- if m.tool_calls -%}
{%- for c in m.tool_calls -%}
{{- c.function.name + '(' -}}
{%- for k, v in c.function.arguments.items() -%}{{- k + '=' + v | tojson -}}{{- ', ' if not loop.last -}}{%- endfor -%}
{{- ')' -}}{{- ', ' if not loop.last -}}
{%- endfor -%}{{- '<|eom|>' -}}
{%- else -%}{{- m.content + '<|eot|>' -}}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"#;

#[test]
fn bare_python_calls_in_a_list_are_the_same_calls() {
    let analysis = chat_autoparser::ChatTemplate::new(
        BARE_PYTHON_CALLS,
        &chat_autoparser::TemplateConfig::default(),
    )
    .unwrap()
    .analyze()
    .unwrap();
    for output in [
        r#"get_weather(city="Paris")<|eom|>"#,
        r#"[get_weather(city="Paris")]"#,
        r#"[get_weather(city="Paris")]<|eom|>"#,
        r#"[ get_weather(city='Paris') ]"#,
    ] {
        let m = message_under_both_presets(&analysis, output);
        assert_eq!(m.content, None, "{output:?}");
        assert_weather_calls(&m, &["Paris"], output);
    }
    let two = r#"[get_weather(city="Paris"), get_weather(city="Tokyo")]<|eom|>"#;
    let m = message_under_both_presets(&analysis, two);
    assert_weather_calls(&m, &["Paris", "Tokyo"], two);
    // A bracket that opens no call of the request's is text.
    let m = message_under_both_presets(&analysis, "[1] see the note");
    assert_eq!(m.content.as_deref(), Some("[1] see the note"));
    assert!(m.tool_calls.is_empty());
}
