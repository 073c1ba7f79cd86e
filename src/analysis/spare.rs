//! Spare special tokens: `<|...|>`-shaped tokens the template's text holds
//! that the analysis gave no role (not a turn, header, reasoning, content or
//! tool marker).
//!
//! Only templates whose calls are bare JSON objects have them (the only
//! calls they frame); for others the list is empty.
//!
//! Templates write such tokens around calls in branches the probes never
//! reach (Llama 3.1's `<|python_tag|>` before a built-in tool call, its
//! `<|eom_id|>` after one; Llama 4's `<|python_start|>`/`<|python_end|>`),
//! and models trained on them write them around their JSON calls too. The
//! parser lets them frame a call that has no marker of its own; where no
//! call follows, they stay content.
//!
//! A token is spare only where no probe render holds it: role tokens
//! (`<|user|>`) and media placeholders are rendered, so they never frame a
//! call.
//!
//! Invariant: only tokens of the special shape (`<|` or `<｜`, a name of
//! letters, digits and `_`, and the matching close) are spare; a plain tag
//! (`<tool_call>`) or a bracket (`[INST]`) never is, so HTML-like text in a
//! template's instructions is not taken for framing.

use super::model::{Analysis, NameSlot, ToolFormat};
use crate::markers;

/// The spare special tokens of `source` for its `analysis`, in order of
/// first appearance. A token any probe render holds has a role there (a
/// user turn's `<|user|>`, an image's `<|image_pad|>`) and is not spare.
pub fn tokens(source: &str, analysis: &Analysis, renders: &[&str]) -> Vec<String> {
    if !analysis.tool_formats().any(is_bare_json) {
        return Vec::new();
    }
    let known = learned_tokens(analysis);
    let mut out: Vec<String> = Vec::new();
    for token in markers::tokens(source) {
        let spare = is_special(token)
            && !known.iter().any(|k| k == token)
            && !renders.iter().any(|r| r.contains(token));
        if spare && !out.iter().any(|o| o == token) {
            out.push(token.to_owned());
        }
    }
    out
}

/// Every token the analysis gave a role.
fn learned_tokens(analysis: &Analysis) -> Vec<String> {
    let learned = analysis.turn.marker_texts().chain([
        analysis.reasoning.start.as_str(),
        &analysis.reasoning.end,
        &analysis.content.start,
        &analysis.content.end,
    ]);
    let mut known: Vec<String> = analysis.preserved_tokens.clone();
    known.extend(learned.flat_map(markers::tokens).map(str::to_owned));
    for format in analysis.tool_formats() {
        known.extend(super::report::tool_tokens(format));
    }
    known
}

/// JSON calls with no marker of their own: the only calls spare tokens
/// frame (a call with its own markers has the template's framing).
fn is_bare_json(f: &ToolFormat) -> bool {
    let json = matches!(f.name, NameSlot::JsonField { .. } | NameSlot::JsonKey);
    json && f.section_start.trim().is_empty() && f.call_start.trim().is_empty()
}

/// `<|name|>` or `<｜name｜>`, the name of letters, digits and `_`.
fn is_special(token: &str) -> bool {
    let inner = ["|", "｜"].iter().find_map(|bar| {
        token
            .strip_prefix('<')?
            .strip_suffix('>')?
            .strip_prefix(bar)?
            .strip_suffix(bar)
    });
    inner.is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_special_shape_is_spare() {
        assert!(is_special("<|python_tag|>"));
        assert!(is_special("<｜Assistant｜>"));
        assert!(!is_special("<｜tool▁sep｜>"));
        assert!(!is_special("<tool_call>"));
        assert!(!is_special("[TOOL_CALLS]"));
        assert!(!is_special("<||>"));
    }
}
