//! Callgrind probe: builds the one-tool hermes-think parser N times, N the
//! first argument; the instructions of N builds less those of 0, over N,
//! are one build's.
//!
//! - `build_probe N`: each from the analysis (`Analysis::parser`), cold;
//! - `build_probe N renamed`: for N prepared requests whose tool has a new
//!   name each (`tool_0`, ...), through the chat (`Prepared::parser`), which
//!   finds the shape's kept program; count with
//!   `--toggle-collect='*probe_renamed*'`.
use chat_autoparser::{Chat, ChatRequest, ChatTemplate, ParserConfig, Prepared, TemplateConfig};
use serde_json::json;

fn request(tool_name: &str) -> ChatRequest {
    let tool = json!({"type": "function", "function": {"name": tool_name,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}});
    ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(vec![tool])
}

#[inline(never)]
fn probe_renamed(prepared: &[Prepared]) {
    for p in prepared {
        std::hint::black_box(p.parser().ok());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let renamed = args.next().as_deref() == Some("renamed");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/hermes-think.jinja");
    let source = std::fs::read_to_string(path).expect("shipped template");
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
    let chat = Chat::new(template).expect("analyses");
    let request = request("get_weather");
    let prepared = chat.prepare(&request);
    // One build before counting: what is built once per process (and, for
    // `renamed`, the shape's program) is not a build's cost.
    let first = prepared.parser().expect("builds");
    let output = "<think>\nRain?\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    assert_eq!(first.parse(output).tool_calls.len(), 1);
    if renamed {
        let requests: Vec<Prepared> = (0..n)
            .map(|i| chat.prepare(&self::request(&format!("tool_{i}"))))
            .collect();
        probe_renamed(&requests);
        return;
    }
    let config = ParserConfig::from(request.options(prepared.prompt.clone()));
    for _ in 0..n {
        std::hint::black_box(chat.analysis().parser(std::hint::black_box(&config)).ok());
    }
}
