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
mod run_command;
mod shard;
mod sweep;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::args::ScenarioArgs;
use crate::exit::{EXIT_INTERRUPTED, EXIT_USAGE};
use tsload_scenario::plan::Plan;
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
    Run(Box<run_command::RunArgs>),
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
        Command::Run(args) => run_command::cmd_run(*args),
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
