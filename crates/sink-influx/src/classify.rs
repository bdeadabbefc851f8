//! What an HTTP answer or a transport failure means for the engine: which [`ErrorKind`]
//! (and so whether the batch is retried), with the server's own message kept.

use reqwest::StatusCode;
use tsload_core::{ErrorKind, SinkError};

/// Longest piece of a server's answer kept in an error message.
const MAX_MESSAGE: usize = 500;

/// Kind and message of a non-success answer: 429 and 5xx are worth retrying
/// (`Unavailable`); 401/403 are `Permission`; other 4xx are `Rejected` and stop the run.
pub fn classify_status(status: StatusCode, body: &str) -> (ErrorKind, String) {
    let kind = match status.as_u16() {
        429 | 500..=599 => ErrorKind::Unavailable,
        401 | 403 => ErrorKind::Permission,
        400..=499 => ErrorKind::Rejected,
        _ => ErrorKind::Other,
    };
    let body = body.trim();
    let mut text: String = body.chars().take(MAX_MESSAGE).collect();
    if text.len() < body.len() {
        text.push_str("...");
    }
    let message = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    };
    (kind, message)
}

/// A request that got no answer: timeouts and connection failures are retryable.
pub fn classify_request_error(e: &reqwest::Error, url: &str) -> SinkError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() || e.is_request() || e.is_body() {
        ErrorKind::Connection
    } else {
        ErrorKind::Other
    };
    // reqwest's message names the URL already; `without_url` keeps the text short.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    SinkError::new(kind, format!("{url}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_kinds() {
        let k = |code: u16| classify_status(StatusCode::from_u16(code).unwrap(), "").0;
        assert_eq!(k(429), ErrorKind::Unavailable);
        assert_eq!(k(500), ErrorKind::Unavailable);
        assert_eq!(k(503), ErrorKind::Unavailable);
        assert_eq!(k(400), ErrorKind::Rejected);
        assert_eq!(k(404), ErrorKind::Rejected);
        assert_eq!(k(401), ErrorKind::Permission);
        assert_eq!(k(403), ErrorKind::Permission);
        assert!(k(503).is_retryable() && !k(400).is_retryable());
    }

    #[test]
    fn server_message_is_kept_and_bounded() {
        let (_, m) = classify_status(
            StatusCode::BAD_REQUEST,
            "{\"error\":\"field type conflict\"}\n",
        );
        assert_eq!(
            m,
            "HTTP 400 Bad Request: {\"error\":\"field type conflict\"}"
        );
        let (_, m) = classify_status(StatusCode::BAD_GATEWAY, &"x".repeat(2000));
        assert!(m.len() < 600 && m.ends_with("..."), "{}", m.len());
        let (_, m) = classify_status(StatusCode::INTERNAL_SERVER_ERROR, "");
        assert_eq!(m, "HTTP 500 Internal Server Error");
    }
}
