//! Build script: records the git commit the binary was built from, for `tsload --version`.
//!
//! `TSLOAD_COMMIT` in the environment wins (a build without a `.git`, such as a container
//! build, passes it in); else `git rev-parse`; else "unknown commit".
// Cargo reads a build script's directives from its standard output.
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TSLOAD_COMMIT");
    let commit = std::env::var("TSLOAD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=TSLOAD_COMMIT={}", commit.trim());
}

/// `git rev-parse ARG`, trimmed.
fn rev_parse(arg: &str) -> Option<String> {
    let out = Command::new("git").args(["rev-parse", arg]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn git_commit() -> Option<String> {
    let git_dir = rev_parse("--git-dir")?;
    let git_dir = Path::new(&git_dir);
    // A worktree has its own HEAD but shares the refs of the main checkout.
    let common = rev_parse("--git-common-dir").unwrap_or_else(|| git_dir.display().to_string());
    let common = Path::new(&common);
    // A new commit moves the branch's ref (or packed-refs); a checkout moves HEAD. Only
    // files that exist are watched: cargo reruns a script whose watched file is missing
    // on every build (a fresh clone keeps its refs in packed-refs alone).
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
    {
        watched.push(common.join(reference));
    }
    for file in watched.iter().filter(|f| f.exists()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    let hash = String::from_utf8(out.stdout).ok()?.trim().to_string();
    if !out.status.success() || hash.is_empty() {
        return None;
    }
    Some(hash)
}
