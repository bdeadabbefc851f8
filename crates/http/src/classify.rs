//! What an HTTP answer or a transport failure means for the engine: which [`ErrorKind`]
//! (and so whether the batch is retried), with the server's own message kept.

use reqwest::StatusCode;
use tsload_core::{ErrorKind, SinkError};

/// Longest piece of a server's answer kept in an error message.
const MAX_MESSAGE: usize = 500;

/// The error of a non-success answer: [`classify_status`]'s kind and message; 500, 502
/// and 504 are ambiguous (the write may have been applied, in part or in full: InfluxDB
/// answers 500 to a write that timed out inside it, a gateway's 502/504 says nothing of
/// its upstream), 429 and 503 are refusals; `retry_after` is the answer's `Retry-After`
/// header in seconds, if any.
pub fn status_error(status: StatusCode, body: &str, retry_after: Option<&str>) -> SinkError {
    let (kind, message) = classify_status(status, body);
    let mut e = SinkError::new(kind, message);
    if matches!(status.as_u16(), 500 | 502 | 504) {
        e = e.into_ambiguous();
    }
    // InfluxDB's "partial write" (400): it stored the points it does not name as dropped
    // (beyond the retention policy, a field type conflict). The batch is not counted as
    // written, and is counted ambiguous: the server holds part of it.
    if let Some(dropped) = partial_write_dropped(body) {
        e = SinkError::new(
            kind,
            format!("{} (a partial write: the server dropped {dropped} points of the batch and stored the rest)", e.message),
        )
        .into_ambiguous();
    }
    if let Some(wait) = retry_after.and_then(parse_retry_after) {
        e = e.with_retry_after(wait);
    }
    e
}

/// The error of a non-success answer to a write: a redirect named as one (tsload follows
/// none), else [`status_error`] of its status, its body (capped) and its `Retry-After`.
pub async fn answer_error(response: reqwest::Response) -> SinkError {
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(message) = crate::redirect_message(status, response.headers()) {
        return SinkError::new(ErrorKind::Rejected, message);
    }
    // A 404 says the URL is wrong, so the message names the URL asked (its path: the
    // kind adds its write path to target.url, and a URL ending in one doubles it).
    let asked = response.url().clone();
    let text = crate::error_text(response).await;
    let e = status_error(status, &text, retry_after.as_deref());
    if status == reqwest::StatusCode::NOT_FOUND {
        let mut shown = asked;
        shown.set_query(None);
        return SinkError::new(
            e.kind,
            format!(
                "{} (asked {}: target.url is the server's base URL, to which the kind adds \
                 its write path)",
                e.message,
                tsload_redact::url(shown.as_str())
            ),
        );
    }
    e
}

/// The `dropped=N` of InfluxDB's `partial write` error answer.
pub fn partial_write_dropped(body: &str) -> Option<u64> {
    if !body.contains("partial write") {
        return None;
    }
    let at = body.rfind("dropped=")? + "dropped=".len();
    let digits: String = body[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `Retry-After` as delta-seconds (`120`); an HTTP date or anything else is ignored (the
/// engine's own backoff applies).
pub fn parse_retry_after(value: &str) -> Option<std::time::Duration> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok().map(std::time::Duration::from_secs)
}

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

/// A request that got no answer: timeouts and connection failures are retryable. Only a
/// failure to connect is sure to have sent nothing; any other (a reset or timeout after
/// the body went out) is ambiguous: the server may have stored the rows.
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
    if let Some(hint) = tsload_tls::certificate_hint_of(e) {
        // Not transient: no retry can make the certificate trusted.
        return SinkError::new(ErrorKind::Permission, format!("{url}: {text}; {hint}"));
    }
    let error = SinkError::new(kind, format!("{url}: {text}"));
    if e.is_connect() {
        error
    } else {
        error.into_ambiguous()
    }
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
    fn refusals_are_clean_and_server_errors_ambiguous() {
        let e = |code: u16, after: Option<&str>| {
            status_error(StatusCode::from_u16(code).unwrap(), "", after)
        };
        assert!(!e(429, None).ambiguous && !e(503, None).ambiguous);
        assert!(e(500, None).ambiguous && e(502, None).ambiguous && e(504, None).ambiguous);
        assert!(!e(400, None).ambiguous);
        assert_eq!(
            e(429, Some(" 2 ")).retry_after,
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(
            e(503, Some("Wed, 21 Oct 2015 07:28:00 GMT")).retry_after,
            None
        );
        assert_eq!(e(503, Some("-1")).retry_after, None);
        assert_eq!(e(503, Some("99999999999999999999999")).retry_after, None);
    }

    #[test]
    fn a_partial_write_is_ambiguous_and_names_what_was_dropped() {
        let body = "{\"error\":\"partial write: points beyond retention policy dropped=30\"}";
        assert_eq!(partial_write_dropped(body), Some(30));
        let e = status_error(StatusCode::BAD_REQUEST, body, None);
        assert!(e.ambiguous && e.kind == ErrorKind::Rejected, "{e:?}");
        assert!(e.message.contains("dropped 30 points"), "{}", e.message);
        assert_eq!(
            partial_write_dropped("{\"error\":\"unable to parse\"}"),
            None
        );
        assert_eq!(partial_write_dropped("partial write: dropped=x"), None);
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
