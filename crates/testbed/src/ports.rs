//! Free loopback ports: ask the kernel for one (bind 127.0.0.1:0), then let it go so the
//! server can bind it. Another process may take it in between; `Server::start` retries
//! when the server then fails to start. Within this process, ports handed to a live server
//! are remembered and never handed out twice, so parallel tests of one binary cannot
//! collide (the kernel may otherwise return a port that was just released).

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::TestbedError;

static IN_USE: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

fn in_use() -> MutexGuard<'static, Option<HashSet<u16>>> {
    // A panic while holding this lock cannot leave the set inconsistent (single inserts).
    IN_USE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ports reserved for one server; released (for this process) on drop.
#[derive(Debug, Default)]
pub(crate) struct Ports {
    ports: Vec<u16>,
}

impl Ports {
    /// Reserves one more free port on 127.0.0.1 and returns its address.
    pub(crate) fn take(&mut self) -> Result<SocketAddr, TestbedError> {
        for _ in 0..64 {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|e| TestbedError::io("binding 127.0.0.1:0 to find a free port", e))?;
            let addr = listener
                .local_addr()
                .map_err(|e| TestbedError::io("reading a free port", e))?;
            drop(listener);
            let mut guard = in_use();
            let set = guard.get_or_insert_with(HashSet::new);
            if set.insert(addr.port()) {
                self.ports.push(addr.port());
                return Ok(addr);
            }
        }
        Err(TestbedError::io(
            "finding a free port on 127.0.0.1",
            std::io::Error::other("the kernel kept returning ports already in use by this process"),
        ))
    }
}

impl Drop for Ports {
    fn drop(&mut self) {
        if let Some(set) = in_use().as_mut() {
            for port in &self.ports {
                set.remove(port);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_loopback_and_distinct_while_held() {
        let mut a = Ports::default();
        let mut seen = HashSet::new();
        for _ in 0..20 {
            let addr = a.take().unwrap();
            assert_eq!(addr.ip(), Ipv4Addr::LOCALHOST);
            assert!(
                seen.insert(addr.port()),
                "port {} handed out twice",
                addr.port()
            );
        }
        let held: Vec<u16> = a.ports.clone();
        drop(a);
        let guard = in_use();
        let set = guard.as_ref().unwrap();
        assert!(
            held.iter().all(|p| !set.contains(p)),
            "ports not released on drop"
        );
    }
}
