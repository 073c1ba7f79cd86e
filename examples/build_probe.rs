//! Callgrind probe: builds the one-tool hermes-think parser N times
//! (`Analysis::parser`), N the first argument; the instructions of N builds
//! less those of 0, over N, are one build's.
use chat_autoparser::{Chat, ChatRequest, ChatTemplate, ParserConfig, TemplateConfig};
use serde_json::json;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/hermes-think.jinja");
    let source = std::fs::read_to_string(path).expect("shipped template");
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
    let chat = Chat::new(template).expect("analyses");
    let tool = json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}});
    let request = ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(vec![tool]);
    let prepared = chat.prepare(&request);
    let config = ParserConfig::from(request.options(prepared.prompt.clone()));
    // One build before counting: what is built once per process is not a build's cost.
    let first = chat.analysis().parser(&config).expect("builds");
    let output = "<think>\nRain?\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    assert_eq!(first.parse(output).tool_calls.len(), 1);
    for _ in 0..n {
        std::hint::black_box(chat.analysis().parser(std::hint::black_box(&config)).ok());
    }
}
