//! Named network namespaces and veth pairs, for tests (this crate's and other crates').
//!
//! Namespaces are made natively, the way `ip netns add` does it, without the `ip` binary:
//! a short-lived thread `unshare(CLONE_NEWNET)`s and bind-mounts its
//! `/proc/thread-self/ns/net` onto `/var/run/netns/NAME`; deleting unmounts and removes
//! that file (the kernel then destroys the namespace and the veth ends inside it). So
//! `ip netns exec NAME ...` works on them too. Links, addresses and routes are made with
//! rtnetlink from sockets opened inside the namespaces.
//!
//! A [`VethPair`] is two namespaces joined by a veth link with IPv4 link-local addresses
//! (169.254.77.1/30 and .2/30): traffic between them never leaves the two namespaces, and
//! nothing is added to this process's own namespace. Namespaces are deleted on drop,
//! hence also when a test panics; ones left by a killed test process are swept the next
//! time a namespace with the same prefix is created.
//!
//! Everything here needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).

use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use futures_util::TryStreamExt;
use nix::mount::{MntFlags, MsFlags};
use nix::sched::CloneFlags;

use crate::apply::Netlink;
pub use crate::apply::{NETNS_DIR, netns_path};
use crate::error::Error;

/// Whether a process is alive (its pid exists).
pub(crate) fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// Runs `f` on a fresh thread that has entered the namespace at `path`; a panic in `f`
/// is resumed in the caller.
fn run_in<R, F>(path: &Path, f: F) -> io::Result<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let file = File::open(path)?;
    let handle = std::thread::Builder::new()
        .name("tsload-netns".to_string())
        .spawn(move || {
            nix::sched::setns(&file, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
            Ok(f())
        })?;
    match handle.join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// A named network namespace that this process made; deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    path: PathBuf,
    deleted: bool,
}

impl Netns {
    /// Makes the namespace `/var/run/netns/NAME` (fails if it exists).
    pub fn create(name: &str) -> io::Result<Netns> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad network namespace name {name:?}"),
            ));
        }
        fs::create_dir_all(NETNS_DIR)?;
        let path = netns_path(name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let target = path.clone();
        let made = std::thread::Builder::new()
            .name("tsload-netns-add".to_string())
            .spawn(move || -> io::Result<()> {
                nix::sched::unshare(CloneFlags::CLONE_NEWNET)?;
                nix::mount::mount(
                    Some("/proc/thread-self/ns/net"),
                    &target,
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )?;
                Ok(())
            })?
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")));
        if let Err(e) = made {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(Netns {
            name: name.to_string(),
            path,
            deleted: false,
        })
    }

    /// Makes a namespace named `PREFIX-PID-N`, after deleting any `PREFIX-*` namespaces
    /// left behind by processes that no longer exist.
    pub fn create_unique(prefix: &str) -> io::Result<Netns> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        sweep_stale(prefix);
        let pid = std::process::id();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            match Netns::create(&format!("{prefix}-{pid}-{n}")) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => return other,
            }
        }
    }

    /// Its name (as `ip netns` shows it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its path under `/var/run/netns`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a thread inside the namespace (sockets it opens belong there).
    pub fn run<R, F>(&self, f: F) -> io::Result<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        run_in(&self.path, f)
    }

    /// Starts `f` on a thread inside the namespace and returns its handle.
    pub fn spawn<R, F>(&self, f: F) -> io::Result<std::thread::JoinHandle<io::Result<R>>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let file = File::open(&self.path)?;
        std::thread::Builder::new()
            .name(format!("netns-{}", self.name))
            .spawn(move || {
                nix::sched::setns(&file, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
                Ok(f())
            })
    }

    /// Runs an async function to completion on a thread inside the namespace, with its
    /// own single-threaded tokio runtime.
    pub fn block_on<R, Fut, F>(&self, f: F) -> io::Result<R>
    where
        R: Send + 'static,
        Fut: Future<Output = R>,
        F: FnOnce() -> Fut + Send + 'static,
    {
        run_in(&self.path, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            Ok(rt.block_on(f()))
        })?
    }

    /// An rtnetlink connection inside the namespace.
    pub async fn netlink(&self) -> Result<Netlink, Error> {
        Netlink::open(Some(self.path.to_str().unwrap_or(&self.name))).await
    }

    /// Deletes the namespace now.
    pub fn delete(mut self) -> io::Result<()> {
        self.deleted = true;
        delete_path(&self.path)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.deleted
            && let Err(e) = delete_path(&self.path)
        {
            eprintln!(
                "tsload-netem: could not delete network namespace {}: {e}",
                self.name
            );
        }
    }
}

fn delete_path(path: &Path) -> io::Result<()> {
    match nix::mount::umount2(path, MntFlags::MNT_DETACH) {
        Ok(()) | Err(nix::errno::Errno::EINVAL) | Err(nix::errno::Errno::ENOENT) => {}
        Err(e) => return Err(e.into()),
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Deletes `PREFIX-PID-N` namespaces whose PID is gone.
fn sweep_stale(prefix: &str) {
    let Ok(entries) = fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !pid_alive(pid) {
            let _ = delete_path(&entry.path());
        }
    }
}

/// Two namespaces joined by a veth pair with link-local addresses, links up.
#[derive(Debug)]
pub struct VethPair {
    /// The first namespace (holds `left_if`).
    pub left: Netns,
    /// The second namespace (holds `right_if`).
    pub right: Netns,
    /// The veth end in `left`.
    pub left_if: String,
    /// The veth end in `right`.
    pub right_if: String,
    /// `left_if`'s address.
    pub left_addr: Ipv4Addr,
    /// `right_if`'s address.
    pub right_addr: Ipv4Addr,
    /// The prefix length of both addresses.
    pub prefix_len: u8,
}

async fn nl_index(nl: &Netlink, name: &str) -> Result<u32, Error> {
    nl.ifindex(name).await
}

fn nl_err(what: &str, e: rtnetlink::Error) -> Error {
    Error::Netlink(format!("{what}: {e}"))
}

async fn set_up(nl: &Netlink, index: u32) -> Result<(), Error> {
    nl.handle()
        .link()
        .set(rtnetlink::LinkUnspec::new_with_index(index).up().build())
        .execute()
        .await
        .map_err(|e| nl_err("setting a link up", e))
}

impl VethPair {
    /// Makes namespaces `PREFIX-PID-N` and `PREFIX-PID-M`, a veth pair `veth0` (left,
    /// 169.254.77.1/30) and `veth1` (right, 169.254.77.2/30), and brings them and both
    /// loopbacks up.
    pub async fn create(prefix: &str) -> Result<VethPair, Error> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| Error::Io { what, source }
        };
        let left = Netns::create_unique(prefix).map_err(io("creating a network namespace"))?;
        let right = Netns::create_unique(prefix).map_err(io("creating a network namespace"))?;
        let pair = VethPair {
            left,
            right,
            left_if: "veth0".to_string(),
            right_if: "veth1".to_string(),
            left_addr: Ipv4Addr::new(169, 254, 77, 1),
            right_addr: Ipv4Addr::new(169, 254, 77, 2),
            prefix_len: 30,
        };
        let l = pair.left.netlink().await?;
        l.handle()
            .link()
            .add(rtnetlink::LinkVeth::new(&pair.left_if, &pair.right_if).build())
            .execute()
            .await
            .map_err(|e| nl_err("creating a veth pair", e))?;
        let peer = nl_index(&l, &pair.right_if).await?;
        let right_ns = File::open(pair.right.path()).map_err(io("opening a namespace"))?;
        l.handle()
            .link()
            .set(
                rtnetlink::LinkUnspec::new_with_index(peer)
                    .setns_by_fd(right_ns.as_raw_fd())
                    .build(),
            )
            .execute()
            .await
            .map_err(|e| nl_err("moving a veth end", e))?;
        drop(right_ns);
        let r = pair.right.netlink().await?;
        for (nl, ifname, addr) in [
            (&l, &pair.left_if, pair.left_addr),
            (&r, &pair.right_if, pair.right_addr),
        ] {
            let index = nl_index(nl, ifname).await?;
            nl.handle()
                .address()
                .add(index, IpAddr::V4(addr), pair.prefix_len)
                .execute()
                .await
                .map_err(|e| nl_err("adding an address", e))?;
            set_up(nl, index).await?;
            let lo = nl_index(nl, "lo").await?;
            set_up(nl, lo).await?;
        }
        Ok(pair)
    }

    /// Adds a default route in the left namespace via the right end (for tests of the
    /// default-route refusal).
    pub async fn add_default_route_left(&self) -> Result<(), Error> {
        let l = self.left.netlink().await?;
        let index = nl_index(&l, &self.left_if).await?;
        let route = rtnetlink::RouteMessageBuilder::<Ipv4Addr>::new()
            .gateway(self.right_addr)
            .output_interface(index)
            .build();
        l.handle()
            .route()
            .add(route)
            .execute()
            .await
            .map_err(|e| nl_err("adding a default route", e))
    }

    /// Interface names in the left namespace (a sanity check for tests).
    pub async fn left_links(&self) -> Result<Vec<String>, Error> {
        let l = self.left.netlink().await?;
        let links: Vec<_> = l
            .handle()
            .link()
            .get()
            .execute()
            .try_collect()
            .await
            .map_err(|e| nl_err("listing links", e))?;
        Ok(links
            .iter()
            .filter_map(|m| {
                m.attributes.iter().find_map(|a| match a {
                    netlink_packet_route::link::LinkAttribute::IfName(n) => Some(n.clone()),
                    _ => None,
                })
            })
            .collect())
    }
}
