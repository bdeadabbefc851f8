//! `[query]`: the read stream, TSBS queries or sysbench-shaped OLTP, checked against the
//! target it reads.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::sections::{QUERY, QUERY_KINDS, QuerySection};
use super::{Ctx, ScenarioError, flag};
use crate::plan::{QueryPlan, QueryWorkloadPlan, TargetPlan, WorkloadPlan};

impl Ctx<'_> {
    pub(super) fn query(
        &self,
        section: &Spanned<QuerySection>,
        workload: &WorkloadPlan,
        target: &TargetPlan,
    ) -> Result<QueryPlan, ScenarioError> {
        let q = section.get_ref();
        let kind = match &q.kind {
            None => {
                return Err(self.error(
                    Some(&section.span()),
                    "query.kind",
                    format!("missing; allowed: {}", QUERY_KINDS.join(", ")),
                ));
            }
            Some(k) => self.choice(k, "query.kind", QUERY_KINDS)?,
        };
        let oltp_kind: Option<tsload_oltp::OltpKind> = kind.parse().ok();
        self.check_kind_keys(&QUERY, kind, &format!("query kind \"{kind}\""), q.present())?;
        let config = self.query_config(q)?;
        let seed = q.seed.as_ref().map(|v| *v.get_ref() as u64);
        let start_after = self.opt_duration(&q.start_after, "query.start_after", Duration::ZERO)?;
        let kind_span = q.kind.as_ref().map(|k| k.span());
        let workload = match oltp_kind {
            None => self.tsbs_workload(q, workload, target, seed, kind_span)?,
            Some(k) => self.oltp_workload(section, k, target, seed, kind_span)?,
        };
        Ok(QueryPlan {
            workload,
            config,
            start_after,
        })
    }

    /// The read stream's engine settings: workers, rate or closed loop, duration, limits.
    fn query_config(&self, q: &QuerySection) -> Result<tsload_core::QueryConfig, ScenarioError> {
        let mode = self.load_mode(&q.rate, "query.rate", "requests")?;
        let workers = self.int_or_default(&q.workers, "query.workers", 1, 100_000)? as usize;
        let duration =
            self.opt_duration(&q.duration, "query.duration", Duration::from_millis(1))?;
        self.open_loop_fits(
            &q.rate,
            duration,
            "query",
            "requests",
            (workers, &format!("query.workers = {workers}")),
        )?;
        Ok(tsload_core::QueryConfig {
            workers,
            mode,
            duration,
            requests: self
                .opt_int(&q.queries, "query.queries", 1, i64::MAX)?
                .map(|v| v as u64),
            report_interval: self.duration_or_default(
                &q.report_interval,
                "query.report_interval",
                Duration::from_millis(10),
            )?,
            max_errors: self
                .opt_int(&q.max_errors, "query.max_errors", 0, i64::MAX)?
                .map(|v| v as u64),
            require_rows: self.flag_or_default(&q.require_rows, "query.require_rows")?,
            loaders: self
                .opt_int(&q.loaders, "query.loaders", 1, 1024)?
                .map_or(workers.min(16), |v| v as usize),
            timeout: self.opt_duration(&q.timeout, "query.timeout", Duration::from_millis(1))?,
            gate: Default::default(),
            // The run's `load.grace` and `load.drain`, set with the plan.
            grace: tsload_core::engine::DEFAULT_GRACE,
            drain: tsload_core::engine::DEFAULT_DRAIN,
        })
    }

    /// TSBS's queries over the cpu table of the data set `[workload]` describes, in the
    /// target's language.
    fn tsbs_workload(
        &self,
        q: &QuerySection,
        workload: &WorkloadPlan,
        target: &TargetPlan,
        seed: Option<u64>,
        kind_span: Option<Range<usize>>,
    ) -> Result<QueryWorkloadPlan, ScenarioError> {
        let (WorkloadPlan::CpuOnly(t) | WorkloadPlan::Devops(t)) = workload else {
            return Err(self.error(
                kind_span.as_ref(),
                "query.kind",
                format!(
                    "TSBS queries read the cpu table of the cpu-only or devops data set that [workload] describes; workload kind \"{}\" has none",
                    workload.kind()
                ),
            ));
        };
        let languages = target.reads().map_or(&[][..], |r| r.query_languages());
        let influx = !languages.is_empty();
        // The file's dialect belongs to the file's target: a `--set target.kind`
        // to another kind sets it aside (a `--set query.dialect` still counts).
        let set_aside = self.overridden.iter().any(|o| o == "target.kind")
            && !self.overridden.iter().any(|o| o == "query.dialect");
        let dialect = match &q.dialect {
            // The plan names the language a line-protocol target is asked in.
            None if influx => Some(languages[0].to_string()),
            None => None,
            Some(_) if set_aside && !influx => None,
            Some(d) if influx => Some(self.choice(d, "query.dialect", languages)?.to_string()),
            Some(d) => {
                return Err(self.error(
                    Some(&d.span()),
                    "query.dialect",
                    format!(
                        "only line-protocol targets (kind \"influx\") choose a query language; target kind \"{}\" has its own",
                        target.kind()
                    ),
                ));
            }
        };
        if let Some(tb) = &q.time_bucket
            && !target.reads().is_some_and(|r| r.takes_time_bucket())
        {
            return Err(self.error(
                Some(&tb.span()),
                "query.time_bucket",
                "a setting of PostgreSQL/TimescaleDB targets only".into(),
            ));
        }
        if !target.stores() {
            return Err(self.error(
                kind_span.as_ref(),
                "query.kind",
                "target kind \"null\" stores nothing to query".into(),
            ));
        }
        let types = self.query_types(q)?;
        Ok(QueryWorkloadPlan::Tsbs {
            data: *t,
            seed: seed.unwrap_or(t.seed),
            types,
            dialect,
            time_bucket: self.flag_or_default(&q.time_bucket, "query.time_bucket")?,
            preload: self.flag_or_default(&q.preload, "query.preload")?,
        })
    }

    /// `query.types`: TSBS's type names, each once; `None` when left out (every type).
    fn query_types(
        &self,
        q: &QuerySection,
    ) -> Result<Option<Vec<tsload_query::QueryType>>, ScenarioError> {
        Ok(match &q.types {
            None => None,
            Some(list) => {
                let mut out = Vec::new();
                for (i, t) in list.get_ref().iter().enumerate() {
                    let ty: tsload_query::QueryType = t.get_ref().parse().map_err(|_| {
                        self.error(
                            Some(&t.span()),
                            &format!("query.types[{i}]"),
                            format!(
                                "\"{}\" is not a TSBS devops query type; allowed: {}",
                                t.get_ref(),
                                tsload_query::QueryType::ALL
                                    .iter()
                                    .map(|t| t.name())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                    })?;
                    if out.contains(&ty) {
                        return Err(self.error(
                            Some(&t.span()),
                            &format!("query.types[{i}]"),
                            format!("\"{}\" is listed twice", t.get_ref()),
                        ));
                    }
                    out.push(ty);
                }
                if out.is_empty() {
                    return Err(self.error(
                        Some(&list.span()),
                        "query.types",
                        "the list is empty; leave it out to run every type".into(),
                    ));
                }
                Some(out)
            }
        })
    }

    /// sysbench's OLTP workload `k` on the SQL target, its options from the section.
    fn oltp_workload(
        &self,
        section: &Spanned<QuerySection>,
        k: tsload_oltp::OltpKind,
        target: &TargetPlan,
        seed: Option<u64>,
        kind_span: Option<Range<usize>>,
    ) -> Result<QueryWorkloadPlan, ScenarioError> {
        let dialect = match target.reads().and_then(|r| r.oltp_dialect()) {
            Some(d) => d,
            None => {
                let other = target;
                return Err(self.error(
                    kind_span.as_ref(),
                    "query.kind",
                    format!(
                        "the OLTP workloads run on SQL targets (postgres, mysql, sqlite); target kind \"{}\" is not one",
                        other.kind()
                    ),
                ));
            }
        };
        let q = section.get_ref();
        let mut c = tsload_oltp::OltpConfig::new(k, dialect);
        self.oltp_counts(q, &mut c)?;
        c.range_selects = flag(&q.range_selects, c.range_selects);
        c.skip_trx = flag(&q.skip_trx, c.skip_trx);
        if let Some(r) = &q.rand_type {
            c.rand_type = self
                .choice(r, "query.rand_type", &["uniform", "special"])?
                .parse()
                .map_err(|e: tsload_oltp::OltpError| {
                    self.error(Some(&r.span()), "query.rand_type", e.to_string())
                })?;
        }
        if let Some(r) = &q.secondary_index {
            c.secondary_index = self
                .choice(
                    r,
                    "query.secondary_index",
                    &["after_load", "before_load", "off"],
                )?
                .parse()
                .map_err(|e: tsload_oltp::OltpError| {
                    self.error(Some(&r.span()), "query.secondary_index", e.to_string())
                })?;
        }
        if let Some(e) = &q.mysql_storage_engine {
            c.mysql_storage_engine = e.get_ref().clone();
        }
        c.seed = seed.unwrap_or(0);
        c.validate().map_err(|e| {
            let key = format!("query.{}", e.option());
            self.error(Some(&section.span()), &key, e.to_string())
        })?;
        Ok(QueryWorkloadPlan::Oltp {
            config: c,
            prepare: self.flag_or_default(&q.prepare, "query.prepare")?,
        })
    }

    /// The OLTP workload's counts (tables, rows, statements per transaction), each within
    /// its range; a count left out keeps `c`'s default.
    fn oltp_counts(
        &self,
        q: &QuerySection,
        c: &mut tsload_oltp::OltpConfig,
    ) -> Result<(), ScenarioError> {
        let most_rows = c.dialect.max_load_batch_rows() as i64;
        let (most, big) = (100_000, i64::from(i32::MAX));
        // Each count: its key, its range, and the field it sets (the default when left out).
        let counts = [
            (&q.tables, "tables", 1, most, &mut c.tables),
            (&q.table_size, "table_size", 1, big, &mut c.table_size),
            (&q.range_size, "range_size", 1, big, &mut c.range_size),
            (
                &q.point_selects,
                "point_selects",
                0,
                most,
                &mut c.point_selects,
            ),
            (
                &q.simple_ranges,
                "simple_ranges",
                0,
                most,
                &mut c.simple_ranges,
            ),
            (&q.sum_ranges, "sum_ranges", 0, most, &mut c.sum_ranges),
            (
                &q.order_ranges,
                "order_ranges",
                0,
                most,
                &mut c.order_ranges,
            ),
            (
                &q.distinct_ranges,
                "distinct_ranges",
                0,
                most,
                &mut c.distinct_ranges,
            ),
            (
                &q.index_updates,
                "index_updates",
                0,
                most,
                &mut c.index_updates,
            ),
            (
                &q.non_index_updates,
                "non_index_updates",
                0,
                most,
                &mut c.non_index_updates,
            ),
            (
                &q.delete_inserts,
                "delete_inserts",
                0,
                most,
                &mut c.delete_inserts,
            ),
            (
                &q.load_batch_rows,
                "load_batch_rows",
                1,
                most_rows,
                &mut c.load_batch_rows,
            ),
        ];
        for (value, key, lo, hi, field) in counts {
            if let Some(v) = self.opt_int(value, &format!("query.{key}"), lo, hi)? {
                *field = v as u32;
            }
        }
        Ok(())
    }
}
