//! The printer: an [`Outline`] walked into Lark rules, node by node.
//!
//! Strict: `lenient` nodes are left out. Markers are their cores with
//! flexible whitespace ([`lexemes::marker`]); fixed text is read as
//! `text_pieces` reads it; values are printed by [`Values`]; a rule of the
//! outline is one Lark rule, printed once.
//!
//! Text up to a marker ([`Kind::Until`]) is one lazy lexeme ending with the
//! marker's first core, so what follows it is printed *stripped* of that
//! core ([`Printer::strip`]): the marker's rest, or a section whose calls
//! all open with it (each call's rule stripped into a `_rest` copy). An
//! optional text up to a marker (content before a section) is the same
//! lexeme, which matches the empty text too; where the optional part holds
//! more (a content wrapper's opening), that comes first, optionally.
//!
//! Where free text may begin (the start of the output, of the body), the
//! printer tracks what else may begin there ([`At`]): text lexemes exclude
//! the other options' first cores, a marker whose first core begins with a
//! rival option's lazy head is that head then the core's rest (else the
//! head would end inside it), and other markers fold their whitespace in.
//!
//! Invariants: reads nodes only (never the analysis' format types); the
//! output depends only on the outline and the options; never panics.

use std::collections::HashMap;
use std::rc::Rc;

use super::super::schema::{member_starts, tail_blocks, Block, Member as Spelled};
use super::super::shape::{blank, flat, nullable, sorted_order, tool_name};
use super::lexemes::{self, after_first_core, first_core};
use super::values::{self, Values, JSON_STRING};
use super::writer::{quote, Item, Seq, Writer};
use super::LarkOptions;
use crate::protocol::outline::{Kind, Member, Node, Order, Outline, Produces, Rule, ValueNode};
use crate::protocol::{text_pieces, IdShape, TextPiece};

/// Where a node is printed.
#[derive(Debug, Clone, Default)]
struct At {
    /// Free text may begin here too: the start of the output or the body.
    start: bool,
    /// What a text lexeme beginning here may not begin with.
    exclude: Vec<String>,
    /// The lazy heads (core, exclude) rival options begin with here.
    heads: Vec<(String, Vec<String>)>,
    /// The first cores rival options begin with here.
    rivals: Vec<String>,
}

impl At {
    fn inside() -> At {
        At::default()
    }
}

/// Prints one outline.
pub(super) struct Printer<'o> {
    pub w: Writer<'o>,
    values: Values,
    /// The outline's rules, read in place (a rule holds its tool's
    /// schemas), then stripped copies of them (`base.len()` onwards).
    base: &'o [Rule],
    extra: Vec<Rc<Rule>>,
    /// Rule index → its Lark name, once printed.
    printed: HashMap<usize, String>,
    /// (rule index, core) → the index of its stripped copy.
    stripped: HashMap<(usize, String), usize>,
    /// The tool whose call is being printed, and the member key.
    tool: String,
    key: String,
}

impl<'o> Printer<'o> {
    pub fn new(options: &'o LarkOptions, outline: &'o Outline) -> Self {
        Printer {
            w: Writer::new(options, outline.warnings.clone()),
            values: Values::default(),
            base: &outline.rules,
            extra: Vec::new(),
            printed: HashMap::new(),
            stripped: HashMap::new(),
            tool: String::new(),
            key: String::new(),
        }
    }

    /// The grammar of `outline`, `start` first.
    pub fn print(&mut self, outline: &Outline) -> String {
        let at = At {
            start: true,
            ..At::default()
        };
        let mut start = self.node(&outline.root, &at);
        start.ws();
        let body = start.render(&self.w);
        self.w.define_first("start", &body);
        self.w.render()
    }

    fn node(&mut self, node: &Node, at: &At) -> Seq {
        let mut out = Seq::default();
        if node.lenient {
            return out;
        }
        if at.start && matches!(node.kind, Kind::Rule(_) | Kind::Repeat { .. }) {
            if let Some(opened) = self.opened(node, at) {
                return opened;
            }
        }
        match &node.kind {
            Kind::Marker(raw) => return self.marker(raw, at),
            Kind::Literal(text) => {
                if at.start {
                    out.ws();
                }
                push_text(&mut out, text);
            }
            Kind::FreeText { exclude } => {
                // Where rivals begin too, text may not begin as they do
                // (the greedy text lexeme would outrun them).
                let mut exclude = exclude.clone();
                if at.start {
                    extend_unique(&mut exclude, &at.rivals);
                }
                out.expr(lexemes::free_text(&mut self.w, &exclude));
            }
            // Text with nothing after it to stop at: no stop inside.
            Kind::Until { stops } => {
                out.ws();
                out.expr(format!("{}?", lexemes::without(&mut self.w, stops)));
            }
            Kind::Attributes { .. } => {
                out.expr(format!("{}?", lexemes::any(&mut self.w)));
            }
            // Only the parser's outline holds a turn's headers; printed
            // as the section header it is.
            Kind::Header { open, close } => {
                out.lit(open);
                out.expr(format!("{}?", lexemes::any(&mut self.w)));
                out.lit(close);
            }
            Kind::Value(v) => {
                if at.start {
                    out.ws();
                }
                out.expr(self.value(v, node.produces));
            }
            Kind::ToolName { name, quoted } => {
                match quoted {
                    true => out.lit(&quote(name)),
                    false => out.lit(name),
                };
            }
            // Only a parser's generic call holds a slot: a request's
            // outline names its tools. Printed as any name would be.
            Kind::NameSlot { quoted } => {
                match quoted {
                    true => out.expr(r#"/"[A-Za-z0-9_.-]+"/"#.into()),
                    false => out.expr("/[A-Za-z0-9_.-]+/".into()),
                };
            }
            Kind::Id(shape) => return self.id(shape),
            Kind::Sequence(_) => return self.items(&flat(node), at),
            Kind::Choice(options) => return self.choice(options, at),
            Kind::Optional(inner) => {
                let inner = self.node(inner, at);
                out.expr(optional(&inner, &self.w));
            }
            Kind::Repeat {
                node,
                min,
                max,
                separator,
            } => return self.repeat(node, *min, *max, separator, at),
            Kind::Members {
                list,
                separator,
                order,
                extra,
                ..
            } => {
                let members = self.members(list, separator, *order, extra.as_deref());
                out.expr(members);
            }
            Kind::Rule(index) => {
                if at.start {
                    out.ws();
                }
                out.expr(self.rule(*index));
            }
        }
        out
    }

    /// Nodes one after the other (see the module doc for text up to a
    /// marker).
    fn items(&mut self, nodes: &[&Node], at: &At) -> Seq {
        let mut out = Seq::default();
        let mut at = at.clone();
        for (i, node) in nodes.iter().enumerate() {
            let rest = &nodes[i + 1..];
            if let Some(tail) = self.text_up_to(node, rest, &at) {
                out.extend(tail);
                return out;
            }
            if let Some(tail) = self.optional_text_up_to(node, rest, &at) {
                out.extend(tail);
                return out;
            }
            let mut here = at.clone();
            if at.start && nullable(node) {
                // What follows may begin here instead.
                if let Some(next) = rest.first() {
                    let leads = self.leads(next);
                    extend_unique(&mut here.exclude, &leads);
                    extend_unique(&mut here.rivals, &leads);
                    here.heads.extend(self.heads_of(next, &at.exclude));
                }
            }
            out.extend(self.node(node, &here));
            at.start = at.start && (nullable(node) || blank(node));
            if at.start {
                // What it begins with may begin here too.
                let leads = self.leads(node);
                extend_unique(&mut at.exclude, &leads);
                extend_unique(&mut at.rivals, &leads);
            }
        }
        out
    }

    /// Text up to a marker (`node`), then `rest` without the marker's
    /// first core; `None` when `rest` does not begin with it.
    fn text_up_to(&mut self, node: &Node, rest: &[&Node], at: &At) -> Option<Seq> {
        let core = self.stop_of(node)?;
        let stripped = self.strip_list(rest, &core)?;
        let exclude = match at.start {
            true => at.exclude.clone(),
            false => Vec::new(),
        };
        let mut out = Seq::default();
        out.expr(match &node.kind {
            Kind::Attributes { .. } => lexemes::line_until(&mut self.w, &core),
            _ => lexemes::until(&mut self.w, &core, &exclude, until_hint(node.produces)),
        });
        // The body begins after the reasoning: free text may too.
        let after = At {
            start: node.produces == Produces::Reasoning,
            ..At::default()
        };
        let rest: Vec<&Node> = stripped.iter().collect();
        out.extend(self.items(&rest, &after));
        Some(out)
    }

    /// An optional part ending with text up to a marker (`node`), then
    /// `rest`: the part's other nodes, optional, then the lazy head (which
    /// matches empty text too), then `rest` without the marker's core.
    fn optional_text_up_to(&mut self, node: &Node, rest: &[&Node], at: &At) -> Option<Seq> {
        let (prefix, core) = self.optional_until(node)?;
        let stripped = self.strip_list(rest, &core)?;
        let exclude = match at.start {
            true => self.head_exclude(&prefix, &core, &at.exclude),
            false => Vec::new(),
        };
        let mut out = Seq::default();
        if !prefix.is_empty() {
            let mut inner = at.clone();
            inner.heads.push((core.clone(), exclude.clone()));
            let prefix = self.items(&prefix, &inner);
            out.expr(optional(&prefix, &self.w));
        }
        out.expr(lexemes::until(&mut self.w, &core, &exclude, "head"));
        let rest: Vec<&Node> = stripped.iter().collect();
        out.extend(self.items(&rest, &At::inside()));
        Some(out)
    }

    /// One of `options` (lenient ones left out).
    fn choice(&mut self, options: &[Node], at: &At) -> Seq {
        let options: Vec<&Node> = options.iter().filter(|o| !o.lenient).collect();
        let mut here = at.clone();
        if at.start {
            for o in &options {
                extend_unique(&mut here.exclude, &free_exclude(o));
            }
            for o in &options {
                let heads = self.heads_of(o, &here.exclude);
                here.heads.extend(heads);
                let leads = self.leads(o);
                extend_unique(&mut here.rivals, &leads);
            }
        }
        let mut alts: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut empty = false;
        for o in options {
            let s = self.node(o, &here);
            match s.is_empty() {
                true => empty = true,
                false => {
                    let text = s.render(&self.w);
                    if seen.insert(text.clone()) {
                        alts.push(text);
                    }
                }
            }
        }
        let mut out = Seq::default();
        let group = match alts.len() {
            0 => return out,
            1 if !empty => {
                out.expr(alts.remove(0));
                return out;
            }
            _ => format!("( {} )", alts.join(" | ")),
        };
        out.expr(match empty {
            true => format!("{group}?"),
            false => group,
        });
        out
    }

    /// A raw marker; where free text may begin, its first core folds the
    /// whitespace before it, or follows a rival lazy head it begins with.
    fn marker(&mut self, raw: &str, at: &At) -> Seq {
        let Some(core) = first_core(raw).filter(|c| at.start && !self.w.special(c)) else {
            return lexemes::marker(raw);
        };
        let mut out = Seq::default();
        let head = at.heads.iter().find(|(c, _)| core.starts_with(c.as_str()));
        // A rival's core this one begins with: the lexer would end it
        // there, so both begin with that lexeme.
        let rival = at
            .rivals
            .iter()
            .filter(|r| core.len() > r.len() && core.starts_with(r.as_str()))
            .min_by_key(|r| r.len());
        match (head, rival) {
            (Some((c, exclude)), _) => {
                out.expr(lexemes::until(&mut self.w, c, exclude, "head"));
                out.lit(&core[c.len()..]);
            }
            (None, Some(r)) => {
                out.expr(lexemes::folded(&mut self.w, r));
                out.lit(&core[r.len()..]);
            }
            (None, None) => {
                out.expr(lexemes::folded(&mut self.w, &core));
            }
        }
        out.extend(after_first_core(raw));
        out
    }

    /// A node opening with one marker core, where free text may begin:
    /// that core as [`Printer::marker`] prints it, then the node's rest
    /// (a `_rest` copy of its rules).
    fn opened(&mut self, node: &Node, at: &At) -> Option<Seq> {
        let mut leads = self.leads(node);
        leads.dedup();
        let [core] = leads.as_slice() else {
            return None;
        };
        if self.w.special(core) {
            return None;
        }
        let rest = self.strip(node, core)?;
        let mut out = self.marker(core, at);
        out.extend(self.node(&rest, &At::inside()));
        Some(out)
    }

    /// A call id.
    fn id(&mut self, shape: &IdShape) -> Seq {
        let mut out = Seq::default();
        match shape {
            IdShape::JsonString => {
                out.expr(self.w.terminal("JSON_STRING", JSON_STRING));
            }
            IdShape::Counter => {
                out.expr(self.w.terminal("COUNTER", "/[0-9]+/"));
            }
            IdShape::Tagged { prefix, suffix } => {
                let nodes = [
                    Node::marker(prefix),
                    Node::new(Kind::Until {
                        stops: vec![suffix.clone()],
                    })
                    .producing(Produces::Id),
                    Node::marker(suffix),
                ];
                let refs: Vec<&Node> = nodes.iter().collect();
                return self.items(&refs, &At::inside());
            }
        }
        out
    }

    /// `node` `min` to `max` times, `separator` between (bounds other than
    /// one and unbounded are read as unbounded).
    fn repeat(
        &mut self,
        node: &Node,
        min: u32,
        max: Option<u32>,
        separator: &Node,
        at: &At,
    ) -> Seq {
        let first = self.node(node, at);
        let mut out = first.clone();
        if max.is_none_or(|m| m > 1) {
            let mut more = self.node(separator, &At::inside());
            more.extend(self.node(node, &At::inside()));
            if !more.is_empty() {
                out.expr(format!("( {} )*", more.render(&self.w)));
            }
        }
        if min > 0 || out.is_empty() {
            return out;
        }
        let mut opt = Seq::default();
        opt.expr(optional(&out, &self.w));
        opt
    }

    /// Keyed members in `order`, `separator` between: required ones must be
    /// written; `extra` (any key) when none are declared.
    fn members(
        &mut self,
        list: &[Member],
        separator: &Node,
        order: Order,
        extra: Option<&Node>,
    ) -> String {
        let sep = self.node(separator, &At::inside()).render(&self.w);
        let tool = self.tool.clone();
        if list.is_empty() {
            let Some(extra) = extra else {
                return String::new();
            };
            self.key.clear();
            let one = self.node(extra, &At::inside()).render(&self.w);
            let one = self.w.rule("any_arg", &one);
            return format!("( {one} ( {sep} {one} )* )?");
        }
        let spelled: Vec<Spelled> = list
            .iter()
            .map(|m| {
                self.key = m.key.clone();
                let text = self.node(&m.node, &At::inside()).render(&self.w);
                Spelled {
                    expr: self.w.rule(&format!("arg_{tool}_{}", m.key), &text),
                    required: m.required,
                }
            })
            .collect();
        self.key.clear();
        let listed = spelled_members(&mut self.w, &spelled, &sep, &format!("args_{tool}"));
        let body = match sorted_order(list, order) {
            None => listed,
            Some(by_key) => {
                let spelled: Vec<Spelled> = by_key.iter().map(|&i| spelled[i].clone()).collect();
                let hint = format!("args_{tool}_sorted");
                let sorted = spelled_members(&mut self.w, &spelled, &sep, &hint);
                format!("( {listed} | {sorted} )")
            }
        };
        match body.is_empty() {
            true => body,
            false => self.w.rule(&format!("args_{tool}"), &body),
        }
    }

    /// A value; its hint names its rules and warnings.
    fn value(&mut self, v: &ValueNode, produces: Produces) -> String {
        let hint = match produces {
            Produces::Arguments => format!("args_{}", self.tool),
            Produces::Value => format!("value_{}_{}", self.tool, self.key),
            Produces::Content => "answer".into(),
            _ => "value".into(),
        };
        if matches!(v.notation, crate::protocol::outline::ValueNotation::Python) {
            let at = format!("{}.{}", self.tool, self.key);
            values::unchecked_string(&mut self.w, &at, &v.schema, "a Python literal");
        }
        self.values.value(&mut self.w, v, &hint)
    }

    /// The Lark name of rule `index`, printed once.
    fn rule(&mut self, index: usize) -> String {
        if let Some(name) = self.printed.get(&index) {
            return name.clone();
        }
        let Some(rule) = self.rule_at(index) else {
            return String::new();
        };
        let name = self.w.reserve(&rule.name);
        self.printed.insert(index, name.clone());
        let tool = tool_name(&rule.node).unwrap_or_else(|| self.tool.clone());
        let outer = std::mem::replace(&mut self.tool, tool);
        let body = self.node(&rule.node, &At::inside()).render(&self.w);
        self.tool = outer;
        self.w.fill(&name, body);
        name
    }

    /// The first core of the marker a text node stops at, when the lexer
    /// can end a lazy lexeme there (no special token).
    fn stop_of(&self, node: &Node) -> Option<String> {
        let stop = match &node.kind {
            Kind::Until { stops } => stops.first()?,
            Kind::Attributes { close, .. } => close,
            _ => return None,
        };
        let core = first_core(stop)?;
        (!self.w.special(&core)).then_some(core)
    }

    /// An optional part ending with text up to a marker: the part's other
    /// nodes and the marker's core.
    fn optional_until<'n>(&self, node: &'n Node) -> Option<(Vec<&'n Node>, String)> {
        let Kind::Optional(inner) = &node.kind else {
            return None;
        };
        if inner.lenient {
            return None;
        }
        let mut items = flat(inner);
        let core = self.stop_of(items.pop()?)?;
        Some((items, core))
    }

    /// `nodes` without `core` at their start, when they must begin with it.
    fn strip_list(&mut self, nodes: &[&Node], core: &str) -> Option<Vec<Node>> {
        // Whitespace before the core is the lazy lexeme's.
        let at = nodes.iter().position(|n| !n.is_empty() && !blank(n))?;
        let first = self.strip(nodes[at], core)?;
        let mut out = vec![first];
        out.extend(nodes[at + 1..].iter().map(|n| (*n).clone()));
        Some(out)
    }

    /// `node` without `core` at its start, when every text of it begins
    /// with it.
    fn strip(&mut self, node: &Node, core: &str) -> Option<Node> {
        let kind = match &node.kind {
            Kind::Marker(raw) => {
                let first = first_core(raw)?;
                if !first.starts_with(core) {
                    return None;
                }
                let at = raw.find(first.as_str())? + core.len();
                return Some(Node::marker(&raw[at..]));
            }
            Kind::Literal(text) => {
                let t = text.trim_start();
                return t.strip_prefix(core).map(Node::literal);
            }
            Kind::Sequence(_) => {
                let items = flat(node);
                let stripped = self.strip_list(&items, core)?;
                return Some(Node::seq(stripped));
            }
            Kind::Choice(options) => {
                let mut out = Vec::new();
                for o in options.iter().filter(|o| !o.lenient) {
                    out.push(self.strip(o, core)?);
                }
                Kind::Choice(out)
            }
            Kind::Repeat {
                node: inner,
                min,
                max,
                separator,
            } if *min > 0 => {
                let first = self.strip(inner, core)?;
                let more = match max.is_none_or(|m| m > 1) {
                    true => Node::new(Kind::Repeat {
                        node: Box::new(Node::seq([(**separator).clone(), (**inner).clone()])),
                        min: 0,
                        max: max.map(|m| m - 1),
                        separator: Box::new(Node::empty()),
                    }),
                    false => Node::empty(),
                };
                return Some(Node::seq([first, more]));
            }
            Kind::Rule(index) => Kind::Rule(self.stripped_rule(*index, core)?),
            _ => return None,
        };
        Some(Node {
            kind,
            ..node_flags(node)
        })
    }

    /// Rule `index`: the outline's, or a stripped copy.
    fn rule_at(&self, index: usize) -> Option<RuleRef<'o>> {
        match index.checked_sub(self.base.len()) {
            None => self.base.get(index).map(RuleRef::Base),
            Some(i) => self.extra.get(i).cloned().map(RuleRef::Copy),
        }
    }

    /// The copy of rule `index` stripped of `core`.
    fn stripped_rule(&mut self, index: usize, core: &str) -> Option<usize> {
        let key = (index, core.to_string());
        if let Some(i) = self.stripped.get(&key) {
            return Some(*i);
        }
        let rule = self.rule_at(index)?;
        let node = self.strip(&rule.node, core)?;
        self.extra.push(Rc::new(Rule {
            name: format!("{}_rest", rule.name),
            node,
        }));
        let i = self.base.len() + self.extra.len() - 1;
        self.stripped.insert(key, i);
        Some(i)
    }

    /// The cores `node` certainly begins with, where known (text and
    /// values aside).
    fn leads(&self, node: &Node) -> Vec<String> {
        if node.lenient {
            return Vec::new();
        }
        match &node.kind {
            Kind::Marker(raw) => first_core(raw).into_iter().collect(),
            Kind::Literal(text) => text_pieces(text)
                .into_iter()
                .find_map(|p| match p {
                    TextPiece::Exact(t) => Some(t.to_string()),
                    TextPiece::Space => None,
                })
                .into_iter()
                .collect(),
            Kind::Sequence(_) => {
                let items = flat(node);
                let mut out = Vec::new();
                for item in items {
                    out.extend(self.leads(item));
                    if !nullable(item) && !blank(item) {
                        break;
                    }
                }
                out
            }
            Kind::Choice(options) => options.iter().flat_map(|o| self.leads(o)).collect(),
            Kind::Optional(inner) => self.leads(inner),
            Kind::Repeat { node, .. } => self.leads(node),
            Kind::Rule(i) => self.rule_at(*i).map_or(Vec::new(), |r| self.leads(&r.node)),
            _ => Vec::new(),
        }
    }

    /// The lazy heads `node`'s options begin with: optional text up to a
    /// marker, with `exclude`.
    fn heads_of(&self, node: &Node, exclude: &[String]) -> Vec<(String, Vec<String>)> {
        let items = match &node.kind {
            Kind::Choice(options) => {
                return options
                    .iter()
                    .flat_map(|o| self.heads_of(o, exclude))
                    .collect()
            }
            _ => flat(node),
        };
        let Some(first) = items.into_iter().find(|n| !n.is_empty()) else {
            return Vec::new();
        };
        if let Some(core) = self.stop_of(first) {
            let exclude = not_beginning_with(exclude, &core);
            return vec![(core, exclude)];
        }
        match self.optional_until(first) {
            Some((prefix, core)) => {
                let exclude = self.head_exclude(&prefix, &core, exclude);
                vec![(core, exclude)]
            }
            None => Vec::new(),
        }
    }

    /// What the lazy head of an optional `prefix` then text up to `core`
    /// may not begin with: `base`, and the prefix's opening (which the
    /// head would run past), less what begins with the core itself (then
    /// the head is how it begins, see [`not_beginning_with`]).
    fn head_exclude(&self, prefix: &[&Node], core: &str, base: &[String]) -> Vec<String> {
        let mut out = base.to_vec();
        if let Some(first) = prefix.first() {
            extend_unique(&mut out, &self.leads(first));
        }
        not_beginning_with(&out, core)
    }
}

/// A rule of the outline (borrowed) or a stripped copy (shared).
enum RuleRef<'o> {
    Base(&'o Rule),
    Copy(Rc<Rule>),
}

impl std::ops::Deref for RuleRef<'_> {
    type Target = Rule;

    fn deref(&self) -> &Rule {
        match self {
            RuleRef::Base(rule) => rule,
            RuleRef::Copy(rule) => rule,
        }
    }
}

/// `exclude` without what begins with `core`: a head is text up to `core`
/// and then `core`, so one with no text before it begins with `core`
/// (`{` of a bare JSON call at the start of the output); an exclusion of
/// that (the free text's, whose options may not begin with a call) would
/// leave no head for it at all.
fn not_beginning_with(exclude: &[String], core: &str) -> Vec<String> {
    exclude
        .iter()
        .filter(|e| !e.starts_with(core))
        .cloned()
        .collect()
}

/// `items` added to `list`, each once.
fn extend_unique(list: &mut Vec<String>, items: &[String]) {
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

/// What free text beginning an option may not begin with.
fn free_exclude(node: &Node) -> Vec<String> {
    match &node.kind {
        Kind::FreeText { exclude } => exclude.clone(),
        Kind::Optional(inner) => free_exclude(inner),
        Kind::Sequence(_) => flat(node).into_iter().flat_map(free_exclude).collect(),
        _ => Vec::new(),
    }
}

/// A node's flags without its kind.
fn node_flags(node: &Node) -> Node {
    Node {
        kind: Kind::Sequence(Vec::new()),
        produces: node.produces,
        lenient: node.lenient,
        lazy_start: node.lazy_start,
    }
}

/// The hint of a lazy text lexeme producing `what`.
fn until_hint(what: Produces) -> &'static str {
    match what {
        Produces::Reasoning => "reasoning_until",
        Produces::Content => "content_until",
        Produces::Value => "raw_until",
        Produces::Id => "id_until",
        _ => "until",
    }
}

/// Fixed text of a call, as [`text_pieces`] reads it.
fn push_text(out: &mut Seq, text: &str) {
    for piece in text_pieces(text) {
        match piece {
            TextPiece::Exact(t) => out.lit(t),
            TextPiece::Space => out.ws(),
        };
    }
}

/// `( s )?`, or `s?` for one item.
fn optional(s: &Seq, w: &Writer) -> String {
    if s.is_empty() {
        return String::new();
    }
    let text = s.render(w);
    if s.is_atom() && text.ends_with('?') {
        return text;
    }
    match s.is_atom() && !matches!(s.0[0], Item::Ws) {
        true => format!("{}?", s.render(w)),
        false => format!("( {} )?", s.render(w)),
    }
}

/// Members in order with `sep` between: required ones must appear,
/// optional ones may be left out; the expression matches nothing extra. As
/// in the GBNF export (`schema::members`), a long list names the members
/// after each one as a few rules (`hint_tail`) rather than spelling them
/// out per option.
fn spelled_members(w: &mut Writer, list: &[Spelled], sep: &str, hint: &str) -> String {
    let sep = match sep.is_empty() {
        true => String::new(),
        false => format!("{sep} "),
    };
    let after_sep = |m: &Spelled| match m.required {
        true => format!(" {sep}{}", m.expr),
        false => format!(" ( {sep}{} )?", m.expr),
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
