//! The HTTP client policy every line-protocol target, query target, probe and output of
//! tsload shares: redirects are never followed (a write answered with 302/303 would
//! become a GET that stores nothing, and the run would count every row), and an answer's
//! body is read only up to a cap (a server answering with gigabytes must not take the
//! client's memory), and every body held counts against the process's one budget for
//! answers (`tsload_core::answer_budget`).

mod body_pool;
mod cached_page;
pub mod classify;
pub mod query;

pub use body_pool::BodyPool;
pub use cached_page::read_after_refresh;
pub use classify::{
    answer_error, classify_request_error, classify_status, parse_retry_after, status_error,
};
pub use query::{HttpQueryConn, HttpQueryTarget, QueryApi, QueryEndpoint};

use reqwest::header::{HeaderMap, LOCATION};
use std::net::SocketAddr;
use std::time::Duration;

use reqwest::{Response, StatusCode, Url};

/// The most of an error answer's body tsload reads: enough for any server's message.
pub const ERROR_BODY_CAP: usize = 64 * 1024;

/// The most of a query answer's body tsload reads (the rows are counted from it).
pub const QUERY_BODY_CAP: usize = 64 * 1024 * 1024;

/// A reqwest client builder with tsload's policy: `tls` (even for http: reqwest built
/// with `rustls-no-provider` panics otherwise) and no redirect following.
pub fn client_builder(tls: rustls::ClientConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body is longer than the cap; nothing past it was read.
    #[error("the answer's body is larger than {cap} bytes; tsload reads at most that much")]
    TooLarge { cap: usize },
    /// Holding the body would pass the process's budget for answers.
    #[error(transparent)]
    OverBudget(#[from] tsload_core::answer_budget::OverBudget),
    /// The connection failed while the body was read.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
}

/// At most `cap` bytes of `response`'s body. A longer body is an error unless
/// `truncate` is set, in which case the first `cap` bytes come back (for messages).
/// Reading stops at the cap: the rest is never buffered.
pub async fn read_body(
    mut response: Response,
    cap: usize,
    truncate: bool,
) -> Result<Body, BodyError> {
    let mut body = Body::default();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.bytes.len();
        let take = if chunk.len() > room {
            if !truncate {
                return Err(BodyError::TooLarge { cap });
            }
            room
        } else {
            chunk.len()
        };
        body.held.grow(take)?;
        body.bytes.extend_from_slice(&chunk[..take]);
        if take < chunk.len() {
            break;
        }
    }
    Ok(body)
}

/// A body read whole: its bytes count against the process's answer budget until it is
/// dropped.
#[derive(Debug, Default)]
pub struct Body {
    bytes: Vec<u8>,
    held: tsload_core::answer_budget::Held,
}

impl std::ops::Deref for Body {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// The start of an error answer's body, as text, at most [`ERROR_BODY_CAP`] bytes read;
/// a failure to read it gives what was read (nothing, often).
pub async fn error_text(response: Response) -> String {
    let body = read_body(response, ERROR_BODY_CAP, true)
        .await
        .unwrap_or_default();
    String::from_utf8_lossy(&body).into_owned()
}

/// Reads and drops a success answer's body (so the connection can be reused), at most
/// [`ERROR_BODY_CAP`] bytes: a longer one is left unread and its connection closed.
pub async fn drain(response: Response) {
    let _ = read_body(response, ERROR_BODY_CAP, false).await;
}

/// The message for a redirect answer (3xx): redirects are not followed, so the request
/// did not reach what it was meant for. `None` for any other status.
pub fn redirect_message(status: StatusCode, headers: &HeaderMap) -> Option<String> {
    if !status.is_redirection() {
        return None;
    }
    let location = headers
        .get(LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    Some(match location {
        Some(l) => format!(
            "HTTP {status}: the server redirects to {l:?}; tsload does not follow redirects \
             (the request would not reach the endpoint it was meant for): use that URL"
        ),
        None => format!(
            "HTTP {status}: a redirect without a Location; tsload does not follow redirects"
        ),
    })
}

/// `request` with an `Authorization` header of `auth` (if any), marked sensitive: the one
/// place an HTTP target reads its credentials' value.
pub fn with_authorization(
    request: reqwest::RequestBuilder,
    auth: Option<&tsload_redact::Secret>,
) -> reqwest::RequestBuilder {
    let Some(auth) = auth else {
        return request;
    };
    match reqwest::header::HeaderValue::from_str(auth.expose()) {
        Ok(mut value) => {
            value.set_sensitive(true);
            request.header(reqwest::header::AUTHORIZATION, value)
        }
        // Not a valid header value (a control character in a token): reqwest refuses the
        // request with an error that does not quote the value.
        Err(_) => request.header(reqwest::header::AUTHORIZATION, auth.expose()),
    }
}

/// `base` + `path`, keeping a path prefix the base URL may have (a proxy's `/influx/`).
pub fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let prefix = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{prefix}/{path}"));
    url.set_query(None);
    url
}

/// Asks a VictoriaMetrics at `url` (trusted as `tls` says, reached at `connect_to` when
/// given) to write out what it holds in memory
/// (`GET /internal/force_flush`); any failure, a server without that path included, is
/// ignored.
pub async fn force_flush(url: &str, tls: &tsload_tls::TlsOptions, connect_to: Option<SocketAddr>) {
    let Ok(tls) = tsload_tls::client_config(tls) else {
        return;
    };
    let base = url.trim_end_matches('/');
    let mut builder = client_builder(tls).timeout(Duration::from_secs(10));
    if let (Some(addr), Ok(parsed)) = (connect_to, reqwest::Url::parse(base))
        && let Some(host) = parsed.host_str()
    {
        builder = builder.resolve(host, addr);
    }
    if let Ok(client) = builder.build() {
        let _ = client
            .get(format!("{base}/internal/force_flush"))
            .send()
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A one-shot HTTP server on 127.0.0.1 that answers `head` and then `body_len` bytes
    /// of 'x', written in 64 KiB pieces while the client reads.
    fn serve(head: String, body_len: usize) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(head.as_bytes());
            let piece = vec![b'x'; 64 * 1024];
            let mut left = body_len;
            while left > 0 {
                let n = left.min(piece.len());
                if s.write_all(&piece[..n]).is_err() {
                    return;
                }
                left -= n;
            }
        });
        addr
    }

    fn client() -> reqwest::Client {
        client_builder(tsload_tls::client_config(&tsload_tls::TlsOptions::default()).unwrap())
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_huge_body_is_read_only_up_to_the_cap() {
        // 1 GiB announced and sent as fast as it is read: the reader stops at the cap.
        let len = 1usize << 30;
        let addr = serve(
            format!("HTTP/1.1 400 Bad Request\r\nContent-Length: {len}\r\n\r\n"),
            len,
        );
        let r = client()
            .get(format!("http://{addr}/"))
            .send()
            .await
            .unwrap();
        let text = error_text(r).await;
        assert_eq!(text.len(), ERROR_BODY_CAP);
        let addr = serve(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n"),
            len,
        );
        let r = client()
            .get(format!("http://{addr}/"))
            .send()
            .await
            .unwrap();
        let e = read_body(r, 1 << 20, false).await.unwrap_err();
        assert!(
            matches!(e, BodyError::TooLarge { cap } if cap == 1 << 20),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed() {
        let addr = serve(
            "HTTP/1.1 303 See Other\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n"
                .to_string(),
            0,
        );
        let r = client()
            .post(format!("http://{addr}/write"))
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let m = redirect_message(r.status(), r.headers()).unwrap();
        assert!(
            m.contains("http://127.0.0.1:1/elsewhere") && m.contains("does not follow"),
            "{m}"
        );
        assert!(redirect_message(StatusCode::OK, r.headers()).is_none());
    }
}
