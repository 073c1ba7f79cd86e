//! From full renders to "what the model writes" for each probe variant.
//!
//! Every probe renders `user → assistant(variant)`. All of them, and the
//! generation prompt, share the text up to the assistant turn; all variants
//! share the end-of-turn text. Cutting both away (at marker boundaries) leaves
//! each variant's *output*: the text a model would generate after the prompt.
//!
//! When history writes the assistant header with other whitespace than the
//! generation prompt (template indentation), each variant's header, matched
//! to the prompt's rest up to whitespace, is cut too.
//!
//! Invariant: `outputs[v] == render(v)[prefix_len + header_len(v) .. len - trailer_len]`
//! for every variant that rendered; failed variants keep their error.

use serde_json::json;

use super::diff::{common_prefix_len, common_suffix_len};
use super::model::{GenerationPrompts, TurnFormat};
use super::probe::{self, Encoding, Prober, Turn};
use super::report::Report;
use crate::error::{Error, Result};
use crate::markers;
use crate::template::needles::is_provided;
use crate::template::ChatTemplate;

/// Names of the probe variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    Content,
    Content2,
    Reasoning,
    Call,
    CallName2,
    CallValue2,
    CallArg2,
    CallTwoArgs,
    CallNoArgs,
    CallNumber,
    CallMarkup,
    CallObject,
    CallList,
    CallId2,
    TwoCalls,
    ContentCall,
    ReasoningCall,
}

impl Variant {
    const ALL: [Variant; 17] = [
        Variant::Content,
        Variant::Content2,
        Variant::Reasoning,
        Variant::Call,
        Variant::CallName2,
        Variant::CallValue2,
        Variant::CallArg2,
        Variant::CallTwoArgs,
        Variant::CallNoArgs,
        Variant::CallNumber,
        Variant::CallMarkup,
        Variant::CallObject,
        Variant::CallList,
        Variant::CallId2,
        Variant::TwoCalls,
        Variant::ContentCall,
        Variant::ReasoningCall,
    ];

    fn is_call(self) -> bool {
        !matches!(
            self,
            Variant::Content | Variant::Content2 | Variant::Reasoning
        )
    }

    fn turn(self) -> Turn {
        use probe::*;
        let call = |name, args, id| vec![probe::Call::new(name, args, id)];
        let one = || json!({ARG: VALUE});
        let (content, reasoning, calls) = match self {
            Variant::Content => (Some(CONTENT), None, vec![]),
            Variant::Content2 => (Some(CONTENT2), None, vec![]),
            Variant::Reasoning => (Some(CONTENT), Some(REASONING), vec![]),
            Variant::Call => (None, None, call(NAME, one(), ID)),
            Variant::CallName2 => (None, None, call(NAME2, one(), ID)),
            Variant::CallValue2 => (None, None, call(NAME, json!({ARG: VALUE2}), ID)),
            Variant::CallArg2 => (None, None, call(NAME, json!({ARG2: VALUE}), ID)),
            Variant::CallTwoArgs => (
                None,
                None,
                call(NAME, json!({ARG: VALUE, ARG2: VALUE2}), ID),
            ),
            Variant::CallNoArgs => (None, None, call(NAME, json!({}), ID)),
            Variant::CallNumber => (None, None, call(NAME, json!({NUM_ARG: NUM_VALUE}), ID)),
            Variant::CallMarkup => (None, None, call(NAME, json!({ARG: MARKUP_VALUE}), ID)),
            Variant::CallObject => (None, None, call(NAME, json!({ARG: object_value()}), ID)),
            Variant::CallList => (None, None, call(NAME, json!({ARG: list_value()}), ID)),
            Variant::CallId2 => (None, None, call(NAME, one(), ID2)),
            // Both calls share one id, so an id written in the call's framing
            // aligns like any other framing text (T7 varies the id on its own).
            Variant::TwoCalls => (
                None,
                None,
                vec![
                    probe::Call::new(NAME, one(), ID),
                    probe::Call::new(NAME2, one(), ID),
                ],
            ),
            Variant::ContentCall => (Some(CONTENT), None, call(NAME, one(), ID)),
            Variant::ReasoningCall => (None, Some(REASONING), call(NAME, one(), ID)),
        };
        Turn {
            content,
            reasoning,
            calls,
        }
    }
}

/// The outputs of every variant, plus the prompt-side facts around them.
#[derive(Debug)]
pub struct Outputs {
    renders: Vec<(Variant, Result<String>)>,
    prefix_len: usize,
    /// Per render, the length of its loosely matched header (see [`loose_headers`]).
    header_lens: Vec<usize>,
    trailer_len: usize,
    /// Where the user turn ends in every render (the generation prompt or the
    /// assistant turn follows).
    user_len: usize,
    /// Generation prompts after the user turn: default, thinking on, thinking off.
    pub prompts: [Option<String>; 3],
    /// How tool calls were encoded for this template, when any rendered.
    pub encoding: Option<Encoding>,
    /// A call turn renders, but no call is in it: the template is silent
    /// about tool calls (see `fallback`).
    pub calls_silent: bool,
    /// Whether the template reads `enable_thinking`.
    pub has_thinking_switch: bool,
    /// Turns were closed by a second user turn (the template refuses to end on
    /// an assistant turn).
    pub follow_up: bool,
    /// Caller variables that had to be set to empty text for the template to render.
    pub assumed_empty: Vec<String>,
    /// Why the template fails when given tools, when it does: the probes
    /// were rendered without them (T1 says why; the fallback dialect is the
    /// polyfill's, as for a template that does not take tools).
    pub tools_refused: Option<String>,
    /// The message field the probes put reasoning in.
    pub reasoning_field: &'static str,
    /// The user turn with the generation prompt, rendered with the probe
    /// tools: where the template's instructions about them are (see `prose`).
    pub instructions: String,
    /// The same prompt rendered without tools, when the template renders
    /// it: the text `instructions` shares with any request.
    pub bare_prompt: Option<String>,
    /// The content turn rendered with thinking off, when the template reads
    /// the switch (see [`Outputs::turn_tail`]).
    thinking_off_turn: Option<String>,
}

/// Renders all variants and cuts them into outputs.
pub fn collect(
    template: &ChatTemplate,
    variables: &[String],
    report: &mut Report,
) -> Result<Outputs> {
    let mut prober = Prober::new(template);
    let full_prompt = first_prompt(&mut prober, variables)?;
    // `enable_thinking`, or the other name a template reads instead (see
    // `ChatTemplate::thinking_alias`).
    let other_name =
        variables.iter().any(|v| v == "thinking") && !template.source().contains("enable_thinking");
    let has_switch = other_name || variables.iter().any(|v| v == "enable_thinking");
    let switch = |on: bool| {
        has_switch
            .then(|| prober.generation_prompt(Some(on)).ok())
            .flatten()
    };
    let prompts = [
        prober.generation_prompt(None).ok(),
        switch(true),
        switch(false),
    ];

    let content = Variant::Content.turn();
    let plain = Encoding {
        null_content: false,
        object_args: true,
        named_ids: false,
    };
    let mut follow_up =
        prober.turn(&content, plain, false).is_err() && prober.turn(&content, plain, true).is_ok();
    let (mut calls, why_not) = match prober.tools_refused() {
        None => find_encoding(&prober, follow_up),
        Some(why) => (
            CallTurns::Refused,
            format!("the template fails when given tools: {why}"),
        ),
    };
    if calls == CallTurns::Silent && !follow_up {
        // A template may render the last assistant message as a prefill to
        // continue (its content only, as Nemotron's JSON template does) and
        // write calls only in history: closed by a user turn, they show.
        if let (found @ CallTurns::Written(_), _) = find_encoding(&prober, true) {
            (calls, follow_up) = (found, true);
        }
    }
    if !matches!(calls, CallTurns::Written(_)) {
        report.unsupported("T1", why_not);
    }
    let encoding = match calls {
        CallTurns::Written(encoding) => Some(encoding),
        CallTurns::Silent | CallTurns::Refused => None,
    };
    let renders: Vec<(Variant, Result<String>)> = Variant::ALL
        .iter()
        .filter_map(|&v| {
            let encoding = if v.is_call() { encoding? } else { plain };
            Some((v, prober.turn(&v.turn(), encoding, follow_up)))
        })
        .collect();
    let thinking_off_turn = has_switch
        .then(|| {
            prober
                .turn_thinking(&content, plain, follow_up, Some(false))
                .ok()
        })
        .flatten();
    let user_len = full_prompt.len() - prompts[0].as_ref().map_or(0, String::len);
    let (prefix_len, header_lens, trailer_len) = shared_ends(&renders, &full_prompt, user_len);
    Ok(Outputs {
        renders,
        prefix_len,
        header_lens,
        trailer_len,
        user_len,
        prompts,
        encoding,
        calls_silent: calls == CallTurns::Silent,
        has_thinking_switch: has_switch,
        follow_up,
        assumed_empty: prober.extra.keys().cloned().collect(),
        tools_refused: prober.tools_refused().map(str::to_owned),
        reasoning_field: prober.reasoning_field,
        instructions: full_prompt,
        bare_prompt: prober.prompt_without_tools().ok(),
        thinking_off_turn,
    })
}

/// The user turn with the generation prompt. Some templates read
/// caller-supplied variables (`functions`, `datetime`) without a default:
/// when the first render fails, they are set to empty text for every probe.
fn first_prompt(prober: &mut Prober<'_>, variables: &[String]) -> Result<String> {
    use crate::error::ErrorKind;
    prober.prompt().or_else(|first| {
        // A bound met is not the template refusing the turn.
        if first.kind() == ErrorKind::Limit {
            return Err(first);
        }
        prober.extra = assumed_empty(variables);
        plain_or_parts(prober)
            .or_else(|_| {
                // A template that fails only when given tools (jinja2 fails
                // it too: `set dict.key`, `list.append`) still writes
                // reasoning and content; its calls are unsupported.
                if !matches!(first.kind(), ErrorKind::Render | ErrorKind::Raised) {
                    return Err(first.clone());
                }
                prober.drop_tools(first.to_string());
                plain_or_parts(prober)
            })
            .map_err(|_| {
                Error::new(
                    ErrorKind::Analysis,
                    format!("template cannot render a user turn: {}", first.message()),
                )
                .at(first.location())
            })
    })
}

/// The prompt with string contents, else with content parts: a template
/// that reads `message['content'][0]['text']` takes only those (MiniMax-M1,
/// MiniMax-Text-01).
fn plain_or_parts(prober: &mut Prober<'_>) -> Result<String> {
    prober.content_parts = false;
    prober.prompt().or_else(|_| {
        prober.content_parts = true;
        prober.prompt()
    })
}

/// Lengths of the prefix every render shares with the generation prompt, of
/// each render's loosely matched header after it, and of the trailer every
/// render shares.
fn shared_ends(
    renders: &[(Variant, Result<String>)],
    full_prompt: &str,
    user_len: usize,
) -> (usize, Vec<usize>, usize) {
    let ok: Vec<&str> = renders
        .iter()
        .filter_map(|(_, r)| r.as_deref().ok())
        .collect();
    let mut with_prompt = ok.clone();
    with_prompt.push(full_prompt);
    // Normally the generation prompt shares everything up to the assistant turn
    // with the history renders; if it diverges inside the user turn, the
    // history renders alone decide.
    let with_prompt_len = common_prefix_len(&with_prompt);
    let (prefix_len, prompt_rest) = if with_prompt_len >= user_len {
        (with_prompt_len, &full_prompt[with_prompt_len..])
    } else {
        (common_prefix_len(&ok), "")
    };
    let header_lens = loose_headers(renders, prefix_len, prompt_rest);
    let tails: Vec<&str> = renders
        .iter()
        .zip(&header_lens)
        .filter_map(|((_, r), h)| r.as_deref().ok()?.get(prefix_len + h..))
        .collect();
    let trailer_len = keep_compounds_whole(&tails, common_suffix_len(&tails));
    (prefix_len, header_lens, trailer_len)
}

/// Per render, the length of the header it writes where the generation prompt
/// has `prompt_rest` (what is left of the prompt past the shared prefix), when
/// every render writes those markers with only other whitespace around them
/// (DeepSeek-V3.1-style indented templates: `    <｜Assistant｜></think>    `
/// in history, `  <｜Assistant｜>  </think>` as the prompt). The whitespace
/// after the header is template indentation and goes with it. All zeros when
/// the rest holds no marker or some render writes something else there:
/// then the difference is what the model writes (a forced-open `<think>`).
fn loose_headers(
    renders: &[(Variant, Result<String>)],
    prefix_len: usize,
    prompt_rest: &str,
) -> Vec<usize> {
    let zeros = vec![0; renders.len()];
    if markers::spans(prompt_rest).is_empty() {
        return zeros;
    }
    let lens: Option<Vec<usize>> = renders
        .iter()
        .map(|(_, r)| match r {
            Ok(text) => loose_prefix_len(text.get(prefix_len..)?, prompt_rest),
            Err(_) => Some(0),
        })
        .collect();
    lens.unwrap_or(zeros)
}

/// The length of the start of `text` that is `pattern` up to whitespace, the
/// whitespace after it included.
fn loose_prefix_len(text: &str, pattern: &str) -> Option<usize> {
    let mut rest = text;
    for word in pattern.split_whitespace() {
        rest = rest.trim_start().strip_prefix(word)?;
    }
    Some(text.len() - rest.trim_start().len())
}

/// A trailer that starts with the closing marker of a compound every output
/// ends in (`<|close|>response` + `<|sep|><|close|>message...`) starts after
/// that marker instead: the compound is one marker of the output.
fn keep_compounds_whole(tails: &[&str], trailer_len: usize) -> usize {
    let Some(first) = tails.first() else {
        return trailer_len;
    };
    let trailer = &first[first.len() - trailer_len..];
    let Some(m) = markers::marker_at(trailer, 0) else {
        return trailer_len;
    };
    let whole = |t: &&str| markers::compound_ending(&t[..t.len() - trailer_len + m.end]).is_some();
    if tails.iter().all(whole) {
        trailer_len - m.end
    } else {
        trailer_len
    }
}

/// Every caller-supplied variable the template reads, as empty text.
fn assumed_empty(variables: &[String]) -> serde_json::Map<String, serde_json::Value> {
    variables
        .iter()
        .filter(|v| !is_provided(v))
        .map(|v| (v.clone(), serde_json::Value::String(String::new())))
        .collect()
}

/// What the template does with a turn that calls a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallTurns {
    /// The call is written when passed in this encoding.
    Written(Encoding),
    /// Some encoding renders, but the call is not in the text.
    Silent,
    /// Every encoding is refused.
    Refused,
}

/// Finds how the template wants tool calls: `content` null or empty,
/// `arguments` object or text. The first encoding whose render shows the
/// call's name and argument value wins; else why none did.
fn find_encoding(prober: &Prober<'_>, follow_up: bool) -> (CallTurns, String) {
    let turn = Variant::Call.turn();
    let mut last_error = String::from("tool calls are not rendered");
    let mut found = CallTurns::Refused;
    for (null_content, object_args) in [(true, true), (false, true), (true, false), (false, false)]
    {
        let encoding = Encoding {
            null_content,
            object_args,
            named_ids: false,
        };
        match prober.turn(&turn, encoding, follow_up) {
            Ok(text) if text.contains(probe::NAME) && text.contains(probe::VALUE) => {
                let encoding = prefer_named_ids(prober, &turn, encoding, &text, follow_up);
                let encoding = prefer_json_arguments(prober, &turn, encoding, &text, follow_up);
                let encoding = prefer_printable_content(prober, &turn, encoding, &text, follow_up);
                return (CallTurns::Written(encoding), String::new());
            }
            // The name alone may come from the tool list in the system turn.
            Ok(_) => {
                last_error =
                    "tool calls are not rendered (the probe call's argument value is absent)"
                        .into();
                found = CallTurns::Silent;
            }
            Err(e) => last_error = e.to_string(),
        }
    }
    (found, last_error)
}

/// A template that writes the call's id where its name goes (the name
/// then only in the tool list: the render does not change with it) is fed
/// ids that name the function, `functions.NAME:0`, as its models write
/// them; the analysis then reads the name inside the id (a counted id).
fn prefer_named_ids(
    prober: &Prober<'_>,
    turn: &Turn,
    encoding: Encoding,
    text: &str,
    follow_up: bool,
) -> Encoding {
    if !text.contains(probe::ID) {
        return encoding;
    }
    let renamed = prober.turn(&Variant::CallName2.turn(), encoding, follow_up);
    if renamed.as_deref().ok() != Some(text) {
        return encoding;
    }
    let named = Encoding {
        named_ids: true,
        ..encoding
    };
    let id = format!("functions.{}:0", probe::NAME);
    switch_if(prober, turn, follow_up, (encoding, named), |other| {
        other.contains(&id)
    })
}

/// Arguments as an object are the common encoding, but a template that
/// prints them with `{{ }}` writes an object as Python's `repr`
/// (`{'first': 'XXXX'}`) and JSON text (the OpenAI API's form) as the JSON
/// its system text asks for: then the text is the better encoding.
fn prefer_json_arguments(
    prober: &Prober<'_>,
    turn: &Turn,
    encoding: Encoding,
    text: &str,
    follow_up: bool,
) -> Encoding {
    let repr = format!("{{'{}': '{}'}}", probe::ARG, probe::VALUE);
    if !encoding.object_args || !text.contains(&repr) {
        return encoding;
    }
    let as_text = Encoding {
        object_args: false,
        ..encoding
    };
    let json = json!({probe::ARG: probe::VALUE}).to_string();
    switch_if(prober, turn, follow_up, (encoding, as_text), |other| {
        other.contains(&json)
    })
}

/// `content: null` is the OpenAI convention, but a template that prints it
/// writes the text `None` into the prompt; then `""` is the better encoding.
fn prefer_printable_content(
    prober: &Prober<'_>,
    turn: &Turn,
    encoding: Encoding,
    text: &str,
    follow_up: bool,
) -> Encoding {
    if !encoding.null_content {
        return encoding;
    }
    let empty = Encoding {
        null_content: false,
        ..encoding
    };
    let nones = text.matches("None").count();
    switch_if(prober, turn, follow_up, (encoding, empty), |other| {
        other.matches("None").count() < nones
    })
}

/// `to` of `(from, to)` when the turn rendered with it is what `better`
/// asks for, else `from`: the three `prefer_*` choices above.
fn switch_if(
    prober: &Prober<'_>,
    turn: &Turn,
    follow_up: bool,
    (from, to): (Encoding, Encoding),
    better: impl Fn(&str) -> bool,
) -> Encoding {
    match prober.turn(turn, to, follow_up) {
        Ok(other) if better(&other) => to,
        _ => from,
    }
}

impl Outputs {
    /// The output of `variant`, or why there is none.
    pub fn get(&self, variant: Variant) -> std::result::Result<&str, String> {
        match self
            .renders
            .iter()
            .enumerate()
            .find(|(_, (v, _))| *v == variant)
        {
            Some((i, (_, Ok(text)))) => {
                let start = (self.prefix_len + self.header_lens[i]).min(text.len());
                let end = text.len().saturating_sub(self.trailer_len).max(start);
                Ok(&text[start..end])
            }
            Some((_, (_, Err(e)))) => Err(e.to_string()),
            None => Err("tool calls are not rendered".into()),
        }
    }

    /// Every whole render (conversation included) that succeeded.
    pub fn whole_renders(&self) -> impl Iterator<Item = &str> {
        self.renders.iter().filter_map(|(_, r)| r.as_deref().ok())
    }

    /// The whole assistant turn `variant` renders, header included: what
    /// history writes where a generation prompt stands.
    pub fn assistant_turn(&self, variant: Variant) -> Option<&str> {
        let (_, render) = self.renders.iter().find(|(v, _)| *v == variant)?;
        render.as_deref().ok()?.get(self.user_len..)
    }

    /// The output of `variant` when it rendered.
    pub fn ok(&self, variant: Variant) -> Option<&str> {
        self.get(variant).ok()
    }

    /// The trailer every variant shares (the end of the turn).
    pub fn trailer(&self) -> &str {
        self.renders
            .iter()
            .find_map(|(_, r)| r.as_deref().ok())
            .map_or("", |t| &t[t.len() - self.trailer_len.min(t.len())..])
    }

    /// Markers a thinking-off render writes after the end of the turn that the
    /// plain render does not: Hunyuan-7B writes its empty `<think>\n\n</think>\n`
    /// after every conversation when thinking is off, so a turn cut from such
    /// a render ends `<|eos|><think>\n\n</think>\n`. Empty when there is none.
    fn turn_tail(&self, end_of_turn: &str) -> String {
        let after_content = |text: &str| {
            let at = text.rfind(probe::CONTENT)? + probe::CONTENT.len();
            Some(text[at..].to_owned())
        };
        let plain = self.renders.iter().find(|(v, _)| *v == Variant::Content);
        let (Some(off), Some((_, Ok(plain)))) = (&self.thinking_off_turn, plain) else {
            return String::new();
        };
        let (Some(off), Some(plain)) = (after_content(off), after_content(plain)) else {
            return String::new();
        };
        let end = end_of_turn.trim_end();
        match (off.strip_prefix(end), plain.strip_prefix(end)) {
            (Some(off), Some(plain)) if off.trim() != plain.trim() && off.ends_with(plain) => {
                let tail = off[..off.len() - plain.len()].trim();
                if markers::spans(tail).first().is_some_and(|m| m.start == 0) {
                    tail.to_owned()
                } else {
                    String::new()
                }
            }
            _ => String::new(),
        }
    }

    /// Turn framing: generation prompts and end-of-turn text.
    pub fn turn_format(&self, report: &mut Report) -> TurnFormat {
        // The turn ends at the first marker after the content, skipping the
        // closer of a content wrapper (`<|END_RESPONSE|>` after
        // `<|START_RESPONSE|>`). Only that marker (and the whitespace after
        // it) is the turn's end: templates may append more turns after the
        // conversation (instructions, a follow-up user turn).
        let content_out = self.ok(Variant::Content).unwrap_or("");
        let (before, after) = content_out.split_once(probe::CONTENT).unwrap_or(("", ""));
        let mut source = format!("{after}{}", self.trailer());
        if let Some(rest) = strip_wrapper_closer(before, &source) {
            source = rest;
        }
        let end_of_turn = through_first_marker(&source).to_owned();
        let after_end = &source[end_of_turn.len()..];
        let tail = if only_markers(after_end) {
            after_end.trim().to_owned()
        } else {
            self.turn_tail(&end_of_turn)
        };
        let stop_marker =
            first_marker(&end_of_turn).map_or_else(|| end_of_turn.trim().to_owned(), str::to_owned);
        match self.get(Variant::Content) {
            Ok(_) if self.follow_up => report.found(
                "EOT",
                format!("\"{}\" (turn closed by a follow-up user turn: the template refuses to end on an assistant turn)", markers::visible(&end_of_turn)),
            ),
            Ok(_) => report.found("EOT", format!("\"{}\"", markers::visible(&end_of_turn))),
            Err(e) => report.unsupported("EOT", e),
        }
        TurnFormat {
            generation_prompt: GenerationPrompts {
                default: self.prompts[0].clone().unwrap_or_default(),
                thinking_on: self.prompts[1].clone(),
                thinking_off: self.prompts[2].clone(),
            },
            tail,
            end_of_turn,
            stop_marker,
            ..TurnFormat::default()
        }
    }
}

/// `source` (what follows the content) less the closer of the wrapper that
/// `before` ends with: its conventional closer (`<|END_RESPONSE|>`), or the
/// compound with the same label (`<|close|>response<|sep|>` after
/// `<|open|>response<|sep|>`).
fn strip_wrapper_closer(before: &str, source: &str) -> Option<String> {
    let rest = source.trim_start();
    if let Some(open) = markers::compound_ending(before) {
        let first = markers::compound_at(rest, 0).map(|r| &rest[r])?;
        return markers::compound_closes(open, first).then(|| rest[first.len()..].to_owned());
    }
    let closer = markers::tokens(before)
        .last()
        .and_then(|open| markers::closing_for(open))?;
    rest.strip_prefix(closer.as_str()).map(str::to_owned)
}

/// `text` holds markers and nothing else but whitespace and role labels
/// between two markers: what a template writes after every conversation
/// without a word of text (Command-A's `<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>`
/// after the answer, a Llama-3 header `<|start_header_id|>assistant<|end_header_id|>`
/// written whether or not a prompt is asked for), unlike a follow-up turn
/// (its user text) or appended instructions.
fn only_markers(text: &str) -> bool {
    let spans = markers::spans(text);
    let mut last = 0;
    for r in &spans {
        let gap = &text[last..r.start];
        if !(gap.trim().is_empty() || last > 0 && is_role_label(gap)) {
            return false;
        }
        last = r.end;
    }
    !spans.is_empty() && text[last..].trim().is_empty()
}

/// One word glued to the markers around it (`assistant` in a header), and
/// not the probe's user text.
fn is_role_label(gap: &str) -> bool {
    gap.chars().all(|c| c.is_alphanumeric() || c == '_') && !gap.contains(probe::USER)
}

/// The first marker of `text`, a compound one when the marker starts one.
fn first_marker(text: &str) -> Option<&str> {
    let first = markers::spans(text).into_iter().next()?;
    markers::marker_or_compound_at(text, first.start).map(|r| &text[r])
}

/// `text` up to the end of its first marker (compound or single) and the
/// whitespace after it; all of `text` when it has no marker. A compound
/// closes a section (`<|close|>message<|sep|>`): a marker right after it
/// (`<|end_of_msg|>`) ends the turn with it.
fn through_first_marker(text: &str) -> &str {
    let Some(first) = first_marker(text) else {
        return text;
    };
    let mut end = text.find(first).map_or(text.len(), |i| i + first.len());
    if markers::compound_at(first, 0).is_some() {
        end = markers::marker_at(text, end).map_or(end, |r| r.end);
    }
    let ws = text[end..].len() - text[end..].trim_start().len();
    &text[..end + ws]
}
