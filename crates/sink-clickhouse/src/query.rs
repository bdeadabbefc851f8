//! The read side of the ClickHouse target: [`ClickHouseQueryTarget`] POSTs each
//! statement's text to the HTTP interface, in the target's database, answered as
//! TabSeparated (`default_format`), one client (one connection) per worker. Rows are the
//! lines of the answer, counted as its chunks arrive, without keeping them.
//!
//! ClickHouse holds back the first megabyte of an answer (its `buffer_size`), so a
//! statement that fails early gets a proper error status: 429 and 5xx with a code that
//! says the server is busy are [`ErrorKind::Unavailable`], other failures
//! [`ErrorKind::Rejected`] (401/403 [`ErrorKind::Permission`]), timeouts
//! [`ErrorKind::Timeout`], failures to connect or to read the answer
//! [`ErrorKind::Connection`]. A statement that fails after that megabyte was sent ends its
//! `200 OK` answer with the exception's text, which is found and reported the same way.
//! The HTTP interface has no transactions and no bind parameters: a request that asks for
//! either is rejected.

use std::fmt;

use reqwest::Url;
use tsload_core::{
    ErrorKind, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};
use tsload_http::{classify_request_error, classify_status};
use tsload_redact::Secret;

use crate::{ClickHouseConfig, ClickHouseSink, answer_code, exception_code, refine_kind};

/// Bytes of an answer's end kept to look for an exception written after its rows.
const TAIL: usize = 4096;

/// The ClickHouse read target.
pub struct ClickHouseQueryTarget {
    sink: ClickHouseSink,
    /// The endpoint with `database` and `default_format` set.
    url: Url,
}

impl fmt::Debug for ClickHouseQueryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClickHouseQueryTarget")
            .field("url", &self.url.as_str())
            .field("sink", &self.sink)
            .finish()
    }
}

impl ClickHouseQueryTarget {
    /// Reads the database of `cfg` at its URL, with its credentials, trust and timeout.
    /// The URL is checked as [`ClickHouseSink::new`] checks it.
    pub fn new(cfg: &ClickHouseConfig) -> Result<Self, SinkError> {
        let sink = ClickHouseSink::new(cfg.clone())?;
        let url = sink.url_with(&[
            ("database", &cfg.database),
            ("default_format", "TabSeparated"),
        ]);
        Ok(ClickHouseQueryTarget { sink, url })
    }

    /// Where statements are posted (no secrets in it).
    pub fn url(&self) -> &Url {
        &self.url
    }
}

impl QueryTarget for ClickHouseQueryTarget {
    type Conn = ClickHouseQueryConn;

    async fn connect(&self, _worker: usize) -> Result<ClickHouseQueryConn, SinkError> {
        Ok(ClickHouseQueryConn {
            client: self.sink.client()?,
            url: self.url.clone(),
            auth: self.sink.auth().cloned(),
        })
    }
}

/// One worker's HTTP client for reads.
pub struct ClickHouseQueryConn {
    client: reqwest::Client,
    url: Url,
    /// The `Authorization` header: a secret.
    auth: Option<Secret>,
}

impl fmt::Debug for ClickHouseQueryConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClickHouseQueryConn")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl QueryConn for ClickHouseQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        if request.transaction {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                "ClickHouse's HTTP interface has no transactions: run these statements \
                 without `transaction`",
            ));
        }
        let mut ack = QueryAck::default();
        for (i, statement) in request.statements.iter().enumerate() {
            // Saturating: the counts are the server's numbers.
            ack.rows = ack.rows.saturating_add(self.run(statement, i).await?);
            ack.statements += 1;
        }
        Ok(ack)
    }
}

impl ClickHouseQueryConn {
    /// Sends statement `index` and counts the rows of the answer.
    async fn run(&self, statement: &Statement, index: usize) -> Result<u64, SinkError> {
        let label = || statement.label(index);
        if !statement.params.is_empty() {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                format!(
                    "{}: ClickHouse's HTTP interface takes no bind parameters here (got {}): \
                     put the values in the text",
                    label(),
                    statement.params.len()
                ),
            ));
        }
        let endpoint = {
            let mut shown = self.url.clone();
            shown.set_query(None);
            shown
        };
        let transport = |e: reqwest::Error| {
            let e = classify_request_error(&e.without_url(), endpoint.as_str());
            SinkError::new(e.kind, format!("{}: {}", label(), e.message))
        };
        let mut builder = self.client.post(self.url.clone());
        builder = tsload_http::with_authorization(builder, self.auth.as_ref());
        let mut response = builder
            .body(statement.text.to_string())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if let Some(message) = tsload_http::redirect_message(status, response.headers()) {
            return Err(SinkError::new(
                ErrorKind::Rejected,
                format!("{}: {message}", label()),
            ));
        }
        if !status.is_success() {
            let header = answer_code(response.headers());
            let body = tsload_http::error_text(response).await;
            let (kind, message) = classify_status(status, &body);
            let kind = refine_kind(kind, header.or_else(|| exception_code(&body)));
            return Err(SinkError::new(kind, format!("{}: {message}", label())));
        }
        let mut counter = RowCounter::default();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            counter.feed(&chunk);
        }
        counter
            .finish()
            .map_err(|(kind, reason)| SinkError::new(kind, format!("{}: {reason}", label())))
    }
}

/// Counts the lines of a TabSeparated answer as its chunks arrive, keeping only its end.
#[derive(Debug, Default)]
pub(crate) struct RowCounter {
    lines: u64,
    /// The answer's last bytes (at most twice [`TAIL`]).
    tail: Vec<u8>,
    /// Whether the answer ended without a line break (a last row without its own).
    open_line: bool,
}

impl RowCounter {
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        self.open_line = chunk.last() != Some(&b'\n');
        self.tail
            .extend_from_slice(&chunk[chunk.len().saturating_sub(2 * TAIL)..]);
        if self.tail.len() > 2 * TAIL {
            let cut = self.tail.len() - TAIL;
            self.tail.drain(..cut);
        }
    }

    /// The rows, or the kind and text of the exception the answer ended with.
    pub(crate) fn finish(&self) -> Result<u64, (ErrorKind, String)> {
        if let Some((code, text)) = trailing_exception(&self.tail) {
            return Err((
                refine_kind(ErrorKind::Unavailable, Some(code)),
                format!("the server failed while answering: {text}"),
            ));
        }
        Ok(self.lines + u64::from(self.open_line))
    }
}

/// The exception ClickHouse wrote at the end of an answer it had begun (`Code: 241,
/// e.displayText() = DB::Exception: ...` on a line of its own), if any.
pub(crate) fn trailing_exception(tail: &[u8]) -> Option<(u32, String)> {
    let text = String::from_utf8_lossy(tail);
    let at = text.rfind("Code: ")?;
    if at > 0 && !text[..at].ends_with('\n') {
        return None;
    }
    let rest = text[at..].trim();
    if !rest.contains("DB::Exception") {
        return None;
    }
    let code = exception_code(rest)?;
    Some((code, rest.chars().take(500).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn count(chunks: &[&[u8]]) -> Result<u64, (ErrorKind, String)> {
        let mut c = RowCounter::default();
        for chunk in chunks {
            c.feed(chunk);
        }
        c.finish()
    }

    #[test]
    fn rows_are_lines_whatever_the_chunks() {
        assert_eq!(count(&[]), Ok(0));
        assert_eq!(count(&[b"1\ta\n2\tb\n"]), Ok(2));
        assert_eq!(count(&[b"1\t", b"a\n2", b"\tb\n", b""]), Ok(2));
        assert_eq!(count(&[b"1\n2"]), Ok(2));
        let big = vec![b'x'; 3 * TAIL];
        assert_eq!(count(&[&big, b"\n", &big, b"\n"]), Ok(2));
    }

    #[test]
    fn an_exception_after_the_rows_is_an_error_of_its_kind() {
        let memory = b"1\t2\nCode: 241, e.displayText() = DB::Exception: Memory limit \
                       (for query) exceeded, e.what() = DB::Exception\n";
        let (kind, text) = count(&[&memory[..10], &memory[10..]]).unwrap_err();
        assert_eq!(kind, ErrorKind::Unavailable);
        assert!(text.contains("Memory limit"), "{text}");
        let logical =
            b"1\nCode: 395. DB::Exception: Value passed to 'throwIf' function is non zero\n";
        assert_eq!(count(&[logical]).unwrap_err().0, ErrorKind::Rejected);
        // A value that merely says so is a row.
        assert_eq!(count(&[b"Code: 1 and no exception\n"]), Ok(1));
        assert_eq!(count(&[b"x Code: 1 DB::Exception\n"]), Ok(1));
    }

    #[test]
    fn requests_go_to_the_database_in_tab_separated() {
        let mut cfg = ClickHouseConfig::new("http://h:8123");
        cfg.database = "bench db".into();
        cfg.password = Some("pw-secret".into());
        let t = ClickHouseQueryTarget::new(&cfg).unwrap();
        assert_eq!(
            t.url().as_str(),
            "http://h:8123/?database=bench+db&default_format=TabSeparated"
        );
        assert!(!format!("{t:?}").contains("pw-secret"));
    }

    proptest! {
        #[test]
        fn any_answer_is_counted_or_refused_without_panicking(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        ) {
            let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let _ = count(&refs);
            let _ = trailing_exception(&chunks.concat());
        }
    }
}
