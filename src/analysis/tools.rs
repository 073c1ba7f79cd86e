//! Tool-call format (T1–T7): where calls go, what wraps them, where the name,
//! arguments and id are.
//!
//! The *core* of a call is the part that carries its data: the JSON object for
//! JSON-native calls, or the span from the name to the end of the arguments.
//! Aligning the cores of a one-call and a two-call output gives the framing:
//! text before the first core = section start + call start; between the cores
//! = call end + separator + call start; after the last core = call end +
//! section end. Call start/end are the parts shared by those three texts.
//! A section end that only the two-call output writes is kept, as optional.
//!
//! Invariant: every marker string is text copied from a render (never
//! invented), so the parser only ever looks for text the template writes.

use std::ops::Range;

use serde_json::Value as Json;

use super::arguments;
use super::diff::{common_prefix_len, common_suffix_len};
use super::json_scan;
use super::model::{
    ArgumentsSlot, ContentFormat, IdSlot, JsonConstant, NameSlot, Reasoning, ToolClass, ToolFormat,
    ToolInput,
};
use super::outputs::{Outputs, Variant};
use super::probe::{ARG, CONTENT, ID, MARKUP_VALUE, NAME, NAME2, VALUE};
use super::report::Report;
use crate::markers::{self, visible};

/// Where the call cores are in the one-call and two-call outputs.
struct Cores {
    class: ToolClass,
    one: Range<usize>,
    two: Option<(Range<usize>, Range<usize>)>,
}

/// The framing around call cores.
#[derive(Debug, Default)]
struct Frame {
    section_start: String,
    call_start: String,
    call_end: String,
    separator: String,
    section_end: String,
    /// What follows the second call's end in the two-call output, when it
    /// starts with the call end.
    section_end_of_two: Option<String>,
    parallel: bool,
}

/// Runs the tool comparisons and reads the tool-call format.
///
/// `stop_marker` ends a turn (`TurnFormat::stop_marker`): the model stops
/// there, so no marker of the format holds it.
pub fn detect(
    outputs: &Outputs,
    reasoning: &Reasoning,
    content: &ContentFormat,
    stop_marker: &str,
    report: &mut Report,
) -> Option<ToolFormat> {
    let encoding = outputs.encoding?;
    let full = match outputs.get(Variant::Call) {
        Ok(o) => o,
        Err(e) => {
            report.unsupported("T1", e);
            return None;
        }
    };
    let lead = lead(full, reasoning, content);
    let one = &full[lead.len()..];
    let two = outputs
        .ok(Variant::TwoCalls)
        .and_then(|t| t.strip_prefix(lead));
    report_two(outputs, two, report);
    let Some(cores) = locate(one, two) else {
        report.unsupported(
            "T1",
            format!("no call structure found in \"{}\"", visible(one)),
        );
        return None;
    };
    let frame = frame(one, &cores, two);
    let (section_end, section_end_optional) = section_end(&frame, stop_marker);
    let (name, arguments, call_start) = slots(outputs, lead, one, &cores, &frame, report);
    let id = id_slot(outputs, lead, one, &cores, report);
    report_name_and_value(outputs, report);
    if cores.class != ToolClass::TagTagged {
        report_argument_variants(outputs, report);
    }
    report.found(
        "T1",
        format!("{:?} call: \"{}\"", cores.class, visible(one)),
    );
    let content_call = outputs.ok(Variant::ContentCall);
    let content_with_calls = content_call.is_some_and(|o| o.contains(CONTENT));
    // Where the content sits against the call's name: after it, the
    // template writes the content after the calls.
    let content_after_calls = content_call
        .is_some_and(|o| matches!((o.find(CONTENT), o.find(NAME)), (Some(c), Some(n)) if c > n));
    let (name, call_start, id) = separate_id(name, call_start, id);
    let (name, id) = match id {
        None => counted_id(name, one, two, report),
        id => (name, id),
    };
    let (name, name_echo) = name_echo(
        name,
        outputs
            .ok(Variant::CallName2)
            .and_then(|t| t.strip_prefix(lead)),
    );
    let json_constants = json_constants(one, two, &cores, &name, &arguments, id.as_ref());
    let mut format = ToolFormat {
        class: cores.class,
        section_start: frame.section_start,
        section_end,
        section_end_optional,
        call_start,
        call_end: frame.call_end,
        call_separator: frame.separator,
        parallel: frame.parallel,
        name,
        name_echo,
        arguments,
        id,
        json_constants,
        content_with_calls,
        content_after_calls,
        input: ToolInput {
            null_content: encoding.null_content,
            object_arguments: encoding.object_args,
            named_ids: encoding.named_ids,
        },
    };
    cut_call_end_at_stop(&mut format, stop_marker);
    move_argument_end(&mut format);
    Some(format)
}

/// The content block a template writes only in turns with calls, which
/// the call diff took for the section's start: the section start holds two
/// marker cores and the content-and-call turn writes the content between
/// them (Llama 4: `<|python_start|>` + content + `<|python_end|>` + the
/// calls). Takes the block off the section start and returns it as the
/// content's wrapper in call turns. `None` (the format untouched) for any
/// other template, or one whose plain answers have a wrapper already.
pub fn content_block(
    outputs: &Outputs,
    content: &ContentFormat,
    format: &mut ToolFormat,
) -> Option<ContentFormat> {
    if !content.start.trim().is_empty() || !content.end.trim().is_empty() {
        return None;
    }
    let turn = outputs.ok(Variant::ContentCall)?;
    let at = turn.find(CONTENT)?;
    let (before, after) = (&turn[..at], &turn[at + CONTENT.len()..]);
    let start = format.section_start.as_str();
    let spans = markers::spans(start);
    let (open, close) = (spans.first()?, spans.get(1)?);
    let block_start = &start[..close.start];
    let block_end = &start[close.clone()];
    let opens_block = before.trim_end().ends_with(block_start.trim()) && open.start == 0;
    if !opens_block || !after.starts_with(block_end) {
        return None;
    }
    let wrapper = ContentFormat {
        start: block_start.to_string(),
        end: block_end.to_string(),
        calls_only: true,
    };
    format.section_start = start[close.end..].to_string();
    Some(wrapper)
}

/// Empty reasoning and content blocks some templates write before every
/// call: they belong to reasoning and content, not to the calls.
fn lead<'a>(output: &'a str, reasoning: &Reasoning, content: &ContentFormat) -> &'a str {
    let reasoning_end = reasoning_lead(output, reasoning).len();
    let rest = &output[reasoning_end..];
    let (start, end) = (content.start.trim(), content.end.trim());
    if start.is_empty() || end.is_empty() {
        return &output[..reasoning_end];
    }
    let block = rest
        .strip_prefix(start)
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(end));
    match block {
        Some(after) => {
            let after = after.trim_start();
            &output[..output.len() - after.len()]
        }
        None => &output[..reasoning_end],
    }
}

/// Some templates end a turn with calls differently from a turn with text
/// (`]</TOOLCALL><SPECIAL_12>\n` against `\n<SPECIAL_12>\n`), so the
/// diff leaves the stop marker in the call's end. The model stops at that
/// marker and never writes it into the output: cut the call end there (the
/// section end is cut by [`section_end`]).
fn cut_call_end_at_stop(format: &mut ToolFormat, stop_marker: &str) {
    let at = cut_at(&format.call_end, stop_marker).len();
    format.call_end.truncate(at);
}

/// An empty reasoning block some templates write before every call.
fn reasoning_lead<'a>(output: &'a str, reasoning: &Reasoning) -> &'a str {
    if reasoning.end.is_empty() {
        return "";
    }
    match output.find(&reasoning.end) {
        Some(i)
            if output[..i].trim() == reasoning.start.trim() || output[..i].trim().is_empty() =>
        {
            let end = i + reasoning.end.len();
            let ws = output[end..].len() - output[end..].trim_start().len();
            &output[..end + ws]
        }
        _ => "",
    }
}

fn report_two(outputs: &Outputs, two: Option<&str>, report: &mut Report) {
    match (outputs.get(Variant::TwoCalls), two) {
        (Err(e), _) => report.unsupported("T2", e),
        (Ok(t), _) if !t.contains(NAME2) => {
            report.unsupported("T2", "only one call of two is rendered")
        }
        (Ok(_), Some(_)) => report.found("T2", "two calls rendered"),
        (Ok(_), None) => report.unsupported(
            "T2",
            "two-call output does not start like the one-call output",
        ),
    }
}

/// Finds the call cores and the format class.
fn locate(one: &str, two: Option<&str>) -> Option<Cores> {
    let two = two.filter(|t| t.contains(NAME2));
    json_cores(one, two)
        .or_else(|| marker_cores(one, two, ToolClass::TagJson, tag_json_end))
        .or_else(|| marker_cores(one, two, ToolClass::PythonCall, python_end))
        .or_else(|| marker_cores(one, two, ToolClass::TagTagged, tagged_end))
}

/// JSON-native: the outermost JSON object holding one call's name and value.
fn json_cores(one: &str, two: Option<&str>) -> Option<Cores> {
    let core_of = |text: &str, name: &str, other: &str| {
        json_scan::objects(text)
            .into_iter()
            .filter(|(_, v)| json_scan::mentions(v, name) && !json_scan::mentions(v, other))
            .filter(|(r, _)| text[r.clone()].contains(VALUE))
            .min_by_key(|(r, _)| (r.start, usize::MAX - r.end))
            .map(|(r, _)| r)
    };
    let one_core = core_of(one, NAME, NAME2)?;
    let two_cores = two
        .and_then(|t| Some((core_of(t, NAME, NAME2)?, core_of(t, NAME2, NAME)?)))
        .filter(|(a, b)| a.end <= b.start);
    Some(Cores {
        class: ToolClass::JsonNative,
        one: one_core,
        two: two_cores,
    })
}

/// Marker formats: the core runs from the name to where `end_of` says.
fn marker_cores(
    one: &str,
    two: Option<&str>,
    class: ToolClass,
    end_of: fn(&str, usize) -> Option<usize>,
) -> Option<Cores> {
    // The first well-formed call after `from`, starting at the first
    // occurrence of the name that leads to it: a name written twice per call
    // (`to=NAME ... <invoke name="NAME">`) starts at its first writing, and
    // the second is read as an echo in the name's suffix (`name_echo`). Text
    // naming the other probe tool (scaffolding, a tool list) is no call: the
    // second call's core must be as long as the first's (the probe names are
    // equally long), else the occurrence nearest the arguments is taken.
    let core = |text: &str, name: &str, from: usize, len: Option<usize>| {
        let found: Vec<(usize, usize)> = text
            .get(from..)?
            .match_indices(name)
            .filter_map(|(i, _)| Some((from + i, end_of(text, from + i + name.len())?)))
            .collect();
        let end = found.first()?.1;
        let same_end = || found.iter().filter(|(_, e)| *e == end);
        let start = match len {
            Some(len) => same_end()
                .find(|(s, e)| e - s == len)
                .or_else(|| same_end().next_back()),
            None => same_end().next(),
        };
        start.map(|(start, end)| *start..*end)
    };
    let one_core = core(one, NAME, 0, None)?;
    let two_cores = two.and_then(|t| {
        let a = core(t, NAME, 0, None)?;
        let b = core(t, NAME2, a.end, Some(a.len()))?;
        Some((a, b))
    });
    Some(Cores {
        class,
        one: one_core,
        two: two_cores,
    })
}

/// Tag + JSON: a JSON object holding the argument follows the name.
fn tag_json_end(text: &str, after_name: usize) -> Option<usize> {
    let (span, value) = json_scan::next_object(text, after_name)?;
    let between = &text[after_name..span.start];
    (value.get(ARG) == Some(&Json::from(VALUE)) && !between.contains(VALUE)).then_some(span.end)
}

/// Python call: `(` right after the name, up to the matching `)`.
fn python_end(text: &str, after_name: usize) -> Option<usize> {
    let rest = text.get(after_name..)?.strip_prefix('(')?;
    if !rest.trim_start().starts_with(ARG) {
        return None;
    }
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut depth = 1usize;
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(after_name + 1 + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Tagged arguments: the core ends after the first argument value.
fn tagged_end(text: &str, after_name: usize) -> Option<usize> {
    let arg = text.get(after_name..)?.find(ARG)? + after_name;
    let value = text[arg..].find(VALUE)? + arg;
    Some(value + VALUE.len())
}

/// Splits the text around cores into section and per-call framing.
fn frame(one: &str, cores: &Cores, two: Option<&str>) -> Frame {
    let pre = &one[..cores.one.start];
    let post = &one[cores.one.end..];
    let (Some(two), Some((a, b))) = (two, cores.two.as_ref()) else {
        return Frame {
            call_start: pre.into(),
            call_end: post.into(),
            ..Frame::default()
        };
    };
    let inter = &two[a.end..b.start];
    let end_len = common_prefix_len(&[inter, post]);
    let start_len = common_suffix_len(&[&inter[end_len..], pre]);
    Frame {
        section_start: pre[..pre.len() - start_len].into(),
        call_start: pre[pre.len() - start_len..].into(),
        call_end: inter[..end_len].into(),
        separator: inter[end_len..inter.len() - start_len].into(),
        section_end: post[end_len..].into(),
        section_end_of_two: two[b.end..]
            .strip_prefix(&inter[..end_len])
            .map(str::to_owned),
        parallel: true,
    }
}

/// The section's end when the template writes it only after a second call
/// (DeepSeek-R1-Distill-Llama-8B: `<｜tool▁calls▁end｜>`, never after one):
/// the two-call section end, when it is the one-call end (stop marker cut
/// off) with markers after it, and whether that makes it optional. A model
/// trained on the format writes it after every section; a render of one
/// call has none, so the parser and the grammar take both.
fn section_end(frame: &Frame, stop_marker: &str) -> (String, bool) {
    let one = cut_at(&frame.section_end, stop_marker);
    let Some(two) = frame
        .section_end_of_two
        .as_deref()
        .map(|t| cut_at(t, stop_marker))
    else {
        return (one.to_owned(), false);
    };
    match two.strip_prefix(one) {
        Some(more) if starts_with_marker(more) => (two.to_owned(), true),
        _ => (one.to_owned(), false),
    }
}

/// Whether `text` starts with a marker, after any whitespace.
fn starts_with_marker(text: &str) -> bool {
    markers::spans(text)
        .first()
        .is_some_and(|m| text[..m.start].trim().is_empty())
}

/// `text` up to the stop marker (all of it when the marker is not in it).
fn cut_at<'a>(text: &'a str, stop_marker: &str) -> &'a str {
    let stop = stop_marker.trim();
    match text.find(stop) {
        Some(at) if !stop.is_empty() => &text[..at],
        _ => text,
    }
}

/// Reads the name and argument slots; returns them with the call start that
/// remains once a name prefix is taken off.
fn slots(
    outputs: &Outputs,
    lead: &str,
    one: &str,
    cores: &Cores,
    frame: &Frame,
    report: &mut Report,
) -> (NameSlot, ArgumentsSlot, String) {
    let core = &one[cores.one.clone()];
    if cores.class == ToolClass::JsonNative {
        let value: Json = serde_json::from_str(core).unwrap_or(Json::Null);
        let name = json_name(&value);
        let arguments = json_arguments(&value, &name);
        return (name, arguments, frame.call_start.clone());
    }
    let (call_start, prefix) = split_name_prefix(&frame.call_start);
    let after_name = cores.one.start + NAME.len();
    let (suffix, arguments) = match cores.class {
        ToolClass::TagJson => {
            let args_start =
                json_scan::next_object(one, after_name).map_or(after_name, |(r, _)| r.start);
            (
                one[after_name..args_start].to_owned(),
                ArgumentsSlot::Json {
                    path: vec![],
                    as_string: false,
                    before_name: false,
                },
            )
        }
        ToolClass::PythonCall => (
            "(".to_owned(),
            ArgumentsSlot::Python {
                raw_strings: raw_python_strings(outputs),
                bare_strings: bare_python_strings(outputs),
            },
        ),
        _ => {
            let (suffix, tagged) = arguments::tagged(outputs, lead, one, after_name, report);
            (suffix, ArgumentsSlot::Tagged(Box::new(tagged)))
        }
    };
    (
        NameSlot::Tagged {
            prefix: prefix.to_owned(),
            suffix,
        },
        arguments,
        call_start.to_owned(),
    )
}

/// Whether the markup value (a newline in it) is written between single
/// quotes unescaped, `'X<&` + newline + `Y'`: the template writes `'` + value
/// + `'`, so a quote inside is no Python literal's end either.
fn raw_python_strings(outputs: &Outputs) -> bool {
    outputs
        .get(Variant::CallMarkup)
        .is_ok_and(|text| text.contains(&format!("'{MARKUP_VALUE}'")))
}

/// Whether the markup value is written with no quote around it,
/// `first=X<&` + newline + `Y`: the template prints values with `str()`
/// (`"%s" | format(value)`), so a string is its bare text.
fn bare_python_strings(outputs: &Outputs) -> bool {
    outputs
        .get(Variant::CallMarkup)
        .is_ok_and(|text| text.contains(&format!("{ARG}={MARKUP_VALUE}")))
}

/// Splits the text before a name into the call's start and the name's prefix:
/// an unclosed marker at the end (`<function=`), or text after the last marker
/// (`functions.`), is the name prefix.
fn split_name_prefix(text: &str) -> (&str, &str) {
    let last_end = markers::spans(text).last().map_or(0, |r| r.end);
    let rest = &text[last_end..];
    let ws = rest.len() - rest.trim_start().len();
    text.split_at(last_end + ws)
}

fn json_name(value: &Json) -> NameSlot {
    match json_scan::path_to(value, &|v| v == NAME) {
        Some(path) => NameSlot::JsonField { path },
        None => NameSlot::JsonKey,
    }
}

fn json_arguments(value: &Json, name: &NameSlot) -> ArgumentsSlot {
    let is_args = |v: &Json| v.get(ARG) == Some(&Json::from(VALUE));
    let is_text_args = |v: &Json| {
        v.as_str()
            .and_then(|s| serde_json::from_str::<Json>(s).ok())
            .is_some_and(|p| is_args(&p))
    };
    let found = json_scan::path_to(value, &is_args)
        .map(|path| (path, false))
        .or_else(|| json_scan::path_to(value, &is_text_args).map(|path| (path, true)));
    let Some((path, as_string)) = found else {
        return ArgumentsSlot::Json {
            path: vec![],
            as_string: false,
            before_name: false,
        };
    };
    let before_name = match name {
        NameSlot::JsonField { path: name_path } => {
            json_scan::written_before(value, &path, name_path)
        }
        _ => false,
    };
    ArgumentsSlot::Json {
        path,
        as_string,
        before_name,
    }
}

/// The members of a JSON call object that hold none of its slots (name,
/// arguments, id) and render the same in both calls of the two-call output:
/// `"type": "function"` where the template prints the whole OpenAI call
/// object with `tojson`. A member that tells calls apart (an index) or
/// echoes a probe value is no constant.
fn json_constants(
    one: &str,
    two: Option<&str>,
    cores: &Cores,
    name: &NameSlot,
    arguments: &ArgumentsSlot,
    id: Option<&IdSlot>,
) -> Vec<JsonConstant> {
    let parse = |text: &str, range: &Range<usize>| {
        serde_json::from_str::<Json>(text.get(range.clone())?).ok()
    };
    let (NameSlot::JsonField { path: name }, ArgumentsSlot::Json { path: args, .. }) =
        (name, arguments)
    else {
        return vec![];
    };
    let Some(call) = (cores.class == ToolClass::JsonNative)
        .then(|| parse(one, &cores.one))
        .flatten()
    else {
        return vec![];
    };
    let second = two
        .zip(cores.two.as_ref())
        .and_then(|(text, (_, range))| parse(text, range));
    let id = match id {
        Some(IdSlot::JsonField { path, .. }) => Some(path.as_slice()),
        _ => None,
    };
    let slots: Vec<&[String]> = [Some(name.as_slice()), Some(args.as_slice()), id]
        .into_iter()
        .flatten()
        .collect();
    let echoes_a_probe = |v: &Json| {
        [NAME, NAME2, ID, ARG, VALUE]
            .iter()
            .any(|p| v.to_string().contains(p))
    };
    json_scan::leaves(&call)
        .into_iter()
        .filter(|(path, _)| !slots.iter().any(|s| path.starts_with(s)))
        .filter(|(_, value)| !echoes_a_probe(value))
        .filter(|(path, value)| {
            second
                .as_ref()
                .is_none_or(|s| json_scan::at(s, path) == Some(value))
        })
        .map(|(path, value)| JsonConstant {
            after: slots
                .iter()
                .filter(|s| json_scan::written_before(&call, s, &path))
                .count(),
            path,
            value,
        })
        .collect()
}

/// T7: where the call id is written.
fn id_slot(
    outputs: &Outputs,
    lead: &str,
    one: &str,
    cores: &Cores,
    report: &mut Report,
) -> Option<IdSlot> {
    let other = outputs
        .ok(Variant::CallId2)
        .and_then(|t| t.strip_prefix(lead));
    let Some(at) = one.find(ID) else {
        match other {
            Some(o) if o == one => return self_numbered_id(one, cores, report),
            Some(_) => report.unsupported(
                "T7",
                "the id changes the output but is not written verbatim",
            ),
            None => report.default_unsupported("T7", "the call-id variant did not render"),
        }
        return None;
    };
    report.found("T7", format!("id written at byte {at} of the call output"));
    if cores.class == ToolClass::JsonNative && cores.one.contains(&at) {
        let value: Json = serde_json::from_str(&one[cores.one.clone()]).ok()?;
        return json_scan::path_to(&value, &|v| v == ID).map(|path| json_id(&value, path));
    }
    let before = &one[..at];
    let prefix_start = markers::tokens(before)
        .last()
        .and_then(|m| before.rfind(m))
        .unwrap_or_else(|| before.rfind(char::is_whitespace).map_or(0, |i| i + 1));
    let after = &one[at + ID.len()..];
    let suffix_len = markers::marker_at(after, 0).map_or_else(
        || after.find(char::is_whitespace).unwrap_or(after.len()),
        |r| r.end,
    );
    Some(IdSlot::Tagged {
        prefix: before[prefix_start..].to_owned(),
        suffix: after[..suffix_len].to_owned(),
        before_name: at < cores.one.start,
    })
}

/// T7 when the id does not change the output: a JSON call may still carry
/// an id field the template fills itself (a loop index in `tool_call_id`).
/// The model writes one there too, and it must be kept, so a scalar field
/// keyed `id` or `*_id` becomes the id slot.
fn self_numbered_id(one: &str, cores: &Cores, report: &mut Report) -> Option<IdSlot> {
    let is_id_key = |k: &str| k == "id" || k.ends_with("_id");
    let value = (cores.class == ToolClass::JsonNative)
        .then(|| serde_json::from_str::<Json>(one.get(cores.one.clone())?).ok())
        .flatten();
    let slot = value
        .as_ref()
        .and_then(|v| Some(json_id(v, json_scan::scalar_key_path(v, &is_id_key)?)));
    match slot {
        Some(slot) => {
            if let IdSlot::JsonField { path, .. } = &slot {
                report.found(
                    "T7",
                    format!(
                        "the template numbers calls itself in field {}",
                        path.join(".")
                    ),
                );
            }
            Some(slot)
        }
        None => {
            report.same("T7");
            None
        }
    }
}

/// An id field at `path` of the call object `call`, and whether the
/// template writes it before the name.
fn json_id(call: &Json, path: Vec<String>) -> IdSlot {
    let before_name = json_scan::path_to(call, &|v| v == NAME)
        .is_some_and(|name| json_scan::written_before(call, &path, &name));
    IdSlot::JsonField { path, before_name }
}

/// A name suffix that starts with a call counter (`:0` in the one-call
/// output, `:1` for the second call of the two-call output) is an id the
/// template composes from the name: it becomes [`IdSlot::Counted`] and the
/// counter leaves the name's suffix.
fn counted_id(
    name: NameSlot,
    one: &str,
    two: Option<&str>,
    report: &mut Report,
) -> (NameSlot, Option<IdSlot>) {
    let NameSlot::Tagged { prefix, suffix } = &name else {
        return (name, None);
    };
    let Some((separator, rest)) = suffix.split_once('0') else {
        return (name, None);
    };
    let is_separator = !separator.is_empty()
        && separator
            .chars()
            .all(|c| c.is_ascii_punctuation() && !"<[{(".contains(c));
    let second = format!("{NAME2}{separator}1{rest}");
    if !is_separator
        || !one.contains(&format!("{NAME}{suffix}"))
        || !two.is_some_and(|t| t.contains(&second))
    {
        return (name, None);
    }
    report.found(
        "T7",
        format!(
            "the template numbers calls after the name: {NAME}{separator}0, {NAME2}{separator}1"
        ),
    );
    let name = NameSlot::Tagged {
        prefix: prefix.clone(),
        suffix: rest.to_owned(),
    };
    (
        name,
        Some(IdSlot::Counted {
            separator: separator.to_owned(),
        }),
    )
}

/// An id written in the framing (before the name, or between the name and
/// the arguments) is cut out of that framing text into its own slot.
fn separate_id(
    name: NameSlot,
    call_start: String,
    id: Option<IdSlot>,
) -> (NameSlot, String, Option<IdSlot>) {
    let Some(IdSlot::Tagged {
        prefix: id_prefix,
        suffix: id_suffix,
        before_name,
    }) = id
    else {
        return (name, call_start, id);
    };
    let cut = |text: &str| -> Option<(String, String)> {
        let at = text.find(ID)?;
        let start = text[..at].rfind(id_prefix.as_str()).unwrap_or(at);
        Some((text[..start].to_owned(), text[at + ID.len()..].to_owned()))
    };
    let id = |suffix: String| {
        Some(IdSlot::Tagged {
            prefix: id_prefix.clone(),
            suffix,
            before_name,
        })
    };
    if before_name {
        if let Some((start, rest)) = cut(&call_start) {
            // What follows the id up to the name stays in the name's prefix.
            let name = match name {
                NameSlot::Tagged { prefix, suffix } => NameSlot::Tagged {
                    prefix: format!(
                        "{}{prefix}",
                        rest.strip_prefix(id_suffix.as_str()).unwrap_or(&rest)
                    ),
                    suffix,
                },
                other => other,
            };
            return (name, start, id(id_suffix.clone()));
        }
        if let NameSlot::Tagged { prefix, suffix } = &name {
            if let Some((before, rest)) = cut(prefix) {
                let name = NameSlot::Tagged {
                    prefix: rest
                        .strip_prefix(id_suffix.as_str())
                        .unwrap_or(&rest)
                        .to_owned(),
                    suffix: suffix.clone(),
                };
                return (name, format!("{call_start}{before}"), id(id_suffix.clone()));
            }
        }
    } else if let NameSlot::Tagged { prefix, suffix } = &name {
        if let Some((before, rest)) = cut(suffix) {
            let name = NameSlot::Tagged {
                prefix: prefix.clone(),
                suffix: before,
            };
            return (
                name,
                call_start,
                id(if rest.is_empty() {
                    id_suffix.clone()
                } else {
                    rest
                }),
            );
        }
    }
    (name, call_start, id(id_suffix.clone()))
}

/// A tagged name whose suffix holds the probe name again, where the render
/// with the other name has that name too, is written twice: the suffix is
/// split around the repeat.
fn name_echo(name: NameSlot, renamed: Option<&str>) -> (NameSlot, Option<String>) {
    let NameSlot::Tagged { prefix, suffix } = &name else {
        return (name, None);
    };
    let Some(at) = suffix.find(NAME) else {
        return (name, None);
    };
    let (before, after) = (&suffix[..at], &suffix[at + NAME.len()..]);
    let echoed = format!("{before}{NAME2}{after}");
    match renamed.and_then(|t| t.find(NAME2).map(|i| &t[i + NAME2.len()..])) {
        Some(rest) if rest.starts_with(&echoed) => (
            NameSlot::Tagged {
                prefix: prefix.clone(),
                suffix: before.to_owned(),
            },
            Some(after.to_owned()),
        ),
        _ => (name, None),
    }
}

/// T4 (name) and A2 (value): the variants must differ only in the needle.
fn report_name_and_value(outputs: &Outputs, report: &mut Report) {
    let pairs = [
        ("T4", Variant::CallName2, NAME),
        ("A2", Variant::CallValue2, VALUE),
    ];
    for (name, variant, needle) in pairs {
        match (outputs.get(Variant::Call), outputs.get(variant)) {
            (Ok(a), Ok(b)) if a == b => report.same(name),
            (Ok(a), Ok(_)) => match a.find(needle) {
                Some(at) => report.found(name, format!("written at byte {at} of the call output")),
                None => report.unsupported(name, "needle not written"),
            },
            (Err(e), _) | (_, Err(e)) => report.unsupported(name, e),
        }
    }
}

/// T5, T6, A1, A3 for formats whose arguments are JSON or Python: the
/// variants must render and differ from the one-argument call.
fn report_argument_variants(outputs: &Outputs, report: &mut Report) {
    let variants = [
        ("T5", Variant::CallNoArgs),
        ("T6", Variant::CallTwoArgs),
        ("A1", Variant::CallArg2),
        ("A3", Variant::CallNumber),
        ("A4", Variant::CallMarkup),
        ("A5", Variant::CallObject),
    ];
    for (name, variant) in variants {
        match (outputs.get(Variant::Call), outputs.get(variant)) {
            (Ok(a), Ok(b)) if a == b => report.same(name),
            (Ok(_), Ok(b)) => report.found(name, format!("arguments: \"{}\"", visible(b))),
            (Err(e), _) | (_, Err(e)) => report.unsupported(name, e),
        }
    }
}

/// For tagged arguments, the call end as framed starts with the last value's
/// suffix and the closer of the tag the name opened (`</function>` for
/// `<function=`): both belong to the arguments, not to the call's end.
fn move_argument_end(format: &mut ToolFormat) {
    let (ArgumentsSlot::Tagged(args), NameSlot::Tagged { prefix, .. }) =
        (&mut format.arguments, &format.name)
    else {
        return;
    };
    if let Some(rest) = format.call_end.strip_prefix(args.close_for(ARG).as_str()) {
        format.call_end = rest.to_owned();
    }
    let Some(close) = tag_closer(prefix) else {
        return;
    };
    let at = format.call_end.len() - format.call_end.trim_start().len();
    if format.call_end[at..].starts_with(&close) {
        let end = at + close.len();
        let end = end + format.call_end[end..].len() - format.call_end[end..].trim_start().len();
        args.end = format.call_end[..end].to_owned();
        format.call_end = format.call_end[end..].to_owned();
    }
}

/// The closing tag of the tag a name prefix opens: `<function=` → `</function>`,
/// `<invoke name="` → `</invoke>`, `<｜DSML｜invoke name="` → `</｜DSML｜invoke>`.
fn tag_closer(prefix: &str) -> Option<String> {
    let open = prefix.rfind('<')?;
    let tag = &prefix[open + 1..];
    let word_end = tag.find(['=', ' ', '>']).unwrap_or(tag.len());
    let word = &tag[..word_end];
    (!word.is_empty() && !word.starts_with('/') && !prefix[open..].contains('>'))
        .then(|| format!("</{word}>"))
}
