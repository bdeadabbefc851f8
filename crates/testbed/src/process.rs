//! Spawning and stopping server processes.
//!
//! Children are spawned from one long-lived helper thread, never from the calling (test)
//! thread, and get `PR_SET_PDEATHSIG = SIGKILL` on Linux so the kernel kills them if the
//! test process dies without running `Drop` (a `SIGKILL`ed or aborted test binary, a
//! `panic = "abort"` profile). The helper thread matters: the kernel sends the death
//! signal when the *thread* that forked the child exits, not the process. Cargo runs each
//! test on its own thread, so a server spawned by a test thread and kept in a shared
//! `static` for later tests would be killed as soon as the first test finished. The helper
//! thread lives as long as the process, so the signal fires exactly when the process dies.
//! (A server kept in a `static` is never dropped: its process is killed at exit through
//! the death signal, but its temp dir is left behind until the next test process sweeps
//! it, see `scratch`. Prefer one server per test.)
//!
//! The signal is set in `pre_exec`, which std runs after it has switched to the user set
//! by `CommandExt::uid`/`gid` (PostgreSQL runs as `postgres` when the tests run as root):
//! a change of user clears the parent-death signal, so the order matters. Only the server
//! process gets the signal; PostgreSQL's children notice the postmaster's death and exit
//! by themselves. `kill_tree` kills a server and everything below it (`Server::kill`).

use std::io;
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

struct Request {
    command: Command,
    reply: mpsc::Sender<io::Result<Child>>,
}

static SPAWNER: OnceLock<Result<mpsc::Sender<Request>, String>> = OnceLock::new();

fn spawner() -> io::Result<&'static mpsc::Sender<Request>> {
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("tsload-testbed-spawner".into())
            .spawn(move || {
                // Runs until the process exits: the sender lives in a static.
                for mut request in rx {
                    let child = request.command.spawn();
                    let _ = request.reply.send(child);
                }
            })
            .map(|_| tx)
            .map_err(|e| format!("cannot start the testbed's spawner thread: {e}"))
    });
    spawner.as_ref().map_err(|e| io::Error::other(e.clone()))
}

/// Spawns `command` from the helper thread, with the parent-death signal set.
pub(crate) fn spawn(mut command: Command) -> io::Result<Child> {
    set_parent_death_signal(&mut command);
    let (reply, answer) = mpsc::channel();
    spawner()?
        .send(Request { command, reply })
        .map_err(|_| io::Error::other("the testbed's spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the testbed's spawner thread did not answer"))?
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_parent_death_signal(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec. It only calls prctl(2) and
    // getppid(2), which are async-signal-safe, and builds its errors without allocating
    // (last_os_error / from_raw_os_error), so it is sound even though the parent has other
    // threads that may hold locks (e.g. the allocator's) at fork time.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_command: &mut Command) {}

/// Stops `child`: `signal` (SIGTERM for most servers), up to `grace` for it to exit, then
/// SIGKILL to it and every process below it (see `kill_tree`); always reaps it.
pub(crate) fn terminate(child: &mut Child, signal: libc::c_int, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    send_signal(child.id(), signal);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    let _ = kill_tree(child, TREE_TIMEOUT);
}

/// How long `kill_tree` waits for the killed processes to be gone.
const TREE_TIMEOUT: Duration = Duration::from_secs(10);

/// SIGKILLs `child` and all its descendants at once, reaps `child` and waits until the
/// descendants are gone too (dead, or zombies waiting for whoever inherited them). Errors
/// naming the survivors if some are still alive after `timeout`.
///
/// Process groups do not help here: PostgreSQL's postmaster puts every child (backends,
/// checkpointer, ...) in a session of its own. So the tree is frozen top-down instead:
/// each process is stopped (SIGSTOP) before its children are listed, so it can neither
/// fork new ones nor reap the listed ones (which keeps their pids from being reused), and
/// only then is everything killed.
pub(crate) fn kill_tree(child: &mut Child, timeout: Duration) -> Result<(), String> {
    if let Ok(Some(_)) = child.try_wait() {
        return Ok(());
    }
    let root = child.id();
    let mut frozen: Vec<(u32, u64)> = Vec::new();
    let mut level = vec![root];
    while !level.is_empty() {
        for &pid in &level {
            send_signal(pid, libc::SIGSTOP);
        }
        // A stop takes effect when the process next leaves the kernel; list its children
        // only then (give up waiting after a while: a process stuck in the kernel).
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline
            && level
                .iter()
                .any(|&p| stat(p).is_some_and(|s| !matches!(s.state, 'T' | 't' | 'Z' | 'X')))
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        let parents: Vec<u32> = level.clone();
        frozen.extend(level.iter().filter_map(|&p| stat(p).map(|s| (p, s.start))));
        level = children_of(&parents)
            .into_iter()
            .filter(|(p, _)| !frozen.iter().any(|(f, _)| f == p))
            .map(|(p, _)| p)
            .collect();
    }
    // Children first, while their parents are stopped and cannot reap them; the root
    // last (it is our child: its pid stays ours until we reap it).
    for &(pid, start) in frozen.iter().rev() {
        if stat(pid).is_some_and(|s| s.start == start) {
            send_signal(pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let deadline = Instant::now() + timeout;
    loop {
        let alive: Vec<u32> = frozen
            .iter()
            .filter(|&&(pid, start)| pid != root && is_alive(pid, start))
            .map(|&(pid, _)| pid)
            .collect();
        if alive.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "processes {alive:?} below pid {root} still alive {timeout:?} after SIGKILL"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `pid` and all processes below it, from /proc (a snapshot: processes come and go).
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut level = vec![pid];
    while !level.is_empty() {
        level = children_of(&level)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| !all.contains(p))
            .collect();
        all.extend(&level);
    }
    all
}

/// What the testbed reads of /proc/PID/stat.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    ppid: u32,
    /// Start time in clock ticks since boot: with the pid, it names one process.
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last ')'. Then: state (3), ppid (4), ..., starttime (22).
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Whether the process `(pid, start)` still runs (a zombie has released everything).
fn is_alive(pid: u32, start: u64) -> bool {
    stat(pid).is_some_and(|s| s.start == start && !matches!(s.state, 'Z' | 'X'))
}

/// The live processes whose parent is one of `parents`, with their start times.
fn children_of(parents: &[u32]) -> Vec<(u32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let s = stat(pid)?;
            (parents.contains(&s.ppid) && !matches!(s.state, 'Z' | 'X')).then_some((pid, s.start))
        })
        .collect()
}

#[allow(unsafe_code)]
fn send_signal(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) takes plain integers. Callers pass our own unreaped child (its pid
    // cannot have been reused while we hold its `Child` and have not waited for it), or a
    // process under it whose parent is stopped, so that it cannot be reaped and its pid
    // reused meanwhile (and whose start time was checked just before).
    unsafe {
        libc::kill(pid, signal);
    }
}

/// The uid and primary gid of a user account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// Looks `name` up in the user database (getpwnam_r: /etc/passwd, or NSS); `None` if
/// there is no such user.
#[allow(unsafe_code)]
pub(crate) fn user(name: &str) -> io::Result<Option<User>> {
    let cname = std::ffi::CString::new(name).map_err(io::Error::other)?;
    let mut buf: Vec<libc::c_char> = vec![0; 4096];
    loop {
        // SAFETY: `passwd` is a plain C struct of integers and pointers, for which all
        // zeroes is a valid value; getpwnam_r only writes into it and into `buf` (whose
        // true length it is given), and we read the integer fields only after it said it
        // found the user (result non-null), while `buf` is still alive.
        unsafe {
            let mut pwd: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwnam_r(
                cname.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            );
            if rc == libc::ERANGE && buf.len() < (1 << 20) {
                buf.resize(buf.len() * 2, 0);
                continue;
            }
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            if result.is_null() {
                return Ok(None);
            }
            return Ok(Some(User {
                uid: pwd.pw_uid,
                gid: pwd.pw_gid,
            }));
        }
    }
}

/// Whether this process runs as root (effective uid 0).
#[allow(unsafe_code)]
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a short-lived command (a database's command-line client) to completion with
/// stdin closed, collecting its stdout and stderr; killed after `timeout`.
pub(crate) fn output(mut command: Command, timeout: Duration) -> io::Result<Output> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let read = |pipe: Option<Box<dyn io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("still running after {timeout:?}; killed"),
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Runs a set-up step (initdb, mariadb-install-db) to completion from the spawner thread
/// (with the stdio the caller gave `command`); killed after `timeout`. The inner `Err`
/// says how a failed step ended.
pub(crate) fn run_step(command: Command, timeout: Duration) -> io::Result<Result<(), String>> {
    let mut child = spawn(command)?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(if status.success() {
                Ok(())
            } else {
                Err(status.to_string())
            });
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Err(format!("no end within {timeout:?}; killed")));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawned_child_survives_the_spawning_test_thread_and_terminates() {
        // Spawn from a short-lived thread: with PDEATHSIG set on that thread the child
        // would die when it exits; spawned from the helper thread it must live on.
        let mut child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn(cmd).unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            child.try_wait().unwrap().is_none(),
            "child died with its spawning thread"
        );
        let started = Instant::now();
        terminate(&mut child, libc::SIGTERM, Duration::from_secs(5));
        assert!(child.try_wait().unwrap().is_some());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM was not enough"
        );
    }

    #[test]
    fn kill_tree_kills_the_children_too() {
        let mut cmd = Command::new("sh");
        // Two children that ignore SIGTERM, and a grandchild.
        cmd.args([
            "-c",
            "trap '' TERM; sleep 30 & sleep 31 & sh -c 'sleep 32 & wait' & wait",
        ]);
        let mut child = spawn(cmd).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut pids = tree(child.id());
        while pids.len() < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            pids = tree(child.id());
        }
        assert_eq!(pids.len(), 5, "{pids:?}");
        let starts: Vec<(u32, u64)> = pids.iter().map(|&p| (p, stat(p).unwrap().start)).collect();
        kill_tree(&mut child, Duration::from_secs(5)).unwrap();
        assert!(child.try_wait().unwrap().is_some());
        for (pid, start) in starts {
            assert!(!is_alive(pid, start), "{pid} survived");
        }
        // Nothing left to do on a reaped child.
        kill_tree(&mut child, Duration::from_secs(1)).unwrap();
    }

    #[test]
    fn stat_fields_follow_the_last_parenthesis() {
        let text = "42 (a) b (c)) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 8 9";
        let s = parse_stat(text).unwrap();
        assert_eq!((s.state, s.ppid, s.start), ('S', 7, 123456));
        assert!(parse_stat("garbage").is_none());
        let me = stat(std::process::id()).unwrap();
        assert!(matches!(me.state, 'R' | 'S'));
    }

    #[test]
    fn users_are_looked_up() {
        assert_eq!(user("root").unwrap(), Some(User { uid: 0, gid: 0 }));
        assert_eq!(user("no-such-user-tsload").unwrap(), None);
    }

    #[test]
    fn output_collects_and_times_out() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = output(cmd, Duration::from_secs(5)).unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = Instant::now();
        let err = output(cmd, Duration::from_millis(200)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn terminate_kills_a_child_that_ignores_sigterm() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; exec sleep 30"]);
        let mut child = spawn(cmd).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        terminate(&mut child, libc::SIGTERM, Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_some());
    }
}
