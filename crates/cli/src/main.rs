//! The `tsload` binary: reads a scenario, builds the workload and the target, drives the
//! engine, shows progress and prints (and writes) the final report.

#[macro_use]
mod out;

mod args;
mod compare;
mod confirm;
mod exit;
mod generate;
mod html;
mod merge;
mod netem;
mod network;
mod progress;
mod queries;
mod run;
mod shard;
mod sweep;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tsload_report::threshold::Threshold;

use crate::args::ScenarioArgs;
use crate::exit::{EXIT_INTERRUPTED, EXIT_THRESHOLD, EXIT_USAGE};
use tsload_report::baseline;
use tsload_scenario::plan::{self, Plan, ProgressMode};
use tsload_scenario::{self as scenario, import, workloads};

/// `tsload --version`: the package version and the git commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TSLOAD_COMMIT"), ")");

#[derive(Parser)]
#[command(
    name = "tsload",
    version = VERSION,
    about = "Load generator for time-series and SQL databases"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (the built-in quickstart when no file is given).
    Run(Box<RunArgs>),
    /// Check a scenario and print the resolved plan.
    Validate(ScenarioArgs),
    /// Write a scenario's data set as TSBS-compatible line protocol.
    Generate(GenerateArgs),
    /// Network impairment with tc qdiscs over rtnetlink: apply, show, clear, restore.
    #[command(subcommand)]
    Netem(netem::NetemCommand),
    /// Run a scenario once per point of its [sweep] grid; write a table, CSV, JSON, a fit
    /// and an SVG plot.
    Sweep(sweep::SweepArgs),
    /// The user-space delay proxy: forwards TCP from --listen to --upstream, adding delay.
    Proxy(tools::ProxyArgs),
    /// Measure RTT: ICMP echo, TCP connect, or the server's own ping.
    #[command(subcommand)]
    Probe(tools::ProbeCommand),
    /// Print a shell completion script: `tsload completions bash > /etc/bash_completion.d/tsload`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `tsload man > tsload.1; man ./tsload.1`.
    Man,
    /// Print every scenario key with its type, default and meaning (docs/keys.md).
    Keys {
        /// Only this section: top, workload, target, load, output, network, monitor,
        /// query or sweep.
        section: Option<String>,
    },
    /// The same write load into several targets, one after the other: a side-by-side
    /// table (text, CSV, JSON) and SVG bar charts.
    Compare(compare::CompareArgs),
    /// Merge the --json reports (and .hlog logs) of the shards of one run (`run --shard`)
    /// into one report: counts summed, histograms merged exactly.
    Merge(merge::MergeArgs),
    /// Build the HTML report (one self-contained page) from saved `--json` run reports;
    /// several are shown side by side.
    Report(html::ReportArgs),
    /// Turn a taosBenchmark insert JSON file into the equivalent tsload scenario.
    ImportTaosbenchmark {
        /// taosBenchmark's JSON file (`filetype: insert`).
        file: PathBuf,
        /// Write the scenario here (standard output when omitted).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Args)]
struct RunArgs {
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
    shard: shard::ShardArgs,
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

#[derive(Args)]
struct GenerateArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Output format (only `influx`, TSBS's line protocol, so far).
    #[arg(long, value_enum, default_value_t = generate::Format::Influx)]
    format: generate::Format,
    /// Output file; gzip-compressed when it ends in `.gz`. Standard output when omitted.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Hands the scenario library this build's target kinds (`main` does it first; a test that
/// reads a scenario does it itself).
fn install_kinds() {
    tsload_scenario::install_kinds(&tsload_kinds::REGISTRY);
}

fn main() -> ExitCode {
    // Every TLS configuration tsload builds names ring; a library that builds its own
    // without naming a provider gets the same.
    tsload_tls::install_default_provider();
    install_kinds();
    // Secrets the drivers read from the environment are hidden in every output.
    tsload_redact::register_env();
    // So are the passwords and secret query values of every URL on the command line
    // (`--out influx=http://u:PW@host/write?p=Q`), before anything can quote them: clap's
    // own errors included, which are printed through the same redaction.
    for arg in std::env::args_os().skip(1) {
        if let Some(arg) = arg.to_str() {
            tsload_redact::register_url(arg);
        }
    }
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            if e.use_stderr() {
                err!("{text}");
            } else {
                out::stdout_text(&text);
            }
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let result = match cli.command {
        Command::Run(args) => cmd_run(*args),
        Command::Validate(args) => cmd_validate(args),
        Command::Netem(command) => netem::cmd_netem(command),
        Command::Proxy(args) => tools::cmd_proxy(args),
        Command::Sweep(args) => sweep::cmd_sweep(args),
        Command::Probe(command) => tools::cmd_probe(command),
        Command::Completions { shell } => cmd_completions(shell),
        Command::Merge(args) => merge::cmd_merge(args),
        Command::Compare(args) => compare::cmd_compare(args),
        Command::Report(args) => html::cmd_report(args),
        Command::Man => cmd_man(),
        Command::Keys { section } => cmd_keys(section.as_deref()),
        Command::ImportTaosbenchmark { file, output } => {
            cmd_import_taosbenchmark(&file, output.as_deref())
        }
        Command::Generate(args) => generate::cmd_generate(
            args.scenario.scenario.as_deref(),
            &args.scenario.set,
            args.format,
            args.output.as_deref(),
        ),
    };
    match result {
        // Stopped by a signal: 128 + that signal's number (130 after Ctrl-C, 143 after
        // SIGTERM); the report has printed either way.
        Ok(code) if code == ExitCode::from(EXIT_INTERRUPTED) => {
            ExitCode::from(run::interrupted_exit_code())
        }
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Prints a panic's text (a driver's, which may quote its connection string) through the
/// redaction, like every other output.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| errln!("{}", panic_text(info))));
}

/// What a panic says: where, and its message.
fn panic_text(info: &std::panic::PanicHookInfo<'_>) -> String {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("<unnamed>");
    match info.location() {
        Some(at) => format!("thread '{name}' panicked at {at}:\n{message}"),
        None => format!("thread '{name}' panicked:\n{message}"),
    }
}

fn cmd_completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "tsload", &mut text);
    print_bytes(&text)
}

fn cmd_import_taosbenchmark(
    file: &std::path::Path,
    output: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let shown = file.display();
    // taosBenchmark's files are a few KiB: read no more than this of one.
    const MAX_IMPORT_BYTES: u64 = 16 * 1024 * 1024;
    let read = std::fs::File::open(file).and_then(|f| {
        use std::io::Read as _;
        let mut text = String::new();
        f.take(MAX_IMPORT_BYTES + 1).read_to_string(&mut text)?;
        Ok(text)
    });
    let json = match read {
        Ok(j) if j.len() as u64 > MAX_IMPORT_BYTES => {
            errln!(
                "error: {shown}: larger than {MAX_IMPORT_BYTES} bytes, the most a taosBenchmark file is read (they are a few KiB)"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        Ok(j) => j,
        Err(e) => {
            errln!("error: {shown}: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let imported = match import::taosbenchmark(&json) {
        Ok(i) => i,
        Err(e) => {
            errln!("error: {shown}: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    // The scenario must be one tsload accepts; a failure here is tsload's bug or a value
    // out of tsload's range, named by the scenario check.
    // (Without the password reference: its variable need not be set yet.)
    let mut check: toml_edit::DocumentMut = imported.scenario.parse()?;
    if let Some(t) = check.get_mut("target").and_then(|t| t.as_table_mut()) {
        t.remove("password");
    }
    if let Err(e) = scenario::parse(&format!("{shown} (imported)"), &check.to_string(), &[]) {
        errln!("error: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    for note in &imported.notes {
        errln!("note: {note}");
    }
    match output {
        Some(path) => crate::out::write_text(path, &imported.scenario)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        None => print_bytes(imported.scenario.as_bytes()).map(drop)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One man page for the whole tool: every subcommand (`tsload netem apply` too) in a
/// section of its own with its synopsis and options (there are no `tsload-run(1)` pages
/// to refer to).
fn cmd_man() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut text = Vec::new();
    man.render_title(&mut text)?;
    man.render_name_section(&mut text)?;
    man.render_synopsis_section(&mut text)?;
    man.render_description_section(&mut text)?;
    for sub in cmd.get_subcommands() {
        man_section(&mut text, "tsload", sub)?;
    }
    man.render_version_section(&mut text)?;
    print_bytes(&text)
}

/// `sub`'s section of the man page: its name, what it does, its synopsis and options;
/// then its own subcommands' sections.
fn man_section(out: &mut Vec<u8>, parent: &str, sub: &clap::Command) -> std::io::Result<()> {
    use std::io::Write as _;
    if sub.get_name() == "help" {
        return Ok(());
    }
    let full = format!("{parent} {}", sub.get_name());
    writeln!(out, ".SH \"{}\"", full.to_uppercase())?;
    if let Some(about) = sub.get_long_about().or(sub.get_about()) {
        writeln!(out, "{}", about.to_string().replace('\\', "\\\\"))?;
    }
    let named = sub.clone().bin_name(full.clone());
    let man = clap_mangen::Man::new(named);
    let mut body = Vec::new();
    man.render_synopsis_section(&mut body)?;
    if sub.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut body)?;
    }
    let body = String::from_utf8_lossy(&body)
        .replace(".SH SYNOPSIS", ".SS Synopsis")
        .replace(".SH OPTIONS", ".SS Options");
    out.write_all(body.as_bytes())?;
    for nested in sub.get_subcommands() {
        man_section(out, &full, nested)?;
    }
    Ok(())
}

fn cmd_keys(section: Option<&str>) -> anyhow::Result<ExitCode> {
    let text = match section {
        None => scenario::keys_markdown(),
        Some(name) => match scenario::section_reference(name) {
            Some(text) => text,
            None => {
                errln!(
                    "error: no section `{name}`; allowed: {}",
                    scenario::SECTION_NAMES.join(", ")
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        },
    };
    print_bytes(text.as_bytes())
}

/// Writes to standard output; a reader that went away (`| head`) is not an error.
fn print_bytes(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Loads and validates a scenario, printing the error and giving the usage exit code.
fn load_plan(args: &ScenarioArgs) -> Result<Plan, ExitCode> {
    scenario::load(args.scenario.as_deref(), &args.set).map_err(|e| {
        errln!("error: {e}");
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
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if plan.query.is_some()
        && let Err(e) = queries::build(&plan)
    {
        errln!("error: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let mut v = plan.to_json();
    v["data_set"] = workloads::describe(workload.as_ref());
    if !plan.sweep.is_empty() {
        // Every point of the grid is checked, as `tsload sweep` does before it runs.
        let points = match sweep::grid_of(&plan) {
            Ok(grid) => grid.points(),
            Err(e) => {
                errln!("error: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
        if let Err(e) =
            sweep::resolve_points(args.scenario.as_deref(), &args.set, &plan, &points, None)
        {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        v["sweep_points"] = points.len().into();
    }
    outln!("{}", serde_json::to_string_pretty(&v)?);
    // One line for a person (standard error, so the JSON above stays pipeable).
    let rows = workload.total_rows().map_or_else(
        || "an unknown number of".to_string(),
        tsload_report::report::group,
    );
    let load = match plan.load.mode {
        tsload_core::engine::LoadMode::Closed => "closed loop".to_string(),
        tsload_core::engine::LoadMode::Open { rate } => format!("open loop at {rate} rows/s"),
    };
    let queries = plan
        .query
        .as_ref()
        .map(|q| {
            format!(
                "; queries: {} with {}",
                q.workload.kind(),
                counted(q.config.workers as u64, "worker")
            )
        })
        .unwrap_or_default();
    let sweep = v["sweep_points"]
        .as_u64()
        .map(|n| format!(", {n} sweep points"))
        .unwrap_or_default();
    errln!(
        "ok: {}: {} mode, {} ({} rows) into {}, {} x batch {}, {load}{queries}{sweep}",
        plan.source,
        plan.mode.as_str(),
        plan.workload.kind(),
        rows,
        plan.target.kind(),
        counted(plan.load.workers as u64, "worker"),
        plan.load.batch,
    );
    Ok(ExitCode::SUCCESS)
}

/// `1 worker`, `4 workers`.
fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Creates the missing directories of the files a run writes (a fresh volume in a
/// Kubernetes pod has none), before anything connects.
fn create_output_dirs(o: &plan::OutputPlan) -> Result<(), String> {
    for (flag, path) in o.files() {
        out::create_parent_dir(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
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

fn cmd_run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    let baselines = match baseline_args(&args) {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let quick = match quick_sets(&args) {
        Ok(sets) => sets,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    args.scenario
        .set
        .extend(quick.iter().map(|(set, _)| set.clone()));
    let mut plan = match scenario::load(args.scenario.scenario.as_deref(), &args.scenario.set) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {}", name_flags(&e.to_string(), &quick));
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if let Some(p) = args.json {
        plan.output.json = Some(p);
    }
    if let Some(p) = args.hlog {
        plan.output.hlog = Some(p);
    }
    plan.output.out = args.out;
    plan.output.metrics_addr = args.metrics_addr;
    plan.output.raw_latencies = args.debug_raw_latencies;
    if let Err(e) = plan
        .output
        .check_distinct_files()
        .and_then(|()| create_output_dirs(&plan.output))
    {
        errln!("error: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let shard = args
        .shard
        .resolve(&|name| std::env::var(name).ok())
        .and_then(|run| tsload_scenario::shard::check(&plan, &run).map(|()| run));
    match shard {
        Ok(run) => plan.output.shard = run,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    }
    if let Err(e) = confirm::confirm_drop(&plan, args.yes) {
        errln!("error: {e}");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let streams = plan.streams();
    for t in &args.fail_if {
        match Threshold::parse(t)
            .map_err(|e| e.to_string())
            .and_then(|t| t.check_measured(&streams).map(|()| t))
        {
            Ok(t) => plan.output.fail_if.push(t),
            Err(e) => {
                errln!("error: --fail-if: {e}");
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
                errln!(
                    "error: --progress: \"{other}\" is not allowed; allowed: auto, bar, plain, none"
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
    }
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
        reports.push(executed.report);
    }
    let Some(b) = baselines else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut code = ExitCode::SUCCESS;
    if let Some(base) = &b.compare_with {
        let c = baseline::compare(
            b.compare_name.as_deref().unwrap_or(""),
            base,
            &reports,
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
            last["baseline"] = serde_json::to_value(&c)?;
            crate::out::write_text(path, &(serde_json::to_string_pretty(&last)? + "\n"))?;
        }
    }
    if let Some(name) = &args.save_baseline {
        match baseline::save(name, &reports) {
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
    compare_with: Option<Vec<serde_json::Value>>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The lean build (`--no-default-features`) registers no TDengine: choosing it is refused
    /// when the scenario is read, naming the feature.
    #[test]
    fn tdengine_is_refused_at_validation_by_a_build_without_it() {
        install_kinds();
        let parsed = scenario::parse("s.toml", "[target]\nkind = \"tdengine\"\n", &[]);
        if cfg!(feature = "tdengine") {
            assert!(parsed.is_ok(), "{parsed:?}");
        } else {
            let e = parsed.unwrap_err();
            assert_eq!(
                (e.line, e.key.as_deref()),
                (Some(2), Some("target.kind")),
                "{e}"
            );
            assert!(e.message.contains("feature `tdengine`"), "{e}");
        }
    }

    /// Run by [`a_panic_prints_no_secret`] in a child process: panics with a registered
    /// secret in its message under tsload's hook.
    #[test]
    #[ignore = "run by a_panic_prints_no_secret in its own process"]
    fn panic_with_a_secret() {
        install_panic_hook();
        tsload_redact::register("KNRYpanicPw");
        let dsn = "ws://root:KNRYpanicUrl@127.0.0.1:6041";
        panic!("driver failed on {dsn} with password KNRYpanicPw");
    }

    /// A panic (the TDengine driver's, caught and survived) is printed through the
    /// redaction: the default hook printed the message raw.
    #[test]
    fn a_panic_prints_no_secret() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "tests::panic_with_a_secret",
                "--nocapture",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "the child must panic: {stdout}");
        assert!(stderr.contains("panicked at"), "no panic text: {stderr}");
        assert!(
            stderr.contains("driver failed on ws://root:***@"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("KNRY") && !stdout.contains("KNRY"),
            "{stderr}\n{stdout}"
        );
    }
}
