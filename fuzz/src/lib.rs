//! What the fuzz targets share: the shipped templates, analysed once, and
//! the checks each target asserts.
//!
//! Invariant: a check fails only by panicking with a message that names the
//! template and says what broke, so libFuzzer saves the input as a crash and
//! the message says which property it broke.

use chat_autoparser::{Options, Policy};
use std::sync::OnceLock;

use chat_autoparser::{
    Analysis, AssistantMessage, ChatTemplate, OutputParser, ParserConfig, RenderRequest,
    TemplateConfig,
};
use serde_json::{json, Value};

/// One shipped template (`templates/*.jinja`), analysed, with its parser
/// under each output-policy preset.
pub struct Shipped {
    pub name: String,
    pub template: ChatTemplate,
    pub analysis: Analysis,
    /// The default (`lossless`): nothing the model wrote is lost.
    pub parser: OutputParser,
    /// `compatible`: drops, salvages and reads calls flagged, the paths
    /// `lossless` never takes.
    pub compatible: OutputParser,
}

/// The tools every fixture is built with: every JSON type among the
/// parameters, so the parser's argument rules all see fuzzed text.
pub fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object",
            "properties": {"at": {"type": "number"}, "loud": {"type": "boolean"}, "unit": {"enum": ["s", "min"]},
                "labels": {"type": "array", "items": {"type": "string"}}, "extra": {"type": "object"}, "note": {"type": ["string", "null"]}},
            "required": ["at"]}}}),
    ]
}

/// Every template in the repository's `templates/` that compiles and
/// analyses, sorted by name (so an input's first byte picks the same one
/// from run to run).
pub fn shipped() -> &'static [Shipped] {
    static CELL: OnceLock<Vec<Shipped>> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../templates");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("templates/ is beside fuzz/")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
            .collect();
        paths.sort();
        paths.iter().filter_map(|p| load(p)).collect()
    })
}

fn load(path: &std::path::Path) -> Option<Shipped> {
    let source = std::fs::read_to_string(path).ok()?;
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).ok()?;
    let analysis = template.analyze().ok()?;
    let user = json!({"role": "user", "content": "Weather in Paris?"});
    let request = RenderRequest::default().with_messages(chat_autoparser::prompt::template_messages(&analysis, &[user])).with_tools(Some(tools())).with_add_generation_prompt(true);
    let prompt = template.render(&request).ok();
    let config = ParserConfig::from(Options::default().with_tools(tools()).with_prompt(prompt));
    let parser = analysis.parser(&config).ok()?;
    let compatible = analysis.parser(&config.with_policy(Policy::compatible())).ok()?;
    let name = path.file_stem()?.to_string_lossy().into_owned();
    Some(Shipped {
        name,
        template,
        analysis,
        parser,
        compatible,
    })
}

/// `text` cut into chunks of the given sizes (in bytes, moved forward to a
/// character boundary), cycling through `sizes`; one chunk when empty.
pub fn chunks<'t>(text: &'t str, sizes: &[usize]) -> Vec<&'t str> {
    if sizes.is_empty() {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= text.len() {
            break;
        }
        let mut end = (at + size.max(&1)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[at..end]);
        at = end;
    }
    out
}

/// Streaming `output` in `chunks` through `parser` (one of `s`'s) gives
/// the batch message.
pub fn assert_streaming_equals_batch(
    s: &Shipped,
    parser: &OutputParser,
    output: &str,
    chunks: &[&str],
) -> AssistantMessage {
    let batch = parser.parse(output);
    let mut stream = parser.stream();
    for chunk in chunks {
        stream.push(chunk);
    }
    stream.finish();
    let streamed = stream.message();
    assert_eq!(
        streamed, batch,
        "[{}] streaming differs from batch on {output:?} in chunks {chunks:?}",
        s.name
    );
    batch
}

/// In a final message every call's `arguments` is JSON text.
pub fn assert_arguments_are_json(s: &Shipped, output: &str, message: &AssistantMessage) {
    for call in &message.tool_calls {
        let args = &call.function.arguments;
        assert!(
            serde_json::from_str::<Value>(args).is_ok(),
            "[{}] final call {:?} has arguments that are not JSON: {args:?}\n  output: {output:?}",
            s.name,
            call.function.name
        );
    }
}
