//! Requests as servers receive them, through `render_chat`:
//!
//! - OpenAI leaves a tool's `description` and `parameters` and a message's
//!   `content` optional: on every corpus template that renders a described
//!   tool, the same tool without them renders too (and exactly as the tool
//!   with an empty description and empty object schema), while `render`
//!   stays the template as written (`RenderRequest::with_tool_defaults`
//!   fills the tools for it);
//! - `auto` tool formatting keeps a template's own tools block when the
//!   conversation needs nothing it lacks (templates that list tools but
//!   never replay calls render a first turn exactly as written);
//! - a serialized `Analysis` of another `format_version` is refused.
//!
//! Corpus tests skip with a message when ../shared is absent.

use std::path::{Path, PathBuf};

use chat_autoparser::{Analysis, ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
use serde_json::{json, Value as Json};

fn corpus() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    Some(paths)
}

fn load(path: &Path) -> Option<ChatTemplate> {
    let source = TemplateSource::load(path).ok()?;
    ChatTemplate::from_source(&source, &TemplateConfig::default()).ok()
}

fn request(tools: Json) -> RenderRequest {
    RenderRequest::default()
        .with_messages(vec![
            json!({"role": "user", "content": "Weather in Paris?"}),
        ])
        .with_tools(Some(vec![tools]))
        .with_add_generation_prompt(true)
}

#[test]
fn tools_without_description_or_parameters_render_on_the_corpus() {
    let Some(paths) = corpus() else {
        println!("server_requests: corpus absent (../shared), skipped");
        return;
    };
    let (mut checked, mut fixed_by_filling) = (0, Vec::new());
    for path in &paths {
        let Some(t) = load(path) else { continue };
        let full = request(
            json!({"type": "function", "function": {"name": "get_weather", "description": "",
            "parameters": {"type": "object", "properties": {}}}}),
        );
        let Ok(expected) = t.render_chat(&full) else {
            continue;
        };
        let bare = request(json!({"type": "function", "function": {"name": "get_weather"}}));
        let got = t
            .render_chat(&bare)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(got, expected, "{}", path.display());
        // The template as written, given the request's tools filled.
        assert_eq!(
            t.render(&bare.clone().with_tool_defaults()).ok(),
            t.render(&full).ok(),
            "{}",
            path.display()
        );
        if t.render(&bare).is_err() {
            fixed_by_filling.push(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
        checked += 1;
    }
    println!(
        "server_requests: {checked} corpus templates render a bare tool; {} only after filling: {}",
        fixed_by_filling.len(),
        fixed_by_filling.join(", ")
    );
    assert!(checked >= 50, "{checked}");
    assert!(
        !fixed_by_filling.is_empty(),
        "some templates fail on a bare tool as written"
    );
}

#[test]
fn a_message_without_content_renders() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    let t = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let missing = RenderRequest::default().with_messages(vec![json!({"role": "user"})]);
    let empty =
        RenderRequest::default().with_messages(vec![json!({"role": "user", "content": ""})]);
    assert_eq!(t.render_chat(&missing).unwrap(), t.render(&empty).unwrap());
}

#[test]
fn auto_keeps_a_native_tools_block_when_nothing_is_missing() {
    let Some(paths) = corpus() else {
        println!("server_requests: corpus absent (../shared), skipped");
        return;
    };
    let tool = json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let mut kept = Vec::new();
    for path in &paths {
        let Some(t) = load(path) else { continue };
        let caps = t.capabilities();
        if !(caps.renders && caps.tools) || caps.tool_calls {
            continue;
        }
        // A first turn: tools, no call history. The template's own block, as written.
        let first = request(tool.clone());
        assert_eq!(
            t.render_chat(&first).unwrap(),
            t.render(&first).unwrap(),
            "{}",
            path.display()
        );
        kept.push(path.file_stem().unwrap().to_string_lossy().into_owned());
    }
    println!(
        "server_requests: native tools block kept on a first turn by {}: {}",
        kept.len(),
        kept.join(", ")
    );
    // The corpus' templates that list tools but never replay calls (its SmolLM3 has no tools branch at all).
    assert_eq!(
        kept,
        [
            "LFM2-8B-A1B",
            "LFM2.5-Instruct",
            "NVIDIA-Nemotron-Nano-v2",
            "ibm-granite-granite-3.3-2B-Instruct"
        ]
    );
}

#[test]
fn an_analysis_of_another_format_version_is_refused() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let mut value = serde_json::to_value(&analysis).unwrap();
    assert_eq!(
        serde_json::from_value::<Analysis>(value.clone()).unwrap(),
        analysis
    );
    value["format_version"] = json!(analysis.format_version + 1);
    let err = serde_json::from_value::<Analysis>(value)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "analysis format_version {} is not this library's ({}): analyse the template again",
            analysis.format_version + 1,
            analysis.format_version
        )
    );
}
