//! Mutated outputs and the "nothing lost" check (issue 28 item 7): the
//! round-trip outputs of every template (see `roundtrip.rs`) that parse
//! back, changed the way a corrupted or creative model changes them, and
//! parsed again. Every byte of an output must end up in the content, the
//! reasoning or a call (name, arguments, id), or be scaffolding the format
//! defines, or be named in a diagnostic.
//!
//! The check counts words (runs of letters, digits and `_`): the words the
//! parse of the rendered output drops are the format's scaffolding (its
//! markers, header labels the template writes); every other word of a
//! mutated output must be in its message. A mutation that corrupts a
//! marker makes a word the format does not have (`minimaQx`), which must
//! be in the message then, and so must every word the marker stood next
//! to. A word lost is *silent* when the parse reports no diagnostic.
//!
//! The mutations, each applied at one place of the output at a time:
//!
//! - `marker-letter`: a letter inserted into a scaffolding word
//!   (`]<]minimax[>[` → `]<]minimaQx[>[`, `<|sep|>` → `<|seQp|>`);
//! - `marker-cut`: the character after a scaffolding word deleted
//!   (`]<]minimax>[`, `<|sep|`);
//! - `label`: a header's label (`<|channel|>LABEL<|message|>`,
//!   `<|open|>LABEL<|sep|>`) replaced by a word the template does not have;
//! - `attribute-value`: an attribute's value (`index="1"`, `name="f"`)
//!   replaced by a word the template does not have;
//! - `attribute-extra`: an attribute the format does not have
//!   (` zqkey="zqval"`) written after one it has.
//!
//! Included by `tests/parser/losses.rs` (asserts no silent loss) and by
//! anything that wants the tally.

#![allow(dead_code)] // Each includer uses the part it needs.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use chat_autoparser::{Analysis, AssistantMessage, ChatTemplate, OutputParser, TemplateConfig};

use super::roundtrip::{cases, compare, render_case, Case};

/// The word a mutation writes where the template has none.
pub const UNKNOWN: &str = "zqunknown";

/// One mutated output.
pub struct Mutation {
    pub class: &'static str,
    pub output: String,
}

/// Words of `text`: runs of alphanumeric characters and `_`, counted.
pub fn words(text: &str) -> HashMap<&str, usize> {
    let mut out = HashMap::new();
    for w in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        *out.entry(w).or_insert(0) += 1;
    }
    out
}

/// The words of a message: content, reasoning, and each call's name,
/// arguments and id. Arguments count as written (`\nline`, as a JSON
/// output writes it), with their escapes as spaces, or decoded, whichever
/// holds more of a word (so a word is not counted twice).
pub fn message_words(m: &AssistantMessage) -> HashMap<String, usize> {
    let mut all = format!("{} {}", m.content_text(), m.reasoning_content);
    for c in &m.tool_calls {
        all.push(' ');
        all.push_str(&c.function.name);
        all.push(' ');
        all.push_str(c.id.as_deref().unwrap_or_default());
    }
    let mut out = owned(words(&all));
    for c in &m.tool_calls {
        let raw = &c.function.arguments;
        let spaced = unescaped(raw);
        let mut decoded = String::new();
        if let Ok(v) = serde_json::from_str::<Value>(raw) {
            json_text(&v, &mut decoded);
        }
        let mut most: HashMap<String, usize> = HashMap::new();
        for form in [raw.as_str(), spaced.as_str(), decoded.as_str()] {
            for (w, n) in words(form) {
                let slot = most.entry(w.to_string()).or_insert(0);
                *slot = (*slot).max(n);
            }
        }
        for (w, n) in most {
            *out.entry(w).or_insert(0) += n;
        }
    }
    out
}

fn owned(words: HashMap<&str, usize>) -> HashMap<String, usize> {
    words.into_iter().map(|(w, n)| (w.to_string(), n)).collect()
}

/// `text` with each backslash escape (`\n`, `\"`) a space.
fn unescaped(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
                out.push(' ');
            }
            c => out.push(c),
        }
    }
    out
}

/// The keys, strings and scalars of `v`, separated by spaces.
fn json_text(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push(' ');
            json_text(v, out);
        }),
        Value::Array(items) => items.iter().for_each(|v| json_text(v, out)),
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
    out.push(' ');
}

/// `a` less `b`, as multisets (what `a` has more of).
fn less<'a, K: std::borrow::Borrow<str> + Eq + std::hash::Hash>(
    a: &HashMap<&'a str, usize>,
    b: &HashMap<K, usize>,
) -> HashMap<&'a str, usize> {
    a.iter()
        .filter_map(|(w, n)| {
            let left = n.saturating_sub(b.get(*w).copied().unwrap_or(0));
            (left > 0).then_some((*w, left))
        })
        .collect()
}

/// The words of `output` its parse `m` drops: the format's scaffolding.
pub fn scaffolding<'a>(output: &'a str, m: &AssistantMessage) -> HashMap<&'a str, usize> {
    less(&words(output), &message_words(m))
}

/// The words of `mutated` that its parse `m` lost, beyond `scaffolding`
/// (sorted, for stable reports).
pub fn lost(
    mutated: &str,
    m: &AssistantMessage,
    scaffolding: &HashMap<&str, usize>,
) -> Vec<String> {
    let dropped = less(&words(mutated), &message_words(m));
    let mut out: Vec<String> = less(&dropped, scaffolding)
        .into_iter()
        .map(|(w, n)| format!("{w}×{n}"))
        .collect();
    out.sort();
    out
}

/// Byte ranges of the occurrences of the words of `scaffolding` in `output`
/// (whole words only).
fn word_spans(output: &str, scaffolding: &HashMap<&str, usize>) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in output.char_indices().chain([(output.len(), ' ')]) {
        let inside = c.is_alphanumeric() || c == '_';
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if scaffolding.contains_key(&output[s..i]) {
                    spans.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    spans
}

/// Every mutation of `output` (see the module's doc).
pub fn mutations(
    analysis: &Analysis,
    output: &str,
    scaffolding: &HashMap<&str, usize>,
) -> Vec<Mutation> {
    let mut out = Vec::new();
    for (start, end) in word_spans(output, scaffolding) {
        // Before the word's last character: `minimax` → `minimaQx`.
        let last = output[start..end]
            .char_indices()
            .last()
            .map_or(0, |(i, _)| i);
        if last > 0 {
            let at = start + last;
            out.push(Mutation {
                class: "marker-letter",
                output: format!("{}Q{}", &output[..at], &output[at..]),
            });
        }
        if let Some(next) = output[end..].chars().next().filter(|c| !c.is_whitespace()) {
            out.push(Mutation {
                class: "marker-cut",
                output: format!("{}{}", &output[..end], &output[end + next.len_utf8()..]),
            });
        }
    }
    out.extend(labels(analysis, output));
    out.extend(attributes(output));
    out
}

/// Each header's label replaced by [`UNKNOWN`].
fn labels(analysis: &Analysis, output: &str) -> Vec<Mutation> {
    let mut out = Vec::new();
    for h in &analysis.turn.headers {
        let (open, close) = (h.open.trim(), h.close.trim());
        if open.is_empty() || close.is_empty() {
            continue;
        }
        for (at, _) in output.match_indices(open) {
            let from = at + open.len();
            let Some(len) = output[from..].find(close) else {
                continue;
            };
            let label = &output[from..from + len];
            let word_len = label
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(label.len());
            if word_len == 0 || label.contains('\n') || label.len() > 64 {
                continue;
            }
            out.push(Mutation {
                class: "label",
                output: format!("{}{UNKNOWN}{}", &output[..from], &output[from + word_len..]),
            });
        }
    }
    out
}

/// Each `key="value"` attribute's value replaced, and an attribute added
/// after it.
fn attributes(output: &str) -> Vec<Mutation> {
    let mut out = Vec::new();
    for (at, _) in output.match_indices("=\"") {
        let key_start = output[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let from = at + 2;
        let Some(len) = output[from..].find('"') else {
            continue;
        };
        let value = &output[from..from + len];
        if key_start == at || value.contains(['\n', '<', '>']) {
            continue;
        }
        let end = from + len + 1;
        out.push(Mutation {
            class: "attribute-value",
            output: format!("{}{UNKNOWN}{}", &output[..from], &output[from + len..]),
        });
        out.push(Mutation {
            class: "attribute-extra",
            output: format!("{} zqkey=\"{UNKNOWN}\"{}", &output[..end], &output[end..]),
        });
    }
    out
}

/// One mutation's outcome: the words lost, and whether any diagnostic was
/// reported.
pub struct Loss {
    pub template: String,
    pub case: &'static str,
    pub class: &'static str,
    pub output: String,
    pub lost: Vec<String>,
    pub reported: bool,
}

/// Mutations tried and losses, per class.
#[derive(Default)]
pub struct Tally {
    pub cases: BTreeMap<&'static str, usize>,
    pub losses: Vec<Loss>,
}

impl Tally {
    /// The losses no diagnostic reported.
    pub fn silent(&self) -> impl Iterator<Item = &Loss> {
        self.losses.iter().filter(|l| !l.reported)
    }

    pub fn total(&self) -> usize {
        self.cases.values().sum()
    }
}

/// A call whose arguments nest an object and lists, every value written
/// (no `null`: a template may drop it), so that element and notation
/// formats write nested markers to mutate too.
fn nested(analysis: &Analysis) -> Option<Case> {
    analysis.tools.as_ref()?;
    let args = serde_json::json!({
        "text": "Note", "meta": {"level": 2, "labels": ["red", "blue"]}, "tags": ["x", "y"]
    });
    Some(Case {
        name: "nested",
        content: "",
        reasoning: "",
        calls: vec![("save_note", args.to_string())],
    })
}

/// Mutates the round-trip outputs of the templates in `files` that parse
/// back, and checks every mutation.
pub fn tally(files: &[std::path::PathBuf]) -> Tally {
    let mut tally = Tally::default();
    for path in files {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let source = std::fs::read_to_string(path).expect("template is readable");
        let Ok(tmpl) = ChatTemplate::new(&source, &TemplateConfig::default()) else {
            continue;
        };
        let Ok(analysis) = tmpl.analyze() else {
            continue;
        };
        let mut all = cases(&analysis);
        all.extend(nested(&analysis));
        for case in all {
            let Ok(r) = render_case(&tmpl, &analysis, &case) else {
                continue;
            };
            let Ok(parser) = analysis.parser(&r.config) else {
                continue;
            };
            let parsed = parser.parse(&r.output);
            if !r.prefix_renderable || compare(&parsed, &case).is_err() {
                continue;
            }
            let scaffolding = scaffolding(&r.output, &parsed);
            for m in mutations(&analysis, &r.output, &scaffolding) {
                *tally.cases.entry(m.class).or_default() += 1;
                if let Some(loss) = check(&parser, &scaffolding, &m) {
                    tally.losses.push(Loss {
                        template: stem.to_string(),
                        case: case.name,
                        ..loss
                    });
                }
            }
        }
    }
    tally
}

/// The loss of one mutation, if any (template and case left blank).
fn check(parser: &OutputParser, scaffolding: &HashMap<&str, usize>, m: &Mutation) -> Option<Loss> {
    let report = parser.parse_report(&m.output, false);
    let lost = lost(&m.output, &report.message, scaffolding);
    (!lost.is_empty()).then(|| Loss {
        template: String::new(),
        case: "",
        class: m.class,
        output: m.output.clone(),
        lost,
        reported: !report.diagnostics.is_empty(),
    })
}

/// Prints mutations and losses per class, then each loss.
pub fn print(label: &str, tally: &Tally) {
    println!(
        "\n{label}: {} mutated outputs, {} lose words ({} silently)",
        tally.total(),
        tally.losses.len(),
        tally.silent().count()
    );
    for (class, n) in &tally.cases {
        let lost = tally.losses.iter().filter(|l| l.class == *class);
        let silent = lost.clone().filter(|l| !l.reported).count();
        println!("  {class:<16} {n:>5} {:>4} {silent:>4}", lost.count());
    }
    for l in &tally.losses {
        println!(
            "  [{}] {} {} {}lost {:?}\n      output: {:?}",
            l.template,
            l.case,
            l.class,
            if l.reported { "" } else { "silently " },
            l.lost,
            l.output
        );
    }
}
