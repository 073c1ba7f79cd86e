//! Finding JSON values inside rendered text, and paths inside JSON values.
//!
//! Tool calls are often JSON embedded in markers. A JSON value is recognised by
//! parsing from each `{` or `[`; the parser reports how many bytes it used.

use std::ops::Range;

use serde_json::Value as Json;

/// The JSON value that starts at byte `start`, with its span.
pub fn value_at(s: &str, start: usize) -> Option<(Range<usize>, Json)> {
    let rest = s.get(start..)?;
    if !rest.starts_with(['{', '[']) {
        return None;
    }
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Json>();
    match stream.next() {
        Some(Ok(value)) => Some((start..start + stream.byte_offset(), value)),
        _ => None,
    }
}

/// Every JSON object in `s` (including nested ones), in order of start.
pub fn objects(s: &str) -> Vec<(Range<usize>, Json)> {
    s.char_indices()
        .filter(|(_, c)| *c == '{')
        .filter_map(|(i, _)| value_at(s, i))
        .collect()
}

/// Whether `value` contains the string `needle` as a string or as a key.
pub fn mentions(value: &Json, needle: &str) -> bool {
    match value {
        Json::String(s) => s == needle,
        Json::Array(items) => items.iter().any(|v| mentions(v, needle)),
        Json::Object(map) => map.iter().any(|(k, v)| k == needle || mentions(v, needle)),
        _ => false,
    }
}

/// Key path to the first value satisfying `pred` (depth-first, in key order).
pub fn path_to(value: &Json, pred: &dyn Fn(&Json) -> bool) -> Option<Vec<String>> {
    if pred(value) {
        return Some(Vec::new());
    }
    children(value)?.into_iter().find_map(|(key, child)| {
        path_to(child, pred).map(|mut rest| {
            rest.insert(0, key);
            rest
        })
    })
}

/// Every scalar (not an object or a list) below `value` with its key path,
/// in the order the text has them; list items are keyed by index.
pub fn leaves(value: &Json) -> Vec<(Vec<String>, Json)> {
    let Some(children) = children(value) else {
        return vec![(Vec::new(), value.clone())];
    };
    let mut out = Vec::new();
    for (key, child) in children {
        for (mut path, leaf) in leaves(child) {
            path.insert(0, key.clone());
            out.push((path, leaf));
        }
    }
    out
}

/// The members of an object or the items of a list (keyed by index), in
/// order; `None` for a scalar.
fn children(value: &Json) -> Option<Vec<(String, &Json)>> {
    match value {
        Json::Object(map) => Some(map.iter().map(|(k, v)| (k.clone(), v)).collect()),
        Json::Array(items) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
        ),
        _ => None,
    }
}

/// The value at key path `path` (list items keyed by index).
pub fn at<'v>(value: &'v Json, path: &[String]) -> Option<&'v Json> {
    path.iter().try_fold(value, |v, key| match v {
        Json::Array(items) => items.get(key.parse::<usize>().ok()?),
        _ => v.get(key),
    })
}

/// Key path to the first scalar (string or number) whose own key satisfies
/// `pred`, searching objects depth-first in key order.
pub fn scalar_key_path(value: &Json, pred: &dyn Fn(&str) -> bool) -> Option<Vec<String>> {
    let Json::Object(map) = value else {
        return None;
    };
    let direct = map
        .iter()
        .find(|(k, v)| pred(k) && (v.is_string() || v.is_number()));
    if let Some((key, _)) = direct {
        return Some(vec![key.clone()]);
    }
    map.iter().find_map(|(key, child)| {
        scalar_key_path(child, pred).map(|mut rest| {
            rest.insert(0, key.clone());
            rest
        })
    })
}

/// Whether the member at key path `a` is written before the one at `b`
/// (keys in the order the text has them): compared at the first level
/// where the paths part.
pub fn written_before(value: &Json, a: &[String], b: &[String]) -> bool {
    let shared = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let mut object = value;
    for key in &a[..shared] {
        object = match object.get(key) {
            Some(v) => v,
            None => return false,
        };
    }
    let Json::Object(map) = object else {
        return false;
    };
    match (a.get(shared), b.get(shared)) {
        (Some(x), Some(y)) => {
            let index = |key: &String| map.keys().position(|k| k == key);
            matches!((index(x), index(y)), (Some(i), Some(j)) if i < j)
        }
        _ => false,
    }
}

/// The end of the JSON object that starts at or after `from`, with its start.
pub fn next_object(s: &str, from: usize) -> Option<(Range<usize>, Json)> {
    s.get(from..)?
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .find_map(|(i, _)| value_at(s, from + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_embedded_objects_and_paths() {
        let s = "[TOOL_CALLS][{\"function\": {\"name\": \"f\"}, \"id\": \"c1\"}]";
        let objs = objects(s);
        assert_eq!(objs.len(), 2);
        assert_eq!(
            &s[objs[0].0.clone()],
            "{\"function\": {\"name\": \"f\"}, \"id\": \"c1\"}"
        );
        let path = path_to(&objs[0].1, &|v| v == "f").unwrap();
        assert_eq!(path, vec!["function", "name"]);
        assert!(mentions(&objs[0].1, "c1"));
        let path = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        assert!(written_before(
            &objs[0].1,
            &path(&["function", "name"]),
            &path(&["id"])
        ));
        assert!(!written_before(
            &objs[0].1,
            &path(&["id"]),
            &path(&["function", "name"])
        ));
    }
}
