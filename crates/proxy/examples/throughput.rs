//! Throughput and CPU cost of the proxy on 127.0.0.1: a source thread writes through the
//! proxy to a sink thread, and the figure printed is bytes / (connect to the sink's EOF).
//!
//! ```text
//! cargo run --release -p tsload-proxy --example throughput -- [options]
//!   --bytes N          bytes to send (default 2 GB; suffixes k, M, G are powers of 1000)
//!   --delay-us N       delay on the up direction (default 0: the plain copy path)
//!   --rate N           rate limit of the delayed direction, bytes per second
//!   --write-size N     size of each write of the source (default 1 MiB)
//!   --interval-us N    one write every N us (default 0: as fast as possible)
//!   --workers N        proxy runtime worker threads (default 2)
//!   --direct           no proxy: the source writes to the sink directly
//!   --fault SPEC       a fault (repeatable; `tsload proxy --fault` grammar), e.g. one that
//!                      never fires, to measure the cost of watching: the bytes are
//!                      counted or scanned (stall:after_pattern=hex:fefefefe)
//! ```
//!
//! CPU is the user + system time of the proxy's runtime threads (from /proc), so the
//! source and sink are not counted.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use tsload_proxy::{Direction, Fault, Proxy, ProxyConfig};

const THREAD_NAME: &str = "proxy-rt";

struct Options {
    bytes: u64,
    delay: Duration,
    rate: Option<u64>,
    write_size: usize,
    interval: Duration,
    workers: usize,
    direct: bool,
    faults: Vec<Fault>,
}

fn parse_size(s: &str) -> u64 {
    let (digits, scale) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000),
        Some('M') => (&s[..s.len() - 1], 1_000_000),
        Some('G') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    digits
        .parse::<u64>()
        .unwrap_or_else(|_| usage(&format!("bad size {s}")))
        * scale
}

fn usage(message: &str) -> ! {
    eprintln!("{message}\nsee the top of examples/throughput.rs for the options");
    std::process::exit(2)
}

fn parse() -> Options {
    let mut o = Options {
        bytes: 2_000_000_000,
        delay: Duration::ZERO,
        rate: None,
        write_size: 1 << 20,
        interval: Duration::ZERO,
        workers: 2,
        direct: false,
        faults: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--bytes" => o.bytes = parse_size(&value()),
            "--delay-us" => o.delay = Duration::from_micros(parse_size(&value())),
            "--rate" => o.rate = Some(parse_size(&value())),
            "--write-size" => o.write_size = parse_size(&value()) as usize,
            "--interval-us" => o.interval = Duration::from_micros(parse_size(&value())),
            "--workers" => o.workers = parse_size(&value()) as usize,
            "--direct" => o.direct = true,
            "--fault" => {
                let spec = value();
                o.faults.push(
                    spec.parse()
                        .unwrap_or_else(|e| usage(&format!("--fault {spec}: {e}"))),
                );
            }
            _ => usage(&format!("unknown option {arg}")),
        }
    }
    o
}

/// User + system seconds of this process's threads named `name`.
fn cpu_seconds(name: &str) -> f64 {
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        // Fields after the ")" that ends the command: state is field 3, utime 14, stime 15.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 12 {
            ticks +=
                fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
        }
    }
    ticks as f64 / 100.0
}

fn sink() -> (SocketAddr, thread::JoinHandle<(u64, Instant)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            match conn.read(&mut buf) {
                Ok(0) => return (total, Instant::now()),
                Ok(n) => total += n as u64,
                Err(e) => panic!("sink: {e}"),
            }
        }
    });
    (addr, handle)
}

fn main() {
    let o = parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.workers)
        .thread_name(THREAD_NAME)
        .enable_all()
        .build()
        .unwrap();
    let (sink_addr, sink) = sink();
    let proxy = (!o.direct).then(|| {
        let mut config = ProxyConfig::new("127.0.0.1:0".parse().unwrap(), sink_addr);
        config.delay = o.delay;
        config.rate = o.rate;
        config.direction = Direction::Up;
        config.faults = o.faults.clone();
        rt.block_on(Proxy::start(config)).unwrap()
    });
    let target = proxy.as_ref().map_or(sink_addr, |p| p.local_addr());

    let cpu0 = cpu_seconds(THREAD_NAME);
    let t0 = Instant::now();
    let mut conn = TcpStream::connect(target).unwrap();
    conn.set_nodelay(true).unwrap();
    let buf = vec![0x5au8; o.write_size];
    let mut sent = 0u64;
    let mut next = Instant::now();
    while sent < o.bytes {
        let n = (o.bytes - sent).min(buf.len() as u64) as usize;
        conn.write_all(&buf[..n]).unwrap();
        sent += n as u64;
        if !o.interval.is_zero() {
            next += o.interval;
            let now = Instant::now();
            if next > now {
                thread::sleep(next - now);
            }
        }
    }
    conn.shutdown(std::net::Shutdown::Write).unwrap();
    let (received, end) = sink.join().unwrap();
    let elapsed = end - t0;
    let cpu = cpu_seconds(THREAD_NAME) - cpu0;
    assert_eq!(received, o.bytes, "the sink got a different byte count");

    let what = if o.direct {
        "direct (no proxy)".to_owned()
    } else {
        format!(
            "proxy, delay {:?}{}",
            o.delay,
            o.rate.map_or(String::new(), |r| format!(", rate {r} B/s"))
        )
    };
    println!(
        "{what}: {:.3} GB in {:.3} s = {:.3} GB/s ({:.2} Gbit/s); proxy CPU {:.2} s = {:.0}% of a core",
        received as f64 / 1e9,
        elapsed.as_secs_f64(),
        received as f64 / 1e9 / elapsed.as_secs_f64(),
        received as f64 * 8.0 / 1e9 / elapsed.as_secs_f64(),
        cpu,
        100.0 * cpu / elapsed.as_secs_f64(),
    );
    if let Some(proxy) = proxy {
        println!("{:?}", proxy.stats());
        rt.block_on(proxy.shutdown());
    }
}
