//! Series: every series key (device) of the file stored once, the index from a key's hash
//! to its device, the tag values parsed out of a key, and a table's fields by name.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use tsload_core::schema::{TagSource, TagValue};

use super::parse::{self, TAG_SPECIALS, hash_key, unescaped};

/// Hashes a `u64` that is a hash already: passes it through.
#[derive(Debug, Default, Clone, Copy)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// No device: the line before the first, or a device followed by none yet.
pub(super) const NO_DEVICE: u32 = u32::MAX;

/// Every series (device) of the file: its key as written, all keys end to end in one
/// buffer, its table, and an index from the key's hash to the device.
#[derive(Default)]
pub(super) struct SeriesIndex {
    keys: Vec<u8>,
    /// `ends[d]` is the end of device `d`'s key in `keys`.
    ends: Vec<usize>,
    pub(super) table: Vec<u32>,
    /// `next[d]`: the device of the line after device `d`'s latest line in pass 1
    /// ([`NO_DEVICE`] when `d`'s line was the last), so that a file that repeats its
    /// series in one order finds each line's device with one comparison
    /// ([`SeriesIndex::predicted`]).
    next: Vec<u32>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    /// Keys whose 64-bit hash an earlier key has already (practically never any).
    collided: HashMap<Box<[u8]>, u32>,
    /// Tag key (unescaped) -> slot.
    pub(super) slot_of: HashMap<Box<[u8]>, usize>,
    pub(super) tag_slots: usize,
}

impl fmt::Debug for SeriesIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeriesIndex")
            .field("series", &self.ends.len())
            .field("key_bytes", &self.keys.len())
            .field("tag_slots", &self.tag_slots)
            .finish_non_exhaustive()
    }
}

impl SeriesIndex {
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(super) fn key(&self, device: u32) -> &[u8] {
        self.key_of(device)
            .expect("a device of this index (pass 1 numbered them)")
    }

    /// The key of `device`, `None` when there is no such device.
    #[inline]
    fn key_of(&self, device: u32) -> Option<&[u8]> {
        let d = device as usize;
        let end = *self.ends.get(d)?;
        let start = if d == 0 { 0 } else { self.ends[d - 1] };
        Some(&self.keys[start..end])
    }

    /// The device of `line` if it is the one that followed device `prev` in pass 1: its
    /// key, then a space, starts the line. The line's key then ends where that key
    /// ends (the key has no unescaped space and does not end in an escaping backslash, or
    /// pass 1 would have ended it elsewhere).
    #[inline]
    pub(super) fn predicted(&self, prev: u32, line: &[u8]) -> Option<u32> {
        let d = *self.next.get(prev as usize)?;
        let key = self.key_of(d)?;
        (line.get(key.len()) == Some(&b' ') && line.starts_with(key)).then_some(d)
    }

    /// Records that device `d`'s line came after device `prev`'s ([`NO_DEVICE`] for the
    /// first line).
    #[inline]
    pub(super) fn followed(&mut self, prev: u32, d: u32) {
        if let Some(n) = self.next.get_mut(prev as usize) {
            *n = d;
        }
    }

    #[inline]
    pub(super) fn find(&self, key: &[u8]) -> Option<u32> {
        self.find_hashed(key, hash_key(key))
    }

    #[inline]
    pub(super) fn find_hashed(&self, key: &[u8], hash: u64) -> Option<u32> {
        let d = *self.by_hash.get(&hash)?;
        if self.key(d) == key {
            Some(d)
        } else {
            self.collided.get(key).copied()
        }
    }

    /// Adds a key that `find_hashed` does not know; returns its device id.
    pub(super) fn insert_hashed(&mut self, key: &[u8], hash: u64, table: u32) -> u32 {
        let d = self.ends.len() as u32;
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.table.push(table);
        self.next.push(NO_DEVICE);
        match self.by_hash.entry(hash) {
            Entry::Vacant(e) => {
                e.insert(d);
            }
            Entry::Occupied(_) => {
                self.collided.insert(key.into(), d);
            }
        }
        d
    }
}

impl TagSource for SeriesIndex {
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        out.resize(self.tag_slots, TagValue::Null);
        if device as usize >= self.len() {
            return;
        }
        // Pass 1 checked every key, so this cannot fail.
        let _ = parse::split_series_key(self.key(device), |k, v| {
            if let Some(&slot) = self.slot_of.get(&*unescaped(k, TAG_SPECIALS)) {
                let v = unescaped(v, TAG_SPECIALS);
                out[slot] = TagValue::Str(Cow::Owned(String::from_utf8_lossy(&v).into_owned()));
            }
            Ok(())
        });
    }
}

/// The fields of one table by name, for lines that write them in the table's order (one
/// comparison per field) or not (a hash lookup).
#[derive(Debug, Default)]
pub(super) struct FieldLookup {
    pub(super) names: Vec<Box<[u8]>>,
    /// `plain[c]`: field `c`'s name holds no byte that line protocol escapes, so a key
    /// written as that name is that field ([`FieldLookup::hint`]).
    plain: Vec<bool>,
    index: HashMap<Box<[u8]>, usize>,
}

impl FieldLookup {
    /// The column of the field whose key is written `raw`, trying `guess` first.
    #[inline]
    pub(super) fn find(
        &self,
        raw: &[u8],
        escaped: bool,
        guess: usize,
        scratch: &mut Vec<u8>,
    ) -> Option<usize> {
        let name: &[u8] = if escaped {
            scratch.clear();
            parse::unescape(raw, TAG_SPECIALS, scratch);
            scratch
        } else {
            raw
        };
        if let Some(n) = self.names.get(guess)
            && **n == *name
        {
            return Some(guess);
        }
        self.index.get(name).copied()
    }

    /// The name of column `col` as a line writes it, for [`Fields::next`]'s hint: empty
    /// when there is no such column or its name would be written escaped.
    ///
    /// [`Fields::next`]: super::parse::Fields::next
    #[inline]
    pub(super) fn hint(&self, col: usize) -> &[u8] {
        match self.plain.get(col) {
            Some(true) => &self.names[col],
            _ => &[],
        }
    }

    pub(super) fn insert(&mut self, at: usize, name: Box<[u8]>) {
        let plain = !name.iter().any(|b| TAG_SPECIALS.contains(b));
        self.plain.insert(at, plain);
        self.names.insert(at, name);
        self.index.clear();
        for (i, n) in self.names.iter().enumerate() {
            self.index.insert(n.clone(), i);
        }
    }
}
