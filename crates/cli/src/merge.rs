//! `tsload merge`: the `--json` reports (and `.hlog` interval logs) of the shards of one
//! run, read from files or directories, merged into one report. Reading is bounded: a
//! report is at most `merge::MAX_REPORT_BYTES` (64 MiB), an interval log at most
//! `hlog::MAX_LOG_BYTES` and its lines `hlog::MAX_LINE_BYTES`; what core's readers refuse
//! (a figure out of range, a sum that overflows, a corrupt histogram) is an error naming
//! the file, and exit code 2.

use std::fs::File;
use std::io::{BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tsload_report::hlog::{HlogError, MAX_LOG_BYTES};
use tsload_report::merge::{
    AnyReport, MAX_REPORT_BYTES, MergeError, ShardLine, merge, merge_queries,
};

use crate::exit::EXIT_USAGE;

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shards' `--json` reports, or directories holding them (every `*.json` in a
    /// directory; its `*.hlog` files too when --hlog-out is given).
    #[arg(required = true, value_name = "REPORT.json|DIR")]
    inputs: Vec<PathBuf>,
    /// The shards' interval logs (`run --hlog`), to merge into --hlog-out (repeatable).
    #[arg(long = "hlog", value_name = "FILE")]
    hlogs: Vec<PathBuf>,
    /// Write the merged interval log here (intervals aligned on the wall clock).
    #[arg(long, value_name = "FILE")]
    hlog_out: Option<PathBuf>,
    /// Write the merged report as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the HTML report here: the merged report, then each shard's beside it.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Merge even when some shards' reports are missing (the report then covers only the
    /// shards given).
    #[arg(long)]
    allow_partial: bool,
}

pub fn cmd_merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let (reports, hlogs) = inputs(&args)?;
    if reports.is_empty() {
        errln!("error: no *.json report in {}", show(&args.inputs));
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if !hlogs.is_empty() && args.hlog_out.is_none() {
        errln!("error: --hlog needs --hlog-out FILE (where the merged log goes)");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    for (flag, out) in [
        ("--json", &args.json),
        ("--hlog-out", &args.hlog_out),
        ("--html", &args.html),
    ] {
        if let Some(out) = out
            && let Err(e) = crate::out::create_parent_dir(out)
        {
            errln!("error: {flag} {}: {e}", out.display());
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    }
    let mut writes = Vec::new();
    let mut queries = Vec::new();
    for path in &reports {
        match read_report(path) {
            Ok(AnyReport::Write(r)) => writes.push(*r),
            Ok(AnyReport::Query(r)) => queries.push(*r),
            Err(e) => {
                errln!("error: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if !writes.is_empty() && !queries.is_empty() {
        errln!(
            "error: {} write report(s) and {} query report(s): merge the shards of one run",
            writes.len(),
            queries.len()
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let merged = if queries.is_empty() {
        merge(&writes, args.allow_partial).map(|m| {
            let text = m.render_text();
            (text, to_json(&m.summary, &m.shards, &m.scenario_sha256))
        })
    } else {
        merge_queries(&queries, args.allow_partial).map(|m| {
            let text = m.render_text();
            (text, to_json(&m.summary, &m.shards, &m.scenario_sha256))
        })
    };
    let (text, json) = match merged {
        Ok((text, json)) => (text, json?),
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    out!("{text}");

    if let Some(out) = &args.hlog_out
        && let Err(e) = write_merged_log(out, &hlogs)?
    {
        errln!("error: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json)?;
        crate::out::write_text(path, &(text + "\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        write_html(path, &args, &reports, &hlogs, json)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The reports to merge and the interval logs beside them: the files given, and in a
/// directory given its `*.json` (and with `--hlog-out`, its `*.hlog`), less what an earlier
/// merge into the same directory wrote.
fn inputs(args: &MergeArgs) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut reports = Vec::new();
    let mut hlogs = args.hlogs.clone();
    for input in &args.inputs {
        if input.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("reading {}", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            files.sort();
            // A merge run again over the same directory skips what it wrote before.
            let written = |f: &Path| {
                [&args.json, &args.hlog_out, &args.html]
                    .into_iter()
                    .flatten()
                    .any(|o| same_file(o, f))
            };
            for f in files {
                if written(&f) {
                    continue;
                }
                match f.extension().and_then(|e| e.to_str()) {
                    Some("json") => reports.push(f),
                    Some("hlog") if args.hlog_out.is_some() => hlogs.push(f),
                    _ => {}
                }
            }
        } else {
            reports.push(input.clone());
        }
    }
    Ok((reports, hlogs))
}

/// Merges the interval logs into `out`; `Ok(Err(message))`: a usage error (no logs, or a
/// log that cannot be read: nothing is written then).
fn write_merged_log(out: &Path, hlogs: &[PathBuf]) -> anyhow::Result<Result<(), String>> {
    if hlogs.is_empty() {
        return Ok(Err(
            "--hlog-out: no interval logs given (--hlog FILE, or *.hlog in a directory)".into(),
        ));
    }
    // Merged in memory first: a log that cannot be read leaves no half-written file.
    let mut merged_log = Vec::new();
    let merged = open_logs(hlogs)
        .and_then(|logs| tsload_report::hlog::merge_logs(logs, &mut merged_log, "tsload merge"));
    match merged {
        Ok(n) => {
            crate::out::create_binary(out)
                .with_context(|| format!("creating {}", out.display()))?
                .write_all(&merged_log)
                .with_context(|| format!("writing {}", out.display()))?;
            errln!(
                "merged {} interval logs into {} ({n} intervals)",
                hlogs.len(),
                out.display()
            );
        }
        Err(e) => return Ok(Err(format!("--hlog-out {}: {e}", out.display()))),
    }
    Ok(Ok(()))
}

/// The HTML page of the merge: the merged report first, then each shard's as written
/// (with its intervals), and with `--hlog-out` each report's interval log beside it.
fn write_html(
    path: &Path,
    args: &MergeArgs,
    reports: &[PathBuf],
    hlogs: &[PathBuf],
    json: serde_json::Value,
) -> anyhow::Result<()> {
    // The merged report first, then each shard's as written (with its intervals).
    let mut pages = vec![tsload_report_html::ReportInput {
        label: format!("merged ({} shards)", reports.len()),
        report: json,
    }];
    for shard in reports {
        let report = crate::html::read_report(shard)
            .map_err(|e| anyhow::anyhow!("{}: {e}", shard.display()))?;
        pages.push(tsload_report_html::ReportInput {
            label: crate::html::label_of(shard),
            report,
        });
    }
    // With --hlog-out, each report's interval log beside it: the merged log, and each
    // shard's log of the same file stem (`s0.json` and `s0.hlog`).
    let mut logs = Vec::new();
    if let Some(out) = &args.hlog_out {
        logs.push(Some(
            crate::html::read_hlog(out).map_err(anyhow::Error::msg)?,
        ));
        for shard in reports {
            let log = hlogs.iter().find(|h| h.file_stem() == shard.file_stem());
            logs.push(match log {
                Some(h) => Some(crate::html::read_hlog(h).map_err(anyhow::Error::msg)?),
                None => None,
            });
        }
    }
    let mut page = tsload_report_html::Page {
        title: Some("tsload merge"),
        reports: &pages,
        hlogs: &logs,
        ..tsload_report_html::Page::default()
    };
    // A log that is not its report's leaves the page without logs, not without a page.
    let html = match page.render() {
        Err(e @ tsload_report_html::Error::HlogMismatch { .. }) => {
            errln!(
                "note: --html {}: drawn without the interval logs: {e}",
                path.display()
            );
            page.hlogs = &[];
            page.render()?
        }
        other => other?,
    };
    crate::out::write_text(path, &html).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Whether two paths name one file (the same path, or both resolving to one).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// The merged report as JSON: the whole run's summary, `merged_from`, each shard's line.
fn to_json<S: serde::Serialize>(
    summary: &S,
    shards: &[ShardLine],
    scenario_sha256: &Option<String>,
) -> anyhow::Result<serde_json::Value> {
    let mut json = match serde_json::to_value(summary)? {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    json.insert("merged_from".into(), shards.len().into());
    json.insert("shards".into(), serde_json::to_value(shards)?);
    json.insert(
        "scenario_sha256".into(),
        serde_json::to_value(scenario_sha256)?,
    );
    Ok(serde_json::Value::Object(json))
}

fn show(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The interval logs, opened for reading line by line; one over
/// [`MAX_LOG_BYTES`] is refused before it is read.
fn open_logs(paths: &[PathBuf]) -> Result<Vec<(String, BufReader<File>)>, HlogError> {
    let mut logs = Vec::with_capacity(paths.len());
    for path in paths {
        let file = path.display().to_string();
        let open = File::open(path).and_then(|f| f.metadata().map(|m| (f, m.len())));
        let (f, len) = open.map_err(|source| HlogError::Read {
            file: file.clone(),
            source,
        })?;
        if len > MAX_LOG_BYTES {
            return Err(HlogError::TooLarge {
                file,
                cap: MAX_LOG_BYTES,
            });
        }
        logs.push((file, BufReader::new(f)));
    }
    Ok(logs)
}

/// One shard's report from its JSON file: at most [`MAX_REPORT_BYTES`] read (a larger
/// file is refused, by its size before reading, or after reading one byte more than the
/// cap when it has no size, like a pipe), then core's reader.
fn read_report(path: &Path) -> Result<AnyReport, String> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| format!("reading {name}: {e}"))?;
    if file.metadata().is_ok_and(|m| m.len() > MAX_REPORT_BYTES) {
        let cap = MAX_REPORT_BYTES;
        return Err(MergeError::TooLarge { file: name, cap }.to_string());
    }
    let mut bytes = Vec::new();
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {name}: {e}"))?;
    tsload_report::merge::read_report(&name, &bytes).map_err(|e| e.to_string())
}
