//! minijinja's filters that walk a whole sequence, and `for` loops, guarded.
//!
//! A template makes a huge sequence for free: `[0] * 100000000` is a lazy
//! repetition that costs nothing until walked, and a 99 MB string splits into
//! 49 million pieces. minijinja's builtin `sort`, `list`, `reverse`, `batch`,
//! `sum`, ... walk or copy their whole input inside one VM instruction, which
//! fuel cannot interrupt: the process ran for minutes or died at 2-3 GB.
//! Here each of them first checks its input ([`walkable`]): at most
//! [`MAX_WALKED_ITEMS`] items, a string within the per-value bound, and the
//! render's CPU budget not spent ([`super::cpu_budget::tick`]); then runs
//! minijinja's own code unchanged. Our own filters (`map`, `select`, `join`,
//! ...) and methods (`split`, ...) call the same check.
//!
//! [`loop_items`] is the function the source rewrite wraps every `for`
//! loop's iterable in: it yields the same items, and checks the CPU budget
//! every few, so a loop whose body spends time inside minijinja's own
//! operators (`x in list`, `a ~ b`) ends when the budget does.
//!
//! Invariants: a guarded filter returns what minijinja's returns whenever the
//! check passes; a refused input is a [`super::limits::LIMIT`] error naming
//! the filter; `loop_items` yields exactly the items the loop would have
//! walked, and values it cannot walk pass through unchanged so minijinja
//! reports them as before.

use std::sync::Arc;

use minijinja::filters as builtin;
use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Value, ValueKind};
use minijinja::{Environment, Error, State};

use super::cpu_budget;
use super::limits;

/// Most items one filter, method or `for` loop of ours walks or builds at
/// once: 24 MB of minijinja values; a conversation or tool list a million
/// items long is not a chat.
pub(crate) const MAX_WALKED_ITEMS: usize = 1 << 20;

/// Name of the function the rewritten `for` loops iterate through.
pub(crate) const LOOP_FUNCTION: &str = "__chat_autoparser_loop";

/// Checks a value a filter or method named `what` is about to walk: the
/// budget, its item count, and a string's size against `limit`.
pub(crate) fn walkable(what: &str, value: &Value, limit: usize) -> Result<(), Error> {
    cpu_budget::tick()?;
    match value.as_str() {
        Some(s) if s.len() > limit => Err(limits::too_large(what, s.len(), limit)),
        Some(_) => Ok(()),
        None => items_within(what, value.len().unwrap_or(0)),
    }
}

/// Fails when `count` items are more than a filter or method may walk.
pub(crate) fn items_within(what: &str, count: usize) -> Result<(), Error> {
    match count > MAX_WALKED_ITEMS {
        true => Err(limits::too_large(what, count, MAX_WALKED_ITEMS)),
        false => Ok(()),
    }
}

/// Replaces minijinja's walking builtins with guarded ones and installs
/// [`LOOP_FUNCTION`]; strings are bounded to `limit` bytes.
pub(crate) fn register(env: &mut Environment<'static>, limit: usize) {
    let guard = move |what: &str, value: &Value| walkable(what, value, limit);
    env.add_filter("sort", move |state: &State, v: Value, kwargs: Kwargs| {
        guard("sort input", &v)?;
        builtin::sort(state, v, kwargs)
    });
    env.add_filter("reverse", move |v: Value| {
        guard("reverse input", &v)?;
        builtin::reverse(&v)
    });
    env.add_filter("list", move |state: &State, v: Value| {
        guard("list input", &v)?;
        builtin::list(state, v)
    });
    env.add_filter(
        "batch",
        move |state: &State, v: Value, count: usize, fill: Option<Value>| {
            guard("batch input", &v)?;
            builtin::batch(state, v, count, fill)
        },
    );
    env.add_filter(
        "slice",
        move |state: &State, v: Value, count: usize, fill: Option<Value>| {
            guard("slice input", &v)?;
            builtin::slice(state, v, count, fill)
        },
    );
    env.add_filter(
        "sum",
        move |state: &State, v: Value, attr: Option<&str>, start: Option<Value>, kw: Kwargs| {
            guard("sum input", &v)?;
            builtin::sum(state, v, attr, start, kw)
        },
    );
    env.add_filter("min", move |state: &State, v: Value, kwargs: Kwargs| {
        guard("min input", &v)?;
        builtin::min(state, v, kwargs)
    });
    env.add_filter("max", move |state: &State, v: Value, kwargs: Kwargs| {
        guard("max input", &v)?;
        builtin::max(state, v, kwargs)
    });
    env.add_filter("first", move |v: Value| {
        guard("first input", &v)?;
        builtin::first(&v)
    });
    env.add_filter("last", move |v: Value| {
        guard("last input", &v)?;
        builtin::last(v)
    });
    env.add_filter(
        "groupby",
        move |v: Value, attr: Option<&str>, kwargs: Kwargs| {
            guard("groupby input", &v)?;
            builtin::groupby(v, attr, kwargs)
        },
    );
    env.add_function(LOOP_FUNCTION, loop_items);
}

/// The function behind [`LOOP_FUNCTION`]: checks the CPU budget, then
/// gives `value` back as it is when it has fewer than [`TICK_EVERY`] items
/// (the check at the loop's start covers them: a chat's loops are short), or
/// not a container; else as an iterable of the same items that checks the
/// budget every [`TICK_EVERY`] items.
pub(crate) fn loop_items(value: Value) -> Result<Value, Error> {
    cpu_budget::tick()?;
    let short = value.len().is_some_and(|n| n < TICK_EVERY as usize);
    match value.kind() {
        _ if short => Ok(value),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable | ValueKind::String => {
            Ok(Value::from_object(Ticking(value)))
        }
        _ => Ok(value),
    }
}

/// How many loop items pass between two checks of the budget.
const TICK_EVERY: u32 = 16;

/// A loop's iterable that checks the budget every [`TICK_EVERY`] items.
#[derive(Debug)]
struct Ticking(Value);

impl Object for Ticking {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Iterable
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let Ok(items) = self.0.try_iter() else {
            return Enumerator::Empty;
        };
        // An item that is an error ends the render with it (minijinja checks
        // every loop item), which is how a spent budget stops the loop. The
        // clock is read every few items: an iteration costs a few hundred
        // nanoseconds, the read a few dozen.
        let mut count = 0u32;
        Enumerator::Iter(Box::new(items.map(move |item| {
            count = count.wrapping_add(1);
            if count % TICK_EVERY != 0 {
                return item;
            }
            match cpu_budget::tick() {
                Ok(()) => item,
                Err(error) => Value::from(error),
            }
        })))
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        self.0.len()
    }
}
