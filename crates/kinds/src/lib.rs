//! The registry of target kinds: the one place that names every sink crate. Adding a kind
//! is its crate and a line in [`REGISTRY`]; the scenario library and the binary ask every
//! question through `tsload_target`'s traits.

use tsload_target::{NotBuilt, Registry, TargetKind};

/// Every kind defined in its own crate through `tsload_target::TargetKind`.
static KINDS: &[&dyn TargetKind] = &[
    &tsload_sink_sqlite::KIND,
    &tsload_sink_influx::KIND,
    &tsload_sink_postgres::KIND,
    &tsload_sink_mysql::KIND,
    #[cfg(feature = "tdengine")]
    &tsload_sink_tdengine::KIND,
    &tsload_sink_prometheus::KIND,
    &tsload_sink_clickhouse::KIND,
    &tsload_target::NullKind,
];

/// Kinds this build was made without: choosing one says so.
static NOT_BUILT: &[NotBuilt] = &[
    #[cfg(not(feature = "tdengine"))]
    NotBuilt {
        name: "tdengine",
        url_schemes: &["ws", "wss", "taos+ws", "taos+wss"],
        why: "it was built without the cargo feature `tdengine`; rebuild with default \
              features, e.g. `cargo install --path crates/cli`",
    },
];

/// The kinds of this build; a scenario that names none writes to the embedded default.
pub static REGISTRY: Registry = Registry {
    kinds: KINDS,
    not_built: NOT_BUILT,
    default_kind: "sqlite",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_urls_scheme_names_its_kind() {
        for (url, kind) in [
            ("http://127.0.0.1:8086", "influx"),
            ("HTTPS://h", "influx"),
            ("postgres://u@h/d", "postgres"),
            ("postgresql://u@h/d", "postgres"),
            ("mysql://u@h/d", "mysql"),
            ("mariadb://u@h/d", "mysql"),
            ("ws://root:taosdata@h:6041", "tdengine"),
            ("wss://h", "tdengine"),
            ("sqlite:./x.db", "sqlite"),
            ("null", "null"),
        ] {
            let want = (kind != "null").then(|| url.to_string());
            assert_eq!(REGISTRY.kind_of_url(url), Ok((kind, want)), "{url}");
        }
        assert!(REGISTRY.kind_of_url("h:1").is_err());
        // Each scheme listed once, with its kinds (it listed "http, https" three times).
        let e = REGISTRY.kind_of_url("ftp://h").unwrap_err();
        assert_eq!(e.matches("http (").count(), 1, "{e}");
        assert!(e.contains("http (influx, prometheus, clickhouse)"), "{e}");
        // KIND+URL picks a kind that shares its scheme with another; prometheus and
        // clickhouse could not be chosen at all.
        for (given, kind, url) in [
            (
                "prometheus+http://h:9090/api/v1/write",
                "prometheus",
                "http://h:9090/api/v1/write",
            ),
            ("clickhouse+https://h:8443", "clickhouse", "https://h:8443"),
            ("influx+http://h:8086", "influx", "http://h:8086"),
            // TDengine's own scheme is not a kind's prefix.
            ("taos+ws://h:6041", "tdengine", "taos+ws://h:6041"),
        ] {
            assert_eq!(
                REGISTRY.kind_of_url(given),
                Ok((kind, Some(url.to_string()))),
                "{given}"
            );
        }
        let e = REGISTRY.kind_of_url("postgres+http://h").unwrap_err();
        assert!(
            e.contains("takes URLs of postgres, postgresql, not http://"),
            "{e}"
        );
    }
}
