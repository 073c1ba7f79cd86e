//! The keys loading reads from a model's JSON files (`tokenizer_config.json`,
//! `chat_template.json`, `generation_config.json`, `tokenizer.json`), decoded
//! without building a tree of values.
//!
//! A `tokenizer.json` is tens of MB of vocabulary, and a `serde_json::Value`
//! of a JSON list of numbers costs some forty times its text. So each file
//! is read as a struct of the keys used; every other key is skipped unparsed
//! (`IgnoredAny`). Keys whose use depends on others (the added tokens, the
//! templates list) are kept as borrowed raw JSON and walked later, one item at
//! a time, keeping only the items wanted; items are seen as [`Loose`] values,
//! which make no error for a misshapen item. Memory is the file's text plus
//! what is kept, time one pass per key, whatever the file holds.
//!
//! Invariant: a used key of an unexpected shape (a number where a string was
//! expected, a malformed list entry) reads as absent, never as an error; only
//! a file that is not JSON, or not a JSON object, is one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The keys of a `tokenizer_config.json` that loading reads.
#[derive(Deserialize, Default)]
pub(crate) struct TokenizerConfig<'a> {
    #[serde(default)]
    bos_token: Loose,
    #[serde(default)]
    eos_token: Loose,
    /// Also the one key of a `chat_template.json`.
    #[serde(borrow, default)]
    pub chat_template: Option<&'a RawValue>,
    #[serde(borrow, default)]
    added_tokens_decoder: Option<&'a RawValue>,
}

impl TokenizerConfig<'_> {
    /// `bos_token`, given as a string or as an `AddedToken` object.
    pub(crate) fn bos_token(&self) -> Option<String> {
        self.bos_token.special_token()
    }

    /// `eos_token`, given as a string or as an `AddedToken` object.
    pub(crate) fn eos_token(&self) -> Option<String> {
        self.eos_token.special_token()
    }

    /// The texts of the `wanted` ids in `added_tokens_decoder`.
    pub(crate) fn added_tokens(&self, wanted: &BTreeSet<u64>) -> BTreeMap<u64, String> {
        token_texts(self.added_tokens_decoder, Some(wanted))
    }

    /// The [single tokens](single_tokens) of `added_tokens_decoder`.
    pub(crate) fn single_tokens(&self) -> Vec<String> {
        single_tokens(self.added_tokens_decoder)
    }
}

/// The key of a `tokenizer.json` that loading reads.
#[derive(Deserialize, Default)]
pub(crate) struct Tokenizer<'a> {
    #[serde(borrow, default)]
    added_tokens: Option<&'a RawValue>,
}

impl Tokenizer<'_> {
    /// The texts of the `wanted` ids in `added_tokens`.
    pub(crate) fn added_tokens(&self, wanted: &BTreeSet<u64>) -> BTreeMap<u64, String> {
        token_texts(self.added_tokens, Some(wanted))
    }

    /// The [single tokens](single_tokens) of `added_tokens`.
    pub(crate) fn single_tokens(&self) -> Vec<String> {
        single_tokens(self.added_tokens)
    }
}

/// The most added tokens kept as single tokens: a vocabulary adds tens to
/// a few thousand; more is a crafted file.
pub(crate) const MAX_SINGLE_TOKENS: usize = 1 << 16;

/// The added tokens' texts without whitespace, in id order: texts the
/// tokenizer never splits, which a model writes as one token, special or
/// not (Qwen's `<tool_call>` and DeepSeek-R1's `<think>` are added tokens
/// not marked special, yet the template's markers). Runs of spaces some
/// vocabularies add are text, and left out. At most
/// [`MAX_SINGLE_TOKENS`] (the lowest ids).
pub(crate) fn single_tokens(raw: Option<&RawValue>) -> Vec<String> {
    token_texts(raw, None)
        .into_values()
        .filter(|t| !t.is_empty() && !t.chars().any(char::is_whitespace))
        .collect()
}

/// The most distinct ids read from `eos_token_id`. A model has a handful;
/// a list of millions is a crafted file, whose every id would cost a lookup
/// in the added tokens and a place in memory.
pub(crate) const MAX_EOS_IDS: usize = 1024;

/// `generation_config.json`'s `eos_token_id` (one id or a list): the ids in
/// the order given, and the same ids as a set; items that are not ids are
/// left out. `None` when there are more than [`MAX_EOS_IDS`].
pub(crate) fn eos_token_ids(text: &str) -> Option<(Vec<u64>, BTreeSet<u64>)> {
    #[derive(Deserialize)]
    struct GenerationConfig<'a> {
        #[serde(borrow, default)]
        eos_token_id: Option<&'a RawValue>,
    }
    let (mut ids, mut seen, mut too_many) = (Vec::new(), BTreeSet::new(), false);
    let raw = serde_json::from_str::<GenerationConfig>(text)
        .ok()
        .and_then(|c| c.eos_token_id);
    let mut keep = |item: Loose| {
        let Loose::Id(id) = item else { return };
        if !seen.contains(&id) {
            if seen.len() == MAX_EOS_IDS {
                too_many = true;
            } else {
                seen.insert(id);
                ids.push(id);
            }
        }
    };
    if let Some(raw) = raw {
        match serde_json::from_str::<u64>(raw.get()) {
            Ok(id) => keep(Loose::Id(id)),
            Err(_) => {
                each_item(raw, keep);
            }
        }
    }
    (!too_many).then_some((ids, seen))
}

/// What a `chat_template` key holds.
pub(crate) enum ChatTemplate {
    /// One template.
    Text(String),
    /// A list; `(name, template)` of its well-formed `{"name", "template"}`
    /// entries.
    Named(Vec<(String, String)>),
    /// Anything else, or no key.
    Missing,
}

/// Decodes a `chat_template` value.
pub(crate) fn chat_template(raw: Option<&RawValue>) -> ChatTemplate {
    let Some(raw) = raw else {
        return ChatTemplate::Missing;
    };
    if let Ok(text) = serde_json::from_str::<String>(raw.get()) {
        return ChatTemplate::Text(text);
    }
    let mut named = Vec::new();
    let listed = each_item(raw, |item| {
        if let Loose::Object(m) = item {
            if let (Some(name), Some(template)) = (m.name, m.template) {
                named.push((name, template));
            }
        }
    });
    if listed {
        ChatTemplate::Named(named)
    } else {
        ChatTemplate::Missing
    }
}

/// Gives each item of the list `raw` to `keep`; false when `raw` is not a
/// list.
fn each_item(raw: &RawValue, keep: impl FnMut(Loose)) -> bool {
    let mut json = serde_json::Deserializer::from_str(raw.get());
    json.deserialize_seq(EachItem(keep)).is_ok()
}

/// Reads a list one item at a time, as [`Loose`] values.
struct EachItem<F>(F);

impl<'de, F: FnMut(Loose)> Visitor<'de> for EachItem<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<Loose>()? {
            (self.0)(item);
        }
        Ok(())
    }
}

/// A JSON value as loading sees it: a string, an unsigned integer, or the
/// members of an object that loading reads. Any other value, and a member of
/// another shape, is passed over with no error made and nothing kept, so a
/// file of misshapen items costs no more than one of well-formed ones.
#[derive(Default)]
enum Loose {
    Text(String),
    Id(u64),
    Object(Box<Members>),
    #[default]
    Other,
}

/// The members loading reads from an object: a named template's `name` and
/// `template`, an added token's `id` and `content`.
#[derive(Default)]
struct Members {
    name: Option<String>,
    template: Option<String>,
    content: Option<String>,
    id: Option<u64>,
}

impl Loose {
    fn text(self) -> Option<String> {
        match self {
            Loose::Text(text) => Some(text),
            _ => None,
        }
    }

    fn id(self) -> Option<u64> {
        match self {
            Loose::Id(id) => Some(id),
            _ => None,
        }
    }

    /// A special token: a string, or an `AddedToken` object's `content`.
    fn special_token(&self) -> Option<String> {
        match self {
            Loose::Text(text) => Some(text.clone()),
            Loose::Object(m) => m.content.clone(),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
        Ok(Loose::Text(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Loose, E> {
        Ok(Loose::Text(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
        Ok(Loose::Id(v))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Loose, E> {
        Ok(Loose::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Loose, E> {
        Ok(Loose::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Loose, E> {
        Ok(Loose::Other)
    }

    fn visit_unit<E>(self) -> Result<Loose, E> {
        Ok(Loose::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Loose::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
        let mut m = Members::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => m.name = map.next_value::<Loose>()?.text(),
                "template" => m.template = map.next_value::<Loose>()?.text(),
                "content" => m.content = map.next_value::<Loose>()?.text(),
                "id" => m.id = map.next_value::<Loose>()?.id(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Loose::Object(Box::new(m)))
    }
}

/// The texts of the `wanted` token ids (`None`: all, up to
/// [`MAX_SINGLE_TOKENS`]) in an `added_tokens_decoder` map
/// (`{"id": {"content": ...}}`) or an `added_tokens` list
/// (`[{"id", "content"}]`); the first entry of an id counts.
fn token_texts(raw: Option<&RawValue>, wanted: Option<&BTreeSet<u64>>) -> BTreeMap<u64, String> {
    let Some(raw) = raw.filter(|_| wanted.is_none_or(|w| !w.is_empty())) else {
        return BTreeMap::new();
    };
    let mut json = serde_json::Deserializer::from_str(raw.get());
    TokenTexts { wanted }
        .deserialize(&mut json)
        .unwrap_or_default()
}

/// Reads token texts one entry at a time, keeping the wanted ids only.
struct TokenTexts<'w> {
    wanted: Option<&'w BTreeSet<u64>>,
}

impl TokenTexts<'_> {
    /// Whether to keep `id`, with `kept` texts kept so far.
    fn wants(&self, id: u64, kept: usize) -> bool {
        match self.wanted {
            Some(wanted) => wanted.contains(&id),
            None => kept < MAX_SINGLE_TOKENS,
        }
    }
}

impl<'de> DeserializeSeed<'de> for TokenTexts<'_> {
    type Value = BTreeMap<u64, String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TokenTexts<'_> {
    type Value = BTreeMap<u64, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("added tokens, as a map by id or a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut texts = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let wanted = key.parse().ok().filter(|&id| self.wants(id, texts.len()));
            let Some(id) = wanted else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if let Loose::Object(token) = map.next_value::<Loose>()? {
                if let Some(content) = token.content {
                    texts.entry(id).or_insert(content);
                }
            }
        }
        Ok(texts)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut texts = BTreeMap::new();
        while let Some(item) = seq.next_element::<Loose>()? {
            let Loose::Object(token) = item else { continue };
            if let (Some(id), Some(content)) = (token.id, token.content) {
                if self.wants(id, texts.len()) {
                    texts.entry(id).or_insert(content);
                }
            }
        }
        Ok(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> TokenizerConfig<'_> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn keys_of_other_shapes_read_as_absent() {
        let c = config(
            r#"{"bos_token": 5, "eos_token": {"content": 7}, "chat_template": {"x": 1},
                "added_tokens_decoder": [1, 2], "model": {"vocab": {"a": 0}}}"#,
        );
        assert_eq!((c.bos_token(), c.eos_token()), (None, None));
        assert!(matches!(
            chat_template(c.chat_template),
            ChatTemplate::Missing
        ));
        assert_eq!(c.added_tokens(&BTreeSet::from([1])), BTreeMap::new());
        assert_eq!(
            eos_token_ids(r#"{"eos_token_id": "2"}"#).unwrap().0,
            Vec::<u64>::new()
        );
        assert_eq!(eos_token_ids("[not json").unwrap().0, Vec::<u64>::new());
    }

    #[test]
    fn lists_keep_their_well_formed_items_in_order() {
        let c = config(
            r#"{"chat_template": [{"name": "a", "template": "A"}, 3, {"name": "b"},
                {"name": "c", "template": "C", "extra": [1]}]}"#,
        );
        let ChatTemplate::Named(named) = chat_template(c.chat_template) else {
            panic!("a list of named templates");
        };
        assert_eq!(named, [("a".into(), "A".into()), ("c".into(), "C".into())]);
        assert_eq!(
            eos_token_ids(r#"{"eos_token_id": [9, "x", 2, 9, -1, 2]}"#),
            Some((vec![9, 2], BTreeSet::from([2, 9])))
        );
        assert_eq!(eos_token_ids(r#"{"eos_token_id": 4}"#).unwrap().0, [4]);
        // Repeats count once.
        let ids = |distinct: usize, len: usize| {
            let listed: Vec<String> = (0..len).map(|i| (i % distinct).to_string()).collect();
            eos_token_ids(&format!(r#"{{"eos_token_id": [{}]}}"#, listed.join(",")))
        };
        let most = ids(MAX_EOS_IDS, 3 * MAX_EOS_IDS).map(|(ids, _)| ids);
        assert_eq!(most, Some((0..MAX_EOS_IDS as u64).collect()));
        assert_eq!(ids(MAX_EOS_IDS + 1, MAX_EOS_IDS + 1), None);
    }

    #[test]
    fn token_texts_keep_only_the_wanted_ids() {
        let c = config(
            r#"{"added_tokens_decoder": {"1": {"content": "<a>"}, "2": {"content": 2},
                "x": {}, "3": {"content": "<c>", "special": true}}}"#,
        );
        let wanted = BTreeSet::from([2, 3, 4]);
        assert_eq!(
            c.added_tokens(&wanted),
            BTreeMap::from([(3, "<c>".to_owned())])
        );
        let t: Tokenizer = serde_json::from_str(
            r#"{"added_tokens": [{"id": 4, "content": "<d>"}, {"id": 4, "content": "<e>"},
                {"content": "<f>"}, {"id": 2, "content": "<b>"}], "model": {}}"#,
        )
        .unwrap();
        assert_eq!(
            t.added_tokens(&wanted),
            BTreeMap::from([(2, "<b>".to_owned()), (4, "<d>".to_owned())])
        );
    }

    #[test]
    fn single_tokens_are_the_added_tokens_without_whitespace_in_id_order() {
        let c = config(
            r#"{"added_tokens_decoder": {"7": {"content": "</tool_call>", "special": false},
                "2": {"content": "<|im_end|>", "special": true}, "3": {"content": "    "},
                "4": {"content": "<a b>"}, "5": {"content": 5}, "x": {"content": "<x>"}}}"#,
        );
        assert_eq!(c.single_tokens(), ["<|im_end|>", "</tool_call>"]);
        let t: Tokenizer = serde_json::from_str(
            r#"{"added_tokens": [{"id": 9, "content": "<think>"}, {"id": 1, "content": "\n"},
                {"content": "<f>"}, {"id": 2, "content": "<s>"}], "model": {}}"#,
        )
        .unwrap();
        assert_eq!(t.single_tokens(), ["<s>", "<think>"]);
        assert_eq!(config("{}").single_tokens(), Vec::<String>::new());
    }
}
