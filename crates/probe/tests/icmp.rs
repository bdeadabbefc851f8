//! ICMP echo across a veth pair between two network namespaces made by the test
//! (169.254.77.1/30 <-> 169.254.77.2/30; nothing leaves them). Needs root.

use std::time::Duration;

use tsload_netem::netns::VethPair;
use tsload_probe::{IcmpOptions, IcmpSocket, Pacing, ProbeError, ProbeKind, icmp};

async fn pair() -> VethPair {
    VethPair::create("tsprobe")
        .await
        .expect("creating two network namespaces and a veth pair (needs root)")
}

fn opts(pair: &VethPair, count: u64) -> IcmpOptions {
    let mut o = IcmpOptions::new(pair.right_addr.into(), count);
    o.netns = Some(pair.left.name().to_string());
    o.timeout = Duration::from_secs(2);
    o
}

fn write_sysctl(ns: &tsload_netem::netns::Netns, path: &'static str, value: &'static str) {
    ns.run(move || std::fs::write(path, value))
        .expect("entering the namespace")
        .unwrap_or_else(|e| panic!("writing {path}: {e}"));
}

#[tokio::test]
async fn flood_1000_across_veth() {
    let pair = pair().await;
    let mut o = opts(&pair, 1000);
    o.pacing = Pacing::Flood;
    let r = icmp::ping(&o).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!(r.kind, ProbeKind::Icmp);
    assert_eq!(r.target, "169.254.77.2");
    assert_eq!((r.transmitted, r.received, r.errors), (1000, 1000, 0));
    assert_eq!(r.loss_pct, 0.0);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(r.min_ms > 0.0, "{r:?}");
    assert!(r.avg_ms < r.max_ms, "{r:?}");
    assert!(r.min_ms <= r.avg_ms, "{r:?}");
    assert_eq!(r.latency.count, 1000);
    assert!(
        r.latency.min_ms > 0.0 && r.latency.p50_ms <= r.latency.max_ms,
        "{r:?}"
    );
    // A flood answered within microseconds runs far faster than 100 per second.
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    let text = r.render_text();
    assert!(text.starts_with("--- 169.254.77.2 ping statistics ---\n1000 packets transmitted, 1000 received, 0% packet loss, time "), "{text}");
    assert!(text.contains("\nrtt min/avg/max/mdev = "), "{text}");
}

#[tokio::test]
async fn interval_mode_paces_sends() {
    let pair = pair().await;
    let mut o = opts(&pair, 5);
    o.pacing = Pacing::Interval(Duration::from_millis(20));
    let started = std::time::Instant::now();
    let r = icmp::ping(&o).await.unwrap();
    let wall = started.elapsed();
    println!("{}wall {wall:?}", r.render_text());
    assert_eq!((r.transmitted, r.received), (5, 5));
    // iputils' time: first send to last send, four intervals.
    assert!(r.elapsed >= Duration::from_millis(80), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_millis(130), "{:?}", r.elapsed);
    // No reply was waited out (the timeout is 2 s); setup may be slow on a busy host.
    assert!(wall < Duration::from_millis(1500), "{wall:?}");
}

#[tokio::test]
async fn raw_and_datagram_sockets() {
    let pair = pair().await;
    // A fresh namespace's ping_group_range is "1 0" (nobody): no datagram socket, and
    // the error says which privilege is missing.
    let mut o = opts(&pair, 20);
    o.pacing = Pacing::Flood;
    o.socket = IcmpSocket::Datagram;
    let e = icmp::ping(&o).await.unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            ProbeError::IcmpPermission {
                socket: "datagram",
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("net.ipv4.ping_group_range"), "{text}");
    assert!(text.contains("\"1 0\""), "{text}");

    // Raw works as root.
    o.socket = IcmpSocket::Raw;
    let r = icmp::ping(&o).await.unwrap();
    assert_eq!((r.transmitted, r.received), (20, 20), "{}", r.render_text());

    // Auto falls back to raw.
    o.socket = IcmpSocket::Auto;
    let r = icmp::ping(&o).await.unwrap();
    assert_eq!((r.transmitted, r.received), (20, 20), "{}", r.render_text());

    // With the group allowed, the datagram socket works too.
    write_sysctl(
        &pair.left,
        "/proc/sys/net/ipv4/ping_group_range",
        "0 2147483647",
    );
    o.socket = IcmpSocket::Datagram;
    let r = icmp::ping(&o).await.unwrap();
    assert_eq!((r.transmitted, r.received), (20, 20), "{}", r.render_text());
}

#[tokio::test]
async fn unanswered_requests_are_lost_and_do_not_stall_a_flood() {
    let pair = pair().await;
    write_sysctl(&pair.right, "/proc/sys/net/ipv4/icmp_echo_ignore_all", "1");
    let mut o = opts(&pair, 4);
    o.pacing = Pacing::Flood;
    o.timeout = Duration::from_millis(100);
    let r = icmp::ping(&o).await.unwrap();
    println!("{}", r.render_text());
    assert_eq!((r.transmitted, r.received, r.errors), (4, 0, 0));
    assert_eq!(r.loss_pct, 100.0);
    assert_eq!(r.failures["timeout"], 4);
    // Without replies a flood sends every 10 ms: 3 gaps.
    assert!(r.elapsed >= Duration::from_millis(30), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_millis(90), "{:?}", r.elapsed);
    let text = r.render_text();
    assert!(
        text.contains("4 packets transmitted, 0 received, 100% packet loss"),
        "{text}"
    );
    assert!(!text.contains("rtt min"), "{text}");
}

#[tokio::test]
async fn payload_size_is_carried() {
    let pair = pair().await;
    let mut o = opts(&pair, 10);
    o.pacing = Pacing::Flood;
    o.payload_size = 1400;
    let r = icmp::ping(&o).await.unwrap();
    assert_eq!((r.transmitted, r.received), (10, 10));
    o.payload_size = 0;
    let r = icmp::ping(&o).await.unwrap();
    assert_eq!((r.transmitted, r.received), (10, 10));
}

/// Runs tsload's flood and iputils' `ping -f -c 1000` on the same veth pair and prints
/// both. By hand: `cargo test -p tsload-probe --test icmp -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "cross-check by hand: needs iputils' ping (apt-get install iputils-ping)"]
async fn compare_with_iputils_ping_flood() {
    let ping = ["/usr/bin/ping", "/bin/ping", "/usr/sbin/ping"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("iputils' ping is not installed: apt-get install iputils-ping");
    let pair = pair().await;
    let mut o = opts(&pair, 1000);
    o.pacing = Pacing::Flood;
    for round in 0..3 {
        let r = icmp::ping(&o).await.unwrap();
        println!("tsload-probe, round {round}:\n{}", r.render_text());
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", pair.left.name(), ping, "-f", "-c", "1000"])
            .arg(pair.right_addr.to_string())
            .output()
            .expect("running ip netns exec ping");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let tail: Vec<&str> = stdout.lines().rev().take(3).collect();
        println!(
            "iputils ping -f, round {round}:\n{}\n",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
