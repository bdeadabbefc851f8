//! `cargo xtask serve`: a server started by hand runs in the background until a signal,
//! then stops and leaves no data directory behind.
#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "a test: what it prints and the files it makes are not tsload's output"
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// It exited when its standard input ended (so `cargo xtask serve vm &` stopped at once),
/// left its temporary directory after SIGTERM, and gave VictoriaMetrics 100 years of
/// retention, which hid the month a user's server keeps.
#[test]
fn serve_runs_with_stdin_closed_until_sigterm_and_removes_its_data() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["serve", "victoria-metrics"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start xtask serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut data_dir = None;
    let mut base_url = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(d) = line.strip_prefix("data_dir=") {
            data_dir = Some(std::path::PathBuf::from(d));
            break;
        }
        if let Some(u) = line.strip_prefix("base_url=") {
            base_url = Some(u.to_string());
        }
    }
    let data_dir = data_dir.expect("it prints its data dir");
    assert!(base_url.is_some());
    // Standard input ended long ago: it is still serving.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "it exited with stdin closed"
    );
    assert!(data_dir.exists());
    // VictoriaMetrics as installed: one month.
    let cmdline: String = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .find(|c| c.contains(&data_dir.display().to_string()))
        .expect("the server's process");
    assert!(cmdline.contains("-retentionPeriod=1 "), "{cmdline}");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "still running 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
    let said: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(said.iter().any(|l| l.starts_with("signal 15")), "{said:?}");
    assert!(!data_dir.exists(), "{} left behind", data_dir.display());
}
