//! The generator: the protocol's parser outline
//! ([`ParserOutline`](crate::protocol::outline::ParserOutline)) and a start
//! state become a PEG grammar over the model's output. This module conducts;
//! each part of the grammar has a module of its own.
//!
//! Shape of every generated grammar:
//!
//! ```text
//! output  := echo? reasoning? word-wrapper? body eoi
//! body    := ( tools | reasoning-block | silent-marker | scaffolding | content )*
//! tools   := section-start call (separator call)* section-end?
//! call    := CALL( call-start head commit recover(tail call-end, BROKEN) )
//! content := commit CONTENT( any-char until(triggers) )
//! ```
//!
//! - `body`: the output's top level, its alternatives in order, content
//!   text and the triggers it stops before, silent markers, the echo.
//! - `reasoning`: reasoning at the start (`prelude`) and reasoning blocks,
//!   which may hold whole tool sections (`calls_in_reasoning`; the strict
//!   tool grammars, built by `body`).
//! - `tool_section`: one [`ToolGrammar`](tool_section::ToolGrammar) per
//!   tool format, and its sections (`tools`, the part opener).
//! - `call`: one call (`call`), its head and tail and the rules that name them.
//! - `head`: a tagged name's head, and names addressed inside headers.
//! - `json_call`: JSON call objects (name, arguments and id paths; OpenAI's wrapper).
//! - `tagged_arguments`, `python_arguments`: the argument readers of those layouts.
//! - `nested`: the rules for nested values (bracketed notations, elements).
//! - `names`: function names, ids and the character sets they are made of.
//! - `recovery`: what the grammar reads beyond the template's framing so
//!   nothing is lost: unknown tools, broken calls, dropped openers, other
//!   formats' markers around bare calls.
//!
//! Layers: `tool_section` (with the leaves `names`, `nested`)
//! sits below `body`, `call`, `json_call` and `recovery`, which build on
//! its `ToolGrammar`; no module below uses one above.
//!
//! A call's framing comes from the protocol's `CallLayout` of the format's
//! generic call in the parser outline (`ParserCall`), made with a
//! placeholder name: the call's start and end markers, how it names its
//! function and where a JSON call object's members sit (`Naming`), the
//! argument reader (the layout's `Arguments`), and for a tagged name its
//! prefix, its end marker, a counter's separator, a repeated name and a
//! tagged id before or after it (`TaggedName`). Other dialects' calls and
//! markers (a bare JSON call in a fence, a Python list in another
//! format's wrapper) are the outline's too (`DialectCall`, `Foreign`). What the generator adds on
//! purpose, as it reads more than the template renders: JSON call objects
//! with members in any order, `parameters` for `arguments` and back,
//! OpenAI's wrapper, scalar members it skips or keeps as content, the lookahead that sends a
//! call of an unknown tool to content, broken-call recovery, a dropped
//! section or call opener, a name addressed inside any header, and
//! flexible whitespace around markers (see `marker`). A tool section's
//! markers and separator are read off its node in the parser's outline
//! (`SectionMarks`), the section every grammar export prints.
//!
//! Invariant: the grammar matches every input (content takes anything the
//! other alternatives refuse), so a parse never fails; a `Match` may only be
//! incomplete.

mod body;
mod call;
mod head;
mod json_call;
mod names;
mod nested;
mod python_arguments;
mod reasoning;
mod recovery;
mod tagged_arguments;
mod tool_section;

use crate::parser::sections::HeaderMarks;
use crate::protocol::outline::{Elements, Foreign, ParserCall, SectionMarks};
use crate::protocol::{Notation, Protocol, Start};
use chat_autoparser_peg::Grammar;

use body::root;
use nested::{elements_rule, elements_rule_name, notation_rule, notation_rule_name};
use tool_section::ToolGrammar;

pub use names::{NameSets, NAMESPACE};

/// What the grammar should extract.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub start: Start,
    /// Reasoning goes to its own field (else it stays in the content).
    pub extract_reasoning: bool,
    /// Tool calls are parsed (else their text is content).
    pub parse_tools: bool,
    /// The content is JSON (a response schema): markdown code fences around
    /// it are scaffolding, not content.
    pub json_response: bool,
    /// The request's function names: a call must name one (empty: any).
    pub names: &'a [String],
    /// A call may name any function, the request's or not
    /// (`unknown_tool: call`): the decoder flags the others.
    pub any_name: bool,
    /// The generic call of each tool format the output may hold
    /// (`ParserOutline::calls`).
    pub calls: &'a [ParserCall],
    /// Other formats' markers read around calls (`ParserOutline::foreign`).
    pub foreign: &'a Foreign,
    /// The template notations of nested values (`ParserOutline::notations`).
    pub notations: &'a [Notation],
    /// The element notations of nested values (`ParserOutline::elements`).
    pub elements: &'a [Elements],
    /// The turn's section headers (`ParserOutline::headers`).
    pub headers: &'a [HeaderMarks<'a>],
    /// The markers of each format's tool section, one per `calls` entry
    /// (`ParserOutline::section_marks`).
    pub sections: &'a [SectionMarks<'a>],
    /// The texts of every marker the template writes, whose words a label
    /// may hold and still be scaffolding (`ParserOutline::scaffolding`).
    pub scaffolding: &'a str,
    /// What opens each part of the turn after the first, when the prompt
    /// wrote the first's (`ParserOutline::part_opener`).
    pub part_opener: Option<&'a str>,
    /// A complete tool section written inside a reasoning block is read as
    /// calls (`calls_in_reasoning: call` or `both`; see `reasoning`).
    pub calls_in_reasoning: bool,
    /// Calls inside another format's markers or a code fence are read
    /// (`foreign_markers` other than `text`, which leaves those markers and
    /// what they wrap to the content).
    pub foreign_calls: bool,
}

/// Code fences a model wraps JSON content in, longest first.
const JSON_FENCES: [&str; 2] = ["```json", "```"];

/// The grammar for `analysis` under `plan`: the root expression, and the
/// rules for nested values in each argument notation.
pub fn grammar(protocol: &Protocol, plan: Plan<'_>) -> Grammar {
    let (root, calls) = root(protocol, plan);
    let mut grammar = Grammar::new(root);
    // A call is read in several places (first, after a separator, inside
    // a list, after a wrapper): one rule each, built and compiled once.
    for (name, body) in calls.iter().flat_map(ToolGrammar::rules) {
        grammar = grammar.rule(&name, body);
    }
    for notation in plan.notations {
        grammar = grammar.rule(&notation_rule_name(notation), notation_rule(notation));
    }
    for e in plan.elements {
        grammar = grammar.rule(&elements_rule_name(e), elements_rule(e));
    }
    grammar
}
