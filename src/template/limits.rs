//! Resource bounds for rendering, and the output buffer that enforces the size bound.
//!
//! A chat template is code from the internet. Fuel bounds the number of VM
//! instructions (so infinite-looking loops end), the recursion limit bounds macro
//! recursion, and [`BoundedBuffer`] stops the render once the output is too large.
//! Fuel counts instructions, not bytes, so values that grow without output
//! (a string doubled in a namespace on every loop turn) are bounded where our
//! own code creates or stores them: namespace assignments, our filters and
//! methods, and Python-style printing all refuse values larger than
//! `max_output_bytes` (see [`too_large`]).
//!
//! Values made inside minijinja's own operators (`~`, `+`, macro calls) pass
//! no code of ours, so they are bounded where they are kept: the source
//! rewrite makes every `{% set %}` and every macro's arguments pass through
//! [`BOUND_FUNCTION`], and that, namespace and list stores all count what they
//! keep against the render's [`Limits::max_total_bytes`] (the [`charge`]
//! meter), besides the per-value bound. Fuel is also shared by every render
//! of one analysis or lint run ([`RunFuel`]), so a run costs at most one
//! render's fuel, not one render's fuel per probe.
//!
//! Invariant: every bound is reported as an error whose detail starts with
//! [`LIMIT`], which the public error conversion turns into `ErrorKind::Limit`.

use std::cell::Cell;
use std::io;
use std::time::Duration;

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

pub(crate) use super::limit_error::{is_limit, too_large, LIMIT};

/// Bounds applied to every render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Maximum VM instructions per render (minijinja fuel), and per
    /// analysis, lint or capability-probe run over all its renders.
    pub fuel: u64,
    /// Maximum nesting of macro calls and includes.
    pub recursion: usize,
    /// Maximum rendered output in bytes, and maximum size of any one value.
    pub max_output_bytes: usize,
    /// Maximum bytes kept by one render, all values together: everything
    /// assigned with `set`, passed to a macro, or stored in a namespace or
    /// list, counted each time it is kept (strings by length, containers by
    /// their items).
    pub max_total_bytes: usize,
    /// CPU time one render may spend, and one analysis, lint or
    /// capability-probe run over all its renders (fuel counts instructions,
    /// and one instruction can cost time in proportion to its operands; see
    /// `cpu_budget`).
    pub max_cpu_time: Duration,
}

setters!(Limits {
    /// Sets the fuel (VM instructions) per render and per analysis run.
    with_fuel => fuel: u64,
    /// Sets the maximum nesting of macro calls and includes.
    with_recursion => recursion: usize,
    /// Sets the maximum rendered output and value size in bytes.
    with_max_output_bytes => max_output_bytes: usize,
    /// Sets the maximum bytes kept by one render.
    with_max_total_bytes => max_total_bytes: usize,
    /// Sets the CPU time per render and per analysis run.
    with_max_cpu_time => max_cpu_time: Duration,
});

impl Default for Limits {
    /// The heaviest whole analysis of the corpus uses 53k instructions, 1%
    /// of the fuel; the hungriest corpus template renders some 1400 turns
    /// of 2 KB within it (docs/reliability.md). A runaway template hits one
    /// of these bounds in well under a second; the CPU-time bound is for
    /// instructions that are each expensive, far above what any real
    /// render spends (a few milliseconds).
    fn default() -> Self {
        Limits {
            fuel: 5_000_000,
            recursion: 200,
            max_output_bytes: 16 << 20,
            max_total_bytes: 64 << 20,
            max_cpu_time: DEFAULT_CPU_TIME,
        }
    }
}

/// The default CPU time per render or run: 500 ms as built for use, ten times
/// that in a debug build of this crate, whose VM runs about ten times slower.
/// A render that spends all its fuel takes 100-250 ms of CPU in a release
/// build on the shared test machine, so fuel stays the bound that stops a
/// runaway stream of cheap instructions, and this one stops expensive ones.
const DEFAULT_CPU_TIME: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(5000)
} else {
    Duration::from_millis(500)
};

/// Name of the function the rewritten `{% set %}` statements and macro
/// bodies call with the values they keep (see [`bound`]).
pub(crate) const BOUND_FUNCTION: &str = "__chat_autoparser_bound";
/// Name of the function a rewritten macro body ends with: its arguments are
/// no longer kept (see [`release`]).
pub(crate) const RELEASE_FUNCTION: &str = "__chat_autoparser_release";

/// Containers nested deeper than this are refused when kept (dropping or
/// comparing a value recurses once per level), refused by `tojson` and
/// printed as `...`: the one depth bound of template values.
pub(crate) const MAX_VALUE_DEPTH: usize = 256;

/// Bytes counted for a value that is neither a string nor a container (and
/// for each item slot of a container).
const SLOT_BYTES: usize = 16;

// The meter lives in a thread-local because minijinja hands our functions a
// shared `&State` they cannot store anything in, and a render runs entirely
// on the thread that started it.
thread_local! {
    static METER: Cell<Option<Meter>> = const { Cell::new(None) };
    static RUN_FUEL: Cell<Option<u64>> = const { Cell::new(None) };
}

#[derive(Debug, Clone, Copy)]
struct Meter {
    used: usize,
    limit: usize,
    /// The fuel the render had used when our code last ran (see [`note_fuel`]).
    fuel_seen: u64,
}

/// Counts the bytes one render keeps, from [`meter`] until dropped.
pub(crate) struct MeterGuard {
    previous: Option<Meter>,
}

/// Starts counting a render's kept bytes against `limit`.
pub(crate) fn meter(limit: usize) -> MeterGuard {
    MeterGuard {
        previous: METER.with(|m| {
            m.replace(Some(Meter {
                used: 0,
                limit,
                fuel_seen: 0,
            }))
        }),
    }
}

impl Drop for MeterGuard {
    fn drop(&mut self) {
        METER.with(|m| m.set(self.previous));
    }
}

impl MeterGuard {
    /// The fuel the render had used when our code last saw it: what a
    /// failed render is known to have cost.
    pub(crate) fn fuel_seen(&self) -> u64 {
        METER.with(|m| m.get().map_or(0, |m| m.fuel_seen))
    }
}

/// Records how much fuel the render has used so far (hooks that get the
/// render's state call this; a failed render reports no fuel of its own).
pub(crate) fn note_fuel(state: &minijinja::State<'_, '_>) {
    if let Some((used, _)) = state.fuel_levels() {
        METER.with(|m| {
            if let Some(mut meter) = m.get() {
                meter.fuel_seen = used;
                m.set(Some(meter));
            }
        });
    }
}

/// Counts `bytes` kept as `what`; fails once the render's total is over its limit.
pub(crate) fn charge(what: &str, bytes: usize) -> Result<(), Error> {
    METER.with(|m| match m.get() {
        Some(mut meter) => {
            meter.used = meter.used.saturating_add(bytes);
            m.set(Some(meter));
            match meter.used > meter.limit {
                true => Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("{LIMIT}{what}: the render keeps over {} bytes in all, over the limit of {}", meter.used, meter.limit),
                )),
                false => Ok(()),
            }
        }
        None => Ok(()),
    })
}

/// Stops counting `bytes` that are no longer kept.
pub(crate) fn credit(bytes: usize) {
    METER.with(|m| {
        if let Some(mut meter) = m.get() {
            meter.used = meter.used.saturating_sub(bytes);
            m.set(Some(meter));
        }
    });
}

/// What keeping `value` costs: a string's bytes, a container's items (their
/// bytes when they are strings) plus a slot each; nested containers count
/// their own items when they were kept.
pub(crate) fn weight(value: &Value) -> usize {
    if let Some(s) = value.as_str() {
        return s.len();
    }
    if !is_container(value) {
        return SLOT_BYTES;
    }
    let Ok(items) = value.try_iter() else {
        return SLOT_BYTES;
    };
    let mut total = SLOT_BYTES;
    // Past this many items the rest count as slots: a weight is taken on
    // every `set`, and must not cost time in proportion to a huge list.
    let counted = 4096;
    if value.len().is_some_and(|n| n > counted) {
        total = total.saturating_add(SLOT_BYTES.saturating_mul(value.len().unwrap_or(0)));
    }
    for item in items.take(counted) {
        let item = match value.kind() {
            ValueKind::Map => value.get_item(&item).unwrap_or_default(),
            _ => item,
        };
        total = total.saturating_add(SLOT_BYTES + item.as_str().map_or(0, str::len));
    }
    total
}

/// Whether `value` holds items that can be walked without changing it:
/// sequences, maps, and sized iterables (`list + list` on a namespace's
/// list is one). A generator (`map(...)` result) is not: walking it would
/// use it up.
fn is_container(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Seq | ValueKind::Map => true,
        ValueKind::Iterable => value.len().is_some(),
        _ => false,
    }
}

/// Whether `value` nests containers deeper than `max`. Walks at most
/// `max` levels and a fixed number of items, so it stays cheap on wide values.
pub(crate) fn too_deep(value: &Value, max: usize) -> bool {
    let mut budget = 4096usize;
    let mut stack: Vec<(Value, usize)> = vec![(value.clone(), 0)];
    while let Some((v, depth)) = stack.pop() {
        let namespace = v
            .downcast_object_ref::<super::storage::Namespace>()
            .map(|n| n.values());
        if namespace.is_none() && (!is_container(&v) || v.as_str().is_some()) {
            continue;
        }
        if depth >= max {
            return true;
        }
        if let Some(values) = namespace {
            budget = budget.saturating_sub(values.len());
            stack.extend(values.into_iter().map(|item| (item, depth + 1)));
            continue;
        }
        let Ok(items) = v.try_iter() else { continue };
        for item in items {
            budget = match budget.checked_sub(1) {
                Some(b) => b,
                None => return false,
            };
            let item = match v.kind() {
                ValueKind::Map => v.get_item(&item).unwrap_or_default(),
                _ => item,
            };
            stack.push((item, depth + 1));
        }
    }
    false
}

/// Checks a value about to be kept as `what`: its size, its depth, and the
/// render's total.
pub(crate) fn keep(what: &str, value: &Value, limit: usize) -> Result<(), Error> {
    check(what, value, limit)?;
    if too_deep(value, MAX_VALUE_DEPTH) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{LIMIT}{what} nests containers deeper than {MAX_VALUE_DEPTH} levels"),
        ));
    }
    charge(what, weight(value))
}

/// The function behind [`BOUND_FUNCTION`]: keeps each argument (see [`keep`])
/// and returns the first, so `set x = bound((expr))` assigns `expr` itself.
pub(crate) fn bound(
    state: &minijinja::State<'_, '_>,
    args: &[Value],
    limit: usize,
) -> Result<Value, Error> {
    note_fuel(state);
    super::cpu_budget::tick()?;
    for value in args {
        keep("a value set or passed to a macro", value, limit)?;
    }
    Ok(args.first().cloned().unwrap_or_default())
}

/// The function behind [`RELEASE_FUNCTION`]: a macro's arguments are freed.
pub(crate) fn release(args: &[Value]) -> Value {
    for value in args {
        credit(weight(value));
    }
    Value::from("")
}

/// The fuel left to the analysis or lint run in progress on this thread,
/// shared by all its renders, and the run's CPU budget (see
/// [`super::cpu_budget`]), shared the same way.
pub(crate) struct RunFuel {
    previous: Option<Option<u64>>,
    _budget: super::cpu_budget::BudgetGuard,
}

impl RunFuel {
    /// Starts a run with one render's fuel and CPU time for all its renders;
    /// a run started inside another (lint probing capabilities) shares the
    /// outer run's.
    pub(crate) fn start(limits: &Limits) -> RunFuel {
        let budget = super::cpu_budget::start(limits.max_cpu_time);
        RUN_FUEL.with(|r| match r.get() {
            Some(_) => RunFuel {
                previous: None,
                _budget: budget,
            },
            None => RunFuel {
                previous: Some(r.replace(Some(limits.fuel))),
                _budget: budget,
            },
        })
    }

    /// Starts a run with fuel and CPU time of its own, even inside another
    /// run, whose fuel is neither spent nor read until this one ends (work
    /// the caller's budget must not decide, such as the fallback dialects
    /// analysed once per process).
    pub(crate) fn apart(limits: &Limits) -> RunFuel {
        RunFuel {
            previous: Some(RUN_FUEL.with(|r| r.replace(Some(limits.fuel)))),
            _budget: super::cpu_budget::apart(limits.max_cpu_time),
        }
    }

    /// The fuel left to the run in progress, if one is.
    pub(crate) fn left() -> Option<u64> {
        RUN_FUEL.with(Cell::get)
    }

    /// Takes `used` fuel from the run in progress, if any.
    pub(crate) fn spend(used: u64) {
        RUN_FUEL.with(|r| {
            if let Some(left) = r.get() {
                r.set(Some(left.saturating_sub(used)));
            }
        });
    }
}

impl Drop for RunFuel {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            RUN_FUEL.with(|r| r.set(previous));
        }
    }
}

/// Size of a value for the bounds: bytes of a string, items of a container.
/// Containers count their length only: their items were bounded when stored.
pub(crate) fn size_of(value: &Value) -> usize {
    match value.as_str() {
        Some(s) => s.len(),
        None => value.len().unwrap_or(0),
    }
}

/// Fails when `value` is larger than `limit`.
pub(crate) fn check(what: &str, value: &Value, limit: usize) -> Result<(), Error> {
    match size_of(value) {
        size if size > limit => Err(too_large(what, size, limit)),
        _ => Ok(()),
    }
}

/// An output buffer that refuses to grow past a byte limit.
pub(crate) struct BoundedBuffer {
    bytes: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl BoundedBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        BoundedBuffer {
            bytes: Vec::new(),
            limit,
            overflowed: false,
        }
    }

    /// Whether a write was refused because of the limit.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(crate) fn into_string(self) -> String {
        // Only `&str` output is ever written by the template engine.
        String::from_utf8(self.bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

impl io::Write for BoundedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            self.overflowed = true;
            return Err(io::Error::other("output limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
