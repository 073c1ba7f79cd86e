//! Model folders and template files built to make loading read what it
//! should not, wait forever, or grow without end (issue 28): links out of
//! the folder (`/etc/passwd`, `/proc/self/environ`, `/dev/zero`), FIFOs,
//! files over 64 MiB, configs whose unused keys would make a value tree of
//! gigabytes. Each ends with its exact error, or the analysis of the
//! template it holds; and a Hugging Face cache snapshot, whose files are
//! links to `../../blobs/`, still loads.
//!
//! Each case runs the command in a child limited to 1 GiB of address space
//! and killed after 20 s (a hang is then a failed assertion, not a stuck
//! test run).

use crate::common::cli;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chat_autoparser::TemplateSource;

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cap-cli-files-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn hermes() -> String {
    std::fs::read_to_string(crate::common::root().join("templates/hermes-think.jinja")).unwrap()
}

/// How a bounded `analyze --json` run ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Exit code and stdout.
    Ok(String),
    /// Exit code 1 and its one stderr line.
    Failed(String),
    /// Anything else: killed at 20 s, aborted, another code (with stderr).
    Broke(String),
}

/// `chat-autoparser analyze PATH --json` with at most 1 GiB of address
/// space and 20 s of wall time.
fn analyze(path: &Path) -> Ended {
    let mut child = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 1048576 && exec \"$0\" analyze \"$1\" --json",
            env!("CARGO_BIN_EXE_chat-autoparser"),
        ])
        .arg(path)
        .current_dir(crate::common::root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            child.wait().ok();
            return Ended::Broke("still running after 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ended::Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Some(1) => Ended::Failed(stderr),
        code => Ended::Broke(format!("{code:?}: {stderr}")),
    }
}

fn input_error(message: String) -> Ended {
    Ended::Failed(format!("chat-autoparser: input error: {message}\n"))
}

/// The analysis of the shipped Hermes template, as `analyze --json` prints it.
fn hermes_analysis() -> Ended {
    let out = cli::run(&["analyze", "templates/hermes-think.jinja", "--json"], b"");
    assert_eq!(out.status.code(), Some(0));
    Ended::Ok(String::from_utf8(out.stdout).unwrap())
}

/// A model folder holding the Hermes template; `file` is then made what
/// the case needs.
fn model_folder(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("chat_template.jinja"), hermes()).unwrap();
    folder
}

fn link(target: impl AsRef<Path>, at: &Path) {
    std::fs::remove_file(at).ok();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// A sparse file of `len` zero bytes.
fn zeros(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
}

#[test]
fn links_out_of_a_model_folder_are_refused() {
    let dir = scratch("links-out");
    std::fs::write(dir.join("secret.jinja"), "SECRET").unwrap();
    let cases = [
        ("passwd", "chat_template.jinja", "/etc/passwd"),
        ("sibling", "chat_template.jinja", "../secret.jinja"),
        ("zero", "tokenizer_config.json", "/dev/zero"),
        ("generation", "generation_config.json", "/etc/passwd"),
    ];
    for (name, file, target) in cases {
        let at = model_folder(&dir, name).join(file);
        link(target, &at);
        let real = std::fs::canonicalize(at.parent().unwrap().join(target)).unwrap();
        assert_eq!(
            analyze(at.parent().unwrap()),
            input_error(format!(
                "{}: links to {}, outside the model folder",
                at.display(),
                real.display()
            )),
            "{name}"
        );
    }
    // /proc/self is the child's own /proc/<pid>.
    let at = model_folder(&dir, "environ").join("chat_template.jinja");
    link("/proc/self/environ", &at);
    let Ended::Failed(error) = analyze(at.parent().unwrap()) else {
        panic!("environ: not refused");
    };
    let prefix = format!(
        "chat-autoparser: input error: {}: links to /proc/",
        at.display()
    );
    assert!(
        error.starts_with(&prefix) && error.ends_with("/environ, outside the model folder\n"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn files_that_are_not_regular_are_refused_without_waiting() {
    let dir = scratch("not-regular");
    let folder = model_folder(&dir, "fifo-config");
    let fifo = folder.join("tokenizer_config.json");
    mkfifo(&fifo);
    let named_fifo = dir.join("template.jinja");
    mkfifo(&named_fifo);
    for path in [&fifo, &named_fifo, &PathBuf::from("/dev/zero")] {
        let folder_or_file = if path == &fifo { &folder } else { path };
        assert_eq!(
            analyze(folder_or_file),
            input_error(format!("{}: not a regular file", path.display())),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_more_than_64_mib_is_read_from_a_file() {
    let dir = scratch("large");
    let folder = model_folder(&dir, "large-config");
    let config = folder.join("tokenizer_config.json");
    zeros(&config, 100 << 20);
    let template = dir.join("large.jinja");
    zeros(&template, 100 << 20);
    for (path, shown) in [(&folder, &config), (&template, &template)] {
        assert_eq!(
            analyze(path),
            input_error(format!(
                "{}: larger than 64 MiB, the most read from a template or metadata file",
                shown.display()
            )),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `[0,0,...]`: `bytes` of JSON that a `serde_json::Value` tree would make
/// some forty times larger.
fn zeros_list(bytes: usize) -> String {
    let mut list = "[0".to_owned();
    list.push_str(&",0".repeat(bytes / 2));
    list.push(']');
    list
}

#[test]
fn large_json_files_cost_their_text_not_a_value_tree() {
    let dir = scratch("json-tree");
    let folder = model_folder(&dir, "model");
    // 28 MB each: a value tree of either is over the child's 1 GiB.
    let config = format!(
        r#"{{"bos_token": "<s>", "eos_token": "<|im_end|>", "unused": {},
            "added_tokens_decoder": {{"2": {{"content": "<|im_end|>"}}}}}}"#,
        zeros_list(28 << 20)
    );
    std::fs::write(folder.join("tokenizer_config.json"), config).unwrap();
    std::fs::write(
        folder.join("generation_config.json"),
        r#"{"eos_token_id": [2, 7]}"#,
    )
    .unwrap();
    let tokenizer = format!(
        r#"{{"model": {{"vocab": {}}}, "added_tokens": [{{"id": 7, "content": "<|eom|>"}}]}}"#,
        zeros_list(28 << 20)
    );
    std::fs::write(folder.join("tokenizer.json"), tokenizer).unwrap();
    assert_eq!(analyze(&folder), hermes_analysis());
    let source = TemplateSource::load(&folder).unwrap();
    assert_eq!(source.end_tokens, ["<|eom|>"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_generation_config_of_thousands_of_end_ids_is_refused() {
    let dir = scratch("end-ids");
    let folder = model_folder(&dir, "model");
    let ids: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
    let generation = folder.join("generation_config.json");
    std::fs::write(
        &generation,
        format!(r#"{{"eos_token_id": [{}]}}"#, ids.join(",")),
    )
    .unwrap();
    assert_eq!(
        analyze(&folder),
        input_error(format!(
            "{}: eos_token_id lists more than 1024 ids",
            generation.display()
        ))
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A Hugging Face cache entry: `models--org--m/{blobs,refs,snapshots/rev}`,
/// the snapshot's files links to `../../blobs/<hash>`.
fn hf_cache(dir: &Path) -> PathBuf {
    let entry = dir.join("hub").join("models--org--m");
    let (blobs, snapshot) = (
        entry.join("blobs"),
        entry.join("snapshots").join("0123abcd"),
    );
    for folder in [&blobs, &snapshot, &entry.join("refs")] {
        std::fs::create_dir_all(folder).unwrap();
    }
    std::fs::write(entry.join("refs").join("main"), "0123abcd").unwrap();
    let files = [
        ("chat_template.jinja", hermes()),
        (
            "tokenizer_config.json",
            r#"{"bos_token": "<s>", "eos_token": {"content": "<|im_end|>"},
                "added_tokens_decoder": {"7": {"content": "<|eom|>"}}}"#
                .to_owned(),
        ),
        (
            "generation_config.json",
            r#"{"eos_token_id": [7]}"#.to_owned(),
        ),
    ];
    for (i, (name, text)) in files.iter().enumerate() {
        let hash = format!("b10b{i}");
        std::fs::write(blobs.join(&hash), text).unwrap();
        link(format!("../../blobs/{hash}"), &snapshot.join(name));
    }
    snapshot
}

#[test]
fn a_hugging_face_cache_snapshot_loads_through_its_blob_links() {
    let dir = scratch("hf-cache");
    let snapshot = hf_cache(&dir);
    // As the cache is, and through a link the user made to the snapshot.
    let named = dir.join("my-model");
    link(&snapshot, &named);
    for folder in [&snapshot, &named] {
        assert_eq!(analyze(folder), hermes_analysis(), "{}", folder.display());
        let source = TemplateSource::load(folder).unwrap();
        assert_eq!(
            (source.bos_token.as_deref(), source.eos_token.as_deref()),
            (Some("<s>"), Some("<|im_end|>"))
        );
        assert_eq!(source.end_tokens, ["<|eom|>"]);
    }
    // Inside the cache entry, but not a blob: refused.
    let template = snapshot.join("chat_template.jinja");
    link("../../refs/main", &template);
    let real = std::fs::canonicalize(&template).unwrap();
    assert_eq!(
        analyze(&snapshot),
        input_error(format!(
            "{}: links to {}, outside the model folder",
            template.display(),
            real.display()
        ))
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_template_file_named_directly_may_be_a_link() {
    let dir = scratch("direct-link");
    let template = dir.join("elsewhere.jinja");
    std::fs::write(&template, hermes()).unwrap();
    let named = dir.join("t.jinja");
    link(&template, &named);
    assert_eq!(analyze(&named), hermes_analysis());
    std::fs::remove_dir_all(&dir).ok();
}

/// A model folder in `dir` with the Hermes template and a `tokenizer.json`
/// whose added tokens are `<|im_end|>` (special), `<tool_call>` and
/// `</tool_call>` (added, not marked special: Qwen's way) and a whitespace
/// token (never a single marker).
fn hermes_with_added_tokens(dir: &Path) -> PathBuf {
    let folder = model_folder(dir, "model");
    std::fs::write(folder.join("chat_template.jinja"), hermes()).unwrap();
    std::fs::write(
        folder.join("tokenizer.json"),
        r#"{"added_tokens": [{"id": 5, "content": "<|im_end|>", "special": true},
            {"id": 6, "content": "<tool_call>", "special": false},
            {"id": 7, "content": "</tool_call>", "special": false},
            {"id": 8, "content": "  ", "special": false}], "model": {}}"#,
    )
    .unwrap();
    folder
}

#[test]
fn a_model_folders_added_tokens_make_its_markers_tokens() {
    use chat_autoparser::{ChatTemplate, Options, ParserConfig, TemplateConfig};
    let dir = scratch("special-tokens");
    let folder = hermes_with_added_tokens(&dir);
    let source = TemplateSource::load(&folder).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        source.special_tokens,
        ["<|im_end|>", "<tool_call>", "</tool_call>"]
    );
    let analysis = ChatTemplate::new(&source.template, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let tools = vec![serde_json::json!({"type": "function", "function": {"name": "f"}})];
    let config = ParserConfig::from(Options::default().with_tools(tools))
        .with_special_tokens(source.special_tokens);
    let parser = analysis.parser(&config).unwrap();
    let output = r#"<tool_call>{"name": "f", "arguments": {}}</tool_call>"#;
    let typed = parser.parse_tokens_report(output, &[], false).unwrap();
    assert_eq!(typed.message.content.as_deref(), Some(output));
    let sampled = parser
        .parse_tokens_report(output, &[0..11, output.len() - 12..output.len()], false)
        .unwrap();
    assert_eq!(sampled.message.tool_calls[0].function.name, "f");
}

/// `grammar --special-tokens` on a model folder writes the markers its
/// vocabulary holds as llama.cpp tokens (and xgrammar tokens in the
/// structural tag); without the flag they are text; a template file alone
/// has no vocabulary, an input error.
#[test]
fn grammar_names_a_model_folders_special_tokens_when_asked() {
    let dir = scratch("grammar-special-tokens");
    let folder = hermes_with_added_tokens(&dir);
    let tools = dir.join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "f"}}]"#,
    )
    .unwrap();
    let grammar = |extra: &[&str], template: &Path| {
        let mut args = vec![
            "grammar",
            template.to_str().unwrap(),
            "--tools",
            tools.to_str().unwrap(),
            "--tool-choice",
            "required",
        ];
        args.extend(extra);
        cli::run(&args, b"")
    };
    let named = grammar(&["--special-tokens"], &folder);
    let plain = grammar(&[], &folder);
    let tag = grammar(&["--special-tokens", "--format", "structural-tag"], &folder);
    let file = grammar(&["--special-tokens"], &folder.join("chat_template.jinja"));
    std::fs::remove_dir_all(&dir).ok();
    let named = String::from_utf8_lossy(&named.stdout).into_owned();
    let plain = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert!(
        named.contains(" <tool_call> ") && !named.contains("\"<tool_call>\""),
        "{named}"
    );
    assert!(plain.contains("\"<tool_call>\""), "{plain}");
    let tag: serde_json::Value = serde_json::from_slice(&tag.stdout).unwrap();
    let tag = serde_json::to_string(&tag["structural_tag"]).unwrap();
    assert!(
        tag.contains(r#""trigger_tokens":["<tool_call>"]"#)
            && tag.contains(r#""end":{"type":"token","token":"</tool_call>"}"#),
        "{tag}"
    );
    assert_eq!(file.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&file.stderr)
            .contains("--special-tokens: the template comes with no vocabulary"),
        "{}",
        String::from_utf8_lossy(&file.stderr)
    );
}
