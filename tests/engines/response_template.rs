//! The transformers `response_template` export, checked by its consumer
//! (issue 14): transformers' own `parse_response`, run by
//! `cli/src/response_template_check.py` in one Python process for all cases.
//!
//! Over every corpus template (`../shared/corpus/llamacpp/*.jinja`, skipped
//! with a message when absent) whose analysis found tool calls, and over the
//! shipped `templates/*.jinja`, each case is an assistant turn rendered with
//! the template after a user message, as `tests/parser/round_trip.rs` makes
//! them: content only, reasoning + content, one call, content + call, parallel
//! calls, nested arguments, reasoning + call (thinking on), and content and
//! a call with thinking off (templates with reasoning). The output is the
//! render after the generation prompt (or after the common prefix when the
//! turn does not render as prompt + output), less the end of turn.
//!
//! Each output is parsed by our parser and by `parse_response(output,
//! template, prefix=prompt, tools=tools)` with the template exported from the
//! same protocol; the two messages must agree on content and reasoning
//! (trimmed, empty = absent) and on each call's name and arguments (as JSON
//! values). Prints the counts, per template and in all, and every miss;
//! asserts floors at the counts measured when the test was written. Skips
//! with a message when transformers cannot be imported (`tools/test.sh`
//! installs it into `.venv`). `RESPONSE_TEMPLATE_SHOW=STEM` prints the
//! template's export for each of its cases.

use chat_autoparser::Options;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chat_autoparser::analysis::ReasoningMode;
use chat_autoparser::grammar::response_template;
use chat_autoparser::{Analysis, ChatTemplate, ParserConfig, Protocol, TemplateConfig};
use serde_json::{json, Value};

use crate::common::roundtrip;
use crate::common::turns;

/// Equal corpus cases must not fall below this.
const MIN_CORPUS_EQUAL: usize = 417;
/// Equal shipped-template cases must not fall below this.
const MIN_SHIPPED_EQUAL: usize = 59;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The round-trip tools (`common/roundtrip.rs`).
fn tools() -> Vec<Value> {
    roundtrip::tools()
}

/// One assistant turn to render and parse back.
struct Case {
    name: &'static str,
    content: &'static str,
    reasoning: &'static str,
    calls: Vec<(&'static str, String)>,
    /// The thinking switch of the render (`None`: the template's default).
    thinking: Option<bool>,
}

fn case(
    name: &'static str,
    content: &'static str,
    reasoning: &'static str,
    calls: Vec<(&'static str, String)>,
) -> Case {
    let thinking = (!reasoning.is_empty()).then_some(true);
    Case {
        name,
        content,
        reasoning,
        calls,
        thinking,
    }
}

fn cases(analysis: &Analysis) -> Vec<Case> {
    let reasoning = analysis.reasoning.mode != ReasoningMode::None;
    let parallel = analysis.tools.as_ref().is_some_and(|t| t.parallel);
    let weather = || ("get_weather", r#"{"city": "Paris", "days": 3}"#.to_string());
    let nested = json!({
        "text": "He said \"hi\" <b>bold</b> & 'more'\nline two — café 東京 🌧",
        "meta": {"nested": {"a": [1, 2.5, {"b": null}], "ok": true}, "path": "C:\\tmp\\x"},
        "tags": ["x", "<y>", "a & b"]
    })
    .to_string();
    let mut out = vec![case(
        "content",
        "Hello! How can I help you today?",
        "",
        vec![],
    )];
    if reasoning {
        out.push(case(
            "reasoning+content",
            "It is sunny in Paris.",
            "The user asks about the weather; I know it is sunny.",
            vec![],
        ));
        out.push(Case {
            thinking: Some(false),
            ..case(
                "content/thinking-off",
                "Hello! How can I help you today?",
                "",
                vec![],
            )
        });
    }
    if analysis.tools.is_some() {
        out.push(case("call", "", "", vec![weather()]));
        out.push(case(
            "content+call",
            "Let me check the weather.",
            "",
            vec![weather()],
        ));
        if parallel {
            let tokyo = ("get_weather", r#"{"city": "Tokyo", "days": 1}"#.to_string());
            out.push(case("parallel", "", "", vec![weather(), tokyo]));
        }
        out.push(case("nested-args", "", "", vec![("save_note", nested)]));
        if reasoning {
            out.push(case(
                "reasoning+call",
                "",
                "I need the forecast, so I will call the weather tool.",
                vec![weather()],
            ));
            out.push(Case {
                thinking: Some(false),
                ..case("call/thinking-off", "", "", vec![weather()])
            });
        }
    }
    out
}

/// A rendered case: the prompt, the output after it, and what parses it.
struct Rendered {
    template: String,
    case: &'static str,
    prompt: String,
    output: String,
    config: ParserConfig,
    exported: Value,
}

/// Renders `case` and cuts the output (see `common/turns.rs`); `Err` says
/// why the case is skipped.
fn render(
    tmpl: &ChatTemplate,
    analysis: &Analysis,
    case: &Case,
) -> Result<(String, String), String> {
    let turn = turns::turn(case.content, case.reasoning, &case.calls);
    let r = turns::render_turn(tmpl, analysis, &tools(), &turn, case.thinking)
        .map_err(|e| format!("not rendered: {e}"))?;
    for (field, text) in [("reasoning", case.reasoning), ("content", case.content)] {
        if !text.is_empty() && !r.output.contains(text) {
            return Err(format!("the template drops the {field}"));
        }
    }
    Ok((r.generation_prompt, r.output))
}

/// A message reduced to what is compared.
#[derive(Debug, PartialEq)]
struct Reduced {
    content: String,
    reasoning: String,
    calls: Vec<(String, Value)>,
}

/// Our parser's message (its OpenAI JSON form) or transformers' message.
fn reduce(message: &Value) -> Reduced {
    let text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let call = |c: &Value| {
        let f = c.get("function").unwrap_or(c);
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let args = match f.get("arguments") {
            Some(Value::String(s)) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
            Some(v) => v.clone(),
            None => Value::Null,
        };
        (name, args)
    };
    Reduced {
        content: text("content"),
        reasoning: text("reasoning_content"),
        calls: calls.iter().map(call).collect(),
    }
}

/// The interpreter to run the checker with, if it imports transformers.
fn python() -> Option<String> {
    let python = std::env::var("CHAT_AUTOPARSER_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let works = Command::new(&python)
        .arg(checker())
        .arg("--probe")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    works.then_some(python)
}

fn checker() -> PathBuf {
    crate_dir().join("cli/src/response_template_check.py")
}

/// `parse_response` on every rendered case, in one process; one answer each.
fn parse_all(python: &str, cases: &[Rendered]) -> Vec<Value> {
    let mut child = Command::new(python)
        .arg(checker())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the response template checker");
    let lines: Vec<String> = cases
        .iter()
        .map(|c| {
            json!({"text": c.output, "template": c.exported, "prefix": c.prompt, "tools": tools()})
                .to_string()
        })
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in lines {
            writeln!(stdin, "{line}").expect("write to the checker");
        }
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(&l.expect("read the checker")).expect("JSON answer"))
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "the checker failed");
    assert_eq!(answers.len(), cases.len(), "one answer per case");
    answers
}

/// Renders every case of every template in `files` (only templates that
/// render calls when `only_with_tools`), with its export.
fn rendered_cases(
    files: &[PathBuf],
    only_with_tools: bool,
    skipped: &mut Vec<String>,
    warned: &mut BTreeMap<String, Vec<String>>,
) -> Vec<(Rendered, Analysis)> {
    let mut out = Vec::new();
    for path in files {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let source = std::fs::read_to_string(path).expect("template is readable");
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
            continue;
        };
        let Ok(analysis) = tmpl.analyze() else {
            continue;
        };
        if only_with_tools && analysis.tools.is_none() {
            continue;
        }
        for case in cases(&analysis) {
            let (prompt, output) = match render(&tmpl, &analysis, &case) {
                Ok(r) => r,
                Err(why) => {
                    skipped.push(format!(
                        "{stem} {}: {}",
                        case.name,
                        why.lines().next().unwrap_or("")
                    ));
                    continue;
                }
            };
            let config = ParserConfig::from(
                Options::default()
                    .with_tools(tools())
                    .with_prompt(Some(prompt.clone()))
                    .with_enable_thinking(case.thinking),
            );
            let exported = match response_template(&Protocol::new(&analysis, &config.options)) {
                Ok(t) if t.warnings.is_empty() => t.response_template,
                Ok(t) => {
                    warned.insert(stem.clone(), t.warnings);
                    t.response_template
                }
                Err(e) => {
                    skipped.push(format!("{stem} {}: no export ({e})", case.name));
                    continue;
                }
            };
            if std::env::var("RESPONSE_TEMPLATE_SHOW").is_ok_and(|n| n == stem) {
                println!(
                    "{stem} {}: {}",
                    case.name,
                    serde_json::to_string_pretty(&exported).unwrap_or_default()
                );
            }
            let rendered = Rendered {
                template: stem.clone(),
                case: case.name,
                prompt,
                output,
                config,
                exported,
            };
            out.push((rendered, analysis.clone()));
        }
    }
    out
}

/// Runs and compares every case of `files`; returns (equal, total) and the
/// counts per template.
fn run_set(
    label: &str,
    python: &str,
    files: &[PathBuf],
    only_with_tools: bool,
) -> (usize, usize, BTreeMap<String, (usize, usize)>) {
    let (mut skipped, mut warned) = (Vec::new(), BTreeMap::new());
    let cases = rendered_cases(files, only_with_tools, &mut skipped, &mut warned);
    let (rendered, analyses): (Vec<Rendered>, Vec<Analysis>) = cases.into_iter().unzip();
    let answers = parse_all(python, &rendered);
    let mut rows: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut misses = Vec::new();
    for ((case, analysis), answer) in rendered.iter().zip(&analyses).zip(&answers) {
        let ours = analysis
            .parser(&case.config)
            .map(|p| serde_json::to_value(p.parse(&case.output)).unwrap_or_default());
        let ours = ours.map(|m| reduce(&m)).map_err(|e| e.to_string());
        let theirs = match answer["ok"].as_bool() {
            Some(true) => Ok(reduce(&answer["message"])),
            _ => Err(answer["error"]
                .as_str()
                .unwrap_or("no answer")
                .lines()
                .next()
                .unwrap_or("")
                .to_string()),
        };
        let row = rows.entry(case.template.as_str()).or_default();
        row.1 += 1;
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) if a == b => row.0 += 1,
            _ => misses.push(format!(
                "  [{}] {}:\n      output: {:?}\n      ours:   {ours:?}\n      theirs: {theirs:?}",
                case.template, case.case, case.output
            )),
        }
    }
    let (equal, total) = rows.values().fold((0, 0), |(e, t), r| (e + r.0, t + r.1));
    println!(
        "\n{label}: parse_response equals our parser on {equal} of {total} cases over {} templates",
        rows.len()
    );
    for (name, (e, t)) in &rows {
        println!("  {name:<55} {e:>3}/{t:<3}");
    }
    println!(
        "  exports served loosely (with warnings): {} templates",
        warned.len()
    );
    for (name, warnings) in &warned {
        println!("  warning: {name}: {}", warnings.join("; "));
    }
    println!("  skipped: {}", skipped.len());
    for s in &skipped {
        println!("  note: {s}");
    }
    if !misses.is_empty() {
        println!("{label} misses ({}):", misses.len());
        for m in &misses {
            println!("{m}");
        }
    }
    let rows = rows.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
    (equal, total, rows)
}

#[test]
fn response_template_corpus() {
    let dir = crate_dir().join("../shared/corpus/llamacpp");
    let files = turns::jinja_files(&dir);
    if files.is_empty() {
        println!(
            "skipped: no template corpus at {} (../shared is absent)",
            dir.display()
        );
        return;
    }
    let Some(python) = python() else {
        println!("skipped: transformers' response parser cannot be imported (run tools/test.sh to install it)");
        return;
    };
    let (equal, total, rows) = run_set("corpus (templates with tools)", &python, &files, true);
    let summary = format!(
        "transformers' `parse_response` on our `response_template` equals our parser on {equal} of {total} \
         outputs (`cargo test --release --test engines response_template::`)."
    );
    crate::common::coverage::record_block("engine-response-template", &summary, &rows);
    assert!(
        equal >= MIN_CORPUS_EQUAL,
        "only {equal} of {total} corpus cases equal (floor {MIN_CORPUS_EQUAL})"
    );
}

#[test]
fn response_template_shipped() {
    let files = turns::jinja_files(&crate_dir().join("templates"));
    assert!(!files.is_empty(), "templates/ holds the shipped templates");
    let Some(python) = python() else {
        println!("skipped: transformers' response parser cannot be imported (run tools/test.sh to install it)");
        return;
    };
    let (equal, total, _) = run_set("shipped templates", &python, &files, false);
    assert!(
        equal >= MIN_SHIPPED_EQUAL,
        "only {equal} of {total} shipped cases equal (floor {MIN_SHIPPED_EQUAL})"
    );
}

/// The export of the shipped Hermes-style template with reasoning, exactly.
#[test]
fn hermes_think_export() {
    let source = std::fs::read_to_string(crate_dir().join("templates/hermes-think.jinja")).unwrap();
    let analysis = ChatTemplate::new(&source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let exported = response_template(&Protocol::new(&analysis, &config.options)).unwrap();
    let expected = json!({"response_template": {
        "version": 1,
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": r"\Z",
        "fields": {
            "reasoning_content": {
                "open_pattern": r"<think>|\A(?=\s*</think>)",
                "close_pattern": r"</think>|\s*<\|im_end\|>\s*<\|im_start\|>assistant\s*|(?=<tool_call>\s*)(?!.*?</think>)",
                "content": "text"
            },
            "content": {"content": "text", "repeats": true, "join": ""},
            "tool_calls": {
                "open_pattern": r"<tool_call>\s*",
                "close_pattern": r"(?<=\})\s*</tool_call>",
                "repeats": true,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}
            }
        }},
        "preserved_tokens": ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"]
    });
    assert_eq!(serde_json::to_value(&exported).unwrap(), expected);
}

/// The corpus template `stem` (absent without `../shared`).
fn corpus(stem: &str) -> PathBuf {
    crate_dir().join(format!("../shared/corpus/llamacpp/{stem}.jinja"))
}

/// transformers' message for `output` under our export of the template at
/// `path` (thinking as given), beside our parser's message, both reduced;
/// `None` (with a message) when the template or transformers is absent.
fn both_parses(path: &Path, thinking: Option<bool>, output: &str) -> Option<(Reduced, Reduced)> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let Ok(source) = std::fs::read_to_string(path) else {
        println!("skipped: {} is absent", path.display());
        return None;
    };
    let Some(python) = python() else {
        println!("skipped: transformers' response parser cannot be imported");
        return None;
    };
    let tmpl = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let analysis = tmpl.analyze().unwrap();
    let config = ParserConfig::from(
        Options::default()
            .with_tools(tools())
            .with_enable_thinking(thinking),
    );
    let exported = response_template(&Protocol::new(&analysis, &config.options)).unwrap();
    let case = Rendered {
        template: stem.to_string(),
        case: "focused",
        prompt: String::new(),
        output: output.into(),
        config,
        exported: exported.response_template,
    };
    let answer = parse_all(&python, std::slice::from_ref(&case)).remove(0);
    assert_eq!(answer["ok"], true, "parse_response fails: {answer}");
    let ours = analysis.parser(&case.config).unwrap().parse(output);
    let ours = reduce(&serde_json::to_value(ours).unwrap());
    Some((ours, reduce(&answer["message"])))
}

/// DeepSeek-V3.1 (corpus) renders its own call format and is read in the
/// hermes dialect too: the export reads both, as our parser does (it
/// read only the first format: the hermes call stayed content).
#[test]
fn every_call_format_the_parser_reads_is_read() {
    let native = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>\
        {\"city\": \"Paris\", \"days\": 3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let hermes =
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>";
    both_read_the_paris_call(&corpus("deepseek-ai-DeepSeek-V3.1"), &[native, hermes]);
}

/// Each of `outputs` is one `get_weather(city: Paris, days: 3)` call to our
/// parser, and transformers reads it as we do, on the template at `path`.
fn both_read_the_paris_call(path: &Path, outputs: &[&str]) {
    for output in outputs {
        let Some((ours, theirs)) = both_parses(path, None, output) else {
            return;
        };
        let call = (
            "get_weather".to_string(),
            json!({"city": "Paris", "days": 3}),
        );
        assert_eq!(ours.calls, vec![call], "our parse of {output:?}");
        assert_eq!(theirs, ours, "transformers' parse of {output:?}");
    }
}

/// LFM2.5-8B-A1B (corpus) writes strings as `'` + value + `'`, unescaped:
/// a quote or a newline inside, a list of strings and two calls after text
/// are read alike (`python-call-list` refused the whole message).
#[test]
fn raw_python_strings_are_read_per_call() {
    let output = "Sure.<|tool_call_start|>[save_note(text='it's a \"test\"\nline two', \
        tags=['x', 'a & b'], meta={\"ok\": true}), get_weather(city='Paris', days=3)]<|tool_call_end|>";
    let Some((ours, theirs)) = both_parses(&corpus("LFM2.5-8B-A1B"), None, output) else {
        return;
    };
    let note =
        json!({"text": "it's a \"test\"\nline two", "tags": ["x", "a & b"], "meta": {"ok": true}});
    let weather = json!({"city": "Paris", "days": 3});
    assert_eq!(
        (ours.content.as_str(), ours.calls.clone()),
        (
            "Sure.",
            vec![("save_note".into(), note), ("get_weather".into(), weather)]
        )
    );
    assert_eq!(theirs, ours);
}

/// MiniCPM5 (corpus) wraps values holding markup in `<![CDATA[ ... ]]>`: a
/// closing marker quoted inside is the value's text in both parsers (the
/// wrapper was optional around a lazy value, which stopped at the quoted
/// `</param>`).
#[test]
fn a_wrapped_value_runs_to_its_wrapper_close() {
    let output = "<function name=\"save_note\"><param name=\"text\"><![CDATA[a <param name=\" \
        and </param> here]]></param></function>";
    let Some((ours, theirs)) = both_parses(&corpus("openbmb-MiniCPM5-1B"), None, output) else {
        return;
    };
    let text = "a <param name=\" and </param> here";
    assert_eq!(
        ours.calls,
        vec![("save_note".into(), json!({ "text": text }))]
    );
    assert_eq!(theirs, ours);
}

/// gpt-oss (corpus) addresses a call after the header's label or inside
/// it: `to=functions.f<|channel|>commentary json<|message|>` as the template
/// writes it, `<|channel|>commentary to=functions.f <|constrain|>json<|message|>`
/// as models also write it. Both are calls to our parser and to the export
/// (it read the template's order only: the other stayed content).
#[test]
fn a_call_addressed_in_either_header_order_is_read() {
    let reasoning = "<|channel|>analysis<|message|>Let me look.<|end|><|start|>assistant";
    let orders = [
        "to=functions.get_weather<|channel|>commentary json<|message|>",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    ];
    let outputs = orders
        .map(|header| format!("{reasoning}{header}{{\"city\": \"Paris\", \"days\": 3}}<|call|>"));
    both_read_the_paris_call(
        &corpus("openai-gpt-oss-120b"),
        &outputs.each_ref().map(String::as_str),
    );
}

/// The shipped harmony template writes the address inside the header
/// (`<|channel|>commentary to=functions.f <|constrain|>json<|message|>`); a
/// model may put it before the header instead
/// (`to=functions.f<|channel|>commentary json<|message|>`). Our parser reads
/// both, and so does the export (it read the template's order only: the
/// other was no call).
#[test]
fn a_call_addressed_before_a_header_that_holds_it_is_read() {
    let reasoning = "<|channel|>analysis<|message|>Let me look.<|end|><|start|>assistant";
    let orders = [
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        " to=functions.get_weather<|channel|>commentary json<|message|>",
    ];
    let outputs = orders
        .map(|header| format!("{reasoning}{header}{{\"city\": \"Paris\", \"days\": 3}}<|call|>"));
    both_read_the_paris_call(
        &crate_dir().join("templates/channel-harmony.jinja"),
        &outputs.each_ref().map(String::as_str),
    );
}

/// Qwen3.5 (corpus) opens the reasoning block in the prompt; a model that
/// writes `<think>` again has not written reasoning text: our parser drops
/// the marker, and so does the export (its reasoning began `<think>`).
#[test]
fn an_opener_the_prompt_already_wrote_is_no_reasoning() {
    let output = "<think>\nLet me see.\n</think>\n\nHello.";
    let Some((ours, theirs)) = both_parses(&corpus("Qwen3.5-4B"), None, output) else {
        return;
    };
    assert_eq!(
        (ours.reasoning.as_str(), ours.content.as_str()),
        ("Let me see.", "Hello.")
    );
    assert_eq!(theirs, ours);
}

/// A tagged value whose closing marker never comes before the call's close
/// (cut off, or the marker forgotten) runs to the call's close in both
/// parsers: our parser recovers it, and the export's `xml-inline` pattern
/// did not match it, so transformers dropped the argument silently (GLM's
/// `<arg_value>`, Qwen-Coder's `<parameter=...>`; the corpus'
/// `markers-in-args` probe ends such a value at the quoted call end).
#[test]
fn a_value_whose_close_never_comes_runs_to_the_call_close() {
    let cases = [
        (
            "glm-arg-pairs",
            "<tool_call>save_note\n<arg_key>text</arg_key>\n<arg_value>a note </tool_call>",
            "a note ",
        ),
        (
            "qwen-coder-xml",
            "<tool_call>\n<function=save_note>\n<parameter=text>\na note\n</function>\n</tool_call>",
            "a note",
        ),
        // Only the very whitespace the value's close begins with (`\n`) goes.
        (
            "qwen-coder-xml",
            "<tool_call>\n<function=save_note>\n<parameter=text>\na note </tool_call>",
            "a note ",
        ),
    ];
    for (stem, output, text) in cases {
        let path = crate_dir().join(format!("templates/{stem}.jinja"));
        let Some((ours, theirs)) = both_parses(&path, None, output) else {
            return;
        };
        let call = ("save_note".to_string(), json!({ "text": text }));
        assert_eq!(ours.calls, vec![call], "our parse of {output:?}");
        assert_eq!(theirs, ours, "transformers' parse of {output:?}");
    }
}

/// A call whose arguments' end (`</function>`) is missing ends at the call's
/// own end marker (`</tool_call>`) in both parsers: our parser recovers the
/// call and reads on; the export's close needed both markers, so the region
/// ran on and swallowed the text and the next call after it.
#[test]
fn a_call_ends_at_its_own_marker_when_the_arguments_end_is_missing() {
    let call = |text: &str, end: &str| {
        format!("<tool_call>\n<function=save_note>\n<parameter=text>\n{text}\n</parameter>\n{end}</tool_call>")
    };
    let note = |text: &str| ("save_note".to_string(), json!({ "text": text }));
    let cases = [
        (
            format!("{}\nDone.", call("a note", "")),
            vec![note("a note")],
            "Done.",
        ),
        (
            format!("{}\n{}", call("a note", ""), call("b", "</function>\n")),
            vec![note("a note"), note("b")],
            "",
        ),
    ];
    let path = crate_dir().join("templates/qwen-coder-xml.jinja");
    for (output, calls, content) in cases {
        let Some((ours, theirs)) = both_parses(&path, None, &output) else {
            return;
        };
        assert_eq!(
            (ours.calls.clone(), ours.content.as_str()),
            (calls, content)
        );
        assert_eq!(theirs, ours, "transformers' parse of {output:?}");
    }
}

/// A call that ends with its arguments' closing marker (MiniMax-M2's
/// `</invoke>`, corpus) ends there in both parsers, as a call ending with a
/// marker of its own does: text after it is content. The export also
/// demanded the section end, the next call or the end of the text after
/// the marker, so a call with its section end missing swallowed the text.
#[test]
fn a_call_ends_at_its_arguments_end_marker() {
    let output = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n\
        <parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n\
        </invoke>\nDone.";
    let Some((ours, theirs)) = both_parses(&corpus("MiniMax-M2"), None, output) else {
        return;
    };
    let call = (
        "get_weather".to_string(),
        json!({"city": "Paris", "days": 3}),
    );
    assert_eq!(
        (ours.calls.clone(), ours.content.as_str()),
        (vec![call], "Done.")
    );
    assert_eq!(theirs, ours, "transformers' parse of {output:?}");
}

/// A raw tagged value keeps its own edge whitespace in both parsers: only
/// the whitespace the template writes around a value is the format's
/// (Qwen-Coder's newlines in `<parameter=text>\nV\n</parameter>`); the export
/// took any whitespace there (`\s*`), so transformers trimmed `" hello"` and
/// `"hello "`.
#[test]
fn a_raw_value_keeps_its_edge_whitespace() {
    let outputs = |value: &str| {
        [
            (
                "qwen-coder-xml",
                format!("<tool_call>\n<function=save_note>\n<parameter=text>\n{value}\n</parameter>\n</function>\n</tool_call>"),
            ),
            (
                "glm-arg-pairs",
                format!("<tool_call>save_note\n<arg_key>text</arg_key>\n<arg_value>{value}</arg_value>\n</tool_call>"),
            ),
        ]
    };
    for value in [" hello", "hello ", "hello  \n"] {
        for (stem, output) in outputs(value) {
            let path = crate_dir().join(format!("templates/{stem}.jinja"));
            let Some((ours, theirs)) = both_parses(&path, None, &output) else {
                return;
            };
            let call = ("save_note".to_string(), json!({ "text": value }));
            assert_eq!(ours.calls, vec![call], "our parse of {output:?}");
            assert_eq!(theirs, ours, "transformers' parse of {output:?}");
        }
    }
}

/// A lone reasoning end marker at the start of the output closes an empty
/// block in both parsers (models write one where their prompt opened none;
/// DeepSeek-V3.2's turns do): the export took it as content unless the
/// template itself writes one.
#[test]
fn a_lone_end_marker_first_is_no_content() {
    let path = crate_dir().join("templates/hermes-think.jinja");
    let Some((ours, theirs)) = both_parses(&path, None, "</think>\n\nHello.") else {
        return;
    };
    assert_eq!(
        (ours.reasoning.as_str(), ours.content.as_str()),
        ("", "Hello.")
    );
    assert_eq!(theirs, ours);
}

/// A template written for this test in the style of olmo3's: calls one per
/// line between `<function_calls>` markers, no list around them, strings
/// between single quotes.
const LISTLESS_CALLS: &str = r#"
{%- for m in messages -%}
{{- '<|' + m.role + '|>\n' -}}
{%- if m.tool_calls -%}
{{- '<function_calls>\n' -}}
{%- for c in m.tool_calls -%}
{{- c.function.name + '(' -}}
{%- for k, v in c.function.arguments.items() -%}
{{- k + '=' + ("'" + v + "'" if v is string else v | tojson) -}}{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- ')\n' -}}
{%- endfor -%}
{{- '</function_calls>' -}}
{%- else -%}{{- m.content -}}{%- endif -%}
{{- '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}"#;

/// Calls with strings printed bare as `str()` prints them, joined by `, `
/// between `[OPEN]` and `[CLOSE]` (see [`bare_string_calls`]).
const BARE_STRING_CALLS: &str = r#"
{%- for m in messages -%}
{{- '<|' + m.role + '|>\n' -}}
{%- if m.tool_calls -%}
{{- '[OPEN]' -}}
{%- for c in m.tool_calls -%}
{{- c.function.name + '(' -}}
{%- for k, v in c.function.arguments.items() -%}
{{- k + '=' + ('%s' | format(v)) -}}{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- ')' -}}{{- ', ' if not loop.last -}}
{%- endfor -%}
{{- '[CLOSE]' -}}
{%- else -%}{{- m.content -}}{%- endif -%}
{{- '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}"#;

/// [`BARE_STRING_CALLS`] between `open` and `close`: a bracketed list with
/// no section marker (vLLM's Llama-3.2 pythonic style), or no list nor
/// marker at all, ended by a token of the call turn's own (vLLM's Llama-4
/// pythonic shape: `get_weather(city=Paris, days=3)<|eom|>`).
fn bare_string_calls(open: &str, close: &str) -> String {
    BARE_STRING_CALLS
        .replace("[OPEN]", open)
        .replace("[CLOSE]", close)
}

/// `source` written to a file of its own for [`both_parses`].
fn template_file(stem: &str, source: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rt-{}-{stem}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{stem}.jinja"));
    std::fs::write(&path, source).unwrap();
    path
}

/// Python calls that `python-call-list` cannot read (one per line with no
/// list; strings printed bare; calls with no marker or list at all, which
/// open the output) are read one region each, as our parser reads them;
/// before, the export left the tool_calls field out.
#[test]
fn python_calls_without_a_literal_list_are_read() {
    let cases = [
        (
            template_file("listless", LISTLESS_CALLS),
            "<function_calls>\nget_weather(city='Paris', days=3)\n\
             get_weather(city='Tokyo', days=1)\n</function_calls>",
            "Tokyo",
        ),
        (
            template_file("bare", &bare_string_calls("[", "]")),
            "[get_weather(city=Paris, days=3), get_weather(city=New York, days=1)]",
            "New York",
        ),
        (
            template_file("markerless", &bare_string_calls("", "<|eom|>")),
            "get_weather(city=Paris, days=3), get_weather(city=Oslo, days=1)<|eom|>",
            "Oslo",
        ),
    ];
    let weather = |city: &str, days: u32| {
        (
            "get_weather".to_string(),
            json!({"city": city, "days": days}),
        )
    };
    for (template, output, second) in cases {
        let Some((ours, theirs)) = both_parses(&template, None, output) else {
            return;
        };
        assert_eq!(ours.calls, vec![weather("Paris", 3), weather(second, 1)]);
        assert_eq!(theirs, ours, "{output:?}");
    }
}
