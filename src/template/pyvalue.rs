//! Template values that behave like the Python objects jinja2 sees.
//!
//! transformers hands jinja2 plain Python data: `dict`, `list`, `str`, `None`.
//! minijinja's native values differ where prompts can tell: `None` iterates as
//! empty (Python raises), containers stringify as JSON-ish text under `~`, and a
//! dict attribute such as `d.items` is the key, not the bound method. The
//! caller's JSON is therefore converted into the objects below, whose behaviour
//! follows Python:
//!
//! - [`none()`]: Python's `None`: falsy, prints `None`, not iterable;
//! - `PyDict` / `PyList`: insertion-ordered containers that print as Python
//!   `repr` (also under `~` and `join`), and whose attributes are Python's
//!   methods before their keys (`d.items` is a method even when `d` has an
//!   `items` key, as in jinja2's `getattr`-then-`getitem` lookup);
//! - [`generator`]: what jinja2's `map`, `select`, `items`, ... return: a
//!   one-shot iterator that is always true and has no length.
//!
//! Invariants: conversion preserves key order; every object prints exactly as
//! Python's `str()` would, except generators and bound methods, whose Python
//! text contains a memory address.

use std::fmt;
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Error, ErrorKind, State};
use serde_json::Value as Json;

pub(crate) use super::pynone::{is_none, none};
use super::pyrepr;
pub(crate) use super::storage::OrderedMap;

/// A Python tuple.
pub(crate) fn tuple(items: Vec<Value>) -> Value {
    Value::from(minijinja::value::Tuple::from(items))
}

// ---------------------------------------------------------------------------
// JSON conversion

/// Converts the caller's JSON into template values with Python behaviour.
pub(crate) fn from_json(json: &Json) -> Value {
    match json {
        Json::Null => none(),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => number(n),
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from_object(PyList {
            items: items.iter().map(from_json).collect(),
        }),
        Json::Object(map) => dict(map.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
    }
}

/// Converts a JSON array given as a slice (no copy of the JSON needed).
pub(crate) fn from_json_items(items: &[Json]) -> Value {
    Value::from_object(PyList {
        items: items.iter().map(from_json).collect(),
    })
}

/// JSON numbers keep Python's int/float distinction (`1` vs `1.0`).
fn number(n: &serde_json::Number) -> Value {
    if let Some(i) = n.as_i64() {
        Value::from(i)
    } else if let Some(u) = n.as_u64() {
        Value::from(u)
    } else {
        Value::from(n.as_f64().unwrap_or(f64::NAN))
    }
}

// ---------------------------------------------------------------------------
// dict

/// Names that `getattr(dict, name)` finds before any key.
const DICT_METHODS: &[&str] = &[
    "clear",
    "copy",
    "fromkeys",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];

/// A Python `dict` with string keys, in insertion order.
#[derive(Debug)]
pub(crate) struct PyDict(OrderedMap);

/// A dict value holding `map`.
pub(crate) fn dict(map: OrderedMap) -> Value {
    Value::from_object(PyDict(map))
}

impl Object for PyDict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    /// `d[key]` and `key in d`: the item only. (jinja2's `d['get']` on a dict
    /// without that key would find the method; no template relies on that, and
    /// `in` must not.)
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.0.get(key.as_str()?)
    }

    /// `d.key`: jinja2 tries `getattr` first, so dict methods shadow keys.
    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        bound_method(self, key).or_else(|| self.0.get(key))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::KeyValueIter(Box::new(self.0.pairs().into_iter()))
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.0.len())
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&pyrepr::display_repr(&Value::from_dyn_object(self.clone())))
    }
}

fn bound_method(dict: &Arc<PyDict>, name: &str) -> Option<Value> {
    DICT_METHODS.contains(&name).then(|| {
        Value::from_object(BoundMethod {
            receiver: Value::from_dyn_object(dict.clone()),
            name: name.into(),
        })
    })
}

/// `d.items` without a call: a callable that forwards to the method.
#[derive(Debug)]
pub(crate) struct BoundMethod {
    receiver: Value,
    name: String,
}

impl Object for BoundMethod {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn call(self: &Arc<Self>, state: &mut State<'_, '_>, args: &[Value]) -> Result<Value, Error> {
        self.receiver.call_method(state, &self.name, args)
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<built-in method {} of dict object>", self.name)
    }
}

// ---------------------------------------------------------------------------
// list

/// A Python `list`.
#[derive(Debug)]
pub(crate) struct PyList {
    items: Vec<Value>,
}

impl Object for PyList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let index = usize::try_from(key.as_i64()?).ok()?;
        self.items.get(index).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.items.len())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.items.len())
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&pyrepr::display_repr(&Value::from_dyn_object(self.clone())))
    }
}

// ---------------------------------------------------------------------------
// generators

/// A Python generator: iterable once, always true, no length.
pub(crate) struct Generator {
    items: Mutex<Option<Vec<Value>>>,
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<generator object>")
    }
}

/// Wraps already computed items as a generator.
pub(crate) fn generator(items: Vec<Value>) -> Value {
    Value::from_object(Generator {
        items: Mutex::new(Some(items)),
    })
}

/// Whether `value` is one of our generators.
pub(crate) fn is_generator(value: &Value) -> bool {
    value.downcast_object_ref::<Generator>().is_some()
}

impl Object for Generator {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Iterable
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        // Poisoning cannot happen: nothing panics while the lock is held.
        match self.items.lock().map(|mut items| items.take()) {
            Ok(Some(items)) => Enumerator::Values(items),
            _ => Enumerator::Empty,
        }
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        None
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<generator object>")
    }
}

/// The error Python raises for `len()` of something without a length.
pub(crate) fn no_len(value: &Value) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("object of type '{}' has no len()", type_name(value)),
    )
}

/// Python's `type(value).__name__` for the values templates meet.
pub(crate) fn type_name(value: &Value) -> &'static str {
    use minijinja::value::ValueKind as K;
    if is_none(value) {
        return "NoneType";
    }
    if is_generator(value) {
        return "generator";
    }
    match value.kind() {
        K::Undefined => "Undefined",
        K::Bool => "bool",
        K::Number if value.is_integer() => "int",
        K::Number => "float",
        K::String => "str",
        K::Seq if value.is_tuple() => "tuple",
        K::Seq => "list",
        K::Map => "dict",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_converts_to_python_shaped_values() {
        let v = from_json(&json!({"b": [1, 2.0, null, true], "a": "x", "items": 3}));
        assert_eq!(
            v.to_string(),
            "{'b': [1, 2.0, None, True], 'a': 'x', 'items': 3}"
        );
        assert!(is_none(
            &v.get_item(&Value::from("b"))
                .unwrap()
                .get_item(&Value::from(2))
                .unwrap()
        ));
        // Item access finds the key, attribute access the method.
        assert_eq!(v.get_item(&Value::from("items")).unwrap().as_i64(), Some(3));
        assert!(v.get_item(&Value::from("keys")).unwrap().is_undefined());
        assert_eq!(
            v.get_attr("items").unwrap().to_string(),
            "<built-in method items of dict object>"
        );
        assert!(none()
            .try_iter()
            .unwrap()
            .checked()
            .next()
            .unwrap()
            .is_err());
        assert!(!none().is_true());
    }

    #[test]
    fn generators_are_one_shot_and_true() {
        let g = generator(vec![Value::from(1), Value::from(2)]);
        assert!(g.is_true());
        assert_eq!(g.len(), None);
        assert_eq!(g.try_iter().unwrap().count(), 2);
        assert_eq!(g.try_iter().unwrap().count(), 0);
    }
}
