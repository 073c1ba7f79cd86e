//! Problems found in model output: what lenient parsing reports and strict
//! parsing returns as an error.
//!
//! Invariant: a diagnostic never changes the message; under the lossless
//! policy (the default) parsing keeps every byte (a broken call's text is
//! content, an extra call is kept, a withdrawn call's text is content).
//! Text another policy leaves out is named by a `Dropped` diagnostic with
//! its byte range.

use std::fmt;

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// The kind of problem.
    pub kind: DiagnosticKind,
    /// Byte offset in the output where it starts.
    pub offset: usize,
    /// Where the text it concerns ends, when it names a range (`Dropped`,
    /// `ForeignMarker`, `StrayMarker`, `CallInReasoning`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
}

/// Kinds of problems in model output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A tool call broke after its name; its rest is content.
    BrokenToolCall,
    /// A call whose arguments did not complete as JSON: the final message
    /// leaves it out and its whole text is content, or reasoning inside a
    /// reasoning block (a stream sent its deltas already).
    WithdrawnToolCall,
    /// A call whose text grew past 4 MiB while open (`LONGEST_CALL`): it is
    /// withdrawn at once, and its whole text is content (a stream sent its
    /// deltas up to there), so what a parse holds stays in proportion to
    /// the output.
    OversizedToolCall,
    /// Text in a call the format does not write there: a member of a JSON
    /// call object (`"note": "..."`), an attribute or a label of a word the
    /// template never writes (`index="1" note="..."`, `type="strnig"`), a
    /// repeated name or a closing tag's name that is not the one it repeats
    /// (`</cty>` closing `<city>`). Its text is content, the call is kept.
    UnknownMember,
    /// A second (third...) call while `parallel_tool_calls` is false.
    ExtraToolCall,
    /// A call names a function the request does not have; its text is
    /// content (reasoning text, inside a reasoning block).
    UnknownTool,
    /// A section header whose label holds a word the template never writes
    /// (`<|channel|>notes<|message|>`): the header is content, verbatim.
    UnknownLabel,
    /// The parser could not go on; the rest of the output is content.
    Unparsed,
    /// Text a policy leaves out of the message (`offset..end`): content
    /// after the calls, a call cut off or broken, text outside any channel.
    /// Never under the lossless policy.
    Dropped,
    /// A broken call kept with its arguments as written so far, which may
    /// not be JSON (`malformed_section: salvage`).
    SalvagedToolCall,
    /// A call of a function the request does not have, kept as a call
    /// (`unknown_tool: call`).
    UnknownToolCall,
    /// A tool-call marker of another format than the template's
    /// (`offset..end`: `[TOOL_CALLS]` before a bare JSON call, a
    /// `</tool_call>` after it or after plain text, the code fence around a
    /// JSON call on a template whose calls are not bare JSON), kept as content
    /// (`foreign_markers: content`).
    ForeignMarker,
    /// A marker of the template's own call format where it opens or
    /// closes nothing (`offset..end`: a `</tool_call>` after plain text, the
    /// section's tokens around text that is no call): scaffolding, left out
    /// of the content under every policy.
    StrayMarker,
    /// A tool section written inside a reasoning block (`offset..end`: its
    /// text), read as calls (`calls_in_reasoning: call` or `both`): under
    /// `call` its text is out of the reasoning (it is in the calls), under
    /// `both` it stays there too.
    CallInReasoning,
}

impl Diagnostic {
    /// A diagnostic of `kind` at `offset`.
    pub fn new(kind: DiagnosticKind, offset: usize) -> Diagnostic {
        Diagnostic {
            kind,
            offset,
            end: None,
        }
    }

    /// A diagnostic of `kind` about the text at `offset..end`.
    pub fn range(kind: DiagnosticKind, offset: usize, end: usize) -> Diagnostic {
        Diagnostic {
            kind,
            offset,
            end: Some(end),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DiagnosticKind::BrokenToolCall => "malformed tool call",
            DiagnosticKind::WithdrawnToolCall => {
                "tool call withdrawn: its arguments are not JSON, its text is content"
            }
            DiagnosticKind::OversizedToolCall => {
                "tool call longer than 4 MiB withdrawn: its text is content"
            }
            DiagnosticKind::UnknownMember => "call text the format does not have, kept as content",
            DiagnosticKind::ExtraToolCall => "extra tool call while parallel_tool_calls is false",
            DiagnosticKind::UnknownTool => "tool call to a function the request does not have",
            DiagnosticKind::UnknownLabel => {
                "a header label the template does not write, kept as content"
            }
            DiagnosticKind::Unparsed => "output the parser could not read",
            DiagnosticKind::Dropped => "text left out by the output policy",
            DiagnosticKind::SalvagedToolCall => {
                "malformed tool call kept with its arguments as written"
            }
            DiagnosticKind::UnknownToolCall => {
                "tool call to a function the request does not have, kept as a call"
            }
            DiagnosticKind::ForeignMarker => "another format's tool-call marker, kept as content",
            DiagnosticKind::StrayMarker => {
                "the template's own call marker where it opens or closes nothing, left out of the content"
            }
            DiagnosticKind::CallInReasoning => "tool call inside reasoning, read as a call",
        };
        match self.end {
            Some(end) => write!(f, "{what} at bytes {}..{end}", self.offset),
            None => write!(f, "{what} at byte {}", self.offset),
        }
    }
}

impl std::error::Error for Diagnostic {}
