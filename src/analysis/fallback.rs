//! Fallback tool-call dialects, for templates that never render an
//! assistant's tool calls: those that take `tools` (all dialects) and those
//! that know nothing of tools (Hermes, the dialect `render_chat`'s polyfill
//! asks their models for).
//!
//! Such a template lists the tools in its system prompt and leaves the call
//! syntax to the model's training, so the analysis has no call to read
//! (T1: "not rendered"). Models behind such templates write one of a few
//! public formats. Each is written here as a tiny chat template of our own
//! that does render calls; the analysis reads each once, the same way it
//! reads any template, and the silent template's [`Analysis::fallback_tools`]
//! carries the resulting formats. Parser and grammar accept any of them.
//!
//! The dialects, and why each is on the list:
//! - `python-list`: `<|tool_call_start|>[f(a="x", n=1), g()]<|tool_call_end|>`,
//!   Python calls with keyword arguments in a list between tool-call tokens
//!   (LFM2-style models; the pythonic format of Llama-3.2 inside markers);
//! - `hermes`: `<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>`
//!   per call, the most widely trained JSON format (Hermes, Qwen).
//!
//! Keep the list short: every dialect's opening marker stops content text,
//! so each one added is text a silent template's model cannot write plainly.
//!
//! Invariants: the dialect templates are analysed without fallbacks (they
//! do not read `tools`, which would ask for the Hermes one: a re-entrance
//! into the `OnceLock`);
//! nothing here or downstream keys on a model: the choice depends only on
//! what the template renders.
//!
//! [`Analysis::fallback_tools`]: super::Analysis::fallback_tools

use std::sync::OnceLock;

use super::model::ToolFormat;
use super::outputs::Outputs;
use crate::template::{ChatTemplate, TemplateConfig};

/// A fallback dialect: its name and a template rendering calls in it.
pub struct Dialect {
    pub name: &'static str,
    pub template: &'static str,
}

/// ChatML turns; the calls a Python list between tool-call tokens. Values are
/// written as JSON literals: the analysis only needs strings and numbers, and
/// the parser reads Python literals (`True`, `None`) as well.
const PYTHON_LIST: &str = r#"
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' -}}
{%- if message.content is string -%}{{- message.content -}}{%- endif -%}
{%- if message.tool_calls -%}
{{- '<|tool_call_start|>[' -}}
{%- for call in message.tool_calls -%}
{{- call.function.name + '(' -}}
{%- for key, value in call.function.arguments.items() -%}
{{- key + '=' -}}{{- value | tojson -}}{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- ')' -}}{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- ']<|tool_call_end|>' -}}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"#;

/// ChatML turns; each call a JSON object between `<tool_call>` lines, calls
/// (and content before them) separated by a newline.
const HERMES: &str = r#"
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' -}}
{%- if message.content is string -%}{{- message.content -}}{%- endif -%}
{%- for call in message.tool_calls or [] -%}
{%- if message.content or not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n{"name": ' -}}{{- call.function.name | tojson -}}
{{- ', "arguments": ' -}}{{- call.function.arguments | tojson -}}{{- '}\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"#;

/// The dialects, in the order parser and grammar try them.
pub const DIALECTS: &[Dialect] = &[
    Dialect {
        name: "python-list",
        template: PYTHON_LIST,
    },
    Dialect {
        name: "hermes",
        template: HERMES,
    },
];

/// Each dialect's tool format, analysed once per process.
pub fn formats() -> &'static [ToolFormat] {
    static FORMATS: OnceLock<Vec<ToolFormat>> = OnceLock::new();
    FORMATS.get_or_init(|| DIALECTS.iter().map(|d| format_of(d.template)).collect())
}

/// The name of the fallback dialect written in `format`, if it is one.
pub fn dialect_name(format: &ToolFormat) -> Option<&'static str> {
    formats()
        .iter()
        .position(|f| f == format)
        .map(|i| DIALECTS[i].name)
}

/// The tool format the analysis reads from a dialect template. The templates
/// are ours and tested to render calls, so a failure is a bug here.
fn format_of(source: &str) -> ToolFormat {
    let config = TemplateConfig::default();
    // Analysed once per process, whichever analysis asks first: never on
    // that analysis's fuel.
    let _apart = crate::template::RunFuel::apart(&config.limits);
    let template = ChatTemplate::new(source, &config).expect("fallback dialect templates compile");
    let analysis =
        super::analyze_with(&template, false).expect("fallback dialect templates analyse");
    analysis
        .tools
        .expect("fallback dialect templates render tool calls")
}

/// The fallback formats for a template: all dialects when it takes `tools`
/// but renders a call turn with no call in it; the Hermes dialect alone when
/// its prompt never shows the tools (it does not read `tools`, or reads it
/// and lists nothing: vLLM's Llama-4 pythonic example lists only
/// `custom_tools`), whether or not it renders calls, because a server's
/// prompt for it (`render_chat`'s polyfill) lists the tools and asks for
/// Hermes calls, so that is what its model may answer in (a template that
/// renders DeepSeek-V3 calls but drops `tools`); else none.
pub(super) fn for_template(outputs: &Outputs, variables: &[String]) -> Vec<ToolFormat> {
    let reads_tools = variables.iter().any(|v| v == "tools");
    // The polyfill's own test (`template::capabilities`): the prompt with
    // tools names the probe tool.
    let takes_tools = reads_tools && outputs.instructions.contains(super::probe::NAME);
    match (takes_tools, outputs.calls_silent) {
        (true, true) => formats().to_vec(),
        (false, _) => formats()
            .iter()
            .zip(DIALECTS)
            .filter(|(_, d)| d.name == POLYFILL_DIALECT)
            .map(|(f, _)| f.clone())
            .collect(),
        _ => Vec::new(),
    }
}

/// The dialect `render_chat`'s polyfill asks a model for (`template/polyfill.rs`).
const POLYFILL_DIALECT: &str = "hermes";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{ArgumentsSlot, NameSlot, ToolClass};

    #[test]
    fn python_list_is_a_bracketed_list_of_python_calls() {
        let f = &formats()[0];
        assert_eq!(f.class, ToolClass::PythonCall);
        assert_eq!(
            (f.section_start.as_str(), f.section_end.as_str()),
            ("<|tool_call_start|>[", "]<|tool_call_end|>")
        );
        assert_eq!(f.call_separator, ", ");
        assert!(f.parallel);
        assert_eq!(
            f.name,
            NameSlot::Tagged {
                prefix: String::new(),
                suffix: "(".into()
            }
        );
        assert_eq!(
            f.arguments,
            ArgumentsSlot::Python {
                raw_strings: false,
                bare_strings: false
            }
        );
    }

    #[test]
    fn hermes_is_json_between_tool_call_tags() {
        let f = &formats()[1];
        assert_eq!(f.class, ToolClass::JsonNative);
        assert_eq!(f.call_start.trim(), "<tool_call>");
        assert_eq!(f.call_end.trim(), "</tool_call>");
        assert!(f.parallel);
        assert_eq!(
            f.name,
            NameSlot::JsonField {
                path: vec!["name".into()]
            }
        );
        assert_eq!(
            f.arguments,
            ArgumentsSlot::Json {
                path: vec!["arguments".into()],
                as_string: false,
                before_name: false,
            }
        );
    }

    #[test]
    fn dialect_templates_do_not_read_tools() {
        for d in DIALECTS {
            let t = ChatTemplate::new(d.template, &TemplateConfig::default()).unwrap();
            assert!(!t.variables().iter().any(|v| v == "tools"), "{}", d.name);
        }
    }
}
