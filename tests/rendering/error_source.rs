//! `Error::source()`: an error that reports another library's error (a
//! file's `std::io::Error`, a config's `serde_json::Error`, minijinja's)
//! keeps it as its source, so a caller can walk the chain; an error of our
//! own has none. The source is not part of equality.

use std::error::Error as _;

use chat_autoparser::{ChatTemplate, Error, ErrorKind, TemplateConfig, TemplateSource};

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("cap-error-source-{}-{name}", std::process::id()))
}

#[test]
fn a_missing_file_has_the_io_error_as_source() {
    let error = TemplateSource::load(&scratch("missing.jinja")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io);
    let io = error
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(
        io.map(std::io::Error::kind),
        Some(std::io::ErrorKind::NotFound)
    );
}

#[test]
fn a_malformed_config_has_the_json_error_as_source() {
    let path = scratch("tokenizer_config.json");
    std::fs::write(&path, "{\"chat_template\": ").unwrap();
    let error = TemplateSource::load(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(error.kind(), ErrorKind::Input);
    let json = error
        .source()
        .and_then(|s| s.downcast_ref::<serde_json::Error>());
    assert!(json.is_some_and(serde_json::Error::is_eof), "{error:?}");
}

#[test]
fn a_syntax_error_has_minijinja_s_error_as_source() {
    let error = ChatTemplate::new("{% for %}", &TemplateConfig::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Syntax);
    let jinja = error
        .source()
        .and_then(|s| s.downcast_ref::<minijinja::Error>());
    assert_eq!(
        jinja.map(minijinja::Error::kind),
        Some(minijinja::ErrorKind::SyntaxError)
    );
}

#[test]
fn an_error_of_our_own_has_no_source_and_equality_ignores_it() {
    let own = Error::new(ErrorKind::Input, "a tool needs a name");
    assert!(own.source().is_none());
    let loaded = TemplateSource::load(&scratch("missing.jinja")).unwrap_err();
    let same = Error::new(ErrorKind::Io, loaded.message()).at(loaded.location());
    assert_eq!(loaded, same);
}
