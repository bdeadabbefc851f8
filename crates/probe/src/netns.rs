//! Running a probe inside a named network namespace.
//!
//! A socket belongs to the network namespace of the thread that created it, so a probe
//! for namespace `NAME` runs, whole, on a fresh thread that has entered
//! `/var/run/netns/NAME` (as `ip netns exec` and tsload-netem's `Netns::run` do it:
//! `setns(CLONE_NEWNET)` on the namespace file), with its own single-threaded tokio
//! runtime. Every socket the probe opens (ICMP, TCP, HTTP, SQL) is opened there. The
//! thread is never reused, so no other work ever runs in the namespace by accident.
//! Entering a namespace needs CAP_SYS_ADMIN.

use std::fs::File;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

use nix::sched::CloneFlags;

use crate::error::ProbeError;

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

/// Runs the future made by `f` to completion on a fresh thread inside network namespace
/// `name`, on that thread's own current-thread tokio runtime, and returns its output. A
/// panic in it is resumed in the caller.
pub async fn run_in_netns<R, Fut, F>(name: &str, f: F) -> Result<R, ProbeError>
where
    R: Send + 'static,
    Fut: Future<Output = R>,
    F: FnOnce() -> Fut + Send + 'static,
{
    let netns_err = |source: io::Error| ProbeError::Netns {
        name: name.to_string(),
        source,
    };
    let file = File::open(netns_path(name)).map_err(netns_err)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = std::thread::Builder::new()
        .name(format!("probe-netns-{name}"))
        .spawn(move || {
            let result = (|| -> io::Result<R> {
                nix::sched::setns(&file, CloneFlags::CLONE_NEWNET)?;
                drop(file);
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                Ok(rt.block_on(f()))
            })();
            let _ = tx.send(result);
        })
        .map_err(netns_err)?;
    match rx.await {
        Ok(result) => {
            // The thread has handed its result over and is about to end.
            let _ = handle.join();
            result.map_err(netns_err)
        }
        // The sender went away without a result: the thread panicked.
        Err(_) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => Err(netns_err(io::Error::other(
                "probe thread ended without a result",
            ))),
        },
    }
}

/// Runs `fut` here, or inside namespace `netns` when one is named.
pub(crate) async fn maybe_in_netns<R, Fut, F>(netns: Option<&str>, f: F) -> Result<R, ProbeError>
where
    R: Send + 'static,
    Fut: Future<Output = Result<R, ProbeError>>,
    F: FnOnce() -> Fut + Send + 'static,
{
    match netns {
        Some(name) => run_in_netns(name, f).await?,
        None => f().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(netns_path("a"), PathBuf::from("/var/run/netns/a"));
        assert_eq!(
            netns_path("/proc/1/ns/net"),
            PathBuf::from("/proc/1/ns/net")
        );
    }

    #[tokio::test]
    async fn missing_namespace_is_a_clear_error() {
        let e = run_in_netns("tsload-probe-no-such-ns", || async {})
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("network namespace tsload-probe-no-such-ns: "),
            "{text}"
        );
    }

    #[tokio::test]
    async fn runs_in_our_own_namespace_by_path() {
        // Entering our own namespace (by path) changes nothing (needs CAP_SYS_ADMIN).
        let v = run_in_netns("/proc/self/ns/net", || async { 6 * 7 })
            .await
            .unwrap();
        assert_eq!(v, 42);
    }
}
