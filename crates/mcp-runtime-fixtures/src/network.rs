//! A corporate network in miniature, for the tests of proxies and private CAs: a CA
//! made at test time ([`TestCa`]), a self-signed certificate that is its own CA as
//! `openssl req -x509` makes one ([`SelfSigned`]), a TLS front that serves a plain
//! HTTP server over HTTPS with either ([`TlsFront`]), and an HTTP proxy that records
//! the request line of every connection it carries ([`TestProxy`]).
//!
//! The proxy answers `CONNECT host:port` by tunnelling bytes both ways, and a request
//! in absolute form (`POST http://host:port/path HTTP/1.1`) by forwarding it in origin
//! form, then the rest of the connection as bytes. A request line is recorded before
//! anything is forwarded, so once a request through the proxy has been answered, its
//! line is in [`TestProxy::requests`].

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    task::JoinHandle,
};
use tokio_rustls::{
    TlsAcceptor,
    rustls::{
        self,
        pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer},
    },
};

/// A certificate authority made for one test.
pub struct TestCa {
    /// The CA's certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("a CA key");
        let certificate = params.self_signed(&key).expect("the CA certificate");
        Self {
            pem: certificate.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A TLS server configuration whose certificate, issued by this CA, names
    /// `127.0.0.1` and `localhost`.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let (certificate, key) = self.server_certificate();
        server_config(certificate.der().clone(), &key)
    }

    /// A server certificate issued by this CA, naming `127.0.0.1` and `localhost`,
    /// and its key, both PEM: for a server that reads them from files.
    pub fn server_pem(&self) -> (String, String) {
        let (certificate, key) = self.server_certificate();
        (certificate.pem(), key.serialize_pem())
    }

    fn server_certificate(&self) -> (rcgen::Certificate, KeyPair) {
        let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("server certificate parameters");
        let key = KeyPair::generate().expect("a server key");
        let certificate = params
            .signed_by(&key, &self.issuer)
            .expect("the server certificate");
        (certificate, key)
    }
}

/// A self-signed certificate that is its own CA (`CA:TRUE`), as `openssl req -x509`
/// makes one, with its key: the certificate a server presents and a user names as
/// the server's `ca_certificate`.
pub struct SelfSigned {
    /// The certificate, PEM.
    pub pem: String,
    der: rustls::pki_types::CertificateDer<'static>,
    key: KeyPair,
}

impl SelfSigned {
    /// A `CA:TRUE` certificate naming `127.0.0.1` and `localhost` in its
    /// subjectAltName (and `localhost` as its common name), valid from 1975 to 4096
    /// (rcgen's defaults).
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    /// [`SelfSigned::new`], with its parameters changed by `change` before it is
    /// signed (another name, no subjectAltName, an expiry in the past, a usage;
    /// `rcgen::date_time_ymd` makes a date).
    pub fn with(change: impl FnOnce(&mut CertificateParams)) -> Self {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("certificate parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        change(&mut params);
        let key = KeyPair::generate().expect("a key");
        let certificate = params.self_signed(&key).expect("the certificate");
        Self {
            pem: certificate.pem(),
            der: certificate.der().clone(),
            key,
        }
    }

    /// A TLS server configuration presenting this certificate alone.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        server_config(self.der.clone(), &self.key)
    }
}

impl Default for SelfSigned {
    fn default() -> Self {
        Self::new()
    }
}

/// A TLS server configuration presenting `certificate`, whose key is `key`.
fn server_config(
    certificate: rustls::pki_types::CertificateDer<'static>,
    key: &KeyPair,
) -> Arc<rustls::ServerConfig> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key)
        .expect("the server certificate and key");
    Arc::new(config)
}

/// Serves the plain HTTP server at `upstream` over HTTPS on a free loopback port, with
/// a certificate of a [`TestCa`]. Each TLS connection is one connection upstream.
pub struct TlsFront {
    /// Where it listens.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl TlsFront {
    /// Starts a front for `upstream` serving `config`.
    pub async fn start(config: Arc<rustls::ServerConfig>, upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("the bound address");
        let acceptor = TlsAcceptor::from(config);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    if let Ok(mut plain) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    }
                });
            }
        });
        Self { addr, task }
    }

    /// `https://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request the proxy received: its request line and its `Proxy-Authorization`
/// header, if it had one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxiedRequest {
    /// For example `CONNECT 127.0.0.1:4431 HTTP/1.1`.
    pub line: String,
    /// The value of `Proxy-Authorization`.
    pub authorization: Option<String>,
}

/// An HTTP proxy on a free loopback port (see the module docs).
pub struct TestProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<ProxiedRequest>>>,
    task: JoinHandle<()>,
}

impl TestProxy {
    /// Starts the proxy.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let url = format!(
            "http://{}",
            listener.local_addr().expect("the bound address")
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(carry(stream, recorded.clone()));
            }
        });
        Self {
            url,
            requests,
            task,
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ProxiedRequest> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request head from `client`, records it, and carries the connection.
async fn carry(mut client: TcpStream, requests: Arc<Mutex<Vec<ProxiedRequest>>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<&str> = lines.filter(|line| !line.is_empty()).collect();
    let authorization = headers.iter().find_map(|header| {
        let (name, value) = header.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    requests.lock().expect("not poisoned").push(ProxiedRequest {
        line: line.clone(),
        authorization,
    });
    let mut parts = line.split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    if method == "CONNECT" {
        let Ok(mut server) = TcpStream::connect(target).await else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
            return;
        };
        if client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .is_ok()
        {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        }
        return;
    }
    // An absolute-form request: `http://host:port/path`.
    let Some(rest) = target.strip_prefix("http://") else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        return;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let Ok(mut server) = TcpStream::connect(authority).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    let version = parts.next().unwrap_or("HTTP/1.1");
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for header in headers {
        let name = header.split(':').next().unwrap_or_default();
        if !name.to_ascii_lowercase().starts_with("proxy-") {
            forwarded.push_str(header);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("\r\n");
    if server.write_all(forwarded.as_bytes()).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}
