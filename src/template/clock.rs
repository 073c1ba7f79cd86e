//! The time source behind `strftime_now`, and a small `strftime`.
//!
//! transformers' `strftime_now(fmt)` is `datetime.now().strftime(fmt)`. Dates in
//! prompts make renders time-dependent, so the clock is injectable: the analysis
//! and the tests pin it with [`FixedClock`]; [`SystemClock`] reads UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch, UTC.
    fn unix_seconds(&self) -> i64;

    /// The current civil time.
    fn now(&self) -> CivilTime {
        CivilTime::from_unix(self.unix_seconds())
    }
}

/// The machine's clock, in UTC.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn unix_seconds(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    }
}

/// A clock stopped at a fixed instant (seconds since the Unix epoch, UTC).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn unix_seconds(&self) -> i64 {
        self.0
    }
}

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Monday, as Python's `weekday()`.
    weekday: u32,
    /// 1-based day of the year.
    yearday: u32,
}

const MONTHS: [&str; 12] = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
];
const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

impl CivilTime {
    /// Converts Unix seconds to a civil UTC time (proleptic Gregorian).
    pub fn from_unix(secs: i64) -> CivilTime {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Days-to-civil, after Howard Hinnant's public-domain algorithm.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let cumulative = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let yearday = cumulative[month as usize - 1] + day + u32::from(leap && month > 2);
        CivilTime {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem / 60 % 60) as u32,
            second: (rem % 60) as u32,
            weekday: (days + 3).rem_euclid(7) as u32, // 1970-01-01 was a Thursday
            yearday,
        }
    }

    /// Formats like C/Python `strftime` for the directives chat templates use;
    /// unknown directives are kept verbatim, as glibc does.
    pub fn strftime(&self, format: &str) -> String {
        let mut out = String::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            // glibc's `%-d` drops zero padding.
            let mut directive = chars.next();
            let unpadded = directive == Some('-');
            if unpadded {
                directive = chars.next();
            }
            let num = |n: u32, width: usize| {
                if unpadded { n.to_string() } else { format!("{n:0width$}") }
            };
            let hour12 = if self.hour % 12 == 0 { 12 } else { self.hour % 12 };
            match directive {
                Some('Y') => out.push_str(&self.year.to_string()),
                Some('y') => out.push_str(&num(self.year.rem_euclid(100) as u32, 2)),
                Some('m') => out.push_str(&num(self.month, 2)),
                Some('d') => out.push_str(&num(self.day, 2)),
                Some('e') => out.push_str(&format!("{:>2}", self.day)),
                Some('H') => out.push_str(&num(self.hour, 2)),
                Some('I') => out.push_str(&num(hour12, 2)),
                Some('M') => out.push_str(&num(self.minute, 2)),
                Some('S') => out.push_str(&num(self.second, 2)),
                Some('j') => out.push_str(&num(self.yearday, 3)),
                Some('p') => out.push_str(if self.hour < 12 { "AM" } else { "PM" }),
                Some('B') => out.push_str(MONTHS[self.month as usize - 1]),
                Some('b') | Some('h') => out.push_str(&MONTHS[self.month as usize - 1][..3]),
                Some('A') => out.push_str(DAYS[self.weekday as usize]),
                Some('a') => out.push_str(&DAYS[self.weekday as usize][..3]),
                Some('u') => out.push_str(&(self.weekday + 1).to_string()),
                Some('w') => out.push_str(&((self.weekday + 1) % 7).to_string()),
                Some('F') => out.push_str(&format!("{}-{:02}-{:02}", self.year, self.month, self.day)),
                Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)),
                Some('%') => out.push('%'),
                Some(other) => {
                    out.push('%');
                    if unpadded {
                        out.push('-');
                    }
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_a_known_instant() {
        // 2024-07-26 13:05:09 UTC, a Friday, day 208 of a leap year.
        let t = CivilTime::from_unix(1_721_999_109);
        assert_eq!(t.strftime("%d %b %Y"), "26 Jul 2024");
        assert_eq!(t.strftime("%A, %B %-d %H:%M:%S %j %p %I"), "Friday, July 26 13:05:09 208 PM 01");
        assert_eq!(t.strftime("%Y-%m-%d %q %%"), "2024-07-26 %q %");
    }
}
