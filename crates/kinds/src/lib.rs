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
