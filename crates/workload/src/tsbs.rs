//! What TSBS's use cases share: the time grid (`start`, `end`, `interval`), the host tags
//! of `cpu-only` and `devops` (hostname, region, datacenter, ... with TSBS's names and value
//! sets), and the cursor that walks steps and devices in TSBS's order.

use std::borrow::Cow;

use tsload_core::schema::{DataType, FieldDef, TagDef, TagSource, TagValue};

use crate::WorkloadError;
use crate::arrival::Arrival;
use crate::churn::Churn;
use crate::rng::{below, hash};

/// Settings of the TSBS use cases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TsbsConfig {
    pub seed: u64,
    /// Number of hosts (trucks for `iot`).
    pub scale: u32,
    /// First timestamp, ns since the Unix epoch.
    pub start_ns: i64,
    /// End of the data set (exclusive), ns since the Unix epoch.
    pub end_ns: i64,
    /// Time between two readings of a device, ns.
    pub interval_ns: i64,
    /// Series churn: devices replaced by new ones as time goes on (`None`: the same
    /// `scale` devices throughout).
    pub churn: Option<Churn>,
    /// Rows sent late or twice.
    pub arrival: Arrival,
    /// High cardinality: each host's rows carry one of its `pods` pods in turn (a `pod`
    /// tag), so there are `pods` times the series at the same rows per second (1: no pod
    /// tag). Device `slot + pod * scale` is the host `slot`'s pod `pod`.
    pub pods: u32,
    /// cpu-only's usage fields following a shape instead of TSBS's random walk.
    pub wave: Option<crate::Wave>,
}

/// The devices of a TSBS data set for the stored check: every slot, in each generation.
pub(crate) fn scope(cfg: &TsbsConfig) -> tsload_core::stored::RunScope {
    tsload_core::stored::RunScope {
        devices: Some(tsload_core::stored::DeviceSet::whole(
            cfg.scale,
            cfg.generations(),
        )),
        part: None,
    }
}

/// A device slot's current device under churn: its number and when it is replaced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotDevice {
    pub device: u32,
    /// Data time (ns since the epoch) at which the slot's next device starts.
    pub until_ns: i64,
}

impl SlotDevice {
    /// Slot `slot`'s device at `ts` under `churn` (the slot's own number without churn).
    pub fn at(cfg: &TsbsConfig, slot: u32, ts: i64) -> SlotDevice {
        match cfg.churn {
            None => SlotDevice {
                device: slot,
                until_ns: i64::MAX,
            },
            Some(c) => {
                let (g, next) = c.generation(slot, cfg.scale, ts.saturating_sub(cfg.start_ns));
                SlotDevice {
                    device: slot.saturating_add(g.saturating_mul(cfg.scale)),
                    until_ns: cfg.start_ns.saturating_add(next),
                }
            }
        }
    }
}

impl TsbsConfig {
    /// Checks the settings and returns the number of time steps.
    pub(crate) fn steps(&self) -> Result<u64, WorkloadError> {
        if self.scale == 0 {
            return Err(WorkloadError::new("scale", "must be at least 1"));
        }
        if self.interval_ns <= 0 {
            return Err(WorkloadError::new("interval", "must be positive"));
        }
        if self.end_ns <= self.start_ns {
            return Err(WorkloadError::new("end", "must be later than start"));
        }
        if self.pods == 0 {
            return Err(WorkloadError::new("pods_per_host", "must be at least 1"));
        }
        if self.pods > 1 && self.churn.is_some() {
            return Err(WorkloadError::new(
                "pods_per_host",
                "pods do not go with series churn yet (churn_ratio): set one or the other",
            ));
        }
        let span = self.end_ns as i128 - self.start_ns as i128;
        let steps = (span + self.interval_ns as i128 - 1) / self.interval_ns as i128;
        self.device_count()?;
        Ok(steps as u64)
    }

    /// The devices of the data set: `scale`, or with churn `scale` in each generation, or
    /// with pods `scale` times `pods`.
    pub fn device_count(&self) -> Result<u32, WorkloadError> {
        if self.pods > 1 {
            return self.scale.checked_mul(self.pods).ok_or_else(|| {
                WorkloadError::new(
                    "pods_per_host",
                    format!(
                        "{} hosts of {} pods are more than 4,294,967,295 devices",
                        self.scale, self.pods
                    ),
                )
            });
        }
        let Some(churn) = self.churn else {
            return Ok(self.scale);
        };
        if churn.lifetime_ns <= 0 {
            return Err(WorkloadError::new("churn", "the lifetime must be positive"));
        }
        let generations = churn.generations(self.scale, self.end_ns.saturating_sub(self.start_ns));
        self.scale.checked_mul(generations).ok_or_else(|| {
            WorkloadError::new(
                "churn_ratio",
                format!(
                    "{} hosts in {generations} generations are more than 4,294,967,295 devices: \
                     churn less, or over a shorter span",
                    self.scale
                ),
            )
        })
    }

    /// The generations of churn the data set reaches (1 without churn); with pods, the
    /// pods (a slot's devices are numbered as generations are).
    pub fn generations(&self) -> u32 {
        if self.pods > 1 {
            return self.pods;
        }
        self.churn.map_or(1, |c| {
            c.generations(self.scale, self.end_ns.saturating_sub(self.start_ns))
        })
    }
}

/// `source` with the late and duplicate rows of `cfg.arrival` (as it is without them).
pub(crate) fn with_arrival(
    cfg: &TsbsConfig,
    steps: u64,
    schema: &tsload_core::schema::Schema,
    source: Box<dyn tsload_core::BatchSource>,
) -> Box<dyn tsload_core::BatchSource> {
    if cfg.arrival.is_plain() {
        return source;
    }
    let c = *cfg;
    // A pod sends a row every `pods` intervals: late by its own readings.
    let interval = cfg.interval_ns.saturating_mul(i64::from(cfg.pods.max(1)));
    Box::new(crate::arrival::ArrivalSource::new(
        source,
        schema,
        cfg.arrival,
        crate::arrival::KindRows {
            seed: cfg.seed,
            interval_ns: interval,
            kept: 1.0,
            last_row: std::sync::Arc::new(move |_, device| last_row(&c, steps, device)),
            counts_devices: cfg.churn.is_some() || cfg.pods > 1,
            slots: cfg.scale.saturating_mul(cfg.pods.max(1)),
        },
    ))
}

/// The time of `device`'s last row in a data set of `steps` steps: the last step, or with
/// churn the last of its generation's life, or with pods the last step that is its pod's
/// turn.
pub(crate) fn last_row(cfg: &TsbsConfig, steps: u64, device: u32) -> i64 {
    let scale = cfg.scale.max(1);
    let last_step = steps.saturating_sub(1);
    let at = |step: u64| {
        cfg.start_ns
            .saturating_add((step as i64).saturating_mul(cfg.interval_ns))
    };
    if cfg.pods > 1 {
        let (slot, pod) = (u64::from(device % scale), u64::from(device / scale));
        let pods = u64::from(cfg.pods);
        let turn = (last_step + slot) % pods;
        return at(last_step.saturating_sub((turn + pods - pod) % pods));
    }
    let Some(churn) = cfg.churn else {
        return at(last_step);
    };
    at(churn
        .last_step(device, scale, cfg.interval_ns)
        .min(last_step))
}

/// TSBS's time-major order over one worker's devices: every device at step 0, then
/// every device at step 1, and so on.
#[derive(Debug, Clone)]
pub(crate) struct StepCursor {
    pub step: u64,
    pub steps: u64,
    /// Index of the device within the worker's range.
    pub device: u32,
    pub devices: u32,
    pub ts: i64,
    pub interval: i64,
}

impl StepCursor {
    pub fn new(cfg: &TsbsConfig, steps: u64, devices: u32) -> Self {
        StepCursor {
            step: 0,
            // A worker without devices has nothing to send.
            steps: if devices == 0 { 0 } else { steps },
            device: 0,
            devices,
            ts: cfg.start_ns,
            interval: cfg.interval_ns,
        }
    }

    #[inline]
    pub fn done(&self) -> bool {
        self.step >= self.steps
    }

    /// Moves to the next device, and to the next step after the last device.
    #[inline]
    pub fn advance(&mut self) {
        self.device += 1;
        if self.device == self.devices {
            self.device = 0;
            self.step += 1;
            // Saturating: the step past the last one is never read, and may not fit.
            self.ts = self.ts.saturating_add(self.interval);
        }
    }
}

pub(crate) const REGIONS: &[(&str, &[&str])] = &[
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];
const OS: &[&str] = &["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCH: &[&str] = &["x64", "x86"];
const TEAM: &[&str] = &["SF", "NYC", "LON", "CHI"];
const ENVIRONMENT: &[&str] = &["production", "staging", "test"];
const FSTYPE: &[&str] = &["ext3", "ext4", "btrfs", "xfs"];

/// TSBS's ten host tags, in TSBS's order (slots 0..10).
pub(crate) const HOST_TAGS: &[&str] = &[
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// Slots of devops's extra tags, after the host tags.
pub(crate) const SLOT_PATH: usize = 10;
pub(crate) const SLOT_FSTYPE: usize = 11;
pub(crate) const SLOT_SERIAL: usize = 12;
pub(crate) const SLOT_INTERFACE: usize = 13;
pub(crate) const SLOT_REDIS_PORT: usize = 14;
pub(crate) const SLOT_REDIS_SERVER: usize = 15;
pub(crate) const SLOT_NGINX_PORT: usize = 16;
pub(crate) const SLOT_NGINX_SERVER: usize = 17;
pub(crate) const DEVOPS_TAG_SLOTS: usize = 18;

/// Tag definitions of the host tags.
pub(crate) fn host_tag_defs() -> Vec<TagDef> {
    HOST_TAGS
        .iter()
        .enumerate()
        .map(|(slot, name)| TagDef {
            name: (*name).to_string(),
            data_type: DataType::Varchar(32),
            slot,
        })
        .collect()
}

pub(crate) fn tag_def(name: &str, slot: usize) -> TagDef {
    TagDef {
        name: name.to_string(),
        data_type: DataType::Varchar(32),
        slot,
    }
}

pub(crate) fn field_defs(names: &[&str], data_type: DataType) -> Vec<FieldDef> {
    names
        .iter()
        .map(|n| FieldDef {
            name: (*n).to_string(),
            data_type,
        })
        .collect()
}

/// Produces host tags on demand from `(seed, host)`: nothing is stored per host.
#[derive(Debug, Clone)]
pub(crate) struct HostTags {
    pub seed: u64,
    /// Also write devops's extra tag slots.
    pub devops: bool,
    /// With pods (more than 1), device `host + pod * scale` is a host's pod: its host's
    /// tags and a last `pod` tag.
    pub pods: u32,
    pub scale: u32,
}

impl HostTags {
    pub fn of(cfg: &TsbsConfig, devops: bool) -> HostTags {
        HostTags {
            seed: cfg.seed,
            devops,
            pods: cfg.pods,
            scale: cfg.scale,
        }
    }
}

/// The tag slot of the `pod` tag (after every host and devops tag).
pub(crate) const SLOT_POD: usize = DEVOPS_TAG_SLOTS;

/// The tag slots of a TSBS host kind: its own, and the pod's when there are pods.
pub(crate) fn tag_slots(cfg: &TsbsConfig, own: usize) -> usize {
    if cfg.pods > 1 { SLOT_POD + 1 } else { own }
}

/// `tags` with the `pod` tag when `cfg` has pods.
pub(crate) fn with_pod(cfg: &TsbsConfig, mut tags: Vec<TagDef>) -> Vec<TagDef> {
    if cfg.pods > 1 {
        tags.push(tag_def("pod", SLOT_POD));
    }
    tags
}

/// Random stream id of host tags (field values use other streams).
const TAG_STREAM: u64 = 0x7461_6773;

impl TagSource for HostTags {
    /// Slot 0 names the device alone, unless a host has several pods.
    fn key_slot(&self) -> Option<usize> {
        (self.pods <= 1).then_some(0)
    }

    fn device_tags(&self, device: u32, out: &mut Vec<TagValue>) {
        out.clear();
        let (device, pod) = if self.pods > 1 {
            (device % self.scale.max(1), Some(device / self.scale.max(1)))
        } else {
            (device, None)
        };
        let h = |slot: u64| hash(self.seed, TAG_STREAM, device as u64, slot);
        let pick = |slot: u64, list: &[&'static str]| -> TagValue {
            TagValue::Str(Cow::Borrowed(
                list[below(h(slot), list.len() as u64) as usize],
            ))
        };
        let num = |slot: u64, n: u64| TagValue::Str(Cow::Owned(below(h(slot), n).to_string()));
        let (region, datacenters) = REGIONS[below(h(1), REGIONS.len() as u64) as usize];
        out.push(TagValue::Str(Cow::Owned(format!("host_{device}"))));
        out.push(TagValue::Str(Cow::Borrowed(region)));
        out.push(TagValue::Str(Cow::Borrowed(
            datacenters[below(h(2), datacenters.len() as u64) as usize],
        )));
        out.push(num(3, 100));
        out.push(pick(4, OS));
        out.push(pick(5, ARCH));
        out.push(pick(6, TEAM));
        out.push(num(7, 20));
        out.push(num(8, 2));
        out.push(pick(9, ENVIRONMENT));
        if self.devops {
            out.push(TagValue::Str(Cow::Owned(format!(
                "/dev/sda{}",
                below(h(10), 10)
            ))));
            out.push(pick(11, FSTYPE));
            let s = below(h(12), 1_000_000_000);
            out.push(TagValue::Str(Cow::Owned(format!(
                "{:03}-{:03}-{:03}",
                s / 1_000_000,
                s / 1000 % 1000,
                s % 1000
            ))));
            out.push(TagValue::Str(Cow::Owned(format!("eth{}", below(h(13), 4)))));
            out.push(num(14, 20_000));
            out.push(TagValue::Str(Cow::Owned(format!(
                "redis_{}",
                below(h(15), 100_000)
            ))));
            out.push(num(16, 20_000));
            out.push(TagValue::Str(Cow::Owned(format!(
                "nginx_{}",
                below(h(17), 100_000)
            ))));
        }
        if let Some(pod) = pod {
            // cpu-only's slots stop at 10: the pod's slot is after devops's.
            out.resize(SLOT_POD, TagValue::Null);
            out.push(TagValue::Str(Cow::Owned(format!("pod_{pod}"))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_up_to_cover_the_span() {
        let cfg = |end_ns| TsbsConfig {
            seed: 1,
            scale: 1,
            start_ns: 0,
            end_ns,
            interval_ns: 10,
            churn: None,
            arrival: Arrival::default(),
            pods: 1,
            wave: None,
        };
        assert_eq!(cfg(100).steps().unwrap(), 10);
        assert_eq!(cfg(101).steps().unwrap(), 11);
        assert_eq!(cfg(1).steps().unwrap(), 1);
        assert_eq!(cfg(0).steps().unwrap_err().key, "end");
    }

    #[test]
    fn host_tags_are_a_function_of_seed_and_host() {
        let t = HostTags {
            seed: 5,
            devops: true,
            pods: 1,
            scale: 100,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        t.device_tags(42, &mut a);
        t.device_tags(42, &mut b);
        assert_eq!(a, b);
        assert_eq!(a.len(), DEVOPS_TAG_SLOTS);
        assert_eq!(a[0], TagValue::Str("host_42".into()));
        let TagValue::Str(region) = &a[1] else {
            panic!()
        };
        let TagValue::Str(dc) = &a[2] else { panic!() };
        assert!(dc.starts_with(region.as_ref()), "{region} {dc}");
        HostTags {
            seed: 6,
            devops: false,
            pods: 1,
            scale: 100,
        }
        .device_tags(42, &mut b);
        assert_eq!(b.len(), HOST_TAGS.len());
    }
}
