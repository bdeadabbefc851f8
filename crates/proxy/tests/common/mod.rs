//! Helpers shared by the integration tests: blocking echo and sink servers on 127.0.0.1,
//! a ping-pong client, and a runtime to run the proxy on.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use tsload_proxy::{Direction, Proxy, ProxyConfig, ProxyHandle};

/// Serialises the tests that measure time, so that they do not share the two cores.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Name of the proxy runtime's threads.
pub const PROXY_THREAD: &str = "proxy-rt";

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The runtime the proxy runs on (the test threads themselves are plain threads). Panics on
/// its threads are counted, see [`proxy_panics`].
pub fn runtime() -> tokio::runtime::Runtime {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if thread::current().name() == Some(PROXY_THREAD) {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(PROXY_THREAD)
        .enable_all()
        .build()
        .unwrap()
}

/// How many panics happened on proxy runtime threads (a panicking connection task would
/// otherwise go unnoticed: tokio catches it).
pub fn proxy_panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}

pub fn config(upstream: SocketAddr, delay: Duration, direction: Direction) -> ProxyConfig {
    let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
    config.delay = delay;
    config.direction = direction;
    config
}

pub fn start(rt: &tokio::runtime::Runtime, config: ProxyConfig) -> ProxyHandle {
    rt.block_on(Proxy::start(config)).unwrap()
}

/// Pins the calling thread to one CPU (`Some(cpu)`) or lets it run anywhere (`None`).
/// The ping-pong client and server run on CPU 0: on a 2-vCPU virtual machine a wake-up
/// across vCPUs costs some 30 us more than one on the same vCPU, and where the scheduler
/// happens to put the two threads would otherwise move the plain RTT between 13 and 60 us
/// from one run to the next. The proxy's threads are not pinned.
pub fn pin(cpu: Option<usize>) {
    use nix::sched::{CpuSet, sched_setaffinity};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    match cpu {
        Some(cpu) => set.set(cpu).unwrap(),
        None => {
            for cpu in 0..CpuSet::count() {
                let _ = set.set(cpu);
            }
        }
    }
    let _ = sched_setaffinity(Pid::from_raw(0), &set);
}

/// A server that answers every `size`-byte message with the same bytes, one thread per
/// connection, until the client closes. Runs until the test process ends.
pub fn echo_server(size: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            conn.set_nodelay(true).unwrap();
            thread::spawn(move || {
                pin(Some(0));
                let mut buf = vec![0u8; size];
                while conn.read_exact(&mut buf).is_ok() {
                    if conn.write_all(&buf).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// Round-trip times of `rounds` `size`-byte ping-pongs over one connection to `addr`,
/// after 20 unmeasured ones.
pub fn ping_pong(addr: SocketAddr, rounds: usize, size: usize) -> Vec<Duration> {
    pin(Some(0));
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let msg: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut buf = vec![0u8; size];
    let mut rtts = Vec::with_capacity(rounds);
    for i in 0..rounds + 20 {
        let t0 = Instant::now();
        conn.write_all(&msg).unwrap();
        conn.read_exact(&mut buf).unwrap();
        let rtt = t0.elapsed();
        assert_eq!(buf, msg);
        if i >= 20 {
            rtts.push(rtt);
        }
    }
    pin(None);
    rtts
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A deterministic pseudo-random byte stream (SplitMix64).
pub fn stream(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// FNV-1a, 64 bits: enough to tell two streams apart.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A server that copies everything it reads back to the client, and shuts its write side
/// down after the client's EOF.
pub fn copy_echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut reader = conn.try_clone().unwrap();
                if std::io::copy(&mut reader, &mut conn).is_ok() {
                    let _ = conn.shutdown(std::net::Shutdown::Write);
                }
            });
        }
    });
    addr
}

/// Sends `data` on `conn` in writes of varied sizes (1 byte to 100 KB), then shuts the
/// write side down, while reading everything that comes back; returns what came back.
pub fn send_and_collect(conn: TcpStream, data: &[u8]) -> Vec<u8> {
    let mut reader = conn.try_clone().unwrap();
    let collector = thread::spawn(move || {
        let mut back = Vec::new();
        reader.read_to_end(&mut back).unwrap();
        back
    });
    let mut writer = conn;
    let mut sizes = 12_345u64;
    let mut at = 0;
    while at < data.len() {
        sizes = sizes
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let size = ((sizes >> 33) % 100_000 + 1) as usize;
        let end = (at + size).min(data.len());
        writer.write_all(&data[at..end]).unwrap();
        at = end;
    }
    writer.shutdown(std::net::Shutdown::Write).unwrap();
    collector.join().unwrap()
}

/// An echo server that holds each reply for `hold` (spinning, so that it stays awake)
/// before sending it.
pub fn holding_echo_server(size: usize, hold: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            conn.set_nodelay(true).unwrap();
            thread::spawn(move || {
                pin(Some(0));
                let mut buf = vec![0u8; size];
                while conn.read_exact(&mut buf).is_ok() {
                    let t0 = Instant::now();
                    while t0.elapsed() < hold {
                        std::hint::spin_loop();
                    }
                    if conn.write_all(&buf).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// Like [`ping_pong`], but the client sleeps `idle` before each round trip (outside the
/// measured time), so the server has been idle that long when the request comes.
pub fn ping_pong_after_idle(
    addr: SocketAddr,
    rounds: usize,
    size: usize,
    idle: Duration,
) -> Vec<Duration> {
    pin(Some(0));
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let msg: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut buf = vec![0u8; size];
    let mut rtts = Vec::with_capacity(rounds);
    for i in 0..rounds + 5 {
        thread::sleep(idle);
        let t0 = Instant::now();
        conn.write_all(&msg).unwrap();
        conn.read_exact(&mut buf).unwrap();
        let rtt = t0.elapsed();
        assert_eq!(buf, msg);
        if i >= 5 {
            rtts.push(rtt);
        }
    }
    pin(None);
    rtts
}

/// The resident set size of this process, in bytes (`VmRSS` of /proc/self/status).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// How many file descriptors this process has open.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Raises the soft RLIMIT_NOFILE to at least `needed` (up to the hard limit); panics,
/// saying what to do, when the hard limit is lower.
pub fn raise_nofile(needed: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= needed,
        "this test needs {needed} file descriptors, but the hard RLIMIT_NOFILE is {hard}: \
         raise it (ulimit -Hn {needed}, or LimitNOFILE= for a service) and run again"
    );
    if soft < needed {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    }
}

/// A server that accepts every connection and holds it open without reading or writing,
/// until the test process ends; returns its address and how many it accepted so far.
pub fn holding_server() -> (SocketAddr, std::sync::Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            held.push(conn);
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (addr, accepted)
}

/// Waits until `f` holds, for at most `limit`; panics naming `what` otherwise.
pub fn wait_until(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(5));
    }
}
