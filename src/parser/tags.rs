//! The capture tags generated grammars use, and what each one holds.
//!
//! Invariant: every tag's text has exactly one meaning for the decoder
//! (`decode`), whatever the format: the grammar decides where text goes.

use chat_autoparser_peg::Tag;

/// Reasoning text.
pub const REASONING: Tag = Tag(1);
/// Visible content text.
pub const CONTENT: Tag = Tag(2);
/// One tool call (contains the tags below).
pub const CALL: Tag = Tag(3);
/// The function name: a JSON string token, or raw text between markers.
pub const NAME: Tag = Tag(4);
/// A call id: a JSON value, or raw text between markers.
pub const ID: Tag = Tag(5);
/// The arguments as a JSON value, streamed as written.
pub const ARGS: Tag = Tag(6);
/// The arguments as a JSON string token whose text is JSON.
pub const ARGS_STRING: Tag = Tag(7);
/// One argument of a tagged or Python format (contains key and value).
pub const ARG: Tag = Tag(8);
/// An argument's name.
pub const ARG_KEY: Tag = Tag(9);
/// An argument's value as raw text, typed by the tool's schema.
pub const ARG_STRING: Tag = Tag(10);
/// An argument's value as JSON text (a string if it is not JSON).
pub const ARG_JSON: Tag = Tag(11);
/// An argument's value as a Python literal.
pub const ARG_PYTHON: Tag = Tag(12);
/// An argument's value as an object or list in the template's own
/// notation (`notation`), typed by the tool's schema once converted.
pub const ARG_NOTATION: Tag = Tag(15);
/// An argument's value as nested elements (`elements`), typed by the
/// tool's schema once converted.
pub const ARG_ELEMENTS: Tag = Tag(16);
/// The rest of a call the model broke after its name: content, reported.
pub const BROKEN: Tag = Tag(13);
/// Empty: the output continues the reasoning block the prompt opened, and
/// that block's opening text (inline reasoning) is content here.
pub const OPENED: Tag = Tag(14);
/// A tool section's opening marker or a call separator: scaffolding, given
/// back as content with the call after it when that call is withdrawn, or
/// at once after a withdrawn call (`decode`).
pub const SECTION_OPEN: Tag = Tag(17);
/// A section's closing marker: scaffolding, given back as content after a
/// withdrawn call.
pub const FRAME: Tag = Tag(18);
/// A member of a JSON call object the format does not have, holding a
/// scalar (`"note": "..."`): text the model wrote, kept as content with a
/// diagnostic.
pub const EXTRA: Tag = Tag(19);
/// Empty, where a call of a function the request does not have starts:
/// its text is content, and this reports it.
pub const UNKNOWN_TOOL: Tag = Tag(20);
/// Empty, where a header whose label holds a word the template never
/// writes starts (`<|channel|>notes<|message|>`): the header is content,
/// and this reports it.
pub const UNKNOWN_LABEL: Tag = Tag(21);
/// A repeated function name (`<invoke name="NAME">` after a header that
/// named the call): text the model wrote when it is not the call's name.
pub const ECHO: Tag = Tag(22);
/// The name in an argument's closing marker (`</city>`): text the model
/// wrote when it is not the argument's name.
pub const CLOSE_NAME: Tag = Tag(23);
/// Empty, where a channel's message opens (after a section header, or a
/// content wrapper's opener): its text is in a channel.
pub const CHANNEL: Tag = Tag(24);
/// Empty, where a message of a channel format ends (a message break): text
/// after it is outside any channel until the next header.
pub const CHANNEL_END: Tag = Tag(25);
/// The arguments as a Python dict literal (`{'city': 'Paris', 'ok':
/// True}`, a model writing `str()` of them): converted to JSON when whole.
pub const ARGS_PYTHON: Tag = Tag(26);
/// A tool-call marker of another format than the template's, next to a
/// bare JSON call or a lone closer (`[TOOL_CALLS]`, `</tool_call>`): content
/// with a diagnostic, or left out, as the policy says (`foreign_markers`).
pub const FOREIGN: Tag = Tag(27);
/// A closer of the template's own call format where no call or section is
/// open (`Hello</tool_call>`): scaffolding, left out of the content and
/// named by a diagnostic with its range; content when a call's text went to
/// the content before it (`decode`).
pub const STRAY: Tag = Tag(28);
/// Empty, where a call's own opening marker starts text that is content
/// (no call follows it): closers after it are that text's.
pub const CALL_TEXT: Tag = Tag(29);
/// A tool section written inside a reasoning block, read as calls
/// (`calls_in_reasoning: call` or `both`; contains `CALL`s): out of the
/// reasoning text, or in it too, as the policy says.
pub const REASONING_CALLS: Tag = Tag(30);
