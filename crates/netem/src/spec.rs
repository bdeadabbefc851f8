//! Impairment specs in `tc`'s grammar: parsed from text, printed back, compared by value.
//!
//! Three kinds of root qdisc are understood:
//!
//! - netem (the default kind; a leading `netem` is optional):
//!   `delay TIME [JITTER [CORR%]] [distribution uniform|normal|pareto|paretonormal]`,
//!   `loss [random] P% [CORR%]` (alias `drop`), `duplicate P% [CORR%]`,
//!   `reorder P% [CORR%] [gap N]`, `corrupt P% [CORR%]`, `rate RATE`, `limit PACKETS`
//!   (`latency` is accepted for `delay`, as tc does);
//! - `tbf rate RATE burst SIZE latency TIME` (or `limit SIZE` instead of `latency`);
//! - `htb [default CLASSID] [r2q N]` (a classless htb root: everything goes to the
//!   default class or, when it does not exist, is sent unshaped).
//!
//! Values follow `tc`'s parsers (iproute2's `get_time`, `get_rate64`, `get_size`,
//! `parse_percent`), including their rounding, so that a spec encodes to the bytes `tc`
//! sends. A spec is kept in the kernel's own units (microseconds, bytes per second,
//! bytes, and probabilities scaled to `u32::MAX`), so printing and parsing again gives an
//! equal spec, and so does decoding what was encoded.
//!
//! Deliberate differences from `tc`: keywords must be spelled out (tc also accepts
//! prefixes such as `del`); numbers are plain decimals (no hex, `inf` or `nan`); values
//! that mean "nothing" are normalised away (a 0% correlation, a 0% loss, a zero delay,
//! `distribution uniform`, `gap 1`, `limit 1000`), since the kernel treats them as absent.
//!
//! Correlations, as tc 6.1 sends them: delay's, loss's and duplicate's travel in
//! `TCA_NETEM_CORR` (`struct tc_netem_corr { delay_corr, loss_corr, dup_corr }`),
//! reorder's and corrupt's in their own `TCA_NETEM_REORDER` / `TCA_NETEM_CORRUPT`. tc
//! sends `TCA_NETEM_CORR` only when a delay, loss, reorder or corrupt correlation was
//! written (whatever its value): a duplicate correlation alone never reaches the kernel.
//! The parser does the same: `duplicate 1% 10%` is `duplicate 1%`, while
//! `duplicate 1% 10% loss 0.5% 0%` keeps the 10%. A spec stores what the kernel gets, so
//! a duplicate correlation without another one prints with a `loss ... 0%` that carries
//! it (`duplicate 1% 10% loss 0% 0%`).

use std::fmt;
use std::str::FromStr;

/// What a time value may look like, for error messages.
pub const TIME_HELP: &str = "a time like 10ms, 2.5ms, 250us or 1s (units: s, sec, secs, ms, msec, msecs, us, usec, usecs; no unit means microseconds)";
/// What a percentage may look like, for error messages.
pub const PERCENT_HELP: &str = "a percentage from 0 to 100, like 0.5% or 25%";
/// What a rate may look like, for error messages.
pub const RATE_HELP: &str = "a rate of at least 8bit (one byte per second) like 100mbit, 1gbit, 32kbit or 512kbps (bit units: bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, tibit; byte units: bps, kbps, mbps, gbps, tbps, kibps, mibps, gibps, tibps; case-insensitive, so kbps is kilobytes per second; no unit means bits per second)";
/// What a size may look like, for error messages.
pub const SIZE_HELP: &str = "a size like 32kbit, 4kb, 1500b or 1mb (units: b, k/kb, m/mb, g/gb, kbit, mbit, gbit; no unit means bytes)";

const NETEM_KEYWORDS: &str = "delay (or latency), distribution, loss (or drop), duplicate, reorder, gap, corrupt, rate, limit";
const TBF_KEYWORDS: &str = "rate, burst (or buffer, maxburst), latency, limit";
const HTB_KEYWORDS: &str = "default, r2q";
const DIST_NAMES: &str = "uniform, normal, pareto, paretonormal";

/// A spec that could not be parsed, naming the token and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Nothing to parse.
    #[error(
        "empty impairment spec: expected netem options ({NETEM_KEYWORDS}), `tbf rate RATE burst SIZE latency TIME` or `htb [default CLASSID] [r2q N]`"
    )]
    Empty,
    /// A word that is not a keyword of this kind.
    #[error("unknown {kind} keyword {token:?}; allowed: {allowed}")]
    UnknownKeyword {
        /// netem, tbf or htb.
        kind: &'static str,
        /// The offending word.
        token: String,
        /// The keywords that are allowed here.
        allowed: &'static str,
    },
    /// A keyword at the end of the spec without its value.
    #[error("`{keyword}` needs a value: {expected}")]
    MissingValue {
        /// The keyword.
        keyword: &'static str,
        /// What its value may look like.
        expected: &'static str,
    },
    /// A value that does not parse or is out of range.
    #[error("bad value {token:?} for `{keyword}`: expected {expected}")]
    BadValue {
        /// The keyword the value belongs to.
        keyword: &'static str,
        /// The offending value.
        token: String,
        /// What is allowed.
        expected: String,
    },
    /// The same keyword twice.
    #[error("`{keyword}` is given twice")]
    Duplicate {
        /// The keyword.
        keyword: &'static str,
    },
    /// Values that parse but do not make sense together.
    #[error("{0}")]
    Invalid(String),
}

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

    fn parse(keyword: &'static str, token: &str) -> Result<Percent, SpecError> {
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

    fn parse(keyword: &'static str, token: &str) -> Result<Time, SpecError> {
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

    fn parse(keyword: &'static str, token: &str) -> Result<Rate, SpecError> {
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
    fn parse(keyword: &'static str, token: &str) -> Result<Size, SpecError> {
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

/// The shape of netem's delay jitter (uniform, the kernel's default, has no table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// iproute2's normal.dist.
    Normal,
    /// iproute2's pareto.dist.
    Pareto,
    /// iproute2's paretonormal.dist.
    ParetoNormal,
}

impl Distribution {
    /// The name tc uses.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::ParetoNormal => "paretonormal",
        }
    }

    /// All distributions with a table.
    pub const ALL: [Distribution; 3] = [
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::ParetoNormal,
    ];
}

/// netem's `delay TIME [JITTER [CORR%]] [distribution D]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Delay {
    /// The added delay.
    pub latency: Time,
    /// Random variation around it.
    pub jitter: Option<Time>,
    /// How much each jitter value depends on the previous one.
    pub correlation: Option<Percent>,
    /// The jitter's distribution (None: uniform).
    pub distribution: Option<Distribution>,
}

/// A probability with an optional correlation: netem's loss, duplicate, corrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chance {
    /// How likely.
    pub probability: Percent,
    /// How much each decision depends on the previous one.
    pub correlation: Option<Percent>,
}

/// netem's `reorder P% [CORR%] [gap N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reorder {
    /// How likely a packet is sent at once (ahead of the delayed ones).
    pub probability: Percent,
    /// Correlation.
    pub correlation: Option<Percent>,
    /// Every `gap`-th packet is a candidate (tc's default, and the minimum, is 1).
    pub gap: u32,
}

/// The netem qdisc's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Netem {
    /// Queue limit in packets (tc's default 1000).
    pub limit: u32,
    /// Added delay.
    pub delay: Option<Delay>,
    /// Random loss.
    pub loss: Option<Chance>,
    /// Duplication.
    pub duplicate: Option<Chance>,
    /// Reordering (needs a delay).
    pub reorder: Option<Reorder>,
    /// Single-bit corruption.
    pub corrupt: Option<Chance>,
    /// Rate limit.
    pub rate: Option<Rate>,
}

/// tc's default netem limit.
pub const NETEM_DEFAULT_LIMIT: u32 = 1000;

impl Default for Netem {
    fn default() -> Self {
        Netem {
            limit: NETEM_DEFAULT_LIMIT,
            delay: None,
            loss: None,
            duplicate: None,
            reorder: None,
            corrupt: None,
            rate: None,
        }
    }
}

/// How a tbf's queue is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TbfLimit {
    /// The longest a packet may wait (tc turns it into bytes: rate * latency + burst).
    Latency(Time),
    /// Queue size in bytes.
    Bytes(Size),
}

/// A token bucket filter: a pure rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tbf {
    /// Sustained rate.
    pub rate: Rate,
    /// Bucket size.
    pub burst: Size,
    /// Queue bound.
    pub limit: TbfLimit,
}

/// A classless htb root (`tc qdisc add ... htb default N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Htb {
    /// The minor class id unclassified traffic goes to (tc reads it as hex).
    pub default_class: u32,
    /// Rate to quantum divisor (tc's default 10).
    pub r2q: u32,
}

impl Default for Htb {
    fn default() -> Self {
        Htb {
            default_class: 0,
            r2q: 10,
        }
    }
}

/// An impairment spec: what to install as an interface's root qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Spec {
    /// Network emulator.
    Netem(Netem),
    /// Token bucket filter.
    Tbf(Tbf),
    /// Hierarchical token bucket (classless root).
    Htb(Htb),
}

impl Spec {
    /// The qdisc kind (`TCA_KIND`).
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::Netem(_) => "netem",
            Spec::Tbf(_) => "tbf",
            Spec::Htb(_) => "htb",
        }
    }

    /// Whether this is a netem that duplicates packets (a duplicate chance above 0%).
    pub fn duplicates(&self) -> bool {
        matches!(self, Spec::Netem(n) if n.duplicate.is_some_and(|c| c.probability.0 > 0))
    }

    /// Parses a spec (same as `str::parse`).
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        let tokens: Vec<&str> = text.split_whitespace().collect();
        Spec::parse_tokens(&tokens)
    }

    /// Parses a spec already split into words.
    pub fn parse_tokens(tokens: &[&str]) -> Result<Spec, SpecError> {
        match tokens.first() {
            None => Err(SpecError::Empty),
            Some(&"tbf") => parse_tbf(&tokens[1..]).map(Spec::Tbf),
            Some(&"htb") => parse_htb(&tokens[1..]).map(Spec::Htb),
            Some(&"netem") => parse_netem(&tokens[1..]).map(Spec::Netem),
            Some(_) => parse_netem(tokens).map(Spec::Netem),
        }
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Spec, SpecError> {
        Spec::parse(s)
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

/// tc's NEXT_IS_NUMBER: the next word starts with a digit.
fn next_is_number(tokens: &[&str], i: usize) -> bool {
    tokens
        .get(i + 1)
        .is_some_and(|t| t.as_bytes().first().is_some_and(u8::is_ascii_digit))
}

fn value<'a>(
    tokens: &[&'a str],
    i: usize,
    keyword: &'static str,
    expected: &'static str,
) -> Result<&'a str, SpecError> {
    tokens
        .get(i + 1)
        .copied()
        .ok_or(SpecError::MissingValue { keyword, expected })
}

fn parse_u32(keyword: &'static str, token: &str, radix: u32) -> Result<u32, SpecError> {
    u32::from_str_radix(token, radix).map_err(|_| SpecError::BadValue {
        keyword,
        token: token.to_string(),
        expected: if radix == 16 {
            "a hexadecimal number up to ffffffff".to_string()
        } else {
            "an unsigned integer up to 4294967295".to_string()
        },
    })
}

fn once<T>(slot: &Option<T>, keyword: &'static str) -> Result<(), SpecError> {
    if slot.is_some() {
        Err(SpecError::Duplicate { keyword })
    } else {
        Ok(())
    }
}

fn nonzero(p: Option<Percent>) -> Option<Percent> {
    p.filter(|p| p.0 != 0)
}

fn parse_netem(tokens: &[&str]) -> Result<Netem, SpecError> {
    NetemWords::read(tokens)?.normalise()
}

/// What a netem spec's words say, as written, before zeros are taken for "none".
#[derive(Default)]
struct NetemWords {
    limit: Option<u32>,
    delay: Option<Delay>,
    distribution: Option<Option<Distribution>>,
    loss: Option<Chance>,
    duplicate: Option<Chance>,
    reorder: Option<(Percent, Option<Percent>)>,
    gap: Option<u32>,
    corrupt: Option<Chance>,
    rate: Option<Rate>,
    /// Whether tc would send TCA_NETEM_CORR: a delay, loss, reorder or corrupt
    /// correlation was written (duplicate's does not count: tc 6.1 forgets to set it).
    corr_attr: bool,
}

impl NetemWords {
    /// Each keyword and its values, once each.
    fn read(tokens: &[&str]) -> Result<NetemWords, SpecError> {
        let mut w = NetemWords::default();
        let mut i = 0;
        while i < tokens.len() {
            match tokens[i] {
                "limit" => {
                    once(&w.limit, "limit")?;
                    let token = value(tokens, i, "limit", "a number of packets")?;
                    i += 1;
                    w.limit = Some(parse_u32("limit", token, 10)?);
                }
                "delay" | "latency" => {
                    once(&w.delay, "delay")?;
                    w.delay = Some(delay_of(tokens, &mut i, &mut w.corr_attr)?);
                }
                "distribution" => {
                    once(&w.distribution, "distribution")?;
                    let token = value(tokens, i, "distribution", DIST_NAMES)?;
                    i += 1;
                    w.distribution = Some(distribution_of(token)?);
                }
                "loss" | "drop" => {
                    once(&w.loss, "loss")?;
                    let c = chance(tokens, "loss", &mut i)?;
                    w.corr_attr |= c.correlation.is_some();
                    w.loss = Some(c);
                }
                "duplicate" => {
                    once(&w.duplicate, "duplicate")?;
                    w.duplicate = Some(chance(tokens, "duplicate", &mut i)?);
                }
                "corrupt" => {
                    once(&w.corrupt, "corrupt")?;
                    let c = chance(tokens, "corrupt", &mut i)?;
                    w.corr_attr |= c.correlation.is_some();
                    w.corrupt = Some(c);
                }
                "reorder" => {
                    once(&w.reorder, "reorder")?;
                    let c = chance(tokens, "reorder", &mut i)?;
                    w.corr_attr |= c.correlation.is_some();
                    w.reorder = Some((c.probability, c.correlation));
                }
                "gap" => {
                    once(&w.gap, "gap")?;
                    let token = value(tokens, i, "gap", "a number of packets")?;
                    i += 1;
                    w.gap = Some(parse_u32("gap", token, 10)?);
                }
                "rate" => {
                    once(&w.rate, "rate")?;
                    w.rate = Some(rate_of(tokens, &mut i)?);
                }
                "tbf" | "htb" | "netem" => {
                    return Err(SpecError::Invalid(format!(
                        "`{}` must come first: a spec installs one qdisc kind",
                        tokens[i]
                    )));
                }
                other => {
                    return Err(SpecError::UnknownKeyword {
                        kind: "netem",
                        token: other.to_string(),
                        allowed: NETEM_KEYWORDS,
                    });
                }
            }
            i += 1;
        }
        Ok(w)
    }

    /// The qdisc the words ask for: zero correlations, probabilities and delays are none;
    /// what needs another setting is refused.
    fn normalise(self) -> Result<Netem, SpecError> {
        let NetemWords {
            limit,
            delay,
            distribution,
            loss,
            duplicate,
            reorder,
            gap,
            corrupt,
            rate,
            corr_attr,
        } = self;
        let distribution = distribution.flatten();
        // Normalise: zero correlations, zero probabilities and zero delays mean "none".
        let delay = delay.map(|d| Delay {
            latency: d.latency,
            jitter: d.jitter.filter(|j| j.0 != 0),
            correlation: nonzero(d.correlation),
            distribution,
        });
        if let Some(dist) = distribution {
            let ok = delay.is_some_and(|d| d.latency.0 != 0 && d.jitter.is_some());
            if !ok {
                return Err(SpecError::Invalid(format!(
                    "`distribution {}` needs a delay and a jitter, like `delay 100ms 20ms distribution {}`",
                    dist.name(),
                    dist.name()
                )));
            }
        }
        let delay = delay.filter(|d| d.latency.0 != 0 || d.jitter.is_some());
        let chance = |c: Option<Chance>| {
            c.filter(|c| c.probability.0 != 0).map(|c| Chance {
                probability: c.probability,
                correlation: nonzero(c.correlation),
            })
        };
        let reorder = match reorder {
            Some((p, c)) if p.0 != 0 => {
                if delay.is_none_or(|d| d.latency.0 == 0) {
                    return Err(SpecError::Invalid(
                        "reordering needs a delay: packets are reordered by sending some at once while the others wait, e.g. `delay 10ms reorder 25% 50%`".to_string(),
                    ));
                }
                Some(Reorder {
                    probability: p,
                    correlation: nonzero(c),
                    gap: gap.unwrap_or(1).max(1),
                })
            }
            _ => {
                if gap.is_some_and(|g| g > 0) {
                    return Err(SpecError::Invalid(
                        "`gap` needs a reorder probability, e.g. `delay 10ms reorder 25% gap 5`"
                            .to_string(),
                    ));
                }
                None
            }
        };
        // tc 6.1 sends the duplicate correlation only inside a TCA_NETEM_CORR that another
        // correlation asked for.
        let duplicate = duplicate.map(|c| Chance {
            probability: c.probability,
            correlation: c.correlation.filter(|_| corr_attr),
        });
        Ok(Netem {
            limit: limit.unwrap_or(NETEM_DEFAULT_LIMIT),
            delay,
            loss: chance(loss),
            duplicate: chance(duplicate),
            reorder,
            corrupt: chance(corrupt),
            rate,
        })
    }
}

/// A probability and its optional correlation after `keyword` (`loss P% [CORR%]`);
/// `i` moves past them.
fn chance(tokens: &[&str], keyword: &'static str, i: &mut usize) -> Result<Chance, SpecError> {
    let mut token = value(tokens, *i, keyword, PERCENT_HELP)?;
    if keyword == "loss" && token == "random" {
        *i += 1;
        token = value(tokens, *i, keyword, PERCENT_HELP)?;
    } else if keyword == "loss" && (token == "state" || token == "gemodel") {
        return Err(SpecError::BadValue {
            keyword,
            token: token.to_string(),
            expected: format!(
                "{PERCENT_HELP} (the `{token}` loss model is not supported; use `loss P% [CORR%]`)"
            ),
        });
    }
    *i += 1;
    let probability = Percent::parse(keyword, token)?;
    let mut correlation = None;
    if next_is_number(tokens, *i) {
        *i += 1;
        correlation = Some(Percent::parse(keyword, tokens[*i])?);
    }
    Ok(Chance {
        probability,
        correlation,
    })
}

/// `delay TIME [JITTER [CORR%]]`: `i` moves past them; a correlation sets `corr_attr`.
fn delay_of(tokens: &[&str], i: &mut usize, corr_attr: &mut bool) -> Result<Delay, SpecError> {
    let token = value(tokens, *i, "delay", TIME_HELP)?;
    *i += 1;
    let latency = Time::parse("delay", token)?;
    let mut jitter = None;
    let mut correlation = None;
    if next_is_number(tokens, *i) {
        *i += 1;
        jitter = Some(Time::parse("delay", tokens[*i])?);
        if next_is_number(tokens, *i) {
            *i += 1;
            correlation = Some(Percent::parse("delay", tokens[*i])?);
            *corr_attr = true;
        }
    }
    Ok(Delay {
        latency,
        jitter,
        correlation,
        distribution: None,
    })
}

/// `rate RATE`, alone: packet overhead and cell sizes after it are refused.
fn rate_of(tokens: &[&str], i: &mut usize) -> Result<Rate, SpecError> {
    let token = value(tokens, *i, "rate", RATE_HELP)?;
    *i += 1;
    let rate = Rate::parse("rate", token)?;
    if next_is_number(tokens, *i) || tokens.get(*i + 1).is_some_and(|t| t.starts_with('-')) {
        return Err(SpecError::BadValue {
            keyword: "rate",
            token: tokens[*i + 1].to_string(),
            expected: "a keyword (packet overhead and cell sizes after `rate` are not supported)"
                .to_string(),
        });
    }
    Ok(rate)
}

/// A `distribution` word: `uniform` is none (tc's default).
fn distribution_of(token: &str) -> Result<Option<Distribution>, SpecError> {
    Ok(match token {
        "uniform" => None,
        "normal" => Some(Distribution::Normal),
        "pareto" => Some(Distribution::Pareto),
        "paretonormal" => Some(Distribution::ParetoNormal),
        _ => {
            return Err(SpecError::BadValue {
                keyword: "distribution",
                token: token.to_string(),
                expected: format!("one of {DIST_NAMES}"),
            });
        }
    })
}

fn parse_tbf(tokens: &[&str]) -> Result<Tbf, SpecError> {
    let mut rate = None;
    let mut burst = None;
    let mut latency = None;
    let mut limit = None;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i] {
            "rate" => {
                once(&rate, "rate")?;
                let token = value(tokens, i, "rate", RATE_HELP)?;
                i += 1;
                rate = Some(Rate::parse("rate", token)?);
            }
            "burst" | "buffer" | "maxburst" => {
                once(&burst, "burst")?;
                let token = value(tokens, i, "burst", SIZE_HELP)?;
                i += 1;
                let size = Size::parse("burst", token)?;
                if size.0 == 0 {
                    return Err(SpecError::BadValue {
                        keyword: "burst",
                        token: token.to_string(),
                        expected: format!("{SIZE_HELP} (more than 0)"),
                    });
                }
                burst = Some(size);
            }
            "latency" => {
                once(&latency, "latency")?;
                let token = value(tokens, i, "latency", TIME_HELP)?;
                i += 1;
                latency = Some(Time::parse("latency", token)?);
            }
            "limit" => {
                once(&limit, "limit")?;
                let token = value(tokens, i, "limit", SIZE_HELP)?;
                i += 1;
                limit = Some(Size::parse("limit", token)?);
            }
            other => {
                return Err(SpecError::UnknownKeyword {
                    kind: "tbf",
                    token: other.to_string(),
                    allowed: TBF_KEYWORDS,
                });
            }
        }
        i += 1;
    }
    let mut missing = Vec::new();
    if rate.is_none() {
        missing.push("`rate`");
    }
    if burst.is_none() {
        missing.push("`burst`");
    }
    let limit = match (latency.filter(|l| l.0 != 0), limit.filter(|l| l.0 != 0)) {
        (Some(_), Some(_)) => {
            return Err(SpecError::Invalid(
                "tbf takes either `latency` or `limit`, not both".to_string(),
            ));
        }
        (Some(l), None) => Some(TbfLimit::Latency(l)),
        (None, Some(b)) => Some(TbfLimit::Bytes(b)),
        (None, None) => {
            missing.push("`latency` (or `limit`)");
            None
        }
    };
    match (rate, burst, limit) {
        (Some(rate), Some(burst), Some(limit)) => Ok(Tbf { rate, burst, limit }),
        _ => Err(SpecError::Invalid(format!(
            "tbf needs {}: e.g. `tbf rate 8mbit burst 32kbit latency 50ms`",
            missing.join(" and ")
        ))),
    }
}

fn parse_htb(tokens: &[&str]) -> Result<Htb, SpecError> {
    let mut default_class = None;
    let mut r2q = None;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i] {
            "default" => {
                once(&default_class, "default")?;
                let token = value(tokens, i, "default", "a class id in hex, like 10")?;
                i += 1;
                default_class = Some(parse_u32("default", token, 16)?);
            }
            "r2q" => {
                once(&r2q, "r2q")?;
                let token = value(tokens, i, "r2q", "an unsigned integer")?;
                i += 1;
                r2q = Some(parse_u32("r2q", token, 10)?);
            }
            other => {
                return Err(SpecError::UnknownKeyword {
                    kind: "htb",
                    token: other.to_string(),
                    allowed: HTB_KEYWORDS,
                });
            }
        }
        i += 1;
    }
    Ok(Htb {
        default_class: default_class.unwrap_or(0),
        r2q: r2q.unwrap_or(10),
    })
}

impl fmt::Display for Netem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(d) = self.delay {
            let mut s = format!("delay {}", d.latency);
            if d.jitter.is_some() || d.correlation.is_some() {
                s += &format!(" {}", d.jitter.unwrap_or(Time(0)));
            }
            if let Some(c) = d.correlation {
                s += &format!(" {c}");
            }
            if let Some(dist) = d.distribution {
                s += &format!(" distribution {}", dist.name());
            }
            parts.push(s);
        }
        let chance = |name: &str, c: &Chance| match c.correlation {
            Some(corr) => format!("{name} {} {corr}", c.probability),
            None => format!("{name} {}", c.probability),
        };
        // A duplicate correlation reaches the kernel only with TCA_NETEM_CORR, which tc
        // sends only for another correlation: a 0% loss correlation carries it.
        let dup_needs_carrier = self.duplicate.and_then(|c| c.correlation).is_some()
            && self.delay.and_then(|d| d.correlation).is_none()
            && self.loss.and_then(|c| c.correlation).is_none()
            && self.reorder.and_then(|r| r.correlation).is_none()
            && self.corrupt.and_then(|c| c.correlation).is_none();
        match (&self.loss, dup_needs_carrier) {
            (Some(c), false) => parts.push(chance("loss", c)),
            (Some(c), true) => parts.push(format!("loss {} 0%", c.probability)),
            (None, true) => parts.push("loss 0% 0%".to_string()),
            (None, false) => {}
        }
        if let Some(c) = &self.duplicate {
            parts.push(chance("duplicate", c));
        }
        if let Some(r) = &self.reorder {
            let mut s = chance(
                "reorder",
                &Chance {
                    probability: r.probability,
                    correlation: r.correlation,
                },
            );
            if r.gap != 1 {
                s += &format!(" gap {}", r.gap);
            }
            parts.push(s);
        }
        if let Some(c) = &self.corrupt {
            parts.push(chance("corrupt", c));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate {r}"));
        }
        if self.limit != NETEM_DEFAULT_LIMIT {
            parts.push(format!("limit {}", self.limit));
        }
        if parts.is_empty() {
            f.write_str("netem")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

impl fmt::Display for Tbf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tbf rate {} burst {}", self.rate, self.burst)?;
        match self.limit {
            TbfLimit::Latency(t) => write!(f, " latency {t}"),
            TbfLimit::Bytes(b) => write!(f, " limit {b}"),
        }
    }
}

impl fmt::Display for Htb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("htb")?;
        if self.default_class != 0 {
            write!(f, " default {:x}", self.default_class)?;
        }
        if self.r2q != 10 {
            write!(f, " r2q {}", self.r2q)?;
        }
        Ok(())
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Netem(n) => n.fmt(f),
            Spec::Tbf(t) => t.fmt(f),
            Spec::Htb(h) => h.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netem(text: &str) -> Netem {
        match Spec::parse(text).unwrap() {
            Spec::Netem(n) => n,
            other => panic!("not netem: {other:?}"),
        }
    }

    #[test]
    fn times_follow_get_time() {
        assert_eq!(Time::parse("delay", "10ms").unwrap(), Time(10_000));
        assert_eq!(Time::parse("delay", "2.5ms").unwrap(), Time(2_500));
        assert_eq!(Time::parse("delay", "34us").unwrap(), Time(34));
        assert_eq!(Time::parse("delay", "5s").unwrap(), Time(5_000_000));
        assert_eq!(Time::parse("delay", "1.5").unwrap(), Time(1)); // truncated, as tc
        assert_eq!(Time::parse("delay", "7MSEC").unwrap(), Time(7_000));
        assert!(Time::parse("delay", "5m").is_err());
        assert!(Time::parse("delay", "ms").is_err());
        assert!(Time::parse("delay", "5000s").is_err());
    }

    #[test]
    fn rates_follow_get_rate64() {
        assert_eq!(Rate::parse("rate", "100mbit").unwrap(), Rate(12_500_000));
        assert_eq!(Rate::parse("rate", "1gbit").unwrap(), Rate(125_000_000));
        assert_eq!(Rate::parse("rate", "32kbit").unwrap(), Rate(4_000));
        assert_eq!(Rate::parse("rate", "8000").unwrap(), Rate(1_000)); // bits
        assert_eq!(Rate::parse("rate", "1kbps").unwrap(), Rate(1_000)); // kilobytes
        assert_eq!(Rate::parse("rate", "1KiBps").unwrap(), Rate(1_024));
        assert_eq!(Rate::parse("rate", "1mibit").unwrap(), Rate(131_072));
        assert_eq!(Rate::parse("rate", "10Bps").unwrap(), Rate(10));
        assert_eq!(Rate::parse("rate", "1.5mbit").unwrap(), Rate(187_500));
        assert!(Rate::parse("rate", "0mbit").is_err());
        assert!(Rate::parse("rate", "5furlongs").is_err());
    }

    #[test]
    fn sizes_follow_get_size() {
        assert_eq!(Size::parse("burst", "32kbit").unwrap(), Size(4096));
        assert_eq!(Size::parse("burst", "4kb").unwrap(), Size(4096));
        assert_eq!(Size::parse("burst", "1500").unwrap(), Size(1500));
        assert_eq!(Size::parse("burst", "1m").unwrap(), Size(1 << 20));
        assert!(Size::parse("burst", "4kb/8").is_err());
    }

    #[test]
    fn percents_follow_set_percent() {
        assert_eq!(Percent::parse("loss", "0.5%").unwrap(), Percent(21_474_836));
        assert_eq!(Percent::parse("loss", "1%").unwrap(), Percent(42_949_673));
        assert_eq!(
            Percent::parse("loss", "25").unwrap(),
            Percent(1_073_741_824)
        );
        assert_eq!(Percent::parse("loss", "100%").unwrap(), Percent(u32::MAX));
        assert!(Percent::parse("loss", "101%").is_err());
        assert!(Percent::parse("loss", "5%%").is_err());
        for p in ["0.5%", "25%", "0.1%", "33.333%", "0.001%", "99.99%", "100%"] {
            let v = Percent::parse("loss", p).unwrap();
            assert_eq!(v.to_string(), p);
        }
        // Any raw value prints to a string that parses back to it.
        for raw in [1u32, 7, 12_884_902, 2_147_483_647, u32::MAX - 1] {
            let text = Percent(raw).to_string();
            assert_eq!(
                Percent::parse("loss", &text).unwrap(),
                Percent(raw),
                "{text}"
            );
        }
    }

    #[test]
    fn parses_the_grammar() {
        let n = netem(
            "delay 10ms 2ms 25% distribution normal loss 0.3% 25% duplicate 1% reorder 10% 50% gap 5 corrupt 0.1% rate 1gbit limit 5000",
        );
        let d = n.delay.unwrap();
        assert_eq!(d.latency, Time(10_000));
        assert_eq!(d.jitter, Some(Time(2_000)));
        assert_eq!(d.correlation, Percent::from_percent(25.0));
        assert_eq!(d.distribution, Some(Distribution::Normal));
        assert_eq!(n.loss.unwrap().correlation, Percent::from_percent(25.0));
        assert_eq!(n.reorder.unwrap().gap, 5);
        assert_eq!(n.rate, Some(Rate(125_000_000)));
        assert_eq!(n.limit, 5000);
        assert_eq!(netem("netem delay 1ms"), netem("latency 1ms"));
        assert_eq!(netem("loss random 1%"), netem("drop 1%"));
        assert_eq!(
            Spec::parse("tbf rate 100mbit burst 32kbit latency 50ms").unwrap(),
            Spec::Tbf(Tbf {
                rate: Rate(12_500_000),
                burst: Size(4096),
                limit: TbfLimit::Latency(Time(50_000)),
            })
        );
        assert_eq!(
            Spec::parse("htb default 10").unwrap(),
            Spec::Htb(Htb {
                default_class: 0x10,
                r2q: 10
            })
        );
    }

    #[test]
    fn prints_and_parses_back() {
        for text in [
            "delay 10ms",
            "delay 10ms 2ms",
            "delay 10ms 2ms 25%",
            "delay 100ms 20ms distribution normal",
            "delay 100ms 20ms 5% distribution paretonormal",
            "delay 34us",
            "delay 5s",
            "delay 1500us 250us",
            "loss 0.5%",
            "loss 0.3% 25%",
            "delay 1ms 1ms 5% duplicate 1% 10%",
            "loss 0% 0% duplicate 1% 10%",
            "corrupt 0.1%",
            "delay 10ms reorder 25% 50%",
            "delay 10ms reorder 25% gap 3",
            "rate 100mbit",
            "rate 1500kbit",
            "rate 12344bit",
            "delay 1ms limit 10000",
            "delay 10ms 2ms 25% loss 0.5% duplicate 1% reorder 10% corrupt 0.1% rate 1gbit limit 5000",
            "netem",
            "tbf rate 100mbit burst 4kb latency 50ms",
            "tbf rate 8mbit burst 1500b limit 64kb",
            "htb",
            "htb default 10",
            "htb default 1f r2q 5",
        ] {
            let spec = Spec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text, "printing {text:?}");
            assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec);
        }
        // Other spellings print canonically, and the canonical text parses to the same.
        for (text, canonical) in [
            ("netem delay 10ms", "delay 10ms"),
            ("delay 10ms distribution uniform", "delay 10ms"),
            ("delay 0.5s 1000us 0%", "delay 500ms 1ms"),
            ("loss random 1% 0%", "loss 1%"),
            ("loss 0%", "netem"),
            // tc 6.1 sends a duplicate correlation only beside another correlation.
            ("duplicate 1% 10%", "duplicate 1%"),
            ("duplicate 1% 10% delay 1ms", "delay 1ms duplicate 1%"),
            (
                "duplicate 1% 10% corrupt 1% 0%",
                "loss 0% 0% duplicate 1% 10% corrupt 1%",
            ),
            (
                "duplicate 1% 10% reorder 1% 5% delay 1ms",
                "delay 1ms duplicate 1% 10% reorder 1% 5%",
            ),
            ("delay 10ms reorder 5% gap 1", "delay 10ms reorder 5%"),
            ("limit 1000 delay 2ms", "delay 2ms"),
            (
                "tbf rate 100Mbit buffer 32kbit latency 50ms",
                "tbf rate 100mbit burst 4kb latency 50ms",
            ),
            ("rate 1kbps", "rate 8kbit"),
            ("rate 12345bit", "rate 12344bit"), // whole bytes per second, as tc
        ] {
            let spec = Spec::parse(text).unwrap();
            assert_eq!(spec.to_string(), canonical, "printing {text:?}");
            assert_eq!(Spec::parse(canonical).unwrap(), spec);
        }
    }

    #[test]
    fn bad_specs_name_the_token_and_what_is_allowed() {
        let err = |t: &str| Spec::parse(t).unwrap_err().to_string();
        assert!(err("").contains("empty impairment spec"));
        let e = err("delay 10ms jitterbug 5ms");
        assert!(
            e.contains("\"jitterbug\"") && e.contains("allowed: delay"),
            "{e}"
        );
        let e = err("delay 10xs");
        assert!(
            e.contains("\"10xs\"") && e.contains("`delay`") && e.contains("10ms"),
            "{e}"
        );
        let e = err("loss 150%");
        assert!(e.contains("\"150%\"") && e.contains("0 to 100"), "{e}");
        let e = err("rate 100mbits");
        assert!(e.contains("\"100mbits\"") && e.contains("kbit"), "{e}");
        let e = err("delay");
        assert!(e.contains("`delay` needs a value"), "{e}");
        let e = err("loss 1% loss 2%");
        assert!(e.contains("given twice"), "{e}");
        let e = err("reorder 25%");
        assert!(e.contains("reordering needs a delay"), "{e}");
        let e = err("delay 10ms gap 5");
        assert!(e.contains("`gap` needs a reorder"), "{e}");
        let e = err("delay 10ms distribution normal");
        assert!(e.contains("needs a delay and a jitter"), "{e}");
        let e = err("delay 10ms 2ms distribution gaussian");
        assert!(
            e.contains("\"gaussian\"") && e.contains("paretonormal"),
            "{e}"
        );
        let e = err("tbf rate 1mbit");
        assert!(e.contains("`burst`") && e.contains("`latency`"), "{e}");
        let e = err("tbf rate 1mbit burst 10kb latency 5ms limit 10kb");
        assert!(e.contains("not both"), "{e}");
        let e = err("tbf rate 1mbit burst 10kb latency 5ms peakrate 2mbit");
        assert!(
            e.contains("\"peakrate\"") && e.contains("allowed: rate, burst"),
            "{e}"
        );
        let e = err("htb default zz");
        assert!(e.contains("\"zz\"") && e.contains("hexadecimal"), "{e}");
        let e = err("delay 10ms tbf");
        assert!(e.contains("must come first"), "{e}");
        let e = err("loss state 1%");
        assert!(e.contains("not supported"), "{e}");
        let e = err("rate 1mbit 20");
        assert!(e.contains("not supported"), "{e}");
    }
}
