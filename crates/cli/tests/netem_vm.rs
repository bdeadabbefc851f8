//! `tsload netem` in a kernel that has netem: one test boots Debian's kernel under qemu
//! (`tsload_testbed::vm`) and runs this same test binary inside it, where the `vm_*` tests
//! (ignored on the host) check, on a veth pair between two namespaces they create, that
//! `apply` installs exactly the spec given (merging only with `--merge`), that every
//! iproute2 vector reads back the same whether tsload or `tc` applied it, that delay,
//! jitter, loss and rate show in what the probes measure, and that `tsload probe icmp
//! --flood` agrees with iputils' `ping -f`.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tsload_netem::netns::VethPair;
use tsload_netem::spec::Spec;
use tsload_netem::{Qdisc, Target};
use tsload_testbed::vm::{Vm, VmOptions, guest_path, shell_quote};

/// The tests that run inside the VM, all of them (the outer test checks that each ran).
const IN_VM: [&str; 13] = [
    "vm_apply_installs_exactly_the_spec_and_merges_only_when_asked",
    "vm_every_spec_applies_over_every_other_and_the_guard_restores_it",
    "vm_a_killed_run_leaves_netem_until_restore_brings_back_tbf",
    "vm_a_killed_run_leaves_netem_until_restore_brings_back_htb",
    "vm_sigterm_and_sigint_restore_the_previous_qdisc",
    "vm_a_panic_under_the_guard_restores_the_previous_qdisc",
    "vm_a_run_refuses_the_default_route_interface",
    "vm_every_vector_reads_back_the_same_from_tsload_and_tc",
    "vm_delay_and_jitter_show_in_icmp_and_tcp_rtt",
    "vm_loss_is_within_binomial_bounds",
    "vm_rate_shows_in_throughput",
    "vm_flood_probe_agrees_with_iputils_ping",
    "vm_r1_sweep_against_victoriametrics_with_netem_and_the_proxy",
];

const WHY_IGNORED: &str = "runs inside the netem VM: started by netem_in_a_real_kernel";

#[test]
fn netem_in_a_real_kernel() {
    let out = boot_and_run(&IN_VM, Vec::new(), None, Duration::from_secs(900));
    let result = out
        .output
        .lines()
        .rfind(|l| l.starts_with("test result:"))
        .unwrap_or_else(|| {
            panic!(
                "no `test result:` line from the VM (exit {})\n{}\n--- console ---\n{}",
                out.exit_code, out.output, out.console
            )
        });
    let passed = count_in(result, "passed");
    let failed = count_in(result, "failed");
    assert!(
        out.exit_code == 0 && failed == 0 && passed == IN_VM.len(),
        "in the VM: {result} (exit {}; {} tests should pass)\n{}",
        out.exit_code,
        IN_VM.len(),
        out.output
    );
}

/// R1's seven delays scaled 20 times, 10 s each, netem and proxy, in the VM: writes
/// `results/r1-{netem,proxy}-vm.{csv,json,svg}` (the tables of docs/experiments.md).
/// Takes about 5 minutes; run by hand:
/// `cargo test -p tsload --test netem_vm -- --ignored --exact r1_sweeps_in_the_vm_for_results`.
#[test]
#[ignore = "writes results/ (about 5 minutes): run by hand"]
fn r1_sweeps_in_the_vm_for_results() {
    let dir = tempfile::tempdir().unwrap();
    let name = "vm_r1_sweep_against_victoriametrics_with_netem_and_the_proxy";
    let out = boot_and_run(
        &[name],
        vec![("TSLOAD_R1_VM_FULL".to_string(), "1".to_string())],
        Some(dir.path().to_path_buf()),
        Duration::from_secs(1800),
    );
    assert!(
        out.exit_code == 0 && out.output.contains("test result: ok. 1 passed"),
        "in the VM (exit {}):\n{}",
        out.exit_code,
        out.output
    );
    let results = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../results");
    for backend in ["netem", "proxy"] {
        for ext in ["csv", "json", "svg"] {
            let file = format!("r1-{backend}-vm.{ext}");
            std::fs::copy(dir.path().join(&file), results.join(&file))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            println!("wrote results/{file}");
        }
    }
}

/// Boots the VM once and runs `tests` of this binary inside (ignored ones included).
fn boot_and_run(
    tests: &[&str],
    mut env: Vec<(String, String)>,
    out_dir: Option<PathBuf>,
    timeout: Duration,
) -> tsload_testbed::vm::VmOutput {
    let vm = Vm::locate().unwrap_or_else(|e| panic!("the netem VM cannot run here: {e}"));
    let victoria = tsload_testbed::vm::victoria_metrics_binary()
        .unwrap_or_else(|e| panic!("the R1 sweep in the netem VM cannot run here: {e}"));
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = format!(
        "exec {} --ignored --exact --test-threads=1 --nocapture",
        shell_quote(&guest_path(&exe).to_string_lossy())
    );
    for name in tests {
        command.push(' ');
        command.push_str(name);
    }
    command.push_str(" 2>&1\n");
    env.extend([
        ("TSLOAD_IN_VM".to_string(), "1".to_string()),
        ("RUST_BACKTRACE".to_string(), "1".to_string()),
        (
            "TSLOAD_VICTORIA_METRICS".to_string(),
            guest_path(&victoria).to_string_lossy().into_owned(),
        ),
    ]);
    let options = VmOptions {
        timeout,
        env,
        out_dir,
        ..VmOptions::default()
    };
    let out = vm
        .run(&command, &options)
        .unwrap_or_else(|e| panic!("the netem VM: {e}"));
    println!(
        "kernel {} under qemu (TCG): {:.1} s\n{}",
        vm.release,
        out.elapsed.as_secs_f64(),
        out.output
    );
    out
}

/// `N word` in a libtest `test result:` line.
fn count_in(line: &str, word: &str) -> usize {
    let words: Vec<&str> = line
        .split([' ', ';', '.'])
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[1] == word)
        .and_then(|w| w[0].parse().ok())
        .unwrap_or(0)
}

// ---- helpers for the tests inside the VM ----

fn in_vm() {
    assert_eq!(
        std::env::var("TSLOAD_IN_VM").as_deref(),
        Ok("1"),
        "{WHY_IGNORED}"
    );
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The tsload binary, as the guest sees it.
fn tsload(args: &[&str]) -> Output {
    Command::new(guest_path(Path::new(env!("CARGO_BIN_EXE_tsload"))))
        .args(args)
        .output()
        .expect("start tsload")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    text(&out.stdout)
}

fn run_cmd(program: &str, args: &[&str]) -> Output {
    run(program, args)
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("start {program}: {e}"))
}

struct Lab {
    pair: VethPair,
    rt: tokio::runtime::Runtime,
}

impl Lab {
    fn new(prefix: &str) -> Lab {
        in_vm();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let pair = rt
            .block_on(VethPair::create(prefix))
            .expect("a veth pair between two namespaces");
        let lab = Lab { pair, rt };
        lab.quiet_ipv6();
        lab.pin_neighbours();
        lab
    }

    /// No IPv6 on either end: a veth brought up sends router and neighbour solicitations
    /// and MLD reports on its own, which netem delays and drops like any packet (one such
    /// drop made netem's count 93 where the probe lost 92). The tests speak IPv4 only.
    fn quiet_ipv6(&self) {
        let p = &self.pair;
        for (ns, dev) in [(p.left.name(), &p.left_if), (p.right.name(), &p.right_if)] {
            let key = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            ok(
                run("ip", &["netns", "exec", ns, "sysctl", "-q", "-w", &key]),
                "sysctl disable_ipv6",
            );
        }
    }

    /// Each end knows the other's MAC for good (`nud permanent`), so no ARP crosses the
    /// pair: netem on the left end would drop or delay ARP too, and with `loss 20%` a lost
    /// ARP request holds the first probes for a second's retry (queued, answered late: a
    /// probe's 1 s timeout counts them lost). A fresh-clone CI run once lost 156 of 500
    /// where 64..136 are the binomial bounds; whether ARP did it is not established.
    /// Measurements see netem's effect on the probes alone.
    fn pin_neighbours(&self) {
        let p = &self.pair;
        let mac = |ns: &str, dev: &str| {
            let out = ok(
                run("ip", &["-n", ns, "-j", "link", "show", "dev", dev]),
                "ip link show",
            );
            let links: serde_json::Value = serde_json::from_str(&out).unwrap();
            links[0]["address"]
                .as_str()
                .unwrap_or_else(|| panic!("no MAC for {dev} in {out}"))
                .to_string()
        };
        let (left_mac, right_mac) = (
            mac(p.left.name(), &p.left_if),
            mac(p.right.name(), &p.right_if),
        );
        for (ns, dev, addr, lladdr) in [
            (p.left.name(), &p.left_if, p.right_addr, &right_mac),
            (p.right.name(), &p.right_if, p.left_addr, &left_mac),
        ] {
            let addr = addr.to_string();
            ok(
                run(
                    "ip",
                    &[
                        "-n",
                        ns,
                        "neigh",
                        "replace",
                        &addr,
                        "lladdr",
                        lladdr,
                        "dev",
                        dev,
                        "nud",
                        "permanent",
                    ],
                ),
                "ip neigh replace ... nud permanent",
            );
        }
    }

    fn ns(&self) -> &str {
        self.pair.left.name()
    }

    fn dev(&self) -> &str {
        &self.pair.left_if
    }

    fn right(&self) -> String {
        self.pair.right_addr.to_string()
    }

    /// `tsload netem apply [FLAGS] -- SPEC` on the left end; what it printed.
    fn apply(&self, flags: &[&str], spec: &str) -> String {
        let mut args = vec!["netem", "apply", "--dev", self.dev(), "--netns", self.ns()];
        args.extend(flags);
        args.push("--");
        args.extend(spec.split_whitespace());
        ok(
            tsload(&args),
            &format!("tsload netem apply {flags:?} -- {spec}"),
        )
    }

    fn clear(&self) {
        ok(
            tsload(&["netem", "clear", "--dev", self.dev(), "--netns", self.ns()]),
            "tsload netem clear",
        );
    }

    /// What `f` returns, and the packets the left end's root qdisc dropped while it ran.
    fn drops_during<T>(&self, f: impl FnOnce() -> T) -> (T, f64) {
        let before = self.qdisc_drops();
        let out = f();
        (out, self.qdisc_drops() - before)
    }

    /// The packets the left end's root qdisc has dropped (`tc -s -j qdisc show`).
    fn qdisc_drops(&self) -> f64 {
        let out = ok(
            run(
                "tc",
                &[
                    "-n",
                    self.ns(),
                    "-s",
                    "-j",
                    "qdisc",
                    "show",
                    "dev",
                    self.dev(),
                ],
            ),
            "tc -s qdisc show",
        );
        let qdiscs: serde_json::Value = serde_json::from_str(&out).unwrap();
        qdiscs
            .as_array()
            .and_then(|q| q.iter().find(|q| q["root"] == true))
            .and_then(|q| q["drops"].as_f64())
            .unwrap_or_else(|| panic!("no root qdisc drops in {out}"))
    }

    /// `tc qdisc show` of the left end, the root qdisc's line.
    fn tc_show(&self) -> String {
        let out = ok(
            run("tc", &["-n", self.ns(), "qdisc", "show", "dev", self.dev()]),
            "tc qdisc show",
        );
        out.lines()
            .find(|l| l.contains(" root "))
            .unwrap_or_else(|| panic!("no root qdisc in {out}"))
            .trim()
            .to_string()
    }

    /// `tsload netem show` of the left end, without the interface's name.
    fn tsload_show(&self) -> String {
        let out = ok(
            tsload(&["netem", "show", "--dev", self.dev(), "--netns", self.ns()]),
            "tsload netem show",
        );
        out.trim()
            .split_once(": ")
            .map(|(_, q)| q.to_string())
            .unwrap_or(out)
    }

    /// The root qdisc through the library (raw options included).
    fn root(&self) -> Qdisc {
        let target = Target::new(self.dev()).in_netns(self.ns());
        self.rt
            .block_on(tsload_netem::show(&target))
            .expect("show")
            .expect("a root qdisc")
    }

    /// A probe from the left namespace to the right end, its JSON report.
    fn probe(&self, args: &[&str]) -> serde_json::Value {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("probe.json");
        let mut all = vec!["probe"];
        all.extend(args);
        all.extend(["--netns", self.ns(), "--json", json.to_str().unwrap()]);
        ok(tsload(&all), &format!("tsload probe {args:?}"));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    }

    /// iputils `ping -f -q -c COUNT -W 1` from the left namespace to the right end, its
    /// output.
    fn ping_flood(&self, count: &str) -> String {
        let right = self.right();
        ok(
            run(
                "ip",
                &[
                    "netns",
                    "exec",
                    self.ns(),
                    "ping",
                    "-f",
                    "-q",
                    "-c",
                    count,
                    "-W",
                    "1",
                    &right,
                ],
            ),
            "ping -f",
        )
    }

    /// A TCP listener in the right namespace that accepts and reads everything, reporting
    /// (bytes, seconds from the first byte to the end) of each connection.
    fn listener(&self) -> (SocketAddr, std::sync::mpsc::Receiver<(u64, f64)>) {
        let addr = SocketAddr::from((self.pair.right_addr, 0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        self.pair
            .right
            .spawn(move || {
                let listener = TcpListener::bind(addr).expect("bind in the right namespace");
                port_tx.send(listener.local_addr().unwrap()).unwrap();
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { continue };
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 65536];
                        let mut total = 0u64;
                        let mut first: Option<Instant> = None;
                        while let Ok(n) = stream.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            first.get_or_insert_with(Instant::now);
                            total += n as u64;
                        }
                        let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
                        let _ = tx.send((total, secs));
                    });
                }
            })
            .unwrap();
        (port_rx.recv().unwrap(), rx)
    }
}

fn f(v: &serde_json::Value, path: &[&str]) -> f64 {
    let mut at = v;
    for p in path {
        at = &at[*p];
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number in {v}"))
}

/// The root qdisc's tc line without its handle (`qdisc netem 8001: root ...`).
fn without_handle(line: &str) -> String {
    line.split_whitespace()
        .enumerate()
        .filter(|(i, w)| !(*i == 2 && w.ends_with(':')))
        .map(|(_, w)| w)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tc line without htb's packet counter (`direct_packets_stat N`).
fn without_counters(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "direct_packets_stat" {
            i += 2;
            continue;
        }
        kept.push(words[i]);
        i += 1;
    }
    kept.join(" ")
}

/// Whether `needle` appears as whole words in `line`.
fn has(line: &str, needle: &str) -> bool {
    format!(" {line} ").contains(&format!(" {needle} "))
}

// ---- the tests inside the VM ----

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_apply_installs_exactly_the_spec_and_merges_only_when_asked() {
    let lab = Lab::new("tsl-vm-exact");
    // The sequence: each apply leaves exactly its own spec.
    lab.apply(&[], "rate 9mbit");
    assert!(has(&lab.tc_show(), "rate 9Mbit"), "{}", lab.tc_show());
    lab.apply(&[], "delay 3ms reorder 15% 50% gap 4");
    let tc = lab.tc_show();
    assert!(
        has(&tc, "delay 3ms") && has(&tc, "reorder 15% 50%") && has(&tc, "gap 4"),
        "{tc}"
    );
    assert!(
        !tc.contains("rate"),
        "the rate of the apply before stayed: {tc}"
    );
    lab.apply(&[], "corrupt 0.7%");
    let tc = lab.tc_show();
    println!("exact: after `corrupt 0.7%`: {tc}");
    assert!(has(&tc, "corrupt 0.7%"), "{tc}");
    for gone in ["delay", "reorder", "gap", "rate"] {
        assert!(
            !tc.contains(gone),
            "`{gone}` stayed after an exact apply: {tc}"
        );
    }
    let shown = lab.tsload_show();
    assert_eq!(
        without_handle(&format!("x {shown}")),
        "x netem corrupt 0.7%"
    );

    // tbf -> netem and netem -> tbf swap the whole qdisc too.
    lab.apply(&[], "tbf rate 8mbit burst 32kbit latency 400ms");
    assert!(lab.tc_show().starts_with("qdisc tbf"), "{}", lab.tc_show());
    lab.apply(&[], "delay 5ms");
    let tc = lab.tc_show();
    assert!(
        tc.starts_with("qdisc netem") && has(&tc, "delay 5ms"),
        "{tc}"
    );

    // --merge: the kernel's change semantics, as tc qdisc replace.
    lab.apply(&[], "rate 9mbit");
    lab.apply(&["--merge"], "delay 3ms reorder 15% 50% gap 4");
    lab.apply(&["--merge"], "corrupt 0.7%");
    let tc = lab.tc_show();
    println!("merge: after `--merge -- corrupt 0.7%`: {tc}");
    assert!(
        has(&tc, "reorder 15% 50%") && has(&tc, "corrupt 0.7%") && has(&tc, "rate 9Mbit"),
        "--merge keeps what the spec does not name: {tc}"
    );
    // --add refuses an existing qdisc and changes nothing.
    let before = lab.tc_show();
    let out = tsload(&[
        "netem",
        "apply",
        "--add",
        "--dev",
        lab.dev(),
        "--netns",
        lab.ns(),
        "--",
        "delay",
        "1ms",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(lab.tc_show(), before);
    lab.clear();
    assert!(!lab.tc_show().contains("netem"), "{}", lab.tc_show());
}

/// One spec of each kind tsload applies, two duplicating netems among them.
const EVERY_KIND: [&str; 8] = [
    "delay 5ms",
    "loss 1%",
    "duplicate 1.5%",
    "corrupt 0.7%",
    "delay 3ms reorder 15% 50% gap 4",
    "rate 9mbit",
    "delay 1ms duplicate 2%",
    "tbf rate 8mbit burst 32kbit latency 400ms",
];

/// Kernels since 2025 (Debian 12's 6.1.192 among them) refuse to replace a netem with or by
/// a duplicating one. `tsload netem apply` puts every spec over every other (the root ends
/// as exactly that spec: the library's dump decodes to it and tc shows it), and a guard
/// over each of them restores what was there, duplicating or not.
#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_every_spec_applies_over_every_other_and_the_guard_restores_it() {
    let lab = Lab::new("tsl-vm-over");
    let kernel = std::fs::read_to_string("/proc/version").unwrap();
    println!("over: guest kernel: {}", kernel.trim());
    let specs: Vec<Spec> = EVERY_KIND.iter().map(|t| t.parse().unwrap()).collect();
    let target = Target::new(lab.dev()).in_netns(lab.ns());
    // The root is exactly `want`: a netem's dump decodes to the same spec (tbf's to its
    // limit in bytes, not the latency it was given: its kind and rate then), and tc shows
    // the same kind, duplication included.
    let readback = |want: &Spec, what: &str| {
        let root = lab.root();
        let tc = lab.tc_show();
        assert!(
            tc.starts_with(&format!("qdisc {} ", want.kind())),
            "{what}: {tc}"
        );
        match want {
            Spec::Netem(n) => {
                assert_eq!(root.spec.as_ref(), Some(want), "{what}: the root is {root}");
                assert_eq!(
                    n.duplicate.is_some(),
                    tc.contains("duplicate"),
                    "{what}: {tc}"
                );
            }
            _ => assert!(has(&tc, "rate 8Mbit"), "{what}: {tc}"),
        }
    };
    // The issue's own sequence, through the binary: corrupt, then duplicate.
    lab.apply(&[], "corrupt 0.7%");
    let dry = lab.apply(&["--dry-run"], "duplicate 1.5%");
    assert!(
        dry.contains("note: the root is netem"),
        "--dry-run says so: {dry}"
    );
    let out = lab.apply(&[], "duplicate 1.5%");
    println!("over: duplicate over corrupt: {}", out.trim());
    readback(&specs[2], "duplicate 1.5% over corrupt 0.7%");
    // Every ordered pair, through the library.
    let mut deleted_and_added = 0;
    for (i, under) in specs.iter().enumerate() {
        for (j, over) in specs.iter().enumerate() {
            if i == j {
                continue;
            }
            let what = format!("`{over}` over `{under}`");
            let options = tsload_netem::ApplyOptions::default();
            lab.rt
                .block_on(tsload_netem::apply(&target, under, &options))
                .unwrap_or_else(|e| panic!("{what}: applying the one under: {e}"));
            let how = lab
                .rt
                .block_on(tsload_netem::apply(&target, over, &options))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            readback(over, &what);
            if how == tsload_netem::Replaced::DeletedAndAdded {
                deleted_and_added += 1;
            }
        }
    }
    println!("over: 56 pairs applied, {deleted_and_added} by delete and add");
    // The guard over each duplicating root, and each root under a duplicating guard.
    let records = tempfile::tempdir().unwrap();
    let guard_options = tsload_netem::GuardOptions {
        record_dir: records.path().to_path_buf(),
        ..tsload_netem::GuardOptions::default()
    };
    for under in &specs {
        for over in specs
            .iter()
            .filter(|o| o.duplicates() || under.duplicates())
        {
            if over == under {
                continue;
            }
            let what = format!("guard of `{over}` over `{under}`");
            lab.rt
                .block_on(tsload_netem::apply(
                    &target,
                    under,
                    &tsload_netem::ApplyOptions::default(),
                ))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let before = lab.root();
            let guard = lab
                .rt
                .block_on(tsload_netem::Guard::apply(&target, over, &guard_options))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            readback(over, &what);
            let outcome = lab
                .rt
                .block_on(guard.restore())
                .unwrap_or_else(|e| panic!("{what}: restoring: {e}"));
            let after = lab.root();
            assert_eq!(
                (after.kind.as_str(), after.spec.as_ref()),
                (before.kind.as_str(), before.spec.as_ref()),
                "{what}: {outcome}"
            );
        }
    }
    assert!(
        tsload_netem::Guard::pending_records(records.path())
            .unwrap()
            .is_empty()
    );
    lab.clear();
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_every_vector_reads_back_the_same_from_tsload_and_tc() {
    let lab = Lab::new("tsl-vm-vec");
    let data = guest_path(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../netem/tests/data/iproute2-6.1.json"),
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&data).unwrap()).unwrap();
    let mut checked = 0;
    for v in json["vectors"].as_array().unwrap() {
        let tc_cmd = v["tc"].as_str().unwrap();
        let words: Vec<&str> = tc_cmd.split_whitespace().collect();
        // tc qdisc OP dev DEV root [handle H:] SPEC...
        if words[2] == "del" {
            continue;
        }
        let mut spec_words = &words[6..];
        if spec_words.first() == Some(&"handle") {
            spec_words = &spec_words[2..];
        }
        let spec_text = spec_words.join(" ");
        // The kernel keeps no distribution's name (only its table, which it does not
        // report): what reads back is the spec without it.
        let mut spec = Spec::parse(&spec_text).unwrap();
        if let Spec::Netem(n) = &mut spec
            && let Some(d) = &mut n.delay
        {
            d.distribution = None;
        }

        lab.apply(&[], &spec_text);
        let tc_a = without_handle(&lab.tc_show());
        let show_a = lab.tsload_show();
        let root_a = lab.root();
        lab.clear();

        let mut args = vec!["-n", lab.ns(), "qdisc", "add", "dev", lab.dev(), "root"];
        args.extend(spec_words);
        ok(run("tc", &args), tc_cmd);
        let tc_b = without_handle(&lab.tc_show());
        let show_b = lab.tsload_show();
        let root_b = lab.root();
        ok(
            run(
                "tc",
                &["-n", lab.ns(), "qdisc", "del", "dev", lab.dev(), "root"],
            ),
            "tc qdisc del",
        );

        assert_eq!(
            tc_a, tc_b,
            "tc reads `{spec_text}` applied by tsload / by tc"
        );
        assert_eq!(
            without_handle(&format!("x {show_a}")),
            without_handle(&format!("x {show_b}")),
            "tsload reads `{spec_text}` applied by tsload / by tc"
        );
        assert_eq!(root_a.kind, root_b.kind, "{spec_text}");
        assert_eq!(
            root_a.options, root_b.options,
            "the kernel's options for `{spec_text}`"
        );
        assert_eq!(root_a.spec, root_b.spec, "{spec_text}");
        // netem keeps its options as given; tbf keeps the burst in clock ticks and turns a
        // latency into a byte limit, so its decoded spec is an equivalent, not the words.
        if spec.kind() == "netem" {
            assert_eq!(
                root_b.spec.as_ref(),
                Some(&spec),
                "tsload decodes what tc applied for `{spec_text}` (tc: {tc_b})"
            );
        } else {
            assert!(root_b.spec.is_some(), "{spec_text}: {tc_b}");
        }
        checked += 1;
    }
    println!("vectors: {checked} applied by tsload and by tc, read back equal both ways");
    assert_eq!(checked, 34);
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_delay_and_jitter_show_in_icmp_and_tcp_rtt() {
    let lab = Lab::new("tsl-vm-rtt");
    let right = lab.right();
    let (addr, _done) = lab.listener();
    let tcp = addr.to_string();
    let icmp_base = lab.probe(&["icmp", &right, "-c", "20", "-i", "10ms"]);
    let tcp_base = lab.probe(&["tcp", &tcp, "-c", "20", "-i", "10ms"]);
    let base_icmp = f(&icmp_base, &["latency", "p50_ms"]);
    let base_tcp = f(&tcp_base, &["latency", "p50_ms"]);
    println!("rtt: no netem: icmp p50 {base_icmp:.3} ms, tcp p50 {base_tcp:.3} ms");

    // delay D: the least RTT is at least D (less 0.5 ms of timer slack) and at most 6 ms
    // above it: the path's own (about 2 ms here) and the emulated CPU's stalls. A delay
    // applied twice, or not at all, or in other units, is off by more. Not the median:
    // with two test binaries beside the VM it read 26.3 to 42.7 ms at D = 20 in six
    // measurements whose least RTTs were all 22.0 to 22.6 ms. A stall of the host can
    // spoil one measurement: each gets three tries.
    let d = 20.0;
    lab.apply(&[], "delay 20ms");
    for (kind, target) in [("icmp", &right), ("tcp", &tcp)] {
        tries(&format!("delay 20ms, {kind}"), || {
            let r = lab.probe(&[kind, target, "-c", "40", "-i", "10ms"]);
            let p50 = f(&r, &["latency", "p50_ms"]);
            let min = f(&r, &["min_ms"]);
            println!("rtt: delay 20ms: {kind} p50 {p50:.3} ms, min {min:.3} ms");
            ensure(f(&r, &["received"]) == 40.0, "something was lost")?;
            ensure(min >= d - 0.5, format!("min {min} < D - 0.5"))?;
            ensure(min <= d + 6.0, format!("min {min} > D + 6"))
        });
    }

    // delay D J (uniform): RTTs spread over [D-J, D+J]. What the emulated CPU adds (a
    // busy host stalls it for milliseconds: the median of 20ms 5ms read 24-25 ms with two
    // CPU hogs beside the VM, p90 - p50 from 2.4 to 7.5) only ever adds, and it adds to
    // `delay D` alone as much: each try measures both, one right after the other, and
    // checks what the jitter changes. The least RTT falls about J (the least of 100 of
    // U[-J, J] is J - 0.1) below the least without jitter, never under D - J; the median
    // stays (the jitter is symmetric). No jitter, twice it, one-sided or in other units
    // fails one of them.
    let j = 5.0;
    for (kind, target) in [("icmp", &right), ("tcp", &tcp)] {
        tries(&format!("delay 20ms 5ms against 20ms, {kind}"), || {
            let measure = |spec: &str| {
                lab.apply(&[], spec);
                let r = lab.probe(&[kind, target, "-c", "100", "-i", "10ms"]);
                let (min, p50, p90, max) = (
                    f(&r, &["min_ms"]),
                    f(&r, &["latency", "p50_ms"]),
                    f(&r, &["latency", "p90_ms"]),
                    f(&r, &["max_ms"]),
                );
                println!(
                    "rtt: {spec}: {kind} min {min:.3} p50 {p50:.3} p90 {p90:.3} max {max:.3} ms"
                );
                (min, p50)
            };
            let (min_a, p50_a) = measure("delay 20ms");
            let (min_b, p50_b) = measure("delay 20ms 5ms");
            ensure(min_b >= d - j - 0.5, format!("min {min_b} < D - J - 0.5"))?;
            ensure(
                (j / 2.0..=j + 1.5).contains(&(min_a - min_b)),
                format!(
                    "the jitter lowered the least RTT by {} ms, not {} to {} (J = {j})",
                    min_a - min_b,
                    j / 2.0,
                    j + 1.5
                ),
            )?;
            ensure(
                (p50_b - p50_a).abs() <= 2.5,
                format!("the jitter moved the median by {} ms", p50_b - p50_a),
            )
        });
    }
    lab.clear();
}

/// `Err(why)` unless `ok`.
fn ensure(ok: bool, why: impl Into<String>) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why.into()) }
}

/// Runs a timing check up to three times: a stall of the emulated CPU (the host may be
/// busy) can spoil one measurement, but not three in a row; every failed try is printed.
fn tries(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        match check() {
            Ok(()) => return,
            Err(why) => {
                println!("{what}: try {attempt} failed: {why}");
                failures.push(why);
            }
        }
    }
    panic!("{what}: failed three times: {failures:?}");
}

/// The binomial bounds, mean ± 4 sd, of the lost count of `n` packets at loss `p`.
fn binomial_bounds(n: f64, p: f64) -> (f64, f64) {
    let mean = n * p;
    let sd = (n * p * (1.0 - p)).sqrt();
    (mean - 4.0 * sd, mean + 4.0 * sd)
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_loss_is_within_binomial_bounds() {
    let lab = Lab::new("tsl-vm-loss");
    let right = lab.right();
    let n = 500.0;
    let p = 0.2;
    let (lo, hi) = binomial_bounds(n, p);
    lab.apply(&[], "loss 20%");
    // What netem itself dropped while each tool ran: the count the tool's loss must
    // equal (nothing else on the pair loses packets: no ARP, see `pin_neighbours`).
    let (r, dropped) = lab
        .drops_during(|| lab.probe(&["icmp", &right, "--flood", "-c", "500", "--timeout", "1s"]));
    let lost = f(&r, &["transmitted"]) - f(&r, &["received"]);
    println!(
        "loss 20%: tsload probe icmp --flood lost {lost} of {n} (bounds {lo:.0}..{hi:.0}; \
         netem dropped {dropped}), loss_pct {}, RTT max {} ms",
        f(&r, &["loss_pct"]),
        f(&r, &["max_ms"])
    );
    assert_eq!(f(&r, &["transmitted"]), n);
    assert_eq!(lost, dropped, "tsload's lost count against netem's drops");
    assert!((lo..=hi).contains(&lost), "lost {lost} of {n} at {p}");
    let (out, dropped) = lab.drops_during(|| lab.ping_flood("500"));
    let ping = parse_ping(&out);
    let lost = ping.transmitted - ping.received;
    println!("loss 20%: ping -f lost {lost} of {n} (netem dropped {dropped})");
    assert_eq!(
        lost, dropped,
        "ping's lost count against netem's drops: {out}"
    );
    assert!((lo..=hi).contains(&lost), "ping: lost {lost} of {n}: {out}");
    lab.clear();
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_rate_shows_in_throughput() {
    let lab = Lab::new("tsl-vm-rate");
    let (addr, done) = lab.listener();
    lab.apply(&[], "rate 8mbit");
    let bytes = 1_500_000usize;
    lab.pair
        .left
        .run(move || {
            let mut s = TcpStream::connect(addr).expect("connect across the veth");
            s.write_all(&vec![7u8; bytes]).unwrap();
        })
        .unwrap();
    let (got, secs) = done.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(got, bytes as u64);
    let mbit = got as f64 * 8.0 / secs / 1e6;
    // netem counts whole frames: 1448 payload bytes ride in 1514 (8 x 1448/1514 = 7.65).
    println!("rate 8mbit: {got} bytes in {secs:.2} s = {mbit:.2} Mbit/s of TCP payload");
    assert!(
        (6.8..=8.2).contains(&mbit),
        "{mbit} Mbit/s under rate 8mbit"
    );
    lab.clear();
}

struct Ping {
    transmitted: f64,
    received: f64,
    min: f64,
    avg: f64,
    max: f64,
    mdev: f64,
}

/// iputils' summary: `N packets transmitted, M received, ...` and
/// `rtt min/avg/max/mdev = a/b/c/d ms`.
fn parse_ping(out: &str) -> Ping {
    let counts = out
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("{out}"));
    let nums: Vec<f64> = counts
        .split([',', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    // `rtt min/avg/max/mdev = 4.314/5.615/10.932/0.583 ms, ipg/ewma 5.786/5.305 ms`
    let rtt = out
        .lines()
        .find(|l| l.starts_with("rtt "))
        .and_then(|l| l.split(" = ").nth(1))
        .and_then(|l| l.split(" ms").next())
        .unwrap_or_else(|| panic!("{out}"));
    let r: Vec<f64> = rtt
        .split('/')
        .map(|w| w.trim().parse().unwrap_or_else(|_| panic!("{out}")))
        .collect();
    assert_eq!(r.len(), 4, "{out}");
    Ping {
        transmitted: nums[0],
        received: nums[1],
        min: r[0],
        avg: r[1],
        max: r[2],
        mdev: r[3],
    }
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_flood_probe_agrees_with_iputils_ping() {
    let lab = Lab::new("tsl-vm-flood");
    let right = lab.right();
    let flood = |count: &str| -> (Ping, Ping, f64) {
        let r = lab.probe(&["icmp", &right, "--flood", "-c", count, "--timeout", "1s"]);
        let out = lab.ping_flood(count);
        let mine = Ping {
            transmitted: f(&r, &["transmitted"]),
            received: f(&r, &["received"]),
            min: f(&r, &["min_ms"]),
            avg: f(&r, &["avg_ms"]),
            max: f(&r, &["max_ms"]),
            mdev: f(&r, &["mdev_ms"]),
        };
        (mine, parse_ping(&out), f(&r, &["latency", "p50_ms"]))
    };
    let show = |what: &str, who: &str, p: &Ping| {
        println!(
            "flood, {what}: {who}: {} sent, {} received, min/avg/max/mdev {:.3}/{:.3}/{:.3}/{:.3} ms",
            p.transmitted, p.received, p.min, p.avg, p.max, p.mdev
        );
    };
    let n = 400.0;
    let (lo, hi) = binomial_bounds(n, 0.1);
    let mut applied = false;
    tries("flood: tsload against ping -f", || {
        // What each adds is measured against its own run without netem just before: the
        // emulated CPU's delay to tsload's user-space stamps changes with the host's load
        // (a baseline taken once, minutes earlier, made tsload's p50 add 1.6 ms to
        // ping's 6.0 with the host building beside two CPU hogs).
        if applied {
            lab.clear();
        }
        applied = true;
        let (base_mine, base_ping, base_p50) = flood("200");
        show("no netem", "tsload probe icmp --flood", &base_mine);
        show("no netem", "ping -f", &base_ping);
        lab.apply(&[], "delay 5ms 1ms loss 10%");
        let (mine, ping, p50) = flood("400");
        for (who, p) in [("tsload probe icmp --flood", &mine), ("ping -f", &ping)] {
            show("delay 5ms 1ms loss 10%", who, p);
            let lost = p.transmitted - p.received;
            assert_eq!(p.transmitted, n, "{who}");
            assert!((lo..=hi).contains(&lost), "{who}: lost {lost} of {n}");
            assert!(
                p.min >= 4.0 - 0.1,
                "{who}: min {} under netem's 4 ms",
                p.min
            );
        }
        // ping stamps replies in the kernel (SO_TIMESTAMP), tsload when its task wakes:
        // under the emulated CPU that costs it a millisecond or so, which shows without
        // netem too, and on a busy host (the VM's CPU descheduled) many more: tsload's
        // avg without netem was 8.8 ms against ping's 0.2 beside two test binaries and a
        // build. So the least RTTs, which a stall cannot lower, must agree within 1.5 ms
        // and lie on netem's floor; the averages (and tsload's median against ping's
        // average, netem's uniform 4..6 ms having its mean at its median) within 2.5 ms
        // (2 ms) plus what each tool's no-netem run showed of the host's noise (its
        // average, or median, above its least RTT): a few tenths on a quiet host, so
        // the bound stays tight there.
        let (mine_min, mine_avg) = (mine.min - base_mine.min, mine.avg - base_mine.avg);
        let (ping_min, ping_avg) = (ping.min - base_ping.min, ping.avg - base_ping.avg);
        let mine_p50 = p50 - base_p50;
        let noise_ping = (base_ping.avg - base_ping.min).max(0.0);
        let noise_avg = (base_mine.avg - base_mine.min).max(0.0) + noise_ping;
        let noise_p50 = (base_p50 - base_mine.min).max(0.0) + noise_ping;
        println!(
            "flood: netem added min {mine_min:.3} / avg {mine_avg:.3} / p50 {mine_p50:.3} ms (tsload), min {ping_min:.3} / avg {ping_avg:.3} ms (ping); the host's noise without netem: avg {noise_avg:.3}, p50 {noise_p50:.3} ms"
        );
        ensure(
            (mine_min - ping_min).abs() <= 1.5,
            "min added differs by > 1.5 ms",
        )?;
        ensure(
            (3.5..=6.5).contains(&mine_min) && (3.5..=6.5).contains(&ping_min),
            "a least RTT added off netem's floor of 4 ms (3.5 to 6.5)",
        )?;
        ensure(
            (mine_avg - ping_avg).abs() <= 2.5 + noise_avg,
            "avg added differs by more than 2.5 ms and the host's noise",
        )?;
        ensure(
            (mine_p50 - ping_avg).abs() <= 2.0 + noise_p50,
            "tsload's p50 added and ping's avg added differ by more than 2 ms and the host's noise",
        )?;
        // Not mdev: one stall of the host decides it (tsload's 9.45 ms with a 108.8 ms
        // reply against ping's 2 in one round beside two CPU hogs), and two runs meet
        // their own stalls. That tsload computes it as iputils does is checked on
        // iputils' own integer arithmetic in crates/probe (stats.rs).
        ensure(
            mine.max >= 5.5 && ping.max >= 5.5,
            "max under netem's 6 ms jitter ceiling",
        )
    });
    lab.clear();
}

// ---- the guard in a real kernel: runs with `[network] backend = "netem"` ----

/// An HTTP server in the right namespace that answers every request `204 No Content`
/// (an InfluxDB 1.x write endpoint that stores nothing); its port.
fn http_sink(lab: &Lab) -> u16 {
    let addr = SocketAddr::from((lab.pair.right_addr, 0));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    lab.pair
        .right
        .spawn(move || {
            let listener = TcpListener::bind(addr).expect("bind in the right namespace");
            port_tx.send(listener.local_addr().unwrap().port()).unwrap();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                std::thread::spawn(move || answer_204(stream));
            }
        })
        .unwrap();
    port_rx.recv().unwrap()
}

fn answer_204(mut stream: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        // Headers, then Content-Length bytes of body, then the answer; repeat.
        let end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..end + length);
        if stream
            .write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

/// `tsload run` in the left namespace writing to [`http_sink`] for a minute, with netem
/// `delay 5ms` on the left veth under the guard.
fn netem_run(lab: &Lab, port: u16) -> std::process::Child {
    let url = format!("target.url=\"http://{}:{port}\"", lab.right());
    let dev = format!("network.dev=\"{}\"", lab.dev());
    let ns = format!("network.netns=\"{}\"", lab.ns());
    let mut args = vec!["netns", "exec", lab.ns()];
    let bin = guest_path(Path::new(env!("CARGO_BIN_EXE_tsload")));
    let bin = bin.to_str().unwrap().to_string();
    args.push(&bin);
    args.extend(["run", "--progress", "none"]);
    for set in [
        "target.kind=\"influx\"",
        &url,
        "target.create_database=false",
        "network.backend=\"netem\"",
        &dev,
        &ns,
        "network.delay=\"5ms\"",
        "network.probe_count=3",
        "load.duration=\"90s\"",
        "load.workers=1",
        "workload.scale=10",
        "workload.end=\"2016-02-01T00:00:00Z\"",
    ] {
        args.extend(["--set", set]);
    }
    Command::new("ip")
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tsload run")
}

/// Waits until the left veth's root qdisc is the guard's netem; panics with the run's
/// stderr if the run ends first or it takes over a minute.
fn wait_for_netem(lab: &Lab, run: &mut std::process::Child) -> String {
    let start = Instant::now();
    loop {
        let tc = lab.tc_show();
        if tc.starts_with("qdisc netem 7473:") {
            return tc;
        }
        if let Ok(Some(status)) = run.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = run.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("the run ended ({status}) before netem was in place: {err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no netem after 60 s: {tc}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(run: &std::process::Child, sig: &str) {
    ok(
        run_cmd("kill", &[&format!("-{sig}"), &run.id().to_string()]),
        "kill",
    );
}

fn killed_run_then_restore(prefix: &str, previous: &[&str]) {
    let lab = Lab::new(prefix);
    let mut args = vec!["-n", lab.ns(), "qdisc", "add", "dev", lab.dev(), "root"];
    args.extend(previous);
    ok(run("tc", &args), "tc qdisc add (the previous qdisc)");
    let before = lab.tc_show();
    let port = http_sink(&lab);
    let mut r = netem_run(&lab, port);
    let during = wait_for_netem(&lab, &mut r);
    signal(&r, "KILL");
    let status = r.wait().unwrap();
    println!("guard: before {before:?}; during {during:?}; SIGKILL: {status}");
    let after_kill = lab.tc_show();
    assert!(
        after_kill.starts_with("qdisc netem 7473:"),
        "a SIGKILL leaves the netem in place: {after_kill}"
    );
    let restore = ok(tsload(&["netem", "restore"]), "tsload netem restore");
    let after = lab.tc_show();
    println!(
        "guard: tsload netem restore: {} -> {after:?}",
        restore.trim()
    );
    assert_eq!(
        without_counters(&after),
        without_counters(&before),
        "restore brings back the previous qdisc"
    );
    let again = ok(tsload(&["netem", "restore"]), "tsload netem restore again");
    assert!(again.contains("nothing to restore"), "{again}");
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_a_killed_run_leaves_netem_until_restore_brings_back_tbf() {
    killed_run_then_restore(
        "tsl-vm-ktbf",
        &[
            "tbf", "rate", "50mbit", "burst", "32kbit", "latency", "400ms",
        ],
    );
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_a_killed_run_leaves_netem_until_restore_brings_back_htb() {
    killed_run_then_restore("tsl-vm-khtb", &["handle", "1:", "htb", "default", "10"]);
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_sigterm_and_sigint_restore_the_previous_qdisc() {
    let lab = Lab::new("tsl-vm-sig");
    ok(
        run(
            "tc",
            &[
                "-n",
                lab.ns(),
                "qdisc",
                "add",
                "dev",
                lab.dev(),
                "root",
                "tbf",
                "rate",
                "50mbit",
                "burst",
                "32kbit",
                "latency",
                "400ms",
            ],
        ),
        "tc qdisc add tbf",
    );
    let before = lab.tc_show();
    let port = http_sink(&lab);
    for (sig, name, code) in [("TERM", "SIGTERM", 143), ("INT", "SIGINT", 130)] {
        let mut r = netem_run(&lab, port);
        wait_for_netem(&lab, &mut r);
        signal(&r, sig);
        let status = r.wait().unwrap();
        let after = lab.tc_show();
        println!("guard: {name}: run ended {status}; root {after:?}");
        assert_eq!(status.code(), Some(code), "{name}");
        assert_eq!(after, before, "{name} restores the previous qdisc");
    }
    let none = ok(tsload(&["netem", "restore"]), "tsload netem restore");
    assert!(
        none.contains("nothing to restore"),
        "no record left: {none}"
    );
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_a_panic_under_the_guard_restores_the_previous_qdisc() {
    let lab = Lab::new("tsl-vm-panic");
    lab.apply(&[], "tbf rate 50mbit burst 32kbit latency 400ms");
    let before = lab.tc_show();
    let target = Target::new(lab.dev()).in_netns(lab.ns());
    let records = tempfile::tempdir().unwrap();
    let options = tsload_netem::GuardOptions {
        record_dir: records.path().to_path_buf(),
        ..tsload_netem::GuardOptions::default()
    };
    let spec: Spec = "delay 5ms loss 1%".parse().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let panicked = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let _guard = rt
            .block_on(tsload_netem::Guard::apply(&target, &spec, &options))
            .expect("apply under the guard");
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        panic!("on purpose, with the guard alive");
    })
    .join();
    rx.recv().expect("the guard applied");
    assert!(panicked.is_err(), "the thread panicked");
    let after = lab.tc_show();
    println!("guard: panic: root {after:?} (before {before:?})");
    assert_eq!(
        after, before,
        "the unwinding guard restored the previous qdisc"
    );
    assert_eq!(
        std::fs::read_dir(records.path()).unwrap().count(),
        0,
        "no record left"
    );
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_a_run_refuses_the_default_route_interface() {
    let lab = Lab::new("tsl-vm-route");
    lab.rt
        .block_on(lab.pair.add_default_route_left())
        .expect("a default route in the left namespace");
    let before = lab.tc_show();
    let port = http_sink(&lab);
    let r = netem_run(&lab, port);
    let out = r.wait_with_output().unwrap();
    let err = text(&out.stderr);
    println!("guard: default route: exit {:?}", out.status.code());
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("default route"), "{err}");
    assert_eq!(lab.tc_show(), before, "the interface is untouched");
    let apply = tsload(&[
        "netem",
        "apply",
        "--dev",
        lab.dev(),
        "--netns",
        lab.ns(),
        "--",
        "delay",
        "1ms",
    ]);
    assert_eq!(apply.status.code(), Some(1));
    assert!(
        text(&apply.stderr).contains("default route"),
        "{}",
        text(&apply.stderr)
    );
    ok(
        tsload(&[
            "netem",
            "apply",
            "--allow-default-route",
            "--dev",
            lab.dev(),
            "--netns",
            lab.ns(),
            "--",
            "delay",
            "1ms",
        ]),
        "apply --allow-default-route",
    );
    assert!(
        lab.tc_show().starts_with("qdisc netem"),
        "{}",
        lab.tc_show()
    );
    lab.clear();
}

// ---- R1 end to end: the sweep against a real VictoriaMetrics, netem and proxy ----

/// VictoriaMetrics' HTTP port on the right end of the veth pair.
const VICTORIA_PORT: u16 = 8428;

/// The R1 sweep the test runs, in each backend: three delays for the emulated machine
/// (whose own RTT and its noise are a millisecond or two, and up to 10 ms when the host is
/// busy), a few seconds each, R1's load shape otherwise (2 workers, not 16: see `r1_sweep`;
/// 10 rows per request, interlace 10, 1 varchar + 10 float columns). The largest is 60
/// ms: with two CPU hogs beside the VM the proxy's RTT without delay was 33 ms and its
/// rate at 30 ms only 0.93 of that at none (0 and 10 ms came out 243 and 283 rows/s); at
/// 60 ms the rate was 0.53 to 0.73 of that at none in ten such runs, too near the 0.8 that
/// is checked; 120 ms adds about twice as much to a worker's cycle (about 70 ms at none).
/// `TSLOAD_R1_VM_FULL=1` runs R1's seven delays scaled 20 times ([`R1_DELAYS_X20`]) for
/// `results/` instead. Either way the largest and the first delay are then measured again,
/// in that order (see [`best_points`]).
const QUICK_DELAYS: [&str; 3] = ["0ms", "10ms", "120ms"];
const QUICK_DURATION: &str = "4s";
/// R1's seven delays (0, 0.22, 0.432, 0.844, 1.054, 1.252 and 2.067 ms) times 20. R1's own
/// are within the emulated machine's noise: its HTTP ping takes 9-15 ms with no delay, and
/// a sweep of them in the VM fitted k 0.63 / 0.28 with R² 0.32 / 0.04 (netem / proxy),
/// which says nothing about either backend.
const R1_DELAYS_X20: [&str; 7] = [
    "0ms", "4.4ms", "8.64ms", "16.88ms", "21.08ms", "25.04ms", "41.34ms",
];
/// Under this delay a point's RTT is not checked (it is printed): the fastest probe of a
/// point moves by about 2 ms from point to point in the VM with no delay change at all
/// (-1.9 ms at R1's 1.252 ms once), and by 5 to 9 ms when the host is busy (two CPU hogs
/// beside the VM: the proxy's fastest probe grew by 18.9 ms at 10 ms in one run and by
/// 4.7 in another, its no-delay point's probes queued behind a heavier write load).
const CHECKED_DELAY_MS: f64 = 20.0;

/// VictoriaMetrics in the right namespace (its data in a temp dir), killed on drop.
struct Victoria {
    child: std::process::Child,
    addr: SocketAddr,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Victoria {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Victoria {
    fn start(lab: &Lab) -> Victoria {
        let bin = std::env::var("TSLOAD_VICTORIA_METRICS").unwrap_or_else(|_| {
            panic!("TSLOAD_VICTORIA_METRICS is not set: netem_in_a_real_kernel passes it")
        });
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("victoria.log");
        let addr = SocketAddr::from((lab.pair.right_addr, VICTORIA_PORT));
        let child = Command::new("ip")
            .args(["netns", "exec", lab.pair.right.name(), &bin])
            .arg(format!("-httpListenAddr={addr}"))
            .arg(format!(
                "-storageDataPath={}",
                dir.path().join("data").display()
            ))
            // R1's data is stamped from 2017 on: keep it (the default keeps a month).
            .arg("-retentionPeriod=100y")
            .arg("-search.latencyOffset=0s")
            .arg("-search.disableCache")
            .arg("-loggerOutput=stderr")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("start {bin}: {e}"));
        let v = Victoria {
            child,
            addr,
            log,
            _dir: dir,
        };
        let start = Instant::now();
        loop {
            if let Some((200, _)) = v.try_get(lab, "/health") {
                println!(
                    "r1: VictoriaMetrics up on {addr} in {:.1} s",
                    start.elapsed().as_secs_f64()
                );
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "VictoriaMetrics did not answer /health in 90 s:\n{}",
                v.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// GET `path` (already encoded) from the left namespace: (status, body), or `None`
    /// if nothing answered.
    fn try_get(&self, lab: &Lab, path: &str) -> Option<(u16, String)> {
        let addr = self.addr;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        lab.pair
            .left
            .run(move || -> Option<(u16, String)> {
                let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
                s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
                s.write_all(request.as_bytes()).ok()?;
                let mut answer = Vec::new();
                s.read_to_end(&mut answer).ok()?;
                let answer = String::from_utf8_lossy(&answer).into_owned();
                let (head, body) = answer.split_once("\r\n\r\n")?;
                let status = head.split_whitespace().nth(1)?.parse().ok()?;
                Some((status, body.to_string()))
            })
            .ok()
            .flatten()
    }

    fn get(&self, lab: &Lab, path: &str) -> String {
        match self.try_get(lab, path) {
            Some((200, body)) => body,
            other => panic!("VictoriaMetrics GET {path}: {other:?}\n{}", self.log_tail()),
        }
    }

    /// (samples, distinct metric names) stored in the series of `db`'s `meters`, from
    /// VictoriaMetrics' own export after a forced flush.
    fn stored(&self, lab: &Lab, db: &str) -> (u64, usize) {
        self.get(lab, "/internal/force_flush");
        let selector = format!("{{__name__=~\"meters_.+\",db=\"{db}\"}}");
        let body = self.get(
            lab,
            &format!(
                "/api/v1/export?match%5B%5D={}&end=4102444800",
                tsload_target::percent_encode(&selector)
            ),
        );
        let mut samples = 0u64;
        let mut names = std::collections::BTreeSet::new();
        for line in body.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("an export line is not JSON ({e}): {line}"));
            samples += v["values"].as_array().expect("values").len() as u64;
            names.insert(v["metric"]["__name__"].as_str().unwrap().to_string());
        }
        (samples, names.len())
    }
}

/// One backend's sweep: its table and fit, and the rows its points reported.
struct SweepResult {
    json: serde_json::Value,
    rows_reported: u64,
    out: PathBuf,
}

/// `tsload sweep configs/r1-rtt-sweep.toml` in the left namespace against `victoria`,
/// with `backend` on the left veth; series labelled `db = backend`; its files under
/// `dir/{backend}{pass}`.
fn r1_sweep(
    lab: &Lab,
    victoria: &Victoria,
    (backend, pass): (&str, &str),
    delays: &[&str],
    duration: &str,
    dir: &Path,
) -> SweepResult {
    let config = format!(
        "{}/../../configs/r1-rtt-sweep.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let config = guest_path(Path::new(&config));
    // The same file for both backends: switching `backend` is all the file asks (its
    // `direction` is left to the proxy's default, which a netem sweep would refuse).
    let out = dir.join(format!("{backend}{pass}"));
    let bin = guest_path(Path::new(env!("CARGO_BIN_EXE_tsload")));
    let delays = delays
        .iter()
        .map(|d| format!("\"{d}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut sets = vec![
        "target.kind=\"influx\"".to_string(),
        format!("target.url=\"http://{}\"", victoria.addr),
        format!("target.db=\"{backend}\""),
        "target.create_database=false".to_string(),
        format!(
            "network.backend=\"{}\"",
            if backend == "netem" { "netem" } else { "proxy" }
        ),
        // The target's own ping (HTTP GET /ping) through the same path as the writes.
        "network.probe=\"app\"".to_string(),
        "network.probe_count=50".to_string(),
        format!("load.duration=\"{duration}\""),
        // R1's 16 workers saturate the 2 emulated CPUs (measured: ~1,000 rows/s at 0, 10
        // and 30 ms alike, k ~ 0): 2 workers, as results/r1-victoriametrics-2-workers.
        "load.workers=2".to_string(),
        format!("sweep.delay=[{delays}]"),
    ];
    if backend == "netem" {
        sets.push(format!("network.dev=\"{}\"", lab.dev()));
        sets.push(format!("network.netns=\"{}\"", lab.ns()));
    }
    let mut args: Vec<String> = vec![
        "netns".into(),
        "exec".into(),
        lab.ns().into(),
        bin.to_string_lossy().into_owned(),
        "sweep".into(),
        config.to_string_lossy().into_owned(),
        "--out".into(),
        out.to_string_lossy().into_owned(),
    ];
    for s in sets {
        args.push("--set".into());
        args.push(s);
    }
    let started = Instant::now();
    let output = Command::new("ip").args(&args).output().unwrap();
    let stdout = text(&output.stdout);
    println!(
        "r1: {backend}{pass} sweep: {:.1} s, exit {:?}\n{stdout}",
        started.elapsed().as_secs_f64(),
        output.status.code()
    );
    assert!(
        output.status.success(),
        "the {backend} sweep failed: {}\n{stdout}\n--- VictoriaMetrics ---\n{}",
        text(&output.stderr),
        victoria.log_tail()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    let points = json["rows"].as_array().unwrap().len();
    let mut rows_reported = 0;
    for i in 1..=points {
        let p: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("points/{i:03}.json"))).unwrap(),
        )
        .unwrap();
        rows_reported += p["rows"]
            .as_u64()
            .unwrap_or_else(|| panic!("point {i} reports no rows: {p}"));
    }
    SweepResult {
        json,
        rows_reported,
        out,
    }
}

/// One delay's best measurement over a backend's sweeps.
#[derive(Debug)]
struct BestPoint {
    rtt_min_ms: f64,
    rtt_median_ms: f64,
    rows_per_s: f64,
    /// `workers * in_flight / requests_per_s`, as tsload's own fit takes it.
    t_request_ms: f64,
}

/// For each of `delays`, its best point over `passes`: the least RTT minimum, and the
/// point with the highest rate (its RTT median and request time). The emulated machine
/// shares the host's cores, and whatever else runs there takes them in bursts: a point
/// measured during one is slower for reasons that are not the delay (the no-delay point
/// came out at 108 rows/s against 276 at 10 ms with three test binaries beside the VM).
/// Measured twice, at the start and at the end, and the best kept, a point shows what the
/// delay costs and not when a burst came; a delay that is not applied, or applied twice,
/// is still off in every measurement.
fn best_points(delays: &[&str], passes: &[SweepResult]) -> Vec<BestPoint> {
    delays
        .iter()
        .map(|d| {
            let rows: Vec<&serde_json::Value> = passes
                .iter()
                .flat_map(|r| r.json["rows"].as_array().into_iter().flatten())
                .filter(|row| row["point"]["delay"].as_str() == Some(d))
                .collect();
            assert!(!rows.is_empty(), "no point at delay {d}");
            let fastest = rows
                .iter()
                .max_by(|a, b| f(a, &["rows_per_s"]).total_cmp(&f(b, &["rows_per_s"])))
                .expect("a point");
            BestPoint {
                rtt_min_ms: rows
                    .iter()
                    .map(|row| f(row, &["rtt", "min_ms"]))
                    .fold(f64::INFINITY, f64::min),
                rtt_median_ms: f(fastest, &["rtt", "median_ms"]),
                rows_per_s: f(fastest, &["rows_per_s"]),
                t_request_ms: f(fastest, &["workers"]) * f(fastest, &["in_flight"]) * 1000.0
                    / f(fastest, &["requests_per_s"]),
            }
        })
        .collect()
}

/// Milliseconds in a delay like `0.432ms`.
fn delay_ms(d: &str) -> f64 {
    d.strip_suffix("ms")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a delay in ms: {d}"))
}

#[test]
#[ignore = "runs inside the netem VM: started by netem_in_a_real_kernel"]
fn vm_r1_sweep_against_victoriametrics_with_netem_and_the_proxy() {
    let lab = Lab::new("tsl-vm-r1");
    let victoria = Victoria::start(&lab);
    let full = std::env::var("TSLOAD_R1_VM_FULL").as_deref() == Ok("1");
    let (delays, duration): (&[&str], &str) = if full {
        (&R1_DELAYS_X20, "10s")
    } else {
        (&QUICK_DELAYS, QUICK_DURATION)
    };
    let dir = tempfile::tempdir().unwrap();
    // A first write into a fresh VictoriaMetrics is slow under the emulated CPU (45
    // rows/s against 400 in the first measured run): a short run, not counted, first.
    let warm = r1_sweep(&lab, &victoria, ("warmup", ""), &["0ms"], "2s", dir.path());
    assert!(warm.rows_reported > 0, "the warm-up wrote nothing");
    let before = lab.tc_show();
    // Every delay is measured twice, the second time in reverse order, and each point's
    // best is fitted: a middle point measured once (10 ms at 266 ms per request, slower
    // than the 120 ms point, on a loaded host) made the fit's R² 0.04.
    let again: Vec<&str> = delays.iter().rev().copied().collect();
    let mut results = Vec::new();
    for backend in ["netem", "proxy"] {
        let mut passes = Vec::new();
        for (pass, delays) in [("", delays), ("-again", &again[..])] {
            passes.push(r1_sweep(
                &lab,
                &victoria,
                (backend, pass),
                delays,
                duration,
                dir.path(),
            ));
            let after = lab.tc_show();
            println!("r1: {backend}{pass}: root qdisc after the sweep {after:?}");
            assert!(
                !after.contains("netem"),
                "netem stayed on {} after the {backend} sweep: {after}",
                lab.dev()
            );
            assert_eq!(after, before, "the sweep left the interface as it was");
        }
        results.push((backend, passes));
    }

    // Per delay, the best of its measurements (see `best_points`).
    let best: Vec<Vec<BestPoint>> = results
        .iter()
        .map(|(_, passes)| best_points(delays, passes))
        .collect();
    println!("r1: delay | netem RTT p50, rows/s | proxy RTT p50, rows/s (best of each)");
    for (i, d) in delays.iter().enumerate() {
        println!(
            "r1: {d} | {:.3} ms, {:.0} | {:.3} ms, {:.0}",
            best[0][i].rtt_median_ms,
            best[0][i].rows_per_s,
            best[1][i].rtt_median_ms,
            best[1][i].rows_per_s
        );
    }
    for (backend, passes) in &results {
        for (pass, r) in ["first", "again"].iter().zip(passes) {
            let fit = &r.json["fits"][0]["fit"];
            println!(
                "r1: {backend} ({pass}): tsload's fit: k {:.3}, t_service {:.3} ms, R² {:.4}, {} rows",
                f(fit, &["k"]),
                f(fit, &["t_service_ms"]),
                f(fit, &["r_squared"]),
                r.rows_reported
            );
        }
    }
    if full {
        // For results/: the tables as they are; the checks below are the quick sweep's.
        let out = PathBuf::from(tsload_testbed::vm::GUEST_OUT_DIR);
        for (backend, passes) in &results {
            for ext in ["csv", "json", "svg"] {
                std::fs::copy(
                    passes[0].out.join(format!("sweep.{ext}")),
                    out.join(format!("r1-{backend}-vm.{ext}")),
                )
                .unwrap();
            }
        }
    }

    for ((backend, passes), best) in results.iter().zip(&best) {
        // The probe's RTT tracks the delay: what each point of 20 ms or more adds to the
        // fastest probe over the first point's (no delay) is the delay, from half of it to
        // 1.5 times it plus 2 ms. A delay not applied adds nothing, one applied in both
        // directions adds twice it, one in other units is off by a factor of 1,000. The
        // minimum, not the median: the load's leftovers on the VM's 2 emulated CPUs move
        // the median by several ms from run to run (the proxy's p50 at 30 ms grew by 37.7
        // ms once in a loaded CI run while its minimum grew by 34.3). The minimum moves
        // too, by up to 9 ms under a busy host (see `CHECKED_DELAY_MS`), which is within
        // these bounds at 20 ms and more and not at 10.
        let rtt_min = |i: usize| best[i].rtt_min_ms;
        let base = rtt_min(0);
        assert!(base < 40.0, "{backend}: RTT without delay {base} ms");
        for (i, d) in delays.iter().enumerate().skip(1) {
            let added = rtt_min(i) - base;
            let want = delay_ms(d);
            println!("r1: {backend}: delay {d}: the fastest probe's RTT grew by {added:.3} ms");
            if want < CHECKED_DELAY_MS {
                continue;
            }
            let low = want / 2.0;
            assert!(
                added >= low,
                "{backend}: delay {d}: the fastest probe's RTT grew by {added:.3} ms, under {low}"
            );
            let high = want * 1.5 + 2.0;
            assert!(
                added <= high,
                "{backend}: delay {d}: the fastest probe's RTT grew by {added:.3} ms, over {high}"
            );
        }
        // The writes wait for the delay, not only the probes: every request's round trip
        // holds the added delay once, so even the best point's mean request time at the
        // largest delay is at least the delay (0.9 of it, for rounding); a quiet run
        // without it takes about 70 ms per request. This does not compare with the
        // no-delay point: a burst on the host can slow that point in both passes (104
        // rows/s at none against 124 at 120 ms in a CI run, where an earlier check wanted
        // a fall by a fifth), but nothing makes a delayed request faster than its delay.
        // That the rate falls as the RTT grows is the fit's to see: k > 0.
        let last = delays.len() - 1;
        let floor = delay_ms(delays[last]) * 0.9;
        assert!(
            best[last].t_request_ms >= floor,
            "{backend}: at {} the best request took {:.1} ms, under the delay ({floor:.0} \
             ms and more): the writes did not wait for it: {best:?}",
            delays[last],
            best[last].t_request_ms
        );
        let fit = tsload_sweep::fit::fit_rtt(
            &best
                .iter()
                .map(|p| (p.rtt_median_ms, p.t_request_ms))
                .collect::<Vec<_>>(),
        )
        .unwrap_or_else(|e| panic!("{backend}: no fit of {best:?}: {e}"));
        println!(
            "r1: {backend}: the best points' fit: k {:.3}, t_service {:.3} ms, R² {:.4}",
            fit.k, fit.t_service_ms, fit.r_squared
        );
        // Measured (2 workers, 0/10/30 ms): netem k 0.93 R² 0.96, proxy k 0.74 R² 0.98;
        // with the host loaded the proxy's R² fell to 0.45 (the 0 and 10 ms points within
        // the noise of each other), which the 120 ms point now carries.
        assert!(fit.k > 0.3, "{backend}: k = {} of {best:?}", fit.k);
        assert!(
            fit.r_squared >= 0.5,
            "{backend}: R² = {} of {best:?}",
            fit.r_squared
        );
        let rows_reported: u64 = passes.iter().map(|r| r.rows_reported).sum();

        // What VictoriaMetrics stored is what tsload reported: each row is 11 samples
        // (1 varchar, stored as 0, and 10 floats), duplicates kept (no -dedup).
        let (samples, names) = victoria.stored(&lab, backend);
        println!(
            "r1: {backend}: VictoriaMetrics stored {samples} samples in {names} metrics; tsload reported {rows_reported} rows"
        );
        assert!(rows_reported > 0, "{backend}: no rows");
        assert_eq!(names, 11, "{backend}: one metric per column");
        assert_eq!(
            samples,
            rows_reported * 11,
            "{backend}: stored samples vs rows reported x 11"
        );
    }
    let ignored = victoria.get(&lab, "/metrics");
    for line in ignored
        .lines()
        .filter(|l| l.starts_with("vm_rows_ignored_total"))
    {
        assert!(line.ends_with(" 0"), "VictoriaMetrics dropped rows: {line}");
    }
}
