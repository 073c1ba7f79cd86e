//! What the report examples (`coverage`, `lint_report`) share: the templates
//! of a folder, and loading one the way the command line does.

use std::path::{Path, PathBuf};

use chat_autoparser::{ChatTemplate, TemplateConfig, TemplateSource};

/// The `.jinja` files in a directory (sorted), or the file itself.
pub fn templates_in(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    found.sort();
    Ok(found)
}

/// Loads and compiles one template with the default configuration.
pub fn load(path: &Path) -> Result<ChatTemplate, String> {
    let source = TemplateSource::load(path).map_err(|e| e.to_string())?;
    ChatTemplate::from_source(&source, &TemplateConfig::default()).map_err(|e| e.to_string())
}
