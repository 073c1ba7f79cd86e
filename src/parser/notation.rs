//! Reading a value written in a template's own notation (see
//! [`Notation`]) into JSON: the grammar (`build`) reads such a value to its
//! matching bracket, skipping quoted strings; this module turns its text
//! into JSON.
//!
//! Invariant: [`Notation::to_json`] returns valid JSON text or `None`
//! (never panics; nesting is bounded by [`MAX_DEPTH`]).

use serde_json::{Map, Value};

use crate::protocol::Notation;

// Deepest nesting converted, as deep as the engine reads a JSON value;
// deeper values stay text.
use chat_autoparser_peg::json::DEFAULT_MAX_DEPTH as MAX_DEPTH;

impl Notation {
    /// `text` (one object or list in this notation) as JSON text.
    pub fn to_json(&self, text: &str) -> Option<String> {
        let mut reader = Reader {
            notation: self,
            rest: text,
        };
        let value = reader.value(0)?;
        reader.skip_ws();
        reader.rest.is_empty().then(|| value.to_string())
    }
}

/// A cursor over notation text.
struct Reader<'a> {
    notation: &'a Notation,
    rest: &'a str,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        if self.eat("{") {
            return self.object(depth);
        }
        if self.eat("[") {
            return self.list(depth);
        }
        if let Some(s) = self.quoted() {
            return Some(Value::String(s));
        }
        Some(scalar(self.bare()?))
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        let mut map = Map::new();
        if self.eat("}") {
            return Some(Value::Object(map));
        }
        loop {
            let key = match self.quoted() {
                Some(key) => key,
                None => self.bare()?.to_string(),
            };
            if !self.eat(&self.notation.key_end.clone()) {
                return None;
            }
            map.insert(key, self.value(depth + 1)?);
            if self.eat("}") {
                return Some(Value::Object(map));
            }
            if !self.eat(&self.notation.separator.clone()) {
                return None;
            }
        }
    }

    fn list(&mut self, depth: usize) -> Option<Value> {
        let mut items = Vec::new();
        if self.eat("]") {
            return Some(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.eat("]") {
                return Some(Value::Array(items));
            }
            if !self.eat(&self.notation.separator.clone()) {
                return None;
            }
        }
    }

    /// A string between the quote markers.
    fn quoted(&mut self) -> Option<String> {
        let n = self.notation;
        self.skip_ws();
        let inner = self.rest.strip_prefix(n.quote_open.as_str())?;
        let end = inner.find(n.quote_close.as_str())?;
        self.rest = &inner[end + n.quote_close.len()..];
        Some(inner[..end].to_string())
    }

    /// Bare text up to the next structural token; never empty.
    fn bare(&mut self) -> Option<&str> {
        self.skip_ws();
        let n = self.notation;
        let stops = [
            "{",
            "}",
            "[",
            "]",
            n.key_end.as_str(),
            n.separator.as_str(),
            n.quote_open.as_str(),
        ];
        let end = stops
            .iter()
            .filter_map(|s| self.rest.find(s))
            .min()
            .unwrap_or(self.rest.len());
        let (bare, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(bare.trim()).filter(|b| !b.is_empty())
    }
}

/// A bare scalar: JSON, else Python's `None`, `True` or `False` (a template
/// writes a value it has no case for with `{{ value }}`, which prints
/// `None` for a null), else the text as a string.
fn scalar(bare: &str) -> Value {
    let json = serde_json::from_str::<Value>(bare)
        .ok()
        .filter(|v| !v.is_object() && !v.is_array());
    json.unwrap_or_else(|| match bare {
        "None" => Value::Null,
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        _ => Value::String(bare.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemma() -> Notation {
        Notation {
            quote_open: "<|\"|>".into(),
            quote_close: "<|\"|>".into(),
            key_end: ":".into(),
            separator: ",".into(),
        }
    }

    #[test]
    fn objects_and_lists_become_json() {
        let n = gemma();
        assert_eq!(
            n.to_json(r#"{theme:<|"|>dark<|"|>,count:3}"#).unwrap(),
            r#"{"theme":"dark","count":3}"#
        );
        assert_eq!(
            n.to_json(r#"[<|"|>buy milk<|"|>,<|"|>walk, dog<|"|>]"#)
                .unwrap(),
            r#"["buy milk","walk, dog"]"#
        );
        assert_eq!(
            n.to_json(r#"{a:[1,{b:true}],<|"|>c d<|"|>:null}"#).unwrap(),
            r#"{"a":[1,{"b":true}],"c d":null}"#
        );
        assert_eq!(n.to_json("{}").unwrap(), "{}");
    }

    #[test]
    fn python_scalars_are_json_scalars() {
        let n = gemma();
        assert_eq!(
            n.to_json("[1,{b:None},True,False,none,Nonesuch]").unwrap(),
            r#"[1,{"b":null},true,false,"none","Nonesuch"]"#
        );
    }

    #[test]
    fn malformed_text_is_not_converted() {
        let n = gemma();
        for text in ["{a:1", "{a 1}", "[1,,2]", "{a:1}x", r#"[<|"|>open]"#] {
            assert_eq!(n.to_json(text), None, "{text}");
        }
    }
}
