//! The output grammar: one request's [`Protocol`] lowered once into a small
//! tree of typed nodes, the strict language a model may write, which the
//! exports print and a generator samples.
//!
//! ```text
//! Protocol ──lower──▶ Outline ─┬─▶ printers (grammar exports)
//!                              └─▶ sampler (tests: parse ∘ sample = id)
//! ```
//!
//! The lowering is written as small passes, one per part of the output, the
//! way pest's optimiser is: `reasoning` (the block the output may open, be
//! inside, or have behind it), `content` (the body: free text, text up to a
//! tool section, a JSON answer), `sections` (a format's section: its
//! markers, its calls repeated with their separator), `calls` (one tool's
//! call, from its [`CallLayout`](super::CallLayout)), `arguments` (JSON, Python keywords,
//! marker-tagged pairs) and `values` (a value's schema and notation).
//!
//! Invariants:
//! - the lowering is the only reader of the analysis' format types
//!   (`ToolFormat`, `TaggedArguments`, `Elements`) on the way to a printer,
//!   with the layouts it reads them through ([`CallLayout`](super::CallLayout),
//!   [`TaggedLayout`](super::TaggedLayout)): a printer reads nodes, never
//!   the format;
//! - request options (tools, `tool_choice` including a named function and
//!   `allowed_tools`, which narrow the calls to their tools,
//!   `parallel_tool_calls` against the template's own one-call formats,
//!   thinking and the prompt's start state) are applied here, once: a
//!   required call is a section with no free text beside it, a single call
//!   is a repeat with `max: Some(1)`;
//! - every node says what it produces ([`Produces`]); a call's name, id and
//!   arguments sit inside a node producing [`Produces::Call`], an
//!   argument's value inside a [`Member`] of a node producing
//!   [`Produces::Arguments`];
//! - a node marked `lazy_start` is where a lazy grammar may start: its
//!   first marker core is a trigger, and nothing before it is constrained;
//! - leniency (what the parser reads beyond what the template writes) is a
//!   `lenient` node inside an [`Kind::Optional`] or a [`Kind::Choice`]:
//!   strict printers and the strict sampler leave it out, so removing every
//!   lenient node leaves the strict language;
//! - lowering never fails or panics: a request a grammar cannot serve is
//!   reported by [`Protocol::check_servable`], as before.
//!
//! The GBNF and Lark exports (`grammar::gbnf_printer`, `grammar::lark`)
//! are printers of this tree; GBNF's lazy triggers are read from its lazy
//! starts. The structural tag (`grammar::structural_tag`) is one too, and
//! the response_template's tool-call field (`grammar::response_template`),
//! which takes lenient nodes as well. The output parser (`parser/`) reads
//! its own part, the [`ParserOutline`] (each format's section of a generic
//! call, the turn's headers), for its nested-value rules, its sections'
//! markers and its scaffolding; its call rules are still built from the
//! layouts of those calls ([`CallLayout`](super::CallLayout) with its
//! `Naming`, [`TaggedLayout`](super::TaggedLayout)), not from this tree's
//! nodes (issue 30, step 9: `docs/parser-from-outline.md`).

mod arguments;
mod calls;
mod content;
mod dialects;
mod parser;
mod reasoning;
mod sections;
mod values;

use std::sync::Arc;

use serde_json::Value;

use super::{IdShape, Notation, Protocol};
/// The tags of [`ValueNotation::Element`] values: part of the outline's
/// vocabulary, so printers need not reach into the analysis.
pub use crate::analysis::Elements;
pub use dialects::{bare_json_call, bracketed_python_call, DialectCall, Foreign};
pub use parser::{ParserCall, ParserOutline, SectionMarks};

/// The name a generic call (the parser's, another dialect's) is laid out
/// with: never printed (a name slot stands for it), only used to find
/// where the layout writes the name.
pub const PLACEHOLDER: &str = "NAME";

/// What a node's text becomes in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Produces {
    /// Scaffolding: nothing of the message.
    Nothing,
    /// `reasoning_content`.
    Reasoning,
    /// `content`.
    Content,
    /// One tool call (its name, id and arguments are inside).
    Call,
    /// The call's function name.
    Name,
    /// The call's id.
    Id,
    /// The call's arguments, a JSON object.
    Arguments,
    /// The value of the [`Member`] it is inside.
    Value,
}

/// How a value is written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueNotation {
    /// JSON text.
    Json,
    /// JSON text inside a JSON string (`"arguments": "{\"a\": 1}"`).
    JsonInString,
    /// A Python literal (`'x'`, `True`, `None`, `[1, 2]`).
    Python,
    /// Objects and lists as nested elements, scalars as text.
    Element {
        /// The elements' tags.
        tags: Elements,
        /// Strings are written raw (else JSON-quoted), as the arguments'
        /// own string values are.
        raw_strings: bool,
    },
    /// The template's own notation (`{a:<|"|>x<|"|>}`).
    Template(Notation),
    /// A string as its text, unquoted (an enum's word in a raw tagged
    /// value).
    Raw,
}

/// A value: what its schema allows, written in a notation.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueNode {
    /// The value's JSON schema.
    pub schema: Value,
    /// The schema its `$ref`s resolve in (the tool's parameters), shared
    /// by the tool's values (a tree holds one copy per tool, not one per
    /// argument).
    pub root: Arc<Value>,
    /// How it is written.
    pub notation: ValueNotation,
}

/// One member of a [`Kind::Members`] list.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The key the member's value belongs to.
    pub key: String,
    /// Whether the member must be written.
    pub required: bool,
    /// The member's text, its value inside producing [`Produces::Value`].
    pub node: Node,
}

/// In which order members are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Order {
    /// The list's order (the schema's), as the template and llguidance's
    /// `%json` write them.
    Listed,
    /// The list's order or sorted by key: templates write tagged arguments
    /// in one or the other (a `dictsort`), and the probes' arguments are
    /// in both orders at once, so they cannot tell which.
    ListedOrSorted,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Kind {
    /// A marker of the template, raw: its cores exact, its whitespace
    /// flexible (see [`super::Marker`]).
    Marker(String),
    /// Fixed text of a call (JSON keys and punctuation, `=`, `)`), read as
    /// `text_pieces` reads it.
    Literal(String),
    /// Any text not beginning (after whitespace) with one of `exclude`.
    FreeText {
        /// What the text may not begin with.
        exclude: Vec<String>,
    },
    /// Text up to the first of `stops`'s first cores (none of them inside).
    Until {
        /// Raw markers that end the text.
        stops: Vec<String>,
    },
    /// A section header's attributes after a tagged name, which the
    /// template varies per call (` index="1"`): any text on the line up to
    /// the first core of `close` (the header's close marker, which
    /// follows), read as scaffolding.
    Attributes {
        /// The attributes as the template writes them for one call.
        written: String,
        /// The header's close marker.
        close: String,
    },
    /// A value of a schema in a notation.
    Value(Box<ValueNode>),
    /// A tool's name, as the call spells it (`quoted`: a JSON string).
    ToolName {
        /// The function's name.
        name: String,
        /// Written as a JSON string.
        quoted: bool,
    },
    /// Any one of the request's names (`quoted`: as a JSON string): the
    /// name of a format's generic call, which only the parser reads (see
    /// [`ParserOutline`]); its names are given to the compiled program.
    NameSlot {
        /// Written as a JSON string.
        quoted: bool,
    },
    /// A section header of a channel turn (`<|channel|>final<|message|>`):
    /// `open`, a label naming the section, `close`; the label runs on one
    /// line up to the first core of `close`. Only the parser reads these
    /// ([`ParserOutline::headers`]): a request's outline leaves the turn's
    /// scaffolding out.
    Header {
        /// The marker before the label (`<|channel|>`).
        open: String,
        /// The marker after it (`<|message|>`).
        close: String,
    },
    /// A call id.
    Id(IdShape),
    /// One after the other.
    Sequence(Vec<Node>),
    /// One of.
    Choice(Vec<Node>),
    /// Present or not.
    Optional(Box<Node>),
    /// `min` to `max` (unbounded: `None`) times, `separator` between.
    Repeat {
        /// The repeated node.
        node: Box<Node>,
        /// At least this many.
        min: u32,
        /// At most this many, when bounded.
        max: Option<u32>,
        /// Between two repetitions.
        separator: Box<Node>,
    },
    /// Keyed members with `separator` between, in `order`; `extra`, when
    /// set, is a member of any key (a schema that declares no properties).
    Members {
        /// The declared members.
        list: Vec<Member>,
        /// Between two members.
        separator: Box<Node>,
        /// Their order.
        order: Order,
        /// A member of any key, for open schemas without properties.
        extra: Option<Box<Node>>,
        /// The schema the members belong to (the tool's parameters), for
        /// printers that hand the whole object to a schema format.
        root: Arc<Value>,
    },
    /// The rule of [`Outline::rules`] at this index.
    Rule(usize),
}

/// A node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What it is.
    pub kind: Kind,
    /// What its text becomes in the message.
    pub produces: Produces,
    /// Read by the parser, never written by the template: strict printers
    /// skip it.
    pub lenient: bool,
    /// A lazy grammar may start here.
    pub lazy_start: bool,
}

/// A named subtree, referenced by [`Kind::Rule`].
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// A name hint (`call_get_weather`).
    pub name: String,
    /// Its tree.
    pub node: Node,
}

/// The output grammar of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Outline {
    /// The whole output.
    pub root: Node,
    /// Subtrees referenced by [`Kind::Rule`] (one per tool's call).
    pub rules: Vec<Rule>,
    /// Reasoning the prompt wrote for the model (delimiter reasoning's
    /// `Here are my reasoning steps:`): the message's reasoning begins with
    /// it whenever the output writes reasoning.
    pub prompt_reasoning: String,
    /// What could only be expressed loosely, one line each.
    pub warnings: Vec<String>,
}

impl Outline {
    /// The rule `index` refers to.
    pub fn rule(&self, index: usize) -> &Node {
        &self.rules[index].node
    }
}

impl Protocol {
    /// The output grammar of this request (see [`Outline`]).
    pub fn outline(&self) -> Outline {
        let mut lower = Lowering {
            protocol: self,
            rules: Vec::new(),
            warnings: self.warnings.clone(),
            generic: false,
        };
        let reasoning = reasoning::lower(&lower);
        let body = content::lower(&mut lower);
        // Two parts, kept apart (the reasoning possibly empty): printers
        // may tell the body from what precedes it.
        let root = Node::new(Kind::Sequence(vec![reasoning, body]));
        Outline {
            root,
            rules: lower.rules,
            prompt_reasoning: self.prompt.reasoning.clone(),
            warnings: lower.warnings,
        }
    }
}

/// The state of one lowering: the protocol read, rules made so far.
struct Lowering<'p> {
    protocol: &'p Protocol,
    rules: Vec<Rule>,
    warnings: Vec<String>,
    /// Lowering the parser's generic calls ([`ParserOutline`]): a name is a
    /// [`Kind::NameSlot`], an argument of any key has a typed value.
    generic: bool,
}

impl Lowering<'_> {
    /// A rule for `node`, named after `name`, and a reference to it.
    fn rule(&mut self, name: String, node: Node) -> Node {
        self.rules.push(Rule { name, node });
        Node::new(Kind::Rule(self.rules.len() - 1))
    }

    fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }
}

impl Node {
    /// A node of `kind` producing nothing.
    pub fn new(kind: Kind) -> Node {
        Node {
            kind,
            produces: Produces::Nothing,
            lenient: false,
            lazy_start: false,
        }
    }

    /// The node, producing `what`.
    pub fn producing(mut self, what: Produces) -> Node {
        self.produces = what;
        self
    }

    /// The node, marked lenient.
    pub fn lenient(mut self) -> Node {
        self.lenient = true;
        self
    }

    /// A template marker; nothing for an empty one.
    pub fn marker(raw: &str) -> Node {
        match raw.is_empty() {
            true => Node::empty(),
            false => Node::new(Kind::Marker(raw.to_string())),
        }
    }

    /// Fixed text; nothing for empty text.
    pub fn literal(text: &str) -> Node {
        match text.is_empty() {
            true => Node::empty(),
            false => Node::new(Kind::Literal(text.to_string())),
        }
    }

    /// The empty sequence.
    pub fn empty() -> Node {
        Node::new(Kind::Sequence(Vec::new()))
    }

    /// Whether the node writes nothing at all.
    pub fn is_empty(&self) -> bool {
        matches!(&self.kind, Kind::Sequence(items) if items.is_empty())
            && self.produces == Produces::Nothing
    }

    /// `items` in order; empty ones dropped, nested plain sequences
    /// flattened, a single item returned as itself.
    pub fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        let mut out = Vec::new();
        for item in items {
            match item.kind {
                Kind::Sequence(inner)
                    if item.produces == Produces::Nothing && !item.lenient && !item.lazy_start =>
                {
                    out.extend(inner)
                }
                _ => out.push(item),
            }
        }
        match out.len() {
            1 => out.pop().unwrap_or_else(Node::empty),
            _ => Node::new(Kind::Sequence(out)),
        }
    }

    /// One of `options`; a single option is itself.
    pub fn choice(mut options: Vec<Node>) -> Node {
        match options.len() {
            1 => options.pop().unwrap_or_else(Node::empty),
            _ => Node::new(Kind::Choice(options)),
        }
    }

    /// `node` or nothing; nothing for an empty node.
    pub fn optional(node: Node) -> Node {
        match node.is_empty() {
            true => node,
            false => Node::new(Kind::Optional(Box::new(node))),
        }
    }

    /// The node's children, in order (a member's node among them).
    pub fn children(&self) -> Vec<&Node> {
        match &self.kind {
            Kind::Sequence(items) | Kind::Choice(items) => items.iter().collect(),
            Kind::Optional(node) => vec![node],
            Kind::Repeat {
                node, separator, ..
            } => vec![node, separator],
            Kind::Members {
                list,
                separator,
                extra,
                ..
            } => {
                let mut out: Vec<&Node> = list.iter().map(|m| &m.node).collect();
                out.push(separator);
                out.extend(extra.as_deref());
                out
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
