//! The Lark export inside llguidance itself (issue 14; invariant 6 of `docs/architecture.md`).
//!
//! For every template with tools (the shipped `templates/*.jinja`, then
//! `../shared/corpus/llamacpp`, skipped with a message when absent), the
//! template renders tool-call assistant turns (one call, content + call,
//! parallel calls, nested arguments, reasoning + call) with thinking on and
//! off; the output after the generation prompt, less the end of turn, must
//! be accepted *whole* by the Lark grammar exported for the same tools and
//! prompt, as llguidance compiles it: every byte allowed by its token mask
//! (a one-byte-per-token tokenizer, so every marker is text) and the grammar
//! accepting at the end of output. Mutations the template renders (an
//! unknown tool, a missing required argument, a wrong argument type, a
//! second call with parallel calls off) must be rejected, and so must
//! `tool_choice` required without a call and a named function's rival.
//!
//! Counts are printed (`cargo test --release --test engines llguidance:: --
//! --nocapture`); misses are explained in `docs/grammar.md`.

use std::path::{Path, PathBuf};

use chat_autoparser::analysis::{NameSlot, ReasoningMode};
use chat_autoparser::grammar::{lark, lark_with, LarkOptions};
use chat_autoparser::protocol::Options;
use chat_autoparser::{Analysis, ChatTemplate, Protocol, TemplateConfig, ToolChoice};
use serde_json::{json, Value};

use crate::common::llguidance::Engine;
use crate::common::turns;

/// Accepted rendered outputs must reach this share of all (issue 14: 95%).
const MIN_ACCEPTED_SHARE: f64 = 0.95;

fn tools() -> Vec<Value> {
    turns::engine_tools()
}

/// One assistant turn: content, reasoning, calls `(name, arguments)`.
struct Case {
    what: &'static str,
    content: &'static str,
    reasoning: &'static str,
    calls: Vec<(&'static str, Value)>,
}

fn weather() -> (&'static str, Value) {
    ("get_weather", json!({"city": "Paris", "unit": "celsius"}))
}

fn cases(analysis: &Analysis) -> Vec<Case> {
    let mut out = vec![
        Case {
            what: "call",
            content: "",
            reasoning: "",
            calls: vec![weather()],
        },
        Case {
            what: "content+call",
            content: "Let me check the weather.",
            reasoning: "",
            calls: vec![weather()],
        },
        Case {
            what: "nested",
            content: "",
            reasoning: "",
            calls: vec![(
                "search",
                json!({"query": "rust \"lark\" <b>", "filters": {"tags": ["a", "b"], "exact": true}, "limit": 10}),
            )],
        },
    ];
    if analysis.tools.as_ref().is_some_and(|t| t.parallel) {
        out.push(Case {
            what: "parallel",
            content: "",
            reasoning: "",
            calls: vec![
                ("get_weather", json!({"city": "Paris", "days": 3})),
                ("search", json!({"query": "rust", "limit": 5})),
            ],
        });
    }
    if analysis.reasoning.mode != ReasoningMode::None {
        out.push(Case {
            what: "reasoning+call",
            content: "",
            reasoning: "I need the forecast, so I will call the weather tool.",
            calls: vec![weather()],
        });
    }
    out
}

/// The assistant message of a case, as OpenAI sends it.
fn turn(analysis: &Analysis, content: &str, reasoning: &str, calls: &[(&str, Value)]) -> Value {
    let null_content = analysis
        .tools
        .as_ref()
        .is_some_and(|t| t.input.null_content);
    let mut turn = json!({"role": "assistant", "content": if content.is_empty() && null_content { Value::Null } else { json!(content) }});
    if !reasoning.is_empty() {
        let field = if analysis.reasoning.field.is_empty() {
            "reasoning_content"
        } else {
            &analysis.reasoning.field
        };
        turn[field] = json!(reasoning);
    }
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": turns::call_id(analysis, name, i), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    turn["tool_calls"] = Value::Array(calls);
    turn
}

struct Template {
    name: String,
    tmpl: ChatTemplate,
    analysis: Analysis,
}

fn templates(dir: &Path) -> Vec<Template> {
    turns::jinja_files(dir)
        .into_iter()
        .filter_map(|p| {
            let (tmpl, analysis) = turns::analyzed(&p)?;
            analysis.tools.as_ref()?;
            Some(Template {
                name: p.file_stem()?.to_string_lossy().into_owned(),
                tmpl,
                analysis,
            })
        })
        .collect()
}

/// A rendered output: `None` when the template refuses the turn or drops a
/// part of it (a call, the content, the reasoning), so nothing checks it.
fn output(
    t: &Template,
    content: &str,
    reasoning: &str,
    calls: &[(&str, Value)],
    thinking: bool,
) -> Option<turns::Rendered> {
    let turn = turn(&t.analysis, content, reasoning, calls);
    let r = turns::render_message(
        &t.tmpl,
        &t.analysis,
        &tools(),
        turn,
        Some(thinking),
        turns::thinking_switch(thinking),
    )
    .ok()?;
    let kept = calls.iter().all(|(name, _)| r.output.contains(name))
        && r.output.contains(content)
        && r.output.contains(reasoning);
    kept.then_some(r)
}

/// The case's output. After a prompt that opens a reasoning block, a model
/// writes reasoning and closes the block before anything else, so a case
/// without reasoning gets a short one; when the template cannot render it
/// on the turn (it strips reasoning from past turns), the render is no
/// output a model writes after that prompt: `Err` with the reason, counted
/// apart.
fn model_output(
    t: &Template,
    case: &Case,
    thinking: bool,
) -> Option<Result<turns::Rendered, &'static str>> {
    let r = output(t, case.content, case.reasoning, &case.calls, thinking)?;
    let protocol = Protocol::new(
        &t.analysis,
        &options(&r.generation_prompt, thinking, ToolChoice::Auto, true),
    );
    let Some(block) = protocol
        .reasoning
        .as_ref()
        .filter(|b| b.opened && !b.start.trim().is_empty())
    else {
        return Some(Ok(r));
    };
    let end = block.end.trim().to_string();
    let r = match case.reasoning.is_empty() {
        true => output(t, case.content, "Let me think.", &case.calls, thinking).unwrap_or(r),
        false => r,
    };
    Some(if r.output.contains(&end) {
        Ok(r)
    } else {
        Err("the prompt opens reasoning; the template renders no reasoning end on the turn")
    })
}

fn options(prompt: &str, thinking: bool, choice: ToolChoice, parallel: bool) -> Options {
    Options::default()
        .with_tools(tools())
        .with_tool_choice(choice)
        .with_parallel_tool_calls(parallel)
        .with_enable_thinking(Some(thinking))
        .with_prompt(Some(prompt.to_string()))
        .with_response_schema(None)
}

fn grammar(
    t: &Template,
    prompt: &str,
    thinking: bool,
    choice: ToolChoice,
    parallel: bool,
) -> String {
    let options = options(prompt, thinking, choice, parallel);
    let protocol = Protocol::new(&t.analysis, &options);
    let out = lark(&protocol).unwrap_or_else(|e| panic!("{}: lark: {e}", t.name));
    assert_eq!(
        out,
        lark(&protocol).unwrap(),
        "{}: not deterministic",
        t.name
    );
    out.lark
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    total: usize,
    rejected: usize,
    mutations: usize,
    misses: Vec<String>,
    false_accepts: Vec<String>,
    /// Cases the template cannot render as a model writes them.
    unrenderable: Vec<String>,
    rows: Vec<(String, usize, usize)>,
}

impl Tally {
    fn check(
        &mut self,
        engine: &mut Engine,
        who: &str,
        grammar: &str,
        output: &str,
        want: bool,
    ) -> bool {
        let got = engine.accepts(grammar, output);
        let ok = got == Ok(want);
        if want {
            self.total += 1;
            self.accepted += usize::from(ok);
            if !ok {
                self.misses
                    .push(format!("{who}: {got:?} {output:?}\n{grammar}"));
            }
        } else {
            self.mutations += 1;
            self.rejected += usize::from(ok);
            if !ok {
                self.false_accepts
                    .push(format!("{who}: {got:?} {output:?}"));
            }
        }
        ok
    }
}

/// Every case of one template, thinking on and off, under `auto`,
/// `required` and a named function; mutations and rivals rejected.
fn run_template(engine: &mut Engine, tally: &mut Tally, t: &Template) {
    let (accepted, total) = (tally.accepted, tally.total);
    for thinking in [true, false] {
        for case in cases(&t.analysis) {
            if !case.reasoning.is_empty() && !thinking {
                continue;
            }
            let mut who = format!(
                "{} [{}{}]",
                t.name,
                case.what,
                if thinking { ", thinking" } else { "" }
            );
            let r = match model_output(t, &case, thinking) {
                Some(Ok(r)) => {
                    if r.by_common_prefix {
                        who.push_str(" (cut at the common prefix)");
                    }
                    r
                }
                Some(Err(why)) => {
                    tally.unrenderable.push(format!("{who}: {why}"));
                    continue;
                }
                None => continue,
            };
            let auto = grammar(t, &r.generation_prompt, thinking, ToolChoice::Auto, true);
            tally.check(engine, &who, &auto, &r.output, true);
            if case.content.is_empty() && case.reasoning.is_empty() {
                let required = grammar(
                    t,
                    &r.generation_prompt,
                    thinking,
                    ToolChoice::Required,
                    true,
                );
                tally.check(
                    engine,
                    &format!("{who} required"),
                    &required,
                    &r.output,
                    true,
                );
            }
            if case.calls.len() > 1 {
                let single = grammar(t, &r.generation_prompt, thinking, ToolChoice::Auto, false);
                tally.check(
                    engine,
                    &format!("{who} second call, parallel off"),
                    &single,
                    &r.output,
                    false,
                );
            }
        }
        mutations(engine, tally, t, thinking);
    }
    tally.rows.push((
        t.name.clone(),
        tally.accepted - accepted,
        tally.total - total,
    ));
}

/// Outputs the grammar must reject, rendered by the template itself.
fn mutations(engine: &mut Engine, tally: &mut Tally, t: &Template, thinking: bool) {
    for (what, calls) in turns::argument_mutations() {
        let case = Case {
            what,
            content: "",
            reasoning: "",
            calls,
        };
        let Some(Ok(r)) = model_output(t, &case, thinking) else {
            continue;
        };
        let required = grammar(
            t,
            &r.generation_prompt,
            thinking,
            ToolChoice::Required,
            true,
        );
        tally.check(
            engine,
            &format!("{} [{what}, required]", t.name),
            &required,
            &r.output,
            false,
        );
        // With no marker before a call, an unknown tool's call is content.
        if opens_with_marker(t) || what != "unknown tool" {
            let auto = grammar(t, &r.generation_prompt, thinking, ToolChoice::Auto, true);
            tally.check(
                engine,
                &format!("{} [{what}]", t.name),
                &auto,
                &r.output,
                false,
            );
        }
    }
    let case = Case {
        what: "call",
        content: "",
        reasoning: "",
        calls: vec![weather()],
    };
    let Some(Ok(call)) = model_output(t, &case, thinking) else {
        return;
    };
    let named = grammar(
        t,
        &call.generation_prompt,
        thinking,
        ToolChoice::Function("search".into()),
        true,
    );
    tally.check(
        engine,
        &format!("{} [a call of get_weather, search named]", t.name),
        &named,
        &call.output,
        false,
    );
    let required = grammar(
        t,
        &call.generation_prompt,
        thinking,
        ToolChoice::Required,
        true,
    );
    tally.check(
        engine,
        &format!("{} [text only, required]", t.name),
        &required,
        "It is sunny.",
        false,
    );
    let single = grammar(
        t,
        &call.generation_prompt,
        thinking,
        ToolChoice::Auto,
        false,
    );
    tally.check(
        engine,
        &format!("{} [one call, parallel off]", t.name),
        &single,
        &call.output,
        true,
    );
    let named = grammar(
        t,
        &call.generation_prompt,
        thinking,
        ToolChoice::Function("get_weather".into()),
        true,
    );
    tally.check(
        engine,
        &format!("{} [get_weather named]", t.name),
        &named,
        &call.output,
        true,
    );
    let none = grammar(t, &call.generation_prompt, thinking, ToolChoice::None, true);
    assert!(
        !none.contains("get_weather"),
        "{}: tool_choice none writes tool rules:\n{none}",
        t.name
    );
}

/// The template's calls open with a marker (the section's, the call's, or
/// a tagged name's prefix), not with the name or a bare JSON object.
fn opens_with_marker(t: &Template) -> bool {
    let Some(f) = &t.analysis.tools else {
        return false;
    };
    let prefix = match &f.name {
        NameSlot::Tagged { prefix, .. } => prefix.as_str(),
        _ => "",
    };
    [f.section_start.as_str(), &f.call_start, prefix]
        .iter()
        .any(|m| !m.trim().is_empty())
}

fn run_set(label: &str, set: &[Template]) -> Tally {
    let mut engine = Engine::new();
    let mut tally = Tally::default();
    for t in set {
        run_template(&mut engine, &mut tally, t);
    }
    println!(
        "\n{label}: {} templates with tools; {}/{} rendered outputs accepted whole by llguidance; {}/{} mutations rejected",
        set.len(),
        tally.accepted,
        tally.total,
        tally.rejected,
        tally.mutations
    );
    for (name, accepted, total) in &tally.rows {
        println!("  {name:<50} {accepted:>3}/{total}");
    }
    println!(
        "{} case(s) not renderable as model output:",
        tally.unrenderable.len()
    );
    for m in &tally.unrenderable {
        println!("  {m}");
    }
    for m in &tally.misses {
        println!("miss: {m}");
    }
    for m in &tally.false_accepts {
        println!("accepted mutation: {m}");
    }
    tally
}

fn assert_share(label: &str, tally: &Tally) {
    assert!(tally.total > 0, "{label}: no rendered output was checked");
    let share = tally.accepted as f64 / tally.total as f64;
    assert!(
        share >= MIN_ACCEPTED_SHARE,
        "{label}: only {}/{} accepted",
        tally.accepted,
        tally.total
    );
    assert!(
        tally.false_accepts.is_empty(),
        "{label}: {} mutation(s) accepted",
        tally.false_accepts.len()
    );
}

#[test]
fn corpus_lark_accepted_by_llguidance() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/llamacpp");
    let set = templates(&dir);
    if set.is_empty() {
        println!(
            "skipped: no template corpus at {} (../shared is absent)",
            dir.display()
        );
        return;
    }
    let tally = run_set("corpus", &set);
    let rows = tally
        .rows
        .iter()
        .map(|(n, a, t)| (n.clone(), (*a, *t)))
        .collect();
    let summary = format!(
        "llguidance accepts {} of {} rendered outputs whole (`cargo test --release --test engines llguidance::`).",
        tally.accepted, tally.total
    );
    crate::common::coverage::record_block("engine-llguidance", &summary, &rows);
    assert_share("corpus", &tally);
}

#[test]
fn shipped_lark_accepted_by_llguidance() {
    let set = templates(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates"));
    let tally = run_set("shipped templates", &set);
    assert_share("shipped templates", &tally);
}

/// A response schema makes the answer `%json` (after optional reasoning):
/// a valid object is accepted, prose and a wrong type are not.
#[test]
fn response_schema_is_the_json_answer() {
    let (_, analysis) = crate::common::shipped_template("hermes-think");
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "number"}}, "required": ["city", "temp"]});
    let options = Options::default()
        .with_tool_choice(ToolChoice::None)
        .with_response_schema(Some(schema))
        .with_enable_thinking(Some(true));
    let grammar = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
    let mut engine = Engine::new();
    for (text, want) in [
        ("{\"city\": \"Paris\", \"temp\": 21.5}", true),
        (
            "<think>Warm.</think>\n\n{\"city\": \"Paris\", \"temp\": 21}",
            true,
        ),
        ("It is 21 degrees in Paris.", false),
        ("{\"city\": \"Paris\", \"temp\": \"warm\"}", false),
    ] {
        assert_eq!(
            engine.accepts(&grammar, text),
            Ok(want),
            "{text:?}\n{grammar}"
        );
    }
}

/// Markers that are special tokens of the tokenizer: the test tokenizer has
/// `<|tool|>` and `<|/tool|>`; a template calling with them is accepted,
/// as tokens, only by the export that lists them (`lark_with`), and the
/// default text export accepts the same output spelled in bytes.
#[test]
fn special_token_markers_match_as_tokens() {
    let source = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates/hermes-think.jinja"),
    )
    .unwrap();
    let source = source
        .replace("<tool_call>", "<|tool|>")
        .replace("</tool_call>", "<|/tool|>");
    let tmpl = ChatTemplate::new(&source, &TemplateConfig::default()).unwrap();
    let analysis = tmpl.analyze().unwrap();
    let t = Template {
        name: "hermes-special".into(),
        tmpl,
        analysis,
    };
    let r = output(&t, "", "", &[weather()], false).expect("renders a call");
    let options = options(&r.generation_prompt, false, ToolChoice::Auto, true);
    let protocol = Protocol::new(&t.analysis, &options);
    let special =
        LarkOptions::default().with_special_tokens(vec!["<|tool|>".into(), "<|/tool|>".into()]);
    let as_tokens = lark_with(&protocol, &special).unwrap().lark;
    let as_text = lark(&protocol).unwrap().lark;
    assert!(
        as_tokens.contains("<|tool|>") && !as_tokens.contains("\"<|tool|>\""),
        "{as_tokens}"
    );
    let mut engine = Engine::new();
    let trie = engine.env.tok_trie().clone();
    let tokens = trie.tokenize_with_special(&r.output, |s| engine.env.tokenize_bytes(s.as_bytes()));
    let bytes = engine.env.tokenize_bytes(r.output.as_bytes());
    assert!(
        tokens.len() < bytes.len(),
        "the markers are special tokens here"
    );
    assert_eq!(
        engine.accepts_tokens(&as_tokens, &tokens),
        Ok(true),
        "{:?}\n{as_tokens}",
        r.output
    );
    assert_eq!(
        engine.accepts_tokens(&as_text, &tokens),
        Ok(false),
        "text markers never match tokens"
    );
    assert_eq!(
        engine.accepts(&as_text, &r.output),
        Ok(true),
        "{:?}\n{as_text}",
        r.output
    );
}

/// Tools llguidance's JSON-schema support only partly covers, and names
/// that are no Lark identifiers: every shipped format's export still
/// compiles (loosely, with warnings), never fails.
#[test]
fn odd_tools_compile_with_warnings() {
    let odd = vec![
        json!({"type": "function", "function": {"name": "my.tool-name/ü", "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "pattern": "^(?=a)a+$"},
            "when": {"type": "string", "format": "weekday"},
            "node": {"$ref": "#/$defs/node"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["x"]}]}},
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}}}}),
        json!({"type": "function", "function": {"name": "no_params"}}),
        json!({"type": "function", "function": {"name": "Upper_Case", "parameters": {}}}),
    ];
    let mut engine = Engine::new();
    for t in templates(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates")) {
        for choice in [ToolChoice::Auto, ToolChoice::Required] {
            let options = Options::default()
                .with_tools(odd.clone())
                .with_tool_choice(choice);
            let out = lark(&Protocol::new(&t.analysis, &options))
                .unwrap_or_else(|e| panic!("{}: {e}", t.name));
            if let Err(e) = engine.accepts(&out.lark, "") {
                panic!(
                    "{}: llguidance rejects the grammar: {e}\n{}",
                    t.name, out.lark
                );
            }
            assert!(
                out.warnings.iter().any(|w| w.contains("`pattern`")),
                "{}: {:?}",
                t.name,
                out.warnings
            );
            assert!(
                out.warnings.iter().any(|w| w.contains("`format`")),
                "{}: {:?}",
                t.name,
                out.warnings
            );
        }
    }
}

/// The schema feature table (`tests/common/schemas.rs`) as a response
/// format: the Lark export hands the schema to llguidance's `%json`, which
/// must accept every valid answer and reject every invalid one.
#[test]
fn schema_features_in_llguidance() {
    let (_, analysis) = crate::common::shipped_template("bare-json");
    let mut engine = Engine::new();
    let (mut accepted, mut rejected) = (0, 0);
    for case in crate::common::schemas::schema_features() {
        let options = Options::default()
            .with_tool_choice(ToolChoice::None)
            .with_response_schema(Some(case.schema.clone()));
        let grammar = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
        for (text, valid) in case.answers() {
            let got = engine.accepts(&grammar, text);
            assert_eq!(got, Ok(valid), "{}: {text}\n{grammar}", case.schema);
            *(if valid { &mut accepted } else { &mut rejected }) += 1;
        }
    }
    println!("schema features in llguidance: {accepted} valid answers accepted, {rejected} invalid rejected");
}

/// A tool with 200 optional arguments: the Lark export names the arguments
/// after each one as a rule (spelled out per option, they would be 20 100
/// references), which llguidance reads as the spelled-out form: any of the
/// arguments, in schema order, none repeated.
#[test]
fn long_argument_lists_name_their_tails() {
    let properties: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let tools = vec![
        json!({"type": "function", "function": {"name": "wide", "parameters": {
        "type": "object", "properties": properties}}}),
    ];
    // A call of `wide` with the arguments `keys` (each "v") in each format.
    fn tagged(keys: &[&str]) -> String {
        let args: String = keys
            .iter()
            .map(|k| format!("<parameter={k}>\nv\n</parameter>\n"))
            .collect();
        format!("<tool_call>\n<function=wide>\n{args}</function>\n</tool_call>")
    }
    fn python(keys: &[&str]) -> String {
        let args: Vec<String> = keys.iter().map(|k| format!("{k}=\"v\"")).collect();
        format!(
            "<|tool_call_start|>[wide({})]<|tool_call_end|>",
            args.join(", ")
        )
    }
    type Call = fn(&[&str]) -> String;
    let calls: [(&str, Call, &str); 2] = [
        ("qwen-coder-xml", tagged, "args_wide_tail"),
        ("python-calls", python, "args_wide_tail"),
    ];
    let mut engine = Engine::new();
    for (template, call, tail) in calls {
        let (_, analysis) = crate::common::shipped_template(template);
        let options = Options::default()
            .with_tools(tools.clone())
            .with_tool_choice(ToolChoice::Required);
        let grammar = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
        assert!(grammar.contains(tail), "{template}: {grammar}");
        for (keys, valid) in [
            (&["p3", "p50", "p199"][..], true),
            (&[][..], true),
            (&["p199"][..], true),
            (&["p50", "p3"][..], false),
            (&["p3", "p3"][..], false),
            (&["p200"][..], false),
        ] {
            let text = call(keys);
            assert_eq!(
                engine.accepts(&grammar, &text),
                Ok(valid),
                "{template}: {text}"
            );
        }
    }
}

/// A template with its own value notation (Gemma 4: `{key:<|"|>text<|"|>}`)
/// writes non-string values bare, with no closing quote after them, and
/// nests objects and lists in the notation: the Lark grammar takes both
/// (issue 30's "special-token-quoted strings"), and still rejects a string
/// left unclosed.
#[test]
fn bare_values_and_nested_notation_in_lark() {
    let Some(tmpl) = crate::common::corpus_template("google-gemma-4-31B-it") else {
        return;
    };
    let analysis = tmpl.analyze().unwrap();
    let options = Options::default()
        .with_tools(tools())
        .with_tool_choice(ToolChoice::Required)
        .with_enable_thinking(Some(false));
    let grammar = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
    let mut engine = Engine::new();
    let q = "<|\"|>";
    for (text, accepted) in [
        (format!("<|tool_call>call:get_weather{{city:{q}Paris{q},days:3}}<tool_call|><|tool_response>"), true),
        (
            format!("<|tool_call>call:search{{query:{q}x{q},filters:{{tags:[{q}a{q},{q}b{q}],exact:true}},limit:10}}<tool_call|><|tool_response>"),
            true,
        ),
        (format!("<|tool_call>call:get_weather{{city:{q}Paris}}<tool_call|><|tool_response>"), false),
    ] {
        assert_eq!(
            engine.accepts(&grammar, &text),
            Ok(accepted),
            "{text}\n{grammar}"
        );
    }
}

/// `allowed_tools` (mode auto) in llguidance: the prompt lists both tools,
/// the grammar lets the model answer or call `get_weather`, never
/// `get_time`.
#[test]
fn allowed_tools_narrow_the_lark_calls() {
    use crate::common::request_options::{allowed_tools, call, prepared, tools};
    let p = prepared(tools(false), allowed_tools("auto", &["get_weather"]));
    assert!(p.prompt.as_deref().unwrap().contains("\"get_time\""));
    let grammar = p.lark().unwrap().lark;
    let mut engine = Engine::new();
    for (text, want) in [
        ("It is sunny.".to_string(), true),
        (call("get_weather", r#"{"city": "Paris"}"#), true),
        (call("get_time", "{}"), false),
    ] {
        assert_eq!(
            engine.accepts(&grammar, &text),
            Ok(want),
            "{text}\n{grammar}"
        );
    }
}

/// A `strict` tool in llguidance: no key its schema does not declare, even
/// where the schema declares none (`get_time`'s any object).
#[test]
fn strict_tools_take_no_undeclared_key_in_lark() {
    use crate::common::request_options::{call, prepared, tools};
    let mut engine = Engine::new();
    for (strict, extra_accepted) in [(false, true), (true, false)] {
        let grammar = prepared(tools(strict), json!("required"))
            .lark()
            .unwrap()
            .lark;
        let extra = call("get_time", r#"{"zone": "UTC"}"#);
        assert_eq!(engine.accepts(&grammar, &call("get_time", "{}")), Ok(true));
        assert_eq!(
            engine.accepts(&grammar, &extra),
            Ok(extra_accepted),
            "strict {strict}\n{grammar}"
        );
    }
}

/// The analysis of the inline template `source` and its Lark export for
/// `tool`.
fn inline_lark(source: &str, tool: Value) -> (Analysis, String) {
    let analysis = ChatTemplate::new(source, &TemplateConfig::default())
        .unwrap()
        .analyze()
        .unwrap();
    let options = Options::default().with_tools(vec![tool]);
    let grammar = lark(&Protocol::new(&analysis, &options)).unwrap().lark;
    (analysis, grammar)
}

/// llguidance accepts each text of `cases` exactly when its flag says.
fn assert_accepts<T: AsRef<str>>(grammar: &str, cases: &[(T, bool)]) {
    let mut engine = Engine::new();
    for (text, want) in cases {
        let text = text.as_ref();
        assert_eq!(
            engine.accepts(grammar, text),
            Ok(*want),
            "{text:?}\n{grammar}"
        );
    }
}

/// Bare JSON calls that content may precede (`{"name": ..., "parameters":
/// ...}` after any text, as Llama-4's JSON template writes them): the
/// lazy head is the text up to the call's `{`, and a call with no text
/// before it has a head too, the `{` alone. (The head took the content's
/// exclusion of `{` and so could never begin with it: an output that was
/// only the call was refused.)
#[test]
fn a_bare_json_call_may_open_the_output_after_no_text() {
    let source = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' -%}<|assistant|>{{ m.content or '' }}
{%- for c in m.tool_calls or [] -%}{"name": "{{ c.function.name }}", "parameters": {{ c.function.arguments | tojson }}}{%- endfor -%}<|eot|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|eot|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;
    let tool = json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}});
    let (_, grammar) = inline_lark(source, tool);
    assert!(grammar.contains("head[lazy]: /(?s:.*)\\{/\n"), "{grammar}");
    let call = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
    assert_accepts(
        &grammar,
        &[
            (call.to_string(), true),
            (format!("Checking. {call}"), true),
            ("Just text.".to_string(), true),
            (
                r#"{"name": "get_time", "parameters": {}}"#.to_string(),
                false,
            ),
        ],
    );
}

/// Python calls whose template prints values with `str()` (`"%s" |
/// format(v)`): strings bare (`city=Paris`), other values as literals. The
/// grammar takes the bare spelling beside the literal one, quotes inside
/// it as `str()` prints them; a bare word where the schema wants a number
/// is still refused.
#[test]
fn python_strings_a_template_prints_bare_are_accepted() {
    let source = r#"{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}<|assistant|>[
{%- for c in m.tool_calls -%}{{ c.function.name }}(
{%- for k in c.function.arguments -%}{{ k }}={{ "%s" | format(c.function.arguments[k]) }}{{ ", " if not loop.last }}{%- endfor -%}){{ ", " if not loop.last }}
{%- endfor -%}]<|eot|>
{%- else -%}<|{{ m.role }}|>{{ m.content }}<|eot|>{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"#;
    let tool = json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}});
    let (analysis, grammar) = inline_lark(source, tool);
    assert_eq!(
        analysis.tools.as_ref().map(|t| t.arguments.clone()),
        Some(chat_autoparser::analysis::ArgumentsSlot::Python {
            raw_strings: false,
            bare_strings: true,
        })
    );
    assert_accepts(
        &grammar,
        &[
            ("[get_weather(city=Paris, days=3)]", true),
            ("[get_weather(city=New York\nNY)]", true),
            ("[get_weather(city=the \"Big\" 'Apple', days=3)]", true),
            ("[get_weather(city=\"Paris\", days=3)]", true),
            ("[get_weather(city=Paris, days=three)]", false),
        ],
    );
}

/// Calls the template prints whole with `tojson`, in OpenAI's shape: the
/// Lark holds the `"type": "function"` member every call object writes, so
/// the rendered calls (one, and two in one list) are accepted; before the
/// member was kept, llguidance accepted none of them.
#[test]
fn openai_shaped_call_objects_are_accepted() {
    let source = include_str!("../fixtures/openai-call-objects.jinja");
    let tmpl = ChatTemplate::new(source, &TemplateConfig::default()).unwrap();
    let analysis = tmpl.analyze().unwrap();
    let t = Template {
        name: "openai-call-objects".into(),
        tmpl,
        analysis,
    };
    let second = ("get_weather", json!({"city": "Oslo"}));
    let mut engine = Engine::new();
    for calls in [vec![weather()], vec![weather(), second]] {
        let r = output(&t, "", "", &calls, false).expect("renders the calls");
        assert!(r.output.contains("\"type\": \"function\""), "{}", r.output);
        let options = options(&r.generation_prompt, false, ToolChoice::Auto, true);
        let grammar = lark(&Protocol::new(&t.analysis, &options)).unwrap().lark;
        assert_eq!(
            engine.accepts(&grammar, &r.output),
            Ok(true),
            "{:?}\n{grammar}",
            r.output
        );
        let without = r.output.replace("\"type\": \"function\", ", "");
        assert_eq!(engine.accepts(&grammar, &without), Ok(false), "{without:?}");
    }
}
