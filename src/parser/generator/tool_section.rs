//! Tool sections: one [`ToolGrammar`] per tool format the output may hold
//! (the template's own, or each fallback dialect when the template renders
//! no calls), and the section that holds its calls.
//!
//! ```text
//! tools := section-start call (separator call)* section-end?
//! ```
//!
//! - section-start is the optional part opener, `>>>`, when calls have no
//!   opening marker and the generation prompt ends with their separator.
//! - Calls that are bare JSON objects have no section markers of their
//!   own: a list, or objects one after another, with the framing models
//!   write around them (see [`ToolGrammar::bare_json_section`]). On other
//!   formats such calls are read in a code fence only
//!   ([`ToolGrammar::fenced_section`]).
//! - Framing between calls is captured (`SECTION_OPEN`, `FRAME`) so a call
//!   withdrawn by the decoder goes back to content with it.
//! - The section's markers and separator are the parser outline's
//!   ([`SectionMarks`], read off each format's section node); other
//!   dialects' calls have theirs from the outline's [`DialectCall`].
//!
//! Invariant: everything after a section's first call is optional (the
//! call committed), so a section never fails once its first call has;
//! but for a strict grammar's ([`ToolGrammar::strict`]), which is tried in
//! a lookahead first.

use super::names::{known_name, known_name_alternatives, name_in_set, spaced_names, NameSets};
use super::{Plan, JSON_FENCES};
use crate::parser::marker::Marker;
use crate::parser::sections::HeaderMarks;
use crate::parser::tags::*;
use crate::parser::vocabulary::Vocabulary;
use crate::protocol::outline::{
    bare_json_call, bracketed_python_call, DialectCall, Foreign, SectionMarks, PLACEHOLDER,
};
use crate::protocol::{CallLayout, Naming, Protocol, TaggedName};
use chat_autoparser_peg::{
    and, cap, choice, class, empty, lit, literals, not, opt, seq, star, until, ws, ByteSet, Expr,
};
use std::rc::Rc;
use std::sync::Arc;

/// The closing code fence of a fenced JSON call (its openers are
/// [`JSON_FENCES`]): a wrapper of another format on templates whose calls
/// are not bare JSON (see [`bare_json_call`]).
const FENCE_CLOSER: [&str; 1] = ["```"];

/// No foreign markers: what a grammar reads that reads none.
static NO_FOREIGN: Foreign = Foreign::NONE;

/// One tool grammar per format the output may hold: the template's own, or
/// the fallback dialects when the template renders no calls; and, when
/// `fenced` and none of them is bare JSON, one for a JSON call in a code
/// fence (see [`bare_json_call`]); when `fenced`, one for a Python
/// call list in another format's wrapper (see [`foreign_python_list`]).
/// Without the plan's `foreign_calls`, other formats' markers are not read
/// at all (nor fences around calls): they are text (`foreign_markers: text`).
pub(super) fn tool_grammars<'a>(
    protocol: &'a Protocol,
    plan: Plan<'a>,
    names: (&[String], &[String]),
    vocabulary: &Rc<Vocabulary>,
    fenced: bool,
) -> Vec<ToolGrammar<'a>> {
    let headers = plan.headers;
    let opener = plan.part_opener.map(str::to_string);
    let fenced = fenced && plan.foreign_calls;
    // Read around bare JSON calls under every policy: there they frame
    // the template's own calls (see `ForeignMarkers::Text`).
    let foreign = plan.foreign;
    let names = NameReaders::new(names);
    // The fixed formats' grammars share one list of the template's markers.
    let preserved: Rc<[String]> = protocol.preserved_tokens.iter().cloned().collect();
    let mut grammars: Vec<ToolGrammar<'a>> = plan
        .calls
        .iter()
        .zip(plan.sections)
        .enumerate()
        .map(|(i, (call, marks))| {
            let own = protocol.preserved_tokens.iter().cloned();
            let markers = own.chain(call.tokens.iter().cloned()).collect();
            let laid_out = (call.layout.clone(), *marks);
            let mut g = ToolGrammar::new(laid_out, headers, opener.clone(), markers, &names);
            g.vocabulary = vocabulary.clone();
            g.rule = format!("call{i}");
            g.with_wrappers(&protocol.markup.spare_tokens)
                .with_foreign(foreign)
        })
        .collect();
    let in_lists: Vec<ToolGrammar<'a>> = grammars
        .iter()
        .filter(|g| g.is_python_list())
        .map(ToolGrammar::json_in_list)
        .collect();
    // The template's own formats decide whether a fence is another
    // format's wrapper; the JSON calls in a Python list come before the
    // fenced call, which reads the same call object through their head and
    // tail rules.
    let bare_json = grammars.iter().any(ToolGrammar::is_bare_json);
    grammars.extend(in_lists);
    if fenced && !bare_json {
        let dialect = bare_json_call();
        let laid_out = (dialect.layout.clone(), dialect.marks());
        let mut g = ToolGrammar::new(laid_out, headers, None, preserved.clone(), &names);
        g.vocabulary = vocabulary.clone();
        g.rule = "call_fenced".into();
        // The template's own JSON call object (hermes' `<tool_call>{...}`)
        // is the fenced one: its head and tail rules read both.
        g.json_rules = grammars
            .iter()
            .find(|t| same_call_object(&t.layout, &dialect.layout))
            .map(|t| t.rule.clone());
        g.triggers = vec![JSON_FENCES[1].to_string()];
        g.fenced = true;
        // Other formats' wrappers frame a bare call as a fence does
        // (`[TOOL_CALLS][{...}]`, `<|python_tag|>{...}` on hermes').
        g.foreign = foreign;
        g.triggers
            .extend(foreign.openers.iter().chain(&foreign.closers).cloned());
        grammars.push(g);
    }
    if fenced && !foreign.openers.is_empty() {
        let list = foreign_python_list(headers, preserved, &names, vocabulary, foreign);
        grammars.push(list);
    }
    grammars
}

/// A Python call list inside another format's wrapper
/// (`<|tool_call_start|>[f(x=1)]<|tool_call_end|>`, see
/// [`bracketed_python_call`]), whatever the template's own format
/// (a Python list in the template's own wrapper is its own grammar's): the
/// wrapper's opener is required (a bracketed call in prose is no call) and
/// captured `FOREIGN`, as a fenced call's is.
fn foreign_python_list<'a>(
    headers: &'a [HeaderMarks<'a>],
    markers: Rc<[String]>,
    names: &NameReaders,
    vocabulary: &Rc<Vocabulary>,
    foreign: &'a Foreign,
) -> ToolGrammar<'a> {
    let dialect = bracketed_python_call();
    let laid_out = (dialect.layout.clone(), dialect.marks());
    let mut g = ToolGrammar::new(laid_out, headers, None, markers, names);
    g.vocabulary = vocabulary.clone();
    g.rule = "call_foreign_python".into();
    g.fenced = true;
    g.foreign = foreign;
    g.triggers = foreign.openers.clone();
    g
}

/// What reads the request's function names where a name starts (see
/// [`ToolGrammar::known_name`] and the fields after it). They depend on the
/// request alone: built once per parser and shared by its tool grammars
/// (each a reference count), so the compiler also reads each once and
/// copies its code where it is read again.
pub(super) struct NameReaders {
    known_name: Expr,
    known_json_name: Expr,
    requested_name: Expr,
    spaced_names: Expr,
    unknown_name: Expr,
    unknown_json_name: Expr,
}

impl NameReaders {
    /// `names` are the names a call must have (empty: any); `all_names`
    /// the request's, which a name slot may hold with spaces in them.
    pub(super) fn new((names, all_names): (&[String], &[String])) -> NameReaders {
        if NameSets::fit(names, all_names) {
            return NameReaders::from_sets(names.is_empty(), names == all_names);
        }
        let alternatives = |quoted| known_name_alternatives(names, quoted);
        let (word, json) = match names.is_empty() {
            true => (chat_autoparser_peg::fail(), chat_autoparser_peg::fail()),
            false => (alternatives(false), alternatives(true)),
        };
        let (known_name, known_json_name) = match names.is_empty() {
            true => (known_name(names, false), known_name(names, true)),
            false => (and(word.clone()), and(json.clone())),
        };
        let unknown = |alternatives: Expr| match names.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => not(alternatives),
        };
        let requested_name = match all_names.is_empty() {
            true => chat_autoparser_peg::fail(),
            false if all_names == names => known_name.clone(),
            false => and(known_name_alternatives(all_names, false)),
        };
        NameReaders {
            known_name,
            known_json_name,
            requested_name,
            spaced_names: spaced_names(all_names),
            unknown_name: unknown(word),
            unknown_json_name: unknown(json),
        }
    }
}

impl NameReaders {
    /// The readers of names given to the program as [`NameSets`]: the
    /// grammar holds no name, only which sets it reads (`any`: a call may
    /// have any name; `requested_checked`: the names a call must have are
    /// all of the request's).
    fn from_sets(any: bool, requested_checked: bool) -> NameReaders {
        let (word, json) = (
            name_in_set(NameSets::WORD, false),
            name_in_set(NameSets::JSON, true),
        );
        let (known_name, known_json_name, unknown_name, unknown_json_name) = match any {
            true => (
                known_name(&[], false),
                known_name(&[], true),
                chat_autoparser_peg::fail(),
                chat_autoparser_peg::fail(),
            ),
            false => (and(word.clone()), and(json.clone()), not(word), not(json)),
        };
        let requested_name = match requested_checked {
            true => known_name.clone(),
            false => and(name_in_set(NameSets::REQUESTED, false)),
        };
        NameReaders {
            known_name,
            known_json_name,
            requested_name,
            // Names with whitespace are never in sets.
            spaced_names: chat_autoparser_peg::fail(),
            unknown_name,
            unknown_json_name,
        }
    }
}

/// The tool-call part of the grammar for one format.
#[derive(Clone)]
pub(super) struct ToolGrammar<'a> {
    /// The markers around the format's calls: the section's (read off its
    /// node in the parser's outline).
    pub(super) marks: SectionMarks<'a>,
    /// A call of the format, laid out with [`PLACEHOLDER`] for its name:
    /// where the parser takes the call's framing from.
    pub(super) layout: Arc<CallLayout>,
    /// Section headers of the turn: a name written inside one may sit
    /// after any label and before any rest of the header.
    pub(super) headers: &'a [HeaderMarks<'a>],
    /// The part opener (`Plan::part_opener`): a section after content starts with it.
    pub(super) opener: Option<String>,
    /// The marker tokens the analysis learned (and this format's own): a
    /// function name never holds one.
    pub(super) markers: Rc<[String]>,
    pub(super) triggers: Vec<String>,
    /// Matches (without consuming) one of the request's function names
    /// where a name starts; empty when the request names no tools.
    pub(super) known_name: Expr,
    pub(super) known_json_name: Expr,
    /// Matches (without consuming) one of the request's function names,
    /// whether or not a call must name one; fails when the request names
    /// no tools.
    pub(super) requested_name: Expr,
    /// The request's names that hold whitespace (where a name slot
    /// otherwise stops), longest first; fails when there are none.
    pub(super) spaced_names: Expr,
    /// The same for a name that is none of the request's (fails when the
    /// request names no tools).
    pub(super) unknown_name: Expr,
    pub(super) unknown_json_name: Expr,
    /// Spare special tokens a model writes around bare JSON calls
    /// (`<|python_tag|>`; see `analysis::spare`): framing of the calls.
    pub(super) wrappers: Vec<String>,
    /// Other formats' call openers and closers (the outline's
    /// [`Foreign`](crate::protocol::outline::Foreign)), read around bare
    /// JSON calls and, for closers, alone.
    pub(super) foreign: &'a Foreign,
    /// The name of the grammar rule that reads one call.
    pub(super) rule: String,
    /// The rule whose head and tail rules (`call0.head`, `call0.tail`) this
    /// grammar's calls read, when another grammar reads the same call
    /// object (`None`: its own, see [`ToolGrammar::rules`]): a head or tail
    /// is the same rule wherever it is read, so it is built and compiled once.
    pub(super) json_rules: Option<String>,
    /// Its calls are bare JSON in a Markdown code fence or another format's
    /// wrapper (`[TOOL_CALLS]`), on a template whose calls are not bare
    /// JSON, or a Python call list in another format's wrapper: the fence
    /// or wrapper is required,
    /// and captured `FOREIGN`.
    pub(super) fenced: bool,
    /// The template's words: what a label or the rest of a header may
    /// hold and still be scaffolding.
    pub(super) vocabulary: Rc<Vocabulary>,
    /// Only complete calls and sections match (see [`ToolGrammar::strict`]).
    pub(super) strict: bool,
    /// The markers of the Python call list whose section this grammar's
    /// JSON calls sit in (see [`ToolGrammar::json_in_list`]).
    pub(super) list: Option<SectionMarks<'a>>,
    /// Its head is the address and name before the header the format's
    /// call opens (see [`ToolGrammar::name_first_head`]).
    pub(super) name_first: bool,
}

impl<'a> ToolGrammar<'a> {
    fn new(
        (layout, marks): (Arc<CallLayout>, SectionMarks<'a>),
        headers: &'a [HeaderMarks<'a>],
        opener: Option<String>,
        markers: Rc<[String]>,
        names: &NameReaders,
    ) -> ToolGrammar<'a> {
        let mut g = ToolGrammar {
            marks,
            layout,
            headers,
            opener,
            markers,
            triggers: Vec::new(),
            known_name: names.known_name.clone(),
            known_json_name: names.known_json_name.clone(),
            requested_name: names.requested_name.clone(),
            spaced_names: names.spaced_names.clone(),
            unknown_name: names.unknown_name.clone(),
            unknown_json_name: names.unknown_json_name.clone(),
            wrappers: Vec::new(),
            foreign: &NO_FOREIGN,
            rule: "call".into(),
            json_rules: None,
            fenced: false,
            vocabulary: Rc::default(),
            strict: false,
            list: None,
            name_first: false,
        };
        g.triggers = g.first_literals();
        g
    }

    /// The literals a tool section can start with.
    fn first_literals(&self) -> Vec<String> {
        for raw in [self.marks.start, self.layout.start()] {
            if let Some(core) = Marker::new(raw).first_core() {
                let mut out = vec![core.to_string()];
                out.extend(self.distinctive_call_start());
                out.extend(self.distinctive_name_prefix());
                out.extend(self.name_first_address().map(str::to_string));
                return out;
            }
        }
        let tagged = self.tagged();
        let id_before = tagged.and_then(|t| t.id_before);
        let id_core =
            id_before.and_then(|(prefix, _)| Marker::new(prefix).first_core().map(str::to_string));
        if let Some(core) = id_core {
            return vec![core];
        }
        if let Some(opener) = &self.opener {
            return vec![opener.clone()];
        }
        match tagged.map(|t| Marker::new(t.prefix)) {
            Some(prefix) if !prefix.is_blank() => {
                vec![prefix.first_core().unwrap_or_default().to_string()]
            }
            // A fenced call (```json\n{...}) starts at its fence, a list
            // of calls at its bracket.
            None => ["{", "[", "```"].map(String::from).to_vec(),
            // A bare name starts the call: any identifier may; content
            // stops at none (the section only starts where content could).
            Some(_) => Vec::new(),
        }
    }

    /// `section-start call (separator call)* section-end?`
    pub(super) fn section(&self) -> Expr {
        if self.fenced && self.layout.naming == Naming::Python {
            return self.foreign_python_section();
        }
        if self.fenced {
            return self.fenced_section();
        }
        if let Some(list) = self.list {
            return self.listed_json_section(list);
        }
        if self.is_bare_json() {
            return self.bare_json_section();
        }
        self.marked_section()
    }

    /// A Python call list inside another format's wrapper (see
    /// [`foreign_python_list`]): the foreign opener, the list, and a
    /// foreign closer when the model wrote one.
    fn foreign_python_section(&self) -> Expr {
        seq([
            Self::foreign_expr(&self.foreign.openers),
            ws(),
            self.marked_section(),
            opt(seq([ws(), Self::foreign_expr(&self.foreign.closers)])),
        ])
    }

    /// The format's own section: its markers around its calls.
    fn marked_section(&self) -> Expr {
        let marks = self.marks;
        let sep = Marker::new(marks.separator);
        // Framing is captured so a call withdrawn for arguments that are not
        // JSON goes back to content with it (`decode`).
        let item = if marks.separator.is_empty() {
            seq([ws(), self.call()])
        } else {
            seq([cap(SECTION_OPEN, seq([ws(), sep.expr()])), self.call()])
        };
        let more = match self.next_in_wrapper() {
            Some(next) => star(choice([item, next])),
            None => star(item),
        };
        let start = cap(SECTION_OPEN, Marker::new(marks.start).expr());
        let droppable =
            self.distinctive_name_prefix().is_some() || self.distinctive_call_start().is_some();
        let start = match &self.opener {
            Some(opener) => opt(cap(SECTION_OPEN, lit(opener))),
            None if droppable => opt(start),
            None => start,
        };
        let section = seq([start, self.call(), more, self.section_end()]);
        match self.is_bare_python() {
            true => choice([self.python_list(), section]),
            false => section,
        }
    }

    /// Calls are Python calls with no opening marker and no list around
    /// them (`f(x=1)<|eom|>`, vLLM's Llama-4 pythonic template).
    fn is_bare_python(&self) -> bool {
        self.layout.naming == Naming::Python
            && Marker::blank(self.marks.start)
            && Marker::blank(self.layout.start())
    }

    /// Such calls in a Python list, as the same models also write them
    /// (`[f(x=1), g()]`: the form vLLM's and SGLang's pythonic parsers
    /// read): the brackets and commas framing the template's own calls.
    /// Tried first at the section's place (the body's start); text that
    /// is no list of calls falls back as before.
    fn python_list(&self) -> Expr {
        let item = seq([cap(SECTION_OPEN, seq([ws(), lit(",")])), ws(), self.call()]);
        seq([
            cap(SECTION_OPEN, lit("[")),
            ws(),
            self.call(),
            star(item),
            self.closer(cap(FRAME, seq([ws(), lit("]")]))),
            self.section_end(),
        ])
    }

    /// The section's closer, when it has one, and the whitespace before it
    /// (required when strict).
    fn section_end(&self) -> Expr {
        let end = Marker::new(self.marks.end);
        match end.is_blank() {
            true => empty(),
            false => self.closer(cap(FRAME, seq([ws(), end.closer_expr()]))),
        }
    }

    /// `closer`, which a lenient grammar lets the model leave out.
    pub(super) fn closer(&self, closer: Expr) -> Expr {
        match self.strict {
            true => closer,
            false => opt(closer),
        }
    }

    /// The same grammar matching only what the model wrote whole: calls
    /// that reach their end marker with no recovery, and a section's
    /// closer. Its call rules are named apart (`call0.strict`). What is
    /// broken fails instead of being read as content, so a caller tries
    /// it inside a lookahead (the call rules commit) and reads the same
    /// text again only when it matched.
    pub(super) fn strict(&self) -> ToolGrammar<'a> {
        // A JSON call object's head and tail read the same whole or broken
        // (their closers are the call's): the strict calls share them.
        let json_rules = self.json_rules.clone().unwrap_or_else(|| self.rule.clone());
        ToolGrammar {
            strict: true,
            rule: format!("{}.strict", self.rule),
            json_rules: Some(json_rules),
            ..self.clone()
        }
    }

    /// JSON calls with no marker of their own, as models write them: in a
    /// list (`[{...}, {...}]`) or one after another, bare, or separated by
    /// `,`, `;` or newlines. Framing around them is the calls':
    /// a Markdown fence, a spare special token before or after them
    /// (`<|python_tag|>{...}`, `<|python_start|>{...}<|python_end|>`), and a
    /// trailing `;`. Everything after the first call is optional: the call
    /// has committed, so nothing after it may fail.
    fn bare_json_section(&self) -> Expr {
        let wrapper = || match self.wrappers.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => choice(self.wrappers.iter().map(lit)),
        };
        let (foreign_open, foreign_close) = (
            Self::foreign_expr(&self.foreign.openers),
            Self::foreign_expr(&self.foreign.closers),
        );
        seq([
            opt(seq([choice(JSON_FENCES.map(lit)), ws()])),
            opt(seq([choice([wrapper(), foreign_open]), ws()])),
            self.json_calls(),
            opt(seq([ws(), lit(";")])),
            opt(seq([ws(), choice([wrapper(), foreign_close])])),
            ws(),
            opt(seq([lit("```"), ws()])),
        ])
    }

    /// Bare JSON calls in a code fence or another format's wrapper, on a
    /// template whose calls are not bare JSON: the opening fence or
    /// wrapper is required (a JSON object in prose is no call there), and
    /// it is another format's marker (`FOREIGN`, for the `foreign_markers`
    /// policy).
    fn fenced_section(&self) -> Expr {
        let open = JSON_FENCES.map(String::from).into_iter();
        let open: Vec<String> = open.chain(self.foreign.openers.iter().cloned()).collect();
        let close = FENCE_CLOSER.map(String::from).into_iter();
        let close: Vec<String> = close.chain(self.foreign.closers.iter().cloned()).collect();
        // Where any name may be called (`unknown_tool: call`), a call
        // object has its arguments in the block: a JSON record with a
        // `name` is no call (`{"name": "Ada", "role": "admin"}`). Looked
        // for in JSON blocks only, so other code blocks stream as they come.
        // Its key quoted as JSON or as a Python dict writes it.
        let members = [
            "\"arguments\"",
            "\"parameters\"",
            "'arguments'",
            "'parameters'",
        ];
        let stops: Vec<&str> = members.iter().copied().chain(FENCE_CLOSER).collect();
        let object = seq([ws(), opt(lit("[")), ws(), lit("{")]);
        let has_arguments = match self.unknown_name {
            Expr::Fail => and(seq([object, until(stops), literals(members)])),
            _ => empty(),
        };
        seq([
            Self::foreign_expr(&open),
            has_arguments,
            ws(),
            self.json_calls(),
            opt(seq([ws(), lit(";")])),
            opt(seq([ws(), Self::foreign_expr(&close)])),
        ])
    }

    /// A Python call list's section (`<|tool_call_start|>[`) opening a
    /// JSON grammar (see [`ToolGrammar::json_in_list`]): the section's own
    /// start, JSON calls, the section's own end.
    fn listed_json_section(&self, list: SectionMarks<'_>) -> Expr {
        let end = Marker::new(list.end);
        seq([
            cap(SECTION_OPEN, Marker::new(list.start).expr()),
            self.json_calls(),
            self.closer(cap(FRAME, seq([ws(), end.closer_expr()]))),
        ])
    }

    /// Calls are Python calls in a list the section opens (`[` ends its
    /// start marker: `<|tool_call_start|>[`).
    fn is_python_list(&self) -> bool {
        self.layout.naming == Naming::Python && self.marks.start.trim_end().ends_with('[')
    }

    /// JSON call objects inside this Python call list's section
    /// (`<|tool_call_start|>[{"name": ..., "arguments": {...}}]<|tool_call_end|>`):
    /// models trained on JSON calls too write them there. A JSON grammar
    /// (the fenced call's format: a bare call object) that opens where the
    /// list does; tried after the list's own calls.
    fn json_in_list(&self) -> ToolGrammar<'a> {
        ToolGrammar {
            rule: format!("{}.json", self.rule),
            list: Some(self.marks),
            wrappers: Vec::new(),
            foreign: &NO_FOREIGN,
            ..self.reading(bare_json_call())
        }
    }

    /// The same grammar reading calls of another `dialect` (its layout
    /// and section markers with it).
    fn reading(&self, dialect: &'static DialectCall) -> ToolGrammar<'a> {
        ToolGrammar {
            marks: dialect.marks(),
            layout: dialect.layout.clone(),
            ..self.clone()
        }
    }

    /// A JSON call object (the fenced call's format) read where this
    /// tagged format's call goes, inside its own call wrapper
    /// (`<tool_call>{"name": ...}</tool_call>` where the template writes
    /// `<tool_call><function=f>...`): models trained on JSON calls write
    /// them there. `None` for formats whose calls are JSON or Python calls
    /// already, or have no call marker of their own.
    pub(super) fn json_in_wrapper(&self) -> Option<ToolGrammar<'a>> {
        let own_wrapper = !Marker::blank(self.layout.start());
        let tagged = self.layout.naming == Naming::Tagged;
        let plain = !self.fenced && !self.name_first && self.list.is_none();
        (own_wrapper && tagged && plain).then(|| ToolGrammar {
            rule: format!("{}.object", self.rule),
            json_rules: None,
            ..self.reading(bare_json_call())
        })
    }

    /// Bare JSON calls in a list (`[{...}, {...}]`) or one after another,
    /// bare, or separated by the format's separator, `,`, `;` or newlines.
    fn json_calls(&self) -> Expr {
        let item = self.call();
        let own = match self.marks.separator.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => Marker::new(self.marks.separator).expr(),
        };
        let sep = choice([own, seq([ws(), opt(class(ByteSet::of(b",;"))), ws()])]);
        let run = seq([item.clone(), star(seq([sep, item]))]);
        let listed = seq([lit("["), ws(), run.clone(), opt(seq([ws(), lit("]")]))]);
        choice([listed, run])
    }

    /// Calls are JSON objects with no marker before them: none at all, or
    /// only a JSON list's brackets around the section (`[{...}, {...}]`),
    /// which the bare reading takes as one of its forms.
    pub(super) fn is_bare_json(&self) -> bool {
        let marks = self.marks;
        let list = marks.start.trim() == "[" && marks.end.trim() == "]";
        self.tagged().is_none()
            && (Marker::blank(marks.start) || list)
            && Marker::blank(self.layout.start())
    }

    /// The parts around a tagged name, from the layout (`None`: a JSON call).
    pub(super) fn tagged(&self) -> Option<TaggedName<'_>> {
        self.layout.tagged_name(PLACEHOLDER)
    }
}

/// Whether calls of `a` and `b` are the same JSON call object: the name,
/// arguments and id at the same paths, so their heads and tails (see
/// [`ToolGrammar::rules`]) are the same rules.
fn same_call_object(a: &CallLayout, b: &CallLayout) -> bool {
    matches!(a.naming, Naming::JsonMember { .. })
        && (&a.naming, a.arguments()) == (&b.naming, b.arguments())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Chat, ChatRequest, ChatTemplate, TemplateConfig};
    use serde_json::json;

    /// The rules of the tool grammars of a one-tool request on `template`
    /// (fenced JSON calls read).
    fn call_rules(template: &str) -> Vec<String> {
        let path = format!("{}/templates/{template}", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(path).expect("shipped template");
        let template = ChatTemplate::new(&source, &TemplateConfig::default()).expect("compiles");
        let chat = Chat::new(template).expect("analyses");
        let tool = json!({"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
        let request = ChatRequest::default()
            .with_messages(vec![json!({"role": "user", "content": "Weather?"})])
            .with_tools(vec![tool]);
        let protocol = chat.prepare(&request).protocol;
        let outline = protocol.parser_outline();
        let sections: Vec<SectionMarks<'_>> = outline.section_marks().collect();
        let names = ["get_weather".to_string()];
        let plan = Plan {
            start: protocol.start,
            extract_reasoning: true,
            parse_tools: true,
            json_response: false,
            names: &names,
            any_name: false,
            calls: &outline.calls,
            foreign: &outline.foreign,
            notations: &[],
            elements: &[],
            headers: &[],
            sections: &sections,
            scaffolding: &outline.scaffolding,
            part_opener: outline.part_opener.as_deref(),
            calls_in_reasoning: false,
            foreign_calls: true,
        };
        let vocabulary = Rc::new(Vocabulary::of(&outline.scaffolding));
        let grammars = tool_grammars(&protocol, plan, (&names, &names), &vocabulary, true);
        let strict = grammars.iter().map(ToolGrammar::strict).collect::<Vec<_>>();
        let rules = grammars.iter().chain(&strict).flat_map(ToolGrammar::rules);
        rules.map(|(name, _)| name).collect()
    }

    /// hermes' call (`<tool_call>{"name": ..., "arguments": ...}`) holds
    /// the fenced call's object: the fenced and the strict calls read the
    /// template's head and tail rules (JSON and Python-dict), built and
    /// compiled once. A Python call list in another format's wrapper is a
    /// call of its own.
    #[test]
    fn calls_of_one_json_object_share_its_head_and_tail() {
        let rules = call_rules("hermes-think.jinja");
        let expected = ["call0", "call0.head", "call0.tail"];
        let python = ["call0.python.head", "call0.python.tail", "call_fenced"];
        let expected = expected.into_iter().chain(python);
        let expected = expected.into_iter().chain([
            "call_foreign_python",
            "call0.strict",
            "call_fenced.strict",
            "call_foreign_python.strict",
        ]);
        assert_eq!(rules, expected.map(String::from).collect::<Vec<_>>());
    }

    /// The JSON calls a Python call list may hold and the fenced call are
    /// the same call object: one head and one tail rule per notation serve
    /// both.
    #[test]
    fn json_calls_in_a_list_and_fenced_share_one_head_and_tail() {
        let rules = call_rules("python-calls.jinja");
        let heads: Vec<&String> = rules.iter().filter(|r| r.ends_with(".head")).collect();
        let expected = ["call0.json.head", "call0.json.python.head"];
        assert_eq!(heads, expected, "{rules:?}");
    }
}
