//! The grammar: a spec's words read keyword by keyword into a netem, tbf or htb spec,
//! each keyword once, zeros normalised away and what needs another setting refused.

use super::values::{Percent, Rate, Size, Time};
use super::{
    Chance, DIST_NAMES, Delay, Distribution, HTB_KEYWORDS, Htb, NETEM_DEFAULT_LIMIT,
    NETEM_KEYWORDS, Netem, PERCENT_HELP, RATE_HELP, Reorder, SIZE_HELP, SpecError, TBF_KEYWORDS,
    TIME_HELP, Tbf, TbfLimit,
};

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

pub(super) fn parse_netem(tokens: &[&str]) -> Result<Netem, SpecError> {
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

pub(super) fn parse_tbf(tokens: &[&str]) -> Result<Tbf, SpecError> {
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

pub(super) fn parse_htb(tokens: &[&str]) -> Result<Htb, SpecError> {
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
