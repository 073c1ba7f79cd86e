//! chat-autoparser's output parser against SMG's `tool-parser` crate
//! (1.10.0, the SGLang gateway's hand-written parsers), the same outputs in
//! the same run (issue 30, "Speed against the fastest Rust peer").
//!
//! Families, each ours built from a real template's analysis with the
//! request's tools, theirs the matching parser:
//!
//! | family | our template | their parser |
//! |---|---|---|
//! | qwen-hermes | `templates/hermes-think.jinja` | `QwenParser` |
//! | mistral | `templates/mistral-tool-calls.jinja` | `MistralParser` |
//! | llama3-json | `../shared/corpus/llamacpp/meta-llama-Llama-3.1-8B-Instruct.jinja` | `LlamaParser` |
//! | kimi-k2 | `../shared/corpus/llamacpp/moonshotai-Kimi-K2.jinja` | `KimiK2Parser` |
//! | glm-4.5 | `templates/glm-arg-pairs.jinja` | `Glm4MoeParser::glm45` |
//! | deepseek-v3.1 | `../shared/corpus/llamacpp/deepseek-ai-DeepSeek-V3.1.jinja` | `DeepSeek31Parser` |
//!
//! Corpus templates are read from `../shared` when it is there; a family
//! whose template is missing is skipped (and said so).
//!
//! Per family, two outputs: `short` (content and one call, ~200 bytes: what
//! a server parses most often) and `long` (content and four calls with
//! 3 KB string arguments; one call where the format writes one). Both
//! parsers must read the same calls (names, and arguments as JSON values)
//! and the same content (trimmed), or the bench stops. Timed: a batch parse
//! with a built parser (ours `OutputParser::parse`, theirs
//! `parse_complete_with_tools`, polled to completion with a no-op waker: it
//! never waits), and the build of each (ours from a cached analysis with the
//! request's tools, theirs `new`). Then streaming one 72 KB call in 4-byte
//! pieces (ours `push_into`, the median of ≥ 50 runs or 1 s; theirs
//! `parse_incremental` into a fresh parser, one run: it takes seconds).
//!
//! Each time is the median of alternating rounds (ours, theirs, ours, ...;
//! each round the median of ≥ 50 runs or 0.2 s), so load from other
//! processes falls on both sides alike.
//!
//! Command (from the repository root; release build):
//!
//! ```text
//! cargo bench -p chat-autoparser-peer-bench --bench peer
//! cargo bench -p chat-autoparser-peer-bench --bench peer -- --profile FAMILY short|long|build|stream
//! ```
//!
//! The second runs our side alone for 5 s (a parse of that output, a
//! build, or the streamed 72 KB call in 4-byte pieces) for a profiler to
//! watch (`perf record`, or callgrind, on the bench binary).

use std::future::Future;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use chat_autoparser::parser::char_chunks;
use chat_autoparser::{
    Analysis, ChatTemplate, Delta, Options, OutputParser, ParserConfig, TemplateConfig,
};
use openai_protocol::common::Tool;
use serde_json::{json, Value};
use tool_parser::{
    DeepSeek31Parser, Glm4MoeParser, KimiK2Parser, LlamaParser, MistralParser, QwenParser,
    ToolParser,
};

/// Alternating rounds per measurement.
const ROUNDS: usize = 7;

/// One output format on both sides.
struct Family {
    name: &'static str,
    /// Path from the repository root.
    template: &'static str,
    peer: fn() -> Box<dyn ToolParser>,
    /// The output for `content` then `calls` (name, arguments).
    write: fn(&str, &[(&str, Value)]) -> String,
    /// The format holds one call per output.
    one_call: bool,
}

fn families() -> Vec<Family> {
    vec![
        Family {
            name: "qwen-hermes",
            template: "templates/hermes-think.jinja",
            peer: || Box::new(QwenParser::new()),
            write: |content, calls| {
                let mut s = content.to_string();
                for (name, args) in calls {
                    s.push_str(&format!(
                        "\n<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>"
                    ));
                }
                s
            },
            one_call: false,
        },
        Family {
            name: "mistral",
            template: "templates/mistral-tool-calls.jinja",
            peer: || Box::new(MistralParser::new()),
            write: |content, calls| {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|(name, args)| format!("{{\"name\": \"{name}\", \"arguments\": {args}}}"))
                    .collect();
                format!("{content}[TOOL_CALLS] [{}]", calls.join(", "))
            },
            one_call: false,
        },
        Family {
            name: "llama3-json",
            template: "../shared/corpus/llamacpp/meta-llama-Llama-3.1-8B-Instruct.jinja",
            peer: || Box::new(LlamaParser::new()),
            write: |_, calls| {
                let (name, args) = &calls[0];
                format!("{{\"name\": \"{name}\", \"parameters\": {args}}}")
            },
            one_call: true,
        },
        Family {
            name: "kimi-k2",
            template: "../shared/corpus/llamacpp/moonshotai-Kimi-K2.jinja",
            peer: || Box::new(KimiK2Parser::new()),
            write: |content, calls| {
                let mut s = format!("{content}<|tool_calls_section_begin|>");
                for (i, (name, args)) in calls.iter().enumerate() {
                    s.push_str(&format!(
                        "<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{args}<|tool_call_end|>"
                    ));
                }
                s + "<|tool_calls_section_end|>"
            },
            one_call: false,
        },
        Family {
            name: "glm-4.5",
            template: "templates/glm-arg-pairs.jinja",
            peer: || Box::new(Glm4MoeParser::glm45()),
            write: |content, calls| {
                let mut s = content.to_string();
                for (name, args) in calls {
                    s.push_str(&format!("<tool_call>{name}\n"));
                    for (k, v) in args.as_object().into_iter().flatten() {
                        let v = match v {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        s.push_str(&format!(
                            "<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n"
                        ));
                    }
                    s.push_str("</tool_call>");
                }
                s
            },
            one_call: false,
        },
        Family {
            name: "deepseek-v3.1",
            template: "../shared/corpus/llamacpp/deepseek-ai-DeepSeek-V3.1.jinja",
            peer: || Box::new(DeepSeek31Parser::new()),
            write: |content, calls| {
                let mut s = format!("{content}<｜tool▁calls▁begin｜>");
                for (name, args) in calls {
                    s.push_str(&format!(
                        "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜>"
                    ));
                }
                s + "<｜tool▁calls▁end｜>"
            },
            one_call: false,
        },
    ]
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"]}}}),
        json!({"type": "function", "function": {"name": "write_file",
            "description": "Writes a file.",
            "parameters": {"type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]}}}),
    ]
}

/// Content and one short call (~200 bytes with the markers).
fn short_output(family: &Family) -> String {
    let content = "Let me check the current weather in Paris for you, in Celsius as usual.";
    let args = json!({"city": "Paris", "unit": "c"});
    let content = if family.one_call { "" } else { content };
    (family.write)(content, &[("get_weather", args)])
}

/// Content and four calls with 3 KB string arguments (one 12 KB call where
/// the format writes one).
fn long_output(family: &Family) -> String {
    let content = "I will write the four files now; each holds the section it is named after. ";
    let body = |i: usize, kb: usize| {
        let line = format!("Section {i}: \"quoted\" text, café 東京, tabs\tand more words here.\n");
        line.repeat(kb * 1024 / line.len())
    };
    let calls: Vec<(&str, Value)> = match family.one_call {
        true => vec![(
            "write_file",
            json!({"path": "notes/all.md", "content": body(0, 12)}),
        )],
        false => (0..4)
            .map(|i| {
                let args = json!({"path": format!("notes/part_{i}.md"), "content": body(i, 3)});
                ("write_file", args)
            })
            .collect(),
    };
    let content = if family.one_call { "" } else { content };
    (family.write)(&content.repeat(4), &calls)
}

/// One 72 KB call, for streaming.
fn stream_output(family: &Family) -> String {
    let line = "A long line of the file, written in one call; \"quoted\" and plain.\n";
    let args = json!({"path": "big.txt", "content": line.repeat(72 * 1024 / line.len())});
    (family.write)("", &[("write_file", args)])
}

/// Runs a future that never waits (the peer's parsers are `async` but
/// compute only) to completion.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// A call as both sides report it: the name and the arguments as a value.
type Call = (String, Value);

fn ours_read(parser: &OutputParser, output: &str) -> (String, Vec<Call>) {
    let msg = parser.parse(output);
    let calls = msg
        .tool_calls
        .iter()
        .map(|c| {
            let args = serde_json::from_str(&c.function.arguments).expect("our arguments are JSON");
            (c.function.name.clone(), args)
        })
        .collect();
    (msg.content.unwrap_or_default().trim().to_string(), calls)
}

fn theirs_read(peer: &dyn ToolParser, output: &str, tools: &[Tool]) -> (String, Vec<Call>) {
    let (text, calls) =
        block_on(peer.parse_complete_with_tools(output, tools)).expect("the peer parses");
    let calls = calls
        .into_iter()
        .map(|c| {
            let args =
                serde_json::from_str(&c.function.arguments).expect("their arguments are JSON");
            (c.function.name, args)
        })
        .collect();
    (text.trim().to_string(), calls)
}

/// Median of `f` over ≥ 50 runs or `budget`, after 5 warm-up runs.
fn median<T>(budget: Duration, mut f: impl FnMut() -> T) -> Duration {
    for _ in 0..5 {
        black_box(f());
    }
    let mut times = Vec::new();
    let begin = Instant::now();
    while times.len() < 50 || begin.elapsed() < budget {
        let t = Instant::now();
        black_box(f());
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

/// The medians of `ROUNDS` alternating rounds of `a` and `b`.
fn side_by_side<A, B>(mut a: impl FnMut() -> A, mut b: impl FnMut() -> B) -> (f64, f64) {
    let budget = Duration::from_millis(200);
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ta.push(median(budget, &mut a).as_secs_f64() * 1e6);
        tb.push(median(budget, &mut b).as_secs_f64() * 1e6);
    }
    (middle(ta), middle(tb))
}

fn middle(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Streams `output` through ours in 4-byte pieces into one reused buffer;
/// returns the deltas' count.
fn ours_stream(parser: &OutputParser, pieces: &[&str]) -> usize {
    let mut stream = parser.stream();
    let mut deltas: Vec<Delta> = Vec::new();
    let mut n = 0;
    for piece in pieces {
        stream.push_into(piece, &mut deltas);
        n += deltas.len();
    }
    stream.finish_into(&mut deltas);
    n + deltas.len()
}

/// Streams `output` through a fresh peer parser in 4-byte pieces; returns
/// the items' count.
fn theirs_stream(family: &Family, pieces: &[&str], tools: &[Tool]) -> usize {
    let mut peer = (family.peer)();
    let mut n = 0;
    for piece in pieces {
        let result = block_on(peer.parse_incremental(piece, tools)).expect("the peer streams");
        n += result.calls.len() + usize::from(!result.normal_text.is_empty());
    }
    n
}

fn analysis(root: &Path, template: &str) -> Option<Analysis> {
    let source = std::fs::read_to_string(root.join(template)).ok()?;
    let template = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
    Some(template.analyze().expect("analyses"))
}

fn main() {
    // `cargo bench` adds `--bench`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.iter().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` and criterion-style listing: nothing to run.
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let [flag, family, what] = &args[..] {
        if flag == "--profile" {
            return profile(&root, family, what);
        }
    }
    let tool_values = tools();
    let tools: Vec<Tool> = tool_values
        .iter()
        .map(|t| serde_json::from_value(t.clone()).expect("an OpenAI tool"))
        .collect();
    let config = ParserConfig::from(Options::default().with_tools(tool_values.clone()));
    println!(
        "chat-autoparser against tool-parser 1.10.0 (µs, median of {ROUNDS} alternating rounds)"
    );
    println!(
        "  {:<14} {:<6} {:>6} {:>10} {:>10} {:>8}",
        "family", "output", "bytes", "ours", "theirs", "speed-up"
    );
    let mut builds = Vec::new();
    for family in families() {
        let Some(analysis) = analysis(&root, family.template) else {
            println!(
                "  {:<14} skipped: {} is not there",
                family.name, family.template
            );
            continue;
        };
        let ours = analysis.parser(&config).expect("our parser builds");
        let theirs = (family.peer)();
        for (label, output) in [
            ("short", short_output(&family)),
            ("long", long_output(&family)),
        ] {
            let read = ours_read(&ours, &output);
            assert_eq!(
                read,
                theirs_read(theirs.as_ref(), &output, &tools),
                "{} {label}: both parsers read the same message from {output:?}",
                family.name
            );
            assert!(
                !read.1.is_empty(),
                "{} {label}: the calls are read",
                family.name
            );
            let (t_ours, t_theirs) = side_by_side(
                || ours.parse(black_box(&output)),
                || block_on(theirs.parse_complete_with_tools(black_box(&output), &tools)),
            );
            println!(
                "  {:<14} {:<6} {:>6} {:>10.2} {:>10.2} {:>7.2}×",
                family.name,
                label,
                output.len(),
                t_ours,
                t_theirs,
                t_theirs / t_ours
            );
        }
        let build = side_by_side(|| analysis.parser(&config), || (family.peer)());
        builds.push((family.name, build));
    }
    println!(
        "  parser build (ours: from a cached analysis with the request's two tools; theirs: `new`)"
    );
    for (name, (t_ours, t_theirs)) in builds {
        println!("  {name:<14} {t_ours:>10.2} {t_theirs:>10.2}");
    }
    stream_72k(&root, &config, &tools);
}

/// `--profile FAMILY short|long|build|stream`: our side alone for 5 s, for
/// a profiler (`perf record`) to watch.
fn profile(root: &Path, name: &str, what: &str) {
    let family = families()
        .into_iter()
        .find(|f| f.name == name)
        .expect("a family of this bench");
    let analysis = analysis(root, family.template).expect("the template is there");
    let config = ParserConfig::from(Options::default().with_tools(tools()));
    let parser = analysis.parser(&config).expect("our parser builds");
    let output = match what {
        "long" => long_output(&family),
        "stream" => stream_output(&family),
        _ => short_output(&family),
    };
    let pieces: Vec<&str> = char_chunks(&output, 4).collect();
    let begin = Instant::now();
    let mut runs = 0u64;
    while begin.elapsed() < Duration::from_secs(5) {
        for _ in 0..100 {
            match what {
                "build" => drop(black_box(analysis.parser(&config))),
                "stream" => drop(black_box(ours_stream(&parser, &pieces))),
                _ => drop(black_box(parser.parse(black_box(&output)))),
            }
        }
        runs += 100;
    }
    println!(
        "{name} {what}: {:.2} µs a run",
        begin.elapsed().as_secs_f64() * 1e6 / runs as f64
    );
}

/// One 72 KB call streamed in 4-byte pieces, on the Qwen/Hermes format.
fn stream_72k(root: &Path, config: &ParserConfig, tools: &[Tool]) {
    let family = families().remove(0);
    let analysis = analysis(root, family.template).expect("a shipped template");
    let ours = analysis.parser(config).expect("our parser builds");
    let output = stream_output(&family);
    let pieces: Vec<&str> = char_chunks(&output, 4).collect();
    let t_ours = median(Duration::from_secs(1), || ours_stream(&ours, &pieces));
    // Theirs takes seconds: one run.
    let begin = Instant::now();
    black_box(theirs_stream(&family, &pieces, tools));
    let t_theirs = begin.elapsed();
    println!(
        "  streaming one {} KB call in 4-byte pieces ({}): ours {:.0} µs, theirs {:.2} s",
        output.len() / 1024,
        family.name,
        t_ours.as_secs_f64() * 1e6,
        t_theirs.as_secs_f64()
    );
}
