//! File replay: streams a TSBS `--format=influx` file (InfluxDB line protocol; plain,
//! gzip, or standard input) into batches, so that any target loads exactly the data a user
//! already has, as `tsbs_load_influx` would.
//!
//! Two passes:
//!
//! 1. [`FileReplay::open`] reads the whole input once and builds the [`Schema`]: every
//!    measurement is a table (in order of first appearance); every distinct tag key is a
//!    tag slot; every distinct series key (measurement and tags, byte for byte as written)
//!    is a device, numbered in order of first appearance; every field gets its type from
//!    line protocol (`1i`, `1u` bigint; `1.5`, `2` double; `t`/`false`... bool; `"..."`
//!    varchar as long as the longest value). A table's tags and fields come in the order
//!    the lines write them: a key first seen on a later line goes right after the key that
//!    precedes it on that line, so iot's `diagnostics` keeps TSBS's field order even
//!    though its first line lacks `current_load`. Every line is checked here (syntax,
//!    types, timestamp), so a bad file stops before any row is sent. Standard input cannot
//!    be read twice, so pass 1 copies it (decompressed) to a temporary file in
//!    `$TMPDIR`, deleted when the [`FileReplay`] is dropped.
//! 2. The sources read the file again, through one shared reader per pass: a worker
//!    takes the next up to `max_rows` lines under the lock (plain byte copies into its
//!    own buffer), then parses them into its batch outside the lock, so workers parse in
//!    parallel and each line goes to exactly one worker, whatever the worker count.
//!    Into a sink that sends line protocol in the file's unit, [`TextSource`] sends each
//!    line as it is, reading only its series, timestamp and field count.
//!
//! A line may hold at most [`ReplayOptions::max_line_bytes`] bytes ([`MAX_LINE_BYTES`],
//! 1 MiB, by default), in either pass: a file without line ends (`/dev/zero`, a binary
//! file, a gzip that inflates to one endless line) stops with the file, the line and the
//! cap after reading that much, instead of holding the whole "line" in memory.
//!
//! Series keys are stored once, as written, end to end in one buffer; a device's tag
//! values are parsed out of its key when a sink asks ([`TagSource`]); a hash of the key
//! finds the device of a line in either pass. Memory grows with the number of series, not
//! with the number of rows.

mod parse;

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use flate2::bufread::MultiGzDecoder;
use tsload_core::schema::{DataType, FieldDef, Schema, TableSchema, TagDef, TagSource, TagValue};
use tsload_core::{Batch, BatchSource, ColumnValues, LineText, Workload};

use crate::WorkloadError;
use parse::{Fields, Kind, MEASUREMENT_SPECIALS, TAG_SPECIALS, Value, hash_key, show, unescaped};

/// Read buffer size: large, so that reads (and gzip inflation) come in big steps.
const BUF_BYTES: usize = 1 << 20;
/// The longest line replayed by default, in bytes before its `\n`: 1 MiB, thousands
/// of times a TSBS line (devops's longest is under 2 KiB), and a bound on what one line
/// costs in memory when a file has no line ends.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The [`WorkloadError::key`] of every error about the file.
const KEY: &str = "file";

/// Where the line protocol comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayInput {
    /// A file, gzip-compressed when its name ends in `.gz` or its first bytes say so.
    Path(PathBuf),
    /// Standard input (plain or gzip), spooled to a temporary file during pass 1.
    Stdin,
}

/// How to read the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Nanoseconds per timestamp unit of the file: 1 (TSBS's default) for ns, 1,000 for
    /// µs, 1,000,000 for ms, 1,000,000,000 for s.
    pub precision_ns: i64,
    /// The longest line accepted, in bytes before its `\n` ([`MAX_LINE_BYTES`] by
    /// default); a longer one stops the replay with the file and the line's number.
    pub max_line_bytes: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            precision_ns: 1,
            max_line_bytes: MAX_LINE_BYTES,
        }
    }
}

/// The rows of a line-protocol file, as a [`Workload`].
///
/// `source(worker, workers)` does not split the devices as the generators do: a file's
/// order is fixed, and giving each worker its own devices would take one full read and
/// decompression of the file per worker (or an index built first). Instead every source
/// of a pass shares one reader and takes the next lines from it, so that the union of the
/// workers' rows is exactly the file, each line once. `source(0, _)` starts a new pass
/// over the file from the beginning; `source(w, _)` for `w > 0` joins the latest pass.
/// The engine creates workers `0..workers` in order, so each run reads the file once.
///
/// A source returns 0 when its pass reached the end of the file. It also returns 0 when
/// reading or parsing fails during the run, which can only happen when the file changed
/// (or could not be read) after [`FileReplay::open`] checked it: [`BatchSource::fill`]
/// cannot return an error, so the first such error is kept, the pass ends for every
/// worker, and [`FileReplay::error`] tells it after the run. Check it whenever a run
/// ends: a run that lost the file ends early but otherwise looks finished.
pub struct FileReplay {
    schema: Schema,
    rows: u64,
    layout: Arc<Layout>,
    replay: Replay,
    /// The shared reader of the latest pass.
    pass: Mutex<Option<Arc<Mutex<ReplayReader>>>>,
    error: Arc<Mutex<Option<WorkloadError>>>,
}

/// What pass 2 reads from.
enum Replay {
    Path(PathBuf),
    Spool(tempfile::NamedTempFile),
}

impl fmt::Debug for FileReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileReplay")
            .field("file", &self.layout.name)
            .field("rows", &self.rows)
            .field("tables", &self.schema.tables.len())
            .field("devices", &self.schema.device_count)
            .finish_non_exhaustive()
    }
}

impl FileReplay {
    /// Reads the whole input once (pass 1): checks every line and builds the schema.
    /// Errors name the file and, for bad lines, the line number and what is wrong.
    pub fn open(input: ReplayInput, opts: ReplayOptions) -> Result<FileReplay, WorkloadError> {
        check_options(&opts)?;
        match input {
            ReplayInput::Path(path) => {
                let name = path.display().to_string();
                let mut reader = open_path(&path)
                    .map_err(|e| WorkloadError::new(KEY, format!("cannot open {name}: {e}")))?;
                let mut scanner = Scanner::new(name, opts);
                scan(&mut reader, None, &mut scanner)?;
                FileReplay::build(scanner, Replay::Path(path))
            }
            ReplayInput::Stdin => open_spooled("standard input".into(), io::stdin(), opts),
        }
    }

    /// The first error met while replaying (the file changed or became unreadable after
    /// [`FileReplay::open`]), if any. A run whose sources met one ended early.
    pub fn error(&self) -> Option<WorkloadError> {
        lock(&self.error).clone()
    }

    fn build(scanner: Scanner, replay: Replay) -> Result<FileReplay, WorkloadError> {
        if scanner.rows == 0 {
            return Err(WorkloadError::new(
                KEY,
                format!("{} has no data lines", scanner.name),
            ));
        }
        let rows = scanner.rows;
        let (schema, layout) = scanner.finish();
        Ok(FileReplay {
            schema,
            rows,
            layout: Arc::new(layout),
            replay,
            pass: Mutex::new(None),
            error: Arc::new(Mutex::new(None)),
        })
    }

    /// Opens the input again for a new pass; an error is kept and gives an empty pass.
    fn open_pass(&self) -> ReplayReader {
        let input = match &self.replay {
            Replay::Path(path) => open_path(path),
            Replay::Spool(file) => file.reopen().map(|f| {
                Box::new(BufReader::with_capacity(BUF_BYTES, f)) as Box<dyn BufRead + Send>
            }),
        };
        match input {
            Ok(input) => ReplayReader {
                input: Some(input),
                line_no: 0,
                max_line: self.layout.max_line,
            },
            Err(e) => {
                let what = match &self.replay {
                    Replay::Path(_) => self.layout.name.clone(),
                    Replay::Spool(f) => {
                        format!("the copy of {} at {}", self.layout.name, f.path().display())
                    }
                };
                record(
                    &self.error,
                    WorkloadError::new(KEY, format!("cannot open {what} again: {e}")),
                );
                ReplayReader {
                    input: None,
                    line_no: 0,
                    max_line: self.layout.max_line,
                }
            }
        }
    }
}

impl Workload for FileReplay {
    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn total_rows(&self) -> Option<u64> {
        Some(self.rows)
    }

    fn source_error(&self) -> Option<String> {
        self.error().map(|e| e.message)
    }

    fn source(&self, worker: usize, _workers: usize) -> Box<dyn BatchSource> {
        Box::new(ReplaySource {
            layout: self.layout.clone(),
            reader: self.pass_reader(worker),
            error: self.error.clone(),
            chunk: Chunk::default(),
            scratch: Vec::new(),
        })
    }

    /// The file's own lines, when their timestamps are in `unit_ns` (the file's
    /// precision is the sink's): a `TextSource`.
    fn text_source(
        &self,
        worker: usize,
        _workers: usize,
        unit_ns: i64,
    ) -> Option<Box<dyn BatchSource>> {
        (unit_ns == self.layout.precision_ns).then(|| -> Box<dyn BatchSource> {
            Box::new(TextSource {
                layout: self.layout.clone(),
                reader: self.pass_reader(worker),
                error: self.error.clone(),
                chunk: Chunk::default(),
            })
        })
    }
}

impl FileReplay {
    /// The shared reader of worker `worker`'s pass: worker 0 starts a new pass, the others
    /// join the latest.
    fn pass_reader(&self, worker: usize) -> Arc<Mutex<ReplayReader>> {
        let mut pass = lock(&self.pass);
        match pass.as_ref() {
            Some(reader) if worker != 0 => reader.clone(),
            _ => {
                let reader = Arc::new(Mutex::new(self.open_pass()));
                *pass = Some(reader.clone());
                reader
            }
        }
    }
}

fn check_options(opts: &ReplayOptions) -> Result<(), WorkloadError> {
    if opts.precision_ns < 1 {
        return Err(WorkloadError::new(
            "precision",
            format!(
                "{} ns per time unit: must be at least 1 (1 for ns, 1000 for us, \
                 1000000 for ms, 1000000000 for s)",
                opts.precision_ns
            ),
        ));
    }
    if opts.max_line_bytes == 0 {
        return Err(WorkloadError::new(
            "max_line_bytes",
            format!("0 bytes: must be at least 1 (the default is {MAX_LINE_BYTES})"),
        ));
    }
    Ok(())
}

/// Pass 1 over any reader: copies what it reads (decompressed) to a temporary file, from
/// which the sources replay. Standard input goes this way.
fn open_spooled(
    name: String,
    input: impl Read,
    opts: ReplayOptions,
) -> Result<FileReplay, WorkloadError> {
    check_options(&opts)?;
    let mut reader = BufReader::with_capacity(BUF_BYTES, input);
    let gz = is_gzip(&mut reader, false)
        .map_err(|e| WorkloadError::new(KEY, format!("cannot read {name}: {e}")))?;
    let spool = tempfile::NamedTempFile::new().map_err(|e| {
        WorkloadError::new(
            KEY,
            format!(
                "cannot create a temporary file in {} to hold {name}: {e}",
                std::env::temp_dir().display()
            ),
        )
    })?;
    let mut scanner = Scanner::new(name, opts);
    {
        let mut writer = BufWriter::with_capacity(BUF_BYTES, spool.as_file());
        if gz {
            let mut inflated = BufReader::with_capacity(BUF_BYTES, MultiGzDecoder::new(reader));
            scan(&mut inflated, Some(&mut writer), &mut scanner)?;
        } else {
            scan(&mut reader, Some(&mut writer), &mut scanner)?;
        }
        writer
            .flush()
            .map_err(|e| spool_error(&scanner.name, &spool, &e))?;
    }
    FileReplay::build(scanner, Replay::Spool(spool))
}

fn spool_error(name: &str, spool: &tempfile::NamedTempFile, e: &io::Error) -> WorkloadError {
    WorkloadError::new(
        KEY,
        format!(
            "cannot copy {name} to {} (set TMPDIR to a roomier place): {e}",
            spool.path().display()
        ),
    )
}

/// Opens a file, inflating it when it is gzip.
fn open_path(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let mut reader = BufReader::with_capacity(BUF_BYTES, File::open(path)?);
    let by_name = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if is_gzip(&mut reader, by_name)? {
        Box::new(BufReader::with_capacity(
            BUF_BYTES,
            MultiGzDecoder::new(reader),
        ))
    } else {
        Box::new(reader)
    })
}

/// Whether the input is gzip: by its name, or by its magic bytes (which no line-protocol
/// line can start with).
fn is_gzip(reader: &mut impl BufRead, by_name: bool) -> io::Result<bool> {
    Ok(by_name || reader.fill_buf()?.starts_with(&[0x1f, 0x8b]))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps `e` unless an error is kept already.
fn record(slot: &Mutex<Option<WorkloadError>>, e: WorkloadError) {
    let mut slot = lock(slot);
    if slot.is_none() {
        *slot = Some(e);
    }
}

/// Appends the next line of `input` to `buf`, with its `\n` when it has one, reading at
/// most `max_line + 1` bytes of it. `Ok(Some(0))` at the end of the input; `Ok(None)` when
/// the line holds more than `max_line` bytes before its line end (the bytes read so far
/// stay in `buf`, the rest of the line in `input`). One bounded `read_until` (std's
/// memchr), so the check costs nothing per byte.
#[inline]
fn read_line_capped(
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
fn too_long(max_line: usize) -> String {
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
fn data_range(raw: &[u8]) -> Option<Range<usize>> {
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
fn to_ns(ts: i64, precision_ns: i64) -> Result<i64, String> {
    ts.checked_mul(precision_ns).ok_or_else(|| {
        format!("timestamp {ts} times {precision_ns} ns is out of the range of 64-bit nanoseconds")
    })
}

fn a_kind(kind: Kind) -> String {
    let article = if matches!(kind, Kind::Int | Kind::UInt) {
        "an"
    } else {
        "a"
    };
    format!("{article} {}", kind.name())
}

// ---------------------------------------------------------------------------------------
// Series: keys, devices, tags

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

/// Every series (device) of the file: its key as written, all keys end to end in one
/// buffer, its table, and an index from the key's hash to the device.
#[derive(Default)]
struct SeriesIndex {
    keys: Vec<u8>,
    /// `ends[d]` is the end of device `d`'s key in `keys`.
    ends: Vec<usize>,
    table: Vec<u32>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
    /// Keys whose 64-bit hash an earlier key has already (practically never any).
    collided: HashMap<Box<[u8]>, u32>,
    /// Tag key (unescaped) -> slot.
    slot_of: HashMap<Box<[u8]>, usize>,
    tag_slots: usize,
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
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, device: u32) -> &[u8] {
        let d = device as usize;
        let start = if d == 0 { 0 } else { self.ends[d - 1] };
        &self.keys[start..self.ends[d]]
    }

    #[inline]
    fn find(&self, key: &[u8]) -> Option<u32> {
        self.find_hashed(key, hash_key(key))
    }

    #[inline]
    fn find_hashed(&self, key: &[u8], hash: u64) -> Option<u32> {
        let d = *self.by_hash.get(&hash)?;
        if self.key(d) == key {
            Some(d)
        } else {
            self.collided.get(key).copied()
        }
    }

    /// Adds a key that `find_hashed` does not know; returns its device id.
    fn insert_hashed(&mut self, key: &[u8], hash: u64, table: u32) -> u32 {
        let d = self.ends.len() as u32;
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.table.push(table);
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
struct FieldLookup {
    names: Vec<Box<[u8]>>,
    index: HashMap<Box<[u8]>, usize>,
}

impl FieldLookup {
    /// The column of the field whose key is written `raw`, trying `guess` first.
    #[inline]
    fn find(
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

    fn insert(&mut self, at: usize, name: Box<[u8]>) {
        self.names.insert(at, name);
        self.index.clear();
        for (i, n) in self.names.iter().enumerate() {
            self.index.insert(n.clone(), i);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 1

struct FieldScan {
    kind: Kind,
    /// Longest string value (bytes, unescaped).
    max_len: u32,
    /// Line on which the field (and so its type) was first seen.
    first_line: u64,
    /// Last line that set the field (to catch a field written twice on one line).
    seen_on: u64,
}

struct TableScan {
    name: String,
    /// Tag slots in the table's order, with the longest value (bytes, unescaped).
    tags: Vec<(usize, u32)>,
    fields: FieldLookup,
    info: Vec<FieldScan>,
}

struct Scanner {
    name: String,
    precision_ns: i64,
    max_line: usize,
    series: SeriesIndex,
    tables: Vec<TableScan>,
    table_of: HashMap<Box<[u8]>, usize>,
    slots: Vec<String>,
    rows: u64,
    scratch: Vec<u8>,
    line_slots: Vec<usize>,
}

fn utf8(bytes: Cow<'_, [u8]>, what: &str) -> Result<String, String> {
    String::from_utf8(bytes.into_owned())
        .map_err(|e| format!("{what} `{}` is not valid UTF-8", show(e.as_bytes())))
}

impl Scanner {
    fn new(name: String, opts: ReplayOptions) -> Self {
        Scanner {
            name,
            precision_ns: opts.precision_ns,
            max_line: opts.max_line_bytes,
            series: SeriesIndex::default(),
            tables: Vec::new(),
            table_of: HashMap::new(),
            slots: Vec::new(),
            rows: 0,
            scratch: Vec::new(),
            line_slots: Vec::new(),
        }
    }

    fn at(&self, line_no: u64, message: String) -> WorkloadError {
        WorkloadError::new(KEY, format!("{}:{line_no}: {message}", self.name))
    }

    /// Checks one data line and adds what it shows to the schema.
    fn line(&mut self, line: &[u8], line_no: u64) -> Result<(), String> {
        let end = parse::key_end(line)?;
        let key = &line[..end];
        let hash = hash_key(key);
        let table = match self.series.find_hashed(key, hash) {
            Some(d) => self.series.table[d as usize] as usize,
            None => self.new_series(key, hash)?,
        };
        let t = &mut self.tables[table];
        let mut fields = Fields::new(line, end);
        let mut next = 0;
        while let Some(f) = fields.next()? {
            let kind = f.value.kind();
            let col = match t.fields.find(f.key, f.key_escaped, next, &mut self.scratch) {
                Some(col) => col,
                None => {
                    let name = utf8(unescaped(f.key, TAG_SPECIALS), "field name")?;
                    t.fields.insert(next, name.into_bytes().into_boxed_slice());
                    t.info.insert(
                        next,
                        FieldScan {
                            kind,
                            max_len: 0,
                            first_line: line_no,
                            seen_on: 0,
                        },
                    );
                    next
                }
            };
            let info = &mut t.info[col];
            let field_name = || String::from_utf8_lossy(&t.fields.names[col]).into_owned();
            if info.seen_on == line_no {
                return Err(format!(
                    "field `{}` appears twice on the line",
                    field_name()
                ));
            }
            info.seen_on = line_no;
            if kind != info.kind {
                return Err(format!(
                    "field `{}` of measurement `{}` is {} here but {} on line {} (a field \
                     keeps one type)",
                    field_name(),
                    t.name,
                    a_kind(kind),
                    a_kind(info.kind),
                    info.first_line
                ));
            }
            if let Value::Str { raw, escaped } = f.value {
                if std::str::from_utf8(raw).is_err() {
                    return Err(format!(
                        "the string value of field `{}` is not valid UTF-8",
                        field_name()
                    ));
                }
                let len = parse::unescaped_string_len(raw, escaped);
                info.max_len = info.max_len.max(u32::try_from(len).unwrap_or(u32::MAX));
            }
            next = col + 1;
        }
        to_ns(fields.timestamp()?, self.precision_ns)?;
        self.rows += 1;
        Ok(())
    }

    /// Registers the series of `key` (measurement, tags); returns its table.
    #[cold]
    fn new_series(&mut self, key: &[u8], hash: u64) -> Result<usize, String> {
        if std::str::from_utf8(key).is_err() {
            return Err(format!(
                "the measurement and tags `{}` are not valid UTF-8",
                show(key)
            ));
        }
        if self.series.len() >= u32::MAX as usize {
            return Err(format!("more than {} series", u32::MAX));
        }
        let mut tags = Vec::new();
        let measurement = parse::split_series_key(key, |k, v| {
            tags.push((k, v));
            Ok(())
        })?;
        let measurement = unescaped(measurement, MEASUREMENT_SPECIALS);
        let table = match self.table_of.get(&*measurement) {
            Some(&t) => t,
            None => {
                let t = self.tables.len();
                self.tables.push(TableScan {
                    name: utf8(measurement.clone(), "measurement")?,
                    tags: Vec::new(),
                    fields: FieldLookup::default(),
                    info: Vec::new(),
                });
                self.table_of.insert(measurement.into_owned().into(), t);
                t
            }
        };
        self.line_slots.clear();
        let mut prev: Option<usize> = None;
        for (k, v) in tags {
            let k = unescaped(k, TAG_SPECIALS);
            let slot = match self.series.slot_of.get(&*k) {
                Some(&s) => s,
                None => {
                    let s = self.slots.len();
                    self.slots.push(utf8(k.clone(), "tag key")?);
                    self.series.slot_of.insert(k.clone().into_owned().into(), s);
                    s
                }
            };
            if self.line_slots.contains(&slot) {
                return Err(format!(
                    "tag `{}` appears twice in `{}`",
                    self.slots[slot],
                    show(key)
                ));
            }
            self.line_slots.push(slot);
            let len = u32::try_from(unescaped(v, TAG_SPECIALS).len()).unwrap_or(u32::MAX);
            let t = &mut self.tables[table];
            let pos = match t.tags.iter().position(|&(s, _)| s == slot) {
                Some(p) => p,
                None => {
                    let at = prev.map_or(0, |p| p + 1);
                    t.tags.insert(at, (slot, 0));
                    at
                }
            };
            t.tags[pos].1 = t.tags[pos].1.max(len);
            prev = Some(pos);
        }
        self.series.insert_hashed(key, hash, table as u32);
        Ok(table)
    }

    /// The schema, and what pass 2 needs.
    fn finish(mut self) -> (Schema, Layout) {
        self.series.tag_slots = self.slots.len();
        let series = Arc::new(self.series);
        let mut tables = Vec::with_capacity(self.tables.len());
        let mut layouts = Vec::with_capacity(self.tables.len());
        for t in self.tables {
            let fields = t
                .fields
                .names
                .iter()
                .zip(&t.info)
                .map(|(name, info)| FieldDef {
                    name: String::from_utf8_lossy(name).into_owned(),
                    data_type: match info.kind {
                        Kind::Int => DataType::BigInt,
                        Kind::UInt => DataType::UBigInt,
                        Kind::Float => DataType::Double,
                        Kind::Bool => DataType::Bool,
                        Kind::Str => DataType::Varchar(info.max_len.max(1)),
                    },
                })
                .collect();
            tables.push(TableSchema {
                name: t.name,
                tags: t
                    .tags
                    .iter()
                    .map(|&(slot, len)| TagDef {
                        name: self.slots[slot].clone(),
                        data_type: DataType::Varchar(len.max(1)),
                        slot,
                    })
                    .collect(),
                fields,
            });
            layouts.push(TableLayout {
                max_len: t.info.iter().map(|i| i.max_len).collect(),
                fields: t.fields,
            });
        }
        let schema = Schema {
            tables,
            tag_slots: self.slots.len(),
            device_count: series.len() as u32,
            tags: series.clone(),
        };
        let layout = Layout {
            name: self.name,
            precision_ns: self.precision_ns,
            max_line: self.max_line,
            series,
            tables: layouts,
        };
        (schema, layout)
    }
}

/// Pass 1 over `input`, copying every byte read to `spool` when given.
fn scan(
    input: &mut dyn BufRead,
    mut spool: Option<&mut dyn Write>,
    scanner: &mut Scanner,
) -> Result<(), WorkloadError> {
    let name = scanner.name.clone();
    let max_line = scanner.max_line;
    let mut line_no = 0u64;
    let mut one_line = |line: &[u8], line_no: u64| -> Result<(), WorkloadError> {
        if let Some(w) = spool.as_mut() {
            w.write_all(line).map_err(|e| {
                WorkloadError::new(
                    KEY,
                    format!(
                        "cannot copy {name} to a temporary file in {} (set TMPDIR to a \
                         roomier place): {e}",
                        std::env::temp_dir().display()
                    ),
                )
            })?;
        }
        match data_range(line) {
            Some(range) => scanner
                .line(&line[range], line_no)
                .map_err(|m| scanner.at(line_no, m)),
            None => Ok(()),
        }
    };
    let too_long_at =
        |line_no: u64| WorkloadError::new(KEY, format!("{name}:{line_no}: {}", too_long(max_line)));
    // Lines are read where the reader's buffer holds them: no copy per line. Only a line
    // that continues past the end of the buffer is gathered in `spill`.
    let mut spill: Vec<u8> = Vec::new();
    loop {
        let buf = input.fill_buf().map_err(|e| {
            WorkloadError::new(
                KEY,
                format!("{name}: cannot read after line {line_no}: {e}"),
            )
        })?;
        if buf.is_empty() {
            // The end: a last line without a line end.
            if !spill.is_empty() {
                line_no += 1;
                one_line(&spill, line_no)?;
            }
            return Ok(());
        }
        let mut start = 0;
        if !spill.is_empty() {
            let end = parse::find2(buf, 0, b'\n', b'\n');
            if spill.len() + end > max_line {
                return Err(too_long_at(line_no + 1));
            }
            if end == buf.len() {
                spill.extend_from_slice(buf);
                let n = buf.len();
                input.consume(n);
                continue;
            }
            spill.extend_from_slice(&buf[..=end]);
            line_no += 1;
            one_line(&spill, line_no)?;
            spill.clear();
            start = end + 1;
        }
        loop {
            let end = parse::find2(buf, start, b'\n', b'\n');
            if end - start > max_line {
                return Err(too_long_at(line_no + 1));
            }
            if end == buf.len() {
                break;
            }
            line_no += 1;
            one_line(&buf[start..=end], line_no)?;
            start = end + 1;
        }
        spill.extend_from_slice(&buf[start..]);
        let n = buf.len();
        input.consume(n);
    }
}

// ---------------------------------------------------------------------------------------
// Pass 2

/// What pass 2 needs to know of one table.
struct TableLayout {
    fields: FieldLookup,
    /// Longest string of each field in pass 1 (0 for other types).
    max_len: Vec<u32>,
}

/// What pass 2 needs, fixed by pass 1.
struct Layout {
    name: String,
    precision_ns: i64,
    /// The longest line accepted, bytes.
    max_line: usize,
    series: Arc<SeriesIndex>,
    tables: Vec<TableLayout>,
}

/// The reader all sources of one pass share.
struct ReplayReader {
    /// `None` once the pass ended (end of file, or an error).
    input: Option<Box<dyn BufRead + Send>>,
    /// Lines read so far (data, blank and comment lines).
    line_no: u64,
    /// The longest line accepted, bytes.
    max_line: usize,
}

/// Why a pass ended early.
#[derive(Debug)]
enum TakeError {
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
struct Chunk {
    buf: Vec<u8>,
    lines: Vec<Span>,
}

impl ReplayReader {
    /// Replaces `chunk` with the next up to `max_lines` data lines; fewer only at the end
    /// of the file.
    fn take(&mut self, chunk: &mut Chunk, max_lines: usize) -> Result<(), TakeError> {
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
struct ReplaySource {
    layout: Arc<Layout>,
    reader: Arc<Mutex<ReplayReader>>,
    error: Arc<Mutex<Option<WorkloadError>>>,
    chunk: Chunk,
    scratch: Vec<u8>,
}

/// Takes the next up to `max_rows` lines of the pass into `chunk`; false when none are
/// asked for, or on an error, which it keeps for [`FileReplay::error`] as it ends the pass.
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
            if let Err(m) = push_line(layout, line, batch, &mut self.scratch) {
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
struct TextSource {
    layout: Arc<Layout>,
    reader: Arc<Mutex<ReplayReader>>,
    error: Arc<Mutex<Option<WorkloadError>>>,
    chunk: Chunk,
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
            match text_line(layout, line, batch) {
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

/// Reads device, timestamp and field count of one data line into the batch; returns the
/// field count.
#[inline]
fn text_line(layout: &Layout, line: &[u8], batch: &mut Batch) -> Result<u64, String> {
    let end = parse::key_end(line)?;
    let key = &line[..end];
    let device = layout.series.find(key).ok_or_else(|| {
        format!(
            "series `{}` was not in the file when it was first read",
            show(key)
        )
    })?;
    let (fields, fields_end) = parse::count_fields(line, end)?;
    let ts = to_ns(parse::timestamp_at(line, fields_end)?, layout.precision_ns)?;
    let t = &mut batch.tables[layout.series.table[device as usize] as usize];
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
) -> Result<(), String> {
    let end = parse::key_end(line)?;
    let key = &line[..end];
    let device = layout.series.find(key).ok_or_else(|| {
        format!(
            "series `{}` was not in the file when it was first read",
            show(key)
        )
    })?;
    let ti = layout.series.table[device as usize] as usize;
    let tl = &layout.tables[ti];
    let t = &mut batch.tables[ti];
    let row = t.ts.len();
    let mut fields = Fields::new(line, end);
    let mut next = 0;
    while let Some(f) = fields.next()? {
        let Some(col) = tl.fields.find(f.key, f.key_escaped, next, scratch) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const TEXT: &str = "# a comment\n\
        cpu,host=a usage=1i,idle=2.5 10\n\
        \n\
        cpu,host=b usage=3i 20\r\n\
        mem,host=a used=4i,ok=true,note=\"x y\" 30\n";

    fn drain(w: &FileReplay, batch_rows: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut src = w.source(0, 1);
        let mut batch = Batch::for_schema(w.schema());
        loop {
            batch.clear();
            let n = src.fill(&mut batch, batch_rows);
            assert_eq!(n, batch.rows());
            if n == 0 {
                return out;
            }
            for (ti, t) in batch.tables.iter().enumerate() {
                for r in 0..t.rows() {
                    let mut s = format!("{}|{}|{}", ti, t.device[r], t.ts[r]);
                    for c in &t.columns {
                        if !c.is_valid(r) {
                            s.push_str("|-");
                            continue;
                        }
                        match &c.values {
                            ColumnValues::Bool(v) => s.push_str(&format!("|{}", v[r])),
                            ColumnValues::Int(v) => s.push_str(&format!("|{}", v[r])),
                            ColumnValues::Float(v) => s.push_str(&format!("|{}", v[r])),
                            ColumnValues::Str(v) => s.push_str(&format!("|{}", v.get(r))),
                        }
                    }
                    out.push(s);
                }
            }
        }
    }

    /// The text source's batches: the text sent, each row as `table|device|ts`, and the
    /// metrics counted.
    fn drain_text(w: &FileReplay, batch_rows: usize) -> (String, Vec<String>, u64) {
        let (mut text, mut rows, mut metrics) = (String::new(), Vec::new(), 0);
        let mut src = w.text_source(0, 1, 1).expect("a file in ns has text in ns");
        let mut batch = Batch::for_schema(w.schema());
        loop {
            batch.clear();
            let n = src.fill(&mut batch, batch_rows);
            assert_eq!(n, batch.rows());
            if n == 0 {
                return (text, rows, metrics);
            }
            let t = batch.text.as_ref().expect("a text source's batch has text");
            assert_eq!(
                t.bytes.iter().filter(|b| **b == b'\n').count(),
                n,
                "one line per row"
            );
            text.push_str(std::str::from_utf8(&t.bytes).unwrap());
            metrics += batch.metrics();
            for (ti, t) in batch.tables.iter().enumerate() {
                assert!(t.columns.iter().all(|c| c.values.is_empty()), "no values");
                for r in 0..t.rows() {
                    rows.push(format!("{ti}|{}|{}", t.device[r], t.ts[r]));
                }
            }
        }
    }

    /// The column source's rows as `table|device|ts` and its metrics.
    fn rows_and_metrics(w: &FileReplay) -> (Vec<String>, u64) {
        let rows = drain(w, 1000)
            .iter()
            .map(|r| r.splitn(4, '|').take(3).collect::<Vec<_>>().join("|"))
            .collect();
        let mut src = w.source(0, 1);
        let mut batch = Batch::for_schema(w.schema());
        let mut metrics = 0;
        while src.fill(&mut batch, 1000) > 0 {
            metrics += batch.metrics();
            batch.clear();
        }
        (rows, metrics)
    }

    #[test]
    fn the_text_source_sends_the_file_s_own_lines_with_the_rows_and_metrics_of_the_columns() {
        // A comment, a blank line and a `\r\n`: each line is copied without them.
        let w = open_spooled("test".into(), Cursor::new(TEXT), ReplayOptions::default()).unwrap();
        for batch_rows in [1, 2, 100] {
            let (text, rows, metrics) = drain_text(&w, batch_rows);
            assert_eq!(
                text,
                "cpu,host=a usage=1i,idle=2.5 10\ncpu,host=b usage=3i 20\n\
                 mem,host=a used=4i,ok=true,note=\"x y\" 30\n"
            );
            assert_eq!((rows, metrics), rows_and_metrics(&w));
        }
        assert!(w.error().is_none());
        // Timestamps in another unit than the sink's: no text, the columns are encoded.
        assert!(w.text_source(0, 1, 1_000).is_none());

        // Plain lines: the chunk's buffer is the text; a last line without `\n` gets one.
        // A string may hold commas, spaces, `=` and escaped quotes.
        let plain = "m,t=a x=1i,s=\"a, b=c \\\" d\" 10\nm,t=b x=2i 20\nm,t=a x=3i,y=0.5 30";
        let w = open_spooled("p".into(), Cursor::new(plain), ReplayOptions::default()).unwrap();
        let (text, rows, metrics) = drain_text(&w, 2);
        assert_eq!(text, format!("{plain}\n"));
        assert_eq!(rows, ["0|0|10", "0|1|20", "0|0|30"]);
        assert_eq!(metrics, 5);
        assert_eq!((rows, metrics), rows_and_metrics(&w));
    }

    #[test]
    fn a_file_changed_after_open_ends_a_text_replay_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.influx");
        std::fs::write(&path, "m,t=a a=1i 1\nm,t=a a=2i 2\nm,t=a a=3i 3\n").unwrap();
        let w =
            FileReplay::open(ReplayInput::Path(path.clone()), ReplayOptions::default()).unwrap();
        std::fs::write(&path, "m,t=a a=1i 1\nm,t=b a=2i 2\nm,t=a a=3i 3\n").unwrap();
        let mut src = w.text_source(0, 1, 1).unwrap();
        let mut batch = Batch::for_schema(w.schema());
        assert_eq!(src.fill(&mut batch, 5), 0);
        assert!(batch.is_empty());
        let e = w.error().unwrap();
        assert!(
            e.message
                .contains("x.influx:2: series `m,t=b` was not in the file when it was first read"),
            "{}",
            e.message
        );
        // A line whose structure broke.
        std::fs::write(&path, "m,t=a a=1i 1\nm,t=a a=\"2 2\n").unwrap();
        let mut src = w.text_source(0, 1, 1).unwrap();
        batch.clear();
        assert_eq!(src.fill(&mut batch, 5), 0);
        assert!(w.error().is_some());
    }

    fn gzip(text: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn spooled_input_replays_like_a_file() {
        let w = open_spooled("test".into(), Cursor::new(TEXT), ReplayOptions::default()).unwrap();
        assert_eq!(w.total_rows(), Some(3));
        let want = ["0|0|10|1|2.5", "0|1|20|3|-", "1|2|30|4|true|x y"];
        assert_eq!(drain(&w, 2), want);
        // A second pass reads the spooled copy again.
        assert_eq!(drain(&w, 100), want);
        assert!(w.error().is_none());

        let gz = open_spooled(
            "test.gz".into(),
            Cursor::new(gzip(TEXT.as_bytes())),
            ReplayOptions::default(),
        )
        .unwrap();
        assert_eq!(drain(&gz, 1), want);
        let s = gz.schema();
        assert_eq!(s.tables[1].fields[2].data_type, DataType::Varchar(3));
        assert_eq!(s.device_count, 3);
        assert_eq!(s.device_tags(2), [TagValue::Str("a".into())]);
    }

    #[test]
    fn spooled_errors_name_the_input_and_line() {
        let e = open_spooled(
            "standard input".into(),
            Cursor::new("cpu a=1i 1\ncpu a=1.5 2\n"),
            ReplayOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.key, "file");
        assert!(e.message.starts_with("standard input:2: "), "{}", e.message);
        let e = open_spooled(
            "in".into(),
            Cursor::new("\n# only\n"),
            ReplayOptions::default(),
        )
        .unwrap_err();
        assert!(e.message.contains("no data lines"), "{}", e.message);
        let e = open_spooled(
            "in".into(),
            Cursor::new("m a=1i 1"),
            ReplayOptions {
                precision_ns: 0,
                ..ReplayOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.key, "precision");
    }

    #[test]
    fn hash_collisions_fall_back_to_the_key() {
        let mut s = SeriesIndex::default();
        let a = s.insert_hashed(b"m,t=a", 7, 0);
        let b = s.insert_hashed(b"m,t=b", 7, 0);
        let c = s.insert_hashed(b"m,t=c", 8, 1);
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(s.find_hashed(b"m,t=a", 7), Some(0));
        assert_eq!(s.find_hashed(b"m,t=b", 7), Some(1));
        assert_eq!(s.find_hashed(b"m,t=c", 8), Some(2));
        assert_eq!(s.find_hashed(b"m,t=d", 7), None);
        assert_eq!(s.find_hashed(b"m,t=d", 9), None);
        assert_eq!(s.key(1), b"m,t=b");
    }

    #[test]
    fn late_keys_go_after_their_neighbour_on_the_line() {
        let text = "d,a=1 x=1,z=1i 1\n\
                    d,a=1,c=3 w=0,x=1,y=2,z=1i 2\n\
                    d,b=2,c=3 y=2 3\n";
        let w = open_spooled("t".into(), Cursor::new(text), ReplayOptions::default()).unwrap();
        let t = &w.schema().tables[0];
        let names = |v: Vec<&str>| v.join(",");
        assert_eq!(
            names(t.fields.iter().map(|f| f.name.as_str()).collect()),
            "w,x,y,z"
        );
        assert_eq!(
            names(t.tags.iter().map(|f| f.name.as_str()).collect()),
            "b,a,c"
        );
        assert_eq!(
            t.tags.iter().map(|t| t.slot).collect::<Vec<_>>(),
            [2, 0, 1],
            "slots are numbered in order of first appearance"
        );
        assert_eq!(
            drain(&w, 10),
            ["0|0|1|-|1|-|1", "0|1|2|0|1|2|1", "0|2|3|-|-|2|-"]
        );
    }

    #[test]
    fn a_file_changed_after_open_ends_the_run_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.influx");
        std::fs::write(&path, "m a=1i 1\nm a=2i 2\nm a=3i 3\n").unwrap();
        let w =
            FileReplay::open(ReplayInput::Path(path.clone()), ReplayOptions::default()).unwrap();
        std::fs::write(&path, "m a=1i 1\nm a=2.5 2\nm a=3i 3\n").unwrap();
        let mut a = w.source(0, 2);
        let mut b = w.source(1, 2);
        let mut batch = Batch::for_schema(w.schema());
        assert_eq!(a.fill(&mut batch, 1), 1);
        batch.clear();
        assert_eq!(b.fill(&mut batch, 5), 0);
        assert!(batch.is_empty());
        batch.clear();
        assert_eq!(a.fill(&mut batch, 5), 0);
        let e = w.error().unwrap();
        assert!(
            e.message.contains("x.influx:2: field `a` is a float here"),
            "{}",
            e.message
        );

        std::fs::remove_file(&path).unwrap();
        let w2 = w.source(0, 1);
        drop(w2);
        assert!(
            w.error().unwrap().message.contains(":2:"),
            "the first error is kept"
        );
    }

    /// Endless zero bytes without a line end (`/dev/zero`, stdin from a binary), counting
    /// what was read; it ends after `stop` bytes so that code without a cap ends too.
    struct Zeros {
        read: Arc<Mutex<u64>>,
        stop: u64,
    }

    impl Read for Zeros {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let mut read = lock(&self.read);
            let n = (buf.len() as u64).min(self.stop - *read) as usize;
            buf[..n].fill(0);
            *read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn endless_input_without_line_ends_stops_at_the_cap_having_read_little() {
        let read = Arc::new(Mutex::new(0));
        let zeros = Zeros {
            read: read.clone(),
            stop: 64 << 20,
        };
        let e = open_spooled("standard input".into(), zeros, ReplayOptions::default()).unwrap_err();
        assert_eq!(e.key, "file");
        assert!(
            e.message.starts_with(
                "standard input:1: the line is longer than 1 MiB (1048576 bytes), the longest \
                 line a replay accepts"
            ),
            "{}",
            e.message
        );
        // The cap, plus at most one read buffer ahead of it.
        let read = *lock(&read);
        assert!(
            read <= (MAX_LINE_BYTES + BUF_BYTES + 1) as u64,
            "{read} bytes read for one line"
        );
    }

    #[test]
    fn a_line_at_the_cap_is_read_and_one_byte_more_is_refused() {
        let opts = ReplayOptions {
            max_line_bytes: 16,
            ..ReplayOptions::default()
        };
        // 16 bytes, then 16 bytes as the last line without a line end.
        let w = open_spooled(
            "t".into(),
            Cursor::new("m v=1i 100000000\nm v=2i 100000001"),
            opts,
        )
        .unwrap();
        assert_eq!(drain(&w, 10), ["0|0|100000000|1", "0|0|100000001|2"]);
        let e = open_spooled(
            "t".into(),
            Cursor::new("m v=1i 100000000\nm v=1i 1000000000\n"),
            opts,
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("t:2: the line is longer than 16 bytes, the longest line"),
            "{}",
            e.message
        );
        let e = open_spooled(
            "t".into(),
            Cursor::new("m v=1i 1\n"),
            ReplayOptions {
                max_line_bytes: 0,
                ..ReplayOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.key, "max_line_bytes");
    }

    #[test]
    fn a_line_grown_past_the_cap_after_open_ends_the_run_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.influx");
        std::fs::write(&path, "m a=1i 1\nm a=2i 2\nm a=3i 3\n").unwrap();
        let opts = ReplayOptions {
            max_line_bytes: 16,
            ..ReplayOptions::default()
        };
        let w = FileReplay::open(ReplayInput::Path(path.clone()), opts).unwrap();
        std::fs::write(&path, "m a=1i 1\nm a=2i 200000000000\nm a=3i 3\n").unwrap();
        let mut src = w.source(0, 1);
        let mut batch = Batch::for_schema(w.schema());
        assert_eq!(src.fill(&mut batch, 5), 0);
        assert!(batch.is_empty());
        let e = w.error().unwrap();
        assert!(
            e.message.contains(
                "x.influx:2: the line is longer than 16 bytes, the longest line a replay \
                 accepts"
            ) && e.message.contains("while replaying"),
            "{}",
            e.message
        );
    }
}
