//! Source rewrites that adapt jinja2 templates to minijinja before compiling.
//!
//! Two statements have no minijinja equivalent with the behaviour we need:
//!
//! - transformers' `{% generation %}...{% endgeneration %}` only marks assistant
//!   spans for a token mask and never changes the text; it becomes an
//!   always-true `{% if true %}...{% endif %}`;
//! - `{% set ns.attr = value %}` (and the block form `{% set ns.attr %}...{% endset %}`)
//!   become calls of our bounded namespace's setter (see [`super::namespace`]);
//! - `{% raw %}...{% endraw %}` becomes a string literal inside an always-true
//!   `if`, with jinja2's whitespace rules applied to the text here: jinja2 keeps
//!   the newline after `{% raw %}` (no trim_blocks there), minijinja drops it.
//!
//! - every `{% set x = value %}` keeps its value through the bound function
//!   (`set x = __chat_autoparser_bound((value))`), and every macro body opens
//!   by passing its arguments to it and ends by releasing them, so values
//!   grown inside minijinja's operators are measured where they are kept
//!   (see [`super::limits`]);
//! - every `{% for x in items %}` walks `__chat_autoparser_loop((items))`,
//!   which yields the same items and checks the render's CPU budget before
//!   each (see [`super::guarded`]).
//!
//! Invariants: only block tags are rewritten, found by a scanner that skips
//! string literals, `{{ ... }}`, `{# ... #}` and `{% raw %}` regions, so text
//! that merely looks like a tag is never touched; whitespace-control markers
//! (`-`, `+`) and line breaks are preserved, so trim/lstrip behaviour and line
//! numbers are unchanged; [`Rewritten::original_offset`] maps any offset of the
//! rewritten text back to the source, so error columns stay exact.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::guarded::LOOP_FUNCTION;
use super::limits::{BOUND_FUNCTION, RELEASE_FUNCTION};
use super::namespace::SET_METHOD;

/// Variable that receives the (empty) result of a rewritten namespace assignment.
const SET_SINK: &str = "__chat_autoparser_ns_set";
/// Variable that captures the body of a rewritten namespace block assignment.
const BLOCK_SINK: &str = "__chat_autoparser_ns_block";

/// Rewritten template text and the way back to source offsets.
#[derive(Debug, Clone)]
pub(crate) struct Rewritten {
    pub text: String,
    /// `(offset in text, offset in source)` at the start of each piece.
    pieces: Vec<(usize, usize, bool)>,
    /// The rewrite this one was applied to, whose text is this one's source.
    earlier: Option<Box<Rewritten>>,
}

/// One edit of a text: `text` in place of `range`. Edits at one offset go
/// closing text first (the inner expression's first), then replacements, then
/// opening text (the outer expression's first).
#[derive(Debug, Clone)]
pub(crate) struct Edit {
    range: Range<usize>,
    text: String,
    order: (u8, usize),
}

impl Edit {
    /// Inserts `text` that opens a node at `depth` of the syntax tree.
    pub(crate) fn open(at: usize, text: &str, depth: usize) -> Edit {
        Edit {
            range: at..at,
            text: text.to_owned(),
            order: (2, depth),
        }
    }

    /// Inserts `text` that closes a node at `depth` of the syntax tree.
    pub(crate) fn close(at: usize, text: &str, depth: usize) -> Edit {
        Edit {
            range: at..at,
            text: text.to_owned(),
            order: (0, usize::MAX - depth),
        }
    }

    /// Replaces `range` by `text`.
    pub(crate) fn replace(range: Range<usize>, text: &str) -> Edit {
        Edit {
            range,
            text: text.to_owned(),
            order: (1, 0),
        }
    }
}

impl Rewritten {
    /// The source offset of `offset` in the rewritten text. Offsets inside
    /// inserted text map to the position of the statement they replace.
    pub(crate) fn original_offset(&self, offset: usize) -> usize {
        let own = self.own_original_offset(offset);
        match &self.earlier {
            Some(earlier) => earlier.original_offset(own),
            None => own,
        }
    }

    /// This text with `edits` applied (in any order; overlapping ones are
    /// dropped), mapping back through this rewrite.
    pub(crate) fn edited(self, mut edits: Vec<Edit>) -> Rewritten {
        edits.sort_by_key(|e| (e.range.start, e.order));
        let mut builder = Builder {
            source: &self.text,
            text: String::new(),
            pieces: Vec::new(),
            copied_to: 0,
        };
        for edit in &edits {
            if edit.range.start >= builder.copied_to {
                builder.replace(edit.range.clone(), &edit.text);
            }
        }
        let mut out = builder.finish();
        out.earlier = Some(Box::new(self));
        out
    }

    fn own_original_offset(&self, offset: usize) -> usize {
        let i = self
            .pieces
            .partition_point(|&(new, _, _)| new <= offset)
            .saturating_sub(1);
        match self.pieces.get(i) {
            Some(&(new, old, true)) => old + (offset - new),
            Some(&(_, old, false)) => old,
            None => offset,
        }
    }
}

/// Applies every rewrite of this module to `source` (the `~` rewrite of
/// [`super::concat`] is applied to its result).
pub(crate) fn rewrite(source: &str) -> Rewritten {
    rewrite_with(source, true)
}

/// The rewrites minijinja needs to parse jinja2, without the namespace one:
/// its syntax errors read as the template's own (no `)` we added), so a
/// template that fails to compile is reported from this text.
pub(crate) fn rewrite_for_diagnostics(source: &str) -> Rewritten {
    rewrite_with(source, false)
}

fn rewrite_with(source: &str, namespaces: bool) -> Rewritten {
    let mut builder = Builder {
        source,
        text: String::new(),
        pieces: Vec::new(),
        copied_to: 0,
    };
    let mut open_blocks: Vec<Option<(String, String)>> = Vec::new();
    let mut open_raw: Option<Tag> = None;
    let mut open_macros: Vec<Vec<String>> = Vec::new();
    for tag in tags(source) {
        let body = &source[tag.body.clone()];
        let keyword = body
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        match keyword {
            "raw" => open_raw = Some(tag),
            "endraw" => {
                if let Some(raw) = open_raw.take() {
                    raw_block(&mut builder, &raw, &tag);
                }
            }
            "generation" | "endgeneration" => {
                let replacement = if keyword == "generation" {
                    "if true"
                } else {
                    "endif"
                };
                builder.replace(tag.body.clone(), replacement);
            }
            "set" if namespaces => open_blocks.extend(namespace_set(&mut builder, &tag, body)),
            "for" if namespaces => loop_iterable(&mut builder, &tag, body),
            "macro" if namespaces => open_macros.push(macro_entry(&mut builder, &tag, body)),
            "endmacro" if namespaces => {
                if let Some(params) = open_macros.pop() {
                    macro_exit(&mut builder, &tag, &params);
                }
            }
            "endset" if namespaces => {
                if let Some(Some((target, attr))) = open_blocks.pop() {
                    close_namespace_block(&mut builder, &tag, &target, &attr);
                }
            }
            _ => {}
        }
    }
    builder.finish()
}

/// Rewrites a `set` whose target is `name.attr`. Returns, for a block `set`,
/// what its `endset` must assign (`None` for an ordinary block set).
fn namespace_set(
    builder: &mut Builder<'_>,
    tag: &Tag,
    body: &str,
) -> Option<Option<(String, String)>> {
    static TARGET: OnceLock<Regex> = OnceLock::new();
    let target = TARGET.get_or_init(|| {
        Regex::new(r"^set\s+([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*")
            .expect("static regex")
    });
    let Some(caps) = target.captures(body) else {
        return match assigned_value(body) {
            Some(value) => {
                bound_value(builder, tag, body.len() - value);
                None
            }
            None => Some(None),
        };
    };
    let (name, attr) = (caps[1].to_owned(), caps[2].to_owned());
    let rest = &body[caps[0].len()..];
    let start = tag.body.start;
    if let Some(expr) = rest
        .strip_prefix('=')
        .filter(|e| !e.starts_with('='))
        .map(str::trim_start)
    {
        // `set ns.attr = expr`: keep `expr` verbatim so its offsets map exactly.
        let expr_start = tag.body.end - expr.len();
        builder.replace(
            start..expr_start,
            &format!("set {SET_SINK} = {name}.{SET_METHOD}('{attr}', ("),
        );
        builder.insert(tag.body.end, "))");
        return None;
    }
    if !(rest.is_empty() || rest.starts_with('|')) {
        // Not valid jinja2; leave it for the compiler to report.
        return None;
    }
    // Block form, possibly with filters: `set ns.attr | upper`.
    builder.replace(start..start + caps[0].len(), &format!("set {BLOCK_SINK} "));
    Some(Some((name, attr)))
}

/// Where the value of a `set` tag (not targeting a namespace) starts, after
/// its `=`; `None` for a block `set`.
fn assigned_value(body: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in body.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '=' if depth == 0 => {
                return Some(i + 1 + (body[i + 1..].len() - body[i + 1..].trim_start().len()))
            }
            _ => {}
        }
    }
    None
}

/// `set x = value` → `set x = BOUND((value))`, `value` kept verbatim;
/// `value_len` is its length at the end of the tag's body.
fn bound_value(builder: &mut Builder<'_>, tag: &Tag, value_len: usize) {
    builder.insert(tag.body.end - value_len, &format!("{BOUND_FUNCTION}(("));
    builder.insert(tag.body.end, "))");
}

/// `for TARGET in ITEMS [if COND] [recursive]` → `for TARGET in LOOP((ITEMS)) ...`,
/// `ITEMS` kept verbatim. jinja2 reads the iterable without inline `if`, so
/// the first `if` or `recursive` outside brackets and strings ends it.
fn loop_iterable(builder: &mut Builder<'_>, tag: &Tag, body: &str) {
    let words = top_level_words(body);
    let Some(&(_, items_start)) = words.iter().skip(1).find(|(w, _)| *w == "in") else {
        return;
    };
    let items_start = items_start + "in".len();
    let items_end = words
        .iter()
        .find(|&&(w, at)| at > items_start && (w == "if" || w == "recursive"))
        .map_or(body.len(), |&(_, at)| at);
    let items = body[items_start..items_end].trim();
    if items.is_empty() {
        return; // not valid jinja2; the compiler reports it
    }
    let start = tag.body.start
        + items_start
        + (body[items_start..].len() - body[items_start..].trim_start().len());
    builder.insert(start, &format!("{LOOP_FUNCTION}(("));
    builder.insert(start + items.len(), "))");
}

/// The words (identifier-like runs) of a statement outside brackets and
/// string literals, with their offsets.
fn top_level_words(body: &str) -> Vec<(&str, usize)> {
    let mut words: Vec<(&str, usize)> = Vec::new();
    let mut word_end = usize::MAX;
    for (i, c, depth) in code_chars(body) {
        if depth != 0 || !is_word_char(c) {
            continue;
        }
        let end = i + c.len_utf8();
        match words.last_mut() {
            // The next character of the word being read (not one after a string).
            Some((word, at)) if i == word_end => *word = &body[*at..end],
            _ => words.push((&body[i..end], i)),
        }
        word_end = end;
    }
    words
}

/// The characters of a statement outside string literals, each with its
/// offset and the depth of brackets around it (a bracket itself counts at
/// the depth outside it).
fn code_chars(body: &str) -> impl Iterator<Item = (usize, char, i32)> + '_ {
    let mut chars = body.char_indices();
    let (mut depth, mut quote) = (0i32, None);
    std::iter::from_fn(move || loop {
        let (i, c) = chars.next()?;
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, _) => {
                let outside = depth;
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                return Some((i, c, outside.min(depth)));
            }
        }
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `{% macro f(a, b=1) X%}` → `{% macro f(a, b=1) %}{% if BOUND(a, b) %}{% endif X%}`:
/// the inserted tags take the macro tag's closing whitespace control, so the
/// text after renders as before. Returns the parameter names.
fn macro_entry(builder: &mut Builder<'_>, tag: &Tag, body: &str) -> Vec<String> {
    let params = macro_params(body);
    if !params.is_empty() {
        let close = &builder.source[tag.close_marker.clone()];
        let hook = format!(
            "%}}{{% if {BOUND_FUNCTION}({}) %}}{{% endif {close}",
            params.join(", ")
        );
        builder.replace(tag.close_marker.clone(), &hook);
    }
    params
}

/// `{%X endmacro %}` → `{%X if RELEASE(a, b) %}{% endif %}{% endmacro %}`:
/// the inserted tags take the opening whitespace control (and lstrip).
fn macro_exit(builder: &mut Builder<'_>, tag: &Tag, params: &[String]) {
    if params.is_empty() {
        return;
    }
    let open = &builder.source[tag.start..tag.body.start];
    let hook = format!(
        "{} if {RELEASE_FUNCTION}({}) %}}{{% endif %}}{{% ",
        open.trim_end(),
        params.join(", ")
    );
    builder.replace(tag.start..tag.body.start, &hook);
}

/// The parameter names of `macro name(a, b=default, ...)`.
fn macro_params(body: &str) -> Vec<String> {
    let Some(open) = body.find('(') else {
        return Vec::new();
    };
    let Some(close) = body.rfind(')').filter(|&c| c > open) else {
        return Vec::new();
    };
    let list = &body[open + 1..close];
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c, depth) in code_chars(list) {
        if c == ',' && depth == 0 {
            pieces.push(&list[start..i]);
            start = i + 1;
        }
    }
    pieces.push(&list[start..]);
    pieces
        .into_iter()
        .map(|piece| {
            piece
                .trim_start()
                .chars()
                .take_while(|&c| is_word_char(c))
                .collect()
        })
        .filter(|name: &String| !name.is_empty())
        .collect()
}

/// After `{% endset %}` of a namespace block, assigns the captured text.
fn close_namespace_block(builder: &mut Builder<'_>, tag: &Tag, name: &str, attr: &str) {
    // The endset's closing whitespace control moves to the new tag after it.
    let close = &builder.source[tag.close_marker.clone()];
    let assign =
        format!("{{% set {SET_SINK} = {name}.{SET_METHOD}('{attr}', {BLOCK_SINK}) {close}");
    builder.replace(tag.close_marker.clone(), "%}");
    builder.insert(tag.end, &assign);
}

/// `{%a raw b%}TEXT{%c endraw d%}` → `{%a if true %}{{ 'TEXT' }}{% endif d%}`,
/// with TEXT trimmed as jinja2's lexer trims it.
fn raw_block(builder: &mut Builder<'_>, raw: &Tag, endraw: &Tag) {
    let source = builder.source;
    let mut text = &source[raw.end..endraw.start];
    if source[raw.close_marker.clone()].starts_with('-') {
        text = text.trim_start_matches(super::pymethods::is_py_space);
    }
    match source.as_bytes().get(endraw.start + 2) {
        Some(b'-') => text = text.trim_end_matches(super::pymethods::is_py_space),
        Some(b'+') => {}
        // lstrip_blocks: spaces and tabs before the tag on its own line.
        _ => {
            if let Some((head, last_line)) = text.rsplit_once('\n') {
                if last_line.chars().all(|c| c == ' ' || c == '\t') {
                    text = &text[..head.len() + 1];
                }
            }
        }
    }
    let literal = text.replace('\\', "\\\\").replace('\'', "\\'");
    builder.replace(raw.body.clone(), "if true");
    builder.replace(raw.close_marker.clone(), "%}");
    builder.replace(
        raw.end..endraw.body.end,
        &format!("{{{{ '{literal}' }}}}{{% endif"),
    );
}

/// Accumulates the rewritten text piece by piece, in source order.
struct Builder<'a> {
    source: &'a str,
    text: String,
    pieces: Vec<(usize, usize, bool)>,
    copied_to: usize,
}

impl Builder<'_> {
    fn copy_to(&mut self, end: usize) {
        if end > self.copied_to {
            self.pieces.push((self.text.len(), self.copied_to, true));
            self.text.push_str(&self.source[self.copied_to..end]);
            self.copied_to = end;
        }
    }

    fn replace(&mut self, range: Range<usize>, with: &str) {
        self.copy_to(range.start);
        self.pieces.push((self.text.len(), range.start, false));
        self.text.push_str(with);
        self.copied_to = range.end;
    }

    fn insert(&mut self, at: usize, text: &str) {
        self.replace(at..at, text);
    }

    fn finish(mut self) -> Rewritten {
        self.copy_to(self.source.len());
        Rewritten {
            text: self.text,
            pieces: self.pieces,
            earlier: None,
        }
    }
}

// ---------------------------------------------------------------------------
// Scanning

/// One `{% ... %}` tag.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tag {
    /// Offset of `{%`.
    start: usize,
    /// Offset just past `%}`.
    end: usize,
    /// The statement between the delimiters, without markers and outer spaces.
    body: Range<usize>,
    /// The closing marker with its whitespace control: `%}`, `-%}` or `+%}`.
    close_marker: Range<usize>,
}

/// Every block tag of `source`, skipping comments, expressions, strings and raw blocks.
fn tags(source: &str) -> Vec<Tag> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some((open, kind)) = find_opening(bytes, i) {
        let Some(close) = (match kind {
            b'#' => find(bytes, open + 2, b"#}").map(|c| c + 2),
            _ => skip_code(bytes, open + 2, if kind == b'{' { b'}' } else { b'%' }),
        }) else {
            break;
        };
        i = close;
        if kind != b'%' {
            continue;
        }
        let tag = block_tag(source, open, close);
        if &source[tag.body.clone()] == "raw" {
            // Raw text ends at the first endraw tag, whatever it contains.
            let Some(end) = end_of_raw(source, close) else {
                break;
            };
            out.push(tag);
            out.push(block_tag(source, end.start, end.end));
            i = end.end;
        } else {
            out.push(tag);
        }
    }
    out
}

/// The `{% endraw %}` tag that closes a raw block opened before `from`.
fn end_of_raw(source: &str, from: usize) -> Option<Range<usize>> {
    static ENDRAW: OnceLock<Regex> = OnceLock::new();
    let endraw =
        ENDRAW.get_or_init(|| Regex::new(r"\{%[-+]?\s*endraw\s*[-+]?%\}").expect("static regex"));
    endraw.find_at(source, from).map(|m| m.range())
}

/// The next `{{`, `{%` or `{#` at or after `from`, with its second byte.
fn find_opening(bytes: &[u8], from: usize) -> Option<(usize, u8)> {
    (from..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'{' && matches!(bytes[i + 1], b'{' | b'%' | b'#'))
        .map(|i| (i, bytes[i + 1]))
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Skips template code up to `X}` (X = `%` or `}`) outside strings and
/// brackets; returns the offset just past it.
fn skip_code(bytes: &[u8], mut i: usize, closer: u8) -> Option<usize> {
    let mut depth = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth > 0 => depth -= 1,
            c if c == closer && depth == 0 && bytes.get(i + 1) == Some(&b'}') => {
                return Some(i + 2)
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn block_tag(source: &str, open: usize, end: usize) -> Tag {
    let bytes = source.as_bytes();
    let mut start = open + 2;
    if matches!(bytes.get(start), Some(b'-' | b'+')) {
        start += 1;
    }
    let mut close = end - 2;
    if close > start && matches!(bytes[close - 1], b'-' | b'+') {
        close -= 1;
    }
    let inner = &source[start..close];
    let lead = inner.len() - inner.trim_start().len();
    let trail = inner.len() - inner.trim_end().len();
    let body = (start + lead)..(close - trail).max(start + lead);
    Tag {
        start: open,
        end,
        body,
        close_marker: close..end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(source: &str) -> String {
        rewrite(source).text
    }

    #[test]
    fn generation_tags_become_if_true() {
        assert_eq!(
            text("a{%- generation %}b{% endgeneration -%}c"),
            "a{%- if true %}b{% endif -%}c"
        );
        assert_eq!(
            text("{{ add_generation_prompt }}"),
            "{{ add_generation_prompt }}"
        );
    }

    #[test]
    fn namespace_assignments_call_the_setter() {
        assert_eq!(
            text("{%- set ns.x = a if b else c -%}"),
            "{%- set __chat_autoparser_ns_set = ns.__setattr__('x', (a if b else c)) -%}"
        );
        assert_eq!(text("{% set ns.y == 1 %}"), "{% set ns.y == 1 %}");
    }

    #[test]
    fn kept_values_pass_the_bound_function() {
        assert_eq!(
            text("{%- set x = a ~ '=' -%}{% set a, b = 1, 2 %}{% set c %}x{% endset %}"),
            "{%- set x = __chat_autoparser_bound((a ~ '=')) -%}{% set a, b = __chat_autoparser_bound((1, 2)) %}{% set c %}x{% endset %}"
        );
        assert_eq!(
            text("{% macro f(s, t=', (', u=[1, 2]) -%}\n  {{ s }}\n  {%- endmacro %}{% macro g() %}{% endmacro %}"),
            "{% macro f(s, t=', (', u=[1, 2]) %}{% if __chat_autoparser_bound(s, t, u) %}{% endif -%}\n  {{ s }}\n  \
             {%- if __chat_autoparser_release(s, t, u) %}{% endif %}{% endmacro %}{% macro g() %}{% endmacro %}"
        );
    }

    #[test]
    fn loops_walk_their_items_through_the_loop_function() {
        assert_eq!(
            text("{%- for m in messages -%}{% for k, v in d.items() if v != 'in' %}{% endfor %}{% endfor %}"),
            "{%- for m in __chat_autoparser_loop((messages)) -%}\
             {% for k, v in __chat_autoparser_loop((d.items())) if v != 'in' %}{% endfor %}{% endfor %}"
        );
        assert_eq!(
            text("{% for x in (a if b else c)|list recursive %}{% for index in ['if', \"in\"] %}"),
            "{% for x in __chat_autoparser_loop(((a if b else c)|list)) recursive %}\
             {% for index in __chat_autoparser_loop((['if', \"in\"])) %}"
        );
        // Not jinja2: left for the compiler to report.
        assert_eq!(text("{% for x in %}"), "{% for x in %}");
    }

    #[test]
    fn namespace_block_assignments_capture_then_call_the_setter() {
        assert_eq!(
            text("{% set a %}x{% endset %}{% set ns.t | trim %} y {% set b %}z{% endset %}{% endset -%}\n"),
            "{% set a %}x{% endset %}{% set __chat_autoparser_ns_block | trim %} y {% set b %}z{% endset %}\
             {% endset %}{% set __chat_autoparser_ns_set = ns.__setattr__('t', __chat_autoparser_ns_block) -%}\n"
        );
    }

    #[test]
    fn text_that_only_looks_like_a_tag_is_kept() {
        let source = "{{ '{% set ns.x = 1 %}' }}{# {% generation %} #}{% raw %}{% set ns.x = 1 %}{% endraw %}\
                      {% if '%}' %}{% set ns.q = {'a': {'b': '%}'}} %}{% endif %}";
        let out = text(source);
        assert!(out.starts_with("{{ '{% set ns.x = 1 %}' }}{# {% generation %} #}{% if true %}{{ '{% set ns.x = 1 %}' }}{% endif %}"));
        assert!(out.ends_with("ns.__setattr__('q', ({'a': {'b': '%}'}})) %}{% endif %}"));
    }

    #[test]
    fn raw_blocks_become_literals_trimmed_like_jinja2() {
        assert_eq!(
            text("  {% raw %}\n  {{ x }}\n  {% endraw %}\n"),
            "  {% if true %}{{ '\n  {{ x }}\n' }}{% endif %}\n"
        );
        assert_eq!(
            text("{%- raw -%}\n 'a'\\ \n{%- endraw -%}"),
            "{%- if true %}{{ '\\'a\\'\\\\' }}{% endif -%}"
        );
        assert_eq!(
            text("{% raw %}x\n  {%+ endraw +%}"),
            "{% if true %}{{ 'x\n  ' }}{% endif +%}"
        );
    }

    #[test]
    fn offsets_map_back_to_the_source() {
        let source = "{% set ns.x = 1 + %}";
        let out = rewrite(source);
        let plus = out.text.find('+').unwrap();
        assert_eq!(out.original_offset(plus), source.find('+').unwrap());
        assert_eq!(out.original_offset(0), 0);
        assert_eq!(out.original_offset(out.text.len()), source.len());
    }
}
