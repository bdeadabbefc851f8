//! Pass 2: the reader that the sources of one pass share, and the sources that take lines
//! from it and parse them into batches (or send them as they are).

use std::io::{self, BufRead};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use tsload_core::{Batch, BatchSource, ColumnValues, LineText};

use super::lines::{a_kind, data_range, read_line_capped, to_ns, too_long};
use super::parse::{self, Fields, Kind, Value, show};
use super::series::{FieldLookup, SeriesIndex};
use super::{KEY, lock, record};
use crate::WorkloadError;

/// What pass 2 needs to know of one table.
pub(super) struct TableLayout {
    pub(super) fields: FieldLookup,
    /// Longest string of each field in pass 1 (0 for other types).
    pub(super) max_len: Vec<u32>,
}

/// What pass 2 needs, fixed by pass 1.
pub(super) struct Layout {
    pub(super) name: String,
    pub(super) precision_ns: i64,
    /// The longest line accepted, bytes.
    pub(super) max_line: usize,
    pub(super) series: Arc<SeriesIndex>,
    pub(super) tables: Vec<TableLayout>,
}

/// The reader all sources of one pass share.
pub(super) struct ReplayReader {
    /// `None` once the pass ended (end of file, or an error).
    pub(super) input: Option<Box<dyn BufRead + Send>>,
    /// Lines read so far (data, blank and comment lines).
    pub(super) line_no: u64,
    /// The longest line accepted, bytes.
    pub(super) max_line: usize,
}

/// Why a pass ended early.
#[derive(Debug)]
pub(super) enum TakeError {
    /// Reading failed after this line.
    Read(u64, io::Error),
    /// This line is longer than the cap.
    TooLong(u64),
}

/// One data line in a [`Chunk`].
#[derive(Debug, Clone)]
struct Span {
    range: Range<usize>,
    line_no: u64,
}

/// Lines a source took from the shared reader, end to end.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    buf: Vec<u8>,
    lines: Vec<Span>,
}

impl ReplayReader {
    /// Replaces `chunk` with the next up to `max_lines` data lines; fewer only at the end
    /// of the file.
    pub(super) fn take(&mut self, chunk: &mut Chunk, max_lines: usize) -> Result<(), TakeError> {
        chunk.buf.clear();
        chunk.lines.clear();
        let Some(input) = self.input.as_mut() else {
            return Ok(());
        };
        while chunk.lines.len() < max_lines {
            let start = chunk.buf.len();
            match read_line_capped(input.as_mut(), &mut chunk.buf, self.max_line) {
                Ok(Some(0)) => {
                    self.input = None;
                    break;
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.input = None;
                    chunk.lines.clear();
                    chunk.buf.clear();
                    return Err(TakeError::TooLong(self.line_no + 1));
                }
                Err(e) => {
                    self.input = None;
                    chunk.lines.clear();
                    return Err(TakeError::Read(self.line_no, e));
                }
            }
            self.line_no += 1;
            match data_range(&chunk.buf[start..]) {
                Some(r) => chunk.lines.push(Span {
                    range: start + r.start..start + r.end,
                    line_no: self.line_no,
                }),
                None => chunk.buf.truncate(start),
            }
        }
        Ok(())
    }
}

/// One worker's source: takes lines from the pass's shared reader, parses them into its
/// batch outside the lock.
pub(super) struct ReplaySource {
    pub(super) layout: Arc<Layout>,
    pub(super) reader: Arc<Mutex<ReplayReader>>,
    pub(super) error: Arc<Mutex<Option<WorkloadError>>>,
    pub(super) chunk: Chunk,
    pub(super) scratch: Vec<u8>,
    /// The device of the latest line parsed ([`NO_DEVICE`](super::series::NO_DEVICE) before the first).
    pub(super) last: u32,
}

/// Takes the next up to `max_rows` lines of the pass into `chunk`; false when none are
/// asked for, or on an error, which it keeps for [`FileReplay::error`] as it ends the pass.
///
/// [`FileReplay::error`]: super::FileReplay::error
fn take_lines(
    layout: &Layout,
    reader: &Mutex<ReplayReader>,
    error: &Mutex<Option<WorkloadError>>,
    chunk: &mut Chunk,
    max_rows: usize,
) -> bool {
    if max_rows == 0 {
        return false;
    }
    let taken = lock(reader).take(chunk, max_rows);
    let Err(e) = taken else {
        return true;
    };
    let message = match e {
        TakeError::Read(line_no, e) => format!(
            "{}: cannot read after line {line_no} while replaying: {e}",
            layout.name
        ),
        TakeError::TooLong(line_no) => format!(
            "{}:{line_no}: {} (while replaying; the file changed since it was first read)",
            layout.name,
            too_long(layout.max_line)
        ),
    };
    fail(reader, error, WorkloadError::new(KEY, message));
    false
}

/// Keeps `e` for [`FileReplay::error`] and ends the pass for every worker.
///
/// [`FileReplay::error`]: super::FileReplay::error
#[cold]
fn fail(reader: &Mutex<ReplayReader>, error: &Mutex<Option<WorkloadError>>, e: WorkloadError) {
    record(error, e);
    lock(reader).input = None;
}

/// The error of line `line_no` met while replaying.
#[cold]
fn changed(layout: &Layout, line_no: u64, m: &str) -> WorkloadError {
    WorkloadError::new(
        KEY,
        format!(
            "{}:{line_no}: {m} (while replaying; the file changed since it was first read)",
            layout.name
        ),
    )
}

impl BatchSource for ReplaySource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let layout = &*self.layout;
        if !take_lines(layout, &self.reader, &self.error, &mut self.chunk, max_rows) {
            return 0;
        }
        for span in &self.chunk.lines {
            let line = &self.chunk.buf[span.range.clone()];
            if let Err(m) = push_line(layout, line, batch, &mut self.scratch, &mut self.last) {
                batch.clear();
                fail(&self.reader, &self.error, changed(layout, span.line_no, &m));
                return 0;
            }
        }
        for t in &mut batch.tables {
            t.finish_validity();
        }
        self.chunk.lines.len()
    }
}

/// One worker's source of the file's own lines ([`Workload::text_source`]): each line goes
/// out as it is, so only what the batch must tell is read from it: its device (the series
/// key, looked up as in [`push_line`]), its timestamp and how many fields it holds. The
/// tables get each row's device and timestamp and no field values.
///
/// When the lines taken are the chunk's bytes end to end (no comment, blank line or `\r`),
/// the chunk's buffer becomes the text without a copy.
///
/// [`Workload::text_source`]: tsload_core::Workload::text_source
pub(super) struct TextSource {
    pub(super) layout: Arc<Layout>,
    pub(super) reader: Arc<Mutex<ReplayReader>>,
    pub(super) error: Arc<Mutex<Option<WorkloadError>>>,
    pub(super) chunk: Chunk,
    /// The device of the latest line read ([`NO_DEVICE`](super::series::NO_DEVICE) before the first).
    pub(super) last: u32,
}

impl BatchSource for TextSource {
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize {
        let layout = &*self.layout;
        if !take_lines(layout, &self.reader, &self.error, &mut self.chunk, max_rows) {
            return 0;
        }
        let mut metrics = 0u64;
        for span in &self.chunk.lines {
            let line = &self.chunk.buf[span.range.clone()];
            match text_line(layout, line, batch, &mut self.last) {
                Ok(fields) => metrics += fields,
                Err(m) => {
                    batch.clear();
                    fail(&self.reader, &self.error, changed(layout, span.line_no, &m));
                    return 0;
                }
            }
        }
        let text = batch.text.get_or_insert_with(LineText::default);
        text.metrics = metrics;
        text.bytes.clear();
        if self.chunk.is_plain_text() {
            std::mem::swap(&mut self.chunk.buf, &mut text.bytes);
            if text.bytes.last() != Some(&b'\n') {
                // The file's last line had no line end.
                text.bytes.push(b'\n');
            }
        } else {
            for span in &self.chunk.lines {
                text.bytes
                    .extend_from_slice(&self.chunk.buf[span.range.clone()]);
                text.bytes.push(b'\n');
            }
        }
        self.chunk.lines.len()
    }
}

impl Chunk {
    /// Its data lines and their numbers.
    #[cfg(test)]
    pub(super) fn lines(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.lines
            .iter()
            .map(|s| (&self.buf[s.range.clone()], s.line_no))
    }

    /// The lines are the buffer end to end, each followed by `\n` (the last one may end
    /// the buffer): the buffer is already the text to send.
    fn is_plain_text(&self) -> bool {
        let mut at = 0;
        for span in &self.lines {
            if span.range.start != at {
                return false;
            }
            at = span.range.end;
            match self.buf.get(at) {
                Some(b'\n') => at += 1,
                None => {}
                Some(_) => return false,
            }
        }
        at == self.buf.len()
    }
}

/// The device of a data line and where its series key ends; `last` is the device of the
/// source's line before (its follower in pass 1 is tried first), and becomes this one's.
#[inline]
fn device_of(layout: &Layout, line: &[u8], last: &mut u32) -> Result<(u32, usize), String> {
    let series = &*layout.series;
    let (device, end) = match series.predicted(*last, line) {
        Some(d) => (d, series.key(d).len()),
        None => {
            let end = parse::key_end(line)?;
            let key = &line[..end];
            let d = series.find(key).ok_or_else(|| {
                format!(
                    "series `{}` was not in the file when it was first read",
                    show(key)
                )
            })?;
            (d, end)
        }
    };
    *last = device;
    Ok((device, end))
}

/// Reads device, timestamp and field count of one data line into the batch; returns the
/// field count.
#[inline]
fn text_line(
    layout: &Layout,
    line: &[u8],
    batch: &mut Batch,
    last: &mut u32,
) -> Result<u64, String> {
    let (device, end) = device_of(layout, line, last)?;
    let table = layout.series.table[device as usize] as usize;
    let names = &layout.tables[table].fields;
    let (fields, fields_end) = parse::count_fields(line, end, |n| names.hint(n))?;
    let ts = to_ns(parse::timestamp_at(line, fields_end)?, layout.precision_ns)?;
    let t = &mut batch.tables[table];
    t.device.push(device);
    t.ts.push(ts);
    Ok(fields)
}

/// The type a batch column holds, for messages.
fn column_kind(values: &ColumnValues) -> Kind {
    match values {
        ColumnValues::Bool(_) => Kind::Bool,
        ColumnValues::Int(_) => Kind::Int,
        ColumnValues::Float(_) => Kind::Float,
        ColumnValues::Str(_) => Kind::Str,
    }
}

/// Parses one data line straight into the batch: device, timestamp, and one value (or a
/// null) per field column of its table. On an error the batch is left inconsistent (the
/// caller clears it).
#[inline]
fn push_line(
    layout: &Layout,
    line: &[u8],
    batch: &mut Batch,
    scratch: &mut Vec<u8>,
    last: &mut u32,
) -> Result<(), String> {
    let (device, end) = device_of(layout, line, last)?;
    let ti = layout.series.table[device as usize] as usize;
    let tl = &layout.tables[ti];
    let t = &mut batch.tables[ti];
    let row = t.ts.len();
    let mut fields = Fields::new(line, end);
    let mut next = 0;
    while let Some(f) = fields.next(tl.fields.hint(next))? {
        let found = if f.hinted {
            Some(next)
        } else {
            tl.fields.find(f.key, f.key_escaped, next, scratch)
        };
        let Some(col) = found else {
            return Err(format!(
                "field `{}` was not in the file when it was first read",
                show(f.key)
            ));
        };
        next = col + 1;
        let values = &mut t.columns[col].values;
        if values.len() != row {
            return Err(format!("field `{}` appears twice on the line", show(f.key)));
        }
        match (values, f.value) {
            (ColumnValues::Int(v), Value::Int(x) | Value::UInt(x)) => v.push(x),
            (ColumnValues::Float(v), Value::Float(x)) => v.push(x),
            (ColumnValues::Bool(v), Value::Bool(x)) => v.push(x),
            (ColumnValues::Str(s), Value::Str { raw, escaped }) => {
                if std::str::from_utf8(raw).is_err() {
                    return Err(format!(
                        "the string value of field `{}` is not valid UTF-8",
                        show(f.key)
                    ));
                }
                let start = s.bytes.len();
                parse::unescape_string(raw, escaped, &mut s.bytes);
                if s.bytes.len() - start > tl.max_len[col] as usize {
                    return Err(format!(
                        "the string value of field `{}` is longer than any when the file \
                         was first read",
                        show(f.key)
                    ));
                }
                let end = u32::try_from(s.bytes.len())
                    .map_err(|_| "over 4 GiB of strings in one batch column".to_string())?;
                s.ends.push(end);
            }
            (values, v) => {
                return Err(format!(
                    "field `{}` is {} here but was {} when the file was first read",
                    show(f.key),
                    a_kind(v.kind()),
                    a_kind(column_kind(values))
                ));
            }
        }
    }
    let ts = to_ns(fields.timestamp()?, layout.precision_ns)?;
    t.device.push(device);
    t.ts.push(ts);
    for col in 0..t.columns.len() {
        let values = &mut t.columns[col].values;
        if values.len() == row {
            match values {
                ColumnValues::Bool(v) => v.push(false),
                ColumnValues::Int(v) => v.push(0),
                ColumnValues::Float(v) => v.push(0.0),
                ColumnValues::Str(s) => s.ends.push(s.bytes.len() as u32),
            }
            t.set_null(col, row);
        }
    }
    Ok(())
}
