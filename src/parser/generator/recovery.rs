//! What the grammar reads beyond the template's framing, so that a model's
//! slips lose nothing:
//!
//! - A call whose name is none of the request's tools fails in its head;
//!   [`ToolGrammar::unknown_head`] then lets the body mark where it starts
//!   (an empty `UNKNOWN_TOOL` capture, reported as a diagnostic) and its
//!   text is content.
//! - After the head, `recover` sends the rest of a call the model broke to
//!   [`ToolGrammar::broken`] (`BROKEN`: content, with a diagnostic).
//! - A distinctive call or name opener lets a section start without the
//!   section's (or the call's) own opening marker, which models drop.
//! - Spare special tokens (`<|python_tag|>`) and other formats' call
//!   markers (`[TOOL_CALLS]`, `<tool_call>...</tool_call>`: a model mixing
//!   dialects) around bare JSON calls are framing; the foreign ones, and
//!   their closers alone, are captured `FOREIGN` (see
//!   [`Foreign`](crate::protocol::outline::Foreign)):
//!   the policy makes them content with a diagnostic or leaves them out.
//!   A code fence around a bare JSON call is such a wrapper on templates
//!   whose calls are not bare JSON (`ToolGrammar::fenced`).
//! - The format's own closers where no call is open, and its section's
//!   tokens around text that is no call, are stray markers (`STRAY`, see
//!   `body`): the text between is content.
//!
//! Invariant: every text these read is captured (`UNKNOWN_TOOL` then
//! `CONTENT`, `BROKEN`, `FOREIGN`, `STRAY`), so the decoder can give it back
//! or name it.

use super::json_call::{openai_wrapper, Notation};
use super::names::identifier;
use super::tool_section::ToolGrammar;
use crate::parser::marker::{is_token, Marker};
use crate::parser::tags::*;
use crate::protocol::outline::Foreign;
use chat_autoparser_peg::{
    cap, choice, class, empty, lit, not, opt, seq, until, ws, ByteSet, Expr,
};

impl<'a> ToolGrammar<'a> {
    /// A call's start up to a name that is none of the request's, as its
    /// opening markers and the head after them: what [`ToolGrammar::call`]
    /// refuses for its name alone. `None` when the request names no tools.
    pub(super) fn unknown_head(&self) -> Option<(Expr, Expr)> {
        // A fenced call of an unknown tool is a code block: content.
        if matches!(self.unknown_name, Expr::Fail) || self.fenced || self.list.is_some() {
            return None;
        }
        let start = Marker::new(self.layout.start()).expr();
        let section = Marker::new(self.marks.start).expr();
        let head = self.head_naming(&self.unknown_name, &self.unknown_json_name);
        let head = match openai_wrapper(&self.layout.naming, Notation::Json) {
            Some((open, _)) => choice([seq([opt(open), head.clone()]), head]),
            None => head,
        };
        // The call's own opening marker, when the format has one, must be
        // there: an optional one would let any line of text that ends like
        // a name (`Let me check.\n` before `<tool_call>`) pass for a call.
        let opener = match (self.marks.start.trim(), self.layout.start().trim()) {
            ("", "") => seq([opt(section), opt(start)]),
            (_, "") => seq([section, opt(start)]),
            ("", _) => seq([opt(section), start]),
            _ => choice([seq([section, opt(start.clone())]), start]),
        };
        Some((opener, head))
    }

    /// The same grammar, where bare JSON calls may sit inside `wrappers`
    /// (which then start a section too).
    pub(super) fn with_wrappers(mut self, wrappers: &[String]) -> ToolGrammar<'a> {
        if self.is_bare_json() {
            self.wrappers = wrappers.to_vec();
            self.triggers.extend(wrappers.iter().cloned());
        }
        self
    }

    /// The same grammar, where bare JSON calls may sit between other
    /// formats' markers `(openers, closers)`, and a closer may stand alone
    /// (both start a section then).
    pub(super) fn with_foreign(mut self, foreign: &'a Foreign) -> ToolGrammar<'a> {
        if self.is_bare_json() {
            self.foreign = foreign;
            let (openers, closers) = (&foreign.openers, &foreign.closers);
            self.triggers.extend(openers.iter().chain(closers).cloned());
        }
        self
    }

    /// A foreign marker of `list`, captured (fails when there is none).
    pub(super) fn foreign_expr(list: &[String]) -> Expr {
        match list.is_empty() {
            true => chat_autoparser_peg::fail(),
            false => cap(FOREIGN, choice(list.iter().map(lit))),
        }
    }

    /// A foreign closer with no call before it (`Sure.</tool_call>`).
    pub(super) fn lone_closer(&self) -> Option<Expr> {
        let closers = &self.foreign.closers;
        (!closers.is_empty()).then(|| Self::foreign_expr(closers))
    }

    /// Text inside another format's wrapper, no call in it (`<|python_start|>It
    /// is sunny.<|python_end|>`): a foreign opener, `text` (up to the next
    /// trigger) as content, and a foreign closer; both markers captured
    /// `FOREIGN`, as around a call, so the `foreign_markers` policy decides
    /// the pair alike (a lone closer alone would leave the opener in the
    /// content). Tried after the calls: a call there is read as one.
    pub(super) fn foreign_wrapped_text(&self, text: &Expr) -> Option<Expr> {
        let (openers, closers) = (&self.foreign.openers, &self.foreign.closers);
        if openers.is_empty() || closers.is_empty() {
            return None;
        }
        Some(seq([
            Self::foreign_expr(openers),
            cap(CONTENT, text.clone()),
            Self::foreign_expr(closers),
        ]))
    }

    /// The format's own call and section closers, from their first
    /// bracketed token on (`</tool_call>`, `<|tool_call_end|>` of
    /// `]<|tool_call_end|>`), of a call or section that has an opener too:
    /// read where no call is open, one closes nothing (see `body`).
    pub(super) fn own_closers(&self) -> Vec<Marker> {
        let pairs = [
            (self.marks.start, self.marks.end),
            (self.layout.start(), self.layout.end()),
        ];
        let opened = pairs.into_iter().filter(|(open, _)| !Marker::blank(open));
        opened
            .filter_map(|(_, close)| Marker::new(close).from_first_token())
            .collect()
    }

    /// Text the model wrote inside the section's own wrapper that is no
    /// call (`<|tool_call_start|>I will check.<|tool_call_end|>`): the
    /// wrapper's tokens, captured `STRAY` (they open and close nothing),
    /// and the text between them, `text` (up to the next trigger), as content.
    /// Text that starts like a call ([`ToolGrammar::call_like`]) is a call
    /// that did not parse: not this (its text stays content, verbatim).
    /// `None` unless the section opens with a token and closes with one.
    pub(super) fn wrapped_text(&self, text: &Expr) -> Option<Expr> {
        let start = Marker::new(self.marks.start);
        let open = start.first_core().filter(|c| is_token(c))?;
        let close = Marker::new(self.marks.end).from_first_token()?;
        Some(seq([
            cap(STRAY, lit(open)),
            not(seq([ws(), self.call_like(&start.after_first_core())])),
            cap(CONTENT, text.clone()),
            cap(STRAY, close.expr_exact_tail()),
        ]))
    }

    /// What a call starts with after the section's opening token: the rest
    /// of the section's opener (`[`), else the call's opener, else the
    /// name's prefix, else a name and what ends it (`get_weather(`); a
    /// JSON call's brace or bracket.
    fn call_like(&self, rest: &Marker) -> Expr {
        let tagged = self.tagged();
        let prefix = tagged.map(|t| Marker::new(t.prefix));
        let markers = [
            Some(rest.clone()),
            Some(Marker::new(self.layout.start())),
            prefix,
        ];
        if let Some(m) = markers.into_iter().flatten().find(|m| !m.is_blank()) {
            return m.expr();
        }
        match tagged {
            Some(t) => seq([identifier(), ws(), Marker::new(t.suffix).expr()]),
            None => class(ByteSet::of(b"{[")),
        }
    }

    /// The name's prefix is distinctive enough to start a call by itself
    /// (`<function=`): models sometimes drop the call's opening marker.
    pub(super) fn distinctive_name_prefix(&self) -> Option<String> {
        let core = Marker::new(self.tagged()?.prefix).first_core()?.to_string();
        let marked =
            core.len() >= 3 && core.starts_with(['<', '[']) && core.contains(['=', ' ', '|']);
        marked.then_some(core)
    }

    /// The token that ends a bare name (`<|tool_call_argument_begin|>` of
    /// `functions.f:0<|tool_call_argument_begin|>`), when the call's own
    /// opener is a token inside a section that has an opener of its own:
    /// models sometimes drop the call's opener there
    /// (`<|tool_calls_section_begin|>functions.f:0<|tool_call_argument_begin|>{...}`),
    /// and a name (after the text its prefix is, `functions.`) followed on
    /// its line by that token is a call's head.
    pub(super) fn distinctive_name_end(&self) -> Option<String> {
        let tagged = self.tagged()?;
        Marker::new(self.marks.start).first_core()?;
        let opener = Marker::new(self.layout.start());
        if !opener.first_core().is_some_and(is_token) {
            return None;
        }
        let end = Marker::new(tagged.suffix).first_core()?.to_string();
        is_token(&end).then_some(end)
    }

    /// The call's own opening marker, when the section also has one and the
    /// call's is a whole tag (`<|tool_call_begin|>` inside
    /// `<|tool_calls_section_begin|>`): models sometimes drop the section's.
    pub(super) fn distinctive_call_start(&self) -> Option<String> {
        Marker::new(self.marks.start).first_core()?;
        let core = Marker::new(self.layout.start()).first_core()?.to_string();
        let tag = core.len() >= 3 && core.starts_with(['<', '[']) && core.ends_with(['>', ']']);
        tag.then_some(core)
    }

    /// What a broken call leaves: text up to the call's end (consumed), the
    /// section's closing token (which then closes the section: a model that
    /// left out the call's closer wrote the section's where it was due) or
    /// the next tool section.
    pub(super) fn broken(&self) -> Expr {
        let end = Marker::new(self.layout.end());
        let mut stops: Vec<String> = end.delimiters();
        // Only a token: a bracket (`]` of `]<|tool_call_end|>`) may be
        // the broken call's own text.
        let section_end = Marker::new(self.marks.end).from_first_token();
        stops.extend(section_end.iter().flat_map(Marker::delimiters));
        stops.extend(self.triggers.iter().cloned());
        stops.retain(|s| !s.is_empty());
        let text = if stops.is_empty() {
            chat_autoparser_peg::rest()
        } else {
            until(stops)
        };
        let close = if end.is_blank() {
            empty()
        } else {
            opt(end.expr())
        };
        seq([cap(BROKEN, text), close])
    }
}
