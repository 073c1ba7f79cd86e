//! Python's `json.dumps` over template values, as transformers' `tojson` calls it.
//!
//! Differences from minijinja's builtin `tojson` that change prompts: keys keep
//! insertion order, separators default to `", "` and `": "`, nothing is
//! HTML-escaped, non-ASCII stays as-is unless `ensure_ascii=True`, floats print
//! with Python's `repr`.

use std::fmt::Write;

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};

use super::pyrepr::float_repr;

/// The keyword arguments of `json.dumps` that templates use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub ensure_ascii: bool,
    /// Spaces (or the literal string) used per nesting level.
    pub indent: Option<String>,
    /// `(item_separator, key_separator)`.
    pub separators: Option<[String; 2]>,
    pub sort_keys: bool,
}

/// Python accepts an int (spaces) or a string as `indent`.
pub(crate) fn indent_of(v: &Value) -> Option<String> {
    match v.kind() {
        ValueKind::Number => v.as_i64().map(|n| " ".repeat(n.clamp(0, 64) as usize)),
        ValueKind::String => v.as_str().map(str::to_owned),
        _ => None,
    }
}

/// Serializes `value` the way `json.dumps(value, **options)` would.
pub(crate) fn dumps(value: &Value, options: &Options) -> Result<String, Error> {
    let (item_sep, key_sep) = match &options.separators {
        Some([item, key]) => (item.as_str(), key.as_str()),
        // Python drops the trailing space of the item separator when indenting.
        None if options.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    let writer = Writer { options, item_sep, key_sep };
    let mut out = String::new();
    writer.value(&mut out, value, 0)?;
    Ok(out)
}

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

struct Writer<'a> {
    options: &'a Options,
    item_sep: &'a str,
    key_sep: &'a str,
}

impl Writer<'_> {
    fn value(&self, out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::new(ErrorKind::InvalidOperation, "tojson: value nested too deeply"));
        }
        match value.kind() {
            ValueKind::None => out.push_str("null"),
            ValueKind::Undefined => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: Object of type Undefined is not JSON serializable",
                ))
            }
            ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(out, value),
            ValueKind::String => self.string(out, value.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => self.seq(out, value, depth)?,
            ValueKind::Map => self.map(out, value, depth)?,
            _ => self.string(out, &value.to_string()),
        }
        Ok(())
    }

    fn number(&self, out: &mut String, value: &Value) {
        let text = value.to_string();
        if text.contains(['.', 'e', 'E', 'n', 'N']) {
            let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
            out.push_str(&match float_repr(f).as_str() {
                "nan" => "NaN".to_owned(),
                "inf" => "Infinity".to_owned(),
                "-inf" => "-Infinity".to_owned(),
                other => other.to_owned(),
            });
        } else {
            out.push_str(&text);
        }
    }

    fn string(&self, out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.options.ensure_ascii && !c.is_ascii()) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        let _ = write!(out, "\\u{unit:04x}");
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn seq(&self, out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
        let items: Vec<Value> = value.try_iter()?.collect();
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            self.separator(out, i, depth + 1);
            self.value(out, item, depth + 1)?;
        }
        self.close(out, items.is_empty(), depth);
        out.push(']');
        Ok(())
    }

    fn map(&self, out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
        let mut keys: Vec<Value> = value.try_iter()?.collect();
        if self.options.sort_keys {
            keys.sort_by_key(|k| k.to_string());
        }
        out.push('{');
        for (i, key) in keys.iter().enumerate() {
            self.separator(out, i, depth + 1);
            // JSON keys are strings; Python converts ints/bools/None the same way.
            let key_text = match key.kind() {
                ValueKind::String => key.as_str().unwrap_or_default().to_owned(),
                ValueKind::None => "null".to_owned(),
                ValueKind::Bool => if key.is_true() { "true" } else { "false" }.to_owned(),
                _ => key.to_string(),
            };
            self.string(out, &key_text);
            out.push_str(self.key_sep);
            self.value(out, &value.get_item(key)?, depth + 1)?;
        }
        self.close(out, keys.is_empty(), depth);
        out.push('}');
        Ok(())
    }

    /// Writes what comes before the `index`-th item at nesting `depth`.
    fn separator(&self, out: &mut String, index: usize, depth: usize) {
        if index > 0 {
            out.push_str(self.item_sep);
        }
        if let Some(indent) = &self.options.indent {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
    }

    /// Writes what comes before a closing bracket.
    fn close(&self, out: &mut String, empty: bool, depth: usize) {
        if let (Some(indent), false) = (&self.options.indent, empty) {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(json: serde_json::Value, options: &Options) -> String {
        dumps(&Value::from(minijinja::value::Serde(json)), options).unwrap()
    }

    #[test]
    fn default_separators_and_order() {
        let v = serde_json::json!({"b": 1, "a": [1.5, "é<&>", null, true]});
        assert_eq!(dump(v, &Options::default()), r#"{"b": 1, "a": [1.5, "é<&>", null, true]}"#);
    }

    #[test]
    fn indent_ensure_ascii_sort_keys() {
        let v = serde_json::json!({"b": "é", "a": {}});
        let options = Options {
            ensure_ascii: true,
            indent: Some("  ".into()),
            sort_keys: true,
            ..Options::default()
        };
        assert_eq!(dump(v, &options), "{\n  \"a\": {},\n  \"b\": \"\\u00e9\"\n}");
    }

    #[test]
    fn custom_separators() {
        let v = serde_json::json!({"a": [1, 2]});
        let options = Options { separators: Some([",".into(), ":".into()]), ..Options::default() };
        assert_eq!(dump(v, &options), r#"{"a":[1,2]}"#);
    }
}
