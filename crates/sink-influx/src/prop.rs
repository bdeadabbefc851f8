//! Property tests of the answer readers: whatever a server answers (any bytes in a body,
//! any header value), the readers of its answers return a value or an error, never panic.

use proptest::prelude::*;
use proptest::test_runner::Config;

/// JSON-like text made of the tokens the servers' answers use, so that the readers
/// get past their first check often.
fn jsonish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\"results\"".to_string()),
        Just("\"series\"".to_string()),
        Just("\"values\"".to_string()),
        Just("\"columns\"".to_string()),
        Just("\"dataset\"".to_string()),
        Just("\"data\"".to_string()),
        Just("\"result\"".to_string()),
        Just("\"count\"".to_string()),
        Just("\"error\"".to_string()),
        Just("\"shard\"".to_string()),
        Just("\"tags\"".to_string()),
        Just("\"database\"".to_string()),
        Just("\"diskBytes\"".to_string()),
        Just("\"name\"".to_string()),
        Just("null".to_string()),
        Just("-1".to_string()),
        Just("1e400".to_string()),
        Just("18446744073709551616".to_string()),
        "\"[a-z]{0,6}\"",
        "-?[0-9]{1,20}",
    ];
    proptest::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

fn config() -> Config {
    Config {
        cases: 2000,
        ..Config::default()
    }
}

fn read_all(body: &[u8]) {
    for api in [
        tsload_http::QueryApi::InfluxQl,
        tsload_http::QueryApi::PromQl,
        tsload_http::QueryApi::QuestDb,
    ] {
        let _ = tsload_http::query::count_rows(api, body);
    }
    let text = String::from_utf8_lossy(body);
    let _ = super::vm_data_size(&text);
    let _ = tsload_http::classify::partial_write_dropped(&text);
    let _ = tsload_http::classify::parse_retry_after(&text);
    for status in [200u16, 302, 400, 404, 429, 500, 503] {
        let status = reqwest::StatusCode::from_u16(status).unwrap();
        let _ = tsload_http::classify::status_error(status, &text, Some(&text));
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let _ = super::influxdb_disk_bytes(&v, "tsload");
        let _ = super::questdb_tables(&v, &["cpu"]);
        let _ = super::questdb_wal_pending(&v, &["cpu"]);
        let _ = super::questdb_single_long(&v);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        read_all(&body);
    }

    #[test]
    fn arbitrary_json_like_answers(body in jsonish()) {
        read_all(body.as_bytes());
    }
}
