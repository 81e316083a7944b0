//! HTTP and legacy SSE servers that die during a call.

use super::*;

// HTTP: a server that dies during a call.

/// The text of `error`, a call's to the faulty server that died during it, which
/// must have failed within [`DEAD_SERVER_BOUND`] (it took `took`), naming the server,
/// blaming no timeout and showing no internals.
fn failed_at_once(error: &mcp_runtime::CallError, took: Duration) -> String {
    let message = chain(error);
    assert!(
        took <= DEAD_SERVER_BOUND,
        "the call took {took:?}: {message}"
    );
    assert!(message.contains(&format!("`{FAULTY}`")), "{message}");
    assert!(!message.contains("tool_timeout_sec"), "{message}");
    assert_plain(&message);
    message
}

/// `tool_timeout_sec` of the rows where the server dies during a call: long, so
/// that a call waiting for it is caught by [`DEAD_SERVER_BOUND`].
const LONG_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call to a server that died during it may take: it fails at once.
const DEAD_SERVER_BOUND: Duration = MARGIN;
/// `startup_timeout_sec` of those rows: their server must start, also on a loaded
/// machine.
const DEAD_SERVER_STARTUP_TIMEOUT: Duration = MARGIN;

/// Calls the HTTP fixture in `era` that exits during the call (`death`, see
/// `--http-die-during-call`): the call fails within [`DEAD_SERVER_BOUND`], naming
/// the server and not blaming the tool timeout, and once a server is back on the
/// same port the next call reaches it. Returns the call's message.
async fn dies_during_a_call(era: &str, death: &str) -> String {
    let mut server = http_fixture(&["--era", era, "--http-die-during-call", death]).await;
    let faulty = ServerConfig::http(FAULTY, &server.url)
        .with_startup_timeout(DEAD_SERVER_STARTUP_TIMEOUT)
        .with_tool_timeout(LONG_TOOL_TIMEOUT);
    let row = start_row(config([faulty, fixture(HEALTHY, &[])])).await;
    let started = status(&row.runtime, FAULTY);
    assert_eq!(started.state, ServerState::Ready, "{:?}", started.error);

    let began = Instant::now();
    let error = row
        .runtime
        .call_tool(&format!("mcp__{FAULTY}__pid"), None)
        .await
        .expect_err("the server died during the call");
    let took = began.elapsed();
    let message = failed_at_once(&error, took);
    assert_eq!(
        server.exited().await.code(),
        Some(mcp_runtime_fixtures::http::DYING_EXIT_STATUS),
        "the server died as it was told to"
    );

    // A server that comes back is reached again on the next call.
    let _back = http_fixture_at(server.addr(), &["--era", era]).await;
    call_ok(&row.runtime, &format!("mcp__{FAULTY}__pid"), None).await;
    assert_eq!(status(&row.runtime, FAULTY).state, ServerState::Ready);
    row.finish(&[]).await;
    message
}

/// The end of a call whose server refused to let its answer's stream be resumed:
/// the server is gone.
const REFUSED_RESUMPTION: &str = "failed (the next call connects to the server again): the connection was lost: server `faulty` refused the connection (check that it is running and that `url` names its host and port)";
/// The end of a call whose answer's stream the server closed, unresumable.
const CLOSED_STREAM: &str = "failed: the server's event stream ended before the answer (the call may have run): server `faulty` closed the connection before its answer was complete (check that it is still running)";
/// The end of a call whose server closed a connection before its answer, one that
/// cannot be resumed (a request's, or a 2026-07-28 listen stream): the server is
/// gone.
const LOST_CLOSED: &str = "failed (the next call connects to the server again): the connection was lost: server `faulty` closed the connection before its answer was complete (check that it is still running)";

#[tokio::test]
async fn a_handshake_http_server_dying_mid_stream_fails_the_call_at_once() {
    let message = dies_during_a_call("handshake", "mid-resumable-stream").await;
    assert!(message.ends_with(REFUSED_RESUMPTION), "{message}");
}

#[tokio::test]
async fn a_2026_07_28_http_server_dying_mid_stream_fails_the_call_at_once() {
    let message = dies_during_a_call("stateless", "mid-resumable-stream").await;
    // Its listen stream, which is not resumed, may notice the end first.
    assert!(
        message.ends_with(REFUSED_RESUMPTION) || message.ends_with(LOST_CLOSED),
        "{message}"
    );
}

#[tokio::test]
async fn an_http_server_dying_mid_stream_without_event_ids_fails_the_call_saying_closed() {
    // The call's stream cannot be resumed. The connection's own stream (a
    // handshake session's `GET` stream, which is resumed and refused; a 2026-07-28
    // listen stream, which is not resumed) notices the end as the call's does:
    // whichever is first says what happened.
    for (era, other) in [
        ("handshake", REFUSED_RESUMPTION),
        ("stateless", LOST_CLOSED),
    ] {
        let message = dies_during_a_call(era, "mid-stream").await;
        assert!(
            message.ends_with(CLOSED_STREAM) || message.ends_with(other),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_http_server_dying_before_it_answers_fails_the_call_saying_closed() {
    let closed = "failed: server `faulty` closed the connection before its answer was complete (check that it is still running)";
    // The call's request fails; the connection ends with it (a request closed
    // before its answer means the server is gone), and the call may see that
    // first, said by whichever request or stream of the connection found it.
    for (era, other) in [
        ("handshake", REFUSED_RESUMPTION),
        ("stateless", LOST_CLOSED),
    ] {
        let message = dies_during_a_call(era, "before-answering").await;
        assert!(
            message.ends_with(closed) || message.ends_with(LOST_CLOSED) || message.ends_with(other),
            "{message}"
        );
    }
}

/// server-everything in `mode` (a real process), killed once its
/// `trigger-long-running-operation` call has reported progress: the call fails
/// within [`DEAD_SERVER_BOUND`], naming the server and saying what the connection
/// did, and once the server is back on its port the next call reaches it. Returns
/// the call's message.
async fn everything_dies_during_a_call(mode: &str) -> String {
    use mcp_runtime::{CallOptions, OnProgress};

    let mut server = crate::peers::everything_over(mode).await;
    let mut faulty = ServerConfig::http(FAULTY, &server.url)
        .with_startup_timeout(DEAD_SERVER_STARTUP_TIMEOUT)
        .with_tool_timeout(LONG_TOOL_TIMEOUT);
    if mode == "sse" {
        let mcp_runtime::config::TransportConfig::StreamableHttp(http) = &mut faulty.transport
        else {
            unreachable!("an HTTP server")
        };
        http.transport = mcp_runtime::config::HttpTransport::Sse;
    }
    let row = start_row(config([faulty, fixture(HEALTHY, &[])])).await;
    let started = status(&row.runtime, FAULTY);
    assert_eq!(started.state, ServerState::Ready, "{:?}", started.error);

    let (progressed, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions::new().with_progress(OnProgress::new(move |_| {
        let _ = progressed.send(());
    }));
    let name = format!("mcp__{FAULTY}__trigger_long_running_operation");
    let (error, took) = {
        let call = row.runtime.call_tool_with(
            &name,
            arguments(json!({ "duration": 30, "steps": 30 })),
            options,
        );
        tokio::pin!(call);
        tokio::select! {
            Some(()) = progress.recv() => {}
            result = &mut call => panic!("the call ended before it reported progress: {result:?}"),
        }
        server
            .child
            .kill()
            .await
            .expect("killing server-everything");
        let began = Instant::now();
        let error = call.await.expect_err("the server died during the call");
        (error, began.elapsed())
    };
    let message = failed_at_once(&error, took);

    let port = url::Url::parse(&server.url).unwrap().port().unwrap();
    let _back = crate::peers::everything_over_at(mode, port).await;
    let sum = call_ok(
        &row.runtime,
        &format!("mcp__{FAULTY}__get_sum"),
        arguments(json!({ "a": 2, "b": 3 })),
    )
    .await;
    assert!(!sum.is_error(), "{sum:?}");
    row.finish(&[]).await;
    message
}

/// Asserts that `message` says the connection was lost, in one of `ways` (`refused`,
/// `reset`, `closed`).
fn assert_lost(message: &str, ways: &[&str]) {
    assert!(
        ways.iter().any(|way| message.contains(&format!(
            "the connection was lost: server `faulty` {way} the connection"
        ))),
        "{message}"
    );
}

#[tokio::test]
async fn server_everything_dying_mid_call_over_streamable_http_fails_the_call_at_once() {
    let message = everything_dies_during_a_call("streamableHttp").await;
    // Its response stream and its session's own stream see the end together;
    // whichever resumes first finds the port refusing, or the dying process
    // resetting, the connection.
    assert_lost(&message, &["refused", "reset"]);
}

#[tokio::test]
async fn a_legacy_sse_server_dying_mid_call_fails_the_call_at_once() {
    let message = everything_dies_during_a_call("sse").await;
    assert_lost(&message, &["closed", "reset"]);
}
