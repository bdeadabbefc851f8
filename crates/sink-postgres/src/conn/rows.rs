//! A table's rows encoded for the server: COPY's text and binary formats, one row's
//! bound INSERT parameters, and the UNNEST array of device numbers.

use std::ops::Range;

use sqlx::Arguments;
use sqlx::postgres::PgArguments;
use tsload_core::{ErrorKind, SinkError, TableBatch};

use super::cache::{Devices, TableState, field_error, tag_error};
use super::failure::Failure;
use crate::bind::Param;
use crate::encode::{
    self, ArrayWriter, COPY_BINARY_HEADER, COPY_BINARY_TRAILER, Cell, PgType, Value,
};

/// Appends one `bigint[]` UNNEST array of device numbers (the tags table's `id`, the rows'
/// `tags_id`) to `buf`, and its range to `arrays`.
pub(super) fn push_device_ids(
    buf: &mut Vec<u8>,
    arrays: &mut Vec<Range<usize>>,
    devices: &[u32],
) -> Result<(), Failure> {
    let at = buf.len();
    let mut a = ArrayWriter::begin(buf, PgType::Int8, devices.len())?;
    for &device in devices {
        a.push(buf, &Value::Int8(i64::from(device)))?;
    }
    a.finish(buf);
    arrays.push(at..buf.len());
    Ok(())
}

/// Adds one parameter; sqlx only fails here when a value passes 2 GiB.
pub(super) fn add<'q, T>(args: &mut PgArguments, value: T, table: &str) -> Result<(), SinkError>
where
    T: sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + 'q,
{
    args.add(value)
        .map_err(|e| SinkError::new(ErrorKind::Rejected, format!("table {table}: {e}")))
}

/// Binds row `row` of `tb` (ts, tags_id, own tags, fields); returns its payload bytes.
pub(super) fn bind_row(
    args: &mut PgArguments,
    t: &TableState,
    devices: &Devices,
    row_dev: &[u32],
    tb: &TableBatch,
    row: usize,
) -> Result<u64, SinkError> {
    let mut bytes = 0;
    let mut push = |args: &mut PgArguments, value: Value<'_>, ty: PgType| {
        bytes += binary_len(&value);
        add(args, Param { value, ty }, &t.label)
    };
    push(args, Value::Timestamptz(tb.ts[row]), PgType::Timestamptz)?;
    if has_tags_id(t) {
        push(args, Value::Int8(i64::from(tb.device[row])), PgType::Int8)?;
    }
    for (slot, ty, name) in &t.tag_cols {
        let value = &devices.of(row_dev[row])[*slot];
        let value = encode::convert(Cell::of_tag(value), *ty)
            .map_err(|e| tag_error(&t.label, name, tb.device[row], &e))?;
        push(args, value, *ty)?;
    }
    for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
        let value = encode::convert(Cell::of_field(column, row), *ty)
            .map_err(|e| field_error(t, col, row, &e))?;
        push(args, value, *ty)?;
    }
    Ok(bytes)
}

/// Bytes of a value in binary format (numbers as text counted as 8).
fn binary_len(value: &Value<'_>) -> u64 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int2(_) => 2,
        Value::Int4(_) | Value::Float4(_) => 4,
        Value::Str(s) => s.len() as u64,
        _ => 8,
    }
}

/// Rows of `tb` in COPY's text format: `ts [\t tags_id] [\t <own tags>] \t <fields> \n`.
pub(super) fn encode_copy_text(
    buf: &mut Vec<u8>,
    t: &TableState,
    tb: &TableBatch,
    row_dev: &[u32],
) -> Result<(), SinkError> {
    let tags_id = has_tags_id(t);
    for row in 0..tb.rows() {
        encode::push_timestamp_text(buf, tb.ts[row]);
        if tags_id {
            buf.push(b'\t');
            buf.extend_from_slice(itoa::Buffer::new().format(tb.device[row]).as_bytes());
        }
        if !t.tag_cols.is_empty()
            && let Some(&dense) = row_dev.get(row)
        {
            buf.extend_from_slice(t.tag_section(dense));
        }
        for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
            let value = encode::convert(Cell::of_field(column, row), *ty)
                .map_err(|e| field_error(t, col, row, &e))?;
            buf.push(b'\t');
            encode::write_text(buf, &value);
        }
        buf.push(b'\n');
    }
    Ok(())
}

/// Rows of `tb` in COPY's binary format, header and trailer included.
pub(super) fn encode_copy_binary(
    buf: &mut Vec<u8>,
    t: &TableState,
    tb: &TableBatch,
    row_dev: &[u32],
) -> Result<(), SinkError> {
    let tags_id = has_tags_id(t);
    let columns = i16::try_from(t.columns.len()).map_err(|_| {
        SinkError::new(
            ErrorKind::Rejected,
            format!("table {}: more than 32,767 columns", t.label),
        )
    })?;
    buf.extend_from_slice(COPY_BINARY_HEADER);
    for row in 0..tb.rows() {
        buf.extend_from_slice(&columns.to_be_bytes());
        buf.extend_from_slice(&8i32.to_be_bytes());
        buf.extend_from_slice(&encode::pg_micros(tb.ts[row]).to_be_bytes());
        if tags_id {
            buf.extend_from_slice(&8i32.to_be_bytes());
            buf.extend_from_slice(&i64::from(tb.device[row]).to_be_bytes());
        }
        if !t.tag_cols.is_empty()
            && let Some(&dense) = row_dev.get(row)
        {
            buf.extend_from_slice(t.tag_section(dense));
        }
        for (col, (column, (ty, _))) in tb.columns.iter().zip(&t.fields).enumerate() {
            let value = encode::convert(Cell::of_field(column, row), *ty)
                .map_err(|e| field_error(t, col, row, &e))?;
            encode::write_binary_field(buf, &value).map_err(|e| field_error(t, col, row, &e))?;
        }
    }
    buf.extend_from_slice(COPY_BINARY_TRAILER);
    Ok(())
}

fn has_tags_id(t: &TableState) -> bool {
    t.tags_id
}
