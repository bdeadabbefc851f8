//! Unit tests of the testbed's own helpers.

use super::*;

#[test]
fn tail_keeps_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let t = tail(&path, 3);
    assert_eq!(t, "line 97\nline 98\nline 99");
    std::fs::write(&path, "").unwrap();
    assert_eq!(tail(&path, 3), "(the server wrote nothing)");
    assert!(tail(&dir.path().join("none"), 3).contains("cannot read"));
}

#[test]
fn servers_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Server>();
    send_sync::<TestbedError>();
}

#[test]
fn error_debug_is_its_display() {
    let e = TestbedError::answer("what", "detail");
    assert_eq!(format!("{e:?}"), "what: detail");
}
