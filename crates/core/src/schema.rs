//! The shape of a data set: tables, their tag and field columns, and the devices whose
//! tag values are produced on demand (never stored per row).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Logical type of a column, as a database would declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    Bool,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    /// Unsigned 64-bit integer, held as a non-negative `i64` (line protocol's `u` fields).
    UBigInt,
    Float,
    Double,
    /// Variable-length byte string with a declared maximum length (varchar/binary).
    Varchar(u32),
    /// Variable-length unicode string with a declared maximum length in characters.
    NChar(u32),
    /// Milliseconds since the Unix epoch, stored as an integer column.
    Timestamp,
}

/// How a [`DataType`]'s values are held in a [`crate::Batch`] column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Bool,
    Int,
    Float,
    Str,
}

impl DataType {
    pub fn storage(self) -> Storage {
        match self {
            DataType::Bool => Storage::Bool,
            DataType::TinyInt
            | DataType::SmallInt
            | DataType::Int
            | DataType::BigInt
            | DataType::UBigInt
            | DataType::Timestamp => Storage::Int,
            DataType::Float | DataType::Double => Storage::Float,
            DataType::Varchar(_) | DataType::NChar(_) => Storage::Str,
        }
    }

    /// Inclusive range of values an integer type can hold, `None` for other types.
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            DataType::TinyInt => Some((i8::MIN as i64, i8::MAX as i64)),
            DataType::SmallInt => Some((i16::MIN as i64, i16::MAX as i64)),
            DataType::Int => Some((i32::MIN as i64, i32::MAX as i64)),
            DataType::BigInt | DataType::Timestamp => Some((i64::MIN, i64::MAX)),
            DataType::UBigInt => Some((0, i64::MAX)),
            _ => None,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Bool => f.write_str("bool"),
            DataType::TinyInt => f.write_str("tinyint"),
            DataType::SmallInt => f.write_str("smallint"),
            DataType::Int => f.write_str("int"),
            DataType::BigInt => f.write_str("bigint"),
            DataType::UBigInt => f.write_str("bigint unsigned"),
            DataType::Float => f.write_str("float"),
            DataType::Double => f.write_str("double"),
            DataType::Varchar(n) => write!(f, "varchar({n})"),
            DataType::NChar(n) => write!(f, "nchar({n})"),
            DataType::Timestamp => f.write_str("timestamp"),
        }
    }
}

/// A field (metric) column of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FieldDef {
    pub name: String,
    pub data_type: DataType,
}

/// A tag column of a table. Its value for a device is `device_tags[slot]`, where
/// `device_tags` is what [`TagSource::device_tags`] wrote for that device.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TagDef {
    pub name: String,
    pub data_type: DataType,
    pub slot: usize,
}

/// One table (measurement / super table).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TableSchema {
    pub name: String,
    pub tags: Vec<TagDef>,
    pub fields: Vec<FieldDef>,
}

impl TableSchema {
    /// Every tag and field column with its role (`"tag"`, `"field"`), tags first.
    pub fn columns(&self) -> impl Iterator<Item = (&str, &'static str)> {
        self.tags
            .iter()
            .map(|t| (t.name.as_str(), "tag"))
            .chain(self.fields.iter().map(|f| (f.name.as_str(), "field")))
    }
}

/// Two columns a target would take for one, or a column with the name of one the target
/// adds itself: SQL sinks refuse such tables, since renaming silently would make the data
/// set differ from what other targets receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnClash<'a> {
    /// Column `name` (a `role`) is, to the target, its own column `reserved`.
    Reserved {
        name: &'a str,
        role: &'static str,
        reserved: &'a str,
    },
    /// Column `name` (a `role`) is, to the target, the same as an earlier `first` column.
    Duplicate {
        name: &'a str,
        role: &'static str,
        first: &'static str,
    },
}

impl ColumnClash<'_> {
    /// How a duplicate is told: `appears twice among the tags` or `is both a tag and a
    /// field`.
    pub fn duplicate_words(role: &str, first: &str) -> String {
        if first == role {
            format!("appears twice among the {role}s")
        } else {
            "is both a tag and a field".to_string()
        }
    }
}

/// The first clash among `columns` (name, role) once names are folded by `key`, the
/// target's identifier rule (case folding, truncation): a column whose key is that of a
/// `reserved` name, or two columns with one key.
pub fn find_column_clash<'a, K: Eq + std::hash::Hash>(
    columns: impl IntoIterator<Item = (&'a str, &'static str)>,
    reserved: &[&'a str],
    key: impl Fn(&'a str) -> K,
) -> Option<ColumnClash<'a>> {
    let reserved: Vec<(K, &'a str)> = reserved.iter().map(|r| (key(r), *r)).collect();
    let mut seen: std::collections::HashMap<K, &'static str> = std::collections::HashMap::new();
    for (name, role) in columns {
        let k = key(name);
        if let Some((_, r)) = reserved.iter().find(|(rk, _)| *rk == k) {
            return Some(ColumnClash::Reserved {
                name,
                role,
                reserved: r,
            });
        }
        if let Some(first) = seen.insert(k, role) {
            return Some(ColumnClash::Duplicate { name, role, first });
        }
    }
    None
}

/// A tag value of one device.
#[derive(Debug, Clone, PartialEq)]
pub enum TagValue {
    Null,
    Str(Cow<'static, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl fmt::Display for TagValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagValue::Null => Ok(()),
            TagValue::Str(s) => f.write_str(s),
            TagValue::Int(v) => write!(f, "{v}"),
            TagValue::Float(v) => write!(f, "{v}"),
            TagValue::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// Produces a device's tag values on demand, deterministically, so that a data set of a
/// million devices costs no memory until a sink asks (and caches what it needs).
pub trait TagSource: Send + Sync + fmt::Debug {
    /// Clears `out` and writes the values of every tag slot of `device`.
    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>);

    /// The tag slot whose value names each device alone (`hostname`, a child table's
    /// name), by which a server's rows can be counted per device
    /// ([`crate::stored::RunScope::device_names`]); `None` (the default) where no slot
    /// does.
    fn key_slot(&self) -> Option<usize> {
        None
    }
}

/// The whole data set's shape. Every device appears in every table; a row is identified by
/// (table, device, timestamp).
#[derive(Debug, Clone)]
pub struct Schema {
    pub tables: Vec<TableSchema>,
    /// Number of tag slots a device has (the union of all tables' tag columns).
    pub tag_slots: usize,
    pub device_count: u32,
    pub tags: Arc<dyn TagSource>,
}

impl Schema {
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Total number of field columns over all tables.
    pub fn field_count(&self) -> usize {
        self.tables.iter().map(|t| t.fields.len()).sum()
    }

    /// Convenience: the tag values of `device` as a fresh vector.
    pub fn device_tags(&self, device: u32) -> Vec<TagValue> {
        let mut out = Vec::with_capacity(self.tag_slots);
        self.tags.device_tags(device, &mut out);
        out
    }
}

/// Tag values of the devices one connection has written, `stride` values per device in
/// one flat vector, fetched from the schema's [`TagSource`] on first use: memory grows with
/// the devices seen, not with the rows. SQL sinks bind tag columns from it.
#[derive(Debug)]
pub struct TagCache {
    source: Arc<Schema>,
    stride: usize,
    offsets: std::collections::HashMap<u32, usize>,
    values: Vec<TagValue>,
    scratch: Vec<TagValue>,
}

impl TagCache {
    /// An empty cache of `stride` values per device (at least the schema's tag slots
    /// any table reads).
    pub fn new(source: Arc<Schema>, stride: usize) -> Self {
        TagCache {
            source,
            stride,
            offsets: std::collections::HashMap::new(),
            values: Vec::new(),
            scratch: Vec::with_capacity(stride),
        }
    }

    /// Offset of `device`'s values in [`TagCache::values`], fetching them once.
    pub fn offset(&mut self, device: u32) -> usize {
        if let Some(&offset) = self.offsets.get(&device) {
            return offset;
        }
        self.source.tags.device_tags(device, &mut self.scratch);
        // A short or long answer must not shift other devices' values.
        self.scratch.resize(self.stride, TagValue::Null);
        let offset = self.values.len();
        self.values.append(&mut self.scratch);
        self.offsets.insert(device, offset);
        offset
    }

    /// Every cached value; a device's slot `s` is at `offset(device) + s`.
    pub fn values(&self) -> &[TagValue] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Device d has tags ("d<d>", d); counts how often it is asked.
    #[derive(Debug, Default)]
    struct Counting(AtomicUsize);

    impl TagSource for Counting {
        fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
            self.0.fetch_add(1, Ordering::Relaxed);
            out.clear();
            out.push(TagValue::Str(format!("d{device}").into()));
            out.push(TagValue::Int(device as i64));
        }
    }

    #[test]
    fn column_clashes_are_found_under_the_targets_folding() {
        let lower = |n: &str| n.to_ascii_lowercase();
        let cols = [("Host", "tag"), ("ts", "field")];
        assert_eq!(
            find_column_clash(cols, &["TS"], lower),
            Some(ColumnClash::Reserved {
                name: "ts",
                role: "field",
                reserved: "TS"
            })
        );
        let cols = [("Host", "tag"), ("x", "field"), ("host", "field")];
        assert_eq!(
            find_column_clash(cols, &["ts"], lower),
            Some(ColumnClash::Duplicate {
                name: "host",
                role: "field",
                first: "tag"
            })
        );
        assert_eq!(
            find_column_clash(cols, &["ts"], |n: &str| n.to_string()),
            None
        );
        assert_eq!(
            ColumnClash::duplicate_words("tag", "tag"),
            "appears twice among the tags"
        );
        assert_eq!(
            ColumnClash::duplicate_words("field", "tag"),
            "is both a tag and a field"
        );
    }

    #[test]
    fn the_tag_cache_fetches_each_device_once_and_pads_to_its_stride() {
        let source = Arc::new(Counting::default());
        let schema = Arc::new(Schema {
            tables: Vec::new(),
            tag_slots: 2,
            device_count: 10,
            tags: source.clone(),
        });
        let mut cache = TagCache::new(schema, 3);
        let a = cache.offset(7);
        let b = cache.offset(2);
        assert_eq!(cache.offset(7), a);
        assert_eq!(source.0.load(Ordering::Relaxed), 2);
        assert_eq!(b - a, 3, "stride 3: the source's 2 values and a Null");
        assert_eq!(cache.values()[a + 1], TagValue::Int(7));
        assert_eq!(cache.values()[a + 2], TagValue::Null);
        assert_eq!(cache.values()[b], TagValue::Str("d2".to_string().into()));
    }
}
