//! What a user sees while a run goes on: a live progress line (an indicatif bar on a
//! terminal, plain lines otherwise) and, when asked, the HdrHistogram interval log.

use std::fs::File;
use std::io::{BufWriter, IsTerminal};
use std::time::SystemTime;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tsload_core::engine::{IntervalReport, Observer};
use tsload_core::rusage::Usage;
use tsload_report::StreamKind;
use tsload_report::hlog::HlogWriter;
use tsload_report::report::group;

use tsload_outputs::Outputs;
use tsload_scenario::plan::ProgressMode;

/// The CLI's observer of a run.
pub struct RunObserver {
    bar: Option<ProgressBar>,
    plain: bool,
    hlog_file: Option<(String, BufWriter<File>)>,
    hlog: Option<(String, HlogWriter<BufWriter<File>>)>,
    /// First error writing the interval log; the run goes on and the error is reported.
    pub hlog_error: Option<String>,
    /// Resource usage when the load started, so the report counts the load alone.
    pub usage_at_start: Usage,
    comment: String,
    /// A read stream: the line counts requests and statements, not rows and metrics.
    reads: bool,
    /// Put before each plain line (mixed runs tell their two streams apart).
    prefix: &'static str,
    /// `--out` and `--metrics-addr`, and the stream name this observer records under.
    outputs: Option<(Outputs, StreamKind)>,
    started_at: SystemTime,
    /// `[monitor]`: the server's start sample, taken when the clock starts.
    monitor: Option<tsload_monitor::Starter>,
}

impl RunObserver {
    pub fn new(
        mode: ProgressMode,
        total_rows: Option<u64>,
        hlog: Option<(String, File)>,
        comment: String,
    ) -> Self {
        let tty = std::io::stderr().is_terminal();
        let (bar, plain) = match mode {
            ProgressMode::None => (None, false),
            ProgressMode::Plain => (None, true),
            ProgressMode::Bar => (Some(make_bar(total_rows)), false),
            ProgressMode::Auto if tty => (Some(make_bar(total_rows)), false),
            ProgressMode::Auto => (None, true),
        };
        RunObserver {
            bar,
            plain,
            hlog_file: hlog.map(|(name, f)| (name, BufWriter::new(f))),
            hlog: None,
            hlog_error: None,
            usage_at_start: Usage::now(),
            comment,
            reads: false,
            prefix: "",
            outputs: None,
            started_at: SystemTime::now(),
            monitor: None,
        }
    }

    /// Records every interval into `outputs` as stream `stream` (`write` or `query`).
    pub fn with_outputs(mut self, outputs: Outputs, stream: StreamKind) -> Self {
        self.outputs = Some((outputs, stream));
        self
    }

    /// Shows a read stream's figures (requests/s, statements/s) instead of rows.
    pub fn for_reads(mut self) -> Self {
        self.reads = true;
        self
    }

    /// Takes the `[monitor]` start sample when this stream's clock starts.
    pub fn with_monitor(mut self, starter: Option<tsload_monitor::Starter>) -> Self {
        self.monitor = starter;
        self
    }

    /// Starts every plain progress line with `prefix` (e.g. `write` or `query`).
    pub fn with_prefix(mut self, prefix: &'static str) -> Self {
        self.prefix = prefix;
        self
    }

    /// Flushes the interval log and clears the bar before the final report prints.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if let Some((name, w)) = &mut self.hlog
            && let Err(e) = w.flush()
        {
            self.hlog_error
                .get_or_insert(format!("writing {name}: {e}"));
        }
    }
}

fn make_bar(total_rows: Option<u64>) -> ProgressBar {
    let bar = match total_rows {
        Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = if total_rows.is_some() {
        "{bar:20} {percent:>3}% {msg}"
    } else {
        "{spinner} {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// One progress line for an interval of a read stream (requests, statements/s).
pub fn read_interval_line(r: &IntervalReport) -> String {
    let secs = (r.end - r.start).as_secs_f64().max(1e-9);
    let ms = |q: f64| r.latency.value_at_quantile(q) as f64 / 1e6;
    format!(
        "[{:>7.1}s] requests {:>11} | {:>9} req/s {:>10} statements/s | p50 {:.3} p99 {:.3} p99.9 {:.3} ms | errors {}",
        r.end.as_secs_f64(),
        group(r.totals.requests),
        group((r.counters.requests as f64 / secs).round() as u64),
        group((r.counters.metrics as f64 / secs).round() as u64),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        r.totals.error_count()
    )
}

/// One progress line for an interval.
pub fn interval_line(r: &IntervalReport) -> String {
    let secs = (r.end - r.start).as_secs_f64().max(1e-9);
    let ms = |q: f64| r.latency.value_at_quantile(q) as f64 / 1e6;
    let errors = r.totals.error_count();
    format!(
        "[{:>7.1}s] rows {:>13} | {:>11} rows/s {:>12} metrics/s | p50 {:.3} p99 {:.3} p99.9 {:.3} ms | errors {}",
        r.end.as_secs_f64(),
        group(r.totals.rows),
        group((r.counters.rows as f64 / secs).round() as u64),
        group((r.counters.metrics as f64 / secs).round() as u64),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        errors
    )
}

impl Observer for RunObserver {
    fn on_start(&mut self, started_at: SystemTime) {
        if let Some(m) = &self.monitor {
            m.mark();
        }
        self.usage_at_start = Usage::now();
        self.started_at = started_at;
        if let Some((name, file)) = self.hlog_file.take() {
            match HlogWriter::new(file, started_at, &self.comment) {
                Ok(w) => self.hlog = Some((name, w)),
                Err(e) => self.hlog_error = Some(format!("writing {name}: {e}")),
            }
        }
    }

    fn on_interval(&mut self, r: &IntervalReport) {
        if let Some((outputs, stream)) = &self.outputs {
            outputs.record(*stream, self.started_at, r);
        }
        if let Some((name, w)) = &mut self.hlog
            && let Err(e) = w.write_interval(r.start, r.end - r.start, &r.latency, &r.service)
        {
            self.hlog_error
                .get_or_insert(format!("writing {name}: {e}"));
        }
        let line = if self.reads {
            read_interval_line(r)
        } else {
            interval_line(r)
        };
        if let Some(bar) = &self.bar {
            bar.set_position(if self.reads {
                r.totals.requests
            } else {
                r.totals.rows
            });
            bar.set_message(line);
        } else if self.plain {
            errln!("{}{line}", self.prefix);
        }
    }
}
