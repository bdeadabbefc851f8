//! Tests of the qdisc encoding: tc's psched arithmetic, tbf options at the edges, what tc
//! cannot write refused on decoding, and the kernel's extended-ack TLVs.

use super::*;
use crate::dist;
use crate::spec::TbfLimit;

use super::buf::NlBuf;
use super::netem::{TCA_NETEM_DELAY_DIST, TCA_NETEM_REORDER};
use super::tbf::{
    TC_LINKLAYER_ETHERNET, TCA_TBF_BURST, TCA_TBF_PARMS, TCA_TBF_RATE64, tbf_limit_bytes,
};

#[test]
fn psched_matches_tc_core() {
    let p = Psched::parse("000003e8 00000040 000f4240 3b9aca00\n").unwrap();
    assert_eq!(p, Psched::KERNEL);
    assert_eq!(p.tick_in_usec(), 15.625);
    assert_eq!(p.time2tick(10_000), 156_250);
    assert_eq!(p.time2tick(34), 531);
    for us in [0, 1, 33, 34, 250, 999, 10_000, 5_000_000, 274_877_906] {
        assert_eq!(p.tick2time(p.time2tick(us)), us, "{us}");
    }
    assert!(p.time2big(274_877_907));
    assert_eq!(p.xmittime(12_500_000, 4096), Some(5109));
    assert!(Psched::parse("zz").is_none());
}

/// TCA_TBF_PARMS (rate, limit, buffer) and TCA_TBF_BURST, as a kernel dump holds them.
fn tbf_options(rate32: u32, limit: u32, buffer: u32, burst: u32) -> Vec<u8> {
    let mut parms = NlBuf::default();
    parms
        .0
        .extend_from_slice(&[3, TC_LINKLAYER_ETHERNET, 0, 0, 0xFF, 0xFF, 0, 0]);
    parms.put_u32(rate32);
    parms.0.extend_from_slice(&[0; 12]);
    parms.put_u32(limit);
    parms.put_u32(buffer);
    parms.put_u32(0);
    let mut buf = NlBuf::default();
    buf.attr(TCA_TBF_PARMS, &parms.0);
    buf.attr(TCA_TBF_BURST, &burst.to_ne_bytes());
    buf.0
}

#[test]
fn a_tbf_limit_near_the_largest_latency_decodes() {
    // 3 bytes/s: the latency giving this limit is 4294666667us, whose next whole
    // second is past u32::MAX (this overflowed).
    let o = tbf_options(3, 12_885, 1, 1);
    let Ok(Spec::Tbf(t)) = decode_options("tbf", &o, &Psched::KERNEL) else {
        panic!("not a tbf")
    };
    assert_eq!(t.burst, Size(1));
    let limit = match t.limit {
        TbfLimit::Latency(l) => tbf_limit_bytes(t.rate, l, t.burst),
        TbfLimit::Bytes(b) => Some(b.0),
    };
    assert_eq!(limit, Some(12_885));
}

#[test]
fn what_tc_cannot_write_does_not_decode() {
    let psched = Psched::KERNEL;
    let e = decode_options("tbf", &tbf_options(1000, 0, 1, 1), &psched).unwrap_err();
    assert!(e.to_string().contains("zero queue limit"), "{e}");
    let e = decode_options("tbf", &tbf_options(1000, 5000, 1, 0), &psched).unwrap_err();
    assert!(e.to_string().contains("zero burst"), "{e}");
    let mut rate64 = tbf_options(u32::MAX, 5000, 1, 1);
    let mut b = NlBuf(std::mem::take(&mut rate64));
    b.attr(TCA_TBF_RATE64, &(u64::MAX / 8).to_ne_bytes());
    let e = decode_options("tbf", &b.0, &psched).unwrap_err();
    assert!(e.to_string().contains("cannot write"), "{e}");
    // netem: reordering or a distribution without a delay.
    let mut n = NlBuf::default();
    for w in [0u32, 1000, 0, 1, 0, 0] {
        n.put_u32(w);
    }
    n.attr(TCA_NETEM_REORDER, &[1, 0, 0, 0, 0, 0, 0, 0]);
    let e = decode_options("netem", &n.0, &psched).unwrap_err();
    assert!(e.to_string().contains("reordering without a delay"), "{e}");
    let mut n = NlBuf::default();
    for w in [15_625u32, 1000, 0, 0, 0, 0] {
        n.put_u32(w);
    }
    let table: Vec<u8> = dist::table(crate::spec::Distribution::Normal)
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    n.attr(TCA_NETEM_DELAY_DIST, &table);
    let e = decode_options("netem", &n.0, &psched).unwrap_err();
    assert!(e.to_string().contains("distribution without"), "{e}");
}

#[test]
fn ext_ack_tlvs() {
    // A capped error: echoed header (16 bytes), then NLMSGERR_ATTR_MSG.
    let mut p = vec![0u8; 16];
    p[0] = 0x4c;
    let msg = b"Specified qdisc kind is unknown.\0";
    let len = (4 + msg.len()) as u16;
    p.extend_from_slice(&len.to_ne_bytes());
    p.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
    p.extend_from_slice(msg);
    while !p.len().is_multiple_of(4) {
        p.push(0);
    }
    let ack = parse_ext_ack(NLM_F_CAPPED | NLM_F_ACK_TLVS, &p);
    assert_eq!(
        ack.message.as_deref(),
        Some("Specified qdisc kind is unknown.")
    );
    assert_eq!(parse_ext_ack(NLM_F_CAPPED, &p), ExtAck::default());
}
