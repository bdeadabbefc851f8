//! Hand-written InfluxDB line-protocol lexing for file replay: series key, fields, values
//! and timestamp of one line, with the full escaping rules, straight off the line's bytes.
//!
//! Written by hand because no crate parses line protocol zero-copy into our columns: the
//! parsers that exist build a row object per line (names and values as owned strings, or
//! borrowed slices in their own enums and vectors) that we would then walk and copy out
//! again, and none lets us look the raw series key up without splitting its tags first.
//!
//! The rules (InfluxDB's, as TSBS writes and `tsload-lineproto` encodes):
//!
//! ```text
//! measurement[,tag_key=tag_value...] field_key=field_value[,field_key=field_value...] timestamp
//! ```
//!
//! - A backslash escapes the byte after it, whatever it is, so that byte never ends a
//!   name or a value. When the name is unescaped, `\` followed by one of the element's
//!   special bytes gives that byte (measurement: `,`, space, `\`; tag keys, tag values and
//!   field keys: `,`, `=`, space, `\`); followed by anything else the backslash stays (so
//!   `C:\dir` reads back as written).
//! - String field values are quoted; inside, `\"` is `"` and `\\` is `\`; any other `\x`
//!   stays as written. They may hold spaces, commas and `=`, but not a raw newline
//!   (line protocol files are read line by line; write `\n` escaped).
//! - Field values: `123i` integer, `123u` unsigned integer, `1.5` / `2` / `-1e3` float,
//!   `t`, `T`, `true`, `True`, `TRUE`, `f`, `F`, `false`, `False`, `FALSE` boolean,
//!   `"..."` string. `inf`, `nan` and the like are not line protocol and are errors.
//! - Sections are separated by one or more spaces; trailing spaces are fine.
//!
//! Errors are messages without a location; the caller adds file and line.

use std::borrow::Cow;

/// Special bytes of a measurement name.
pub(crate) const MEASUREMENT_SPECIALS: &[u8] = b", \\";
/// Special bytes of tag keys, tag values and field keys.
pub(crate) const TAG_SPECIALS: &[u8] = b",= \\";

/// The type of a field value, as line protocol tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int,
    UInt,
    Float,
    Bool,
    Str,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Int => "integer",
            Kind::UInt => "unsigned integer",
            Kind::Float => "float",
            Kind::Bool => "boolean",
            Kind::Str => "string",
        }
    }
}

/// A field value as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Int(i64),
    /// An unsigned (`u`) integer, at most `i64::MAX`.
    UInt(i64),
    Float(f64),
    Bool(bool),
    /// The bytes between the quotes, still escaped; `escaped` says whether a `\` occurs.
    Str {
        raw: &'a [u8],
        escaped: bool,
    },
}

impl Value<'_> {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Value::Int(_) => Kind::Int,
            Value::UInt(_) => Kind::UInt,
            Value::Float(_) => Kind::Float,
            Value::Bool(_) => Kind::Bool,
            Value::Str { .. } => Kind::Str,
        }
    }
}

/// One `key=value` of a line's field section.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Field<'a> {
    /// The key as written (still escaped).
    pub key: &'a [u8],
    /// Whether `key` holds a `\` (then it must be unescaped before comparing).
    pub key_escaped: bool,
    /// The key is the hint given to [`Fields::next`].
    pub hinted: bool,
    pub value: Value<'a>,
}

/// Bytes for messages: lossy UTF-8, shortened to 60 characters.
pub(crate) fn show(bytes: &[u8]) -> Cow<'_, str> {
    const MAX: usize = 60;
    let s = String::from_utf8_lossy(bytes);
    if s.chars().count() <= MAX {
        return s;
    }
    let cut: String = s.chars().take(MAX).collect();
    Cow::Owned(format!("{cut}..."))
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Flags (high bit) the bytes of `x` that are zero. Flags above the lowest flagged byte
/// may be false (borrows), the lowest one never is.
#[inline]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// Position of the first `a` or `b` in `s` at or after `from`, or `s.len()` when there is
/// none (also when `from` is past the end): [`find4`] with `b` repeated, whose repeated
/// tests the compiler folds into one.
#[inline]
pub(crate) fn find2(s: &[u8], from: usize, a: u8, b: u8) -> usize {
    find4(s, from, [a, b, b, b])
}

/// Position of the first `a`, `b`, `c` or `d` in `s` at or after `from`, or `s.len()` when
/// there is none (also when `from` is past the end). Eight bytes at a time.
#[inline]
pub(crate) fn find4(s: &[u8], from: usize, [a, b, c, d]: [u8; 4]) -> usize {
    let (sa, sb, sc, sd) = (LO * a as u64, LO * b as u64, LO * c as u64, LO * d as u64);
    let mut i = from;
    while i + 8 <= s.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        let w = u64::from_le_bytes(w);
        let m = zero_bytes(w ^ sa) | zero_bytes(w ^ sb) | zero_bytes(w ^ sc) | zero_bytes(w ^ sd);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < s.len() {
        if s[i] == a || s[i] == b || s[i] == c || s[i] == d {
            return i;
        }
        i += 1;
    }
    s.len()
}

/// The bytes that can end a field key as written: `=` ends it, `,` and a space are
/// errors in it, and `\` escapes the byte after it.
const FIELD_KEY_STOPS: [u8; 4] = [b'=', b',', b' ', b'\\'];

/// Whether the field at `start` of `s` has the key `hint` (a key that needs no escaping;
/// empty: no hint): the hint, then `=`.
#[inline]
fn starts_key(s: &[u8], start: usize, hint: &[u8]) -> bool {
    !hint.is_empty() && s.get(start + hint.len()) == Some(&b'=') && s[start..].starts_with(hint)
}

/// Position of the first `stop` in `s[from..]` that no backslash escapes, or `s.len()`.
#[inline]
fn find_unescaped(s: &[u8], mut from: usize, stop: u8) -> usize {
    loop {
        from = find2(s, from, stop, b'\\');
        if from >= s.len() {
            return s.len();
        }
        if s[from] == stop {
            return from;
        }
        from += 2;
    }
}

/// End of the series key (measurement and tags): the first space no backslash escapes.
#[inline]
pub(crate) fn key_end(line: &[u8]) -> Result<usize, String> {
    let end = find_unescaped(line, 0, b' ');
    if end == 0 {
        return Err("the line starts with a space where the measurement should be".into());
    }
    if end >= line.len() {
        return Err(format!(
            "no fields: the line ends after `{}` (expected `measurement[,tag=value...] \
             field=value[,...] timestamp`)",
            show(line)
        ));
    }
    Ok(end)
}

/// Appends `raw` to `out` with `\x` turned into `x` for every `x` in `specials`.
pub(crate) fn unescape(raw: &[u8], specials: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'\\'
            && let Some(&next) = raw.get(i + 1)
            && specials.contains(&next)
        {
            out.push(next);
            i += 2;
            continue;
        }
        out.push(b);
        i += 1;
    }
}

/// `raw` unescaped (borrowed when it holds no backslash).
pub(crate) fn unescaped<'a>(raw: &'a [u8], specials: &[u8]) -> Cow<'a, [u8]> {
    if raw.contains(&b'\\') {
        let mut out = Vec::with_capacity(raw.len());
        unescape(raw, specials, &mut out);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(raw)
    }
}

/// Unescapes the inside of a string field value (`\"` and `\\`) onto `out`.
#[inline]
pub(crate) fn unescape_string(raw: &[u8], escaped: bool, out: &mut Vec<u8>) {
    if escaped {
        unescape(raw, b"\"\\", out);
    } else {
        out.extend_from_slice(raw);
    }
}

/// Length of a string field value once unescaped.
pub(crate) fn unescaped_string_len(raw: &[u8], escaped: bool) -> usize {
    if !escaped {
        return raw.len();
    }
    let mut n = 0;
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && matches!(raw.get(i + 1), Some(b'"' | b'\\')) {
            i += 2;
        } else {
            i += 1;
        }
        n += 1;
    }
    n
}

/// Splits a series key into its measurement (returned, still escaped) and its tags, each
/// handed to `tag(key, value)` still escaped, in order. Empty names and values, a tag
/// without `=` and a tag value with a second unescaped `=` are errors.
pub(crate) fn split_series_key<'a>(
    key: &'a [u8],
    mut tag: impl FnMut(&'a [u8], &'a [u8]) -> Result<(), String>,
) -> Result<&'a [u8], String> {
    let mut end = find_unescaped(key, 0, b',');
    let measurement = &key[..end];
    if measurement.is_empty() {
        return Err("empty measurement name".into());
    }
    while end < key.len() {
        let start = end + 1;
        end = find_unescaped(key, start, b',');
        let pair = &key[start..end];
        if pair.is_empty() {
            return Err(format!(
                "empty tag (two commas in a row, or a comma before the space) in `{}`",
                show(key)
            ));
        }
        let eq = find_unescaped(pair, 0, b'=');
        if eq >= pair.len() {
            return Err(format!("tag `{}` has no `=value`", show(pair)));
        }
        let (k, v) = (&pair[..eq], &pair[eq + 1..]);
        if k.is_empty() {
            return Err(format!("tag `{}` has an empty key", show(pair)));
        }
        if v.is_empty() {
            return Err(format!("tag `{}` has no value", show(k)));
        }
        if find_unescaped(v, 0, b'=') < v.len() {
            return Err(format!(
                "tag `{}` has a second `=` in its value `{}` (escape it as `\\=`)",
                show(k),
                show(v)
            ));
        }
        tag(k, v)?;
    }
    Ok(measurement)
}

/// The field section and timestamp of a line, read field by field.
#[derive(Debug)]
pub(crate) struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
    /// The field section has ended (at a space or at the end of the line).
    done: bool,
    first: bool,
}

impl<'a> Fields<'a> {
    /// The fields of `line`, whose series key ends at `key_end` (a space).
    #[inline]
    pub(crate) fn new(line: &'a [u8], key_end: usize) -> Self {
        let mut pos = key_end;
        while line.get(pos) == Some(&b' ') {
            pos += 1;
        }
        Fields {
            line,
            pos,
            done: false,
            first: true,
        }
    }

    /// The next field, or `None` after the last one.
    ///
    /// `hint` is the key the caller expects next, as written, when it holds none of `=`,
    /// `,`, space and `\` (or empty for none): when the field starts with it and `=`, one
    /// comparison reads the key, and [`Field::hinted`] says so.
    #[inline]
    pub(crate) fn next(&mut self, hint: &[u8]) -> Result<Option<Field<'a>>, String> {
        if self.done {
            return Ok(None);
        }
        let s = self.line;
        let start = self.pos;
        if start >= s.len() {
            debug_assert!(self.first);
            return Err("no fields after the measurement and tags".into());
        }
        self.first = false;
        // The key: up to the first unescaped `=`.
        let mut i = start;
        let mut key_escaped = false;
        let hinted = starts_key(s, start, hint);
        if hinted {
            i += hint.len();
        } else {
            loop {
                i = find4(s, i, FIELD_KEY_STOPS);
                match s.get(i) {
                    Some(b'\\') => {
                        key_escaped = true;
                        i += 2;
                    }
                    Some(b'=') => break,
                    _ => {
                        let what = &s[start..i.min(s.len())];
                        return Err(if what.is_empty() {
                            "a field has no name (`,` or space where `key=value` should be)".into()
                        } else {
                            format!("field `{}` has no `=value`", show(what))
                        });
                    }
                }
            }
        }
        let key = &s[start..i];
        if key.is_empty() {
            return Err("a field has an empty name (`=` with no key)".into());
        }
        i += 1;
        let value = match s.get(i) {
            None | Some(b',' | b' ') => {
                return Err(format!("field `{}` has no value", show(key)));
            }
            Some(b'"') => {
                let vs = i + 1;
                let mut j = vs;
                let mut escaped = false;
                loop {
                    j = find2(s, j, b'"', b'\\');
                    if j >= s.len() {
                        return Err(format!(
                            "the string value of field `{}` has no closing `\"`",
                            show(key)
                        ));
                    }
                    if s[j] == b'\\' {
                        escaped = true;
                        j += 2;
                        continue;
                    }
                    break;
                }
                i = j + 1;
                Value::Str {
                    raw: &s[vs..j],
                    escaped,
                }
            }
            Some(_) => {
                let j = find2(s, i, b',', b' ');
                let v =
                    parse_scalar(&s[i..j]).map_err(|m| format!("field `{}`: {m}", show(key)))?;
                i = j;
                v
            }
        };
        match s.get(i) {
            None => {
                self.done = true;
                self.pos = i;
            }
            Some(b' ') => {
                self.done = true;
                self.pos = i;
            }
            Some(b',') => {
                if matches!(s.get(i + 1), None | Some(b' ' | b',')) {
                    return Err(format!("a comma after field `{}` but no field", show(key)));
                }
                self.pos = i + 1;
            }
            Some(&b) => {
                return Err(format!(
                    "unexpected `{}` after the string value of field `{}` (expected `,`, \
                     a space or the end of the line)",
                    show(&[b]),
                    show(key)
                ));
            }
        }
        Ok(Some(Field {
            key,
            key_escaped,
            hinted,
            value,
        }))
    }

    /// The timestamp after the last field (call once `next` returned `None`).
    #[inline]
    pub(crate) fn timestamp(&self) -> Result<i64, String> {
        timestamp_at(self.line, self.pos)
    }
}

/// How many fields `line` holds after its series key (which ends at `key_end`), and where
/// the field section ends: what a line sent as it is needs, without parsing a value. Only
/// the structure is checked (a key and `=`, a closed string, a separator); [`Fields`]
/// checks the rest. `hint(n)` is the key expected for the `n`th field (from 0), as
/// [`Fields::next`] takes it.
pub(crate) fn count_fields<'h>(
    line: &[u8],
    key_end: usize,
    hint: impl Fn(usize) -> &'h [u8],
) -> Result<(u64, usize), String> {
    let s = line;
    let mut i = key_end;
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    let mut count = 0u64;
    loop {
        // The key: up to the first unescaped `=`.
        let start = i;
        let hint = hint(count as usize);
        if starts_key(s, start, hint) {
            i += hint.len();
        } else {
            loop {
                i = find4(s, i, FIELD_KEY_STOPS);
                match s.get(i) {
                    Some(b'\\') => i += 2,
                    Some(b'=') if i > start => break,
                    _ => return Err(format!("field {} has no `key=`", count + 1)),
                }
            }
        }
        i += 1;
        if s.get(i) == Some(&b'"') {
            let mut j = i + 1;
            loop {
                j = find2(s, j, b'"', b'\\');
                match s.get(j) {
                    Some(b'\\') => j += 2,
                    Some(_) => break,
                    None => return Err(format!("field {} has no closing `\"`", count + 1)),
                }
            }
            i = j + 1;
        } else {
            let j = find2(s, i, b',', b' ');
            if j == i {
                return Err(format!("field {} has no value", count + 1));
            }
            i = j;
        }
        count += 1;
        match s.get(i) {
            Some(b',') => i += 1,
            Some(b' ') | None => return Ok((count, i)),
            Some(_) => {
                return Err(format!(
                    "unexpected bytes after field {} (expected `,`, a space or the end of \
                     the line)",
                    count
                ));
            }
        }
    }
}

/// The timestamp of `line` after its field section, which ends at `pos`: the last item,
/// required.
#[inline]
pub(crate) fn timestamp_at(s: &[u8], pos: usize) -> Result<i64, String> {
    let mut i = pos;
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    let start = i;
    while i < s.len() && s[i] != b' ' {
        i += 1;
    }
    let raw = &s[start..i];
    while s.get(i) == Some(&b' ') {
        i += 1;
    }
    if i < s.len() {
        return Err(format!(
            "unexpected `{}` after the timestamp",
            show(&s[i..])
        ));
    }
    if raw.is_empty() {
        return Err(
            "no timestamp at the end of the line (TSBS writes one on every \
                    line; tsload needs it)"
                .into(),
        );
    }
    parse_i64(raw).ok_or_else(|| {
        format!(
            "bad timestamp `{}` (expected an integer number of time units since the \
             Unix epoch)",
            show(raw)
        )
    })
}

/// A signed decimal integer (optional `-` or `+`), `None` when malformed or out of range.
#[inline]
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d as i64)?
        } else {
            v.checked_add(d as i64)?
        };
    }
    Some(v)
}

/// An unsigned decimal integer, `None` when malformed or over `u64::MAX`.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// A value that is not a string.
#[inline]
fn parse_scalar(v: &[u8]) -> Result<Value<'static>, String> {
    let (last, body) = match v.split_last() {
        Some((l, b)) => (*l, b),
        None => return Err("no value".into()),
    };
    // No boolean ends in `i` or `u`: the integers, most common, are told first.
    if !matches!(last, b'i' | b'u') {
        match v {
            b"t" | b"T" | b"true" | b"True" | b"TRUE" => return Ok(Value::Bool(true)),
            b"f" | b"F" | b"false" | b"False" | b"FALSE" => return Ok(Value::Bool(false)),
            _ => {}
        }
    }
    match last {
        b'i' => parse_i64(body).map(Value::Int).ok_or_else(|| {
            let digits = body
                .strip_prefix(b"-")
                .or_else(|| body.strip_prefix(b"+"))
                .unwrap_or(body);
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                format!(
                    "integer `{}` does not fit in 64 bits \
                     (-9223372036854775808..=9223372036854775807)",
                    show(v)
                )
            } else {
                format!("`{}` is not an integer (digits then `i`)", show(v))
            }
        }),
        b'u' => match parse_u64(body) {
            Some(u) => i64::try_from(u).map(Value::UInt).map_err(|_| {
                format!(
                    "unsigned integer `{}` is larger than the largest bigint \
                     (9223372036854775807)",
                    show(v)
                )
            }),
            None if !body.is_empty() && body.iter().all(u8::is_ascii_digit) => Err(format!(
                "unsigned integer `{}` does not fit in 64 bits",
                show(v)
            )),
            None => Err(format!(
                "`{}` is not an unsigned integer (digits then `u`)",
                show(v)
            )),
        },
        _ => parse_float(v).map(Value::Float).ok_or_else(|| {
            format!(
                "`{}` is not a value (expected a float like `1.5`, an integer like `3i` or \
                 `3u`, a boolean like `true`, or a quoted string)",
                show(v)
            )
        }),
    }
}

/// A float as line protocol writes it (digits, `.`, sign, exponent); `None` otherwise,
/// including for `inf` and `nan`, which line protocol cannot carry.
#[inline]
fn parse_float(v: &[u8]) -> Option<f64> {
    let mut digit = false;
    for &b in v {
        match b {
            b'0'..=b'9' => digit = true,
            b'.' | b'-' | b'+' | b'e' | b'E' => {}
            _ => return None,
        }
    }
    if !digit {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// A 64-bit hash of a series key: FxHash's word step over 8-byte words, then
/// SplitMix64's finalizer so that every bit of the result depends on every input byte.
#[inline]
pub(crate) fn hash_key(s: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = s.len() as u64;
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    crate::rng::mix64(h)
}

#[cfg(test)]
mod tests;
