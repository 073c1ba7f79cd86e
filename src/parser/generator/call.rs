//! One tool call: its start marker, its head (everything up to and
//! including the function name), a commit, and its tail (arguments and the
//! rest of the call) and end marker under `recover`.
//!
//! ```text
//! call := CALL( call-start head commit recover(tail call-end, BROKEN) )
//! ```
//!
//! - Before the head completes, a failed call backtracks and its text is
//!   content, verbatim. After it, `commit` lets the arguments stream.
//! - A call is read in several places (first, after a separator, inside a
//!   list, after a wrapper): it is a named rule ([`ToolGrammar::rules`]),
//!   built and compiled once; a call object that two tool grammars read
//!   (the fenced JSON call and hermes' own, a strict call and its lenient
//!   one) has one head and one tail rule ([`ToolGrammar::json_rules`]).
//! - A JSON call may sit in OpenAI's wrapper; a list of JSON calls may sit
//!   in one call wrapper; several calls may share one wrapper when the
//!   call's end is the arguments' close and a special token.
//!
//! - A strict grammar ([`ToolGrammar::strict`]) has no `recover`: a call
//!   the model broke fails, for a caller that reads only whole calls.
//!
//! Invariant: a call is captured `CALL` whole only from its head on; a
//! call that fails before that consumes nothing.

use super::json_call::{json_arguments, json_head, json_tail, openai_wrapper, Notation};
use super::names::identifier;
use super::python_arguments::python_arguments;
use super::tagged_arguments::tagged_arguments;
use super::tool_section::ToolGrammar;
use crate::parser::marker::Marker;
use crate::parser::tags::*;
use crate::protocol::{Arguments, Naming};
use chat_autoparser_peg::{
    and, cap, choice, commit, empty, json, json_string, lit, recover, rule, seq, star, until, ws,
    Expr,
};

impl<'a> ToolGrammar<'a> {
    /// One call: a reference to the rule of [`ToolGrammar::call_body`].
    pub(super) fn call(&self) -> Expr {
        rule(&self.rule)
    }

    /// The rules [`ToolGrammar::call`] names: the call; its body, when the
    /// next call may follow inside the same wrapper (read after the start
    /// marker and without it); and, when it may sit in OpenAI's wrapper, its
    /// head and tail (read with the wrapper or without it).
    pub(super) fn rules(&self) -> Vec<(String, Expr)> {
        let mut out = vec![(self.rule.clone(), self.call_body())];
        if self.shared_wrapper().is_some() {
            out.push((format!("{}.body", self.rule), self.body()));
        }
        out.extend(self.object_rules());
        // The JSON calls a list in a tagged format's own wrapper holds.
        out.extend(self.json_in_wrapper().iter().flat_map(Self::object_rules));
        out
    }

    /// The head and tail rules of a call object that may sit in OpenAI's
    /// wrapper, when this grammar owns them.
    fn object_rules(&self) -> Vec<(String, Expr)> {
        let mut out = Vec::new();
        if self.json_rules.is_none() {
            for notation in [Notation::Json, Notation::Python] {
                let wrapped = openai_wrapper(&self.layout.naming, notation).is_some();
                if let Some((head, tail)) = self.object_parts(notation).filter(|_| wrapped) {
                    out.push((self.json_rule(notation, "head"), head));
                    out.push((self.json_rule(notation, "tail"), tail));
                }
            }
        }
        out
    }

    /// The name of the rule that reads `part` (`head` or `tail`) of a
    /// call object in `notation` in OpenAI's wrapper: this grammar's own,
    /// or the one of the grammar it shares them with (see
    /// [`ToolGrammar::json_rules`]).
    fn json_rule(&self, notation: Notation, part: &str) -> String {
        let owner = self.json_rules.as_deref().unwrap_or(&self.rule);
        match notation {
            Notation::Json => format!("{owner}.{part}"),
            Notation::Python => format!("{owner}.python.{part}"),
        }
    }

    /// One call, captured whole: its start marker, then [`ToolGrammar::body`].
    fn call_body(&self) -> Expr {
        let start = Marker::new(self.layout.start()).expr();
        // A dropped opener is read only before the distinctive name prefix
        // that lets it drop: a JSON object where the call's opener was due
        // (`{"name": ...}` at the output's start) is no call of the wrapper.
        let start = match (self.distinctive_name_prefix(), self.distinctive_name_end()) {
            (Some(prefix), _) => choice([start, and(seq([ws(), lit(&prefix)]))]),
            // A name on its line, then the token that ends it.
            (None, Some(end)) => {
                let named = seq([ws(), until([end.as_str(), "\n"]), lit(&end)]);
                choice([start, and(named)])
            }
            (None, None) => start,
        };
        let one = match self.shared_wrapper() {
            Some(_) => cap(CALL, seq([start, rule(&format!("{}.body", self.rule))])),
            None => cap(CALL, seq([start, self.body()])),
        };
        let one = match self.name_first_address() {
            Some(_) => {
                let name_first = ToolGrammar {
                    name_first: true,
                    ..self.clone()
                };
                choice([one, cap(CALL, name_first.body())])
            }
            None => one,
        };
        match self.listed_calls() {
            Some(listed) => choice([listed, one]),
            None => one,
        }
    }

    /// JSON calls a model wrote as a list inside one call wrapper of a
    /// format whose wrapper holds one object (`<tool_call>[{...},
    /// {...}]</tool_call>`, a list-of-calls dialect mixed into the
    /// template's): each object is a call, the brackets and commas are
    /// framing (given back with a withdrawn call, as a separator is).
    /// A tagged format's own wrapper holds such a list too (see
    /// [`ToolGrammar::json_in_wrapper`]), up to the wrapper's closer.
    /// `None` for other formats: those without a call marker of their own
    /// read lists already.
    fn listed_calls(&self) -> Option<Expr> {
        let json_name = self.layout.naming.is_json();
        let start = Marker::new(self.layout.start());
        if start.is_blank() {
            return None;
        }
        let (items, end) = match json_name {
            true => (self.clone(), self.layout.end()),
            false => (self.json_in_wrapper()?, self.layout.end()),
        };
        let item = items.body_ending(and(seq([ws(), choice([lit(","), lit("]")])])));
        let first = cap(
            CALL,
            seq([start.expr(), ws(), lit("["), ws(), item.clone()]),
        );
        let next = seq([
            cap(SECTION_OPEN, seq([ws(), lit(","), ws()])),
            cap(CALL, item),
        ]);
        let end = Marker::new(end).closer_expr();
        let close = self.closer(cap(FRAME, seq([ws(), lit("]"), ws(), end])));
        Some(seq([first, star(next), close]))
    }

    /// The next call inside the same wrapper (see [`ToolGrammar::shared_wrapper`]).
    pub(super) fn next_in_wrapper(&self) -> Option<Expr> {
        self.shared_wrapper()?;
        Some(cap(CALL, rule(&format!("{}.body", self.rule))))
    }

    /// Where a call's end marker is the arguments' close and a special
    /// token (`}<tool_call|>`) and its name has a prefix (`call:`), a model
    /// may write several calls in one wrapper
    /// (`<|tool_call>call:a{...}call:b{...}<tool_call|>`): the close alone
    /// ends a call that the next name prefix follows. The close, and the
    /// prefix that must follow it.
    fn shared_wrapper(&self) -> Option<(String, String)> {
        let prefix = Marker::new(self.tagged()?.prefix).first_core()?.to_string();
        let end = self.layout.end().trim();
        let open_at = end.rfind(['<', '['])?;
        let token = crate::markers::marker_at(end, open_at)?;
        let close = end[..open_at].trim();
        let closes_arguments = !close.is_empty() && close.chars().all(|c| "}])".contains(c));
        (token.end == end.len() && closes_arguments).then(|| (close.to_string(), prefix))
    }

    /// A call after its start marker: head, arguments and end.
    fn body(&self) -> Expr {
        let end = Marker::new(self.layout.end()).closer_expr();
        // After a JSON call object whitespace is JSON's: models write
        // `}\n</tool_call>` where the template writes `}</tool_call>`. (An
        // end the template writes with whitespace before it reads any.)
        let raw_end = self.layout.end();
        let glued = !raw_end.starts_with(|c: char| c.is_ascii_whitespace());
        let end = match self.layout.naming.is_json() && glued && !Marker::blank(raw_end) {
            true => seq([ws(), end]),
            false => end,
        };
        let end = match self.shared_wrapper() {
            Some((close, prefix)) => choice([end, seq([lit(&close), and(lit(&prefix))])]),
            None => end,
        };
        self.body_ending(end)
    }

    /// A call's head and arguments, then `end`.
    fn body_ending(&self, end: Expr) -> Expr {
        let naming = &self.layout.naming;
        // Built once: the wrapped and the bare call recover the same way.
        let broken = (!self.strict).then(|| self.broken());
        let guard = self.bare_name_guard();
        let call_ending = |open: Expr, head: Expr, tail: Expr, close: Expr, end: Expr| {
            let rest = seq([tail, close, end]);
            let rest = match &broken {
                None => rest,
                Some(broken) => recover(rest, broken.clone()),
            };
            seq([open, head, guard.clone(), commit(), rest])
        };
        let call = |open, head, tail, close| call_ending(open, head, tail, close, end.clone());
        // The call in each notation, bare or in OpenAI's wrapper; the JSON
        // one first, so that JSON calls read as they always have.
        let object = |notation| match openai_wrapper(naming, notation) {
            Some((open, close)) => {
                let head = rule(&self.json_rule(notation, "head"));
                let tail = rule(&self.json_rule(notation, "tail"));
                Some(choice([
                    call(open, head.clone(), tail.clone(), close),
                    call(empty(), head, tail, empty()),
                ]))
            }
            None => {
                let (head, tail) = self.object_parts(notation)?;
                Some(call(empty(), head, tail, empty()))
            }
        };
        let notations = [Notation::Json, Notation::Python];
        let own = notations.into_iter().filter_map(object);
        // A JSON call object in the format's own wrapper, tried last: the
        // wrapper's closer ends it (the layout's end closes a tagged call's
        // inner tags too, `</function>\n</tool_call>`).
        let json = self.json_in_wrapper();
        let wrapper_end = seq([ws(), Marker::new(self.layout.end()).closer_expr()]);
        let in_wrapper = json.iter().flat_map(|json| {
            let parts = notations.into_iter().filter_map(|n| json.object_parts(n));
            let end = &wrapper_end;
            parts.map(move |(head, tail)| call_ending(empty(), head, tail, empty(), end.clone()))
        });
        choice(own.chain(in_wrapper).collect::<Vec<_>>())
    }

    /// The head and tail of a call in `notation`: the format's own (JSON
    /// for any format), or a JSON call object a model wrote as a Python
    /// dict (`{'name': 'f', 'arguments': {...}}`) for a format whose name
    /// is a member of the object, its name checked as a JSON call's is.
    fn object_parts(&self, notation: Notation) -> Option<(Expr, Expr)> {
        if notation == Notation::Json {
            return Some((self.head(), self.tail()));
        }
        let Naming::JsonMember { name: path, .. } = &self.layout.naming else {
            return None;
        };
        let paths = self.json_paths();
        let known = and(seq([lit("'"), self.known_name.clone()]));
        let head = json_head(path, &paths, 0, &known, Notation::Python);
        Some((head, json_tail(path, &paths, Notation::Python)))
    }

    /// A call that starts with a bare name (no marker before it, as in
    /// functionary's `>>>name\n{...}`) is only a call once its JSON
    /// arguments begin: before that, `all\n` or any first line of text
    /// would be taken for a name.
    fn bare_name_guard(&self) -> Expr {
        let bare = self
            .tagged()
            .is_some_and(|t| Marker::blank(t.prefix) && Marker::blank(self.layout.start()));
        match (self.layout.arguments(), bare) {
            (Some(Arguments::Json { as_string: false }), true) => and(seq([ws(), lit("{")])),
            _ => empty(),
        }
    }

    /// Up to and including the function name.
    fn head(&self) -> Expr {
        self.head_naming(&self.known_name, &self.known_json_name)
    }

    /// Up to and including a function name that `name` (or, quoted,
    /// `json_name`) accepts where it starts.
    pub(super) fn head_naming(&self, name: &Expr, json_name: &Expr) -> Expr {
        match &self.layout.naming {
            Naming::JsonMember { name: path, .. } => {
                json_head(path, &self.json_paths(), 0, json_name, Notation::Json)
            }
            Naming::JsonKey => seq([
                lit("{"),
                ws(),
                json_name.clone(),
                cap(NAME, json_string()),
                ws(),
                lit(":"),
                ws(),
            ]),
            Naming::Python => match self.tagged() {
                Some(t) => {
                    let name = seq([name.clone(), cap(NAME, identifier())]);
                    seq([
                        Marker::new(t.prefix).expr(),
                        name,
                        ws(),
                        Marker::new(t.suffix).expr(),
                    ])
                }
                None => chat_autoparser_peg::fail(),
            },
            Naming::Tagged => match self.tagged() {
                Some(t) => self.tagged_head(&t, name),
                None => chat_autoparser_peg::fail(),
            },
        }
    }

    /// After the name: arguments, and the rest of a JSON call object.
    fn tail(&self) -> Expr {
        match (&self.layout.naming, self.layout.arguments()) {
            (Naming::JsonMember { name: path, .. }, _) => {
                json_tail(path, &self.json_paths(), Notation::Json)
            }
            (Naming::JsonKey, _) => seq([cap(ARGS, json()), ws(), lit("}")]),
            (_, Some(Arguments::Python)) => python_arguments(),
            (_, Some(Arguments::Tagged(t))) => tagged_arguments(t, self.layout.end()),
            (_, Some(Arguments::Json { as_string: true })) => {
                seq([ws(), cap(ARGS_STRING, json_string()), ws()])
            }
            _ => seq([ws(), json_arguments(), ws()]),
        }
    }
}
