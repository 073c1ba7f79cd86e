//! The CPU time one render, or one run of renders, may spend.
//!
//! Fuel counts VM instructions, but one instruction can cost time in
//! proportion to the size of its operands: `x in list` walks the list,
//! `a ~ b` copies both strings, a filter walks its whole input. A loop of
//! such instructions stays within fuel and still runs for hours. So beside
//! fuel, a render carries a CPU-time budget ([`super::Limits::max_cpu_time`]),
//! and our code checks it ([`tick`]) wherever the template hands control
//! back to us: every loop iteration (the source rewrite wraps each `for`
//! loop's iterable, see [`super::guarded::loop_items`]), every macro call and
//! `set` (the bound function), every printed value and output write, and
//! every filter, method and function of ours. A template cannot repeat
//! anything without passing one of these, so the time between two checks is
//! one straight run of instructions, bounded by the pre-scan's operator count
//! and the value bounds.
//!
//! The budget is CPU time of the rendering thread, not wall time, so a
//! loaded server does not fail renders that merely waited for a core. Reading
//! a thread's CPU clock is a system call, so [`tick`] first compares cheap
//! wall time: a thread cannot use more CPU time than wall time has passed,
//! so the CPU clock is read only once the wall clock says the budget could be
//! spent.
//!
//! Invariants: a run started inside another shares the outer budget (an
//! analysis's probes together spend one budget); the budget in force on a
//! thread is restored when the guard that installed it is dropped; an
//! exceeded budget is a [`super::limit_error::LIMIT`] error.

use std::cell::Cell;
use std::time::{Duration, Instant};

use minijinja::{Error, ErrorKind};

use super::limit_error::LIMIT;

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

#[derive(Debug, Clone, Copy)]
struct Budget {
    /// The thread's CPU clock when the budget started.
    cpu_start: Duration,
    allowed: Duration,
    /// Before this instant the budget cannot be spent (CPU time ≤ wall time).
    next_check: Instant,
}

/// Holds a budget in force on this thread until dropped.
pub(crate) struct BudgetGuard {
    previous: Option<Option<Budget>>,
}

/// Starts a budget of `allowed` CPU time for what runs on this thread until
/// the guard is dropped; inside another budget, shares that one.
pub(crate) fn start(allowed: Duration) -> BudgetGuard {
    BUDGET.with(|b| match b.get() {
        Some(_) => BudgetGuard { previous: None },
        None => BudgetGuard {
            previous: Some(b.replace(Some(Budget::new(allowed)))),
        },
    })
}

/// Starts a budget of its own, even inside another (work the caller's budget
/// must not decide, as [`super::RunFuel::apart`]).
pub(crate) fn apart(allowed: Duration) -> BudgetGuard {
    BudgetGuard {
        previous: Some(BUDGET.with(|b| b.replace(Some(Budget::new(allowed))))),
    }
}

impl Drop for BudgetGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            BUDGET.with(|b| b.set(previous));
        }
    }
}

impl Budget {
    fn new(allowed: Duration) -> Budget {
        Budget {
            cpu_start: thread_cpu_time(),
            allowed,
            next_check: Instant::now() + allowed,
        }
    }
}

/// Fails once the budget in force on this thread is spent.
pub(crate) fn tick() -> Result<(), Error> {
    BUDGET.with(|b| {
        let Some(mut budget) = b.get() else {
            return Ok(());
        };
        let now = Instant::now();
        if now < budget.next_check {
            return Ok(());
        }
        let used = thread_cpu_time().saturating_sub(budget.cpu_start);
        match budget.allowed.checked_sub(used) {
            Some(left) if !left.is_zero() => {
                budget.next_check = now + left;
                b.set(Some(budget));
                Ok(())
            }
            _ => Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "{LIMIT}the render used over {} ms of CPU time",
                    budget.allowed.as_millis()
                ),
            )),
        }
    })
}

/// CPU time this thread has used.
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the call only writes it.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    match ok {
        true => Duration::new(t.tv_sec as u64, t.tv_nsec as u32),
        false => wall_since_start(),
    }
}

/// Where no thread CPU clock is read, wall time stands in (it can only be
/// larger, so the bound still holds).
#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    wall_since_start()
}

#[cfg_attr(unix, allow(dead_code))]
fn wall_since_start() -> Duration {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin_until_error() -> (Error, Duration) {
        let started = thread_cpu_time();
        loop {
            if let Err(e) = tick() {
                return (e, thread_cpu_time() - started);
            }
            std::hint::black_box((0..1000).sum::<u64>());
        }
    }

    #[test]
    fn a_spent_budget_is_a_limit_error() {
        let _budget = start(Duration::from_millis(20));
        let (error, used) = spin_until_error();
        assert_eq!(
            error.detail(),
            Some(format!("{LIMIT}the render used over 20 ms of CPU time").as_str())
        );
        assert!(used >= Duration::from_millis(20), "{used:?}");
    }

    #[test]
    fn nested_budgets_share_the_outer_one_and_apart_ones_do_not() {
        let outer = start(Duration::from_millis(10));
        {
            let _inner = start(Duration::from_secs(3600));
            let (error, _) = spin_until_error();
            assert!(error.detail().unwrap().contains("over 10 ms"));
            let _apart = apart(Duration::from_secs(3600));
            assert!(tick().is_ok());
        }
        assert!(tick().is_err());
        drop(outer);
        assert!(tick().is_ok());
    }
}
