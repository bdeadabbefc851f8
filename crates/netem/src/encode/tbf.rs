//! tbf's options: `tc_tbf_qopt`, the rate table and the burst as iproute2's `q_tbf.c`
//! writes them, and what the kernel dumps decoded back into a [`Tbf`] spec.

use crate::spec::{Rate, Size, Tbf, TbfLimit, Time};

use super::buf::{NlBuf, nlas, u32_at, u64_at};
use super::{DecodeError, EncodeError, Psched, expressible_rate, unsupported};

pub(super) const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RTAB: u16 = 2;
pub(super) const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_PRATE64: u16 = 5;
pub(super) const TCA_TBF_BURST: u16 = 6;
const TBF_QOPT_LEN: usize = 36;
pub(super) const TC_LINKLAYER_ETHERNET: u8 = 1;

/// tc's tbf queue limit for a latency: rate * latency + burst, in bytes.
pub(super) fn tbf_limit_bytes(rate: Rate, latency: Time, burst: Size) -> Option<u32> {
    let lim = rate.0 as f64 * f64::from(latency.0) / 1_000_000.0 + f64::from(burst.0);
    (lim < 4_294_967_296.0).then_some(lim as u32)
}

pub(super) fn encode_tbf(t: &Tbf, psched: &Psched) -> Result<Vec<u8>, EncodeError> {
    let out_of_range = |why| EncodeError::TbfOutOfRange {
        burst: t.burst,
        rate: t.rate,
        why,
    };
    let rate32 = if t.rate.0 >= 1 << 32 {
        u32::MAX
    } else {
        t.rate.0 as u32
    };
    let limit = match t.limit {
        TbfLimit::Latency(l) => tbf_limit_bytes(t.rate, l, t.burst)
            .ok_or_else(|| out_of_range("the queue limit (rate * latency + burst) exceeds 4gb"))?,
        TbfLimit::Bytes(b) => b.0,
    };
    // tc_calc_rtable with mtu 0 (2047) and cell_log -1: cell_log 3, 256 slots.
    let cell_log = 3u32;
    let mut rtab = NlBuf::default();
    for i in 0..256u32 {
        let size = (i + 1) << cell_log;
        let ticks = psched
            .xmittime(u64::from(rate32), size)
            .ok_or_else(|| out_of_range("the rate is too low for tc's rate table"))?;
        rtab.put_u32(ticks);
    }
    let buffer = psched
        .xmittime(u64::from(rate32), t.burst.0)
        .ok_or_else(|| out_of_range("the burst takes longer than 2^32 psched ticks to send"))?;
    let mut parms = NlBuf::default();
    // rate: struct tc_ratespec
    parms.0.push(cell_log as u8);
    parms.0.push(TC_LINKLAYER_ETHERNET);
    parms.put_u16(0); // overhead
    parms.put_u16(0xFFFF); // cell_align = -1
    parms.put_u16(0); // mpu
    parms.put_u32(rate32);
    // peakrate: unused
    parms.0.extend_from_slice(&[0; 12]);
    parms.put_u32(limit);
    parms.put_u32(buffer);
    parms.put_u32(0); // mtu
    let mut buf = NlBuf::default();
    buf.attr(TCA_TBF_PARMS, &parms.0);
    buf.attr(TCA_TBF_BURST, &t.burst.0.to_le_bytes());
    if t.rate.0 >= 1 << 32 {
        buf.attr(TCA_TBF_RATE64, &t.rate.0.to_le_bytes());
    }
    buf.attr(TCA_TBF_RTAB, &rtab.0);
    Ok(buf.0)
}

pub(super) fn decode_tbf(o: &[u8], psched: &Psched) -> Result<Tbf, DecodeError> {
    let mut parms = None;
    let mut rate64 = None;
    let mut burst = None;
    for (ty, _, p) in nlas(o) {
        match ty {
            TCA_TBF_PARMS => {
                if p.len() < TBF_QOPT_LEN {
                    return Err(DecodeError::Truncated("tc_tbf_qopt"));
                }
                parms = Some(p);
            }
            TCA_TBF_RATE64 => rate64 = u64_at(p, 0),
            TCA_TBF_BURST => burst = u32_at(p, 0),
            TCA_TBF_PRATE64 => return Err(unsupported("tbf", "a peak rate")),
            _ => {}
        }
    }
    let p = parms.ok_or(DecodeError::Truncated("tbf options without TCA_TBF_PARMS"))?;
    let rate32 = u32_at(p, 8).unwrap_or(0);
    if u32_at(p, 20).unwrap_or(0) != 0 {
        return Err(unsupported("tbf", "a peak rate"));
    }
    let limit = u32_at(p, 24).unwrap_or(0);
    let buffer = u32_at(p, 28).unwrap_or(0);
    // The kernel uses the 64-bit rate when one is given and not 0.
    let rate64 = rate64.filter(|r| *r != 0);
    let rate = expressible_rate("tbf", rate64.unwrap_or(u64::from(rate32)))?;
    if rate.0 == 0 {
        return Err(unsupported("tbf", "a zero rate"));
    }
    let burst = match burst {
        Some(b) => Size(b),
        None => burst_from_ticks(rate32, buffer, psched),
    };
    // tc (and the grammar) need both; only another tool could have set them to zero.
    if burst.0 == 0 {
        return Err(unsupported("tbf", "a zero burst"));
    }
    if limit == 0 {
        return Err(unsupported("tbf", "a zero queue limit"));
    }
    Ok(Tbf {
        rate,
        burst,
        limit: tbf_limit_from_bytes(rate, burst, limit),
    })
}

/// The burst (in bytes) whose transmit time is `buffer` ticks, preferring round sizes.
fn burst_from_ticks(rate32: u32, buffer: u32, psched: &Psched) -> Size {
    let us = f64::from(psched.tick2time(buffer));
    let r = f64::from(rate32.max(1));
    let lo = (us * r / 1_000_000.0).ceil().max(1.0) as u64;
    let hi = (((us + 1.0) * r / 1_000_000.0).ceil() as u64).max(lo);
    let fits = |b: u64| {
        u32::try_from(b).is_ok_and(|b| psched.xmittime(u64::from(rate32), b) == Some(buffer))
    };
    for unit in [1u64 << 20, 1 << 10, 1] {
        let first = lo.next_multiple_of(unit);
        if first <= hi && fits(first) {
            return Size(first as u32);
        }
    }
    Size(lo.min(u64::from(u32::MAX)) as u32)
}

/// A tbf byte limit as the simplest spec: a latency when one reproduces it exactly and
/// prints shorter than the byte form (on a tie, bytes).
fn tbf_limit_from_bytes(rate: Rate, burst: Size, limit: u32) -> TbfLimit {
    let bytes = TbfLimit::Bytes(Size(limit));
    if limit <= burst.0 {
        return bytes;
    }
    let guess = (f64::from(limit - burst.0) * 1_000_000.0 / rate.0 as f64).ceil();
    let mut found: Option<Time> = None;
    for cand in [guess - 1.0, guess, guess + 1.0] {
        if cand >= 1.0
            && cand <= f64::from(u32::MAX)
            && tbf_limit_bytes(rate, Time(cand as u32), burst) == Some(limit)
        {
            found = Some(Time(cand as u32));
            break;
        }
    }
    // Among latencies giving the same limit, a rounder one prints shorter.
    if let Some(t) = found {
        let mut best = t;
        for unit in [1_000_000u32, 1_000, 100, 10] {
            // Near u32::MAX the next multiple may not exist.
            let Some(c) = t.0.checked_next_multiple_of(unit) else {
                continue;
            };
            if tbf_limit_bytes(rate, Time(c), burst) == Some(limit) {
                best = Time(c);
                break;
            }
        }
        if best.to_string().len() < Size(limit).to_string().len() {
            return TbfLimit::Latency(best);
        }
    }
    bytes
}
