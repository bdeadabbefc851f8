//! What both passes do with one line: read it under the length cap, find its data part,
//! and turn its timestamp into nanoseconds; and how a value type is named in messages.

use std::io::{self, BufRead, Read};
use std::ops::Range;

use super::parse::Kind;

/// Appends the next line of `input` to `buf`, with its `\n` when it has one, reading at
/// most `max_line + 1` bytes of it. `Ok(Some(0))` at the end of the input; `Ok(None)` when
/// the line holds more than `max_line` bytes before its line end (the bytes read so far
/// stay in `buf`, the rest of the line in `input`). One bounded `read_until` (std's
/// memchr), so the check costs nothing per byte.
#[inline]
pub(super) fn read_line_capped(
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max_line: usize,
) -> io::Result<Option<usize>> {
    let limit = max_line.saturating_add(1);
    let n = input.take(limit as u64).read_until(b'\n', buf)?;
    Ok(if n == limit && buf.last() != Some(&b'\n') {
        None
    } else {
        Some(n)
    })
}

/// Why a line is refused: it is longer than `max_line` bytes.
pub(super) fn too_long(max_line: usize) -> String {
    let size = if max_line >= 1 << 20 && max_line.is_multiple_of(1 << 20) {
        format!("{} MiB ({max_line} bytes)", max_line >> 20)
    } else if max_line >= 1 << 10 && max_line.is_multiple_of(1 << 10) {
        format!("{} KiB ({max_line} bytes)", max_line >> 10)
    } else {
        format!("{max_line} bytes")
    };
    format!(
        "the line is longer than {size}, the longest line a replay accepts (no line end \
         within it: is this a line-protocol file?)"
    )
}

/// The data part of a line read with its `\n`: without line end and leading blanks;
/// `None` for blank lines and `#` comments.
#[inline]
pub(super) fn data_range(raw: &[u8]) -> Option<Range<usize>> {
    let mut end = raw.len();
    if end > 0 && raw[end - 1] == b'\n' {
        end -= 1;
    }
    if end > 0 && raw[end - 1] == b'\r' {
        end -= 1;
    }
    let mut start = 0;
    while start < end && matches!(raw[start], b' ' | b'\t') {
        start += 1;
    }
    (start < end && raw[start] != b'#').then_some(start..end)
}

/// A timestamp in file units as nanoseconds.
#[inline]
pub(super) fn to_ns(ts: i64, precision_ns: i64) -> Result<i64, String> {
    ts.checked_mul(precision_ns).ok_or_else(|| {
        format!("timestamp {ts} times {precision_ns} ns is out of the range of 64-bit nanoseconds")
    })
}

pub(super) fn a_kind(kind: Kind) -> String {
    let article = if matches!(kind, Kind::Int | Kind::UInt) {
        "an"
    } else {
        "a"
    };
    format!("{article} {}", kind.name())
}
