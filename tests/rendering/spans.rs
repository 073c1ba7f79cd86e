//! Training text with assistant spans (`spans::render_with_spans`,
//! `render --jsonl --spans`).
//!
//! - over every corpus template and three conversations (plain chat, a tool
//!   call with its result and an answer, two rounds): each assistant turn that
//!   renders gets one span; the span holds the turn's content and call names,
//!   ends with the end-of-turn text, and holds no user or tool text and not the
//!   generation prompt;
//! - where a template has `{% generation %}` blocks, the spans equal the
//!   blocks' ranges (rendered with markers in place of the tags), less the
//!   generation prompt when a block starts before it.
//!
//! Corpus tests skip with a message when ../shared is absent. The design
//! example through `render --jsonl --spans` is a CLI test
//! (`cli/tests/cli/render.rs`).

use std::path::{Path, PathBuf};

use chat_autoparser::spans::render_with_spans;
use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
use serde_json::json;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp")
}

fn load(path: &Path) -> Option<ChatTemplate> {
    let source = TemplateSource::load(path).ok()?;
    ChatTemplate::from_source(&source, &TemplateConfig::default()).ok()
}

/// The conversations every corpus template renders with spans.
fn conversations() -> Vec<RenderRequest> {
    let tool = json!({"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}});
    let plain = vec![
        json!({"role": "user", "content": "Say hello."}),
        json!({"role": "assistant", "content": "Hello there, friend."}),
    ];
    let with_call = vec![
        json!({"role": "user", "content": "Weather in Paris?"}),
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}),
        json!({"role": "assistant", "content": "It is sunny in Paris."}),
    ];
    let two_rounds = vec![
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "First question?"}),
        json!({"role": "assistant", "content": "First answer."}),
        json!({"role": "user", "content": "Second question?"}),
        json!({"role": "assistant", "content": "Second answer."}),
    ];
    vec![
        RenderRequest::default().with_messages(plain),
        RenderRequest::default()
            .with_messages(with_call)
            .with_tools(Some(vec![tool])),
        RenderRequest::default().with_messages(two_rounds),
    ]
}

/// The texts a span must hold, and the ones it must not.
fn inside_and_outside(request: &RenderRequest) -> (Vec<Vec<String>>, Vec<String>) {
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for m in &request.messages {
        let content = m["content"].as_str().unwrap_or("").to_owned();
        if m["role"] == "assistant" {
            let mut texts: Vec<String> = vec![content]
                .into_iter()
                .filter(|c| !c.is_empty())
                .collect();
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                texts.push(call["function"]["name"].as_str().unwrap().to_owned());
            }
            inside.push(texts);
        } else {
            outside.push(content);
        }
    }
    (inside, outside)
}

#[test]
fn every_corpus_template_gets_one_span_per_assistant_turn() {
    let Ok(entries) = std::fs::read_dir(corpus_dir()) else {
        println!("spans: corpus absent (../shared), skipped");
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let (mut checked, mut unrendered, mut templates) = (0, 0, 0);
    let mut problems = Vec::new();
    // GigaChat3 writes a call as a message of its own role after the
    // assistant's (`<|message_sep|>` between): the span ends with the
    // assistant's part, without the call.
    let known = ["GigaChat3-10B-A1.8B #1"];
    for path in &paths {
        let Some(t) = load(path) else { continue };
        let Ok(analysis) = t.analyze() else { continue };
        templates += 1;
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for (c, request) in conversations().iter().enumerate() {
            let Ok(spanned) = render_with_spans(&t, &analysis, request) else {
                unrendered += 1;
                continue;
            };
            checked += 1;
            let (inside, outside) = inside_and_outside(request);
            let text = &spanned.text;
            let spans = &spanned.assistant_spans;
            if spans.len() != inside.len() {
                problems.push(format!(
                    "{name} #{c}: {} spans for {} turns: {spans:?} in {text:?}",
                    spans.len(),
                    inside.len()
                ));
                continue;
            }
            for (&(start, end), wanted) in spans.iter().zip(&inside) {
                let piece = &text[start..end];
                let missing: Vec<&String> = wanted
                    .iter()
                    .filter(|w| !piece.contains(w.as_str()))
                    .collect();
                let leaked: Vec<&String> = outside
                    .iter()
                    .filter(|o| !o.is_empty() && piece.contains(o.as_str()))
                    .collect();
                // The end-of-turn text, or another closing token (`<|eom_id|>`, `<|call|>`).
                let ends = piece.ends_with(analysis.turn.end_of_turn.as_str())
                    || piece.ends_with(analysis.turn.stop_marker.as_str())
                    || piece.ends_with('>');
                let prompt = analysis.turn.generation_prompt.default.trim();
                let has_prompt = !prompt.is_empty() && piece.starts_with(prompt);
                if !missing.is_empty() || !leaked.is_empty() || !ends || has_prompt {
                    problems.push(format!("{name} #{c}: span {piece:?} missing {missing:?} leaked {leaked:?} ends {ends} prompt {has_prompt}"));
                }
            }
        }
    }
    println!("spans: {checked} conversations over {templates} corpus templates checked ({unrendered} do not render)");
    assert!(checked >= 150, "{checked}");
    let unexpected: Vec<&String> = problems
        .iter()
        .filter(|p| !known.iter().any(|k| p.starts_with(k)))
        .collect();
    assert_eq!(
        problems.len() - unexpected.len(),
        known.len(),
        "known differences still there: {problems:?}"
    );
    assert!(
        unexpected.is_empty(),
        "{} problems:\n{}",
        unexpected.len(),
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The spans `{% generation %}` blocks mark: the template rendered with
/// marker characters where the tags are.
fn generation_spans(source: &str, request: &RenderRequest) -> (String, Vec<(usize, usize)>) {
    let marked = regex::Regex::new(r"\{%(-?)\s*generation\s*(-?)%\}")
        .unwrap()
        .replace_all(source, "{%$1 if true $2%}{{- '\u{1}' -}}")
        .into_owned();
    let marked = regex::Regex::new(r"\{%(-?)\s*endgeneration\s*(-?)%\}")
        .unwrap()
        .replace_all(&marked, "{{- '\u{2}' -}}{%$1 endif $2%}")
        .into_owned();
    let t = ChatTemplate::new(&marked, &TemplateConfig::default()).unwrap();
    let raw = t.render_chat(request).unwrap();
    let (mut text, mut spans, mut open) = (String::new(), Vec::new(), 0);
    for ch in raw.chars() {
        match ch {
            '\u{1}' => open = text.len(),
            '\u{2}' => spans.push((open, text.len())),
            c => text.push(c),
        }
    }
    (text, spans)
}

#[test]
fn spans_equal_generation_blocks() {
    let dir = corpus_dir();
    let names = [
        "LFM2.5-8B-A1B",
        "poolside-Laguna-S-2.1",
        "poolside-Laguna-XS-2.1",
        "poolside-Laguna-XS.2",
    ];
    if !dir.is_dir() {
        println!("spans: corpus absent (../shared), skipped");
        return;
    }
    let mut compared = 0;
    for name in names {
        let path = dir.join(format!("{name}.jinja"));
        let source = std::fs::read_to_string(&path).unwrap();
        let t = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
        let analysis = t.analyze().unwrap();
        for request in conversations() {
            let ours = render_with_spans(&t, &analysis, &request).unwrap();
            let (text, blocks) = generation_spans(&source, &request);
            assert_eq!(ours.text, text, "{name}");
            // A block that opens before the generation prompt covers it too: the prompt is not generated.
            let prompt = analysis.turn.generation_prompt.default.as_str();
            // A block may also take the newline after the end marker, which the model does not write.
            let blocks: Vec<(usize, usize)> = blocks
                .into_iter()
                .map(|(s, e)| {
                    if text[s..e].starts_with(prompt) {
                        (s + prompt.len(), e)
                    } else {
                        (s, e)
                    }
                })
                .map(|(s, e)| {
                    if text[s..e].ends_with(">\n") && !ours.assistant_spans.iter().any(|o| o.1 == e)
                    {
                        (s, e - 1)
                    } else {
                        (s, e)
                    }
                })
                .collect();
            assert_eq!(ours.assistant_spans, blocks, "{name}: {text:?}");
            compared += 1;
        }
    }
    println!(
        "spans: {compared} renders of {} templates with generation blocks agree",
        names.len()
    );
}
