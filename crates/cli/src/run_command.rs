//! `tsload run`: the run's flags over the scenario (shorthands as `--set`s, outputs,
//! shard, thresholds, progress), the runs (`--repeat`), and the baselines they are saved
//! as or compared with.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tsload_report::RunReport;
use tsload_report::baseline;
use tsload_report::threshold::Threshold;
use tsload_scenario::plan::{self, Plan, ProgressMode};
use tsload_scenario::{self as scenario, workloads};

use crate::args::ScenarioArgs;
use crate::exit::{EXIT_THRESHOLD, EXIT_USAGE};
use crate::{confirm, run};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Shorthand for `--set load.workers=N`.
    #[arg(short = 'w', long, value_name = "N")]
    workers: Option<u64>,
    /// Shorthand for `--set load.batch=N` (rows per request).
    #[arg(short = 'b', long, value_name = "N")]
    batch: Option<u64>,
    /// Shorthand for `--set load.rate=R` (rows/s: open loop).
    #[arg(short = 'r', long, value_name = "ROWS_PER_S")]
    rate: Option<f64>,
    /// Shorthand for `--set load.duration=D`, e.g. `30s`.
    #[arg(short = 'd', long, value_name = "DURATION")]
    duration: Option<String>,
    /// Shorthand for `--set load.grace=G` (default 5s): how long requests in flight after
    /// Ctrl-C or SIGTERM may take before they are abandoned and counted as unknown; the
    /// report is written either way (`load.drain`, 30s, is the same after the duration).
    #[arg(long, value_name = "DURATION")]
    grace: Option<String>,
    /// Shorthand for `--set load.rows=N` (stop after N rows).
    #[arg(short = 'n', long, value_name = "N")]
    rows: Option<u64>,
    /// The target's URL, its kind taken from the scheme: http(s):// -> influx,
    /// postgres:// -> postgres, mysql:// or mariadb:// -> mysql, ws(s):// -> tdengine,
    /// sqlite: -> sqlite; `null` for the null target. KIND+URL picks another kind of the
    /// scheme: prometheus+http://h:9090/api/v1/write, clickhouse+http://h:8123.
    #[arg(long, value_name = "URL")]
    target: Option<String>,
    /// Confirm `target.drop_existing = true` against a server that is not this machine
    /// (asked on a terminal otherwise).
    #[arg(long)]
    yes: bool,
    /// Write the final report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write an HdrHistogram interval log (.hlog) to FILE.
    #[arg(long, value_name = "FILE")]
    hlog: Option<PathBuf>,
    /// Exit non-zero when a threshold is broken, e.g. `p99<20ms` (repeatable).
    #[arg(long = "fail-if", value_name = "EXPR")]
    fail_if: Vec<String>,
    /// Progress display: auto, bar, plain or none.
    #[arg(long, value_name = "MODE")]
    progress: Option<String>,
    /// Write every report interval of every stream: `csv=FILE`, `ndjson=FILE`, or
    /// `influx=URL` (line protocol to a write endpoint; token from INFLUX_TOKEN); or
    /// `html=FILE`, the run's HTML report, one self-contained page written at its end
    /// (repeatable).
    #[arg(long = "out", value_name = "KIND=TARGET")]
    out: Vec<tsload_scenario::plan::OutSpec>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the run goes on.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<String>,
    #[command(flatten)]
    shard: crate::shard::ShardArgs,
    /// Run the scenario N times in a row (each a fresh run); baselines keep the spread.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: u32,
    /// Keep this run's reports (all --repeat runs) as baseline NAME in .tsload/baselines/.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare this run's figures with baseline NAME: medians, and the baseline's spread
    /// as the noise band.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// With --baseline: exit 3 when a change outside the noise band passes a limit, e.g.
    /// `rate<-5%` or `p99>+10%` (repeatable).
    #[arg(long = "regress-if", value_name = "EXPR")]
    regress_if: Vec<String>,
    /// Debugging: write every write request's corrected latency (ns) to FILE, one per
    /// line, to check the report's histograms against.
    #[arg(long, value_name = "FILE", hide = true)]
    debug_raw_latencies: Option<PathBuf>,
}

/// Creates the missing directories of the files a run writes (a fresh volume in a
/// Kubernetes pod has none), before anything connects.
fn create_output_dirs(o: &plan::OutputPlan) -> Result<(), String> {
    for (flag, path) in o.files() {
        crate::out::create_parent_dir(path)
            .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The quick flags of `run` as the `--set`s they stand for (after the user's own).
/// The `--set`s the run's shorthand flags stand for, each with the flag as the user typed
/// it (for messages: an error names `-d 5`, not a `--set` nobody wrote).
fn quick_sets(args: &RunArgs) -> Result<Vec<(String, String)>, String> {
    let mut sets = Vec::new();
    if let Some(given) = &args.target {
        let (kind, url) = tsload_kinds::REGISTRY.kind_of_url(given)?;
        let flag = format!("--target {given}");
        sets.push((format!("target.kind=\"{kind}\""), flag.clone()));
        if let Some(url) = url {
            sets.push((
                format!("target.url={}", toml_edit::Value::from(url.as_str())),
                flag,
            ));
        }
    }
    let load = [
        (
            "workers",
            "-w",
            args.workers.map(|v| (v.to_string(), v.to_string())),
        ),
        (
            "batch",
            "-b",
            args.batch.map(|v| (v.to_string(), v.to_string())),
        ),
        (
            "rate",
            "-r",
            args.rate.map(|v| (format!("{v:?}"), v.to_string())),
        ),
        (
            "duration",
            "-d",
            args.duration
                .as_ref()
                .map(|v| (toml_edit::Value::from(v.as_str()).to_string(), v.clone())),
        ),
        (
            "rows",
            "-n",
            args.rows.map(|v| (v.to_string(), v.to_string())),
        ),
        (
            "grace",
            "--grace",
            args.grace
                .as_ref()
                .map(|v| (toml_edit::Value::from(v.as_str()).to_string(), v.clone())),
        ),
    ];
    for (key, flag, value) in load {
        if let Some((v, typed)) = value {
            sets.push((format!("load.{key}={v}"), format!("{flag} {typed}")));
        }
    }
    Ok(sets)
}

/// `message` with each shorthand's `--set` named as the flag the user typed.
fn name_flags(message: &str, quick: &[(String, String)]) -> String {
    let mut m = message.to_string();
    for (set, flag) in quick {
        let shown = tsload_scenario::plan::shown_set(set);
        if m.contains(&format!("--set {shown}")) {
            m = m.replace(&format!("--set {shown}"), flag);
            m = m.replacen(
                "--set: ",
                &format!("{}: ", flag.split(' ').next().unwrap_or(flag)),
                1,
            );
        }
    }
    m
}

pub fn cmd_run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    let baselines = match baseline_args(&args) {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let plan = match plan_of_run(&mut args) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if !plan.sweep.is_empty() {
        errln!(
            "note: the scenario's [sweep] is not used by `tsload run`, which runs its base point; `tsload sweep` runs the grid"
        );
    }
    let mut reports = Vec::new();
    for round in 1..=args.repeat {
        if args.repeat > 1 {
            errln!("run {round} of {}", args.repeat);
        }
        // Built afresh for each run: a file replay's shared reader is used up by one, and
        // live time starts at each run's own clock.
        let this = plan.at_now();
        let workload = match workloads::build(&this) {
            Ok(w) => w,
            Err(e) => {
                errln!("error: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
        let executed = run::execute(&this, workload)?;
        if executed.code != 0 {
            if args.repeat > 1 || baselines.is_some() {
                errln!("run {round} did not succeed: no baseline saved or compared");
            }
            return Ok(ExitCode::from(executed.code));
        }
        // A run that passed has its report: every stream that ran reported.
        reports.extend(executed.report);
    }
    match baselines {
        None => Ok(ExitCode::SUCCESS),
        Some(b) => finish_baselines(&b, &plan, &reports, args.save_baseline.as_deref()),
    }
}

/// The plan `tsload run` runs: the scenario with the run's shorthand flags as `--set`s,
/// its outputs, shard, thresholds and progress from the command line, checked before
/// anything runs (the drop on another host confirmed). `Err`: a usage error.
fn plan_of_run(args: &mut RunArgs) -> Result<Plan, String> {
    let quick = quick_sets(args)?;
    args.scenario
        .set
        .extend(quick.iter().map(|(set, _)| set.clone()));
    let mut plan = scenario::load(args.scenario.scenario.as_deref(), &args.scenario.set)
        .map_err(|e| name_flags(&e.to_string(), &quick))?;
    if let Some(p) = args.json.take() {
        plan.output.json = Some(p);
    }
    if let Some(p) = args.hlog.take() {
        plan.output.hlog = Some(p);
    }
    plan.output.out = std::mem::take(&mut args.out);
    plan.output.metrics_addr = args.metrics_addr.take();
    plan.output.raw_latencies = args.debug_raw_latencies.take();
    plan.output
        .check_distinct_files()
        .and_then(|()| create_output_dirs(&plan.output))?;
    plan.output.shard = args
        .shard
        .resolve(&|name| std::env::var(name).ok())
        .and_then(|run| tsload_scenario::shard::check(&plan, &run).map(|()| run))?;
    confirm::confirm_drop(&plan, args.yes)?;
    let streams = plan.streams();
    for t in &args.fail_if {
        let threshold = Threshold::parse(t)
            .map_err(|e| e.to_string())
            .and_then(|t| t.check_measured(&streams).map(|()| t))
            .map_err(|e| format!("--fail-if: {e}"))?;
        plan.output.fail_if.push(threshold);
    }
    if let Some(mode) = &args.progress {
        plan.output.progress = match mode.as_str() {
            "auto" => ProgressMode::Auto,
            "bar" => ProgressMode::Bar,
            "plain" => ProgressMode::Plain,
            "none" => ProgressMode::None,
            other => {
                return Err(format!(
                    "--progress: \"{other}\" is not allowed; allowed: auto, bar, plain, none"
                ));
            }
        };
    }
    Ok(plan)
}

/// After the runs: compares them with the baseline asked for (regressions exit 3, the
/// comparison goes into the last run's JSON report) and saves them as a baseline.
fn finish_baselines(
    b: &Baselines,
    plan: &Plan,
    reports: &[RunReport],
    save_as: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    if let Some(base) = &b.compare_with {
        let c = baseline::compare(
            b.compare_name.as_deref().unwrap_or(""),
            base,
            reports,
            &b.limits,
        );
        out!("{}", c.render_text());
        for r in &c.regressions {
            errln!("REGRESSION: {r}");
        }
        if !c.regressions.is_empty() {
            code = ExitCode::from(EXIT_THRESHOLD);
        }
        if let Some(path) = &plan.output.json
            && let Some(last) = reports.last()
        {
            let mut last = last.clone();
            last.baseline = Some(c);
            crate::out::write_text(
                path,
                &(serde_json::to_string_pretty(&last.to_json()?)? + "\n"),
            )?;
        }
    }
    if let Some(name) = save_as {
        match baseline::save(name, reports) {
            Ok(path) => errln!(
                "baseline '{name}' saved: {} run(s) in {}",
                reports.len(),
                path.display()
            ),
            Err(e) => {
                errln!("error: --save-baseline: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(code)
}

/// What `--baseline`, `--save-baseline` and `--regress-if` ask for, checked (and the
/// baseline read) before anything runs.
struct Baselines {
    compare_name: Option<String>,
    compare_with: Option<Vec<RunReport>>,
    limits: Vec<baseline::RegressIf>,
}

fn baseline_args(args: &RunArgs) -> Result<Option<Baselines>, String> {
    if args.repeat == 0 || args.repeat > 1000 {
        return Err(format!("--repeat {}: expected 1 to 1000 runs", args.repeat));
    }
    if !args.regress_if.is_empty() && args.baseline.is_none() {
        return Err("--regress-if needs --baseline NAME (what to compare with)".into());
    }
    if args.baseline.is_none() && args.save_baseline.is_none() {
        return Ok(None);
    }
    if let Some(name) = &args.save_baseline {
        baseline::path_of(name)?;
    }
    let limits = args
        .regress_if
        .iter()
        .map(|t| baseline::RegressIf::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let compare_with = args.baseline.as_deref().map(baseline::load).transpose()?;
    Ok(Some(Baselines {
        compare_name: args.baseline.clone(),
        compare_with,
        limits,
    }))
}
