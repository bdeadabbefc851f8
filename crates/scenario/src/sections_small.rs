//! The small sections, checked and defaulted: `[monitor]`, `[load]`, `[sweep]` and
//! `[output]`.

use std::time::Duration;

use toml::Spanned;
use tsload_core::engine::LoadConfig;
use tsload_report::threshold::Threshold;

use crate::plan::{MonitorPlan, OutputPlan, ProgressMode, SweepAxis};
use crate::sections::{LoadSection, MonitorSection, OutputSection, SWEEP_SHORT_KEYS};
use crate::{Ctx, SWEEP_SECTIONS, ScenarioError};

impl Ctx<'_> {
    pub(crate) fn monitor(
        &self,
        section: &Spanned<MonitorSection>,
    ) -> Result<MonitorPlan, ScenarioError> {
        let m = section.get_ref();
        let mut given = Vec::new();
        if let Some(pid) = &m.pid {
            let pid = self.int(pid, "monitor.pid", 1, i64::from(i32::MAX))?;
            given.push(tsload_monitor::Selector::Pid(pid as u32));
        }
        let text = |v: &Spanned<String>, key: &str| {
            if v.get_ref().trim().is_empty() {
                Err(self.error(Some(&v.span()), key, "empty".into()))
            } else {
                Ok(v.get_ref().clone())
            }
        };
        if let Some(p) = &m.process {
            given.push(tsload_monitor::Selector::Name(text(p, "monitor.process")?));
        }
        if let Some(u) = &m.systemd_unit {
            given.push(tsload_monitor::Selector::Unit(text(
                u,
                "monitor.systemd_unit",
            )?));
        }
        let storage = self.flag_or_default(&m.storage, "monitor.storage")?;
        let selector = match given.len() {
            0 if storage && m.data_dir.is_none() => None,
            1 => Some(given.remove(0)),
            n => {
                return Err(self.error(
                    Some(&section.span()),
                    "monitor",
                    format!(
                        "{} of pid, process and systemd_unit given; name the server's processes with exactly one (or set only storage = true for the database's own figures)",
                        if n == 0 { "none".to_string() } else { n.to_string() }
                    ),
                ));
            }
        };
        let data_dir = m
            .data_dir
            .as_ref()
            .map(|d| text(d, "monitor.data_dir").map(std::path::PathBuf::from))
            .transpose()?;
        Ok(MonitorPlan {
            selector,
            data_dir,
            storage,
        })
    }

    pub(crate) fn load(&self, l: &LoadSection) -> Result<LoadConfig, ScenarioError> {
        let workers = self.int_or_default(&l.workers, "load.workers", 1, 100_000)? as usize;
        let batch = self.int_or_default(&l.batch, "load.batch", 1, 10_000_000)? as usize;
        let in_flight = self.int_or_default(&l.in_flight, "load.in_flight", 1, 1024)? as usize;
        let mode = self.load_mode(&l.rate, "load.rate", "rows")?;
        let duration = self.opt_duration(&l.duration, "load.duration", Duration::from_millis(1))?;
        self.open_loop_fits(
            &l.rate,
            duration,
            "load",
            "rows",
            (
                batch * workers,
                &format!("load.batch = {batch} and load.workers = {workers}"),
            ),
        )?;
        Ok(LoadConfig {
            workers,
            batch,
            in_flight,
            mode,
            duration,
            rows: self
                .opt_int(&l.rows, "load.rows", 1, i64::MAX)?
                .map(|v| v as u64),
            report_interval: self.duration_or_default(
                &l.report_interval,
                "load.report_interval",
                Duration::from_millis(10),
            )?,
            max_retries: self.int_or_default(&l.max_retries, "load.max_retries", 0, 1000)? as u32,
            retry_backoff: self.duration_or_default(
                &l.retry_backoff,
                "load.retry_backoff",
                Duration::ZERO,
            )?,
            grace: self.duration_or_default(&l.grace, "load.grace", Duration::ZERO)?,
            drain: self.duration_or_default(&l.drain, "load.drain", Duration::ZERO)?,
            ..LoadConfig::default()
        })
    }

    /// The `[sweep]` lists in file order, keys made full (`delay` sets `network.delay`,
    /// `workers` sets `load.workers`).
    pub(crate) fn sweep(
        &self,
        s: &Spanned<std::collections::BTreeMap<String, Spanned<toml::Value>>>,
    ) -> Result<Vec<SweepAxis>, ScenarioError> {
        let mut entries: Vec<(&String, &Spanned<toml::Value>)> = s.get_ref().iter().collect();
        entries.sort_by_key(|(_, v)| v.span().start);
        let mut out: Vec<SweepAxis> = Vec::new();
        for (key, value) in entries {
            let span = value.span();
            let err = |message: String| self.error(Some(&span), &format!("sweep.{key}"), message);
            let short = SWEEP_SHORT_KEYS
                .iter()
                .find(|(short, _)| short == key)
                .map(|(_, full)| full);
            let full_key = match (short, key.as_str()) {
                (Some(full), _) => full.to_string(),
                (None, k)
                    if SWEEP_SECTIONS
                        .iter()
                        .any(|p| k.starts_with(&format!("{p}.")))
                        && k.split('.').count() == 2 =>
                {
                    k.to_string()
                }
                _ => {
                    return Err(err(format!(
                        "not a sweepable key; allowed: {}, or SECTION.KEY such as \"load.rate\", \"network.rate\", \"query.workers\" (sections: {})",
                        SWEEP_SHORT_KEYS
                            .iter()
                            .map(|(short, _)| *short)
                            .collect::<Vec<_>>()
                            .join(", "),
                        SWEEP_SECTIONS.join(", ")
                    )));
                }
            };
            let toml::Value::Array(items) = value.get_ref() else {
                return Err(err(format!(
                    "must be a list of values, e.g. {key} = [1, 2, 4]; got {}",
                    value.get_ref()
                )));
            };
            if items.is_empty() {
                return Err(err("the list is empty; give at least one value".into()));
            }
            if let Some(bad) = items
                .iter()
                .find(|v| matches!(v, toml::Value::Array(_) | toml::Value::Table(_)))
            {
                return Err(err(format!(
                    "{bad} is not a plain value; allowed: numbers, strings, booleans"
                )));
            }
            if out.iter().any(|a| a.full_key == full_key) {
                return Err(err(format!("`{full_key}` is swept twice")));
            }
            out.push(SweepAxis {
                key: key.clone(),
                full_key,
                values: items.clone(),
            });
        }
        if out.is_empty() {
            return Err(self.error(
                Some(&s.span()),
                "sweep",
                "the [sweep] table is empty; give lists such as delay = [\"0ms\", \"1ms\"]".into(),
            ));
        }
        Ok(out)
    }

    pub(crate) fn output(&self, o: &OutputSection) -> Result<OutputPlan, ScenarioError> {
        let mut fail_if = Vec::new();
        for (i, t) in o.fail_if.iter().flat_map(|l| l.get_ref()).enumerate() {
            let th = Threshold::parse(t.get_ref()).map_err(|e| {
                self.error(
                    Some(&t.span()),
                    &format!("output.fail_if[{i}]"),
                    e.to_string(),
                )
            })?;
            fail_if.push(th);
        }
        let progress = self.given_or_documented(&o.progress, "output.progress")?;
        let progress = match self.choice(
            &progress,
            "output.progress",
            &["auto", "bar", "plain", "none"],
        )? {
            "bar" => ProgressMode::Bar,
            "plain" => ProgressMode::Plain,
            "none" => ProgressMode::None,
            _ => ProgressMode::Auto,
        };
        Ok(OutputPlan {
            json: o.json.as_ref().map(|p| p.get_ref().into()),
            hlog: o.hlog.as_ref().map(|p| p.get_ref().into()),
            fail_if,
            progress,
            out: Vec::new(),
            metrics_addr: None,
            shard: crate::plan::ShardRun::default(),
            raw_latencies: None,
            verify: self.flag_or_default(&o.verify, "output.verify")?,
        })
    }
}
