//! Reaching HTTP servers from a corporate network: the proxies named by the
//! environment, and CA certificates to trust besides the system's.
//!
//! Everything is read when a server's endpoint is resolved, through the same
//! environment lookup as its headers (so tests give a map, and the runtime its own
//! process environment); the HTTP client never reads the environment itself. The rules:
//!
//! 1. Proxies are read as curl reads them, the lowercase name first: `http_proxy` /
//!    `HTTP_PROXY` for `http://` servers, `https_proxy` / `HTTPS_PROXY` for `https://`
//!    servers (reached through an HTTP `CONNECT` tunnel), `all_proxy` / `ALL_PROXY` for
//!    either when its own variable is unset, and `no_proxy` / `NO_PROXY` for the hosts
//!    reached directly (a comma-separated list of host names, which also cover their
//!    subdomains, IP addresses and CIDR ranges; `*` for all). An empty variable is
//!    unset. A proxy URL without a scheme is an `http://` one, as for curl.
//! 2. Through a proxy, the server's host name is resolved by the proxy; this process
//!    resolves only the proxy's own host name.
//! 3. A proxy variable that holds no usable proxy (not a URL, a SOCKS proxy, an
//!    `https://` proxy in a build without TLS) fails the startup of each HTTP server
//!    with an error naming the variable, never its value: a proxy URL may carry a
//!    user name and password. The `Debug` output shows proxy URLs masked by
//!    [`crate::redact::url`].
//! 4. The certificates of `SSL_CERT_FILE` and of a server's `ca_certificate` (PEM
//!    files) are trusted in addition to the system's roots, `ca_certificate` for that
//!    server only. The file is read when the server starts: a file that is missing,
//!    unreadable, or holds no valid certificate fails that server's startup with an
//!    error naming the file and the setting that named it. On Linux, the system's
//!    roots are themselves read as OpenSSL reads them, so there `SSL_CERT_FILE`
//!    also replaces the system bundle, as it does for curl and OpenSSL. A
//!    certificate of these files that the server presents as its own is trusted as
//!    OpenSSL trusts it, a self-signed one that is its own CA included ([`trust`]).
//! 5. Without the `tls` feature `SSL_CERT_FILE` is ignored (no server is reached over
//!    TLS), and a server with `ca_certificate` fails to start, saying so.
//!
//! Nothing here reaches a stdio server's process: its environment is built from its
//! own `env` and `env_vars` only.

use std::{ffi::OsString, path::PathBuf};

use crate::{
    config::HttpConfig,
    transport::error::{HttpFailure, StartupError},
};

/// The proxy variables of rule 1, lowercase first, for `http://` servers.
const HTTP_PROXY_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];
/// The same for `https://` servers.
const HTTPS_PROXY_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];
/// The hosts reached without a proxy.
const NO_PROXY_VARS: [&str; 2] = ["no_proxy", "NO_PROXY"];
/// A PEM bundle of CA certificates to trust.
const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

/// How the HTTP client of one server reaches it: proxies and extra CA certificates.
#[derive(Clone, Default)]
pub(crate) struct Network {
    /// The proxy for `http://` servers.
    http_proxy: Option<ProxyUrl>,
    /// The proxy for `https://` servers.
    https_proxy: Option<ProxyUrl>,
    /// The `no_proxy` list, as written.
    no_proxy: Option<String>,
    /// CA certificate files to trust besides the system's roots.
    ca_files: Vec<CaFile>,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("http_proxy", &self.http_proxy)
            .field("https_proxy", &self.https_proxy)
            .field("no_proxy", &self.no_proxy)
            .field("ca_files", &self.ca_files)
            .finish()
    }
}

/// A proxy URL and the variable it was read from.
#[derive(Clone)]
struct ProxyUrl {
    variable: &'static str,
    url: String,
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} from {}",
            crate::redact::url(&self.url),
            self.variable
        )
    }
}

/// The certificates of one CA file.
#[derive(Clone)]
struct CaFile {
    path: PathBuf,
    #[cfg(feature = "tls")]
    certificates: Vec<reqwest::Certificate>,
    /// The same certificates, DER, for the verifier of [`trust`].
    #[cfg(feature = "tls")]
    ders: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl std::fmt::Debug for CaFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())
    }
}

/// The setting that named a CA file, as a message says it.
const CA_KEY: &str = "`ca_certificate`";
const CA_VARIABLE: &str = "environment variable `SSL_CERT_FILE`";

impl Network {
    /// Reads the proxies and CA files for the server of `http` (the module's rules),
    /// looking variables up through `env`.
    pub(crate) fn resolve(
        http: &HttpConfig,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, StartupError> {
        let set = |name: &str| env(name).filter(|value| !value.is_empty());
        let first = |names: &[&'static str]| {
            names
                .iter()
                .find_map(|&name| set(name).map(|value| (name, value)))
        };
        let proxy = |names: &[&'static str]| {
            first(names)
                .map(|(variable, value)| proxy_url(variable, value))
                .transpose()
        };
        let no_proxy = match first(&NO_PROXY_VARS) {
            None => None,
            Some((variable, value)) => {
                Some(
                    value
                        .into_string()
                        .map_err(|_| StartupError::ProxyVariable {
                            variable,
                            problem: "is not valid UTF-8 (list host names as text)".to_owned(),
                        })?,
                )
            }
        };
        let mut ca_files = Vec::new();
        if cfg!(feature = "tls")
            && let Some(path) = set(SSL_CERT_FILE)
        {
            ca_files.push(CaFile::read(CA_VARIABLE, PathBuf::from(path))?);
        }
        if let Some(path) = &http.ca_certificate {
            ca_files.push(CaFile::read(CA_KEY, path.clone())?);
        }
        Ok(Self {
            http_proxy: proxy(&HTTP_PROXY_VARS)?,
            https_proxy: proxy(&HTTPS_PROXY_VARS)?,
            no_proxy,
            ca_files,
        })
    }

    /// `builder` with these proxies (and no other: the client does not read the
    /// environment itself) and CA certificates.
    pub(super) fn apply(
        &self,
        mut builder: reqwest::ClientBuilder,
    ) -> reqwest::Result<reqwest::ClientBuilder> {
        builder = builder.no_proxy();
        let no_proxy = || {
            self.no_proxy
                .as_deref()
                .and_then(reqwest::NoProxy::from_string)
        };
        if let Some(proxy) = &self.http_proxy {
            builder = builder.proxy(reqwest::Proxy::http(proxy.url.as_str())?.no_proxy(no_proxy()));
        }
        if let Some(proxy) = &self.https_proxy {
            builder =
                builder.proxy(reqwest::Proxy::https(proxy.url.as_str())?.no_proxy(no_proxy()));
        }
        #[cfg(feature = "tls")]
        if !self.ca_files.is_empty() {
            // The HTTP client's own configuration, with the same extra roots, where
            // the verifier of `trust` cannot be built: building the client then fails
            // as it would have anyway.
            builder = match self.trusting_named_certificates() {
                Some(tls) => builder.tls_backend_preconfigured(tls),
                None => {
                    let certificates = self
                        .ca_files
                        .iter()
                        .flat_map(|file| file.certificates.iter().cloned());
                    builder.tls_certs_merge(certificates)
                }
            };
        }
        Ok(builder)
    }

    /// The TLS configuration the HTTP client builds for extra roots (the platform's
    /// verifier, every TLS version, HTTP/1.1), with the verifier of [`trust`] around
    /// its verifier; `None` where the platform's verifier takes no extra roots or
    /// cannot be built.
    #[cfg(feature = "tls")]
    fn trusting_named_certificates(&self) -> Option<rustls::ClientConfig> {
        #[cfg(target_os = "android")]
        {
            None
        }
        #[cfg(not(target_os = "android"))]
        {
            use std::sync::Arc;
            let named: Vec<_> = self
                .ca_files
                .iter()
                .flat_map(|file| file.ders.iter().cloned())
                .collect();
            // The provider the HTTP client would choose.
            let provider = rustls::crypto::CryptoProvider::get_default()
                .cloned()
                .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
            let platform = rustls_platform_verifier::Verifier::new_with_extra_roots(
                named.clone(),
                provider.clone(),
            )
            .inspect_err(|error| {
                tracing::debug!(%error, "the platform's TLS verifier cannot be built");
            })
            .ok()?;
            let verifier = trust::NamedCertificates::new(Arc::new(platform), named);
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(rustls::ALL_VERSIONS)
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(config)
        }
    }
}

impl Network {
    /// The proxy that requests to `url` go through, if any: the same matching as the
    /// HTTP client's.
    pub(super) fn proxy_for(&self, url: &str) -> Option<ProxyInUse> {
        let uri: http::Uri = url.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let proxy = match scheme.as_str() {
            "http" => self.http_proxy.as_ref()?,
            "https" => self.https_proxy.as_ref()?,
            _ => return None,
        };
        let matcher = hyper_util::client::proxy::matcher::Matcher::builder()
            .all(proxy.url.clone())
            .no(self.no_proxy.clone().unwrap_or_default())
            .build();
        matcher.intercept(&uri)?;
        Some(ProxyInUse {
            variable: proxy.variable,
            shown: crate::redact::url(&proxy.url).into_owned(),
        })
    }
}

/// The proxy a server is reached through, as a message names it.
#[derive(Debug, Clone)]
pub(crate) struct ProxyInUse {
    variable: &'static str,
    /// The URL with its user information masked.
    shown: String,
}

impl ProxyInUse {
    /// `failure`, said of the proxy when it is one of reaching the proxy or of the
    /// tunnel through it. Through a proxy, the only host name resolved here is the
    /// proxy's (rule 2), and a connection refused is the proxy's.
    pub(super) fn failure(&self, failure: HttpFailure) -> HttpFailure {
        let problem = match &failure {
            HttpFailure::Refused { .. } => {
                "the proxy refused the connection (check the variable, or list the server's host in `NO_PROXY` to reach it directly)"
            }
            HttpFailure::Dns { .. } => {
                "the proxy's host name does not resolve (check the variable)"
            }
            HttpFailure::Connection { .. } => {
                "the proxy did not open a connection to the server (if the proxy needs credentials, give them in its URL: `http://USER:PASSWORD@HOST:PORT`)"
            }
            _ => return failure,
        };
        let (HttpFailure::Refused { server }
        | HttpFailure::Dns { server, .. }
        | HttpFailure::Connection { server, .. }) = failure
        else {
            unreachable!("matched above");
        };
        HttpFailure::Proxy {
            server,
            proxy: self.shown.clone(),
            variable: self.variable,
            problem,
        }
    }
}

/// The proxy URL `value` of `variable`, checked (rule 3).
fn proxy_url(variable: &'static str, value: OsString) -> Result<ProxyUrl, StartupError> {
    let invalid = |problem: String| StartupError::ProxyVariable { variable, problem };
    let text = value.into_string().map_err(|_| {
        invalid("is not valid UTF-8 (write the proxy as `http://HOST:PORT`)".into())
    })?;
    let url = if text.contains("://") {
        text
    } else {
        format!("http://{text}")
    };
    let parsed = url::Url::parse(&url)
        .ok()
        .filter(|parsed| parsed.host_str().is_some_and(|host| !host.is_empty()))
        .ok_or_else(|| invalid("is not a proxy URL (write it as `http://HOST:PORT`)".into()))?;
    match parsed.scheme() {
        "http" => {}
        "https" if cfg!(feature = "tls") => {}
        "https" => {
            return Err(invalid(
                "names an `https://` proxy, and this build of mcp-runtime leaves out TLS (use an `http://` proxy, or build mcp-runtime with its `tls` feature)".into(),
            ));
        }
        scheme => {
            return Err(invalid(format!(
                "names a `{}` proxy, which mcp-runtime does not support (use an `http://` proxy, or unset the variable)",
                crate::redact::one_line(scheme)
            )));
        }
    }
    Ok(ProxyUrl { variable, url })
}

impl CaFile {
    /// Reads the PEM file at `path`, named by `origin` (rule 4).
    fn read(origin: &'static str, path: PathBuf) -> Result<Self, StartupError> {
        let invalid = |problem: String| StartupError::CaCertificate {
            origin,
            path: crate::redact::one_line(&path.to_string_lossy()).into_owned(),
            problem,
        };
        #[cfg(not(feature = "tls"))]
        {
            Err(invalid(
                "this build of mcp-runtime leaves out TLS (build it with its `tls` feature)".into(),
            ))
        }
        #[cfg(feature = "tls")]
        {
            let pem = std::fs::read(&path).map_err(|error| {
                invalid(match error.kind() {
                    std::io::ErrorKind::NotFound => {
                        "the file does not exist (check the path)".into()
                    }
                    std::io::ErrorKind::PermissionDenied => {
                        "the file cannot be read: permission denied".into()
                    }
                    std::io::ErrorKind::IsADirectory => {
                        "it is a directory (name a PEM file)".into()
                    }
                    _ => format!("the file cannot be read: {error}"),
                })
            })?;
            let not_pem = || {
                invalid(
                    "the file holds no PEM certificate (give a file of `-----BEGIN CERTIFICATE-----` blocks)"
                        .into(),
                )
            };
            let certificates = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|certificates| !certificates.is_empty())
                .ok_or_else(not_pem)?;
            let ders = {
                use rustls::pki_types::{CertificateDer, pem::PemObject as _};
                CertificateDer::pem_slice_iter(&pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| not_pem())?
            };
            // The client accepts any bytes as a certificate until it is built; a client
            // trusting these alone is built now so that a bad one is found here, naming
            // its file, rather than as a client that cannot be set up.
            reqwest::Client::builder()
                .tls_certs_only(certificates.iter().cloned())
                .build()
                .map_err(|_| {
                    invalid("a certificate in the file is not a valid X.509 certificate".into())
                })?;
            Ok(Self {
                path,
                certificates,
                ders,
            })
        }
    }
}

#[cfg(feature = "tls")]
pub(crate) mod trust;

#[cfg(test)]
mod tests;
