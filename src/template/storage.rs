//! The storage behind the Python containers the renderer makes:
//! insertion-ordered string-keyed maps (dicts and namespaces) and a
//! namespace's state.
//!
//! It sits below the values' behaviour (`pyvalue`, `namespace`) and below
//! the render budget (`limits`), whose depth walk enters namespaces here:
//! the budget must see inside a namespace, and a namespace checks what it
//! stores against the budget, so the state both read lives under both.
//!
//! Invariants: a replaced key keeps its position; a lock is never held
//! across a call out of this module.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use minijinja::Value;

/// String-keyed values in insertion order with O(1) lookup: the storage of
/// Python dicts and of namespaces.
#[derive(Debug, Default, Clone)]
pub(crate) struct OrderedMap {
    entries: Vec<(String, Value)>,
    index: HashMap<String, usize>,
}

impl OrderedMap {
    /// Inserts or replaces; a replaced key keeps its position, as in Python.
    pub(crate) fn insert(&mut self, key: String, value: Value) {
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        self.index.get(key).map(|&i| self.entries[i].1.clone())
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// `(key, value)` pairs in order.
    pub(crate) fn pairs(&self) -> Vec<(Value, Value)> {
        self.entries
            .iter()
            .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
            .collect()
    }
}

impl FromIterator<(String, Value)> for OrderedMap {
    /// Repeated keys keep the last value, as `json.loads` and `dict()` do.
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        let mut map = OrderedMap::default();
        for (key, value) in iter {
            map.insert(key, value);
        }
        map
    }
}

/// The storage of jinja2's `namespace()`: attribute values bounded by
/// `limit`. Its behaviour (`super::namespace`) checks values against the
/// render's budget; the budget's depth walk (`super::limits`) enters it here,
/// below both.
pub(crate) struct Namespace {
    attrs: Mutex<OrderedMap>,
    limit: usize,
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Namespace")
    }
}

impl Namespace {
    pub(crate) fn new(attrs: OrderedMap, limit: usize) -> Namespace {
        Namespace {
            attrs: Mutex::new(attrs),
            limit,
        }
    }

    /// The bound on each attribute value, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The attribute values, for walks over nested values (see `limits::too_deep`).
    pub(crate) fn values(&self) -> Vec<Value> {
        self.lock().pairs().into_iter().map(|(_, v)| v).collect()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, OrderedMap> {
        // A panic never happens while the lock is held, so poisoning is impossible;
        // recover the data anyway rather than propagate a poison panic.
        self.attrs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
