//! A new target kind is one crate and one registry line. The kind here (`echo`: one key,
//! rows counted by core's null sink, TSBS queries in a language of its own) is registered
//! beside `null` in a registry of this test's own and nothing else is changed: the
//! scenario library reads its section (and refuses a misspelt key by its own list), the
//! key reference shows its key, a run writes through it, and TSBS queries are rendered in
//! its language.

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use tsload_core::Param;
use tsload_core::engine::{EngineError, NoObserver, RunOutcome, StopHandle};
use tsload_core::query_engine::QueryOutcome;
use tsload_query::render::{Query, Renderer};
use tsload_query::{Dialect, QuerySpec, QueryType, TimeWindow};
use tsload_target::{
    KeyDoc, KeyError, Keys, NullKind, QueryRun, Registry, Section, Target, TargetKind, WriteRun,
};

/// The kind: its name, schemes, keys and a pure parse of its section.
struct EchoKind;

tsload_target::keys! {
    /// Its one key, written once: the type, the default and the meaning.
    struct EchoKeys {
        /// what the echo target says in its settings
        greeting: String = "hi".into();
    }
}

impl TargetKind for EchoKind {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn url_schemes(&self) -> &'static [&'static str] {
        &["echo"]
    }

    fn keys(&self) -> &'static [KeyDoc] {
        EchoKeys::docs()
    }

    fn parse(&self, section: &Section) -> Result<Box<dyn Target>, KeyError> {
        Ok(Box::new(EchoTarget {
            keys: EchoKeys::read(section)?,
        }))
    }
}

/// The parsed target.
#[derive(Debug, Clone, PartialEq)]
struct EchoTarget {
    keys: EchoKeys,
}

impl Target for EchoTarget {
    fn kind(&self) -> &'static str {
        "echo"
    }

    fn settings(&self) -> serde_json::Value {
        tsload_target::settings_of(&EchoKind, &self.keys, None)
    }

    fn write<'a>(
        &'a self,
        run: WriteRun<'a>,
    ) -> LocalBoxFuture<'a, Result<RunOutcome, EngineError>> {
        Box::pin(run.into_engine(tsload_core::NullSink))
    }

    fn reads(&self) -> Option<&dyn tsload_target::Reads> {
        Some(self)
    }
}

impl tsload_target::Reads for EchoTarget {
    fn tsbs_dialect(&self, _language: Option<&str>, _time_bucket: bool) -> Result<Dialect, String> {
        Ok(Dialect::new(EchoQueries))
    }

    fn query<'a>(
        &'a self,
        _run: QueryRun<'a>,
    ) -> LocalBoxFuture<'a, Result<QueryOutcome, EngineError>> {
        Box::pin(async {
            Err(EngineError::Prepare(tsload_core::SinkError::new(
                tsload_core::ErrorKind::Schema,
                "echo answers no queries",
            )))
        })
    }
}

/// Its query language: every type, as `ECHO <shape> <hosts>`.
#[derive(Debug)]
struct EchoQueries;

impl Renderer for EchoQueries {
    fn name(&self) -> &'static str {
        "Echo"
    }

    fn render(&self, q: &Query<'_>, text: &mut String, _params: &mut Vec<Param>) {
        text.push_str(&format!("ECHO cpu {:?} {:?}", q.shape, q.hosts));
    }
}

/// The one registry line.
static KINDS: &[&dyn TargetKind] = &[&EchoKind, &NullKind];

static REGISTRY: Registry = Registry {
    kinds: KINDS,
    not_built: &[],
    default_kind: "echo",
};

#[test]
fn a_kind_defined_outside_the_library_is_read_documented_run_and_queried() {
    tsload_scenario::install_kinds(&REGISTRY);

    // Read: its key, its default, and a misspelt key refused by its own list.
    let text = "[target]\nkind = \"echo\"\ngreeting = \"hello\"\n[load]\nrows = 5000\n";
    let plan = tsload_scenario::parse("s.toml", text, &[]).unwrap();
    assert_eq!(plan.target.settings()["greeting"], "hello");
    let default = tsload_scenario::parse("s.toml", "", &[]).unwrap();
    assert_eq!(default.target.settings()["greeting"], "hi");
    let e = tsload_scenario::parse("s.toml", "[target]\ngreting = \"x\"\n", &[]).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(2), Some("target.greting")),
        "{e}"
    );
    assert!(e.message.contains("greeting"), "{e}");

    // Documented: the key reference lists it for its kind.
    let reference = tsload_scenario::section_reference("target").unwrap();
    assert!(reference.contains("`greeting`"), "{reference}");
    assert!(reference.contains("`echo`"), "{reference}");

    // Run: the write load goes through it.
    let workload = tsload_scenario::workloads::build(&plan).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut observer = NoObserver;
    let outcome = runtime
        .block_on(plan.target.write(WriteRun {
            workload: Arc::clone(&workload),
            load: plan.load.clone(),
            stop: StopHandle::new(),
            observer: &mut observer,
            run_id: 1,
        }))
        .unwrap();
    assert_eq!(outcome.counters.rows, 5000);

    // Queried: TSBS's queries in its own language.
    let dialect = plan
        .target
        .reads_or_why()
        .unwrap()
        .tsbs_dialect(None, false)
        .unwrap();
    let spec = QuerySpec {
        query_type: QueryType::SingleGroupby_1_1_1,
        hosts: vec![3],
        window: Some(TimeWindow {
            start_ns: 0,
            end_ns: 3_600_000_000_000,
        }),
    };
    let statement = tsload_query::render(&spec, &dialect).unwrap();
    assert!(statement.text.starts_with("ECHO cpu"), "{}", statement.text);
    assert_eq!(dialect.supported_types().len(), 15);
}
