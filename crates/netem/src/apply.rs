//! Applying, showing and clearing an interface's root qdisc through rtnetlink.
//!
//! Requests are encoded by [`crate::encode`] and sent with rtnetlink's
//! `Handle::request`; links, routes and classes are read with rtnetlink's own API. A
//! target may live in a named network namespace (`/var/run/netns/NAME`, as `ip netns`
//! makes them): the netlink socket is then opened by a short-lived thread that entered
//! that namespace with `setns`, so the socket (and everything sent over it) belongs to
//! the namespace while the rest of the process stays where it is.
//!
//! Errors say what to do: a missing interface is named, `EPERM` asks for
//! `CAP_NET_ADMIN`, a kernel without `sch_netem` suggests `modprobe sch_netem` or the
//! `proxy` backend, and otherwise the kernel's extended ack message is reported.

use std::fmt;
use std::fs::File;
use std::net::{Ipv4Addr, Ipv6Addr};

use futures_util::StreamExt;
use std::path::{Path, PathBuf};

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::route::{RouteAttribute, RouteMessage, RouteType};
use netlink_sys::AsyncSocket;
use nix::sched::CloneFlags;

use crate::encode::{
    self, Psched, QdiscOp, QdiscRequest, TC_H_ROOT, TcMsg, dumped_options_for_request,
    parse_ext_ack,
};
use crate::error::Error;
use crate::spec::Spec;

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const ENODEV: i32 = 19;
const EINVAL: i32 = 22;

/// An interface, optionally inside a named network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Interface name.
    pub ifname: String,
    /// Network namespace name (`/var/run/netns/NAME`) or path; None: this process's.
    pub netns: Option<String>,
}

impl Target {
    /// An interface in this process's network namespace.
    pub fn new(ifname: impl Into<String>) -> Target {
        Target {
            ifname: ifname.into(),
            netns: None,
        }
    }

    /// The same interface name inside a named network namespace.
    pub fn in_netns(mut self, netns: impl Into<String>) -> Target {
        self.netns = Some(netns.into());
        self
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.netns {
            Some(ns) => write!(f, "{} in network namespace {ns:?}", self.ifname),
            None => write!(f, "{}", self.ifname),
        }
    }
}

/// How [`apply`] installs a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Replace (the default), add (fails if a non-default root qdisc exists), or change
    /// in place (`Delete` is refused: use [`clear`]).
    pub op: QdiscOp,
    /// The qdisc handle (`0x10000` is `1:`); 0: for a replace, see `merge`; otherwise the
    /// kernel chooses.
    pub handle: u32,
    /// For a replace with handle 0: change a root qdisc of the same kind in place, as
    /// `tc qdisc replace` does, so the options the spec does not name keep their values.
    /// Without it (the default) a new qdisc, under the first handle of
    /// [`APPLY_HANDLE_MAJORS`] that no qdisc of the interface has, is swapped in for the
    /// old root atomically: the root becomes exactly the spec.
    pub merge: bool,
    /// Impair the interface even if it carries the default route.
    pub allow_default_route: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            op: QdiscOp::Replace,
            handle: 0,
            merge: false,
            allow_default_route: false,
        }
    }
}

/// The handle majors (`7461:` to `7472:`, "ta" up) from which [`apply`] picks a handle
/// that the interface does not use, so the kernel makes a new qdisc instead of changing
/// the one there (the guard's own are `7473:` and `7474:`).
pub const APPLY_HANDLE_MAJORS: std::ops::Range<u32> = 0x7461..0x7473;

/// The first handle of [`APPLY_HANDLE_MAJORS`] that none of `qdiscs` has.
pub fn fresh_handle(qdiscs: &[Qdisc]) -> Option<u32> {
    APPLY_HANDLE_MAJORS
        .map(|major| major << 16)
        .find(|h| qdiscs.iter().all(|q| q.handle >> 16 != h >> 16))
}

/// A qdisc as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    /// Interface index.
    pub ifindex: u32,
    /// Handle (`major << 16`); 0 for the kernel's default qdiscs.
    pub handle: u32,
    /// Parent ([`TC_H_ROOT`] for a root qdisc).
    pub parent: u32,
    /// Kind (`netem`, `tbf`, `noqueue`, `fq_codel`...).
    pub kind: String,
    /// Raw `TCA_OPTIONS` payload, if any.
    pub options: Option<Vec<u8>>,
    /// The options as a spec, for the kinds this crate knows.
    pub spec: Option<Spec>,
}

impl Qdisc {
    /// Whether this is a qdisc the kernel attached by itself (handle 0:, like `noqueue`,
    /// `mq`, `pfifo_fast` or the default `fq_codel`); deleting the root brings it back.
    pub fn is_default(&self) -> bool {
        self.handle >> 16 == 0
    }

    /// Whether this is a netem that duplicates packets.
    pub fn duplicates(&self) -> bool {
        self.spec.as_ref().is_some_and(Spec::duplicates)
    }

    /// The handle as tc prints it (`8001:`).
    pub fn handle_str(&self) -> String {
        format!("{:x}:", self.handle >> 16)
    }

    fn from_msg(msg: &TcMsg, psched: &Psched) -> Qdisc {
        Qdisc {
            ifindex: msg.ifindex as u32,
            handle: msg.handle,
            parent: msg.parent,
            kind: msg.kind.clone().unwrap_or_default(),
            options: msg.options.clone(),
            spec: msg.spec(psched).ok(),
        }
    }
}

impl fmt::Display for Qdisc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.spec {
            Some(Spec::Netem(n)) => write!(f, "netem {} {n}", self.handle_str()),
            Some(spec) => {
                let text = spec.to_string();
                let rest = text.strip_prefix(spec.kind()).unwrap_or(&text);
                write!(f, "{} {}{rest}", self.kind, self.handle_str())
            }
            None => write!(f, "{} {}", self.kind, self.handle_str()),
        }
    }
}

/// Whether putting a qdisc of `new_kind` (`new_duplicates`: a netem that duplicates) in
/// place of the root `current` mixes a duplicating netem with another netem in one tree.
///
/// Linux refuses that since 2025 (the fix against recursive duplication, backported to
/// stable kernels: Debian 12's 6.1.192 answers EINVAL, "netem: cannot mix duplicating
/// netems with other netems in tree"), for `tc qdisc replace` too: during a replace the
/// new netem is made while the old one is still in the tree. Changing one netem in place
/// is allowed.
pub fn mixes_duplicating_netems(
    new_kind: &str,
    new_duplicates: bool,
    current: Option<&Qdisc>,
) -> bool {
    new_kind == "netem"
        && current.is_some_and(|q| q.kind == "netem" && (new_duplicates || q.duplicates()))
}

/// Where named network namespaces live (iproute2's `NETNS_RUN_DIR`).
pub const NETNS_DIR: &str = "/var/run/netns";

/// The path of a namespace given by name (or by path, if it contains a `/`).
pub fn netns_path(name: &str) -> PathBuf {
    if name.contains('/') {
        PathBuf::from(name)
    } else {
        Path::new(NETNS_DIR).join(name)
    }
}

/// How [`Netlink::replace_root`] put a qdisc in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// By the request itself (a replace is atomic: the old root until the new one).
    AsRequested,
    /// The kernel refused the replace ([`mixes_duplicating_netems`]): the root was
    /// deleted and the new qdisc added (the kernel's default qdisc for that moment).
    DeletedAndAdded,
}

/// A netlink failure as the kernel reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelError {
    pub errno: i32,
    pub message: Option<String>,
}

/// Maps a kernel refusal (positive errno, extended ack message) of `op` (`add`,
/// `replace`, `change`, `del`) installing `kind` on `target` to a specific error.
pub fn kernel_error_for(
    op: &str,
    target: &Target,
    kind: Option<&str>,
    errno: i32,
    message: Option<String>,
) -> Error {
    kernel_error(op, target, kind, &KernelError { errno, message })
}

pub(crate) fn kernel_error(
    op: &str,
    target: &Target,
    kind: Option<&str>,
    e: &KernelError,
) -> Error {
    let target_s = target.to_string();
    if e.errno == EPERM || e.errno == EACCES {
        return Error::PermissionDenied {
            op: op.to_string(),
            target: target_s,
        };
    }
    let unknown_kind = e
        .message
        .as_deref()
        .is_some_and(|m| m.contains("kind is unknown"))
        || (e.errno == ENOENT && e.message.is_none() && matches!(op, "add" | "replace"));
    if let (true, Some(kind)) = (unknown_kind, kind) {
        let kernel_said = e
            .message
            .clone()
            .unwrap_or_else(|| std::io::Error::from_raw_os_error(e.errno).to_string());
        return if kind == "netem" {
            Error::NetemUnavailable {
                target: target_s,
                kernel_said,
            }
        } else {
            Error::QdiscUnavailable {
                kind: kind.to_string(),
                target: target_s,
                kernel_said,
            }
        };
    }
    Error::Kernel {
        op: op.to_string(),
        target: target_s,
        errno: e.errno,
        message: e
            .message
            .clone()
            .unwrap_or_else(|| std::io::Error::from_raw_os_error(e.errno).to_string()),
    }
}

/// An rtnetlink connection, opened in a network namespace or in this process's.
pub struct Netlink {
    handle: rtnetlink::Handle,
    task: tokio::task::JoinHandle<()>,
    netns: Option<String>,
    /// The psched clock parameters, for encoding times.
    pub psched: Psched,
}

impl Drop for Netlink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Connection = rtnetlink::proto::Connection<RouteNetlinkMessage>;

fn new_connection() -> std::io::Result<(Connection, rtnetlink::Handle)> {
    let (mut conn, handle, _) = rtnetlink::new_connection()?;
    // Extended acks carry the kernel's reason; capped acks echo only the header back.
    let socket = conn.socket_mut().socket_mut();
    socket.set_ext_ack(true)?;
    socket.set_cap_ack(true)?;
    Ok((conn, handle))
}

impl Netlink {
    /// Opens a connection, inside `netns` when given. Needs a tokio runtime with I/O.
    pub async fn open(netns: Option<&str>) -> Result<Netlink, Error> {
        let io_err = |what: &str, source| Error::Io {
            what: what.to_string(),
            source,
        };
        let (conn, handle) = match netns {
            None => new_connection().map_err(|e| io_err("opening a netlink socket", e))?,
            Some(name) => {
                let path = netns_path(name);
                let file = File::open(&path).map_err(|source| Error::Netns {
                    name: name.to_string(),
                    path: path.clone(),
                    source,
                })?;
                let runtime = tokio::runtime::Handle::current();
                let (tx, rx) = tokio::sync::oneshot::channel();
                let name_owned = name.to_string();
                std::thread::Builder::new()
                    .name("tsload-netns".to_string())
                    .spawn(move || {
                        // This thread enters the namespace, opens the socket there and
                        // ends; the socket stays in the namespace it was made in.
                        let result = nix::sched::setns(&file, CloneFlags::CLONE_NEWNET)
                            .map_err(|e| Error::Netns {
                                name: name_owned,
                                path,
                                source: e.into(),
                            })
                            .and_then(|()| {
                                let _entered = runtime.enter();
                                new_connection().map_err(|e| Error::Io {
                                    what: "opening a netlink socket".to_string(),
                                    source: e,
                                })
                            });
                        let _ = tx.send(result);
                    })
                    .map_err(|e| io_err("spawning a thread", e))?;
                rx.await
                    .map_err(|_| Error::Netlink("the namespace thread died".to_string()))??
            }
        };
        let task = tokio::spawn(conn);
        Ok(Netlink {
            handle,
            task,
            netns: netns.map(str::to_string),
            psched: Psched::read(),
        })
    }

    /// The rtnetlink handle, for requests this crate does not wrap.
    pub fn handle(&self) -> &rtnetlink::Handle {
        &self.handle
    }

    fn target(&self, ifname: &str) -> Target {
        Target {
            ifname: ifname.to_string(),
            netns: self.netns.clone(),
        }
    }

    /// Sends a request and collects its answers; a NACK becomes a [`KernelError`].
    pub(crate) async fn request(
        &self,
        msg: NetlinkMessage<RouteNetlinkMessage>,
    ) -> Result<Result<Vec<RouteNetlinkMessage>, KernelError>, Error> {
        let mut stream = self
            .handle
            .clone()
            .request(msg)
            .map_err(|e| Error::Netlink(e.to_string()))?;
        let mut answers = Vec::new();
        while let Some(m) = stream.next().await {
            match m.payload {
                NetlinkPayload::Error(e) => {
                    if let Some(code) = e.code {
                        let ack = parse_ext_ack(m.header.flags, &e.header);
                        return Ok(Err(KernelError {
                            errno: -code.get(),
                            message: ack.message,
                        }));
                    }
                    break;
                }
                NetlinkPayload::Done(_) => break,
                NetlinkPayload::InnerMessage(inner) => answers.push(inner),
                _ => {}
            }
        }
        Ok(Ok(answers))
    }

    /// The index of an interface.
    pub async fn ifindex(&self, ifname: &str) -> Result<u32, Error> {
        let missing = || Error::NoSuchInterface {
            ifname: ifname.to_string(),
            netns: self.netns.clone(),
        };
        if ifname.is_empty() || ifname.len() > 15 || ifname.contains(['/', ':']) {
            return Err(missing());
        }
        let mut links = self
            .handle
            .link()
            .get()
            .match_name(ifname.to_string())
            .execute();
        match links.next().await {
            Some(Ok(link)) => Ok(link.header.index),
            Some(Err(rtnetlink::Error::NetlinkError(e))) if matches!(e.raw_code(), c if c == -ENODEV || c == -EINVAL) => {
                Err(missing())
            }
            Some(Err(e)) => Err(Error::Netlink(format!("looking up {ifname}: {e}"))),
            None => Err(missing()),
        }
    }

    /// All qdiscs of an interface.
    pub async fn qdiscs(&self, ifindex: u32) -> Result<Vec<Qdisc>, Error> {
        let answers = self
            .request(encode::dump_qdiscs(ifindex as i32))
            .await?
            .map_err(|e| {
                kernel_error("dump qdiscs", &self.target(&ifindex.to_string()), None, &e)
            })?;
        Ok(answers
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewQueueDiscipline(tc) => {
                    Some(TcMsg::from_rtnl(encode::RTM_NEWQDISC, 0, &tc))
                }
                _ => None,
            })
            .filter(|m| m.ifindex as u32 == ifindex)
            .map(|m| Qdisc::from_msg(&m, &self.psched))
            .collect())
    }

    /// The root qdisc of an interface.
    pub async fn root_qdisc(&self, ifindex: u32) -> Result<Option<Qdisc>, Error> {
        Ok(self
            .qdiscs(ifindex)
            .await?
            .into_iter()
            .find(|q| q.parent == TC_H_ROOT))
    }

    /// How many traffic classes belong to the qdisc with this handle.
    pub async fn class_count(&self, ifindex: u32, handle: u32) -> Result<usize, Error> {
        let mut classes = self.handle.traffic_class(ifindex as i32).get().execute();
        let mut n = 0;
        while let Some(class) = classes.next().await {
            match class {
                Ok(c) => {
                    if u32::from(c.header.handle) >> 16 == handle >> 16 {
                        n += 1;
                    }
                }
                Err(e) => return Err(Error::Netlink(format!("dumping classes: {e}"))),
            }
        }
        Ok(n)
    }

    /// The interfaces that carry a default route (IPv4 or IPv6, any table but `local`).
    pub async fn default_route_ifindexes(&self) -> Result<Vec<u32>, Error> {
        let mut found = Vec::new();
        let requests = [
            rtnetlink::RouteMessageBuilder::<Ipv4Addr>::new().build(),
            rtnetlink::RouteMessageBuilder::<Ipv6Addr>::new().build(),
        ];
        for request in requests {
            let mut routes = self.handle.route().get(request).execute();
            while let Some(route) = routes.next().await {
                let route: RouteMessage =
                    route.map_err(|e| Error::Netlink(format!("dumping routes: {e}")))?;
                let h = &route.header;
                if h.destination_prefix_length != 0
                    || h.table == 255
                    || !matches!(h.kind, RouteType::Unicast)
                {
                    continue;
                }
                for attr in &route.attributes {
                    match attr {
                        RouteAttribute::Oif(i) => found.push(*i),
                        RouteAttribute::MultiPath(hops) => {
                            found.extend(hops.iter().map(|h| h.interface_index));
                        }
                        _ => {}
                    }
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// Sends a qdisc request for `ifname` and waits for the kernel's ack.
    pub async fn send(&self, ifname: &str, request: &QdiscRequest) -> Result<(), Error> {
        self.request(request.to_netlink()).await?.map_err(|e| {
            kernel_error(
                request.op.name(),
                &self.target(ifname),
                request.kind.as_deref(),
                &e,
            )
        })?;
        Ok(())
    }

    /// Sends `request`, which installs `ifname`'s root qdisc, `current` being the root now.
    /// Where the kernel refuses a replace because it would mix duplicating netems
    /// ([`mixes_duplicating_netems`]), deletes the root and adds the request's qdisc
    /// instead; if that add fails, `current` is added back (from its dumped options) and
    /// the add's error returned, so a failure leaves what was there.
    pub async fn replace_root(
        &self,
        ifname: &str,
        request: &QdiscRequest,
        current: Option<&Qdisc>,
    ) -> Result<Replaced, Error> {
        let refused = match self.request(request.to_netlink()).await? {
            Ok(_) => return Ok(Replaced::AsRequested),
            Err(e) => e,
        };
        let kind = request.kind.as_deref().unwrap_or_default();
        let duplicates = kind == "netem"
            && request
                .options
                .as_deref()
                .and_then(|o| encode::decode_options(kind, o, &self.psched).ok())
                .is_some_and(|s| s.duplicates());
        let error = || {
            kernel_error(
                request.op.name(),
                &self.target(ifname),
                Some(kind),
                &refused,
            )
        };
        let Some(current) = current.filter(|_| {
            refused.errno == EINVAL
                && request.op == QdiscOp::Replace
                && mixes_duplicating_netems(kind, duplicates, current)
        }) else {
            return Err(error());
        };
        self.send(ifname, &QdiscRequest::delete_root(request.ifindex))
            .await?;
        let add = QdiscRequest {
            op: QdiscOp::Add,
            ..request.clone()
        };
        let Err(add_error) = self.send(ifname, &add).await else {
            return Ok(Replaced::DeletedAndAdded);
        };
        let back = QdiscRequest::raw(
            QdiscOp::Add,
            request.ifindex,
            current.handle,
            TC_H_ROOT,
            &current.kind,
            current
                .options
                .as_deref()
                .map(|o| dumped_options_for_request(&current.kind, o)),
        );
        match self.send(ifname, &back).await {
            Ok(()) => Err(add_error),
            Err(back_error) => Err(Error::PreviousLost {
                target: self.target(ifname).to_string(),
                previous: current.to_string(),
                add_error: Box::new(add_error),
                back_error: Box::new(back_error),
            }),
        }
    }

    /// Refuses an interface that carries the default route (unless allowed).
    pub async fn check_default_route(&self, ifname: &str, ifindex: u32) -> Result<(), Error> {
        if self.default_route_ifindexes().await?.contains(&ifindex) {
            return Err(Error::DefaultRoute {
                target: self.target(ifname).to_string(),
            });
        }
        Ok(())
    }
}

/// Installs `spec` as the root qdisc of `target`; a replace the kernel refuses because it
/// would mix duplicating netems is done as delete and add ([`Netlink::replace_root`]).
pub async fn apply(
    target: &Target,
    spec: &Spec,
    options: &ApplyOptions,
) -> Result<Replaced, Error> {
    let nl = Netlink::open(target.netns.as_deref()).await?;
    let ifindex = nl.ifindex(&target.ifname).await?;
    if !options.allow_default_route {
        nl.check_default_route(&target.ifname, ifindex).await?;
    }
    if options.op == QdiscOp::Delete {
        return Err(Error::Usage(
            "apply adds, replaces or changes a qdisc; use clear to delete one".to_string(),
        ));
    }
    let handle = if options.op == QdiscOp::Replace && options.handle == 0 && !options.merge {
        let qdiscs = nl.qdiscs(ifindex).await?;
        fresh_handle(&qdiscs).ok_or_else(|| {
            Error::Usage(format!(
                "every handle from {:x}: to {:x}: is in use on {target}; clear it first",
                APPLY_HANDLE_MAJORS.start,
                APPLY_HANDLE_MAJORS.end - 1
            ))
        })?
    } else {
        options.handle
    };
    let request = QdiscRequest::root(options.op, ifindex as i32, handle, spec, &nl.psched)?;
    if options.op != QdiscOp::Replace {
        nl.send(&target.ifname, &request).await?;
        return Ok(Replaced::AsRequested);
    }
    let current = nl.root_qdisc(ifindex).await?;
    nl.replace_root(&target.ifname, &request, current.as_ref())
        .await
}

/// The root qdisc of `target` (None if the interface has none, which is rare: even
/// `noqueue` is reported).
pub async fn show(target: &Target) -> Result<Option<Qdisc>, Error> {
    let nl = Netlink::open(target.netns.as_deref()).await?;
    let ifindex = nl.ifindex(&target.ifname).await?;
    nl.root_qdisc(ifindex).await
}

/// Deletes the root qdisc of `target`, so the kernel's default comes back. Returns false
/// when the root already was the default (nothing to delete).
pub async fn clear(target: &Target) -> Result<bool, Error> {
    let nl = Netlink::open(target.netns.as_deref()).await?;
    let ifindex = nl.ifindex(&target.ifname).await?;
    match nl.root_qdisc(ifindex).await? {
        Some(q) if !q.is_default() => {
            nl.send(&target.ifname, &QdiscRequest::delete_root(ifindex as i32))
                .await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(errno: i32, message: Option<&str>) -> KernelError {
        KernelError {
            errno,
            message: message.map(str::to_string),
        }
    }

    fn qdisc(handle: u32) -> Qdisc {
        Qdisc {
            ifindex: 1,
            handle,
            parent: TC_H_ROOT,
            kind: "netem".to_string(),
            options: None,
            spec: None,
        }
    }

    #[test]
    fn a_fresh_handle_is_one_the_interface_does_not_use() {
        assert_eq!(fresh_handle(&[]), Some(0x7461_0000));
        assert_eq!(fresh_handle(&[qdisc(0)]), Some(0x7461_0000));
        assert_eq!(fresh_handle(&[qdisc(0x7461_0000)]), Some(0x7462_0000));
        assert_eq!(
            fresh_handle(&[qdisc(0x7462_0000), qdisc(0xffff_0000)]),
            Some(0x7461_0000)
        );
        let all: Vec<Qdisc> = APPLY_HANDLE_MAJORS.map(|m| qdisc(m << 16)).collect();
        assert_eq!(fresh_handle(&all), None);
    }

    #[test]
    fn a_duplicating_netem_mixes_with_any_other_netem_only() {
        let root = |text: &str| {
            let spec: Spec = text.parse().unwrap();
            Qdisc {
                kind: spec.kind().to_string(),
                spec: Some(spec),
                ..qdisc(0x7461_0000)
            }
        };
        let dup: Spec = "duplicate 1.5%".parse().unwrap();
        let plain: Spec = "corrupt 0.7%".parse().unwrap();
        assert!(dup.duplicates() && !plain.duplicates());
        assert!(!"duplicate 0%".parse::<Spec>().unwrap().duplicates());
        // The sequence: corrupt, then duplicate; loss, then duplicate.
        assert!(mixes_duplicating_netems(
            "netem",
            true,
            Some(&root("corrupt 0.7%"))
        ));
        assert!(mixes_duplicating_netems(
            "netem",
            true,
            Some(&root("loss 1%"))
        ));
        // A duplicating root replaced by a plain netem, or by another duplicating one.
        assert!(mixes_duplicating_netems(
            "netem",
            false,
            Some(&root("duplicate 2%"))
        ));
        assert!(mixes_duplicating_netems(
            "netem",
            true,
            Some(&root("duplicate 2%"))
        ));
        // Nothing to mix: no netem on either side, or neither duplicates.
        assert!(!mixes_duplicating_netems(
            "netem",
            false,
            Some(&root("delay 5ms"))
        ));
        assert!(!mixes_duplicating_netems("netem", true, None));
        let tbf = root("tbf rate 8mbit burst 32kbit latency 400ms");
        assert!(!mixes_duplicating_netems("netem", true, Some(&tbf)));
        assert!(!mixes_duplicating_netems(
            "tbf",
            false,
            Some(&root("duplicate 2%"))
        ));
    }

    #[test]
    fn kernel_errors_are_specific() {
        let t = Target::new("eth9").in_netns("lab");
        let e = kernel_error("add", &t, Some("netem"), &err(EPERM, Some("x")));
        assert!(matches!(e, Error::PermissionDenied { .. }));
        assert!(e.to_string().contains("CAP_NET_ADMIN"), "{e}");

        let e = kernel_error(
            "add",
            &t,
            Some("netem"),
            &err(ENOENT, Some("Specified qdisc kind is unknown.")),
        );
        let text = e.to_string();
        assert!(matches!(e, Error::NetemUnavailable { .. }));
        assert!(
            text.contains("modprobe sch_netem") && text.contains("proxy"),
            "{text}"
        );
        assert!(text.contains("eth9 in network namespace \"lab\""), "{text}");

        let e = kernel_error("add", &t, Some("cake"), &err(ENOENT, None));
        assert!(matches!(e, Error::QdiscUnavailable { .. }), "{e}");

        let e = kernel_error(
            "change",
            &t,
            Some("netem"),
            &err(
                ENOENT,
                Some("Qdisc not found. To create specify NLM_F_CREATE flag."),
            ),
        );
        assert!(e.to_string().contains("Qdisc not found"), "{e}");
        assert!(matches!(e, Error::Kernel { errno: 2, .. }));

        let e = kernel_error("del", &t, None, &err(EINVAL, None));
        assert!(e.to_string().contains("Invalid argument"), "{e}");
    }
}
