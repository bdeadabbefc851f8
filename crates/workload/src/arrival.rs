//! Rows as a real fleet delivers them, on any generated workload: a share of rows sent
//! late (after later rows of their device) and a share sent twice. [`ArrivalSource`] wraps
//! a workload's own source and reorders and repeats its rows, so each generator keeps its
//! plain loop and every one gets the same rules.
//!
//! Every decision is a hash of `(seed, table, device, timestamp)` and a device's rows all
//! come from one source in order, so the rows stay a pure function of the seed for any
//! number of workers.

use std::sync::Arc;

use tsload_core::schema::Schema;
use tsload_core::{Batch, BatchSource, TableBatch};

use crate::WorkloadError;
use crate::rng::{below, hash};

/// Whether 32 random bits fall under `ratio` (0 = never, 1 = always).
#[inline]
fn chance32(bits: u32, ratio: f64) -> bool {
    ratio > 0.0 && f64::from(bits) < ratio * 4_294_967_296.0
}

/// How rows arrive: the workload keys `out_of_order_ratio`, `out_of_order_max_steps` and
/// `duplicate_ratio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Share of rows sent late (0..=1): held back, then sent right after the first row of
    /// their device (and table) at least 1 and at most `out_of_order_max_steps` intervals
    /// later.
    pub out_of_order_ratio: f64,
    /// How many intervals late a late row comes, at most (at least 1).
    pub out_of_order_max_steps: u32,
    /// Share of rows sent twice (0..=1): the copy, the same in every value, right after.
    pub duplicate_ratio: f64,
}

impl Default for Arrival {
    /// Every row once, in order.
    fn default() -> Self {
        Arrival {
            out_of_order_ratio: 0.0,
            out_of_order_max_steps: 1,
            duplicate_ratio: 0.0,
        }
    }
}

/// Random stream ids of the decisions (the table is added).
/// One hash per row decides both whether it is held back (its high 32 bits) and whether
/// it is sent twice (its low 32 bits).
const ROW: u64 = 0x6c61_7465_0000;
const LATE_BY: u64 = 0x6c62_7900_0000;

impl Arrival {
    /// Every row once, in order: nothing to wrap.
    pub fn is_plain(&self) -> bool {
        self.out_of_order_ratio == 0.0 && self.duplicate_ratio == 0.0
    }

    /// Checks the settings. `kept` is the share of the data set's cells that have a row
    /// (iot's missing rows leave fewer).
    pub fn check(&self, kept: f64) -> Result<(), WorkloadError> {
        for (key, v) in [
            ("out_of_order_ratio", self.out_of_order_ratio),
            ("duplicate_ratio", self.duplicate_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(WorkloadError::new(
                    key,
                    format!("{v} is not between 0 and 1"),
                ));
            }
        }
        if self.out_of_order_max_steps == 0 {
            return Err(WorkloadError::new(
                "out_of_order_max_steps",
                "must be at least 1",
            ));
        }
        let most = 1.0 / (1.0 + self.blocked_rows(kept));
        if self.out_of_order_ratio > most {
            return Err(WorkloadError::new(
                "out_of_order_ratio",
                format!(
                    "{} (iot's default is 0.14) is more than a device can send late with \
                     out_of_order_max_steps = {}: a device holds back one row at a time, so at \
                     most {most:.3} of its rows are late; lower the ratio or the steps",
                    self.out_of_order_ratio, self.out_of_order_max_steps
                ),
            ));
        }
        Ok(())
    }

    /// The mean number of a device's rows sent while one of its rows is held back: those
    /// of the steps before it is due (each there with chance `kept`) and the one it
    /// follows.
    fn blocked_rows(&self, kept: f64) -> f64 {
        let mean_steps = (f64::from(self.out_of_order_max_steps) + 1.0) / 2.0;
        (mean_steps - 1.0) * kept + 1.0
    }

    /// The chance that a row free to be held back is: a device holds one row at a time,
    /// so the rows sent while it does cannot be, and the chance is raised to make the
    /// share of late rows `out_of_order_ratio` in the long run (a renewal: one late row
    /// per `1/p + blocked` rows).
    fn hold_chance(&self, kept: f64) -> f64 {
        let r = self.out_of_order_ratio;
        if r == 0.0 {
            return 0.0;
        }
        (r / (1.0 - r * self.blocked_rows(kept))).min(1.0)
    }
}

/// The last timestamp of `device`'s rows in table `table`: a row held back is due no
/// later, and the last row is never held (no later row would release it).
pub type LastRow = Arc<dyn Fn(usize, u32) -> i64 + Send + Sync>;

/// What the wrapper needs to know of a kind's rows.
pub(crate) struct KindRows {
    pub seed: u64,
    /// The time between two rows of a device, ns: a row is late by whole intervals.
    pub interval_ns: i64,
    /// The share of a device's cells that have a row (iot's missing rows leave fewer).
    pub kept: f64,
    pub last_row: LastRow,
    /// The kind counts the devices it writes ([`tsload_core::Workload::counts_devices`]).
    pub counts_devices: bool,
    /// The kind's device slots: a device's is its number modulo these ([`BySlot`]).
    pub slots: u32,
}

/// A row held back: its device, where it lies in the table's store and when it is due.
#[derive(Debug, Clone, Copy)]
struct Held {
    device: u32,
    row: usize,
    ts: i64,
    due: i64,
    /// A row of the device later than it was sent while it waited.
    newer_sent: bool,
}

/// One worker's state per device slot: a device's slot is its number modulo the kind's
/// slots (a slot's devices under churn come one after another and share it; pods have a
/// slot each), kept in a vector from the lowest slot seen (a worker's slots are a range),
/// so the memory is the worker's slots' however long a run churns, and a lookup is a few
/// nanoseconds (a map cost the wrapper a third of its time).
#[derive(Debug)]
struct BySlot<T> {
    slots: u32,
    base: u32,
    items: Vec<T>,
}

impl<T: Default + Clone> BySlot<T> {
    fn new(slots: u32) -> Self {
        BySlot {
            slots: slots.max(1),
            base: 0,
            items: Vec::new(),
        }
    }

    /// `device`'s slot: itself, but for a later generation under churn (no division per
    /// row on the plain path).
    #[inline]
    fn slot(&self, device: u32) -> u32 {
        if device < self.slots {
            device
        } else {
            device % self.slots
        }
    }

    fn get(&self, device: u32) -> Option<&T> {
        let i = self.slot(device).checked_sub(self.base)? as usize;
        self.items.get(i)
    }

    fn get_mut(&mut self, device: u32) -> Option<&mut T> {
        let i = self.slot(device).checked_sub(self.base)? as usize;
        self.items.get_mut(i)
    }

    /// `device`'s slot, made (as the default) if it was not yet.
    fn entry(&mut self, device: u32) -> &mut T {
        let slot = self.slot(device);
        if self.items.is_empty() {
            self.base = slot;
        } else if slot < self.base {
            let grow = (self.base - slot) as usize;
            self.items
                .splice(0..0, std::iter::repeat_n(T::default(), grow));
            self.base = slot;
        }
        let i = (slot - self.base) as usize;
        if i >= self.items.len() {
            self.items.resize(i + 1, T::default());
        }
        &mut self.items[i]
    }
}

/// The rows held back of one table's devices: a slot's device's, at most one.
type HeldByDevice = BySlot<Option<Held>>;

impl HeldByDevice {
    fn held(&self, device: u32) -> Option<&Held> {
        self.get(device)?.as_ref().filter(|h| h.device == device)
    }

    fn held_mut(&mut self, device: u32) -> Option<&mut Held> {
        self.get_mut(device)?
            .as_mut()
            .filter(|h| h.device == device)
    }

    fn remove(&mut self, device: u32) {
        if let Some(slot) = self.get_mut(device)
            && slot.is_some_and(|h| h.device == device)
        {
            *slot = None;
        }
    }

    /// The held rows, by slot.
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Held> {
        self.items.iter_mut().flatten()
    }

    /// The held row of the lowest slot holding one.
    fn first(&self) -> Option<Held> {
        self.items.iter().find_map(|h| *h)
    }
}

/// One table's rows held back, at most one per device.
#[derive(Debug)]
struct Store {
    rows: TableBatch,
    alive: usize,
    held: HeldByDevice,
}

impl Store {
    /// Rebuilds the store without the rows already sent, once they are most of it.
    fn compact(&mut self) {
        if self.rows.rows() < 1024 || self.alive * 2 > self.rows.rows() {
            return;
        }
        let mut rows = self.rows.clone();
        rows.clear();
        for h in self.held.iter_mut() {
            rows.push_row_from(&self.rows, h.row, h.ts);
            h.row = rows.rows() - 1;
        }
        self.rows = rows;
    }
}

/// What the row under the cursor sends, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// The row itself.
    Own,
    /// Its copy.
    OwnTwice,
    /// The device's held row, now due.
    Late,
    LateTwice,
}

/// What a row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// It is sent once, alone: it joins a run copied at once.
    Plain,
    /// It is held back.
    Hold,
    /// Its sends, in order.
    Sends([Option<Emit>; 4]),
}

/// A workload's source with late and duplicate rows ([`Arrival`]).
pub(crate) struct ArrivalSource {
    inner: Box<dyn BatchSource>,
    seed: u64,
    hold: f64,
    max_steps: u64,
    twice: f64,
    interval_ns: i64,
    last_row: LastRow,
    /// The inner source's rows, and the next of each table to place.
    buf: Batch,
    next: Vec<usize>,
    /// How far the row under the cursor has got in its sends (its decisions are the same
    /// each time they are made, so a full batch stops between two sends).
    sent: usize,
    inner_done: bool,
    stores: Vec<Store>,
    /// With series churn or pods, each slot's latest device (its number + 1) once a row of
    /// it is sent, so each device is counted in the batch holding its first row
    /// ([`Batch::devices_started`]; the inner source's count is of rows not yet placed).
    sent_devices: Option<BySlot<u32>>,
    /// Per table, each slot's device (+ 1) and its fields sent a value, a bit each: a
    /// series is counted with its first value ([`Batch::series_started`]).
    sent_series: Vec<BySlot<(u32, u64)>>,
    /// Rows of the inner source taken by this fill: no more than it asks for, so a live
    /// batch holds no row of a later time than it would without held rows.
    taken: usize,
}

impl ArrivalSource {
    pub fn new(
        inner: Box<dyn BatchSource>,
        schema: &Schema,
        arrival: Arrival,
        kind: KindRows,
    ) -> Self {
        let KindRows {
            seed,
            interval_ns,
            kept,
            last_row,
            counts_devices,
            slots,
        } = kind;
        let buf = Batch::for_schema(schema);
        let stores = Batch::for_schema(schema)
            .tables
            .into_iter()
            .map(|rows| Store {
                rows,
                alive: 0,
                held: HeldByDevice::new(slots),
            })
            .collect();
        ArrivalSource {
            inner,
            seed,
            hold: arrival.hold_chance(kept),
            max_steps: u64::from(arrival.out_of_order_max_steps),
            twice: arrival.duplicate_ratio,
            interval_ns: interval_ns.max(1),
            last_row,
            next: vec![0; buf.tables.len()],
            buf,
            sent: 0,
            inner_done: false,
            stores,
            sent_devices: counts_devices.then(|| BySlot::new(slots)),
            sent_series: (0..schema.tables.len())
                .filter(|_| counts_devices)
                .map(|_| BySlot::new(slots))
                .collect(),
            taken: 0,
        }
    }

    /// Counts `device` in `out` if none of its rows was sent before, and the series of
    /// `table` whose first value is among `valued` (the sent row's fields with a value).
    fn count_device(&mut self, out: &mut Batch, table: usize, device: u32, valued: u64) {
        let Some(devices) = &mut self.sent_devices else {
            return;
        };
        // A slot's devices come in rising numbers (a generation's is the slot plus a
        // multiple of the slots), but the tables of a batch are placed one after another:
        // a lower number is a device counted already.
        let seen = devices.entry(device);
        if device + 1 > *seen {
            *seen = device + 1;
            out.devices_started += 1;
        }
        let (seen, fields) = self.sent_series[table].entry(device);
        if device + 1 > *seen {
            (*seen, *fields) = (device + 1, 0);
        }
        if device + 1 == *seen {
            out.series_started += u64::from((valued & !*fields).count_ones());
            *fields |= valued;
        }
    }

    /// The row's hash: its decisions.
    fn row_hash(&self, table: usize, device: u32, ts: i64) -> u64 {
        hash(self.seed, ROW + table as u64, device as u64, ts as u64)
    }

    /// Whether the row of `h` ([`Self::row_hash`]) is sent twice.
    fn twice(&self, h: u64) -> bool {
        chance32(h as u32, self.twice)
    }

    /// What row `row` of table `table` does.
    fn plan(&self, table: usize, row: usize) -> Plan {
        let t = &self.buf.tables[table];
        let (device, ts) = (t.device[row], t.ts[row]);
        let held = self.stores[table].held.held(device);
        let h = self.row_hash(table, device, ts);
        if held.is_none()
            && chance32((h >> 32) as u32, self.hold)
            && ts < (self.last_row)(table, device)
        {
            return Plan::Hold;
        }
        let twice = self.twice(h);
        let due = held.filter(|h| ts >= h.due);
        if !twice && due.is_none() {
            return Plan::Plain;
        }
        let mut out = [Some(Emit::Own), None, None, None];
        let mut i = 1;
        if twice {
            out[i] = Some(Emit::OwnTwice);
            i += 1;
        }
        if let Some(h) = due {
            out[i] = Some(Emit::Late);
            if self.twice(self.row_hash(table, device, h.ts)) {
                out[i + 1] = Some(Emit::LateTwice);
            }
        }
        Plan::Sends(out)
    }

    /// Holds row `row` of `table` back until a row of its device at least one and at most
    /// `max_steps` intervals later.
    fn hold_back(&mut self, table: usize, row: usize) {
        let t = &self.buf.tables[table];
        let (device, ts) = (t.device[row], t.ts[row]);
        let by = 1 + below(
            hash(self.seed, LATE_BY + table as u64, device as u64, ts as u64),
            self.max_steps,
        ) as i64;
        let due = ts
            .saturating_add(by.saturating_mul(self.interval_ns))
            .min((self.last_row)(table, device));
        let store = &mut self.stores[table];
        store.rows.push_row_from(t, row, ts);
        store.alive += 1;
        *store.held.entry(device) = Some(Held {
            device,
            row: store.rows.rows() - 1,
            ts,
            due,
            newer_sent: false,
        });
    }

    /// Copies the plain rows `from..to` of `table` at once; a device holding a row back
    /// learns that a newer one was sent.
    fn send_run(&mut self, out: &mut Batch, table: usize, from: usize, to: usize) {
        if from == to {
            return;
        }
        out.tables[table].extend_from(&self.buf.tables[table], from..to);
        if self.sent_devices.is_some() {
            for row in from..to {
                let t = &self.buf.tables[table];
                let (device, valued) = (t.device[row], t.valued_fields(row));
                self.count_device(out, table, device, valued);
            }
        }
        let t = &self.buf.tables[table];
        let store = &mut self.stores[table];
        if store.alive > 0 {
            for row in from..to {
                if let Some(h) = store.held.held_mut(t.device[row]) {
                    h.newer_sent |= t.ts[row] > h.ts;
                }
            }
        }
    }

    /// Places the rows of `buf` into `out` until it holds `max_rows`; `false` when `buf`
    /// has none left.
    fn place(&mut self, out: &mut Batch, n: &mut usize, max_rows: usize) -> bool {
        for table in 0..self.buf.tables.len() {
            // Plain rows from `run` on are copied together when something else comes.
            let mut run = self.next[table];
            while self.next[table] < self.buf.tables[table].rows() {
                let row = self.next[table];
                // A new row only while this fill has taken fewer than it asks for.
                if self.sent == 0 && self.taken >= max_rows && *n > 0 {
                    self.send_run(out, table, run, row);
                    return true;
                }
                let sends = match self.plan(table, row) {
                    Plan::Plain if *n < max_rows => {
                        *n += 1;
                        self.taken += 1;
                        self.next[table] += 1;
                        continue;
                    }
                    Plan::Plain => {
                        self.send_run(out, table, run, row);
                        return true;
                    }
                    Plan::Hold => {
                        self.send_run(out, table, run, row);
                        self.taken += 1;
                        self.hold_back(table, row);
                        self.next[table] += 1;
                        run = self.next[table];
                        continue;
                    }
                    Plan::Sends(sends) => sends,
                };
                self.send_run(out, table, run, row);
                if self.sent == 0 {
                    self.taken += 1;
                }
                let (device, ts) = {
                    let t = &self.buf.tables[table];
                    (t.device[row], t.ts[row])
                };
                for emit in sends.iter().flatten().skip(self.sent) {
                    if *n == max_rows {
                        return true;
                    }
                    let o = &mut out.tables[table];
                    match emit {
                        Emit::Own | Emit::OwnTwice => {
                            o.push_row_from(&self.buf.tables[table], row, ts);
                        }
                        Emit::Late | Emit::LateTwice => {
                            let store = &self.stores[table];
                            let h = store.held.held(device).copied().expect("a held row");
                            o.push_row_from(&store.rows, h.row, h.ts);
                        }
                    }
                    if matches!(emit, Emit::Own | Emit::Late) {
                        let o = &out.tables[table];
                        let valued = o.valued_fields(o.rows() - 1);
                        self.count_device(out, table, device, valued);
                    }
                    match emit {
                        Emit::OwnTwice | Emit::LateTwice => {
                            out.duplicate_rows += 1;
                            let o = &out.tables[table];
                            out.duplicate_metrics += o.row_metrics(o.rows() - 1);
                        }
                        Emit::Late => {
                            let h = self.stores[table].held.held(device).expect("a held row");
                            if h.newer_sent || ts > h.ts {
                                out.late_rows += 1;
                            }
                        }
                        Emit::Own => {}
                    }
                    *n += 1;
                    self.sent += 1;
                }
                // Every send of the row is out: the held row goes, or learns of a newer.
                self.sent = 0;
                self.next[table] += 1;
                run = self.next[table];
                let store = &mut self.stores[table];
                if sends.contains(&Some(Emit::Late)) {
                    store.held.remove(device);
                    store.alive -= 1;
                    store.compact();
                } else if let Some(h) = store.held.held_mut(device) {
                    h.newer_sent |= ts > h.ts;
                }
            }
            let end = self.next[table];
            self.send_run(out, table, run, end);
        }
        false
    }

    /// Sends the rows still held once the data has ended (none are due later than the
    /// device's last row, so these are rows whose device's last rows are missing).
    fn flush(&mut self, out: &mut Batch, n: &mut usize, max_rows: usize) {
        for table in 0..self.stores.len() {
            while let Some(h) = self.stores[table].held.first() {
                let device = h.device;
                let twice = self.twice(self.row_hash(table, device, h.ts));
                let sends = 1 + usize::from(twice);
                while self.sent < sends {
                    if *n == max_rows {
                        return;
                    }
                    let store = &self.stores[table];
                    out.tables[table].push_row_from(&store.rows, h.row, h.ts);
                    if self.sent == 0 {
                        let valued = store.rows.valued_fields(h.row);
                        self.count_device(out, table, device, valued);
                        out.late_rows += u64::from(h.newer_sent);
                    } else {
                        out.duplicate_rows += 1;
                        out.duplicate_metrics += store.rows.row_metrics(h.row);
                    }
                    *n += 1;
                    self.sent += 1;
                }
                self.sent = 0;
                let store = &mut self.stores[table];
                store.held.remove(device);
                store.alive -= 1;
            }
        }
    }
}

impl BatchSource for ArrivalSource {
    fn fill(&mut self, out: &mut Batch, max_rows: usize) -> usize {
        let mut n = 0;
        self.taken = 0;
        // At least one row unless none is left: 0 is the end of the data.
        while n < max_rows && (self.taken < max_rows || n == 0) {
            if self.place(out, &mut n, max_rows) {
                break;
            }
            if self.inner_done {
                self.flush(out, &mut n, max_rows);
                break;
            }
            self.buf.clear();
            self.next.iter_mut().for_each(|r| *r = 0);
            if self.inner.fill(&mut self.buf, max_rows) == 0 {
                self.inner_done = true;
            }
        }
        for t in &mut out.tables {
            t.finish_validity();
        }
        n
    }
}
