//! The process's one budget for answers held in memory: every query answer an HTTP target
//! reads whole, and every SQL connection's read buffer past its first size, counts against
//! [`PROCESS_ANSWER_BYTES`] until it is let go. Each answer is capped on its own too (64
//! MiB); without this, `query.workers` answers of 64 MiB could be held at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The most bytes of answers all of a process's workers hold at once.
pub const PROCESS_ANSWER_BYTES: usize = 256 << 20;

/// Bytes held now, by every [`Held`] of the process.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// More answer bytes than the process may hold at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the answers this process holds at once would pass {cap} bytes (tsload's cap for all \
     workers together; {held} held, {asked} more asked): run fewer workers, or queries with \
     smaller answers",
    cap = PROCESS_ANSWER_BYTES
)]
pub struct OverBudget {
    pub held: usize,
    pub asked: usize,
}

/// Bytes counted against the budget, given back when dropped.
#[derive(Debug, Default)]
pub struct Held(usize);

impl Held {
    /// Counts `more` bytes, or refuses when the process would hold more than
    /// [`PROCESS_ANSWER_BYTES`].
    pub fn grow(&mut self, more: usize) -> Result<(), OverBudget> {
        let before = HELD.fetch_add(more, Ordering::Relaxed);
        if before.saturating_add(more) > PROCESS_ANSWER_BYTES {
            HELD.fetch_sub(more, Ordering::Relaxed);
            return Err(OverBudget {
                held: before,
                asked: more,
            });
        }
        self.0 += more;
        Ok(())
    }

    /// The bytes this holds.
    pub fn bytes(&self) -> usize {
        self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(self.0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers of many workers together stop at the process's cap, and what one lets go
    /// is there for the next.
    #[test]
    fn answers_held_at_once_stop_at_the_process_cap() {
        let mut a = Held::default();
        a.grow(200 << 20).unwrap();
        let mut b = Held::default();
        let e = b.grow(100 << 20).unwrap_err();
        assert_eq!(e.asked, 100 << 20);
        assert!(
            e.to_string().contains(&PROCESS_ANSWER_BYTES.to_string()),
            "{e}"
        );
        assert_eq!(b.bytes(), 0);
        drop(a);
        b.grow(100 << 20).unwrap();
        assert_eq!(b.bytes(), 100 << 20);
    }
}
