//! The sink's unit tests: write URLs, bad URLs, and reading storage figures and QuestDB's
//! table, WAL and size answers.

#[test]
fn storage_figures_parse_from_the_servers_own_formats() {
    let metrics = "# HELP x\nvm_data_size_bytes{type=\"indexdb/file\"} 1000\n\
                   vm_data_size_bytes{type=\"storage/small\"} 2.5e3\n\
                   vm_data_size_bytes_total 7\nvm_rows{type=\"x\"} 9\n";
    assert_eq!(vm_data_size(metrics), Some(3_500));
    assert_eq!(vm_data_size("go_goroutines 5\n"), None);
    let vars = serde_json::json!({
        "shard:/a:1": {"name": "shard", "tags": {"database": "tsload"}, "values": {"diskBytes": 100}},
        "shard:/a:2": {"name": "shard", "tags": {"database": "tsload"}, "values": {"diskBytes": 23}},
        "shard:/b:3": {"name": "shard", "tags": {"database": "_internal"}, "values": {"diskBytes": 999}},
        "memstats": {"Alloc": 5},
        "httpd::8086": {"name": "httpd", "tags": {"bind": ":8086"}, "values": {"req": 3}},
    });
    assert_eq!(influxdb_disk_bytes(&vars, "tsload"), Some(123));
    // A database without shards yet holds nothing.
    assert_eq!(influxdb_disk_bytes(&vars, "other"), Some(0));
    // Not InfluxDB's statistics.
    let other = serde_json::json!({"memstats": {"Alloc": 5}});
    assert_eq!(influxdb_disk_bytes(&other, "tsload"), None);
}

#[test]
fn questdb_tables_wal_state_and_sizes_read_from_exec_answers() {
    let answer = serde_json::json!({
        "query": "select ...",
        "columns": [{"name": "name", "type": "STRING"}],
        "dataset": [
            ["cpu", false, 7, 9, ""],
            ["Mem", false, 3, 3, ""],
            ["other", true, 0, 5, "disk full"],
        ],
        "count": 3
    });
    assert_eq!(
        questdb_wal_pending(&answer, &["cpu", "Mem", "disk"]),
        Ok(vec!["cpu at transaction 7 of 9".to_string()])
    );
    let e = questdb_wal_pending(&answer, &["other"]).unwrap_err();
    assert!(e.contains("suspended") && e.contains("disk full"), "{e}");
    let e = questdb_wal_pending(&serde_json::json!({"error": "boom"}), &["cpu"]).unwrap_err();
    assert!(e.contains("boom"), "{e}");
    assert!(questdb_wal_pending(&serde_json::json!({"x": 1}), &["cpu"]).is_err());

    // tables(): WAL and non-WAL tables alike, the name column found by its name.
    let tables = |name_column: &str| {
        serde_json::json!({
            "columns": [{"name": "id", "type": "INT"}, {"name": name_column, "type": "STRING"},
                        {"name": "walEnabled", "type": "BOOLEAN"}],
            "dataset": [[1, "CPU", true], [2, "mem", false], [3, "other", true]],
            "count": 3
        })
    };
    for column in ["table_name", "name"] {
        assert_eq!(
            questdb_tables(&tables(column), &["cpu", "mem", "disk"]),
            Ok(vec!["CPU".to_string(), "mem".to_string()]),
            "{column}"
        );
    }
    assert!(questdb_tables(&tables("label"), &["cpu"]).is_err());
    assert!(questdb_tables(&serde_json::json!({"error": "boom"}), &["cpu"]).is_err());

    let sum = |cell: serde_json::Value| {
        questdb_single_long(&serde_json::json!({"dataset": [[cell]], "count": 1}))
    };
    assert_eq!(sum(serde_json::json!(123456)), Some(123_456));
    assert_eq!(sum(serde_json::Value::Null), Some(0));
    assert_eq!(sum(serde_json::json!("x")), None);
    assert_eq!(
        questdb_single_long(&serde_json::json!({"error": "table does not exist"})),
        None
    );
}

use super::*;

#[test]
fn v1_and_v2_write_urls() {
    let s = InfluxSink::new(InfluxConfig::v1("http://127.0.0.1:8086", "bench db")).unwrap();
    assert_eq!(
        s.write_url().as_str(),
        "http://127.0.0.1:8086/write?db=bench+db&precision=ns"
    );
    let cfg = InfluxConfig {
        api: Api::V2 {
            org: "o".into(),
            bucket: "b".into(),
            token: Some("secret-token".into()),
        },
        precision: Precision::Ms,
        ..InfluxConfig::v1("http://h:9/prefix/", "x")
    };
    let s = InfluxSink::new(cfg).unwrap();
    assert_eq!(
        s.write_url().as_str(),
        "http://h:9/prefix/api/v2/write?org=o&bucket=b&precision=ms"
    );
    assert_eq!(
        s.auth.as_ref().map(Secret::expose),
        Some("Token secret-token")
    );
    assert!(
        !format!("{s:?}").contains("secret-token"),
        "Debug hides the token"
    );
}

#[test]
fn bad_urls_are_clear_errors() {
    let e = InfluxSink::new(InfluxConfig::v1("127.0.0.1:8086", "d")).unwrap_err();
    assert!(
        e.message.contains("scheme") || e.message.contains("not a URL"),
        "{e}"
    );
    let e = InfluxSink::new(InfluxConfig::v1("ftp://x", "d")).unwrap_err();
    assert!(e.message.contains("allowed: http, https"), "{e}");
    assert!(InfluxSink::new(InfluxConfig::v1("https://x", "d")).is_ok());
    let e = InfluxSink::new(InfluxConfig::v1("http://u:pw@x", "d")).unwrap_err();
    assert!(
        e.message.contains("credentials") && !e.message.contains("pw"),
        "{e}"
    );
}
