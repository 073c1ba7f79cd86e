//! Lowering pass: the reasoning block.
//!
//! A block the output starts inside (the prompt opened it) is its text up
//! to the end marker, then the marker, required; a block the model may
//! open is optional, and where the template closes empty blocks it never
//! opened, the end marker alone is an option too; delimiter reasoning (no
//! opening) is optional text up to the delimiter. After a prompt that
//! closed the block, the end marker may be written again (some templates
//! render it in the turn too): optional, scaffolding.
//!
//! Invariant: the block's text is an `Until` producing reasoning, stopped
//! by the end marker alone.

use super::{Kind, Lowering, Node, Produces};

pub(super) fn lower(lower: &Lowering) -> Node {
    let p = lower.protocol;
    let Some(r) = &p.reasoning else {
        return match &p.closed_by_prompt {
            // Templates that close the block in the prompt write its end
            // again in the turn (`</think>` after `</think>`): optional.
            Some(end) => Node::optional(Node::marker(end)),
            None => Node::empty(),
        };
    };
    let text = Node::new(Kind::Until {
        stops: vec![r.end.clone()],
    })
    .producing(Produces::Reasoning);
    let closed = Node::seq([text, Node::marker(&r.end)]);
    if r.opened && r.start.trim().is_empty() {
        return Node::optional(closed);
    }
    if r.opened {
        return closed;
    }
    let mut options = vec![Node::seq([Node::marker(&r.start), closed])];
    if r.bare_end {
        options.push(Node::marker(&r.end));
    }
    Node::optional(Node::choice(options))
}
