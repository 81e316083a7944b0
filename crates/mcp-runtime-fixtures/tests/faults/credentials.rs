//! Credentials echoed back: no credential the runtime sends appears in a message.

use super::*;

// Credentials echoed back: no credential the runtime sends appears in a message,
// whichever text of the server's answer carries it.

/// A literal `X-Api-Key` header of the rows below.
const LITERAL_KEY: &str = "lit-key-5309-f00d";
/// A literal `Authorization` header's credential.
const LITERAL_AUTHORIZATION: &str = "lit-auth-8675-beef";

/// A Streamable HTTP server named `faulty` at `url` sent every kind of credential:
/// a bearer token from the environment, a header from the environment and a literal
/// credential header.
fn faulty_http_with_credentials(url: &str) -> Config {
    set_test_env();
    let mut server = ServerConfig::http(FAULTY, url);
    if let mcp_runtime::config::TransportConfig::StreamableHttp(http) = &mut server.transport {
        http.bearer_token_env_var = Some(TEST_TOKEN_VAR.into());
        http.env_http_headers
            .insert("X-From-Env".into(), TEST_HEADER_VAR.into());
        http.http_headers
            .insert("X-Api-Key".into(), LITERAL_KEY.into());
    }
    beside_healthy(server)
}

/// Asserts that `text` shows none of the credentials the rows send, and that it
/// showed a masked one.
fn assert_masked(text: &str) {
    for credential in [
        TEST_TOKEN,
        TEST_SECRET,
        "header-from-env",
        LITERAL_KEY,
        LITERAL_AUTHORIZATION,
    ] {
        assert!(
            !text.contains(credential),
            "`{credential}` is shown: {text}"
        );
    }
    assert!(text.contains("*****"), "nothing was masked: {text}");
}

/// Every text of `error` a program can reach: its chain, each source's own text
/// (the protocol library's included) and its `Debug`.
fn every_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut texts = vec![chain(error), format!("{error:?}")];
    let mut source = Some(error);
    while let Some(cause) = source {
        texts.push(cause.to_string());
        source = cause.source();
    }
    texts.join("\n")
}

#[tokio::test]
async fn an_http_error_page_quoting_the_credentials_shows_none_of_them() {
    let server = http_fixture(&["--http-status", "500", "--echo-headers"]).await;
    let row = start_row(faulty_http_with_credentials(&server.url)).await;
    let reason = row.startup_failure();
    assert!(reason.contains("answered HTTP 500"), "{reason}");
    assert!(reason.contains("authorization=Bearer *****"), "{reason}");
    assert_masked(&reason);
    let status = status(&row.runtime, FAULTY);
    assert_masked(&every_text(status.error.as_ref().unwrap()));
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_literal_authorization_header_quoted_back_is_masked() {
    let server = http_fixture(&["--http-status", "502", "--echo-headers"]).await;
    let mut faulty = ServerConfig::http(FAULTY, &server.url);
    if let mcp_runtime::config::TransportConfig::StreamableHttp(http) = &mut faulty.transport {
        http.http_headers.insert(
            "Authorization".into(),
            format!("Basic {LITERAL_AUTHORIZATION}"),
        );
    }
    let row = start_row(beside_healthy(faulty)).await;
    let reason = row.startup_failure();
    assert!(reason.contains("authorization=*****"), "{reason}");
    assert_masked(&reason);
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_challenge_quoting_the_token_keeps_none_of_it() {
    let server = http_fixture(&["--http-status", "401", "--echo-headers"]).await;
    let row = start_row(faulty_http_with_credentials(&server.url)).await;
    let reason = row.startup_failure();
    assert!(reason.contains("`bearer_token_env_var`"), "{reason}");
    // The challenge is kept (not shown) for a login to start from: masked too.
    let status = status(&row.runtime, FAULTY);
    assert_masked(&every_text(status.error.as_ref().unwrap()));
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_json_rpc_error_quoting_the_credentials_shows_none_of_them() {
    let server = http_fixture(&["--echo-headers"]).await;
    let row = start_row(faulty_http_with_credentials(&server.url)).await;
    let message = row.call_failure("pid", None).await;
    assert!(
        message.contains("refused the request with headers"),
        "{message}"
    );
    assert_masked(&message);
    let error = row
        .runtime
        .call_tool(&format!("mcp__{FAULTY}__pid"), None)
        .await
        .expect_err("the call fails");
    assert_masked(&every_text(&error));
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_local_server_printing_its_credential_on_stderr_shows_none_of_it() {
    set_test_env();
    let faulty = with_env_var(
        fixture(
            FAULTY,
            &["--stderr-env", TEST_SECRET_VAR, "--crash-initialize", "3"],
        ),
        TEST_SECRET_VAR,
    );
    let row = start_row(beside_healthy(faulty)).await;
    let reason = row.startup_failure();
    assert!(
        reason.contains(&format!("fixture: {TEST_SECRET_VAR}=*****")),
        "{reason}"
    );
    assert_masked(&reason);
    row.finish(&[]).await;
}
