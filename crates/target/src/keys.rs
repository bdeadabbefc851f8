//! A section's keys defined once: [`keys!`](crate::keys) makes, from one list of keys
//! (name, type, default, meaning), the typed struct a section is read into, its reader
//! (unknown words and out-of-range values refused by key), its [`KeyDoc`]s for `tsload
//! keys` and `docs/keys.md`, and its part of the plan's JSON. Each value type says how it
//! reads, how the reference names it and how a default is shown ([`KeyValue`]).

use std::fmt;
use std::marker::PhantomData;
use std::sync::LazyLock;
use std::time::Duration;

use crate::section::{KeyError, Section, Word};

/// One key of a section: everything said about it, in one place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyDoc {
    pub name: &'static str,
    /// The type as the reference shows it (`integer`, `` `a` | `b` ``); `table` for a
    /// section of its own.
    pub ty: &'static str,
    pub default: KeyDefault,
    /// The kinds of the section that read the key; empty: every kind.
    pub kinds: &'static [&'static str],
    pub meaning: &'static str,
}

/// What a key is when a scenario leaves it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDefault {
    /// Nothing: the feature is off or the figure is not used.
    Unset,
    /// The TOML value that means the same as leaving the key out.
    Toml(&'static str),
    /// Depends on other keys or on the server: said in words.
    Said(&'static str),
}

/// A value type a key takes: how it is read, named in the reference, and shown.
pub trait KeyValue: Sized {
    /// The type as the reference shows it.
    fn ty() -> String;

    /// `key`'s value in `section`, `None` when unset; a bad value is refused naming the
    /// key and what is allowed.
    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError>;

    /// The value as TOML text, as the reference shows a default.
    fn toml(&self) -> String;

    /// The value in the plan's JSON.
    fn json(&self) -> serde_json::Value;
}

/// A struct of keys made by [`keys!`](crate::keys): read from a section, documented, shown.
pub trait Keys: Sized {
    /// The keys, in the order the reference lists them.
    fn docs() -> &'static [KeyDoc];

    /// Reads every key of `section`, applying each default.
    fn read(section: &Section) -> Result<Self, KeyError>;

    /// Each key's value into `map` (`null` for an unset one; a flattened struct may leave
    /// its unset keys out, as [`TlsKeys`] does).
    fn to_json(&self, map: &mut serde_json::Map<String, serde_json::Value>);
}

/// Text the reference shows for the life of the process: rendered once per key (in a
/// `LazyLock`), so the few hundred bytes are leaked once, like any other static.
pub fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// Builds a `KeyDoc` list once per process from the [`keys!`](crate::keys) definitions.
pub type KeyDocs = LazyLock<Vec<KeyDoc>>;

impl KeyValue for String {
    fn ty() -> String {
        "string".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        Ok(section.text(key)?.map(str::to_string))
    }

    fn toml(&self) -> String {
        toml::Value::String(self.clone()).to_string()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::Value::String(self.clone())
    }
}

impl KeyValue for bool {
    fn ty() -> String {
        "bool".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        section.bool(key)
    }

    fn toml(&self) -> String {
        self.to_string()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::Value::Bool(*self)
    }
}

impl KeyValue for tsload_redact::Secret {
    fn ty() -> String {
        "string (`$NAME` reads the environment)".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        section.secret(key)
    }

    fn toml(&self) -> String {
        format!("\"{}\"", tsload_redact::MASK)
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!(self)
    }
}

impl<T: Word> KeyValue for T {
    fn ty() -> String {
        T::WORDS
            .iter()
            .map(|(w, _)| format!("`{w}`"))
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        section.word(key)
    }

    fn toml(&self) -> String {
        format!("\"{}\"", self.word())
    }

    fn json(&self) -> serde_json::Value {
        serde_json::Value::String(self.word().into())
    }
}

/// A string that must not be empty or blank (a URL, a database name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonEmpty(pub String);

impl NonEmpty {
    pub fn of(text: &str) -> NonEmpty {
        NonEmpty(text.to_string())
    }
}

impl KeyValue for NonEmpty {
    fn ty() -> String {
        "string".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        match section.text(key)? {
            None => Ok(None),
            Some(t) if t.trim().is_empty() => Err(section.error(key, "must not be empty")),
            Some(t) => Ok(Some(NonEmpty(t.to_string()))),
        }
    }

    fn toml(&self) -> String {
        self.0.toml()
    }

    fn json(&self) -> serde_json::Value {
        self.0.json()
    }
}

/// An HTTP URL: `http://` or `https://`, the scheme in any case, kept lower-case. Shown
/// (`Debug`, JSON) with a password in it as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl(pub String);

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HttpUrl")
            .field(&tsload_redact::url(&self.0))
            .finish()
    }
}

impl HttpUrl {
    pub fn of(text: &str) -> HttpUrl {
        HttpUrl(text.to_string())
    }
}

impl KeyValue for HttpUrl {
    fn ty() -> String {
        "string".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        Ok(section.http_url(key)?.map(HttpUrl))
    }

    fn toml(&self) -> String {
        self.0.toml()
    }

    fn json(&self) -> serde_json::Value {
        tsload_redact::url(&self.0).into()
    }
}

/// A URL or DSN that is not empty, shown (`Debug`, JSON) with its password as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Url(pub String);

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Url")
            .field(&tsload_redact::url(&self.0))
            .finish()
    }
}

impl Url {
    pub fn of(text: &str) -> Url {
        Url(text.to_string())
    }
}

impl KeyValue for Url {
    fn ty() -> String {
        "string".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        Ok(NonEmpty::read(section, key)?.map(|t| Url(t.0)))
    }

    fn toml(&self) -> String {
        self.0.toml()
    }

    fn json(&self) -> serde_json::Value {
        tsload_redact::url(&self.0).into()
    }
}

/// A duration of at least `MIN_MICROS` microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtLeast<const MIN_MICROS: u64>(pub Duration);

impl<const MIN_MICROS: u64> AtLeast<MIN_MICROS> {
    pub const fn secs(secs: u64) -> Self {
        AtLeast(Duration::from_secs(secs))
    }

    pub const fn millis(millis: u64) -> Self {
        AtLeast(Duration::from_millis(millis))
    }
}

impl<const MIN_MICROS: u64> KeyValue for AtLeast<MIN_MICROS> {
    fn ty() -> String {
        "duration".into()
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        Ok(section
            .duration(key, Duration::from_micros(MIN_MICROS))?
            .map(AtLeast))
    }

    fn toml(&self) -> String {
        format!("\"{}\"", humantime::format_duration(self.0))
    }

    fn json(&self) -> serde_json::Value {
        serde_json::Value::String(humantime::format_duration(self.0).to_string())
    }
}

/// An integer in `LO..=HI`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const LO: i64, const HI: i64>(pub i64);

impl<const LO: i64, const HI: i64> KeyValue for Int<LO, HI> {
    fn ty() -> String {
        format!("integer, {LO} to {HI}")
    }

    fn read(section: &Section, key: &str) -> Result<Option<Self>, KeyError> {
        Ok(section.int(key, LO, HI)?.map(Int))
    }

    fn toml(&self) -> String {
        self.0.to_string()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!(self.0)
    }
}

/// The keys every kind with TLS shares, checked together by [`TlsKeys::options`].
#[derive(Debug, Clone, PartialEq)]
pub struct TlsKeys {
    pub ca_file: Option<String>,
    pub insecure_skip_verify: bool,
}

impl Keys for TlsKeys {
    fn docs() -> &'static [KeyDoc] {
        const DOCS: &[KeyDoc] = &[
            KeyDoc {
                name: "ca_file",
                ty: "string",
                default: KeyDefault::Unset,
                kinds: &[],
                meaning: "PEM CA certificates trusted besides Mozilla's",
            },
            KeyDoc {
                name: "insecure_skip_verify",
                ty: "bool",
                default: KeyDefault::Toml("false"),
                kinds: &[],
                meaning: "TLS without checking the certificate",
            },
        ];
        DOCS
    }

    fn read(section: &Section) -> Result<Self, KeyError> {
        Ok(TlsKeys {
            ca_file: String::read(section, "ca_file")?,
            insecure_skip_verify: bool::read(section, "insecure_skip_verify")?.unwrap_or(false),
        })
    }

    fn to_json(&self, map: &mut serde_json::Map<String, serde_json::Value>) {
        // Shown only when set, as a plan without TLS has always been shown.
        if let Some(ca) = &self.ca_file {
            map.insert("ca_file".into(), ca.json());
        }
        if self.insecure_skip_verify {
            map.insert("insecure_skip_verify".into(), true.json());
        }
    }
}

impl TlsKeys {
    /// The options, checked: the CA file must hold certificates, the two exclude each
    /// other, and either needs a TLS URL (`tls_url`). `section` names the keys in errors.
    pub fn options(
        &self,
        section: &Section,
        tls_url: bool,
    ) -> Result<tsload_tls::TlsOptions, KeyError> {
        let insecure = self.insecure_skip_verify;
        if self.ca_file.is_some() && insecure {
            return Err(section.error(
                "ca_file",
                "is pointless with insecure_skip_verify = true, which trusts any certificate; \
                 give one of the two",
            ));
        }
        let ca_file = match &self.ca_file {
            None => None,
            Some(v) => {
                let path = std::path::PathBuf::from(v);
                tsload_tls::read_ca_file(&path)
                    .map_err(|e| section.error("ca_file", e.to_string()))?;
                Some(path)
            }
        };
        if (ca_file.is_some() || insecure) && !tls_url {
            let key = if ca_file.is_some() {
                "ca_file"
            } else {
                "insecure_skip_verify"
            };
            return Err(section.error(
                key,
                "is a TLS setting, but target.url does not ask for TLS (use https://, or \
                 sslmode/ssl-mode in a SQL URL)",
            ));
        }
        Ok(tsload_tls::TlsOptions {
            ca_file,
            insecure_skip_verify: insecure,
        })
    }

    /// A SQL URL with the TLS keys folded into its query: `ca_file` verifies the server
    /// against that CA and its name, `insecure_skip_verify = true` encrypts without
    /// checking. A URL that sets TLS keys itself keeps them, and then the keys are
    /// refused (one place for one setting).
    pub fn sql_url(
        &self,
        section: &Section,
        url: tsload_redact::SecretUrl,
        family: crate::sql_tls::SqlFamily,
    ) -> Result<tsload_redact::SecretUrl, KeyError> {
        let tls = self.options(section, true)?;
        let shown = crate::sql_tls::url_with_tls(url.shown().to_string(), family, &tls);
        shown.map(|shown| url.with_shown(&shown)).map_err(|e| {
            let key = if self.ca_file.is_some() {
                "ca_file"
            } else {
                "insecure_skip_verify"
            };
            section.error(
                key,
                format!(
                    "target.url sets {} already; give TLS settings in one place (the URL, \
                     or these keys)",
                    e.key
                ),
            )
        })
    }
}

/// A [`keys!`](crate::keys) default shown in the reference: the value as TOML.
pub fn toml_default<T: KeyValue>(value: &T) -> KeyDefault {
    KeyDefault::Toml(leak(value.toml()))
}

/// The reference's type for `T`, rendered once.
pub fn type_name<T: KeyValue>(_: PhantomData<T>) -> &'static str {
    leak(T::ty())
}

/// Defines a section's keys once: the struct (a key with a default holds its type, one
/// without an `Option`), and its [`Keys`] implementation: reader, [`KeyDoc`]s and JSON.
///
/// ```ignore
/// tsload_target::keys! {
///     /// `[target]` of `kind = "influx"`.
///     pub struct InfluxKeys {
///         /// the server's base URL
///         url: HttpUrl = HttpUrl::of("http://127.0.0.1:8086");
///         /// basic auth password, kept out of reports
///         password: Secret;
///         /// whether rows may be written twice
///         delivery: Delivery, "`exactly_once` where the server has transactions";
///         ..tls: TlsKeys;
///     }
/// }
/// ```
///
/// A key after `,` has a default said in words (it depends on other keys) and is read as
/// an `Option`; `..name: Type` flattens another [`Keys`] struct's keys into this one.
#[macro_export]
macro_rules! keys {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $meaning:literal])+
                $field:ident : $ty:ty $(= $default:expr)? $(, $said:literal)? ;
            )*
            $(.. $flat:ident : $flat_ty:ty ;)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $meaning])+
                pub $field: $crate::keys!(@type $ty $(= $default)?),
            )*
            $(pub $flat: $flat_ty,)*
        }

        impl $crate::Keys for $name {
            fn docs() -> &'static [$crate::KeyDoc] {
                static DOCS: $crate::KeyDocs = $crate::KeyDocs::new(|| {
                    #[allow(unused_mut, reason = "not every struct flattens another")]
                    let mut docs = vec![$($crate::KeyDoc {
                        name: stringify!($field),
                        ty: $crate::type_name(::std::marker::PhantomData::<$ty>),
                        default: $crate::keys!(@default $ty $(= $default)? $(, $said)?),
                        kinds: &[],
                        meaning: concat!($($meaning),+).trim(),
                    }),*];
                    $(docs.extend_from_slice(<$flat_ty as $crate::Keys>::docs());)*
                    docs
                });
                &DOCS
            }

            fn read(section: &$crate::Section) -> Result<Self, $crate::KeyError> {
                Ok($name {
                    $($field: $crate::keys!(@read section, $field, $ty $(= $default)?),)*
                    $($flat: <$flat_ty as $crate::Keys>::read(section)?,)*
                })
            }

            fn to_json(&self, map: &mut $crate::serde_json::Map<String, $crate::serde_json::Value>) {
                $(map.insert(
                    stringify!($field).into(),
                    $crate::keys!(@json &self.$field, $ty $(= $default)?),
                );)*
                $(<$flat_ty as $crate::Keys>::to_json(&self.$flat, map);)*
            }
        }
    };
    (@type $ty:ty) => { Option<$ty> };
    (@type $ty:ty = $default:expr) => { $ty };
    (@default $ty:ty) => { $crate::KeyDefault::Unset };
    (@default $ty:ty = $default:expr) => { $crate::toml_default::<$ty>(&$default) };
    (@default $ty:ty , $said:literal) => { $crate::KeyDefault::Said($said) };
    (@read $section:ident, $field:ident, $ty:ty) => {
        <$ty as $crate::KeyValue>::read($section, stringify!($field))?
    };
    (@read $section:ident, $field:ident, $ty:ty = $default:expr) => {
        <$ty as $crate::KeyValue>::read($section, stringify!($field))?.unwrap_or_else(|| $default)
    };
    (@json $value:expr, $ty:ty) => {
        $value.as_ref().map_or($crate::serde_json::Value::Null, <$ty as $crate::KeyValue>::json)
    };
    (@json $value:expr, $ty:ty = $default:expr) => {
        <$ty as $crate::KeyValue>::json($value)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        Fast,
        Safe,
    }

    impl Word for Mode {
        const WORDS: &'static [(&'static str, Self)] =
            &[("fast", Mode::Fast), ("safe", Mode::Safe)];
    }

    crate::keys! {
        /// A section for the test.
        struct TestKeys {
            /// where to
            url: HttpUrl = HttpUrl::of("http://127.0.0.1:1");
            /// how
            mode: Mode = Mode::Safe;
            /// how many
            /// at most
            count: Int<1, 10>;
            /// how long
            wait: AtLeast<1000> = AtLeast::secs(60);
            /// who
            password: tsload_redact::Secret;
            /// what it guarantees
            guarantee: Mode, "depends on the server";
            ..tls: TlsKeys;
        }
    }

    fn section(pairs: &[(&str, toml::Value)]) -> Section {
        Section::of_pairs("target", pairs)
    }

    #[test]
    fn the_docs_the_reader_and_the_json_come_from_one_definition() {
        let docs = TestKeys::docs();
        let names: Vec<&str> = docs.iter().map(|d| d.name).collect();
        assert_eq!(
            names,
            [
                "url",
                "mode",
                "count",
                "wait",
                "password",
                "guarantee",
                "ca_file",
                "insecure_skip_verify"
            ]
        );
        assert_eq!(docs[0].default, KeyDefault::Toml("\"http://127.0.0.1:1\""));
        assert_eq!(docs[1].ty, "`fast` | `safe`");
        assert_eq!(docs[1].default, KeyDefault::Toml("\"safe\""));
        assert_eq!(docs[2].ty, "integer, 1 to 10");
        assert_eq!(docs[2].meaning, "how many at most");
        assert_eq!(docs[3].default, KeyDefault::Toml("\"1m\""));
        assert_eq!(docs[5].default, KeyDefault::Said("depends on the server"));

        let empty = TestKeys::read(&section(&[])).unwrap();
        assert_eq!(empty.mode, Mode::Safe);
        assert_eq!(empty.count, None);
        assert_eq!(empty.wait.0, Duration::from_secs(60));
        // Each documented default, set, reads as leaving the key out.
        for doc in docs {
            if let KeyDefault::Toml(text) = doc.default {
                let value =
                    toml::from_str::<toml::Table>(&format!("v = {text}")).unwrap()["v"].clone();
                assert_eq!(
                    TestKeys::read(&section(&[(doc.name, value)])).unwrap(),
                    empty,
                    "{}",
                    doc.name
                );
            }
        }

        let set = TestKeys::read(&section(&[
            ("mode", "fast".into()),
            ("count", 3.into()),
            ("password", "hunter2".into()),
        ]))
        .unwrap();
        let mut json = serde_json::Map::new();
        set.to_json(&mut json);
        assert_eq!(json["mode"], "fast");
        assert_eq!(json["count"], 3);
        assert_eq!(json["wait"], "1m");
        assert_eq!(json["password"], tsload_redact::MASK);
        assert_eq!(json["guarantee"], serde_json::Value::Null);
        assert!(!json.contains_key("ca_file"));
        // A password in a URL is shown as `***`, by Debug too.
        let url = Url::of("mysql://u:hunter2@h/db");
        let http = HttpUrl::of("http://u:hunter2@h:1");
        for shown in [
            format!("{url:?}"),
            format!("{http:?}"),
            url.json().to_string(),
            http.json().to_string(),
        ] {
            assert!(
                !shown.contains("hunter2") && shown.contains("***"),
                "{shown}"
            );
        }
    }

    #[test]
    fn each_type_refuses_a_bad_value_naming_the_key() {
        for (key, value, says) in [
            ("url", toml::Value::from("ftp://h"), "is not an HTTP URL"),
            ("mode", "slow".into(), "allowed: fast, safe"),
            ("count", 11.into(), "allowed: 1 to 10"),
            ("wait", "10us".into(), "allowed: at least 1ms"),
            ("insecure_skip_verify", "yes".into(), "true or false"),
        ] {
            let e = TestKeys::read(&section(&[(key, value)])).unwrap_err();
            assert_eq!(e.key, format!("target.{key}"));
            assert!(e.message.contains(says), "{key}: {}", e.message);
        }
    }
}
