//! Arbitrary text as a chat template: compile, render, analyse and lint it
//! with the shipping bounds. Nothing may panic or abort; time and memory are
//! bounded by libFuzzer's `-timeout` and `-rss_limit_mb` (see
//! docs/reliability.md for the flags the runs use).

#![no_main]

use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig};
use chat_autoparser_fuzz::tools;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let Ok(template) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
        return;
    };
    let call = json!({"id": "call0", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}});
    let request = RenderRequest::default().with_messages(vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Weather in Paris?"}),
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            json!({"role": "tool", "tool_call_id": "call0", "content": "Sunny"}),
        ]).with_tools(Some(tools())).with_add_generation_prompt(true);
    let _ = template.render(&request);
    let _ = template.variables();
    let _ = template.analyze();
    let _ = template.lint();
    let _ = template.with_polyfills().render(&request);
});
