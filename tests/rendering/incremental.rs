//! Incremental rendering against full rendering.
//!
//! For every corpus template (and every shipped one), a 20-message
//! conversation is pushed one message at a time through `IncrementalRenderer`:
//! each delta applied to the previous text must equal the full render of that
//! prefix; on templates where `is_prefix_stable` holds for the conversation,
//! every delta must be a pure append. Corpus templates are skipped with a
//! message when `../shared` is absent.

use std::path::{Path, PathBuf};

use chat_autoparser::template::{IncrementalRenderer, ToolFormatting};
use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig, TemplateSource};
use serde_json::{json, Value as Json};

fn templates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("templates")];
    let corpus = root.join("../shared/corpus/llamacpp");
    if corpus.is_dir() {
        dirs.push(corpus);
    } else {
        println!(
            "skipped the corpus: no {} (../shared is absent)",
            corpus.display()
        );
    }
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(d)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
        })
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    files.sort();
    files
}

/// 20 messages: a system message, then user and assistant turns, one with reasoning.
fn conversation() -> Vec<Json> {
    let mut messages = vec![json!({"role": "system", "content": "You are terse."})];
    for i in 0..19 {
        messages.push(if i % 2 == 0 {
            json!({"role": "user", "content": format!("Question {i}?")})
        } else if i == 3 {
            json!({"role": "assistant", "content": format!("Answer {i}."), "reasoning_content": "Think."})
        } else {
            json!({"role": "assistant", "content": format!("Answer {i}.")})
        });
    }
    messages
}

#[test]
fn incremental_equals_full_on_every_prefix() {
    let messages = conversation();
    assert_eq!(messages.len(), 20);
    let (mut stable, mut total) = (0, 0);
    for path in templates() {
        let source = TemplateSource::load(&path).unwrap();
        let Ok(template) = ChatTemplate::from_source(&source, &TemplateConfig::default()) else {
            continue;
        };
        let request = RenderRequest::default().with_messages(messages.clone());
        let Ok(is_stable) = template.is_prefix_stable(&request) else {
            continue;
        };
        total += 1;
        stable += usize::from(is_stable);
        // From the first message: an empty conversation may render default
        // text (a default system prompt) that the first message replaces.
        let mut renderer = IncrementalRenderer::new(
            &template,
            RenderRequest::default().with_messages(messages[..1].to_vec()),
        );
        let mut previous_ok = template
            .render_chat(&RenderRequest::default().with_messages(messages[..1].to_vec()))
            .is_ok();
        for n in 2..=messages.len() {
            let previous = renderer.text().to_owned();
            let pushed = renderer.push(messages[n - 1].clone());
            let full = template
                .render_chat(&RenderRequest::default().with_messages(messages[..n].to_vec()));
            match (pushed, full) {
                (Ok(delta), Ok(full)) => {
                    assert_eq!(
                        delta.apply(&previous),
                        full,
                        "{}: prefix {n}",
                        path.display()
                    );
                    assert_eq!(renderer.text(), full);
                    // A prefix the template refused is no cache state: the
                    // next delta is relative to the last accepted one.
                    if is_stable && previous_ok {
                        assert!(
                            delta.is_append(&previous),
                            "{}: prefix {n} is not an append",
                            path.display()
                        );
                    }
                    previous_ok = true;
                }
                (Err(_), Err(_)) => previous_ok = false,
                (a, b) => panic!(
                    "{}: prefix {n}: incremental {:?} vs full {:?}",
                    path.display(),
                    a.is_ok(),
                    b.is_ok()
                ),
            }
        }
    }
    println!("incremental == full on every prefix of a 20-message conversation: {total} templates, {stable} prefix-stable");
    assert!(total > 0);
}

#[test]
fn stable_template_is_reported_stable() {
    let source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}";
    let template = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    // Native: the probes would find no system role in the second template
    // and merge the system text into the user turn.
    let request = RenderRequest::default()
        .with_messages(conversation())
        .with_tool_formatting(ToolFormatting::Native);
    assert!(template.is_prefix_stable(&request).unwrap());
    let last = source.replace("{{ m.content }}", "{{ m.content if loop.last else '' }}");
    let template = ChatTemplate::new(&last, &TemplateConfig::default()).unwrap();
    assert_eq!(template.first_unstable_prefix(&request).unwrap(), Some(2));
}
