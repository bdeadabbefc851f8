//! Netlink byte buffers: attributes written in tc's layout (`addattr_l`), and read back
//! field by field and attribute by attribute.

use super::NLA_TYPE_MASK;

/// A growable little-endian (host order on the targets tc runs on) netlink buffer.
#[derive(Default)]
pub(super) struct NlBuf(pub(super) Vec<u8>);

impl NlBuf {
    pub(super) fn put_u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }

    pub(super) fn put_u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }

    fn align(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }

    /// addattr_l: header, payload, padding to 4 bytes.
    pub(super) fn attr(&mut self, kind: u16, payload: &[u8]) {
        self.align();
        let len = u16::try_from(4 + payload.len()).expect("netlink attribute over 64 KiB");
        self.put_u16(len);
        self.put_u16(kind);
        self.0.extend_from_slice(payload);
        self.align();
    }

    pub(super) fn finish_message(mut self) -> Vec<u8> {
        self.align();
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

pub(super) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Iterates the NLAs of a buffer as (type without flags, raw type, payload).
pub(super) fn nlas(mut b: &[u8]) -> impl Iterator<Item = (u16, u16, &[u8])> {
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
