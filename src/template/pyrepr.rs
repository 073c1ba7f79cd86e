//! Python's `str()` and `repr()` for template values.
//!
//! jinja2 prints values with Python's `str()`: `True`, `None`, `1.0`, and
//! containers as their `repr` (`{'a': [1, 'x']}`). Templates that print a tool
//! call's `arguments` dict without `tojson` depend on this, so minijinja's own
//! formatting (`true`, `none`, JSON-ish maps) would change the prompt.

use std::fmt::Write;

use minijinja::value::{Value, ValueKind};

/// Python `str(value)`; undefined prints as the empty string, as in jinja2.
pub(crate) fn to_str(value: &Value) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_owned(),
        ValueKind::Undefined => String::new(),
        _ => repr(value),
    }
}

/// Python `repr(value)`.
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, value, 0);
    out
}

/// Containers nested deeper than this print as `...`, so hostile values cannot
/// exhaust the stack.
const MAX_DEPTH: usize = 64;

fn write_repr(out: &mut String, value: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => write_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            if let Ok(items) = value.try_iter() {
                for (i, item) in items.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &item, depth + 1);
                }
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            if let Ok(keys) = value.try_iter() {
                for (i, key) in keys.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &key, depth + 1);
                    out.push_str(": ");
                    let item = value.get_item(&key).unwrap_or_default();
                    write_repr(out, &item, depth + 1);
                }
            }
            out.push('}');
        }
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

fn write_number(out: &mut String, value: &Value) {
    match f64::try_from(value.clone()) {
        Ok(f) if value.as_i64().is_none() && !is_integer_value(value) => out.push_str(&float_repr(f)),
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

fn is_integer_value(value: &Value) -> bool {
    // minijinja renders integers (including u64/i128) without a decimal point.
    !value.to_string().contains(['.', 'e', 'E', 'n', 'N'])
}

/// Python's `repr(float)`: shortest round-trip digits, scientific notation when
/// the exponent is below -4 or at least 16.
pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sci = format!("{f:e}"); // e.g. "-1.5e-7", shortest round-trip digits
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // position of the decimal point within `digits`
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        };
        format!("{sign}{body}")
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs())
    }
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(-2.5), "-2.5");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1.5e-7), "1.5e-07");
        assert_eq!(float_repr(123456.789), "123456.789");
        assert_eq!(float_repr(0.0001), "0.0001");
    }

    #[test]
    fn containers_print_as_python_repr() {
        let v = Value::from(minijinja::value::Serde(serde_json::json!({"a": [1, "it's", true, null], "b": 2.0})));
        assert_eq!(to_str(&v), r#"{'a': [1, "it's", True, None], 'b': 2.0}"#);
        assert_eq!(to_str(&Value::from("x\ny")), "x\ny");
        assert_eq!(repr(&Value::from("x\ny")), "'x\\ny'");
    }
}
