//! Bounds of template compilation and rendering: hostile or broken templates
//! end in a clear error, quickly, and nothing panics.
//!
//! What each bound covers (design invariant 5):
//! - syntax errors carry the author's line and column, even on lines our
//!   source rewrites touched;
//! - fuel stops instruction-heavy runaways (nested loops);
//! - the recursion limit stops self-calling macros;
//! - the output bound stops large output, and our own code (namespace
//!   assignments, filters, methods, `repr`, `tojson`) refuses values larger
//!   than it, which stops growth carried across loop turns in a namespace;
//! - minijinja refuses string repetition beyond 100 MB.
//!
//! Values grown inside minijinja's own operators (`f(s ~ s)` recursing,
//! `set b = a ~ a`) are bounded where they are kept (every `set`, every
//! macro's arguments, namespaces, lists: see `template::limits`), and so is
//! their total per render; `tests/rendering/hostile.rs` runs those shapes in
//! child processes and measures time and peak memory. What no bound covers:
//! a loop that rebuilds a large string on every turn without keeping or
//! printing it costs time in proportion to fuel times string size.
//!
//! Times are asserted only as a sanity bound (1 s of the thread's CPU). Debug builds run the
//! VM several times slower than release, so the runaway tests use a smaller
//! fuel and output bound than the defaults; the default fuel's runaway takes
//! about 0.1 s of CPU in a release build (`tests/rendering/hostile.rs`).

use std::time::Duration;
#[cfg(not(unix))]
use std::time::Instant;

use chat_autoparser::template::Limits;
use chat_autoparser::{ChatTemplate, ErrorKind, Location, RenderRequest, TemplateConfig};
use proptest::prelude::*;
use serde_json::{json, Value as Json};

const SANITY: Duration = Duration::from_secs(1);

/// Limits small enough for a debug build to hit them well within [`SANITY`].
fn test_limits() -> TemplateConfig {
    TemplateConfig::default().with_limits(
        Limits::default()
            .with_fuel(2_000_000)
            .with_recursion(200)
            .with_max_output_bytes(1 << 20)
            .with_max_total_bytes(64 << 20),
    )
}

fn request() -> RenderRequest {
    RenderRequest::default().with_messages(vec![json!({"role": "user", "content": "hi"})])
}

/// Renders `source` under `config`, expecting an error; checks the sanity
/// bound on this thread's CPU time, not wall time: the machine may be shared
/// (the hostile suite's children, other builds), and waiting for a core is
/// not the template's cost.
fn render_error(source: &str, config: &TemplateConfig) -> chat_autoparser::Error {
    let start = thread_cpu_time();
    let result = ChatTemplate::new(source, config).and_then(|t| t.render(&request()));
    let spent = thread_cpu_time().saturating_sub(start);
    assert!(spent < SANITY, "took {spent:?} of CPU for {source:?}");
    result.expect_err("a bound must stop this template")
}

/// The CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`).
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to write.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the thread's CPU clock is readable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Elsewhere, time since the first call (wall time).
#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

fn at(line: usize, column: usize) -> Option<Location> {
    Some(Location { line, column })
}

// ---------------------------------------------------------------------------
// Syntax errors

/// Each `(source, message, location)` fails to compile with exactly that error.
fn assert_syntax_errors(cases: &[(&str, &str, Option<Location>)]) {
    for &(source, message, location) in cases {
        let err = ChatTemplate::new(source, &TemplateConfig::default()).unwrap_err();
        assert_eq!(
            (err.kind(), err.message(), err.location()),
            (ErrorKind::Syntax, message, location),
            "{source:?}"
        );
    }
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let cases = [
        (
            "Hello\n{% if %}",
            "syntax error: unexpected end of block",
            at(2, 7),
        ),
        (
            "line one\n  {{ messages[0] + }}",
            "syntax error: unexpected end of variable block",
            at(2, 20),
        ),
        (
            "{% for m in messages %}\n{% endfor",
            "syntax error: unexpected end of input, expected end of block",
            at(2, 4),
        ),
    ];
    assert_syntax_errors(&cases);
}

#[test]
fn syntax_errors_after_rewritten_statements_point_into_the_source() {
    let cases = [
        // A namespace assignment is rewritten into a call; the error is reported
        // as written, at the `%}` that ends the incomplete expression.
        (
            "{% set ns = namespace(x=1) %}{% set ns.x = 1 + %}",
            "syntax error: unexpected end of block",
            at(1, 48),
        ),
        // `{% generation %}` becomes a shorter `{% if true %}` on the same line.
        (
            "{% generation %}{{ 1 + }}{% endgeneration %}",
            "syntax error: unexpected end of variable block",
            at(1, 24),
        ),
        // A raw block becomes a string literal.
        (
            "{% raw %}\n{% endraw %}\n{{ 'a' ~ }}",
            "syntax error: unexpected end of variable block",
            at(3, 10),
        ),
    ];
    assert_syntax_errors(&cases);
}

// ---------------------------------------------------------------------------
// Runaway templates

#[test]
fn nested_huge_loops_run_out_of_fuel() {
    let source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    let err = render_error(source, &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "template ran out of fuel (too many instructions)"
        )
    );
}

#[test]
fn self_calling_macro_hits_the_recursion_limit() {
    let source = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    let err = render_error(source, &TemplateConfig::default());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "invalid operation: recursion limit exceeded"
        )
    );
    assert_eq!(err.location(), at(1, 20));
}

#[test]
fn huge_repetition_is_refused() {
    // minijinja 3.1 charges fuel for the bytes the repetition would allocate.
    let err = render_error("{{ 'x' * 1000000000 }}", &TemplateConfig::default());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "template ran out of fuel (too many instructions)"
        )
    );
    // Under minijinja's 100 MB cap, printing it meets the output bound.
    let err = render_error("{{ 'ab' * 1000000 }}", &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "printed value would hold 2000000 bytes or items, over the limit of 1048576"
        )
    );
}

#[test]
fn output_beyond_the_bound_stops_the_render() {
    let err = render_error(
        "{% for i in range(10000) %}{{ 'x' * 1000 }}{% endfor %}",
        &test_limits(),
    );
    assert_eq!(
        (err.kind(), err.message()),
        (ErrorKind::Limit, "output exceeds 1048576 bytes")
    );
}

#[test]
fn string_doubled_in_a_namespace_is_stopped() {
    // `+`, not `~`: the concat filter would refuse the doubling first.
    let source = "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}";
    let err = render_error(source, &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "namespace attribute 's' would hold 2097152 bytes or items, over the limit of 1048576"
        )
    );
    // The block form of the assignment goes through the same check.
    let source = "{% set ns = namespace(s='ab') %}{% for i in range(100) %}\
                  {% set ns.s %}{{ ns.s }}{{ ns.s }}{% endset %}{% endfor %}";
    let err = render_error(source, &test_limits());
    assert_eq!(err.kind(), ErrorKind::Limit);
    assert_eq!(
        err.message(),
        "namespace attribute 's' would hold 2097152 bytes or items, over the limit of 1048576"
    );
}

#[test]
fn list_doubled_in_a_namespace_is_stopped() {
    let source = "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}";
    let err = render_error(source, &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "namespace attribute 'l' would hold 2097152 bytes or items, over the limit of 1048576"
        )
    );
}

#[test]
fn shared_structures_cannot_print_exponentially() {
    // 2^40 leaves in 40 levels of shared lists: small in memory, huge as text.
    let tree = "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}";
    let err = render_error(&format!("{tree}{{{{ ns.l|tojson }}}}"), &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "tojson result would hold 1048577 bytes or items, over the limit of 1048576"
        )
    );
    let err = render_error(&format!("{tree}{{{{ ns.l }}}}"), &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "printed value would hold 1048577 bytes or items, over the limit of 1048576"
        )
    );
}

#[test]
fn amplifying_filters_and_methods_are_bounded() {
    let err = render_error(
        "{{ ('x' * 100000)|replace('x', 'yyyyyyyyyyyyyyyyyyyy') }}",
        &test_limits(),
    );
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "str.replace result would hold 2000000 bytes or items, over the limit of 1048576"
        )
    );
    let err = render_error("{{ 'x'.center(2000000) }}", &test_limits());
    assert_eq!(
        (err.kind(), err.message()),
        (
            ErrorKind::Limit,
            "str.center result would hold 2000000 bytes or items, over the limit of 1048576"
        )
    );
}

// ---------------------------------------------------------------------------
// Properties: nothing panics

/// Pieces of Jinja syntax, so random templates reach the parser's and the
/// VM's interesting paths rather than failing on the first character.
const FRAGMENTS: &[&str] = &[
    "{%",
    "%}",
    "{{",
    "}}",
    "{#",
    "#}",
    "-",
    "+",
    " ",
    "\n",
    "for",
    "in",
    "if",
    "elif",
    "else",
    "endif",
    "endfor",
    "set",
    "endset",
    "macro",
    "endmacro",
    "call",
    "endcall",
    "raw",
    "endraw",
    "generation",
    "endgeneration",
    "filter",
    "endfilter",
    "messages",
    "message",
    "m",
    "ns",
    "ns.x",
    "namespace(x=1)",
    "loop.index",
    "loop.last",
    "tools",
    "content",
    "role",
    "|tojson",
    "|length",
    "|items",
    "|trim",
    "|string",
    "|map(attribute='x')",
    "|selectattr('role')",
    "|join(',')",
    "|indent(2)",
    "|dictsort",
    ".split(',')",
    ".strip()",
    ".get('a')",
    ".items()",
    "[0]",
    "[-1]",
    "[::-1]",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "'",
    "\"",
    "'a'",
    "1",
    "0",
    "-1",
    "1.5",
    "none",
    "true",
    "=",
    "==",
    "~",
    "+",
    "*",
    "/",
    "%",
    "is",
    "not",
    "defined",
    "none",
    "string",
    "mapping",
    "iterable",
    "and",
    "or",
    "raise_exception('x')",
    "strftime_now('%Y')",
    "range(3)",
    "add_generation_prompt",
    "x",
];

fn fragment_template() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|parts| parts.concat())
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Json::from),
        ".{0,12}".prop_map(Json::String),
        prop::sample::select(vec![
            "user",
            "assistant",
            "system",
            "tool",
            "content",
            "role"
        ])
        .prop_map(|s| Json::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "role",
                        "content",
                        "tool_calls",
                        "function",
                        "name",
                        "arguments",
                        "x"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|pairs| Json::Object(
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// Templates shaped like the corpus: role loops, tool lists, tool calls with
/// object or string arguments, namespaces, macros, reasoning splits.
const CORPUS_LIKE: &[&str] = &[
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}\
     {%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "{%- if tools %}{% for t in tools %}{{ t|tojson }}\n{% endfor %}{% endif %}\
     {%- for m in messages %}{% if m.tool_calls %}{% for tc in m.tool_calls %}\
     {%- set f = tc.function if tc.function is defined else tc %}\
     <tool_call>{\"name\": \"{{ f.name }}\", \"arguments\": {{ f.arguments if f.arguments is string else f.arguments|tojson }}}</tool_call>\
     {%- endfor %}{% elif m.content is string %}{{ m.content.split('</think>')[-1].strip() }}{% endif %}{% endfor %}",
    "{%- set ns = namespace(last=-1, sys='') %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}\
     {%- if m.role == 'system' %}{% set ns.sys = ns.sys ~ m.content %}{% endif %}{% endfor %}\
     {%- macro render(v) %}{% if v is mapping %}{% for k, x in v|dictsort %}{{ k }}={{ render(x) }};{% endfor %}\
     {%- elif v is iterable and v is not string %}[{% for x in v %}{{ render(x) }}{% endfor %}]{% else %}{{ v }}{% endif %}{% endmacro %}\
     {{- ns.sys }}{{ ns.last }}{% for m in messages %}{{ render(m) }}{% endfor %}{{ render(tools) }}",
];

// 256 cases each by default; `PROPTEST_CASES=20000` for a deeper search.
proptest! {
    // Integration tests have no lib.rs beside them to persist failures
    // next to; a failure prints its seed and input instead.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(source in ".{0,200}") {
        exercise(&source);
    }

    #[test]
    fn jinja_fragments_never_panic(source in fragment_template()) {
        exercise(&source);
    }

    #[test]
    fn arbitrary_messages_never_panic(
        template in prop::sample::select(CORPUS_LIKE),
        messages in prop::collection::vec(json_value(), 0..5),
        tools in prop::option::of(prop::collection::vec(json_value(), 0..3)),
        add_generation_prompt in any::<bool>(),
    ) {
        let compiled = ChatTemplate::new(template, &TemplateConfig::default()).expect("corpus-like templates compile");
        let request = RenderRequest::default().with_messages(messages).with_tools(tools).with_add_generation_prompt(add_generation_prompt);
        let _ = compiled.render(&request);
    }
}

/// Compiles and, when that works, renders with a small conversation.
fn exercise(source: &str) {
    if let Ok(template) = ChatTemplate::new(source, &test_limits()) {
        let _ = template.render(&request());
        let _ = template.variables();
    }
}
