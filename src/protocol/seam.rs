//! The turn seam: the stop marker, then the header that opens an assistant
//! turn (`<|im_end|>\n<|im_start|>assistant\n`,
//! `<｜end▁of▁sentence｜><｜Assistant｜>`).
//!
//! A model past its stop runs on into a second turn of its own, and some
//! templates render a call turn's content as a turn after the calls; the
//! seam between them is scaffolding. The parser drops it and the
//! response_template leaves it out of the reasoning it captures, both from
//! this one description.
//!
//! Invariant: only a header that opens with a special token makes a seam;
//! plain words after a stop marker are text.

use super::marker::Marker;
use super::Protocol;
use crate::markers::marker_at;

/// The seam's two markers, raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSeam {
    /// The stop marker's first core, where the seam starts.
    pub stop: String,
    /// The assistant turn's header, the reasoning opener left out,
    /// whitespace around it trimmed (`<|im_start|>assistant`).
    pub header: String,
}

impl Protocol {
    /// The turn seam of this template, if its assistant header opens with
    /// a special token (see the module docs).
    pub fn turn_seam(&self) -> Option<TurnSeam> {
        let stop = Marker::new(&self.turn.stop_marker)
            .first_core()?
            .to_string();
        let header = assistant_header(self)?;
        marker_at(&header, 0)?;
        Some(TurnSeam { stop, header })
    }
}

/// The generation prompt up to the reasoning block it opens or holds,
/// whitespace aside: `<|im_start|>assistant` of `<|im_start|>assistant\n<think>\n`.
fn assistant_header(protocol: &Protocol) -> Option<String> {
    let prompt = &protocol.turn.generation_prompt.default;
    let reasoning = protocol.markup.reasoning.as_ref();
    let start = reasoning.and_then(|r| Marker::new(&r.start).first_core().map(str::to_string));
    let end = start
        .and_then(|core| prompt.find(&core))
        .unwrap_or(prompt.len());
    let header = prompt[..end].trim();
    (!header.is_empty()).then(|| header.to_string())
}
