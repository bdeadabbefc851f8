//! Finding the server programs: a binary on PATH (or in /usr/bin, /usr/sbin), the QuestDB
//! jar in the local Maven repository, and `java`. Each can be overridden by an environment
//! variable; a missing one is an error that says what to install and how.

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
        ] {
            assert!(
                xtask.contains(&needle),
                "xtask/src/main.rs does not install {needle}"
            );
        }
    }
}
