//! The words a template writes in its markers, and the text made of them:
//! what a header label, the rest of a call's header or a type attribute may
//! hold and still be scaffolding.
//!
//! A model writes labels and attributes the template never renders
//! (`<|channel|>notes<|message|>`, `index="1" note="..."`, `type="strnig"`).
//! Dropping them as scaffolding would lose what the model wrote, so a
//! label is scaffolding only when every word in it is one of the
//! template's: a word of any marker the analysis learned (`analysis`,
//! `commentary`, `json`, `index`, `type`), or a number (a counter:
//! `index="2"`). Punctuation between words is free.
//!
//! Special tokens a model writes inside a header after a space
//! (`final <|constrain|>json`): where the template's markers hold such
//! markup, only words of the template may spell it; where they hold none
//! (gpt-oss's template never renders the `<|constrain|>` its models write,
//! and llama.cpp's vectors drop it), any special token is markup.
//!
//! Invariant: every expression here consumes only text that a label's
//! shape ([`super::sections::label`]) allows, so the known reading of a
//! label never reaches past its unknown reading.

use chat_autoparser_peg::{
    any_char, choice, class, fail, lit, literals, not, plus, seq, star, ByteSet, Expr,
};

/// The JSON Schema type names: a typed value's attribute may name any of
/// them (`type="object"`), whatever types the template's probes rendered.
pub const JSON_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The words of one template's markers.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    words: Vec<String>,
    /// The markers hold markup after a space (` <|constrain|>json`).
    writes_markup: bool,
}

impl Vocabulary {
    /// The words of `scaffolding`: the parser outline's (every marker the
    /// template writes, one per line, see `ParserOutline::scaffolding`).
    pub fn of(scaffolding: &str) -> Vocabulary {
        let mut words: Vec<String> = scaffolding
            .split(|c: char| !is_word_char(c))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        words.sort();
        words.dedup();
        let writes_markup = scaffolding.contains(" <");
        Vocabulary {
            words,
            writes_markup,
        }
    }

    /// One of the template's words, whole.
    fn word(&self) -> Expr {
        match self.words.is_empty() {
            true => fail(),
            false => seq([literals(&self.words), not(class(word_bytes()))]),
        }
    }

    /// A run of the template's words, numbers and punctuation, up to a
    /// space, a line end or one of `stops` (possibly empty).
    pub fn known_word(&self, stops: &Expr) -> Expr {
        let digits = seq([
            plus(class(ByteSet::range(b'0', b'9'))),
            not(class(word_bytes())),
        ]);
        let punctuation = seq([
            not(class(word_bytes().union(ByteSet::of(b" \t\r\n")))),
            any_char(),
        ]);
        let piece = choice([self.word(), digits, punctuation]);
        star(seq([not(stops.clone()), piece]))
    }

    /// A word of markup after a space (`<|constrain|>json`): written with
    /// the template's words where its markers hold markup, else any
    /// special token followed by the template's words.
    pub fn known_markup(&self, stops: &Expr) -> Expr {
        match self.writes_markup {
            true => self.known_word(stops),
            false => seq([special_token(), self.known_word(stops)]),
        }
    }

    /// A type attribute's word (`number` of `type="number"`): a JSON Schema
    /// type name or one of `written` (the words the template writes there).
    pub fn type_word(written: &[String]) -> Expr {
        let mut words: Vec<&str> = JSON_TYPES.to_vec();
        words.extend(written.iter().map(String::as_str).filter(|w| !w.is_empty()));
        seq([literals(words), not(class(word_bytes()))])
    }
}

/// A character of a word: letters, digits and `_` (a non-ASCII character
/// is a letter).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || !c.is_ascii()
}

/// The bytes of [`is_word_char`] characters.
pub fn word_bytes() -> ByteSet {
    ByteSet::range(b'a', b'z')
        .union(ByteSet::range(b'A', b'Z'))
        .union(ByteSet::range(b'0', b'9'))
        .union(ByteSet::of(b"_"))
        .union(ByteSet::range(0x80, 0xFF))
}

/// A special token written as `<|name|>`: no spaces, no nested brackets.
pub fn special_token() -> Expr {
    let inside = class(ByteSet::of(b"|<> \t\r\n").complement());
    seq([lit("<|"), plus(inside), lit("|>")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use chat_autoparser_peg::{eoi, Grammar};

    fn reads(v: &Vocabulary, text: &str) -> bool {
        let program = Grammar::new(seq([v.known_word(&fail()), eoi()]))
            .compile()
            .unwrap();
        program.parse(text.as_bytes()).is_ok()
    }

    #[test]
    fn a_label_of_the_templates_words_and_numbers_is_known() {
        let v = Vocabulary::of("<|open|>call tool=\"f\" index=\"1\"<|sep|>\n<|end_of_msg|>");
        assert!(reads(&v, "index=\"27\""));
        assert!(reads(&v, "<|end_of_msg|>"));
        for unknown in [
            "indeQx=\"1\"",
            "calls",
            "index=\"two\"",
            "1st",
            "end_of",
            "東京",
        ] {
            assert!(!reads(&v, unknown), "{unknown}");
        }
    }
}
