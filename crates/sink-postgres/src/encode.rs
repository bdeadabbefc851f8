//! Pure value encoding for PostgreSQL, without I/O: the wire types of the columns, the
//! conversion of batch and tag values to them (range-checked), PostgreSQL's binary format
//! (COPY binary rows, bind parameters, one-dimensional arrays) and COPY's text format
//! (escaping, `\N` for NULL, ISO timestamps).
//!
//! Timestamps: the batch holds nanoseconds since the Unix epoch; `timestamptz` holds
//! microseconds, so nanoseconds are truncated toward negative infinity (floor), the same
//! way in every insert method and format.

use tsload_core::{Column, ColumnValues, DataType, TagValue};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 00:00:00 UTC).
pub(crate) const PG_EPOCH_OFFSET_US: i64 = 946_684_800_000_000;

/// Signature, flags and header-extension length that start a binary COPY stream.
pub(crate) const COPY_BINARY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// Field count -1: the end of a binary COPY stream.
pub(crate) const COPY_BINARY_TRAILER: &[u8] = &[0xff, 0xff];

/// What a column is sent as (the type of its values on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PgType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Text,
    Timestamptz,
}

impl PgType {
    /// The wire type of a schema [`DataType`]. Strings go as `text` (a `varchar(n)` column
    /// takes them by assignment, checking the length).
    pub(crate) fn of(data_type: DataType) -> Self {
        match data_type {
            DataType::Bool => PgType::Bool,
            DataType::TinyInt | DataType::SmallInt => PgType::Int2,
            DataType::Int => PgType::Int4,
            DataType::BigInt | DataType::UBigInt | DataType::Timestamp => PgType::Int8,
            DataType::Float => PgType::Float4,
            DataType::Double => PgType::Float8,
            DataType::Varchar(_) | DataType::NChar(_) => PgType::Text,
        }
    }

    /// SQL name, as used in casts (`$1::bigint[]`) and column definitions.
    pub(crate) fn sql_name(self) -> &'static str {
        match self {
            PgType::Bool => "boolean",
            PgType::Int2 => "smallint",
            PgType::Int4 => "integer",
            PgType::Int8 => "bigint",
            PgType::Float4 => "real",
            PgType::Float8 => "double precision",
            PgType::Text => "text",
            PgType::Timestamptz => "timestamptz",
        }
    }

    /// The built-in type OID.
    pub(crate) fn oid(self) -> u32 {
        match self {
            PgType::Bool => 16,
            PgType::Int2 => 21,
            PgType::Int4 => 23,
            PgType::Int8 => 20,
            PgType::Float4 => 700,
            PgType::Float8 => 701,
            PgType::Text => 25,
            PgType::Timestamptz => 1184,
        }
    }

    /// The built-in OID of the one-dimensional array of this type.
    pub(crate) fn array_oid(self) -> u32 {
        match self {
            PgType::Bool => 1000,
            PgType::Int2 => 1005,
            PgType::Int4 => 1007,
            PgType::Int8 => 1016,
            PgType::Float4 => 1021,
            PgType::Float8 => 1022,
            PgType::Text => 1009,
            PgType::Timestamptz => 1185,
        }
    }
}

/// A value as the batch or the tag source holds it, before conversion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cell<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl<'a> Cell<'a> {
    pub(crate) fn of_tag(value: &'a TagValue) -> Self {
        match value {
            TagValue::Null => Cell::Null,
            TagValue::Str(s) => Cell::Str(s),
            TagValue::Int(v) => Cell::Int(*v),
            TagValue::Float(v) => Cell::Float(*v),
            TagValue::Bool(v) => Cell::Bool(*v),
        }
    }

    /// Row `row` of a field column (NULL where the validity vector says so).
    pub(crate) fn of_field(column: &'a Column, row: usize) -> Self {
        if !column.is_valid(row) {
            return Cell::Null;
        }
        match &column.values {
            ColumnValues::Bool(v) => Cell::Bool(v[row]),
            ColumnValues::Int(v) => Cell::Int(v[row]),
            ColumnValues::Float(v) => Cell::Float(v[row]),
            ColumnValues::Str(v) => Cell::Str(v.get(row)),
        }
    }
}

/// A value converted to its column's wire type, ready for either format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    /// Text, from a string or from a number or boolean written as text.
    Str(&'a str),
    IntText(i64),
    FloatText(f64),
    BoolText(bool),
    /// Nanoseconds since the Unix epoch.
    Timestamptz(i64),
}

/// Converts `cell` to a value of type `ty`, or says why it cannot be one. Numbers are range
/// checked (no silent wrap-around); strings are parsed for numeric columns (a tag source may
/// produce either); numbers and booleans become their text for text columns.
pub(crate) fn convert(cell: Cell<'_>, ty: PgType) -> Result<Value<'_>, String> {
    let int = |v: i64| -> Result<Value<'static>, String> {
        match ty {
            PgType::Int2 => i16::try_from(v)
                .map(Value::Int2)
                .map_err(|_| format!("value {v} is out of range for smallint")),
            PgType::Int4 => i32::try_from(v)
                .map(Value::Int4)
                .map_err(|_| format!("value {v} is out of range for integer")),
            _ => Ok(Value::Int8(v)),
        }
    };
    let bad = |what: &dyn std::fmt::Display| {
        Err(format!("value {what} is not a valid {}", ty.sql_name()))
    };
    match (cell, ty) {
        (Cell::Null, _) => Ok(Value::Null),
        (Cell::Bool(v), PgType::Bool) => Ok(Value::Bool(v)),
        (Cell::Int(v), PgType::Bool) => Ok(Value::Bool(v != 0)),
        (Cell::Str(s), PgType::Bool) => match parse_bool(s) {
            Some(v) => Ok(Value::Bool(v)),
            None => bad(&format_args!("{s:?}")),
        },
        (Cell::Int(v), PgType::Int2 | PgType::Int4 | PgType::Int8) => int(v),
        (Cell::Bool(v), PgType::Int2 | PgType::Int4 | PgType::Int8) => int(i64::from(v)),
        (Cell::Str(s), PgType::Int2 | PgType::Int4 | PgType::Int8) => match s.trim().parse() {
            Ok(v) => int(v),
            Err(_) => bad(&format_args!("{s:?}")),
        },
        (Cell::Float(v), PgType::Float4) => Ok(Value::Float4(v as f32)),
        (Cell::Float(v), PgType::Float8) => Ok(Value::Float8(v)),
        (Cell::Int(v), PgType::Float4) => Ok(Value::Float4(v as f32)),
        (Cell::Int(v), PgType::Float8) => Ok(Value::Float8(v as f64)),
        (Cell::Str(s), PgType::Float4 | PgType::Float8) => match parse_float(s) {
            Some(v) if ty == PgType::Float4 => Ok(Value::Float4(v as f32)),
            Some(v) => Ok(Value::Float8(v)),
            None => bad(&format_args!("{s:?}")),
        },
        (Cell::Str(s), PgType::Text) => Ok(Value::Str(s)),
        (Cell::Int(v), PgType::Text) => Ok(Value::IntText(v)),
        (Cell::Float(v), PgType::Text) => Ok(Value::FloatText(v)),
        (Cell::Bool(v), PgType::Text) => Ok(Value::BoolText(v)),
        (Cell::Int(v), PgType::Timestamptz) => Ok(Value::Timestamptz(v)),
        (Cell::Float(v), PgType::Int2 | PgType::Int4 | PgType::Int8 | PgType::Bool) => bad(&v),
        (Cell::Bool(v), PgType::Float4 | PgType::Float8) => bad(&v),
        (Cell::Float(v), PgType::Timestamptz) => bad(&v),
        (Cell::Bool(v), PgType::Timestamptz) => bad(&v),
        (Cell::Str(s), PgType::Timestamptz) => bad(&format_args!("{s:?}")),
    }
}

/// PostgreSQL's boolean spellings (case-insensitive, surrounding blanks ignored).
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// A float in Rust's or PostgreSQL's spelling (`NaN`, `Infinity`, `-Infinity`, `inf`).
fn parse_float(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => Some(f64::INFINITY),
        "-infinity" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// Microseconds since the Unix epoch of a nanosecond timestamp, truncated toward negative
/// infinity (so `-1` ns is `-1` µs, as PostgreSQL would round an earlier instant down).
pub(crate) fn unix_micros(ns: i64) -> i64 {
    ns.div_euclid(1000)
}

/// The binary `timestamptz` value: microseconds since 2000-01-01 UTC.
pub(crate) fn pg_micros(ns: i64) -> i64 {
    unix_micros(ns) - PG_EPOCH_OFFSET_US
}

// ---------------------------------------------------------------------------------------
// Binary format

/// Appends the binary representation of `value` (no length prefix); returns false (and
/// writes nothing) for NULL.
pub(crate) fn write_binary(out: &mut Vec<u8>, value: &Value<'_>) -> bool {
    match *value {
        Value::Null => return false,
        Value::Bool(v) => out.push(u8::from(v)),
        Value::Int2(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::Int4(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::Int8(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::Float4(v) => out.extend_from_slice(&v.to_bits().to_be_bytes()),
        Value::Float8(v) => out.extend_from_slice(&v.to_bits().to_be_bytes()),
        Value::Str(s) => out.extend_from_slice(s.as_bytes()),
        Value::IntText(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
        Value::FloatText(v) => push_float_text(out, v),
        Value::BoolText(v) => out.extend_from_slice(if v { b"true" } else { b"false" }),
        Value::Timestamptz(ns) => out.extend_from_slice(&pg_micros(ns).to_be_bytes()),
    }
    true
}

/// Appends `value` as a length-prefixed field (COPY binary tuples, array elements): the
/// 32-bit length, then the bytes; length -1 and no bytes for NULL.
pub(crate) fn write_binary_field(out: &mut Vec<u8>, value: &Value<'_>) -> Result<(), String> {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    if write_binary(out, value) {
        let len = i32::try_from(out.len() - at - 4)
            .map_err(|_| "a value is longer than 2 GiB".to_string())?;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    } else {
        out[at..at + 4].copy_from_slice(&(-1i32).to_be_bytes());
    }
    Ok(())
}

/// Builds a one-dimensional PostgreSQL array in binary format, element type `elem`, from
/// `rows` values produced by `value` (NULLs allowed). The header's has-null flag is set
/// from the values. Errors carry the failing row.
pub(crate) struct ArrayWriter {
    start: usize,
    has_null: bool,
}

impl ArrayWriter {
    /// Writes the header of an array of `len` elements of `elem` at the end of `out`.
    pub(crate) fn begin(out: &mut Vec<u8>, elem: PgType, len: usize) -> Result<Self, String> {
        let len =
            i32::try_from(len).map_err(|_| format!("{len} rows are too many for an array"))?;
        let start = out.len();
        out.extend_from_slice(&1i32.to_be_bytes()); // dimensions
        out.extend_from_slice(&0i32.to_be_bytes()); // has nulls, patched in `finish`
        out.extend_from_slice(&elem.oid().to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes()); // lower bound
        Ok(ArrayWriter {
            start,
            has_null: false,
        })
    }

    pub(crate) fn push(&mut self, out: &mut Vec<u8>, value: &Value<'_>) -> Result<(), String> {
        self.has_null |= matches!(value, Value::Null);
        write_binary_field(out, value)
    }

    pub(crate) fn finish(self, out: &mut [u8]) {
        if self.has_null {
            out[self.start + 4..self.start + 8].copy_from_slice(&1i32.to_be_bytes());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Text format (COPY ... FROM STDIN, the default text format: tab-separated, `\N` = NULL)

/// Appends `s` escaped for COPY's text format: backslash, newline, carriage return and tab
/// become `\\`, `\n`, `\r`, `\t`; everything else is copied (so a literal `\N` string stays
/// distinct from NULL).
pub(crate) fn push_copy_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(esc);
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
}

/// Appends `value` in COPY's text format (escaped; `\N` for NULL).
pub(crate) fn write_text(out: &mut Vec<u8>, value: &Value<'_>) {
    match *value {
        Value::Null => out.extend_from_slice(b"\\N"),
        Value::Bool(v) | Value::BoolText(v) => out.push(if v { b't' } else { b'f' }),
        Value::Int2(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
        Value::Int4(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
        Value::Int8(v) | Value::IntText(v) => {
            out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes())
        }
        Value::Float4(v) => push_float4_text(out, v),
        Value::Float8(v) | Value::FloatText(v) => push_float_text(out, v),
        Value::Str(s) => push_copy_escaped(out, s),
        Value::Timestamptz(ns) => push_timestamp_text(out, ns),
    }
}

fn push_special_float(out: &mut Vec<u8>, nan: bool, positive: bool) {
    out.extend_from_slice(match (nan, positive) {
        (true, _) => b"NaN",
        (false, true) => b"Infinity",
        (false, false) => b"-Infinity",
    });
}

/// Shortest round-trip text of a double; `NaN` / `Infinity` / `-Infinity` as PostgreSQL
/// spells them.
fn push_float_text(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        push_special_float(out, v.is_nan(), v > 0.0);
    }
}

fn push_float4_text(out: &mut Vec<u8>, v: f32) {
    if v.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        push_special_float(out, v.is_nan(), v > 0.0);
    }
}

/// Appends a nanosecond timestamp as `YYYY-MM-DD HH:MM:SS.ffffff+00` (ISO, UTC, microsecond
/// precision), which `timestamptz` input reads the same under any DateStyle or TimeZone.
/// Every `i64` nanosecond timestamp lies in years 1677..=2262, so the year has 4 digits.
pub(crate) fn push_timestamp_text(out: &mut Vec<u8>, ns: i64) {
    const DAY_US: i64 = 86_400_000_000;
    let us = unix_micros(ns);
    let days = us.div_euclid(DAY_US);
    let mut rem = us.rem_euclid(DAY_US);
    let (year, month, day) = civil_from_days(days);
    let micros = rem % 1_000_000;
    rem /= 1_000_000;
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    let mut buf = *b"0000-00-00 00:00:00.000000+00";
    put_digits(&mut buf[0..4], year);
    put_digits(&mut buf[5..7], month);
    put_digits(&mut buf[8..10], day);
    put_digits(&mut buf[11..13], h);
    put_digits(&mut buf[14..16], m);
    put_digits(&mut buf[17..19], s);
    put_digits(&mut buf[20..26], micros);
    out.extend_from_slice(&buf);
}

/// Writes `v` (non-negative, fits) as zero-padded decimal filling `dst`.
fn put_digits(dst: &mut [u8], mut v: i64) {
    for d in dst.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Proleptic Gregorian (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::{Column, StrValues};

    fn text(value: Value<'_>) -> String {
        let mut out = Vec::new();
        write_text(&mut out, &value);
        String::from_utf8(out).unwrap()
    }

    fn binary(value: Value<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        write_binary_field(&mut out, &value).unwrap();
        out
    }

    #[test]
    fn maps_data_types_to_wire_types() {
        assert_eq!(PgType::of(DataType::Bool), PgType::Bool);
        assert_eq!(PgType::of(DataType::TinyInt), PgType::Int2);
        assert_eq!(PgType::of(DataType::SmallInt), PgType::Int2);
        assert_eq!(PgType::of(DataType::Int), PgType::Int4);
        assert_eq!(PgType::of(DataType::BigInt), PgType::Int8);
        assert_eq!(PgType::of(DataType::UBigInt), PgType::Int8);
        assert_eq!(PgType::of(DataType::Timestamp), PgType::Int8);
        assert_eq!(PgType::of(DataType::Float), PgType::Float4);
        assert_eq!(PgType::of(DataType::Double), PgType::Float8);
        assert_eq!(PgType::of(DataType::Varchar(8)), PgType::Text);
        assert_eq!(PgType::of(DataType::NChar(8)), PgType::Text);
        // OIDs from pg_type.dat.
        assert_eq!((PgType::Int8.oid(), PgType::Int8.array_oid()), (20, 1016));
        assert_eq!(
            (PgType::Timestamptz.oid(), PgType::Timestamptz.array_oid()),
            (1184, 1185)
        );
        assert_eq!((PgType::Text.oid(), PgType::Text.array_oid()), (25, 1009));
    }

    #[test]
    fn converts_with_range_checks() {
        assert_eq!(convert(Cell::Int(7), PgType::Int2), Ok(Value::Int2(7)));
        assert_eq!(
            convert(Cell::Int(40_000), PgType::Int2).unwrap_err(),
            "value 40000 is out of range for smallint"
        );
        assert_eq!(convert(Cell::Int(-7), PgType::Int4), Ok(Value::Int4(-7)));
        assert!(convert(Cell::Int(1 << 40), PgType::Int4).is_err());
        assert_eq!(
            convert(Cell::Int(1 << 40), PgType::Int8),
            Ok(Value::Int8(1 << 40))
        );
        assert_eq!(
            convert(Cell::Str(" 12 "), PgType::Int8),
            Ok(Value::Int8(12))
        );
        assert_eq!(
            convert(Cell::Str("x1"), PgType::Int4).unwrap_err(),
            "value \"x1\" is not a valid integer"
        );
        assert_eq!(
            convert(Cell::Str("TRUE"), PgType::Bool),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            convert(Cell::Str("-Infinity"), PgType::Float8),
            Ok(Value::Float8(f64::NEG_INFINITY))
        );
        assert_eq!(
            convert(Cell::Float(0.1), PgType::Float4),
            Ok(Value::Float4(0.1))
        );
        assert_eq!(convert(Cell::Int(3), PgType::Text), Ok(Value::IntText(3)));
        assert_eq!(convert(Cell::Null, PgType::Int2), Ok(Value::Null));
        assert!(convert(Cell::Float(1.5), PgType::Int8).is_err());
        assert!(convert(Cell::Str("now"), PgType::Timestamptz).is_err());
    }

    #[test]
    fn reads_field_cells_with_nulls() {
        let mut s = StrValues::default();
        s.push("a");
        s.push("");
        let col = Column {
            values: ColumnValues::Str(s),
            valid: vec![true, false],
        };
        assert_eq!(Cell::of_field(&col, 0), Cell::Str("a"));
        assert_eq!(Cell::of_field(&col, 1), Cell::Null);
        let ints = Column {
            values: ColumnValues::Int(vec![5]),
            valid: vec![],
        };
        assert_eq!(Cell::of_field(&ints, 0), Cell::Int(5));
        assert_eq!(Cell::of_tag(&TagValue::Str("h".into())), Cell::Str("h"));
        assert_eq!(Cell::of_tag(&TagValue::Null), Cell::Null);
    }

    #[test]
    fn escapes_copy_text() {
        assert_eq!(text(Value::Str("plain")), "plain");
        assert_eq!(text(Value::Str("a\tb\nc\rd\\e")), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(text(Value::Str("\\N")), "\\\\N");
        assert_eq!(text(Value::Str("")), "");
        assert_eq!(text(Value::Str("é\t")), "é\\t");
        assert_eq!(text(Value::Null), "\\N");
    }

    #[test]
    fn writes_numbers_as_copy_text() {
        assert_eq!(text(Value::Bool(true)), "t");
        assert_eq!(text(Value::Bool(false)), "f");
        assert_eq!(text(Value::Int2(-32768)), "-32768");
        assert_eq!(text(Value::Int4(42)), "42");
        assert_eq!(text(Value::Int8(i64::MIN)), "-9223372036854775808");
        assert_eq!(text(Value::Float8(0.1)), "0.1");
        assert_eq!(text(Value::Float8(1e300)), "1e300");
        assert_eq!(text(Value::Float8(f64::NAN)), "NaN");
        assert_eq!(text(Value::Float8(f64::INFINITY)), "Infinity");
        assert_eq!(text(Value::Float4(f32::NEG_INFINITY)), "-Infinity");
        assert_eq!(text(Value::Float4(0.1)), "0.1");
        assert_eq!(text(Value::IntText(7)), "7");
        assert_eq!(text(Value::BoolText(true)), "t");
    }

    #[test]
    fn writes_timestamps_as_iso_utc_microseconds() {
        assert_eq!(text(Value::Timestamptz(0)), "1970-01-01 00:00:00.000000+00");
        // 2023-11-14 22:13:20 UTC, plus 123456789 ns: the last 789 ns are cut.
        assert_eq!(
            text(Value::Timestamptz(1_700_000_000_123_456_789)),
            "2023-11-14 22:13:20.123456+00"
        );
        // Before the epoch, floor: -1 ns is 1969-12-31 23:59:59.999999.
        assert_eq!(
            text(Value::Timestamptz(-1)),
            "1969-12-31 23:59:59.999999+00"
        );
        assert_eq!(
            text(Value::Timestamptz(951_782_400_000_000_000)),
            "2000-02-29 00:00:00.000000+00"
        );
        assert_eq!(
            text(Value::Timestamptz(i64::MAX)),
            "2262-04-11 23:47:16.854775+00"
        );
        assert_eq!(
            text(Value::Timestamptz(i64::MIN)),
            "1677-09-21 00:12:43.145224+00"
        );
    }

    #[test]
    fn converts_nanoseconds_to_postgres_microseconds() {
        assert_eq!(unix_micros(1_999), 1);
        assert_eq!(unix_micros(-1), -1);
        assert_eq!(pg_micros(946_684_800_000_000_000), 0);
        assert_eq!(pg_micros(946_684_800_000_001_500), 1);
    }

    #[test]
    fn encodes_binary_values() {
        assert_eq!(binary(Value::Null), vec![0xff, 0xff, 0xff, 0xff]);
        assert_eq!(binary(Value::Bool(true)), vec![0, 0, 0, 1, 1]);
        assert_eq!(binary(Value::Int2(-2)), vec![0, 0, 0, 2, 0xff, 0xfe]);
        assert_eq!(binary(Value::Int4(258)), vec![0, 0, 0, 4, 0, 0, 1, 2]);
        assert_eq!(
            binary(Value::Int8(1)),
            vec![0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]
        );
        assert_eq!(
            binary(Value::Float4(1.0)),
            vec![0, 0, 0, 4, 0x3f, 0x80, 0, 0]
        );
        assert_eq!(
            binary(Value::Float8(-2.0)),
            vec![0, 0, 0, 8, 0xc0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(binary(Value::Str("hé")), vec![0, 0, 0, 3, b'h', 0xc3, 0xa9]);
        assert_eq!(
            binary(Value::IntText(-12)),
            vec![0, 0, 0, 3, b'-', b'1', b'2']
        );
        assert_eq!(binary(Value::BoolText(false)), b"\0\0\0\x05false".to_vec());
        // 2000-01-01 00:00:00.000001 UTC is 1 µs after PostgreSQL's epoch.
        assert_eq!(
            binary(Value::Timestamptz(946_684_800_000_001_999)),
            vec![0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]
        );
        assert_eq!(
            binary(Value::Timestamptz(0)),
            [&[0, 0, 0, 8][..], &(-PG_EPOCH_OFFSET_US).to_be_bytes()].concat()
        );
    }

    #[test]
    fn encodes_binary_arrays() {
        let mut out = vec![9]; // arrays may start anywhere in a buffer
        let mut a = ArrayWriter::begin(&mut out, PgType::Int4, 2).unwrap();
        a.push(&mut out, &Value::Int4(5)).unwrap();
        a.push(&mut out, &Value::Null).unwrap();
        a.finish(&mut out);
        let expect: Vec<u8> = [
            &[9u8][..],
            &1i32.to_be_bytes(),  // ndim
            &1i32.to_be_bytes(),  // has nulls
            &23u32.to_be_bytes(), // int4
            &2i32.to_be_bytes(),  // length
            &1i32.to_be_bytes(),  // lower bound
            &4i32.to_be_bytes(),
            &5i32.to_be_bytes(),
            &(-1i32).to_be_bytes(),
        ]
        .concat();
        assert_eq!(out, expect);

        let mut out = Vec::new();
        let mut a = ArrayWriter::begin(&mut out, PgType::Text, 1).unwrap();
        a.push(&mut out, &Value::Str("x")).unwrap();
        a.finish(&mut out);
        assert_eq!(&out[4..8], &0i32.to_be_bytes(), "no nulls");
        assert_eq!(&out[8..12], &25u32.to_be_bytes());
        assert_eq!(&out[20..], &[0, 0, 0, 1, b'x']);
    }

    #[test]
    fn copy_binary_framing() {
        assert_eq!(COPY_BINARY_HEADER.len(), 11 + 4 + 4);
        assert_eq!(&COPY_BINARY_HEADER[..11], b"PGCOPY\n\xff\r\n\0");
        assert_eq!(COPY_BINARY_TRAILER, &(-1i16).to_be_bytes());
    }
}
