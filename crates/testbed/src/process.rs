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
//! the death signal, but its temp dir is left behind. Prefer one server per test.)

use std::io;
use std::process::{Child, Command};
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

/// Stops `child`: SIGTERM, up to `grace` for it to exit, then SIGKILL; always reaps it.
pub(crate) fn terminate(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    send_sigterm(child);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[allow(unsafe_code)]
fn send_sigterm(child: &Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers. The pid is our own child that has not been
    // reaped yet (we hold its `Child` and have not waited successfully), so the pid cannot
    // have been reused by another process.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
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
        terminate(&mut child, Duration::from_secs(5));
        assert!(child.try_wait().unwrap().is_some());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM was not enough"
        );
    }

    #[test]
    fn terminate_kills_a_child_that_ignores_sigterm() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; exec sleep 30"]);
        let mut child = spawn(cmd).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        terminate(&mut child, Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_some());
    }
}
