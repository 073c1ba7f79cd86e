//! jinja2's `namespace()`, reimplemented so that what it stores is bounded.
//!
//! A namespace is the only state a jinja2 template can carry from one loop turn
//! to the next, so it is where runaway growth (`ns.s = ns.s ~ ns.s` in a loop)
//! accumulates. minijinja's own namespace accepts assignments only through its
//! `{% set ns.attr = ... %}` instruction, with no hook for a size check, so the
//! source rewrite in [`super::rewrite`] turns those statements into calls of
//! [`SET_METHOD`] on this object, which checks each value against the bound.
//!
//! Python behaviour kept: `namespace(mapping, **kwargs)` as `dict(...)`, missing
//! attributes are undefined, assigning to anything but a namespace fails,
//! `str(ns)` is `<Namespace {...}>`, a namespace is always true and neither a
//! mapping nor iterable. Lists stored in a namespace are [`pylist::PyList`]s,
//! so `ns.ids.append(x)` works as it does in llama.cpp.

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

use super::limits;
use super::pylist;
use super::pyrepr;
use super::pyvalue;
use super::storage::{Namespace, OrderedMap};

/// The method the rewritten `{% set ns.attr = value %}` calls:
/// `ns.__setattr__('attr', value)`.
pub(crate) const SET_METHOD: &str = "__setattr__";

/// The `namespace(...)` global: positional mappings or pair lists, then keywords.
pub(crate) fn namespace(args: Rest<Value>, kwargs: Kwargs, limit: usize) -> Result<Value, Error> {
    let mut attrs = OrderedMap::default();
    for arg in args.iter().chain(std::iter::once(&Value::from(kwargs))) {
        for (key, value) in pairs(arg)? {
            limits::keep("a namespace attribute", &value, limit)?;
            attrs.insert(key, pylist::mutable(value, limit));
        }
    }
    Ok(Value::from_object(Namespace::new(attrs, limit)))
}

/// The `(key, value)` pairs of a `dict(...)` argument.
fn pairs(arg: &Value) -> Result<Vec<(String, Value)>, Error> {
    let mut out = Vec::new();
    if arg.kind() == ValueKind::Map {
        for key in arg.try_iter()? {
            let value = arg.get_item(&key)?;
            out.push((key_text(&key)?, value));
        }
        return Ok(out);
    }
    for pair in arg.try_iter()?.checked() {
        let items: Vec<Value> = pair?.try_iter()?.collect();
        let [key, value] = <[Value; 2]>::try_from(items).map_err(|_| {
            Error::new(
                ErrorKind::InvalidOperation,
                "dictionary update sequence element has wrong length",
            )
        })?;
        out.push((key_text(&key)?, value));
    }
    Ok(out)
}

fn key_text(key: &Value) -> Result<String, Error> {
    key.as_str().map(str::to_owned).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            "namespace keys must be strings",
        )
    })
}

/// Namespaces printed inside one another, at most.
const MAX_PRINT_NESTING: usize = 32;

thread_local! {
    /// The namespaces being printed on this thread, innermost last.
    static PRINTING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Namespace {
    fn set(&self, args: &[Value]) -> Result<Value, Error> {
        let (name, value) = match args {
            [name, value] => (name, value),
            _ => return Err(Error::from(ErrorKind::InvalidOperation)),
        };
        let name = key_text(name)?;
        limits::keep(
            &format!("namespace attribute '{name}'"),
            value,
            self.limit(),
        )?;
        let mut attrs = self.lock();
        let old = attrs.get(&name);
        attrs.insert(name, pylist::mutable(value.clone(), self.limit()));
        drop(attrs);
        // The value replaced is no longer kept by the namespace (weighed
        // unlocked: it may hold this namespace).
        if let Some(old) = old {
            limits::credit(limits::weight(&old));
        }
        Ok(Value::from(""))
    }
}

impl Object for Namespace {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.lock().get(key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::NonEnumerable
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        if method == SET_METHOD {
            self.set(args)
        } else {
            Err(Error::from(ErrorKind::UnknownMethod))
        }
    }

    /// Python's `repr`; a namespace inside itself prints as `<Namespace {...}>`,
    /// as Python prints a dict inside itself, and nesting is cut at
    /// [`MAX_PRINT_NESTING`], so a cyclic or deep value cannot recurse without end.
    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = Arc::as_ptr(self) as usize;
        let seen = PRINTING.with(|p| {
            let p = p.borrow();
            p.contains(&id) || p.len() >= MAX_PRINT_NESTING
        });
        if seen {
            return f.write_str("<Namespace {...}>");
        }
        PRINTING.with(|p| p.borrow_mut().push(id));
        let attrs = pyvalue::dict(self.lock().clone());
        let text = pyrepr::display_repr(&attrs);
        PRINTING.with(|p| p.borrow_mut().pop());
        write!(f, "<Namespace {text}>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_attributes_in_order_and_prints_like_python() {
        let kwargs = Kwargs::from_iter([("b", Value::from(1)), ("a", Value::from("x"))]);
        let ns = namespace(Rest(vec![]), kwargs, 100).unwrap();
        assert_eq!(ns.to_string(), "<Namespace {'b': 1, 'a': 'x'}>");
        assert!(ns.is_true());
        assert!(ns.try_iter().is_err());
    }

    #[test]
    fn refuses_values_over_the_limit() {
        let ns = namespace(
            Rest(vec![]),
            Kwargs::from_iter(std::iter::empty::<(&str, Value)>()),
            4,
        )
        .unwrap();
        let object = ns.downcast_object_ref::<Namespace>().unwrap();
        assert!(object.set(&[Value::from("s"), Value::from("abcd")]).is_ok());
        let err = object
            .set(&[Value::from("s"), Value::from("abcde")])
            .unwrap_err();
        assert!(limits::is_limit(err.detail().unwrap()));
    }
}
