use std::sync::{Arc, Mutex};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::mpsc,
};

use super::*;

/// Reads one HTTP/1.1 request from `socket`: its head, lowercase, and its body;
/// `None` when the client closes first.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut bytes = Vec::new();
    let head_end = loop {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse().unwrap());
    while bytes.len() < head_end + length {
        let mut chunk = [0; 4096];
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Some((head, bytes.split_off(head_end)))
}

/// A server of the handshake era: `server/discover` gets `404` with "method not
/// found", `initialize` is answered with `answer`, or else the version it offers.
/// Every method received is pushed to `received`, with `initialize`'s offered
/// version. Returns the URL.
async fn handshake_server(
    received: Arc<Mutex<Vec<String>>>,
    answer: Option<&'static str>,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let received = received.clone();
            tokio::spawn(async move {
                let Some((head, body)) = read_request(&mut socket).await else {
                    return;
                };
                let (status, body) = if !head.starts_with("post") {
                    ("405 Method Not Allowed", String::new())
                } else {
                    let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let method = message["method"].as_str().unwrap_or_default();
                    let id = &message["id"];
                    match method {
                        "server/discover" => {
                            received.lock().unwrap().push(method.to_owned());
                            let error = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": -32601, "message": "Method not found"}});
                            ("404 Not Found", error.to_string())
                        }
                        "initialize" => {
                            let offered = &message["params"]["protocolVersion"];
                            received
                                .lock()
                                .unwrap()
                                .push(format!("initialize {}", offered.as_str().unwrap()));
                            let version = answer.map_or(offered.clone(), Into::into);
                            let result = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                "result": {"protocolVersion": version,
                                    "capabilities": {"tools": {}},
                                    "serverInfo": {"name": "old", "version": "0"}}});
                            ("200 OK", result.to_string())
                        }
                        _ => ("202 Accepted", String::new()),
                    }
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

/// What is sent to the Streamable HTTP server at `url`, with every other setting at
/// its default.
fn resolved(url: &str) -> http::ResolvedHttp {
    let config = crate::config::HttpConfig {
        url: url.to_owned(),
        bearer_token_env_var: None,
        http_headers: Default::default(),
        env_http_headers: Default::default(),
        transport: crate::config::HttpTransport::StreamableHttp,
        ca_certificate: None,
    };
    http::resolve(&config, |_| None).unwrap()
}

async fn start_pinned(
    url: &str,
    pinned: Option<ProtocolVersion>,
) -> Result<RunningService<RoleClient, Client>, StartupError> {
    let resolved = resolved(url);
    let client = Client::new("old", &crate::host::HostHandlers::default());
    start(
        "old",
        &resolved,
        client,
        &Splicer::new(),
        &CancellationToken::new(),
        pinned,
    )
    .await
    .map(|reached| reached.service)
}

#[tokio::test]
async fn auto_probes_then_initializes_offering_the_newest_handshake_revision() {
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = handshake_server(received.clone(), None).await;
    let service = start_pinned(&url, None).await.unwrap();
    let version = service.peer().peer_info().unwrap().protocol_version.clone();
    assert_eq!(version, ProtocolVersion::V_2025_11_25);
    assert_eq!(
        *received.lock().unwrap(),
        ["server/discover", "initialize 2025-11-25"]
    );
}

#[tokio::test]
async fn a_pinned_handshake_revision_is_offered_without_a_probe() {
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = handshake_server(received.clone(), None).await;
    let service = start_pinned(&url, Some(ProtocolVersion::V_2025_06_18))
        .await
        .unwrap();
    let version = service.peer().peer_info().unwrap().protocol_version.clone();
    assert_eq!(version, ProtocolVersion::V_2025_06_18);
    assert_eq!(*received.lock().unwrap(), ["initialize 2025-06-18"]);
}

#[tokio::test]
async fn a_pinned_2026_07_28_never_falls_back_to_initialize() {
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = handshake_server(received.clone(), None).await;
    let Err(error) = start_pinned(&url, Some(ProtocolVersion::V_2026_07_28)).await else {
        panic!("a handshake server cannot start pinned to 2026-07-28");
    };
    let message = crate::error::chain(&error);
    assert!(message.starts_with("handshake failed"), "{message}");
    assert!(message.contains("Method not found"), "{message}");
    assert_eq!(*received.lock().unwrap(), ["server/discover"]);
}

#[tokio::test]
async fn a_handshake_answer_of_a_revision_without_initialize_fails_naming_both() {
    let received = Arc::new(Mutex::new(Vec::new()));
    let url = handshake_server(received.clone(), Some("2026-07-28")).await;
    let Err(error) = start_pinned(&url, None).await else {
        panic!("`2026-07-28` has no `initialize`");
    };
    assert_eq!(
        error.to_string(),
        "the server answered `initialize` with protocol version `2026-07-28`, which mcp-runtime does not speak (it offered `2025-11-25`, and also speaks `2025-06-18`, `2025-03-26` and `2024-11-05`)"
    );
}

/// How the breaking server answers a `GET` that resumes the call's stream.
#[derive(Clone, Copy)]
enum Resumed {
    /// Never: the connection stays open, unanswered.
    Never,
    /// With `503`.
    Unavailable,
    /// With an event stream that sends a `ping` request (id `ping-1`), then nothing.
    Silent,
    /// With an event stream whose one event (id `e-2`) holds this data, an answer
    /// when it holds `ID` (the call's id), then ends.
    Answers(&'static str),
    /// The first time with an event stream whose one event has the id `e-2` and no
    /// data, which then breaks as the first did; every later time with `503`.
    BreaksAgain,
    /// With an event stream that breaks before any event, every time.
    BreaksAtOnce,
    /// With an event stream whose one event holds the call's answer with a byte that
    /// is not UTF-8 outside its result, then stays open.
    NotText,
    /// The session's own stream, and any `GET` that resumes a stream, with an event
    /// stream whose one event (id `o-1`) is 2,000 bytes long, then stays open.
    OwnOversized,
    /// The session's own stream, and any `GET` that resumes a stream, with an event
    /// stream that breaks before any event.
    OwnBreaksAtOnce,
}

/// What the breaking server was sent, besides the start and the call.
#[derive(Debug, PartialEq)]
enum Seen {
    /// A `GET` of the session's own stream, without a `Last-Event-ID`.
    Own,
    /// A `GET` that resumes a stream from this `Last-Event-ID`.
    Resuming(String),
    /// An answer to the server's request of this id.
    Answer(String),
}

/// The head of an answer that is an event stream.
const EVENT_STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// An event stream's head, and `events` as one chunk of its body.
fn event_stream(events: &str) -> String {
    format!("{EVENT_STREAM_HEAD}{:x}\r\n{events}\r\n", events.len())
}

/// The end of a chunked body.
const BODY_END: &str = "0\r\n\r\n";

/// A server of the handshake era whose `tools/call` answer is an event stream that
/// sends one event with the id `e-1` and then breaks (the connection is closed
/// midway); a `GET` that resumes it is answered as `resumed` says; the session's
/// own `GET` stream is refused (`405`). Returns the URL and what the server sees,
/// as it sees it.
async fn breaking_server(resumed: Resumed) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen, seeing) = mpsc::unbounded_channel();
    let call_id = Arc::new(Mutex::new(serde_json::Value::Null));
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
            let call_id = call_id.clone();
            tokio::spawn(async move {
                let Some((head, body)) = read_request(&mut socket).await else {
                    return;
                };
                if head.starts_with("get")
                    && matches!(resumed, Resumed::OwnOversized | Resumed::OwnBreaksAtOnce)
                {
                    let from = head
                        .lines()
                        .find_map(|line| line.strip_prefix("last-event-id:"))
                        .map(|value| value.trim().to_owned());
                    let _ = seen.send(from.map_or(Seen::Own, Seen::Resuming));
                    if let Resumed::OwnBreaksAtOnce = resumed {
                        let _ = socket.write_all(EVENT_STREAM_HEAD.as_bytes()).await;
                        return;
                    }
                    let data = "x".repeat(2000);
                    let _ = socket
                        .write_all(event_stream(&format!("id: o-1\ndata: {data}\n\n")).as_bytes())
                        .await;
                    return std::future::pending().await;
                }
                if head.starts_with("get") {
                    let Some(from) = head
                        .lines()
                        .find_map(|line| line.strip_prefix("last-event-id:"))
                        .map(|value| value.trim().to_owned())
                    else {
                        let _ = socket
                            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        return;
                    };
                    let again = from == "e-2";
                    let _ = seen.send(Seen::Resuming(from));
                    let unavailable = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy";
                    let response = match resumed {
                        Resumed::Never => return std::future::pending().await,
                        Resumed::Unavailable => unavailable.to_owned(),
                        Resumed::Silent => {
                            let ping = r#"{"jsonrpc":"2.0","id":"ping-1","method":"ping"}"#;
                            let _ = socket
                                .write_all(event_stream(&format!("data: {ping}\n\n")).as_bytes())
                                .await;
                            return std::future::pending().await;
                        }
                        Resumed::Answers(data) => {
                            let id = call_id.lock().unwrap().to_string();
                            let data = data.replace("ID", &id);
                            event_stream(&format!("id: e-2\ndata: {data}\n\n")) + BODY_END
                        }
                        Resumed::BreaksAgain if again => unavailable.to_owned(),
                        Resumed::BreaksAgain => event_stream("id: e-2\ndata: \n\n"),
                        Resumed::BreaksAtOnce => EVENT_STREAM_HEAD.to_owned(),
                        Resumed::OwnOversized | Resumed::OwnBreaksAtOnce => {
                            unreachable!("answered above")
                        }
                        Resumed::NotText => {
                            let id = call_id.lock().unwrap().to_string();
                            let answer = format!(
                                r#"data: {{"note":"caf?","jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#
                            );
                            let mut bytes = event_stream(&format!("{answer}\n\n")).into_bytes();
                            let at = bytes.iter().position(|&byte| byte == b'?').unwrap();
                            bytes[at] = 0xFF;
                            let _ = socket.write_all(&bytes).await;
                            return std::future::pending().await;
                        }
                    };
                    let _ = socket.write_all(response.as_bytes()).await;
                    return;
                }
                // The end of the session (`DELETE`) has no body.
                let message: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let id = &message["id"];
                let response = match message["method"].as_str() {
                    Some("initialize") => {
                        let result = serde_json::json!({"jsonrpc": "2.0", "id": id,
                            "result": {"protocolVersion": "2025-11-25",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "breaking", "version": "0"}}});
                        let body = result.to_string();
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    Some("tools/call") => {
                        *call_id.lock().unwrap() = id.clone();
                        // One chunk of an event stream, then the connection is closed
                        // before the body's end.
                        event_stream("id: e-1\ndata: \n\n")
                    }
                    None => {
                        if let Some(id) = id.as_str() {
                            let _ = seen.send(Seen::Answer(id.to_owned()));
                        }
                        "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_owned()
                    }
                    Some(_) => {
                        "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_owned()
                    }
                };
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (url, seeing)
}

async fn connect_to(url: &str) -> crate::connection::Connection {
    let resolved = resolved(url);
    crate::connection::Connection::connect(
        "web",
        &crate::transport::Endpoint::Http(resolved),
        &crate::binding::Binding::Http,
        |_| {},
    )
    .await
    .unwrap()
}

/// The timeout of the calls to the breaking server: a deadline tested passes in
/// paused time, and no other is reached.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Calls `t` until the server has seen `expected`, in order, then lets time pass
/// (paused, so that nothing else is waited for): the call's failure.
async fn call_until_seen_then_let_time_pass(
    connection: &crate::connection::Connection,
    seeing: &mut mpsc::UnboundedReceiver<Seen>,
    expected: &[Seen],
) -> String {
    let call = connection.call_plain("t", CALL_TIMEOUT);
    let mut call = std::pin::pin!(call);
    for expected in expected {
        tokio::select! {
            seen = seeing.recv() => assert_eq!(seen.as_ref(), Some(expected)),
            ended = &mut call => panic!("the call ended first: {ended:?}"),
        }
    }
    tokio::time::pause();
    let error = call.await.expect_err("the answer never comes");
    crate::error::chain(&error)
}

#[tokio::test]
async fn a_deadline_passing_while_a_stream_is_resumed_says_the_stream_was_lost() {
    let (url, mut seeing) = breaking_server(Resumed::Never).await;
    let connection = connect_to(&url).await;
    let resuming = [Seen::Resuming("e-1".into())];
    let error = call_until_seen_then_let_time_pass(&connection, &mut seeing, &resuming).await;
    assert_eq!(
        error,
        "tool `t` on server `web` failed: the server's event stream ended before the answer, and it was not resumed within 300s (the call may have run): server `web` closed the connection before its answer was complete (check that it is still running)"
    );
    assert!(seeing.try_recv().is_err(), "one attempt");
    assert!(!connection.has_ended(), "the server answered the call");
    connection.shutdown().await;
}

#[tokio::test]
async fn a_deadline_passing_after_a_stream_was_resumed_is_a_timeout() {
    let (url, mut seeing) = breaking_server(Resumed::Silent).await;
    let connection = connect_to(&url).await;
    // The client answered the `ping` of the resumed stream: it reads that stream.
    let seen = [Seen::Resuming("e-1".into()), Seen::Answer("ping-1".into())];
    let error = call_until_seen_then_let_time_pass(&connection, &mut seeing, &seen).await;
    assert_eq!(
        error,
        "tool `t` on server `web` did not answer within 300s (raise `tool_timeout_sec`)"
    );
    assert!(seeing.try_recv().is_err(), "one attempt");
    connection.shutdown().await;
}

/// A connection to the breaking server, whose attempts to resume a stream pause only
/// briefly.
async fn impatient(url: &str) -> crate::connection::Connection {
    let connection = connect_to(url).await;
    let streams = connection.streams.as_ref().expect("an HTTP connection");
    streams.pause_resumptions(Duration::from_millis(1), Duration::from_millis(2));
    connection
}

/// The answer to a call of `t` on `connection`, which must come before [`AT_ONCE`].
async fn at_once(
    connection: &crate::connection::Connection,
) -> Result<crate::ToolResult, crate::connection::error::CallError> {
    tokio::time::timeout(AT_ONCE, connection.call_plain("t", CALL_TIMEOUT))
        .await
        .expect("the answer comes at once")
}

/// The error of a call of `t` on `connection`, which must fail before [`AT_ONCE`].
async fn failed_at_once(connection: &crate::connection::Connection) -> String {
    let answered = at_once(connection).await;
    crate::error::chain(&answered.expect_err("the call cannot succeed"))
}

/// What the server saw after the call, in order.
fn all_seen(seeing: &mut mpsc::UnboundedReceiver<Seen>) -> Vec<Seen> {
    std::iter::from_fn(|| seeing.try_recv().ok()).collect()
}

#[tokio::test]
async fn resuming_a_stream_stops_after_a_bounded_count_of_failures() {
    let (url, mut seeing) = breaking_server(Resumed::Unavailable).await;
    let connection = impatient(&url).await;
    assert_eq!(
        failed_at_once(&connection).await,
        "tool `t` on server `web` failed: the server's event stream ended before the answer, and resuming it failed (the call may have run; check that the server is still running before calling again): server `web` answered HTTP 503"
    );
    let resuming = || Seen::Resuming("e-1".into());
    assert_eq!(
        all_seen(&mut seeing),
        [resuming(), resuming(), resuming()],
        "each attempt was made, and no more"
    );
    assert_eq!(http::MAX_FAILED_RESUMPTIONS, 3);
    assert!(!connection.has_ended(), "the server answered every request");
    connection.shutdown().await;
}

#[tokio::test]
async fn a_stream_that_breaks_again_after_it_was_resumed_says_how() {
    let (url, mut seeing) = breaking_server(Resumed::BreaksAgain).await;
    let connection = impatient(&url).await;
    assert_eq!(
        failed_at_once(&connection).await,
        "tool `t` on server `web` failed: the server's event stream ended before the answer, and resuming it failed (the call may have run; check that the server is still running before calling again): server `web` answered HTTP 503"
    );
    let resuming = |from: &str| Seen::Resuming(from.into());
    assert_eq!(
        all_seen(&mut seeing),
        [
            resuming("e-1"),
            resuming("e-2"),
            resuming("e-2"),
            resuming("e-2")
        ],
        "resumed once, then from its new last event"
    );
    assert!(!connection.has_ended());
    connection.shutdown().await;
}

/// Results with what no revision has: a content block of a type of its own (which
/// rmcp cannot read as a tool result), or only fields of their own (which rmcp's
/// tool result drops).
const FUTURE_RESULTS: [&str; 2] = [
    r#"{"content":[{"type":"video","uri":"v://1","frames":24},{"type":"text","text":"after"}],"futureField":{"n":1.50}}"#,
    r#"{"content":[{"type":"text","text":"known","futureBlockField":true}],"futureField":{"n":1.50}}"#,
];

/// How long a call whose answer comes at once may take: only a call that waits for
/// its timeout ([`CALL_TIMEOUT`]) reaches it.
const AT_ONCE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn an_answer_on_a_resumed_stream_passes_through_whole() {
    for result in FUTURE_RESULTS {
        let answer = format!(r#"{{"jsonrpc":"2.0","id":ID,"result":{result}}}"#);
        let (url, _seeing) = breaking_server(Resumed::Answers(answer.leak())).await;
        let connection = connect_to(&url).await;
        let answered = at_once(&connection)
            .await
            .unwrap_or_else(|error| panic!("{}", crate::error::chain(&error)));
        assert_eq!(
            serde_json::Value::Object(answered.as_object().clone()),
            serde_json::from_str::<serde_json::Value>(result).unwrap(),
            "the result as the server wrote it"
        );
        connection.shutdown().await;
    }
}

#[tokio::test]
async fn a_batch_or_an_unusable_answer_on_a_resumed_stream_is_read_at_once() {
    let batch = r#"[{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ok"}]}}]"#;
    let unusable = r#"{"jsonrpc":"2.0","id":ID}"#;
    for data in [batch, unusable] {
        let (url, _seeing) = breaking_server(Resumed::Answers(data)).await;
        let connection = connect_to(&url).await;
        let answered = at_once(&connection).await;
        match answered {
            Ok(result) if data == batch => {
                assert_eq!(result.content().next().unwrap().as_text(), Some("ok"));
            }
            Err(error) if data == unusable => {
                let error = crate::error::chain(&error);
                assert!(
                    error.starts_with("tool `t` on server `web` failed: server `web` sent an answer mcp-runtime cannot read (it has neither `result` nor `error`)"),
                    "{error}"
                );
            }
            other => panic!("{data}: {other:?}"),
        }
        connection.shutdown().await;
    }
}

#[tokio::test]
async fn an_answer_not_utf8_on_a_resumed_stream_is_refused_at_once_showing_it() {
    let (url, mut seeing) = breaking_server(Resumed::NotText).await;
    let connection = connect_to(&url).await;
    let error = failed_at_once(&connection).await;
    assert!(
        error.starts_with("tool `t` on server `web` failed: server `web` sent an answer that is not valid UTF-8 (from byte 12), which JSON-RPC requires: `{\"note\":\"caf\\xFF\",\"jsonrpc\":\"2.0\""),
        "{error}"
    );
    assert_eq!(
        all_seen(&mut seeing),
        [Seen::Resuming("e-1".into())],
        "one attempt"
    );
    connection.shutdown().await;
}

#[tokio::test]
async fn a_stream_lost_again_each_time_it_is_resumed_is_resumed_a_bounded_number_of_times() {
    let (url, mut seeing) = breaking_server(Resumed::BreaksAtOnce).await;
    let connection = impatient(&url).await;
    assert_eq!(
        failed_at_once(&connection).await,
        "tool `t` on server `web` failed: the server's event stream ended before the answer, and resuming it failed (the call may have run): server `web` closed the connection before its answer was complete (check that it is still running)"
    );
    let resuming = || Seen::Resuming("e-1".into());
    assert_eq!(
        all_seen(&mut seeing),
        [resuming(), resuming(), resuming()],
        "no more attempts than the bound"
    );
    assert_eq!(http::MAX_FRUITLESS_RESUMPTIONS, 3);
    assert!(!connection.has_ended(), "the server answered every request");
    connection.shutdown().await;
}

/// Connects to `url` with `max_message_bytes` as the limit of one message, and
/// waits until the session's own stream is no longer opened: its reopening was
/// refused (what the transport keeps as the last failure to resume a stream).
async fn own_stream_given_up(url: &str, max_message_bytes: usize) -> crate::connection::Connection {
    let mut resolved = resolved(url);
    resolved.max_message_bytes = max_message_bytes;
    let connection = crate::connection::Connection::connect(
        "web",
        &crate::transport::Endpoint::Http(resolved),
        &crate::binding::Binding::Http,
        |_| {},
    )
    .await
    .unwrap();
    let streams = connection
        .streams
        .as_ref()
        .expect("an HTTP connection")
        .clone();
    streams.pause_resumptions(Duration::from_millis(1), Duration::from_millis(2));
    let given_up = async {
        while streams.resumption_failure().is_none() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), given_up)
        .await
        .expect("the own stream is given up");
    connection
}

#[tokio::test]
async fn an_event_over_the_limit_on_the_sessions_own_stream_is_not_read_again() {
    let (url, mut seeing) = breaking_server(Resumed::OwnOversized).await;
    let connection = own_stream_given_up(&url, 1024).await;
    let streams = connection.streams.as_ref().unwrap();
    assert_eq!(
        streams
            .resumption_failure()
            .map(|failure| failure.to_string())
            .as_deref(),
        Some(
            "server `web` sent an event over the client's limit of 1024 bytes on its own event stream (raise `max_message_bytes`)"
        )
    );
    assert_eq!(all_seen(&mut seeing), [Seen::Own], "opened once, not again");
    assert!(
        !connection.has_ended(),
        "the connection goes on without the stream"
    );
    connection.shutdown().await;
}

#[tokio::test]
async fn the_sessions_own_stream_ending_before_any_event_is_opened_a_bounded_number_of_times() {
    let (url, mut seeing) = breaking_server(Resumed::OwnBreaksAtOnce).await;
    let connection = own_stream_given_up(&url, 1024).await;
    assert_eq!(
        all_seen(&mut seeing),
        [Seen::Own, Seen::Own, Seen::Own],
        "opened, then opened again no more than the bound allows"
    );
    assert_eq!(http::MAX_FRUITLESS_RESUMPTIONS, 3);
    assert!(
        !connection.has_ended(),
        "the connection goes on without the stream"
    );
    connection.shutdown().await;
}
