//! What the analysis found, for `check`'s report, and where each finding
//! came from: the rendered probe conversations (the template writes it),
//! the template's prose (its instructions show an example call or name the
//! reasoning markers, `Analysis::prose`), or the template's instructions
//! alone (it lists tools in prose but renders no call and shows none, so the
//! format is one of the fallback dialects a model behind such a template is
//! assumed to write).
//!
//! Invariant: a pure summary of the [`Analysis`] and the template's
//! capabilities; it adds no detection of its own.

use serde::Serialize;

use crate::analysis::{
    fallback_dialect_name, Analysis, ArgumentsSlot, ComparisonStatus, NameSlot, ReasoningMode,
    ToolClass, ToolFormat,
};
use crate::template::Capabilities;

/// Where a finding came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Source {
    /// Read off the template's renders of the probe conversations.
    Rendered,
    /// Not rendered: assumed from the template's instructions (fallback dialects).
    Instructions,
    /// Not rendered: named by the template's instruction text (an example
    /// call, quoted reasoning phrases).
    Prose,
    /// Nothing found.
    None,
}

/// The reasoning markers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReasoningFound {
    /// How reasoning is marked.
    pub mode: ReasoningMode,
    /// Opening marker.
    pub start: String,
    /// Closing marker.
    pub end: String,
    /// Where it came from.
    pub source: Source,
}

/// One tool-call format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolsFound {
    /// The format family.
    pub class: ToolClass,
    /// The fallback dialect's name, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialect: Option<&'static str>,
    /// Text before the first call.
    pub section_start: String,
    /// Text before each call.
    pub call_start: String,
    /// Text after each call.
    pub call_end: String,
    /// The example call the format was read from, when its source is `prose`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    /// How the name is written (`json-field`, `json-key`, `tagged`).
    pub name: &'static str,
    /// How the arguments are written (`json`, `tagged`, `python`).
    pub arguments: &'static str,
    /// Two calls in one turn render.
    pub parallel: bool,
    /// Where it came from.
    pub source: Source,
}

/// What the analysis found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Detection {
    /// The token a model emits to stop.
    pub stop_marker: String,
    /// Reasoning markers.
    pub reasoning: ReasoningFound,
    /// The template variable that switches thinking, when one does.
    pub thinking_switch: Option<String>,
    /// Tool-call formats the parser reads: the template's own, or its fallback dialects.
    pub tool_formats: Vec<ToolsFound>,
    /// Comparisons the template could not render, with why (`T2: ...`).
    pub unsupported_comparisons: Vec<String>,
    /// Marker tokens a tokenizer must keep whole.
    pub preserved_tokens: Vec<String>,
}

/// The summary of `analysis`.
pub fn summarize(analysis: &Analysis, caps: &Capabilities) -> Detection {
    let r = &analysis.reasoning;
    let reasoning = ReasoningFound {
        mode: r.mode,
        start: r.start.clone(),
        end: r.end.clone(),
        source: match r.mode {
            ReasoningMode::None => Source::None,
            _ if analysis.prose.reasoning => Source::Prose,
            _ => Source::Rendered,
        },
    };
    let own = analysis.tools.iter().map(|t| tools(t, Source::Rendered));
    // The format an example call shows is the first fallback (see `Prose::tool_call`).
    let example = analysis.prose.tool_call.as_ref();
    let assumed = analysis.fallback_tools.iter().enumerate().map(|(i, t)| {
        let mut found = tools(t, Source::Instructions);
        if let (0, Some(example)) = (i, example) {
            found.source = Source::Prose;
            found.example = Some(example.clone());
        }
        found
    });
    let unsupported_comparisons = analysis
        .comparisons
        .iter()
        .filter_map(|c| match &c.status {
            ComparisonStatus::Unsupported(why) => Some(format!("{}: {why}", c.name)),
            _ => None,
        })
        .collect();
    Detection {
        stop_marker: analysis.turn.stop_marker.clone(),
        reasoning,
        thinking_switch: caps.thinking_toggle.clone(),
        tool_formats: own.chain(assumed).collect(),
        unsupported_comparisons,
        preserved_tokens: analysis.preserved_tokens.clone(),
    }
}

fn tools(t: &ToolFormat, source: Source) -> ToolsFound {
    ToolsFound {
        class: t.class,
        dialect: match source {
            Source::Instructions => fallback_dialect_name(t),
            _ => None,
        },
        section_start: t.section_start.clone(),
        call_start: t.call_start.clone(),
        call_end: t.call_end.clone(),
        example: None,
        name: match t.name {
            NameSlot::JsonField { .. } => "json-field",
            NameSlot::JsonKey => "json-key",
            NameSlot::Tagged { .. } => "tagged",
        },
        arguments: match t.arguments {
            ArgumentsSlot::Json { .. } => "json",
            ArgumentsSlot::Tagged(_) => "tagged",
            ArgumentsSlot::Python { .. } => "python",
        },
        parallel: t.parallel,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{ChatTemplate, TemplateConfig};

    /// Shows an example call between `[TOOL_CALLS]` markers, renders none.
    const SHOWN: &str = r#"{%- if tools %}[INST]Tools: {{ tools | tojson }}
Call them as [TOOL_CALLS][{"name": "name", "arguments": {}}][/INST]{% endif %}
{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"#;

    #[test]
    fn a_format_an_example_call_shows_comes_from_prose() {
        let t = ChatTemplate::new(SHOWN, &TemplateConfig::default()).unwrap();
        let d = summarize(&t.analyze().unwrap(), &t.capabilities());
        assert_eq!(d.tool_formats.len(), 1);
        let f = &d.tool_formats[0];
        assert_eq!(f.source, Source::Prose);
        assert_eq!(f.section_start, "[TOOL_CALLS][");
        assert_eq!(
            f.example.as_deref(),
            Some(r#"[TOOL_CALLS][{"name": "name", "arguments": {}}]"#)
        );
        assert_eq!(f.dialect, None);
    }
}
