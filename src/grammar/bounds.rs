//! Numeric bounds (`minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`) as GBNF: an integer range spelled digit by digit, and
//! the sign a bounded number may take.
//!
//! Invariants: an integer expression accepts exactly the integers of the
//! range written without leading zeros (and `-0` never); bounds beyond
//! [`MAX_MAGNITUDE`] are dropped (looser, never wrong); an empty range gives
//! `None` so the caller falls back with a warning. Never panics.

use serde_json::{Map, Value};

use super::gbnf::{alt, literal, seq};

/// Bounds at or beyond this magnitude are ignored: the integer rule's
/// 16 digits are the limit anyway.
const MAX_MAGNITUDE: i64 = 1_000_000_000_000_000;

/// The inclusive integer bounds a schema sets, exclusive ones moved in by
/// one (draft 4's boolean `exclusiveMinimum` included).
pub fn integer_bounds(map: &Map<String, Value>) -> (Option<i64>, Option<i64>) {
    let num = |key: &str| map.get(key).and_then(Value::as_f64);
    let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or(false);
    let lower = match (num("minimum"), num("exclusiveMinimum")) {
        (_, Some(x)) => Some((x.floor() as i64).saturating_add(1)),
        (Some(m), None) if flag("exclusiveMinimum") => Some((m.floor() as i64).saturating_add(1)),
        (Some(m), None) => Some(m.ceil() as i64),
        (None, None) => None,
    };
    let upper = match (num("maximum"), num("exclusiveMaximum")) {
        (_, Some(x)) => Some((x.ceil() as i64).saturating_sub(1)),
        (Some(m), None) if flag("exclusiveMaximum") => Some((m.ceil() as i64).saturating_sub(1)),
        (Some(m), None) => Some(m.floor() as i64),
        (None, None) => None,
    };
    let keep = |b: Option<i64>| b.filter(|v| v.unsigned_abs() < MAX_MAGNITUDE as u64);
    (keep(lower), keep(upper))
}

/// Whether a number's bounds forbid a minus sign (`minimum` ≥ 0).
pub fn non_negative(map: &Map<String, Value>) -> bool {
    let at_least = |key: &str| {
        map.get(key)
            .and_then(Value::as_f64)
            .is_some_and(|v| v >= 0.0)
    };
    at_least("minimum") || at_least("exclusiveMinimum")
}

/// Integers from `lower` to `upper` (either open), as a GBNF expression;
/// `None` for an empty range.
pub fn integer_range(lower: Option<i64>, upper: Option<i64>) -> Option<String> {
    if let (Some(lo), Some(hi)) = (lower, upper) {
        if lo > hi {
            return None;
        }
    }
    let mut options = Vec::new();
    // Negative part: magnitudes from max(1, -upper) to -lower.
    let neg_from = upper.map_or(1, |hi| (-hi).max(1));
    if lower.is_none_or(|lo| lo < 0) {
        let magnitudes = match lower {
            Some(lo) => between(neg_from as u64, (-lo) as u64),
            None => at_least(neg_from as u64),
        };
        options.push(seq(&[literal("-"), alt(&magnitudes)]));
    }
    // Non-negative part.
    if upper.is_none_or(|hi| hi >= 0) {
        let from = lower.map_or(0, |lo| lo.max(0)) as u64;
        options.extend(match upper {
            Some(hi) => between(from, hi as u64),
            None => at_least(from),
        });
    }
    Some(alt(&options))
}

/// Numbers of at most 16 digits from `lo` up.
fn at_least(lo: u64) -> Vec<String> {
    let len = digits(lo);
    let mut out = same_length(&lo.to_string(), &"9".repeat(len));
    if len < 16 {
        out.push(format!("[1-9] [0-9]{{{len},15}}"));
    }
    out
}

/// Numbers from `lo` to `hi` (`lo` ≤ `hi`), grouped by digit count.
fn between(lo: u64, hi: u64) -> Vec<String> {
    let mut out = Vec::new();
    for len in digits(lo)..=digits(hi) {
        let first = if len == 1 {
            0
        } else {
            10u64.pow(len as u32 - 1)
        };
        let last = 10u64.pow(len as u32) - 1;
        let (a, b) = (lo.max(first), hi.min(last));
        if a <= b {
            out.extend(same_length(&a.to_string(), &b.to_string()));
        }
    }
    out
}

fn digits(n: u64) -> usize {
    n.to_string().len()
}

/// Digit strings of one length from `a` to `b` (`a` ≤ `b`), as
/// alternatives of digit classes.
fn same_length(a: &str, b: &str) -> Vec<String> {
    if a == b {
        return vec![literal(a)];
    }
    let (x, rest_a) = a.split_at(1);
    let (y, rest_b) = b.split_at(1);
    if rest_a.is_empty() {
        return vec![format!("[{x}-{y}]")];
    }
    if x == y {
        let tail = alt(&same_length(rest_a, rest_b));
        return vec![seq(&[literal(x), tail])];
    }
    let n = rest_a.len();
    let (x, y) = (digit(x), digit(y));
    // The first digit's whole span where the rest may be anything.
    let low_full = rest_a.bytes().all(|d| d == b'0');
    let high_full = rest_b.bytes().all(|d| d == b'9');
    let mid_from = if low_full { x } else { x + 1 };
    let mid_to = if high_full { y } else { y - 1 };
    let mut out = Vec::new();
    if !low_full {
        let tail = alt(&same_length(rest_a, &"9".repeat(n)));
        out.push(seq(&[literal(&x.to_string()), tail]));
    }
    if mid_from <= mid_to {
        out.push(format!("[{mid_from}-{mid_to}] [0-9]{{{n}}}"));
    }
    if !high_full {
        let tail = alt(&same_length(&"0".repeat(n), rest_b));
        out.push(seq(&[literal(&y.to_string()), tail]));
    }
    out
}

fn digit(d: &str) -> u8 {
    d.as_bytes()[0] - b'0'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::Recognizer;

    fn accepts(lower: Option<i64>, upper: Option<i64>, n: i64) -> bool {
        let expr = integer_range(lower, upper).unwrap();
        Recognizer::new(&format!("root ::= {expr}\n"))
            .unwrap()
            .accepts(&n.to_string())
    }

    #[test]
    fn ranges_accept_exactly_their_integers() {
        for (lo, hi) in [
            (Some(1), Some(31)),
            (Some(0), Some(100)),
            (Some(-5), Some(5)),
            (Some(-120), Some(-7)),
            (Some(17), Some(4321)),
            (Some(999), Some(1000)),
            (Some(3), None),
            (None, Some(-3)),
            (None, Some(42)),
            (Some(-42), None),
        ] {
            for n in -1500..1500 {
                let want = lo.is_none_or(|l| n >= l) && hi.is_none_or(|h| n <= h);
                assert_eq!(accepts(lo, hi, n), want, "{lo:?}..{hi:?} on {n}");
            }
        }
    }

    #[test]
    fn leading_zeros_and_negative_zero_are_not_integers() {
        let expr = integer_range(Some(-10), Some(10)).unwrap();
        let r = Recognizer::new(&format!("root ::= {expr}\n")).unwrap();
        assert!(!r.accepts("01") && !r.accepts("-0") && r.accepts("0"));
    }

    #[test]
    fn bounds_are_read_from_every_draft() {
        let b = |v: Value| integer_bounds(v.as_object().unwrap());
        use serde_json::json;
        assert_eq!(b(json!({"minimum": 1, "maximum": 5})), (Some(1), Some(5)));
        assert_eq!(
            b(json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10})),
            (Some(1), Some(9))
        );
        assert_eq!(
            b(json!({"minimum": 0, "exclusiveMinimum": true})),
            (Some(1), None)
        );
        assert_eq!(b(json!({"minimum": 0.5})), (Some(1), None));
        assert_eq!(b(json!({"maximum": 1e300})), (None, None));
        assert_eq!(integer_range(Some(5), Some(4)), None);
    }
}
