//! What an assistant prefill already holds (`continue_final_message`): the
//! text the output completes, and the part (reasoning or content) it goes on
//! writing. The prompt side (`crate::prompt`) finds it in the request; the
//! parser starts its message from it.
//!
//! Invariant: the message a parser reports starts with the prefill's
//! content and reasoning: the client already has them.

/// The part of a prefill the output goes on writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefillPart {
    /// The answer: reasoning, if the prefill has any, is closed.
    #[default]
    Content,
    /// The reasoning block, still open.
    Reasoning,
}

/// What an assistant prefill already holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefill {
    /// Content already written.
    pub content: String,
    /// Reasoning already written.
    pub reasoning: String,
    /// The part the output continues.
    pub part: PrefillPart,
}

impl Prefill {
    /// The text of the continued part so far.
    pub fn continued(&self) -> &str {
        match self.part {
            PrefillPart::Content => &self.content,
            PrefillPart::Reasoning => &self.reasoning,
        }
    }
}
