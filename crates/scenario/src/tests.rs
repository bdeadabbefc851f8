//! The scenario parser's unit tests: errors, overrides, defaults, the key reference.

use tsload_core::engine::LoadMode;
use tsload_workload::TsbsConfig;

use super::*;
use crate::plan::WorkloadPlan;
use crate::sections::SWEEP_SHORT_KEYS;

mod reference;

fn err(text: &str) -> ScenarioError {
    parse("s.toml", text, &[]).unwrap_err()
}

#[test]
fn set_errors_never_show_a_secret() {
    let base = "[target]\nkind = \"mysql\"\nurl = \"mysql://root@db/x\"\n";
    // A password of the wrong type: the value is not repeated.
    let e = parse("s.toml", base, &["target.password=123456".into()]).unwrap_err();
    let shown = e.to_string();
    assert!(!shown.contains("123456"), "{shown}");
    assert!(shown.contains("target.password=***"), "{shown}");
    // A URL's password in a --set quoted by another key's error.
    let e = parse(
        "s.toml",
        base,
        &[
            "target.url=\"mysql://root:hunter2@db/x\"".into(),
            "target.nope=1".into(),
        ],
    )
    .unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = parse(
        "s.toml",
        base,
        &[
            "target.url=mysql://root:hunter2@db/x".into(),
            "target.timeout=-5".into(),
        ],
    );
    if let Err(e) = e {
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
    // In the file: the line of a secret key is not quoted.
    let e = err("[target]\nkind = \"mysql\"\npassword = 123456\n");
    assert!(!e.to_string().contains("123456"), "{e}");
}

#[test]
fn a_file_error_is_not_blamed_on_a_set_of_another_section() {
    // `[query] duration` is wrong in the file; `--set load.duration` is fine.
    let text = "mode = \"query\"\n[target]\nkind = \"sqlite\"\n[query]\nkind = \"oltp_point_select\"\nduration = 30\n";
    let e = parse("s.toml", text, &["load.duration=\"10s\"".into()]).unwrap_err();
    assert_eq!(e.file, "s.toml", "{e}");
    assert!(!e.to_string().contains("--set"), "{e}");
}

#[test]
fn quickstart_parses() {
    let plan = load(None, &[]).unwrap();
    assert!(matches!(
        plan.workload,
        WorkloadPlan::CpuOnly(TsbsConfig { scale: 100, .. })
    ));
    assert_eq!(plan.target.kind(), "sqlite");
}

#[test]
fn unknown_key_names_file_line_and_allowed_keys() {
    let e = err("[load]\nworkers = 2\nwrokers = 3\n");
    assert_eq!(e.file, "s.toml");
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("unknown field `wrokers`"), "{e}");
    assert!(e.message.contains("workers"), "{e}");
}

#[test]
fn wrong_type_names_the_value_and_expected_type() {
    let e = err("[load]\n\nworkers = \"four\"\n");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(
        e.message.contains("\"four\"") && e.message.contains("expected an integer"),
        "{e}"
    );
}

#[test]
fn out_of_range_names_key_value_and_range() {
    let e = err("[load]\nworkers = 0\n");
    assert_eq!(e.line, Some(2));
    assert_eq!(e.key.as_deref(), Some("load.workers"));
    assert!(
        e.message
            .contains("value 0 is out of range; allowed: 1 to 100000"),
        "{e}"
    );
    let shown = e.to_string();
    assert!(
        shown.starts_with("s.toml:2: key `load.workers`:"),
        "{shown}"
    );
}

#[test]
fn bad_choice_lists_allowed_values() {
    let e = err("[workload]\nkind = \"cpu\"\n");
    assert!(
        e.message.contains("cpu-only, devops, iot, custom, file"),
        "{e}"
    );
    let e = err("[target]\nkind = \"oracle\"\n");
    // A build without TDengine still names it (choosing it says why it is missing).
    assert!(
        e.message
            .contains("allowed: sqlite, influx, postgres, mysql, ")
            && e.message.contains("tdengine")
            && e.message.contains("null"),
        "{e}"
    );
}

#[test]
fn key_of_another_workload_kind_is_an_error() {
    let e = err("[workload]\nkind = \"cpu-only\"\nchildtable_count = 5\n");
    assert_eq!(e.line, Some(3));
    assert!(
        e.message
            .contains("not a setting of workload kind \"cpu-only\""),
        "{e}"
    );
}

#[test]
fn bad_duration_and_time() {
    let e = err("[workload]\ninterval = \"10 parsecs\"\n");
    assert!(e.message.contains("is not a duration"), "{e}");
    let e = err("[workload]\nstart = \"yesterday\"\n");
    assert!(e.message.contains("RFC 3339"), "{e}");
}

#[test]
fn durations_that_a_clock_cannot_hold_are_refused_naming_the_key() {
    // Each would overflow an Instant (or SQLite's 32-bit milliseconds) mid-run.
    for (text, key) in [
        ("[load]\nduration = \"300000000000y\"\n", "load.duration"),
        (
            "[load]\nreport_interval = \"101y\"\n",
            "load.report_interval",
        ),
        (
            "[target]\nkind = \"sqlite\"\nbusy_timeout = \"30days\"\n",
            "target.busy_timeout",
        ),
    ] {
        let e = err(text);
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert!(
            e.message.contains("too long") || e.message.contains("100 years"),
            "{e}"
        );
    }
    assert!(parse_duration("100y").is_ok());
    assert!(parse_duration("101y").is_err());
    let e = err("[workload]\nstart = \"2262-04-11T00:00:00Z\"\n");
    assert_eq!(e.key.as_deref(), Some("workload.start"), "{e}");
    assert!(e.message.contains("set workload.end"), "{e}");
}

#[test]
fn set_takes_bare_words_and_dates_as_strings() {
    let p = parse(
        "s.toml",
        "",
        &[
            "target.kind=null".into(),
            "workload.start=2016-01-02T00:00:00Z".into(),
            "workload.end=2016-01-02T01:00:00Z".into(),
        ],
    )
    .unwrap();
    assert_eq!(p.target.kind(), "null");
    let WorkloadPlan::CpuOnly(c) = &p.workload else {
        panic!("{:?}", p.workload)
    };
    assert_eq!(c.end_ns - c.start_ns, 3_600_000_000_000);
}

#[test]
fn set_errors_quote_the_set_say_integer_and_suggest_the_key() {
    let set = |s: &str| parse("s.toml", "[load]\nworkers = 2\n", &[s.into()]).unwrap_err();
    let e = set("load.workers=abc");
    assert_eq!((e.file.as_str(), e.line), ("--set", None), "{e}");
    assert_eq!(e.key.as_deref(), Some("load.workers"));
    assert!(e.message.contains("expected an integer"), "{e}");
    assert!(e.message.ends_with("(in `--set load.workers=abc`)"), "{e}");
    let e = set("load.wrokers=3");
    assert_eq!(e.file, "--set", "{e}");
    assert!(e.message.contains("did you mean `workers`?"), "{e}");
    let e = set("load.workers=0");
    assert_eq!(
        e.to_string(),
        "--set: key `load.workers`: value 0 is out of range; allowed: 1 to 100000 (in `--set load.workers=0`)"
    );
    // In a file: the line, and the same help.
    let e = err("[load]\nwrokers = 3\n");
    assert_eq!((e.file.as_str(), e.line), ("s.toml", Some(2)));
    assert!(e.message.contains("did you mean `workers`?"), "{e}");
    let e = err("[load]\nbogus_thing = 3\n");
    assert!(!e.message.contains("did you mean"), "no near key: {e}");
    let e = err("[workload]\nstart = 2016-01-01T00:00:00Z\n");
    assert!(
        e.message.contains("must be written as a string, in quotes"),
        "{e}"
    );
}

#[test]
fn mode_write_sets_the_query_section_aside() {
    let text = "mode = \"query\"\n[target]\nkind = \"postgres\"\n[query]\nkind = \"tsbs\"\n";
    let p = parse("s.toml", text, &["mode=write".into()]).unwrap();
    assert_eq!(p.mode, RunMode::Write);
    assert!(p.query.is_none());
    assert!(parse("s.toml", text, &[]).unwrap().query.is_some());
}

#[test]
fn overrides_apply_and_are_validated() {
    let p = parse(
        "s.toml",
        "[load]\nworkers = 2\n",
        &["load.workers=8".into(), "load.batch=50".into()],
    )
    .unwrap();
    assert_eq!(p.load.workers, 8);
    assert_eq!(p.load.batch, 50);
    let e = parse(
        "s.toml",
        "[load]\nworkers = 2\n",
        &["load.workers=0".into()],
    )
    .unwrap_err();
    assert!(e.message.contains("--set"), "{e}");
    let e = parse("s.toml", "", &["workload.kind=bogus".into()]).unwrap_err();
    assert!(e.message.contains("allowed"), "{e}");
}

#[test]
fn an_open_loop_offering_less_than_a_request_per_worker_in_the_run_is_refused() {
    // 1,000 rows per request at 100 rows/s is one request every 10 s, in a run of 3 s.
    let e = parse(
        "s.toml",
        "[load]\nrate = 100\n",
        &["load.duration=\"3s\"".into()],
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("load.rate"));
    assert!(
        e.message
            .contains("every 10.000 s, longer than load.duration (3.000 s)")
            && e.message.contains("at least 333.333 rows/s"),
        "{e}"
    );
    // Workers share the rate: 4 workers of 1,000 rows at 2,000 rows/s send every 2 s.
    let e = parse(
        "s.toml",
        "[load]\nrate = 2000\nworkers = 4\nduration = \"1s\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    // Queries: 0.01 requests/s for 3 s (it stopped at 0.016 s claiming 629,432%).
    let e = parse(
        "s.toml",
        "[query]\nkind = \"tsbs\"\nrate = 0.01\nduration = \"3s\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("query.rate"), "{e}");
    assert!(
        e.message
            .contains("query.workers = 1 is one request per worker every 100.000 s"),
        "{e}"
    );
    // The boundary: one request per worker in the run is allowed; so is a closed loop
    // or an open loop without a duration.
    for ok in [
        "[load]\nrate = 1000\nduration = \"1s\"\n",
        "[load]\nduration = \"1ms\"\n",
        "[load]\nrate = 0.5\n",
    ] {
        parse("s.toml", ok, &[]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[test]
fn bad_threshold_is_reported_at_its_line() {
    let e = err("[output]\nfail_if = [\"p99<20\"]\n");
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("not a duration"), "{e}");
}

#[test]
fn custom_column_errors() {
    let e = err(
        "[workload]\nkind = \"custom\"\ncolumns = [{ type = \"float\", count = 2, min = 5, max = 1 }]\n",
    );
    assert!(e.message.contains("greater than max"), "{e}");
    let e = err("[workload]\nkind = \"custom\"\ncolumns = [{ type = \"blob\" }]\n");
    assert!(e.message.contains("not a column type"), "{e}");
}

#[test]
fn a_kind_override_sets_aside_the_files_settings_of_the_old_kind() {
    let file = "[target]\nkind = \"sqlite\"\nurl = \"sqlite:x.db\"\ndrop_existing = true\n";
    let p = parse("s.toml", file, &["target.kind=\"null\"".into()]).unwrap();
    assert_eq!(p.target.kind(), "null");
    let e = parse(
        "s.toml",
        file,
        &[
            "target.kind=\"null\"".into(),
            "target.url=\"sqlite:y.db\"".into(),
        ],
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target.url"));
    // A key both kinds read keeps the file's value, and an error in it says where the
    // value came from.
    let e = parse("s.toml", file, &["target.kind=\"influx\"".into()]).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(3), Some("target.url")),
        "{e}"
    );
    assert!(
        e.message
            .contains("give target kind \"influx\" its own with --set target.url="),
        "{e}"
    );
    let e = parse(
        "s.toml",
        "[target]\nkind = \"null\"\ndrop_existing = true\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target.drop_existing"));
}

#[test]
fn quoted_parts_of_a_set_key_keep_their_dots() {
    assert_eq!(
        key_path("sweep.\"query.workers\"").unwrap(),
        ["sweep", "query.workers"]
    );
    assert_eq!(key_path("load.workers").unwrap(), ["load", "workers"]);
    assert!(key_path("sweep.\"query.workers").is_err());
    let p = parse(
        "s.toml",
        "[sweep]\nworkers = [1]\n",
        &["sweep.\"query.workers\"=[2, 4]".into()],
    )
    .unwrap();
    assert_eq!(p.sweep[1].full_key, "query.workers");
    assert_eq!(p.sweep[1].values.len(), 2);
}

#[test]
fn a_target_kind_override_sets_aside_the_files_query_dialect() {
    let file = "[workload]\nkind = \"cpu-only\"\n[target]\nkind = \"influx\"\n\
                [query]\nkind = \"tsbs\"\ndialect = \"promql\"\n";
    let p = parse("s.toml", file, &[]).unwrap();
    let dialect = |p: &Plan| match &p.query.as_ref().unwrap().workload {
        QueryWorkloadPlan::Tsbs { dialect, .. } => dialect.clone(),
        QueryWorkloadPlan::Oltp { .. } => panic!("tsbs"),
    };
    assert_eq!(dialect(&p).as_deref(), Some("promql"));
    let to_pg = [
        "target.kind=\"postgres\"".to_string(),
        "target.url=\"postgres://u@h/db\"".to_string(),
    ];
    let p = parse("s.toml", file, &to_pg).unwrap();
    assert_eq!(dialect(&p), None);
    // Given on the command line too, it is still an error for SQL targets.
    let mut sets = to_pg.to_vec();
    sets.push("query.dialect=\"promql\"".into());
    let e = parse("s.toml", file, &sets).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("query.dialect"));
}

#[test]
fn a_password_goes_into_the_url_percent_encoded() {
    let file = "[target]\nkind = \"postgres\"\nurl = \"postgres://bob@h:5432/db\"\npassword = \"p@ss w/rd\"\n";
    let p = parse("s.toml", file, &[]).unwrap();
    // Shown masked; the driver's URL (its probe's) holds it percent-encoded.
    assert_eq!(p.target.url(), Some("postgres://bob:***@h:5432/db"));
    let tsload_target::AppProbe::Sql { url } = p.target.app_probe() else {
        panic!("a SQL probe")
    };
    assert_eq!(url.expose(), "postgres://bob:p%40ss%20w%2Frd@h:5432/db");
    assert!(
        !p.to_json().to_string().contains("p%40ss"),
        "redacted in the plan"
    );
    let twice = "[target]\nkind = \"mysql\"\nurl = \"mysql://bob:x@h/db\"\npassword = \"y\"\n";
    let e = parse("s.toml", twice, &[]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target.password"));
    let e = parse(
        "s.toml",
        "[target]\nkind = \"postgres\"\nurl = \"mysql://h/db\"\n",
        &[],
    )
    .unwrap_err();
    assert!(e.message.contains("postgres://"), "{e}");
    let e = parse(
        "s.toml",
        "[target]\nkind = \"postgres\"\njournal_mode = \"wal\"\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("not a setting of target kind \"postgres\""),
        "{e}"
    );
}

/// What `run` would refuse once the writes are over, validation refuses first: a mixed
/// run whose queries start after its writes end (configs/mixed-influx.toml with a short
/// duration).
#[test]
fn mixed_queries_that_would_start_after_the_writes_end_are_refused() {
    let text = include_str!("../../../configs/mixed-influx.toml");
    let e = parse("mixed-influx.toml", text, &["load.duration=\"8s\"".into()]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("query.start_after"), "{e}");
    assert!(
        e.message.contains("10s") && e.message.contains("8s") && e.message.contains("never run"),
        "{e}"
    );
    assert!(parse("mixed-influx.toml", text, &["load.duration=\"12s\"".into()]).is_ok());
}

/// An unset environment variable read by a secret is named the same way from the file
/// and from `--set` (it was "not shown: a secret" from a file, which hid the cause).
#[test]
fn an_unset_environment_variable_is_named_wherever_the_secret_was_given() {
    let var = "TSLOAD_TEST_SURELY_UNSET_PASSWORD";
    let file = format!(
        "[target]\nkind = \"influx\"\nurl = \"http://127.0.0.1:8086\"\npassword = \"${var}\"\n"
    );
    let e = parse("s.toml", &file, &[]).unwrap_err();
    assert!(
        e.message
            .contains(&format!("environment variable {var} is not set")),
        "{e}"
    );
    assert_eq!(e.line, Some(4), "{e}");
    let e = parse(
        "s.toml",
        "[target]\nkind = \"influx\"\nurl = \"http://127.0.0.1:8086\"\n",
        &[format!("target.password=\"${var}\"")],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains(&format!("environment variable {var} is not set")),
        "{e}"
    );
}

/// A TOML error never quotes a source line: a secret can sit on any line in forms no key
/// check recognises (a multi-line string, an escaped key, a later line of a sweep's array).
#[test]
fn a_toml_error_quotes_no_line_a_secret_could_be_on() {
    let cases = [
        // A multi-line password, then an error on its second line.
        "[target]\nkind = \"mysql\"\npassword = \"\"\"\nKNRYml1\nKNRYml2\n\"\"\" x\n",
        // An escaped key that decodes to `password`, of the wrong type.
        "[target]\nkind = \"mysql\"\n\"pass\\u0077ord\" = [\"KNRYesc\"]\n",
        // A sweep's array of passwords, broken on a later line.
        "[target]\nkind = \"mysql\"\n[sweep]\n\"target.password\" = [\n  \"KNRYsw1\",\n  \"KNRYsw2\" \"KNRYsw3\",\n]\n",
        // A later line of a multi-line string that is not valid.
        "[target]\nkind = \"mysql\"\npassword = \"\"\"KNRYa\nKNRYb\\q\n\"\"\"\n",
    ];
    for text in cases {
        let e = parse("s.toml", text, &[]).unwrap_err();
        let shown = e.to_string();
        assert!(!shown.contains("KNRY"), "{text:?}\n→ {shown}");
        assert_eq!(e.file, "s.toml", "{shown}");
        assert!(e.line.is_some(), "{shown}");
    }
    // The escaped key is named decoded, as the secret it is.
    let e = parse("s.toml", cases[1], &[]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("target.password"), "{e}");
    assert!(e.message.contains("not shown: a secret"), "{e}");
}

/// An error is the file's when the file's line is wrong, even where a `--set` names the
/// same key (a syntax error: the overrides were never applied); and the `--set`'s when
/// its value is the wrong one.
#[test]
fn an_error_names_the_input_that_is_wrong() {
    let broken = "[load]\nworkers = \"3\n";
    let e = parse("w.toml", broken, &["load.workers=2".into()]).unwrap_err();
    assert_eq!(e.file, "w.toml", "{e}");
    assert_eq!(e.line, Some(2), "{e}");
    assert!(!e.to_string().contains("--set"), "{e}");
    // The file's wrong value under a key a --set of another section names.
    let e = parse(
        "w.toml",
        "[load]\nworkers = \"x\"\n",
        &["query.workers=2".into()],
    )
    .unwrap_err();
    assert_eq!(e.file, "w.toml", "{e}");
    assert_eq!(e.key.as_deref(), Some("load.workers"), "{e}");
    // The --set's own wrong value.
    let e = parse(
        "w.toml",
        "[load]\nworkers = 3\n",
        &["load.workers=\"x\"".into()],
    )
    .unwrap_err();
    assert_eq!(e.file, "--set", "{e}");
}

/// `workload.time = "live"`: the span starts now (less one batch's period), the load is
/// open loop at the fleet's rate, a batch holds at most one reading per device, and
/// what contradicts it is refused by key.
#[test]
fn live_time_stamps_rows_with_the_clock_at_the_fleets_rate() {
    let base = "[workload]\nkind = \"cpu-only\"\nscale = 100\ninterval = \"10s\"\ntime = \"live\"\n\
                [load]\nworkers = 2\nduration = \"1m\"\n";
    let now_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64
    };
    let before = now_ns();
    let plan = parse("s.toml", base, &[]).unwrap();
    let after = now_ns();
    assert_eq!(plan.time, crate::plan::TimeMode::Live);
    assert_eq!(plan.load.mode, LoadMode::Open { rate: 10.0 });
    // 50 hosts per worker, one reading each: a batch per interval, due as it ends.
    assert_eq!(plan.load.batch, 50);
    // A reading is a row per table: devops's 9, iot's 2 less its missing rows (live
    // devops ran at a ninth of its fleet's rate, and fell behind the clock, when its
    // rate counted hosts).
    for (kind, rate, batch) in [("devops", 90.0, 450), ("iot", 18.2, 91)] {
        let text = base.replace("cpu-only", kind);
        let plan = parse("s.toml", &text, &[]).unwrap();
        let LoadMode::Open { rate: got } = plan.load.mode else {
            panic!("{kind}: {:?}", plan.load.mode)
        };
        assert!((got - rate).abs() < 1e-9, "{kind}: {got}");
        assert_eq!(plan.load.batch, batch, "{kind}");
    }
    let WorkloadPlan::CpuOnly(t) = &plan.workload else {
        panic!("{:?}", plan.workload)
    };
    let period = 10_000_000_000;
    assert!(t.start_ns >= before - period - 1_000_000 && t.start_ns <= after - period);
    assert_eq!(
        t.end_ns - t.start_ns,
        60_000_000_000 + period + t.interval_ns
    );
    // The plan says which time ran; two live plans read at different moments are one
    // scenario (shards of one live run agree).
    assert_eq!(plan.to_json()["workload"]["time"], "live");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let again = parse("s.toml", base, &[]).unwrap();
    assert_eq!(plan.scenario_sha256(), again.scenario_sha256());
    // load.rate sets the interval instead; both, disagreeing, are refused.
    let rated = parse(
        "s.toml",
        &base.replace("interval = \"10s\"\n", ""),
        &["load.rate=50".into()],
    )
    .unwrap();
    let WorkloadPlan::CpuOnly(t) = &rated.workload else {
        panic!()
    };
    assert_eq!(t.interval_ns, 2_000_000_000);
    let e = parse("s.toml", base, &["load.rate=50".into()]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("load.rate"), "{e}");
    assert!(
        e.to_string()
            .contains("100 devices every 10s send 10.000 rows/s"),
        "{e}"
    );
    // iot leaves rows out: its fleet sends fewer (of its two tables' rows).
    let iot = parse(
        "s.toml",
        &base.replace("cpu-only", "iot"),
        &["workload.missing_row_ratio=0.5".into()],
    )
    .unwrap();
    assert_eq!(iot.load.mode, LoadMode::Open { rate: 10.0 });
    // A span in the file contradicts it; a --set over a file's span replaces the span.
    let e = err(&base.replace("time = \"live\"", "time = \"live\"\nstart = \"now-1h\""));
    assert_eq!(e.key.as_deref(), Some("workload.start"), "{e}");
    let quick = load(
        None,
        &[
            "workload.time=\"live\"".into(),
            "load.duration=\"10s\"".into(),
        ],
    )
    .unwrap();
    assert_eq!(quick.time, crate::plan::TimeMode::Live);
    assert!(quick.load.batch <= 50, "{}", quick.load.batch);
    let e = load(
        None,
        &[
            "workload.time=\"live\"".into(),
            "workload.end=\"now\"".into(),
        ],
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("workload.end"), "{e}");
    // No end: refused, naming what ends a live run.
    let e = err(&base.replace("duration = \"1m\"\n", ""));
    assert_eq!(e.key.as_deref(), Some("workload.time"), "{e}");
    assert!(e.to_string().contains("load.duration"), "{e}");
    // Only the TSBS kinds have it.
    let e = err("[workload]\nkind = \"custom\"\ntime = \"live\"\n");
    assert_eq!(e.key.as_deref(), Some("workload.time"), "{e}");
}

/// `workload.churn_ratio` per `workload.churn_interval`: the lifetime of a host, in the
/// plan; a ratio out of range or on a kind without churn is refused.
#[test]
fn churn_keys_give_each_host_a_lifetime() {
    let plan = parse(
        "s.toml",
        "[workload]\nkind = \"devops\"\nchurn_ratio = 0.25\nchurn_interval = \"1m\"\n",
        &[],
    )
    .unwrap();
    let WorkloadPlan::Devops(t) = &plan.workload else {
        panic!("{:?}", plan.workload)
    };
    assert_eq!(t.churn.unwrap().lifetime_ns, 240_000_000_000);
    assert_eq!(plan.to_json()["workload"]["churn_lifetime"], "4m");
    let plain = parse("s.toml", "[workload]\nchurn_ratio = 0\n", &[]).unwrap();
    let WorkloadPlan::CpuOnly(t) = &plain.workload else {
        panic!()
    };
    assert_eq!(t.churn, None);
    let e = err("[workload]\nchurn_interval = \"0s\"\n");
    assert_eq!(e.key.as_deref(), Some("workload.churn_interval"), "{e}");
    let e = err("[workload]\nchurn_ratio = 1.5\n");
    assert_eq!(e.key.as_deref(), Some("workload.churn_ratio"), "{e}");
    // iot and the custom schema churn too; a replayed file has no devices to replace.
    let iot = parse(
        "s.toml",
        "[workload]\nkind = \"iot\"\nchurn_ratio = 0.1\n",
        &[],
    )
    .unwrap();
    let WorkloadPlan::Iot(t, _) = &iot.workload else {
        panic!()
    };
    assert!(t.churn.is_some());
    let custom = parse(
        "s.toml",
        "[workload]\nkind = \"custom\"\nchurn_ratio = 0.1\n",
        &[],
    )
    .unwrap();
    let WorkloadPlan::Custom { cfg, .. } = &custom.workload else {
        panic!()
    };
    assert!(cfg.churn.is_some());
    let e = err("[workload]\nkind = \"file\"\npath = \"x\"\nchurn_ratio = 0.1\n");
    assert_eq!(e.key.as_deref(), Some("workload.churn_ratio"), "{e}");
}

/// A plan read once serves a sweep's points and `--repeat`'s runs: each run's live span
/// starts at its own clock (the same span twice would send every row again); a history
/// plan stays as it is.
#[test]
fn each_run_of_a_live_plan_starts_at_its_own_clock() {
    let text = "[workload]\nscale = 10\ntime = \"live\"\n[load]\nduration = \"1m\"\n";
    let plan = parse("s.toml", text, &[]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(30));
    let later = plan.at_now();
    let (WorkloadPlan::CpuOnly(a), WorkloadPlan::CpuOnly(b)) = (&plan.workload, &later.workload)
    else {
        panic!()
    };
    assert!(b.start_ns - a.start_ns >= 29_000_000, "{a:?} {b:?}");
    assert_eq!(b.end_ns - b.start_ns, a.end_ns - a.start_ns);
    let history = parse("s.toml", "[workload]\nscale = 10\n", &[]).unwrap();
    assert_eq!(history.at_now().workload, history.workload);
}

/// Each kind reached over TCP names the host and port it connects to, its own default
/// port where the URL names none; an embedded target and a Unix socket name none.
#[test]
fn each_kind_names_the_host_and_port_it_connects_to() {
    let address = |kind: &str, url: &str| {
        let p = parse(
            "s.toml",
            &format!("[target]\nkind = \"{kind}\"\nurl = \"{url}\"\n"),
            &[],
        )
        .unwrap_or_else(|e| panic!("{kind} {url}: {e}"));
        p.target.address().map(|a| format!("{}:{}", a.host, a.port))
    };
    let cases = [
        ("influx", "http://10.0.0.1", Some("10.0.0.1:80")),
        ("influx", "https://db.example:8086", Some("db.example:8086")),
        (
            "prometheus",
            "http://[::1]:9090/api/v1/write",
            Some("::1:9090"),
        ),
        ("clickhouse", "https://ch.example", Some("ch.example:443")),
        ("mysql", "mysql://u@10.0.0.2/db", Some("10.0.0.2:3306")),
        (
            "postgres",
            "postgres://u@10.0.0.3/db",
            Some("10.0.0.3:5432"),
        ),
        (
            "postgres",
            "postgres://u@localhost:6543/db?host=pg.example",
            Some("pg.example:6543"),
        ),
        (
            "postgres",
            "postgres://u@x/db?host=/var/run/postgresql",
            None,
        ),
        ("tdengine", "taos+ws://10.0.0.4", Some("10.0.0.4:6041")),
        ("tdengine", "ws://10.0.0.4", Some("10.0.0.4:80")),
    ];
    for (kind, url, want) in cases {
        assert_eq!(address(kind, url).as_deref(), want, "{kind} {url}");
    }
    let sqlite = parse("s.toml", "", &[]).unwrap();
    assert_eq!(sqlite.target.address(), None);
}
