//! Short appends for the encoder's hot path: a field's `key=`, an integer with what follows
//! it, each as one copy of a constant length into the output and a truncation.
//!
//! Written by hand because the obvious way, `out.extend_from_slice(key)` and
//! `out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes())`, copies a length known
//! only at run time, which is a call into libc's `memmove` for a handful of bytes: three
//! such calls per field were about a fifth of a write run's client CPU (perf, cpu-only into
//! VictoriaMetrics). A copy of a constant length compiles to a few vector moves; the
//! truncation after it is a store of the length.

/// The longest `key=` copied padded; a longer one is copied as it is.
pub(crate) const KEY_PAD: usize = 32;

/// Bytes for a padded copy: up to `N` bytes of them count, zeros pad the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Padded<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Padded<N> {
    /// `bytes` padded, or `None` when they are longer than `N`.
    pub(crate) fn new(bytes: &[u8]) -> Option<Self> {
        let mut padded = [0u8; N];
        padded.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(Padded {
            bytes: padded,
            len: bytes.len(),
        })
    }

    /// Appends the bytes to `out`.
    #[inline(always)]
    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        put_padded(out, &self.bytes, self.len);
    }
}

/// Appends the first `len` bytes of `bytes` with one copy of `N` bytes and a truncation.
#[inline(always)]
fn put_padded<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], len: usize) {
    debug_assert!(len <= N);
    out.extend_from_slice(bytes);
    out.truncate(out.len() - (N - len));
}

/// `00` to `99`, two bytes each.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Appends `v` in decimal (`-` and digits, as `itoa` writes it) and then `suffix`.
///
/// The digits are written straight into the output, after room for the longest is made
/// there by one copy of zeros: built on the stack and then copied in one wide load, they
/// stalled that load (a store-forwarding stall: a wide load of bytes just written one or
/// two at a time), which cost more than the `memmove` call it replaced.
#[inline(always)]
pub(crate) fn put_int<const S: usize>(out: &mut Vec<u8>, v: i64, suffix: [u8; S]) {
    // `-` and 19 digits at most, then the suffix: 24 bytes hold it for S <= 4.
    let start = out.len();
    out.extend_from_slice(&[0u8; 24]);
    let buf = &mut out[start..];
    buf[0] = b'-';
    let sign = usize::from(v < 0);
    let mut u = v.unsigned_abs();
    if u < 100 {
        // One or two digits (TSBS's percentages): no digit count to work out.
        // Two bytes from the pair table: `u`'s two digits, or (one digit) `u` and a byte
        // that the suffix then covers.
        let two = usize::from(u >= 10);
        let from = u as usize * 2 + 1 - two;
        buf[sign..sign + 2].copy_from_slice(&PAIRS[from..from + 2]);
        buf[sign + 1 + two..sign + 1 + two + S].copy_from_slice(&suffix);
        out.truncate(start + sign + 1 + two + S);
        return;
    }
    let end = sign + u.checked_ilog10().map_or(1, |l| l as usize + 1);
    let mut at = end;
    while u >= 100 {
        let pair = (u % 100) as usize * 2;
        u /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if u >= 10 {
        let pair = u as usize * 2;
        buf[at - 2..at].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        buf[at - 1] = b'0' + u as u8;
    }
    buf[end..end + S].copy_from_slice(&suffix);
    out.truncate(start + end + S);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_itoa_writes_them() {
        let mut values = vec![i64::MIN, i64::MAX];
        values.extend(-1200..=1200);
        for p in 0..19 {
            let t = 10i64.pow(p);
            values.extend([t - 1, t, t + 1, -t, -(t - 1), -(t + 1)]);
        }
        // SplitMix64 outputs, shifted to every length.
        values.extend((0..2000u64).map(|i| {
            let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) as i64) >> (i % 64)
        }));
        let mut out = b"<".to_vec();
        let mut want = b"<".to_vec();
        for v in values {
            put_int(&mut out, v, *b"i,");
            want.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            want.extend_from_slice(b"i,");
            put_int(&mut out, v, *b"\n");
            want.extend_from_slice(format!("{v}\n").as_bytes());
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(want).unwrap()
        );
    }

    #[test]
    fn padded_bytes_append_only_their_length() {
        let mut out = b"<".to_vec();
        Padded::<KEY_PAD>::new(b"usage_user=")
            .unwrap()
            .put(&mut out);
        Padded::<KEY_PAD>::new(b"").unwrap().put(&mut out);
        Padded::<KEY_PAD>::new(&[b'k'; KEY_PAD])
            .unwrap()
            .put(&mut out);
        assert_eq!(out, [&b"<usage_user="[..], &[b'k'; KEY_PAD]].concat());
        assert_eq!(Padded::<KEY_PAD>::new(&[b'k'; KEY_PAD + 1]), None);
    }
}
