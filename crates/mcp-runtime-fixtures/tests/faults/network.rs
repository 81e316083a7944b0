//! Redirects and certificates.

use super::*;

// HTTP redirects: only a 307 or 308 to the same origin is followed, ten in a row at
// most; any other says where it leads (credentials and query values masked) and why
// it is not followed. The runtime starts one process (the healthy server).

/// A row whose faulty server answers every request with `status` and `location`:
/// its startup failure holds every one of `expected` and none of `hidden`.
async fn redirect_row(status: &str, location: &str, expected: &[&str], hidden: &[&str]) {
    redirect_row_over(false, status, location, expected, hidden).await;
}

/// [`redirect_row`], over the legacy HTTP+SSE transport (`transport = "sse"`) when
/// `sse`.
async fn redirect_row_over(
    sse: bool,
    status: &str,
    location: &str,
    expected: &[&str],
    hidden: &[&str],
) {
    use mcp_runtime::config::{HttpTransport, TransportConfig};
    let server = http_fixture(&["--http-status", status, "--http-location", location]).await;
    let mut faulty = ServerConfig::http(FAULTY, &server.url);
    if let TransportConfig::StreamableHttp(http) = &mut faulty.transport
        && sse
    {
        http.transport = HttpTransport::Sse;
    }
    let row = start_row(beside_healthy(faulty)).await;
    assert_eq!(
        row.groups.len(),
        1,
        "the runtime started only the healthy server"
    );
    let reason = row.startup_failure();
    for part in expected {
        let part = part.replace("ORIGIN", server.url.strip_suffix("/mcp").unwrap());
        assert!(reason.contains(&part), "expected `{part}` in: {reason}");
    }
    for part in hidden {
        assert!(!reason.contains(part), "`{part}` shown in: {reason}");
    }
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_says_where_and_that_it_is_not_followed() {
    redirect_row(
        "302",
        "https://user:s3cret@mcp.example.com/mcp?token=abc123",
        &[
            "server `faulty` answered HTTP 302, a redirect to `https://*****@mcp.example.com/mcp?token=*****`, which is not followed: a redirect to another origin is never followed",
            "(if that is the server, set `url` to it)",
        ],
        &["s3cret", "abc123"],
    )
    .await;
}

#[tokio::test]
async fn a_redirect_of_a_legacy_event_stream_says_where_too() {
    redirect_row_over(
        true,
        "301",
        "https://sse.example.com/sse",
        &["server `faulty` answered HTTP 301, a redirect to `https://sse.example.com/sse`, which is not followed: a redirect to another origin is never followed"],
        &[],
    )
    .await;
}

#[tokio::test]
async fn a_redirect_that_would_change_the_request_is_not_followed() {
    redirect_row(
        "302",
        "/mcp/",
        &["answered HTTP 302, a redirect to `ORIGIN/mcp/`, which is not followed: only a 307 or 308 redirect is followed"],
        &[],
    )
    .await;
}

#[tokio::test]
async fn a_redirect_loop_ends_after_ten_redirects() {
    redirect_row(
        "307",
        "/mcp",
        &["answered HTTP 307, a redirect to `ORIGIN/mcp`, which is not followed: no more than 10 redirects are followed in a row"],
        &[],
    )
    .await;
}

// HTTPS: a self-signed certificate that is its own CA (`CA:TRUE`), as
// `openssl req -x509` makes it. The runtime starts one process (the healthy server);
// the HTTPS server is the test's.

/// A row whose faulty server is the fixture over HTTPS with a `CA:TRUE` self-signed
/// certificate, trusted with `ca_certificate` when `named`; the fixture and its TLS
/// front live as long as the row.
async fn self_signed_row(
    named: bool,
) -> (Row, HttpFixture, mcp_runtime_fixtures::network::TlsFront) {
    use mcp_runtime::config::TransportConfig;
    use mcp_runtime_fixtures::network::{SelfSigned, TlsFront};
    let certificate = SelfSigned::new();
    let fixture = http_fixture(&[]).await;
    let upstream = fixture
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .expect("the fixture's address");
    let front = TlsFront::start(certificate.server_config(), upstream).await;
    let dir = temp_dir();
    let file = dir.path().join("server.pem");
    std::fs::write(&file, &certificate.pem).unwrap();
    let mut server = ServerConfig::http(FAULTY, front.url("/mcp"));
    if let TransportConfig::StreamableHttp(http) = &mut server.transport
        && named
    {
        http.ca_certificate = Some(file);
    }
    let row = start_row(beside_healthy(server)).await;
    assert_eq!(
        row.groups.len(),
        1,
        "the runtime started only the healthy server"
    );
    (row, fixture, front)
}

#[tokio::test]
async fn a_self_signed_ca_certificate_named_by_ca_certificate_is_trusted() {
    let (row, _fixture, _front) = self_signed_row(true).await;
    row.faulty_is_callable().await;
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_refused_certificate_says_the_verifiers_reason_and_the_fix() {
    let (row, _fixture, _front) = self_signed_row(false).await;
    let reason = row.startup_failure();
    for part in [
        "server `faulty` presented a TLS certificate that is not trusted",
        "(`CaUsedAsEndEntity`)",
        "name that very certificate as a PEM file with `ca_certificate`",
    ] {
        assert!(reason.contains(part), "expected `{part}` in: {reason}");
    }
    row.finish(&[]).await;
}
