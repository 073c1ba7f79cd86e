//! Inputs the fuzz targets (`fuzz/`) found, kept as regression tests.
//!
//! `template_text`: a template that writes the lint's reasoning needle
//! (`RRRR`) itself made the prefill check slice past the end of a string
//! (a panic in `lint`).
//!
//! `tool_schema`: `$ref` cycles that match no text before they repeat
//! (`A -> B -> A`, `A -> A`, `{"$ref": "#"}`) gave left-recursive GBNF, which
//! llama.cpp refuses ("left recursion detected"). Through every shipped
//! template's grammar, they must now give GBNF that parses, has no left
//! recursion, and say with a warning that the rule is looser.
//!
//! `parse_bytes`: final calls whose `arguments` were not JSON text
//! (`{"city": "Paris", "days": 3` from `... 3x}}`; after the fix, a number
//! out of `f64`'s range, `1E2222222222222`, which the decoder's check took
//! and serde_json refuses). Each committed
//! `fuzz/seeds/parse_bytes/seed-found-*` input, decoded as the target
//! decodes it, must now give a final message whose calls all have JSON
//! arguments, streaming equal to batch; the smallest of each template
//! must give exactly its text as content, no call, and a withdrawal
//! diagnostic.

use chat_autoparser::grammar::syntax;
use chat_autoparser::parser::DiagnosticKind;
use chat_autoparser::prompt::template_messages;
use chat_autoparser::{
    ChatTemplate, Options, OutputParser, ParserConfig, RenderRequest, TemplateConfig, ToolChoice,
};
use serde_json::{json, Value};

fn shipped() -> Vec<(String, chat_autoparser::Analysis)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/templates");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.retain(|p| p.extension().is_some_and(|x| x == "jinja"));
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let source = std::fs::read_to_string(p).unwrap();
            let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
                .unwrap()
                .analyze()
                .unwrap();
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                analysis,
            )
        })
        .collect()
}

#[test]
fn reference_cycles_give_grammars_llama_cpp_loads() {
    let schemas: [Value; 3] = [
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
        json!({"$ref": "#"}),
    ];
    let mut checked = 0;
    for (name, analysis) in shipped() {
        for schema in &schemas {
            let tools =
                vec![json!({"type": "function", "function": {"name": "f", "parameters": schema}})];
            let config = Options::default()
                .with_tools(tools)
                .with_tool_choice(ToolChoice::Required);
            let Ok(grammar) = analysis.grammar(&config) else {
                continue;
            };
            let parsed = syntax::parse(grammar.gbnf()).unwrap_or_else(|e| panic!("[{name}] {e}"));
            assert_eq!(
                syntax::left_recursion(&parsed),
                None,
                "[{name}] {schema}\n{}",
                grammar.gbnf()
            );
            // Formats that read the parameters' members themselves (tagged
            // arguments) never compile the cycle into a `$ref` rule at all.
            let warned = grammar
                .warnings
                .iter()
                .any(|w| w.contains("leads back to itself"));
            assert!(
                warned || !grammar.gbnf().contains("ref-"),
                "[{name}] {schema}: {:?}",
                grammar.warnings
            );
            checked += 1;
        }
    }
    assert!(checked >= 3 * 7, "only {checked} grammars checked");
}

#[test]
fn lint_survives_a_template_writing_its_needles() {
    let source = "RRRR{%if add_generation_prompt%}{%if t%}}{%endif%}{%endif%}";
    let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    let kinds: Vec<String> = template
        .lint()
        .kinds()
        .into_iter()
        .map(|k| k.name())
        .collect();
    // The needle written by the template reads as reasoning kept in history.
    assert_eq!(kinds, ["think-kept-in-history"]);
}

/// The fuzz target's tools (`fuzz/src/lib.rs`).
fn fuzz_tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object",
            "properties": {"at": {"type": "number"}, "loud": {"type": "boolean"}, "unit": {"enum": ["s", "min"]},
                "labels": {"type": "array", "items": {"type": "string"}}, "extra": {"type": "object"}, "note": {"type": ["string", "null"]}},
            "required": ["at"]}}}),
    ]
}

/// Every shipped template's parser as the fuzz target builds it (tools and
/// the rendered generation prompt), by template name, in the target's order.
fn fuzz_parsers() -> Vec<(String, OutputParser)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/templates");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let source = std::fs::read_to_string(p).unwrap();
            let template = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
            let analysis = template.analyze().unwrap();
            let user = json!({"role": "user", "content": "Weather in Paris?"});
            let request = RenderRequest::default()
                .with_messages(template_messages(&analysis, &[user]))
                .with_tools(Some(fuzz_tools()))
                .with_add_generation_prompt(true);
            let config = ParserConfig::from(
                Options::default()
                    .with_tools(fuzz_tools())
                    .with_prompt(template.render(&request).ok()),
            );
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, analysis.parser(&config).unwrap())
        })
        .collect()
}

/// A `parse_bytes` input as the target reads it: the template it picks, the
/// chunk sizes and the output.
fn fuzz_input(data: &[u8], count: usize) -> (usize, Vec<usize>, String) {
    let pick = data[0] as usize % count;
    let n = (data[1] % 8) as usize;
    let sizes = data[2..2 + n]
        .iter()
        .map(|&b| 1 + (b % 32) as usize)
        .collect();
    (
        pick,
        sizes,
        String::from_utf8_lossy(&data[2 + n..]).into_owned(),
    )
}

#[test]
fn found_outputs_give_json_arguments_or_content() {
    let parsers = fuzz_parsers();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/parse_bytes");
    let mut seeds: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-found-")
        })
        .collect();
    seeds.sort();
    assert_eq!(seeds.len(), 6, "{seeds:?}");
    for path in &seeds {
        let data = std::fs::read(path).unwrap();
        let (pick, sizes, output) = fuzz_input(&data, parsers.len());
        let (name, parser) = &parsers[pick];
        let batch = parser.parse_report(&output, false);
        // The whole output is content: the one call it starts never completes
        // (seed 5: its arguments are `22222.2...E2222222222222`, a number out
        // of `f64`'s range, which serde_json refuses).
        assert_eq!(
            batch.message.content.as_deref(),
            Some(output.trim()),
            "[{name}] {path:?}"
        );
        assert!(
            batch.message.tool_calls.is_empty(),
            "[{name}] {:?}",
            batch.message
        );
        let kinds: Vec<_> = batch.diagnostics.iter().map(|d| d.kind).collect();
        // Withdrawn, or never a call: its name is none of the tools'.
        assert!(
            kinds.is_empty()
                || kinds.contains(&DiagnosticKind::WithdrawnToolCall)
                || kinds == [DiagnosticKind::UnknownTool],
            "[{name}] {kinds:?}"
        );
        let mut stream = parser.stream();
        let mut at = 0;
        for size in sizes
            .iter()
            .cycle()
            .take(if sizes.is_empty() { 0 } else { output.len() })
        {
            if at >= output.len() {
                break;
            }
            let mut end = (at + size).min(output.len());
            while !output.is_char_boundary(end) {
                end += 1;
            }
            stream.push(&output[at..end]);
            at = end;
        }
        stream.push(&output[at..]);
        stream.finish();
        assert_eq!(
            stream.message(),
            batch.message,
            "[{name}] streamed in {sizes:?}"
        );
    }
}

#[test]
fn hermes_arguments_that_do_not_complete_go_back_to_content_whole() {
    let parsers = fuzz_parsers();
    let (_, parser) = parsers.iter().find(|(n, _)| n == "hermes-think").unwrap();
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3x}}\n</tool_call>";
    let good = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
    let output = format!("Checking.\n{call}\n{good}");
    let parsed = parser.parse_report(&output, false);
    assert_eq!(
        parsed.message.content.as_deref(),
        Some(format!("Checking.\n{call}").as_str())
    );
    let calls: Vec<_> = parsed
        .message
        .tool_calls
        .iter()
        .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("get_weather", r#"{"city": "Rome"}"#)]);
    let kinds: Vec<_> = parsed
        .diagnostics
        .iter()
        .map(|d| (d.kind, d.offset))
        .collect();
    assert_eq!(
        kinds,
        [
            (DiagnosticKind::BrokenToolCall, 86),
            (DiagnosticKind::WithdrawnToolCall, 10)
        ]
    );
    // A stream sent the call's deltas; it names the call it withdrew.
    let mut stream = parser.stream();
    for piece in chat_autoparser::parser::char_chunks(&output, 7) {
        stream.push(piece);
    }
    stream.finish();
    assert_eq!(stream.withdrawn_calls(), [0]);
    assert_eq!(stream.message(), parsed.message);
    // Cut off mid-arguments, a partial parse still shows the call so far.
    let cut = &output[..output.find("3x").unwrap()];
    let partial = parser.parse_partial(cut);
    assert_eq!(
        partial.tool_calls[0].function.arguments,
        r#"{"city": "Paris", "days": "#
    );
    // Finished there, the call never completed: all of it is content.
    assert_eq!(parser.parse(cut).content.as_deref(), Some(cut.trim_end()));
}

#[test]
fn arguments_serde_json_refuses_are_not_json() {
    let parsers = fuzz_parsers();
    let (_, parser) = parsers.iter().find(|(n, _)| n == "hermes-think").unwrap();
    let call =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 1E400}}\n</tool_call>";
    let parsed = parser.parse_report(call, false);
    assert_eq!(parsed.message.content.as_deref(), Some(call));
    assert!(parsed.message.tool_calls.is_empty());
    let kinds: Vec<_> = parsed
        .diagnostics
        .iter()
        .map(|d| (d.kind, d.offset))
        .collect();
    assert_eq!(kinds, [(DiagnosticKind::WithdrawnToolCall, 0)]);
    // In range, the same call is kept.
    let call = call.replace("1E400", "1E300");
    let calls = parser.parse(&call).tool_calls;
    assert_eq!(calls[0].function.arguments, r#"{"days": 1E300}"#);
}
