//! Callgrind probe: the one-tool hermes-think parser for N requests whose
//! tool has a new name each (`tool_0`, ...), after one of the shape: each
//! build finds the shape's kept program. N the first argument.
use chat_autoparser::{Chat, ChatRequest, ChatTemplate, TemplateConfig};
use serde_json::json;

fn request(name: &str) -> ChatRequest {
    let tool = json!({"type": "function", "function": {"name": name,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}});
    ChatRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(vec![tool])
}

#[inline(never)]
fn probe_renamed(prepared: &[chat_autoparser::Prepared]) {
    for p in prepared {
        std::hint::black_box(p.parser().ok());
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/hermes-think.jinja");
    let source = std::fs::read_to_string(path).expect("shipped template");
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
    let chat = Chat::new(template).expect("analyses");
    chat.prepare(&request("get_weather"))
        .parser()
        .expect("builds");
    let prepared: Vec<_> = (0..n)
        .map(|i| chat.prepare(&request(&format!("tool_{i}"))))
        .collect();
    probe_renamed(&prepared);
}
