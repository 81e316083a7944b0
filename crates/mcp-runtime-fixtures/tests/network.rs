//! HTTPS servers whose certificate a private CA issued: trusted for one server with
//! its `ca_certificate` key. (The proxy variables and `SSL_CERT_FILE` are read from the
//! runtime's own environment, so their end-to-end tests run the CLI as a child process
//! with its environment set: `mcp-runtime-cli` tests `network`.)

use mcp_runtime::{ServerConfig, ServerState, config::TransportConfig};
use mcp_runtime_fixtures::network::{TestCa, TlsFront};

use crate::support::*;

/// The fixture served over HTTPS with a certificate of `ca`.
async fn https_fixture(ca: &TestCa) -> (HttpFixture, TlsFront) {
    let fixture = http_fixture(&[]).await;
    let upstream = fixture
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .expect("the fixture's address");
    let front = TlsFront::start(ca.server_config(), upstream).await;
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
            "server `plain` presented a TLS certificate that is not trusted: it is issued by a CA that is not trusted (if a private CA issued it, name that CA's PEM file with `ca_certificate` or `SSL_CERT_FILE`)"
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
