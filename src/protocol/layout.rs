//! A tool call laid out as the model writes it: a flat list of segments
//! (markers, fixed text, the id, the arguments) for one tool of one format.
//!
//! Every grammar export (GBNF, xgrammar's structural tags, llguidance's
//! Lark, transformers' response_template) and the call writer read a call
//! from here instead of interpreting [`ToolFormat`] themselves: `<tool_call>\n{"name": "get_weather",
//! "arguments": ` ARGS `}\n</tool_call>` is `Marker("<tool_call>\n")`,
//! `Text("{\"name\": \"get_weather\", \"arguments\": ")`, `Arguments`,
//! `Text("}")`, `Marker("\n</tool_call>")`.
//!
//! A JSON call object is written with the separators templates render
//! (`tojson`: `", "` and `": "`) and its keys in the template's order (an
//! id the template writes first stays first), with the members every call
//! writes the same (`"type": "function"`, [`ToolFormat::json_constants`])
//! in their rendered places.
//!
//! A JSON id member is a [`Segment::Optional`] group: the parser reads a
//! call without it. Readers that cannot say "optional" take
//! [`CallLayout::flat`], the call exactly as the template renders it.
//!
//! Invariants: the segments of a call, with the function's name and
//! arguments filled in and optional groups written, spell the call the way
//! the template renders it; fixed text never holds the arguments; every
//! [`Segment::Arguments`] is the call's only one, never inside an optional
//! group; [`CallLayout::name_end`] indexes a top-level marker.

use std::ops::Range;

use super::TaggedLayout;

use crate::analysis::{
    ArgumentsSlot, Header, IdSlot, JsonConstant, NameSlot, ToolClass, ToolFormat,
};

/// One piece of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Segment {
    /// A marker from the template, raw: its cores are exact, its whitespace
    /// flexible (see [`super::Marker`]).
    Marker(String),
    /// Exact text: the function name, JSON keys and punctuation.
    Text(String),
    /// A call id the model makes up.
    Id(IdShape),
    /// The arguments.
    Arguments(Arguments),
    /// Segments the model may leave out, as the parser reads the call
    /// without them: a JSON id member (`"id": "..."` with its comma).
    Optional(Vec<Segment>),
}

/// How a call id is spelled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdShape {
    /// A JSON string (a field of the call object).
    JsonString,
    /// A decimal counter (`functions.NAME:0`).
    Counter,
    /// Optional: `prefix`, text up to `suffix`'s first core, `suffix`
    /// (Mistral's `[CALL_ID]...[ARGS]`).
    Tagged {
        /// The marker before the id.
        prefix: String,
        /// The marker after the id.
        suffix: String,
    },
}

/// How the arguments are written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Arguments {
    /// A JSON object; `as_string`: the object's JSON text as a JSON string.
    Json {
        /// The object's JSON text inside a JSON string.
        as_string: bool,
    },
    /// One marker-wrapped pair per argument.
    Tagged(Box<TaggedLayout>),
    /// Python keyword arguments (`a="x", b=1`), without the parentheses.
    Python,
}

/// How a call writes its function's name: what a reader that takes any
/// name (the parser) needs beside the segments, which hold the name as
/// written text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Naming {
    /// A member of a JSON call object, at the key path `name`; the
    /// arguments and the id are members at their paths too, when the
    /// object holds them (`None`: not a member of it).
    JsonMember {
        /// The name's key path (`["function", "name"]`).
        name: Vec<String>,
        /// The arguments' key path.
        arguments: Option<Vec<String>>,
        /// The id's key path.
        id: Option<Vec<String>>,
    },
    /// The call object's only key, its value the arguments (`{"f": {...}}`).
    JsonKey,
    /// Text between markers (`<function=f>`).
    Tagged,
    /// A Python call's function (`f(a=1)`), between markers.
    Python,
}

impl Naming {
    fn of(format: &ToolFormat) -> Naming {
        let path = |p: &Vec<String>| (!p.is_empty()).then(|| p.clone());
        match &format.name {
            NameSlot::JsonField { path: name } => Naming::JsonMember {
                name: name.clone(),
                arguments: match &format.arguments {
                    ArgumentsSlot::Json { path: p, .. } => path(p),
                    _ => None,
                },
                id: match &format.id {
                    Some(IdSlot::JsonField { path: p, .. }) => path(p),
                    _ => None,
                },
            },
            NameSlot::JsonKey => Naming::JsonKey,
            NameSlot::Tagged { .. } if format.class == ToolClass::PythonCall => Naming::Python,
            NameSlot::Tagged { .. } => Naming::Tagged,
        }
    }

    /// The name is a JSON member or key of the call object.
    pub fn is_json(&self) -> bool {
        matches!(self, Naming::JsonMember { .. } | Naming::JsonKey)
    }
}

/// A call of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLayout {
    /// The segments in output order.
    pub segments: Vec<Segment>,
    /// How the call writes its function's name.
    pub naming: Naming,
    /// The index of the marker that ends a tagged name (it may end a
    /// section header too: see `HeaderAttributes`).
    pub name_end: Option<usize>,
    /// The index of the text a tagged name opens (the name, then a
    /// counter's separator when a [`IdShape::Counter`] follows).
    pub name_at: Option<usize>,
    /// The segments between the call's own start and end markers.
    pub body: Range<usize>,
}

impl CallLayout {
    /// The call of `name` in `format`.
    pub fn new(format: &ToolFormat, name: &str) -> CallLayout {
        let mut out = Builder::default();
        out.marker(&format.call_start);
        let start = out.0.len();
        let (mut name_end, mut name_at) = (None, None);
        match &format.name {
            NameSlot::JsonField { .. } | NameSlot::JsonKey => json_call(&mut out, format, name),
            NameSlot::Tagged { prefix, suffix } => {
                (name_at, name_end) = tagged_call(&mut out, format, name, prefix, suffix);
            }
        }
        let end = out.0.len();
        out.marker(&format.call_end);
        CallLayout {
            segments: out.0,
            naming: Naming::of(format),
            name_end,
            name_at,
            body: start..end,
        }
    }

    /// The call's own opening marker ("" when it has none).
    pub fn start(&self) -> &str {
        match self.body.start {
            0 => "",
            _ => plain_ref(&self.segments[0]),
        }
    }

    /// The call's own closing marker ("" when it has none).
    pub fn end(&self) -> &str {
        self.segments.get(self.body.end).map_or("", plain_ref)
    }

    /// The parts around a tagged name, for a reader that takes any name
    /// (the parser); `name` is the name the layout was made with. `None`
    /// for a JSON call.
    pub(crate) fn tagged_name(&self, name: &str) -> Option<TaggedName<'_>> {
        let at = self.name_at?;
        let (before, after) = (
            &self.segments[self.body.start..at],
            &self.segments[at + 1..],
        );
        let mut out = TaggedName::default();
        let mut before = before.iter().peekable();
        if let Some(Segment::Id(IdShape::Tagged { prefix, suffix })) = before.peek() {
            out.id_before = Some((prefix, suffix));
            before.next();
        }
        out.prefix = before.next().map_or("", plain_ref);
        // The name's text goes on with a counter's separator, or with the
        // name again when no suffix parts them.
        let rest = plain_ref(&self.segments[at])
            .get(name.len()..)
            .unwrap_or_default();
        let mut after = after.iter().enumerate().peekable();
        let mut echoed = !rest.is_empty() && rest == name;
        if let Some((_, Segment::Id(IdShape::Counter))) = after.peek() {
            (out.counter, echoed) = (Some(rest), false);
            after.next();
        }
        if let Some((i, Segment::Marker(m))) = after.peek() {
            if self.name_end == Some(at + 1 + i) {
                out.suffix = m;
                after.next();
            }
        }
        if let Some((_, Segment::Text(t))) = after.peek() {
            if t == name {
                echoed = true;
                after.next();
            }
        }
        if echoed {
            out.echo = Some(match after.peek() {
                Some((_, Segment::Marker(m))) => m,
                _ => "",
            });
        }
        out.id_after = after.find_map(|(_, s)| match s {
            Segment::Id(IdShape::Tagged { prefix, suffix }) => {
                Some((prefix.as_str(), suffix.as_str()))
            }
            _ => None,
        });
        Some(out)
    }

    /// The fixed text before the arguments, when nothing but markers and
    /// text precede them (no id): what a structural tag's `begin` holds.
    pub fn head_text(&self) -> Option<String> {
        let at = self.arguments_at()?;
        self.segments[..at].iter().map(plain).collect()
    }

    /// The fixed text after the arguments, when it is only markers and text.
    pub fn tail_text(&self) -> Option<String> {
        let at = self.arguments_at()?;
        self.segments[at + 1..].iter().map(plain).collect()
    }

    /// The segments with every optional group written out, adjacent text
    /// merged: the call as the template renders it, for a reader that
    /// takes every part as required.
    pub fn flat(&self) -> Vec<Segment> {
        let mut out = Builder::default();
        out.append(&self.segments, true);
        out.0
    }

    /// The arguments segment.
    pub fn arguments(&self) -> Option<&Arguments> {
        self.segments.iter().find_map(|s| match s {
            Segment::Arguments(a) => Some(a),
            _ => None,
        })
    }

    fn arguments_at(&self) -> Option<usize> {
        self.segments
            .iter()
            .position(|s| matches!(s, Segment::Arguments(_)))
    }
}

/// A tagged name's surroundings as a call's layout spells them (see
/// [`CallLayout::tagged_name`]); an absent marker is "".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TaggedName<'a> {
    /// An id's prefix and suffix markers, when the id precedes the name.
    pub id_before: Option<(&'a str, &'a str)>,
    /// The marker before the name.
    pub prefix: &'a str,
    /// A counter id's separator after the name (`:` of `NAME:0`).
    pub counter: Option<&'a str>,
    /// The marker that ends the name ([`CallLayout::name_end`]).
    pub suffix: &'a str,
    /// The name written again after the suffix: the marker after it.
    pub echo: Option<&'a str>,
    /// An id's prefix and suffix markers, when the id follows the name.
    pub id_after: Option<(&'a str, &'a str)>,
}

/// A marker's or a text's text ("" for other segments).
fn plain_ref(segment: &Segment) -> &str {
    match segment {
        Segment::Marker(t) | Segment::Text(t) => t,
        _ => "",
    }
}

/// A segment's exact text, when it has one.
fn plain(segment: &Segment) -> Option<String> {
    match segment {
        Segment::Marker(t) | Segment::Text(t) => Some(t.clone()),
        _ => None,
    }
}

/// The marker that ends a tagged name, when it also ends a section header
/// and holds attributes the template varies per call
/// (`" index="1"<|sep|>`): its first word ends the name, and any text on
/// the line up to the header's close follows, which the parser reads as
/// scaffolding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeaderAttributes<'a> {
    /// The marker up to its first word's end (`"`): what ends the name.
    pub word: &'a str,
    /// The header's close (`<|sep|>`).
    pub close: &'a str,
    /// The marker after the close (whitespace).
    pub after: &'a str,
}

impl<'a> HeaderAttributes<'a> {
    /// The attributes `suffix` holds when it ends one of `headers`.
    pub(crate) fn of(suffix: &'a str, headers: &'a [Header]) -> Option<HeaderAttributes<'a>> {
        let body = suffix.trim_end();
        let h = headers
            .iter()
            .find(|h| !h.close.is_empty() && body.ends_with(h.close.as_str()))?;
        let inner = &body[..body.len() - h.close.len()];
        let lead = inner.len() - inner.trim_start().len();
        let word_end = lead + inner[lead..].find(char::is_whitespace)?;
        Some(HeaderAttributes {
            word: &inner[..word_end],
            close: &h.close,
            after: &suffix[body.len()..],
        })
    }
}

/// A piece of a call's fixed text as a reader matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextPiece<'a> {
    /// Exact text.
    Exact(&'a str),
    /// Optional whitespace.
    Space,
}

/// A [`Segment::Text`] as a reader matches it. JSON scaffolding
/// (`{"name": "f", "arguments": `) is its tokens, with the whitespace JSON
/// allows between them, and on the side of a value or an optional member
/// (the arguments, an id): where the text begins after one (`,` `}` `]`)
/// or ends before one (`:` `,` `{`); a marker beside it keeps its own
/// whitespace, and a key after an optional member takes the whitespace the
/// member ends with. A closing parenthesis (after Python arguments) may
/// follow whitespace. Other text (a name, a counter's separator) is exact.
pub(crate) fn text_pieces(text: &str) -> Vec<TextPiece<'_>> {
    match text.chars().next() {
        Some('{' | '}' | '[' | ']' | ',' | '"' | ':') => {}
        Some(')') => return vec![TextPiece::Space, TextPiece::Exact(text)],
        _ => return vec![TextPiece::Exact(text)],
    }
    let mut out = Vec::new();
    if text.starts_with([',', '}', ']']) {
        out.push(TextPiece::Space);
    }
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = rest.trim_start();
            continue;
        }
        if matches!(out.last(), Some(TextPiece::Exact(_))) {
            out.push(TextPiece::Space);
        }
        let len = match c {
            '"' => json_string_len(rest),
            _ => c.len_utf8(),
        };
        out.push(TextPiece::Exact(&rest[..len]));
        rest = &rest[len..];
    }
    if text.trim_end().ends_with([':', ',', '{']) {
        out.push(TextPiece::Space);
    }
    out
}

/// The length of the JSON string `text` opens with (to its closing quote).
fn json_string_len(text: &str) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return i + 1,
            _ => {}
        }
    }
    text.len()
}

/// Segments under construction; adjacent text merges.
#[derive(Default)]
struct Builder(Vec<Segment>);

impl Builder {
    fn marker(&mut self, raw: &str) {
        if !raw.is_empty() {
            self.0.push(Segment::Marker(raw.to_string()));
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Segment::Text(prev)) => prev.push_str(text),
            _ => self.0.push(Segment::Text(text.to_string())),
        }
    }

    fn push(&mut self, segment: Segment) {
        self.0.push(segment);
    }

    /// Appends `segments`, text merging; `flat`: optional groups written out.
    fn append(&mut self, segments: &[Segment], flat: bool) {
        for segment in segments {
            match segment {
                Segment::Text(t) => self.text(t),
                Segment::Optional(inner) if flat => self.append(inner, true),
                other => self.push(other.clone()),
            }
        }
    }
}

/// The arguments of `format` as a segment.
fn arguments(format: &ToolFormat) -> Arguments {
    match &format.arguments {
        ArgumentsSlot::Json { as_string, .. } => Arguments::Json {
            as_string: *as_string,
        },
        ArgumentsSlot::Tagged(t) => Arguments::Tagged(Box::new(TaggedLayout::new(
            t,
            &format.call_end,
            &format.section_end,
        ))),
        ArgumentsSlot::Python { .. } => Arguments::Python,
    }
}

/// A name between markers, then the arguments; the index of the text the
/// name opens and of the marker that ends the name, if it has one.
fn tagged_call(
    out: &mut Builder,
    format: &ToolFormat,
    name: &str,
    prefix: &str,
    suffix: &str,
) -> (Option<usize>, Option<usize>) {
    tagged_id(out, format, true);
    out.marker(prefix);
    // Never text before: the name opens a segment of its own.
    let name_at = Some(out.0.len());
    out.text(name);
    if let Some(IdSlot::Counted { separator }) = &format.id {
        out.text(separator);
        out.push(Segment::Id(IdShape::Counter));
    }
    let name_end = (!suffix.is_empty()).then_some(out.0.len());
    out.marker(suffix);
    if let Some(after) = &format.name_echo {
        out.text(name);
        out.marker(after);
    }
    tagged_id(out, format, false);
    match &format.arguments {
        ArgumentsSlot::Json {
            path, as_string, ..
        } if !path.is_empty() => {
            let args = Segment::Arguments(Arguments::Json {
                as_string: *as_string,
            });
            json_object(out, vec![(path.as_slice(), Field::Value(args))]);
        }
        ArgumentsSlot::Python { .. } => {
            out.push(Segment::Arguments(Arguments::Python));
            out.text(")");
        }
        _ => out.push(Segment::Arguments(arguments(format))),
    }
    (name_at, name_end)
}

/// A tagged id, when it sits on this side of the name.
fn tagged_id(out: &mut Builder, format: &ToolFormat, before: bool) {
    if let Some(IdSlot::Tagged {
        prefix,
        suffix,
        before_name,
    }) = &format.id
    {
        if *before_name == before {
            out.push(Segment::Id(IdShape::Tagged {
                prefix: prefix.clone(),
                suffix: suffix.clone(),
            }));
        }
    }
}

/// A field at its key path below the current object.
type KeyedField<'p> = (&'p [String], Field);

/// What sits at a key path of a JSON call object.
enum Field {
    /// A JSON string of this text.
    Name(String),
    /// A member every call writes the same (`"type": "function"`).
    Constant(String),
    /// A segment (the arguments or the id).
    Value(Segment),
}

/// A call that is one JSON object holding the name and the arguments.
fn json_call(out: &mut Builder, format: &ToolFormat, name: &str) {
    let args = Segment::Arguments(arguments(format));
    if format.name == NameSlot::JsonKey {
        out.text(&format!("{{{}: ", quoted(name)));
        out.push(args);
        out.text("}");
        return;
    }
    let mut fields = Vec::new();
    if let NameSlot::JsonField { path } = &format.name {
        fields.push((path.as_slice(), Field::Name(name.to_string())));
    }
    // The arguments and the id keep their rendered places: before the name
    // (first), or after what came before them.
    if let ArgumentsSlot::Json {
        path, before_name, ..
    } = &format.arguments
    {
        place(
            &mut fields,
            *before_name,
            (path.as_slice(), Field::Value(args)),
        );
    }
    if let Some(IdSlot::JsonField { path, before_name }) = &format.id {
        let id = Field::Value(Segment::Id(IdShape::JsonString));
        place(&mut fields, *before_name, (path.as_slice(), id));
    }
    json_object(out, with_constants(fields, &format.json_constants));
}

/// The slot `fields` (in rendered order) with the constant members in
/// their rendered places among them.
fn with_constants<'p>(
    fields: Vec<KeyedField<'p>>,
    constants: &'p [JsonConstant],
) -> Vec<KeyedField<'p>> {
    let constant = |c: &'p JsonConstant| (c.path.as_slice(), Field::Constant(c.value.to_string()));
    let slots = fields.len();
    let mut out = Vec::new();
    for (i, field) in fields.into_iter().enumerate() {
        out.extend(constants.iter().filter(|c| c.after == i).map(constant));
        out.push(field);
    }
    out.extend(constants.iter().filter(|c| c.after >= slots).map(constant));
    out
}

/// `field` first among `fields`, or last.
fn place<'p>(fields: &mut Vec<KeyedField<'p>>, first: bool, field: KeyedField<'p>) {
    let at = if first { 0 } else { fields.len() };
    fields.insert(at, field);
}

/// A JSON object with `fields` at their key paths, in the order given;
/// fields sharing a first key nest into one object.
fn json_object(out: &mut Builder, fields: Vec<KeyedField>) {
    let mut groups: Vec<(&String, Vec<KeyedField>)> = Vec::new();
    for (path, field) in fields {
        let Some((key, rest)) = path.split_first() else {
            continue;
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push((rest, field)),
            None => groups.push((key, vec![(rest, field)])),
        }
    }
    out.text("{");
    let count = groups.len();
    // Whether the comma after the previous member is written with it.
    let mut comma_written = true;
    for (i, (key, mut members)) in groups.into_iter().enumerate() {
        // A member holding only the id may be left out, with its comma.
        let optional = members
            .iter()
            .all(|(_, f)| matches!(f, Field::Value(Segment::Id(_))));
        let mut member = Builder::default();
        if !comma_written {
            member.text(", ");
        }
        comma_written = false;
        member.text(&format!("{}: ", quoted(key)));
        if members.len() == 1 && members[0].0.is_empty() {
            match members.remove(0).1 {
                Field::Name(name) => member.text(&quoted(&name)),
                Field::Constant(json) => member.text(&json),
                Field::Value(segment) => member.push(segment),
            }
        } else {
            json_object(&mut member, members);
        }
        match optional {
            true if i == 0 && count > 1 => {
                member.text(", ");
                comma_written = true;
                out.push(Segment::Optional(member.0));
            }
            true => out.push(Segment::Optional(member.0)),
            false => out.append(&member.0, false),
        }
    }
    out.text("}");
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ToolClass;

    fn format(name: NameSlot, arguments: ArgumentsSlot, id: Option<IdSlot>) -> ToolFormat {
        ToolFormat {
            call_start: "<tool_call>\n".into(),
            call_end: "\n</tool_call>".into(),
            call_separator: "\n".into(),
            id,
            ..ToolFormat::bare(ToolClass::JsonNative, name, arguments)
        }
    }

    fn path(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn a_json_call_object_keeps_the_template_order() {
        let f = format(
            NameSlot::JsonField {
                path: path(&["tool_name"]),
            },
            ArgumentsSlot::Json {
                path: path(&["parameters"]),
                as_string: false,
                before_name: false,
            },
            Some(IdSlot::JsonField {
                path: path(&["tool_call_id"]),
                before_name: true,
            }),
        );
        let layout = CallLayout::new(&f, "get_weather");
        assert_eq!(
            layout.segments,
            [
                Segment::Marker("<tool_call>\n".into()),
                Segment::Text("{".into()),
                Segment::Optional(vec![
                    Segment::Text("\"tool_call_id\": ".into()),
                    Segment::Id(IdShape::JsonString),
                    Segment::Text(", ".into()),
                ]),
                Segment::Text("\"tool_name\": \"get_weather\", \"parameters\": ".into()),
                Segment::Arguments(Arguments::Json { as_string: false }),
                Segment::Text("}".into()),
                Segment::Marker("\n</tool_call>".into()),
            ]
        );
        assert_eq!(
            layout.flat(),
            [
                Segment::Marker("<tool_call>\n".into()),
                Segment::Text("{\"tool_call_id\": ".into()),
                Segment::Id(IdShape::JsonString),
                Segment::Text(", \"tool_name\": \"get_weather\", \"parameters\": ".into()),
                Segment::Arguments(Arguments::Json { as_string: false }),
                Segment::Text("}".into()),
                Segment::Marker("\n</tool_call>".into()),
            ]
        );
        assert_eq!(layout.head_text(), None, "an id is no fixed text");
    }

    #[test]
    fn an_id_written_last_is_optional_with_the_comma_before_it() {
        let f = format(
            NameSlot::JsonField {
                path: path(&["name"]),
            },
            ArgumentsSlot::Json {
                path: path(&["arguments"]),
                as_string: false,
                before_name: false,
            },
            Some(IdSlot::JsonField {
                path: path(&["id"]),
                before_name: false,
            }),
        );
        let layout = CallLayout::new(&f, "f");
        assert_eq!(
            layout.segments[3..6],
            [
                Segment::Optional(vec![
                    Segment::Text(", \"id\": ".into()),
                    Segment::Id(IdShape::JsonString),
                ]),
                Segment::Text("}".into()),
                Segment::Marker("\n</tool_call>".into()),
            ]
        );
    }

    #[test]
    fn json_text_is_tokens_with_space_beside_values() {
        use TextPiece::{Exact, Space};
        assert_eq!(
            text_pieces("{\"name\": \"a\\\"b\", \"arguments\": "),
            [
                Exact("{"),
                Space,
                Exact("\"name\""),
                Space,
                Exact(":"),
                Space,
                Exact("\"a\\\"b\""),
                Space,
                Exact(","),
                Space,
                Exact("\"arguments\""),
                Space,
                Exact(":"),
                Space,
            ]
        );
        assert_eq!(text_pieces("}}"), [Space, Exact("}"), Space, Exact("}")]);
        assert_eq!(text_pieces(")"), [Space, Exact(")")]);
        assert_eq!(text_pieces("get_weather:"), [Exact("get_weather:")]);
    }

    #[test]
    fn a_suffix_ending_a_header_holds_attributes() {
        let headers = [Header {
            open: "<|open|>".into(),
            close: "<|sep|>".into(),
        }];
        let suffix = "\" index=\"1\"<|sep|>\n";
        assert_eq!(
            HeaderAttributes::of(suffix, &headers),
            Some(HeaderAttributes {
                word: "\"",
                close: "<|sep|>",
                after: "\n",
            })
        );
        assert_eq!(
            HeaderAttributes::of("<|sep|>", &headers),
            None,
            "no attributes"
        );
        assert_eq!(HeaderAttributes::of("\" index=\"1\">", &headers), None);
    }

    #[test]
    fn nested_json_fields_share_one_object() {
        let f = format(
            NameSlot::JsonField {
                path: path(&["function", "name"]),
            },
            ArgumentsSlot::Json {
                path: path(&["function", "arguments"]),
                as_string: false,
                before_name: false,
            },
            None,
        );
        let layout = CallLayout::new(&f, "f");
        assert_eq!(
            layout.head_text().unwrap(),
            "<tool_call>\n{\"function\": {\"name\": \"f\", \"arguments\": "
        );
        assert_eq!(layout.tail_text().unwrap(), "}}\n</tool_call>");
    }

    #[test]
    fn a_tagged_name_with_a_counter_id() {
        let mut f = format(
            NameSlot::Tagged {
                prefix: "functions.".into(),
                suffix: "<|tool_call_argument_begin|>".into(),
            },
            ArgumentsSlot::Json {
                path: vec![],
                as_string: false,
                before_name: false,
            },
            Some(IdSlot::Counted {
                separator: ":".into(),
            }),
        );
        f.call_start = "<|tool_call_begin|>".into();
        f.call_end = "<|tool_call_end|>".into();
        let layout = CallLayout::new(&f, "f");
        assert_eq!(
            layout.segments,
            [
                Segment::Marker("<|tool_call_begin|>".into()),
                Segment::Marker("functions.".into()),
                Segment::Text("f:".into()),
                Segment::Id(IdShape::Counter),
                Segment::Marker("<|tool_call_argument_begin|>".into()),
                Segment::Arguments(Arguments::Json { as_string: false }),
                Segment::Marker("<|tool_call_end|>".into()),
            ]
        );
        assert_eq!(layout.name_end, Some(4), "the marker after the counter");
    }

    #[test]
    fn a_tagged_name_reads_back_its_parts() {
        let mut f = format(
            NameSlot::Tagged {
                prefix: "[TOOL_CALLS]".into(),
                suffix: String::new(),
            },
            ArgumentsSlot::Json {
                path: vec![],
                as_string: false,
                before_name: false,
            },
            Some(IdSlot::Tagged {
                prefix: "[CALL_ID]".into(),
                suffix: "[ARGS]".into(),
                before_name: false,
            }),
        );
        f.call_start = String::new();
        f.call_end = "</s>".into();
        let layout = CallLayout::new(&f, "NAME");
        assert_eq!((layout.start(), layout.end()), ("", "</s>"));
        assert_eq!(
            layout.tagged_name("NAME"),
            Some(TaggedName {
                prefix: "[TOOL_CALLS]",
                id_after: Some(("[CALL_ID]", "[ARGS]")),
                ..TaggedName::default()
            })
        );
        f.name = NameSlot::Tagged {
            prefix: "functions.".into(),
            suffix: "<|sep|>".into(),
        };
        f.id = Some(IdSlot::Counted {
            separator: ":".into(),
        });
        f.name_echo = Some("\n".into());
        f.call_start = "<|call|>".into();
        let layout = CallLayout::new(&f, "NAME");
        assert_eq!(layout.start(), "<|call|>");
        assert_eq!(
            layout.tagged_name("NAME"),
            Some(TaggedName {
                prefix: "functions.",
                counter: Some(":"),
                suffix: "<|sep|>",
                echo: Some("\n"),
                ..TaggedName::default()
            })
        );
        f.name = NameSlot::JsonKey;
        assert_eq!(CallLayout::new(&f, "NAME").tagged_name("NAME"), None);
    }

    #[test]
    fn a_python_call_closes_its_parenthesis() {
        let mut f = format(
            NameSlot::Tagged {
                prefix: String::new(),
                suffix: "(".into(),
            },
            ArgumentsSlot::Python {
                raw_strings: false,
                bare_strings: false,
            },
            None,
        );
        f.call_start = String::new();
        f.call_end = String::new();
        let layout = CallLayout::new(&f, "f");
        assert_eq!(layout.head_text().unwrap(), "f(");
        assert_eq!(layout.tail_text().unwrap(), ")");
        assert_eq!(layout.arguments(), Some(&Arguments::Python));
    }

    #[test]
    fn a_name_as_key() {
        let f = format(
            NameSlot::JsonKey,
            ArgumentsSlot::Json {
                path: vec![],
                as_string: false,
                before_name: false,
            },
            None,
        );
        let layout = CallLayout::new(&f, "f");
        assert_eq!(layout.head_text().unwrap(), "<tool_call>\n{\"f\": ");
        assert_eq!(layout.tail_text().unwrap(), "}\n</tool_call>");
    }
}
