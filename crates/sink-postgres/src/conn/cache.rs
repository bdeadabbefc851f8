//! What a connection keeps between batches: per table, its statement texts and (for COPY)
//! the encoded tag columns of each device; the tag values of the devices it has seen; and
//! in the tags layout, the devices whose tags rows it has committed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tsload_core::{ErrorKind, Schema, SinkError, TagValue};

use crate::CopyFormat;
use crate::encode::{self, Cell, PgType};
use crate::sql::{self, ColumnDef};

/// Distinct partial-chunk INSERTs kept per table. Batches of one size need one; a run whose
/// row counts vary more just rebuilds the odd statement.
pub(super) const MAX_CACHED_TAILS: usize = 32;

/// What a connection keeps per schema table.
#[derive(Debug)]
pub(super) struct TableState {
    /// The table name, quoted, for messages.
    pub(super) label: String,
    /// Columns of a row: ts, tags_id (tags layout), the table's own tags, fields.
    pub(super) columns: Vec<ColumnDef>,
    /// Tags layout: the second column is `tags_id`, the device number.
    pub(super) tags_id: bool,
    /// Tag slot, wire type and name of each tag column of the table itself (wide: every
    /// tag; tags layout: those not in the shared `tags` table), in column order.
    pub(super) tag_cols: Vec<(usize, PgType, String)>,
    /// Wire type and name of each field column.
    pub(super) fields: Vec<(PgType, String)>,
    pub(super) copy_sql: String,
    pub(super) unnest_sql: String,
    /// The INSERT or UNNEST statements preceded by the ledger's CTE, by row count (0 for
    /// UNNEST), built on first use.
    pub(super) ledger_sql: HashMap<usize, String>,
    /// Rows of a full INSERT chunk.
    pub(super) chunk_rows: usize,
    /// `INSERT INTO "t" (...) VALUES `.
    pub(super) prefix: String,
    /// The INSERT for a full chunk (built on first use).
    pub(super) full: String,
    /// INSERTs for partial chunks, by row count.
    pub(super) tails: HashMap<usize, String>,
    /// COPY: the encoded tag columns of each device (by dense index), in this table's
    /// order and the configured format, end to end.
    pub(super) tag_bytes: Vec<u8>,
    /// `tag_spans[dense]` is that device's range in `tag_bytes` (start `u32::MAX`: not yet).
    pub(super) tag_spans: Vec<(u32, u32)>,
}

impl TableState {
    pub(super) fn insert_sql(&self, rows: usize) -> Option<&str> {
        if rows == self.chunk_rows {
            Some(&self.full)
        } else {
            self.tails.get(&rows).map(String::as_str)
        }
    }

    pub(super) fn ensure_inserts(&mut self, rows: usize) {
        let columns = self.columns.len();
        if rows >= self.chunk_rows && self.full.is_empty() {
            self.full = sql::insert(&self.prefix, columns, self.chunk_rows);
        }
        let tail = rows % self.chunk_rows;
        if tail == 0 || self.tails.contains_key(&tail) {
            return;
        }
        if self.tails.len() >= MAX_CACHED_TAILS {
            self.tails.clear();
        }
        self.tails
            .insert(tail, sql::insert(&self.prefix, columns, tail));
    }

    /// Encodes the tag columns of device `dense` (values at `values`) for COPY, once.
    pub(super) fn ensure_tag_section(
        &mut self,
        dense: u32,
        device: u32,
        values: &[TagValue],
        format: CopyFormat,
    ) -> Result<(), SinkError> {
        let i = dense as usize;
        if self.tag_spans.len() <= i {
            self.tag_spans.resize(i + 1, (u32::MAX, 0));
        }
        if self.tag_spans[i].0 != u32::MAX {
            return Ok(());
        }
        let start = self.tag_bytes.len();
        if let Err(e) = self.encode_tags(values, device, format) {
            self.tag_bytes.truncate(start);
            return Err(e);
        }
        let end = u32::try_from(self.tag_bytes.len()).map_err(|_| {
            SinkError::new(
                ErrorKind::Other,
                format!("table {}: the tag cache passed 4 GiB", self.label),
            )
        })?;
        self.tag_spans[i] = (start as u32, end);
        Ok(())
    }

    fn encode_tags(
        &mut self,
        values: &[TagValue],
        device: u32,
        format: CopyFormat,
    ) -> Result<(), SinkError> {
        for (slot, ty, name) in &self.tag_cols {
            let value = encode::convert(Cell::of_tag(&values[*slot]), *ty)
                .map_err(|e| tag_error(&self.label, name, device, &e))?;
            match format {
                CopyFormat::Text => {
                    self.tag_bytes.push(b'\t');
                    encode::write_text(&mut self.tag_bytes, &value);
                }
                CopyFormat::Binary => encode::write_binary_field(&mut self.tag_bytes, &value)
                    .map_err(|e| tag_error(&self.label, name, device, &e))?,
            }
        }
        Ok(())
    }

    pub(super) fn tag_section(&self, dense: u32) -> &[u8] {
        let (start, end) = self.tag_spans[dense as usize];
        &self.tag_bytes[start as usize..end as usize]
    }
}

pub(super) fn tag_error(table: &str, tag: &str, device: u32, reason: &str) -> SinkError {
    SinkError::new(
        ErrorKind::Rejected,
        format!("table {table}: tag {tag:?} of device {device}: {reason}"),
    )
}

pub(super) fn field_error(t: &TableState, col: usize, row: usize, reason: &str) -> SinkError {
    SinkError::new(
        ErrorKind::Rejected,
        format!(
            "table {}: field {:?} of row {row}: {reason}",
            t.label, t.fields[col].1
        ),
    )
}

/// Tag values of the devices this connection has written, `stride` values per device in
/// one flat vector by dense index: memory grows with the devices seen, not the data set.
#[derive(Debug)]
pub(super) struct Devices {
    pub(super) source: Arc<Schema>,
    pub(super) stride: usize,
    pub(super) index: HashMap<u32, u32>,
    pub(super) values: Vec<TagValue>,
    pub(super) scratch: Vec<TagValue>,
}

impl Devices {
    /// Dense index of `device`, fetching its values from the tag source once.
    pub(super) fn index(&mut self, device: u32) -> u32 {
        if let Some(&i) = self.index.get(&device) {
            return i;
        }
        let i = self.index.len() as u32;
        fetch_tags(&self.source, device, self.stride, &mut self.scratch);
        self.values.append(&mut self.scratch);
        self.index.insert(device, i);
        i
    }

    pub(super) fn of(&self, dense: u32) -> &[TagValue] {
        let at = dense as usize * self.stride;
        &self.values[at..at + self.stride]
    }
}

/// Writes exactly `stride` tag values of `device` into `out` (a short or long answer must
/// not shift other devices' values).
pub(super) fn fetch_tags(source: &Schema, device: u32, stride: usize, out: &mut Vec<TagValue>) {
    source.tags.device_tags(device, out);
    out.resize(stride, TagValue::Null);
}

/// The tags layout's bookkeeping.
#[derive(Debug)]
pub(super) struct TagsTable {
    /// Slot and wire type of each column after `id`, and its name.
    pub(super) slots: Vec<(usize, PgType, String)>,
    pub(super) insert_sql: String,
    /// Devices whose tags row this connection committed (or found there).
    pub(super) known: HashSet<u32>,
    /// Devices of the batch being written that are not known yet, ascending.
    pub(super) pending: Vec<u32>,
    /// Their tag values, `stride` per device.
    pub(super) pending_values: Vec<TagValue>,
}
