//! Tests of the stdio transport: raw servers over in-memory pipes, and a real
//! process for shutdown.

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientRequest},
    service::{RoleClient, RunningService},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf},
    sync::oneshot,
};

use super::{id_scanner::MAX_ID_BYTES, *};

/// Small, so the tests stay fast; every oversized line below is well past it.
const LIMIT: usize = 1024;
/// A call's default timeout: a test that waits it out fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// A server written by hand, speaking raw lines.
struct RawPeer {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
}

impl RawPeer {
    async fn next(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("a message");
        serde_json::from_str(&line).unwrap()
    }

    /// The next request, skipping notifications.
    async fn next_request(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    async fn send(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
        self.write.flush().await.unwrap();
    }

    async fn answer(&mut self, request: &Value, result: Value) {
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.send(&answer.to_string()).await;
    }

    async fn handshake(&mut self) {
        let initialize = self.next().await;
        assert_eq!(initialize["method"], "initialize");
        let result = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        });
        self.answer(&initialize, result).await;
        assert_eq!(self.next().await["method"], "notifications/initialized");
    }
}

/// A client over [`StdioTransport`] and the raw server at its other end.
fn connect() -> (
    impl Future<Output = RunningService<RoleClient, ()>>,
    RawPeer,
) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let transport = StdioTransport::new("big", read, write, LIMIT);
    let (read, write) = tokio::io::split(theirs);
    let peer = RawPeer {
        lines: BufReader::new(read).lines(),
        write,
    };
    (async move { ().serve(transport).await.unwrap() }, peer)
}

/// `{"jsonrpc":"2.0",<before>"result":{"pad":"xxx…"}<after>}`, over the limit.
fn oversized(before: &str, after: &str) -> String {
    let pad = "x".repeat(LIMIT * 8);
    format!(r#"{{"jsonrpc":"2.0",{before}"result":{{"tools":[],"pad":"{pad}"}}{after}}}"#)
}

fn size_error(line: &str) -> String {
    format!(
        "server `big` sent a message of {} bytes, over the client's limit of {LIMIT} bytes (raise `max_message_bytes`)",
        line.len()
    )
}

fn call(name: &str) -> ClientRequest {
    ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        CallToolRequestParams::new(name.to_owned()),
    ))
}

/// The values completing prompt `p`'s argument `a`, which must come before
/// [`CALL_TIMEOUT`].
async fn completion(
    peer: &rmcp::Peer<rmcp::RoleClient>,
) -> Result<Vec<String>, rmcp::ServiceError> {
    tokio::time::timeout(CALL_TIMEOUT, peer.complete_prompt_simple("p", "a", ""))
        .await
        .expect("no wait for the timeout")
}

fn error_message(result: Result<impl std::fmt::Debug, rmcp::ServiceError>) -> String {
    match result {
        Err(rmcp::ServiceError::McpError(error)) => error.message.into_owned(),
        other => panic!("expected the size error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_fails_its_request_at_once() {
    let (client, mut peer) = connect();
    let (done, finished) = oneshot::channel::<()>();
    let (sent, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let server = tokio::spawn(async move {
        peer.handshake().await;
        // A tools/list answer with its id first; a call result with its id last,
        // as a string of digits.
        let answers: [fn(&Value) -> String; 2] = [
            |id| oversized(&format!(r#""id":{id},"#), ""),
            |id| oversized("", &format!(r#","id":"{id}""#)),
        ];
        for answer in answers {
            let request = peer.next_request().await;
            let line = answer(&request["id"]);
            peer.send(&line).await;
            sent.send(line).unwrap();
        }
        // The connection is still usable afterwards.
        let request = peer.next_request().await;
        peer.answer(&request, json!({"completion": {"values": []}}))
            .await;
        // Stay connected: nothing fails because the pipe closed.
        let _ = finished.await;
    });
    let client = client.await;
    let peer = client.peer();
    let list = tokio::time::timeout(CALL_TIMEOUT, peer.list_tools(None))
        .await
        .expect("no wait for the timeout");
    assert_eq!(
        error_message(list),
        size_error(&lines.recv().await.unwrap())
    );
    let call = tokio::time::timeout(CALL_TIMEOUT, peer.send_request(call("echo")))
        .await
        .expect("no wait for the timeout");
    assert_eq!(
        error_message(call),
        size_error(&lines.recv().await.unwrap())
    );
    // A request whose answer rmcp reads itself (a listing's goes raw).
    let completed = tokio::time::timeout(CALL_TIMEOUT, peer.complete_prompt_simple("p", "a", ""))
        .await
        .expect("no wait for the timeout");
    assert!(completed.unwrap().is_empty());
    drop(done);
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_without_an_id_fails_every_request_in_flight() {
    let (client, mut peer) = connect();
    let (done, finished) = oneshot::channel::<()>();
    // A nested `id` is not the message's: it must not single out one request.
    let line = oversized(r#""nested":{"id":0,"also":[{"id":1}]},"#, "");
    let sent = line.clone();
    let server = tokio::spawn(async move {
        peer.handshake().await;
        peer.next_request().await;
        peer.next_request().await;
        peer.send(&sent).await;
        let _ = finished.await;
    });
    let client = client.await;
    let peer = client.peer();
    let (list, call) = tokio::time::timeout(
        CALL_TIMEOUT,
        futures::future::join(peer.list_tools(None), peer.send_request(call("echo"))),
    )
    .await
    .expect("no wait for the timeout");
    assert_eq!(error_message(list), size_error(&line));
    assert_eq!(error_message(call), size_error(&line));
    drop(done);
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_answer_to_an_unknown_id_is_ignored() {
    let (client, mut peer) = connect();
    let server = tokio::spawn(async move {
        // Before `initialize` has even been read.
        peer.send(r#"{"jsonrpc":"2.0","id":987654,"result":{}}"#)
            .await;
        peer.send(r#"{"jsonrpc":"2.0","id":987655,"error":{"code":1,"message":"no"}}"#)
            .await;
        peer.handshake().await;
        let request = peer.next_request().await;
        peer.send(r#"{"jsonrpc":"2.0","id":987654,"result":{}}"#)
            .await;
        peer.answer(&request, json!({"completion": {"values": ["t"]}}))
            .await;
    });
    let client = client.await;
    let completed = completion(client.peer()).await.unwrap();
    assert_eq!(completed, ["t"]);
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_answer_fails_its_request_at_once() {
    let (client, mut peer) = connect();
    let (done, finished) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        peer.handshake().await;
        let request = peer.next_request().await;
        // Neither `result` nor `error`.
        peer.send(&json!({"jsonrpc": "2.0", "id": request["id"]}).to_string())
            .await;
        let _ = finished.await;
    });
    let client = client.await;
    let list = tokio::time::timeout(CALL_TIMEOUT, client.peer().list_tools(None))
        .await
        .expect("no wait for the timeout");
    let message = error_message(list);
    assert!(
        message.starts_with(
            "server `big` sent an answer mcp-runtime cannot read (it has neither `result` nor `error`): `{\"jsonrpc\":\"2.0\",\"id\":"
        ),
        "{message}"
    );
    drop(done);
    server.await.unwrap();
}

/// Sends `lines` (the answer to the first request after the handshake, made by
/// `answer` from its id) and returns the error the request got, which must come
/// without waiting for its timeout.
async fn refused_answer(answer: fn(&Value) -> Vec<Vec<u8>>) -> String {
    let (client, mut peer) = connect();
    let (done, finished) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        peer.handshake().await;
        let request = peer.next_request().await;
        for line in answer(&request["id"]) {
            peer.write.write_all(&line).await.unwrap();
        }
        peer.write.flush().await.unwrap();
        // The connection stays usable.
        let request = peer.next_request().await;
        peer.answer(&request, json!({"completion": {"values": []}}))
            .await;
        let _ = finished.await;
    });
    let client = client.await;
    let list = tokio::time::timeout(CALL_TIMEOUT, client.peer().list_tools(None))
        .await
        .expect("no wait for the timeout");
    let message = error_message(list);
    // A request whose answer rmcp reads itself (a listing's goes raw).
    let completed = completion(client.peer()).await;
    assert!(completed.unwrap().is_empty());
    drop(done);
    server.await.unwrap();
    message
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_is_not_utf8_fails_its_request_at_once_showing_it() {
    let message = refused_answer(|id| {
        let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[],"note":"caf"#)
            .into_bytes();
        line.extend_from_slice(b"\xFF\"}}\n");
        vec![line]
    })
    .await;
    assert_eq!(
        message,
        r#"server `big` sent an answer that is not valid UTF-8 (from byte 56), which JSON-RPC requires: `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"note":"caf\xFF"}}` (the server does not follow the MCP specification; report it to its author)"#
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_over_several_lines_fails_its_request_at_once_showing_it() {
    let message = refused_answer(|id| {
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
        vec![
            // Noise before it stays noise.
            b"server ready\n".to_vec(),
            format!("{answer:#}\n").into_bytes(),
        ]
    })
    .await;
    assert_eq!(
        message,
        "server `big` sent an answer over several lines (7), where the stdio transport takes one message per line: `{\\n  \"jsonrpc\": \"2.0\",\\n  \"id\": 1,\\n  \"result\": {\\n    \"tools\": []\\n  }\\n}` (the server must not pretty-print its messages; report it to its author)"
    );
}

#[tokio::test(start_paused = true)]
async fn noise_on_stdout_is_skipped_with_one_warning_that_does_not_quote_it() {
    let events = crate::test_events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());
    let (client, mut peer) = connect();
    let server = tokio::spawn(async move {
        peer.send("Server ready, token=abc123").await;
        peer.handshake().await;
        let request = peer.next_request().await;
        peer.send("[INFO] completing").await;
        peer.answer(&request, json!({"completion": {"values": []}}))
            .await;
    });
    let client = client.await;
    let completed = completion(client.peer()).await;
    assert!(completed.unwrap().is_empty());
    server.await.unwrap();
    let warnings: Vec<String> = events
        .with_targets()
        .into_iter()
        .filter(|line| line.contains(" WARN"))
        .collect();
    assert_eq!(
        warnings,
        [
            "mcp_runtime::transport::framing WARNskipped a line the server wrote on stdout that is not a JSON-RPC message (stdout is for its messages alone; later such lines are skipped silently) server=\"big\""
        ]
    );
    assert!(!events.lines().concat().contains("abc123"));
}

#[tokio::test(start_paused = true)]
async fn a_batch_over_several_lines_fails_the_answers_in_it_at_once() {
    let message = refused_answer(|id| {
        let batch = json!([{"jsonrpc": "2.0", "id": id, "result": {"tools": []}}]);
        vec![format!("{batch:#}\n").into_bytes()]
    })
    .await;
    assert!(
        message.starts_with("server `big` sent an answer over several lines (9)"),
        "{message}"
    );
}

#[tokio::test(start_paused = true)]
async fn lines_that_begin_a_value_and_never_end_it_are_noise_before_a_message() {
    let (client, mut peer) = connect();
    let server = tokio::spawn(async move {
        peer.handshake().await;
        let request = peer.next_request().await;
        peer.send("{").await;
        peer.send("  \"level\": \"info\",").await;
        peer.answer(&request, json!({"completion": {"values": []}}))
            .await;
    });
    let client = client.await;
    let completed = completion(client.peer()).await;
    assert!(completed.unwrap().is_empty());
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_batch_is_taken_message_by_message() {
    let (client, mut peer) = connect();
    let server = tokio::spawn(async move {
        let initialize = peer.next().await;
        let result = json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {"prompts": {}, "resources": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        });
        let answer = json!({"jsonrpc": "2.0", "id": initialize["id"], "result": result});
        peer.send(&format!("[{answer}]")).await;
        assert_eq!(peer.next().await["method"], "notifications/initialized");
        let [first, second] = [peer.next_request().await, peer.next_request().await];
        // Each completion offers its prompt's name; both answers in one batch, with
        // a notification between them.
        let answer = |request: &Value| json!({"jsonrpc": "2.0", "id": request["id"], "result": {"completion": {"values": [request["params"]["ref"]["name"]]}}});
        let batch = json!([
            answer(&first),
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
            answer(&second),
        ]);
        peer.send(&batch.to_string()).await;
    });
    let client = tokio::time::timeout(CALL_TIMEOUT, client)
        .await
        .expect("the handshake does not wait");
    let peer = client.peer();
    let (p, q) = tokio::time::timeout(
        CALL_TIMEOUT,
        futures::future::join(
            peer.complete_prompt_simple("p", "a", ""),
            peer.complete_prompt_simple("q", "a", ""),
        ),
    )
    .await
    .expect("no wait for the timeout");
    assert_eq!(p.unwrap(), ["p"]);
    assert_eq!(q.unwrap(), ["q"]);
    server.await.unwrap();
}

fn scan(pieces: &[&str]) -> (Option<RequestId>, bool) {
    let mut scanner = IdScanner::default();
    for piece in pieces {
        scanner.feed(piece.as_bytes());
    }
    scanner.finish()
}

#[test]
fn the_scanner_finds_only_the_top_level_id_and_method() {
    let number = Some(RequestId::Number(7));
    assert_eq!(scan(&[r#"{"id":7,"result":{}}"#]), (number.clone(), false));
    assert_eq!(
        scan(&[r#"{"result":{"id":1},"#, r#" "id" : 7 }"#]),
        (number.clone(), false)
    );
    // Split anywhere, even inside the key and the value.
    assert_eq!(
        scan(&[r#"{"i"#, r#"d":"#, "7", "}"]),
        (number.clone(), false)
    );
    assert_eq!(
        scan(&[r#"{"id":"a\"b","method":"x"}"#]),
        (Some(RequestId::String("a\"b".into())), true)
    );
    // An escaped key is still `id`; text that looks like a key is not one.
    assert_eq!(scan(&[r#"{"\u0069d":7}"#]), (number, false));
    assert_eq!(scan(&[r#"{"text":"\",\"id\":5","x":1}"#]), (None, false));
    assert_eq!(scan(&[r#"[{"id":5}]"#]), (None, false));
    assert_eq!(scan(&[r#"{"id":{"n":5}}"#]), (None, false));
    assert_eq!(
        scan(&[r#"{"id":5"#]),
        (None, false),
        "cut off before the value ends"
    );
    let long = format!(r#"{{"id":"{}"}}"#, "9".repeat(MAX_ID_BYTES));
    assert_eq!(scan(&[&long]), (None, false), "too long to be kept");
}

#[tokio::test]
async fn lines_within_the_limit_pass_and_longer_ones_are_measured() {
    let long = format!("{{\"id\":3,\"pad\":\"{}\"}}", "y".repeat(LIMIT));
    let text = format!("a\r\n{long}\n{}\nlast without newline", "z".repeat(LIMIT));
    // A pipe of 7 bytes: every line arrives in many reads.
    let (mut server, stdout) = tokio::io::duplex(7);
    tokio::spawn(async move { server.write_all(text.as_bytes()).await.unwrap() });
    let mut lines = LineReader::new(Box::new(stdout), LIMIT);
    let mut got = Vec::new();
    while let Some(frame) = lines.next().await {
        got.push(match frame {
            Frame::Line(line) => String::from_utf8(line).unwrap(),
            Frame::Oversized(oversized) => format!("{oversized:?}"),
        });
    }
    assert!(lines.next().await.is_none(), "ended for good");
    assert_eq!(
        got,
        [
            "a\r".to_owned(),
            format!(
                "{:?}",
                Oversized {
                    size: long.len() as u64,
                    id: Some(RequestId::Number(3)),
                    method: false
                }
            ),
            "z".repeat(LIMIT),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_read_given_up_mid_line_loses_nothing() {
    let (mut server, stdout) = tokio::io::duplex(64);
    let mut lines = LineReader::new(Box::new(stdout), LIMIT);
    server.write_all(b"{\"half\":").await.unwrap();
    let given_up = tokio::time::timeout(Duration::from_millis(10), lines.next()).await;
    assert!(given_up.is_err(), "no whole line yet");
    server.write_all(b"1}\n").await.unwrap();
    match lines.next().await {
        Some(Frame::Line(line)) => assert_eq!(line, b"{\"half\":1}"),
        _ => panic!("expected the whole line"),
    }
}

/// A server that answers `initialize`, then, once its stdin closes, writes 2,000
/// lines (more than a pipe holds) and records whether every write succeeded.
const WRITES_ON_THE_WAY_OUT: &str = r#"
    IFS= read -r line
    id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\),"method":"initialize".*/\1/p')
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}\n' "$id"
    echo started > "$MARKER"
    cat > /dev/null
    i=0
    while [ $i -lt 2000 ]; do
        echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"closing down"}}' || exit 9
        i=$((i + 1))
    done
    echo clean > "$MARKER"
"#;

#[tokio::test]
async fn shutdown_keeps_reading_until_the_server_exits() {
    use crate::{binding::Binding, connection::Connection, transport::Endpoint};

    let marker = std::env::temp_dir().join(format!(
        "mcp-runtime-drain-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_file(&marker);
    let launch = super::super::stdio::Launch {
        argv: vec!["sh".into(), "-c".into(), WRITES_ON_THE_WAY_OUT.into()],
        env: [
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
            ("MARKER".into(), marker.clone().into()),
        ]
        .into(),
        cwd: None,
        max_message_bytes: LIMIT,
    };
    let connection =
        Connection::connect("quiet", &Endpoint::Stdio(launch), &Binding::Local, |_| {})
            .await
            .unwrap();
    connection.shutdown().await;
    let outcome = std::fs::read_to_string(&marker).unwrap();
    let _ = std::fs::remove_file(&marker);
    assert_eq!(
        outcome, "clean\n",
        "the server's writes on its way out failed"
    );
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_to_an_unknown_id_is_ignored_too() {
    // Before `initialize` is answered: an error for the unknown id would fail the
    // handshake, as the unsolicited answer itself would have.
    let (client, mut peer) = connect();
    let server = tokio::spawn(async move {
        peer.send(&oversized(r#""id":987654,"#, "")).await;
        peer.handshake().await;
    });
    let client = tokio::time::timeout(CALL_TIMEOUT, client)
        .await
        .expect("the handshake does not wait");
    drop(client);
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_answer_the_transport_fails_is_no_longer_expected_raw() {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let mut transport = StdioTransport::new("big", read, write, LIMIT);
    let (_, mut server) = tokio::io::split(theirs);
    let request = |id| ClientJsonRpcMessage::request(call("t"), RequestId::Number(id));
    for id in 1..=3 {
        transport.send(request(id)).await.unwrap();
    }
    // Over the limit, with its id as a string of its digits; not UTF-8; over several
    // lines: each fails its call (a tool result, whose answer goes raw).
    let mut lines = oversized(r#""id":"1","#, "").into_bytes();
    lines
        .extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"note\":\"caf\xFF\"}}\n");
    lines.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":3,\n\"result\":{}}\n");
    server.write_all(&lines).await.unwrap();
    let mut failed = Vec::new();
    for _ in 1..=3 {
        match transport.receive().await {
            Some(JsonRpcMessage::Error(error)) => failed.push(error.id.unwrap()),
            other => panic!("not a refusal: {other:?}"),
        }
    }
    let expected = [
        RequestId::String("1".into()),
        RequestId::Number(2),
        RequestId::Number(3),
    ];
    assert_eq!(failed, expected);
    assert!(
        transport.raw.is_empty(),
        "a refused answer was expected raw"
    );

    // An oversized line without an id fails every call in flight.
    transport.send(request(4)).await.unwrap();
    transport.send(request(5)).await.unwrap();
    server
        .write_all(format!("{}\n", oversized("", "")).as_bytes())
        .await
        .unwrap();
    for _ in 4..=5 {
        assert!(matches!(
            transport.receive().await,
            Some(JsonRpcMessage::Error(_))
        ));
    }
    assert!(transport.raw.is_empty(), "a failed call was expected raw");
}
