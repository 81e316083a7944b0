//! Rows of a running server: stderr, calls and their answers, cancellation,
//! shutdown.

use super::*;

// Running: stderr, calls, shutdown.

#[tokio::test]
async fn a_stderr_flood_does_not_stall_the_server() {
    starts_anyway(faulty(&["--stderr-flood-bytes", &(16 << 20).to_string()])).await;
}

#[tokio::test]
async fn an_oversized_call_result_fails_naming_size_and_limit() {
    let row = start_row(faulty_with_message_limit(&[
        "--call-result-bytes",
        &OVERSIZED_BYTES.to_string(),
    ]))
    .await;
    let message = row.call_failure("pid", None).await;
    assert!(
        message.contains(&format!(
            "over the client's limit of {LIMIT_BYTES} bytes (raise `max_message_bytes`)"
        )),
        "{message}"
    );
    assert!(!message.contains("server error"), "{message}");
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_call_answer_that_is_not_utf8_fails_at_once_showing_it() {
    let row = start_row(faulty_patient(&["--mangle-answer", "tools/call=not-utf8"])).await;
    call_refused_as_not_utf8(row).await;
}

/// `row`'s faulty server answers a call of `pid` with a byte that is not UTF-8: the
/// call fails within [`REFUSED_BOUND`] showing what came, and the connection stays
/// up (the next answer may be fine).
async fn call_refused_as_not_utf8(row: Row) {
    let began = Instant::now();
    let message = row.call_failure("pid", None).await;
    assert!(began.elapsed() <= REFUSED_BOUND, "{:?}", began.elapsed());
    for part in ["not valid UTF-8", r#"{"note":"caf\xFF","#] {
        assert!(message.contains(part), "expected `{part}` in: {message}");
    }
    assert!(!message.contains("server error"), "{message}");
    assert_eq!(status(&row.runtime, FAULTY).state, ServerState::Ready);
    row.finish(&[]).await;
}

/// The HTTP fixture in `era` answering `tools/call` with a byte that is not UTF-8
/// outside the result, as an event stream or a JSON body (`extra`): the call fails
/// within [`REFUSED_BOUND`] (its timeout is [`LONG_STARTUP_TIMEOUT`]) showing what
/// came, and the connection stays up. No process is started for it.
async fn an_http_call_answer_not_utf8_is_refused_at_once(era: &str, extra: &[&str]) {
    let args = [
        &["--era", era, "--mangle-answer", "tools/call=not-utf8"],
        extra,
    ]
    .concat();
    let server = http_fixture(&args).await;
    let faulty = ServerConfig::http(FAULTY, &server.url)
        .with_startup_timeout(LONG_STARTUP_TIMEOUT)
        .with_tool_timeout(LONG_STARTUP_TIMEOUT);
    let row = start_row(config([faulty, fixture(HEALTHY, &[])])).await;
    assert_eq!(faulty_spawns(&row.events), 0, "{:?}", row.events);
    call_refused_as_not_utf8(row).await;
}

#[tokio::test]
async fn an_http_call_answer_that_is_not_utf8_fails_at_once_showing_it() {
    for era in ["handshake", "stateless"] {
        an_http_call_answer_not_utf8_is_refused_at_once(era, &["--http-json-answers"]).await;
    }
}

#[tokio::test]
async fn an_http_call_answer_event_that_is_not_utf8_fails_at_once_showing_it() {
    for era in ["handshake", "stateless"] {
        an_http_call_answer_not_utf8_is_refused_at_once(era, &[]).await;
    }
}

#[tokio::test]
async fn a_call_answer_in_a_batch_is_taken() {
    let row = start_row(faulty_patient(&["--mangle-answer", "tools/call=batch"])).await;
    row.faulty_is_callable().await;
    row.finish(&[]).await;
}

/// The `notifications/cancelled` messages in the fixture's log, and the id of the
/// first `tools/call` it logged.
fn cancellations(log: &Path) -> (Vec<serde_json::Value>, serde_json::Value) {
    let log = read_log(log);
    let first_call = log
        .iter()
        .find(|entry| entry["method"] == "tools/call")
        .expect("the call was logged")["id"]
        .clone();
    let cancelled = log
        .iter()
        .filter(|entry| entry["method"] == "notifications/cancelled")
        .map(|entry| entry["params"]["requestId"].clone())
        .collect();
    (cancelled, first_call)
}

/// A row whose faulty server ignores cancellations and logs what it reads (in the
/// directory and file returned), after a call of `pid` answered 2.5 s after it was
/// sent timed out at 2 s.
async fn timed_out_ignoring_cancellation() -> (tempfile::TempDir, std::path::PathBuf, Row) {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let row = start_row(faulty(&["--ignore-cancel", "--log", path_str(&log)])).await;
    let message = row
        .call_failure("pid", arguments(json!({ "delay_ms": 2500 })))
        .await;
    assert!(message.contains("did not answer within 2s"), "{message}");
    (dir, log, row)
}

#[tokio::test]
async fn cancellation_reaches_a_server_shut_down_right_after_a_timeout() {
    let (_dir, log, row) = timed_out_ignoring_cancellation().await;
    row.finish(&[]).await;

    // The fixture logs every line it reads until stdin closes, and has exited.
    let (cancelled, first_call) = cancellations(&log);
    assert_eq!(cancelled, [first_call]);
}

#[tokio::test]
async fn a_server_that_ignores_cancellation_gets_it_and_stays_usable() {
    let (_dir, log, row) = timed_out_ignoring_cancellation().await;
    // The server answers in order: this call is answered after the late answer
    // to the cancelled one, which must not disturb the connection.
    call_ok(
        &row.runtime,
        &format!("mcp__{FAULTY}__pid"),
        arguments(json!({ "delay_ms": 0 })),
    )
    .await;
    row.finish(&[]).await;

    let (cancelled, first_call) = cancellations(&log);
    assert_eq!(cancelled, [first_call]);
}

#[tokio::test]
async fn exit_during_a_call_reports_status_and_stderr() {
    let row = start_row(faulty(&["--exit-during-call", "5"])).await;
    let message = row.call_failure("pid", None).await;
    for part in [
        "exit status: 5",
        "fixture: fatal: crashed during tools/call",
    ] {
        assert!(message.contains(part), "expected `{part}` in: {message}");
    }
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_server_that_ignores_sigterm_and_has_a_grandchild_is_cleaned_up() {
    let dir = temp_dir();
    let pid_file = dir.path().join("grandchild.pid");
    let row = start_row(faulty(&[
        "--spawn-grandchild",
        path_str(&pid_file),
        "--ignore-sigterm",
        "--ignore-stdin-eof",
        "--call-delay-ms",
        "600000",
    ]))
    .await;
    let grandchild = read_pid(&pid_file);
    let message = row.call_failure("pid", None).await;
    assert!(message.contains("did not answer within 2s"), "{message}");
    row.finish(&[grandchild]).await;
}
