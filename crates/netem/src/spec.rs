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

use std::str::FromStr;

mod display;
mod parse;
mod values;

use parse::{parse_htb, parse_netem, parse_tbf};
pub use values::{Percent, Rate, Size, Time};

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

#[cfg(test)]
mod tests;
