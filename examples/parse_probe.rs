//! Callgrind probe: a batch parse of the peer bench's short output
//! (`benches/peer/benches/peer.rs`: content and one call, the bench's two
//! tools), N times in `probe_parse`. Usage: `parse_probe FAMILY N`, FAMILY
//! one of `mistral`, `llama3-json`, `qwen-hermes`; one parse's instructions
//! are those of `probe_parse` over N:
//!
//! ```text
//! cargo build --release --example parse_probe
//! valgrind --tool=callgrind --toggle-collect='*probe_parse*' \
//!     target/release/examples/parse_probe llama3-json 1000
//! ```
//!
//! The Llama-3 template is read from `../shared` (the corpus beside the
//! repository); the others ship in `templates/`.
use chat_autoparser::{ChatTemplate, Options, OutputParser, ParserConfig, TemplateConfig};
use serde_json::json;

#[inline(never)]
fn probe_parse(parser: &OutputParser, output: &str, n: usize) -> usize {
    let mut calls = 0;
    for _ in 0..n {
        let message = parser.parse(std::hint::black_box(output));
        calls += message.tool_calls.len();
    }
    calls
}

fn main() {
    let mut args = std::env::args().skip(1);
    let family = args.next().unwrap_or_else(|| "llama3-json".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let content = "Let me check the current weather in Paris for you, in Celsius as usual.";
    let call = r#"{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}"#;
    let (template, output) = match family.as_str() {
        "mistral" => (
            "templates/mistral-tool-calls.jinja",
            format!("{content}[TOOL_CALLS] [{call}]"),
        ),
        "llama3-json" => (
            "../shared/corpus/llamacpp/meta-llama-Llama-3.1-8B-Instruct.jinja",
            call.replace("arguments", "parameters"),
        ),
        "qwen-hermes" => (
            "templates/hermes-think.jinja",
            format!("{content}\n<tool_call>\n{call}\n</tool_call>"),
        ),
        other => panic!("no family {other}"),
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(template);
    let source = std::fs::read_to_string(path).expect("the template is there");
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .expect("compiles")
        .analyze()
        .expect("analyses");
    let tools = vec![
        json!({"type": "function", "function": {"name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "write_file",
            "description": "Writes a file.",
            "parameters": {"type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]}}}),
    ];
    let parser = analysis
        .parser(&ParserConfig::from(Options::default().with_tools(tools)))
        .expect("builds");
    assert_eq!(probe_parse(&parser, &output, 1), 1, "the call is read");
    println!("{family}: {} calls", probe_parse(&parser, &output, n));
}
