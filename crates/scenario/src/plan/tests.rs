//! The plan's unit tests: distinct output files, shown `--set`s and redacted secrets,
//! Influx URLs' defaults, and `--out` specs.

use super::*;

/// `--json x --out csv=x --hlog x` ran and kept one file of three: two outputs to one
/// file are refused, however the path is spelled.
#[test]
fn two_outputs_to_one_file_are_refused() {
    let mut o = crate::parse("s.toml", "", &[]).unwrap().output;
    o.json = Some("x".into());
    o.hlog = Some("y".into());
    o.out = vec!["csv=z".parse().unwrap(), "html=w".parse().unwrap()];
    assert_eq!(o.check_distinct_files(), Ok(()));
    o.out.push("ndjson=./y".parse().unwrap());
    let e = o.check_distinct_files().unwrap_err();
    assert!(e.contains("--hlog and --out ndjson= both write ./y"), "{e}");
    o.out.pop();
    let here = std::env::current_dir().unwrap().join("x");
    o.raw_latencies = Some(here);
    let e = o.check_distinct_files().unwrap_err();
    assert!(
        e.starts_with("--json and --debug-raw-latencies both write"),
        "{e}"
    );
}

#[test]
fn shown_sets_hide_secrets() {
    assert_eq!(shown_set("target.password=123"), "target.password=***");
    assert_eq!(shown_set("target.\"token\"=\"x\""), "target.\"token\"=***");
    assert_eq!(
        shown_set("target.url=\"mysql://root:pw@db/x\""),
        "target.url=\"mysql://root:***@db/x\""
    );
    assert_eq!(shown_set("load.workers=x"), "load.workers=x");
    assert_eq!(
        tsload_redact::text("a `postgres://u:p@h/d` and http://h:80/x"),
        "a `postgres://u:***@h/d` and http://h:80/x"
    );
}

#[test]
fn secrets_are_redacted() {
    let mut v = json!({"target": {"url": "postgres://bob:hunter2@127.0.0.1:5432/db", "password": "hunter2",
                        "token": "abc", "user": "bob"}});
    tsload_redact::json(&mut v);
    let s = v.to_string();
    assert!(!s.contains("hunter2") && !s.contains("abc"), "{s}");
    assert!(s.contains("postgres://bob:***@127.0.0.1:5432/db"), "{s}");
    assert!(s.contains("\"user\":\"bob\""), "{s}");
}

#[test]
fn influx_urls_default_to_write_and_hide_secrets() {
    let influx = |s: &str| match s.parse::<OutSpec>() {
        Ok(OutSpec::Influx(url)) => url,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(
        influx("influx=http://h:8086").expose(),
        "http://h:8086/write?db=tsload"
    );
    assert_eq!(
        influx("influx=https://h/api/v2/write?org=o&bucket=b").expose(),
        "https://h/api/v2/write?org=o&bucket=b"
    );
    assert!("influx=ftp://h".parse::<OutSpec>().is_err());
    let url = influx("influx=http://u:pw1@h:8086/write?db=x&u=me&p=pw2&token=t3");
    assert_eq!(
        url.expose(),
        "http://u:pw1@h:8086/write?db=x&u=me&p=pw2&token=t3"
    );
    let shown = format!("{url} {url:?} {}", serde_json::to_string(&url).unwrap());
    assert!(
        !shown.contains("pw1") && !shown.contains("pw2") && !shown.contains("t3"),
        "{shown}"
    );
    assert!(shown.contains("db=x") && shown.contains("u=me"), "{shown}");
}

#[test]
fn out_specs_parse_and_name_what_is_wrong() {
    assert_eq!("csv=a.csv".parse(), Ok(OutSpec::Csv("a.csv".into())));
    assert_eq!("ndjson=b".parse(), Ok(OutSpec::Ndjson("b".into())));
    assert_eq!("html=r.html".parse(), Ok(OutSpec::Html("r.html".into())));
    let e = "xml=a".parse::<OutSpec>().unwrap_err();
    assert!(e.contains("allowed: csv, ndjson, influx"), "{e}");
    let e = "csv".parse::<OutSpec>().unwrap_err();
    assert!(e.contains("csv=FILE") && e.contains("influx=URL"), "{e}");
}
