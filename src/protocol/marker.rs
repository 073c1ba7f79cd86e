//! Raw markers from the analysis, split into what must match exactly and
//! what is the template's whitespace.
//!
//! The analysis keeps markers raw, with the template's own whitespace
//! (`"<tool_call>\n"`, `"\n</parameter>\n"`). Models are looser than
//! templates about that whitespace, so a marker is split into its *cores*
//! (runs of non-whitespace) and whitespace runs; every reader of the
//! protocol (the parser's expressions, the grammar exports) matches cores
//! exactly and whitespace flexibly. A markdown code fence (a run of
//! backticks) starts a core of its own.
//!
//! A core that is a whole bracketed marker next to JSON brackets splits
//! there (`[TOOL_CALLS][` is `[TOOL_CALLS]`, room for whitespace, `[`).
//!
//! Invariant: a marker with no core (empty or whitespace only) never makes a
//! delimiter, so a scan never gets an empty delimiter.

use crate::markers;

/// A raw marker split into cores and whitespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub(crate) pieces: Vec<Piece>,
}

/// One run of a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Core(String),
    Space(String),
}

impl Marker {
    /// Splits `raw` into cores and whitespace runs.
    pub fn new(raw: &str) -> Marker {
        // Runs are cut from `raw` as slices, each copied once: markers are
        // split many times for every parser built.
        let mut pieces: Vec<Piece> = Vec::new();
        let mut run_start = 0;
        let mut prev: Option<char> = None;
        for (i, ch) in raw.char_indices() {
            if let Some(p) = prev {
                let space = ch.is_ascii_whitespace();
                let in_core = !p.is_ascii_whitespace();
                // A code fence is its own core: models write `]\n```` where
                // a template writes `]````.
                let fence = ch == '`' && in_core && p != '`';
                if space == in_core || fence {
                    push_run(&raw[run_start..i], &mut pieces);
                    if fence {
                        pieces.push(Piece::Space(String::new()));
                    }
                    run_start = i;
                }
            }
            prev = Some(ch);
        }
        if !raw.is_empty() {
            push_run(&raw[run_start..], &mut pieces);
        }
        Marker { pieces }
    }

    /// The opening core of a tagged value's `prefix` when it is an element
    /// of its own (`<arg_value>`): bracketed, and not the value's closer
    /// again (a quote, `<|"|>`, which `suffix` repeats). Not the rest of the
    /// key's tag (` string="true">`). Such an opener a model may leave out,
    /// its closer written: the parser reads the value without it and the
    /// response_template lets it be missing.
    pub(crate) fn element_opener(prefix: &str, suffix: &str) -> Option<String> {
        let closer = Marker::new(suffix).first_core().map(str::to_string);
        let opener = Marker::new(prefix).first_core()?.to_string();
        let element = opener.starts_with(['<', '[']) && Some(&opener) != closer.as_ref();
        element.then_some(opener)
    }

    /// The marker from its first core that is a bracketed token on
    /// (`<|tool_call_end|>` of `]<|tool_call_end|>`): the part distinctive
    /// enough to be read alone. `None` without such a core.
    pub fn from_first_token(&self) -> Option<Marker> {
        let first = self
            .pieces
            .iter()
            .position(|p| matches!(p, Piece::Core(c) if is_token(c)))?;
        Some(Marker {
            pieces: self.pieces[first..].to_vec(),
        })
    }

    /// The marker has no non-whitespace text.
    pub fn is_blank(&self) -> bool {
        self.first_core().is_none()
    }

    /// Whether `Marker::new(raw)` would be blank, without splitting it:
    /// every run of other bytes is a core. The generator asks this of the
    /// same few markers many times per parser built.
    pub fn blank(raw: &str) -> bool {
        raw.bytes().all(|b| b.is_ascii_whitespace())
    }

    /// The first core (what a text scan looks for to find the marker).
    pub fn first_core(&self) -> Option<&str> {
        self.pieces.iter().find_map(|p| match p {
            Piece::Core(c) => Some(c.as_str()),
            Piece::Space(_) => None,
        })
    }

    /// Delimiters that end raw text before this marker: the template's own
    /// leading whitespace plus the first core (so that whitespace is not part
    /// of the text), and the core alone.
    pub fn delimiters(&self) -> Vec<String> {
        let Some(core) = self.first_core() else {
            return Vec::new();
        };
        match self.pieces.first() {
            Some(Piece::Space(s)) => vec![format!("{s}{core}"), core.to_string()],
            _ => vec![core.to_string()],
        }
    }
}

/// A core made of a whole bracketed marker and JSON brackets
/// (`[TOOL_CALLS][`, `<tool_call>{`, `]<|tools_suffix|>`) splits between
/// them, with room for whitespace: models put a space or a newline between
/// a special token and the JSON it opens or closes where the template
/// writes none (`[TOOL_CALLS] [{...}]`). A marker next to other text
/// (`<|channel|>final<|message|>`) stays whole: that text is a label.
fn push_run(run: &str, pieces: &mut Vec<Piece>) {
    match run.starts_with(|c: char| c.is_ascii_whitespace()) {
        true => pieces.push(Piece::Space(run.to_string())),
        false => split_bracketed(run, pieces),
    }
}

fn split_bracketed(core: &str, pieces: &mut Vec<Piece>) {
    let brackets =
        |text: &str, set: &[char]| !text.is_empty() && text.chars().all(|c| set.contains(&c));
    let mut split = |at: usize| {
        pieces.extend([
            Piece::Core(core[..at].to_string()),
            Piece::Space(String::new()),
            Piece::Core(core[at..].to_string()),
        ])
    };
    if let Some(head) = markers::marker_at(core, 0) {
        if brackets(&core[head.end..], &['[', '{']) {
            return split(head.end);
        }
    }
    match trailing_marker(core) {
        Some(at) if brackets(&core[..at], &[']', '}']) => split(at),
        _ => pieces.push(Piece::Core(core.to_string())),
    }
}

/// Where a whole marker that ends `text` starts, if one does.
fn trailing_marker(text: &str) -> Option<usize> {
    let open = text.rfind(['<', '['])?;
    markers::marker_at(text, open)
        .filter(|m| m.end == text.len())
        .map(|m| m.start)
}

/// A bracketed special token (`<|tool_call_end|>`, `</tool_call>`,
/// `[/TOOL_CALLS]`): distinctive enough to close by itself.
pub(crate) fn is_token(core: &str) -> bool {
    core.len() >= 3
        && ((core.starts_with('<') && core.ends_with('>'))
            || (core.starts_with('[') && core.ends_with(']')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cores_and_space() {
        let m = Marker::new("\n</parameter>\n");
        assert_eq!(m.first_core(), Some("</parameter>"));
        assert_eq!(m.delimiters(), ["\n</parameter>", "</parameter>"]);
        assert!(Marker::new(" \n  ").is_blank());
        for raw in [
            "",
            " \n\t\r ",
            "\u{a0}",
            " `",
            "x ",
            "\u{2003}\n",
            "[TOOL_CALLS][",
            "\x0c",
        ] {
            assert_eq!(Marker::blank(raw), Marker::new(raw).is_blank(), "{raw:?}");
        }
        assert!(Marker::new("").delimiters().is_empty());
        assert_eq!(Marker::new("<tool_call>\n").delimiters(), ["<tool_call>"]);
        assert_eq!(Marker::new("```json\n[").first_core(), Some("```json"));
    }

    #[test]
    fn pieces_keep_every_byte_and_mark_each_split() {
        let core = |s: &str| Piece::Core(s.into());
        let space = |s: &str| Piece::Space(s.into());
        assert_eq!(
            Marker::new("a`b` é\t<x>").pieces,
            [
                core("a"),
                space(""),
                core("`b"),
                space(""),
                core("`"),
                space(" "),
                core("é"),
                space("\t"),
                core("<x>"),
            ]
        );
        assert_eq!(
            Marker::new("]\n```").pieces,
            [core("]"), space("\n"), core("```")]
        );
        assert_eq!(
            Marker::new(" [TOOL_CALLS][ ").pieces,
            [
                space(" "),
                core("[TOOL_CALLS]"),
                space(""),
                core("["),
                space(" ")
            ]
        );
        assert!(Marker::new("").pieces.is_empty());
    }

    fn cores(raw: &str) -> Vec<String> {
        let m = Marker::new(raw);
        m.pieces
            .into_iter()
            .filter_map(|p| {
                if let Piece::Core(c) = p {
                    Some(c)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn a_special_token_at_either_end_of_a_core_stands_alone() {
        assert_eq!(cores("[TOOL_CALLS]["), ["[TOOL_CALLS]", "["]);
        assert_eq!(cores("\n<tool_calls>["), ["<tool_calls>", "["]);
        assert_eq!(cores("]<|tools_suffix|>"), ["]", "<|tools_suffix|>"]);
        assert_eq!(
            cores("]<]minimax[>[<tool_call>\n]<]minimax[>["),
            ["]<]minimax[>[<tool_call>", "]<]minimax[>["]
        );
        assert_eq!(
            cores("<|channel|>final<|message|>"),
            ["<|channel|>final<|message|>"]
        );
        assert_eq!(cores("<|tool_call_begin|>"), ["<|tool_call_begin|>"]);
        assert_eq!(cores("<function="), ["<function="]);
        assert_eq!(
            Marker::new("[TOOL_CALLS][").first_core(),
            Some("[TOOL_CALLS]")
        );
    }
}
