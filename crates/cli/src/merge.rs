//! `tsload merge`: the `--json` reports (and `.hlog` interval logs) of the shards of one
//! run, read from files or directories, merged into one report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tsload_core::merge::{ShardLine, ShardReport, merge, merge_queries};
use tsload_core::query_report::QuerySummary;
use tsload_core::report::Summary;
use tsload_core::shard::Shard;

use crate::EXIT_USAGE;

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
    /// Merge even when some shards' reports are missing (the report then covers only the
    /// shards given).
    #[arg(long)]
    allow_partial: bool,
}

pub fn cmd_merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
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
                [&args.json, &args.hlog_out]
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
    if reports.is_empty() {
        eprintln!("error: no *.json report in {}", show(&args.inputs));
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if !hlogs.is_empty() && args.hlog_out.is_none() {
        eprintln!("error: --hlog needs --hlog-out FILE (where the merged log goes)");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    for (flag, out) in [("--json", &args.json), ("--hlog-out", &args.hlog_out)] {
        if let Some(out) = out
            && let Err(e) = crate::create_parent_dir(out)
        {
            eprintln!("error: {flag} {}: {e}", out.display());
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    }
    let mut writes = Vec::new();
    let mut queries = Vec::new();
    for path in &reports {
        match read_report(path) {
            Ok(Read::Write(r)) => writes.push(r),
            Ok(Read::Query(r)) => queries.push(r),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if !writes.is_empty() && !queries.is_empty() {
        eprintln!(
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
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    print!("{text}");

    if let Some(out) = &args.hlog_out {
        if hlogs.is_empty() {
            eprintln!(
                "error: --hlog-out: no interval logs given (--hlog FILE, or *.hlog in a directory)"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        let mut logs = Vec::with_capacity(hlogs.len());
        for h in &hlogs {
            let bytes = std::fs::read(h).with_context(|| format!("reading {}", h.display()))?;
            logs.push((h.display().to_string(), bytes));
        }
        let file = std::io::BufWriter::new(
            std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?,
        );
        match tsload_core::hlog::merge_logs(&logs, file, "tsload merge") {
            Ok(n) => eprintln!(
                "merged {} interval logs into {} ({n} intervals)",
                logs.len(),
                out.display()
            ),
            Err(e) => {
                eprintln!("error: --hlog-out {}: {e}", out.display());
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
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

/// A shard's report of either kind.
enum Read {
    Write(ShardReport<Summary>),
    Query(ShardReport<QuerySummary>),
}

/// One shard's report from its JSON file.
fn read_report(path: &Path) -> Result<Read, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {name}: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    if value.get("mode").and_then(|m| m.as_str()) == Some("mixed") {
        return Err(format!(
            "{name}: a mixed report; mixed runs are not sharded, so there is nothing to merge"
        ));
    }
    if value.get("merged_from").is_some() {
        return Err(format!("{name}: already a merged report"));
    }
    let shard = match value.get("shard") {
        None | Some(serde_json::Value::Null) => None,
        Some(s) => {
            let shard: Shard =
                serde_json::from_value(s.clone()).map_err(|e| format!("{name}: shard: {e}"))?;
            Some(Shard::new(shard.index, shard.count).map_err(|e| format!("{name}: shard: {e}"))?)
        }
    };
    let text_field = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (host, scenario_sha256) = (text_field("host"), text_field("scenario_sha256"));
    if value.get("kinds").is_some() {
        let summary: QuerySummary = serde_json::from_value(value.clone())
            .map_err(|e| format!("{name}: not a tsload query report (`run --json`): {e}"))?;
        return Ok(Read::Query(ShardReport {
            source: name,
            shard,
            host,
            scenario_sha256,
            summary,
        }));
    }
    let summary: Summary = serde_json::from_value(value)
        .map_err(|e| format!("{name}: not a tsload write report (`run --json`): {e}"))?;
    Ok(Read::Write(ShardReport {
        source: name,
        shard,
        host,
        scenario_sha256,
        summary,
    }))
}
