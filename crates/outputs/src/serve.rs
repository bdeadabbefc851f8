//! `--metrics-addr`: `GET /metrics` answered by hyper's HTTP/1 server with the run's
//! exposition, one answer per connection, at most [`METRICS_CONNECTIONS`] at once.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};

use crate::{OutputError, Outputs};

/// Connections `--metrics-addr` serves at once; more are closed as they come.
const METRICS_CONNECTIONS: usize = 32;

/// How long a connection may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one connection may take in all (a reader that never reads its answer).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest request head read (hyper's smallest buffer is 8 KiB).
const HEAD_BYTES: usize = 16 * 1024;

/// Binds `--metrics-addr` before anything runs, so a taken port is a usage error.
pub fn bind_metrics(addr: &str) -> Result<(std::net::TcpListener, SocketAddr), OutputError> {
    let bind = |source| OutputError::Bind {
        addr: addr.to_string(),
        source,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    Ok((listener, local))
}

/// Serves `GET /metrics` on `listener` until the runtime stops (call it on the runtime).
pub fn serve_metrics(listener: std::net::TcpListener, outputs: Outputs) -> Result<(), OutputError> {
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let listen = |source| OutputError::Bind {
        addr: local.clone(),
        source,
    };
    listener.set_nonblocking(true).map_err(listen)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(listen)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(METRICS_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                // Out of file descriptors, say: wait rather than spin on the error.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            // A flood of connections must not take the file descriptors the load, its
            // outputs and its report need: past the cap, a connection is closed at once.
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                drop(socket);
                continue;
            };
            let outputs = outputs.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let service = hyper::service::service_fn(move |request| {
                    let answer = answer(&request, &outputs);
                    async move { Ok::<_, Infallible>(answer) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEAD_TIMEOUT)
                    .max_buf_size(HEAD_BYTES)
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(socket), service);
                let _ = tokio::time::timeout(CONNECTION_TIMEOUT, connection).await;
            });
        }
    });
    Ok(())
}

/// The answer to one request: the exposition for `GET /metrics`, else 404 or 405.
fn answer<B>(request: &Request<B>, outputs: &Outputs) -> Response<Full<Bytes>> {
    let (status, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => (StatusCode::OK, outputs.exposition()),
        (&Method::GET, _) => (StatusCode::NOT_FOUND, "try /metrics\n".to_string()),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "GET /metrics only\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}
