//! MariaDB 10.11: `mariadb-install-db`, the `mariadbd` command line, and the `mariadb` /
//! `mariadb-admin` commands of the SQL helpers.
//!
//! The data dir `DIR/data` is made by `mariadb-install-db --no-defaults
//! --auth-root-authentication-method=normal --skip-test-db`: `root` without a password
//! (also as root@127.0.0.1, so it can log in over TCP). The server runs as
//! `mariadbd --no-defaults --datadir=DIR/data --port=PORT --bind-address=127.0.0.1
//! --socket=DIR/mysqld.sock ...`: TCP on 127.0.0.1 only, its Unix socket, pid file and
//! temporary files in the temp dir, its error log on stderr (the testbed's `server.log`),
//! no option file read (`--no-defaults`: /etc/mysql is ignored). Durability settings keep
//! their defaults (`innodb_flush_log_at_trx_commit=1`); `Server::start_with` passes
//! `--key=value` options for a test that wants others. When the tests run as root, the
//! server runs as root too (`--user=root`, which mariadbd requires for that). After the
//! first start the testbed creates the database `tsload`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::ports::Ports;
use crate::{Launch, ServerKind, SqlTools, TestbedError, locate, process};

/// The MariaDB account the helpers and `database_url` use.
pub(crate) const USER: &str = "root";
/// How long mariadb-install-db may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn launch(
    dir: &Path,
    ports: &mut Ports,
    settings: &[(&str, &str)],
    log: &Path,
) -> Result<Launch, TestbedError> {
    let mariadbd = locate::binary(
        "mariadbd",
        "TSLOAD_MARIADBD",
        "the MariaDB server",
        "mariadb-server",
    )?;
    let install_db = locate::tool(
        "mariadb-install-db",
        "MariaDB's data dir set-up",
        "mariadb-server",
    )?;
    let client = locate::tool("mariadb", "the MariaDB client", "mariadb-client")?;
    let admin = locate::tool("mariadb-admin", "MariaDB's admin client", "mariadb-client")?;
    for (key, _) in settings {
        check_setting(key)?;
    }
    let data = dir.join("data");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp)
        .map_err(|e| TestbedError::io(format!("creating {}", tmp.display()), e))?;
    let root = process::is_root();

    let mut install = Command::new(install_db);
    // --no-defaults must come first.
    install
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        // Passed on to the bootstrap mariadbd: its temporary tables stay in the temp dir
        // (in the shared /tmp, concurrent set-ups have failed deleting theirs).
        .arg(format!("--tmpdir={}", tmp.display()))
        .args([
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
        ]);
    if root {
        install.arg("--user=root");
    }
    let (out, err) = crate::log_stdio(log)?;
    install
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    clean_env(&mut install);
    crate::run_setup_step(
        ServerKind::MariaDb,
        "mariadb-install-db",
        install,
        INSTALL_TIMEOUT,
        log,
    )?;

    let addr = ports.take()?;
    let mut command = Command::new(mariadbd);
    command
        .arg("--no-defaults")
        .args(server_args(dir, addr, root))
        .args(settings.iter().map(|(k, v)| format!("--{k}={v}")));
    clean_env(&mut command);
    Ok(Launch {
        command,
        addr,
        pg_addr: None,
        ilp_tcp_addr: None,
        run_as: None,
        sql: Some(SqlTools {
            client,
            probe: admin,
        }),
    })
}

/// mariadbd's options after `--no-defaults`.
fn server_args(dir: &Path, addr: std::net::SocketAddr, root: bool) -> Vec<String> {
    let mut a = vec![
        format!("--datadir={}", dir.join("data").display()),
        format!("--port={}", addr.port()),
        format!("--bind-address={}", addr.ip()),
        format!("--socket={}", dir.join("mysqld.sock").display()),
        format!("--pid-file={}", dir.join("mariadbd.pid").display()),
        format!("--tmpdir={}", dir.join("tmp").display()),
        // Clients are 127.0.0.1: no reverse DNS look-ups.
        "--skip-name-resolve".into(),
    ];
    if root {
        a.push("--user=root".into());
    }
    a
}

/// MYSQL_PWD, MYSQL_HOST, MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_HOME... would redirect
/// the tools; a developer's must not leak in.
fn clean_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("MYSQL") || key_text.starts_with("MARIADB") {
            command.env_remove(key);
        }
    }
}

/// A server option's name: letters, digits, `_` and `-`.
fn check_setting(key: &str) -> Result<(), TestbedError> {
    let ok = !key.is_empty()
        && !key.starts_with('-')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(TestbedError::answer(
            format!("MariaDB option `{key}`"),
            "not an option name (letters, digits, `_` and `-`, without the leading `--`)",
        ))
    }
}

/// The common client options: no option files, TCP to the server, user root.
fn connect_args(c: &mut Command, addr: std::net::SocketAddr, timeout_s: u32) {
    // --no-defaults must come first.
    c.arg("--no-defaults")
        .args(["--protocol=TCP", "-h", &addr.ip().to_string()])
        .args(["-P", &addr.port().to_string(), "-u", USER])
        .arg(format!("--connect-timeout={timeout_s}"));
    clean_env(c);
}

/// `mariadb` running `statement` (in `database`, if given): batch mode (tab-separated
/// columns, NULL printed as `NULL`), no column names.
pub(crate) fn client(
    tools: &SqlTools,
    addr: std::net::SocketAddr,
    database: Option<&str>,
    statement: &str,
) -> Command {
    let mut c = Command::new(&tools.client);
    connect_args(&mut c, addr, 5);
    c.args(["-N", "-B"]);
    if let Some(db) = database {
        c.args(["-D", db]);
    }
    c.args(["-e", statement]);
    c
}

/// `mariadb-admin ping`: exits 0 once the server accepts connections.
pub(crate) fn probe(tools: &SqlTools, addr: std::net::SocketAddr) -> Command {
    let mut c = Command::new(&tools.probe);
    connect_args(&mut c, addr, 2);
    c.arg("ping");
    c
}

/// A MariaDB back-quoted identifier.
pub(crate) fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_listens_on_loopback_only_and_stays_in_the_dir() {
        let a = server_args(Path::new("/tmp/m"), "127.0.0.1:3307".parse().unwrap(), true);
        for arg in [
            "--datadir=/tmp/m/data",
            "--port=3307",
            "--bind-address=127.0.0.1",
            "--socket=/tmp/m/mysqld.sock",
            "--pid-file=/tmp/m/mariadbd.pid",
            "--tmpdir=/tmp/m/tmp",
            "--user=root",
        ] {
            assert!(a.iter().any(|x| x == arg), "{arg} not in {a:?}");
        }
        let a = server_args(
            Path::new("/tmp/m"),
            "127.0.0.1:3307".parse().unwrap(),
            false,
        );
        assert!(!a.iter().any(|x| x.starts_with("--user")));
    }

    #[test]
    fn client_reads_no_option_file_and_uses_tcp() {
        let tools = SqlTools {
            client: "/usr/bin/mariadb".into(),
            probe: "/usr/bin/mariadb-admin".into(),
        };
        let addr = "127.0.0.1:3307".parse().unwrap();
        let c = client(&tools, addr, Some("tsload"), "SELECT 1");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "--no-defaults");
        for w in [
            ["-P", "3307"],
            ["-D", "tsload"],
            ["-e", "SELECT 1"],
            ["-u", "root"],
        ] {
            assert!(args.windows(2).any(|p| p == w), "{w:?} not in {args:?}");
        }
        assert!(args.iter().any(|a| a == "--protocol=TCP"));
        let p = probe(&tools, addr);
        let args: Vec<String> = p
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "--no-defaults");
        assert_eq!(args.last().map(String::as_str), Some("ping"));
    }

    #[test]
    fn options_are_checked_and_identifiers_quoted() {
        assert!(check_setting("innodb_flush_log_at_trx_commit").is_ok());
        assert!(check_setting("innodb-buffer-pool-size").is_ok());
        assert!(check_setting("--port").is_err());
        assert!(check_setting("a=b").is_err());
        assert!(check_setting("").is_err());
        assert_eq!(quote_ident("cpu"), "`cpu`");
        assert_eq!(quote_ident("a`b"), "`a``b`");
    }
}
