//! TLS for test servers: a throwaway certificate authority made with the `openssl`
//! command, a server certificate it signs for 127.0.0.1 and `localhost`, and the rustls
//! connector through which the testbed's own HTTP client talks to a server started with
//! TLS on.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::TestbedError;

/// How long one `openssl` step may take.
const OPENSSL_TIMEOUT: Duration = Duration::from_secs(60);

/// A certificate authority made for one test, with one server certificate.
#[derive(Debug)]
pub struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    /// Makes a CA (`ca.pem`, EC P-256, valid two days) and a server certificate it signs
    /// (`server.pem`, `server.key`) for IP 127.0.0.1 and DNS `localhost`, with `openssl`.
    pub fn new(name: &str) -> Result<TestCa, TestbedError> {
        let dir = crate::scratch::dir("ca")
            .map_err(|e| TestbedError::io("creating the CA's temp dir", e))?;
        // The servers may run as another user (PostgreSQL): they must reach the files.
        set_mode(dir.path(), 0o755)?;
        let p = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"],
                &ec[..],
                &["-keyout", &p("ca.key"), "-out", &p("ca.pem")],
            ]
            .concat(),
            &[
                "-days",
                "2",
                "-subj",
                &format!("/CN={name} test CA"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )?;
        openssl(
            &[
                &["req"],
                &ec[..],
                &["-keyout", &p("server.key"), "-out", &p("server.csr")],
            ]
            .concat(),
            &["-subj", "/CN=localhost"],
        )?;
        std::fs::write(
            dir.path().join("server.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .map_err(|e| TestbedError::io("writing server.ext", e))?;
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                &p("server.csr"),
                "-CA",
                &p("ca.pem"),
                "-CAkey",
                &p("ca.key"),
                "-CAcreateserial",
                "-out",
                &p("server.pem"),
                "-days",
                "2",
                "-extfile",
                &p("server.ext"),
            ],
            &[],
        )?;
        for f in ["server.pem", "ca.pem"] {
            set_mode(&dir.path().join(f), 0o644)?;
        }
        Ok(TestCa { dir })
    }

    /// The CA's certificate (PEM): what a client trusts.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server's certificate (PEM), signed by the CA.
    pub fn cert_file(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server's private key (PEM, mode 0600).
    pub fn key_file(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }

    /// Hands the key to `uid:gid` (PostgreSQL wants its key owned by the server's user).
    pub(crate) fn give_key_to(&self, uid: u32, gid: u32) -> Result<(), TestbedError> {
        std::os::unix::fs::chown(self.key_file(), Some(uid), Some(gid))
            .map_err(|e| TestbedError::io("handing the server key to the server's user", e))
    }

    /// A rustls connector for the testbed's HTTP client that trusts this CA only.
    pub(crate) fn connector(&self) -> Result<Arc<RustlsConnector>, TestbedError> {
        let pem = std::fs::read(self.ca_file())
            .map_err(|e| TestbedError::io("reading the test CA", e))?;
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::pem::PemObject as _;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| TestbedError::answer("the test CA", e.to_string()))?;
            roots
                .add(cert)
                .map_err(|e| TestbedError::answer("the test CA", e.to_string()))?;
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| TestbedError::answer("TLS set-up", e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Arc::new(RustlsConnector(Arc::new(config))))
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), TestbedError> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| TestbedError::io(format!("chmod {mode:o} {}", path.display()), e))
}

fn openssl(args: &[&str], more: &[&str]) -> Result<(), TestbedError> {
    let bin = crate::locate::binary("openssl", "TSLOAD_OPENSSL", "the openssl tool", "openssl")?;
    let mut command = Command::new(bin);
    command.args(args).args(more);
    let shown = format!("openssl {}", args.first().copied().unwrap_or_default());
    let out = crate::process::output(command, OPENSSL_TIMEOUT)
        .map_err(|e| TestbedError::answer(&shown, e.to_string()))?;
    if !out.status.success() {
        return Err(TestbedError::answer(
            shown,
            format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(())
}

/// ureq's TLS seam over rustls (ureq's own `tls` feature would pull a second crypto
/// provider).
#[derive(Debug)]
pub(crate) struct RustlsConnector(Arc<rustls::ClientConfig>);

#[derive(Debug)]
struct TlsStream(rustls::StreamOwned<rustls::ClientConnection, Box<dyn ureq::ReadWrite>>);

impl std::io::Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl ureq::ReadWrite for TlsStream {
    fn socket(&self) -> Option<&std::net::TcpStream> {
        self.0.sock.socket()
    }
}

impl ureq::TlsConnector for RustlsConnector {
    fn connect(
        &self,
        dns_name: &str,
        io: Box<dyn ureq::ReadWrite>,
    ) -> Result<Box<dyn ureq::ReadWrite>, ureq::Error> {
        let name = rustls::pki_types::ServerName::try_from(dns_name.to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let conn =
            rustls::ClientConnection::new(self.0.clone(), name).map_err(std::io::Error::other)?;
        Ok(Box::new(TlsStream(rustls::StreamOwned::new(conn, io))))
    }
}
