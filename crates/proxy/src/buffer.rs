//! The proxy's memory for bytes in transit, and how it is counted.
//!
//! An idle connection holds no buffer. Reads go into the runtime thread's own scratch
//! buffer ([`with_scratch`], 64 KiB per thread, shared by every connection the thread
//! runs) and are written on at once; only what a receiver does not take at once is kept,
//! in a [`Held`] buffer of the connection, given back once the lane has caught up and
//! waits for more to read (a lane watched by faults keeps one 64 KiB buffer from its first
//! bytes on: its writes may wait on the faults). A delay line queues each chunk in an allocation of its own size,
//! and counts its [`footprint`] (the allocation as the allocator rounds it, plus the queue
//! entry), not its payload, against [`crate::ProxyConfig::queue_limit`]: a thousand 1-byte
//! chunks take some 80 KB, not 1 KB.
//!
//! Everything held is added to one counter, [`crate::ProxyStats::buffered_bytes`], when it
//! is allocated and taken off when it is freed, also when a connection is dropped.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Size of each runtime thread's scratch buffer: the most one read takes.
pub(crate) const SCRATCH: usize = 64 * 1024;

thread_local! {
    static SCRATCH_BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0u8; SCRATCH].into_boxed_slice());
}

/// Runs `f` on this thread's scratch buffer. `f` must not await (it cannot: it is not
/// async) nor call `with_scratch` again (it would panic).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut [u8]) -> R) -> R {
    SCRATCH_BUF.with_borrow_mut(|buf| f(buf))
}

/// What the queue entry of a chunk costs besides its data: the entry itself (a release
/// instant and a `Vec`, 40 bytes), its share of the queue's block header, and the
/// allocator's header of the data's allocation (16 bytes with glibc).
const ENTRY_OVERHEAD: usize = 64;

/// The memory a queued chunk whose data has `capacity` bytes of allocation takes: the
/// allocation rounded up to the allocator's 16-byte granule, plus [`ENTRY_OVERHEAD`]: 80
/// bytes for a 1-byte chunk, 64 KiB + 64 for a full one.
pub(crate) const fn footprint(capacity: usize) -> usize {
    capacity.next_multiple_of(16) + ENTRY_OVERHEAD
}

/// A byte buffer whose capacity is counted in a shared counter while it is allocated.
#[derive(Debug)]
pub(crate) struct Held<'a> {
    data: Vec<u8>,
    counter: &'a AtomicU64,
}

impl<'a> Held<'a> {
    /// An empty buffer, no allocation.
    pub(crate) fn new(counter: &'a AtomicU64) -> Self {
        Held {
            data: Vec::new(),
            counter,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Appends `bytes` (allocating or growing as needed; the growth is counted).
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        let before = self.data.capacity();
        self.data.extend_from_slice(bytes);
        self.count(before);
    }

    /// `len` zero bytes to read into (allocated if the buffer is empty).
    pub(crate) fn zeroed(&mut self, len: usize) -> &mut [u8] {
        if self.data.len() < len {
            let before = self.data.capacity();
            self.data.resize(len, 0);
            self.count(before);
        }
        &mut self.data[..len]
    }

    /// Forgets the contents, keeps the allocation.
    pub(crate) fn clear(&mut self) {
        self.data.clear();
    }

    /// Frees the allocation.
    pub(crate) fn release(&mut self) {
        let capacity = self.data.capacity();
        if capacity > 0 {
            self.data = Vec::new();
            self.counter.fetch_sub(capacity as u64, Ordering::Relaxed);
        }
    }

    fn count(&self, before: usize) {
        let after = self.data.capacity();
        if after > before {
            self.counter
                .fetch_add((after - before) as u64, Ordering::Relaxed);
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// The part of a shared counter that one delay line has added: taken off the shared
/// counter when the line ends, with whatever it still queues.
#[derive(Debug)]
pub(crate) struct Share<'a> {
    counter: &'a AtomicU64,
    mine: AtomicU64,
}

impl<'a> Share<'a> {
    pub(crate) fn new(counter: &'a AtomicU64) -> Self {
        Share {
            counter,
            mine: AtomicU64::new(0),
        }
    }

    pub(crate) fn add(&self, n: usize) {
        self.mine.fetch_add(n as u64, Ordering::Relaxed);
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, n: usize) {
        self.mine.fetch_sub(n as u64, Ordering::Relaxed);
        self.counter.fetch_sub(n as u64, Ordering::Relaxed);
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        let mine = *self.mine.get_mut();
        self.counter.fetch_sub(mine, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_counts_its_allocation_and_gives_it_back() {
        let counter = AtomicU64::new(0);
        {
            let mut held = Held::new(&counter);
            assert_eq!(counter.load(Ordering::Relaxed), 0);
            held.extend(&[1, 2, 3]);
            let cap = counter.load(Ordering::Relaxed);
            assert!(cap >= 3, "{cap}");
            held.clear();
            held.extend(&[4]);
            assert_eq!(counter.load(Ordering::Relaxed), cap, "reused, not grown");
            held.zeroed(1000);
            assert!(counter.load(Ordering::Relaxed) >= 1000);
            held.release();
            assert_eq!(counter.load(Ordering::Relaxed), 0);
            held.extend(&[5; 100]);
        }
        assert_eq!(counter.load(Ordering::Relaxed), 0, "dropped");
    }

    #[test]
    fn share_gives_back_what_is_left_on_drop() {
        let counter = AtomicU64::new(7);
        {
            let share = Share::new(&counter);
            share.add(100);
            share.add(50);
            share.sub(100);
            assert_eq!(counter.load(Ordering::Relaxed), 57);
        }
        assert_eq!(counter.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn footprint_counts_more_than_the_payload() {
        assert_eq!(footprint(1), 80);
        assert_eq!(footprint(16), 80);
        assert_eq!(footprint(17), 96);
        assert!(footprint(64 * 1024) > 64 * 1024);
    }

    #[test]
    fn scratch_is_per_thread_and_sized() {
        let a = with_scratch(|b| b.as_ptr() as usize);
        assert_eq!(with_scratch(|b| b.len()), SCRATCH);
        let b = std::thread::spawn(|| with_scratch(|b| b.as_ptr() as usize))
            .join()
            .unwrap();
        assert_ne!(a, b);
    }
}
