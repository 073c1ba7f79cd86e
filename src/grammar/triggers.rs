//! Where a lazy tool grammar starts: trigger words and patterns.
//!
//! The grammar applies from the trigger on, the trigger text included (a
//! word or token), or from a pattern's first capture group. The trigger is
//! the first literal of the tool section: the section marker, else the
//! markers the call's [`CallLayout`] opens with (the call marker, a tagged
//! name's prefix); calls with no marker at all (a bare JSON object, a bare
//! Python call) get a pattern on the layout's fixed text up to its first word
//! (`{"name"`, `get_weather(`). A word that is one of the grammar's preserved
//! (special) tokens is a `token` trigger: it fires when the model samples
//! that token.
//!
//! When the template has reasoning markers, the trigger becomes a pattern that
//! only fires after the reasoning block: a model thinking aloud about
//! `<tool_call>` must stay free. The protocol's reasoning block (where the
//! output starts, read from the prompt or the thinking switch once for every
//! back end) decides which: inside a block (opened by the prompt, forced
//! open, delimiter-only reasoning) the closing marker comes first; with no
//! block (thinking off, or a prompt that closed it) nothing is skipped;
//! otherwise an optional block (`<think>...</think>`) is skipped when the
//! output opens with it.
//!
//! Patterns are consumed by llama.cpp, which compiles them with `std::regex`
//! (ECMAScript) and tries them after every sampled token on the output so far:
//! a `pattern` is searched, a `pattern_full` must match that whole text
//! (llama.cpp anchors it with `^...$`). Patterns anchored at the output's
//! start are therefore `pattern_full`, ending with `[\s\S]*`.
//!
//! Invariants: every pattern is in the syntax ECMAScript and the `regex`
//! crate share (escapes `\xHH`, `\s`, `\n`, `\.`; groups `(?:...)`; no
//! `\x{...}`, no lookaround, no Unicode classes) and has exactly one capture
//! group, which begins where the grammar's root begins.

use serde::{Deserialize, Serialize};

use super::markers::first_word;
use super::shape::flat;
use crate::protocol::outline::{Kind, Node, Outline, Produces};
use crate::protocol::{text_pieces, IdShape, TextPiece};

/// What a trigger matches (llama.cpp's trigger types, `docs/cli.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TriggerKind {
    /// A literal word; the grammar starts at it.
    Word,
    /// A regex searched in the output; the grammar starts at its first capture group.
    Pattern,
    /// A regex the whole output so far must match; the grammar starts at its
    /// first capture group.
    PatternFull,
    /// A special token (one of the preserved tokens), by its text; the grammar
    /// starts with it.
    Token,
}

/// A point in the output where a lazy grammar takes over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    /// How `value` is matched.
    pub kind: TriggerKind,
    /// The word, token or pattern.
    pub value: String,
}

/// The opening of the tool section: a literal word, or a regex for
/// marker-less formats.
enum Opening {
    Word(String),
    Pattern(String),
}

/// The reasoning block the output may hold before a call, as the outline
/// writes it: text producing reasoning up to `end`, after `start` unless
/// the output starts inside the block.
struct Block {
    start: String,
    end: String,
    opened: bool,
}

/// The outline's lazy starts (the nodes marked `lazy_start`), each with
/// whether something (content) may come before it in its option.
fn lazy_starts(node: &Node, preceded: bool, out: &mut Vec<(Node, bool)>) {
    // Content before a lazy start counts even where only the parser reads
    // it (lenient): the grammar starts after it.
    if node.lenient && !node.lazy_start {
        return;
    }
    if node.lazy_start {
        out.push((node.clone(), preceded));
        return;
    }
    match &node.kind {
        Kind::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                lazy_starts(item, preceded || i > 0, out);
            }
        }
        _ => {
            for child in node.children() {
                lazy_starts(child, preceded, out);
            }
        }
    }
}

/// The nodes marked `lazy_start` in `outline`: where a lazy grammar starts.
pub fn lazy_nodes(outline: &Outline) -> Vec<Node> {
    let mut out = Vec::new();
    lazy_starts(body(outline), false, &mut out);
    out.into_iter().map(|(n, _)| n).collect()
}

/// The body of the output: the root's last part, after the reasoning.
fn body(outline: &Outline) -> &Node {
    match &outline.root.kind {
        Kind::Sequence(parts) => parts.last().unwrap_or(&outline.root),
        _ => &outline.root,
    }
}

/// The reasoning block of the outline's root, if the output may hold one.
fn block(node: &Node) -> Option<Block> {
    if node.lenient {
        return None;
    }
    let items = flat(node);
    for (i, item) in items.iter().enumerate() {
        if let Kind::Until { stops } = &item.kind {
            if item.produces == Produces::Reasoning {
                let start = match i.checked_sub(1).map(|j| &items[j].kind) {
                    Some(Kind::Marker(raw)) => raw.clone(),
                    _ => String::new(),
                };
                return Some(Block {
                    opened: start.is_empty(),
                    start,
                    end: stops.first().cloned().unwrap_or_default(),
                });
            }
        }
        if item.lazy_start {
            return None;
        }
        let inner = match &item.kind {
            Kind::Optional(inner) => Some(&**inner),
            Kind::Choice(options) => options.first(),
            _ => None,
        };
        if let Some(found) = inner.and_then(block) {
            return Some(found);
        }
    }
    None
}

/// The markers the output may begin with besides its calls (a content
/// wrapper's opening): a call's opening word that begins one of them
/// needs what differs.
fn other_openings(node: &Node, out: &mut Vec<String>) {
    if node.lenient || node.lazy_start {
        return;
    }
    match &node.kind {
        Kind::Choice(options) => options.iter().for_each(|o| other_openings(o, out)),
        Kind::Optional(inner) => other_openings(inner, out),
        Kind::Sequence(_) => match flat(node).first() {
            Some(first) if matches!(first.kind, Kind::Sequence(_)) => {}
            Some(first) => other_openings(first, out),
            None => {}
        },
        Kind::Marker(raw) => out.extend(first_word(raw)),
        _ => {}
    }
}

/// The triggers of a lazy grammar over `outline`'s lazy starts: each
/// start's opening, after the reasoning block the output may hold first.
/// `preserved` are the grammar's preserved tokens (a trigger word among
/// them is a token).
pub fn triggers(outline: &Outline, preserved: &[String]) -> Vec<Trigger> {
    let mut starts = Vec::new();
    lazy_starts(body(outline), false, &mut starts);
    let reasoning = block(&outline.root);
    let mut others = Vec::new();
    other_openings(body(outline), &mut others);
    let mut out: Vec<Trigger> = Vec::new();
    for (node, preceded) in &starts {
        let opening = opening(outline, node);
        // A marker-less call is only recognisable as the whole output
        // (after reasoning); a marker may follow content.
        let anchored = matches!(opening, Opening::Pattern(_)) && !preceded;
        for t in start_triggers(opening, anchored, reasoning.as_ref(), &others, preserved) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// The triggers of one lazy start opening with `opening`, when the output
/// may hold `reasoning` first and begin with `others` (markers of no call).
fn start_triggers(
    opening: Opening,
    anchored: bool,
    reasoning: Option<&Block>,
    others: &[String],
    preserved: &[String],
) -> Vec<Trigger> {
    let body = match &opening {
        Opening::Word(w) => escape(w),
        Opening::Pattern(p) => p.clone(),
    };
    // The markers the opening word may begin without opening a call: the
    // reasoning block's start, the content wrapper's.
    let open = reasoning.map_or("", |r| r.start.trim());
    let mut markers = vec![open];
    markers.extend(others.iter().map(String::as_str));
    let guard = opener_guard(&opening, &markers);
    let Some(reasoning) = reasoning else {
        return match guard.is_empty() {
            true => plain(opening, anchored, &body, preserved),
            false => vec![full(&format!("[\\s\\S]*?({body}){guard}"))],
        };
    };
    let gap = if anchored { "\\s*" } else { "[\\s\\S]*?" };
    let end = escape(&reasoning.end);
    if reasoning.opened {
        // The output starts inside the block: it must close first.
        return inside_block(&end, gap, &format!("({body}){guard}"));
    }
    let with_block = format!("\\s*{}[\\s\\S]*?{end}{gap}({body}){guard}", escape(open));
    // `??`: prefer no skipped text, so the first call is where the grammar starts.
    let without_block = format!(
        "\\s*(?:(?:{}){gap})??({body}){guard}",
        not_starting_with(open)
    );
    vec![full(&with_block), full(&without_block)]
}

/// Triggers for an output that starts inside a reasoning block: after its
/// end marker only. (The parser also reads a section opened in a block that
/// never closes as ending it, but while tokens stream in nothing tells that
/// from a model musing about the marker: reasoning stays free, as llama.cpp's
/// own forced-open formats keep it.)
fn inside_block(end: &str, gap: &str, call: &str) -> Vec<Trigger> {
    vec![full(&format!("[\\s\\S]*?{end}{gap}{call}"))]
}

/// When the section's opening word begins one of `markers` (`to=` of the
/// reasoning's `to=self<|message|>`, `<|channel|>` of the content's
/// `<|channel|>final<|message|>`), what must follow the word for it to be
/// none of them (empty otherwise): else that marker fires the trigger.
fn opener_guard(opening: &Opening, markers: &[&str]) -> String {
    let Opening::Word(w) = opening else {
        return String::new();
    };
    let rests: Vec<&str> = markers
        .iter()
        .filter_map(|m| m.strip_prefix(w.as_str()))
        .filter(|rest| !rest.is_empty())
        .collect();
    match rests.is_empty() {
        true => String::new(),
        false => format!("(?:{})", not_starting_with_any(&rests)),
    }
}

/// Triggers with no reasoning to skip.
fn plain(opening: Opening, anchored: bool, body: &str, preserved: &[String]) -> Vec<Trigger> {
    match opening {
        Opening::Word(w) if preserved.contains(&w) => vec![Trigger {
            kind: TriggerKind::Token,
            value: w,
        }],
        Opening::Word(w) => vec![Trigger {
            kind: TriggerKind::Word,
            value: w,
        }],
        Opening::Pattern(_) if anchored => vec![full(&format!("\\s*({body})"))],
        Opening::Pattern(_) => vec![Trigger {
            kind: TriggerKind::Pattern,
            value: format!("({body})"),
        }],
    }
}

/// A `pattern_full` trigger: `head` from the output's start, then anything
/// (the output so far goes on past the trigger while tokens come in).
fn full(head: &str) -> Trigger {
    Trigger {
        kind: TriggerKind::PatternFull,
        value: format!("^{head}[\\s\\S]*$"),
    }
}

/// `text` as a regex matching it literally, in the syntax ECMAScript and the
/// `regex` crate share: metacharacters behind `\`, control characters as
/// `\n`, `\t`, `\r` or `\xHH` (never `\x{...}`, which `std::regex` rejects).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_ascii_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A regex for "a text that does not begin with `start`": it differs from
/// `start` at some character (neither the `regex` crate nor a portable
/// pattern has lookahead). `std::regex` reads the pattern byte by byte, so a
/// class can only exclude an ASCII character: the alternatives stop at the
/// first non-ASCII one (a text that shares the marker's start up to there
/// and then differs is not recognised, and stays free).
fn not_starting_with(start: &str) -> String {
    not_starting_with_any(&[start])
}

/// A regex for "a text that begins with none of `starts`" (each read as
/// [`not_starting_with`] reads one): where the text leaves every start it
/// still shares, it differs from all of them.
fn not_starting_with_any(starts: &[&str]) -> String {
    let starts: Vec<Vec<char>> = starts
        .iter()
        .map(|s| s.chars().take_while(char::is_ascii).collect())
        .collect();
    let mut options = Vec::new();
    differing(&starts, 0, &mut options);
    options.join("|")
}

/// The alternatives of [`not_starting_with_any`] past the `depth` characters
/// that all of `starts` share: a character none of them has next, or one
/// some have, then what differs from those.
fn differing(starts: &[Vec<char>], depth: usize, options: &mut Vec<String>) {
    if starts.iter().any(|s| s.len() == depth) {
        // A start ends here: the text has begun with it.
        return;
    }
    let prefix: String = starts[0][..depth].iter().collect();
    let mut next: Vec<char> = starts.iter().map(|s| s[depth]).collect();
    next.sort_unstable();
    next.dedup();
    let class: String = next.iter().map(|c| class_escape(*c)).collect();
    let space = if depth == 0 { "\\s" } else { "" };
    options.push(format!("{}[^{space}{class}]", escape(&prefix)));
    for c in next {
        let sharing: Vec<Vec<char>> = starts.iter().filter(|s| s[depth] == c).cloned().collect();
        differing(&sharing, depth + 1, options);
    }
}

/// An ASCII character inside a class: letters and digits as they are, the
/// rest as `\xHH`, which both syntaxes read the same way.
fn class_escape(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{:02X}", c as u32)
    }
}

/// A JSON string (a call id the model makes up).
const JSON_STRING: &str = r#""(?:[^"\\]|\\[\s\S])*""#;

/// The first thing a lazy start writes: the first word of the markers it
/// opens with (the section's start, the call's, a tagged name's prefix; a
/// tagged id before the name is optional: the call opens at the marker
/// after it), else a pattern on the call's fixed text (see
/// [`CallPattern`]).
fn opening(outline: &Outline, node: &Node) -> Opening {
    let (lead, names) = call_lead(outline, node);
    for n in &lead {
        match &n.kind {
            Kind::Marker(raw) => match first_word(raw) {
                Some(w) => return Opening::Word(w),
                None => continue,
            },
            Kind::Optional(inner) if matches!(inner.kind, Kind::Id(IdShape::Tagged { .. })) => {}
            _ => break,
        }
    }
    let names: Vec<String> = names.iter().map(|n| escape(n)).collect();
    let mut pattern = CallPattern {
        names: format!("(?:{})", names.join("|")),
        out: String::new(),
    };
    pattern.nodes(&lead, true);
    Opening::Pattern(pattern.out)
}

/// The nodes a lazy start writes first, down into its first call (a
/// section's repeated calls, a call's rule), and the names of the tools
/// its first call may be.
fn call_lead(outline: &Outline, node: &Node) -> (Vec<Node>, Vec<String>) {
    let mut out = Vec::new();
    let mut names = Vec::new();
    let mut queue: Vec<Node> = flat(node).into_iter().cloned().collect();
    queue.reverse();
    while let Some(n) = queue.pop() {
        if n.lenient {
            continue;
        }
        let inner: Vec<Node> = match &n.kind {
            Kind::Repeat { node, .. } => vec![(**node).clone()],
            Kind::Choice(options) if options.iter().all(|o| matches!(o.kind, Kind::Rule(_))) => {
                for o in options {
                    if let Kind::Rule(i) = o.kind {
                        names.extend(super::shape::tool_name(outline.rule(i)));
                    }
                }
                options.first().cloned().into_iter().collect()
            }
            Kind::Rule(i) => {
                if names.is_empty() {
                    names.extend(super::shape::tool_name(outline.rule(*i)));
                }
                flat(outline.rule(*i)).into_iter().cloned().collect()
            }
            Kind::Sequence(_) => flat(&n).into_iter().cloned().collect(),
            _ => {
                out.push(n);
                continue;
            }
        };
        queue.extend(inner.into_iter().rev());
    }
    (out, names)
}

/// A regex for the opening of a call with no marker word: its fixed text up
/// to its first word, which tells a call from other text (`{"` alone is any
/// JSON). That word is a JSON key (`{"name"`: the name's value follows, and
/// the grammar constrains it), else the name itself (a key
/// `{"get_weather"`, a bare `get_weather`), with the first word of the
/// marker that ends a tagged name (`get_weather(`). JSON whitespace and a
/// marker's whitespace are `\s*`. A word in an optional group (an id
/// member) does not end it: the group is optional in the pattern too, so a
/// call opens there with or without its id.
struct CallPattern {
    /// The tools' names as one group.
    names: String,
    out: String,
}

impl CallPattern {
    /// Appends `nodes` up to the first word (any word when `words_end`,
    /// else the name only); whether it ended.
    fn nodes(&mut self, nodes: &[Node], words_end: bool) -> bool {
        for (i, node) in nodes.iter().enumerate() {
            if node.lenient {
                continue;
            }
            match &node.kind {
                Kind::Literal(text) => {
                    for piece in text_pieces(text) {
                        let exact = match piece {
                            TextPiece::Space => {
                                self.push("\\s*");
                                continue;
                            }
                            TextPiece::Exact(t) => t,
                        };
                        self.push(&escape(exact));
                        if words_end && exact.chars().any(char::is_alphanumeric) {
                            return true;
                        }
                    }
                }
                Kind::ToolName { quoted, .. } => {
                    let q = if *quoted { "\"" } else { "" };
                    let re = format!("{q}{}{q}", self.names);
                    self.push(&re);
                    // The marker that ends a tagged name tells a call from
                    // the name in prose.
                    if let Some(Node {
                        kind: Kind::Marker(raw),
                        ..
                    }) = nodes.get(i + 1)
                    {
                        self.first_word(raw);
                    }
                    return true;
                }
                Kind::Id(IdShape::JsonString) => self.push(JSON_STRING),
                Kind::Sequence(_) => {
                    let items: Vec<Node> = flat(node).into_iter().cloned().collect();
                    if self.nodes(&items, words_end) {
                        return true;
                    }
                }
                Kind::Optional(group) => self.optional(group),
                Kind::Choice(options) => {
                    let Some(group) = options.iter().find(|o| !o.lenient) else {
                        continue;
                    };
                    let mut inner = CallPattern {
                        names: self.names.clone(),
                        out: String::new(),
                    };
                    let items: Vec<Node> = flat(group).into_iter().cloned().collect();
                    inner.nodes(&items, false);
                    match options.iter().any(|o| o.lenient) {
                        true => self.out.push_str(&format!("(?:{})?", inner.out)),
                        false => self.out.push_str(&inner.out),
                    }
                }
                Kind::Marker(raw) if self.first_word(raw) => return true,
                Kind::Marker(_) => {}
                _ => return true,
            }
        }
        false
    }

    /// Appends an optional group (up to the name, if it holds it) as an
    /// optional regex group: a call opens there with or without it.
    fn optional(&mut self, group: &Node) {
        let mut inner = CallPattern {
            names: self.names.clone(),
            out: String::new(),
        };
        let items: Vec<Node> = flat(group).into_iter().cloned().collect();
        inner.nodes(&items, false);
        self.out.push_str(&format!("(?:{})?", inner.out));
    }

    /// Appends a marker up to its first word, its whitespace flexible
    /// (nothing when it has none); whether it has one.
    fn first_word(&mut self, raw: &str) -> bool {
        let Some(word) = first_word(raw) else {
            return false;
        };
        if raw.starts_with(char::is_whitespace) {
            self.push("\\s*");
        }
        self.push(&escape(&word));
        true
    }

    /// Appends `re`; `\s*` once where whitespace meets whitespace.
    fn push(&mut self, re: &str) {
        if re == "\\s*" && self.out.ends_with("\\s*") {
            return;
        }
        self.out.push_str(re);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::outline::Rule;

    /// A marker-less call of two tools: a bare name ending at `suffix`.
    fn pattern(suffix: &str) -> String {
        let call = |name: &str| Rule {
            name: format!("call_{name}"),
            node: Node::seq([
                Node::new(Kind::ToolName {
                    name: name.into(),
                    quoted: false,
                }),
                Node::marker(suffix),
                Node::literal("{}"),
            ]),
        };
        let calls = Node::choice(vec![Node::new(Kind::Rule(0)), Node::new(Kind::Rule(1))]);
        let outline = Outline {
            root: calls.clone(),
            rules: vec![call("get_weather"), call("get.time")],
            prompt_reasoning: String::new(),
            warnings: Vec::new(),
        };
        match opening(&outline, &calls) {
            Opening::Pattern(p) => p,
            Opening::Word(w) => panic!("a word: {w}"),
        }
    }

    #[test]
    fn a_bare_name_opens_with_the_word_of_the_marker_ending_it() {
        // A name alone may be prose; the marker after it tells a call.
        assert_eq!(pattern("("), "(?:get_weather|get\\.time)\\(");
        // The marker's own whitespace is flexible, and only it.
        assert_eq!(
            pattern("<|args|>"),
            "(?:get_weather|get\\.time)<\\|args\\|>"
        );
        assert_eq!(
            pattern("\n<|args|>"),
            "(?:get_weather|get\\.time)\\s*<\\|args\\|>"
        );
        assert_eq!(pattern("\n"), "(?:get_weather|get\\.time)");
    }

    #[test]
    fn escape_is_literal_and_portable() {
        let text = "<｜tool▁calls▁begin｜>[x](y){1}|a.b*c+d?e^f$g\\h\n\x01";
        let escaped = escape(text);
        assert!(!escaped.contains("\\x{"), "{escaped}");
        assert_eq!(
            escaped,
            "<｜tool▁calls▁begin｜>\\[x\\]\\(y\\)\\{1\\}\\|a\\.b\\*c\\+d\\?e\\^f\\$g\\\\h\\n\\x01"
        );
        let re = regex::Regex::new(&format!("^{escaped}$")).unwrap();
        assert!(re.is_match(text));
    }

    #[test]
    fn an_opener_that_begins_the_block_start_needs_what_differs() {
        let guard = opener_guard(&Opening::Word("to=".into()), &["to=self<|message|>"]);
        let re = regex::Regex::new(&format!("^(to=){guard}")).unwrap();
        assert!(re.is_match("to=get_weather<|message|>"));
        assert!(!re.is_match("to=self<|message|>"));
        assert_eq!(
            opener_guard(&Opening::Word("<tool_call>".into()), &["<think>"]),
            ""
        );
    }

    #[test]
    fn not_starting_with_stops_at_non_ascii() {
        // `std::regex` reads bytes: no class may hold a multi-byte character.
        assert_eq!(not_starting_with("<é>"), "[^\\s\\x3C]");
    }

    #[test]
    fn not_starting_with_any_rejects_each_start_only() {
        let pattern = not_starting_with_any(&["ab>", "ac", "ab"]);
        assert_eq!(pattern, "[^\\sa]|a[^bc]");
        let pattern = not_starting_with_any(&["final>", "analysis>"]);
        let re = regex::Regex::new(&format!("^(?:{pattern})")).unwrap();
        for (text, differs) in [
            ("final>", false),
            ("analysis>", false),
            ("commentary", true),
            ("fin", false),
            ("analyse", true),
        ] {
            assert_eq!(re.is_match(text), differs, "{text}");
        }
    }

    #[test]
    fn not_starting_with_rejects_only_the_start() {
        let re = regex::Regex::new(&format!("^(?:{})", not_starting_with("<think>"))).unwrap();
        assert!(!re.is_match("<think>"));
        assert!(re.is_match("<thinx"));
        assert!(re.is_match("Hello"));
        assert!(
            !re.is_match(" Hello"),
            "whitespace is skipped before, not matched here"
        );
    }
}
