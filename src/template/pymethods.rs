//! Python methods on template values (`s.rsplit(...)`, `d.get(...)`, ...).
//!
//! String methods are implemented here with Python's exact semantics
//! (whitespace per `str.isspace`, `splitlines` boundaries, `title` casing,
//! char-based indices), because minijinja-contrib's pycompat approximates them
//! with Rust's rules; pycompat still serves `format` and the `is...` predicates.
//! transformers renders in jinja2's `ImmutableSandboxedEnvironment`, which
//! refuses methods that mutate a list or dict (`append`, `pop`, `update`, ...):
//! those fail here with the sandbox's message.
//!
//! Invariants: no method returns a string longer than the byte bound it was
//! installed with; sizes are checked before allocating.

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

use super::limits;
use super::pyvalue;

/// Methods that mutate their receiver, refused by the immutable sandbox.
const MUTATING: &[&str] = &[
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "popitem",
    "remove",
    "reverse",
    "setdefault",
    "sort",
    "update",
    "add",
    "discard",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
];

/// The unknown-method callback, with strings bounded to `limit` bytes.
pub(crate) fn call(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
    limit: usize,
) -> Result<Value, Error> {
    super::guarded::walkable(&format!("the receiver of .{method}()"), value, limit)?;
    if method == super::namespace::SET_METHOD {
        return Err(invalid("cannot assign attribute on non-namespace object"));
    }
    let ours = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args, limit),
        ValueKind::Seq | ValueKind::Map if MUTATING.contains(&method) => {
            let type_name = pyvalue::type_name(value);
            Some(Err(invalid(&format!(
                "access to attribute '{method}' of '{type_name}' object is unsafe."
            ))))
        }
        ValueKind::Seq => seq_method(value, method, args),
        ValueKind::Map => map_method(value, method, args),
        _ => None,
    };
    match ours {
        Some(result) => result,
        None => minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args),
    }
}

fn invalid(message: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.to_owned())
}

fn bad_args(method: &str) -> Error {
    invalid(&format!("bad arguments to {method}()"))
}

fn str_arg(args: &[Value], i: usize) -> Option<&str> {
    args.get(i).and_then(Value::as_str)
}

fn int_arg(args: &[Value], i: usize) -> Option<i64> {
    args.get(i).and_then(Value::as_i64)
}

/// An optional argument that may be given as `None`.
fn opt_arg(args: &[Value], i: usize) -> Option<&Value> {
    args.get(i).filter(|v| !pyvalue::is_none(v))
}

fn strings(parts: Vec<&str>) -> Result<Value, Error> {
    super::guarded::items_within("a split result", parts.len())?;
    Ok(Value::from(
        parts.into_iter().map(Value::from).collect::<Vec<_>>(),
    ))
}

/// Python's `str.isspace` for one character.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// String methods with Python semantics; `None` defers to pycompat.
fn string_method(
    s: &str,
    method: &str,
    args: &[Value],
    limit: usize,
) -> Option<Result<Value, Error>> {
    let result = match method {
        "strip" | "lstrip" | "rstrip" => strip(s, method, opt_arg(args, 0)).map(Value::from),
        "split" | "rsplit" => {
            let sep = opt_arg(args, 0);
            let parts = split(s, method == "rsplit", sep, int_arg(args, 1).unwrap_or(-1));
            return Some(parts.ok_or_else(|| bad_args(method)).and_then(strings));
        }
        "splitlines" => {
            let keepends = args.first().is_some_and(Value::is_true);
            return Some(strings(splitlines(s, keepends)));
        }
        "replace" => return Some(replace(s, args, limit)),
        "upper" => Some(Value::from(s.to_uppercase())),
        "lower" => Some(Value::from(s.to_lowercase())),
        "casefold" => Some(Value::from(s.to_lowercase())),
        "title" => Some(Value::from(title(s))),
        "capitalize" => Some(Value::from(capitalize(s))),
        "swapcase" => Some(Value::from(swapcase(s))),
        "startswith" | "endswith" => return Some(affix(s, method, args)),
        "find" | "rfind" | "index" | "rindex" | "count" => return Some(search(s, method, args)),
        "removeprefix" => str_arg(args, 0).map(|p| Value::from(s.strip_prefix(p).unwrap_or(s))),
        "removesuffix" => str_arg(args, 0).map(|p| Value::from(s.strip_suffix(p).unwrap_or(s))),
        "partition" | "rpartition" => partition(s, method == "rpartition", str_arg(args, 0)),
        "join" => return Some(join(s, args.first(), limit)),
        "zfill" | "ljust" | "rjust" | "center" => return Some(pad(s, method, args, limit)),
        "expandtabs" => return Some(expandtabs(s, int_arg(args, 0).unwrap_or(8), limit)),
        "isdecimal" => Some(Value::from(
            !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()),
        )),
        "istitle" => Some(Value::from(s.chars().any(is_cased) && title(s) == s)),
        "isspace" => Some(Value::from(!s.is_empty() && s.chars().all(is_py_space))),
        _ => return None,
    };
    Some(result.ok_or_else(|| bad_args(method)))
}

fn strip<'a>(s: &'a str, method: &str, chars: Option<&Value>) -> Option<&'a str> {
    let set: Option<Vec<char>> = match chars {
        Some(v) => Some(v.as_str()?.chars().collect()),
        None => None,
    };
    let matches = |c: char| {
        set.as_ref()
            .map_or_else(|| is_py_space(c), |set| set.contains(&c))
    };
    Some(match method {
        "lstrip" => s.trim_start_matches(matches),
        "rstrip" => s.trim_end_matches(matches),
        _ => s.trim_matches(matches),
    })
}

/// `str.split` / `str.rsplit` with `sep=None` meaning runs of whitespace.
fn split<'a>(
    s: &'a str,
    from_right: bool,
    sep: Option<&Value>,
    maxsplit: i64,
) -> Option<Vec<&'a str>> {
    let limit = usize::try_from(maxsplit).ok();
    let Some(sep) = sep else {
        return Some(split_whitespace(s, from_right, limit));
    };
    let sep = sep.as_str().filter(|sep| !sep.is_empty())?;
    let parts: Vec<&str> = match (limit, from_right) {
        (None, _) => s.split(sep).collect(),
        (Some(n), false) => s.splitn(n + 1, sep).collect(),
        (Some(n), true) => {
            let mut parts: Vec<&str> = s.rsplitn(n + 1, sep).collect();
            parts.reverse();
            parts
        }
    };
    Some(parts)
}

/// Whitespace splitting: empty parts vanish; the unsplit remainder keeps its
/// inner and far-side whitespace, as in Python.
fn split_whitespace(s: &str, from_right: bool, limit: Option<usize>) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = if from_right {
        s.trim_end_matches(is_py_space)
    } else {
        s.trim_start_matches(is_py_space)
    };
    while !rest.is_empty() {
        if limit.is_some_and(|n| parts.len() == n) {
            parts.push(rest);
            break;
        }
        if from_right {
            let cut = rest.rfind(is_py_space).map_or(0, |i| {
                i + rest[i..].chars().next().map_or(1, char::len_utf8)
            });
            parts.push(&rest[cut..]);
            rest = rest[..cut].trim_end_matches(is_py_space);
        } else {
            let cut = rest.find(is_py_space).unwrap_or(rest.len());
            parts.push(&rest[..cut]);
            rest = rest[cut..].trim_start_matches(is_py_space);
        }
    }
    if from_right {
        parts.reverse();
    }
    parts
}

/// `str.splitlines` with Python's line boundaries.
pub(crate) fn splitlines(s: &str, keepends: bool) -> Vec<&str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'
                ..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_break(c) {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            end += 1;
        }
        lines.push(&s[start..if keepends { end } else { i }]);
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

pub(crate) fn replace(s: &str, args: &[Value], limit: usize) -> Result<Value, Error> {
    let (Some(old), Some(new)) = (str_arg(args, 0), str_arg(args, 1)) else {
        return Err(bad_args("replace"));
    };
    let count = int_arg(args, 2).and_then(|n| usize::try_from(n).ok());
    let occurrences = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    let replaced = count.map_or(occurrences, |n| n.min(occurrences));
    let size = s.len() - replaced * old.len() + replaced * new.len();
    if size > limit {
        return Err(limits::too_large("str.replace result", size, limit));
    }
    Ok(Value::from(match count {
        Some(n) => s.replacen(old, new, n),
        None => s.replace(old, new),
    }))
}

/// Python's cased characters: those with upper/lower variants.
fn is_cased(c: char) -> bool {
    c.is_uppercase() || c.is_lowercase()
}

/// `str.title`: a cased character after an uncased one is upper-cased, the rest lowered.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous_cased = false;
    for c in s.chars() {
        if previous_cased {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        previous_cased = is_cased(c);
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

fn swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| -> Vec<char> {
            if c.is_uppercase() {
                c.to_lowercase().collect()
            } else {
                c.to_uppercase().collect()
            }
        })
        .collect()
}

/// The byte range of `s` covering Python's `s[start:end]` (char indices).
fn char_slice(s: &str, start: Option<&Value>, end: Option<&Value>) -> std::ops::Range<usize> {
    let len = s.chars().count() as i64;
    let clamp = |v: Option<&Value>, default: i64| {
        let i = v.and_then(Value::as_i64).unwrap_or(default);
        (if i < 0 { i + len } else { i }).clamp(0, len) as usize
    };
    let (from, to) = (clamp(start, 0), clamp(end, len));
    let byte = |n: usize| s.char_indices().nth(n).map_or(s.len(), |(b, _)| b);
    byte(from)..byte(to.max(from))
}

/// `startswith` / `endswith` with a string or tuple and optional start/end.
fn affix(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    let range = char_slice(s, opt_arg(args, 1), opt_arg(args, 2));
    let s = &s[range];
    let test = |p: &str| {
        if method == "startswith" {
            s.starts_with(p)
        } else {
            s.ends_with(p)
        }
    };
    let candidates = args.first().ok_or_else(|| bad_args(method))?;
    if let Some(p) = candidates.as_str() {
        return Ok(Value::from(test(p)));
    }
    if candidates.kind() != ValueKind::Seq {
        return Err(invalid(&format!(
            "{method} first arg must be str or a tuple of str"
        )));
    }
    for candidate in candidates.try_iter()? {
        let p = candidate
            .as_str()
            .ok_or_else(|| invalid("tuple for startswith must only contain str"))?;
        if test(p) {
            return Ok(Value::from(true));
        }
    }
    Ok(Value::from(false))
}

/// `find`, `rfind`, `index`, `rindex`, `count` with optional start/end.
fn search(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    let needle = str_arg(args, 0).ok_or_else(|| bad_args(method))?;
    let range = char_slice(s, opt_arg(args, 1), opt_arg(args, 2));
    let offset_chars = s[..range.start].chars().count();
    let hay = &s[range];
    if method == "count" {
        let n = if needle.is_empty() {
            hay.chars().count() + 1
        } else {
            hay.matches(needle).count()
        };
        return Ok(Value::from(n));
    }
    let found = if method.starts_with('r') {
        hay.rfind(needle)
    } else {
        hay.find(needle)
    };
    match found {
        Some(byte) => Ok(Value::from(offset_chars + hay[..byte].chars().count())),
        None if method.ends_with("find") => Ok(Value::from(-1)),
        None => Err(invalid("substring not found")),
    }
}

fn partition(s: &str, from_right: bool, sep: Option<&str>) -> Option<Value> {
    let sep = sep.filter(|sep| !sep.is_empty())?;
    let found = if from_right {
        s.rsplit_once(sep)
    } else {
        s.split_once(sep)
    };
    let parts = match (found, from_right) {
        (Some((a, b)), _) => [a, sep, b],
        (None, false) => [s, "", ""],
        (None, true) => ["", "", s],
    };
    Some(pyvalue::tuple(
        parts.iter().map(|p| Value::from(*p)).collect(),
    ))
}

/// `sep.join(items)`: every item must be a string, as in Python.
fn join(sep: &str, items: Option<&Value>, limit: usize) -> Result<Value, Error> {
    let items = items.ok_or_else(|| bad_args("join"))?;
    let mut out = String::new();
    for (i, item) in items.try_iter()?.checked().enumerate() {
        let item = item?;
        let text = item.as_str().ok_or_else(|| {
            let found = pyvalue::type_name(&item);
            invalid(&format!(
                "sequence item {i}: expected str instance, {found} found"
            ))
        })?;
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(text);
        if out.len() > limit {
            return Err(limits::too_large("str.join result", out.len(), limit));
        }
    }
    Ok(Value::from(out))
}

/// `zfill`, `ljust`, `rjust`, `center`.
pub(crate) fn pad(s: &str, method: &str, args: &[Value], limit: usize) -> Result<Value, Error> {
    let width = int_arg(args, 0).ok_or_else(|| bad_args(method))?;
    let fill = match str_arg(args, 1) {
        Some(f) if f.chars().count() == 1 => f.chars().next().unwrap_or(' '),
        Some(_) => {
            return Err(invalid(
                "The fill character must be exactly one character long",
            ))
        }
        None if method == "zfill" => '0',
        None => ' ',
    };
    let len = s.chars().count() as i64;
    let total = (width - len).max(0) as usize;
    if s.len() + total * fill.len_utf8() > limit {
        return Err(limits::too_large(
            &format!("str.{method} result"),
            s.len() + total,
            limit,
        ));
    }
    let (left, right) = match method {
        "ljust" => (0, total),
        "rjust" | "zfill" => (total, 0),
        // CPython: left = pad/2 + (pad & width & 1).
        _ => {
            let left = total / 2 + (total & width as usize & 1);
            (left, total - left)
        }
    };
    let fill = fill.to_string();
    if method == "zfill" {
        if let Some(rest) = s.strip_prefix(['+', '-']) {
            return Ok(Value::from(format!(
                "{}{}{rest}",
                &s[..1],
                fill.repeat(left)
            )));
        }
    }
    Ok(Value::from(format!(
        "{}{s}{}",
        fill.repeat(left),
        fill.repeat(right)
    )))
}

fn expandtabs(s: &str, tabsize: i64, limit: usize) -> Result<Value, Error> {
    let tabsize = tabsize.max(0) as usize;
    let mut out = String::new();
    let mut column = 0;
    for c in s.chars() {
        match c {
            '\t' if tabsize > 0 => {
                let spaces = tabsize - column % tabsize;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\t' => {}
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            c => {
                out.push(c);
                column += 1;
            }
        }
        if out.len() > limit {
            return Err(limits::too_large("str.expandtabs result", out.len(), limit));
        }
    }
    Ok(Value::from(out))
}

fn seq_method(value: &Value, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    match method {
        "index" => {
            let needle = args.first()?;
            let found = value.try_iter().ok()?.position(|item| &item == needle);
            Some(
                found
                    .map(Value::from)
                    .ok_or_else(|| invalid("value is not in list")),
            )
        }
        "copy" => Some(Ok(value.clone())),
        _ => None,
    }
}

fn map_method(value: &Value, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    match method {
        "copy" => Some(Ok(value.clone())),
        // Python's default is None, which (unlike minijinja's) is not iterable.
        "get" => {
            let key = args.first()?;
            let found = value.get_item(key).ok().filter(|v| !v.is_undefined());
            Some(Ok(found.unwrap_or_else(|| {
                args.get(1).cloned().unwrap_or_else(pyvalue::none)
            })))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: usize = 1 << 20;

    fn s(method: &str, text: &str, args: &[Value]) -> String {
        super::super::pyrepr::repr(
            &string_method(text, method, args, BIG).unwrap().unwrap(),
            BIG,
        )
        .unwrap()
    }

    #[test]
    fn string_methods_follow_python() {
        assert_eq!(s("removeprefix", "<think>x", &["<think>".into()]), "'x'");
        assert_eq!(s("removesuffix", "x</think>", &["</think>".into()]), "'x'");
        assert_eq!(
            s("rsplit", "a/b/c", &["/".into(), 1.into()]),
            "['a/b', 'c']"
        );
        assert_eq!(s("rsplit", " a  b c ", &[]), "['a', 'b', 'c']");
        assert_eq!(
            s("rsplit", "a b  c", &[Value::from(()), 1.into()]),
            "['a b', 'c']"
        );
        assert_eq!(
            s("split", "  a b  c  ", &[Value::from(()), 1.into()]),
            "['a', 'b  c  ']"
        );
        assert_eq!(
            s("rsplit", "  a b  c  ", &[Value::from(()), 1.into()]),
            "['  a b', 'c']"
        );
        assert_eq!(s("split", "a,,b", &[",".into()]), "['a', '', 'b']");
        assert_eq!(s("partition", "k=v=w", &["=".into()]), "('k', '=', 'v=w')");
        assert_eq!(s("rpartition", "k=v=w", &["=".into()]), "('k=v', '=', 'w')");
        assert_eq!(s("zfill", "-7", &[4.into()]), "'-007'");
        assert_eq!(s("center", "ab", &[5.into(), "*".into()]), "'**ab*'");
        assert_eq!(s("center", "abc", &[6.into()]), "' abc  '");
        assert_eq!(s("strip", "\u{1c} x\u{a0}", &[]), "'x'");
        assert_eq!(
            s("splitlines", "a\r\nb\rc\u{2028}d\n", &[]),
            "['a', 'b', 'c', 'd']"
        );
        assert_eq!(
            s("splitlines", "a\r\nb", &[true.into()]),
            "['a\\r\\n', 'b']"
        );
        assert_eq!(
            s("title", "they're bill's 2nd", &[]),
            "\"They'Re Bill'S 2Nd\""
        );
        assert_eq!(s("capitalize", "hELLO", &[]), "'Hello'");
        assert_eq!(s("find", "abcabc", &["c".into(), 3.into()]), "5");
        assert_eq!(s("count", "abc", &["".into()]), "4");
        assert_eq!(
            s(
                "endswith",
                "a.json",
                &[Value::from(vec![Value::from(".md"), Value::from(".json")])]
            ),
            "True"
        );
        assert_eq!(s("replace", "ab", &["".into(), "-".into()]), "'-a-b-'");
        assert_eq!(s("expandtabs", "a\tb", &[4.into()]), "'a   b'");
    }

    #[test]
    fn join_requires_strings() {
        let err = join(
            ",",
            Some(&Value::from(vec![Value::from("a"), Value::from(1)])),
            BIG,
        )
        .unwrap_err();
        assert_eq!(
            err.detail(),
            Some("sequence item 1: expected str instance, int found")
        );
    }

    #[test]
    fn results_are_bounded() {
        assert!(replace("aaaa", &["a".into(), "bbbb".into()], 10).is_err());
        assert!(pad("a", "center", &[100.into()], 10).is_err());
    }
}
