//! Plan -> Workload: builds the generator a scenario names, and describes a data set for
//! `tsload validate`. Errors point back at the scenario's key (and line, for columns).
//!
//! Before a generator is built, its state (a fixed number of bytes per device, held by the
//! workers' sources) is estimated from the settings and checked against what this machine
//! can give it: half of MemAvailable in /proc/meminfo, or of the room left under the
//! process's cgroup memory limit when that is smaller. So `workload.scale = 4294967295`
//! is refused by `tsload validate` and `run` (exit 2) rather than aborting the run when
//! its workers allocate. A sharded run counts only its own shard's devices.

use std::sync::Arc;

use serde_json::{Value, json};
use tsload_core::Workload;
use tsload_workload::{
    ColumnList, CpuOnly, Custom, Devops, FileReplay, Iot, ReplayInput, ReplayOptions,
    WorkloadError, human_bytes,
};

use crate::ScenarioError;
use crate::plan::{Plan, WorkloadPlan};

/// The most memory a generator's state may take: half of what this machine (or the
/// process's cgroup) has available, and where that figure comes from. `None` where
/// neither can be read (not Linux): nothing is refused then.
fn memory_limit() -> Option<(u64, String)> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let meminfo = read("/proc/meminfo").and_then(|t| meminfo_available(&t));
    let cgroup = cgroup_room(&read);
    let in_cgroup = |c: u64| {
        format!(
            "the {} left under this process's cgroup memory limit",
            human_bytes(c)
        )
    };
    let (bytes, what) = match (meminfo, cgroup) {
        (Some((m, _)), Some(c)) if c < m => (c, in_cgroup(c)),
        (Some((m, field)), _) => (
            m,
            format!("the {} {field} in /proc/meminfo", human_bytes(m)),
        ),
        (None, Some(c)) => (c, in_cgroup(c)),
        (None, None) => return None,
    };
    Some((bytes / 2, format!("half of {what}")))
}

/// MemAvailable (or, from kernels before 3.14, MemTotal) of /proc/meminfo, in bytes.
fn meminfo_available(text: &str) -> Option<(u64, &'static str)> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let kb = l.strip_prefix(name)?.strip_prefix(':')?.trim();
            let kb = kb.strip_suffix("kB").unwrap_or(kb).trim();
            kb.parse::<u64>().ok().map(|k| k.saturating_mul(1024))
        })
    };
    for name in ["MemAvailable", "MemTotal"] {
        if let Some(bytes) = field(name) {
            return Some((bytes, name));
        }
    }
    None
}

/// Room left under the memory limit of this process's cgroup (v2 `memory.max` less
/// `memory.current`, v1 `memory.limit_in_bytes` less `memory.usage_in_bytes`), the
/// smallest where several apply; `None` without a limit. `read` reads a whole file.
fn cgroup_room(read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    /// Limits from here up mean none (v1 writes "no limit" as about 2^63).
    const UNLIMITED: u64 = 1 << 60;
    let number = |path: &str| -> Option<u64> { read(path)?.trim().parse().ok() };
    let room = |dir: &str, limit: &str, usage: &str| -> Option<u64> {
        let limit = number(&format!("{dir}/{limit}"))?;
        let usage = number(&format!("{dir}/{usage}")).unwrap_or(0);
        (limit < UNLIMITED).then(|| limit.saturating_sub(usage))
    };
    let mut best: Option<u64> = None;
    for line in read("/proc/self/cgroup")?.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim().trim_end_matches('/');
        // A container may see its own cgroup at the mount's root rather than at `path`.
        let found = if controllers.is_empty() {
            let v2 = |dir: &str| room(dir, "memory.max", "memory.current");
            v2(&format!("/sys/fs/cgroup{path}")).or_else(|| v2("/sys/fs/cgroup"))
        } else if controllers.split(',').any(|c| c == "memory") {
            let v1 = |dir: &str| room(dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
            v1(&format!("/sys/fs/cgroup/memory{path}")).or_else(|| v1("/sys/fs/cgroup/memory"))
        } else {
            None
        };
        if let Some(r) = found {
            best = Some(best.map_or(r, |b| b.min(r)));
        }
    }
    best
}

/// Refuses a generator whose state, for the devices this process generates (its shard's
/// when sharded), does not fit under `limit` (bytes, and where the figure comes from).
fn check_state(plan: &Plan, limit: Option<(u64, String)>) -> Result<(), WorkloadError> {
    let (Some(estimate), Some((limit, source))) = (plan.workload.state_estimate(), limit) else {
        return Ok(());
    };
    if !plan.generates() {
        return Ok(());
    }
    let shard = plan.output.shard.shard;
    let mine = shard.devices(estimate.devices).len() as u32;
    let part = (!shard.is_whole()).then(|| format!("shard {shard}'s {mine}"));
    estimate.check(mine, part.as_deref(), limit, &source)
}

/// Builds the plan's workload.
pub fn build(plan: &Plan) -> Result<Arc<dyn Workload>, ScenarioError> {
    // An error about a value `--set` gave names that `--set`, not the scenario file.
    let input = |key: &str| {
        if plan.set_keys.iter().any(|k| k == key) {
            "--set".to_string()
        } else {
            plan.source.clone()
        }
    };
    let located = |e: WorkloadError| {
        if e.key == "file" {
            // The replayed file's own errors name that file and line already.
            return ScenarioError {
                file: input("workload.path"),
                line: None,
                key: Some("workload.path".into()),
                message: e.message,
            };
        }
        let line = match (&plan.workload, e.column) {
            (
                WorkloadPlan::Custom {
                    column_lines,
                    tag_lines,
                    ..
                },
                Some((list, i)),
            ) => match list {
                ColumnList::Columns => column_lines.get(i).copied(),
                ColumnList::Tags => tag_lines.get(i).copied(),
            },
            _ => None,
        };
        let key = format!("workload.{}", e.key);
        ScenarioError {
            file: input(&key),
            line: line.filter(|_| !plan.set_keys.contains(&key)),
            key: Some(key),
            message: e.message,
        }
    };
    check_state(plan, memory_limit()).map_err(located)?;
    Ok(match &plan.workload {
        WorkloadPlan::File { path, precision } => {
            let input = if path == "-" {
                ReplayInput::Stdin
            } else {
                ReplayInput::Path(path.into())
            };
            let precision_ns = match precision.as_str() {
                "us" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                _ => 1,
            };
            let opts = ReplayOptions {
                precision_ns,
                ..ReplayOptions::default()
            };
            Arc::new(FileReplay::open(input, opts).map_err(located)?)
        }
        WorkloadPlan::CpuOnly(t) => Arc::new(CpuOnly::new(*t).map_err(located)?),
        WorkloadPlan::Devops(t) => Arc::new(Devops::new(*t).map_err(located)?),
        WorkloadPlan::Iot(t, o) => Arc::new(Iot::new(*t, *o).map_err(located)?),
        WorkloadPlan::Custom { cfg, .. } => Arc::new(Custom::new(cfg.clone()).map_err(located)?),
    })
}

/// The data set's shape and size, for `tsload validate`.
pub fn describe(w: &dyn Workload) -> Value {
    let schema = w.schema();
    let tables: Vec<Value> = schema
        .tables
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "tags": t.tags.iter().map(|g| json!({"name": g.name, "type": g.data_type.to_string()})).collect::<Vec<_>>(),
                "fields": t.fields.iter().map(|f| json!({"name": f.name, "type": f.data_type.to_string()})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "devices": schema.device_count,
        "rows": w.total_rows(),
        "fields_per_device_and_step": schema.field_count(),
        "tables": tables,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::shard::Shard;

    fn plan(sets: &[&str]) -> Plan {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::parse("s.toml", "", &sets).unwrap()
    }

    /// A replayed file given by `--set workload.path` that cannot be read is the
    /// `--set`'s error, not the scenario file's (it named the built-in quickstart).
    #[test]
    #[allow(clippy::disallowed_methods, reason = "a test's own input file")]
    fn an_error_in_a_file_given_by_set_names_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let long = dir.path().join("one-long-line.lp");
        std::fs::write(&long, vec![b'x'; 2 << 20]).unwrap();
        let path = format!("workload.path={}", long.display());
        let p = plan(&["workload.kind=file", &path]);
        let e = build(&p).err().expect("a 2 MiB line is refused");
        assert_eq!(e.file, "--set", "{e}");
        assert_eq!(e.key.as_deref(), Some("workload.path"), "{e}");
        // From the file, the file is named.
        let text = format!(
            "[workload]\nkind = \"file\"\npath = \"{}\"\n",
            long.display()
        );
        let p = crate::parse("s.toml", &text, &[]).unwrap();
        assert_eq!(build(&p).err().expect("refused").file, "s.toml");
    }

    #[test]
    fn meminfo_gives_available_memory_or_the_total() {
        let text = "MemTotal:       24684084 kB\nMemFree:        21000000 kB\n\
                    MemAvailable:   24082760 kB\n";
        assert_eq!(
            meminfo_available(text),
            Some((24_082_760 * 1024, "MemAvailable"))
        );
        assert_eq!(
            meminfo_available("MemTotal: 1000 kB\nMemFree: 10 kB\n"),
            Some((1_024_000, "MemTotal"))
        );
        assert_eq!(meminfo_available("nothing here\n"), None);
    }

    #[test]
    fn cgroup_limits_of_either_version_give_the_room_left() {
        let files = |pairs: &'static [(&'static str, &'static str)]| {
            move |path: &str| {
                pairs
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, t)| t.to_string())
            }
        };
        let v2 = files(&[
            ("/proc/self/cgroup", "0::/kubepods/pod1\n"),
            ("/sys/fs/cgroup/kubepods/pod1/memory.max", "4294967296\n"),
            (
                "/sys/fs/cgroup/kubepods/pod1/memory.current",
                "1073741824\n",
            ),
        ]);
        assert_eq!(cgroup_room(&v2), Some(3 << 30));
        let v2_unlimited = files(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/memory.max", "max\n"),
        ]);
        assert_eq!(cgroup_room(&v2_unlimited), None);
        // v1, the container's own cgroup at the mount's root.
        let v1 = files(&[
            (
                "/proc/self/cgroup",
                "5:devices:/\n4:memory:/docker/abc\n0::/\n",
            ),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648"),
            ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "2147483648"),
        ]);
        assert_eq!(cgroup_room(&v1), Some(0));
        let v1_unlimited = files(&[
            ("/proc/self/cgroup", "4:memory:/\n"),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712",
            ),
        ]);
        assert_eq!(cgroup_room(&v1_unlimited), None);
        assert_eq!(cgroup_room(&files(&[])), None);
    }

    #[test]
    fn generator_state_is_checked_for_the_devices_this_process_generates() {
        let limit = || Some((8u64 << 30, "half of 16.0 GiB MemAvailable".to_string()));
        let big = plan(&["workload.scale=4294967295"]);
        let e = check_state(&big, limit()).unwrap_err();
        assert_eq!(e.key, "scale");
        assert!(
            e.message.starts_with(
                "4294967295 hosts need about 96.0 GiB of generator state (24 bytes each), \
                 more than the 8.0 GiB this machine can give it (half of 16.0 GiB \
                 MemAvailable)"
            ),
            "{}",
            e.message
        );
        assert!(check_state(&big, None).is_ok(), "no limit known");
        // A shard of 16 holds a 16th: 6 GiB fits.
        let mut sharded = big.clone();
        sharded.output.shard.shard = Shard::new(3, 16).unwrap();
        assert!(check_state(&sharded, limit()).is_ok());
        sharded.output.shard.shard = Shard::new(3, 8).unwrap();
        let e = check_state(&sharded, limit()).unwrap_err();
        assert!(
            e.message
                .starts_with("4294967295 hosts: shard 3/8's 536870912 need about 12.0 GiB"),
            "{}",
            e.message
        );
        for (kind, key, set, per) in [
            ("devops", "scale", "workload.scale=100000000", 760u64),
            ("iot", "scale", "workload.scale=100000000", 88),
            (
                "custom",
                "childtable_count",
                "workload.childtable_count=2000000000",
                8,
            ),
        ] {
            let p = plan(&[&format!("workload.kind=\"{kind}\""), set]);
            let e = check_state(&p, limit()).unwrap_err();
            assert_eq!(e.key, key, "{kind}");
            assert!(
                e.message.contains(&format!("({per} bytes each)")),
                "{kind}: {}",
                e.message
            );
        }
        // Query mode reads data it does not generate, unless it preloads it.
        let query = plan(&[
            "workload.scale=4294967295",
            "mode=\"query\"",
            "query.kind=\"tsbs\"",
        ]);
        assert!(!query.generates());
        assert!(check_state(&query, limit()).is_ok());
        let preload = plan(&[
            "workload.scale=4294967295",
            "mode=\"query\"",
            "query.kind=\"tsbs\"",
            "query.preload=true",
        ]);
        assert!(check_state(&preload, limit()).is_err());
    }
}
