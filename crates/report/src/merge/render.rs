//! The merged report's text: the whole run's table, then one line per shard.

use std::fmt::Write as _;

use crate::query_report::QuerySummary;
use crate::report::{Summary, group};

use super::Merged;

/// The report's own text table.
pub trait RenderText {
    fn render_text(&self) -> String;
}

impl RenderText for Summary {
    fn render_text(&self) -> String {
        Summary::render_text(self)
    }
}

impl RenderText for QuerySummary {
    fn render_text(&self) -> String {
        QuerySummary::render_text(self)
    }
}

impl<S: RenderText> Merged<S> {
    /// The merged report's text: the whole run's table, then one line per shard.
    pub fn render_text(&self) -> String {
        let mut s = self.summary.render_text();
        let _ = writeln!(
            s,
            "  merged from {} shard report(s); rates over the union of their windows; client CPU and RSS summed",
            self.shards.len()
        );
        let _ = writeln!(
            s,
            "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>12} {:>9} {:>8} {:>5}  stopped",
            "shard", "host", "requests", "rows", "stored", "rows/s", "elapsed", "cpu s", "exit"
        );
        for l in &self.shards {
            let _ = writeln!(
                s,
                "  {:<7} {:<16} {:>14} {:>12} {:>12} {:>12} {:>8.3}s {:>8.2} {:>5}  {}",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.host.as_deref().unwrap_or("-"),
                group(l.requests),
                group(l.rows),
                l.stored.map_or_else(|| "-".to_string(), group),
                group(l.rows_per_s.round() as u64),
                l.elapsed_s,
                l.client.cpu_s,
                l.exit.map_or_else(|| "-".to_string(), |c| c.to_string()),
                l.stop_reason
            );
        }
        // A shard that did not pass is in the sums: said, not left to the column.
        for l in self
            .shards
            .iter()
            .filter(|l| l.exit.is_some_and(|c| c != 0))
        {
            let _ = writeln!(
                s,
                "  shard {} ({}) exited {}: its figures are in the sums above; see its report",
                l.shard.map_or_else(|| "-".to_string(), |s| s.to_string()),
                l.source,
                l.exit.unwrap_or_default()
            );
        }
        s
    }
}
