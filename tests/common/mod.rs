//! Fixtures shared by the test binaries: each binary (`tests/<concern>/main.rs`)
//! includes this module once, and its test modules use the parts they need.
#![allow(dead_code)] // Each binary uses the part it needs.

pub mod child;
pub mod coverage;
pub mod deviations;
pub mod elements_template;
pub mod llguidance;
pub mod mutations;
pub mod outline_sample;
pub mod prompted;
pub mod reference;
pub mod request_options;
pub mod roundtrip;
pub mod schemas;
pub mod streaming;
pub mod turns;

/// Corpus template `name` (`../shared/corpus/llamacpp/NAME.jinja`), or
/// `None` with a message when the corpus is absent.
pub fn corpus_template(name: &str) -> Option<chat_autoparser::ChatTemplate> {
    let path = format!(
        "{}/../shared/corpus/llamacpp/{name}.jinja",
        env!("CARGO_MANIFEST_DIR")
    );
    let Ok(source) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {path} is absent");
        return None;
    };
    let config = chat_autoparser::TemplateConfig::default();
    Some(chat_autoparser::ChatTemplate::new(&source, &config).expect("corpus templates compile"))
}

/// Shipped template `name` (`templates/NAME.jinja`) and its analysis.
pub fn shipped_template(name: &str) -> (chat_autoparser::ChatTemplate, chat_autoparser::Analysis) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates")
        .join(format!("{name}.jinja"));
    let source = chat_autoparser::TemplateSource::load(&path).expect("shipped templates load");
    let config = chat_autoparser::TemplateConfig::default();
    let template = chat_autoparser::ChatTemplate::from_source(&source, &config)
        .expect("shipped templates compile");
    let analysis = template.analyze().expect("shipped templates analyze");
    (template, analysis)
}

/// The parser of a shipped template for one `get_weather(city)` tool: the
/// request the long-output tests parse.
pub fn weather_parser(name: &str) -> chat_autoparser::OutputParser {
    let (_, analysis) = shipped_template(name);
    let tools = vec![
        serde_json::json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}),
    ];
    let options = chat_autoparser::Options::default().with_tools(tools);
    analysis
        .parser(&chat_autoparser::ParserConfig::from(options))
        .expect("shipped templates build a parser")
}

/// Where the first trigger of a lazy grammar fires in `text`.
pub fn first_trigger(g: &chat_autoparser::Gbnf, text: &str) -> Option<usize> {
    use chat_autoparser::TriggerKind;
    g.triggers
        .iter()
        .filter_map(|t| match t.kind {
            TriggerKind::Word | TriggerKind::Token => text.find(&t.value),
            TriggerKind::Pattern | TriggerKind::PatternFull => {
                let anchored = match t.kind {
                    TriggerKind::PatternFull => format!("^(?s:{})$", t.value),
                    _ => t.value.clone(),
                };
                let caps = regex::Regex::new(&anchored).ok()?.captures(text)?;
                Some(caps.get(1).or(caps.get(0))?.start())
            }
            _ => None,
        })
        .min()
}
