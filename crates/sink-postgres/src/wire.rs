//! The pieces of PostgreSQL's frontend/backend protocol (3.0) that the read path speaks by
//! hand, pure (no I/O): the startup and SSL request, password answers (cleartext, MD5),
//! the extended protocol's Parse, Bind, Execute and Sync, a simple Query, and the fields
//! of the backend's messages the path reads (authentication requests, CommandComplete
//! tags, ErrorResponse).
//!
//! Why by hand: sqlx turns every result row into an owned `PgRow` passed through async
//! generators, which on sysbench's range selects (300 rows a transaction) made tsload's
//! user CPU per transaction more than twice sysbench's
//! (`cargo xtask bench-targets --sysbench postgres`). Here a DataRow is a message counted
//! in the read buffer. Reference: PostgreSQL's documentation, "Frontend/Backend
//! Protocol" (message flow and formats).

use tsload_core::Param;

/// Protocol version 3.0.
const PROTOCOL_3_0: i32 = 196_608;
/// The SSLRequest code.
const SSL_REQUEST: i32 = 80_877_103;

/// Type OIDs of the bound values (as sqlx sends them for i64, f64 and &str).
pub(crate) const INT8: u32 = 20;
pub(crate) const FLOAT8: u32 = 701;
pub(crate) const TEXT: u32 = 25;

/// A message that does not read as the protocol says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed PostgreSQL message: {0}")]
pub(crate) struct Malformed(pub(crate) &'static str);

/// The StartupMessage with `params` (name, value), as one message.
pub(crate) fn startup(out: &mut Vec<u8>, params: &[(&str, &str)]) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&PROTOCOL_3_0.to_be_bytes());
    for (name, value) in params {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        out.extend_from_slice(value.as_bytes());
        out.push(0);
    }
    out.push(0);
    patch_len(out, start);
}

/// The SSLRequest (answered with one byte: `S` or `N`).
pub(crate) fn ssl_request(out: &mut Vec<u8>) {
    out.extend_from_slice(&8i32.to_be_bytes());
    out.extend_from_slice(&SSL_REQUEST.to_be_bytes());
}

/// Writes the length of the message that starts at `start` (its 4 length bytes).
fn patch_len(out: &mut [u8], start: usize) {
    let len = (out.len() - start) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Starts a tagged message; finish it with [`end`].
fn begin(out: &mut Vec<u8>, tag: u8) -> usize {
    out.push(tag);
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

fn end(out: &mut [u8], start: usize) {
    patch_len(out, start);
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// PasswordMessage with `password` as it goes (cleartext, or an MD5 answer).
pub(crate) fn password(out: &mut Vec<u8>, password: &str) {
    let at = begin(out, b'p');
    cstr(out, password);
    end(out, at);
}

/// The MD5 answer: `md5` + hex(md5(hex(md5(password + user)) + salt)).
pub(crate) fn md5_password(user: &str, password: &str, salt: [u8; 4]) -> String {
    use md5::{Digest as _, Md5};
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let inner = hex(&Md5::digest(format!("{password}{user}")));
    let mut outer = inner.into_bytes();
    outer.extend_from_slice(&salt);
    format!("md5{}", hex(&Md5::digest(outer)))
}

/// A simple Query.
pub(crate) fn query(out: &mut Vec<u8>, sql: &str) {
    let at = begin(out, b'Q');
    cstr(out, sql);
    end(out, at);
}

/// Parse of `sql` as statement `name` with the parameter types of `params`.
pub(crate) fn parse(out: &mut Vec<u8>, name: &str, sql: &str, params: &[Param]) {
    let at = begin(out, b'P');
    cstr(out, name);
    cstr(out, sql);
    out.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        out.extend_from_slice(&type_of(p).to_be_bytes());
    }
    end(out, at);
}

fn type_of(p: &Param) -> u32 {
    match p {
        Param::Int(_) => INT8,
        Param::Float(_) => FLOAT8,
        Param::Text(_) => TEXT,
    }
}

/// Bind of statement `name` to the unnamed portal with `params` (all in binary format)
/// and binary results; Execute of every row; Sync.
pub(crate) fn bind_execute_sync(out: &mut Vec<u8>, name: &str, params: &[Param]) {
    let at = begin(out, b'B');
    out.push(0); // the unnamed portal
    cstr(out, name);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&1i16.to_be_bytes()); // every parameter binary
    out.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            Param::Int(v) => {
                out.extend_from_slice(&8i32.to_be_bytes());
                out.extend_from_slice(&v.to_be_bytes());
            }
            Param::Float(v) => {
                out.extend_from_slice(&8i32.to_be_bytes());
                out.extend_from_slice(&v.to_be_bytes());
            }
            Param::Text(s) => {
                out.extend_from_slice(&(s.len() as i32).to_be_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&1i16.to_be_bytes()); // every result column binary
    end(out, at);
    let at = begin(out, b'E');
    out.push(0);
    out.extend_from_slice(&0i32.to_be_bytes());
    end(out, at);
    sync(out);
}

pub(crate) fn sync(out: &mut Vec<u8>) {
    out.extend_from_slice(&[b'S', 0, 0, 0, 4]);
}

/// Terminate, sent before closing.
pub(crate) fn terminate(out: &mut Vec<u8>) {
    out.extend_from_slice(&[b'X', 0, 0, 0, 4]);
}

/// What an Authentication message (`R`) asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    Ok,
    Cleartext,
    Md5([u8; 4]),
    /// Any other method (SASL/SCRAM, GSS, ...), by its code.
    Other(i32),
}

pub(crate) fn parse_auth(body: &[u8]) -> Result<Auth, Malformed> {
    let code = body
        .get(..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(Malformed("authentication request"))?;
    Ok(match code {
        0 => Auth::Ok,
        3 => Auth::Cleartext,
        5 => {
            let salt = body.get(4..8).ok_or(Malformed("MD5 salt"))?;
            Auth::Md5([salt[0], salt[1], salt[2], salt[3]])
        }
        other => Auth::Other(other),
    })
}

/// The row count a CommandComplete tag ends with (`SELECT 100`, `INSERT 0 1`,
/// `UPDATE 3`); 0 for tags without one (`BEGIN`).
pub(crate) fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    std::str::from_utf8(last)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// An ErrorResponse's fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ServerError {
    /// `V` (not localized), or `S`.
    pub(crate) severity: String,
    pub(crate) code: String,
    pub(crate) message: String,
    pub(crate) detail: Option<String>,
}

impl ServerError {
    /// Whether the server ends the session with it (FATAL or PANIC).
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(self.severity.as_str(), "FATAL" | "PANIC")
    }

    /// As sqlx's path describes a database error: the message, the SQLSTATE and the
    /// detail.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{} (SQLSTATE {})", self.message, self.code);
        if let Some(detail) = &self.detail {
            out.push_str(&format!("; {detail}"));
        }
        out
    }
}

pub(crate) fn parse_error(body: &[u8]) -> ServerError {
    let mut e = ServerError::default();
    let mut localized = String::new();
    for field in body.split(|&b| b == 0) {
        let Some((&kind, value)) = field.split_first() else {
            continue;
        };
        let value = String::from_utf8_lossy(value).into_owned();
        match kind {
            b'V' => e.severity = value,
            b'S' => localized = value,
            b'C' => e.code = value,
            b'M' => e.message = value,
            b'D' => e.detail = Some(value),
            _ => {}
        }
    }
    if e.severity.is_empty() {
        e.severity = localized;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_and_ssl_request_bytes() {
        let mut out = Vec::new();
        startup(&mut out, &[("user", "u"), ("database", "d")]);
        let mut want = Vec::new();
        want.extend_from_slice(&27i32.to_be_bytes());
        want.extend_from_slice(&[0, 3, 0, 0]);
        want.extend_from_slice(b"user\0u\0database\0d\0\0");
        assert_eq!(out, want);
        out.clear();
        ssl_request(&mut out);
        assert_eq!(out, [0, 0, 0, 8, 4, 210, 22, 47]);
    }

    #[test]
    fn md5_answer_matches_the_known_value() {
        // Checked with Python's hashlib: md5(md5("secret"+"u").hexdigest() + b"\x01\x02\x03\x04").
        assert_eq!(md5_password("u", "secret", [1, 2, 3, 4]), KNOWN_MD5_ANSWER);
    }

    const KNOWN_MD5_ANSWER: &str = "md5dffd2564502f75393b3854e1532b9fa6";

    #[test]
    fn extended_protocol_messages() {
        let params = [Param::Int(-1), Param::Float(1.5), Param::Text("ab".into())];
        let mut out = Vec::new();
        parse(&mut out, "s1", "SELECT $1", &params);
        let mut want = vec![b'P', 0, 0, 0, 31];
        want.extend_from_slice(b"s1\0SELECT $1\0");
        want.extend_from_slice(&[0, 3, 0, 0, 0, 20, 0, 0, 2, 189, 0, 0, 0, 25]);
        assert_eq!(out, want);
        out.clear();
        bind_execute_sync(&mut out, "s1", &params);
        let mut want = vec![b'B', 0, 0, 0, 48, 0];
        want.extend_from_slice(b"s1\0");
        want.extend_from_slice(&[0, 1, 0, 1, 0, 3]);
        want.extend_from_slice(&[0, 0, 0, 8]);
        want.extend_from_slice(&(-1i64).to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 8]);
        want.extend_from_slice(&1.5f64.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 2, b'a', b'b', 0, 1, 0, 1]);
        want.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[b'S', 0, 0, 0, 4]);
        assert_eq!(out, want);
        out.clear();
        query(&mut out, "BEGIN");
        assert_eq!(out, b"Q\0\0\0\x0aBEGIN\0");
    }

    #[test]
    fn reads_auth_tags_and_errors() {
        assert_eq!(parse_auth(&[0, 0, 0, 0]).unwrap(), Auth::Ok);
        assert_eq!(parse_auth(&[0, 0, 0, 3]).unwrap(), Auth::Cleartext);
        assert_eq!(
            parse_auth(&[0, 0, 0, 5, 9, 8, 7, 6]).unwrap(),
            Auth::Md5([9, 8, 7, 6])
        );
        assert_eq!(parse_auth(&[0, 0, 0, 10, b'S']).unwrap(), Auth::Other(10));
        assert!(parse_auth(&[0, 0, 0, 5]).is_err());
        assert_eq!(tag_rows(b"SELECT 100\0"), 100);
        assert_eq!(tag_rows(b"INSERT 0 1\0"), 1);
        assert_eq!(tag_rows(b"BEGIN\0"), 0);
        let e = parse_error(
            b"SERROR\0VERROR\0C42P01\0Mrelation \"x\" does not exist\0Dsome detail\0\0",
        );
        assert_eq!(e.code, "42P01");
        assert!(!e.is_fatal());
        assert_eq!(
            e.describe(),
            "relation \"x\" does not exist (SQLSTATE 42P01); some detail"
        );
        assert!(parse_error(b"SFATAL\0C57P01\0Mbye\0\0").is_fatal());
    }
}
