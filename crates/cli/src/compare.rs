//! `tsload compare SCENARIO --targets a.toml,b.toml,...`: the same write load into several
//! targets one after the other, each from a fresh state, then a side-by-side table (text,
//! CSV, JSON) and one SVG bar chart per figure (R3's comparison in one command).
//!
//! A target profile is a small TOML file: `name` (the table's label; the file's stem
//! otherwise), a `[target]` section that replaces the scenario's, and optionally a
//! `[monitor]` section (the server's processes and data directory, for server CPU and
//! bytes per metric).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tsload_report::RunReport;
use tsload_sweep::compare::{CHARTS, CompareRow, bar_svg, render_text, write_csv};

use crate::exit::EXIT_USAGE;
use crate::{confirm, run};
use tsload_scenario as scenario;
use tsload_scenario::plan::{Plan, ProgressMode, RunMode};
use tsload_scenario::workloads;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The scenario every target runs; its [target] and [monitor] are each profile's.
    scenario: PathBuf,
    /// Target profiles (TOML with `name`, `[target]`, optionally `[monitor]`), comma
    /// separated or repeated.
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        value_name = "PROFILE.toml"
    )]
    targets: Vec<PathBuf>,
    /// Override a scenario key for every target, e.g. `--set load.workers=8`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Where the table, the charts and each target's report go.
    #[arg(long, value_name = "DIR", default_value = "compare")]
    out: PathBuf,
    /// Confirm dropping tables on servers that are not this machine.
    #[arg(long)]
    yes: bool,
}

/// A profile read and resolved into the plan it runs.
struct Entry {
    name: String,
    plan: Plan,
}

pub fn cmd_compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut entries = match entries_of(&args) {
        Ok(e) => e,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let mut pages = Vec::new();
    for (i, e) in entries.iter_mut().enumerate() {
        errln!(
            "target {} of {}: {} ({})",
            i + 1,
            args.targets.len(),
            e.name,
            e.plan.target.kind()
        );
        e.plan.output.json = Some(args.out.join(format!("{}.json", e.name)));
        // Live time starts at each target's own clock.
        let plan = e.plan.at_now();
        let workload = match workloads::build(&plan) {
            Ok(w) => w,
            Err(err) => {
                errln!("error: {}: {err}", e.name);
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
        let executed = run::execute(&plan, workload)?;
        if executed.code != 0 {
            failed.push(format!("{} (exit {})", e.name, executed.code));
        }
        rows.push(row_of(
            &e.name,
            e.plan.target.kind(),
            executed.code,
            executed.report.as_ref(),
        ));
        if let Some(report) = &executed.report {
            pages.push(tsload_report_html::ReportInput {
                label: e.name.clone(),
                report: report.to_json()?,
            });
        }
    }

    write_outputs(&args, &rows, pages)?;
    let distinct: std::collections::BTreeSet<u64> = rows.iter().map(|r| r.rows).collect();
    if distinct.len() > 1 {
        errln!(
            "warning: the targets stored different row counts ({distinct:?}): compare their reports in {}",
            args.out.display()
        );
    }
    errln!(
        "wrote {}/compare.{{txt,csv,json,html}}, {} charts and each target's report",
        args.out.display(),
        CHARTS.len()
    );
    if !failed.is_empty() {
        errln!("error: runs that did not succeed: {}", failed.join(", "));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every profile's plan, resolved and checked before anything runs (names distinct, the
/// drops on other hosts confirmed). `Err`: a usage error, naming the file or profile.
fn entries_of(args: &CompareArgs) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| format!("{}: {e}", args.scenario.display()))?;
    tsload_scenario::register_secrets(&text, &args.set);
    let mut entries = Vec::new();
    for profile in &args.targets {
        let e = resolve(&args.scenario, &text, profile, &args.set)
            .map_err(|e| format!("{}: {e}", profile.display()))?;
        entries.push(e);
    }
    let mut names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "two target profiles are named '{}': give each its own `name`",
            w[0]
        ));
    }
    for e in &entries {
        confirm::confirm_drop(&e.plan, args.yes).map_err(|msg| format!("{}: {msg}", e.name))?;
    }
    Ok(entries)
}

/// The comparison's table (text, CSV, JSON), its bar charts and its HTML page.
fn write_outputs(
    args: &CompareArgs,
    rows: &[CompareRow],
    pages: Vec<tsload_report_html::ReportInput>,
) -> anyhow::Result<()> {
    let table = render_text(rows);
    outln!("\n{table}");
    crate::out::write_text(&args.out.join("compare.txt"), &table)?;
    let mut csv = Vec::new();
    write_csv(rows, &mut csv)?;
    crate::out::write_text(
        &args.out.join("compare.csv"),
        &String::from_utf8_lossy(&csv),
    )?;
    crate::out::write_text(
        &args.out.join("compare.json"),
        &(serde_json::to_string_pretty(&serde_json::json!({
            "scenario": args.scenario.display().to_string(),
            "targets": rows,
        }))? + "\n"),
    )?;
    let mut figures = Vec::new();
    if !rows.is_empty() {
        for (chart, title, _) in CHARTS {
            let svg = bar_svg(rows, chart).map_err(anyhow::Error::msg)?;
            crate::out::write_text(&args.out.join(format!("{chart}.svg")), &svg)?;
            figures.push(tsload_report_html::Figure {
                title: title.to_string(),
                svg,
            });
        }
    }
    if !pages.is_empty() {
        let title = format!("tsload compare: {}", args.scenario.display());
        crate::html::write_page(&args.out.join("compare.html"), &title, pages, &figures)?;
    }
    Ok(())
}

/// The plan of `scenario` with `profile`'s target (and monitor).
fn resolve(
    scenario_path: &Path,
    scenario_text: &str,
    profile: &Path,
    sets: &[String],
) -> Result<Entry, String> {
    let text = std::fs::read_to_string(profile).map_err(|e| e.to_string())?;
    tsload_scenario::register_secrets(&text, &[]);
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| tsload_scenario::syntax_error(&text, &e))?;
    let mut profile_sets = Vec::new();
    let mut name = None;
    for (key, item) in doc.iter() {
        match (key, item) {
            ("name", item) => {
                name = Some(item.as_str().ok_or("`name` is not a string")?.to_string())
            }
            ("target" | "monitor", toml_edit::Item::Table(t)) => {
                for (k, v) in t.iter() {
                    let v = v
                        .as_value()
                        .ok_or_else(|| format!("[{key}] {k}: not a plain value"))?;
                    // Without its comments and spacing: just the value.
                    let v = v.clone().decorated("", "");
                    profile_sets.push(format!("{key}.{k}={v}"));
                }
            }
            (other, _) => {
                return Err(format!(
                    "`{other}` is not allowed in a target profile; allowed: name, [target], [monitor]"
                ));
            }
        }
    }
    if !doc.contains_table("target") {
        return Err("no [target] section".into());
    }
    // The scenario without its own target and monitor.
    let mut base: toml_edit::DocumentMut = scenario_text.parse().map_err(|e| {
        format!(
            "{}: {}",
            scenario_path.display(),
            tsload_scenario::syntax_error(scenario_text, &e)
        )
    })?;
    base.remove("target");
    base.remove("monitor");
    let mut all = profile_sets;
    all.extend(sets.iter().cloned());
    let label = format!("{} with {}", scenario_path.display(), profile.display());
    let mut plan = scenario::parse(&label, &base.to_string(), &all).map_err(|e| e.to_string())?;
    if plan.mode != RunMode::Write {
        return Err("compare runs write loads: the scenario's mode must be \"write\"".into());
    }
    // A fresh state for each target.
    plan.target.set_drop_existing(true);
    plan.output.progress = match plan.output.progress {
        ProgressMode::None => ProgressMode::None,
        _ => ProgressMode::Plain,
    };
    let name = name.unwrap_or_else(|| {
        profile
            .file_stem()
            .map_or_else(|| "target".into(), |s| s.to_string_lossy().into_owned())
    });
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(format!(
            "name '{name}': it names the target's report file; no slashes"
        ));
    }
    if name == "compare" {
        return Err(
            "name 'compare': compare.json is the comparison's own file; name the target \
             another way"
                .into(),
        );
    }
    Ok(Entry { name, plan })
}

/// A table row from a target's report (zeros, and a failed verdict, when the run left
/// none), `exit` the code the run earned.
fn row_of(name: &str, kind: &str, exit: u8, r: Option<&RunReport>) -> CompareRow {
    let w = r.and_then(|r| r.streams.write());
    let server = r.and_then(|r| r.server.as_ref());
    let f = |v: Option<f64>| v.unwrap_or(0.0);
    CompareRow {
        target: name.to_string(),
        kind: w.map_or(kind, |w| w.target.as_str()).to_string(),
        rows: w.map_or(0, |w| w.rows),
        metrics: w.map_or(0, |w| w.metrics),
        elapsed_s: f(w.map(|w| w.elapsed_s)),
        rows_per_s: f(w.map(|w| w.rows_per_s)),
        metrics_per_s: f(w.map(|w| w.metrics_per_s)),
        latency_p50_ms: f(w.map(|w| w.latency.p50_ms)),
        latency_p99_ms: f(w.map(|w| w.latency.p99_ms)),
        client_cpu_us_per_1000_metrics: f(w.and_then(|w| w.client.cpu_us_per_1000_metrics)),
        server_cpu_s_per_million_metrics: server.map(|s| s.cpu_s_per_million_metrics),
        bytes_per_metric: r.and_then(RunReport::bytes_per_metric),
        stop_reason: w.map(|w| w.stop_reason.clone()),
        verdict: match r {
            Some(r) => r.verdict(exit),
            None => tsload_report::verdict::Verdict::no_report(exit),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
    }

    #[test]
    fn the_shipped_profiles_resolve_against_r3_compare() {
        crate::install_kinds();
        let scenario = configs().join("r3-compare.toml");
        let text = std::fs::read_to_string(&scenario).unwrap();
        let mut seen = 0;
        for entry in std::fs::read_dir(configs().join("compare")).unwrap() {
            let path = entry.unwrap().path();
            if !cfg!(feature = "tdengine") && path.ends_with("tdengine.toml") {
                continue;
            }
            // TDengine's profile reads its password from the environment.
            let sets = ["target.password=\"x\"".to_string()];
            let sets: &[String] = if path.ends_with("tdengine.toml") {
                &sets
            } else {
                &[]
            };
            let e = resolve(&scenario, &text, &path, sets)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                Some(e.name.as_str()),
                path.file_stem().and_then(|s| s.to_str())
            );
            assert!(e.plan.monitor.is_some(), "{}", path.display());
            assert_ne!(e.plan.target.kind(), "null");
            seen += 1;
        }
        assert!(seen >= 4, "{seen}");
    }

    #[test]
    fn a_profile_with_other_sections_or_no_target_is_refused() {
        crate::install_kinds();
        let dir = std::env::temp_dir().join(format!("tsload-compare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scenario = configs().join("r3-compare.toml");
        let text = std::fs::read_to_string(&scenario).unwrap();
        for (body, msg) in [
            ("[load]\nworkers = 2\n", "`load` is not allowed"),
            ("name = \"x\"\n", "no [target] section"),
            ("[target]\nkind = \"nope\"\n", "nope"),
            (
                "name = \"compare\"\n[target]\nkind = \"null\"\n",
                "compare.json is the comparison's own file",
            ),
            ("name = \"..\"\n[target]\nkind = \"null\"\n", "no slashes"),
        ] {
            let p = dir.join("p.toml");
            crate::out::write_text(&p, body).unwrap();
            let e = resolve(&scenario, &text, &p, &[]).err().expect(body);
            assert!(e.contains(msg), "{body}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
