//! Whether text is JSON a server can read: the check a final call's
//! arguments pass before the call is kept.
//!
//! `serde_json::from_str::<Value>` answers it but builds the whole value
//! (every string copied, every object a map), and on large arguments that
//! was a third of a full parse. [`Readable`] visits the same tokens and
//! keeps nothing; it still makes serde_json read each number as a number,
//! so a number out of `f64`'s range (`1E400`), which a server's JSON reader
//! refuses, fails here too (`IgnoredAny` would skip it).
//!
//! Invariant: `is_readable(t)` ⇔ `serde_json::from_str::<Value>(t).is_ok()`.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Whether `text` is one JSON value serde_json reads into a `Value`.
pub(super) fn is_readable(text: &str) -> bool {
    serde_json::from_str::<Readable>(text).is_ok()
}

/// Any JSON value, read and dropped.
struct Readable;

impl<'de> Deserialize<'de> for Readable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Readable)
    }
}

impl<'de> Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Readable, A::Error> {
        while items.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Readable, A::Error> {
        // Keys are strings by the grammar of JSON; only values need reading.
        while members.next_entry::<IgnoredAny, Readable>()?.is_some() {}
        Ok(Readable)
    }
}

#[cfg(test)]
mod tests {
    use super::is_readable;
    use serde_json::Value;

    #[test]
    fn agrees_with_reading_a_value() {
        let cases = [
            r#"{"city": "Paris", "days": 3, "x": [1, -2.5e-3, {"y": null}], "t": true}"#,
            r#"{"s": "a \"quoted\" \\ \u00e9 line\nbreak"}"#,
            r#"{"days": 1E400}"#,
            r#"[1e308, -1e308]"#,
            r#"{"big": 123456789012345678901234567890}"#,
            &format!("[{}]", "9".repeat(400)),
            r#"{"days": 3"#,
            r#"{"days": 3x}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 1} {"b": 2}"#,
            "  {}  ",
            "",
            r#""\ud800""#,
        ];
        for case in cases {
            let value = serde_json::from_str::<Value>(case).is_ok();
            assert_eq!(is_readable(case), value, "{case}");
        }
    }
}
