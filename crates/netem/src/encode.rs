//! Pure encoding and decoding of tc qdisc netlink messages (no I/O).
//!
//! The split follows rust-netlink's: this module turns a [`Spec`] into the exact bytes of
//! an `RTM_NEWQDISC` / `RTM_DELQDISC` request, and bytes back into a spec; `apply` only
//! moves messages over a socket. Tests replay requests captured from iproute2 6.1 (`tc`)
//! and answers captured from a kernel.
//!
//! Why by hand: `netlink-packet-route` (0.34) models the tc message header and the
//! `TCA_KIND`/`TCA_OPTIONS` attributes, but not the options of netem, tbf or htb. Its
//! options model is a list of NLAs, while netem's `TCA_OPTIONS` is a C struct
//! (`tc_netem_qopt`) *followed by* NLAs, which no NLA list can express; it parses unknown
//! kinds' options as one opaque NLA. So the options payload (structs, rate tables,
//! distribution tables) is written here over plain byte buffers, in the order and layout
//! of iproute2's `q_netem.c`, `q_tbf.c` and `q_htb.c`. The outer message is written by
//! hand too ([`QdiscRequest::to_bytes`], for byte-for-byte tests) and also built from the
//! crate's types ([`QdiscRequest::to_netlink`], what `apply` sends through rtnetlink's
//! `Handle::request`), with the options carried as an opaque `TCA_OPTIONS` attribute; a
//! test checks both serialise to the same bytes.

use netlink_packet_core::{
    DefaultNla, Emitable, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CAPPED, NLM_F_CREATE, NLM_F_DUMP,
    NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload, Nla,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcHeader, TcMessage, TcOption};

use crate::dist;
use crate::spec::{
    Chance, Delay, Htb, Netem, Percent, Rate, Reorder, Size, Spec, Tbf, TbfLimit, Time,
};

/// `RTM_NEWQDISC`.
pub const RTM_NEWQDISC: u16 = 36;
/// `RTM_DELQDISC`.
pub const RTM_DELQDISC: u16 = 37;
/// `RTM_GETQDISC`.
pub const RTM_GETQDISC: u16 = 38;
/// `TCA_KIND`.
pub const TCA_KIND: u16 = 1;
/// `TCA_OPTIONS`.
pub const TCA_OPTIONS: u16 = 2;
/// `TC_H_ROOT`: the parent of an interface's root qdisc.
pub const TC_H_ROOT: u32 = 0xFFFF_FFFF;

const NLMSG_HDRLEN: usize = 16;
const TCMSG_LEN: usize = 20;
const NLA_TYPE_MASK: u16 = 0x3FFF;

const TCA_NETEM_CORR: u16 = 1;
const TCA_NETEM_DELAY_DIST: u16 = 2;
const TCA_NETEM_REORDER: u16 = 3;
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

const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RTAB: u16 = 2;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_PRATE64: u16 = 5;
const TCA_TBF_BURST: u16 = 6;
const TBF_QOPT_LEN: usize = 36;
const TC_LINKLAYER_ETHERNET: u8 = 1;

const TCA_HTB_INIT: u16 = 2;
const HTB_VERSION: u32 = 3;

const NLMSGERR_ATTR_MSG: u16 = 1;
const NLMSGERR_ATTR_OFFS: u16 = 2;

/// psched clock parameters (`/proc/net/psched`), which tc uses to turn microseconds into
/// the "ticks" of `tc_netem_qopt` and tbf's buffer and rate table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Psched {
    /// Nanoseconds per microsecond as the kernel reports it (`t2us`).
    pub t2us: u32,
    /// Nanoseconds per tick (`us2t`).
    pub us2t: u32,
    /// Clock resolution (`clock_res`).
    pub clock_res: u32,
}

impl Psched {
    /// What every kernel since 2.6.3x reports: 1000, 64 (ticks of 64 ns), 1 MHz.
    pub const KERNEL: Psched = Psched {
        t2us: 1000,
        us2t: 64,
        clock_res: 1_000_000,
    };

    /// Parses the content of `/proc/net/psched` (hex words; the first three count).
    pub fn parse(text: &str) -> Option<Psched> {
        let mut words = text
            .split_whitespace()
            .map(|w| u32::from_str_radix(w, 16).ok());
        let t2us = words.next()??;
        let us2t = words.next()??;
        let clock_res = words.next()??;
        (t2us != 0 && us2t != 0 && clock_res != 0).then_some(Psched {
            t2us,
            us2t,
            clock_res,
        })
    }

    /// Reads `/proc/net/psched`, falling back to [`Psched::KERNEL`] if it is unreadable.
    pub fn read() -> Psched {
        std::fs::read_to_string("/proc/net/psched")
            .ok()
            .and_then(|t| Psched::parse(&t))
            .unwrap_or(Psched::KERNEL)
    }

    /// tc_core_init's `tick_in_usec`.
    pub fn tick_in_usec(&self) -> f64 {
        // Compatibility hack of tc: a nanosecond clock advertises t2us = 1000 meaning 1.
        let t2us = if self.clock_res == 1_000_000_000 {
            self.us2t
        } else {
            self.t2us
        };
        let clock_factor = f64::from(self.clock_res) / 1_000_000.0;
        f64::from(t2us) / f64::from(self.us2t) * clock_factor
    }

    /// tc_core_time2tick: microseconds to ticks (truncating, as tc).
    pub fn time2tick(&self, us: u32) -> u32 {
        (f64::from(us) * self.tick_in_usec()) as u32
    }

    /// tc_core_time2big: whether the ticks of `us` overflow 32 bits.
    pub fn time2big(&self, us: u32) -> bool {
        (f64::from(us) * self.tick_in_usec()) as u64 > u64::from(u32::MAX)
    }

    /// The whole number of microseconds that `time2tick` maps to `ticks` (exact for ticks
    /// made by `time2tick` while a tick is at most a microsecond); the nearest otherwise.
    pub fn tick2time(&self, ticks: u32) -> u32 {
        let exact = f64::from(ticks) / self.tick_in_usec();
        let guess = exact.ceil();
        for cand in [guess, guess - 1.0, guess + 1.0] {
            if (0.0..=f64::from(u32::MAX)).contains(&cand) && self.time2tick(cand as u32) == ticks {
                return cand as u32;
            }
        }
        exact.round().min(f64::from(u32::MAX)) as u32
    }

    /// tc_calc_xmittime: ticks to send `size` bytes at `rate` bytes/s (None if it overflows).
    pub fn xmittime(&self, rate: u64, size: u32) -> Option<u32> {
        let us = 1_000_000.0 * (f64::from(size) / rate as f64);
        if !(0.0..4_294_967_296.0).contains(&us) {
            return None;
        }
        let us = us as u32;
        (!self.time2big(us)).then(|| self.time2tick(us))
    }
}

/// A spec that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A time too long for 32-bit psched ticks.
    #[error("{what} {time} is too large: it overflows the kernel's 32-bit psched ticks")]
    TimeTooLarge {
        /// Which value.
        what: &'static str,
        /// The value.
        time: Time,
    },
    /// A tbf whose burst or queue does not fit the kernel's fields.
    #[error("tbf burst {burst} at rate {rate}: {why}")]
    TbfOutOfRange {
        /// The burst.
        burst: Size,
        /// The rate.
        rate: Rate,
        /// What overflows.
        why: &'static str,
    },
}

/// A bytes message that is not what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Too short for what it claims to hold.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// Not a qdisc message.
    #[error("not a qdisc message (netlink type {0})")]
    NotQdisc(u16),
    /// A qdisc without TCA_KIND.
    #[error("qdisc message without TCA_KIND")]
    NoKind,
    /// Options this crate cannot express as a spec.
    #[error("{kind} options not expressible as a spec: {what}")]
    Unsupported {
        /// The qdisc kind.
        kind: String,
        /// What is not supported.
        what: String,
    },
}

/// What a qdisc request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QdiscOp {
    /// `tc qdisc add`: NLM_F_CREATE | NLM_F_EXCL.
    Add,
    /// `tc qdisc replace`: NLM_F_CREATE | NLM_F_REPLACE. With handle 0 (or the root's own
    /// handle) and a root of the same kind the kernel *changes* that qdisc in place, so
    /// options the new spec does not name keep their old values (netem's reorder, corrupt,
    /// rate...); with a handle no qdisc of the interface has, it creates a new qdisc and
    /// swaps it in for the old one atomically (what `tsload netem apply` does).
    Replace,
    /// `tc qdisc change`: no create flags (the qdisc must exist).
    Change,
    /// `tc qdisc del`: RTM_DELQDISC.
    Delete,
}

impl QdiscOp {
    /// The netlink message type.
    pub fn message_type(self) -> u16 {
        match self {
            QdiscOp::Delete => RTM_DELQDISC,
            _ => RTM_NEWQDISC,
        }
    }

    /// The netlink flags (always with NLM_F_REQUEST | NLM_F_ACK, as tc sends them).
    pub fn flags(self) -> u16 {
        NLM_F_REQUEST
            | NLM_F_ACK
            | match self {
                QdiscOp::Add => NLM_F_CREATE | NLM_F_EXCL,
                QdiscOp::Replace => NLM_F_CREATE | NLM_F_REPLACE,
                QdiscOp::Change | QdiscOp::Delete => 0,
            }
    }

    /// tc's word for it.
    pub fn name(self) -> &'static str {
        match self {
            QdiscOp::Add => "add",
            QdiscOp::Replace => "replace",
            QdiscOp::Change => "change",
            QdiscOp::Delete => "del",
        }
    }
}

/// One qdisc request, ready to be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdiscRequest {
    /// What to do.
    pub op: QdiscOp,
    /// `tcm_ifindex`.
    pub ifindex: i32,
    /// `tcm_handle` (0: let the kernel choose).
    pub handle: u32,
    /// `tcm_parent` ([`TC_H_ROOT`] for the root qdisc).
    pub parent: u32,
    /// `TCA_KIND` (None for a delete).
    pub kind: Option<String>,
    /// The `TCA_OPTIONS` payload, when there is one.
    pub options: Option<Vec<u8>>,
}

impl QdiscRequest {
    /// A request installing `spec` as the root qdisc of `ifindex`.
    pub fn root(
        op: QdiscOp,
        ifindex: i32,
        handle: u32,
        spec: &Spec,
        psched: &Psched,
    ) -> Result<QdiscRequest, EncodeError> {
        let options = encode_options(spec, psched)?;
        Ok(QdiscRequest {
            op,
            ifindex,
            handle,
            parent: TC_H_ROOT,
            kind: Some(spec.kind().to_string()),
            options: Some(options),
        })
    }

    /// A request installing a qdisc from its raw kind and options (e.g. to restore one
    /// that was dumped).
    pub fn raw(
        op: QdiscOp,
        ifindex: i32,
        handle: u32,
        parent: u32,
        kind: &str,
        options: Option<Vec<u8>>,
    ) -> QdiscRequest {
        QdiscRequest {
            op,
            ifindex,
            handle,
            parent,
            kind: Some(kind.to_string()),
            options,
        }
    }

    /// `tc qdisc del dev DEV root`.
    pub fn delete_root(ifindex: i32) -> QdiscRequest {
        QdiscRequest {
            op: QdiscOp::Delete,
            ifindex,
            handle: 0,
            parent: TC_H_ROOT,
            kind: None,
            options: None,
        }
    }

    /// The request's bytes as tc writes them (nlmsg_seq and nlmsg_pid zero).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut buf = NlBuf::default();
        buf.put_u32(0); // nlmsg_len, set below
        buf.put_u16(self.op.message_type());
        buf.put_u16(self.op.flags());
        buf.put_u32(0); // nlmsg_seq
        buf.put_u32(0); // nlmsg_pid
        put_tcmsg(&mut buf, self.ifindex, self.handle, self.parent);
        if let Some(kind) = &self.kind {
            let mut name = kind.as_bytes().to_vec();
            name.push(0);
            buf.attr(TCA_KIND, &name);
        }
        if let Some(options) = &self.options {
            buf.attr(TCA_OPTIONS, options);
        }
        buf.finish_message()
    }

    /// The same request as rtnetlink's message type, for `Handle::request`. The options
    /// travel as one opaque `TCA_OPTIONS` attribute, so the bytes are those of
    /// [`QdiscRequest::to_bytes`] (the connection fills in the sequence number).
    pub fn to_netlink(&self) -> NetlinkMessage<RouteNetlinkMessage> {
        let mut attributes = Vec::new();
        if let Some(kind) = &self.kind {
            attributes.push(TcAttribute::Kind(kind.clone()));
        }
        if let Some(options) = &self.options {
            attributes.push(TcAttribute::Other(DefaultNla::new(
                TCA_OPTIONS,
                options.clone(),
            )));
        }
        let message = TcMessage::from_parts(
            TcHeader {
                index: self.ifindex,
                handle: TcHandle::from(self.handle),
                parent: TcHandle::from(self.parent),
                ..Default::default()
            },
            attributes,
        );
        let payload = match self.op {
            QdiscOp::Delete => RouteNetlinkMessage::DelQueueDiscipline(message),
            _ => RouteNetlinkMessage::NewQueueDiscipline(message),
        };
        let mut header = NetlinkHeader::default();
        header.flags = self.op.flags();
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
        msg.finalize();
        msg
    }
}

/// A dump request for the qdiscs of `ifindex` (0: all interfaces).
pub fn dump_qdiscs(ifindex: i32) -> NetlinkMessage<RouteNetlinkMessage> {
    let message = TcMessage::with_index(ifindex);
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut msg = NetlinkMessage::new(
        header,
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::GetQueueDiscipline(message)),
    );
    msg.finalize();
    msg
}

/// The `TCA_OPTIONS` payload of a spec, as tc builds it.
pub fn encode_options(spec: &Spec, psched: &Psched) -> Result<Vec<u8>, EncodeError> {
    match spec {
        Spec::Netem(n) => encode_netem(n, psched),
        Spec::Tbf(t) => encode_tbf(t, psched),
        Spec::Htb(h) => Ok(encode_htb(h)),
    }
}

fn ticks(what: &'static str, time: Time, psched: &Psched) -> Result<u32, EncodeError> {
    if psched.time2big(time.0) {
        return Err(EncodeError::TimeTooLarge { what, time });
    }
    Ok(psched.time2tick(time.0))
}

fn encode_netem(n: &Netem, psched: &Psched) -> Result<Vec<u8>, EncodeError> {
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

/// tc's tbf queue limit for a latency: rate * latency + burst, in bytes.
fn tbf_limit_bytes(rate: Rate, latency: Time, burst: Size) -> Option<u32> {
    let lim = rate.0 as f64 * f64::from(latency.0) / 1_000_000.0 + f64::from(burst.0);
    (lim < 4_294_967_296.0).then_some(lim as u32)
}

fn encode_tbf(t: &Tbf, psched: &Psched) -> Result<Vec<u8>, EncodeError> {
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

fn encode_htb(h: &Htb) -> Vec<u8> {
    let mut glob = NlBuf::default();
    glob.put_u32(HTB_VERSION);
    glob.put_u32(h.r2q);
    glob.put_u32(h.default_class);
    glob.put_u32(0); // debug
    glob.put_u32(0); // direct_pkts
    let mut buf = NlBuf::default();
    buf.attr(TCA_HTB_INIT, &glob.0);
    buf.0
}

fn put_tcmsg(buf: &mut NlBuf, ifindex: i32, handle: u32, parent: u32) {
    buf.0.push(0); // tcm_family
    buf.0.push(0);
    buf.put_u16(0);
    buf.0.extend_from_slice(&ifindex.to_le_bytes());
    buf.put_u32(handle);
    buf.put_u32(parent);
    buf.put_u32(0); // tcm_info
}

/// A growable little-endian (host order on the targets tc runs on) netlink buffer.
#[derive(Default)]
struct NlBuf(Vec<u8>);

impl NlBuf {
    fn put_u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }

    fn put_u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }

    fn align(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }

    /// addattr_l: header, payload, padding to 4 bytes.
    fn attr(&mut self, kind: u16, payload: &[u8]) {
        self.align();
        let len = u16::try_from(4 + payload.len()).expect("netlink attribute over 64 KiB");
        self.put_u16(len);
        self.put_u16(kind);
        self.0.extend_from_slice(payload);
        self.align();
    }

    fn finish_message(mut self) -> Vec<u8> {
        self.align();
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Iterates the NLAs of a buffer as (type without flags, raw type, payload).
fn nlas(mut b: &[u8]) -> impl Iterator<Item = (u16, u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let kind = u16_at(b, 2)?;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        let next = len.next_multiple_of(4).min(b.len());
        b = &b[next..];
        Some((kind & NLA_TYPE_MASK, kind, payload))
    })
}

/// A tc message (qdisc or class) as raw fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcMsg {
    /// Netlink message type.
    pub message_type: u16,
    /// Netlink flags.
    pub flags: u16,
    /// `tcm_ifindex`.
    pub ifindex: i32,
    /// `tcm_handle`.
    pub handle: u32,
    /// `tcm_parent`.
    pub parent: u32,
    /// `TCA_KIND`.
    pub kind: Option<String>,
    /// The `TCA_OPTIONS` payload.
    pub options: Option<Vec<u8>>,
}

/// Decodes one tc netlink message from its bytes.
pub fn decode_tc_message(bytes: &[u8]) -> Result<TcMsg, DecodeError> {
    let len = u32_at(bytes, 0).ok_or(DecodeError::Truncated("netlink header"))? as usize;
    if len < NLMSG_HDRLEN + TCMSG_LEN || len > bytes.len() {
        return Err(DecodeError::Truncated("tc message"));
    }
    let bytes = &bytes[..len];
    let message_type = u16_at(bytes, 4).ok_or(DecodeError::Truncated("netlink header"))?;
    let flags = u16_at(bytes, 6).ok_or(DecodeError::Truncated("netlink header"))?;
    let t = &bytes[NLMSG_HDRLEN..];
    let ifindex = i32::from_ne_bytes(t[4..8].try_into().unwrap_or([0; 4]));
    let handle = u32_at(t, 8).ok_or(DecodeError::Truncated("tcmsg"))?;
    let parent = u32_at(t, 12).ok_or(DecodeError::Truncated("tcmsg"))?;
    let mut kind = None;
    let mut options = None;
    for (ty, _, payload) in nlas(&t[TCMSG_LEN..]) {
        match ty {
            TCA_KIND => {
                let name = payload.split(|b| *b == 0).next().unwrap_or_default();
                kind = Some(String::from_utf8_lossy(name).into_owned());
            }
            TCA_OPTIONS => options = Some(payload.to_vec()),
            _ => {}
        }
    }
    Ok(TcMsg {
        message_type,
        flags,
        ifindex,
        handle,
        parent,
        kind,
        options,
    })
}

impl TcMsg {
    /// From rtnetlink's parsed message. Options of kinds netlink-packet-route does not
    /// model arrive as one opaque `TCA_OPTIONS` attribute and are taken as they are;
    /// modelled kinds (fq_codel, ingress) are emitted back to their bytes.
    pub fn from_rtnl(message_type: u16, flags: u16, msg: &TcMessage) -> TcMsg {
        let mut kind = None;
        let mut options = None;
        for attr in &msg.attributes {
            match attr {
                TcAttribute::Kind(k) => kind = Some(k.clone()),
                TcAttribute::Options(opts) => options = Some(raw_options(opts)),
                TcAttribute::Other(nla) if nla.kind() & NLA_TYPE_MASK == TCA_OPTIONS => {
                    options = Some(nla_value(nla));
                }
                _ => {}
            }
        }
        TcMsg {
            message_type,
            flags,
            ifindex: msg.header.index,
            handle: msg.header.handle.into(),
            parent: msg.header.parent.into(),
            kind,
            options,
        }
    }

    /// The spec these options stand for.
    pub fn spec(&self, psched: &Psched) -> Result<Spec, DecodeError> {
        let kind = self.kind.as_deref().ok_or(DecodeError::NoKind)?;
        decode_options(kind, self.options.as_deref().unwrap_or_default(), psched)
    }
}

fn nla_value(nla: &DefaultNla) -> Vec<u8> {
    let mut value = vec![0; nla.value_len()];
    nla.emit_value(&mut value);
    value
}

fn raw_options(opts: &[TcOption]) -> Vec<u8> {
    if let [TcOption::Other(nla)] = opts
        && nla.kind() & NLA_TYPE_MASK == TCA_OPTIONS
    {
        return nla_value(nla);
    }
    let mut value = vec![0; opts.buffer_len()];
    opts.emit(&mut value);
    value
}

/// Decodes a qdisc's options back into a spec.
///
/// Works both on what [`encode_options`] writes and on what the kernel dumps (which has no
/// rate table, no tbf burst in bytes and no distribution table, and adds 64-bit copies of
/// some fields). Where the wire form fits several specs (a tbf's byte limit may be a
/// latency), the one that prints shortest is chosen; all of them encode identically.
pub fn decode_options(kind: &str, options: &[u8], psched: &Psched) -> Result<Spec, DecodeError> {
    let unsupported = |what: &str| DecodeError::Unsupported {
        kind: kind.to_string(),
        what: what.to_string(),
    };
    match kind {
        "netem" => decode_netem(options, psched).map(Spec::Netem),
        "tbf" => decode_tbf(options, psched).map(Spec::Tbf),
        "htb" => decode_htb(options).map(Spec::Htb),
        _ => Err(unsupported("unknown qdisc kind")),
    }
}

fn unsupported(kind: &str, what: impl Into<String>) -> DecodeError {
    DecodeError::Unsupported {
        kind: kind.to_string(),
        what: what.into(),
    }
}

fn nonzero(v: u32) -> Option<Percent> {
    (v != 0).then_some(Percent(v))
}

fn decode_netem(o: &[u8], psched: &Psched) -> Result<Netem, DecodeError> {
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

/// A 64-bit rate as a spec's rate, when tc's grammar can write it: tc computes rates in
/// double precision (`get_rate64`), so every rate it sends is a double, and the parser
/// keeps bits per second within 64 bits. Other values (only another tool could have set
/// them) would print as text that parses to a different rate.
fn expressible_rate(kind: &str, bytes: u64) -> Result<Rate, DecodeError> {
    const MAX: u64 = u64::MAX / 8;
    if bytes < MAX && bytes as f64 as u64 == bytes {
        Ok(Rate(bytes))
    } else {
        Err(unsupported(
            kind,
            format!(
                "a rate of {bytes} bytes/s, which tc's grammar cannot write (rates are \
                 doubles below {MAX} bytes/s)"
            ),
        ))
    }
}

fn decode_tbf(o: &[u8], psched: &Psched) -> Result<Tbf, DecodeError> {
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

fn decode_htb(o: &[u8]) -> Result<Htb, DecodeError> {
    for (ty, _, p) in nlas(o) {
        if ty == TCA_HTB_INIT {
            return Ok(Htb {
                r2q: u32_at(p, 4).ok_or(DecodeError::Truncated("tc_htb_glob"))?,
                default_class: u32_at(p, 8).ok_or(DecodeError::Truncated("tc_htb_glob"))?,
            });
        }
    }
    Err(DecodeError::Truncated("htb options without TCA_HTB_INIT"))
}

/// A qdisc's options as the kernel dumped them, made acceptable as a request again.
///
/// Dumps are mostly valid requests, with one known exception: htb reports its version
/// as `HTB_VER` (0x30011) in `TCA_HTB_INIT` but refuses anything but 3 on input.
pub fn dumped_options_for_request(kind: &str, options: &[u8]) -> Vec<u8> {
    if kind != "htb" {
        return options.to_vec();
    }
    let mut buf = NlBuf::default();
    for (ty, raw_type, payload) in nlas(options) {
        let mut payload = payload.to_vec();
        if ty == TCA_HTB_INIT
            && let Some(version) = u32_at(&payload, 0)
            && version >> 16 == HTB_VERSION
        {
            payload[..4].copy_from_slice(&HTB_VERSION.to_ne_bytes());
        }
        buf.attr(raw_type, &payload);
    }
    buf.0
}

/// The extended ack of a netlink error (`NLMSGERR_ATTR_*`), when the kernel sent one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtAck {
    /// `NLMSGERR_ATTR_MSG`: the kernel's human-readable reason.
    pub message: Option<String>,
    /// `NLMSGERR_ATTR_OFFS`: offset of the offending attribute in the request.
    pub offset: Option<u32>,
}

/// Parses the extended ack TLVs of an `NLMSG_ERROR` message.
///
/// `flags` are the error message's netlink flags; `after_code` is its payload after the
/// 4-byte error code: the echoed request (only its header when `NLM_F_CAPPED`), then the
/// TLVs when `NLM_F_ACK_TLVS` is set.
pub fn parse_ext_ack(flags: u16, after_code: &[u8]) -> ExtAck {
    let mut ack = ExtAck::default();
    if flags & NLM_F_ACK_TLVS == 0 {
        return ack;
    }
    let echoed = if flags & NLM_F_CAPPED != 0 {
        NLMSG_HDRLEN
    } else {
        u32_at(after_code, 0).map_or(NLMSG_HDRLEN, |l| l as usize)
    };
    let Some(tlvs) = after_code.get(echoed.next_multiple_of(4)..) else {
        return ack;
    };
    for (ty, _, p) in nlas(tlvs) {
        match ty {
            NLMSGERR_ATTR_MSG => {
                let text = p.split(|b| *b == 0).next().unwrap_or_default();
                ack.message = Some(String::from_utf8_lossy(text).into_owned());
            }
            NLMSGERR_ATTR_OFFS => ack.offset = u32_at(p, 0),
            _ => {}
        }
    }
    ack
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
