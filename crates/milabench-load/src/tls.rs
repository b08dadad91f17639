//! HTTPS endpoints: TLS with rustls, trusting the system's certificate authorities and those of
//! a PEM file the user gives (a private or self-signed one). Certificates are always verified:
//! a measurement through a connection anyone could intercept is not worth having.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::LoadError;

/// The TLS side of a connection pool: the trusted roots, shared by every connection.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient").finish_non_exhaustive()
    }
}

impl TlsClient {
    /// A client trusting the system's certificate authorities and those of `ca_file` (PEM),
    /// if given. A file that cannot be read or holds no certificate is an error naming it.
    pub fn new(ca_file: Option<&Path>) -> Result<TlsClient, LoadError> {
        let mut roots = rustls::RootCertStore::empty();
        // Unreadable system stores are skipped: a CA file may be all that is needed.
        let system = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(system.certs);
        if let Some(path) = ca_file {
            let fail = |reason: String| LoadError::CaFile {
                path: PathBuf::from(path),
                reason,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| fail(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| fail(e.to_string()))?;
            if certs.is_empty() {
                return Err(fail("it holds no PEM certificate".into()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| fail(e.to_string()))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| LoadError::Settings(format!("TLS cannot be set up: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(TlsClient {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Opens TLS over `stream` to `host` (a name or an address, as in the URL).
    pub async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?
            .to_owned();
        self.connector.connect(name, stream).await
    }
}
