//! Against the real kernel, inside network namespaces these tests create (and delete):
//! tbf shapes real TCP traffic, `tc` sees what was applied, clear works, the guard
//! restores after drop, panic, SIGTERM and (via its record) SIGKILL, netem on a kernel
//! without sch_netem fails cleanly, and the safety checks refuse what they should.
//!
//! Traffic only flows between the two ends of a veth pair whose ends live in two
//! namespaces made here, on link-local addresses (169.254.77.1/30 <-> .2/30).
//! These tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); without it they fail, saying so.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tsload_netem::apply::{ApplyOptions, Netlink};
use tsload_netem::encode::QdiscOp;
use tsload_netem::guard::{self, RestoreOutcome};
use tsload_netem::netns::VethPair;
use tsload_netem::{Error, Guard, GuardOptions, Qdisc, Spec, Target, apply, clear, show};

const PREFIX: &str = "tsload-netem-test";

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

macro_rules! need_root {
    () => {
        assert!(
            is_root(),
            "this test needs root: it creates network namespaces and qdiscs (CI runs as root)"
        );
    };
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn left(pair: &VethPair) -> Target {
    Target::new(pair.left_if.clone()).in_netns(pair.left.name())
}

fn spec(text: &str) -> Spec {
    Spec::parse(text).unwrap()
}

/// `tc [-s] qdisc show dev IF` inside a namespace (a cross-check only).
fn tc_show(netns: &str, ifname: &str) -> String {
    let out = Command::new("ip")
        .args([
            "netns", "exec", netns, "tc", "-s", "qdisc", "show", "dev", ifname,
        ])
        .output()
        .expect("the cross-checks need iproute2's ip and tc (apt-get install iproute2)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn root_qdisc(target: &Target) -> Qdisc {
    rt().block_on(show(target)).unwrap().expect("a root qdisc")
}

fn guard_options(dir: &Path) -> GuardOptions {
    GuardOptions {
        record_dir: dir.to_path_buf(),
        allow_default_route: false,
    }
}

fn records_in(dir: &Path) -> usize {
    Guard::pending_records(dir).unwrap().len()
}

/// Sends TCP from left to right for `secs`, returns the receiver's goodput in bit/s over
/// the window [warmup, secs].
fn goodput(pair: &VethPair, secs: f64, warmup: f64) -> f64 {
    let addr = SocketAddr::from((pair.right_addr, 5201));
    let listener = pair
        .right
        .run(move || TcpListener::bind(addr))
        .unwrap()
        .unwrap();
    let receiver = pair
        .right
        .spawn(move || -> std::io::Result<(u64, f64)> {
            let (mut s, _) = listener.accept()?;
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            let start = Instant::now();
            let mut buf = vec![0u8; 1 << 16];
            let mut counted = 0u64;
            let mut first = None;
            let mut last = start;
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                let now = Instant::now();
                if now.duration_since(start).as_secs_f64() >= warmup {
                    first.get_or_insert(now);
                    counted += n as u64;
                    last = now;
                }
            }
            let window = first.map_or(0.0, |f| last.duration_since(f).as_secs_f64());
            Ok((counted, window))
        })
        .unwrap();
    let sender = pair
        .left
        .spawn(move || -> std::io::Result<u64> {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            s.set_write_timeout(Some(Duration::from_secs(5)))?;
            let chunk = vec![0x5au8; 1 << 14];
            let start = Instant::now();
            let mut sent = 0u64;
            while start.elapsed().as_secs_f64() < secs {
                s.write_all(&chunk)?;
                sent += chunk.len() as u64;
            }
            Ok(sent)
        })
        .unwrap();
    let sent = sender.join().unwrap().unwrap().unwrap();
    let (bytes, window) = receiver.join().unwrap().unwrap().unwrap();
    assert!(
        sent > 0 && bytes > 0 && window > 0.7 * (secs - warmup),
        "sent {sent} got {bytes} in {window}s"
    );
    bytes as f64 * 8.0 / window
}

#[test]
fn tbf_limits_real_traffic_and_tc_sees_it() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    assert!(
        rt.block_on(pair.left_links())
            .unwrap()
            .contains(&"veth0".to_string())
    );
    let unshaped = goodput(&pair, 0.6, 0.1);
    let tbf = spec("tbf rate 8mbit burst 32kbit latency 400ms");
    rt.block_on(apply(&target, &tbf, &ApplyOptions::default()))
        .unwrap();

    let tc = tc_show(pair.left.name(), "veth0");
    assert!(
        tc.contains("qdisc tbf") && tc.contains("rate 8Mbit"),
        "{tc}"
    );
    let q = root_qdisc(&target);
    assert_eq!(q.kind, "tbf");
    assert!(!q.is_default());
    assert_eq!(q.spec, Some(tbf), "dumped {q}");

    let rate = goodput(&pair, 1.8, 0.3);
    let stats = tc_show(pair.left.name(), "veth0");
    eprintln!(
        "unshaped {:.1} Mbit/s, tbf 8mbit: {:.2} Mbit/s\n{stats}",
        unshaped / 1e6,
        rate / 1e6
    );
    // TCP goodput under an 8 Mbit/s link-layer limit: ~1448 payload bytes per 1514.
    assert!(
        (7.2e6..=8.8e6).contains(&rate),
        "goodput {rate} not within 10% of 8 Mbit/s (unshaped: {unshaped})"
    );
    assert!(
        unshaped > 3.0 * rate,
        "unshaped {unshaped} vs shaped {rate}"
    );
    assert!(stats.contains("Sent "), "{stats}");

    assert!(rt.block_on(clear(&target)).unwrap());
    let q = root_qdisc(&target);
    assert!(q.is_default() && q.kind != "tbf", "after clear: {q}");
    let tc = tc_show(pair.left.name(), "veth0");
    assert!(!tc.contains("tbf"), "{tc}");
    // Clearing the default again is a no-op.
    assert!(!rt.block_on(clear(&target)).unwrap());
}

#[test]
fn apply_modes_and_show_decode_what_tc_would_print() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let add = ApplyOptions {
        op: QdiscOp::Add,
        handle: 0x10000,
        merge: false,
        allow_default_route: false,
    };
    rt.block_on(apply(&target, &spec("htb default 10"), &add))
        .unwrap();
    let q = root_qdisc(&target);
    assert_eq!((q.kind.as_str(), q.handle), ("htb", 0x10000));
    assert_eq!(q.spec, Some(spec("htb default 10")));
    assert!(tc_show(pair.left.name(), "veth0").contains("qdisc htb 1: root"));
    // add over an existing 1: fails, with the kernel's reason
    let e = rt.block_on(apply(&target, &spec("htb"), &add)).unwrap_err();
    assert!(matches!(e, Error::Kernel { .. }), "{e}");
    assert!(e.to_string().contains("veth0"), "{e}");
    // htb cannot be changed in place: the kernel's reason comes through
    let change = ApplyOptions {
        op: QdiscOp::Change,
        handle: 0,
        ..add
    };
    let e = rt
        .block_on(apply(&target, &spec("htb default 20 r2q 5"), &change))
        .unwrap_err();
    assert!(
        e.to_string().contains("Change operation not supported"),
        "{e}"
    );
    // replace with another kind
    let tbf = spec("tbf rate 100mbit burst 32kbit latency 50ms");
    rt.block_on(apply(&target, &tbf, &ApplyOptions::default()))
        .unwrap();
    // a tbf can be changed in place
    let slower = spec("tbf rate 8mbit burst 32kbit latency 50ms");
    rt.block_on(apply(&target, &slower, &change)).unwrap();
    let q = root_qdisc(&target);
    assert_eq!(q.spec, Some(slower));
    assert!(tc_show(pair.left.name(), "veth0").contains("rate 8Mbit"));
    rt.block_on(apply(&target, &tbf, &change)).unwrap();
    let q = root_qdisc(&target);
    let Some(Spec::Tbf(t)) = q.spec else {
        panic!("not tbf: {q}")
    };
    assert_eq!(t.rate, tsload_netem::spec::Rate(12_500_000));
    // The kernel keeps the burst as nanoseconds; the dump is within a few bytes.
    assert!((4090..=4110).contains(&t.burst.0), "{q}");
    let tc = tc_show(pair.left.name(), "veth0");
    assert!(tc.contains("rate 100Mbit"), "{tc}");
}

#[test]
fn netem_without_sch_netem_fails_cleanly() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let before = root_qdisc(&target);
    let netem = spec("delay 10ms 2ms loss 0.5%");
    match rt.block_on(Guard::apply(&target, &netem, &guard_options(dir.path()))) {
        Err(e) => {
            assert!(matches!(e, Error::NetemUnavailable { .. }), "{e}");
            let text = e.to_string();
            assert!(
                text.contains("modprobe sch_netem") && text.contains("proxy"),
                "{text}"
            );
            assert!(text.contains("kind is unknown"), "kernel's ext ack: {text}");
            assert_eq!(root_qdisc(&target), before, "something was left behind");
            assert_eq!(records_in(dir.path()), 0, "a record was left behind");
            let e = rt
                .block_on(apply(&target, &netem, &ApplyOptions::default()))
                .unwrap_err();
            assert!(matches!(e, Error::NetemUnavailable { .. }), "{e}");
            assert!(!tc_show(pair.left.name(), "veth0").contains("netem"));
        }
        Ok(g) => {
            // A kernel with sch_netem: then it must really be there, and go away again.
            eprintln!("this kernel has sch_netem");
            assert_eq!(root_qdisc(&target).spec, Some(netem));
            assert_eq!(rt.block_on(g.restore()).unwrap(), RestoreOutcome::Deleted);
            assert_eq!(root_qdisc(&target), before);
        }
    }
}

#[test]
fn guard_restores_the_default_on_drop() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let before = root_qdisc(&target);
    assert!(before.is_default());
    let tbf = spec("tbf rate 8mbit burst 32kbit latency 50ms");
    let g = rt
        .block_on(Guard::apply(&target, &tbf, &guard_options(dir.path())))
        .unwrap();
    let record_file = g.record().path.clone();
    assert!(record_file.exists());
    assert_eq!(
        record_file.file_name().unwrap().to_string_lossy(),
        format!("netem-{}:veth0.json", pair.left.name())
    );
    let q = root_qdisc(&target);
    assert_eq!((q.kind.as_str(), q.handle_str().as_str()), ("tbf", "7473:"));
    // A second guard on the same interface is refused while the first holds it.
    let e = rt
        .block_on(Guard::apply(&target, &tbf, &guard_options(dir.path())))
        .unwrap_err();
    assert!(e.to_string().contains("still in use"), "{e}");
    drop(g);
    assert_eq!(root_qdisc(&target), before);
    assert!(!record_file.exists());
    assert!(!tc_show(pair.left.name(), "veth0").contains("tbf"));
}

#[test]
fn guard_restores_the_previous_qdisc_after_a_panic() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let previous = spec("tbf rate 1mbit burst 10kb latency 70ms");
    let opts = ApplyOptions {
        op: QdiscOp::Add,
        handle: 0x10000,
        merge: false,
        allow_default_route: false,
    };
    rt.block_on(apply(&target, &previous, &opts)).unwrap();
    let before = root_qdisc(&target);
    assert_eq!(before.spec, Some(previous));

    let t = target.clone();
    let d = dir.path().to_path_buf();
    let result = std::panic::catch_unwind(move || {
        rt.block_on(async {
            let _g = Guard::apply(
                &t,
                &spec("tbf rate 8mbit burst 32kbit latency 50ms"),
                &guard_options(&d),
            )
            .await
            .unwrap();
            let q = show(&t).await.unwrap().unwrap();
            assert_eq!(q.handle_str(), "7473:");
            panic!("boom while impaired");
        })
    });
    assert!(result.is_err());
    let after = root_qdisc(&target);
    assert_eq!(after.kind, "tbf");
    assert_eq!(after.handle, 0x10000, "{after}");
    assert_eq!(after.spec, Some(previous), "{after}");
    assert_eq!(records_in(dir.path()), 0);
    assert!(tc_show(pair.left.name(), "veth0").contains("qdisc tbf 1: root"));
}

#[test]
fn guard_restore_reports_and_leaves_foreign_changes_alone() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    // Previous: a classless htb, restored from its dumped (nested) options.
    let htb = spec("htb default 10");
    let opts = ApplyOptions {
        op: QdiscOp::Add,
        handle: 0x20000,
        merge: false,
        allow_default_route: false,
    };
    rt.block_on(apply(&target, &htb, &opts)).unwrap();
    let g = rt
        .block_on(Guard::apply(
            &target,
            &spec("tbf rate 8mbit burst 32kbit latency 50ms"),
            &guard_options(dir.path()),
        ))
        .unwrap();
    let outcome = rt.block_on(g.restore()).unwrap();
    let RestoreOutcome::Restored(text) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(text, "htb 2: default 10");
    assert_eq!(root_qdisc(&target).spec, Some(htb));

    // Someone replaces our qdisc while the guard holds it: restore leaves theirs.
    let g = rt
        .block_on(Guard::apply(
            &target,
            &spec("tbf rate 8mbit burst 32kbit latency 50ms"),
            &guard_options(dir.path()),
        ))
        .unwrap();
    let theirs = spec("tbf rate 2mbit burst 10kb latency 10ms");
    let replace = ApplyOptions {
        op: QdiscOp::Replace,
        handle: 0x30000,
        merge: false,
        allow_default_route: false,
    };
    rt.block_on(apply(&target, &theirs, &replace)).unwrap();
    let outcome = rt.block_on(g.restore()).unwrap();
    assert!(matches!(outcome, RestoreOutcome::NotOurs(_)), "{outcome:?}");
    assert_eq!(root_qdisc(&target).spec, Some(theirs));
    assert_eq!(records_in(dir.path()), 0);
}

#[test]
fn missing_interface_and_namespace_are_named() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let tbf = spec("tbf rate 8mbit burst 32kbit latency 50ms");
    let missing = Target::new("nosuch0").in_netns(pair.left.name());
    let e = rt
        .block_on(apply(&missing, &tbf, &ApplyOptions::default()))
        .unwrap_err();
    assert!(matches!(e, Error::NoSuchInterface { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("\"nosuch0\"") && text.contains(pair.left.name()),
        "{text}"
    );
    let e = rt.block_on(show(&missing)).unwrap_err();
    assert!(matches!(e, Error::NoSuchInterface { .. }), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let e = rt
        .block_on(Guard::apply(&missing, &tbf, &guard_options(dir.path())))
        .unwrap_err();
    assert!(matches!(e, Error::NoSuchInterface { .. }), "{e}");
    assert_eq!(records_in(dir.path()), 0);

    let nowhere = Target::new("veth0").in_netns("tsload-netem-no-such-namespace");
    let e = rt.block_on(show(&nowhere)).unwrap_err();
    assert!(matches!(e, Error::Netns { .. }), "{e}");
    assert!(
        e.to_string().contains("tsload-netem-no-such-namespace"),
        "{e}"
    );
}

#[test]
fn the_default_route_interface_is_refused_unless_allowed() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let tbf = spec("tbf rate 8mbit burst 32kbit latency 50ms");
    // No default route yet: allowed.
    let g = rt
        .block_on(Guard::apply(&target, &tbf, &guard_options(dir.path())))
        .unwrap();
    drop(g);
    rt.block_on(pair.add_default_route_left()).unwrap();
    let before = root_qdisc(&target);
    let e = rt
        .block_on(Guard::apply(&target, &tbf, &guard_options(dir.path())))
        .unwrap_err();
    assert!(matches!(e, Error::DefaultRoute { .. }), "{e}");
    assert!(e.to_string().contains("default route"), "{e}");
    let e = rt
        .block_on(apply(&target, &tbf, &ApplyOptions::default()))
        .unwrap_err();
    assert!(matches!(e, Error::DefaultRoute { .. }), "{e}");
    assert_eq!(root_qdisc(&target), before);
    assert_eq!(records_in(dir.path()), 0);
    // The right end carries no default route in its namespace.
    let right = Target::new(pair.right_if.clone()).in_netns(pair.right.name());
    drop(
        rt.block_on(Guard::apply(&right, &tbf, &guard_options(dir.path())))
            .unwrap(),
    );
    let allowed = GuardOptions {
        allow_default_route: true,
        ..guard_options(dir.path())
    };
    let g = rt.block_on(Guard::apply(&target, &tbf, &allowed)).unwrap();
    assert_eq!(root_qdisc(&target).kind, "tbf");
    assert_eq!(rt.block_on(g.restore()).unwrap(), RestoreOutcome::Deleted);
    assert_eq!(root_qdisc(&target), before);
}

// ---- signals and SIGKILL: a child process (this test binary, re-run) holds a guard ----

const CHILD_ENV: &str = "TSLOAD_NETEM_TEST_CHILD";

/// Not a test of its own: the child half of the signal tests (does nothing unless
/// started by them).
#[test]
#[ignore = "run by the signal tests as a child process"]
fn child_holds_a_guard() {
    let Ok(conf) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = conf.splitn(3, '|');
    let (netns, ifname, dir) = (
        parts.next().unwrap().to_string(),
        parts.next().unwrap().to_string(),
        parts.next().unwrap().to_string(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        guard::spawn_signal_restorer().unwrap();
        let target = Target::new(ifname).in_netns(netns);
        let g = Guard::apply(
            &target,
            &Spec::parse("tbf rate 8mbit burst 32kbit latency 50ms").unwrap(),
            &GuardOptions {
                record_dir: dir.into(),
                allow_default_route: false,
            },
        )
        .await
        .unwrap();
        println!("READY");
        std::io::stdout().flush().unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(g);
    });
    std::process::exit(3);
}

fn start_child(pair: &VethPair, dir: &Path) -> std::process::Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_a_guard",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{}|{}|{}", pair.left.name(), pair.left_if, dir.display()),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.trim_end().ends_with("READY") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(20)).is_err() {
        let _ = child.kill();
        panic!("the child never became ready");
    }
    child
}

fn wait_with_timeout(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

#[test]
fn sigterm_restores_through_the_signal_restorer() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let before = root_qdisc(&target);
    let mut child = start_child(&pair, dir.path());
    assert_eq!(root_qdisc(&target).handle_str(), "7473:");
    assert_eq!(records_in(dir.path()), 1);
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    let status = wait_with_timeout(&mut child);
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(root_qdisc(&target), before);
    assert_eq!(records_in(dir.path()), 0);
}

#[test]
fn after_sigkill_the_record_restores() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let dir = tempfile::tempdir().unwrap();
    let before = root_qdisc(&target);
    let mut child = start_child(&pair, dir.path());
    signal(&child, nix::sys::signal::Signal::SIGKILL);
    let status = wait_with_timeout(&mut child);
    assert_eq!(status.code(), None, "{status:?}");
    // Still impaired; the record tells.
    assert_eq!(root_qdisc(&target).handle_str(), "7473:");
    let records = Guard::pending_records(dir.path()).unwrap();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(!record.owner_alive());
    assert_eq!(record.target(), target);
    assert_eq!(record.applied, "tbf rate 8mbit burst 4kb latency 50ms");
    assert!(record.previous.is_none());
    // A new guard refuses until it is dealt with.
    let e = rt
        .block_on(Guard::apply(
            &target,
            &spec("tbf rate 1mbit burst 10kb latency 10ms"),
            &guard_options(dir.path()),
        ))
        .unwrap_err();
    assert!(e.to_string().contains("not restored"), "{e}");
    let outcome = rt.block_on(Guard::restore_from_record(record)).unwrap();
    assert_eq!(outcome, RestoreOutcome::Deleted);
    assert_eq!(root_qdisc(&target), before);
    assert_eq!(records_in(dir.path()), 0);
}

// ---- capturing kernel answers for the replay tests (run by hand) ----

/// Prints the kernel's raw answers to a netem add (no sch_netem here) and to a qdisc
/// dump with a tbf, for `tests/data/`. Run with
/// `cargo test -p tsload-netem --test kernel -- --ignored --nocapture capture_kernel_answers`.
#[test]
#[ignore = "captures fixtures by hand"]
fn capture_kernel_answers() {
    need_root!();
    let rt = rt();
    let pair = rt.block_on(VethPair::create(PREFIX)).unwrap();
    let target = left(&pair);
    let ifindex = rt
        .block_on(async {
            let nl = Netlink::open(Some(pair.left.name())).await?;
            nl.ifindex("veth0").await
        })
        .unwrap();
    rt.block_on(apply(
        &target,
        &spec("tbf rate 8mbit burst 32kbit latency 50ms"),
        &ApplyOptions::default(),
    ))
    .unwrap();
    let psched = tsload_netem::Psched::read();
    let netem = tsload_netem::QdiscRequest::root(
        QdiscOp::Add,
        ifindex as i32,
        0,
        &spec("delay 10ms"),
        &psched,
    )
    .unwrap()
    .to_bytes();
    let dump = tsload_netem::encode::dump_qdiscs(ifindex as i32);
    let mut dump_bytes = vec![0; dump.buffer_len()];
    dump.serialize(&mut dump_bytes);
    let answers = pair
        .left
        .run(move || {
            let mut s = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE).unwrap();
            s.bind_auto().unwrap();
            s.set_ext_ack(true).unwrap();
            s.set_cap_ack(true).unwrap();
            let mut out = Vec::new();
            s.send(&netem, 0).unwrap();
            out.push(("netem-add-unknown-kind", s.recv_from_full().unwrap().0));
            s.send(&dump_bytes, 0).unwrap();
            let mut all = Vec::new();
            loop {
                let (b, _) = s.recv_from_full().unwrap();
                let done = b.len() >= 6 && u16::from_ne_bytes([b[4], b[5]]) == 3;
                all.extend_from_slice(&b);
                if done {
                    break;
                }
            }
            out.push(("dump-tbf", all));
            out
        })
        .unwrap();
    for (name, bytes) in answers {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}
