//! htb's options: the `tc_htb_glob` of iproute2's `q_htb.c`, and back into an [`Htb`]
//! spec.

use crate::spec::Htb;

use super::DecodeError;
use super::buf::{NlBuf, nlas, u32_at};

pub(super) const TCA_HTB_INIT: u16 = 2;
pub(super) const HTB_VERSION: u32 = 3;

pub(super) fn encode_htb(h: &Htb) -> Vec<u8> {
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

pub(super) fn decode_htb(o: &[u8]) -> Result<Htb, DecodeError> {
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
