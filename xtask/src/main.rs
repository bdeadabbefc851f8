//! `cargo xtask`: the project's own tasks. `test` installs what the tests need and runs
//! every check CI runs; `bench` runs the criterion benchmarks and the end-to-end figures.

use std::process::Command;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: cargo xtask <test|bench|fmt>
  test    install what the tests need, then fmt check, clippy, and every test
  bench   criterion benchmarks of the hot path, then tsload's own end-to-end figures
  fmt     format the workspace";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("fmt") => run("cargo", &["fmt", "--all"]),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    eprintln!("$ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("cannot start {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed with {status}", args.join(" "));
    }
    Ok(())
}

/// Debian packages the tests need, as (package, a binary it installs). The foundation needs
/// none (SQLite is compiled in); server-backed targets add theirs here.
const DEBIAN_PACKAGES: &[(&str, &str)] = &[];

fn ensure_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .filter(|(_, bin)| which(bin).is_none())
        .map(|(pkg, _)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!(
        "installing Debian packages the tests need: {}",
        missing.join(" ")
    );
    run("apt-get", &["update", "-q"])?;
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(&missing);
    run("apt-get", &args)
        .context("installing test dependencies (needs root and Debian's package mirror)")
}

fn which(bin: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

fn test(extra: &[String]) -> anyhow::Result<()> {
    ensure_packages()?;
    run("cargo", &["fmt", "--all", "--", "--check"])?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    let mut args = vec!["test", "--workspace", "--all-targets"];
    args.extend(extra.iter().map(String::as_str));
    run("cargo", &args)?;
    // Doc tests are not part of --all-targets.
    run("cargo", &["test", "--workspace", "--doc"])
}

fn bench(extra: &[String]) -> anyhow::Result<()> {
    let mut args = vec!["bench", "-p", "tsload-benches"];
    args.extend(extra.iter().map(String::as_str));
    run("cargo", &args)
}
