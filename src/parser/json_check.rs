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
//! On short arguments even that visit was about a twentieth of a parse, so
//! [`plainly_readable`] first reads the text with a byte loop that accepts
//! only what serde_json surely reads (no `\u` escape, no exponent, short
//! numbers, shallow nesting) and leaves everything else to serde_json.
//!
//! Invariant: `is_readable(t)` ⇔ `serde_json::from_str::<Value>(t).is_ok()`;
//! `plainly_readable(t)` ⇒ `is_readable(t)`.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Whether `text` is one JSON value serde_json reads into a `Value`.
pub(super) fn is_readable(text: &str) -> bool {
    let short = text.len() <= PLAIN_LEN;
    (short && plainly_readable(text)) || serde_json::from_str::<Readable>(text).is_ok()
}

/// Text the byte loop reads: on longer text serde_json's string scan, many
/// bytes a step, is the faster (a 72 KB argument took 2.6 times as many
/// instructions in the loop).
const PLAIN_LEN: usize = 1024;

/// Nesting the byte loop follows; deeper text goes to serde_json (whose
/// limit is 128).
const PLAIN_DEPTH: usize = 64;

/// Digits a number may have for the byte loop (an integer of 19 digits or
/// fewer fits `i64`/`u64` or, past them, `f64`; either way serde_json reads it).
const PLAIN_DIGITS: usize = 19;

/// `true` when `text` is one JSON value of the plain kind serde_json
/// surely reads; `false` says nothing (the caller asks serde_json).
fn plainly_readable(text: &str) -> bool {
    let mut reader = Plain {
        bytes: text.as_bytes(),
        at: 0,
    };
    reader.ws();
    let read = reader.value(0).is_some();
    reader.ws();
    read && reader.at == reader.bytes.len()
}

/// The byte loop of [`plainly_readable`]: each reader returns `None` on
/// anything it does not accept.
struct Plain<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Plain<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string(),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.number(),
        }
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.list(b'}', depth, |r, depth| {
            r.string()?;
            r.ws();
            r.eat(b':')?;
            r.ws();
            r.value(depth)
        })
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        self.list(b']', depth, Self::value)
    }

    /// The opening bracket at `at`, `member`s separated by commas, then
    /// `close`: an object's or an array's frame, read once for both.
    fn list(
        &mut self,
        close: u8,
        depth: usize,
        member: impl Fn(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        if depth > PLAIN_DEPTH {
            return None;
        }
        self.at += 1;
        self.ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            member(self, depth)?;
            self.ws();
            if self.eat(close).is_some() {
                return Some(());
            }
            self.eat(b',')?;
            self.ws();
        }
    }

    /// A string without control characters and without `\u` escapes
    /// (a lone surrogate is serde_json's to refuse).
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    let escaped = *self.bytes.get(self.at + 1)?;
                    if !matches!(
                        escaped,
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't'
                    ) {
                        return None;
                    }
                    self.at += 2;
                }
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` with at most [`PLAIN_DIGITS`] digits
    /// in all: no exponent, so never out of `f64`'s range.
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        let int = self.digits()?;
        if int > 1 && self.bytes[self.at - int] == b'0' {
            return None;
        }
        let mut count = int;
        if self.eat(b'.').is_some() {
            count += self.digits()?;
        }
        (count <= PLAIN_DIGITS).then_some(())
    }

    /// One or more digits: how many.
    fn digits(&mut self) -> Option<usize> {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        (self.at > start).then_some(self.at - start)
    }
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
    use super::{is_readable, plainly_readable};
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

    /// The byte loop accepts plain arguments, and only what serde_json
    /// reads: every text of up to 4 tokens over an alphabet of JSON's tokens
    /// and the cases it must leave to serde_json.
    #[test]
    fn the_byte_loop_accepts_only_what_serde_json_reads() {
        let plain =
            r#"{"city": "Paris", "n": -12.5, "ok": [true, false, null, {}], "s": "a\"b\n"}"#;
        assert!(plainly_readable(plain));
        let alphabet: Vec<&str> = vec![
            "{", "}", "[", "]", "\"", ":", ",", " ", "0", "1", "-", ".", "e", "a", "\\", "u", "t",
            "true", "null", "\n", "\u{1}", "é",
        ];
        let mut texts = vec![String::new()];
        let mut last = texts.clone();
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|t| alphabet.iter().map(move |a| format!("{t}{a}")))
                .collect();
            texts.extend(last.iter().cloned());
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        texts.extend([
            deep(64),
            deep(65),
            deep(200),
            "1".repeat(19),
            "1".repeat(20),
            format!("0.{}", "1".repeat(18)),
            "9".repeat(400),
            r#""\ud800""#.to_string(),
            r#""\u00e9""#.to_string(),
            "01".to_string(),
            "-".to_string(),
            "1.".to_string(),
        ]);
        let mut accepted = 0;
        for text in &texts {
            if plainly_readable(text) {
                accepted += 1;
                let value = serde_json::from_str::<Value>(text);
                assert!(
                    value.is_ok(),
                    "the byte loop accepts {text:?}, serde_json does not"
                );
            }
        }
        assert!(accepted > 100, "{accepted} texts read by the byte loop");
    }
}
