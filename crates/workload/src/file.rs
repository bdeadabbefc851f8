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
//! finds the device of a line in either pass, after one comparison with the series that
//! followed the line before's in pass 1 (which finds it when the file repeats its series
//! in one order, as TSBS's files do). A field's key is likewise compared first with the
//! table's next field. Memory grows with the number of series, not with the number of
//! rows.
//!
//! [`TagSource`]: tsload_core::schema::TagSource

mod lines;
mod parse;
mod replay;
mod scan;
mod series;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use flate2::bufread::MultiGzDecoder;
use tsload_core::schema::Schema;
use tsload_core::{BatchSource, Workload};

use crate::WorkloadError;
use replay::{Chunk, Layout, ReplayReader, ReplaySource, TextSource};
use scan::{Scanner, scan};
use series::NO_DEVICE;

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
            last: NO_DEVICE,
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
                last: NO_DEVICE,
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

#[cfg(test)]
mod tests;
