//! Lark export for llguidance: the [`Protocol`] as one Lark grammar over the
//! whole output, with JSON arguments as llguidance's `%json { schema }`.
//!
//! The grammar is `start: REASONING BODY`:
//!
//! - reasoning: a block the output starts inside is text up to the end
//!   marker, then required; one the model may open is an optional
//!   `<think> … </think>` group; none when the prompt closed it;
//! - body, `tool_choice` auto: free text, or free text up to the tool
//!   section's first marker (a *lazy* lexeme, which ends at the first
//!   occurrence of that marker) followed by the rest of the section, every
//!   call in the template's own format; a format with no marker before its
//!   calls (a bare JSON object, a bare Python call) may only open the body;
//! - body, `required` or a named function: the section alone (after an
//!   optional empty content block); `none`: free text; a response schema:
//!   the answer as `%json` (or a call, when tools are given).
//!
//! A call is laid out by [`CallLayout`]; markers keep their cores exact and
//! their whitespace flexible (`WS?`), JSON punctuation around the arguments
//! takes whitespace as JSON does, tagged arguments are one rule per declared
//! property (required ones mandatory, in schema order: llguidance's `%json`
//! fixes property order too), string values raw up to the closing marker,
//! others `%json`; Python keyword values are Python literals.
//!
//! llguidance's lexer is greedy with no backtracking: of two lexemes that
//! may start at one place, the longer match wins unless one is lazy. Free
//! text is the only lexeme that could overlap a structural one, so it
//! excludes what the structure begins with there (the reasoning opening, a
//! marker-less call's first word), and markers are found by lazy lexemes.
//!
//! Special tokens: llguidance reads a marker that is a *special token* of
//! the model's tokenizer only as the token (`<|im_end|>` in Lark syntax);
//! the same bytes as text would never match it. Which markers are special
//! tokens is a fact of the tokenizer, not of the template, so by default
//! every marker is text (right for byte-level tokenizers and for markers
//! the tokenizer spells in ordinary pieces), and a server that knows its
//! tokenizer lists the special ones in [`LarkOptions::special_tokens`].
//!
//! Invariants: reads only the Protocol; deterministic byte for byte (rules
//! in construction order, names from hints); never panics; a schema
//! llguidance cannot honour is compiled leniently (unsupported keywords
//! ignored) with a warning, never a failed request; the `%json` schemas
//! grow with the request, not with the paths through its schemas: merged
//! `allOf`s and repeated definitions are bounded (`json_schema::Allowance`,
//! [`MAX_JSON_TEXT`]), past which a schema keeps only its type, with a
//! warning.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::markers::{split, Piece};
use super::schema::{member_starts, tail_blocks, Block, Member};
use super::tools::{closed, is_structured};
use crate::analysis::{Header, NameSlot, TaggedArguments, ToolFormat};
use crate::error::Result;
use crate::json_schema::{
    loosened, map_subschemas, portable, required_names, resolved, too_large, Allowance, MAX_DEPTH,
};
use crate::json_schema::{object_schema, properties, string_kind, StringKind};
use crate::protocol::{
    text_pieces, Arguments, CallLayout, HeaderAttributes, IdShape, Notation, Protocol, Segment,
    TextPiece, Tool, ToolSection,
};

/// A Lark grammar for llguidance (`docs/cli.md`'s shape: `{"lark": ..., "preserved_tokens": [...]}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lark {
    /// The grammar text, `start` first.
    pub lark: String,
    /// Tokens a tokenizer must keep whole for the markers to be seen.
    pub preserved_tokens: Vec<String>,
    /// What could only be expressed loosely, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How markers are written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LarkOptions {
    /// Marker cores that are special tokens of the serving tokenizer:
    /// written in llguidance's token syntax (`<|tool_call|>`), which only
    /// names of the form `<...>` have; others stay text, with a warning.
    pub special_tokens: Vec<String>,
}

setters!(LarkOptions {
    /// Sets the marker cores that are special tokens of the serving tokenizer.
    with_special_tokens => special_tokens: Vec<String>,
});

/// The Lark grammar of `protocol`, every marker as text. Errors (kind
/// `input`) when calls are required but cannot be written.
pub fn lark(protocol: &Protocol) -> Result<Lark> {
    lark_with(protocol, &LarkOptions::default())
}

/// The Lark grammar of `protocol`, with `options`.
pub fn lark_with(protocol: &Protocol, options: &LarkOptions) -> Result<Lark> {
    protocol.check_servable()?;
    let mut w = Writer::new(options, protocol.warnings.clone());
    let body = body(&mut w, protocol, &think_openings(protocol));
    let start = match reasoning(&mut w, protocol) {
        Some(r) => format!("{r} {body}"),
        None => body,
    };
    w.define_first("start", &start);
    let lark = w.render();
    protocol.note_strict(&mut w.warnings);
    Ok(Lark {
        lark,
        preserved_tokens: protocol.preserved_tokens.clone(),
        warnings: w.warnings,
    })
}

/// The cores an optional reasoning block opens with: free text may not
/// begin with them (else the greedy text lexeme would swallow the block).
fn think_openings(protocol: &Protocol) -> Vec<String> {
    let Some(r) = protocol.reasoning.as_ref().filter(|r| !r.opened) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Seq::from_marker(&r.start).first_lit().into_iter().collect();
    if r.bare_end {
        out.extend(Seq::from_marker(&r.end).first_lit());
    }
    out
}

/// The reasoning part of `start`: a block the output starts inside is
/// required; one the model may open is optional.
fn reasoning(w: &mut Writer, protocol: &Protocol) -> Option<String> {
    let r = protocol.reasoning.as_ref()?;
    if r.opened && r.start.trim().is_empty() {
        // Delimiter reasoning has no opening to tell a block from content:
        // an output without the delimiter is all content. The block's lazy
        // lexeme wins wherever the delimiter comes first; it may not begin
        // with what the body's structure begins with.
        let mut block = Seq::default();
        let end = Seq::from_marker(&r.end);
        let core = end.first_lit()?;
        let openings = w.openings.clone();
        block
            .expr(w.head(&core, &openings, "reasoning_until"))
            .extend(end.after_first_lit())
            .ws();
        return Some(format!("{}?", w.rule("reasoning", &block.render(w))));
    }
    let mut block = w.until(&r.end, "reasoning");
    block.ws();
    if r.opened {
        return Some(w.rule("reasoning", &block.render(w)));
    }
    let open = w.opening(&r.start, "THINK_OPEN");
    let opened = format!("{open} {}", block.render(w));
    let body = if r.bare_end {
        // The template closes empty blocks it never opened: the end alone.
        let end = w.opening(&r.end, "THINK_END");
        format!("{opened} | {end} WS?")
    } else {
        opened
    };
    Some(format!("{}?", w.rule("reasoning", &body)))
}

/// What follows reasoning: free text, calls, or the answer.
fn body(w: &mut Writer, protocol: &Protocol, exclude: &[String]) -> String {
    let calls = protocol.tools.as_ref().filter(|s| !s.tools.is_empty());
    let answer = protocol
        .response_schema
        .as_ref()
        .map(|s| answer(w, protocol, s));
    match (calls, answer) {
        (None, None) => {
            let text = w.text(exclude);
            format!("{text}?")
        }
        (Some(section), None) if !section.required => auto_body(w, section, protocol, exclude),
        (Some(section), answer) => {
            let sections = sections(w, section, protocol.headers());
            let empty = empty_content(w, protocol);
            let calls = format!("{empty}{sections}");
            let body = match answer {
                Some(a) => format!("( {calls} | {a} )"),
                None => calls,
            };
            w.rule("body", &format!("{body} WS?"))
        }
        (None, Some(a)) => w.rule("body", &format!("WS? {a} WS?")),
    }
}

/// `auto`: free text, or text up to a section's first marker and the rest
/// of the section; marker-less formats only at the start of the body.
///
/// A content wrapper that opens with a section's trigger (muse-glimmer's
/// ` to=user<|message|>` beside its calls' `to=NAME<|message|>`) is the
/// trigger then the wrapper's rest: content follows, or text up to a
/// section.
fn auto_body(
    w: &mut Writer,
    section: &ToolSection,
    protocol: &Protocol,
    exclude: &[String],
) -> String {
    let headers = protocol.headers();
    let mut exclude = exclude.to_vec();
    let mut options = Vec::new();
    let mut bare = Vec::new();
    for format in &section.formats {
        let parallel = section.parallel && format.parallel;
        let mut s = SectionWriter {
            w: &mut *w,
            format,
            tools: &section.tools,
            parallel,
            headers,
        };
        match s.triggered() {
            Some((trigger, tail)) => options.push((trigger, tail)),
            None => {
                let (opening, whole) = s.whole();
                exclude.extend(opening);
                bare.push(whole);
            }
        }
    }
    let text = w.text(&exclude);
    let mut alts = vec![format!("{text}?")];
    let wrapper = protocol.content.start.trim();
    for (trigger, tail) in options {
        let head = w.head(&trigger, &exclude, "head");
        alts.push(format!("{head} {tail} WS?"));
        if let Some(rest) = wrapper.strip_prefix(&trigger).filter(|r| !r.is_empty()) {
            let rest = Seq::from_marker(rest).render(w);
            alts.push(format!("{head} {rest} ( {text}? | {head} {tail} WS? )"));
        }
    }
    for whole in bare {
        alts.push(format!("WS? {whole} WS?"));
    }
    w.rule("body", &alts.join(" | "))
}

/// Every format's whole section, as alternatives; the whitespace before a
/// section's first marker is folded into one terminal with it, and the
/// marker recorded as an opening of the body.
fn sections(w: &mut Writer, section: &ToolSection, headers: &[Header]) -> String {
    let mut alts = Vec::new();
    for format in &section.formats {
        let parallel = section.parallel && format.parallel;
        let mut s = SectionWriter {
            w: &mut *w,
            format,
            tools: &section.tools,
            parallel,
            headers,
        };
        match s.triggered() {
            Some((trigger, tail)) => {
                let open = w.opening(&trigger, "SECTION_OPEN");
                w.openings.push(trigger);
                alts.push(format!("{open} {tail}"));
            }
            None => alts.push(format!("WS? {}", s.whole().1)),
        }
    }
    match alts.as_slice() {
        [one] => one.clone(),
        many => format!("( {} )", many.join(" | ")),
    }
}

/// An optional empty content block before forced calls, as templates with
/// a content wrapper write it (`<|open|>response<|sep|><|close|>…`).
fn empty_content(w: &mut Writer, protocol: &Protocol) -> String {
    let (start, end) = (&protocol.content.start, &protocol.content.end);
    if start.trim().is_empty() || end.trim().is_empty() {
        return String::new();
    }
    let mut block = Seq::default();
    block.marker(start).ws().marker(end).ws();
    let rule = w.rule("empty_content", &block.render(w));
    format!("{rule}? ")
}

/// The JSON answer: the content wrapper's opening (optional), the value,
/// the wrapper's closing.
fn answer(w: &mut Writer, protocol: &Protocol, schema: &Value) -> String {
    let value = w.json(schema, schema, "answer");
    let mut p = Seq::default();
    if !protocol.content.start.trim().is_empty() {
        let mut open = Seq::default();
        open.marker(&protocol.content.start);
        p.expr(format!("( {} )?", open.render(w)));
        p.ws();
    }
    p.expr(value).ws();
    p.marker(&protocol.content.end);
    w.rule("answer", &p.render(w))
}

/// Writes one format's section.
struct SectionWriter<'w, 'o> {
    w: &'w mut Writer<'o>,
    format: &'w ToolFormat,
    tools: &'w [Tool],
    parallel: bool,
    /// The turn's section headers (a name's suffix may end one).
    headers: &'w [Header],
}

impl SectionWriter<'_, '_> {
    /// The section as one expression, and the literal it opens with (what
    /// free text may not begin with when the format has no marker).
    fn whole(&mut self) -> (Option<String>, String) {
        let calls: Vec<Seq> = self.tools.iter().map(|t| self.call(t)).collect();
        let mut head = Seq::default();
        head.marker(&self.format.section_start);
        let opening = head
            .first_lit()
            .or_else(|| calls.iter().find_map(Seq::first_lit));
        let first = self.alternatives("call", &calls);
        head.expr(first.clone());
        (opening, self.finish(head, &first))
    }

    /// The section split at its first marker core: the trigger literal and
    /// the rest. `None` when the section opens with no marker shared by
    /// every call (a bare JSON object or Python call, an optional id).
    fn triggered(&mut self) -> Option<(String, String)> {
        let calls: Vec<Seq> = self.tools.iter().map(|t| self.call(t)).collect();
        let start = Seq::from_marker(&self.format.section_start);
        if start.first_lit().is_some() {
            let n = self.trigger_len(&start.lead_marks(), usize::MAX);
            let trigger = start.lead_marks()[..n].concat();
            let full = self.alternatives("call", &calls);
            let mut rest = start.strip_marks(n);
            rest.expr(full.clone());
            return Some((trigger, self.finish(rest, &full)));
        }
        let tagged = matches!(&self.format.name, NameSlot::Tagged { prefix, .. } if !prefix.trim().is_empty());
        if self.format.call_start.trim().is_empty() && !tagged {
            return None;
        }
        // The cores every call opens with, back to back: the call marker and
        // fixed words after it (`<|channel|>` `commentary to=functions.`),
        // so that a marker other parts share (`<|channel|>`) is no trigger.
        let leads: Vec<Vec<String>> = calls.iter().map(Seq::lead_marks).collect();
        let shortest = leads.iter().map(Vec::len).min()?;
        let common = (0..shortest)
            .take_while(|&i| leads.iter().all(|l| l[i] == leads[0][i]))
            .count();
        let n = self.trigger_len(&leads[0], common);
        if n == 0 {
            return None;
        }
        let trigger = leads[0][..n].concat();
        let stripped: Vec<Seq> = calls.iter().map(|c| c.strip_marks(n)).collect();
        let first = self.alternatives("call_rest", &stripped);
        // A whole call is the trigger's cores then the rest's rule (not the
        // call written twice).
        let full: Vec<Seq> = stripped
            .iter()
            .zip(self.tools)
            .map(|(rest, t)| {
                let mut call = Seq::default();
                leads[0][..n].iter().for_each(|m| {
                    call.mark(m);
                });
                let text = rest.render(self.w);
                call.expr(self.w.rule(&format!("call_rest_{}", t.name), &text));
                call
            })
            .collect();
        let full = self.alternatives("call", &full);
        let mut rest = Seq::default();
        rest.expr(first);
        Some((trigger, self.finish(rest, &full)))
    }

    /// How many of the leading cores `marks` make the trigger (at most
    /// `max`): all, unless a special token ends it (a token cannot share a
    /// lexeme with text).
    fn trigger_len(&self, marks: &[String], max: usize) -> usize {
        let max = max.min(marks.len());
        match marks.iter().position(|m| self.w.special(m)) {
            Some(0) => 1.min(max),
            Some(at) => at.min(max),
            None => max,
        }
    }

    /// `head`, more calls when parallel, and the section's end.
    fn finish(&mut self, mut head: Seq, call: &str) -> String {
        if self.parallel {
            let mut more = Seq::default();
            more.ws()
                .marker(&self.format.call_separator)
                .ws()
                .expr(call.to_string());
            head.expr(format!("( {} )*", more.render(self.w)));
        }
        let mut end = Seq::default();
        end.marker(&self.format.section_end);
        if !end.is_empty() {
            match self.format.section_end_optional {
                true => head.expr(format!("( {} )?", end.render(self.w))),
                false => head.extend(end),
            };
        }
        let text = head.render(self.w);
        self.w.rule("section", &text)
    }

    /// One rule per call, as alternatives.
    fn alternatives(&mut self, hint: &str, calls: &[Seq]) -> String {
        let names: Vec<String> = calls
            .iter()
            .zip(self.tools)
            .map(|(c, t)| {
                let text = c.render(self.w);
                self.w.rule(&format!("{hint}_{}", t.name), &text)
            })
            .collect();
        let text = names.join(" | ");
        self.w.rule(&format!("{hint}s"), &text)
    }

    /// One tool's call, from its layout.
    fn call(&mut self, tool: &Tool) -> Seq {
        let layout = CallLayout::new(self.format, &tool.name);
        let mut p = Seq::default();
        self.segments(&mut p, tool, &layout.segments, layout.name_end);
        p
    }

    /// Segments of a call; `name_end` indexes the marker that ends a
    /// tagged name. An optional group is written as required: the
    /// template's own calls always hold it.
    fn segments(
        &mut self,
        p: &mut Seq,
        tool: &Tool,
        segments: &[Segment],
        name_end: Option<usize>,
    ) {
        for (i, segment) in segments.iter().enumerate() {
            match segment {
                Segment::Marker(raw) if name_end == Some(i) => self.name_suffix(p, raw),
                Segment::Marker(raw) => {
                    p.marker(raw);
                }
                Segment::Text(text) => p.text(text),
                Segment::Id(shape) => self.id(p, shape),
                Segment::Arguments(args) => self.arguments(p, tool, args),
                Segment::Optional(inner) => self.segments(p, tool, inner, None),
            }
        }
    }

    /// The marker after a tagged name; one that ends a section header
    /// keeps its first word and takes any text on the line up to the
    /// header's close (see [`HeaderAttributes`]).
    fn name_suffix(&mut self, p: &mut Seq, raw: &str) {
        let Some(h) = HeaderAttributes::of(raw, self.headers) else {
            p.marker(raw);
            return;
        };
        let rest = self.w.lazy(
            "header_rest",
            &format!("/[^\\n]*{}/", regex_literal(h.close)),
        );
        p.marker(h.word).expr(rest).ws();
    }

    fn id(&mut self, p: &mut Seq, shape: &IdShape) {
        match shape {
            IdShape::JsonString => p.expr(self.w.terminal("JSON_STRING", JSON_STRING)),
            IdShape::Counter => p.expr(self.w.terminal("COUNTER", "/[0-9]+/")),
            IdShape::Tagged { prefix, suffix } => {
                let mut id = Seq::default();
                id.marker(prefix);
                id.extend(self.w.until(suffix, "id"));
                p.expr(format!("( {} )?", id.render(self.w)))
            }
        };
    }

    fn arguments(&mut self, p: &mut Seq, tool: &Tool, args: &Arguments) {
        match args {
            Arguments::Json { as_string: false } => {
                let schema = object_schema(&tool.parameters);
                let rule = self
                    .w
                    .json(&schema, &tool.parameters, &format!("args_{}", tool.name));
                p.expr(rule);
            }
            // JSON text inside a JSON string: the schema cannot be followed
            // through the escaping, so any string (as the GBNF export does).
            Arguments::Json { as_string: true } => {
                p.expr(self.w.terminal("JSON_STRING", JSON_STRING));
            }
            Arguments::Tagged(g) => {
                let args = self.tagged(tool, g);
                p.extend(args);
            }
            Arguments::Python => {
                let args = self.python(tool);
                p.expr(args).ws();
            }
        }
    }

    /// Marker-wrapped arguments: declared properties in schema order, or any
    /// keys with raw values when none are declared.
    fn tagged(&mut self, tool: &Tool, g: &TaggedArguments) -> Seq {
        if g.elements.is_some() {
            self.w.warn(format!(
                "{}: nested-element values are read as JSON in the Lark export",
                tool.name
            ));
        }
        let schema = object_schema(&tool.parameters);
        let props = properties(&schema);
        let required = schema.as_object().map(required_names).unwrap_or_default();
        let mut sep = Seq::default();
        sep.ws().marker(&g.separator).ws();
        let sep = sep.render(self.w);
        let mut p = Seq::default();
        if props.is_empty() && !closed(&schema) {
            let any = self.any_tagged(g);
            p.expr(format!("( {any} ( {sep} {any} )* )?"));
        } else {
            let list: Vec<Member> = props
                .iter()
                .map(|(key, prop)| {
                    let mut m = Seq::default();
                    m.marker(&g.name_prefix).lit(key).marker(&g.name_suffix);
                    let value = self.tagged_value(tool, key, prop, g);
                    m.expr(value);
                    let text = m.render(self.w);
                    Member {
                        expr: self.w.rule(&format!("arg_{}_{key}", tool.name), &text),
                        required: required.contains(key),
                    }
                })
                .collect();
            let members = members(self.w, &list, &sep, &format!("args_{}", tool.name));
            p.expr(members);
        }
        p.marker(&g.end);
        p
    }

    /// A tagged value: raw text up to the closing marker when it may be a
    /// string, `%json` then the closing marker when it may be anything else.
    fn tagged_value(
        &mut self,
        tool: &Tool,
        key: &str,
        prop: &Value,
        g: &TaggedArguments,
    ) -> String {
        let close = g.close_for(key);
        let kind = string_kind(prop, &tool.parameters);
        let mut options = Vec::new();
        if g.raw_strings && kind != StringKind::Never {
            let mut p = Seq::default();
            p.marker(&g.value_prefix);
            if let StringKind::Enum(values) = &kind {
                let values: Vec<String> = values.iter().map(|v| quote(v)).collect();
                p.expr(format!("( {} )", values.join(" | "))).marker(&close);
            } else {
                p.extend(self.w.until(&close, "raw"));
                self.w
                    .unchecked_string(&tool.name, key, prop, "a raw string value");
            }
            options.push(p.render(self.w));
        }
        if !(g.raw_strings && kind.always()) {
            let mut p = Seq::default();
            match g.typed_word() {
                // The type word the probes did not render (`object`) fits too.
                Some((before, after)) => {
                    p.marker(before)
                        .expr(self.w.terminal("TYPE_WORD", "/[a-zA-Z0-9_]+/"))
                        .marker(after);
                }
                None => {
                    p.marker(g.typed_value_prefix.as_deref().unwrap_or(&g.value_prefix));
                }
            }
            let json = self.w.json(
                prop,
                &tool.parameters,
                &format!("value_{}_{key}", tool.name),
            );
            // Templates print values with `tojson` or with Python's `str()`;
            // a template with a value notation nests objects and lists in it
            // (their members not typed by the schema, as in the GBNF export).
            let py = self.w.python_typed(prop, &tool.parameters);
            let nested = Notation::of(g).filter(|_| is_structured(prop, &tool.parameters));
            let value = match nested {
                Some(n) => format!("( {json} | {py} | {} )", self.w.notation_value(&n)),
                None => format!("( {json} | {py} )"),
            };
            p.expr(value);
            // A bare typed value (no marker before it, `days:3`) has none
            // after it either; the close is optional, as in the GBNF export.
            let bare = g
                .typed_value_prefix
                .as_deref()
                .is_some_and(|t| t.trim().is_empty());
            match bare {
                true => {
                    let closed = Seq::from_marker(&close);
                    if !closed.is_empty() {
                        p.expr(format!("( {} )?", closed.render(self.w)));
                    }
                }
                false => {
                    p.marker(&close);
                }
            }
            options.push(p.render(self.w));
        }
        format!("( {} )", options.join(" | "))
    }

    /// An argument of any key with a raw value (tools without properties).
    fn any_tagged(&mut self, g: &TaggedArguments) -> String {
        let mut m = Seq::default();
        m.marker(&g.name_prefix);
        m.extend(self.w.until(&g.name_suffix, "key"));
        m.marker(&g.value_prefix);
        m.extend(self.w.until(&g.value_suffix, "raw"));
        if let Some(after) = &g.named_close {
            m.extend(self.w.until(after, "key"));
        }
        let text = m.render(self.w);
        self.w.rule("any_arg", &text)
    }

    /// Python keyword arguments, `k=v` joined by `,`.
    fn python(&mut self, tool: &Tool) -> String {
        let schema = object_schema(&tool.parameters);
        let props = properties(&schema);
        let required = schema.as_object().map(required_names).unwrap_or_default();
        let sep = "WS? \",\" WS?";
        let body = if props.is_empty() && !closed(&schema) {
            let name = self.w.terminal("PY_NAME", "/[a-zA-Z_][a-zA-Z0-9_]*/");
            let value = self.w.python_value();
            let one = format!("{name} WS? \"=\" WS? {value}");
            format!("( {one} ( {sep} {one} )* )?")
        } else {
            let list: Vec<Member> = props
                .iter()
                .map(|(k, s)| {
                    self.w
                        .unchecked_string(&tool.name, k, s, "a Python literal");
                    let value = self.w.python_typed(s, &tool.parameters);
                    Member {
                        expr: format!("{} WS? \"=\" WS? {value}", quote(k)),
                        required: required.contains(k),
                    }
                })
                .collect();
            members(self.w, &list, sep, &format!("kwargs_{}", tool.name))
        };
        self.w.rule(&format!("kwargs_{}", tool.name), &body)
    }
}

/// Members in order with `sep` between: required ones must appear, optional
/// ones may be left out; the expression matches nothing extra. As in the
/// GBNF export (`schema::members`), a long list names the members after
/// each one as a few rules (`hint_tail`) rather than spelling them out per
/// option.
fn members(w: &mut Writer, list: &[Member], sep: &str, hint: &str) -> String {
    let after_sep = |m: &Member| match m.required {
        true => format!(" {sep} {}", m.expr),
        false => format!(" ( {sep} {} )?", m.expr),
    };
    let (starts, spelled) = member_starts(list);
    let tails: Vec<String> = match spelled {
        true => (1..=starts)
            .map(|from| list[from..].iter().map(after_sep).collect())
            .collect(),
        false => tail_blocks(list.len(), starts, &mut |part| match part {
            Block::Member(i) => after_sep(&list[i]).trim_start().to_string(),
            Block::Halves(a, b) => w.rule(&format!("{hint}_tail"), &format!("{a} {b}")),
        })
        .into_iter()
        .map(|blocks| blocks.iter().map(|b| format!(" {b}")).collect())
        .collect(),
    };
    let options: Vec<String> = list[..starts]
        .iter()
        .zip(tails)
        .map(|(m, tail)| format!("{}{tail}", m.expr))
        .collect();
    match list[..starts].last() {
        None => String::new(),
        Some(m) if m.required => format!("( {} )", options.join(" | ")),
        Some(_) => format!("( {} )?", options.join(" | ")),
    }
}

/// A JSON string (llguidance's own definition).
const JSON_STRING: &str = r#"/"(\\([\"\\\/bfnrt]|u[a-fA-F0-9]{4})|[^\"\\\x00-\x1F\x7F])*"/"#;

/// Python literals: strings in either quote, numbers, constants, lists, dicts.
const PY_RULES: &[(&str, &str)] = &[
    (
        "PY_STRING",
        r#"/"(\\(?s:.)|[^"\\])*"|'(\\(?s:.)|[^'\\])*'/"#,
    ),
    (
        "PY_NUMBER",
        r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/",
    ),
    ("PY_INT", r"/-?(0|[1-9][0-9]*)/"),
    ("PY_BOOL", r"/True|False|true|false/"),
    ("PY_NONE", r"/None|null/"),
];

/// One item of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A marker core (one lexeme; a special token when listed as one).
    Mark(String),
    /// Exact text of a call (a name, JSON punctuation): one lexeme.
    Lit(String),
    /// Flexible whitespace.
    Ws,
    /// A Lark expression.
    Expr(String),
}

/// A sequence under construction; adjacent `Ws` collapse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seq(Vec<Item>);

impl Seq {
    fn from_marker(raw: &str) -> Seq {
        let mut s = Seq::default();
        s.marker(raw);
        s
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn ws(&mut self) -> &mut Self {
        if self.0.last() != Some(&Item::Ws) {
            self.0.push(Item::Ws);
        }
        self
    }

    fn lit(&mut self, text: &str) -> &mut Self {
        if !text.is_empty() {
            self.0.push(Item::Lit(text.to_owned()));
        }
        self
    }

    fn mark(&mut self, core: &str) -> &mut Self {
        if !core.is_empty() {
            self.0.push(Item::Mark(core.to_owned()));
        }
        self
    }

    fn expr(&mut self, e: String) -> &mut Self {
        if !e.is_empty() {
            self.0.push(Item::Expr(e));
        }
        self
    }

    fn extend(&mut self, other: Seq) -> &mut Self {
        for item in other.0 {
            match item {
                Item::Ws => self.ws(),
                Item::Mark(t) => self.mark(&t),
                Item::Lit(t) => self.lit(&t),
                Item::Expr(e) => self.expr(e),
            };
        }
        self
    }

    /// A raw marker: cores exact, whitespace flexible (as `markers::split`).
    fn marker(&mut self, raw: &str) -> &mut Self {
        for piece in split(raw) {
            match piece {
                Piece::Ws => self.ws(),
                Piece::Lit(t) => self.mark(&t),
                Piece::Expr(e) => self.expr(e),
            };
        }
        self
    }

    /// Fixed text of a call, as [`text_pieces`] reads it.
    fn text(&mut self, text: &str) {
        for piece in text_pieces(text) {
            match piece {
                TextPiece::Exact(t) => self.lit(t),
                TextPiece::Space => self.ws(),
            };
        }
    }

    /// The first marker core or text.
    fn first_lit(&self) -> Option<String> {
        self.0.iter().find_map(|i| match i {
            Item::Mark(t) | Item::Lit(t) => Some(t.clone()),
            _ => None,
        })
    }

    /// The items after the first core or text (leading whitespace dropped with it).
    fn after_first_lit(&self) -> Seq {
        let at = self
            .0
            .iter()
            .position(|i| matches!(i, Item::Mark(_) | Item::Lit(_)))
            .map_or(self.0.len(), |i| i + 1);
        Seq(self.0[at..].to_vec())
    }

    /// The marker cores the sequence opens with, back to back (leading
    /// whitespace aside).
    fn lead_marks(&self) -> Vec<String> {
        let items = self.0.iter().skip_while(|i| **i == Item::Ws);
        items
            .map_while(|i| match i {
                Item::Mark(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// The sequence without its first `n` marker cores (and the
    /// whitespace before them).
    fn strip_marks(&self, n: usize) -> Seq {
        let at = self.0.iter().position(|i| *i != Item::Ws).unwrap_or(0);
        Seq(self.0[(at + n).min(self.0.len())..].to_vec())
    }

    fn render(&self, w: &Writer) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|i| match i {
                Item::Ws => "WS?".to_string(),
                Item::Mark(t) | Item::Lit(t) => w.literal(t),
                Item::Expr(e) => e.clone(),
            })
            .collect();
        parts.join(" ")
    }
}

/// A Lark string literal (JSON string syntax).
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// A Lark regex literal matching `text` exactly.
fn regex_literal(text: &str) -> String {
    regex::escape(text).replace('/', "\\/")
}

/// Rules under construction, named from hints, in order.
struct Writer<'o> {
    options: &'o LarkOptions,
    warnings: Vec<String>,
    /// (name, body), `start` first once defined.
    rules: Vec<(String, String)>,
    /// body → name per kind (lazy, terminal, rule), so equal rules are
    /// written once.
    by_body: [HashMap<String, String>; 3],
    names: HashMap<String, usize>,
    /// What the body's structure opens with (for an optional delimiter block
    /// to leave alone).
    openings: Vec<String>,
    /// What `allOf` merging may still add to the `%json` schemas.
    allowance: Allowance,
    /// Bytes of `%json` schemas written (see [`MAX_JSON_TEXT`]), and
    /// whether passing it was warned of.
    json_text: usize,
    json_text_warned: bool,
    /// (root's address, schema) → its `%json` rule: values sharing a schema
    /// share the rule, made once.
    json_rules: HashMap<(usize, String), String>,
}

/// How many bytes of `%json` schemas one grammar may hold; past it, a
/// further schema keeps only its `type` (with a warning). Each tagged
/// argument's value is a `%json` of its own, carrying the definitions it
/// references, so a tool whose many arguments name large definitions
/// would repeat them for each.
const MAX_JSON_TEXT: usize = 1 << 23;

impl<'o> Writer<'o> {
    fn new(options: &'o LarkOptions, warnings: Vec<String>) -> Self {
        let mut w = Writer {
            options,
            warnings,
            rules: Vec::new(),
            by_body: Default::default(),
            names: HashMap::new(),
            openings: Vec::new(),
            allowance: Allowance::default(),
            json_text: 0,
            json_text_warned: false,
            json_rules: HashMap::new(),
        };
        for token in &options.special_tokens {
            if !(token.starts_with('<') && token.ends_with('>'))
                || token.contains(char::is_whitespace)
            {
                w.warn(format!(
                    "{token:?} has no Lark token syntax (<...>); written as text"
                ));
            }
        }
        w
    }

    fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// A rule named after `hint` with `body`; an equal body reuses its rule.
    fn rule(&mut self, hint: &str, body: &str) -> String {
        self.define(&ident(hint, false), body)
    }

    /// A terminal (one lexeme) named `name`.
    fn terminal(&mut self, name: &str, body: &str) -> String {
        self.define(&ident(name, true), body)
    }

    /// A lazy lexeme: the shortest text matching `regex`.
    fn lazy(&mut self, hint: &str, regex: &str) -> String {
        self.define(&format!("{}[lazy]", ident(hint, false)), regex)
    }

    fn define(&mut self, name: &str, body: &str) -> String {
        let stem = name.trim_end_matches("[lazy]");
        let kind = match () {
            _ if stem.len() < name.len() => 0,
            _ if stem.starts_with(|c: char| c.is_ascii_uppercase()) => 1,
            _ => 2,
        };
        if let Some(existing) = self.by_body[kind].get(body) {
            return existing.clone();
        }
        let n = self.names.entry(stem.to_string()).or_insert(0);
        *n += 1;
        let unique = match *n {
            1 => stem.to_string(),
            k => format!("{stem}_{k}"),
        };
        let written = if kind == 0 {
            format!("{unique}[lazy]")
        } else {
            unique.clone()
        };
        self.rules.push((written, body.to_string()));
        self.by_body[kind].insert(body.to_string(), unique.clone());
        unique
    }

    /// `start`, written first.
    fn define_first(&mut self, name: &str, body: &str) {
        self.rules.insert(0, (name.to_string(), body.to_string()));
    }

    /// A literal: a listed special token in token syntax, else a string.
    fn literal(&self, text: &str) -> String {
        match self.special(text) {
            true => text.to_string(),
            false => quote(text),
        }
    }

    fn special(&self, text: &str) -> bool {
        self.options.special_tokens.iter().any(|t| t == text)
            && text.starts_with('<')
            && text.ends_with('>')
            && !text.contains(char::is_whitespace)
    }

    /// Text up to the first core of `marker`, then the rest of the marker:
    /// a lazy lexeme ending at the core (the marker's leading whitespace
    /// belongs to the text), or any text then the special token.
    fn until(&mut self, marker: &str, hint: &str) -> Seq {
        let seq = Seq::from_marker(marker);
        let Some(core) = seq.first_lit() else {
            // No core to stop at: any text (only at the end of a sequence).
            let mut s = Seq::default();
            s.expr(format!("{}?", self.terminal("ANY", "/(?s:.+)/")));
            return s;
        };
        let mut s = Seq::default();
        if self.special(&core) {
            s.expr(format!("{}?", self.terminal("ANY", "/(?s:.+)/")))
                .lit(&core);
        } else {
            s.expr(self.lazy(
                &format!("{hint}_until"),
                &format!("/(?s:.*){}/", regex_literal(&core)),
            ));
        }
        s.extend(seq.after_first_lit());
        s
    }

    /// A marker that may open the output where free text may too, and its
    /// first core: the whitespace before the core is part of one terminal
    /// with it, so that the core, not the whitespace, decides between the
    /// two (a `WS?` lexeme would lose that race to the longer text).
    fn opening(&mut self, marker: &str, hint: &str) -> String {
        let seq = Seq::from_marker(marker);
        let Some(core) = seq.first_lit() else {
            return String::new();
        };
        let first = match self.special(&core) {
            true => format!("WS? {core}"),
            false => self.terminal(hint, &format!("/[ \\t\\r\\n]*{}/", regex_literal(&core))),
        };
        let rest = seq.after_first_lit().render(self);
        format!("{first} {rest}").trim_end().to_string()
    }

    /// Free text that does not begin with any of `exclude` (leading
    /// whitespace aside).
    fn text(&mut self, exclude: &[String]) -> String {
        match excluded(exclude) {
            Some(ex) => self.terminal("TEXT", &format!("/(?s:.+)/ & ~/{ex}/")),
            None => self.terminal("TEXT", "/(?s:.+)/"),
        }
    }

    /// Free text up to and including `trigger`, not beginning with any of
    /// `exclude`: a lazy lexeme, or text then the special token.
    fn head(&mut self, trigger: &str, exclude: &[String], hint: &str) -> String {
        if self.special(trigger) {
            let text = self.text(exclude);
            return format!("{text}? {trigger}");
        }
        let rx = format!("/(?s:.*){}/", regex_literal(trigger));
        match excluded(exclude) {
            Some(ex) => {
                let t = self.terminal(hint, &format!("{rx} & ~/{ex}/"));
                self.lazy(hint, &t)
            }
            None => self.lazy(hint, &rx),
        }
    }

    /// The `WS` terminal, defined once.
    fn ws(&mut self) {
        self.terminal("WS", "/[ \\t\\r\\n]+/");
    }

    /// `%json` for `schema` (its `$ref`s resolved in `root`): objects with
    /// properties closed as tool schemas mean, compiled leniently.
    fn json(&mut self, schema: &Value, root: &Value, hint: &str) -> String {
        self.schema_warnings(schema, hint, 0);
        let key = (std::ptr::from_ref(root) as usize, schema.to_string());
        if let Some(rule) = self.json_rules.get(&key) {
            return rule.clone();
        }
        let mut doc = match self.json_text < MAX_JSON_TEXT {
            true => json_document(schema, root, &self.allowance).unwrap_or_else(|| {
                self.warn(too_large(hint));
                loosened(schema)
            }),
            false => {
                self.json_text_spent(hint);
                loosened(schema)
            }
        };
        if let Value::Object(doc) = &mut doc {
            doc.insert(
                "x-guidance".into(),
                json!({"lenient": true, "json_allow_general_unicode_escapes": true}),
            );
        }
        let text = serde_json::to_string(&doc).unwrap_or_else(|_| "{}".into());
        self.json_text += text.len();
        let rule = self.rule(hint, &format!("%json {text}"));
        self.json_rules.insert(key, rule.clone());
        rule
    }

    /// Warns, once, that the `%json` schemas passed [`MAX_JSON_TEXT`] at
    /// `hint`.
    fn json_text_spent(&mut self, hint: &str) {
        if !self.json_text_warned {
            self.json_text_warned = true;
            self.warn(format!(
                "{hint} and the schemas after it: the grammar's `%json` schemas pass {} MiB; each keeps only its `type`",
                MAX_JSON_TEXT >> 20
            ));
        }
    }

    /// Warns that a string written as `what` is not held to the schema's
    /// `pattern` or `format`.
    fn unchecked_string(&mut self, tool: &str, key: &str, schema: &Value, what: &str) {
        if ["pattern", "format"]
            .iter()
            .any(|k| schema.get(*k).is_some())
        {
            self.warn(format!(
                "{tool}.{key}: {what} is not checked against `pattern` or `format`"
            ));
        }
    }

    /// Warns about what llguidance's lenient mode will ignore.
    fn schema_warnings(&mut self, schema: &Value, hint: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match schema {
            Value::Object(map) => {
                if let Some(Value::String(p)) = map.get("pattern").filter(|p| !usable_pattern(p)) {
                    self.warn(format!("{hint}: `pattern` {p:?} is no regex llguidance reads (lookaround?); any string"));
                }
                if let Some(Value::String(f)) = map.get("format").filter(|f| !usable_format(f)) {
                    self.warn(format!(
                        "{hint}: `format` {f:?} is not one llguidance knows; ignored"
                    ));
                }
                for v in map.values() {
                    self.schema_warnings(v, hint, depth + 1);
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|v| self.schema_warnings(v, hint, depth + 1)),
            _ => {}
        }
    }

    /// A Python literal valid under `schema` where its type is a scalar;
    /// containers are any Python list or dict.
    fn python_typed(&mut self, schema: &Value, root: &Value) -> String {
        let schema = resolved(root, schema).unwrap_or(&Value::Null);
        if let Some(Value::Array(values)) = schema.get("enum") {
            if let Some(strings) = values
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<&str>>>()
            {
                let alts: Vec<String> = strings.iter().flat_map(|s| python_quotes(s)).collect();
                return format!("( {} )", alts.join(" | "));
            }
        }
        let t = schema.get("type").and_then(Value::as_str).unwrap_or("");
        let name = match t {
            "string" => "PY_STRING",
            "integer" => "PY_INT",
            "number" => "PY_NUMBER",
            "boolean" => "PY_BOOL",
            "null" => "PY_NONE",
            _ => return self.python_value(),
        };
        self.python_terminal(name)
    }

    fn python_terminal(&mut self, name: &str) -> String {
        let body = PY_RULES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("/(?s:.+)/", |(_, b)| b);
        self.terminal(name, body)
    }

    /// Any Python literal (recursive lists and dicts).
    fn python_value(&mut self) -> String {
        let scalars: Vec<String> = ["PY_STRING", "PY_NUMBER", "PY_BOOL", "PY_NONE"]
            .iter()
            .map(|n| self.python_terminal(n))
            .collect();
        let s = scalars[0].clone();
        self.rule(
            "py_list",
            "\"[\" WS? ( py_value ( WS? \",\" WS? py_value )* WS? )? \"]\"",
        );
        self.rule("py_dict", &format!("\"{{\" WS? ( {s} WS? \":\" WS? py_value ( WS? \",\" WS? {s} WS? \":\" WS? py_value )* WS? )? \"}}\""));
        self.rule(
            "py_value",
            &format!("{} | py_list | py_dict", scalars.join(" | ")),
        )
    }

    /// A value in the template's own notation (`{a:<|"|>x<|"|>,n:3}`):
    /// quoted strings, bare scalars, objects with bare or quoted keys,
    /// lists; the same language as the GBNF export's `nt-value`.
    fn notation_value(&mut self, n: &Notation) -> String {
        let mut string = Seq::from_marker(&n.quote_open);
        string.extend(self.until(&n.quote_close, "nt_text"));
        let string = string.render(self);
        let string = self.rule("nt_string", &string);
        let scalar = self.terminal(
            "NT_SCALAR",
            r"/-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?|true|false|null|True|False|None/",
        );
        let key = self.terminal("NT_KEY", "/[a-zA-Z0-9_]+/");
        let (sep, key_end) = (quote(&n.separator), quote(&n.key_end));
        self.rule(
            "nt_member",
            &format!("( {string} | {key} ) WS? {key_end} WS? nt_value"),
        );
        self.rule(
            "nt_object",
            &format!("\"{{\" WS? ( nt_member ( WS? {sep} WS? nt_member )* WS? )? \"}}\""),
        );
        self.rule(
            "nt_array",
            &format!("\"[\" WS? ( nt_value ( WS? {sep} WS? nt_value )* WS? )? \"]\""),
        );
        self.rule(
            "nt_value",
            &format!("nt_object | nt_array | {string} | {scalar}"),
        )
    }

    fn render(&mut self) -> String {
        if self.rules.iter().any(|(_, body)| body.contains("WS?")) {
            self.ws();
        }
        let mut out = String::new();
        for (name, body) in &self.rules {
            out.push_str(&format!("{name}: {body}\n"));
        }
        out
    }
}

/// `schema` as llguidance reads it (see [`closed_objects`] and
/// [`portable`]), with `root`'s definitions when it holds a `$ref`;
/// `None` when it grows past what is left of `allowance`.
fn json_document(schema: &Value, root: &Value, allowance: &Allowance) -> Option<Value> {
    let rewrite = |s: &Value| portable(&closed_objects(s, 0), &|p| Some(p.to_owned()), allowance);
    let mut doc = rewrite(schema)?;
    if let (Value::Object(doc), Value::Object(root)) = (&mut doc, root) {
        for defs in ["$defs", "definitions"]
            .into_iter()
            .filter(|_| has_ref(schema, 0))
        {
            if let (Some(d), false) = (root.get(defs), doc.contains_key(defs)) {
                doc.insert(defs.to_string(), rewrite(d)?);
            }
        }
    }
    Some(doc)
}

/// Whether `schema` holds a `$ref` (then its root's definitions go with it).
fn has_ref(schema: &Value, depth: usize) -> bool {
    match schema {
        _ if depth > MAX_DEPTH => false,
        Value::Object(map) => {
            map.contains_key("$ref") || map.values().any(|v| has_ref(v, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| has_ref(v, depth + 1)),
        _ => false,
    }
}

/// A `pattern` llguidance can compile: Rust regex syntax (no lookaround,
/// no backreferences).
fn usable_pattern(pattern: &Value) -> bool {
    pattern
        .as_str()
        .is_some_and(|p| regex::Regex::new(p).is_ok())
}

/// A string `format` llguidance implements.
fn usable_format(format: &Value) -> bool {
    format.as_str().is_some_and(|f| FORMATS.contains(&f))
}

/// The string formats llguidance implements.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
];

/// `'s'` and `"s"`, as Lark literals.
fn python_quotes(s: &str) -> Vec<String> {
    let single = format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    vec![quote(&quote(s)), quote(&single)]
}

/// The regex of texts beginning with one of `exclude` (after whitespace).
fn excluded(exclude: &[String]) -> Option<String> {
    if exclude.is_empty() {
        return None;
    }
    let alts: Vec<String> = exclude.iter().map(|e| regex_literal(e)).collect();
    Some(format!("[ \\t\\r\\n]*({})(?s:.*)", alts.join("|")))
}

/// `schema` without the `pattern`s and `format`s llguidance cannot use, and
/// with every object that declares properties and says nothing of others
/// closed (`additionalProperties: false`), as tool schemas mean and
/// the other exports read them; `allOf` parts stay open, since closing each
/// would exclude the others' properties.
fn closed_objects(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    if depth > MAX_DEPTH {
        return schema.clone();
    }
    // `allOf` parts stay open: closing them would refuse the members the
    // other parts declare.
    let mut out = map_subschemas(map, &["allOf"], &|v| closed_objects(v, depth + 1));
    // What llguidance cannot compile goes, looser (warned by `schema_warnings`).
    if out.get("pattern").is_some_and(|p| !usable_pattern(p)) {
        out.remove("pattern");
    }
    if out.get("format").is_some_and(|f| !usable_format(f)) {
        out.remove("format");
    }
    if out.contains_key("properties")
        && !out.contains_key("additionalProperties")
        && !out.contains_key("allOf")
    {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

/// A Lark name from a hint: lowercase for rules, uppercase for terminals,
/// other characters as `_`.
fn ident(hint: &str, terminal: bool) -> String {
    let mut out: String = hint
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => c,
            _ => '_',
        })
        .collect();
    out = if terminal {
        out.to_ascii_uppercase()
    } else {
        out.to_ascii_lowercase()
    };
    let out = out
        .trim_start_matches(|c: char| c == '_' || c.is_ascii_digit())
        .to_string();
    match (out.is_empty(), terminal) {
        (true, true) => "T".into(),
        (true, false) => "r".into(),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testing::{weather_parameters, weather_protocol};
    use crate::protocol::ToolChoice;

    fn protocol(template: &str, choice: ToolChoice, parallel: bool) -> Protocol {
        weather_protocol(template, weather_parameters(), choice, parallel)
    }

    const HERMES: &str = include_str!("../../templates/hermes-think.jinja");
    const QWEN_XML: &str = include_str!("../../templates/qwen-coder-xml.jinja");

    #[test]
    fn auto_is_text_or_text_up_to_the_call_marker() {
        let out = lark(&protocol(HERMES, ToolChoice::Auto, true)).unwrap();
        let text = &out.lark;
        assert!(text.starts_with("start: reasoning? body\n"), "{text}");
        assert!(text.contains("head[lazy]: HEAD\n"), "{text}");
        assert!(
            text.contains(r"HEAD: /(?s:.*)<tool_call>/ & ~/[ \t\r\n]*(<think>)(?s:.*)/"),
            "{text}"
        );
        assert!(
            text.contains(r#""additionalProperties":false,"x-guidance":{"lenient":true"#),
            "{text}"
        );
        assert!(text.contains("body: TEXT? | head section WS?\n"), "{text}");
        assert_eq!(
            out,
            lark(&protocol(HERMES, ToolChoice::Auto, true)).unwrap(),
            "deterministic"
        );
    }

    #[test]
    fn required_none_and_one_call() {
        let required = lark(&protocol(HERMES, ToolChoice::Required, true))
            .unwrap()
            .lark;
        assert!(
            required.contains("SECTION_OPEN: /[ \\t\\r\\n]*<tool_call>/"),
            "{required}"
        );
        assert!(
            !required.contains("TEXT"),
            "no free text under required: {required}"
        );
        let none = lark(&protocol(HERMES, ToolChoice::None, true))
            .unwrap()
            .lark;
        assert!(
            !none.contains("get_weather") && !none.contains("body:"),
            "{none}"
        );
        let single = lark(&protocol(HERMES, ToolChoice::Auto, false))
            .unwrap()
            .lark;
        assert!(!single.contains(")*"), "one call only: {single}");
        let missing = protocol(HERMES, ToolChoice::Function("nope".into()), true);
        assert!(lark(&missing).is_err());
    }

    #[test]
    fn tagged_strings_are_raw_up_to_the_closer() {
        let text = lark(&protocol(QWEN_XML, ToolChoice::Auto, true))
            .unwrap()
            .lark;
        assert!(
            text.contains(r"raw_until[lazy]: /(?s:.*)<\/parameter>/"),
            "{text}"
        );
        assert!(
            text.contains(r#"arg_get_weather_city: "<parameter=" "city" ">""#),
            "{text}"
        );
        assert!(
            text.contains("( value_get_weather_days | PY_INT )"),
            "{text}"
        );
    }

    #[test]
    fn listed_special_tokens_use_token_syntax() {
        let options = LarkOptions {
            special_tokens: vec!["<tool_call>".into(), "[TOOL_CALLS]".into()],
        };
        let out = lark_with(&protocol(HERMES, ToolChoice::Required, true), &options).unwrap();
        assert!(out.lark.contains("WS? <tool_call>"), "{}", out.lark);
        assert!(
            out.warnings.iter().any(|w| w.contains("[TOOL_CALLS]")),
            "{:?}",
            out.warnings
        );
    }

    #[test]
    fn all_of_parts_stay_open() {
        let schema = json!({"properties": {"a": {"allOf": [{"properties": {"x": {}}}]}, "b": {"properties": {}}}});
        let closed = closed_objects(&schema, 0);
        assert_eq!(closed["additionalProperties"], json!(false));
        assert_eq!(
            closed["properties"]["b"]["additionalProperties"],
            json!(false)
        );
        assert!(closed["properties"]["a"]["allOf"][0]
            .get("additionalProperties")
            .is_none());
    }
}
