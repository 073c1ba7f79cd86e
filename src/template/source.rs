//! Loading template text from a `.jinja` file or a `tokenizer_config.json`.
//!
//! A `tokenizer_config.json` holds `chat_template` either as a string or as a
//! list of `{"name", "template"}` entries, and `bos_token`/`eos_token` either as
//! strings or as `{"content": ...}` objects. Among named templates the one named
//! `tool_use` is chosen when present (it is the superset a tool-aware analysis
//! needs), then `default`, then the first.

use std::path::Path;

use serde_json::Value as Json;

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
}

impl TemplateSource {
    /// Reads a `.jinja` file, or a `.json` tokenizer config.
    pub fn load(path: &Path) -> Result<TemplateSource> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())))?;
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_json {
            TemplateSource::from_tokenizer_config(&text)
        } else {
            Ok(TemplateSource { template: text, ..TemplateSource::default() })
        }
    }

    /// Parses the text of a `tokenizer_config.json`.
    pub fn from_tokenizer_config(text: &str) -> Result<TemplateSource> {
        let config: Json = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Input, format!("tokenizer config: {e}")))?;
        let (name, template) = match config.get("chat_template") {
            Some(Json::String(s)) => (None, s.clone()),
            Some(Json::Array(entries)) => pick_named(entries)?,
            _ => {
                return Err(Error::new(ErrorKind::Input, "tokenizer config has no chat_template"))
            }
        };
        Ok(TemplateSource {
            template,
            bos_token: token(&config, "bos_token"),
            eos_token: token(&config, "eos_token"),
            name,
        })
    }
}

fn pick_named(entries: &[Json]) -> Result<(Option<String>, String)> {
    let named: Vec<(&str, &str)> = entries
        .iter()
        .filter_map(|e| Some((e.get("name")?.as_str()?, e.get("template")?.as_str()?)))
        .collect();
    let chosen = ["tool_use", "default"]
        .iter()
        .find_map(|want| named.iter().find(|(n, _)| n == want))
        .or(named.first())
        .ok_or_else(|| Error::new(ErrorKind::Input, "chat_template list has no named template"))?;
    Ok((Some(chosen.0.to_owned()), chosen.1.to_owned()))
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

    #[test]
    fn reads_named_templates_and_token_objects() {
        let cfg = r#"{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]}"#;
        let src = TemplateSource::from_tokenizer_config(cfg).unwrap();
        assert_eq!(src.template, "T");
        assert_eq!(src.name.as_deref(), Some("tool_use"));
        assert_eq!(src.bos_token.as_deref(), Some("<s>"));
        assert_eq!(src.eos_token.as_deref(), Some("</s>"));
    }

    #[test]
    fn missing_template_is_an_input_error() {
        let err = TemplateSource::from_tokenizer_config(r#"{"bos_token": "<s>"}"#).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
        let err = TemplateSource::from_tokenizer_config("{not json").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Input);
    }
}
