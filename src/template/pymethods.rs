//! Python methods on template values (`s.rsplit(...)`, `d.items()`, ...).
//!
//! minijinja-contrib's pycompat covers the common ones; this module adds the
//! ones real chat templates call that it lacks, then defers to pycompat. Only
//! non-mutating methods exist: transformers renders in jinja2's
//! `ImmutableSandboxedEnvironment`, where `list.append` and friends are refused.

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// The unknown-method callback installed on the environment.
pub(crate) fn call(state: &mut State, value: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    let ours = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args),
        ValueKind::Seq => seq_method(value, method, args),
        ValueKind::Map => map_method(value, method, args),
        _ => None,
    };
    match ours {
        Some(result) => result,
        None => minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args),
    }
}

fn bad_args(method: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("bad arguments to {method}()"))
}

fn str_arg<'a>(args: &'a [Value], i: usize) -> Option<&'a str> {
    args.get(i).and_then(Value::as_str)
}

fn int_arg(args: &[Value], i: usize) -> Option<i64> {
    args.get(i).and_then(Value::as_i64)
}

/// String methods pycompat lacks (or gets wrong for Python semantics).
fn string_method(s: &str, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    let result = match method {
        "removeprefix" => str_arg(args, 0).map(|p| Value::from(s.strip_prefix(p).unwrap_or(s))),
        "removesuffix" => str_arg(args, 0).map(|p| Value::from(s.strip_suffix(p).unwrap_or(s))),
        "rsplit" => rsplit(s, args),
        "partition" => str_arg(args, 0).filter(|sep| !sep.is_empty()).map(|sep| {
            let parts = match s.split_once(sep) {
                Some((a, b)) => [a, sep, b],
                None => [s, "", ""],
            };
            Value::from(parts.iter().map(|p| Value::from(*p)).collect::<Vec<_>>())
        }),
        "rpartition" => str_arg(args, 0).filter(|sep| !sep.is_empty()).map(|sep| {
            let parts = match s.rsplit_once(sep) {
                Some((a, b)) => [a, sep, b],
                None => ["", "", s],
            };
            Value::from(parts.iter().map(|p| Value::from(*p)).collect::<Vec<_>>())
        }),
        "index" | "rindex" => {
            let needle = str_arg(args, 0)?;
            let found = if method == "index" { s.find(needle) } else { s.rfind(needle) };
            return Some(match found {
                Some(byte) => Ok(Value::from(s[..byte].chars().count())),
                None => Err(Error::new(ErrorKind::InvalidOperation, "substring not found")),
            });
        }
        "zfill" => int_arg(args, 0).map(|width| {
            let len = s.chars().count() as i64;
            if width <= len {
                return Value::from(s);
            }
            let pad = "0".repeat((width - len) as usize);
            match s.strip_prefix(['+', '-']) {
                Some(rest) => Value::from(format!("{}{pad}{rest}", &s[..1])),
                None => Value::from(format!("{pad}{s}")),
            }
        }),
        "ljust" | "rjust" | "center" => int_arg(args, 0).map(|width| {
            let fill = str_arg(args, 1).and_then(|f| f.chars().next()).unwrap_or(' ');
            let len = s.chars().count() as i64;
            let total = (width - len).max(0) as usize;
            let (left, right) = match method {
                "ljust" => (0, total),
                "rjust" => (total, 0),
                // Python centres with the extra space on the right when the string length is even.
                _ => {
                    let left = total / 2 + (total & width as usize & 1);
                    (left, total - left)
                }
            };
            let fill = fill.to_string();
            Value::from(format!("{}{s}{}", fill.repeat(left), fill.repeat(right)))
        }),
        "casefold" => Some(Value::from(s.to_lowercase())),
        "swapcase" => Some(Value::from(
            s.chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect::<Vec<_>>()
                    }
                })
                .collect::<String>(),
        )),
        "isdecimal" => Some(Value::from(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))),
        "istitle" => Some(Value::from(s.chars().any(char::is_alphabetic) && minijinja_title(s) == s)),
        "expandtabs" => Some(Value::from(s.replace('\t', "        "))),
        _ => return None,
    };
    Some(result.ok_or_else(|| bad_args(method)))
}

fn minijinja_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_alpha = false;
    for c in s.chars() {
        if prev_alpha {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_alpha = c.is_alphabetic();
    }
    out
}

/// `str.rsplit(sep=None, maxsplit=-1)`.
fn rsplit(s: &str, args: &[Value]) -> Option<Value> {
    let sep = args.first().filter(|v| !v.is_none()).map(|v| v.as_str()).unwrap_or(Some(""));
    let sep = sep?;
    let maxsplit = int_arg(args, 1).unwrap_or(-1);
    let mut parts: Vec<&str> = if sep.is_empty() {
        // Whitespace splitting drops empty parts, like Python.
        let words: Vec<&str> = s.split_whitespace().collect();
        if maxsplit < 0 || words.len() <= maxsplit as usize + 1 {
            words
        } else {
            let keep = maxsplit as usize;
            let mut rest = s.trim_end();
            let mut tail = Vec::new();
            for _ in 0..keep {
                let cut = rest.rfind(char::is_whitespace).unwrap_or(0);
                tail.push(&rest[cut..].trim_start()[..]);
                rest = rest[..cut].trim_end();
            }
            tail.push(rest);
            tail.reverse();
            return Some(Value::from(tail.into_iter().map(Value::from).collect::<Vec<_>>()));
        }
    } else if maxsplit < 0 {
        s.split(sep).collect()
    } else {
        let mut v: Vec<&str> = s.rsplitn(maxsplit as usize + 1, sep).collect();
        v.reverse();
        v
    };
    if sep.is_empty() {
        parts.retain(|p| !p.is_empty());
    }
    Some(Value::from(parts.into_iter().map(Value::from).collect::<Vec<_>>()))
}

fn seq_method(value: &Value, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    match method {
        "index" => {
            let needle = args.first()?;
            let found = value.try_iter().ok()?.position(|item| &item == needle);
            Some(found.map(Value::from).ok_or_else(|| {
                Error::new(ErrorKind::InvalidOperation, "value is not in list")
            }))
        }
        "copy" => Some(Ok(value.clone())),
        _ => None,
    }
}

fn map_method(value: &Value, method: &str, _args: &[Value]) -> Option<Result<Value, Error>> {
    match method {
        "copy" => Some(Ok(value.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(method: &str, text: &str, args: &[Value]) -> String {
        super::pyrepr_of(string_method(text, method, args).unwrap().unwrap())
    }

    #[test]
    fn string_methods_follow_python() {
        assert_eq!(s("removeprefix", "<think>x", &["<think>".into()]), "'x'");
        assert_eq!(s("removesuffix", "x</think>", &["</think>".into()]), "'x'");
        assert_eq!(s("rsplit", "a/b/c", &["/".into(), 1.into()]), "['a/b', 'c']");
        assert_eq!(s("rsplit", " a  b c ", &[]), "['a', 'b', 'c']");
        assert_eq!(s("rsplit", "a b  c", &[Value::from(()), 1.into()]), "['a b', 'c']");
        assert_eq!(s("partition", "k=v=w", &["=".into()]), "['k', '=', 'v=w']");
        assert_eq!(s("zfill", "-7", &[4.into()]), "'-007'");
        assert_eq!(s("center", "ab", &[5.into(), "*".into()]), "'**ab*'");
        assert_eq!(s("center", "abc", &[6.into()]), "' abc  '");
    }
}

#[cfg(test)]
fn pyrepr_of(v: Value) -> String {
    super::pyrepr::repr(&v)
}
