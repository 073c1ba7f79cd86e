//! Differential analysis: what a template's assistant turns look like.
//!
//! [`analyze`] renders probe conversations (see `probe`) that differ in one
//! thing each, cuts away what every render shares, and reads markers off the
//! text around known needles. The result, [`Analysis`], is plain data:
//! serializable, deterministic byte for byte, and usable without the template.
//!
//! The data model is in `model`; the stages, one module each:
//! - `probe`: the conversations and how the template wants them encoded;
//! - `diff`: splitting renders without cutting markers (what a marker is:
//!   [`crate::markers`]);
//! - `outputs`: from full renders to "what the model writes" per variant;
//! - `reasoning`, `content`, `tools`, `arguments`: reading each part's markers;
//! - `prose`: formats the template's instructions name but no render shows;
//! - `fallback`: tool formats for templates that take tools but write no calls.
//!
//! Invariants: no code keys on a model name or on strings peculiar to one
//! template; a variant the template refuses is recorded in
//! [`Analysis::comparisons`] and never aborts the analysis.

mod arguments;
mod content;
mod diff;
mod fallback;
mod json_scan;
mod model;
mod outputs;
mod probe;
mod prose;
mod reasoning;
mod report;
mod sections;
mod spare;
mod tools;

use crate::error::Result;
use crate::template::{ChatTemplate, FixedClock, TemplateConfig};

/// The marker lexicon lives in [`crate::markers`]; these two are public API.
pub use crate::markers::{marker_at, visible};
pub use fallback::dialect_name as fallback_dialect_name;
pub(crate) use fallback::formats as fallback_dialect_formats;
pub use model::*;
pub(crate) use probe::{thinking_parts, THINKING_PART};
pub use report::{tool_sources, tool_tokens};

/// Analyzes a compiled template.
///
/// Renders use a pinned clock so the result does not depend on the date.
pub fn analyze(template: &ChatTemplate) -> Result<Analysis> {
    analyze_with(template, true)
}

/// [`analyze`], with or without the fallback dialects: a dialect template
/// itself is analysed without them (they are what is being computed).
fn analyze_with(template: &ChatTemplate, fallbacks: bool) -> Result<Analysis> {
    // All the probe renders share one render's fuel (see `template::RunFuel`).
    let _run = crate::template::RunFuel::start(&template.config().limits);
    let pinned = pin_clock(template)?;
    let template = pinned.as_ref().unwrap_or(template);
    let mut report = report::Report::default();
    let variables = template.variables();
    let outputs = outputs::collect(template, &variables, &mut report)?;
    let (reasoning, reasoning_from_prose) =
        reasoning::detect(&outputs, template, &variables, &mut report);
    let mut turn = outputs.turn_format(&mut report);
    let mut content = content::detect(&outputs, &reasoning, &turn.stop_marker, &mut report);
    turn.headers = sections::headers(&content, &reasoning);
    (turn.message_end, turn.message_start) =
        sections::message_break(&reasoning, &turn.generation_prompt.default);
    let mut tools = tools::detect(
        &outputs,
        &reasoning,
        &content,
        &turn.stop_marker,
        &mut report,
    );
    if let Some(block) = tools
        .as_mut()
        .and_then(|f| tools::content_block(&outputs, &content, f))
    {
        content = block;
    }
    let preserved_tokens = report::preserved_tokens(&reasoning, &content, tools.as_ref(), &turn);
    let prose_call = match fallbacks {
        true => prose_call(&outputs, &variables, tools.as_ref()),
        false => None,
    };
    let fallback_tools = match (fallbacks, &prose_call) {
        (false, _) => Vec::new(),
        (true, Some(call)) => vec![call.format.clone()],
        (true, None) => fallback::for_template(&outputs, &variables),
    };
    // Renders refused for want of fuel would read as the template's own
    // refusals: the result would describe a template that does not exist.
    if crate::template::RunFuel::left() == Some(0) {
        return Err(crate::error::Error::new(
            crate::error::ErrorKind::Limit,
            crate::template::RUN_OUT_OF_FUEL,
        ));
    }
    let mut analysis = Analysis {
        format_version: FORMAT_VERSION,
        turn,
        reasoning,
        content,
        tools,
        fallback_tools,
        prose: Prose {
            tool_call: prose_call.map(|c| c.example),
            reasoning: reasoning_from_prose,
        },
        preserved_tokens,
        comparisons: report.finish(),
        variables,
        assumed_empty: outputs.assumed_empty.clone(),
        spare_tokens: Vec::new(),
    };
    let renders: Vec<&str> = outputs.whole_renders().collect();
    analysis.spare_tokens = spare::tokens(template.source(), &analysis, &renders);
    Ok(analysis)
}

/// The call format the template's instructions show, for a template that
/// reads `tools`: where it renders no call, it replaces the fallback
/// dialects (the template says what its model writes; each dialect more
/// would be an opener its content cannot hold); where it renders calls, it
/// is read besides them only when it opens with other markers (else it is
/// the same format, described, and is not analysed at all). A call the
/// instructions only name in words (`prose::named_skeleton`) counts only
/// where the template renders none.
fn prose_call(
    outputs: &outputs::Outputs,
    variables: &[String],
    own: Option<&ToolFormat>,
) -> Option<prose::ProseCall> {
    if !variables.iter().any(|v| v == "tools") || outputs.tools_refused.is_some() {
        return None;
    }
    // A call named in words is weaker evidence than one drawn: it is read
    // only where the template renders no call of its own.
    let named = || match (own, &outputs.bare_prompt) {
        (None, Some(bare)) => prose::named_skeleton(&outputs.instructions, bare),
        _ => None,
    };
    let skeleton = prose::skeleton(&outputs.instructions).or_else(named)?;
    let own_opener = |f: &ToolFormat| prose::squeezed(&(f.section_start.clone() + &f.call_start));
    if own.is_some_and(|f| own_opener(f) == skeleton.opener()) {
        return None;
    }
    skeleton.read()
}

/// Date-stamping templates (`strftime_now`) would make the analysis depend on
/// the day; recompile with a fixed clock when the caller's clock is not fixed.
fn pin_clock(template: &ChatTemplate) -> Result<Option<ChatTemplate>> {
    if !template.source().contains("strftime_now") {
        return Ok(None);
    }
    let config = TemplateConfig {
        clock: std::sync::Arc::new(FixedClock(1_735_689_600)), // 2025-01-01T00:00:00Z
        ..template.config().clone()
    };
    ChatTemplate::new(template.source(), &config).map(Some)
}

impl ChatTemplate {
    /// Runs the differential analysis on this template. See [`analyze`].
    pub fn analyze(&self) -> Result<Analysis> {
        analyze(self)
    }
}
