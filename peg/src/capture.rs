//! Captures: tagged byte ranges, and the events that stream them.
//!
//! A grammar marks the parts it wants with [`cap`](super::cap) and a [`Tag`]
//! the caller defines (reasoning, content, tool name, argument value...). A
//! parse yields [`Capture`]s; a stream yields [`Event`]s that add up to the
//! same captures.
//!
//! Ids: captures are numbered in the order they open (pre-order of the capture
//! tree), the same way in a full parse and in a stream, so an event's `id` is
//! an index into the [`Match::captures`] of the full parse.
//!
//! Event invariants, per capture: one [`Event::Open`], then [`Event::Text`]
//! ranges that are contiguous and start at the capture's start, then one
//! [`Event::Close`] whose span is exactly the concatenation of the text ranges.
//! A capture's `Open` comes after its parent's `Open` and before its parent's
//! `Close`. Nothing is ever retracted.

use std::ops::Range;

/// A capture's meaning, defined by the caller (for example an enum cast to
/// `u16`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Tag(pub u16);

impl From<u16> for Tag {
    fn from(v: u16) -> Tag {
        Tag(v)
    }
}

/// One captured span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture {
    /// The caller's tag.
    pub tag: Tag,
    /// Start byte offset in the input.
    pub start: usize,
    /// End byte offset (exclusive). For a capture that is still open in a
    /// partial parse: how far it got (never inside a UTF-8 character).
    pub end: usize,
    /// The id of the enclosing capture, if any.
    pub parent: Option<u32>,
    /// Whether the capture ended; `false` only in a partial parse.
    pub closed: bool,
}

impl Capture {
    /// The span as a range.
    pub fn span(&self) -> Range<usize> {
        self.start..self.end
    }

    /// The captured bytes of `input`.
    pub fn bytes<'a>(&self, input: &'a [u8]) -> &'a [u8] {
        input.get(self.start..self.end).unwrap_or(&[])
    }

    /// The captured text of `input`, with invalid UTF-8 replaced.
    pub fn text<'a>(&self, input: &'a [u8]) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.bytes(input))
    }
}

/// A streamed change to the captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Capture `id` opened at `start`.
    Open {
        /// The capture's id (opening order).
        id: u32,
        /// The caller's tag.
        tag: Tag,
        /// The enclosing capture, if any.
        parent: Option<u32>,
        /// Start byte offset.
        start: usize,
    },
    /// Bytes `start..end` are final parts of capture `id`: the next piece of
    /// its text.
    Text {
        /// The capture's id.
        id: u32,
        /// The caller's tag.
        tag: Tag,
        /// Start of the new bytes.
        start: usize,
        /// End of the new bytes (exclusive).
        end: usize,
    },
    /// Capture `id` ended; its whole span is `start..end`.
    Close {
        /// The capture's id.
        id: u32,
        /// The caller's tag.
        tag: Tag,
        /// Start of the capture.
        start: usize,
        /// End of the capture (exclusive).
        end: usize,
    },
}

impl Event {
    /// The capture the event is about.
    pub fn id(&self) -> u32 {
        match *self {
            Event::Open { id, .. } | Event::Text { id, .. } | Event::Close { id, .. } => id,
        }
    }

    /// The capture's tag.
    pub fn tag(&self) -> Tag {
        match *self {
            Event::Open { tag, .. } | Event::Text { tag, .. } | Event::Close { tag, .. } => tag,
        }
    }
}

/// The result of a parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Where the grammar's match ends; for a partial parse that needs more
    /// input, how far the parse got.
    pub end: usize,
    /// Every capture, in opening order (index = id).
    pub captures: Vec<Capture>,
    /// `false` when the input was partial and the parse needs more of it; the
    /// captures then describe the most likely reading of the prefix (open
    /// captures have `closed == false`).
    pub complete: bool,
}

impl Match {
    /// Captures whose parent is `parent` (`None`: top-level captures), with
    /// their ids.
    pub fn children(&self, parent: Option<u32>) -> impl Iterator<Item = (u32, &Capture)> {
        self.captures
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.parent == parent)
            .map(|(i, c)| (i as u32, c))
    }

    /// Captures with `tag`, with their ids.
    pub fn tagged(&self, tag: Tag) -> impl Iterator<Item = (u32, &Capture)> {
        self.captures
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.tag == tag)
            .map(|(i, c)| (i as u32, c))
    }
}

/// Rebuilds captures from a stream's events (for callers that want the
/// capture list as well as the deltas).
#[derive(Debug, Clone, Default)]
pub struct Collector {
    /// The captures seen so far, in opening order.
    pub captures: Vec<Capture>,
}

impl Collector {
    /// Applies one event.
    pub fn apply(&mut self, event: &Event) {
        match *event {
            Event::Open {
                id,
                tag,
                parent,
                start,
            } => {
                if id as usize == self.captures.len() {
                    self.captures.push(Capture {
                        tag,
                        start,
                        end: start,
                        parent,
                        closed: false,
                    });
                }
            }
            Event::Text { id, end, .. } => {
                if let Some(c) = self.captures.get_mut(id as usize) {
                    c.end = end;
                }
            }
            Event::Close { id, end, .. } => {
                if let Some(c) = self.captures.get_mut(id as usize) {
                    c.end = end;
                    c.closed = true;
                }
            }
        }
    }
}

/// One entry of the machine's capture log: a capture opened or closed at `pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogEntry {
    pub pos: usize,
    pub tag: Tag,
    pub open: bool,
}

/// Builds the capture list of a log; captures still open end at `open_end`
/// (or at their start, if that is later).
pub(crate) fn build(log: &[LogEntry], open_end: usize) -> Vec<Capture> {
    let mut captures: Vec<Capture> = Vec::new();
    let mut open: Vec<u32> = Vec::new();
    for e in log {
        if e.open {
            let parent = open.last().copied();
            open.push(captures.len() as u32);
            captures.push(Capture {
                tag: e.tag,
                start: e.pos,
                end: e.pos,
                parent,
                closed: false,
            });
        } else if let Some(id) = open.pop() {
            if let Some(c) = captures.get_mut(id as usize) {
                c.end = e.pos;
                c.closed = true;
            }
        }
    }
    for id in open {
        if let Some(c) = captures.get_mut(id as usize) {
            c.end = open_end.max(c.start);
        }
    }
    captures
}

/// A committed capture that has not closed yet.
#[derive(Debug, Clone, Copy)]
struct OpenCapture {
    id: u32,
    tag: Tag,
    start: usize,
    /// Bytes up to here have been sent as text.
    sent: usize,
}

/// Turns the committed part of a log into events, once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Emitter {
    next_id: u32,
    open: Vec<OpenCapture>,
}

impl Emitter {
    /// As new, keeping the allocation (`Stream::reset`).
    pub fn reset(&mut self) {
        let Emitter { next_id, open } = self;
        *next_id = 0;
        open.clear();
    }

    /// Whether every open capture has sent its text up to `at`.
    #[inline]
    pub fn sent_up_to(&self, at: usize) -> bool {
        self.open.iter().all(|o| o.sent == at)
    }

    /// Records the text of every open capture as sent up to `to`, without
    /// events: what [`emit`](Self::emit) with no entries does when each
    /// capture has sent up to the same point.
    #[inline]
    pub fn advance(&mut self, to: usize) {
        for o in &mut self.open {
            o.sent = to;
        }
    }

    /// The lowest position a future event's bytes can start at: each open
    /// capture's start (its `Close` spans it), or only what it has not
    /// sent yet for tags in `text_only` and captures from id `from` on.
    /// `usize::MAX` when none is open.
    pub fn oldest_needed(&self, text_only: &[Tag], from: u32) -> usize {
        self.open
            .iter()
            .map(|o| {
                if o.id >= from || text_only.contains(&o.tag) {
                    o.sent
                } else {
                    o.start
                }
            })
            .min()
            .unwrap_or(usize::MAX)
    }

    /// The open captures, outermost first: id and tag.
    #[inline]
    pub fn open(&self) -> impl Iterator<Item = (u32, Tag)> + '_ {
        self.open.iter().map(|o| (o.id, o.tag))
    }

    /// Emits events for log entries `entries` (the newly committed ones), then
    /// text up to `frontier` for every capture still open.
    #[inline]
    pub fn emit(&mut self, entries: &[LogEntry], frontier: usize, out: &mut Vec<Event>) {
        for e in entries {
            if e.open {
                let id = self.next_id;
                self.next_id += 1;
                let parent = self.open.last().map(|o| o.id);
                out.push(Event::Open {
                    id,
                    tag: e.tag,
                    parent,
                    start: e.pos,
                });
                self.open.push(OpenCapture {
                    id,
                    tag: e.tag,
                    start: e.pos,
                    sent: e.pos,
                });
            } else if let Some(o) = self.open.pop() {
                if e.pos > o.sent {
                    out.push(Event::Text {
                        id: o.id,
                        tag: o.tag,
                        start: o.sent,
                        end: e.pos,
                    });
                }
                out.push(Event::Close {
                    id: o.id,
                    tag: o.tag,
                    start: o.start,
                    end: e.pos.max(o.start),
                });
            }
        }
        for o in &mut self.open {
            if frontier > o.sent {
                out.push(Event::Text {
                    id: o.id,
                    tag: o.tag,
                    start: o.sent,
                    end: frontier,
                });
                o.sent = frontier;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(pos: usize, tag: u16) -> LogEntry {
        LogEntry {
            pos,
            tag: Tag(tag),
            open: true,
        }
    }
    fn close(pos: usize) -> LogEntry {
        LogEntry {
            pos,
            tag: Tag(0),
            open: false,
        }
    }

    #[test]
    fn builds_the_tree() {
        let log = [
            open(0, 1),
            open(2, 2),
            close(4),
            open(5, 3),
            close(9),
            close(10),
            open(12, 4),
        ];
        let caps = build(&log, 15);
        assert_eq!(
            caps,
            vec![
                Capture {
                    tag: Tag(1),
                    start: 0,
                    end: 10,
                    parent: None,
                    closed: true
                },
                Capture {
                    tag: Tag(2),
                    start: 2,
                    end: 4,
                    parent: Some(0),
                    closed: true
                },
                Capture {
                    tag: Tag(3),
                    start: 5,
                    end: 9,
                    parent: Some(0),
                    closed: true
                },
                Capture {
                    tag: Tag(4),
                    start: 12,
                    end: 15,
                    parent: None,
                    closed: false
                },
            ]
        );
        let m = Match {
            end: 15,
            captures: caps,
            complete: false,
        };
        assert_eq!(
            m.children(Some(0)).map(|(id, _)| id).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(
            m.tagged(Tag(4)).map(|(id, _)| id).collect::<Vec<_>>(),
            vec![3]
        );
        assert_eq!(m.captures[2].bytes(b"0123456789"), b"5678");
        assert_eq!(m.captures[3].bytes(b"0123"), b"");
    }

    #[test]
    fn emits_once_and_in_order() {
        let mut em = Emitter::default();
        let mut out = Vec::new();
        em.emit(&[open(0, 1)], 3, &mut out);
        em.emit(&[], 3, &mut out);
        em.emit(&[open(4, 2)], 6, &mut out);
        em.emit(&[close(7), close(8)], 8, &mut out);
        assert_eq!(
            out,
            vec![
                Event::Open {
                    id: 0,
                    tag: Tag(1),
                    parent: None,
                    start: 0
                },
                Event::Text {
                    id: 0,
                    tag: Tag(1),
                    start: 0,
                    end: 3
                },
                Event::Open {
                    id: 1,
                    tag: Tag(2),
                    parent: Some(0),
                    start: 4
                },
                Event::Text {
                    id: 0,
                    tag: Tag(1),
                    start: 3,
                    end: 6
                },
                Event::Text {
                    id: 1,
                    tag: Tag(2),
                    start: 4,
                    end: 6
                },
                Event::Text {
                    id: 1,
                    tag: Tag(2),
                    start: 6,
                    end: 7
                },
                Event::Close {
                    id: 1,
                    tag: Tag(2),
                    start: 4,
                    end: 7
                },
                Event::Text {
                    id: 0,
                    tag: Tag(1),
                    start: 6,
                    end: 8
                },
                Event::Close {
                    id: 0,
                    tag: Tag(1),
                    start: 0,
                    end: 8
                },
            ]
        );
        let mut col = Collector::default();
        out.iter().for_each(|e| col.apply(e));
        assert_eq!(
            col.captures,
            build(&[open(0, 1), open(4, 2), close(7), close(8)], 0)
        );
    }
}
