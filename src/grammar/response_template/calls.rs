//! The `tool_calls` field, printed from the outline's tool sections: one
//! region per call (`repeats`), its open pattern the call's fixed text up
//! to the arguments (the section start or the call separator optional
//! first, the name captured), its close the text after them (the section
//! end optional after). A JSON call object between call markers is parsed
//! whole and mapped by key path; Python calls are one region over the
//! bracketed list, or one per call where strings are written raw. Several
//! sections (a native format and the fallback dialects the parser reads
//! too) share the field, one branch each, when their arguments take the
//! same content parser.
//!
//! The call's shape is read from the outline of a stand-in request: one
//! tool named `NAME` with one argument `KEY` (`stand_in`) of any type, so that every
//! spelling of a value (raw, escaped, typed) is in the tree; the name
//! group matches the request's tools.
//!
//! Invariants: reads only outline nodes (and the headers' markers a call
//! may be addressed in); never panics; what the spec cannot express is a
//! warning and no field, never a wrong one.

use serde_json::{json, Value};

use super::arguments::{self, ArgumentSpec};
use super::patterns::{core_flex, escape, flex, flex_counted, flex_json, is_blank, optional, tidy};
use super::stand_in::{Piece, NAME};
use crate::grammar::shape::{flat, Section};
use crate::protocol::outline::{Kind, Node, Produces, ValueNotation};
use crate::protocol::IdShape;

/// Starts the close pattern of a call whose region is a JSON object: the
/// close comes only after the object's `}`, so a call's markers quoted inside
/// a string argument (`"text": "... </tool_call> ..."`) do not end it.
const JSON_CLOSED: &str = r"(?<=\})";

/// The tool-call field and a capture-free pattern of a call's start (what
/// ends a content wrapper with no end marker).
pub(super) struct Calls {
    pub field: Value,
    pub lookahead: String,
}

/// What a call's name is read against: the request's tools (any name when
/// there are none) and the channel headers (open, close) a call may be
/// addressed in.
pub(super) struct Names<'a> {
    pub tools: &'a [&'a str],
    pub headers: &'a [(&'a str, &'a str)],
}

/// One call as the patterns read it: the pieces before the arguments, the
/// arguments node, the arguments' closing marker (tagged arguments), the
/// pieces after.
struct Call<'o> {
    head: Vec<Piece>,
    arguments: Option<&'o Node>,
    arguments_end: Option<String>,
    tail: Vec<Piece>,
}

/// The field for the sections' calls. One section is laid out as it is
/// best read; several share one field, each a branch of its open and close
/// patterns, when their arguments take the same content parser; else the
/// first section alone, with a warning.
pub(super) fn tool_calls(
    sections: &[Section],
    names: &Names,
    warnings: &mut Vec<String>,
) -> Option<Calls> {
    let [first, others @ ..] = sections else {
        return None;
    };
    if others.is_empty() {
        return one_section(first, names, warnings);
    }
    let mut merged_warnings = Vec::new();
    let laid_out: Option<Vec<Calls>> = sections
        .iter()
        .map(|s| {
            let call = call_of(s)?;
            (!is_python(&call)).then(|| laid_out_calls(s, &call, names, &mut merged_warnings))
        })
        .collect();
    if let Some(merged) = laid_out.and_then(|calls| merge(&calls)) {
        warnings.extend(merged_warnings);
        return Some(merged);
    }
    warnings.push(format!(
        "response_template: one tool-call format of {}; the others are not parsed",
        sections.len()
    ));
    one_section(first, names, warnings)
}

/// The field of one section's calls, as that format is best read.
fn one_section(section: &Section, names: &Names, warnings: &mut Vec<String>) -> Option<Calls> {
    let call = call_of(section)?;
    if is_python(&call) {
        return Some(python_calls(section, &call, names.tools));
    }
    whole_json_call(section, &call)
        .or_else(|| Some(laid_out_calls(section, &call, names, warnings)))
}

/// The section's (stand-in) call, cut at its arguments.
fn call_of<'o>(section: &Section<'o>) -> Option<Call<'o>> {
    let call = section.calls.first()?;
    let mut out = Call {
        head: Vec::new(),
        arguments: None,
        arguments_end: None,
        tail: Vec::new(),
    };
    let items = flat(call);
    let mut i = 0;
    while i < items.len() {
        let item = items[i];
        i += 1;
        if item.lenient {
            continue;
        }
        if item.produces == Produces::Arguments {
            out.arguments = Some(item);
            continue;
        }
        let run = match out.arguments {
            Some(_) => &mut out.tail,
            None => &mut out.head,
        };
        if let Kind::Attributes { written, close } = &item.kind {
            // A header's attributes (` index="1"<|sep|>`): one marker, as
            // the template writes it, its counter any number.
            let word = match run.last() {
                Some(Piece::Marker(m)) => m.clone(),
                _ => String::new(),
            };
            if !word.is_empty() {
                run.pop();
            }
            let mut raw = format!("{word}{written}{close}");
            if matches!(items.get(i).map(|n| &n.kind), Some(Kind::Marker(m)) if m == close) {
                i += 1;
            }
            if let Some(Kind::Marker(after)) = items.get(i).map(|n| &n.kind) {
                if is_blank(after) {
                    raw.push_str(after);
                    i += 1;
                }
            }
            run.push(Piece::Marker(raw));
            continue;
        }
        push_piece(run, item);
    }
    split_arguments_end(&mut out);
    Some(out)
}

/// Moves the tagged arguments' closing marker (`</function>`) out of the
/// tail when a marker of the call's own follows it (`</tool_call>`): the
/// close then takes it as optional (see [`arguments_end`]). Any other
/// tail is the call's, required as written.
fn split_arguments_end(call: &mut Call) {
    let Some(t) = call.arguments.and_then(arguments::tagged) else {
        return;
    };
    let Some(Piece::Marker(end)) = call.tail.first() else {
        return;
    };
    if own_marker(&call.tail[1..], &t.markers(), end) {
        call.arguments_end = Some(end.clone());
        call.tail.remove(0);
    }
}

/// Appends the fixed text or id of `node` (an optional group written).
fn push_piece(run: &mut Vec<Piece>, node: &Node) {
    let text = |run: &mut Vec<Piece>, t: &str| match run.last_mut() {
        Some(Piece::Text(prev)) => prev.push_str(t),
        _ if t.is_empty() => {}
        _ => run.push(Piece::Text(t.to_string())),
    };
    match &node.kind {
        Kind::Marker(raw) if !raw.is_empty() => run.push(Piece::Marker(raw.clone())),
        Kind::Literal(t) => text(run, t),
        Kind::ToolName { quoted: true, .. } => text(run, &format!("\"{NAME}\"")),
        Kind::ToolName { .. } => text(run, NAME),
        Kind::Id(shape) => run.push(Piece::Id(shape.clone())),
        Kind::Optional(inner) => {
            for item in flat(inner) {
                push_piece(run, item);
            }
        }
        _ => {}
    }
}

fn is_python(call: &Call) -> bool {
    call.arguments.is_some_and(arguments::is_python)
}

/// One field reading every format of `calls`: the open, close and lookahead
/// patterns are alternations of theirs (a group name may repeat across
/// branches in Python's `regex`). None when the formats' arguments need
/// different content parsers or call transforms: a field has one of each.
fn merge(calls: &[Calls]) -> Option<Calls> {
    let first = &calls.first()?.field;
    let same = |key: &str| calls.iter().all(|c| c.field.get(key) == first.get(key));
    if !["content", "content_args", "transform", "repeats"]
        .iter()
        .all(|k| same(k))
    {
        return None;
    }
    let branches = |key: &str| {
        let all: Vec<String> = calls
            .iter()
            .filter_map(|c| c.field.get(key).and_then(Value::as_str))
            .map(|p| format!("(?:{p})"))
            .collect();
        (all.len() == calls.len()).then(|| all.join("|"))
    };
    let mut field = first.clone();
    field["open_pattern"] = json!(branches("open_pattern")?);
    field["close_pattern"] = json!(branches("close_pattern")?);
    let lookahead: Vec<String> = calls
        .iter()
        .map(|c| format!("(?:{})", c.lookahead))
        .collect();
    Some(Calls {
        field,
        lookahead: lookahead.join("|"),
    })
}

/// The `type`/`function` call object with `name` and `arguments` read from
/// these placeholders, and `id` when there is one.
fn call_transform(name: &str, arguments: &str, id: Option<&str>) -> Value {
    let mut call = json!({"type": "function", "function": {"name": name, "arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    call
}

/// Stands for the arguments and the id in a call object parsed for their
/// key paths.
const ARGUMENTS: &str = "\u{E002}";
const ID: &str = "\u{E003}";

/// A JSON call object between call markers, parsed whole and mapped by key
/// path: robust to key order and spacing. Needs marked calls and keys a
/// placeholder can name (word characters).
fn whole_json_call(section: &Section, call: &Call) -> Option<Calls> {
    let arguments = call.arguments?;
    if !matches!(&arguments.kind, Kind::Value(v)
        if matches!(v.notation, ValueNotation::Json | ValueNotation::JsonInString))
    {
        return None;
    }
    let (call_start, head) = leading_markers(&call.head);
    let (call_end, tail) = trailing_markers(&call.tail);
    if is_blank(&call_start) || is_blank(&call_end) {
        return None;
    }
    let mut object = String::new();
    for (run, between) in [(head, Some(format!("\"{ARGUMENTS}\""))), (tail, None)] {
        for piece in run {
            match piece {
                Piece::Text(t) => object.push_str(t),
                Piece::Id(IdShape::JsonString) => object.push_str(&format!("\"{ID}\"")),
                _ => return None,
            }
        }
        object.extend(between);
    }
    let object: Value = serde_json::from_str(&object).ok()?;
    let placeholder = |marker: &str| {
        let path = path_to(&object, marker)?;
        let word = |k: &String| !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_');
        (!path.is_empty() && path.iter().all(word))
            .then(|| format!("{{content.{}}}", path.join(".")))
    };
    let (name, args) = (placeholder(NAME)?, placeholder(ARGUMENTS)?);
    let has_id = call
        .head
        .iter()
        .chain(&call.tail)
        .any(|p| matches!(p, Piece::Id(_)));
    let id = match has_id {
        true => Some(placeholder(ID)?),
        false => None,
    };
    let open = format!("{}{}", optional_lead(section), flex(&call_start));
    let close = format!("{JSON_CLOSED}{}{}", flex(&call_end), optional(&section.end));
    let field = json!({
        "open_pattern": open,
        "close_pattern": close,
        "repeats": true,
        "content": "json",
        "transform": call_transform(&name, &args, id.as_deref()),
    });
    Some(Calls {
        field,
        lookahead: open,
    })
}

/// The markers a run of pieces opens with (concatenated), and the rest.
fn leading_markers(run: &[Piece]) -> (String, &[Piece]) {
    let n = run
        .iter()
        .take_while(|p| matches!(p, Piece::Marker(_)))
        .count();
    (markers_text(&run[..n]), &run[n..])
}

/// The markers a run of pieces ends with (concatenated), and the rest.
fn trailing_markers(run: &[Piece]) -> (String, &[Piece]) {
    let n = run
        .iter()
        .rev()
        .take_while(|p| matches!(p, Piece::Marker(_)))
        .count();
    let at = run.len() - n;
    (markers_text(&run[at..]), &run[..at])
}

fn markers_text(run: &[Piece]) -> String {
    run.iter()
        .filter_map(|p| match p {
            Piece::Marker(m) => Some(m.as_str()),
            _ => None,
        })
        .collect()
}

/// The key path to the string `marker` in `value`.
fn path_to(value: &Value, marker: &str) -> Option<Vec<String>> {
    match value {
        Value::String(s) if s == marker => Some(Vec::new()),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let mut path = path_to(v, marker)?;
            path.insert(0, k.clone());
            Some(path)
        }),
        _ => None,
    }
}

/// Python calls: the bracketed list between the section markers (or, with
/// none, from the bracket of a known name's call to the end) is one
/// region, read by `python-call-list`. Strings written raw or bare, and
/// calls with no list around them (one per line between the section
/// markers, or opening the output where there is no marker), need one
/// region per call instead (`per_call_regions`).
fn python_calls(section: &Section, call: &Call, names: &[&str]) -> Calls {
    let (start, end) = (section.start.trim_end(), section.end.trim_start());
    let Some((start, end)) = start.strip_suffix('[').zip(end.strip_prefix(']')) else {
        // With no section marker the calls open the output, as the parser
        // reads them (`get_weather(city=Paris)<|eom|>`): the region opens
        // at the text's start, the section's end optional after them.
        let (around, lookahead) = match is_blank(start) {
            true => (
                Around {
                    start: r"\A\s*".into(),
                    separator: r"\s*,\s*".into(),
                    end: format!(r"\s*(?:{})?\s*\Z", flex(end)),
                },
                format!(r"\A\s*{}\(", name_group(names, false, false, false)),
            ),
            false => (
                Around {
                    start: format!(r"{}\s*", flex(start)),
                    separator: r"\s*,?\s*".into(),
                    end: format!(r"\s*{}", flex(end)),
                },
                flex(start),
            ),
        };
        let field = per_call_regions(&around, names);
        return Calls { field, lookahead };
    };
    if call
        .arguments
        .is_some_and(arguments::unliteral_python_strings)
    {
        let around = Around {
            start: format!(r"{}\s*\[\s*", flex(start)),
            separator: r"\s*,\s*".into(),
            end: format!(r"\s*\]\s*{}", flex(end.trim_start())),
        };
        let field = per_call_regions(&around, names);
        return Calls {
            field,
            lookahead: flex(start),
        };
    }
    // With no section marker the list itself opens the region, where it
    // begins with a known name's call (`[search(`), as the parser reads it.
    let (open, lookahead) = match is_blank(start) {
        true => {
            let list = format!(r"(?=\[\s*{}\s*\()", name_group(names, false, false, false));
            (list.clone(), list)
        }
        false => (format!(r"{}(?=\s*\[)", flex(start)), flex(start)),
    };
    let mut field = json!({
        "open_pattern": open,
        "content": "python-call-list",
        "transform_each": true,
        "transform": call_transform("{name}", "{arguments}", None),
    });
    if !is_blank(end) {
        field["close_pattern"] = json!(format!(r"(?<=\])\s*{}", flex(end)));
    }
    Calls { field, lookahead }
}

/// The patterns around a section's Python calls: before the first, between
/// two, after the last.
struct Around {
    start: String,
    separator: String,
    end: String,
}

/// Python calls read one region each, where `python-call-list` cannot read
/// them: strings written `'` + value + `'` unescaped (`text='it's'`) or bare
/// (`city=Paris`), which it refuses, or calls with no list around them. A
/// call's region opens at `name(` after the section's start or the previous
/// call's `)` and separator; `)` then the separator and the next call, or
/// the section's end, closes it (the `)` kept in the region as the end of
/// the last value). Its keyword arguments are read by `xml-inline`. A string
/// runs to the quote before `, key=` or the final `)`, as the parser reads
/// it; the value keeps its `='` and that end so that `string_delims` (pairs
/// `='`..`',` and `='`..`')`) take it whole, unescaped; other values (`3`,
/// `True`, `{"a": 1}`, `['x', 'y']`, whose quoted items the last pair turns
/// into JSON strings) are JSON where they can be, else text that `tools=`
/// types.
fn per_call_regions(around: &Around, names: &[&str]) -> Value {
    let Around {
        start,
        separator,
        end,
    } = around;
    let name = name_group(names, false, true, false);
    let any_name = name_group(names, false, false, false);
    let open = format!(r"(?:{start}|(?<=\){separator})){name}\(");
    let close = format!(r"(?<=\))(?:{separator}(?={any_name}\()|{end})");
    let next_key = r"\s*[A-Za-z_]\w*\s*=";
    let tag = format!(
        r"(?P<key>[A-Za-z_]\w*)\s*(?:(?P<value>='.*?'(?:,(?={next_key})|\)\Z))|=\s*(?P<value>.*?)(?=\s*,{next_key}|\s*\)\Z))"
    );
    json!({
        "open_pattern": open,
        "close_pattern": close,
        "repeats": true,
        "content": "xml-inline",
        "content_args": {"tag_pattern": tag, "value_parser": {"name": "json", "args": {
            "string_delims": [["='", "',"], ["='", "')"], ["'", "'"]],
            "allow_non_json": true,
            "strip": false,
        }}},
        "transform": call_transform("{name}", "{content}", None),
    })
}

/// A call as its pieces spell it: the text before the arguments opens the
/// region (name and id captured), the text after closes it.
fn laid_out_calls(
    section: &Section,
    call: &Call,
    names: &Names,
    warnings: &mut Vec<String>,
) -> Calls {
    let (head, tail) = (call.head.as_slice(), call.tail.as_slice());
    let spec = call
        .arguments
        .map(|a| arguments::spec(a, head, tail, warnings));
    let braces = spec.as_ref().is_some_and(|n| n.braces);
    let head_re = |capture| {
        addressed_head(head, names, capture)
            .unwrap_or_else(|| pieces(head, names.tools, capture, braces, Side::Head))
    };
    let (open_head, bare_head) = (head_re(true), head_re(false));
    let tail_re = pieces(tail, names.tools, true, braces, Side::Tail);
    let lead = optional_lead(section);
    let open = format!("{lead}{open_head}");
    let json_object = spec
        .as_ref()
        .is_some_and(|n| n.parser == "json" && !n.braces);
    let close = format!(
        "{}{}{tail_re}{}",
        if json_object { JSON_CLOSED } else { "" },
        arguments_end(call, spec.as_ref()),
        call_end(section, tail, &bare_head)
    );
    let mut field =
        json!({"open_pattern": tidy(open), "close_pattern": tidy(close), "repeats": true});
    let id = head
        .iter()
        .chain(tail)
        .any(|s| s == &Piece::Id(IdShape::JsonString))
        .then_some("{id}");
    if let Some(n) = spec {
        field["content"] = json!(n.parser);
        if !n.args.is_empty() {
            field["content_args"] = Value::Object(n.args);
        }
    }
    field["transform"] = call_transform("{name}", "{content}", id);
    Calls {
        field,
        lookahead: format!("{lead}{bare_head}"),
    }
}

/// The head of a call addressed after a header's label and closed by the
/// header (` to=functions.NAME<|channel|>commentary json<|message|>`): the
/// parser also reads the address inside a header opened before it
/// (`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`),
/// the label's words on either side of the name, so the export takes both
/// orders; so too where the template writes the address inside the header
/// (the model may put it before). None for any other head.
fn addressed_head(head: &[Piece], names: &Names, capture: bool) -> Option<String> {
    let mut text = String::new();
    for piece in head {
        match piece {
            Piece::Marker(raw) | Piece::Text(raw) => text.push_str(raw),
            Piece::Id(_) => return None,
        }
    }
    let (before, after) = text.split_once(NAME)?;
    if after.contains(NAME) {
        return None; // a name the header echoes: laid out as written
    }
    let &(open, close) = names
        .headers
        .iter()
        .find(|(_, close)| after.trim_end().ends_with(close))?;
    // The address: the text before the name, or, where the header holds
    // it (`<|channel|>commentary to=functions.`), the label's last word.
    let before = before.trim();
    // The name must end where the pattern ends it (a space or a marker
    // after it: `tool="f" index=` is an attribute, not an address).
    let name_ends = after.starts_with(|c: char| c.is_whitespace() || c == '<');
    let address = match before.strip_prefix(open) {
        Some(label) if name_ends => label.split_whitespace().last()?,
        Some(_) => return None,
        None => before,
    };
    if address.is_empty() || address.contains(char::is_whitespace) || address.contains(open) {
        return None;
    }
    // A label: the header's words, never past its close or a line.
    let label = format!(r"(?:(?!{})[^\n])*?", core_flex(close));
    Some(format!(
        r"(?:{}{label})?\s*{}{}(?=\s|<){label}{}",
        core_flex(open),
        escape(address),
        name_group(names.tools, false, capture, false),
        core_flex(close)
    ))
}

/// What tagged arguments write after the last one (`</function>`), when
/// the call's tail is a marker of its own that no argument marker holds
/// (`</tool_call>`): optional, so a call missing its arguments' end ends
/// there, as our parser reads it, instead of running on over the text and
/// calls after it. (Any other arguments' end stays in the tail, required:
/// else the region would end at the first `</parameter>`-like marker the
/// call end shares.)
fn arguments_end(call: &Call, spec: Option<&ArgumentSpec>) -> String {
    let Some(end) = &call.arguments_end else {
        return String::new();
    };
    match spec {
        Some(s) if s.keyed => String::new(),
        _ => optional(end),
    }
}

/// Whether the call's `tail` is literal text with a marker that none of the
/// arguments' markers contains (`</tool_call>` beside `</parameter>`; not a
/// prefix every marker shares, as MiniMax-M3's `]<]minimax[>[`).
fn own_marker(tail: &[Piece], markers: &[String], end: &str) -> bool {
    let mut text = String::new();
    for piece in tail {
        match piece {
            Piece::Marker(raw) | Piece::Text(raw) => text.push_str(raw),
            Piece::Id(_) => return false,
        }
    }
    let core = text.trim();
    has_marker(tail)
        && !markers
            .iter()
            .map(String::as_str)
            .chain([end])
            .any(|m| m.contains(core))
}

/// Whether `run` writes a marker (not only space or punctuation text).
fn has_marker(run: &[Piece]) -> bool {
    run.iter()
        .any(|s| matches!(s, Piece::Marker(m) if !is_blank(m)))
}

/// How the close of a call ends: a marker in the call's tail is enough; a
/// tail of JSON punctuation alone (`}`) also needs what follows: the section
/// end, the next call, or the end of the text.
fn call_end(section: &Section, tail: &[Piece], next_head: &str) -> String {
    if has_marker(tail) {
        return optional(&section.end);
    }
    let mut ends = Vec::new();
    if !is_blank(&section.end) {
        ends.push(format!(r"\s*{}", flex(&section.end)));
    }
    let separator = if is_blank(&section.separator) {
        String::new()
    } else {
        format!("(?:{})?", flex(&section.separator))
    };
    ends.push(format!(r"(?=\s*{separator}\s*{next_head})"));
    ends.push(r"\s*\Z".to_string());
    format!("(?:{})", ends.join("|"))
}

/// What may precede a call's own start: the section start (first call) or
/// the call separator (later calls), both optional.
fn optional_lead(section: &Section) -> String {
    let leads: Vec<String> = [&section.start, &section.separator]
        .into_iter()
        .filter(|m| !is_blank(m))
        .map(|m| flex(m))
        .collect();
    match leads.as_slice() {
        [] => String::new(),
        many => format!("(?:{})?", many.join("|")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Head,
    Tail,
}

/// The pattern of a run of call pieces. `capture`: name and id as named
/// groups (else plain groups, for lookaheads); `braces`: the object's brace
/// at the run's inner edge stays out of the match (a lookaround).
fn pieces(run: &[Piece], names: &[&str], capture: bool, braces: bool, side: Side) -> String {
    let mut out = String::new();
    let mut named = false;
    for (i, piece) in run.iter().enumerate() {
        let inner = match side {
            Side::Head => i + 1 == run.len(),
            Side::Tail => i == 0,
        };
        match piece {
            Piece::Marker(raw) | Piece::Text(raw) => {
                let text = match (braces && inner, side) {
                    (true, Side::Head) => raw.trim_end().strip_suffix('{').unwrap_or(raw),
                    (true, Side::Tail) => raw.trim_start().strip_prefix('}').unwrap_or(raw),
                    _ => raw.as_str(),
                };
                let json = matches!(piece, Piece::Text(_));
                out.push_str(&with_names(text, json, names, capture, &mut named));
                if braces && inner && side == Side::Head {
                    out.push_str(r"(?=\{)");
                }
                if braces && inner && side == Side::Tail {
                    out.insert_str(0, r"(?<=\})");
                }
            }
            Piece::Id(shape) => out.push_str(&id(shape, capture)),
        }
    }
    out
}

/// `text` with the name placeholder as a group: named the first time, a
/// back reference after (a name the template writes twice).
fn with_names(
    text: &str,
    json_text: bool,
    names: &[&str],
    capture: bool,
    named: &mut bool,
) -> String {
    let spell = |part: &str| {
        if json_text {
            flex_json(part)
        } else {
            flex_counted(part)
        }
    };
    let mut out = String::new();
    for (i, part) in text.split(NAME).enumerate() {
        if i > 0 {
            out.push_str(&name_group(names, json_text, capture, *named));
            *named = true;
        }
        out.push_str(&spell(part));
    }
    out
}

/// The function name: one of the tools, or any name when none are given.
fn name_group(names: &[&str], json_text: bool, capture: bool, named: bool) -> String {
    if named && capture {
        return "(?P=name)".to_string();
    }
    let body = if names.is_empty() {
        if json_text {
            r#"(?:[^"\\]|\\.)+?"#
        } else {
            r#"[^\s<>"'(){}\[\],:=]+?"#
        }
        .to_string()
    } else {
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        sorted
            .iter()
            .map(|n| escape(n))
            .collect::<Vec<_>>()
            .join("|")
    };
    if capture {
        format!("(?P<name>{body})")
    } else {
        format!("(?:{body})")
    }
}

/// An id: a JSON string is captured; a counter and a tagged id are matched.
fn id(shape: &IdShape, capture: bool) -> String {
    match shape {
        IdShape::JsonString if capture => r#""(?P<id>(?:[^"\\]|\\.)*)""#.to_string(),
        IdShape::JsonString => r#""(?:[^"\\]|\\.)*""#.to_string(),
        IdShape::Counter => r"\d+".to_string(),
        IdShape::Tagged { prefix, suffix } => format!("(?:{}.*?{})?", flex(prefix), flex(suffix)),
    }
}
