//! Loading template text from where models keep it: a `.jinja` file, a
//! `tokenizer_config.json`, a Hugging Face model folder or a GGUF file.
//!
//! - A `tokenizer_config.json` holds `chat_template` either as a string or as
//!   a list of `{"name", "template"}` entries, and `bos_token`/`eos_token`
//!   either as strings or as `{"content": ...}` objects.
//! - A model folder has `chat_template.jinja` or `chat_template.json` (newer
//!   transformers) or the template inside `tokenizer_config.json`; the special
//!   tokens come from `tokenizer_config.json`, and the end tokens a server
//!   stops on from `generation_config.json`'s `eos_token_id` (ids, given
//!   text by the tokenizer's added tokens).
//! - A GGUF file (recognised by its magic, whatever its name) gives
//!   `tokenizer.chat_template` and its bos/eos token texts (see `gguf`).
//! - The vocabulary's single tokens (added tokens without whitespace; a
//!   GGUF's control and user-defined tokens), for token-aware parsing:
//!   `TemplateSource::special_tokens`.
//!
//! Among named templates the choice is transformers': the name the caller
//! gives; else `tool_use` when tools are given and it exists; else `default`;
//! else an error naming the templates there are (the first 20, and how many
//! more).
//!
//! Invariants: files are opened as `files` says (regular files only, at
//! most 64 MiB each, a model folder's files only from inside it); JSON is
//! read as `model_json` says (only the keys used are decoded, never a tree
//! of values; a key of an unexpected shape counts as absent).

use std::collections::BTreeSet;
use std::path::Path;

use super::files::{self, ModelFolder};
use super::gguf;
use super::model_json::{self, ChatTemplate, Tokenizer, TokenizerConfig};
use crate::error::{Error, ErrorKind, Result};

/// Template text plus the special tokens that came with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TemplateSource {
    /// The Jinja source.
    pub template: String,
    /// `bos_token` from the tokenizer config, if any.
    pub bos_token: Option<String>,
    /// `eos_token` from the tokenizer config, if any.
    pub eos_token: Option<String>,
    /// Name of the chosen template when the config holds several.
    pub name: Option<String>,
    /// Further tokens that end a generation (a model folder's
    /// `generation_config.json`, a GGUF file's end-of-turn token), besides
    /// `eos_token`.
    pub end_tokens: Vec<String>,
    /// Every named template, `(name, template)`, when the source holds several.
    pub named: Vec<(String, String)>,
    /// The vocabulary's single tokens: added tokens without whitespace,
    /// texts a model writes as one token (`<tool_call>`, `<|im_end|>`),
    /// special or not, in id order. From `tokenizer_config.json`'s
    /// `added_tokens_decoder`, else `tokenizer.json`'s `added_tokens`; a
    /// GGUF file's control and user-defined tokens. Give them to
    /// [`ParserConfig::special_tokens`](crate::ParserConfig::special_tokens)
    /// so that a marker typed with ordinary tokens is content.
    pub special_tokens: Vec<String>,
}

impl TemplateSource {
    /// Reads a `.jinja` file, a `.json` tokenizer config, a model folder or a
    /// GGUF file; among named templates, the one transformers renders a
    /// conversation without tools with.
    ///
    /// Only regular files are read, at most 64 MiB from each (a GGUF file's
    /// metadata included); a model folder's files only where they live
    /// inside the folder, or, for a Hugging Face cache snapshot
    /// (`<entry>/snapshots/<rev>`), in its `<entry>/blobs`. A link elsewhere,
    /// a FIFO, a device or a larger file is an [`ErrorKind::Input`] error.
    pub fn load(path: &Path) -> Result<TemplateSource> {
        TemplateSource::load_named(path, None, false)
    }

    /// [`load`](Self::load), choosing among named templates as transformers
    /// does: `name` when given; else `tool_use` when `tools` and it exists;
    /// else `default`.
    pub fn load_named(path: &Path, name: Option<&str>, tools: bool) -> Result<TemplateSource> {
        let source = if path.is_dir() {
            load_folder(path)?
        } else {
            load_file(path)?
        };
        source.choose(name, tools)
    }

    /// Parses the text of a `tokenizer_config.json`.
    pub fn from_tokenizer_config(text: &str) -> Result<TemplateSource> {
        tokenizer_config(text)?.choose(None, false)
    }

    /// This source with its named template chosen as transformers chooses
    /// (see [`load_named`](Self::load_named)); a source without named
    /// templates is returned as it is, unless a name is asked for.
    pub fn choose(mut self, name: Option<&str>, tools: bool) -> Result<TemplateSource> {
        if self.named.is_empty() {
            return match name {
                Some(n) => Err(Error::new(
                    ErrorKind::Input,
                    format!("template name {n:?} asked for, but the source has a single template"),
                )),
                None => Ok(self),
            };
        }
        let has = |n: &str| self.named.iter().any(|(k, _)| k == n);
        let wanted = match name {
            Some(n) => n,
            None if tools && has("tool_use") => "tool_use",
            None => "default",
        };
        let Some((chosen, text)) = self.named.iter().find(|(k, _)| k == wanted).cloned() else {
            return Err(Error::new(
                ErrorKind::Input,
                format!(
                    "no chat template named {wanted:?} (there are: {}); choose one by name",
                    self.some_names()
                ),
            ));
        };
        self.template = text;
        self.name = Some(chosen);
        Ok(self)
    }

    /// The named templates for an error message: the first
    /// [`NAMES_SHOWN`], then how many more (a file may name thousands).
    fn some_names(&self) -> String {
        let shown: Vec<&str> = self
            .named
            .iter()
            .take(NAMES_SHOWN)
            .map(|(name, _)| name.as_str())
            .collect();
        match self.named.len().saturating_sub(NAMES_SHOWN) {
            0 => shown.join(", "),
            more => format!("{}, and {more} more", shown.join(", ")),
        }
    }
}

/// How many template names an error message lists.
const NAMES_SHOWN: usize = 20;

/// A `tokenizer_config.json`'s template and tokens; among named templates
/// none chosen yet (the caller's name may not be `default`).
fn tokenizer_config(text: &str) -> Result<TemplateSource> {
    let config = parse_config(text, "tokenizer config")?;
    let mut source = tokens_of(&config);
    set_template(&mut source, config.chat_template, "tokenizer config")?;
    Ok(source)
}

/// A file the caller named: a GGUF file (by its magic, whatever its name), a
/// tokenizer config (`.json`) or a Jinja template.
fn load_file(path: &Path) -> Result<TemplateSource> {
    let mut file = files::open_regular(path, path)?;
    if gguf::has_magic(&mut file, path)? {
        return from_gguf(gguf::read(file, path)?, path);
    }
    let text = files::read_text(file, path)?;
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if is_json {
        return tokenizer_config(&text);
    }
    Ok(TemplateSource {
        template: text,
        ..TemplateSource::default()
    })
}

/// The keys loading reads from a tokenizer config (or `chat_template.json`);
/// `what` names it in errors.
fn parse_config<'a>(text: &'a str, what: &str) -> Result<TokenizerConfig<'a>> {
    serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::Input, format!("{what}: {e}")).caused_by(e))
}

/// The special tokens of a tokenizer config (no template yet).
fn tokens_of(config: &TokenizerConfig) -> TemplateSource {
    TemplateSource {
        bos_token: config.bos_token(),
        eos_token: config.eos_token(),
        special_tokens: config.single_tokens(),
        ..TemplateSource::default()
    }
}

/// Sets the template from a `chat_template` value: a string or a list of
/// named templates.
fn set_template(
    source: &mut TemplateSource,
    value: Option<&serde_json::value::RawValue>,
    what: &str,
) -> Result<()> {
    match model_json::chat_template(value) {
        ChatTemplate::Text(text) => source.template = text,
        ChatTemplate::Named(named) if named.is_empty() => {
            return Err(Error::new(
                ErrorKind::Input,
                format!("{what}: chat_template list has no named template"),
            ))
        }
        ChatTemplate::Named(named) => source.named = named,
        ChatTemplate::Missing => {
            return Err(Error::new(
                ErrorKind::Input,
                format!("{what} has no chat_template"),
            ))
        }
    }
    Ok(())
}

/// A Hugging Face model folder, its files read as [`ModelFolder`] allows.
fn load_folder(dir: &Path) -> Result<TemplateSource> {
    let folder = ModelFolder::new(dir)?;
    let config_text = folder.read("tokenizer_config.json")?;
    let config_path = dir.join("tokenizer_config.json").display().to_string();
    let config = match &config_text {
        Some(text) => parse_config(text, &config_path)?,
        None => TokenizerConfig::default(),
    };
    let mut source = tokens_of(&config);
    if let Some(text) = folder.read("chat_template.jinja")? {
        source.template = text;
    } else if let Some(text) = folder.read("chat_template.json")? {
        let what = dir.join("chat_template.json").display().to_string();
        let file = parse_config(&text, &what)?;
        set_template(&mut source, file.chat_template, &what)?;
    } else if config.chat_template.is_some() {
        set_template(&mut source, config.chat_template, &config_path)?;
    } else {
        return Err(Error::new(
            ErrorKind::Input,
            format!("{}: no chat_template.jinja, chat_template.json or tokenizer_config.json with a chat_template", dir.display()),
        ));
    }
    source.end_tokens = generation_end_tokens(&folder, &config, source.eos_token.as_deref())?;
    if source.special_tokens.is_empty() {
        // A malformed tokenizer counts as none, as for the end tokens.
        if let Some(text) = folder.read("tokenizer.json")? {
            let tokenizer: Tokenizer = serde_json::from_str(&text).unwrap_or_default();
            source.special_tokens = tokenizer.single_tokens();
        }
    }
    Ok(source)
}

/// `generation_config.json`'s `eos_token_id` (one id or a list), as token
/// texts from the tokenizer's added tokens (`added_tokens_decoder` in the
/// tokenizer config, else `added_tokens` in `tokenizer.json`), less
/// `eos_token` itself. Ids without a known text are left out, and a
/// malformed generation config or tokenizer counts as none: they must not
/// stop the template from loading.
fn generation_end_tokens(
    folder: &ModelFolder,
    config: &TokenizerConfig,
    eos: Option<&str>,
) -> Result<Vec<String>> {
    let Some(generation) = folder.read("generation_config.json")? else {
        return Ok(Vec::new());
    };
    let Some((ids, wanted)) = model_json::eos_token_ids(&generation) else {
        return Err(Error::new(
            ErrorKind::Input,
            format!(
                "{}: eos_token_id lists more than {} ids",
                folder.file("generation_config.json").display(),
                model_json::MAX_EOS_IDS
            ),
        ));
    };
    drop(generation);
    let mut texts = config.added_tokens(&wanted);
    if texts.len() < wanted.len() {
        if let Some(text) = folder.read("tokenizer.json")? {
            let tokenizer: Tokenizer = serde_json::from_str(&text).unwrap_or_default();
            for (id, text) in tokenizer.added_tokens(&wanted) {
                texts.entry(id).or_insert(text);
            }
        }
    }
    let mut seen = BTreeSet::new();
    Ok(ids
        .iter()
        .filter_map(|id| texts.get(id))
        .filter(|t| Some(t.as_str()) != eos && seen.insert(t.as_str()))
        .cloned()
        .collect())
}

/// A GGUF file's metadata as a source.
fn from_gguf(chat: gguf::GgufChat, path: &Path) -> Result<TemplateSource> {
    let mut source = TemplateSource {
        bos_token: chat.bos_token,
        eos_token: chat.eos_token,
        end_tokens: chat.end_tokens,
        special_tokens: chat.single_tokens,
        ..TemplateSource::default()
    };
    source
        .end_tokens
        .retain(|t| Some(t) != source.eos_token.as_ref());
    match chat.template {
        // llama.cpp writes named templates beside the default one.
        Some(default) if !chat.named.is_empty() => {
            source.named.push(("default".into(), default));
            source.named.extend(chat.named);
        }
        Some(default) => source.template = default,
        None if !chat.named.is_empty() => source.named = chat.named.into_iter().collect(),
        None => {
            return Err(Error::new(
                ErrorKind::Input,
                format!(
                    "{}: GGUF metadata has no tokenizer.chat_template",
                    path.display()
                ),
            ))
        }
    }
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMED: &str = r#"{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}, {"name": "rag", "template": "R"}]}"#;

    #[test]
    fn named_templates_are_chosen_as_transformers_chooses() {
        let src = TemplateSource::from_tokenizer_config(NAMED).unwrap();
        assert_eq!(
            (src.template.as_str(), src.name.as_deref()),
            ("D", Some("default"))
        );
        assert_eq!(src.bos_token.as_deref(), Some("<s>"));
        assert_eq!(src.eos_token.as_deref(), Some("</s>"));
        let tools = src.clone().choose(None, true).unwrap();
        assert_eq!(
            (tools.template.as_str(), tools.name.as_deref()),
            ("T", Some("tool_use"))
        );
        let rag = src.clone().choose(Some("rag"), true).unwrap();
        assert_eq!(rag.template, "R");
        let err = src.choose(Some("nope"), false).unwrap_err();
        assert_eq!(err.message(), "no chat template named \"nope\" (there are: default, tool_use, rag); choose one by name");
    }

    #[test]
    fn an_unknown_name_lists_the_first_twenty_names() {
        let entries: Vec<String> = (0..10_000)
            .map(|i| format!(r#"{{"name": "t{i}", "template": "T"}}"#))
            .collect();
        let config = format!(r#"{{"chat_template": [{}]}}"#, entries.join(", "));
        let err = TemplateSource::from_tokenizer_config(&config).unwrap_err();
        let first: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
        assert_eq!(
            err.message(),
            format!(
                "no chat template named \"default\" (there are: {}, and 9980 more); choose one by name",
                first.join(", ")
            )
        );
    }

    #[test]
    fn a_config_file_without_default_gives_the_template_asked_for() {
        let dir = std::env::temp_dir().join(format!("cap-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer_config.json");
        let config = r#"{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "rag", "template": "R"}]}"#;
        std::fs::write(&path, config).unwrap();
        let rag = TemplateSource::load_named(&path, Some("rag"), false).unwrap();
        let tools = TemplateSource::load_named(&path, None, true).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!((rag.template.as_str(), tools.template.as_str()), ("R", "T"));
    }

    #[test]
    fn missing_template_is_an_input_error() {
        let err = TemplateSource::from_tokenizer_config(r#"{"bos_token": "<s>"}"#).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let err = TemplateSource::from_tokenizer_config("{not json").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let only_tools = r#"{"chat_template": [{"name": "tool_use", "template": "T"}]}"#;
        let err = TemplateSource::from_tokenizer_config(only_tools).unwrap_err();
        assert_eq!(
            err.message(),
            "no chat template named \"default\" (there are: tool_use); choose one by name"
        );
    }
}
