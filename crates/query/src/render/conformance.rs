//! Checks of a [`Renderer`](super::Renderer) against TSBS's query types, for the tests of
//! each kind's renderer in its own crate: golden texts for one fixed spec of each type,
//! and every type either rendered (deterministically, naming the table, the hosts and the
//! metrics) or refused as [`QueryError::Unsupported`]. They panic with what differs.

use super::{Dialect, render};
use crate::QueryError;
use crate::spec::{QuerySpec, TimeWindow};
use crate::types::{QueryShape, QueryType};

const S: i64 = 1_000_000_000;
const H: i64 = 3600 * S;
/// 2016-01-01T05:17:23Z
const START: i64 = 1_451_606_400 * S + 5 * H + 17 * 60 * S + 23 * S;

/// The spec of `t` the goldens are written for: hosts 3 (one host) or 3, 1, 4, 0, 5, 9, 2,
/// 6 (eight), windows from 2016-01-01T05:17:23Z.
pub fn golden_spec(t: QueryType) -> QuerySpec {
    let hosts: &[u32] = match t.hosts() {
        0 => &[],
        1 => &[3],
        _ => &[3, 1, 4, 0, 5, 9, 2, 6],
    };
    QuerySpec {
        query_type: t,
        hosts: hosts.to_vec(),
        window: t.window_ns().map(|len| TimeWindow {
            start_ns: START,
            end_ns: START + len,
        }),
    }
}

/// Renders each named type's [`golden_spec`] in `dialect` and compares it with its golden
/// text; `params` says whether the language takes bind parameters.
pub fn check_goldens(dialect: &Dialect, goldens: &[(&str, &str)], params: bool) {
    for (name, golden) in goldens {
        let t: QueryType = name.parse().unwrap();
        let s = render(&golden_spec(t), dialect).unwrap();
        assert_eq!(&*s.text, *golden, "{dialect:?} {name}");
        assert_eq!(!s.params.is_empty(), params, "{dialect:?} {name}");
    }
}

/// Every type renders in `dialect`, the same text each time, naming `cpu`, each host and
/// the metrics it reads; or is refused as unsupported, naming the type and the dialect.
/// `supported` is how many types it renders (of 15).
pub fn check_every_type(dialect: &Dialect, supported: usize) {
    let mut rendered = 0;
    for t in QueryType::ALL {
        let spec = golden_spec(t);
        match render(&spec, dialect) {
            Ok(s) => {
                assert_eq!(s, render(&spec, dialect).unwrap());
                assert!(s.text.contains("cpu"), "{dialect:?} {t}: {}", s.text);
                for h in &spec.hosts {
                    assert!(s.text.contains(&format!("host_{h}")), "{dialect:?} {t}");
                }
                for m in t.metrics() {
                    let needed = t.shape() != QueryShape::HighCpu
                        && t.shape() != QueryShape::LastPointPerHost;
                    assert!(!needed || s.text.contains(m), "{dialect:?} {t}: {m}");
                }
                rendered += 1;
            }
            Err(e) => assert!(
                matches!(e, QueryError::Unsupported { query_type, dialect: name, .. }
                    if query_type == t && name == dialect.name()),
                "{dialect:?} {t}: {e}"
            ),
        }
    }
    assert_eq!(rendered, supported, "{dialect:?}");
    assert_eq!(dialect.supported_types().len(), supported, "{dialect:?}");
}
