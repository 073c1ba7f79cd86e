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
//! - a `tag` whose `begin` opens with a token begins with that token, the
//!   rest of the text moved to the head of its content; one whose `end`
//!   closes with a token ends with it, the text before moved to the tail
//!   of its content. Free content (`any_text`, which xgrammar ends at the
//!   tag's end *text*) becomes `any_tokens` without the end token, and
//!   only when the end is that token alone; otherwise the tag stays text
//!   (xgrammar 0.2.8 never leaves `any_text` at an end token when a
//!   `token_triggered_tags` follows: the output cannot end, measured);
//! - a `triggered_tags` whose triggers are all tokens, and whose tags all
//!   begin with one, becomes `token_triggered_tags` (xgrammar allows only
//!   text `begin`s in `triggered_tags`, so otherwise its tags begin with
//!   text);
//! - a `tag` whose end is a list of texts, `json_schema`, `regex`,
//!   `any_text` and xgrammar's XML styles are left as they are: the pass
//!   descends only into a format's `content`, `elements` and `tags`, never
//!   into a schema, whose `const` values may look like formats.
//!
//! A token is written by its text; xgrammar looks it up in the compiler's
//! vocabulary (`Grammar.from_structural_tag` without one refuses it: a
//! server that validates tags that way, vLLM 0.33, wants ids in its place).
//!
//! Invariants: with no token the tree is unchanged; a marker that is not
//! one of the tokens stays text; the pass never panics.

use serde_json::{Map, Value};

use super::{const_string, node, sequence};
use crate::grammar::gbnf_tokens::first_token;

/// `format` with each of `tokens` written as a token where the format
/// language allows one (see the module doc).
pub fn name_tokens(format: Value, tokens: &[&str]) -> Value {
    if tokens.is_empty() {
        return format;
    }
    Pass { tokens }.format(format)
}

struct Pass<'t> {
    tokens: &'t [&'t str],
}

impl<'t> Pass<'t> {
    fn format(&self, value: Value) -> Value {
        let Value::Object(map) = value else {
            return value;
        };
        match map.get("type").and_then(Value::as_str) {
            Some("const_string") => self.const_string(map),
            Some("tag") => self.tag(map, true),
            Some("triggered_tags") => self.triggered_tags(map),
            _ => Value::Object(self.children(map)),
        }
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

    /// A tag with its markers as tokens; `token_begin`: its `begin` may be
    /// a token (not inside a text-triggered `triggered_tags`).
    fn tag(&self, mut map: Map<String, Value>, token_begin: bool) -> Value {
        let content = map.remove("content").unwrap_or(Value::Null);
        let free = is_free(&content);
        let text_of = |key: &str| map.get(key).and_then(Value::as_str).map(String::from);
        let (begin, end) = (
            text_of("begin").unwrap_or_default(),
            text_of("end").unwrap_or_default(),
        );
        let end_split = self
            .split_end(&end)
            .filter(|(before, _)| !free || before.is_empty());
        let begin_split = (token_begin && (!free || end_split.is_some()))
            .then(|| self.split_begin(&begin))
            .flatten();
        let mut content = match (free, &end_split) {
            (true, Some((_, end_token))) => any_tokens_but(end_token),
            _ => self.format(content),
        };
        if let Some((begin_token, after)) = begin_split {
            content = joined(self.text(after), content, Vec::new());
            map.insert("begin".into(), token(begin_token));
        }
        if let Some((before, end_token)) = end_split {
            content = joined(Vec::new(), content, self.text(before));
            map.insert("end".into(), token(end_token));
        }
        map.insert("content".into(), content);
        Value::Object(map)
    }

    /// `begin` as the token it opens with and the text after.
    fn split_begin<'b>(&self, begin: &'b str) -> Option<(&'t str, &'b str)> {
        let (at, token_text) = first_token(begin, self.tokens)?;
        (at == 0).then(|| (token_text, &begin[token_text.len()..]))
    }

    /// `end` as the text before the token it closes with, and the token.
    fn split_end<'e>(&self, end: &'e str) -> Option<(&'e str, &'t str)> {
        let token_text = self
            .tokens
            .iter()
            .filter(|t| !t.is_empty() && end.ends_with(**t));
        let token_text = token_text.max_by_key(|t| t.len())?;
        Some((&end[..end.len() - token_text.len()], token_text))
    }

    /// `text` as formats, the text itself when it holds no token.
    fn text(&self, text: &str) -> Vec<Value> {
        match self.pieces(text) {
            pieces if pieces.is_empty() && !text.is_empty() => vec![const_string(text)],
            pieces => pieces,
        }
    }

    /// `token_triggered_tags` when every trigger is a token and every tag
    /// begins with one; else text triggers over tags that begin with text.
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
        let rewrite = |tags: Vec<Value>, token_begin: bool| -> Vec<Value> {
            (tags.into_iter())
                .map(|t| match t {
                    Value::Object(m) => self.tag(m, token_begin),
                    other => other,
                })
                .collect()
        };
        // Rewritten twice only when a tag that a token triggers cannot
        // begin with it (free content ended by text).
        let token_tags = all_tokens.then(|| rewrite(tags.clone(), true));
        let token_tags = token_tags.filter(|ts| ts.iter().all(|t| t["begin"]["type"] == "token"));
        let Some(token_tags) = token_tags else {
            map.insert("tags".into(), Value::Array(rewrite(tags, false)));
            return Value::Object(map);
        };
        let mut out = Map::new();
        out.insert("type".into(), Value::from("token_triggered_tags"));
        out.insert("trigger_tokens".into(), Value::from(triggers));
        out.insert("tags".into(), Value::Array(token_tags));
        for key in ["at_least_one", "stop_after_first"] {
            if let Some(v) = map.remove(key) {
                out.insert(key.into(), v);
            }
        }
        Value::Object(out)
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
