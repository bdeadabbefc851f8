//! Pure helpers for `mysql://` URLs: hiding the password in everything printed, and the
//! same URL without its database (to connect before the database exists).

/// `url` with its secrets hidden, for messages: tsload's one redaction.
pub(crate) use tsload_redact::url as redact;

/// `url` without its path (the database name): `mysql://u@h:3306/db?x=1` becomes
/// `mysql://u@h:3306?x=1`. The authority ends at the first '/', '?' or '#', as URL
/// parsers (sqlx's included) read it.
pub(crate) fn without_database(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let tail = &url[start..];
    let Some(path) = tail.find(['/', '?', '#']) else {
        return url.to_string();
    };
    let rest = &tail[path..];
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    format!("{}{}", &url[..start + path], &rest[path_end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_database() {
        assert_eq!(
            without_database("mysql://root@127.0.0.1:3306/tsload"),
            "mysql://root@127.0.0.1:3306"
        );
        assert_eq!(
            without_database("mysql://u:p@h/db?ssl-mode=disabled&charset=utf8mb4"),
            "mysql://u:p@h?ssl-mode=disabled&charset=utf8mb4"
        );
        assert_eq!(without_database("mysql://h:1"), "mysql://h:1");
        assert_eq!(without_database("mysql://h/"), "mysql://h");
    }
}
