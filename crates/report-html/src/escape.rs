//! How every text from a report reaches the page: HTML-escaped, control characters shown
//! as U+FFFD, secrets of swept values hidden. Every part of the page writes text through
//! here.

/// A swept value as it may be shown: `***` for a secret key, secrets in URLs hidden.
pub(crate) fn redacted(key: &str, value: &str) -> String {
    if tsload_redact::is_secret_key(key) {
        tsload_redact::MASK.to_string()
    } else {
        tsload_redact::url(value)
    }
}

/// Whether the page shows `c` as U+FFFD: a C0 control but newline and tab, DEL, or a C1
/// control.
pub(crate) fn is_hidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// HTML text and attribute escaping, control characters shown as U+FFFD: how every text
/// from a report reaches the page.
/// The escaping itself is the redaction's (`tsload_redact::html_escaped`), so the form a
/// secret takes on a page is the one the redaction looks for.
pub(crate) fn esc(s: &str) -> String {
    if !s.chars().any(is_hidden_control) {
        return tsload_redact::html_escaped(s);
    }
    let shown: String = s
        .chars()
        .map(|c| if is_hidden_control(c) { '\u{fffd}' } else { c })
        .collect();
    tsload_redact::html_escaped(&shown)
}
