//! scratch diagnostics (to be deleted)
mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};
use tsload_proxy::Direction;

fn hold_server(hold: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            conn.set_nodelay(true).unwrap();
            thread::spawn(move || {
                let mut buf = [0u8; 64];
                while conn.read_exact(&mut buf).is_ok() {
                    let t = Instant::now();
                    while t.elapsed() < hold {}
                    if conn.write_all(&buf).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

fn idle_ping(addr: std::net::SocketAddr, idle: Duration) -> Duration {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_nodelay(true).unwrap();
    let mut v = vec![];
    let mut buf = [0u8; 64];
    for i in 0..220 {
        thread::sleep(idle);
        let t0 = Instant::now();
        conn.write_all(&buf.clone()).unwrap();
        conn.read_exact(&mut buf).unwrap();
        if i >= 20 {
            v.push(t0.elapsed());
        }
    }
    median(v)
}

#[test]
fn diag() {
    let rt = runtime();
    let echo = echo_server(64);
    for d in [
        Duration::from_micros(100),
        Duration::from_millis(1),
        Duration::from_millis(10),
    ] {
        let base = median(ping_pong(echo, 200, 64));
        let idle = idle_ping(echo, d);
        let hold = median(ping_pong(hold_server(d), 200, 64));
        let p0 = start(&rt, config(echo, Duration::ZERO, Direction::Up));
        let copy = median(ping_pong(p0.local_addr(), 200, 64));
        let p = start(&rt, config(echo, d, Direction::Up));
        let prox = median(ping_pong(p.local_addr(), 200, 64));
        thread::sleep(Duration::from_millis(50));
        let ps = idle.saturating_sub(base);
        let pc = hold.saturating_sub(base + d);
        eprintln!(
            "D {d:?}: base {base:?} idle-penalty(server) {ps:?} hold-penalty(client) {pc:?} copy-overhead {:?} proxy-added {:?} => proxy error vs ref {:?}",
            copy.saturating_sub(base),
            prox.saturating_sub(base),
            prox.as_nanos() as i128 - (base + d + ps + pc).as_nanos() as i128
        );
    }
}
