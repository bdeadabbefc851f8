//! The values of the grammar: percentages, times, rates and sizes, parsed as iproute2's
//! `parse_percent`, `get_time`, `get_rate64` and `get_size` parse them, and printed back
//! in the shortest form that parses to the same value.

use std::fmt;

use super::{PERCENT_HELP, RATE_HELP, SIZE_HELP, SpecError, TIME_HELP};

/// A probability, as the kernel keeps it: `round(p * u32::MAX)` for p in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Percent(pub u32);

impl Percent {
    /// From a percentage in 0..=100 (tc's `set_percent`: rint(p / 100 * u32::MAX)).
    pub fn from_percent(p: f64) -> Option<Percent> {
        let fraction = p / 100.0;
        if !(0.0..=1.0).contains(&fraction) {
            return None;
        }
        Some(Percent(
            (fraction * f64::from(u32::MAX)).round_ties_even() as u32
        ))
    }

    /// The percentage this stands for (0..=100).
    pub fn as_percent(self) -> f64 {
        f64::from(self.0) * 100.0 / f64::from(u32::MAX)
    }

    pub(super) fn parse(keyword: &'static str, token: &str) -> Result<Percent, SpecError> {
        let bad = || SpecError::BadValue {
            keyword,
            token: token.to_string(),
            expected: PERCENT_HELP.to_string(),
        };
        let (value, rest) = split_number(token).ok_or_else(bad)?;
        if !(rest.is_empty() || rest == "%") {
            return Err(bad());
        }
        Percent::from_percent(value).ok_or_else(bad)
    }
}

impl fmt::Display for Percent {
    /// The shortest decimal percentage that parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.as_percent();
        for precision in 0..=17 {
            let text = format!("{p:.precision$}");
            let parsed: f64 = text.parse().unwrap_or(f64::NAN);
            if Percent::from_percent(parsed) == Some(*self) {
                let text = if text.contains('.') {
                    text.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    text
                };
                return write!(f, "{text}%");
            }
        }
        write!(f, "{p}%")
    }
}

/// A time in microseconds, tc's resolution (`get_time` truncates to whole microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Time(pub u32);

impl Time {
    /// From milliseconds.
    pub fn from_millis(ms: u32) -> Time {
        Time(ms.saturating_mul(1000))
    }

    /// As a `Duration`.
    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_micros(u64::from(self.0))
    }

    pub(super) fn parse(keyword: &'static str, token: &str) -> Result<Time, SpecError> {
        let bad = |why: &str| SpecError::BadValue {
            keyword,
            token: token.to_string(),
            expected: format!("{TIME_HELP}{why}"),
        };
        let (value, unit) = split_number(token).ok_or_else(|| bad(""))?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "" | "us" | "usec" | "usecs" => 1.0,
            "ms" | "msec" | "msecs" => 1_000.0,
            "s" | "sec" | "secs" => 1_000_000.0,
            _ => return Err(bad("")),
        };
        let us = value * scale;
        if us >= 4_294_967_296.0 {
            return Err(bad(" (at most 4294s)"));
        }
        Ok(Time(us as u32))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us != 0 && us.is_multiple_of(1_000_000) {
            write!(f, "{}s", us / 1_000_000)
        } else if us != 0 && us.is_multiple_of(1_000) {
            write!(f, "{}ms", us / 1_000)
        } else {
            write!(f, "{us}us")
        }
    }
}

/// A rate in bytes per second, as tc's `get_rate64` computes it (bits / 8, truncated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rate(pub u64);

/// tc's rate suffixes (iproute2 tc_util.c), matched case-insensitively, first match wins.
const RATE_SUFFIXES: &[(&str, f64)] = &[
    ("bit", 1.0),
    ("kibit", 1024.0),
    ("kbit", 1000.0),
    ("mibit", 1024.0 * 1024.0),
    ("mbit", 1_000_000.0),
    ("gibit", 1024.0 * 1024.0 * 1024.0),
    ("gbit", 1_000_000_000.0),
    ("tibit", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("tbit", 1_000_000_000_000.0),
    ("bps", 8.0),
    ("kibps", 8.0 * 1024.0),
    ("kbps", 8000.0),
    ("mibps", 8.0 * 1024.0 * 1024.0),
    ("mbps", 8_000_000.0),
    ("gibps", 8.0 * 1024.0 * 1024.0 * 1024.0),
    ("gbps", 8_000_000_000.0),
    ("tibps", 8.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("tbps", 8_000_000_000_000.0),
];

impl Rate {
    /// From bits per second (rounded down to whole bytes, as tc does).
    pub fn from_bits_per_sec(bits: u64) -> Rate {
        Rate(bits / 8)
    }

    /// Bits per second.
    pub fn bits_per_sec(self) -> u64 {
        self.0.saturating_mul(8)
    }

    pub(super) fn parse(keyword: &'static str, token: &str) -> Result<Rate, SpecError> {
        let bad = || SpecError::BadValue {
            keyword,
            token: token.to_string(),
            expected: RATE_HELP.to_string(),
        };
        let (value, unit) = split_number(token).ok_or_else(bad)?;
        let unit = unit.to_ascii_lowercase();
        let scale = if unit.is_empty() {
            1.0
        } else {
            RATE_SUFFIXES
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, scale)| *scale)
                .ok_or_else(bad)?
        };
        let bytes = value * scale / 8.0;
        // Keep bits per second representable in a u64.
        if !(bytes >= 1.0 && bytes < (u64::MAX / 8) as f64) {
            return Err(bad());
        }
        Ok(Rate(bytes as u64))
    }
}

impl fmt::Display for Rate {
    /// In the largest decimal bit unit that represents it exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.bits_per_sec();
        for (unit, scale) in [
            ("tbit", 1_000_000_000_000u64),
            ("gbit", 1_000_000_000),
            ("mbit", 1_000_000),
            ("kbit", 1_000),
        ] {
            if bits.is_multiple_of(scale) {
                return write!(f, "{}{unit}", bits / scale);
            }
        }
        write!(f, "{bits}bit")
    }
}

/// A size in bytes, as tc's `get_size` computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Size(pub u32);

impl Size {
    pub(super) fn parse(keyword: &'static str, token: &str) -> Result<Size, SpecError> {
        let bad = |why: &str| SpecError::BadValue {
            keyword,
            token: token.to_string(),
            expected: format!("{SIZE_HELP}{why}"),
        };
        if token.contains('/') {
            return Err(bad(" (a /CELL suffix is not supported)"));
        }
        let (value, unit) = split_number(token).ok_or_else(|| bad(""))?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kb" => 1024.0,
            "m" | "mb" => 1024.0 * 1024.0,
            "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
            "kbit" => 1024.0 / 8.0,
            "mbit" => 1024.0 * 1024.0 / 8.0,
            "gbit" => 1024.0 * 1024.0 * 1024.0 / 8.0,
            _ => return Err(bad("")),
        };
        let bytes = value * scale;
        if bytes >= 4_294_967_296.0 {
            return Err(bad(" (at most 4gb)"));
        }
        Ok(Size(bytes as u32))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b != 0 && b.is_multiple_of(1024 * 1024) {
            write!(f, "{}mb", b / (1024 * 1024))
        } else if b != 0 && b.is_multiple_of(1024) {
            write!(f, "{}kb", b / 1024)
        } else {
            write!(f, "{b}b")
        }
    }
}

/// Splits a leading plain decimal number (`12`, `1.5`, `.5`, `2e3`) from its unit.
fn split_number(token: &str) -> Option<(f64, &str)> {
    let bytes = token.as_bytes();
    let mut end = 0;
    let mut digits = 0;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
        digits += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut exp_end = end + 1;
        if exp_end < bytes.len() && (bytes[exp_end] == b'+' || bytes[exp_end] == b'-') {
            exp_end += 1;
        }
        let exp_digits_start = exp_end;
        while exp_end < bytes.len() && bytes[exp_end].is_ascii_digit() {
            exp_end += 1;
        }
        if exp_end > exp_digits_start {
            end = exp_end;
        }
    }
    let value: f64 = token[..end].parse().ok()?;
    value.is_finite().then_some((value, &token[end..]))
}
