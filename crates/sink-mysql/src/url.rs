//! Pure helpers for `mysql://` URLs: hiding the password in everything printed, and the
//! same URL without its database (to connect before the database exists).

/// `url` with the password of its user info replaced by `***`
/// (`mysql://user:***@host/db`); a URL without a password comes back unchanged.
pub(crate) fn redact(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    // The user info ends at the last '@' before the query: an unescaped '@', '/' or ':'
    // in a password must not leave part of it visible. (A database name with an '@'
    // hides a little more than needed, which is harmless here.)
    let tail = &url[start..];
    let before_query = tail.find('?').unwrap_or(tail.len());
    let Some(at) = tail[..before_query].rfind('@') else {
        return url.to_string();
    };
    let Some(colon) = tail[..at].find(':') else {
        return url.to_string();
    };
    format!("{}***{}", &url[..start + colon + 1], &tail[at..])
}

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
    fn redacts_passwords() {
        assert_eq!(
            redact("mysql://root:secret@127.0.0.1:3306/tsload"),
            "mysql://root:***@127.0.0.1:3306/tsload"
        );
        assert_eq!(
            redact("mariadb://u:p%40ss@db.example:3306"),
            "mariadb://u:***@db.example:3306"
        );
        // A password with raw '@', '/' and ':' in it still vanishes entirely.
        let r = redact("mysql://u:a@b/c:d@host/db?ssl-mode=disabled");
        assert_eq!(r, "mysql://u:***@host/db?ssl-mode=disabled");
        assert!(!r.contains("a@b") && !r.contains("c:d"), "{r}");
        // Nothing to hide.
        for url in [
            "mysql://root@127.0.0.1:3306/tsload",
            "mysql://127.0.0.1/tsload",
            "mysql://h/db?x=a@b",
            "not a url",
        ] {
            assert_eq!(redact(url), url);
        }
    }

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
