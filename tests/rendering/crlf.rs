//! Templates saved with `\r\n` (or lone `\r`) line endings render as jinja2
//! renders them: jinja2 normalises the template's newlines to `\n` before
//! lexing, so the output has `\n` where the file had `\r\n`. Checked by
//! exact text, and against Python's jinja2 (set up as transformers sets it
//! up) when an interpreter with jinja2 is found.

use crate::common;

use chat_autoparser::{ChatTemplate, RenderRequest, TemplateConfig};
use common::reference::{python_with_jinja2, render_all, Outcome};
use serde_json::json;

/// The shipped Hermes template with Windows line endings, plus a data line
/// ending in a lone `\r` and a string literal holding a raw `\r\n`.
fn crlf_source() -> String {
    let unix = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/templates/hermes-think.jinja"
    ))
    .unwrap();
    format!(
        "{{{{- 'A\r\nB' -}}}}\rold mac\r\n{}",
        unix.replace('\n', "\r\n")
    )
}

fn request() -> RenderRequest {
    RenderRequest::default()
        .with_messages(vec![
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "line1\r\nline2"}),
        ])
        .with_add_generation_prompt(true)
}

#[test]
fn crlf_templates_render_with_unix_newlines() {
    let source = crlf_source();
    let crlf = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .render(&request())
        .unwrap();
    let unix = ChatTemplate::new(
        &source.replace("\r\n", "\n").replace('\r', "\n"),
        &TemplateConfig::default(),
    )
    .unwrap()
    .render(&request())
    .unwrap();
    assert_eq!(crlf, unix);
    // The literal's raw \r\n is a newline too; `-}}` trims the lone \r after it.
    assert!(
        crlf.starts_with("A\nBold mac<|im_start|>system\n"),
        "{crlf:?}"
    );
    // The caller's text is data, not template: its \r\n stays.
    assert!(crlf.contains("line1\r\nline2"), "{crlf:?}");
}

#[test]
fn crlf_templates_match_jinja2() {
    let Some(python) = python_with_jinja2() else {
        println!("crlf_templates: Python comparison skipped (no python3 with jinja2; set CHAT_AUTOPARSER_PYTHON)");
        return;
    };
    let source = crlf_source();
    let r = request();
    let context = json!({"messages": r.messages, "tools": null, "add_generation_prompt": true, "bos_token": "", "eos_token": ""});
    let outcomes = render_all(&python, &[(source.as_str(), context)], 0);
    let ours = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .render(&r)
        .unwrap();
    assert_eq!(outcomes, vec![Outcome::Rendered(ours)]);
}
