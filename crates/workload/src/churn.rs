//! Series churn: device slots whose devices are replaced by new ones over data time, as a
//! fleet of containers or pods has it (TSBS's kinds and custom alike).

/// Series churn, as a fleet of containers or pods has it: each of the `scale` device slots
/// holds a device for `lifetime_ns` of data time, then a new one (a new device number,
/// `slot + generation * scale`, so new tags and new series; the old one stops). The slots
/// are staggered evenly over the lifetime, so a share `interval / lifetime` of them turns
/// over in any `interval`: a churn ratio `r` per churn interval `i` is a lifetime of
/// `i / r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Churn {
    pub lifetime_ns: i64,
}

impl Churn {
    /// The churn that replaces `ratio` (0 < ratio <= 1) of the devices every `interval_ns`.
    pub fn of_ratio(ratio: f64, interval_ns: i64) -> Churn {
        Churn {
            lifetime_ns: ((interval_ns as f64 / ratio).round() as i64).max(1),
        }
    }

    /// Slot `slot` of `scale`'s generation `offset_ns` after the data set's start, and the
    /// offset at which its next generation starts.
    pub fn generation(&self, slot: u32, scale: u32, offset_ns: i64) -> (u32, i64) {
        let life = i128::from(self.lifetime_ns);
        let phase = i128::from(slot) * life / i128::from(scale.max(1));
        let g = (i128::from(offset_ns.max(0)) + phase) / life;
        let next = (g + 1) * life - phase;
        (
            u32::try_from(g).unwrap_or(u32::MAX),
            i64::try_from(next).unwrap_or(i64::MAX),
        )
    }

    /// The last step (of `interval_ns` from the data set's start) in the life of
    /// `device`, generation `device / slots` of slot `device % slots`.
    pub fn last_step(&self, device: u32, slots: u32, interval_ns: i64) -> u64 {
        let slots = slots.max(1);
        let (slot, g) = (device % slots, device / slots);
        let life = i128::from(self.lifetime_ns);
        let phase = i128::from(slot) * life / i128::from(slots);
        // Generation g lives until (g + 1) * life - phase after the start.
        let end = (i128::from(g) + 1) * life - phase;
        u64::try_from((end - 1).max(0) / i128::from(interval_ns.max(1))).unwrap_or(u64::MAX)
    }

    /// The generations a data set of `span_ns` reaches (in its last slot, the most).
    pub fn generations(&self, scale: u32, span_ns: i64) -> u32 {
        self.generation(scale.saturating_sub(1), scale, span_ns)
            .0
            .saturating_add(1)
    }
}
