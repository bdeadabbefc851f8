//! netem's options: `tc_netem_qopt` and its attributes as iproute2's `q_netem.c` writes
//! them, and what the kernel dumps decoded back into a [`Netem`] spec.

use crate::dist;
use crate::spec::{Chance, Delay, Netem, Percent, Reorder, Time};

use super::buf::{NlBuf, nlas, u32_at, u64_at};
use super::{DecodeError, EncodeError, Psched, expressible_rate, unsupported};

const TCA_NETEM_CORR: u16 = 1;
pub(super) const TCA_NETEM_DELAY_DIST: u16 = 2;
pub(super) const TCA_NETEM_REORDER: u16 = 3;
const TCA_NETEM_CORRUPT: u16 = 4;
const TCA_NETEM_LOSS: u16 = 5;
const TCA_NETEM_RATE: u16 = 6;
const TCA_NETEM_ECN: u16 = 7;
const TCA_NETEM_RATE64: u16 = 8;
const TCA_NETEM_LATENCY64: u16 = 10;
const TCA_NETEM_JITTER64: u16 = 11;
const TCA_NETEM_SLOT: u16 = 12;
const TCA_NETEM_SLOT_DIST: u16 = 13;
const NETEM_QOPT_LEN: usize = 24;

fn ticks(what: &'static str, time: Time, psched: &Psched) -> Result<u32, EncodeError> {
    if psched.time2big(time.0) {
        return Err(EncodeError::TimeTooLarge { what, time });
    }
    Ok(psched.time2tick(time.0))
}

pub(super) fn encode_netem(n: &Netem, psched: &Psched) -> Result<Vec<u8>, EncodeError> {
    let (latency, jitter) = match &n.delay {
        Some(d) => (
            ticks("delay", d.latency, psched)?,
            match d.jitter {
                Some(j) => ticks("jitter", j, psched)?,
                None => 0,
            },
        ),
        None => (0, 0),
    };
    let prob = |c: &Option<Chance>| c.map_or(0, |c| c.probability.0);
    let corr = |c: &Option<Chance>| c.and_then(|c| c.correlation).map_or(0, |p| p.0);
    let mut buf = NlBuf::default();
    // struct tc_netem_qopt
    buf.put_u32(latency);
    buf.put_u32(n.limit);
    buf.put_u32(prob(&n.loss));
    buf.put_u32(n.reorder.map_or(0, |r| r.gap.max(1)));
    buf.put_u32(prob(&n.duplicate));
    buf.put_u32(jitter);
    // tc 6.1 sends TCA_NETEM_CORR (delay_corr, loss_corr, dup_corr) when a delay, loss,
    // reorder or corrupt correlation was written, even though reorder's and corrupt's
    // travel in their own attributes; never for a duplicate correlation alone. The parser
    // drops a lone duplicate correlation (as tc does), so a spec holds one only when tc
    // would send the attribute, and "any correlation" is tc's condition. (A decoded spec
    // with a lone duplicate correlation prints with the `loss 0% 0%` that makes tc send it.)
    let delay_corr = n.delay.and_then(|d| d.correlation);
    let any_corr = delay_corr.is_some()
        || n.loss.and_then(|c| c.correlation).is_some()
        || n.duplicate.and_then(|c| c.correlation).is_some()
        || n.reorder.and_then(|r| r.correlation).is_some()
        || n.corrupt.and_then(|c| c.correlation).is_some();
    if any_corr {
        let mut c = NlBuf::default();
        c.put_u32(delay_corr.map_or(0, |p| p.0));
        c.put_u32(corr(&n.loss));
        c.put_u32(corr(&n.duplicate));
        buf.attr(TCA_NETEM_CORR, &c.0);
    }
    if let Some(r) = &n.reorder {
        let mut c = NlBuf::default();
        c.put_u32(r.probability.0);
        c.put_u32(r.correlation.map_or(0, |p| p.0));
        buf.attr(TCA_NETEM_REORDER, &c.0);
    }
    if let Some(x) = &n.corrupt {
        let mut c = NlBuf::default();
        c.put_u32(x.probability.0);
        c.put_u32(x.correlation.map_or(0, |p| p.0));
        buf.attr(TCA_NETEM_CORRUPT, &c.0);
    }
    if let Some(rate) = n.rate {
        let rate32 = if rate.0 >= 1 << 32 {
            buf.attr(TCA_NETEM_RATE64, &rate.0.to_le_bytes());
            u32::MAX
        } else {
            rate.0 as u32
        };
        let mut c = NlBuf::default();
        c.put_u32(rate32);
        c.put_u32(0); // packet_overhead
        c.put_u32(0); // cell_size
        c.put_u32(0); // cell_overhead
        buf.attr(TCA_NETEM_RATE, &c.0);
    }
    if let Some(dist) = n.delay.and_then(|d| d.distribution) {
        let table: Vec<u8> = dist::table(dist)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        buf.attr(TCA_NETEM_DELAY_DIST, &table);
    }
    Ok(buf.0)
}

fn nonzero(v: u32) -> Option<Percent> {
    (v != 0).then_some(Percent(v))
}

pub(super) fn decode_netem(o: &[u8], psched: &Psched) -> Result<Netem, DecodeError> {
    if o.len() < NETEM_QOPT_LEN {
        return Err(DecodeError::Truncated("tc_netem_qopt"));
    }
    let field = |i: usize| u32_at(o, i * 4).unwrap_or(0);
    let (mut latency_ticks, limit, loss, gap, duplicate, mut jitter_ticks) =
        (field(0), field(1), field(2), field(3), field(4), field(5));
    let NetemAttrs {
        latency64,
        jitter64,
        corr,
        reorder,
        corrupt,
        rate32,
        rate64,
        distribution,
    } = NetemAttrs::of(&o[NETEM_QOPT_LEN..])?;
    // The kernel caps the 32-bit fields and reports 64-bit nanoseconds beside them.
    let ns_to_ticks = |ns: u64| ((ns as f64 / 1000.0) * psched.tick_in_usec()).round() as u64;
    if latency_ticks == u32::MAX
        && let Some(ns) = latency64
    {
        latency_ticks = ns_to_ticks(ns).min(u64::from(u32::MAX)) as u32;
    }
    if jitter_ticks == u32::MAX
        && let Some(ns) = jitter64
    {
        jitter_ticks = ns_to_ticks(ns).min(u64::from(u32::MAX)) as u32;
    }
    // Ticks to whole microseconds, tc's resolution (ticks no microsecond gives, which only
    // another tool could have set, come back as the nearest).
    let latency = Time(psched.tick2time(latency_ticks));
    let jitter = Time(psched.tick2time(jitter_ticks));
    // What tc refuses to send (and the grammar to parse) is refused here too, rather than
    // decoded into a spec that prints as text nothing accepts.
    if distribution.is_some() && (latency.0 == 0 || jitter.0 == 0) {
        return Err(unsupported(
            "netem",
            "a delay distribution without both a delay and a jitter",
        ));
    }
    if reorder.is_some_and(|(p, _)| p != 0) && latency.0 == 0 {
        return Err(unsupported("netem", "reordering without a delay"));
    }
    let delay = (latency.0 != 0 || jitter.0 != 0).then(|| Delay {
        latency,
        jitter: (jitter.0 != 0).then_some(jitter),
        correlation: nonzero(corr[0]),
        distribution,
    });
    let chance = |p: u32, c: u32| {
        (p != 0).then_some(Chance {
            probability: Percent(p),
            correlation: nonzero(c),
        })
    };
    // The kernel takes the larger of the two (and dumps the 64-bit one only when the
    // rate does not fit 32 bits); 0 is no rate limit.
    let rate = match rate64.unwrap_or(0).max(u64::from(rate32)) {
        0 => None,
        r => Some(expressible_rate("netem", r)?),
    };
    Ok(Netem {
        limit,
        delay,
        loss: chance(loss, corr[1]),
        duplicate: chance(duplicate, corr[2]),
        reorder: reorder.filter(|(p, _)| *p != 0).map(|(p, c)| Reorder {
            probability: Percent(p),
            correlation: nonzero(c),
            gap: gap.max(1),
        }),
        corrupt: corrupt.and_then(|(p, c)| chance(p, c)),
        rate,
    })
}

/// A netem qdisc's attributes after its `tc_netem_qopt`, as the kernel dumps them.
struct NetemAttrs {
    latency64: Option<u64>,
    jitter64: Option<u64>,
    /// The delay, loss and duplicate correlations.
    corr: [u32; 3],
    reorder: Option<(u32, u32)>,
    corrupt: Option<(u32, u32)>,
    rate32: u32,
    rate64: Option<u64>,
    distribution: Option<crate::spec::Distribution>,
}

impl NetemAttrs {
    /// The attributes of `attrs`; what tc's grammar cannot write (a loss model, ECN,
    /// slotting, rate overheads, a custom distribution table) is refused.
    fn of(attrs: &[u8]) -> Result<NetemAttrs, DecodeError> {
        let mut latency64 = None;
        let mut jitter64 = None;
        let mut corr = [0u32; 3];
        let mut reorder = None;
        let mut corrupt = None;
        let mut rate32 = 0u32;
        let mut rate64 = None;
        let mut distribution = None;
        for (ty, _, p) in nlas(attrs) {
            match ty {
                TCA_NETEM_CORR => {
                    for (i, c) in corr.iter_mut().enumerate() {
                        *c = u32_at(p, i * 4).ok_or(DecodeError::Truncated("tc_netem_corr"))?;
                    }
                }
                TCA_NETEM_REORDER => {
                    reorder = Some((
                        u32_at(p, 0).ok_or(DecodeError::Truncated("tc_netem_reorder"))?,
                        u32_at(p, 4).ok_or(DecodeError::Truncated("tc_netem_reorder"))?,
                    ));
                }
                TCA_NETEM_CORRUPT => {
                    corrupt = Some((
                        u32_at(p, 0).ok_or(DecodeError::Truncated("tc_netem_corrupt"))?,
                        u32_at(p, 4).ok_or(DecodeError::Truncated("tc_netem_corrupt"))?,
                    ));
                }
                TCA_NETEM_RATE => {
                    rate32 = u32_at(p, 0).ok_or(DecodeError::Truncated("tc_netem_rate"))?;
                    let extra = (1..4).any(|i| u32_at(p, i * 4).unwrap_or(0) != 0);
                    if extra {
                        return Err(unsupported("netem", "rate packet/cell overheads"));
                    }
                }
                TCA_NETEM_RATE64 => {
                    rate64 = Some(u64_at(p, 0).ok_or(DecodeError::Truncated("rate64"))?);
                }
                TCA_NETEM_LATENCY64 => latency64 = u64_at(p, 0),
                TCA_NETEM_JITTER64 => jitter64 = u64_at(p, 0),
                TCA_NETEM_DELAY_DIST => {
                    let values: Vec<i16> = p
                        .chunks_exact(2)
                        .map(|c| i16::from_ne_bytes([c[0], c[1]]))
                        .collect();
                    distribution = Some(
                        dist::identify(&values)
                            .ok_or_else(|| unsupported("netem", "a custom distribution table"))?,
                    );
                }
                TCA_NETEM_LOSS if !p.is_empty() => {
                    return Err(unsupported("netem", "a state or gemodel loss model"));
                }
                TCA_NETEM_ECN => return Err(unsupported("netem", "ecn")),
                TCA_NETEM_SLOT | TCA_NETEM_SLOT_DIST => {
                    return Err(unsupported("netem", "slotting"));
                }
                _ => {} // padding, the PRNG seed the kernel always reports
            }
        }
        Ok(NetemAttrs {
            latency64,
            jitter64,
            corr,
            reorder,
            corrupt,
            rate32,
            rate64,
            distribution,
        })
    }
}
