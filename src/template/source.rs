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
//!
//! Among named templates the choice is transformers': the name the caller
//! gives; else `tool_use` when tools are given and it exists; else `default`;
//! else an error naming the templates there are (the first 20, and how many
//! more).

use std::path::Path;

use serde_json::Value as Json;

use super::gguf;
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
}

impl TemplateSource {
    /// Reads a `.jinja` file, a `.json` tokenizer config, a model folder or a
    /// GGUF file; among named templates, the one transformers renders a
    /// conversation without tools with.
    pub fn load(path: &Path) -> Result<TemplateSource> {
        TemplateSource::load_named(path, None, false)
    }

    /// [`load`](Self::load), choosing among named templates as transformers
    /// does: `name` when given; else `tool_use` when `tools` and it exists;
    /// else `default`.
    pub fn load_named(path: &Path, name: Option<&str>, tools: bool) -> Result<TemplateSource> {
        let source = if path.is_dir() {
            load_folder(path)?
        } else if gguf::is_gguf(path) {
            from_gguf(gguf::read(path)?, path)?
        } else {
            let text = read_text(path)?;
            let is_json = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            if is_json {
                tokenizer_config(&text)?
            } else {
                TemplateSource {
                    template: text,
                    ..TemplateSource::default()
                }
            }
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
    let config: Json = serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::Input, format!("tokenizer config: {e}")))?;
    let mut source = tokens_of(&config);
    set_template(&mut source, config.get("chat_template"), "tokenizer config")?;
    Ok(source)
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())))
}

/// The special tokens of a tokenizer config (no template yet).
fn tokens_of(config: &Json) -> TemplateSource {
    TemplateSource {
        bos_token: token(config, "bos_token"),
        eos_token: token(config, "eos_token"),
        ..TemplateSource::default()
    }
}

/// Sets the template from a `chat_template` value: a string or a list of
/// named templates.
fn set_template(source: &mut TemplateSource, value: Option<&Json>, what: &str) -> Result<()> {
    match value {
        Some(Json::String(s)) => source.template = s.clone(),
        Some(Json::Array(entries)) => {
            source.named = entries
                .iter()
                .filter_map(|e| {
                    Some((
                        e.get("name")?.as_str()?.to_owned(),
                        e.get("template")?.as_str()?.to_owned(),
                    ))
                })
                .collect();
            if source.named.is_empty() {
                return Err(Error::new(
                    ErrorKind::Input,
                    format!("{what}: chat_template list has no named template"),
                ));
            }
        }
        _ => {
            return Err(Error::new(
                ErrorKind::Input,
                format!("{what} has no chat_template"),
            ))
        }
    }
    Ok(())
}

/// A Hugging Face model folder.
fn load_folder(dir: &Path) -> Result<TemplateSource> {
    let config_path = dir.join("tokenizer_config.json");
    let config: Json = match std::fs::read_to_string(&config_path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| Error::new(ErrorKind::Input, format!("{}: {e}", config_path.display())))?,
        Err(_) => Json::Null,
    };
    let mut source = tokens_of(&config);
    let jinja = dir.join("chat_template.jinja");
    let json = dir.join("chat_template.json");
    if jinja.is_file() {
        source.template = read_text(&jinja)?;
    } else if json.is_file() {
        let value: Json = serde_json::from_str(&read_text(&json)?)
            .map_err(|e| Error::new(ErrorKind::Input, format!("{}: {e}", json.display())))?;
        set_template(
            &mut source,
            value.get("chat_template"),
            &json.display().to_string(),
        )?;
    } else if config.get("chat_template").is_some() {
        set_template(
            &mut source,
            config.get("chat_template"),
            &config_path.display().to_string(),
        )?;
    } else {
        return Err(Error::new(
            ErrorKind::Input,
            format!("{}: no chat_template.jinja, chat_template.json or tokenizer_config.json with a chat_template", dir.display()),
        ));
    }
    source.end_tokens = generation_end_tokens(dir, &config, source.eos_token.as_deref());
    Ok(source)
}

/// `generation_config.json`'s `eos_token_id` (one id or a list), as token
/// texts from the tokenizer's added tokens, less `eos_token` itself. Ids
/// without a known text are left out: a missing or partial tokenizer must
/// not stop the template from loading.
fn generation_end_tokens(dir: &Path, config: &Json, eos: Option<&str>) -> Vec<String> {
    let Some(generation) = std::fs::read_to_string(dir.join("generation_config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Json>(&t).ok())
    else {
        return Vec::new();
    };
    let ids: Vec<u64> = match generation.get("eos_token_id") {
        Some(Json::Number(n)) => n.as_u64().into_iter().collect(),
        Some(Json::Array(items)) => items.iter().filter_map(Json::as_u64).collect(),
        _ => Vec::new(),
    };
    let tokenizer: Json = std::fs::read_to_string(dir.join("tokenizer.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Json::Null);
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let text = added_token(config, &tokenizer, id);
        if let Some(text) = text.filter(|t| Some(t.as_str()) != eos && !out.contains(t)) {
            out.push(text);
        }
    }
    out
}

/// The text of added token `id`: `added_tokens_decoder` in the tokenizer
/// config, else `added_tokens` in `tokenizer.json`.
fn added_token(config: &Json, tokenizer: &Json, id: u64) -> Option<String> {
    let from_config = config
        .get("added_tokens_decoder")?
        .get(id.to_string())
        .and_then(|t| t.get("content"));
    let from_tokenizer = || {
        tokenizer
            .get("added_tokens")?
            .as_array()?
            .iter()
            .find(|t| t.get("id").and_then(Json::as_u64) == Some(id))?
            .get("content")
    };
    from_config
        .or_else(from_tokenizer)
        .and_then(Json::as_str)
        .map(str::to_owned)
}

/// A GGUF file's metadata as a source.
fn from_gguf(chat: gguf::GgufChat, path: &Path) -> Result<TemplateSource> {
    let mut source = TemplateSource {
        bos_token: chat.bos_token,
        eos_token: chat.eos_token,
        end_tokens: chat.end_tokens,
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

/// A special token given as a string or as an `AddedToken` object.
fn token(config: &Json, key: &str) -> Option<String> {
    match config.get(key)? {
        Json::String(s) => Some(s.clone()),
        Json::Object(o) => o.get("content")?.as_str().map(str::to_owned),
        _ => None,
    }
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
