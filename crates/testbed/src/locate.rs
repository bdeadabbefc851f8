//! Finding the server programs: a binary on PATH (or in /usr/bin, /usr/sbin), the QuestDB
//! jar in the local Maven repository, `java`, and PostgreSQL's program directory (Debian
//! keeps it off PATH). The servers can be overridden by an environment variable; a missing
//! program is an error that says what to install and how.

use std::path::{Path, PathBuf};

use crate::TestbedError;

/// The QuestDB release the testbed runs (Maven Central `org.questdb:questdb`). Keep it in
/// step with `MAVEN_ARTIFACTS` in xtask/src/main.rs (a unit test checks).
pub const QUESTDB_VERSION: &str = "9.3.4";

const XTASK: &str = "or run `cargo xtask test`, which installs everything the tests need";

/// A Debian-packaged server binary: `$env_var` if set, else PATH, /usr/bin, /usr/sbin.
pub(crate) fn binary(
    name: &str,
    env_var: &str,
    what: &str,
    package: &str,
) -> Result<PathBuf, TestbedError> {
    if let Some(path) = std::env::var_os(env_var) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(TestbedError::Missing {
            what: format!("`{name}` ({what})"),
            looked: format!("${env_var} = {} is not a file", path.display()),
            install: format!("fix or unset {env_var}"),
        });
    }
    find_on_path(name).ok_or_else(|| TestbedError::Missing {
        what: format!("`{name}` ({what})"),
        looked: format!("looked on PATH, in /usr/bin and /usr/sbin, and ${env_var} is not set"),
        install: format!(
            "install the Debian package `{package}` (`sudo apt-get install {package}`), {XTASK}"
        ),
    })
}

/// A client tool that comes with a server package (psql-like clients, set-up scripts):
/// PATH, /usr/bin, /usr/sbin.
pub(crate) fn tool(name: &str, what: &str, package: &str) -> Result<PathBuf, TestbedError> {
    find_on_path(name).ok_or_else(|| TestbedError::Missing {
        what: format!("`{name}` ({what})"),
        looked: "looked on PATH, in /usr/bin and /usr/sbin".into(),
        install: format!(
            "install the Debian package `{package}` (`sudo apt-get install {package}`), {XTASK}"
        ),
    })
}

/// The PostgreSQL major version the testbed runs (Debian 12's `postgresql` package).
pub(crate) const POSTGRES_MAJOR: &str = "15";

/// The PostgreSQL programs the testbed uses, all in one directory.
pub(crate) const POSTGRES_PROGRAMS: [&str; 4] = ["initdb", "postgres", "pg_isready", "psql"];

/// PostgreSQL's program directory: `$TSLOAD_PG_BIN_DIR` if set, else Debian's
/// `/usr/lib/postgresql/15/bin` (not on PATH). It must hold `POSTGRES_PROGRAMS`.
pub(crate) fn postgres_bin_dir() -> Result<PathBuf, TestbedError> {
    let (dir, from_env) = match std::env::var_os("TSLOAD_PG_BIN_DIR") {
        Some(dir) => (PathBuf::from(dir), true),
        None => (
            PathBuf::from(format!("/usr/lib/postgresql/{POSTGRES_MAJOR}/bin")),
            false,
        ),
    };
    for program in POSTGRES_PROGRAMS {
        let path = dir.join(program);
        if path.is_file() {
            continue;
        }
        return Err(TestbedError::Missing {
            what: format!("`{program}` (PostgreSQL {POSTGRES_MAJOR})"),
            looked: if from_env {
                format!("no file {} ($TSLOAD_PG_BIN_DIR)", path.display())
            } else {
                format!(
                    "no file {}, and $TSLOAD_PG_BIN_DIR is not set",
                    path.display()
                )
            },
            install: if from_env {
                "fix or unset TSLOAD_PG_BIN_DIR".into()
            } else {
                format!(
                    "install the Debian package `postgresql` (`sudo apt-get install postgresql`), {XTASK}"
                )
            },
        });
    }
    Ok(dir)
}

/// The TimescaleDB release `ServerKind::TimescaleDb` runs: its Apache-2.0 edition, the
/// newest release that supports PostgreSQL 15. `cargo xtask test` builds this version.
pub const TIMESCALEDB_VERSION: &str = "2.28.3";

/// Ok when TimescaleDB [`TIMESCALEDB_VERSION`] is installed into Debian's PostgreSQL 15:
/// its library in the package library dir and its control file and install script in the
/// extension dir, the control file's default version this one. Else a `Missing` error
/// saying how to get it.
pub fn timescaledb_installed() -> Result<(), TestbedError> {
    let lib = PathBuf::from(format!(
        "/usr/lib/postgresql/{POSTGRES_MAJOR}/lib/timescaledb-{TIMESCALEDB_VERSION}.so"
    ));
    let ext = PathBuf::from(format!("/usr/share/postgresql/{POSTGRES_MAJOR}/extension"));
    let script = ext.join(format!("timescaledb--{TIMESCALEDB_VERSION}.sql"));
    let control = ext.join("timescaledb.control");
    let missing = |looked: String| TestbedError::Missing {
        what: format!(
            "TimescaleDB {TIMESCALEDB_VERSION} (the PostgreSQL {POSTGRES_MAJOR} extension)"
        ),
        looked,
        install: format!(
            "no Debian package has it: `cargo xtask test` builds it from \
             ../shared/vendor/timescaledb-{TIMESCALEDB_VERSION}-apache.tar.xz or from \
             $TSLOAD_TIMESCALEDB_SOURCE (`git clone --branch {TIMESCALEDB_VERSION} \
             https://github.com/timescale/timescaledb`), built with -DAPACHE_ONLY=ON"
        ),
    };
    for file in [&lib, &script, &control] {
        if !file.is_file() {
            return Err(missing(format!("no file {}", file.display())));
        }
    }
    let text = std::fs::read_to_string(&control)
        .map_err(|e| TestbedError::io(format!("reading {}", control.display()), e))?;
    let default = text.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "default_version").then(|| value.trim().trim_matches('\'').to_string())
    });
    match default {
        Some(v) if v == TIMESCALEDB_VERSION => Ok(()),
        other => Err(missing(format!(
            "{} installs version {}, not {TIMESCALEDB_VERSION}",
            control.display(),
            other.as_deref().unwrap_or("(none given)")
        ))),
    }
}

/// `java`: `$JAVA_HOME/bin/java` if JAVA_HOME is set, else PATH.
pub(crate) fn java() -> Result<PathBuf, TestbedError> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin/java");
        if java.is_file() {
            return Ok(java);
        }
    }
    find_on_path("java").ok_or_else(|| TestbedError::Missing {
        what: "`java` (a Java 17+ runtime, needed to run QuestDB)".into(),
        looked: "looked in $JAVA_HOME/bin, on PATH, in /usr/bin and /usr/sbin".into(),
        install: format!(
            "install the Debian package `default-jre-headless` \
             (`sudo apt-get install default-jre-headless`), {XTASK}"
        ),
    })
}

/// The QuestDB jar: `$TSLOAD_QUESTDB_JAR` if set, else
/// `~/.m2/repository/org/questdb/questdb/VERSION/questdb-VERSION.jar`.
pub(crate) fn questdb_jar() -> Result<PathBuf, TestbedError> {
    let artifact = format!("org.questdb:questdb:{QUESTDB_VERSION}");
    let what = format!("the QuestDB jar (Maven artifact {artifact})");
    if let Some(path) = std::env::var_os("TSLOAD_QUESTDB_JAR") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(TestbedError::Missing {
            what,
            looked: format!("$TSLOAD_QUESTDB_JAR = {} is not a file", path.display()),
            install: "fix or unset TSLOAD_QUESTDB_JAR".into(),
        });
    }
    let Some(home) = std::env::var_os("HOME") else {
        return Err(TestbedError::Missing {
            what,
            looked: "HOME is not set, so ~/.m2 cannot be found".into(),
            install: "set HOME or TSLOAD_QUESTDB_JAR".into(),
        });
    };
    let jar = questdb_jar_in(Path::new(&home));
    if jar.is_file() {
        return Ok(jar);
    }
    Err(TestbedError::Missing {
        what,
        looked: format!("no file {}", jar.display()),
        install: format!("fetch it with `mvn dependency:get -Dartifact={artifact}`, {XTASK}"),
    })
}

fn questdb_jar_in(home: &Path) -> PathBuf {
    home.join(".m2/repository/org/questdb/questdb")
        .join(QUESTDB_VERSION)
        .join(format!("questdb-{QUESTDB_VERSION}.jar"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/usr/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binary_names_package_and_xtask() {
        let err = binary(
            "no-such-server-binary",
            "TSLOAD_TESTBED_UNSET_FOR_TEST",
            "a test server",
            "no-such-package",
        )
        .unwrap_err();
        let msg = err.to_string();
        for part in [
            "`no-such-server-binary`",
            "`no-such-package`",
            "apt-get install no-such-package",
            "cargo xtask test",
        ] {
            assert!(msg.contains(part), "{part:?} missing from: {msg}");
        }
    }

    #[test]
    fn jar_path_follows_maven_layout() {
        assert_eq!(
            questdb_jar_in(Path::new("/home/u")),
            PathBuf::from(format!(
                "/home/u/.m2/repository/org/questdb/questdb/{QUESTDB_VERSION}/questdb-{QUESTDB_VERSION}.jar"
            ))
        );
    }

    #[test]
    fn xtask_installs_what_the_testbed_runs() {
        let xtask = include_str!("../../../xtask/src/main.rs");
        for needle in [
            format!("(\"org.questdb\", \"questdb\", \"{QUESTDB_VERSION}\")"),
            "(\"influxdb\", \"influxd\")".to_string(),
            "(\"victoria-metrics\", \"victoria-metrics\")".to_string(),
            "(\"default-jre-headless\", \"java\")".to_string(),
            format!("(\"postgresql\", \"/usr/lib/postgresql/{POSTGRES_MAJOR}/bin/postgres\")"),
            "(\"mariadb-server\", \"mariadbd\")".to_string(),
        ] {
            assert!(
                xtask.contains(&needle),
                "xtask/src/main.rs does not install {needle}"
            );
        }
    }
}
