//! `tsload proxy --fault SPEC` end to end on 127.0.0.1: a fault fires at its exact byte and
//! is counted in the Ctrl-C stats; bad specs exit 2 naming the part that is wrong.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

mod common;
use common::{text, tsload};

#[test]
fn a_fault_fires_at_its_byte_and_is_counted() {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut proxy = tsload()
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(upstream.local_addr().unwrap().to_string())
        .args(["--fault", "reset_after_bytes=5,stream=down"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(proxy.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let listen = first
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no address in `{first}`"))
        .to_string();
    let mut second = String::new();
    stdout.read_line(&mut second).unwrap();
    assert_eq!(
        second.trim_end(),
        "fault 1: reset:after_bytes=5,stream=down"
    );

    let mut client = TcpStream::connect(&listen).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (mut server, _) = upstream.accept().unwrap();
    server.write_all(b"0123456789abcdefghij").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    let end = loop {
        match client.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e.kind()),
        }
    };
    assert_eq!(text(&got), "01234");
    assert_eq!(end, Some(ErrorKind::ConnectionReset));

    // SIGINT: the proxy prints its counters, faults included, and exits 0.
    thread::sleep(Duration::from_millis(50));
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    let status = proxy.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "proxy exit {status:?}: {rest}");
    assert!(
        rest.contains("bytes up 0, down 5, faults fired 1"),
        "{rest}"
    );
}

#[test]
fn bad_fault_specs_exit_2_naming_the_part() {
    for (spec, expect) in [
        (
            "explode",
            "`explode` is not a fault action; allowed: reset, stall",
        ),
        (
            "reset:after_bytes=ten",
            "`after_bytes=ten`: `ten` is not a byte count",
        ),
        (
            "reset:after_pattern=",
            "`after_pattern=`: the pattern is empty",
        ),
        ("reset:after_pattern=hex:4g", "`4g` is not hex"),
        (
            "stall:colour=red",
            "`colour=red` is not an option; allowed: after_bytes=N",
        ),
        (
            "reset:after_pattern=x,occurrence=0",
            "occurrences count from 1",
        ),
        ("blackhole:max_fires=0", "0 would never fire"),
        ("reset:after_bytes=1,stream=sideways", "allowed: stream=up"),
        (
            "reset_on_reply:after_bytes=1,after_pattern=x",
            "one trigger only",
        ),
    ] {
        let out = tsload()
            .args([
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
                "--fault",
                "reset",
                "--fault",
                spec,
            ])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "`{spec}`: {stderr}");
        assert!(stderr.contains(spec), "`{spec}`: {stderr}");
        assert!(
            stderr.contains(expect),
            "`{spec}`: expected `{expect}` in {stderr}"
        );
    }
}
