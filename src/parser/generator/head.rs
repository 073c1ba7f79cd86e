//! A tagged call's head: the name's prefix, the name, its suffix, and the
//! id, counter or repeated name the layout writes around it; and names
//! addressed from inside a section header (`<|channel|>commentary
//! to=functions.f <|constrain|>json<|message|>`).
//!
//! - A tool-call name never holds whitespace or a marker the analysis
//!   learned: its slot stops there ([`ToolGrammar::name_stops`]), so a
//!   call header that shares its start with another header
//!   (` to=NAME<|message|>`, ` to=self<|message|>`) fails on the other
//!   header instead of naming a call after what follows it.
//! - A tool-call name written inside a header may follow any label and
//!   precede any rest of it; words of the template there are scaffolding,
//!   others are text the model wrote (`EXTRA`).
//! - A name addressed after a namespace (`to=functions.f`) may leave the
//!   namespace out (`to=f`), for one of the request's functions only.
//! - A name addressed inside the header a call opens may come first, the
//!   header after it (`to=functions.f<|channel|>commentary json<|message|>`
//!   where the template writes `<|channel|>commentary to=functions.f ...`).
//!
//! Invariant: a head fails, consuming nothing, unless it names a function
//! the request accepts (the `name` lookahead it is given).

use super::names::{
    counted_name, is_namespace, space_set, starts_with_token, tagged_id, tagged_name,
};
use super::tool_section::ToolGrammar;
use crate::parser::marker::Marker;
use crate::parser::sections::{known_label, label, HeaderMarks, Words};
use crate::parser::tags::*;
use crate::protocol::{Arguments, TaggedName};
use chat_autoparser_peg::{
    and, cap, choice, class, empty, lit, literals, not, opt, seq, star, until, ws, Expr,
};

impl<'a> ToolGrammar<'a> {
    /// Up to and including a tagged name, and the id around it, as the
    /// layout spells them.
    pub(super) fn tagged_head(&self, t: &TaggedName<'_>, name: &Expr) -> Expr {
        if self.name_first {
            return self.name_first_head(name);
        }
        // A name addressed inside a header opened before it
        // (`<|channel|>commentary to=functions.f`) is followed by the rest of
        // that label; one with no header before it by the suffix's own.
        match self.header_lead(t.prefix) {
            Some(lead) => choice([
                self.tagged_head_after(t, name, seq([lead, self.address(t.prefix)]), true),
                self.tagged_head_after(t, name, self.address(t.prefix), false),
            ]),
            None => self.tagged_head_after(t, name, self.name_prefix(t.prefix), true),
        }
    }

    /// [`ToolGrammar::tagged_head`] after `prefix`; `in_label`: a header's
    /// label was written before the name.
    fn tagged_head_after(
        &self,
        t: &TaggedName<'_>,
        name: &Expr,
        prefix: Expr,
        in_label: bool,
    ) -> Expr {
        let suffix_expr = self.name_suffix(t, in_label);
        if let Some(separator) = t.counter {
            return self.counted_head(t, name, prefix, separator, suffix_expr);
        }
        let suffix_marker = Marker::new(t.suffix);
        let name_end_text = match (t.id_after, suffix_marker.is_blank()) {
            (Some((p, _)), true) => p,
            _ => t.suffix,
        };
        let name_end = Marker::new(name_end_text);
        // Models put whitespace before a special token after the name
        // (`get_weather <｜tool▁sep｜>`) as they do after one: scaffolding.
        // A header's rest reads its own (`header_rest`).
        let ends_header = self
            .headers
            .iter()
            .any(|h| t.suffix.trim_end().ends_with(h.close));
        let space = match starts_with_token(name_end_text) && !ends_header {
            true => ws(),
            false => empty(),
        };
        // A model may leave the made-up id out (`[TOOL_CALLS]NAME[ARGS]{...}`
        // where the template renders `NAME[CALL_ID]ID[ARGS]`): what stays is
        // the id's closing marker when nothing else ends the name.
        let mut stops = self.name_stops();
        let id_after = match (t.id_after, suffix_marker.is_blank()) {
            (Some((p, s)), true) => {
                stops.extend(Marker::new(s).first_core().map(str::to_string));
                choice([tagged_id(p, s), Marker::new(s).expr()])
            }
            (Some((p, s)), false) => opt(tagged_id(p, s)),
            (None, _) => empty(),
        };
        // A server that decodes with `skip_special_tokens` drops the tokens
        // between the name and JSON arguments: `[TOOL_CALLS]NAME[ARGS]{...}`
        // reaches it as `[TOOL_CALLS]NAME{...}` (the form vLLM's Mistral
        // parser reads). The arguments' `{` then ends the name.
        let (suffix_expr, id_after) = match self.strippable_tokens(t) {
            true => {
                stops.push("{".into());
                let stripped = and(lit("{"));
                (
                    choice([suffix_expr, stripped.clone()]),
                    choice([id_after, stripped]),
                )
            }
            false => (suffix_expr, id_after),
        };
        let id_before = t
            .id_before
            .map_or_else(empty, |(p, s)| opt(tagged_id(p, s)));
        seq([
            id_before,
            prefix,
            name.clone(),
            cap(
                NAME,
                choice([self.spaced_names.clone(), tagged_name(&name_end, &stops)]),
            ),
            space,
            suffix_expr,
            id_after,
        ])
    }

    /// What follows a tagged name: the rest of a header it ends
    /// ([`ToolGrammar::header_rest`]) or its suffix, then the name written
    /// again where the layout repeats it.
    fn name_suffix(&self, t: &TaggedName<'_>, in_label: bool) -> Expr {
        let header_or_suffix = self
            .header_rest(t.suffix, in_label)
            .unwrap_or_else(|| Marker::new(t.suffix).expr());
        match t.echo {
            // The grammar does not check the repeated name against the
            // first one; the decoder keeps one that differs as content.
            Some(after) => {
                let after = Marker::new(after);
                seq([
                    header_or_suffix,
                    not(class(space_set())),
                    cap(ECHO, tagged_name(&after, &self.name_stops())),
                    after.expr(),
                ])
            }
            None => header_or_suffix,
        }
    }

    /// A head whose name is followed by a counter (`functions.f:0`): the
    /// id is all of it (see [`counted_name`]).
    fn counted_head(
        &self,
        t: &TaggedName<'_>,
        name: &Expr,
        prefix: Expr,
        separator: &str,
        suffix_expr: Expr,
    ) -> Expr {
        // Models write a namespace's name without it (`get_weather:0`
        // for `functions.get_weather:0`), and whitespace before the
        // special token after the id.
        let prefix = match is_namespace(t.prefix) {
            true => choice([seq([prefix, name.clone()]), name.clone()]),
            false => seq([prefix, name.clone()]),
        };
        let space = match starts_with_token(t.suffix) {
            true => ws(),
            false => empty(),
        };
        seq([
            counted_name(prefix, separator, &self.name_stops()),
            space,
            suffix_expr,
        ])
    }

    /// Whether only special tokens stand between a tagged name and its JSON
    /// object arguments (`[ARGS]`, `[CALL_ID]ID[ARGS]`): a decoder that
    /// skips special tokens leaves the name right before the `{`.
    fn strippable_tokens(&self, t: &TaggedName<'_>) -> bool {
        let json = self.layout.arguments() == Some(&Arguments::Json { as_string: false });
        let token = |m: &str| {
            let m = m.trim();
            crate::markers::marker_at(m, 0).is_some_and(|r| r.len() == m.len())
        };
        let id_tokens = t.id_after.is_none_or(|(p, s)| token(p) && token(s));
        let suffix = t.suffix.trim();
        let suffix_ok = match suffix.is_empty() {
            true => t.id_after.is_some(),
            false => token(suffix),
        };
        json && t.echo.is_none() && id_tokens && suffix_ok
    }

    /// The name's prefix. A call may be addressed from inside a header, after
    /// the section's label: when the call starts with a header's opening,
    /// the label the template wrote before the address (`call` of
    /// `call tool="`) may be any label ([`ToolGrammar::call_label`]). (When
    /// the call's framing has no marker of its own, a header may open before
    /// the prefix: [`ToolGrammar::header_lead`].)
    fn name_prefix(&self, prefix: &str) -> Expr {
        let call_start = self.layout.start().trim();
        let opened = self.headers.iter().find(|h| h.open == call_start);
        let addressed = prefix
            .trim_end()
            .rsplit_once(char::is_whitespace)
            .map(|(_, a)| a)
            .filter(|a| !a.is_empty());
        match (opened, addressed) {
            (Some(h), Some(to)) => seq([self.call_label(h, to), self.address(to)]),
            _ => self.address(prefix),
        }
    }

    /// The address in the name's prefix (`to=functions.` of `commentary
    /// to=functions.`), when the call opens with a header's opening
    /// (`<|channel|>`) and the name is addressed inside that header: models
    /// also write the address and name first and the header after them
    /// (`to=functions.f<|channel|>commentary json<|message|>`, gpt-oss's
    /// role-header order; see [`ToolGrammar::name_first_head`]).
    pub(super) fn name_first_address(&self) -> Option<&str> {
        let call_start = self.layout.start().trim();
        self.headers.iter().find(|h| h.open == call_start)?;
        let prefix = self.tagged()?.prefix.trim_end();
        let (_, address) = prefix.rsplit_once(char::is_whitespace)?;
        (!address.is_empty() && address.contains('=')).then_some(address)
    }

    /// A call head in the order [`ToolGrammar::name_first_address`]
    /// describes, with no start marker before it: the address, the name,
    /// then the header the format's call opens, its label and rest read as
    /// a header's rest after a name is (the template's words and numbers
    /// are scaffolding, other text `EXTRA`).
    fn name_first_head(&self, name: &Expr) -> Expr {
        let (Some(address), Some(h)) = (
            self.name_first_address(),
            self.headers
                .iter()
                .find(|h| h.open == self.layout.start().trim()),
        ) else {
            return chat_autoparser_peg::fail();
        };
        let rest = self
            .header_rest(h.close, true)
            .unwrap_or_else(|| lit(h.close));
        let name_end = Marker::new(h.open);
        seq([
            self.address(address),
            name.clone(),
            cap(
                NAME,
                choice([
                    self.spaced_names.clone(),
                    tagged_name(&name_end, &self.name_stops()),
                ]),
            ),
            ws(),
            lit(h.open),
            ws(),
            rest,
        ])
    }

    /// A header's opening and label that may come before `prefix`, when
    /// the call's framing has no marker of its own and the turn has headers.
    fn header_lead(&self, prefix: &str) -> Option<Expr> {
        if !self.layout.start().trim().is_empty() || self.headers.is_empty() {
            return None;
        }
        let prefix_core = Marker::new(prefix).first_core()?.to_string();
        let leads = self
            .headers
            .iter()
            .filter(|h| !prefix_core.starts_with(h.open))
            .map(|h| seq([lit(h.open), self.call_label(h, &prefix_core)]));
        Some(choice(leads))
    }

    /// A name's prefix that ends with a namespace after an address
    /// (`to=functions.`): models also write a request's function without
    /// the namespace (`to=get_weather`), so the prefix may end before it,
    /// but only before one of the request's names: other recipients
    /// (`to=assistant`, `to=python`, `to=container.exec`) address no call,
    /// even where a call may name any function (`unknown_tool: call`).
    ///
    /// Models put whitespace after the address (`to= functions.f`, as they
    /// do after a special token), and after any prefix that ends in `=` or
    /// `:` (`<function= f>`, `call: f`): it is scaffolding.
    fn address(&self, prefix: &str) -> Expr {
        let Some(&to) = address_forms(prefix).get(1) else {
            return match prefix.ends_with(['=', ':']) {
                true => seq([Marker::new(prefix).expr(), ws()]),
                false => Marker::new(prefix).expr(),
            };
        };
        let to_expr = seq([Marker::new(to).expr(), ws()]);
        let full = seq([to_expr.clone(), Marker::new(&prefix[to.len()..]).expr()]);
        match matches!(self.requested_name, Expr::Fail) {
            true => full,
            false => choice([full, seq([to_expr, self.requested_name.clone()])]),
        }
    }

    /// The label of a header before a call's address (`commentary` of
    /// `<|channel|>commentary to=functions.f`): scaffolding when it holds
    /// only the template's words, else text the model wrote (`EXTRA`).
    fn call_label(&self, h: &HeaderMarks, address: &str) -> Expr {
        let (markers, stops) = (&self.markers, &address_forms(address));
        let known = known_label(h, markers, stops, Words::Any, &self.vocabulary);
        choice([
            seq([known, and(literals(stops))]),
            cap(EXTRA, label(h, markers, stops, Words::Any)),
        ])
    }

    /// A name suffix that ends a header (`<|channel|>commentary json<|message|>`,
    /// `" index="1"<|sep|>`): the rest of the header up to its close is
    /// scaffolding as far as its words are the template's, and numbers
    /// (`index="2"`, ` <|constrain|>json`); from the first other word on it
    /// is text the model wrote (`EXTRA`: `note="..."` of
    /// `" index="1" note="..."`).
    ///
    /// `in_label`: the header's label was written before the name, so markup
    /// may follow the name at once (`to=functions.f<|constrain|>json`);
    /// else the rest opens as the suffix does (`<|channel|>`), and markup
    /// only follows a word.
    fn header_rest(&self, suffix: &str, in_label: bool) -> Option<Expr> {
        let h = self
            .headers
            .iter()
            .find(|h| suffix.trim_end().ends_with(h.close))?;
        let close = lit(h.close);
        let ends = choice([close.clone(), lit("\n"), lit(" ")]);
        let whole = |word: Expr| seq([word, and(ends.clone())]);
        let word = self.vocabulary.known_word(&ends);
        let markup = self.vocabulary.known_markup(&ends);
        let next = choice([markup.clone(), word.clone()]);
        let first = match in_label {
            true => next.clone(),
            false => word,
        };
        let known = seq([opt(whole(first)), star(seq([lit(" "), whole(next)]))]);
        let other = choice([and(close.clone()), cap(EXTRA, until([h.close, "\n"]))]);
        Some(seq([known, other, close, ws()]))
    }

    /// Where a name ends besides its suffix: at whitespace, at a special
    /// token's opening `<|` (gpt-oss models write `to=functions.f<|constrain|>json`
    /// with no space before the token) and at any marker the analysis
    /// learned (names never hold those; labels, addresses and reasoning
    /// may). Without these stops, a name slot that starts where another
    /// header does (` to=NAME<|message|>` and the reasoning header
    /// ` to=self<|message|>`) would run on to the suffix's next occurrence,
    /// over markers and whole messages.
    fn name_stops(&self) -> Vec<String> {
        let mut out: Vec<String> = [" ", "\t", "\r", "<|"].map(String::from).to_vec();
        for h in self.headers {
            out.extend([h.open.to_string(), h.close.to_string()]);
        }
        out.extend(self.markers.iter().cloned());
        out.sort();
        out.dedup();
        out
    }
}

/// `prefix`, then `prefix` without the namespace it ends with after an
/// address (`to=` of `to=functions.`), when it does.
fn address_forms(prefix: &str) -> Vec<&str> {
    let mut forms = vec![prefix];
    let before_dot = prefix.trim_end().strip_suffix('.').unwrap_or_default();
    let bare = before_dot.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
    if bare.len() < before_dot.len() && bare.ends_with(['=', ':']) {
        forms.push(bare);
    }
    forms
}
