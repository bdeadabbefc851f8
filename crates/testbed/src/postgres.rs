//! PostgreSQL 15: `initdb`, the `postgres` command line, and the `psql` / `pg_isready`
//! commands of the SQL helpers.
//!
//! The cluster lives in `DIR/data`, made by `initdb -A trust -U tsload --no-sync -E UTF8
//! --locale=C` (trust: no passwords, which is fine on loopback in a throwaway cluster;
//! `--no-sync` only skips initdb's own final fsync). The server runs as
//! `postgres -D DIR/data -h 127.0.0.1 -p PORT -k DIR`: TCP on 127.0.0.1 only, its Unix
//! socket in the temp dir (never /var/run/postgresql), logging to stderr (the testbed's
//! `server.log`). Durability settings keep their defaults (fsync, synchronous_commit,
//! full_page_writes on), so benchmark numbers are honest; `Server::start_with` passes
//! `-c` settings for a test that wants others. After the first start the testbed creates
//! the database `tsload`, owned by the superuser `tsload`.
//!
//! PostgreSQL refuses to run as root. When the tests run as root, `initdb` and `postgres`
//! run as the `postgres` user (made by Debian's package), set by std's `CommandExt::uid` /
//! `gid` in the forked child before exec, before the parent-death signal is set (a uid
//! change clears it), and the temp dir is handed to that user. The clients run as the
//! caller: they connect over TCP.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::ports::Ports;
use crate::process::{self, User};
use crate::{Launch, SqlTools, TestbedError, locate};

/// The superuser `initdb` makes, and the database the testbed creates.
pub(crate) const USER: &str = "tsload";
/// The unprivileged account PostgreSQL runs as when the tests run as root.
const OS_USER: &str = "postgres";
/// The settings a TimescaleDB server starts with: the extension must be preloaded, and it
/// must not try to send telemetry (nothing outside loopback can be reached).
pub(crate) const TIMESCALEDB_SETTINGS: [(&str, &str); 2] = [
    ("shared_preload_libraries", "timescaledb"),
    ("timescaledb.telemetry_level", "off"),
];
/// How long initdb may take.
const INITDB_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn launch(
    dir: &Path,
    ports: &mut Ports,
    settings: &[(&str, &str)],
    log: &Path,
) -> Result<Launch, TestbedError> {
    let bin = locate::postgres_bin_dir()?;
    for (key, _) in settings {
        check_setting(key)?;
    }
    let run_as = run_as()?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid)).map_err(|e| {
            TestbedError::io(
                format!("handing {} to the `{OS_USER}` user", dir.display()),
                e,
            )
        })?;
    }
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8"])
        .args(["--locale=C", "--no-instructions"]);
    prepare(&mut initdb, run_as, dir, log)?;
    crate::run_setup_step(
        crate::ServerKind::Postgres,
        "initdb",
        initdb,
        INITDB_TIMEOUT,
        log,
    )?;

    let addr = ports.take()?;
    let mut command = Command::new(bin.join("postgres"));
    command
        .arg("-D")
        .arg(&data)
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .arg("-k")
        .arg(dir);
    for (key, value) in settings {
        command.arg("-c").arg(format!("{key}={value}"));
    }
    clean_env(&mut command);
    Ok(Launch {
        command,
        addr,
        pg_addr: Some(addr),
        ilp_tcp_addr: None,
        run_as,
        sql: Some(SqlTools {
            client: bin.join("psql"),
            probe: bin.join("pg_isready"),
        }),
    })
}

/// The account to run as: `postgres` when we are root, else ourselves.
pub(crate) fn run_as() -> Result<Option<User>, TestbedError> {
    if !process::is_root() {
        return Ok(None);
    }
    match process::user(OS_USER) {
        Ok(Some(user)) if user.uid != 0 => Ok(Some(user)),
        Ok(Some(_)) => Err(TestbedError::answer(
            format!("the `{OS_USER}` user"),
            "has uid 0; PostgreSQL refuses to run as root",
        )),
        Ok(None) => Err(TestbedError::Missing {
            what: format!(
                "the `{OS_USER}` user (PostgreSQL refuses to run as root, and these tests run as root)"
            ),
            looked: "no such account in the user database".into(),
            install: "the Debian package `postgresql` creates it \
                      (`sudo apt-get install postgresql`), or run the tests as an ordinary user"
                .into(),
        }),
        Err(e) => Err(TestbedError::io(
            format!("looking up the `{OS_USER}` user"),
            e,
        )),
    }
}

/// Sets a set-up step's user, working dir, environment and output (appended to `log`).
fn prepare(
    command: &mut Command,
    run_as: Option<User>,
    dir: &Path,
    log: &Path,
) -> Result<(), TestbedError> {
    use std::os::unix::process::CommandExt as _;
    if let Some(user) = run_as {
        command.uid(user.uid).gid(user.gid);
    }
    let (out, err) = crate::log_stdio(log)?;
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    clean_env(command);
    Ok(())
}

/// PG* variables (PGDATA, PGHOST, PGOPTIONS, PGPASSWORD, ...) would redirect the tools;
/// a developer's must not leak in.
fn clean_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            command.env_remove(key);
        }
    }
}

/// A `-c` setting's name: letters, digits, `_` and `.` (custom settings are `ext.name`).
fn check_setting(key: &str) -> Result<(), TestbedError> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(TestbedError::answer(
            format!("PostgreSQL setting `{key}`"),
            "not a setting name (letters, digits, `_` and `.` only)",
        ))
    }
}

/// `psql` running `statement` in `database`: unaligned, tuples only, columns separated
/// by tabs, NULL printed as `NULL`, no command tags, stop at the first error, no
/// ~/.psqlrc, never a password prompt.
pub(crate) fn client(
    tools: &SqlTools,
    addr: std::net::SocketAddr,
    database: &str,
    statement: &str,
) -> Command {
    let mut c = Command::new(&tools.client);
    c.args(["-X", "-q", "-A", "-t", "-w", "-v", "ON_ERROR_STOP=1"])
        .args(["-F", "\t", "-P", "null=NULL"])
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(["-U", USER, "-d", database, "-c", statement]);
    clean_env(&mut c);
    c.env("PGCONNECT_TIMEOUT", "5");
    c
}

/// `pg_isready`: exits 0 once the server accepts connections (not while it starts up or
/// recovers from a crash).
pub(crate) fn probe(tools: &SqlTools, addr: std::net::SocketAddr) -> Command {
    let mut c = Command::new(&tools.probe);
    c.args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(["-U", USER, "-d", "postgres", "-t", "2"]);
    clean_env(&mut c);
    c
}

/// A PostgreSQL double-quoted identifier.
pub(crate) fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Clears what a killed postmaster leaves behind once it and all its children are gone:
/// its SysV shared memory segment (a small header; the key and id are in line 7 of
/// `postmaster.pid`), `postmaster.pid` and the Unix socket's lock file. PostgreSQL would
/// clear them itself on the next start unless the old pid had been reused meanwhile; on
/// drop, nothing else would remove the segment. Does nothing while a process is still
/// attached to the segment (then PostgreSQL's own interlock must see the pid file).
pub(crate) fn clear_stale(dir: &Path) {
    let pid_file = dir.join("data/postmaster.pid");
    let Ok(text) = std::fs::read_to_string(&pid_file) else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    if let Some((key, id)) = lines.get(6).and_then(|l| parse_shmem_line(l))
        && !remove_unused_segment(key, id)
    {
        // Some process still uses the segment: leave the interlock to PostgreSQL.
        return;
    }
    let _ = std::fs::remove_file(&pid_file);
    if let Some(port) = lines.get(3).and_then(|l| l.trim().parse::<u16>().ok()) {
        for name in [format!(".s.PGSQL.{port}"), format!(".s.PGSQL.{port}.lock")] {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
}

/// "  KEY  ID" (line 7 of postmaster.pid).
fn parse_shmem_line(line: &str) -> Option<(libc::key_t, libc::c_int)> {
    let mut words = line.split_whitespace();
    let key: u32 = words.next()?.parse().ok()?;
    let id = words.next()?.parse().ok()?;
    // The key is printed unsigned; key_t is a signed 32-bit integer.
    Some((key as libc::key_t, id))
}

/// Removes SysV segment `id` if it still has key `key` and nothing attached; false if it
/// is still attached.
#[allow(unsafe_code)]
fn remove_unused_segment(key: libc::key_t, id: libc::c_int) -> bool {
    // SAFETY: shmctl(2) with IPC_STAT only writes the segment's description into `ds`, a
    // plain C struct for which all zeroes is valid; IPC_RMID takes no buffer. Checking the
    // key and the attach count first makes sure the id still names the killed server's
    // segment and that no process uses it.
    unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        if libc::shmctl(id, libc::IPC_STAT, &mut ds) != 0 || ds.shm_perm.__key != key {
            return true; // gone, or the id names another segment now
        }
        if ds.shm_nattch != 0 {
            return false;
        }
        libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_names_are_checked() {
        assert!(check_setting("shared_buffers").is_ok());
        assert!(check_setting("auto_explain.log_min_duration").is_ok());
        assert!(check_setting("").is_err());
        assert!(check_setting("fsync=off").is_err());
        assert!(check_setting("a b").is_err());
    }

    #[test]
    fn client_and_probe_commands() {
        let tools = SqlTools {
            client: "/pg/psql".into(),
            probe: "/pg/pg_isready".into(),
        };
        let addr = "127.0.0.1:5433".parse().unwrap();
        let c = client(&tools, addr, "tsload", "SELECT 1");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "/pg/psql");
        for w in [
            ["-h", "127.0.0.1"],
            ["-p", "5433"],
            ["-U", "tsload"],
            ["-d", "tsload"],
            ["-c", "SELECT 1"],
            ["-F", "\t"],
        ] {
            assert!(args.windows(2).any(|p| p == w), "{w:?} not in {args:?}");
        }
        let p = probe(&tools, addr);
        assert_eq!(p.get_program(), "/pg/pg_isready");
    }

    #[test]
    fn shmem_line_parses() {
        assert_eq!(
            parse_shmem_line("  10094128         9"),
            Some((10094128, 9))
        );
        assert_eq!(parse_shmem_line("4294967295 1"), Some((-1, 1)));
        assert_eq!(parse_shmem_line("ready"), None);
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("cpu"), "\"cpu\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
