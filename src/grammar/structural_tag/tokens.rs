//! Special tokens in xgrammar structural tags: the markers a model samples
//! as one special token written as xgrammar's `{"type": "token"}`, so the
//! tag holds the marker to that token and a model cannot spell it with
//! ordinary tokens (which a parser given token ids reads as text:
//! `OutputStream::push_tokens`).
//!
//! This is a pass over a finished structural tag's format tree:
//!
//! - a `const_string` holding tokens becomes a `sequence` of the text
//!   between them and the tokens;
//! - a `tag` whose `begin` or `end` holds tokens is cut into pieces (text
//!   and tokens): the first piece of `begin` stays its begin, the last of
//!   `end` its end, the pieces between join its content. Free content
//!   (`any_text`, which xgrammar ends at the tag's end *text*) becomes
//!   `any_tokens` without the token the end opens with, when a token
//!   boundary comes before it (a token, or the start of the output:
//!   `any_tokens` counts whole tokens, and one may straddle a text begin);
//!   otherwise the tag stays text;
//! - a `triggered_tags` whose triggers are all tokens, and whose tags all
//!   begin with one, becomes `token_triggered_tags` (xgrammar allows only
//!   text `begin`s in `triggered_tags`, so otherwise its tags begin with
//!   text);
//! - `json_schema`, `regex`, `any_text` and xgrammar's XML styles are left
//!   as they are: the pass descends only into a format's `content`,
//!   `elements` and `tags`, never into a schema, whose `const` values may
//!   look like formats.
//!
//! All or nothing: xgrammar 0.2.8 mixes a token and its text badly
//! (measured: `any_text` ended by a token never lets a following
//! `token_triggered_tags` fire; a text marker that opens with a token's
//! text beside a `token_triggered_tags` on that token leaves the output no
//! way to end). So when any text of the result (a begin, an end, a
//! trigger, a separator, a `const_string`) still holds a token, the tag is
//! returned unchanged with a warning.
//!
//! A token is written by its text; xgrammar looks it up in the compiler's
//! vocabulary (`Grammar.from_structural_tag` without one refuses it: a
//! server that validates tags that way, vLLM 0.33, wants ids in its place).
//!
//! Invariants: with no token the tree is unchanged; a marker that is not
//! one of the tokens stays text; every token is a token or none is; the
//! pass never panics.

use std::cell::Cell;

use serde_json::{Map, Value};

use super::{const_string, node, sequence};
use crate::grammar::gbnf_tokens::first_token;

/// `format` with each of `tokens` written as a token where the format
/// language allows one (see the module doc); unchanged, with a warning,
/// when a token would have to stay text somewhere.
pub fn name_tokens(format: Value, tokens: &[&str], warnings: &mut Vec<String>) -> Value {
    if tokens.is_empty() {
        return format;
    }
    let pass = Pass {
        tokens,
        start: Cell::new(true),
    };
    let named = pass.format(format.clone());
    match pass.text_token(&named) {
        None => named,
        Some(text) => {
            warnings.push(format!(
                "markers written as text: {text:?} holds a special token where the structural tag takes text only"
            ));
            format
        }
    }
}

struct Pass<'t> {
    tokens: &'t [&'t str],
    /// Nothing is written yet: the output (and a token boundary) is here.
    start: Cell<bool>,
}

impl<'t> Pass<'t> {
    fn format(&self, value: Value) -> Value {
        let Value::Object(map) = value else {
            return value;
        };
        let kind = map.get("type").and_then(Value::as_str);
        let at_start = kind != Some("sequence") && self.start.replace(false);
        match kind {
            Some("const_string") => self.const_string(map),
            Some("tag") => self.tag(map, true, at_start),
            Some("triggered_tags") => self.triggered_tags(map),
            _ => Value::Object(self.children(map)),
        }
    }

    /// The first text of `format` (a marker, a trigger, a separator) that
    /// still holds a token: xgrammar 0.2.8 mixes a token's text and the
    /// token badly (measured: an output that can no longer end), so the
    /// export is all tokens or all text.
    fn text_token(&self, format: &Value) -> Option<String> {
        let Value::Object(map) = format else {
            return None;
        };
        let mut texts: Vec<&Value> = ["begin", "end", "triggers", "separator"]
            .iter()
            .filter_map(|k| map.get(*k))
            .collect();
        if map.get("type").and_then(Value::as_str) == Some("const_string") {
            texts.extend(map.get("value"));
        }
        let strings = texts.into_iter().flat_map(|v| match v {
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            other => other.as_str().into_iter().collect::<Vec<_>>(),
        });
        if let Some(text) = strings
            .into_iter()
            .find(|t| first_token(t, self.tokens).is_some())
        {
            return Some(text.to_string());
        }
        ["content", "elements", "tags"]
            .iter()
            .filter_map(|k| map.get(*k))
            .flat_map(|v| match v {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            })
            .find_map(|child| self.text_token(child))
    }

    /// `map` with its nested formats rewritten.
    fn children(&self, mut map: Map<String, Value>) -> Map<String, Value> {
        for key in ["content", "elements", "tags"] {
            let Some(child) = map.remove(key) else {
                continue;
            };
            let child = match child {
                Value::Array(items) => items.into_iter().map(|v| self.format(v)).collect(),
                other => self.format(other),
            };
            map.insert(key.into(), child);
        }
        map
    }

    fn const_string(&self, map: Map<String, Value>) -> Value {
        let text = map.get("value").and_then(Value::as_str).unwrap_or_default();
        let mut pieces = self.pieces(text);
        match pieces.len() {
            0 => Value::Object(map),
            1 => pieces.remove(0),
            _ => sequence(pieces),
        }
    }

    /// `text` as formats: the text between tokens and the tokens; empty when
    /// `text` holds no token (it stays as it is).
    fn pieces(&self, text: &str) -> Vec<Value> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some((at, token_text)) = first_token(rest, self.tokens) {
            if at > 0 {
                pieces.push(const_string(&rest[..at]));
            }
            pieces.push(token(token_text));
            rest = &rest[at + token_text.len()..];
        }
        if !pieces.is_empty() && !rest.is_empty() {
            pieces.push(const_string(rest));
        }
        pieces
    }

    /// A tag with its markers as tokens: the first piece of `begin` stays
    /// its begin and the last of `end` its end, the others join the
    /// content. `token_begin`: its `begin` may be a token (not under text
    /// triggers); `at_start`: the tag opens the output, so a token boundary
    /// is before it.
    fn tag(&self, mut map: Map<String, Value>, token_begin: bool, at_start: bool) -> Value {
        let content = map.remove("content").unwrap_or(Value::Null);
        let text_of = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
        let mut begin = match token_begin {
            true => self.pieces(text_of("begin")),
            false => Vec::new(),
        };
        let mut end = self.pieces(text_of("end"));
        // Any tokens start at a token boundary: after a token, or at the start.
        let bounded = match begin.last() {
            Some(piece) => token_text(piece).is_some(),
            None => at_start && text_of("begin").is_empty(),
        };
        let content = if is_free(&content) {
            // xgrammar ends free text at the tag's end text; at an end
            // that opens with a token it is any tokens but that one.
            match end.first().and_then(token_text).filter(|_| bounded) {
                Some(first) => any_tokens_but(first),
                None => {
                    map.insert("content".into(), content);
                    return Value::Object(map);
                }
            }
        } else {
            self.format(content)
        };
        if !begin.is_empty() {
            map.insert("begin".into(), bound(begin.remove(0)));
        }
        if let Some(last) = end.pop() {
            map.insert("end".into(), bound(last));
        }
        map.insert("content".into(), joined(begin, content, end));
        Value::Object(map)
    }

    /// `token_triggered_tags` when every trigger is a token and every tag
    /// begins with one; else text triggers (xgrammar takes only text
    /// `begin`s under them).
    fn triggered_tags(&self, mut map: Map<String, Value>) -> Value {
        let triggers: Vec<String> = (map.get("triggers").and_then(Value::as_array))
            .map(|ts| {
                ts.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let all_tokens =
            !triggers.is_empty() && triggers.iter().all(|t| self.tokens.contains(&t.as_str()));
        let tags = match map.remove("tags") {
            Some(Value::Array(tags)) => tags,
            _ => Vec::new(),
        };
        let tags: Vec<Value> = (tags.into_iter())
            .map(|t| match t {
                Value::Object(m) => self.tag(m, all_tokens, false),
                other => other,
            })
            .collect();
        // A tag that cannot begin with its trigger token (free content
        // ended by text) keeps the text triggers, which hold a token: the
        // whole export then stays text (`name_tokens`).
        if !(all_tokens && tags.iter().all(|t| t["begin"]["type"] == "token")) {
            map.insert("tags".into(), Value::Array(tags));
            return Value::Object(map);
        }
        let mut out = Map::new();
        out.insert("type".into(), Value::from("token_triggered_tags"));
        out.insert("trigger_tokens".into(), Value::from(triggers));
        out.insert("tags".into(), Value::Array(tags));
        for key in ["at_least_one", "stop_after_first"] {
            if let Some(v) = map.remove(key) {
                out.insert(key.into(), v);
            }
        }
        Value::Object(out)
    }
}

/// The text of a `token` piece.
fn token_text(piece: &Value) -> Option<&str> {
    (piece["type"] == "token")
        .then(|| piece["token"].as_str())
        .flatten()
}

/// A piece as a tag's begin or end: a token, or the text of a `const_string`.
fn bound(piece: Value) -> Value {
    match token_text(&piece) {
        Some(_) => piece,
        None => piece["value"].clone(),
    }
}

/// Whether `content` ends in free text, which xgrammar ends at the tag's end.
fn is_free(content: &Value) -> bool {
    match content["type"].as_str() {
        Some("any_text") => true,
        Some("sequence") => content["elements"]
            .as_array()
            .and_then(|e| e.last())
            .is_some_and(is_free),
        _ => false,
    }
}

/// `head`, `middle` and `tail` as one format (a sequence's elements spliced).
fn joined(head: Vec<Value>, middle: Value, tail: Vec<Value>) -> Value {
    if head.is_empty() && tail.is_empty() {
        return middle;
    }
    let mut elements = head;
    match middle {
        Value::Object(mut m) if m.get("type").and_then(Value::as_str) == Some("sequence") => {
            match m.remove("elements") {
                Some(Value::Array(items)) => elements.extend(items),
                _ => elements.push(Value::Object(m)),
            }
        }
        other => elements.push(other),
    }
    elements.extend(tail);
    sequence(elements)
}

fn token(text: &str) -> Value {
    node("token", vec![("token", Value::from(text))])
}

fn any_tokens_but(end: &str) -> Value {
    node(
        "any_tokens",
        vec![("exclude_tokens", Value::from(vec![end]))],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn free_text_ends_at_the_token_its_end_opens_with() {
        let block = json!({"type": "tag", "begin": "<|channel|>analysis<|message|>",
                           "content": {"type": "any_text"}, "end": "<|end|><|start|>assistant"});
        let tokens = ["<|channel|>", "<|message|>", "<|end|>", "<|start|>"];
        assert_eq!(
            name_tokens(block, &tokens, &mut Vec::new()),
            json!({"type": "tag", "begin": {"type": "token", "token": "<|channel|>"},
                   "content": {"type": "sequence", "elements": [
                       {"type": "const_string", "value": "analysis"},
                       {"type": "token", "token": "<|message|>"},
                       {"type": "any_tokens", "exclude_tokens": ["<|end|>"]},
                       {"type": "token", "token": "<|end|>"},
                       {"type": "token", "token": "<|start|>"}]},
                   "end": "assistant"})
        );
    }

    #[test]
    fn free_text_not_between_tokens_leaves_all_text_and_schemas_are_not_entered() {
        let mut warnings = Vec::new();
        let tag =
            json!({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ")<b>"});
        assert_eq!(
            name_tokens(tag.clone(), &["<a>", "<b>"], &mut warnings),
            tag
        );
        assert_eq!(
            warnings,
            ["markers written as text: \"<a>\" holds a special token where the structural tag takes text only"]
        );
        // Any tokens after text: a token may straddle the text's end.
        let call = json!({"type": "tag", "begin": "<function name=\"f\">",
                          "content": {"type": "any_text"}, "end": "</function>"});
        assert_eq!(
            name_tokens(call.clone(), &["</function>"], &mut warnings),
            call
        );
        assert_eq!(warnings.len(), 2);
        // A call its trigger token cannot begin: the text trigger holds it.
        let calls = json!({"type": "triggered_tags", "triggers": ["<f>"], "tags": [
            {"type": "tag", "begin": "<f>", "content": {"type": "any_text"}, "end": ")"}]});
        assert_eq!(name_tokens(calls.clone(), &["<f>"], &mut warnings), calls);
        assert_eq!(warnings.len(), 3);
        let schema = json!({"type": "json_schema", "json_schema": {"const": {"type": "const_string", "value": "<a>"}}});
        assert_eq!(name_tokens(schema.clone(), &["<a>"], &mut warnings), schema);
        assert_eq!(warnings.len(), 3);
    }

    #[test]
    fn the_longest_token_at_a_place_wins() {
        let text = json!({"type": "const_string", "value": "x[TOOL_CALLS]["});
        assert_eq!(
            name_tokens(text, &["[TOOL_CALLS]", "[TOOL_CALLS]["], &mut Vec::new()),
            json!({"type": "sequence", "elements": [
                {"type": "const_string", "value": "x"},
                {"type": "token", "token": "[TOOL_CALLS]["}]})
        );
    }
}
