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

use crate::spec::{Rate, Size, Spec, Time};

mod buf;
mod htb;
mod netem;
mod tbf;

use buf::{NlBuf, nlas, u16_at, u32_at};
use htb::{HTB_VERSION, TCA_HTB_INIT, decode_htb, encode_htb};
use netem::{decode_netem, encode_netem};
use tbf::{decode_tbf, encode_tbf};

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

fn put_tcmsg(buf: &mut NlBuf, ifindex: i32, handle: u32, parent: u32) {
    buf.0.push(0); // tcm_family
    buf.0.push(0);
    buf.put_u16(0);
    buf.0.extend_from_slice(&ifindex.to_le_bytes());
    buf.put_u32(handle);
    buf.put_u32(parent);
    buf.put_u32(0); // tcm_info
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
mod tests;
