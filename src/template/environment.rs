//! The minijinja environment that mimics transformers' jinja2 set-up.
//!
//! Everything that makes minijinja behave like transformers' sandbox is wired
//! here: whitespace flags, no autoescape, the Python-flavoured value formatter,
//! the `tojson` filter, `raise_exception`, `strftime_now`, `namespace`, Python
//! methods, jinja2's filters and tests, and the source rewrites.
//!
//! Invariant: every piece of our code that builds strings is given the output
//! byte bound of [`super::Limits`], so no value we create outgrows it.

use std::sync::Arc;

use minijinja::value::{Kwargs, Rest};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior, Value};

use super::pyfilters::Params;
use super::rewrite::Rewritten;
use super::syntax::syntax;
use super::{
    clock::Clock, concat, cpu_budget, guarded, limits, namespace, pyfilters, pyjson, pymethods,
    pyrepr, TemplateConfig, TEMPLATE_NAME,
};

/// Prefix that marks an error as coming from `raise_exception`. A control
/// character cannot occur in a message written inside a template by accident.
const RAISED: &str = "\u{1}raised\u{1}";

/// Whether a minijinja error detail was produced by `raise_exception`.
pub(super) fn is_raised(detail: &str) -> bool {
    detail.starts_with(RAISED)
}

/// The template's own message of a `raise_exception` error.
pub(super) fn raised_message(detail: &str) -> &str {
    detail.strip_prefix(RAISED).unwrap_or(detail)
}

/// Compiles `text` alone, for its syntax error.
pub(super) fn check_syntax(text: &str) -> Result<(), Error> {
    let mut env = Environment::new();
    env.set_syntax(syntax()?);
    env.template_from_str(text).map(|_| ())
}

/// Builds the environment and compiles the rewritten `source` into it.
pub(super) fn build(
    source: &Rewritten,
    config: &TemplateConfig,
) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_syntax(syntax()?);
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    // Prompts are not HTML: escaping would corrupt them.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(config.limits.fuel));
    env.set_recursion_limit(config.limits.recursion);

    let limit = config.limits.max_output_bytes;
    env.set_formatter(move |out, state, value| {
        limits::note_fuel(state);
        cpu_budget::tick()?;
        out.write_str(&pyrepr::to_str(value, limit)?)
            .map_err(Error::from)
    });
    env.set_unknown_method_callback(move |state, value, method, args| {
        pymethods::call(state, value, method, args, limit)
    });
    pyfilters::register(&mut env, limit);
    guarded::register(&mut env, limit);
    // A panic inside a render, for the test that the engine's panics are
    // caught (`template::tests::a_panic_inside_the_engine_is_a_render_error`).
    #[cfg(test)]
    env.add_function("__panic_for_tests", || -> Result<String, Error> {
        panic!("a panic inside a render")
    });
    env.add_filter(
        "tojson",
        move |value: Value, args: Rest<Value>, kwargs: Kwargs| {
            tojson(&value, &args, &kwargs, limit)
        },
    );
    env.add_function(
        "raise_exception",
        move |state: &State, args: Rest<Value>| raise_exception(state, &args, limit),
    );
    env.add_function(
        limits::BOUND_FUNCTION,
        move |state: &State, args: Rest<Value>| limits::bound(state, &args, limit),
    );
    env.add_filter(
        concat::CONCAT_FILTER,
        move |left: Value, right: Option<Value>| concat::concat(&left, right.as_ref(), limit),
    );
    env.add_function(limits::RELEASE_FUNCTION, |args: Rest<Value>| {
        limits::release(&args)
    });
    env.add_function("namespace", move |args: Rest<Value>, kwargs: Kwargs| {
        namespace::namespace(args, kwargs, limit)
    });
    let clock: Arc<dyn Clock> = config.clock.clone();
    env.add_function("strftime_now", move |format: String| {
        cpu_budget::tick()?;
        // A date format is a few directives; a long one is only a way to
        // make one call cost time in proportion to its length.
        if format.len() > MAX_DATE_FORMAT {
            return Err(limits::too_large(
                "strftime_now format",
                format.len(),
                MAX_DATE_FORMAT,
            ));
        }
        Ok(clock.now().strftime(&format))
    });

    env.add_template_owned(TEMPLATE_NAME, source.text.clone())?;
    Ok(env)
}

/// Longest `strftime_now` format: real templates pass a few directives
/// (`"%d %b %Y"`).
const MAX_DATE_FORMAT: usize = 256;

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)`: `json.dumps` with keys in insertion order.
fn tojson(value: &Value, args: &[Value], kwargs: &Kwargs, limit: usize) -> Result<String, Error> {
    let params = Params::bind(
        &["ensure_ascii", "indent", "separators", "sort_keys"],
        args,
        kwargs,
    )?;
    let separators = match params.get(2) {
        Some(s) => {
            let parts: Vec<String> = s
                .try_iter()?
                .map(|p| p.as_str().unwrap_or_default().to_owned())
                .collect();
            Some(<[String; 2]>::try_from(parts).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    "separators must be a pair of strings",
                )
            })?)
        }
        None => None,
    };
    let options = pyjson::Options {
        ensure_ascii: params.flag(0),
        indent: params.get(1).and_then(pyjson::indent_of),
        separators,
        sort_keys: params.flag(3),
    };
    pyjson::dumps(value, &options, limit)
}

fn raise_exception(state: &State, args: &[Value], limit: usize) -> Result<Value, Error> {
    limits::note_fuel(state);
    let message = match args.first() {
        Some(message) => pyrepr::to_str(message, limit)?,
        None => String::new(),
    };
    Err(Error::new(
        ErrorKind::InvalidOperation,
        format!("{RAISED}{message}"),
    ))
}
