//! The lint checks, one function each, over named probe conversations.
//!
//! Conversations (needles as in `template::needles`; `R` reasoning, `C` a call):
//! - `answer-then-user`: user, assistant(R, text), user, generation prompt;
//! - `tool-loop` / `tool-loop-then-user`: user, assistant(R, C), tool result
//!   (then assistant text and a new user turn), no generation prompt; the
//!   `-thinking-off` variants have no R and the thinking switch off;
//! - `null-content` / `missing-content`: a tool-call turn and its result (a
//!   plain answer and a user turn when the template renders no tool loop) with
//!   `content: null` / without `content`; only when `content: ""` renders;
//! - `markup-in-arguments` / `markup-in-tools`: `<`, `>`, `&`, quotes in a call's
//!   argument / a tool's description;
//! - `two-system-messages`: system, system, user;
//! - `prefill-then-reply`: the thinking-off prompt, and the reply rendered as
//!   the last turn with its reasoning removed;
//! - `quotes-in-arguments`: a call holding `"` and `"""` in an argument, and its
//!   result (`markup-in-arguments` likewise); only when a plain value renders;
//! - `multi-turn`: system, user, call, result, answer, user, answer, user.
//!
//! Prefix stability is checked where the reasoning rules (`docs/lint.md`)
//! allow no rewrite: adding a message after a user, system or tool message
//! must only append. Adding a
//! message after an assistant turn may rewrite that turn (its think block goes
//! when it becomes history); what must survive there is checked by the
//! think/prefill checks on tool-call turns.
//!
//! Invariant: a check whose conversation the template cannot render reports
//! nothing (the capability table says what is missing), except the checks
//! whose point is a failing render.

use serde_json::{json, Map, Value as Json};

use super::{Finding, FindingKind as K};
use crate::markers;
use crate::template::needles::{self as n, CallShape, Probe};
use crate::template::{Capabilities, ChatTemplate, HistoryReasoning};

/// What the escapes of HTML or of JSON-for-HTML look like.
const ESCAPES: [&str; 10] = [
    "&lt;", "&gt;", "&amp;", "&#39;", "&#34;", "&quot;", "\\u003c", "\\u003e", "\\u0026", "\\u0027",
];
const MARKUP: &str = "a<b>&'\"c";
const QUOTES: &str = "say \"hi\" and \"\"\"doc\"\"\"";

struct Ctx<'t> {
    probe: Probe<'t>,
    caps: &'t Capabilities,
    shape: CallShape,
    findings: Vec<Finding>,
}

impl Ctx<'_> {
    fn report(&mut self, kind: K, conversation: &str, detail: impl Into<String>) {
        self.findings.push(Finding {
            kind,
            conversation: conversation.to_owned(),
            detail: detail.into(),
        });
    }

    fn tools(&self) -> Option<Vec<Json>> {
        self.caps.tools.then(n::tools)
    }

    fn call_turn(&self, value: &str) -> Json {
        n::assistant_calls(
            vec![n::call(n::NAME, &n::args(value), n::ID, self.shape)],
            self.shape,
        )
    }

    /// The thinking switch set to `on`, when the template has one.
    fn thinking(&self, on: bool) -> Option<Map<String, Json>> {
        let var = self.caps.thinking_toggle.clone()?;
        Some([(var, Json::Bool(on))].into_iter().collect())
    }
}

pub(super) fn run(template: &ChatTemplate, caps: &Capabilities) -> Vec<Finding> {
    let Some(probe) = Probe::new(template) else {
        // Say why: the template's own error, or the run's fuel used up.
        let request = crate::template::RenderRequest {
            messages: vec![n::user(n::USER)],
            add_generation_prompt: true,
            ..Default::default()
        };
        let why = template
            .render_as_written(&request)
            .err()
            .map(|e| format!(": {}", e.message()))
            .unwrap_or_default();
        let finding = Finding {
            kind: K::DoesNotRender,
            conversation: "user".into(),
            detail: format!("a single user turn does not render{why}"),
        };
        return vec![finding];
    };
    let shape = crate::template::capabilities::best_shape(caps);
    let mut ctx = Ctx {
        probe,
        caps,
        shape,
        findings: Vec::new(),
    };
    history_think(&mut ctx, template);
    tool_call_think(&mut ctx);
    content_null_and_missing(&mut ctx);
    escaped_json(&mut ctx);
    multiple_system(&mut ctx);
    prefill(&mut ctx);
    quotes(&mut ctx);
    prefix_stability(&mut ctx);
    ctx.findings
}

/// Kept reasoning, or an empty block where an earlier answer's reasoning was.
fn history_think(ctx: &mut Ctx<'_>, template: &ChatTemplate) {
    const CONV: &str = "answer-then-user";
    if ctx.caps.history_reasoning == HistoryReasoning::Kept {
        ctx.report(
            K::ThinkKeptInHistory,
            CONV,
            "the earlier answer's reasoning is rendered after the new user turn",
        );
        return;
    }
    let Some((start, end)) = template
        .analyze()
        .ok()
        .map(|a| (a.reasoning.start, a.reasoning.end))
    else {
        return;
    };
    if start.is_empty() || end.is_empty() {
        return;
    }
    let messages = [
        n::user(n::USER),
        n::assistant_reasoning(n::CONTENT, n::REASONING),
        n::user(n::USER2),
    ];
    let Ok(text) = ctx.probe.render(&messages, None, true) else {
        return;
    };
    let turn = between(&text, n::USER, n::USER2);
    let collapsed = turn
        .find(&start)
        .is_some_and(|i| turn[i + start.len()..].trim_start().starts_with(&end));
    if collapsed {
        ctx.report(
            K::ThinkCollapsedToEmpty,
            CONV,
            format!(
                "the earlier answer renders an empty {} block",
                markers::visible(&start)
            ),
        );
    }
}

/// The text between the first `from` and the next `to` (all of the rest when absent).
fn between<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let start = text.find(from).map_or(0, |i| i + from.len());
    let rest = &text[start..];
    &rest[..rest.find(to).unwrap_or(rest.len())]
}

/// A tool-call turn keeps its reasoning (and, thinking off, its prefill)
/// once the loop ends and a new user turn follows.
fn tool_call_think(ctx: &mut Ctx<'_>) {
    if !(ctx.caps.tool_calls && ctx.caps.tool_responses) {
        return;
    }
    let mut call = ctx.call_turn(n::VALUE);
    for field in crate::message::REASONING_FIELDS {
        call[field] = n::REASONING.into();
    }
    let (before, after) = tool_loop(call);
    let tools = ctx.tools();
    if let (Ok(x), Ok(y)) = (
        ctx.probe.render(&before, tools.clone(), false),
        ctx.probe.render(&after, tools, false),
    ) {
        if x.contains(n::REASONING) && !y.contains(n::REASONING) {
            ctx.report(
                K::ThinkDroppedOnToolCall,
                "tool-loop-then-user",
                "the tool-call turn's reasoning is gone once a new user turn follows",
            );
        }
    }
}

/// The tool loop (user, call turn, result) and the same loop ended by an
/// answer and a new user turn.
fn tool_loop(call: Json) -> (Vec<Json>, Vec<Json>) {
    let before = vec![n::user(n::USER), call, n::tool_result(n::ID, n::RESULT)];
    let mut after = before.clone();
    after.extend([n::assistant(n::CONTENT), n::user(n::USER2)]);
    (before, after)
}

/// `content: null` and a missing `content` on an assistant turn.
fn content_null_and_missing(ctx: &mut Ctx<'_>) {
    let tools = ctx.tools();
    let loop_ok = ctx.caps.tool_calls && ctx.caps.tool_responses;
    let answer = if loop_ok {
        ctx.call_turn(n::VALUE)
    } else {
        n::assistant(n::CONTENT)
    };
    let turn = |content: Option<Json>| {
        let mut turn = answer.clone();
        match content {
            Some(c) => turn["content"] = c,
            None => _ = turn.as_object_mut().map(|m| m.remove("content")),
        }
        let next = if loop_ok {
            n::tool_result(n::ID, n::RESULT)
        } else {
            n::user(n::USER2)
        };
        vec![n::user(n::USER), turn, next]
    };
    // Only a conversation the template accepts with `content: ""` says anything about null.
    let Ok(base) = ctx
        .probe
        .render(&turn(Some(json!(""))), tools.clone(), true)
    else {
        return;
    };
    let (null, missing) = (turn(Some(Json::Null)), turn(None));
    match ctx.probe.render(&null, tools.clone(), true) {
        Err(e) => ctx.report(K::NullContentFails, "null-content", e.to_string()),
        Ok(text) if text.matches("None").count() > base.matches("None").count() => ctx.report(
            K::NullContentPrintsNone,
            "null-content",
            "the turn renders the text None",
        ),
        Ok(_) => {}
    }
    if let Err(e) = ctx.probe.render(&missing, tools, true) {
        ctx.report(K::MissingContentFails, "missing-content", e.to_string());
    }
}

/// Markup characters in a call's arguments and in a tool's description.
fn escaped_json(ctx: &mut Ctx<'_>) {
    let escapes = |t: &str| ESCAPES.iter().map(|e| t.matches(e).count()).sum::<usize>();
    if ctx.caps.tool_calls {
        let conv = |value: &str| {
            vec![
                n::user(n::USER),
                ctx.call_turn(value),
                n::tool_result(n::ID, n::RESULT),
            ]
        };
        let tools = ctx.tools();
        let plain = ctx.probe.render(&conv(n::VALUE), tools.clone(), true);
        let markup = ctx.probe.render(&conv(MARKUP), tools, true);
        if let (Ok(plain), Ok(markup)) = (plain, markup) {
            if escapes(&markup) > escapes(&plain) {
                ctx.report(
                    K::HtmlEscapedJson,
                    "markup-in-arguments",
                    "argument characters <>&'\" come out HTML-escaped",
                );
            }
        }
    }
    if ctx.caps.tools {
        let mut tools = n::tools();
        tools[0]["function"]["description"] = MARKUP.into();
        let plain = ctx
            .probe
            .render(&[n::user(n::USER)], Some(n::tools()), true);
        let markup = ctx.probe.render(&[n::user(n::USER)], Some(tools), true);
        if let (Ok(plain), Ok(markup)) = (plain, markup) {
            if escapes(&markup) > escapes(&plain) {
                ctx.report(
                    K::HtmlEscapedJson,
                    "markup-in-tools",
                    "tool description characters <>&'\" come out HTML-escaped",
                );
            }
        }
    }
}

/// Two system messages: refused, dropped, or a second system turn.
fn multiple_system(ctx: &mut Ctx<'_>) {
    const CONV: &str = "two-system-messages";
    if !ctx.caps.system_role {
        return;
    }
    let Ok(single) = ctx
        .probe
        .render(&[n::system(n::SYSTEM), n::user(n::USER)], None, true)
    else {
        return;
    };
    let two = [
        n::system(n::SYSTEM),
        n::system(n::SYSTEM2),
        n::user(n::USER),
    ];
    match ctx.probe.render(&two, None, true) {
        Err(e) => ctx.report(K::MultipleSystemRejected, CONV, e.to_string()),
        Ok(text) if !text.contains(n::SYSTEM2) => ctx.report(
            K::MultipleSystemDropped,
            CONV,
            "the second system text is absent",
        ),
        Ok(text) => {
            let opener = turn_opener(&single, n::SYSTEM);
            if !opener.is_empty() && text.contains(&format!("{opener}{}", n::SYSTEM2)) {
                let detail = format!(
                    "the second system text gets its own turn ({})",
                    markers::visible(opener)
                );
                ctx.report(K::MultipleSystemSeparate, CONV, detail);
            }
        }
    }
}

/// The text that opens the turn holding `needle`: from the last marker before it.
fn turn_opener<'a>(text: &'a str, needle: &str) -> &'a str {
    let Some(at) = text.find(needle) else {
        return "";
    };
    let before = &text[..at];
    match markers::spans(before).last() {
        Some(span) => &before[span.start..],
        None => "",
    }
}

/// The thinking-off prefill against the template's own thinking block, and
/// whether a tool-call turn keeps it.
fn prefill(ctx: &mut Ctx<'_>) {
    let (Some(off), Some(on)) = (ctx.thinking(false), ctx.thinking(true)) else {
        return;
    };
    let user = [n::user(n::USER)];
    let (Ok(p_off), Ok(p_on)) = (
        ctx.probe.render_with(&user, None, true, &off),
        ctx.probe.render_with(&user, None, true, &on),
    ) else {
        return;
    };
    let bare = ctx
        .probe
        .render_with(&user, None, false, &off)
        .unwrap_or_default();
    if p_off == p_on || !p_off.starts_with(&bare) {
        return;
    }
    let prefill = &p_off[bare.len()..];
    let reply = [
        n::user(n::USER),
        n::assistant_reasoning(n::CONTENT, n::REASONING),
    ];
    if let Ok(turn) = ctx.probe.render_with(&reply, None, false, &off) {
        let emptied = turn.replace(n::REASONING, "");
        let expected = format!("{p_off}{}", n::CONTENT);
        // `emptied` may lack part of `bare` when the template writes the
        // needle's text itself (fuzz: `RRRR{% if add_generation_prompt %}...`).
        let own_block = emptied
            .strip_prefix(bare.as_str())
            .filter(|_| turn.contains(n::REASONING) && turn.starts_with(&bare));
        if let Some(own_block) = own_block.filter(|_| !emptied.starts_with(&expected)) {
            let own = own_block.split(n::CONTENT).next().unwrap_or_default();
            let detail = format!(
                "prefill \"{}\" vs the emptied block \"{}\"",
                markers::visible(prefill),
                markers::visible(own)
            );
            ctx.report(K::PrefillWhitespace, "prefill-then-reply", detail);
        }
    }
    if !(ctx.caps.tool_calls && ctx.caps.tool_responses) {
        return;
    }
    let (before, after) = tool_loop(ctx.call_turn(n::VALUE));
    let tools = ctx.tools();
    let x = ctx.probe.render_with(&before, tools.clone(), false, &off);
    let y = ctx.probe.render_with(&after, tools, false, &off);
    if let (Ok(x), Ok(y)) = (x, y) {
        if y.matches(prefill).count() < x.matches(prefill).count() {
            let detail = format!(
                "the tool-call turn's prefill \"{}\" is gone once a new user turn follows",
                markers::visible(prefill)
            );
            ctx.report(
                K::PrefillDropped,
                "tool-loop-then-user-thinking-off",
                detail,
            );
        }
    }
}

/// An argument with quotes and `"""`.
fn quotes(ctx: &mut Ctx<'_>) {
    const CONV: &str = "quotes-in-arguments";
    if !ctx.caps.tool_calls {
        return;
    }
    let conv = |value: &str| {
        vec![
            n::user(n::USER),
            ctx.call_turn(value),
            n::tool_result(n::ID, n::RESULT),
        ]
    };
    if ctx
        .probe
        .render(&conv(n::VALUE), ctx.tools(), true)
        .is_err()
    {
        return;
    }
    match ctx.probe.render(&conv(QUOTES), ctx.tools(), true) {
        Err(e) => ctx.report(K::QuotesBreakRender, CONV, e.to_string()),
        Ok(text) => {
            let escaped = serde_json::to_string(QUOTES).unwrap_or_default();
            let escaped = escaped.trim_matches('"');
            if !text.contains(QUOTES) && !text.contains(escaped) {
                ctx.report(
                    K::QuotesMangled,
                    CONV,
                    "the argument appears neither verbatim nor JSON-escaped",
                );
            }
        }
    }
}

/// Adding a message after a non-assistant message only appends.
fn prefix_stability(ctx: &mut Ctx<'_>) {
    let messages = multi_turn(ctx);
    let tools = ctx.tools();
    let mut previous: Option<String> = None;
    for len in 1..=messages.len() {
        let text = ctx
            .probe
            .render(&messages[..len], tools.clone(), false)
            .ok();
        let after_assistant = len >= 2 && messages[len - 2]["role"] == "assistant";
        if let (Some(prev), Some(now)) = (&previous, &text) {
            if !after_assistant && !now.starts_with(prev.as_str()) {
                let at = prev
                    .bytes()
                    .zip(now.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                let role = messages[len - 1]["role"].as_str().unwrap_or_default();
                let detail = format!(
                    "adding message {len} ({role}) rewrites the earlier prompt from byte {at}"
                );
                ctx.report(K::NotPrefixStable, "multi-turn", detail);
                return;
            }
        }
        previous = text;
    }
}

/// The `multi-turn` conversation, with the parts the template renders.
fn multi_turn(ctx: &Ctx<'_>) -> Vec<Json> {
    let mut messages = Vec::new();
    if ctx.caps.system_role {
        messages.push(n::system(n::SYSTEM));
    }
    messages.push(n::user(n::USER));
    if ctx.caps.tool_calls && ctx.caps.tool_responses {
        messages.push(ctx.call_turn(n::VALUE));
        messages.push(n::tool_result(n::ID, n::RESULT));
    }
    messages.extend([
        n::assistant(n::CONTENT),
        n::user(n::USER2),
        n::assistant(n::CONTENT),
        n::user(n::USER),
    ]);
    messages
}
