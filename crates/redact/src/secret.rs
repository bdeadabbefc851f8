//! [`Secret`]: a password, token or credential as a type that cannot be printed, logged or
//! written to a report by mistake.

use std::fmt;

use crate::MASK;

/// A password, token or credential. Its `Debug`, `Display` and `Serialize` give `***`;
/// its value is read only through [`Secret::expose`], where a driver's connection or a
/// request header is built. Making one registers the value (and its encodings) with the
/// output redaction, the safety net for a server that echoes it back.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`, registering it with the redaction.
    pub fn new(value: impl Into<String>) -> Secret {
        let value = value.into();
        crate::register(&value);
        Secret(value)
    }

    /// The value itself: only where a driver or header is built from it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({MASK})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(MASK)
    }
}

/// HTTP Basic credentials: the `Authorization` header value built from a user and a
/// [`Secret`] password, itself a secret (its base64 is registered with the redaction, so an
/// echo of the header is hidden too).
pub fn basic_auth_header(user: &str, password: &Secret) -> Secret {
    use base64::Engine as _;
    crate::register_basic_auth(user, password.expose());
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.expose()));
    Secret::new(format!("Basic {encoded}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_shows_only_its_mask() {
        let s = Secret::new("pw-KNRY-type");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret(***))");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"***\"");
        assert_eq!(s.expose(), "pw-KNRY-type");
        // Made known to the redaction on the way in.
        assert_eq!(crate::text("echo: pw-KNRY-type"), "echo: ***");
    }

    #[test]
    fn basic_auth_is_base64_of_user_colon_password() {
        let header = |u: &str, p: &str| basic_auth_header(u, &Secret::new(p)).expose().to_string();
        assert_eq!(
            header("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(header("a", ""), "Basic YTo=");
        assert_eq!(header("ab", "c"), "Basic YWI6Yw==");
    }

    #[test]
    fn an_echoed_basic_auth_header_is_hidden_in_every_form() {
        let header = basic_auth_header("me", &Secret::new("b<&>\"asic-pw"));
        // base64("me:b<&>\"asic-pw")
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode("me:b<&>\"asic-pw");
        assert_eq!(header.expose(), format!("Basic {b64}"));
        for echoed in [
            format!("401: bad Authorization: Basic {b64}"),
            format!("bad credentials {}", b64.trim_end_matches('=')),
            "password b&lt;&amp;&gt;&quot;asic-pw in a page".to_string(),
            "password b<&>\\\"asic-pw in JSON".to_string(),
        ] {
            let shown = crate::text(&echoed);
            assert!(!shown.contains("asic-pw"), "{shown}");
            assert!(!shown.contains(b64.trim_end_matches('=')), "{shown}");
        }
    }
}
