//! What the server itself says it stored: its own counts, read before a write run's clock
//! starts and after its last write ([`crate::Sink::tally`]), their difference, and the
//! verdict against what it acknowledged. A server that acknowledges rows and then drops
//! them (VictoriaMetrics outside its retention, InfluxDB past a retention policy) is
//! caught here, not reported as a success.
//!
//! Whose rows: a run that writes only some of the data set's devices (one shard of
//! several) or shares its server with another writer is counted by its own devices where
//! the target can count rows per device ([`RunScope`], [`DeviceNames`]): the figure is then
//! the run's own ([`ServerTally::own_devices`]). Where the target counts only whole tables
//! or the whole server, a part of a run cannot tell what it stored ([`RunScope::part`]),
//! and counts that grew by more than the run sent are another writer's too
//! ([`Stored::other_writers`]).

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use crate::schema::{Schema, TableSchema};

/// Whose rows a run's stored check counts: the devices its workload writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunScope {
    /// The devices whose rows this run writes, numbered as the schema's
    /// [`crate::TagSource`] numbers them; `None` where the workload does not split its
    /// data by device (a replayed file).
    pub devices: Option<DeviceSet>,
    /// The run writes only part of the data set, in words (`shard 1/2`): counts of whole
    /// tables hold the other parts' rows too. `None`: the whole data set.
    pub part: Option<String>,
}

impl RunScope {
    /// Every device of a data set of `device_count` devices.
    pub fn whole(device_count: u32) -> RunScope {
        RunScope {
            devices: Some(DeviceSet::whole(device_count, 1)),
            part: None,
        }
    }

    /// The names of the scope's devices in the tag slot that names each device alone
    /// ([`crate::TagSource::key_slot`]), to pick this run's rows from a server's count per
    /// device; `None` where the workload has no such slot, does not split by device, or a
    /// table of the schema has no column of the slot.
    pub fn device_names(&self, schema: &Schema) -> Option<DeviceNames> {
        let devices = self.devices.clone()?;
        let slot = schema.tags.key_slot()?;
        if !schema
            .tables
            .iter()
            .all(|t| t.tags.iter().any(|tag| tag.slot == slot))
        {
            return None;
        }
        let mut tags = Vec::with_capacity(schema.tag_slots);
        let names = devices
            .iter()
            .filter_map(|d| {
                schema.tags.device_tags(d, &mut tags);
                tags.get(slot).map(ToString::to_string)
            })
            .collect();
        Some(DeviceNames { slot, names })
    }

    /// Why a count of whole tables (or of the whole server) cannot tell what this run
    /// stored: it writes only part of the data set. `None` for the whole.
    pub fn part_cannot_tell(&self) -> Option<String> {
        self.part.as_ref().map(|part| {
            format!(
                "cannot verify per shard: {part} writes the same tables of one server as the \
                 other shards at once, and this target counts whole tables, so its counts \
                 hold their rows too"
            )
        })
    }
}

/// A run's devices: device slots `slots` of `slot_count`, in each of `generations`
/// generations (series churn gives a slot a new device, numbered `slot + g * slot_count`,
/// as time goes on; without churn there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSet {
    pub slots: Range<u32>,
    pub slot_count: u32,
    pub generations: u32,
}

impl DeviceSet {
    /// Every slot of `slot_count`, in `generations` generations.
    pub fn whole(slot_count: u32, generations: u32) -> DeviceSet {
        DeviceSet {
            slots: 0..slot_count,
            slot_count,
            generations: generations.max(1),
        }
    }

    /// The same generations of the slots `slots` alone (a shard's).
    pub fn with_slots(&self, slots: Range<u32>) -> DeviceSet {
        DeviceSet {
            slots,
            ..self.clone()
        }
    }

    /// The device numbers, one range per generation.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u32>> + '_ {
        (0..self.generations).map(|g| {
            let base = g.saturating_mul(self.slot_count);
            base.saturating_add(self.slots.start)..base.saturating_add(self.slots.end)
        })
    }

    /// Every device number.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges().flatten()
    }

    /// Whether device `device` is one of the set's.
    pub fn contains(&self, device: u32) -> bool {
        let count = self.slot_count.max(1);
        device / count < self.generations && self.slots.contains(&(device % count))
    }
}

/// The names of a run's devices in their key tag slot ([`RunScope::device_names`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceNames {
    /// The tag slot whose value names a device alone.
    pub slot: usize,
    names: HashSet<String>,
}

impl DeviceNames {
    /// The name of `table`'s column of the key slot (every table of the schema the names
    /// came from has one; `""` for another table).
    pub fn column<'a>(&self, table: &'a TableSchema) -> &'a str {
        table
            .tags
            .iter()
            .find(|t| t.slot == self.slot)
            .map_or("", |t| t.name.as_str())
    }

    /// Whether `name` is one of the run's devices.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The sum of the counts of the run's devices among `(device name, count)` pairs
    /// (a server's answer to a count grouped by the key column).
    pub fn own<S: AsRef<str>>(&self, counts: impl IntoIterator<Item = (S, u64)>) -> u64 {
        counts
            .into_iter()
            .filter(|(name, _)| self.contains(name.as_ref()))
            .map(|(_, n)| n)
            .fold(0, u64::saturating_add)
    }
}

/// A server's own counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerTally {
    /// This life of the server (its start time): counters of two lives do not compare.
    pub epoch: Option<String>,
    /// Rows (points, table rows) the server holds or has taken in, for the run's tables.
    pub rows: Option<u64>,
    /// Samples (one per field value) it has taken in, where it counts so.
    pub samples: Option<u64>,
    /// Every sample tsload sends it is one it counts (remote write carries numbers only),
    /// so fewer samples than were acknowledged is a loss whatever the server says. `false`
    /// where it may skip some without losing them (VictoriaMetrics skips line protocol's
    /// string fields).
    pub counts_every_sample: bool,
    /// What it refused or dropped, by its own reason.
    pub refused: BTreeMap<String, u64>,
    /// The counts are the whole server's (or database's), every writer's, not those of
    /// the run's tables: VictoriaMetrics' and Prometheus' sample counters, InfluxDB 1.x's
    /// points per database.
    pub server_wide: bool,
    /// The counts are of the run's own devices alone ([`RunScope`]): other writers of
    /// other devices, another shard among them, are not in them.
    pub own_devices: bool,
    /// A row (sample) that repeats one the server holds, time and values alike, is
    /// merged into it and counted nowhere (Prometheus): the workload's duplicate rows
    /// are not in the counts.
    pub merges_duplicates: bool,
    /// The series the server has created in its life, where it counts them
    /// (Prometheus' `prometheus_tsdb_head_series_created_total`, VictoriaMetrics'
    /// `vm_new_timeseries_created_total`): every writer's.
    pub series_created: Option<u64>,
}

impl ServerTally {
    /// The tally of a server that tells only the rows its tables hold (SQL `count(*)`,
    /// QuestDB): state, not counters, so a restart does not matter.
    pub fn of_rows(rows: u64) -> ServerTally {
        ServerTally {
            rows: Some(rows),
            ..ServerTally::default()
        }
    }

    /// The tally of the rows of the run's own devices ([`ServerTally::own_devices`]).
    pub fn of_own_rows(rows: u64) -> ServerTally {
        ServerTally {
            rows: Some(rows),
            own_devices: true,
            ..ServerTally::default()
        }
    }
}

/// What the server stored during the run: the difference of two tallies.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stored {
    /// New rows, as the server counts them (`None`: it counts samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// New samples (field values), as the server counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// The server counts every sample it was sent ([`ServerTally::counts_every_sample`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counts_every_sample: bool,
    /// Rows or samples refused or dropped during the run, by the server's reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refused: BTreeMap<String, u64>,
    /// The counts are the server's (or database's) as a whole: other writers' rows would
    /// be in them ([`ServerTally::server_wide`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_wide: bool,
    /// The counts are of the run's own devices alone ([`ServerTally::own_devices`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_devices: bool,
    /// The server merges exact duplicates into the row it holds
    /// ([`ServerTally::merges_duplicates`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merges_duplicates: bool,
    /// New series the server created during the run ([`ServerTally::series_created`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_created: Option<u64>,
}

/// What a run sent that the server acknowledged, for [`Stored::shortfall`]: its rows and
/// field values, and of them the workload's exact duplicates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acknowledged {
    pub rows: u64,
    pub metrics: u64,
    pub duplicate_rows: u64,
    pub duplicate_metrics: u64,
}

/// Why a report has no stored figure when the target has no way to count what it holds
/// (`stored_error`, `storage_error`): not a failure of the run.
pub const CANNOT_TELL: &str = "the target cannot tell";

/// What the server stored between `before` and `after`, or why the two cannot tell.
pub fn stored_between(before: &ServerTally, after: &ServerTally) -> Result<Stored, String> {
    if before.epoch != after.epoch {
        return Err(
            "the server restarted during the run, and its counters started again".to_string(),
        );
    }
    let grown = |what: &str, b: Option<u64>, a: Option<u64>| match (b, a) {
        (Some(b), Some(a)) if a >= b => Ok(Some(a - b)),
        (Some(b), Some(a)) => Err(format!(
            "the server's {what} went down during the run ({b} to {a}): something deleted or reset them"
        )),
        _ => Ok(None),
    };
    let rows = grown("row count", before.rows, after.rows)?;
    let samples = grown("sample count", before.samples, after.samples)?;
    let series_created = grown("series count", before.series_created, after.series_created)?;
    let refused = after
        .refused
        .iter()
        .filter_map(|(reason, a)| {
            let n = a.saturating_sub(before.refused.get(reason).copied().unwrap_or(0));
            (n > 0).then(|| (reason.clone(), n))
        })
        .collect();
    Ok(Stored {
        rows,
        samples,
        counts_every_sample: after.counts_every_sample,
        refused,
        server_wide: after.server_wide,
        own_devices: before.own_devices && after.own_devices,
        merges_duplicates: after.merges_duplicates,
        series_created,
    })
}

impl Stored {
    /// Why these counts cannot be this run's alone: they grew by more than the run sent
    /// (`rows` acknowledged with `metrics` field values, and `ambiguous_rows` whose answer
    /// was lost, which may be stored, even twice), so another writer is counted in them.
    /// `None` when they could be the run's.
    pub fn other_writers(&self, rows: u64, metrics: u64, ambiguous_rows: u64) -> Option<String> {
        let per_row = metrics.checked_div(rows).unwrap_or(0) + 1;
        let (what, held, sent) = match (self.rows, self.samples) {
            (Some(held), _) => ("rows", held, rows.saturating_add(ambiguous_rows)),
            (None, Some(held)) => (
                "samples",
                held,
                metrics.saturating_add(ambiguous_rows.saturating_mul(per_row)),
            ),
            (None, None) => return None,
        };
        (held > sent).then(|| {
            format!(
                "the server's {}counts grew by {held} {what} during the run, more than the \
                 {sent} this run sent: another writer is counted in them, so they cannot tell \
                 what this run stored",
                if self.server_wide { "server-wide " } else { "" }
            )
        })
    }

    /// Why the server holds less than it acknowledged (`sent`), naming what it says it
    /// refused; `None` when it holds all of it. Rows are compared exactly, and so are
    /// samples where the server counts every sample it was sent
    /// ([`Stored::counts_every_sample`]): a shortfall is one whether or not the server
    /// names a reason. Elsewhere (VictoriaMetrics skips line protocol's string fields)
    /// samples fall short when the server says it refused some, or holds none. A server
    /// that merges exact duplicates ([`Stored::merges_duplicates`]) owes the rows less the
    /// workload's duplicates.
    pub fn shortfall(&self, sent: Acknowledged) -> Option<String> {
        let refused: u64 = self.refused.values().sum();
        let (rows, metrics) = if self.merges_duplicates {
            (
                sent.rows.saturating_sub(sent.duplicate_rows),
                sent.metrics.saturating_sub(sent.duplicate_metrics),
            )
        } else {
            (sent.rows, sent.metrics)
        };
        let (what, held, acknowledged) = match (self.rows, self.samples) {
            (Some(held), _) if held < rows => ("rows", held, rows),
            (None, Some(held))
                if metrics > 0
                    && (held == 0
                        || (held < metrics && (refused > 0 || self.counts_every_sample))) =>
            {
                ("samples (field values)", held, metrics)
            }
            _ => return None,
        };
        let mut why = String::new();
        let owed = if self.merges_duplicates && sent.duplicate_rows > 0 {
            format!(
                "{acknowledged} it owes (what it acknowledged less the {} duplicate rows, {} \
                 samples, that it merges into their originals)",
                sent.duplicate_rows, sent.duplicate_metrics
            )
        } else {
            format!("{acknowledged} it acknowledged")
        };
        if !self.refused.is_empty() {
            let reasons: Vec<String> = self
                .refused
                .iter()
                .map(|(reason, n)| format!("{n} {reason}"))
                .collect();
            why.push_str(&format!(
                "; it says it refused or dropped: {}",
                reasons.join(", ")
            ));
        }
        // Prometheus merges a sample that repeats its series' timestamp and value into the
        // one it holds, and counts it nowhere: what no reason covers is named as that.
        let unexplained = acknowledged.saturating_sub(held).saturating_sub(refused);
        if self.counts_every_sample && self.rows.is_none() && unexplained > 0 {
            why.push_str(&format!(
                "; {unexplained} it names no reason for: a sample repeating its series' \
                 timestamp (a duplicate in the data) is merged into the one stored without a word"
            ));
        }
        Some(format!(
            "the server stored {held} new {what} of the {owed}{why}"
        ))
    }
}

/// The wall time the questions to the server took: before the clock started and after the
/// last write. Not in the run's elapsed time or rates; a server that publishes its
/// counters late (VictoriaMetrics) is waited for, about a second each.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerQuestions {
    pub before_s: f64,
    pub after_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(rows: u64, metrics: u64) -> Acknowledged {
        Acknowledged {
            rows,
            metrics,
            ..Acknowledged::default()
        }
    }

    fn tally(rows: Option<u64>, samples: Option<u64>, refused: &[(&str, u64)]) -> ServerTally {
        ServerTally {
            epoch: Some("t0".into()),
            rows,
            samples,
            counts_every_sample: false,
            refused: refused.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
            server_wide: false,
            own_devices: false,
            merges_duplicates: false,
            series_created: None,
        }
    }

    /// A server that merges exact duplicates owes the rows less the workload's duplicates:
    /// holding that many is no shortfall, holding fewer is, and says why it owed less. One
    /// that keeps them owes them all.
    #[test]
    fn duplicates_are_owed_only_by_a_server_that_keeps_them() {
        let sent = Acknowledged {
            rows: 110,
            metrics: 1_100,
            duplicate_rows: 10,
            duplicate_metrics: 100,
        };
        let merging = ServerTally {
            counts_every_sample: true,
            merges_duplicates: true,
            ..tally(None, Some(1_000), &[])
        };
        let zero = ServerTally {
            counts_every_sample: true,
            merges_duplicates: true,
            ..tally(None, Some(0), &[])
        };
        let s = stored_between(&zero, &merging).unwrap();
        assert!(s.merges_duplicates);
        assert_eq!(
            s.shortfall(sent),
            None,
            "1,000 of 1,100 less 100 duplicates"
        );
        let short = stored_between(
            &zero,
            &ServerTally {
                samples: Some(990),
                ..merging.clone()
            },
        )
        .unwrap();
        let why = short.shortfall(sent).expect("10 samples short");
        assert!(
            why.contains("990 new samples (field values) of the 1000 it owes")
                && why.contains("less the 10 duplicate rows, 100 samples"),
            "{why}"
        );
        let keeping =
            stored_between(&tally(Some(0), None, &[]), &tally(Some(100), None, &[])).unwrap();
        let why = keeping
            .shortfall(sent)
            .expect("it keeps duplicates: 10 rows short");
        assert!(
            why.contains("100 new rows of the 110 it acknowledged"),
            "{why}"
        );
    }

    #[test]
    fn the_difference_of_two_tallies() {
        let before = tally(Some(10), None, &[("small_timestamp", 5)]);
        let after = tally(
            Some(110),
            None,
            &[("small_timestamp", 5), ("big_timestamp", 2)],
        );
        let s = stored_between(&before, &after).unwrap();
        assert_eq!(s.rows, Some(100));
        assert_eq!(s.samples, None);
        assert_eq!(s.refused.get("big_timestamp"), Some(&2));
        assert!(!s.refused.contains_key("small_timestamp"));
    }

    #[test]
    fn a_restart_or_a_count_that_went_down_cannot_tell() {
        let before = tally(Some(10), None, &[]);
        let mut after = tally(Some(20), None, &[]);
        after.epoch = Some("t1".into());
        assert!(
            stored_between(&before, &after)
                .unwrap_err()
                .contains("restarted")
        );
        let after = tally(Some(5), None, &[]);
        assert!(
            stored_between(&before, &after)
                .unwrap_err()
                .contains("went down")
        );
    }

    #[test]
    fn a_shortfall_names_the_servers_reasons() {
        let s = Stored {
            rows: None,
            samples: Some(0),
            refused: [("small_timestamp".to_string(), 2_000)].into(),
            ..Stored::default()
        };
        let why = s.shortfall(sent(200, 2_000)).unwrap();
        assert!(
            why.contains("0 new samples") && why.contains("of the 2000"),
            "{why}"
        );
        assert!(why.contains("2000 small_timestamp"), "{why}");
        let all = Stored {
            rows: Some(200),
            ..Stored::default()
        };
        assert_eq!(all.shortfall(sent(200, 2_000)), None);
        // More than acknowledged (an ambiguous retry stored twice) is no shortfall.
        let more = Stored {
            samples: Some(2_010),
            ..Stored::default()
        };
        assert_eq!(more.shortfall(sent(200, 2_000)), None);
    }

    /// Prometheus answered 204 to a replay of every line twice and appended 500 samples of
    /// 1,000, naming no reason: that is a shortfall (it was "stored 500" and exit 0), and
    /// the message says what merges samples silently. A server that may skip string fields
    /// (VictoriaMetrics over line protocol) still needs a reason or nothing stored.
    #[test]
    fn a_sample_shortfall_is_one_whatever_the_server_says_where_it_counts_every_sample() {
        let prometheus = Stored {
            samples: Some(500),
            counts_every_sample: true,
            ..Stored::default()
        };
        let why = prometheus.shortfall(sent(100, 1_000)).expect("a shortfall");
        assert!(
            why.contains("500 new samples") && why.contains("of the 1000"),
            "{why}"
        );
        assert!(why.contains("duplicate"), "{why}");
        let vm_line_protocol = Stored {
            samples: Some(500),
            ..Stored::default()
        };
        assert_eq!(vm_line_protocol.shortfall(sent(100, 1_000)), None);
        // The flag survives the difference of two tallies.
        let mut before = tally(None, Some(10), &[]);
        before.counts_every_sample = true;
        let mut after = tally(None, Some(510), &[]);
        after.counts_every_sample = true;
        assert!(stored_between(&before, &after).unwrap().counts_every_sample);
    }

    /// Prometheus counted its own scrapes (331,174 samples for 330,000 written) and two
    /// shards into one VictoriaMetrics each counted the other's: counts that grew by more
    /// than the run sent are another writer's too.
    #[test]
    fn counts_that_grew_by_more_than_the_run_sent_are_not_the_runs() {
        let prometheus = Stored {
            samples: Some(331_174),
            counts_every_sample: true,
            server_wide: true,
            ..Stored::default()
        };
        let why = prometheus
            .other_writers(33_000, 330_000, 0)
            .expect("other writers");
        assert!(
            why.starts_with(
                "the server's server-wide counts grew by 331174 samples during the \
                             run, more than the 330000 this run sent"
            ),
            "{why}"
        );
        // Exactly what was sent, or less: could be the run's.
        assert_eq!(prometheus.other_writers(33_118, 331_174, 0), None);
        let rows = Stored {
            rows: Some(1_100),
            ..Stored::default()
        };
        // 100 rows whose answer was lost may be stored: up to 1,100 is this run's.
        assert_eq!(rows.other_writers(1_000, 10_000, 100), None);
        assert!(rows.other_writers(1_000, 10_000, 99).is_some());
        // Samples: each ambiguous row may hold its share of the fields.
        let samples = Stored {
            samples: Some(10_011),
            server_wide: true,
            ..Stored::default()
        };
        assert_eq!(samples.other_writers(1_000, 10_000, 1), None);
        assert!(samples.other_writers(1_000, 10_000, 0).is_some());
    }

    /// A shard's devices under churn: its slots in every generation, nothing else.
    #[test]
    fn a_device_set_is_its_slots_in_every_generation() {
        let set = DeviceSet::whole(10, 3).with_slots(5..10);
        assert_eq!(set.ranges().collect::<Vec<_>>(), [5..10, 15..20, 25..30]);
        assert_eq!(set.iter().count(), 15);
        for d in 0..40 {
            assert_eq!(set.contains(d), d < 30 && d % 10 >= 5, "{d}");
        }
        assert_eq!(RunScope::whole(4).devices, Some(DeviceSet::whole(4, 1)));
    }
}
