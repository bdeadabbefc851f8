//! A run split over several generator processes (`--shard I/N`): whether a plan can be
//! split so, and shard i's part of it. Pure: the start gates that line the shards up are
//! the binary's.

use tsload_core::engine::LoadMode;
use tsload_core::shard::Shard;

use crate::plan::{Plan, QueryWorkloadPlan, RunMode, ShardRun, WorkloadPlan};

/// Checks that `plan` can be split as `run` says; `Err` says why not.
pub fn check(plan: &Plan, run: &ShardRun) -> Result<(), String> {
    if run.shard.is_whole() {
        return Ok(());
    }
    if plan.mode == RunMode::Mixed {
        return Err(format!(
            "--shard {}: mode = \"mixed\" cannot be sharded yet (run the write and the query streams as separately sharded runs)",
            run.shard
        ));
    }
    if let WorkloadPlan::File { .. } = plan.workload
        && plan.mode == RunMode::Write
    {
        return Err(format!(
            "--shard {}: workload.kind = \"file\" cannot be sharded: every shard would replay the whole file; split the file and give each process its own",
            run.shard
        ));
    }
    if plan.generates()
        && let Some(e) = plan.workload.state_estimate()
        && e.devices < run.shard.count
    {
        let idle = run.shard.count - e.devices;
        return Err(format!(
            "--shard {}: {} shards but workload.{} = {} makes only {} {}, so {idle} of the \
             shards would have none and write nothing; use at most {} shards (or raise \
             workload.{})",
            run.shard, run.shard.count, e.key, e.devices, e.devices, e.noun, e.devices, e.key
        ));
    }
    if let Some(q) = &plan.query
        && plan.mode != RunMode::Write
        && let Some(total) = q.config.requests
        && total < u64::from(run.shard.count)
    {
        return Err(format!(
            "--shard {}: query.queries = {total} is fewer than the {} shards, so some shard \
             would have no query to run; use at most {total} shards (or raise query.queries)",
            run.shard, run.shard.count
        ));
    }
    if plan.target.drops_existing() && run.barrier.is_none() {
        return Err(format!(
            "--shard {}: target.drop_existing = true needs --barrier DIR, so that shard 0 drops and creates the tables before the other shards write (or set it to false)",
            run.shard
        ));
    }
    Ok(())
}

/// Shard `shard`'s part of `plan`: its shares of row and request budgets and of open-loop
/// rates, `drop_existing` left to shard 0.
///
/// The row budget goes in proportion to the devices each shard generates
/// ([`Shard::share_by_devices`]): every shard can then fill its part (an even split gave
/// a shard with fewer devices more rows than its devices hold, and those were lost), and
/// the parts sum to `load.rows`. Open-loop rates are split evenly, as one process spreads
/// its rate evenly over its workers: each global worker keeps the rate it has unsharded.
pub fn share(plan: &Plan, shard: Shard) -> Plan {
    let mut p = plan.clone();
    if !shard.is_whole() {
        let devices = plan.workload.state_estimate().map_or(0, |e| e.devices);
        p.load.rows = p.load.rows.map(|r| shard.share_by_devices(r, devices));
        if let LoadMode::Open { rate } = p.load.mode {
            p.load.mode = LoadMode::Open {
                rate: shard.share_of_rate(rate),
            };
        }
        if shard.index != 0 {
            p.target.set_drop_existing(false);
        }
        if let Some(q) = &mut p.query {
            // Built "after the load" the index would wait for loaders of other processes
            // that this one never sees; built in setup, shard 0 makes it for all.
            if let QueryWorkloadPlan::Oltp { config, .. } = &mut q.workload
                && config.secondary_index == tsload_oltp::SecondaryIndex::AfterLoad
            {
                config.secondary_index = tsload_oltp::SecondaryIndex::BeforeLoad;
            }
            q.config.requests = q.config.requests.map(|r| shard.share(r));
            if let LoadMode::Open { rate } = q.config.mode {
                q.config.mode = LoadMode::Open {
                    rate: shard.share_of_rate(rate),
                };
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sets: &[&str]) -> Plan {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        crate::parse("s.toml", "", &sets).unwrap()
    }

    fn shard_run(i: u32, n: u32) -> ShardRun {
        ShardRun {
            shard: Shard::new(i, n).unwrap(),
            ..ShardRun::default()
        }
    }

    #[test]
    fn more_shards_than_devices_are_refused_naming_the_key_and_the_most_shards() {
        let p = plan(&["workload.scale=2", "target.drop_existing=false"]);
        for i in 0..3 {
            let e = check(&p, &shard_run(i, 3)).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "--shard {i}/3: 3 shards but workload.scale = 2 makes only 2 hosts, so 1 \
                     of the shards would have none and write nothing; use at most 2 shards \
                     (or raise workload.scale)"
                )
            );
        }
        assert_eq!(check(&p, &shard_run(1, 2)), Ok(()));
        let custom = plan(&[
            "workload.kind=\"custom\"",
            "workload.childtable_count=3",
            "target.drop_existing=false",
        ]);
        let e = check(&custom, &shard_run(0, 5)).unwrap_err();
        assert!(
            e.contains("workload.childtable_count = 3 makes only 3 child tables, so 2 of"),
            "{e}"
        );
        // A query run that does not write the data set is not split by devices.
        let query = plan(&[
            "workload.scale=2",
            "mode=\"query\"",
            "query.kind=\"tsbs\"",
            "target.drop_existing=false",
        ]);
        assert_eq!(check(&query, &shard_run(2, 3)), Ok(()));
    }

    #[test]
    fn a_query_limit_below_the_shard_count_is_refused_and_otherwise_sums_to_the_whole() {
        let p = plan(&[
            "mode=\"query\"",
            "query.kind=\"oltp_point_select\"",
            "query.queries=3",
            "target.drop_existing=false",
        ]);
        let e = check(&p, &shard_run(0, 4)).unwrap_err();
        assert!(
            e.contains("query.queries = 3 is fewer than the 4 shards"),
            "{e}"
        );
        assert_eq!(check(&p, &shard_run(2, 3)), Ok(()));
        let parts: Vec<u64> = (0..3)
            .map(|i| {
                share(&p, Shard::new(i, 3).unwrap())
                    .query
                    .unwrap()
                    .config
                    .requests
                    .unwrap()
            })
            .collect();
        assert_eq!(parts, [1, 1, 1]);
    }

    #[test]
    fn the_row_budget_follows_each_shards_devices_and_sums_to_the_whole() {
        let rows = |scale: u32, n: u32| -> Vec<u64> {
            let p = plan(&[
                &format!("workload.scale={scale}"),
                "load.rows=1001",
                "load.workers=4",
            ]);
            (0..n)
                .map(|i| share(&p, Shard::new(i, n).unwrap()).load.rows.unwrap())
                .collect()
        };
        // 3 hosts over 2 shards: 1 and 2 of them.
        assert_eq!(rows(3, 2), [333, 668]);
        assert_eq!(rows(3, 3), [333, 334, 334]);
        assert_eq!(rows(10, 4), [200, 300, 200, 301]);
        assert_eq!(rows(3, 1), [1001]);
    }
}
