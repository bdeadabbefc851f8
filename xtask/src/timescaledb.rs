//! TimescaleDB for the tests: no Debian package has it, so `cargo xtask test` builds its
//! Apache-2.0 edition from source into Debian's PostgreSQL 15, once.
//!
//! The source is `$TSLOAD_TIMESCALEDB_SOURCE` (a `.tar.xz` of the release, or a checkout
//! of tag 2.28.3) or, by default, the copy this project's machines keep beside the
//! checkout: `../shared/vendor/timescaledb-2.28.3-apache.tar.xz`. The build runs under
//! `target/tools/` (kept, so a second run only installs); `make install` writes the
//! extension into PostgreSQL's own directories (`pg_config --pkglibdir` and
//! `--sharedir`), which is where PostgreSQL 15 looks for it. Without a source the tests
//! whose name holds `timescaledb` are skipped by name, and the run says so.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// The release the tests run; the testbed (`tsload_testbed::TIMESCALEDB_VERSION`) checks
/// that this is the version installed.
pub(crate) const VERSION: &str = tsload_testbed::TIMESCALEDB_VERSION;

/// The libtest filter that names every TimescaleDB test (`--skip` it when none can run).
pub(crate) const TEST_FILTER: &str = "timescaledb";

const PG_CONFIG: &str = "/usr/lib/postgresql/15/bin/pg_config";

/// What the build needs beyond the server: headers, cmake and a C compiler, OpenSSL's
/// headers (TimescaleDB links it), as (package, a file it installs).
const BUILD_PACKAGES: &[(&str, &str)] = &[
    (
        "postgresql-server-dev-15",
        "/usr/include/postgresql/15/server/postgres.h",
    ),
    ("cmake", "/usr/bin/cmake"),
    ("gcc", "/usr/bin/gcc"),
    ("make", "/usr/bin/make"),
    ("libssl-dev", "/usr/include/openssl/ssl.h"),
    ("xz-utils", "/usr/bin/xz"),
];

/// Whether the TimescaleDB tests can run: true once the extension of [`VERSION`] is
/// installed (built here if it was not); false, said loudly, when there is no source.
pub(crate) fn ensure() -> anyhow::Result<bool> {
    if tsload_testbed::timescaledb_installed().is_ok() {
        return Ok(true);
    }
    let Some(source) = source() else {
        eprintln!(
            "\n*** TimescaleDB {VERSION} is not installed and its source was not found \
             ($TSLOAD_TIMESCALEDB_SOURCE is unset and {} does not exist).\n*** The tests named \
             `{TEST_FILTER}` are SKIPPED by name in this run. To run them: git clone --branch \
             {VERSION} https://github.com/timescale/timescaledb and set \
             TSLOAD_TIMESCALEDB_SOURCE to that directory (built with -DAPACHE_ONLY=ON).\n",
            default_source().display()
        );
        return Ok(false);
    };
    if !source.exists() {
        bail!(
            "TSLOAD_TIMESCALEDB_SOURCE={}: no such file or directory (a .tar.xz of TimescaleDB \
             {VERSION}'s source, or a checkout of its tag {VERSION})",
            source.display()
        );
    }
    let missing: Vec<&str> = BUILD_PACKAGES
        .iter()
        .filter(|(_, file)| !Path::new(file).exists())
        .map(|(pkg, _)| *pkg)
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "installing what building TimescaleDB needs: {}",
            missing.join(" ")
        );
        crate::apt_get(&["update", "-q"])?;
        let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
        args.extend(&missing);
        crate::apt_get(&args).context("installing TimescaleDB's build dependencies")?;
    }
    let tools = crate::workspace_root().join("target/tools");
    std::fs::create_dir_all(&tools).with_context(|| format!("creating {}", tools.display()))?;
    let tree = if source.is_dir() {
        source.clone()
    } else {
        let tree = tools.join(format!("timescaledb-{VERSION}"));
        if !tree.join("CMakeLists.txt").is_file() {
            let _ = std::fs::remove_dir_all(&tree);
            let (src, dir) = (source.display().to_string(), tools.display().to_string());
            crate::run("tar", &["-xJf", &src, "-C", &dir])
                .with_context(|| format!("unpacking {src}"))?;
            if !tree.join("CMakeLists.txt").is_file() {
                bail!(
                    "{src} did not unpack to {}: expected TimescaleDB {VERSION}'s source tree",
                    tree.display()
                );
            }
        }
        tree
    };
    build_and_install(&tree, &tools.join(format!("timescaledb-{VERSION}-build")))?;
    tsload_testbed::timescaledb_installed()
        .map_err(|e| anyhow::anyhow!("TimescaleDB was built from {} but: {e}", source.display()))?;
    Ok(true)
}

/// `cmake` (Apache-2.0 code only, no regression suites) and `make install`.
fn build_and_install(tree: &Path, build: &Path) -> anyhow::Result<()> {
    let (src, out) = (tree.display().to_string(), build.display().to_string());
    let pg_config = format!("-DPG_CONFIG={PG_CONFIG}");
    crate::run(
        "cmake",
        &[
            "-S",
            &src,
            "-B",
            &out,
            "-DAPACHE_ONLY=ON",
            "-DREGRESS_CHECKS=OFF",
            "-DTAP_CHECKS=OFF",
            "-DWARNINGS_AS_ERRORS=OFF",
            "-DCMAKE_BUILD_TYPE=Release",
            &pg_config,
        ],
    )
    .context("configuring TimescaleDB's build")?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    crate::run("make", &["-C", &out, "-j", &jobs.to_string()]).context("building TimescaleDB")?;
    crate::run("make", &["-C", &out, "install"])
        .context("installing TimescaleDB into PostgreSQL 15 (needs root)")
}

fn source() -> Option<PathBuf> {
    match std::env::var_os("TSLOAD_TIMESCALEDB_SOURCE") {
        Some(s) => Some(PathBuf::from(s)),
        None => Some(default_source()).filter(|p| p.is_file()),
    }
}

fn default_source() -> PathBuf {
    crate::workspace_root().join(format!(
        "../shared/vendor/timescaledb-{VERSION}-apache.tar.xz"
    ))
}
