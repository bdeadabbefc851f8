//! The generators' state estimates against what their sources really allocate: an
//! allocator that counts live bytes measures the sources of every kind, for several
//! worker counts, so an estimate that falls behind a change of a generator's state fails
//! here. The count is per thread: what the test harness's other threads allocate
//! meanwhile (it did, now and then: 988 bytes in one of 60 runs) is not the sources'.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tsload_core::Workload;
use tsload_workload::{
    CpuOnly, Custom, CustomConfig, Devops, Iot, IotOptions, StateEstimate, TsbsConfig,
};

/// The system allocator, counting the bytes live, per thread.
struct Counting;

thread_local! {
    // `const`, without a destructor: reading it never allocates.
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count(bytes: i64) {
    // `try_with`: nothing to count once the thread's locals are gone.
    let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
}

fn live() -> i64 {
    LIVE.with(Cell::get)
}

// SAFETY: passes every call to the system allocator unchanged; only counts. (A global
// allocator cannot be written without `unsafe`; this one exists in this test alone.)
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes the sources of `workers` workers hold together.
fn sources_bytes(w: &dyn Workload, workers: usize) -> i64 {
    let before = live();
    let sources: Vec<_> = (0..workers).map(|i| w.source(i, workers)).collect();
    let held = live() - before;
    drop(sources);
    held
}

fn check(name: &str, w: &dyn Workload, e: StateEstimate) {
    assert_eq!(e.devices, w.schema().device_count, "{name}");
    for workers in [1usize, 3, 8] {
        let held = sources_bytes(w, workers);
        let estimate = e.bytes() as i64;
        // The estimate is the state that grows with the devices; each source adds a
        // little of its own (a box, a cursor).
        let slack = 512 * workers as i64;
        assert!(
            held >= estimate && held <= estimate + slack,
            "{name}, {workers} workers: the sources hold {held} bytes, the estimate is \
             {estimate} ({} bytes per device)",
            e.bytes_per_device
        );
    }
}

#[test]
fn estimates_match_what_the_sources_allocate() {
    let tsbs = TsbsConfig {
        seed: 7,
        scale: 10_000,
        start_ns: 0,
        end_ns: 10_000_000_000,
        interval_ns: 10_000_000_000,
        churn: None,
        arrival: tsload_workload::Arrival::default(),
        pods: 1,
        wave: None,
    };
    check(
        "cpu-only",
        &CpuOnly::new(tsbs).unwrap(),
        CpuOnly::state_estimate(&tsbs),
    );
    check(
        "devops",
        &Devops::new(tsbs).unwrap(),
        Devops::state_estimate(&tsbs),
    );
    let iot = Iot::new(tsbs, IotOptions::default()).unwrap();
    check("iot", &iot, Iot::state_estimate(&tsbs));
    let cfg = CustomConfig {
        childtable_count: 10_000,
        insert_rows: 1,
        ..CustomConfig::default()
    };
    check(
        "custom",
        &Custom::new(cfg.clone()).unwrap(),
        Custom::state_estimate(&cfg),
    );
    // The numbers the scenario's limits are checked with.
    let per = |e: StateEstimate| e.bytes_per_device;
    assert_eq!(
        [
            per(CpuOnly::state_estimate(&tsbs)),
            per(Devops::state_estimate(&tsbs)),
            per(Iot::state_estimate(&tsbs)),
            per(Custom::state_estimate(&cfg)),
        ],
        [24, 760, 88, 8]
    );
    let max = TsbsConfig {
        scale: u32::MAX,
        ..tsbs
    };
    assert_eq!(CpuOnly::state_estimate(&max).bytes(), 103_079_215_080);
}
