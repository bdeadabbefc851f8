//! `tsload sweep`: runs a scenario once per point of its `[sweep]` grid (apply the
//! impairment, probe the real RTT, run the load, restore), then writes the table (text,
//! CSV, JSON), the RTT fit and an SVG plot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use tsload_core::engine::LoadMode;
use tsload_report::RunReport;
use tsload_sweep::{
    Grid, Measure, PlotOptions, Point, Rates, RttStats, SweepRow, SweepTable, SweepValue,
    TRequestSource, Verdict, choose_plot,
};

use crate::args::ScenarioArgs;
use crate::exit::{EXIT_INTERRUPTED, EXIT_USAGE};
use crate::run;
use tsload_scenario as scenario;
use tsload_scenario::plan::{Plan, QueryWorkloadPlan, RunMode};
use tsload_scenario::workloads;

/// Keys whose values are a delay, so the fit and plot use the measured RTT against them.
const RTT_KEYS: &[&str] = &["delay", "network.delay"];

#[derive(clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Directory for sweep.csv, sweep.json, sweep.svg and each point's report
    /// (default: sweep-NAME in the current directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Progress display of each point's run: auto, bar, plain or none.
    #[arg(long, value_name = "MODE", default_value = "none")]
    progress: String,
    /// Confirm `target.drop_existing = true` against a server that is not this machine
    /// (asked on a terminal otherwise).
    #[arg(long)]
    yes: bool,
}

fn to_sweep_value(v: &toml::Value) -> SweepValue {
    match v {
        toml::Value::Integer(i) => SweepValue::Int(*i),
        toml::Value::Float(f) => SweepValue::Float(*f),
        toml::Value::Boolean(b) => SweepValue::Bool(*b),
        toml::Value::String(s) => SweepValue::Str(s.clone()),
        other => SweepValue::Str(other.to_string()),
    }
}

fn sweep_value_toml(v: &SweepValue) -> String {
    match v {
        SweepValue::Int(i) => i.to_string(),
        SweepValue::Float(f) => toml::Value::Float(*f).to_string(),
        SweepValue::Bool(b) => b.to_string(),
        SweepValue::Str(s) => toml::Value::String(s.clone()).to_string(),
    }
}

pub fn cmd_sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let sweep = match Sweep::prepare(&args)? {
        Ok(s) => s,
        Err(m) => {
            errln!("error: {m}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut table = SweepTable::measuring(&sweep.grid, sweep.measure);
    // Each point's report, for sweep.html.
    let mut pages = Vec::new();
    let mut failed = 0usize;
    let mut interrupted = false;
    let total = sweep.plans.len();
    for (i, (point, plan)) in sweep.points.iter().zip(&sweep.plans).enumerate() {
        errln!("=== point {}/{total}: {} ===", i + 1, point.label());
        // Live time starts at each point's own clock.
        let plan = &plan.at_now();
        let workload = match workloads::build(plan) {
            Ok(w) => w,
            Err(e) => {
                errln!("error: sweep point {}: {e}", i + 1);
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
        let executed = run::execute(plan, workload)?;
        interrupted |= executed.code == EXIT_INTERRUPTED;
        failed += usize::from(executed.code != 0);
        table
            .push(sweep_row(point, plan, sweep.measure, &executed))
            .context("recording the point")?;
        if let Some(report) = &executed.report {
            pages.push(tsload_report_html::ReportInput {
                label: format!("point {}: {}", i + 1, point.label()),
                report: report.to_json()?,
            });
        }
        // Written after every point, so an interrupted sweep keeps what it measured.
        write_outputs(
            &table,
            &sweep.out_dir,
            sweep.source,
            &sweep.base.name,
            false,
        )?;
        if interrupted {
            errln!("interrupted: the sweep stops after point {}", i + 1);
            break;
        }
    }
    outln!("\n=== sweep: {} points ===", table.rows.len());
    out!("{}", table.render_text());
    let svg = write_outputs(&table, &sweep.out_dir, sweep.source, &sweep.base.name, true)?;
    if !pages.is_empty() {
        write_page(&sweep, &pages, svg)?;
    }
    outln!(
        "wrote {0}/sweep.csv, {0}/sweep.json, {0}/sweep.svg, {0}/sweep.html and {0}/points/",
        sweep.out_dir.display()
    );
    Ok(if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed > 0 {
        errln!("error: {failed} of {total} points failed");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A sweep ready to run: every point resolved and checked, and where it writes.
struct Sweep {
    base: Plan,
    grid: Grid,
    points: Vec<Point>,
    plans: Vec<Plan>,
    out_dir: PathBuf,
    measure: Measure,
    /// Where the fit's request time comes from: closed loop's, or the service time.
    source: TRequestSource,
}

impl Sweep {
    /// Reads the scenario and its grid, resolves and validates every point before the
    /// first one runs, and asks once for the drops on other hosts. `Ok(Err(message))`: a
    /// usage error.
    fn prepare(args: &SweepArgs) -> anyhow::Result<Result<Sweep, String>> {
        let progress = match args.progress.as_str() {
            p @ ("auto" | "bar" | "plain" | "none") => p.to_string(),
            other => {
                return Ok(Err(format!(
                    "--progress: \"{other}\" is not allowed; allowed: auto, bar, plain, none"
                )));
            }
        };
        let base = match scenario::load(args.scenario.scenario.as_deref(), &args.scenario.set) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let grid = match grid_of(&base) {
            Ok(g) => g,
            Err(e) => return Ok(Err(e)),
        };
        let out_dir = args.out.clone().unwrap_or_else(|| {
            let name: String = base
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            PathBuf::from(format!("sweep-{name}"))
        });
        std::fs::create_dir_all(out_dir.join("points"))
            .with_context(|| format!("cannot create {}", out_dir.display()))?;
        let points = grid.points();
        let plans = match resolve_points(
            args.scenario.scenario.as_deref(),
            &args.scenario.set,
            &base,
            &points,
            Some((&out_dir, &progress)),
        ) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        // Asked once for the whole sweep, naming every host a point would drop tables on
        // (`target` keys can be swept).
        if let Err(e) = crate::confirm::confirm_drops(&plans, args.yes) {
            return Ok(Err(e));
        }
        let closed_loop = plans.iter().all(|p| match (&p.query, p.mode) {
            (Some(q), RunMode::Query) => q.config.mode == LoadMode::Closed,
            _ => p.load.mode == LoadMode::Closed,
        });
        let source = if closed_loop {
            TRequestSource::ClosedLoop
        } else {
            TRequestSource::ServiceMean
        };
        let measure = match measure_of_sweep(&plans) {
            Ok(m) => m,
            Err(e) => return Ok(Err(format!("{}: [sweep]: {e}", base.source))),
        };
        Ok(Ok(Sweep {
            base,
            grid,
            points,
            plans,
            out_dir,
            measure,
            source,
        }))
    }
}

/// The measured RTT of a run, as a sweep row holds it.
fn rtt_of(executed: &run::Executed) -> Option<RttStats> {
    executed.probe.as_ref().map(|p| RttStats {
        method: p.kind.as_str().to_string(),
        median_ms: p.latency.p50_ms,
        min_ms: Some(p.latency.min_ms),
        avg_ms: Some(p.latency.mean_ms),
        max_ms: Some(p.latency.max_ms),
    })
}

/// A point's row. A query run's row comes from its read stream; a write or mixed run's
/// from the writes (a mixed sweep is about write rate and latency under queries); a point
/// that left no figures is a row too, marked, so no table or fit passes over it.
fn sweep_row(point: &Point, plan: &Plan, measure: Measure, executed: &run::Executed) -> SweepRow {
    let query_row = measure != Measure::Writes;
    let verdict = executed.verdict();
    let server_cpu_s = executed
        .report
        .as_ref()
        .and_then(|r| Some(r.server.as_ref()?.cpu_s));
    if let Some(q) = executed.query_summary().filter(|_| query_row) {
        // A read run's row: requests (transactions), statements and rows read.
        let rates = if measure == Measure::Transactions {
            Rates::Transactions {
                transactions_per_s: q.requests_per_s,
                statements_per_s: q.statements_per_s,
                rows_read_per_s: q.rows_per_s,
            }
        } else {
            Rates::Queries {
                requests_per_s: q.requests_per_s,
                statements_per_s: q.statements_per_s,
                rows_read_per_s: q.rows_per_s,
            }
        };
        return SweepRow {
            point: point.clone(),
            rtt: rtt_of(executed),
            rates,
            latency_mean_ms: q.latency.mean_ms,
            latency_p50_ms: q.latency.p50_ms,
            latency_p99_ms: q.latency.p99_ms,
            service_mean_ms: q.service.mean_ms,
            errors: q.failed_requests,
            client_cpu_s: q.client.cpu_s,
            server_cpu_s,
            bytes_per_metric: None,
            workers: plan.query.as_ref().map_or(1, |q| q.config.workers as u64),
            batch: 1,
            in_flight: 1,
            stop_reason: Some(q.stop_reason.clone()),
            verdict,
        };
    }
    let Some(s) = executed.summary().filter(|_| !query_row) else {
        return empty_row(point, measure, plan, verdict);
    };
    let requests_per_s = if s.elapsed_s > 0.0 {
        s.requests as f64 / s.elapsed_s
    } else {
        0.0
    };
    SweepRow {
        point: point.clone(),
        rtt: rtt_of(executed),
        rates: Rates::Writes {
            rows_per_s: s.rows_per_s,
            metrics_per_s: s.metrics_per_s,
            requests_per_s,
        },
        latency_mean_ms: s.latency.mean_ms,
        latency_p50_ms: s.latency.p50_ms,
        latency_p99_ms: s.latency.p99_ms,
        service_mean_ms: s.service.mean_ms,
        errors: s.failed_requests,
        client_cpu_s: s.client.cpu_s,
        server_cpu_s,
        bytes_per_metric: executed
            .report
            .as_ref()
            .and_then(RunReport::bytes_per_metric),
        workers: plan.load.workers as u64,
        batch: plan.load.batch as u64,
        in_flight: plan.load.in_flight as u64,
        stop_reason: Some(s.stop_reason.clone()),
        verdict,
    }
}

/// sweep.html: every point's report, the figures against the swept keys (and the fit),
/// and the sweep's table from the sweep.json just written.
fn write_page(
    sweep: &Sweep,
    pages: &[tsload_report_html::ReportInput],
    svg: Option<String>,
) -> anyhow::Result<()> {
    let figures: Vec<tsload_report_html::Figure> = svg
        .into_iter()
        .map(|svg| tsload_report_html::Figure {
            title: "each point against the swept keys (and the fit)".into(),
            svg,
        })
        .collect();
    let sweep_json = std::fs::read(sweep.out_dir.join("sweep.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let title = format!("tsload sweep: {}", sweep.base.name);
    let page = tsload_report_html::Page {
        title: Some(&title),
        reports: pages,
        figures: &figures,
        sweep: sweep_json.as_ref(),
        ..tsload_report_html::Page::default()
    };
    crate::html::write_built(&sweep.out_dir.join("sweep.html"), &page)
}

/// The row of a point whose run left no figures (it was refused or failed to start):
/// zeros, and its verdict.
fn empty_row(point: &Point, measure: Measure, plan: &Plan, verdict: Verdict) -> SweepRow {
    let rates = match measure {
        Measure::Writes => Rates::Writes {
            rows_per_s: 0.0,
            metrics_per_s: 0.0,
            requests_per_s: 0.0,
        },
        Measure::Queries => Rates::Queries {
            requests_per_s: 0.0,
            statements_per_s: 0.0,
            rows_read_per_s: 0.0,
        },
        Measure::Transactions => Rates::Transactions {
            transactions_per_s: 0.0,
            statements_per_s: 0.0,
            rows_read_per_s: 0.0,
        },
    };
    SweepRow {
        point: point.clone(),
        rtt: None,
        rates,
        latency_mean_ms: 0.0,
        latency_p50_ms: 0.0,
        latency_p99_ms: 0.0,
        service_mean_ms: 0.0,
        errors: 0,
        client_cpu_s: 0.0,
        server_cpu_s: None,
        bytes_per_metric: None,
        workers: plan.load.workers as u64,
        batch: plan.load.batch as u64,
        in_flight: plan.load.in_flight as u64,
        stop_reason: None,
        verdict,
    }
}

/// The grid of a plan's `[sweep]` (a usage error when it has none or a bad list).
pub fn grid_of(base: &Plan) -> Result<Grid, String> {
    if base.sweep.is_empty() {
        return Err(format!(
            "{}: the scenario has no [sweep] table; add lists such as delay = [\"0ms\", \"1ms\"] or workers = [1, 16]",
            base.source
        ));
    }
    Grid::new(base.sweep.iter().map(|a| {
        (
            a.key.clone(),
            a.values.iter().map(to_sweep_value).collect::<Vec<_>>(),
        )
    }))
    .map_err(|e| format!("{}: [sweep]: {e}", base.source))
}

/// Each point's plan: the scenario with the point's values (and, when running, its
/// report paths and progress mode) applied as `--set` overrides, checked like the file.
pub fn resolve_points(
    scenario_path: Option<&Path>,
    sets: &[String],
    base: &Plan,
    points: &[tsload_sweep::Point],
    outputs: Option<(&Path, &str)>,
) -> Result<Vec<Plan>, String> {
    let mut plans = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        let mut sets = sets.to_vec();
        for ((_, value), axis) in point.values().iter().zip(&base.sweep) {
            sets.push(format!("{}={}", axis.full_key, sweep_value_toml(value)));
        }
        if let Some((out_dir, progress)) = outputs {
            let report = out_dir.join("points").join(format!("{:03}.json", i + 1));
            sets.push(format!(
                "output.json={}",
                toml::Value::String(report.display().to_string())
            ));
            if base.output.hlog.is_some() {
                let hlog = out_dir.join("points").join(format!("{:03}.hlog", i + 1));
                sets.push(format!(
                    "output.hlog={}",
                    toml::Value::String(hlog.display().to_string())
                ));
            }
            sets.push(format!("output.progress=\"{progress}\""));
        }
        let plan = scenario::load(scenario_path, &sets)
            .map_err(|e| format!("sweep point {} ({}): {e}", i + 1, point.label()))?;
        if plan.query.is_some() {
            crate::queries::build(&plan)
                .map_err(|e| format!("sweep point {} ({}): {e}", i + 1, point.label()))?;
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// Writes sweep.csv, sweep.json and sweep.svg; returns the plot (none for an empty table or
/// one without a plot).
fn write_outputs(
    table: &SweepTable,
    dir: &Path,
    source: TRequestSource,
    name: &str,
    print_fits: bool,
) -> anyhow::Result<Option<String>> {
    let create = |f: &str| {
        let p = dir.join(f);
        crate::out::create_text(&p).with_context(|| format!("cannot create {}", p.display()))
    };
    table.write_csv(create("sweep.csv")?)?;
    let fits = table.fit_groups(RTT_KEYS, source);
    if print_fits {
        for f in &fits {
            outln!("{f}");
        }
    }
    table.write_json(&fits, create("sweep.json")?)?;
    if table.rows.is_empty() {
        return Ok(None);
    }
    let kind = choose_plot(&table.axes, RTT_KEYS);
    let options = PlotOptions {
        title: Some(format!(
            "tsload sweep: {name} ({})",
            tsload_sweep::Throughput::default_for(&kind, table.measure).unit()
        )),
        rtt_keys: RTT_KEYS.iter().map(|k| k.to_string()).collect(),
        t_request_source: source,
        ..PlotOptions::default()
    };
    match tsload_sweep::render_svg(table, &kind, &options) {
        Ok(svg) => {
            crate::out::write_text(&dir.join("sweep.svg"), &svg)
                .with_context(|| format!("cannot write {}/sweep.svg", dir.display()))?;
            Ok(Some(svg))
        }
        Err(e) => {
            if print_fits {
                errln!("note: no plot: {e}");
            }
            Ok(None)
        }
    }
}

/// What a point's run measures, which names the sweep's rate columns: a query run's
/// requests (transactions for sysbench's `oltp_read_write` and `oltp_read_only`, unless
/// `skip_trx`), statements and rows read; a write or mixed run's rows, metrics and
/// requests (a mixed sweep is about the writes under queries).
fn measure_of(plan: &Plan) -> Measure {
    match (&plan.query, plan.mode) {
        (Some(q), RunMode::Query) => match &q.workload {
            QueryWorkloadPlan::Oltp { config, .. }
                if matches!(
                    config.kind,
                    tsload_oltp::OltpKind::ReadWrite | tsload_oltp::OltpKind::ReadOnly
                ) && !config.skip_trx =>
            {
                Measure::Transactions
            }
            _ => Measure::Queries,
        },
        _ => Measure::Writes,
    }
}

/// What the whole sweep measures: its points' [`measure_of`], requests when some points'
/// requests are transactions and others' are not; writes and queries do not mix.
fn measure_of_sweep(plans: &[Plan]) -> Result<Measure, String> {
    let mut measures = plans.iter().map(measure_of);
    let first = measures.next().unwrap_or_default();
    measures.try_fold(first, |m, next| match (m, next) {
        (a, b) if a == b => Ok(a),
        (Measure::Writes, _) | (_, Measure::Writes) => Err(
            "some points are query runs and others write runs; a sweep's table measures one \
             or the other (sweep them separately)"
                .to_string(),
        ),
        _ => Ok(Measure::Queries),
    })
}
