//! The crate's error type: what went wrong, said so that a person can act on it.

use std::path::PathBuf;

use crate::encode::{DecodeError, EncodeError};
use crate::spec::SpecError;

/// Errors of applying, showing, clearing and guarding impairments.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad spec.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A spec that does not fit the kernel's fields.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// A kernel message that could not be decoded.
    #[error("undecodable answer from the kernel: {0}")]
    Decode(#[from] DecodeError),
    /// The interface does not exist.
    #[error("no network interface named {ifname:?}{}", in_netns(netns))]
    NoSuchInterface {
        /// Its name.
        ifname: String,
        /// The namespace looked in.
        netns: Option<String>,
    },
    /// The named network namespace does not exist or cannot be entered.
    #[error("cannot enter network namespace {name:?} ({path}): {source}")]
    Netns {
        /// Its name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The kernel refused for lack of privilege.
    #[error(
        "{op} on {target}: permission denied: changing qdiscs needs CAP_NET_ADMIN (run tsload as root, or grant it with `setcap cap_net_admin+ep`)"
    )]
    PermissionDenied {
        /// What was being done.
        op: String,
        /// Interface (and namespace).
        target: String,
    },
    /// The kernel has no netem qdisc.
    #[error(
        "cannot install netem on {target}: this kernel has no netem qdisc (module sch_netem; the kernel said {kernel_said:?}). Load it with `modprobe sch_netem` (Debian/Ubuntu ship it in linux-modules-extra), or use tsload's user-space `proxy` impairment backend instead"
    )]
    NetemUnavailable {
        /// Interface (and namespace).
        target: String,
        /// The kernel's message.
        kernel_said: String,
    },
    /// The kernel does not know another qdisc kind.
    #[error(
        "cannot install {kind} on {target}: this kernel has no {kind} qdisc (load module sch_{kind}); the kernel said {kernel_said:?}"
    )]
    QdiscUnavailable {
        /// The qdisc kind.
        kind: String,
        /// Interface (and namespace).
        target: String,
        /// The kernel's message.
        kernel_said: String,
    },
    /// Any other refusal by the kernel, with its extended-ack message when it sent one.
    #[error("{op} on {target}: the kernel said: {message} (errno {errno})")]
    Kernel {
        /// What was being done.
        op: String,
        /// Interface (and namespace).
        target: String,
        /// The errno (positive).
        errno: i32,
        /// The extended ack message, or the errno's description.
        message: String,
    },
    /// A replace done as delete and add failed at the add, and the root that was there
    /// could not be put back either: the interface is left with the kernel's default.
    #[error(
        "{target}: the kernel refused to replace the root qdisc ({previous}) in place, so it was deleted to add the new one; the add failed ({add_error}) and putting {previous} back failed too ({back_error}): {target} now has the kernel's default qdisc"
    )]
    PreviousLost {
        /// Interface (and namespace).
        target: String,
        /// The root qdisc that was there, as `tsload netem show` prints it.
        previous: String,
        /// Why the new qdisc could not be added.
        add_error: Box<Error>,
        /// Why the previous one could not be added back.
        back_error: Box<Error>,
    },
    /// An API used the wrong way.
    #[error("{0}")]
    Usage(String),
    /// The netlink socket failed.
    #[error("netlink: {0}")]
    Netlink(String),
    /// The interface carries the default route.
    #[error(
        "refusing to impair {target}: it carries the default route, so impairing it could cut this machine's own connections (your SSH session included); impair a dedicated interface, or set allow_default_route to do it anyway"
    )]
    DefaultRoute {
        /// Interface (and namespace).
        target: String,
    },
    /// The root qdisc has classes that could not be restored afterwards.
    #[error(
        "refusing to replace the root qdisc of {target}: it is {kind} {handle} with {classes} classes or child qdiscs, which could not be restored afterwards; remove it first (tc qdisc del dev {ifname} root) or impair another interface"
    )]
    ClassfulRoot {
        /// Interface (and namespace).
        target: String,
        /// Interface name.
        ifname: String,
        /// The root qdisc's kind.
        kind: String,
        /// Its handle, like `1:`.
        handle: String,
        /// How many classes and child qdiscs it has.
        classes: usize,
    },
    /// A record of an earlier run exists for this interface.
    #[error(
        "{path} records an impairment of {target} by tsload (pid {pid}) that was {state}; {advice}"
    )]
    PendingRecord {
        /// The record file.
        path: PathBuf,
        /// Interface (and namespace).
        target: String,
        /// The pid that wrote it.
        pid: u32,
        /// "not restored" or "still in use".
        state: &'static str,
        /// What to do.
        advice: &'static str,
    },
    /// A record file could not be written, read or removed.
    #[error("record file {path}: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record file that is not one.
    #[error("record file {path} is not a tsload netem record: {why}")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Any other I/O failure.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why.
        source: std::io::Error,
    },
}

fn in_netns(netns: &Option<String>) -> String {
    match netns {
        Some(n) => format!(" in network namespace {n:?}"),
        None => String::new(),
    }
}
