//! The testbed's temp dirs: each is marked with the process that made it, and the dirs of
//! processes that died without dropping their servers are removed by the next one.
//!
//! A server's dir is removed when the `Server` drops. It is left behind when the test
//! process dies first: killed by a test timeout (`cargo xtask test --timeout`), aborted,
//! or holding the server in a `static` (never dropped). A PostgreSQL or MariaDB data dir
//! is 40-150 MB, and CI machines share their disk, so these add up over repeated rounds.
//! The first dir a process makes sweeps the temp dir once: a `tsload-testbed-*` dir whose
//! owner file names a process that is gone (its pid and its start time, so that a reused
//! pid does not count as the owner) is removed. A pid means something only in one pid
//! namespace during one boot, so the owner file names those too, and a dir made in another
//! (a container sharing /tmp) is left alone; so is a dir whose owner cannot be read (no
//! owner file yet, or /proc hiding other users' processes). Dirs from before owner files
//! existed are never removed: `rm -rf /tmp/tsload-testbed-*` with no test running.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// The prefix of every dir the testbed makes in the temp dir.
const PREFIX: &str = "tsload-testbed-";

/// The file in each dir naming the process that owns it: `PID START_TIME`.
const OWNER_FILE: &str = "owner";

/// Makes `<temp>/tsload-testbed-<what>-XXXXXX`, marked with this process, after removing
/// (once per process) the dirs of processes that are gone.
pub(crate) fn dir(what: &str) -> std::io::Result<tempfile::TempDir> {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| {
        sweep(&tempfile::env::temp_dir());
    });
    let dir = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{what}-"))
        .tempdir()?;
    // Best effort: without /proc (not Linux) the dir is unmarked and never swept.
    if let (Ok(owner), Some(world)) = (owner_of(std::process::id()), this_world()) {
        // Written whole under another name and renamed: a sweep never reads half of it.
        let partial = dir.path().join(format!("{OWNER_FILE}.partial"));
        std::fs::write(&partial, format!("{owner} {world}"))?;
        std::fs::rename(&partial, dir.path().join(OWNER_FILE))?;
    }
    Ok(dir)
}

/// This boot and this pid namespace, `BOOT_ID PID_NAMESPACE`: where a pid names a process.
fn this_world() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("{} {}", boot.trim(), namespace.to_string_lossy()))
}

/// Removes the testbed dirs under `temp` whose owner is gone; returns the dirs removed.
pub(crate) fn sweep(temp: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Some(world) = this_world() else {
        return removed;
    };
    let Ok(entries) = std::fs::read_dir(temp) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // Not a symlink to elsewhere: only real dirs of ours are removed.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        if owner_is_gone(&owner, &world) && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// `PID START_TIME` of process `pid`, or an error when /proc has no such process.
fn owner_of(pid: u32) -> std::io::Result<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let start = start_time(&stat).ok_or_else(|| {
        std::io::Error::other(format!("/proc/{pid}/stat has no start time: {stat:?}"))
    })?;
    Ok(format!("{pid} {start}"))
}

/// Whether the process an owner file (`PID START BOOT_ID PID_NAMESPACE`) names has
/// exited. Only an owner of this boot and pid namespace (`world`) can be judged, and only
/// a missing /proc entry or another start time means gone; anything else keeps the dir.
fn owner_is_gone(owner: &str, world: &str) -> bool {
    let mut words = owner.splitn(3, ' ');
    let (Some(pid), Some(start), Some(its_world)) = (words.next(), words.next(), words.next())
    else {
        return false;
    };
    if its_world != world {
        return false;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    match owner_of(pid) {
        Ok(now) => now.split_whitespace().nth(1) != Some(start),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Field 22 of `/proc/PID/stat` (start time in clock ticks since boot). The command name
/// (field 2) is in parentheses and may hold spaces or parentheses itself, so the fields
/// are counted from the last `)`.
fn start_time(stat: &str) -> Option<&str> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first word, so field 22 is the 20th.
    after.split_whitespace().nth(19)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_past_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10";
        assert_eq!(start_time(stat), Some("987654"));
        assert_eq!(start_time("4242 (x"), None);
    }

    #[test]
    fn dirs_of_gone_processes_are_removed_and_live_or_unmarked_ones_kept() {
        let temp = tempfile::tempdir().unwrap();
        let make = |name: &str, owner: Option<String>| {
            let d = temp.path().join(name);
            std::fs::create_dir_all(d.join("data")).unwrap();
            std::fs::write(d.join("data/file"), b"x").unwrap();
            if let Some(o) = owner {
                std::fs::write(d.join(OWNER_FILE), o).unwrap();
            }
            d
        };
        let world = this_world().unwrap();
        let me = owner_of(std::process::id()).unwrap();
        let live = make(
            "tsload-testbed-postgres-live",
            Some(format!("{me} {world}")),
        );
        // This process's pid with another start time: a reused pid, the owner is gone.
        let pid = std::process::id();
        let reused = make(
            "tsload-testbed-postgres-reused",
            Some(format!("{pid} 1 {world}")),
        );
        // A child that has exited and been reaped: its pid names no process (or another).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let child_owner = owner_of(child.id()).unwrap_or_else(|_| format!("{} 1", child.id()));
        child.wait().unwrap();
        let dead = make(
            "tsload-testbed-mariadb-dead",
            Some(format!("{child_owner} {world}")),
        );
        // The same gone owner, but of another boot or another pid namespace: not judged.
        let (boot, namespace) = world.split_once(' ').unwrap();
        let other_boot = make(
            "tsload-testbed-mariadb-other-boot",
            Some(format!("{pid} 1 0000-other-boot {namespace}")),
        );
        let other_namespace = make(
            "tsload-testbed-mariadb-other-ns",
            Some(format!("{pid} 1 {boot} pid:[1]")),
        );
        let old_format = make("tsload-testbed-mariadb-old", Some(format!("{pid} 1")));
        let unmarked = make("tsload-testbed-influxdb-unmarked", None);
        let garbled = make("tsload-testbed-ca-garbled", Some("not a pid".into()));
        let other = make("someone-elses-dir", Some(format!("{pid} 1 {world}")));

        let mut removed = sweep(temp.path());
        removed.sort();
        let mut want = vec![dead.clone(), reused.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(!dead.exists() && !reused.exists());
        for kept in [
            &live,
            &other_boot,
            &other_namespace,
            &old_format,
            &unmarked,
            &garbled,
            &other,
        ] {
            assert!(
                kept.join("data/file").exists(),
                "{} was removed",
                kept.display()
            );
        }
    }

    #[test]
    fn a_made_dir_names_this_process() {
        let dir = dir("selftest").unwrap();
        let owner = std::fs::read_to_string(dir.path().join(OWNER_FILE)).unwrap();
        let world = this_world().unwrap();
        assert_eq!(
            owner,
            format!("{} {world}", owner_of(std::process::id()).unwrap())
        );
        assert!(!owner_is_gone(&owner, &world));
        assert!(!dir.path().join("owner.partial").exists());
    }
}
