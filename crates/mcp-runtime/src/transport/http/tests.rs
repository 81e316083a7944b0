use std::collections::BTreeMap;

use std::ffi::OsString;

use super::*;
use crate::config::HttpConfig;
use crate::sandbox_metadata::SANDBOX_STATE_KEY;

fn config() -> HttpConfig {
    HttpConfig {
        url: "http://127.0.0.1:1/mcp".into(),
        bearer_token_env_var: Some("API_TOKEN".into()),
        http_headers: BTreeMap::from([("X-Team".into(), "core".into())]),
        env_http_headers: BTreeMap::from([("X-Key".into(), "API_KEY".into())]),
        transport: crate::config::HttpTransport::StreamableHttp,
        ca_certificate: None,
    }
}

#[test]
fn resolves_headers_and_token_from_the_environment() {
    let resolved = resolve(&config(), |name| match name {
        "API_TOKEN" => Some("tok-1".into()),
        "API_KEY" => Some("key-1".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(resolved.bearer_token.as_deref(), Some("tok-1"));
    assert_eq!(resolved.headers[&HeaderName::from_static("x-team")], "core");
    assert_eq!(resolved.headers[&HeaderName::from_static("x-key")], "key-1");
    assert!(
        !format!("{resolved:?}").contains("tok-1"),
        "debug output redacts the token"
    );
}

#[test]
fn credential_headers_and_variables_are_sent_as_sensitive() {
    let mut http = config();
    http.bearer_token_env_var = None;
    http.http_headers
        .insert("Authorization".into(), "Basic c2VjcmV0".into());
    let resolved = resolve(&http, |name| (name == "API_KEY").then(|| "key-1".into())).unwrap();
    let sensitive = |name| resolved.headers[&HeaderName::from_static(name)].is_sensitive();
    assert!(sensitive("authorization"));
    assert!(sensitive("x-key"));
    assert!(!sensitive("x-team"));
}

#[test]
fn a_missing_or_empty_variable_is_named_without_a_value() {
    let error = resolve(&config(), |name| (name == "API_KEY").then(|| "k".into())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_TOKEN` named by `bearer_token_env_var` is not set or is empty"
    );
    let error = resolve(&config(), |name| (name == "API_TOKEN").then(OsString::new)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_KEY` named by `env_http_headers` is not set or is empty"
    );
}

#[test]
fn an_unusable_variable_is_named_with_what_is_wrong_never_its_value() {
    use std::os::unix::ffi::OsStringExt;

    let token_only = |token: OsString| {
        let mut config = config();
        config.env_http_headers.clear();
        resolve(&config, move |name| {
            (name == "API_TOKEN").then(|| token.clone())
        })
    };
    let error = token_only(OsString::from_vec(b"tok-\xff".to_vec())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_TOKEN` named by `bearer_token_env_var` is not valid UTF-8 (set it to the value as text)"
    );
    let error = token_only("tok-secret\n".into()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_TOKEN` named by `bearer_token_env_var` contains a line break, which an HTTP header cannot hold (remove it)"
    );
    let error = token_only("tok-secret\u{1b}".into()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_TOKEN` named by `bearer_token_env_var` contains a control character, which an HTTP header cannot hold (remove it)"
    );

    let mut config = config();
    config.bearer_token_env_var = None;
    let error = resolve(&config, |_| Some("key-secret\r\nX-Injected: 1".into())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `API_KEY` named by `env_http_headers` contains a line break, which an HTTP header cannot hold (remove it)"
    );
    assert!(!format!("{error:?}").contains("secret"), "{error:?}");
}

#[test]
fn an_invalid_header_is_an_error() {
    let mut config = config();
    config.bearer_token_env_var = None;
    config.env_http_headers.clear();
    config.http_headers.insert("bad header".into(), "v".into());
    let error = resolve(&config, |_| None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "header `bad header` from `http_headers` is not a valid HTTP header"
    );
}

/// Answers `initialize`, accepts notifications, refuses `GET`, and answers every
/// other request with `answer(request)`: a content type and a body. Returns the URL.
async fn raw_server(answer: fn(&serde_json::Value) -> (&'static str, String)) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            let head_end = loop {
                let mut chunk = [0; 4096];
                let n = socket.read(&mut chunk).await.unwrap();
                assert_ne!(n, 0, "request cut short");
                received.extend_from_slice(&chunk[..n]);
                if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
            };
            let head = String::from_utf8_lossy(&received[..head_end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |value| value.trim().parse().unwrap());
            while received.len() < head_end + length {
                let mut chunk = [0; 4096];
                let n = socket.read(&mut chunk).await.unwrap();
                received.extend_from_slice(&chunk[..n]);
            }
            let (status, content_type, body) = if !head.starts_with("post") {
                ("405 Method Not Allowed", JSON, String::new())
            } else {
                let request: serde_json::Value =
                    serde_json::from_slice(&received[head_end..]).unwrap();
                if request.get("id").is_none() {
                    ("202 Accepted", JSON, String::new())
                } else if request["method"] == "initialize" {
                    let result = serde_json::json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"},
                    });
                    let answer = serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
                    ("200 OK", JSON, answer.to_string())
                } else {
                    let (content_type, body) = answer(&request);
                    ("200 OK", content_type, body)
                }
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
        }
    });
    url
}

const LIMIT: usize = 1024;

/// Answers every request with `response` (a whole HTTP response) and closes the
/// connection. Returns the address.
async fn answering(response: String) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            // The request is read only until its head ends: enough to answer. A
            // TLS handshake (a record starting with 0x16) is answered at once.
            let mut received = Vec::new();
            while !received.windows(4).any(|w| w == b"\r\n\r\n") && received.first() != Some(&0x16)
            {
                let mut chunk = [0; 4096];
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => received.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    address
}

/// What a `POST` of a `ping` request to `url` fails with.
async fn post_failure(url: &str) -> HttpFailure {
    let client = SplicingHttpClient {
        client: http_client(&Network::default()).unwrap(),
        splicer: Splicer::new(),
        server: "web".into(),
        proxy: None,
        oauth: None,
        streams: Streams::new("web"),
    };
    let message = ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(Default::default()),
        RequestId::Number(1),
    );
    let result = client
        .post_message(url.into(), message, None, None, HashMap::new())
        .await;
    match result {
        Err(StreamableHttpError::Client(failure)) => failure,
        Err(other) => panic!("expected a classified failure, got {other}"),
        Ok(_) => panic!("expected a failure, got an answer"),
    }
}

fn status_response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn each_failing_status_is_classified_with_what_to_do() {
    let cases = [
        ("401 Unauthorized", "`bearer_token_env_var`"),
        ("403 Forbidden", "`env_http_headers`"),
        (
            "404 Not Found",
            "no MCP endpoint is at this URL (check `url`)",
        ),
        ("405 Method Not Allowed", "legacy HTTP+SSE server"),
        ("429 Too Many Requests", "HTTP 429: slow down"),
    ];
    for (status, expected) in cases {
        let address = answering(status_response(status, "text/plain", "slow down")).await;
        let failure = post_failure(&format!("http://{address}/mcp")).await;
        let message = failure.to_string();
        assert!(
            message.starts_with("server `web` answered HTTP "),
            "{message}"
        );
        assert!(
            message.contains(expected),
            "expected `{expected}` in: {message}"
        );
    }
}

#[tokio::test]
async fn a_server_error_keeps_an_excerpt_of_its_body() {
    let body = format!("upstream\n\n  database   down {}", "x".repeat(1000));
    let address = answering(status_response("502 Bad Gateway", "text/html", &body)).await;
    let failure = post_failure(&format!("http://{address}/mcp")).await;
    let HttpFailure::Status {
        status,
        body_excerpt,
        ..
    } = &failure
    else {
        panic!("expected a status failure, got {failure:?}");
    };
    assert_eq!(*status, 502);
    assert!(
        body_excerpt.starts_with("upstream database down xxx"),
        "{body_excerpt}"
    );
    assert!(body_excerpt.ends_with('…'), "{body_excerpt}");
    assert_eq!(
        body_excerpt.chars().count(),
        crate::transport::error::HTTP_BODY_EXCERPT_CHARS + 1
    );
}

#[tokio::test]
async fn a_json_rpc_error_with_a_failing_status_answers_the_request() {
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}"#;
    let address = answering(status_response("500 Internal Server Error", JSON, error)).await;
    let client = SplicingHttpClient {
        client: http_client(&Network::default()).unwrap(),
        splicer: Splicer::new(),
        server: "web".into(),
        proxy: None,
        oauth: None,
        streams: Streams::new("web"),
    };
    let message = ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(Default::default()),
        RequestId::Number(1),
    );
    let answer = client
        .post_message(
            format!("http://{address}/mcp").into(),
            message,
            None,
            None,
            HashMap::new(),
        )
        .await;
    assert!(
        matches!(
            answer,
            Ok(StreamableHttpPostResponse::Json(
                JsonRpcMessage::Error(_),
                _
            ))
        ),
        "the server's JSON-RPC error is its answer"
    );
}

#[tokio::test]
async fn a_configured_header_may_not_replace_one_the_protocol_sets() {
    let address = answering(status_response("200 OK", JSON, "{}")).await;
    let client = SplicingHttpClient {
        client: http_client(&Network::default()).unwrap(),
        splicer: Splicer::new(),
        server: "web".into(),
        proxy: None,
        oauth: None,
        streams: Streams::new("web"),
    };
    let message = ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(Default::default()),
        RequestId::Number(1),
    );
    let headers = HashMap::from([(header::ACCEPT, HeaderValue::from_static("text/html"))]);
    let result = client
        .post_message(
            format!("http://{address}/mcp").into(),
            message,
            None,
            None,
            headers,
        )
        .await;
    assert!(
        matches!(&result, Err(StreamableHttpError::ReservedHeaderConflict(name)) if name == "accept"),
        "the header is refused"
    );
}

#[tokio::test]
async fn a_refused_connection_is_classified() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let failure = post_failure(&format!("http://{address}/mcp")).await;
    assert!(
        matches!(failure, HttpFailure::Refused { .. }),
        "{failure:?}"
    );
}

/// Reads each request whole (its head and its `content-length` body), then ends the
/// connection without an answer: with a reset when `reset`, else a close. Returns
/// the address.
pub(super) async fn ending_without_an_answer(reset: bool) -> std::net::SocketAddr {
    use tokio::io::AsyncReadExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            let whole = |received: &[u8]| {
                let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
                    return false;
                };
                let head = String::from_utf8_lossy(&received[..end]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map_or(0, |value| value.trim().parse().unwrap());
                received.len() >= end + 4 + length
            };
            while !whole(&received) {
                let mut chunk = [0; 4096];
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => received.extend_from_slice(&chunk[..n]),
                }
            }
            if reset {
                socket.set_zero_linger().unwrap();
            }
            drop(socket);
        }
    });
    address
}

#[tokio::test]
async fn a_connection_closed_or_reset_before_the_answer_is_classified() {
    let address = ending_without_an_answer(false).await;
    let failure = post_failure(&format!("http://{address}/mcp")).await;
    assert!(matches!(failure, HttpFailure::Closed { .. }), "{failure:?}");
    let address = ending_without_an_answer(true).await;
    let failure = post_failure(&format!("http://{address}/mcp")).await;
    assert!(matches!(failure, HttpFailure::Reset { .. }), "{failure:?}");
}

#[tokio::test]
async fn a_host_name_that_does_not_resolve_is_classified() {
    // `.invalid` never resolves (RFC 6761): no lookup reaches a real host.
    let failure = post_failure("http://mcp-runtime-test.invalid/mcp").await;
    match failure {
        HttpFailure::Dns { host, .. } => assert_eq!(host, "mcp-runtime-test.invalid"),
        other => panic!("expected a DNS failure, got {other:?}"),
    }
}

#[tokio::test]
async fn tls_to_a_plain_http_listener_is_classified() {
    let address = answering(status_response("200 OK", JSON, "{}")).await;
    let failure = post_failure(&format!("https://{address}/mcp")).await;
    assert!(matches!(failure, HttpFailure::Tls { .. }), "{failure:?}");
}

/// An answer far over [`LIMIT`]: a JSON body for `tools/list` and the tool `json`,
/// an SSE event otherwise.
fn oversized(request: &serde_json::Value) -> (&'static str, String) {
    let pad = "x".repeat(LIMIT * 8);
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"tools": [], "content": [], "pad": pad},
    });
    if request["method"] == "tools/list" || request["params"]["name"] == "json" {
        (JSON, answer.to_string())
    } else {
        (EVENT_STREAM, format!("data: {answer}\n\n"))
    }
}

fn size_error() -> String {
    format!(
        "server `web` sent a message over the client's limit of {LIMIT} bytes (raise `max_message_bytes`)"
    )
}

/// For the tool `event` or `json`, an answer with neither `result` nor `error`, as an
/// SSE event or a JSON body; for `batch-event` or `batch-json`, a good answer in a
/// batch of one, the same two ways.
fn unusable(request: &serde_json::Value) -> (&'static str, String) {
    let name = request["params"]["name"].as_str().unwrap_or_default();
    let mut answer = serde_json::json!({"jsonrpc": "2.0", "id": request["id"]});
    if name.starts_with("batch") {
        answer["result"] = serde_json::json!({"content": [{"type": "text", "text": "ok"}]});
        answer = serde_json::json!([answer]);
    }
    if name.ends_with("json") {
        (JSON, answer.to_string())
    } else {
        (EVENT_STREAM, format!("data: {answer}\n\n"))
    }
}

/// A client of the server at `url`, through the transport, with a limit of [`LIMIT`]
/// bytes a message.
async fn client_of(
    url: String,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::ServiceExt;

    let resolved = ResolvedHttp {
        url,
        bearer_token: None,
        headers: HashMap::new(),
        max_message_bytes: LIMIT,
        network: Network::default(),
        oauth_store: None,
        credentials: Vec::new(),
    };
    let transport = transport(
        "web",
        &resolved,
        client_for(&resolved).unwrap(),
        Splicer::new(),
        None,
    )
    .unwrap()
    .0;
    crate::protocol::client_config(&crate::host::HostHandlers::default())
        .serve(transport)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_unusable_http_answer_fails_its_request_at_once_and_a_batch_is_taken() {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};

    let url = raw_server(unusable).await;
    let client = client_of(url).await;
    let call = |name: &'static str| {
        let peer = client.peer().clone();
        async move {
            tokio::time::timeout(
                std::time::Duration::from_secs(300),
                peer.call_tool(CallToolRequestParams::new(name)),
            )
            .await
            .expect("no wait for the timeout")
        }
    };
    for name in ["event", "json"] {
        match call(name).await {
            Err(rmcp::ServiceError::McpError(error)) => assert!(
                error.message.starts_with(
                    "server `web` sent an answer mcp-runtime cannot read (it has neither `result` nor `error`): `{\"jsonrpc\":\"2.0\",\"id\":"
                ),
                "{name}: {}",
                error.message
            ),
            other => panic!("{name}: expected the refusal, got {other:?}"),
        }
    }
    for name in ["batch-event", "batch-json"] {
        // A tool call's answer is handed over raw.
        let mut answer = client
            .peer()
            .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new(name),
            )))
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let text = raw_answers::raw_result(&mut answer).expect("a raw answer");
        let result: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(result["content"][0]["text"], "ok", "{name}");
    }
}

#[tokio::test]
async fn an_oversized_http_answer_fails_its_request_at_once() {
    use rmcp::model::CallToolRequestParams;

    let url = raw_server(oversized).await;
    let client = client_of(url).await;
    let expected = size_error();
    let bound = std::time::Duration::from_secs(300);
    let list = tokio::time::timeout(bound, client.peer().list_tools(None))
        .await
        .expect("no wait for the timeout");
    let call = tokio::time::timeout(
        bound,
        client.peer().call_tool(CallToolRequestParams::new("echo")),
    )
    .await
    .expect("no wait for the timeout");
    for result in [list.map(|_| ()), call.map(|_| ())] {
        match result {
            Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.message, expected),
            other => panic!("expected the size error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_oversized_answer_to_a_spliced_call_fails_it_at_once() {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, MetaObject, RequestMetaObject};

    let url = raw_server(oversized).await;
    let splicer = Splicer::new();
    let state = serde_json::value::RawValue::from_string("{}".into()).unwrap();
    let (placeholder, _slot) = splicer.placeholder(Arc::from(state));
    let client = SplicingHttpClient {
        client: reqwest::Client::new(),
        splicer,
        server: "web".into(),
        proxy: None,
        oauth: None,
        streams: Streams::new("web"),
    };
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_sse_event_size = LIMIT;
    limits.max_json_response_size = LIMIT;
    for tool in ["json", "sse"] {
        let mut params = CallToolRequestParams::new(tool);
        let meta = serde_json::json!({ SANDBOX_STATE_KEY: placeholder });
        params.meta = Some(RequestMetaObject(MetaObject(
            meta.as_object().unwrap().clone(),
        )));
        let message = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            RequestId::Number(5),
        );
        let response = client
            .post_message_with_response_limits(
                url.as_str().into(),
                message,
                None,
                None,
                HashMap::new(),
                limits,
            )
            .await
            .unwrap();
        let answer = match response {
            StreamableHttpPostResponse::Json(answer, _) => answer,
            StreamableHttpPostResponse::Sse(mut events, _) => {
                let event = events.next().await.unwrap().unwrap();
                assert!(events.next().await.is_none(), "the stream ends there");
                serde_json::from_str(&event.data.unwrap()).unwrap()
            }
            _ => panic!("an answer was expected"),
        };
        let JsonRpcMessage::Error(error) = answer else {
            panic!("expected the size error, got {answer:?}");
        };
        assert_eq!(error.id, Some(RequestId::Number(5)), "for {tool}");
        assert_eq!(error.error.message, size_error(), "for {tool}");
    }
}

pub(super) fn client() -> SplicingHttpClient {
    SplicingHttpClient {
        client: http_client(&Network::default()).unwrap(),
        splicer: Splicer::new(),
        server: "web".into(),
        proxy: None,
        oauth: None,
        streams: Streams::new("web"),
    }
}

fn discover(id: i64) -> ClientJsonRpcMessage {
    use rmcp::model::{DiscoverRequest, DiscoverRequestParams};
    ClientJsonRpcMessage::request(
        ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {})),
        RequestId::Number(id),
    )
}

/// What a `POST` of `message` to a server answering `response` comes to.
async fn post_to(
    response: String,
    message: ClientJsonRpcMessage,
    session: Option<&str>,
) -> HttpResult<StreamableHttpPostResponse> {
    let address = answering(response).await;
    client()
        .post_message(
            format!("http://{address}/mcp").into(),
            message,
            session.map(Arc::from),
            None,
            HashMap::new(),
        )
        .await
}

/// The JSON-RPC error a `POST` was answered with.
fn answered_error(answer: HttpResult<StreamableHttpPostResponse>) -> rmcp::model::JsonRpcError {
    match answer {
        Ok(StreamableHttpPostResponse::Json(JsonRpcMessage::Error(error), _)) => error,
        Ok(other) => panic!("expected a JSON-RPC error, got {other:?}"),
        Err(error) => panic!("expected a JSON-RPC error, got {error}"),
    }
}

#[tokio::test]
async fn a_discover_refused_with_a_status_is_an_error_for_its_own_id() {
    for status in ["400 Bad Request", "404 Not Found", "405 Method Not Allowed"] {
        let response = status_response(status, "text/plain", "no such endpoint");
        let error = answered_error(post_to(response, discover(7), None).await);
        assert_eq!(error.id, Some(RequestId::Number(7)), "{status}");
        assert_eq!(error.error.code, rmcp::model::ErrorCode::INVALID_REQUEST);
        let code = &status[..3];
        assert_eq!(
            error.error.message,
            format!("server/discover rejected with HTTP {code}: no such endpoint")
        );
    }
}

#[tokio::test]
async fn a_discover_refused_with_a_json_rpc_error_keeps_it_under_its_own_id() {
    // The Python SDK cannot name the request it rejects.
    let body = r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32601,"message":"Method not found"}}"#;
    let response = status_response("404 Not Found", JSON, body);
    let error = answered_error(post_to(response, discover(3), None).await);
    assert_eq!(error.id, Some(RequestId::Number(3)));
    assert_eq!(error.error.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND);
    assert_eq!(error.error.message, "Method not found");
}

#[tokio::test]
async fn a_discover_refused_for_credentials_or_in_a_session_is_not_an_answer() {
    let refused = post_to(
        status_response("401 Unauthorized", "text/plain", "who are you"),
        discover(1),
        None,
    )
    .await;
    assert!(
        matches!(
            refused,
            Err(StreamableHttpError::Client(
                HttpFailure::Unauthorized { .. }
            ))
        ),
        "{refused:?}"
    );
    let expired = post_to(
        status_response("404 Not Found", "text/plain", "gone"),
        discover(1),
        Some("session-1"),
    )
    .await;
    assert!(
        matches!(expired, Err(StreamableHttpError::SessionExpired)),
        "{expired:?}"
    );
    let error = post_to(
        status_response("500 Internal Server Error", "text/plain", "boom"),
        discover(1),
        None,
    )
    .await;
    assert!(
        matches!(
            error,
            Err(StreamableHttpError::Client(HttpFailure::Status {
                status: 500,
                ..
            }))
        ),
        "{error:?}"
    );
}

/// Answers one `POST` with an empty JSON-RPC result for id 9, and sends the request's
/// head (lowercased) on the returned channel. Returns the URL.
async fn head_recorder() -> (String, tokio::sync::oneshot::Receiver<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (sender, receiver) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut received = Vec::new();
        while !received.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut chunk = [0; 4096];
            let n = socket.read(&mut chunk).await.unwrap();
            assert_ne!(n, 0, "request cut short");
            received.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&received).to_lowercase();
        let body = r#"{"jsonrpc":"2.0","id":9,"result":{"content":[]}}"#;
        let response = status_response("200 OK", JSON, body);
        socket.write_all(response.as_bytes()).await.unwrap();
        let _ = sender.send(head);
    });
    (url, receiver)
}

#[tokio::test]
async fn a_header_computed_from_an_exact_argument_carries_the_value_sent() {
    use rmcp::model::{CallToolRequest, CallToolRequestParams};

    let client = client();
    let mut guards = Vec::new();
    // Neither value survives a round trip through a JSON value as written, so each
    // travels as a placeholder until the body is spliced.
    let arguments = serde_json::value::RawValue::from_string(
        r#"{"region":"us\u002dwest","limit":1e2,"label":"caf\u00e9"}"#.into(),
    )
    .unwrap();
    let serde_json::Value::Object(arguments) =
        client.splicer.exact_value(&arguments, &mut guards).unwrap()
    else {
        panic!("an object");
    };
    let placeholder = |key: &str| arguments[key].as_str().unwrap().to_owned();
    // The headers as rmcp computes them from its message, for a tool whose schema
    // marks these arguments with `x-mcp-header`.
    let mut headers = HashMap::new();
    for (name, key) in [
        ("mcp-param-region", "region"),
        ("mcp-param-limit", "limit"),
        ("mcp-param-label", "label"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&placeholder(key)).unwrap(),
        );
    }
    headers.insert(
        HeaderName::from_static("mcp-name"),
        HeaderValue::from_static("lookup"),
    );
    let mut params = CallToolRequestParams::new("lookup");
    params.arguments = Some(arguments.clone());
    let message = ClientJsonRpcMessage::request(
        ClientRequest::CallToolRequest(CallToolRequest::new(params)),
        RequestId::Number(9),
    );
    let (url, head) = head_recorder().await;
    client
        .post_message(url.into(), message, None, None, headers)
        .await
        .unwrap();
    let head = head.await.unwrap();
    for expected in [
        "mcp-param-region: us-west\r\n",
        "mcp-param-limit: 100.0\r\n",
        // Not plain ASCII: Base64, as the revision's value encoding says.
        "mcp-param-label: =?base64?y2fmw6k=?=\r\n",
        "mcp-name: lookup\r\n",
    ] {
        assert!(head.contains(expected), "expected `{expected}` in:\n{head}");
    }
    assert!(!head.contains("mcp-runtime-raw-"), "{head}");
}

#[test]
fn a_403_naming_insufficient_scope_asks_for_a_login_with_those_scopes() {
    let status = reqwest::StatusCode::FORBIDDEN;
    let challenge = |text: &str| Some(text.to_owned());
    let failure = status_failure(
        "web",
        status,
        b"",
        true,
        challenge(
            r#"Bearer error="insufficient_scope", scope="mcp:write files:read", resource_metadata="https://x/.well-known/oauth-protected-resource""#,
        ),
    );
    assert_eq!(
        failure.to_string(),
        "server `web` needs a login with more scopes (`mcp:write`, `files:read`)"
    );
    let HttpFailure::InsufficientScope { scopes, .. } = failure else {
        panic!("an insufficient_scope 403");
    };
    assert_eq!(scopes, ["mcp:write", "files:read"]);
    // Any other 403 refuses the credentials, with its challenge kept.
    for other in [None, challenge(r#"Bearer error="invalid_token""#)] {
        assert!(matches!(
            status_failure("web", status, b"", true, other.clone()),
            HttpFailure::Forbidden { challenge, .. } if challenge == other
        ));
    }
}

#[tokio::test]
async fn a_redirect_location_is_masked_and_bounded() {
    let location = format!(
        "https://user:s3cret@other.example/{}?token=abc123",
        "a".repeat(500)
    );
    let response = format!(
        "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let address = answering(response).await;
    let failure = post_failure(&format!("http://{address}/mcp")).await;
    let HttpFailure::Redirect {
        status,
        location: Some(shown),
        ..
    } = &failure
    else {
        panic!("expected a redirect, got {failure:?}");
    };
    assert_eq!(*status, 302);
    assert!(
        shown.starts_with("https://*****@other.example/aaa"),
        "{shown}"
    );
    assert!(shown.ends_with('…'), "{shown}");
    assert_eq!(
        shown.chars().count(),
        crate::transport::error::HTTP_BODY_EXCERPT_CHARS + 1
    );
    let message = failure.to_string();
    assert!(
        !message.contains("s3cret") && !message.contains("abc123"),
        "{message}"
    );
}

#[test]
fn the_http_clients_error_stays_the_source_of_its_startup_failure() {
    let refused = reqwest::Proxy::http("not a proxy url").unwrap_err();
    let error = StartupError::HttpClient {
        source: std::sync::Arc::new(refused),
    };
    let source = std::error::Error::source(&error)
        .and_then(|source| {
            source.downcast_ref::<std::sync::Arc<dyn std::error::Error + Send + Sync>>()
        })
        .expect("a shared source");
    assert!(source.is::<reqwest::Error>(), "{source:?}");
    // The client's own text names its internals: the message says what failed.
    assert_eq!(
        crate::error::chain(&error),
        "cannot set up the HTTP client (its TLS backend cannot be initialized)"
    );
}
