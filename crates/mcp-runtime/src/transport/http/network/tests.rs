use std::collections::HashMap;

use super::*;

fn http(url: &str) -> HttpConfig {
    match crate::config::ServerConfig::http("web", url).transport {
        crate::config::TransportConfig::StreamableHttp(http) => http,
        crate::config::TransportConfig::Stdio(_) => unreachable!("an HTTP server"),
    }
}

fn resolve(vars: &[(&str, &str)]) -> Result<Network, StartupError> {
    resolve_for(&http("https://example.test/mcp"), vars)
}

fn resolve_for(http: &HttpConfig, vars: &[(&str, &str)]) -> Result<Network, StartupError> {
    let vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
        .collect();
    Network::resolve(http, |name| vars.get(name).cloned())
}

fn proxy(proxy: &Option<ProxyUrl>) -> Option<(&'static str, &str)> {
    proxy
        .as_ref()
        .map(|proxy| (proxy.variable, proxy.url.as_str()))
}

#[test]
fn proxies_are_read_lowercase_first_as_curl_reads_them() {
    let network = resolve(&[
        ("HTTP_PROXY", "http://upper:1"),
        ("http_proxy", "http://lower:1"),
        ("HTTPS_PROXY", "http://secure:2"),
        ("NO_PROXY", "internal.test"),
        ("no_proxy", "lower.test"),
    ])
    .unwrap();
    assert_eq!(
        proxy(&network.http_proxy),
        Some(("http_proxy", "http://lower:1"))
    );
    assert_eq!(
        proxy(&network.https_proxy),
        Some(("HTTPS_PROXY", "http://secure:2"))
    );
    assert_eq!(network.no_proxy.as_deref(), Some("lower.test"));
}

#[test]
fn all_proxy_serves_a_scheme_without_its_own_variable() {
    let network = resolve(&[("ALL_PROXY", "http://all:3"), ("https_proxy", "http://s:4")]).unwrap();
    assert_eq!(
        proxy(&network.http_proxy),
        Some(("ALL_PROXY", "http://all:3"))
    );
    assert_eq!(
        proxy(&network.https_proxy),
        Some(("https_proxy", "http://s:4"))
    );
}

#[test]
fn an_empty_variable_is_unset_and_a_url_without_scheme_is_http() {
    let network = resolve(&[("http_proxy", ""), ("HTTP_PROXY", "proxy.corp:8080")]).unwrap();
    assert_eq!(
        proxy(&network.http_proxy),
        Some(("HTTP_PROXY", "http://proxy.corp:8080"))
    );
    let none = resolve(&[]).unwrap();
    assert!(none.http_proxy.is_none() && none.https_proxy.is_none() && none.no_proxy.is_none());
}

#[test]
fn an_unusable_proxy_names_the_variable_and_never_its_value() {
    let socks = resolve(&[("HTTPS_PROXY", "socks5://user:s3cret@proxy:1080")]).unwrap_err();
    assert_eq!(
        socks.to_string(),
        "environment variable `HTTPS_PROXY` names a `socks5` proxy, which mcp-runtime does not support (use an `http://` proxy, or unset the variable)"
    );
    let garbage = resolve(&[("all_proxy", "http://us er:s3cret@")]).unwrap_err();
    assert_eq!(
        garbage.to_string(),
        "environment variable `all_proxy` is not a proxy URL (write it as `http://HOST:PORT`)"
    );
}

#[test]
fn debug_output_masks_the_credentials_of_a_proxy_url() {
    let network = resolve(&[("HTTP_PROXY", "http://user:s3cret@proxy.corp:8080")]).unwrap();
    let shown = format!("{network:?}");
    assert!(
        !shown.contains("s3cret") && !shown.contains("user"),
        "{shown}"
    );
    assert!(shown.contains("proxy.corp:8080 from HTTP_PROXY"), "{shown}");
}

#[test]
fn the_client_is_built_with_proxies_and_no_proxy_list() {
    let network = resolve(&[
        ("HTTP_PROXY", "http://user:s3cret@proxy.corp:8080"),
        ("https_proxy", "http://proxy.corp:8443"),
        ("NO_PROXY", "localhost,10.0.0.0/8,*.internal"),
    ])
    .unwrap();
    assert!(
        network
            .apply(reqwest::Client::builder())
            .unwrap()
            .build()
            .is_ok()
    );
}

#[test]
fn a_server_is_reached_through_the_proxy_of_its_scheme_unless_no_proxy_names_it() {
    let network = resolve(&[
        ("HTTP_PROXY", "http://user:s3cret@plain:1"),
        ("HTTPS_PROXY", "http://secure:2"),
        ("NO_PROXY", "direct.test, 10.0.0.0/8"),
    ])
    .unwrap();
    let via = |url: &str| {
        network
            .proxy_for(url)
            .map(|proxy| (proxy.variable, proxy.shown))
    };
    let plain = Some(("HTTP_PROXY", "http://*****@plain:1".to_owned()));
    assert_eq!(via("http://a.test/mcp"), plain);
    let secure = Some(("HTTPS_PROXY", "http://secure:2".to_owned()));
    assert_eq!(via("HTTPS://a.test/mcp"), secure);
    assert_eq!(via("https://api.direct.test/mcp"), None, "a subdomain");
    assert_eq!(via("http://10.1.2.3:8080/mcp"), None, "a CIDR range");
    assert_eq!(
        resolve(&[])
            .unwrap()
            .proxy_for("http://a.test/mcp")
            .map(|_| ()),
        None
    );
}

#[test]
fn no_network_variable_reaches_a_stdio_server_unless_named() {
    let stdio = match crate::config::ServerConfig::stdio("local", "srv", Vec::new()).transport {
        crate::config::TransportConfig::Stdio(stdio) => stdio,
        crate::config::TransportConfig::StreamableHttp(_) => unreachable!("a stdio server"),
    };
    let network_vars: Vec<&str> = HTTP_PROXY_VARS
        .iter()
        .chain(&HTTPS_PROXY_VARS)
        .chain(&NO_PROXY_VARS)
        .chain(&[SSL_CERT_FILE])
        .copied()
        .collect();
    let parent = |name: &str| network_vars.contains(&name).then(|| OsString::from("set"));
    let env = crate::transport::stdio::child_environment(&stdio, parent);
    assert!(env.is_empty(), "{env:?}");
}

#[test]
fn a_failure_to_reach_the_proxy_is_said_of_the_proxy() {
    let proxy = ProxyInUse {
        variable: "HTTPS_PROXY",
        shown: "http://*****@proxy:8080".into(),
    };
    let server = || "web".to_owned();
    let refused = proxy.failure(HttpFailure::Refused { server: server() });
    assert_eq!(
        refused.to_string(),
        "cannot reach server `web` through the proxy `http://*****@proxy:8080` of `HTTPS_PROXY`: the proxy refused the connection (check the variable, or list the server's host in `NO_PROXY` to reach it directly)"
    );
    let unresolved = proxy.failure(HttpFailure::Dns {
        server: server(),
        host: "proxy".into(),
    });
    assert!(
        matches!(unresolved, HttpFailure::Proxy { .. }),
        "{unresolved}"
    );
    let timeout = proxy.failure(HttpFailure::Timeout { server: server() });
    assert!(matches!(timeout, HttpFailure::Timeout { .. }), "{timeout}");
}

#[cfg(feature = "tls")]
mod ca {
    use super::*;

    fn ca_pem() -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }

    #[test]
    fn ssl_cert_file_and_ca_certificate_are_both_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = write(&dir, "bundle.pem", &(ca_pem() + &ca_pem()));
        let own = write(&dir, "own.pem", &ca_pem());
        let mut config = http("https://example.test/mcp");
        config.ca_certificate = Some(own.clone().into());
        let network = resolve_for(&config, &[("SSL_CERT_FILE", &bundle)]).unwrap();
        let files: Vec<_> = network
            .ca_files
            .iter()
            .map(|file| (file.path.to_str().unwrap(), file.certificates.len()))
            .collect();
        assert_eq!(files, [(bundle.as_str(), 2), (own.as_str(), 1)]);
        assert!(
            network
                .apply(reqwest::Client::builder())
                .unwrap()
                .build()
                .is_ok()
        );
    }

    #[test]
    fn a_missing_ca_file_names_the_file_and_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let error = resolve(&[("SSL_CERT_FILE", missing.to_str().unwrap())]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "cannot use the CA certificate file `{}` named by environment variable `SSL_CERT_FILE`: the file does not exist (check the path)",
                missing.display()
            )
        );
        let mut config = http("https://example.test/mcp");
        config.ca_certificate = Some(dir.path().to_owned());
        let error = resolve_for(&config, &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "cannot use the CA certificate file `{}` named by `ca_certificate`: it is a directory (name a PEM file)",
                dir.path().display()
            )
        );
    }

    #[test]
    fn a_file_without_a_valid_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = write(&dir, "text.pem", "not a certificate\n");
        let empty = write(&dir, "empty.pem", "");
        let garbage = write(
            &dir,
            "garbage.pem",
            "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
        );
        for (path, problem) in [
            (
                &text,
                "the file holds no PEM certificate (give a file of `-----BEGIN CERTIFICATE-----` blocks)",
            ),
            (
                &empty,
                "the file holds no PEM certificate (give a file of `-----BEGIN CERTIFICATE-----` blocks)",
            ),
            (
                &garbage,
                "a certificate in the file is not a valid X.509 certificate",
            ),
        ] {
            let mut config = http("https://example.test/mcp");
            config.ca_certificate = Some(path.into());
            let error = resolve_for(&config, &[]).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "cannot use the CA certificate file `{path}` named by `ca_certificate`: {problem}"
                )
            );
        }
    }
}

#[cfg(not(feature = "tls"))]
#[test]
fn without_tls_ca_certificate_fails_and_ssl_cert_file_is_ignored() {
    let mut config = http("http://example.test/mcp");
    assert!(resolve_for(&config, &[("SSL_CERT_FILE", "/nonexistent.pem")]).is_ok());
    config.ca_certificate = Some("/ca.pem".into());
    let error = resolve_for(&config, &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot use the CA certificate file `/ca.pem` named by `ca_certificate`: this build of mcp-runtime leaves out TLS (build it with its `tls` feature)"
    );
}
