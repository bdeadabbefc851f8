//! The workload seam: a [`Workload`] describes a data set and hands each worker a
//! [`BatchSource`] over a disjoint slice of its devices.

use crate::batch::Batch;
use crate::schema::Schema;

/// A deterministic data set (a seed fixes every value).
use crate::stored::RunScope;

pub trait Workload: Send + Sync {
    fn schema(&self) -> &Schema;

    /// Rows in the whole data set, when finite and known.
    fn total_rows(&self) -> Option<u64>;

    /// The source of worker `worker` of `workers`. The union of the rows of all sources
    /// `0..workers` is exactly the data set, whatever `workers` is.
    fn source(&self, worker: usize, workers: usize) -> Box<dyn BatchSource>;

    /// Like [`Workload::source`], but each batch also carries its rows as line protocol
    /// ([`crate::LineText`]) with timestamps in units of `unit_ns` nanoseconds, and its
    /// tables hold only devices and timestamps: for a sink that sends such text as it is
    /// ([`crate::Sink::line_text_unit_ns`]). `None` (the default) where the workload has
    /// no such text in that unit; the engine then uses [`Workload::source`].
    fn text_source(
        &self,
        _worker: usize,
        _workers: usize,
        _unit_ns: i64,
    ) -> Option<Box<dyn BatchSource>> {
        None
    }

    /// An error a source met during the run (say, a replayed file that changed after it
    /// was opened); the sources then ran dry early, so the run must not pass as complete.
    fn source_error(&self) -> Option<String> {
        None
    }

    /// Whose rows this workload writes, for the stored check to count: a generator that
    /// splits its data by device ([`device_range`]) names its devices
    /// ([`RunScope::whole`]). The default names none, which leaves the check counting
    /// whole tables.
    fn scope(&self) -> RunScope {
        RunScope::default()
    }

    /// Whether the sources count the devices they start ([`Batch::devices_started`]):
    /// with series churn or pods, where the devices written are not simply the schema's
    /// (the default: no).
    fn counts_devices(&self) -> bool {
        false
    }
}

/// Streams one worker's rows into reusable batches, in constant memory.
pub trait BatchSource: Send {
    /// Appends up to `max_rows` rows to `batch` (which the caller has cleared) and returns
    /// how many it appended; 0 means the source is exhausted.
    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> usize;
}

/// Devices `[start, end)` of worker `worker` when `devices` devices are split over
/// `workers` workers as evenly as possible.
pub fn device_range(devices: u32, worker: usize, workers: usize) -> std::ops::Range<u32> {
    let workers = workers.max(1) as u64;
    let d = devices as u64;
    let w = worker as u64;
    let start = d * w / workers;
    let end = d * (w + 1) / workers;
    start as u32..end as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges_partition_all_devices() {
        for devices in [0u32, 1, 7, 100, 1001] {
            for workers in [1usize, 3, 8, 200] {
                let mut next = 0;
                for w in 0..workers {
                    let r = device_range(devices, w, workers);
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, devices);
            }
        }
    }
}
