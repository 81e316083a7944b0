//! HTTPS servers whose certificate a private CA issued, or that present a
//! self-signed certificate: trusted for one server with its `ca_certificate` key. (The proxy variables and `SSL_CERT_FILE` are read from the
//! runtime's own environment, so their end-to-end tests run the CLI as a child process
//! with its environment set: `mcp-runtime-cli` tests `network`.)

use mcp_runtime::{ServerConfig, ServerState, config::TransportConfig};
use mcp_runtime_fixtures::network::{SelfSigned, TestCa, TlsFront};

use crate::support::*;

/// The fixture served over HTTPS with a certificate of `ca`.
async fn https_fixture(ca: &TestCa) -> (HttpFixture, TlsFront) {
    https_fixture_with(ca.server_config()).await
}

/// The fixture served over HTTPS with `tls`.
async fn https_fixture_with(
    tls: std::sync::Arc<tokio_rustls::rustls::ServerConfig>,
) -> (HttpFixture, TlsFront) {
    let fixture = http_fixture(&[]).await;
    let upstream = fixture
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .expect("the fixture's address");
    let front = TlsFront::start(tls, upstream).await;
    (fixture, front)
}

fn https_server(name: &str, url: &str, ca_certificate: Option<&std::path::Path>) -> ServerConfig {
    let mut server = ServerConfig::http(name, url);
    if let TransportConfig::StreamableHttp(http) = &mut server.transport {
        http.ca_certificate = ca_certificate.map(Into::into);
    }
    server
}

#[tokio::test]
async fn ca_certificate_trusts_a_private_ca_for_that_server_only() {
    let ca = TestCa::new("mcp-runtime test CA");
    let (_fixture, front) = https_fixture(&ca).await;
    let dir = temp_dir();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let url = front.url("/mcp");
    let (runtime, _) = start(config([
        https_server("trusting", &url, Some(&ca_file)),
        https_server("plain", &url, None),
    ]))
    .await;
    let status = |name: &str| {
        runtime
            .servers()
            .into_iter()
            .find(|status| status.name == name)
            .unwrap()
    };
    let trusting = status("trusting");
    assert_eq!(trusting.state, ServerState::Ready, "{:?}", trusting.error);
    let result = runtime.call_tool("mcp__trusting__pid", None).await.unwrap();
    assert!(result.structured_content().is_some());

    let plain = status("plain");
    assert_eq!(plain.state, ServerState::Failed);
    let error = mcp_runtime::error::chain(plain.error.as_ref().unwrap());
    assert!(
        error.ends_with(
            "server `plain` presented a TLS certificate that is not trusted: it is self-signed or issued by a CA that is not trusted (`UnknownIssuer`): name the certificate itself, or the CA that issued it, as a PEM file with `ca_certificate` (or `SSL_CERT_FILE`)"
        ),
        "{error}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_missing_ca_certificate_file_fails_that_server_naming_the_file() {
    let ca = TestCa::new("mcp-runtime test CA");
    let (_fixture, front) = https_fixture(&ca).await;
    let dir = temp_dir();
    let missing = dir.path().join("missing.pem");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let url = front.url("/mcp");
    let (runtime, _) = start(config([
        https_server("broken", &url, Some(&missing)),
        https_server("fine", &url, Some(&ca_file)),
    ]))
    .await;
    for status in runtime.servers() {
        match status.name.as_str() {
            "fine" => assert_eq!(status.state, ServerState::Ready, "{:?}", status.error),
            _ => {
                assert_eq!(status.state, ServerState::Failed);
                assert_eq!(
                    status.error.unwrap().to_string(),
                    format!(
                        "cannot use the CA certificate file `{}` named by `ca_certificate`: the file does not exist (check the path)",
                        missing.display()
                    )
                );
            }
        }
    }
    runtime.shutdown().await;
}

/// The state and error of server `name` of `runtime`.
fn outcome(runtime: &mcp_runtime::Runtime, name: &str) -> (ServerState, Option<String>) {
    let status = runtime
        .servers()
        .into_iter()
        .find(|status| status.name == name)
        .unwrap();
    let error = status
        .error
        .as_ref()
        .map(|error| mcp_runtime::error::chain(error));
    (status.state, error)
}

#[tokio::test]
async fn a_self_signed_ca_certificate_named_by_ca_certificate_is_trusted_as_curl_trusts_it() {
    // `openssl req -x509` makes a certificate that is its own CA (`CA:TRUE`), which
    // webpki alone refuses in the server's place (`CaUsedAsEndEntity`).
    let certificate = SelfSigned::new();
    let (_fixture, front) = https_fixture_with(certificate.server_config()).await;
    let dir = temp_dir();
    let file = dir.path().join("server.pem");
    std::fs::write(&file, &certificate.pem).unwrap();
    let other = dir.path().join("other.pem");
    std::fs::write(&other, SelfSigned::new().pem).unwrap();
    let url = front.url("/mcp");
    let (runtime, _) = start(config([
        https_server("named", &url, Some(&file)),
        https_server("another", &url, Some(&other)),
        https_server("unnamed", &url, None),
    ]))
    .await;
    let (state, error) = outcome(&runtime, "named");
    assert_eq!(state, ServerState::Ready, "{error:?}");
    let result = runtime.call_tool("mcp__named__pid", None).await.unwrap();
    assert!(result.structured_content().is_some());

    // Trusting one self-signed certificate trusts no other; the refusal says the
    // verifier's reason and the fix.
    for name in ["another", "unnamed"] {
        let (state, error) = outcome(&runtime, name);
        assert_eq!(state, ServerState::Failed, "{name}");
        let error = error.unwrap();
        assert!(
            error.ends_with(&format!(
                "server `{name}` presented a TLS certificate that is not trusted: it is a CA's certificate (`CA:TRUE`) in the server's place, as a self-signed one made by `openssl req -x509` is (`CaUsedAsEndEntity`): to trust the server's own self-signed certificate, name that very certificate as a PEM file with `ca_certificate`; else the server needs a certificate issued by a CA"
            )),
            "{error}"
        );
    }
    runtime.shutdown().await;
}
