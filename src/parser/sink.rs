//! Where the decoder writes deltas: the caller's buffer, reused, and the
//! running message.
//!
//! A stream push usually makes one small piece of text. Allocating a
//! `Delta`, its `String` and the `Vec` around them on every push is what
//! made 4-byte streaming cost many times a full parse, so the sink:
//!
//! - overwrites the deltas already in the buffer (a server passes the same
//!   `Vec` to every push), reusing their strings' capacity;
//! - merges text into the previous delta when it continues the same field
//!   (content after content, reasoning after reasoning, argument text after
//!   argument text of the same call);
//! - appends the same text to the stream's [`MessageBuilder`] as it goes, so
//!   the message needs no second pass over the deltas (but for the plain
//!   JSON argument text [`Sink::delta`] writes, which the stream copies into
//!   the builder itself, once per step).
//!
//! Invariants: the deltas written add up, in order, to exactly the text the
//! decoder wrote, and so does what the builder gained (with what callers of
//! [`Sink::delta`] owe it); a call's announcing
//! delta (index, id, name) is never merged with anything, so id and name
//! come once, in the call's first delta.

use crate::message::{Delta, FunctionDelta, MessageBuilder, ToolCallDelta};
use chat_autoparser_peg::short::push_short;

/// A delta's text field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Content,
    Reasoning,
    Arguments(usize),
}

/// Which deltas a sink writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deltas {
    /// Every delta (a stream).
    All,
    /// Calls' announcements only, no text (a batch parse that mints call
    /// ids: `StreamIds::fill` reads the announcements).
    Announcements,
    /// None: the message is all a batch parse without minted ids returns,
    /// and nothing reads its pushes' deltas.
    None,
}

/// Writes deltas over `out`'s old ones; [`Sink::finish`] drops the unused rest.
#[derive(Debug)]
pub struct Sink<'a> {
    out: &'a mut Vec<Delta>,
    builder: &'a mut MessageBuilder,
    used: usize,
    /// The last delta's field, while text may be appended to it.
    open: Option<Field>,
    /// Which deltas to write besides the builder's text (a batch parse
    /// returns the message: deltas would be a second copy of its text).
    deltas: Deltas,
}

impl<'a> Sink<'a> {
    /// A sink that replaces `out`'s contents and adds to `builder`,
    /// writing `deltas` (text goes to `builder` only unless `All`).
    pub fn new(
        out: &'a mut Vec<Delta>,
        builder: &'a mut MessageBuilder,
        deltas: Deltas,
    ) -> Sink<'a> {
        Sink {
            out,
            builder,
            used: 0,
            open: None,
            deltas,
        }
    }

    /// Content text.
    pub fn content(&mut self, text: &str) {
        self.put(Field::Content, text);
    }

    /// Reasoning text.
    pub fn reasoning(&mut self, text: &str) {
        self.put(Field::Reasoning, text);
    }

    /// Argument text of call `index` (announced already).
    pub fn arguments(&mut self, index: usize, text: &str) {
        self.put(Field::Arguments(index), text);
    }

    /// `field`'s text. Inlined where a stream's plain-text push calls it:
    /// a push is a few nanoseconds, and calls are a good part of them.
    #[inline(always)]
    pub fn put(&mut self, field: Field, text: &str) {
        if text.is_empty() {
            return;
        }
        match field {
            Field::Content => self.builder.push_content(text),
            Field::Reasoning => self.builder.push_reasoning(text),
            Field::Arguments(index) => self.builder.push_arguments(index, text),
        }
        if self.deltas == Deltas::All {
            self.delta(field, text);
        }
    }

    /// `field`'s text in the deltas only: the caller owes it to the
    /// builder (a stream's plain JSON arguments, copied into the message
    /// once per step instead of once per push).
    #[inline(always)]
    pub fn delta(&mut self, field: Field, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.open == Some(field) {
            push_short(field_text(&mut self.out[self.used - 1], field), text);
            return;
        }
        // A new delta for `field`: the next old one, when it has that shape
        // already (as a buffer passed to pushes alike does), else reshaped.
        self.open = Some(field);
        let d = self.next();
        match reusable(d, field) {
            Some(buf) => {
                buf.clear();
                push_short(buf, text);
            }
            None => {
                shape(d, field);
                push_short(field_text(d, field), text);
            }
        }
    }

    /// Whether it writes any delta: a piece only the message gets need not
    /// say what the message says anyway (a call's `type`).
    pub fn writes_deltas(&self) -> bool {
        self.deltas != Deltas::None
    }

    /// A tool-call delta that is not argument text (an announcement or a
    /// late id): a delta of its own.
    pub fn tool_call(&mut self, piece: ToolCallDelta) {
        if self.deltas == Deltas::None {
            // No delta to write: the piece's strings move into the message.
            self.builder.take_call(piece);
            self.open = None;
            return;
        }
        self.builder.apply_call(&piece);
        let d = self.next();
        d.content = None;
        d.reasoning_content = None;
        d.tool_calls.clear();
        d.tool_calls.push(piece);
        self.open = None;
    }

    /// `check` of call `index`'s argument text in the message so far, with
    /// `closing` after it (not copied: a call's arguments may be large).
    pub fn with_arguments_closed<R>(
        &mut self,
        index: usize,
        closing: &str,
        check: impl FnOnce(&str) -> R,
    ) -> R {
        self.builder.with_arguments_closed(index, closing, check)
    }

    /// Leaves call `index` out of the message (see `MessageBuilder::withdraw`).
    pub fn withdraw(&mut self, index: usize) {
        self.builder.withdraw(index);
        self.open = None;
    }

    /// The deltas written: `out` holds exactly them.
    pub fn finish(self) {
        self.out.truncate(self.used);
    }

    /// The next delta slot: an old delta of the buffer, or a new one.
    #[inline(always)]
    fn next(&mut self) -> &mut Delta {
        if self.used == self.out.len() {
            self.out.push(Delta::default());
        }
        self.used += 1;
        &mut self.out[self.used - 1]
    }
}

/// Replaces `out`'s contents with `text` as one delta of `field`, when
/// `out` holds one delta of that shape already (as a buffer passed to
/// pushes alike does), and writes nothing else: a stream's plain push of
/// JSON argument text, which the builder gets later, without a [`Sink`].
/// `false`, and `out` untouched, otherwise.
#[inline(always)]
pub fn replace_with(out: &mut Vec<Delta>, field: Field, text: &str) -> bool {
    if text.is_empty() {
        out.clear();
        return true;
    }
    let [d] = &mut out[..] else { return false };
    let Some(buf) = reusable(d, field) else {
        return false;
    };
    buf.clear();
    push_short(buf, text);
    true
}

/// `field`'s string in `d` (created empty if missing; `d` has `field`'s
/// shape).
fn field_text(d: &mut Delta, field: Field) -> &mut String {
    let slot = match field {
        Field::Content => &mut d.content,
        Field::Reasoning => &mut d.reasoning_content,
        Field::Arguments(_) => {
            if d.tool_calls.is_empty() {
                d.tool_calls.push(ToolCallDelta::default());
            }
            &mut d.tool_calls[0].function.arguments
        }
    };
    slot.get_or_insert_with(String::new)
}

/// `d`'s string for `field` when `d` already has exactly that shape, as a
/// buffer passed to pushes alike does: only its text needs clearing.
/// Inlined: every plain-text push of a stream asks it.
#[inline(always)]
fn reusable(d: &mut Delta, field: Field) -> Option<&mut String> {
    match field {
        Field::Content if d.reasoning_content.is_none() && d.tool_calls.is_empty() => {
            d.content.as_mut()
        }
        Field::Reasoning if d.content.is_none() && d.tool_calls.is_empty() => {
            d.reasoning_content.as_mut()
        }
        Field::Arguments(index) if d.content.is_none() && d.reasoning_content.is_none() => {
            match &mut d.tool_calls[..] {
                [ToolCallDelta {
                    index: i,
                    id: None,
                    kind: None,
                    function,
                }] if function.name.is_none() => {
                    *i = index;
                    function.arguments.as_mut()
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Makes `d` an empty delta of `field`, keeping any string `d` held.
fn shape(d: &mut Delta, field: Field) {
    let mut buf = d
        .content
        .take()
        .or_else(|| d.reasoning_content.take())
        .or_else(|| {
            d.tool_calls
                .first_mut()
                .and_then(|c| c.function.arguments.take())
        })
        .unwrap_or_default();
    buf.clear();
    d.tool_calls.clear();
    match field {
        Field::Content => {
            d.reasoning_content = None;
            d.content = Some(buf);
        }
        Field::Reasoning => {
            d.content = None;
            d.reasoning_content = Some(buf);
        }
        Field::Arguments(index) => {
            d.content = None;
            d.reasoning_content = None;
            let function = FunctionDelta {
                name: None,
                arguments: Some(buf),
            };
            d.tool_calls.push(ToolCallDelta {
                index,
                id: None,
                kind: None,
                function,
            });
        }
    }
}
