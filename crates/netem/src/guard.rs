//! A guard that applies an impairment and puts back what was there before.
//!
//! [`Guard::apply`] reads the interface's root qdisc, writes a record file
//! (`/run/tsload/netem-IFNAME.json`, directory configurable) *before* changing anything,
//! then installs the spec under its own handle (`7473:`, "ts"). Restoring re-installs the
//! previous root qdisc from its dumped kind and options, or deletes ours when the previous
//! one was the kernel's default (handle `0:`), then removes the record. It happens:
//!
//! - on [`Guard::restore`] (async, with the outcome), or on drop, also while a panic
//!   unwinds (on a helper thread with its own runtime, so it works inside async code);
//! - on Ctrl-C / SIGTERM, with [`restore_on_signal`] or [`spawn_signal_restorer`];
//! - after a SIGKILL, the next time: [`Guard::pending_records`] lists the records left
//!   behind and [`Guard::restore_from_record`] undoes them.
//!
//! Restoring only touches the root qdisc if it is still ours (same kind and handle); if
//! someone replaced it meanwhile it is left alone. If applying fails, the kernel changed
//! nothing (qdisc requests are atomic) and the record is removed again. Where the kernel
//! refuses to replace a netem with or by a duplicating one (Linux since 2025), applying and
//! restoring delete the root and add the new qdisc, putting the old one back if the add
//! fails ([`crate::apply::Netlink::replace_root`]). A root qdisc with
//! classes is refused, since its classes and filters could not be put back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::apply::{Netlink, Qdisc, Target};
use crate::encode::{QdiscOp, QdiscRequest, TC_H_ROOT, dumped_options_for_request};
use crate::error::Error;
use crate::netns::pid_alive;
use crate::spec::Spec;

/// The default directory for record files.
pub const DEFAULT_RECORD_DIR: &str = "/run/tsload";

/// The handle major of the qdiscs the guard installs ("ts").
pub const GUARD_HANDLE_MAJOR: u32 = 0x7473;

const RECORD_VERSION: u32 = 1;

/// Qdisc kinds whose classes are made by hand (not built in).
const USER_CLASS_KINDS: [&str; 5] = ["htb", "hfsc", "drr", "qfq", "cbq"];

/// How a [`Guard`] applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardOptions {
    /// Where record files go (default `/run/tsload`).
    pub record_dir: PathBuf,
    /// Impair the interface even if it carries the default route.
    pub allow_default_route: bool,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            record_dir: PathBuf::from(DEFAULT_RECORD_DIR),
            allow_default_route: false,
        }
    }
}

/// The root qdisc found before applying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousQdisc {
    /// Its kind.
    pub kind: String,
    /// Its handle.
    pub handle: u32,
    /// Its `TCA_OPTIONS` payload, in hex.
    pub options_hex: Option<String>,
}

/// What a guard wrote down before applying: enough to undo it from another process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Format version.
    pub version: u32,
    /// The process that applied.
    pub pid: u32,
    /// Its start time (clock ticks since boot), to tell a reused pid apart.
    pub pid_start: Option<u64>,
    /// Interface name.
    pub ifname: String,
    /// Network namespace, if any.
    pub netns: Option<String>,
    /// Interface index when applied.
    pub ifindex: u32,
    /// The spec applied.
    pub applied: String,
    /// The kind applied.
    pub applied_kind: String,
    /// The handle applied.
    pub applied_handle: u32,
    /// The root qdisc before; None when it was the kernel's default.
    pub previous: Option<PreviousQdisc>,
    /// Where this record lives (not stored).
    #[serde(skip)]
    pub path: PathBuf,
}

impl Record {
    /// The interface it is about.
    pub fn target(&self) -> Target {
        Target {
            ifname: self.ifname.clone(),
            netns: self.netns.clone(),
        }
    }

    /// Whether the process that wrote it still runs.
    pub fn owner_alive(&self) -> bool {
        pid_alive(self.pid) && process_start(self.pid) == self.pid_start
    }
}

/// What restoring did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The previous root qdisc is back (its description).
    Restored(String),
    /// Ours was deleted; the kernel's default root qdisc is back.
    Deleted,
    /// The root qdisc is no longer ours (someone changed it, or we never applied):
    /// left as it is (its description).
    NotOurs(String),
    /// The interface (or its namespace) is gone, and our qdisc with it.
    InterfaceGone,
    /// Already restored.
    AlreadyDone,
}

impl std::fmt::Display for RestoreOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreOutcome::Restored(q) => write!(f, "restored {q}"),
            RestoreOutcome::Deleted => {
                f.write_str("removed; the kernel's default root qdisc is back")
            }
            RestoreOutcome::NotOurs(q) => {
                write!(f, "left alone: the root qdisc is no longer ours ({q})")
            }
            RestoreOutcome::InterfaceGone => {
                f.write_str("gone (the interface or its namespace), our qdisc with it")
            }
            RestoreOutcome::AlreadyDone => f.write_str("already restored"),
        }
    }
}

/// The record file for a target.
pub fn record_path(dir: &Path, target: &Target) -> PathBuf {
    let name = match &target.netns {
        Some(ns) => format!("netem-{}:{}.json", ns.replace('/', "_"), target.ifname),
        None => format!("netem-{}.json", target.ifname),
    };
    dir.join(name)
}

fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22, counted after the parenthesised command name (which may hold spaces).
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19)?.parse().ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn write_record(record: &Record) -> Result<(), Error> {
    let err = |source| Error::Record {
        path: record.path.clone(),
        source,
    };
    if let Some(dir) = record.path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let text = serde_json::to_string_pretty(record).map_err(|e| err(std::io::Error::other(e)))?;
    let tmp = record
        .path
        .with_extension(format!("json.tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &record.path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

fn remove_record(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Record {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

fn read_record(path: &Path) -> Result<Record, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Record {
        path: path.to_path_buf(),
        source,
    })?;
    let mut record: Record = serde_json::from_str(&text).map_err(|e| Error::BadRecord {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    if record.version != RECORD_VERSION {
        return Err(Error::BadRecord {
            path: path.to_path_buf(),
            why: format!(
                "version {} (this tsload reads {RECORD_VERSION})",
                record.version
            ),
        });
    }
    record.path = path.to_path_buf();
    Ok(record)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    Done,
}

struct Inner {
    record: Record,
    state: Mutex<State>,
}

impl Inner {
    /// Claims the restore (only one of drop, restore and the signal path does it).
    fn claim(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let was = *state;
        *state = State::Done;
        was == State::Active
    }
}

static ACTIVE: Mutex<Vec<Arc<Inner>>> = Mutex::new(Vec::new());

fn register(inner: &Arc<Inner>) {
    ACTIVE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::clone(inner));
}

fn unregister(inner: &Arc<Inner>) {
    ACTIVE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|i| !Arc::ptr_eq(i, inner));
}

/// An applied impairment that is undone when this is dropped (or restored explicitly).
pub struct Guard {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("record", &self.inner.record)
            .finish()
    }
}

impl Guard {
    /// Applies `spec` as the root qdisc of `target`, remembering the previous one.
    pub async fn apply(
        target: &Target,
        spec: &Spec,
        options: &GuardOptions,
    ) -> Result<Guard, Error> {
        let nl = Netlink::open(target.netns.as_deref()).await?;
        let ifindex = nl.ifindex(&target.ifname).await?;
        if !options.allow_default_route {
            nl.check_default_route(&target.ifname, ifindex).await?;
        }
        // Every interface reports a root qdisc (if only `noqueue` or `noop`); without
        // one there would be no telling what to restore.
        let previous = nl.root_qdisc(ifindex).await?.ok_or_else(|| {
            Error::Netlink(format!(
                "the kernel reported no root qdisc for {target}; not guessing what to restore"
            ))
        })?;
        let previous = Some(previous).filter(|q| !q.is_default());
        if let Some(q) = &previous {
            // Child qdiscs attached below it, and classes made by hand (htb and the
            // like; tbf, netem or prio have built-in ones), would be lost on restore.
            let children = nl
                .qdiscs(ifindex)
                .await?
                .iter()
                .filter(|c| {
                    c.parent != TC_H_ROOT && !c.is_default() && c.parent >> 16 == q.handle >> 16
                })
                .count();
            let classes = if USER_CLASS_KINDS.contains(&q.kind.as_str()) {
                nl.class_count(ifindex, q.handle).await?
            } else {
                0
            };
            let classes = classes + children;
            if classes > 0 {
                return Err(Error::ClassfulRoot {
                    target: target.to_string(),
                    ifname: target.ifname.clone(),
                    kind: q.kind.clone(),
                    handle: q.handle_str(),
                    classes,
                });
            }
        }
        let path = record_path(&options.record_dir, target);
        if path.exists() {
            let existing = read_record(&path)?;
            let alive = existing.owner_alive();
            return Err(Error::PendingRecord {
                path,
                target: target.to_string(),
                pid: existing.pid,
                state: if alive {
                    "still in use"
                } else {
                    "not restored"
                },
                advice: if alive {
                    "wait for that run to end"
                } else {
                    "restore it first (tsload netem restore, or Guard::restore_from_record)"
                },
            });
        }
        let mut major = GUARD_HANDLE_MAJOR;
        if previous.as_ref().is_some_and(|q| q.handle >> 16 == major) {
            major += 1;
        }
        let handle = major << 16;
        let op = if previous.is_some() {
            QdiscOp::Replace
        } else {
            QdiscOp::Add
        };
        let request = QdiscRequest::root(op, ifindex as i32, handle, spec, &nl.psched)?;
        let pid = std::process::id();
        let record = Record {
            version: RECORD_VERSION,
            pid,
            pid_start: process_start(pid),
            ifname: target.ifname.clone(),
            netns: target.netns.clone(),
            ifindex,
            applied: spec.to_string(),
            applied_kind: spec.kind().to_string(),
            applied_handle: handle,
            previous: previous.as_ref().map(|q| PreviousQdisc {
                kind: q.kind.clone(),
                handle: q.handle,
                options_hex: q.options.as_deref().map(hex),
            }),
            path: path.clone(),
        };
        write_record(&record)?;
        let sent = match op {
            QdiscOp::Replace => nl
                .replace_root(&target.ifname, &request, previous.as_ref())
                .await
                .map(drop),
            _ => nl.send(&target.ifname, &request).await,
        };
        if let Err(e) = sent {
            // The kernel applies a qdisc request whole or not at all; make sure.
            if let Ok(Some(now)) = nl.root_qdisc(ifindex).await
                && now.handle == handle
            {
                let _ = restore_with(&nl, &record).await;
            }
            let _ = remove_record(&path);
            return Err(e);
        }
        let inner = Arc::new(Inner {
            record,
            state: Mutex::new(State::Active),
        });
        register(&inner);
        Ok(Guard { inner })
    }

    /// What was recorded (and where).
    pub fn record(&self) -> &Record {
        &self.inner.record
    }

    /// Restores now and says what was done.
    pub async fn restore(self) -> Result<RestoreOutcome, Error> {
        let inner = Arc::clone(&self.inner);
        unregister(&inner);
        // Dropping `self` below must not restore a second time.
        if !inner.claim() {
            return Ok(RestoreOutcome::AlreadyDone);
        }
        drop(self);
        restore_record(&inner.record).await
    }

    /// Records left behind in `dir` (by runs that were killed, or that still run: see
    /// [`Record::owner_alive`]).
    pub fn pending_records(dir: &Path) -> Result<Vec<Record>, Error> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(Error::Record {
                    path: dir.to_path_buf(),
                    source,
                });
            }
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("netem-") && name.ends_with(".json") {
                records.push(read_record(&entry.path())?);
            }
        }
        records.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(records)
    }

    /// Undoes what a record describes (from a run that was killed) and removes it.
    pub async fn restore_from_record(record: &Record) -> Result<RestoreOutcome, Error> {
        if record.owner_alive() && record.pid != std::process::id() {
            return Err(Error::PendingRecord {
                path: record.path.clone(),
                target: record.target().to_string(),
                pid: record.pid,
                state: "still in use",
                advice: "wait for that run to end",
            });
        }
        restore_record(record).await
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        unregister(&self.inner);
        if !self.inner.claim() {
            return;
        }
        let record = self.inner.record.clone();
        if let Err(e) = restore_blocking(record) {
            eprintln!("tsload-netem: {e}");
        }
    }
}

/// Restores on a helper thread with its own runtime, so it can run inside async code.
fn restore_blocking(record: Record) -> Result<RestoreOutcome, Error> {
    let what = format!("restoring the root qdisc of {}", record.target());
    std::thread::Builder::new()
        .name("tsload-netem-restore".to_string())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|source| Error::Io {
                    what: "starting a runtime".to_string(),
                    source,
                })?;
            rt.block_on(restore_record(&record))
        })
        .map_err(|source| Error::Io {
            what: what.clone(),
            source,
        })?
        .join()
        .unwrap_or_else(|_| Err(Error::Netlink(format!("{what}: the thread panicked"))))
}

async fn restore_record(record: &Record) -> Result<RestoreOutcome, Error> {
    let nl = match Netlink::open(record.netns.as_deref()).await {
        Ok(nl) => nl,
        Err(Error::Netns { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            remove_record(&record.path)?;
            return Ok(RestoreOutcome::InterfaceGone);
        }
        Err(e) => return Err(e),
    };
    let outcome = restore_with(&nl, record).await?;
    remove_record(&record.path)?;
    Ok(outcome)
}

async fn restore_with(nl: &Netlink, record: &Record) -> Result<RestoreOutcome, Error> {
    let ifindex = match nl.ifindex(&record.ifname).await {
        Ok(i) if i == record.ifindex => i,
        Ok(_) | Err(Error::NoSuchInterface { .. }) => return Ok(RestoreOutcome::InterfaceGone),
        Err(e) => return Err(e),
    };
    let current: Option<Qdisc> = nl.root_qdisc(ifindex).await?;
    let ours = current
        .as_ref()
        .is_some_and(|q| q.kind == record.applied_kind && q.handle == record.applied_handle);
    if !ours {
        return Ok(RestoreOutcome::NotOurs(
            current.map_or_else(|| "none".to_string(), |q| q.to_string()),
        ));
    }
    match &record.previous {
        None => {
            nl.send(&record.ifname, &QdiscRequest::delete_root(ifindex as i32))
                .await?;
            Ok(RestoreOutcome::Deleted)
        }
        Some(prev) => {
            let options = match &prev.options_hex {
                Some(h) => Some(dumped_options_for_request(
                    &prev.kind,
                    &unhex(h).ok_or_else(|| Error::BadRecord {
                        path: record.path.clone(),
                        why: "options_hex is not hex".to_string(),
                    })?,
                )),
                None => None,
            };
            let request = QdiscRequest::raw(
                QdiscOp::Replace,
                ifindex as i32,
                prev.handle,
                TC_H_ROOT,
                &prev.kind,
                options,
            );
            nl.replace_root(&record.ifname, &request, current.as_ref())
                .await?;
            let now = nl.root_qdisc(ifindex).await?;
            Ok(RestoreOutcome::Restored(
                now.map_or_else(|| prev.kind.clone(), |q| q.to_string()),
            ))
        }
    }
}

/// Restores every guard of this process that is still applied.
pub async fn restore_all() -> Vec<(Target, Result<RestoreOutcome, Error>)> {
    let active: Vec<Arc<Inner>> =
        std::mem::take(&mut *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()));
    let mut results = Vec::new();
    for inner in active {
        if inner.claim() {
            let outcome = restore_record(&inner.record).await;
            results.push((inner.record.target(), outcome));
        }
    }
    results
}

/// Waits for SIGINT or SIGTERM, restores every active guard, and returns the exit code
/// the process should end with (130 for Ctrl-C, 143 for SIGTERM). The signal handlers
/// are installed when this is first polled.
pub async fn restore_on_signal() -> std::io::Result<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let code = tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
    };
    for (target, result) in restore_all().await {
        if let Err(e) = result {
            eprintln!("tsload-netem: restoring {target}: {e}");
        }
    }
    Ok(code)
}

/// Installs SIGINT and SIGTERM handlers now and spawns a task that, on either, restores
/// every active guard and exits the process (130 or 143). For programs with nothing else
/// to do on those signals; others can call [`restore_on_signal`] or [`restore_all`].
pub fn spawn_signal_restorer() -> std::io::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(tokio::spawn(async move {
        let code = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
        };
        for (target, result) in restore_all().await {
            if let Err(e) = result {
                eprintln!("tsload-netem: restoring {target}: {e}");
            }
        }
        std::process::exit(code);
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_paths_and_hex() {
        let dir = Path::new("/run/tsload");
        assert_eq!(
            record_path(dir, &Target::new("eth0")),
            Path::new("/run/tsload/netem-eth0.json")
        );
        assert_eq!(
            record_path(dir, &Target::new("veth0").in_netns("lab")),
            Path::new("/run/tsload/netem-lab:veth0.json")
        );
        assert_eq!(
            unhex(&hex(&[0, 1, 0xab, 0xff])),
            Some(vec![0, 1, 0xab, 0xff])
        );
        assert_eq!(unhex("abc"), None);
        assert!(process_start(std::process::id()).is_some());
    }

    #[test]
    fn records_round_trip_through_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::new("veth0").in_netns("lab");
        let record = Record {
            version: RECORD_VERSION,
            pid: 999_999_999,
            pid_start: None,
            ifname: target.ifname.clone(),
            netns: target.netns.clone(),
            ifindex: 7,
            applied: "delay 10ms".to_string(),
            applied_kind: "netem".to_string(),
            applied_handle: GUARD_HANDLE_MAJOR << 16,
            previous: Some(PreviousQdisc {
                kind: "tbf".to_string(),
                handle: 0x10000,
                options_hex: Some("0800".to_string()),
            }),
            path: record_path(dir.path(), &target),
        };
        write_record(&record).unwrap();
        let pending = Guard::pending_records(dir.path()).unwrap();
        assert_eq!(pending, vec![record.clone()]);
        assert!(!pending[0].owner_alive());
        remove_record(&record.path).unwrap();
        assert!(Guard::pending_records(dir.path()).unwrap().is_empty());
        std::fs::write(dir.path().join("netem-x.json"), "{}").unwrap();
        let e = Guard::pending_records(dir.path()).unwrap_err();
        assert!(matches!(e, Error::BadRecord { .. }), "{e}");
    }
}
