//! TLS as libpq's `sslmode`, `sslrootcert`, `sslcert` and `sslkey` say, with OpenSSL (Debian's
//! libssl, through `openssl` and `postgres-openssl`, which also computes the SCRAM channel
//! binding, `tls-server-end-point`).
//!
//! | sslmode | certificate chain checked | host name checked |
//! |---|---|---|
//! | `prefer`, `require` (and `allow` when it falls back to TLS) | only if `sslrootcert` names a file (libpq's rule for an existing root.crt) | no |
//! | `verify-ca` | yes | no |
//! | `verify-full` | yes | yes: a DNS or IP subjectAltName (or the CN) matches `host` |
//!
//! The CAs are `sslrootcert`'s file when it names one, else the system's store (OpenSSL's
//! default paths: /etc/ssl/certs on Debian) — libpq's `sslrootcert=system`; libpq's own default,
//! `~/.postgresql/root.crt`, is not read. TLS 1.2 at least, as libpq's default
//! `ssl_min_protocol_version`. Server name indication is sent for a host name.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use crond::cluster::conninfo::{ConnInfo, RootCert, SslMode};
use openssl::error::ErrorStack;
use openssl::pkey::PKey;
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode, SslVersion};
use openssl::x509::X509;
use openssl::x509::store::X509StoreBuilder;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::tls::TlsConnect;

use crate::db::SetupError;
use crate::guard::{Guard, Shared};

/// The most read of an `sslrootcert` file.
const MAX_ROOT_CERT_FILE: u64 = 4 << 20;

/// OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
const HOSTNAME_MISMATCH: i32 = 62;
const IP_ADDRESS_MISMATCH: i32 = 64;

/// Makes the TLS layer for one connection to `host`, with the guard inside it.
#[derive(Debug)]
pub struct GuardedTls {
    connector: TlsConnectorBox,
    info: ConnInfo,
    shared: Arc<Shared>,
}

/// postgres-openssl's connector has no Debug.
struct TlsConnectorBox(postgres_openssl::TlsConnector);

impl std::fmt::Debug for TlsConnectorBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsConnector")
    }
}

impl GuardedTls {
    pub fn new(
        info: &ConnInfo,
        host: &str,
        shared: &Arc<Shared>,
    ) -> Result<GuardedTls, TlsSetupError> {
        let mode = info.sslmode;
        let check_chain = match mode {
            SslMode::VerifyCa | SslMode::VerifyFull => true,
            _ => matches!(info.sslrootcert, Some(RootCert::File(_))),
        };
        let setup = TlsSetupError::OpenSsl;
        let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(setup)?;
        builder
            .set_min_proto_version(Some(SslVersion::TLS1_2))
            .map_err(setup)?;
        if let Some(RootCert::File(path)) = &info.sslrootcert {
            let mut store = X509StoreBuilder::new().map_err(setup)?;
            for cert in read_certificates(path)? {
                store.add_cert(cert).map_err(setup)?;
            }
            builder.set_cert_store(store.build());
        }
        if let Some((cert, key)) = &info.sslcert {
            builder
                .set_certificate_chain_file(cert)
                .map_err(|e| TlsSetupError::Cert(cert.clone(), e))?;
            let pem = crate::db::read_private_file(key, "sslkey").map_err(TlsSetupError::Key)?;
            let pkey = PKey::private_key_from_pem(&pem)
                .map_err(|e| TlsSetupError::KeyNotPem(key.clone(), e))?;
            builder.set_private_key(&pkey).map_err(setup)?;
            builder
                .check_private_key()
                .map_err(|_| TlsSetupError::NotTheKey {
                    key: key.clone(),
                    cert: cert.clone(),
                })?;
        }
        let verify = if check_chain {
            SslVerifyMode::PEER
        } else {
            SslVerifyMode::NONE
        };
        builder.set_verify(verify);
        let mut config = builder.build().configure().map_err(setup)?;
        config.set_verify_hostname(mode == SslMode::VerifyFull);
        let record = Arc::clone(shared);
        config.set_verify_callback(verify, move |ok, ctx| {
            if !ok {
                let error = ctx.error();
                record.verify_failed(error.as_raw(), error.error_string().to_string());
            }
            ok
        });
        Ok(GuardedTls {
            connector: TlsConnectorBox(postgres_openssl::TlsConnector::new(config, host)),
            info: info.clone(),
            shared: Arc::clone(shared),
        })
    }
}

/// The CA certificates of a PEM file (at least one).
fn read_certificates(path: &Path) -> Result<Vec<X509>, TlsSetupError> {
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ROOT_CERT_FILE).read_to_end(&mut pem))
        .map_err(|e| TlsSetupError::RootCert(path.to_path_buf(), e))?;
    let certs = X509::stack_from_pem(&pem)
        .map_err(|e| TlsSetupError::RootCertNotPem(path.to_path_buf(), e))?;
    if certs.is_empty() {
        return Err(TlsSetupError::NoRootCert(path.to_path_buf()));
    }
    Ok(certs)
}

/// Why TLS could not be set up for a connection: OpenSSL itself, or a file the settings name.
#[derive(Debug)]
pub enum TlsSetupError {
    OpenSsl(ErrorStack),
    /// `sslcert`'s file could not be loaded.
    Cert(PathBuf, ErrorStack),
    /// `sslkey`'s file could not be read as a secret file.
    Key(SetupError),
    KeyNotPem(PathBuf, ErrorStack),
    /// `sslkey` is not the key of `sslcert`.
    NotTheKey {
        key: PathBuf,
        cert: PathBuf,
    },
    /// `sslrootcert`'s file could not be read.
    RootCert(PathBuf, io::Error),
    RootCertNotPem(PathBuf, ErrorStack),
    /// `sslrootcert`'s file holds no certificate.
    NoRootCert(PathBuf),
}

impl fmt::Display for TlsSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsSetupError::OpenSsl(e) => write!(f, "TLS setup: {e}"),
            TlsSetupError::Cert(path, e) => write!(f, "sslcert {}: {e}", path.display()),
            TlsSetupError::Key(e) => write!(f, "{e}"),
            TlsSetupError::KeyNotPem(path, e) => {
                write!(f, "sslkey {}: not a PEM private key: {e}", path.display())
            }
            TlsSetupError::NotTheKey { key, cert } => write!(
                f,
                "sslkey {} is not the key of sslcert {}",
                key.display(),
                cert.display()
            ),
            TlsSetupError::RootCert(path, e) => write!(f, "sslrootcert {}: {e}", path.display()),
            TlsSetupError::RootCertNotPem(path, e) => {
                write!(f, "sslrootcert {}: not PEM: {e}", path.display())
            }
            TlsSetupError::NoRootCert(path) => {
                write!(f, "sslrootcert {}: no certificate in it", path.display())
            }
        }
    }
}

impl std::error::Error for TlsSetupError {}

/// Why a TLS handshake failed, naming the setting: a certificate check that failed, or
/// OpenSSL's reason.
pub fn handshake_error(info: &ConnInfo, host: &str, shared: &Shared, detail: &str) -> String {
    let mode = info.sslmode.name();
    match shared.verify_failure() {
        Some((HOSTNAME_MISMATCH | IP_ADDRESS_MISMATCH, _)) => {
            format!("sslmode={mode}: server certificate does not match host name \"{host}\"")
        }
        Some((_, text)) => {
            let roots = match &info.sslrootcert {
                Some(RootCert::File(p)) => format!("sslrootcert={}", p.display()),
                _ => "the system's CA store (sslrootcert=system)".to_string(),
            };
            format!(
                "sslmode={mode}: server certificate not trusted: {text} (checked against {roots})"
            )
        }
        None => format!("sslmode={mode}: TLS handshake with {host} failed: {detail}"),
    }
}

impl<S> TlsConnect<S> for GuardedTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Guard<postgres_openssl::TlsStream<S>>;
    type Error = Box<dyn Error + Send + Sync>;
    #[allow(clippy::type_complexity)]
    type Future = Pin<Box<dyn Future<Output = Result<Self::Stream, Self::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let GuardedTls {
            connector,
            info,
            shared,
        } = self;
        let handshake = connector.0.connect(stream);
        Box::pin(async move {
            let tls = handshake.await?;
            Ok(Guard::new(tls, info.require_auth, shared))
        })
    }
}
