//! tsload-tls: the TLS client settings every target and probe shares, as a rustls
//! `ClientConfig` with the ring provider.
//!
//! The server is verified against Mozilla's root certificates (webpki-roots) plus, when
//! the scenario names one, the certificates of a PEM `ca_file` (a private CA, or a
//! self-signed server). `insecure_skip_verify` accepts any certificate: it still encrypts,
//! but proves nothing about who answers, and the report says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// How a client checks the server's certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of CA (or server) certificates trusted besides Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// Accept any certificate (encrypted, not authenticated).
    pub insecure_skip_verify: bool,
}

/// Why no TLS configuration could be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("ca_file {path}: {message}")]
    CaFile { path: PathBuf, message: String },
    #[error("TLS set-up: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The crypto provider tsload uses everywhere: ring.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes ring the process's default rustls provider, for libraries that build their own
/// configuration without naming one. Idempotent; a provider installed earlier stays.
pub fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The certificates of a PEM file, in file order.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |message: String| TlsError::CaFile {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(format!("not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(error(
            "holds no certificate (expected PEM blocks `-----BEGIN CERTIFICATE-----`)".into(),
        ));
    }
    Ok(certs)
}

/// A client configuration for `options`: Mozilla's roots plus the CA file's, or no
/// verification at all. No ALPN protocol is offered (HTTP/1.1 and the SQL protocols).
pub fn client_config(options: &TlsOptions) -> Result<ClientConfig, TlsError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    if options.insecure_skip_verify {
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate {
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth());
    }
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = &options.ca_file {
        for cert in read_ca_file(path)? {
            roots.add(cert).map_err(|e| TlsError::CaFile {
                path: path.clone(),
                message: format!("a certificate rustls cannot use as a root ({e})"),
            })?;
        }
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

/// The rustls error somewhere in an error's source chain, if the failure was TLS's.
/// (An `io::Error` hides the error it wraps from `source()`, which returns that error's
/// own source: it is looked into with `get_ref`.)
pub fn find_tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            next = Some(inner);
            continue;
        }
        next = e.source();
    }
    None
}

/// [`certificate_hint`] for the TLS error anywhere in `e`'s chain.
pub fn certificate_hint_of(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    find_tls_error(e).and_then(certificate_hint)
}

/// What to do about a certificate the client refused, or `None` when `e` is another
/// TLS failure. Such a failure is not transient: retrying cannot help.
pub fn certificate_hint(e: &rustls::Error) -> Option<&'static str> {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => Some(
            "the server's certificate does not name the host in target.url: connect by a \
                 name or address the certificate lists (a delay proxy in between changes the \
                 address: use the netem backend for TLS to a named host)",
        ),
        rustls::Error::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => Some(
            "the server's certificate is outside its validity period (expired, or not yet \
             valid: check both clocks)",
        ),
        rustls::Error::InvalidCertificate(C::Revoked) => {
            Some("the server's certificate has been revoked")
        }
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => Some(
            "the server's certificate is not trusted: set target.ca_file to the PEM file of \
             the CA that signed it (or, to encrypt without checking, \
             target.insecure_skip_verify = true)",
        ),
        _ => None,
    }
}

/// `insecure_skip_verify`: any certificate chain is accepted; the handshake's signatures
/// are still checked, so the session is encrypted with whoever holds the key.
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_ca_file_names_the_file_and_the_fault() {
        let dir = std::env::temp_dir().join(format!("tsload-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = client_config(&TlsOptions {
            ca_file: Some(missing.clone()),
            insecure_skip_verify: false,
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!("ca_file {}:", missing.display())),
            "{e}"
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = read_ca_file(&empty).unwrap_err().to_string();
        assert!(e.contains("holds no certificate"), "{e}");
        let broken = dir.join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = read_ca_file(&broken).unwrap_err().to_string();
        assert!(e.contains("not a PEM certificate file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_certificate_error_is_found_through_io_errors_and_hinted() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let outer = std::io::Error::other(io);
        let hint = certificate_hint_of(&outer).expect("found");
        assert!(hint.contains("target.ca_file"), "{hint}");
        let other = std::io::Error::other(rustls::Error::DecryptError);
        assert!(find_tls_error(&other).is_some());
        assert_eq!(certificate_hint_of(&other), None);
        assert_eq!(certificate_hint_of(&std::io::Error::other("plain")), None);
    }

    #[test]
    fn default_trusts_mozillas_roots_and_insecure_builds() {
        assert!(client_config(&TlsOptions::default()).is_ok());
        let c = client_config(&TlsOptions {
            ca_file: None,
            insecure_skip_verify: true,
        })
        .unwrap();
        assert!(c.alpn_protocols.is_empty());
    }
}
