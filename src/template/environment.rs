//! The minijinja environment that mimics transformers' jinja2 set-up.
//!
//! Everything that makes minijinja behave like transformers' sandbox lives here:
//! whitespace flags, no autoescape, the Python-flavoured value formatter, the
//! `tojson` filter, `raise_exception`, `strftime_now`, Python methods and the
//! `{% generation %}` tag.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use minijinja::value::{Kwargs, Rest};
use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior, Value};
use regex::Regex;

use super::{clock::Clock, pyjson, pymethods, pyrepr, TemplateConfig, TEMPLATE_NAME};

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

/// Builds the environment and compiles `source` into it.
pub(super) fn build(source: &str, config: &TemplateConfig) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(false)
        .build()?;
    env.set_syntax(syntax);
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    // Prompts are not HTML: escaping would corrupt them.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(config.limits.fuel));
    env.set_recursion_limit(config.limits.recursion);
    env.set_formatter(|out, _state, value| {
        out.write_str(&pyrepr::to_str(value)).map_err(Error::from)
    });
    env.set_unknown_method_callback(pymethods::call);

    env.add_filter("tojson", tojson);
    env.add_filter("string", |v: Value| pyrepr::to_str(&v));
    env.add_function("raise_exception", raise_exception);
    let clock: Arc<dyn Clock> = config.clock.clone();
    env.add_function("strftime_now", move |format: String| clock.now().strftime(&format));

    env.add_template_owned(TEMPLATE_NAME, neutralize_generation(source).into_owned())?;
    Ok(env)
}

/// transformers' `tojson`: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)` with keys in insertion order.
fn tojson(value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let options = pyjson::Options {
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
        indent: kwargs.get::<Option<Value>>("indent")?.and_then(|v| pyjson::indent_of(&v)),
        separators: kwargs
            .get::<Option<Vec<String>>>("separators")?
            .and_then(|s| <[String; 2]>::try_from(s).ok()),
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    pyjson::dumps(&value, &options)
}

fn raise_exception(_state: &State, args: Rest<Value>) -> Result<Value, Error> {
    let message = args.first().map(pyrepr::to_str).unwrap_or_default();
    Err(Error::new(ErrorKind::InvalidOperation, format!("{RAISED}{message}")))
}

/// transformers' `{% generation %}` only marks assistant spans for a token mask;
/// it never changes the text. minijinja has no such tag, so it becomes an
/// always-true `if` with the same whitespace-control markers.
fn neutralize_generation(source: &str) -> Cow<'_, str> {
    static TAG: OnceLock<Regex> = OnceLock::new();
    let tag = TAG.get_or_init(|| {
        Regex::new(r"\{%([-+]?)\s*(end)?generation\s*([-+]?)%\}").expect("static regex")
    });
    tag.replace_all(source, |c: &regex::Captures<'_>| {
        let keyword = if c.get(2).is_some() { "endif" } else { "if true" };
        format!("{{%{} {} {}%}}", &c[1], keyword, &c[3])
    })
}

#[cfg(test)]
mod tests {
    use super::neutralize_generation;

    #[test]
    fn generation_tags_become_if_true() {
        assert_eq!(
            neutralize_generation("a{%- generation %}b{% endgeneration -%}c"),
            "a{%- if true %}b{% endif -%}c"
        );
        assert_eq!(neutralize_generation("{{ add_generation_prompt }}"), "{{ add_generation_prompt }}");
    }
}
