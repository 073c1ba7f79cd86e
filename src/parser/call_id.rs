//! OpenAI-style call ids (`call_` and 24 ASCII letters and digits) for
//! calls the model wrote without one, so a server need not invent them.
//!
//! Ids are a pure function of the caller's seed, the stream's number within
//! its parser and the call's index: the same seed gives the same ids (tests,
//! replays), and a server that wants ids unique across requests passes a
//! fresh seed (a random number, a request counter).
//!
//! When the model's formats write no id, ids are minted when a call is
//! announced, so the call's first delta carries its id. When a format has an
//! id of its own (Mistral's `[CALL_ID]`, Kimi's `functions.NAME:0`, a JSON
//! `"id"` member), the model's id comes after the name, and it is the one
//! the template reads back next turn: the minted id then waits for the end
//! of the output and goes only to calls that ended without one, in a delta
//! of its own. Either way a call's id is sent once, so a client that
//! accumulates deltas (the `openai` package concatenates strings) rebuilds
//! exactly the message's id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::message::{Delta, MessageBuilder, ToolCallDelta};

/// The ids of one parser: its seed and how many streams it started.
#[derive(Debug, Clone)]
pub(crate) struct CallIdSource {
    seed: u64,
    streams: Arc<AtomicU64>,
    /// The model may write ids: mint only at the end, for calls without.
    late: bool,
}

impl CallIdSource {
    /// Ids from `seed`; `model_writes_ids`: a call format has an id slot.
    pub(crate) fn new(seed: u64, model_writes_ids: bool) -> CallIdSource {
        CallIdSource {
            seed,
            streams: Arc::new(AtomicU64::new(0)),
            late: model_writes_ids,
        }
    }

    /// The same ids from the start: a parser handed out again (a kept
    /// one, `cache`) numbers its streams from 0, as a new build would, so
    /// the same seed still gives the same ids.
    pub(crate) fn restarted(&self) -> CallIdSource {
        CallIdSource::new(self.seed, self.late)
    }

    /// The ids of the parser's next stream.
    pub(crate) fn next_stream(&self) -> StreamIds {
        // Relaxed: the counter only has to hand out distinct numbers.
        let stream = self.streams.fetch_add(1, Ordering::Relaxed);
        StreamIds {
            key: mix(self.seed ^ mix(stream)),
            late: self.late,
        }
    }
}

/// The ids of one stream.
#[derive(Debug, Clone)]
pub(crate) struct StreamIds {
    key: u64,
    late: bool,
}

impl StreamIds {
    /// Gives every call announced in `deltas` without an id a minted one,
    /// in the deltas and in `builder` (unless the model may still write it).
    pub(crate) fn fill(&self, deltas: &mut [Delta], builder: &mut MessageBuilder) {
        if self.late {
            return;
        }
        for call in deltas.iter_mut().flat_map(|d| d.tool_calls.iter_mut()) {
            if call.kind.is_some() && call.id.is_none() {
                let id = self.id(call.index);
                builder.apply_call(&ToolCallDelta {
                    index: call.index,
                    id: Some(id.clone()),
                    ..Default::default()
                });
                call.id = Some(id);
            }
        }
    }

    /// At the end of the output: a minted id, each in a delta of its own
    /// appended to `deltas`, for every call that ended without one (only
    /// when the model may write ids; otherwise `fill` gave them already).
    pub(crate) fn finish(&self, deltas: &mut Vec<Delta>, builder: &mut MessageBuilder) {
        if !self.late {
            return;
        }
        for index in builder.calls_without_id() {
            let piece = ToolCallDelta {
                index,
                id: Some(self.id(index)),
                ..Default::default()
            };
            builder.apply_call(&piece);
            deltas.push(Delta::tool_call(piece));
        }
    }

    /// Call `index`'s id.
    fn id(&self, index: usize) -> String {
        const ALPHABET: &[u8; 62] =
            b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut id = String::with_capacity(29);
        id.push_str("call_");
        // 24 characters from three 64-bit draws of 8 each: 62^8 < 2^64, so
        // every character is a full draw (twelve per draw left the last
        // ones nearly constant, 62^11 > 2^64).
        for draw in 0..3u64 {
            let mut bits = mix(self.key ^ mix((index as u64) << 2 | draw));
            for _ in 0..8 {
                id.push(char::from(ALPHABET[(bits % 62) as usize]));
                bits /= 62;
            }
        }
        id
    }
}

/// splitmix64's finaliser: spreads every input bit over the output.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_openai_shaped_distinct_and_repeatable() {
        let source = CallIdSource::new(7, false);
        let (first, second) = (source.next_stream(), source.next_stream());
        let id = first.id(0);
        assert_eq!(id.len(), 29);
        assert!(
            id.starts_with("call_") && id[5..].bytes().all(|b| b.is_ascii_alphanumeric()),
            "{id}"
        );
        assert_ne!(id, first.id(1));
        assert_ne!(id, second.id(0));
        assert_eq!(id, CallIdSource::new(7, false).next_stream().id(0));
        assert_ne!(id, CallIdSource::new(8, false).next_stream().id(0));
    }

    #[test]
    fn every_character_of_an_id_varies() {
        let stream = CallIdSource::new(1, false).next_stream();
        let ids: Vec<Vec<u8>> = (0..2000).map(|i| stream.id(i).into_bytes()).collect();
        for at in 5..29 {
            let mut seen = std::collections::BTreeSet::new();
            seen.extend(ids.iter().map(|id| id[at]));
            assert!(
                seen.len() >= 60,
                "position {at} takes {} values",
                seen.len()
            );
        }
    }
}
