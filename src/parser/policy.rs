//! Output policies: what the parser does with what a model writes off
//! script (a call of a function the request does not have, narration after
//! its calls, a call the output cut off, a broken call, another format's
//! call markers around a call), named and chosen by the caller instead of
//! hard-coded.
//!
//! Two presets: [`Policy::lossless`] (the default: nothing the model wrote
//! is lost) and [`Policy::compatible`] (what vLLM's and SGLang's tool
//! parsers do where they agree, and where they differ what two of three
//! production engines do, TensorRT-LLM the third; `docs/policies.md` gives
//! the source read for each choice).
//!
//! Invariants: every decision that leaves text out of the message or keeps
//! a call the request did not ask for leaves a diagnostic with the byte
//! range it concerns (`decode`), so nothing is silent; a
//! [`DiagnosticKind::Dropped`](super::DiagnosticKind::Dropped) diagnostic
//! never appears under [`Policy::lossless`]; each decision depends on the
//! events alone, so streaming equals batch under every policy.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call that names a function the request does not have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UnknownTool {
    /// Its text is content (`unknown_tool` diagnostic).
    #[default]
    Content,
    /// It is a call, flagged (`unknown_tool_call` diagnostic).
    Call,
}

/// Content the model writes after its first call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextAfterCalls {
    /// It is content.
    #[default]
    Keep,
    /// It is left out (`dropped` diagnostic with its range).
    Drop,
}

/// A call the output ends in, before its closing marker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UnclosedCall {
    /// It is a call when its arguments are complete (a stop string ate the
    /// closer); a call cut inside its arguments is content.
    #[default]
    Recover,
    /// It is left out, its text too (`dropped`).
    Drop,
    /// Its text is content (`withdrawn_tool_call`).
    Content,
}

/// A call the model broke before the output ended (text where its
/// arguments or closer were due, arguments that are not JSON).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MalformedSection {
    /// A call whose arguments are complete is kept; the rest (or the whole
    /// call, when they are not) is content.
    #[default]
    Content,
    /// A call whose arguments stand alone between markers (JSON after a
    /// raw name) is kept with them as written up to its closer, JSON or not
    /// (`salvaged_tool_call`); a broken call object or broken argument
    /// pairs have no arguments text of their own: content, as `Content`.
    Salvage,
    /// The broken text is left out (`dropped`); a call whose arguments are
    /// complete is kept.
    Drop,
}

/// A call written inside a reasoning block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallsInReasoning {
    /// It is reasoning text.
    #[default]
    Reasoning,
    /// It is a call, out of the reasoning.
    Call,
    /// It is a call, and its text stays in the reasoning too.
    Both,
}

/// Text outside any channel, in a format whose turn is made of channels
/// (gpt-oss): text before the first header, or after a message's end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextOutsideChannels {
    /// It is content.
    #[default]
    Content,
    /// It is left out (`dropped`).
    Drop,
}

/// A tool-call marker of another format than the template's (`[TOOL_CALLS]`,
/// `<tool_call>`, `<|python_tag|>` around a bare JSON call, a code fence
/// around one on a template whose calls are not bare JSON, or a closer
/// after plain text): a model mixing dialects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ForeignMarkers {
    /// It is content (`foreign_marker` diagnostic with its range).
    #[default]
    Content,
    /// It is left out (`dropped`).
    Drop,
    /// It is plain text, and so is what it wraps: a call inside another
    /// format's wrapper or a code fence is not read (the parser is built
    /// without those grammars, so its text is content with no diagnostic),
    /// and a lone closer, the template's own too, stays in the content.
    /// What vLLM's and SGLang's tool parsers do, each reading its own
    /// format's markers only. One exception: where the template's calls
    /// are bare JSON (no markers of their own), another format's wrapper
    /// around such a call (`[TOOL_CALLS][{...}]`) frames a call of the
    /// template's own format and is left out (`dropped`), as a code fence
    /// around it is, as xLAM-style parsers do.
    Text,
}

/// What the parser does with output written off script. See the module doc
/// and `docs/policies.md`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Policy {
    /// A call of a function the request does not have.
    pub unknown_tool: UnknownTool,
    /// Content after the first call.
    pub text_after_calls: TextAfterCalls,
    /// A call the output ends in.
    pub unclosed_call_at_end: UnclosedCall,
    /// A call broken before the end.
    pub malformed_section: MalformedSection,
    /// A call inside a reasoning block.
    pub calls_in_reasoning: CallsInReasoning,
    /// Text outside any channel (channel formats).
    pub text_outside_channels: TextOutsideChannels,
    /// Another format's tool-call marker.
    pub foreign_markers: ForeignMarkers,
}

setters!(Policy {
    /// Sets what a call of an unknown function becomes.
    with_unknown_tool => unknown_tool: UnknownTool,
    /// Sets what content after the first call becomes.
    with_text_after_calls => text_after_calls: TextAfterCalls,
    /// Sets what a call the output ends in becomes.
    with_unclosed_call_at_end => unclosed_call_at_end: UnclosedCall,
    /// Sets what a broken call becomes.
    with_malformed_section => malformed_section: MalformedSection,
    /// Sets what a call inside reasoning becomes.
    with_calls_in_reasoning => calls_in_reasoning: CallsInReasoning,
    /// Sets what text outside any channel becomes.
    with_text_outside_channels => text_outside_channels: TextOutsideChannels,
    /// Sets what another format's tool-call marker becomes.
    with_foreign_markers => foreign_markers: ForeignMarkers,
});

/// The field names, in declaration order (for messages and the CLI).
pub const POLICY_FIELDS: [&str; 7] = [
    "unknown_tool",
    "text_after_calls",
    "unclosed_call_at_end",
    "malformed_section",
    "calls_in_reasoning",
    "text_outside_channels",
    "foreign_markers",
];

impl Policy {
    /// Nothing the model wrote is lost: every byte is in the content, the
    /// reasoning or a call. The default.
    pub fn lossless() -> Policy {
        Policy::default()
    }

    /// What vLLM's and SGLang's tool parsers do where they agree, and
    /// where they differ what TensorRT-LLM's do with one of them: an
    /// unknown tool's call is returned, flagged (vLLM's choice), a call the
    /// output ends in is left out (SGLang's); see `docs/policies.md`.
    pub fn compatible() -> Policy {
        Policy {
            unknown_tool: UnknownTool::Call,
            text_after_calls: TextAfterCalls::Drop,
            // SGLang's and TensorRT-LLM's parsers need the call's closer
            // on most formats (vLLM recovers): the majority of three
            // engines on the harness, docs/policies.md.
            unclosed_call_at_end: UnclosedCall::Drop,
            // Both engines return a broken call object as content, and a
            // call with a raw name keeps its broken arguments (vLLM always,
            // SGLang on Kimi): the cross-engine harness, docs/parity.md.
            malformed_section: MalformedSection::Salvage,
            calls_in_reasoning: CallsInReasoning::Reasoning,
            // The parity run found both engines drop it.
            text_outside_channels: TextOutsideChannels::Drop,
            // Each engine reads its own format's markers only: a fenced
            // JSON call on a tagged format and a lone closer after text
            // are content in both (docs/parity.md).
            foreign_markers: ForeignMarkers::Text,
        }
    }

    /// The preset named `name` (`lossless` or `compatible`).
    pub fn preset(name: &str) -> Option<Policy> {
        match name {
            "lossless" => Some(Policy::lossless()),
            "compatible" => Some(Policy::compatible()),
            _ => None,
        }
    }

    /// Sets one field by name to a value by name (`("unknown_tool",
    /// "call")`); the error says what the field takes.
    pub fn set(&mut self, field: &str, value: &str) -> Result<(), String> {
        let mut object = serde_json::to_value(*self).map_err(|e| e.to_string())?;
        let Some(map) = object.as_object_mut().filter(|m| m.contains_key(field)) else {
            return Err(format!(
                "unknown policy field {field:?} (fields: {})",
                POLICY_FIELDS.join(", ")
            ));
        };
        map.insert(field.to_string(), Value::String(value.to_string()));
        *self = serde_json::from_value(object)
            .map_err(|_| format!("{field} takes {}, not {value:?}", choices(field)))?;
        Ok(())
    }

    /// A policy from JSON: a preset's name, or an object of fields (over
    /// `lossless`, or over the preset its `preset` member names).
    pub fn from_json(value: &Value) -> Result<Policy, String> {
        match value {
            Value::String(name) => Policy::preset(name).ok_or_else(|| {
                format!("policy takes \"lossless\", \"compatible\" or an object, not {name:?}")
            }),
            Value::Object(map) => {
                let mut policy = match map.get("preset") {
                    None => Policy::lossless(),
                    Some(preset) => Policy::from_json(preset)?,
                };
                for (field, v) in map.iter().filter(|(k, _)| *k != "preset") {
                    let Some(text) = v.as_str() else {
                        return Err(format!("policy field {field} takes a string, not {v}"));
                    };
                    policy.set(field, text)?;
                }
                Ok(policy)
            }
            other => Err(format!(
                "policy takes \"lossless\", \"compatible\" or an object, not {other}"
            )),
        }
    }
}

/// The values `field` takes, for messages.
fn choices(field: &str) -> &'static str {
    match field {
        "unknown_tool" => "content or call",
        "text_after_calls" => "keep or drop",
        "unclosed_call_at_end" => "recover, drop or content",
        "malformed_section" => "content, salvage or drop",
        "calls_in_reasoning" => "reasoning, call or both",
        "foreign_markers" => "content, drop or text",
        _ => "content or drop",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn presets_and_fields_by_name() {
        assert_eq!(Policy::preset("lossless"), Some(Policy::default()));
        let mut p = Policy::lossless();
        p.set("unknown_tool", "call").unwrap();
        assert_eq!(p.unknown_tool, UnknownTool::Call);
        assert_eq!(
            p.set("unknown_tool", "maybe").unwrap_err(),
            "unknown_tool takes content or call, not \"maybe\""
        );
        assert!(p
            .set("colour", "red")
            .unwrap_err()
            .starts_with("unknown policy field"));
        let q = Policy::from_json(&json!({"preset": "compatible", "text_after_calls": "keep"}));
        assert_eq!(
            q.unwrap(),
            Policy::compatible().with_text_after_calls(TextAfterCalls::Keep)
        );
        assert!(Policy::from_json(&json!("strict")).is_err());
    }
}
