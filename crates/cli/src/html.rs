//! The HTML report: `--out html=FILE` at a run's end, and `tsload report REPORT.json...
//! -o FILE.html`, which builds the same page later from saved `--json` reports (several:
//! side by side). Rendering is tsload-report-html's; reading and writing are here, the
//! page written through `out.rs` like every other output.
//!
//! `tsload report --hlog FILE` (repeatable) adds interval logs, paired with the reports in
//! the order given: the first --hlog is the first report's, and so on, one per report (a
//! count that differs is refused). A log gives its report's percentile spectrum (the whole
//! run, every interval's histogram added) and, where the JSON has no per-interval figures
//! (a merged report), the intervals' percentiles. A log is read whole, at most
//! [`MAX_HLOG_BYTES`]; a missing, unreadable or garbled one, or one that is not its
//! report's (its latency count differs), is an error naming the file, exit code 2.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tsload_report::merge::MAX_REPORT_BYTES;
use tsload_report_html::{Hlog, ReportInput};

use crate::exit::EXIT_USAGE;

/// The largest interval log `tsload report` reads: a 1-hour run at 1 s intervals writes
/// about 20 MiB.
pub const MAX_HLOG_BYTES: u64 = 256 << 20;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run reports written by `tsload run --json` (several: shown side by side, e.g. a
    /// baseline beside a new run, or each shard of a run).
    #[arg(required = true, value_name = "REPORT.json")]
    reports: Vec<PathBuf>,
    /// An HdrHistogram interval log (`run --hlog`, `merge --hlog-out`) of a report: one per
    /// report, in the reports' order (the first --hlog is the first report's). Gives the
    /// percentile spectrum from the log's histograms, and per-interval percentiles where
    /// the report has none (a merged report).
    #[arg(long = "hlog", value_name = "FILE")]
    hlogs: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE.html",
        required = true
    )]
    output: PathBuf,
}

/// Writes the page of one finished run (`--out html=FILE`), labelled with the scenario's
/// name.
pub fn write_run_page(path: &Path, name: &str, report: &serde_json::Value) -> anyhow::Result<()> {
    if !report.is_object() {
        anyhow::bail!("the run left no report to show");
    }
    let label = if name.is_empty() { "run" } else { name };
    // The page is drawn from a report that holds no secret: redacting the finished page
    // would miss a secret in the form the page escapes it to (`<&>"` in a password).
    let mut report = report.clone();
    tsload_redact::json(&mut report);
    let page = tsload_report_html::render(&[ReportInput {
        label: tsload_redact::text(label),
        report,
    }])?;
    crate::out::write_text(path, &page).with_context(|| format!("writing {}", path.display()))
}

/// Writes a page of several reports (a sweep's points, compare's targets, a merge's
/// shards) with `figures` first, under `title`.
pub fn write_page(
    path: &Path,
    title: &str,
    reports: Vec<ReportInput>,
    figures: &[tsload_report_html::Figure],
) -> anyhow::Result<()> {
    let mut reports = reports;
    for r in &mut reports {
        tsload_redact::json(&mut r.report);
        r.label = tsload_redact::text(&r.label);
    }
    let page = tsload_report_html::render_page(Some(title), &reports, figures)?;
    crate::out::write_text(path, &page).with_context(|| format!("writing {}", path.display()))
}

/// Writes `page` (a sweep's, with its sweep.json; a merge's, with its interval logs).
pub fn write_built(path: &Path, page: &tsload_report_html::Page<'_>) -> anyhow::Result<()> {
    let page = page.render()?;
    crate::out::write_text(path, &page).with_context(|| format!("writing {}", path.display()))
}

/// The label of a report read from `path`: its file name.
pub fn label_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// `tsload report`: the page of saved reports.
pub fn cmd_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(same) = args.reports.iter().find(|r| same_file(r, &args.output)) {
        errln!(
            "error: -o {} is also a report to read: write the page elsewhere",
            same.display()
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let mut inputs = Vec::new();
    for path in &args.reports {
        match read_report(path) {
            Ok(report) => inputs.push(ReportInput {
                label: label_of(path),
                report,
            }),
            Err(e) => {
                errln!("error: {}: {e}", path.display());
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if !args.hlogs.is_empty() && args.hlogs.len() != args.reports.len() {
        errln!(
            "error: {} --hlog for {} reports: give one interval log per report, in the reports' \
             order (the first --hlog is {}'s)",
            args.hlogs.len(),
            args.reports.len(),
            args.reports[0].display()
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let mut logs = Vec::new();
    for path in &args.hlogs {
        match read_hlog(path) {
            Ok(log) => logs.push(Some(log)),
            Err(e) => {
                errln!("error: --hlog {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    let page = tsload_report_html::Page {
        reports: &inputs,
        hlogs: &logs,
        ..tsload_report_html::Page::default()
    };
    let page = match page.render() {
        Ok(page) => page,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    crate::out::create_parent_dir(&args.output)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?;
    crate::out::write_text(&args.output, &page)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    outln!(
        "wrote {} ({} report{}, {} KiB)",
        args.output.display(),
        inputs.len(),
        if inputs.len() == 1 { "" } else { "s" },
        page.len().div_ceil(1024)
    );
    Ok(ExitCode::SUCCESS)
}

/// An interval log, at most [`MAX_HLOG_BYTES`], read and checked; labelled with its file
/// name. The error names the file.
pub fn read_hlog(path: &Path) -> Result<Hlog, String> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_HLOG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_HLOG_BYTES {
        return Err(format!(
            "{name}: larger than {} MiB, the most an interval log is read here",
            MAX_HLOG_BYTES >> 20
        ));
    }
    let mut log = tsload_report_html::read_hlog(&name, &bytes).map_err(|e| e.to_string())?;
    log.label = label_of(path);
    Ok(log)
}

/// A report's JSON, at most [`MAX_REPORT_BYTES`].
pub fn read_report(path: &Path) -> Result<serde_json::Value, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut text = String::new();
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read: {e}"))?;
    if text.len() as u64 > MAX_REPORT_BYTES {
        return Err(format!(
            "larger than {} MiB: not a tsload report",
            MAX_REPORT_BYTES >> 20
        ));
    }
    serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))
}

/// Whether two paths name one file (the same path, or both resolving to one).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password with characters the page escapes (`<&>"`) is not on the page in any
    /// form: the page is drawn from a redacted report (redacting the finished page missed
    /// the escaped form).
    #[test]
    fn a_run_page_holds_no_secret_in_its_escaped_form() {
        let password = "pw<&>\"KNRYhtml";
        tsload_redact::register(password);
        let report = serde_json::json!({
            "metrics_per_s": 10.0, "rows_per_s": 1.0, "rows": 1, "requests": 1,
            "metrics": 10, "bytes": 100, "elapsed_s": 1.0, "errors": {}, "retries": 0,
            "target": "influx", "workload": "cpu-only", "stop_reason": "row limit",
            "fatal_error": format!("HTTP 401: bad password {password}"),
            "scenario": {"name": password, "target": {"kind": "influx", "url": "http://h"}},
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.html");
        write_run_page(&path, password, &report).unwrap();
        let page = std::fs::read_to_string(&path).unwrap();
        assert!(!page.contains("KNRYhtml"), "the page holds the password");
        assert!(
            page.contains("bad password ***"),
            "the error is not on the page"
        );
    }
}
