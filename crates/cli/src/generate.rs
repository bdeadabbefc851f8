//! `tsload generate`: streams a scenario's data set as TSBS-compatible line protocol (the
//! `--format=influx` of `tsbs_generate_data`) to standard output or a file, gzip'd when the
//! file name ends in `.gz`. One source covers the whole data set, so the output is the data
//! set itself, in the order a single worker produces it.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, mpsc};

use anyhow::Context as _;
use tsload_core::Batch;
use tsload_lineproto::{LineEncoder, Precision};

/// `tsload generate --format`: what the data set is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Line protocol, as TSBS's `--format=influx` writes it.
    Influx,
}

/// Rows generated and encoded per step; large enough to amortise per-batch work.
const ROWS_PER_STEP: usize = 10_000;

pub fn cmd_generate(
    scenario: Option<&Path>,
    overrides: &[String],
    format: Format,
    output: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let Format::Influx = format;
    let plan = match tsload_scenario::load(scenario, overrides) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(crate::exit::EXIT_USAGE));
        }
    };
    let workload = match tsload_scenario::workloads::build(&plan) {
        Ok(w) => w,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(crate::exit::EXIT_USAGE));
        }
    };
    let out = match output {
        None => Output::Stdout(io::stdout()),
        Some(p) => {
            let f = crate::out::create_binary(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            if p.extension().is_some_and(|e| e == "gz") {
                Output::Gzip(flate2::write::GzEncoder::new(
                    BufWriter::with_capacity(1 << 20, f),
                    flate2::Compression::fast(),
                ))
            } else {
                Output::File(f)
            }
        }
    };
    let schema = Arc::new(workload.schema().clone());
    let mut encoder = LineEncoder::new(schema.clone(), Precision::Ns);
    let mut source = workload.source(0, 1);
    let mut batch = Batch::for_schema(&schema);
    // Encoding and writing overlap: the writer thread writes one buffer while this thread
    // generates and encodes the next (a few buffers in flight, recycled).
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(2);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut out = out;
        for buf in full_rx {
            out.write_all(&buf)?;
            // This thread may already be done; then the buffer is simply dropped.
            let _ = empty_tx.send(buf);
        }
        out.finish()
    });
    loop {
        batch.clear();
        if source.fill(&mut batch, ROWS_PER_STEP) == 0 {
            break;
        }
        let mut buf = empty_rx
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(4 << 20));
        buf.clear();
        encoder.encode(&batch, &mut buf);
        if full_tx.send(buf).is_err() {
            // The writer stopped on an error, which `join` returns.
            break;
        }
    }
    drop(full_tx);
    let result = writer
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked")));
    if let Some(e) = workload.source_error() {
        errln!("error: the data source failed, the output is incomplete: {e}");
        return Ok(ExitCode::FAILURE);
    }
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // `tsload generate | head` closes the pipe early: that is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e).context("writing the generated data"),
    }
}

/// Where generated lines go. Buffers are written whole (megabytes each), so plain outputs
/// need no extra buffering; gzip needs its trailer written by `finish`.
enum Output {
    Stdout(io::Stdout),
    File(File),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

impl Output {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.write_all(buf),
            Output::File(w) => w.write_all(buf),
            Output::Gzip(w) => w.write_all(buf),
        }
    }

    fn finish(self) -> io::Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush(),
            Output::File(mut w) => w.flush(),
            Output::Gzip(w) => w.finish()?.flush(),
        }
    }
}
