//! HTTP rows: statuses, and URLs that are a legacy HTTP+SSE server's.

use super::*;

// HTTP.

#[tokio::test]
async fn http_401_says_authorization_is_needed() {
    let server = http_fixture(&["--http-status", "401"]).await;
    fails_to_start(faulty_http(&server.url), &["`bearer_token_env_var`"]).await;
}

// A URL that refuses both `server/discover` and `initialize` with 400, 404 or 405
// (no JSON-RPC error) is a legacy HTTP+SSE server's, as the specification's
// backward compatibility says; until that transport is spoken, the start fails
// saying so.

#[tokio::test]
async fn http_400_is_taken_for_a_legacy_sse_server() {
    let server = http_fixture(&["--http-status", "400"]).await;
    fails_to_start(faulty_http(&server.url), &["legacy HTTP+SSE"]).await;
}

#[tokio::test]
async fn http_404_to_every_transport_says_no_mcp_endpoint_is_there() {
    // 404 to the Streamable HTTP POSTs, then to the legacy HTTP+SSE GET.
    let server = http_fixture(&["--http-status", "404"]).await;
    fails_to_start(
        faulty_http(&server.url),
        &["404", "no MCP endpoint is at this URL (check `url`)"],
    )
    .await;
}

#[tokio::test]
async fn http_405_is_taken_for_a_legacy_sse_server() {
    let server = http_fixture(&["--http-status", "405"]).await;
    fails_to_start(faulty_http(&server.url), &["legacy HTTP+SSE"]).await;
}

#[tokio::test]
async fn http_500_reports_status_and_body() {
    let server = http_fixture(&["--http-status", "500"]).await;
    fails_to_start(
        faulty_http(&server.url),
        &["500", "mcp-fixture answers 500 on purpose"],
    )
    .await;
}

#[tokio::test]
async fn http_connection_refused_says_so() {
    fails_to_start(faulty_http(&unused_local_url()), &["refused"]).await;
}

#[tokio::test]
async fn a_silent_http_server_times_out_naming_the_timeout() {
    let server = http_fixture(&["--http-silent"]).await;
    fails_to_start(
        faulty_http(&server.url),
        &["did not finish starting within 2s"],
    )
    .await;
}
