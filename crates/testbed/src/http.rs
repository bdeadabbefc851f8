//! A minimal blocking HTTP client (ureq; HTTPS through `tls::RustlsConnector` for a
//! server started with TLS) for readiness probes and the query helpers. Every status is returned as an answer; only failures below HTTP
//! (connection refused, timeouts) are errors. Proxies from the environment are never used:
//! every request goes straight to 127.0.0.1.

use std::io::Read as _;
use std::time::Duration;

use crate::TestbedError;

/// What the server answered: status and the whole body as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub body: String,
}

impl HttpAnswer {
    /// The body parsed as JSON; `what` names the request in the error.
    pub fn json(&self, what: &str) -> Result<serde_json::Value, TestbedError> {
        serde_json::from_str(&self.body).map_err(|e| {
            TestbedError::answer(
                format!("{what}: the answer is not JSON"),
                format!("{e}; body: {}", clip(&self.body)),
            )
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Http {
    agent: ureq::Agent,
    base: String,
    tls: Option<std::sync::Arc<crate::tls::RustlsConnector>>,
}

impl Http {
    /// A client for `base` ("http://127.0.0.1:PORT") with an overall per-request timeout.
    pub(crate) fn new(base: String, timeout: Duration) -> Http {
        Http::with_tls(base, timeout, None)
    }

    /// `new`, over TLS through `tls` when given (`base` then starts with https://).
    pub(crate) fn with_tls(
        base: String,
        timeout: Duration,
        tls: Option<std::sync::Arc<crate::tls::RustlsConnector>>,
    ) -> Http {
        let mut builder = ureq::AgentBuilder::new();
        if let Some(tls) = &tls {
            builder = builder.tls_connector(tls.clone());
        }
        let agent = builder
            // Explicit: another crate could enable ureq's `proxy-from-env` feature.
            .try_proxy_from_env(false)
            .redirects(0)
            .timeout_connect(Duration::from_secs(2).min(timeout))
            .timeout(timeout)
            .build();
        Http { agent, base, tls }
    }

    /// The same server with another timeout.
    pub(crate) fn with_timeout(&self, timeout: Duration) -> Http {
        Http::with_tls(self.base.clone(), timeout, self.tls.clone())
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn get(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<HttpAnswer, TestbedError> {
        self.call("GET", path, query, None)
    }

    pub(crate) fn post(
        &self,
        path: &str,
        query: &[(&str, &str)],
        body: &[u8],
    ) -> Result<HttpAnswer, TestbedError> {
        self.call("POST", path, query, Some(body))
    }

    fn call(
        &self,
        method: &'static str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<HttpAnswer, TestbedError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.agent.request(method, &url);
        for (k, v) in query {
            request = request.query(k, v);
        }
        let shown = shown_url(&url, query);
        let result = match body {
            Some(body) => request.send_bytes(body),
            None => request.call(),
        };
        let response = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(ureq::Error::Transport(t)) => {
                return Err(TestbedError::Transport {
                    method,
                    url: shown,
                    message: t.to_string(),
                });
            }
        };
        let status = response.status();
        let mut text = String::new();
        // into_string() caps bodies at 10 MB; exports of test data sets may be larger.
        response
            .into_reader()
            .read_to_string(&mut text)
            .map_err(|e| TestbedError::Transport {
                method,
                url: shown,
                message: format!("reading the body of an HTTP {status} answer: {e}"),
            })?;
        Ok(HttpAnswer { status, body: text })
    }

    /// Like `get`/`post`, but an answer other than `expected` is an error.
    pub(crate) fn expect(
        &self,
        method: &'static str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&[u8]>,
        expected: u16,
    ) -> Result<HttpAnswer, TestbedError> {
        let answer = self.call(method, path, query, body)?;
        if answer.status != expected {
            return Err(TestbedError::Status {
                method,
                url: shown_url(&format!("{}{path}", self.base), query),
                status: answer.status,
                body: clip(&answer.body).to_string(),
            });
        }
        Ok(answer)
    }
}

/// The URL as a person would read it in an error (query values unencoded).
fn shown_url(url: &str, query: &[(&str, &str)]) -> String {
    let mut s = url.to_string();
    for (i, (k, v)) in query.iter().enumerate() {
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s
}

/// At most 2,000 bytes of `s` (on a char boundary), for error messages.
pub(crate) fn clip(s: &str) -> &str {
    let mut end = s.len().min(2000);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_respects_char_boundaries() {
        let s = "é".repeat(1500);
        let c = clip(&s);
        assert!(c.len() <= 2000 && c.len() >= 1998);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn shown_url_lists_the_query() {
        assert_eq!(
            shown_url(
                "http://127.0.0.1:1/query",
                &[("db", "x"), ("q", "SELECT 1")]
            ),
            "http://127.0.0.1:1/query?db=x&q=SELECT 1"
        );
    }

    #[test]
    fn connection_refused_is_a_transport_error() {
        // A port we held and released: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let http = Http::new(format!("http://127.0.0.1:{port}"), Duration::from_secs(2));
        let err = http.get("/ping", &[]).unwrap_err();
        assert!(matches!(err, TestbedError::Transport { .. }), "{err}");
        assert!(err.to_string().contains("/ping"), "{err}");
    }
}
