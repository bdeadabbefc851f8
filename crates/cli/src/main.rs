//! The `tsload` binary: reads a scenario, builds the workload and the target, drives the
//! engine, shows progress and prints (and writes) the final report.

mod generate;
mod netem;
mod plan;
mod progress;
mod scenario;
mod targets;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use tsload_core::engine::{StopHandle, StopReason};
use tsload_core::report::Summary;
use tsload_core::rusage::Usage;
use tsload_core::threshold::Threshold;

use crate::plan::{Plan, ProgressMode};
use crate::progress::RunObserver;

/// Exit code when the scenario or the command line is wrong.
const EXIT_USAGE: u8 = 2;
/// Exit code when a `--fail-if` threshold is broken.
const EXIT_THRESHOLD: u8 = 3;
/// Exit code after Ctrl-C (128 + SIGINT), as shells expect.
const EXIT_INTERRUPTED: u8 = 130;

#[derive(Parser)]
#[command(
    name = "tsload",
    version,
    about = "Load generator for time-series and SQL databases"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (the built-in quickstart when no file is given).
    Run(RunArgs),
    /// Check a scenario and print the resolved plan.
    Validate(ScenarioArgs),
    /// Write a scenario's data set as TSBS-compatible line protocol.
    Generate(GenerateArgs),
    /// Network impairment with tc qdiscs over rtnetlink: apply, show, clear, restore.
    #[command(subcommand)]
    Netem(netem::NetemCommand),
}

#[derive(Args)]
struct ScenarioArgs {
    /// Scenario file (TOML); the built-in quickstart when omitted.
    scenario: Option<PathBuf>,
    /// Override a scenario key, e.g. `--set load.workers=8` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
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
}

#[derive(Args)]
struct GenerateArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Output format (only `influx`, TSBS's line protocol, so far).
    #[arg(long, default_value = "influx")]
    format: String,
    /// Output file; gzip-compressed when it ends in `.gz`. Standard output when omitted.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cmd_run(args),
        Command::Validate(args) => cmd_validate(args),
        Command::Netem(command) => netem::cmd_netem(command),
        Command::Generate(args) => generate::cmd_generate(
            args.scenario.scenario.as_deref(),
            &args.scenario.set,
            &args.format,
            args.output.as_deref(),
        ),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Loads and validates a scenario, printing the error and giving the usage exit code.
fn load_plan(args: &ScenarioArgs) -> Result<Plan, ExitCode> {
    scenario::load(args.scenario.as_deref(), &args.set).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

fn cmd_validate(args: ScenarioArgs) -> anyhow::Result<ExitCode> {
    let plan = match load_plan(&args) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let workload = match workloads::build(&plan) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut v = plan.to_json();
    v["data_set"] = workloads::describe(workload.as_ref());
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(ExitCode::SUCCESS)
}

fn cmd_run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut plan = match load_plan(&args.scenario) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    if let Some(p) = args.json {
        plan.output.json = Some(p);
    }
    if let Some(p) = args.hlog {
        plan.output.hlog = Some(p);
    }
    for t in &args.fail_if {
        match Threshold::parse(t) {
            Ok(t) => plan.output.fail_if.push(t),
            Err(e) => {
                eprintln!("error: --fail-if: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if let Some(mode) = &args.progress {
        plan.output.progress = match mode.as_str() {
            "auto" => ProgressMode::Auto,
            "bar" => ProgressMode::Bar,
            "plain" => ProgressMode::Plain,
            "none" => ProgressMode::None,
            other => {
                eprintln!(
                    "error: --progress: \"{other}\" is not allowed; allowed: auto, bar, plain, none"
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
    }
    let workload = match workloads::build(&plan) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let hlog = match &plan.output.hlog {
        None => None,
        Some(p) => Some((
            p.display().to_string(),
            std::fs::File::create(p)
                .with_context(|| format!("cannot create the interval log {}", p.display()))?,
        )),
    };
    let mut observer = RunObserver::new(
        plan.output.progress,
        plan.load.rows.or(workload.total_rows()),
        hlog,
        format!("tsload {} {}", env!("CARGO_PKG_VERSION"), plan.name),
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let stop = StopHandle::new();
    let outcome = runtime.block_on(async {
        let ctrl_c_stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: no new requests; finishing the ones in flight (Ctrl-C again to abort)");
                ctrl_c_stop.stop(StopReason::Interrupted);
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(EXIT_INTERRUPTED as i32);
                }
            }
        });
        targets::run(&plan, workload.clone(), stop.clone(), &mut observer).await
    });
    observer.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let usage = Usage::now().since(&observer.usage_at_start);
    let summary = Summary::new(
        &outcome,
        &usage,
        plan.target.kind(),
        plan.workload.kind(),
        plan.to_json(),
    );
    print!("{}", summary.render_text());
    if let Some(e) = &observer.hlog_error {
        eprintln!("error: interval log incomplete: {e}");
    }
    if let Some(path) = &plan.output.json {
        let text = serde_json::to_string_pretty(&summary)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    if let Some(e) = workload.source_error() {
        eprintln!("error: the data source failed during the run, which ended early: {e}");
        return Ok(ExitCode::FAILURE);
    }
    if let Some(fatal) = &outcome.fatal {
        eprintln!("error: the run stopped on a fatal error: {fatal}");
        return Ok(ExitCode::FAILURE);
    }
    if outcome.stop_reason == StopReason::Interrupted {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let broken: Vec<String> = plan
        .output
        .fail_if
        .iter()
        .filter_map(|t| t.check(&summary).err())
        .collect();
    if !broken.is_empty() {
        for b in &broken {
            eprintln!("FAIL: {b}");
        }
        return Ok(ExitCode::from(EXIT_THRESHOLD));
    }
    if observer.hlog_error.is_some() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
