//! `check`: will this library handle a model, and what will it get wrong?
//! A verdict with its evidence, for any template, in well under a second.
//!
//! [`check`] takes a [`Chat`] (a template and its analysis) and reports:
//! - what the analysis found and where each finding came from ([`Detection`]);
//! - per request shape the template supports ([`Shape`]: thinking on/off,
//!   `tool_choice` `required` or a named function, parallel calls off), the
//!   probe outputs (no call, one call, two calls, content and a call, hard
//!   arguments), each parsed back whole and streamed at every chunking
//!   (1 to 7 bytes), and each grammar export built and checked against it
//!   in-process where a checker exists ([`exports`]);
//! - the prompt side: the tool block native or polyfilled, multi-turn
//!   prefix stability, the training spans ([`PromptReport`]);
//! - the lint findings that matter for parsing;
//! - a [`Verdict`] and one [`Warning`] per problem, each saying what to do.
//!
//! The parsers run under the output policy given ([`check_with_policy`];
//! [`check`]: the default, `lossless`), so a server can check the policy it
//! serves with.
//!
//! The probe outputs are the template's own renders of assistant turns (the
//! front door's render, polyfills included: a template that renders no call
//! gets its calls written in the model's assumed format). There is no
//! generator from the output grammar yet (issue 30); when there is, it
//! will widen the probes beyond what the template renders.
//!
//! Modules, one concept each: `turn` (one assistant turn rendered into a
//! model output), `probes` (shapes and turns), `roundtrip` (parse back,
//! whole and streamed), `exports` (grammar exports and their in-process
//! checks), `prompt` (the prompt side), `detection` (the analysis summary),
//! `verdict` (the rules).
//!
//! Invariants: never panics and never fails once the template is analysed
//! (every refusal is part of the report); deterministic; the verdict is
//! [`Verdict::Works`] only when every probe the template renders parses
//! back whole and streamed and no export in-process rejects one.

mod detection;
pub mod exports;
mod probes;
mod prompt;
mod roundtrip;
pub mod turn;
mod verdict;

use serde::Serialize;
use serde_json::Value;

pub use detection::{Detection, ReasoningFound, Source, ToolsFound};
pub use exports::{Acceptance, Built, ExportCheck, KEPT_AS_TEXT};
pub use probes::{tools as probe_tools, Shape};
pub use prompt::{PrefixBreak, PromptReport, Rendering, Span};
pub use roundtrip::MAX_CHUNK;
pub use verdict::{Verdict, Warning};

use crate::lint::Finding;
use crate::parser::Policy;
use crate::request::{Chat, ChatRequest};

/// Where a probe's output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OutputSource {
    /// The rendered turn, after the prompt.
    Render,
    /// The rendered turn where it parts from the prompt (it does not start with it).
    CommonPrefix,
    /// The calls written by the front door's polyfill (the template renders none).
    Polyfill,
}

/// One probe of one shape: the output and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ProbeReport {
    /// The probe's name (`no-call`, `one-call`, `two-calls`, ...).
    pub name: &'static str,
    /// Why the probe was not run (the template refuses or drops the turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The model output the template renders for the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Where the output came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<OutputSource>,
    /// The whole-output parse disagrees with the turn: how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    /// Chunk sizes whose stream does not add up to the whole parse.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stream_failures: Vec<usize>,
    /// The first such difference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<String>,
    /// Each export's verdict on the output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<ExportCheck>,
    /// The template writes the turn's content inside its own reasoning
    /// block (gpt-oss writes a call turn's content in its analysis
    /// channel): no parser can tell it from reasoning, and the output
    /// parsed back with it as reasoning.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub content_as_reasoning: bool,
    /// The parse disagrees with the turn, but the template renders the
    /// parsed message as the same output: the template cannot write the
    /// difference (MiniMax-M3 drops a `null` inside an object), so no
    /// parser can read it back.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub renders_alike: bool,
    /// The turn the output stands for (its content as reasoning when
    /// `content_as_reasoning`).
    #[serde(skip)]
    pub turn: turn::Turn,
    /// Our parser's message for the output.
    #[serde(skip)]
    pub parsed: Option<crate::message::AssistantMessage>,
    /// The text the output continues (see [`turn::RenderedTurn::prompt`]).
    #[serde(skip)]
    pub prompt: String,
    /// The exports for that prompt (the engines check the output against them).
    #[serde(skip)]
    pub built: Vec<Built>,
}

impl ProbeReport {
    /// Ran, parsed back whole and streamed, and no export rejected it.
    pub fn passed(&self) -> bool {
        self.skipped.is_none()
            && self.parse_error.is_none()
            && self.stream_failures.is_empty()
            && !self
                .exports
                .iter()
                .any(|e| matches!(e.acceptance, Acceptance::Rejected(_)))
    }
}

/// One request shape and its probes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ShapeReport {
    /// The request's options.
    pub shape: Shape,
    /// Why no parser could be built for it, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parser_error: Option<String>,
    /// The grammar exports, as built.
    pub exports: Vec<Built>,
    /// The probes.
    pub probes: Vec<ProbeReport>,
}

/// Everything `check` found about one template.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CheckReport {
    /// What was decided.
    pub verdict: Verdict,
    /// One line per problem, with what to do.
    pub warnings: Vec<Warning>,
    /// What is worth knowing but does not affect parsing.
    pub notes: Vec<String>,
    /// What the analysis found.
    pub detection: Detection,
    /// The request shapes tried.
    pub shapes: Vec<ShapeReport>,
    /// The prompt side.
    pub prompt: PromptReport,
    /// Lint findings that matter for parsing.
    pub lint: Vec<Finding>,
    /// The renders ran out of fuel (the template is too costly to render
    /// all the probes with one render's fuel): what was skipped is unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub out_of_fuel: bool,
}

impl CheckReport {
    /// Decides the verdict and the warnings again (after engine results were
    /// added to the probes' `exports`).
    pub fn decide(&mut self) {
        let (verdict, warnings, notes) = verdict::decide(self);
        self.verdict = verdict;
        self.warnings = warnings;
        self.notes = notes;
    }

    /// The tools every probe request gives.
    pub fn tools(&self) -> Vec<Value> {
        probes::tools()
    }

    /// Adds a warning found outside [`check`] (an engine's or a
    /// hand-written export's disagreement): a template that worked now
    /// works with warnings. Undone by [`CheckReport::decide`].
    pub fn add_warning(&mut self, warning: Warning) {
        self.warnings.push(warning);
        if self.verdict == Verdict::Works {
            self.verdict = Verdict::Warnings;
        }
    }
}

/// Checks `chat` (see the module doc), its parsers under the default
/// policy (`lossless`).
pub fn check(chat: &Chat) -> CheckReport {
    check_with_policy(chat, Policy::default())
}

/// Checks `chat` with its parsers under `policy` (docs/policies.md): the
/// same probes, parsed back and streamed as a server with that policy would.
pub fn check_with_policy(chat: &Chat, policy: Policy) -> CheckReport {
    let template = chat.template();
    let analysis = chat.analysis();
    let _run = crate::template::RunFuel::start(&template.config().limits);
    let caps = template.capabilities();
    let tools = probes::tools();
    let shapes = probes::plan(analysis)
        .into_iter()
        .map(|(shape, probes)| check_shape(chat, (&tools, policy), shape, &probes))
        .collect();
    let lint = template
        .lint()
        .findings
        .into_iter()
        .filter(|f| verdict::affects_parsing(f.kind))
        .collect();
    let mut report = CheckReport {
        verdict: Verdict::Works,
        warnings: Vec::new(),
        notes: Vec::new(),
        detection: detection::summarize(analysis, &caps),
        shapes,
        prompt: prompt::inspect(template, analysis, &tools),
        lint,
        out_of_fuel: false,
    };
    // Renders refused for want of fuel would read as the template's own refusals.
    report.out_of_fuel = crate::template::RunFuel::left() == Some(0);
    report.decide();
    report
}

impl Chat {
    /// Checks this template; see [`check`].
    pub fn check(&self) -> CheckReport {
        check(self)
    }

    /// Checks this template under an output policy; see [`check_with_policy`].
    pub fn check_with_policy(&self, policy: Policy) -> CheckReport {
        check_with_policy(self, policy)
    }
}

/// What every probe request gives: the tools and the output policy.
type Request<'a> = (&'a [Value], Policy);

/// What one prompt of a shape serves: its exports, their in-process
/// checker, and the parser.
struct Setup {
    prompt: String,
    /// The end marker of a reasoning block the prompt opened (the output
    /// starts inside it), when the block has an opening marker.
    open_block_end: Option<String>,
    built: Vec<Built>,
    gbnf: exports::GbnfChecker,
    parser: crate::error::Result<crate::parser::OutputParser>,
}

impl Setup {
    fn new(chat: &Chat, (tools, policy): Request, shape: &Shape, prompt: &str) -> Setup {
        let request = ChatRequest::default()
            .with_policy(policy)
            .with_tools(tools.to_vec())
            .with_tool_choice(shape.tool_choice.clone())
            .with_parallel_tool_calls(shape.parallel)
            .with_enable_thinking(shape.thinking)
            .with_prompt(prompt.to_owned());
        let prepared = chat.prepare(&request);
        let built = exports::build(&prepared);
        let open_block_end = prepared
            .protocol
            .reasoning
            .as_ref()
            .filter(|r| r.opened && !r.start.trim().is_empty())
            .map(|r| r.end.clone());
        Setup {
            prompt: prompt.to_owned(),
            open_block_end,
            gbnf: exports::GbnfChecker::new(&built),
            parser: prepared.parser(),
            built,
        }
    }
}

/// Renders the shape's probes, builds its parser and exports (once per
/// prompt the outputs continue), and checks each.
fn check_shape(
    chat: &Chat,
    (tools, policy): Request,
    shape: Shape,
    probes: &[probes::Probe],
) -> ShapeReport {
    let analysis = chat.analysis();
    let render =
        |t: &turn::Turn| turn::render_turn(chat.template(), analysis, tools, t, shape.thinking);
    let rendered: Vec<_> = probes.iter().map(|p| render(&p.turn)).collect();
    // The generation prompt first: the shape's exports are reported for it.
    let mut setups: Vec<Setup> = Vec::new();
    let mut prompts: Vec<&turn::RenderedTurn> = rendered.iter().flatten().collect();
    prompts.sort_by_key(|r| r.by_common_prefix);
    for r in prompts {
        if !setups.iter().any(|s| s.prompt == r.prompt) {
            setups.push(Setup::new(chat, (tools, policy), &shape, &r.prompt));
        }
    }
    let probes = probes
        .iter()
        .zip(rendered)
        .map(|(probe, rendered)| {
            let report = ProbeReport {
                name: probe.name,
                skipped: None,
                output: None,
                source: None,
                parse_error: None,
                stream_failures: Vec::new(),
                stream_error: None,
                exports: Vec::new(),
                content_as_reasoning: false,
                renders_alike: false,
                turn: probe.turn.clone(),
                parsed: None,
                prompt: String::new(),
                built: Vec::new(),
            };
            let rendered = match rendered {
                Ok(r) => r,
                Err(why) => return skipped(report, format!("{}: {why}", verdict::REFUSED)),
            };
            if let Some(why) = dropped(&rendered.output, &probe.turn) {
                return skipped(report, why);
            }
            match setups.iter().find(|s| s.prompt == rendered.prompt) {
                Some(setup) => {
                    let output_of = |t: &turn::Turn| render(t).ok().map(|r| r.output);
                    run_probe(report, setup, analysis, rendered, &output_of)
                }
                None => skipped(report, "no prompt".into()),
            }
        })
        .collect();
    let main = setups.into_iter().next();
    ShapeReport {
        shape,
        parser_error: main
            .as_ref()
            .and_then(|s| s.parser.as_ref().err().map(|e| e.to_string())),
        exports: main.map(|s| s.built).unwrap_or_default(),
        probes,
    }
}

fn skipped(mut report: ProbeReport, why: String) -> ProbeReport {
    report.skipped = Some(why);
    report
}

/// Why the output cannot stand for the turn: the template left out its
/// content, reasoning or a call (it renders them only in other turns).
fn dropped(output: &str, turn: &turn::Turn) -> Option<String> {
    if !turn.content.is_empty() && !output.contains(turn.content.trim()) {
        return Some("the template does not write this turn's content".into());
    }
    if !turn.reasoning.is_empty() && !output.contains(turn.reasoning.trim()) {
        return Some("the template does not write this turn's reasoning".into());
    }
    if turn
        .calls
        .iter()
        .any(|(name, _)| !output.contains(name.as_str()))
    {
        return Some("the template does not write this turn's calls".into());
    }
    None
}

/// The output a model writes for `turn` after a prompt that opened the
/// reasoning block: the template's render when it closes the block itself;
/// else, for a turn with no reasoning, the block's end marker first. Such
/// templates leave this turn's reasoning and its end to the content they
/// are given (Nemotron-Nano-v2 writes `<think>\n` and then the content
/// whole), and a model closes the block before its answer, so the render
/// alone is no output a model writes.
fn closing_the_open_block(setup: &Setup, turn: &turn::Turn, output: String) -> String {
    let Some(end) = &setup.open_block_end else {
        return output;
    };
    let marker = crate::protocol::Marker::new(end);
    // The block is closed when its end comes before anything the turn
    // wrote: an end marker inside a call's string argument closes nothing.
    let first_written = std::iter::once(turn.content.trim())
        .chain(turn.calls.iter().map(|(name, _)| name.as_str()))
        .filter(|t| !t.is_empty())
        .filter_map(|t| output.find(t))
        .min()
        .unwrap_or(output.len());
    let closes = marker
        .first_core()
        .and_then(|core| output.find(core))
        .is_some_and(|at| at < first_written);
    match turn.reasoning.is_empty() && !closes {
        true => format!("{}{output}", end.trim_start()),
        false => output,
    }
}

/// Parses the probe's output back whole and streamed, and checks the
/// exports. `render` renders another turn in the probe's place (its output).
fn run_probe(
    mut report: ProbeReport,
    setup: &Setup,
    analysis: &crate::analysis::Analysis,
    rendered: turn::RenderedTurn,
    render: &dyn Fn(&turn::Turn) -> Option<String>,
) -> ProbeReport {
    let Ok(parser) = &setup.parser else {
        return skipped(report, "no parser".into());
    };
    let turn = &report.turn.clone();
    let rendered_output = rendered.output.clone();
    let output = closing_the_open_block(setup, turn, rendered.output);
    report.prompt = rendered.prompt;
    report.built = setup.built.clone();
    report.source = Some(match () {
        _ if analysis.tools.is_none() && !turn.calls.is_empty() => OutputSource::Polyfill,
        _ if rendered.by_common_prefix => OutputSource::CommonPrefix,
        _ => OutputSource::Render,
    });
    let batch = parser.parse(&output);
    report.parse_error = roundtrip::compare(&batch, turn).err();
    if report.parse_error.is_some() {
        if let Some(as_reasoning) =
            roundtrip::content_as_reasoning(analysis, &report.prompt, &output, turn)
        {
            if roundtrip::compare(&batch, &as_reasoning).is_ok() {
                report.parse_error = None;
                report.turn = as_reasoning;
                report.content_as_reasoning = true;
            }
        }
    }
    if report.parse_error.is_some() {
        report.renders_alike = render(&turn::Turn::of(&batch)).as_ref() == Some(&rendered_output);
    }
    let (failures, first) = roundtrip::stream_mismatches(parser, &output, &batch);
    report.stream_failures = failures;
    report.stream_error = first;
    report.exports = vec![setup.gbnf.check(&output, turn.calls.len())];
    report.parsed = Some(batch);
    report.output = Some(output);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{ChatTemplate, Limits, TemplateConfig};

    /// ChatML whose every render burns `{{ n }}` loop steps of fuel.
    fn costly(n: u32) -> String {
        format!(
            "{{%- for i in range({n}) %}}{{%- endfor %}}\
             {{%- for m in messages %}}<|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}<|im_end|>\n{{% endfor %}}\
             {{%- if add_generation_prompt %}}<|im_start|>assistant\n{{% endif %}}"
        )
    }

    fn checked(n: u32, fuel: u64) -> Option<CheckReport> {
        let config = TemplateConfig::default().with_limits(Limits::default().with_fuel(fuel));
        let chat = Chat::new(ChatTemplate::new(&costly(n), &config).ok()?).ok()?;
        Some(chat.check())
    }

    /// A template whose prompt opens the reasoning block and whose turn
    /// writes `<think>\n` then the content it is given whole (the content
    /// carries its own `</think>`, as Nemotron-Nano-v2's does).
    const OPENED_BY_PROMPT: &str = "{%- for m in messages %}<|{{ m.role }}|>\
        {% if m.role == 'assistant' %}<think>\n\
        {% if m.reasoning_content %}{{ m.reasoning_content }}</think>{% endif %}{% endif %}\
        {{ m.content }}<|end|>{% endfor %}\
        {%- if add_generation_prompt %}<|assistant|><think>\n{% endif %}";

    /// Hermes-style calls; the system turn prints each parameter's
    /// description with `+`, as gpt-oss-derived templates do (undefined
    /// there fails the render).
    const DESCRIBED_PARAMETERS: &str = "{%- for m in messages %}<|{{ m.role }}|>\
        {%- if loop.first and tools %}{% for t in tools %}{{ t.function.name }}\
        {% for k, p in t.function.parameters.properties.items() %}{{ '// ' + p.description }}{% endfor %}\
        {% endfor %}{% endif %}\
        {{- m.content }}{% for c in m.tool_calls or [] %}<tool_call>{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}</tool_call>{% endfor %}\
        <|end|>{% endfor %}\
        {%- if add_generation_prompt %}<|assistant|>{% endif %}";

    #[test]
    fn probes_describe_every_parameter() {
        let template = ChatTemplate::new(DESCRIBED_PARAMETERS, &TemplateConfig::default()).unwrap();
        let report = Chat::new(template).unwrap().check();
        let default = &report.shapes[0];
        assert!(
            default.probes.iter().all(|p| p.output.is_some()),
            "{:?}",
            default.probes
        );
    }

    #[test]
    fn a_turn_after_a_prompt_that_opened_reasoning_closes_the_block_first() {
        let template = ChatTemplate::new(OPENED_BY_PROMPT, &TemplateConfig::default()).unwrap();
        let report = Chat::new(template).unwrap().check();
        let default = &report.shapes[0];
        let no_call = default.probes.iter().find(|p| p.name == "no-call").unwrap();
        let output = no_call.output.as_deref().unwrap();
        assert_eq!(output, format!("</think>{}", no_call.turn.content));
        assert_eq!(no_call.parse_error, None);
        let parsed = no_call.parsed.as_ref().unwrap();
        assert_eq!(parsed.content_text(), no_call.turn.content);
        assert_eq!(parsed.reasoning_content, "");
    }

    #[test]
    fn probes_that_run_out_of_fuel_make_the_template_unsupported() {
        let cheap = checked(10, 5_000_000).expect("analyses");
        assert!(!cheap.out_of_fuel);
        // Costly enough that the analysis passes and the check's many more renders do not.
        let report = (200..4000)
            .step_by(200)
            .filter_map(|n| checked(n, 200_000))
            .find(|r| r.out_of_fuel)
            .expect("some loop length runs the check out of fuel");
        assert_eq!(report.verdict, Verdict::Unsupported);
        assert!(report.warnings[0]
            .what
            .starts_with("the probes ran out of render fuel"));
    }
}
