//! Turns TDengine and driver failures into [`SinkError`]s whose kind tells the engine
//! whether a retry may succeed.

use tsload_core::{ErrorKind, SinkError};

use crate::dsn::Secrets;

/// The kind of a TDengine failure, from its error code and message.
///
/// Over WebSocket TDengine returns the last four hex digits of its 32-bit codes
/// (`0x80000216` arrives as `0x0216`), so only the low 16 bits are looked at. Codes and
/// their meaning follow the error code reference,
/// <https://docs.tdengine.com/tdengine-reference/error-codes/> (source:
/// `docs/en/14-reference/09-error-code.md` in taosdata/TDengine), plus the WebSocket
/// driver's own codes `0xE000..=0xE006` (taos-ws `WS_ERROR_NO`). A code this table does
/// not know, or the driver's generic `0xFFFF`, is classified by its message.
pub(crate) fn kind_for_code(code: i32, message: &str) -> ErrorKind {
    match code & 0xFFFF {
        // rpc: network unreachable, link broken, network errors; tsc: disconnected,
        // connection killed; taos-ws: websocket error, connection closed, I/O error.
        0x000B | 0x0018 | 0x0021 | 0x0023 | 0x0213 | 0x0215 | 0xE001 | 0xE002 | 0xE005 => {
            ErrorKind::Connection
        }
        // rpc: conn read timeout; common: operation timeout; sync: timeout (a leader
        // change in progress); scheduler: task timeout; taos-ws: send/receive timeout.
        0x0019 | 0x012C | 0x0903 | 0x2504 | 0xE003 | 0xE004 => ErrorKind::Timeout,
        // Overload and not-ready conditions the server tells to retry:
        // rpc: system not ready, nodes out of service, too many sessions, network busy;
        // app not ready; common: retry needed, rpc queue full, database starting up;
        // mnode: too many connections, database being dropped/created, dnode being
        // created/dropped; dnode offline; vnode: stopped, query busy, wait threads full;
        // sync: leader unreachable, not ready to propose, leader restoring, buffer full,
        // write stall, negotiation window full.
        0x0005 | 0x0014 | 0x0020 | 0x0022 | 0x0024 | 0x0125 | 0x0126 | 0x0130 | 0x0309 | 0x0386
        | 0x0396 | 0x03B8 | 0x03B9 | 0x0408 | 0x0515 | 0x0529 | 0x0531 | 0x090C | 0x0911
        | 0x0914 | 0x0916 | 0x0917 | 0x0918 => ErrorKind::Unavailable,
        // mnode: a conflicting transaction is still running.
        0x03D3 => ErrorKind::Conflict,
        // rpc: authentication required/failed; tsc: invalid user/password; mnode: no
        // privilege, user disabled, invalid user, authentication failure, user not
        // available; vnode: no write privilege; grant: license limits; taos-ws:
        // unauthorized.
        0x0002
        | 0x0003
        | 0x0207
        | 0x0208
        | 0x0303
        | 0x0315
        | 0x0351
        | 0x0357
        | 0x0358
        | 0x0512
        | 0x0800..=0x080D
        | 0xE006 => ErrorKind::Permission,
        // The statement or its data was refused: common: out of range, invalid
        // parameters, invalid timestamp format / data format / value; tsc: SQL syntax
        // error, SQL too long, line syntax, tag/column length, value out of range, invalid
        // input, statement-API misuse, not a super table; mnode: too many
        // tags/columns/time series, database not specified / not existing, super table
        // missing; tsdb: invalid table, timestamp out of range, table in another super
        // table; parser (0x26xx) and schemaless (0x30xx) errors.
        0x0112
        | 0x0118
        | 0x0127
        | 0x0132
        | 0x0134
        | 0x0216
        | 0x0219
        | 0x021B
        | 0x021E
        | 0x021F
        | 0x0224
        | 0x0229
        | 0x022A
        | 0x022B
        | 0x022F
        | 0x0361
        | 0x0362
        | 0x0364
        | 0x0365
        | 0x0366
        | 0x0380
        | 0x0388
        | 0x0600
        | 0x0603
        | 0x060B
        | 0x0618
        | 0x061A
        | 0x061D
        | 0x2600..=0x26FF
        | 0x3000..=0x30FF => ErrorKind::Rejected,
        _ => kind_for_message(message),
    }
}

/// The kind of a failure that carries no known code (transport errors of the driver).
pub(crate) fn kind_for_message(message: &str) -> ErrorKind {
    let m = message.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    if any(&["timed out", "timeout", "deadline"]) {
        ErrorKind::Timeout
    } else if any(&["unauthorized", "authentication", "401 ", "403 "]) {
        ErrorKind::Permission
    } else if any(&[
        "connection refused",
        "connection reset",
        "connection closed",
        "broken pipe",
        "websocket",
        "has been closed",
        "io error",
        "failed to lookup",
        "dns",
        "tls",
        "handshake",
        "unable to establish",
        "network",
        "eof",
    ]) {
        ErrorKind::Connection
    } else {
        ErrorKind::Other
    }
}

/// A driver failure while doing `context`, its message scrubbed of secrets.
pub(crate) fn driver_error(context: &str, e: &taos::Error, secrets: &Secrets) -> SinkError {
    let code = i32::from(e.code());
    let message = secrets.scrub(&e.to_string());
    SinkError::new(
        kind_for_code(code, &message),
        format!("{context}: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_documented_codes() {
        let cases = [
            (0x8000_000Bu32 as i32, ErrorKind::Connection), // full code: low bits used
            (0x000B, ErrorKind::Connection),                // Unable to establish connection
            (0x0018, ErrorKind::Connection),                // Conn is broken
            (0xE002, ErrorKind::Connection),                // ws: connection closed
            (0x0019, ErrorKind::Timeout),                   // Conn read timeout
            (0x0903, ErrorKind::Timeout),                   // Sync timeout
            (0xE004, ErrorKind::Timeout),                   // ws: receive timeout
            (0x0309, ErrorKind::Unavailable),               // Too many connections
            (0x0022, ErrorKind::Unavailable),               // rpc open too many session
            (0x0014, ErrorKind::Unavailable),               // Database not ready
            (0x090C, ErrorKind::Unavailable),               // Sync leader is unreachable
            (0x0911, ErrorKind::Unavailable),               // Sync not ready to propose
            (0x0914, ErrorKind::Unavailable),               // Sync leader is restoring
            (0x0916, ErrorKind::Unavailable),               // Sync buffer is full
            (0x0531, ErrorKind::Unavailable),               // Vnode query is busy
            (0x0386, ErrorKind::Unavailable),               // Database in dropping status
            (0x03D3, ErrorKind::Conflict),                  // Conflict transaction not completed
            (0x0357, ErrorKind::Permission),                // Authentication failure
            (0x0208, ErrorKind::Permission),                // Invalid password
            (0x0512, ErrorKind::Permission),                // No writing privilege
            (0x080D, ErrorKind::Permission),                // Table creation limited by license
            (0xE006, ErrorKind::Permission),                // ws: unauthorized
            (0x0216, ErrorKind::Rejected),                  // Syntax error in SQL
            (0x0219, ErrorKind::Rejected),                  // SQL statement too long
            (0x2600, ErrorKind::Rejected),                  // syntax error near
            (0x2603, ErrorKind::Rejected),                  // Table does not exist
            (0x060B, ErrorKind::Rejected),                  // Timestamp is out of range
            (0x0388, ErrorKind::Rejected),                  // Database not exist
            (0x3002, ErrorKind::Rejected),                  // schemaless: Invalid data format
            (0x012B, ErrorKind::Other),                     // Out of disk space
        ];
        for (code, kind) in cases {
            assert_eq!(kind_for_code(code, "x"), kind, "code {code:#06X}");
        }
        for kind in [
            ErrorKind::Connection,
            ErrorKind::Timeout,
            ErrorKind::Unavailable,
        ] {
            assert!(kind.is_retryable());
        }
        assert!(!kind_for_code(0x0216, "").is_retryable());
    }

    #[test]
    fn falls_back_to_the_message() {
        let cases = [
            (
                "WebSocket internal error: IO error: Connection refused (os error 111)",
                ErrorKind::Connection,
            ),
            ("Websocket has been closed: reset", ErrorKind::Connection),
            ("Query timed out with sql: INSERT", ErrorKind::Timeout),
            (
                "Authentication failure: \"ws://h:6041/ws\"",
                ErrorKind::Permission,
            ),
            ("something else entirely", ErrorKind::Other),
        ];
        for (msg, kind) in cases {
            assert_eq!(kind_for_code(0xFFFF, msg), kind, "{msg}");
        }
    }

    #[test]
    fn driver_errors_keep_code_and_hide_secrets() {
        let secrets = Secrets::default();
        let e = taos::Error::new(0x0216, "syntax error near 'pw-secret-1'");
        let s = driver_error("inserting into \"meters\"", &e, &secrets);
        assert_eq!(s.kind, ErrorKind::Rejected);
        assert!(
            s.message.starts_with("inserting into \"meters\": [0x0216]"),
            "{s}"
        );

        let secrets = crate::dsn::Endpoint::parse("ws://u:pw-secret-1@h:6041")
            .unwrap()
            .secrets;
        let s = driver_error("x", &e, &secrets);
        assert!(!s.message.contains("pw-secret-1"), "{s}");
        assert!(s.message.contains("***"), "{s}");
    }
}
