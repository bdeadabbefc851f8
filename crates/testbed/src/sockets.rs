//! The sockets a process listens on (TCP in LISTEN, unconnected bound UDP), read from
//! /proc: the process's socket inodes from /proc/PID/fd, matched against
//! /proc/PID/net/{tcp,tcp6,udp,udp6}. Tests use it to check that a server listens on
//! 127.0.0.1 only.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// A listening socket: protocol ("tcp" or "udp") and local address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Listener {
    pub proto: &'static str,
    pub addr: SocketAddr,
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.proto, self.addr)
    }
}

pub(crate) fn listeners(pid: u32) -> std::io::Result<Vec<Listener>> {
    let mut inodes = HashSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // fds come and go while we read; skip the ones that vanished.
        let Ok(entry) = entry else { continue };
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.parse::<u64>().ok())
        {
            inodes.insert(inode);
        }
    }
    let mut out = Vec::new();
    for (file, proto, state) in [
        ("tcp", "tcp", "0A"),
        ("tcp6", "tcp", "0A"),
        ("udp", "udp", "07"),
        ("udp6", "udp", "07"),
    ] {
        let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) else {
            continue; // no IPv6 in this kernel, for instance
        };
        for line in table.lines().skip(1) {
            let Some((addr, st, inode)) = parse_line(line) else {
                continue;
            };
            if st == state && inodes.contains(&inode) {
                out.push(Listener { proto, addr });
            }
        }
    }
    out.sort_by_key(|l| (l.proto, l.addr));
    out.dedup();
    Ok(out)
}

/// (local address, state, inode) of one line of /proc/net/{tcp,udp}[6].
fn parse_line(line: &str) -> Option<(SocketAddr, &str, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
    let (ip, port) = local.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    // The kernel prints the address as native-endian 32-bit words of network-order bytes.
    let ip: std::net::IpAddr = match ip.len() {
        8 => Ipv4Addr::from(u32::from_str_radix(ip, 16).ok()?.to_ne_bytes()).into(),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            Ipv6Addr::from(bytes).into()
        }
        _ => return None,
    };
    Some((SocketAddr::new(ip, port), state, inode.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_net_lines() {
        // Lines as a little-endian kernel prints them.
        if cfg!(target_endian = "little") {
            let v4 = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0";
            let (addr, st, inode) = parse_line(v4).unwrap();
            assert_eq!(addr, "127.0.0.1:8080".parse().unwrap());
            assert_eq!((st, inode), ("0A", 12345));
            let v6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0";
            let (addr, _, inode) = parse_line(v6).unwrap();
            assert_eq!(addr, "[::1]:8080".parse().unwrap());
            assert_eq!(inode, 777);
        }
        assert!(parse_line("  sl  local_address rem_address   st").is_none());
    }

    #[test]
    fn finds_this_process_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let found = listeners(std::process::id()).unwrap();
        assert!(
            found.contains(&Listener { proto: "tcp", addr }),
            "{addr} not in {found:?}"
        );
    }
}
