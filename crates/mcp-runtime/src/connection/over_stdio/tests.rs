//! Tests of starting a local server: how a failed `server/discover` is read, the
//! answers to `initialize` the runtime cannot use, and an exit during the start, from
//! hand-written servers in `sh`.

use std::time::Duration;

use rmcp::ErrorData;

use super::*;

fn rpc(code: i32) -> ClientInitializeError {
    ClientInitializeError::JsonRpcError(ErrorData::new(ErrorCode(code), "no", None))
}

fn no_common(server: &[&str]) -> ClientInitializeError {
    ClientInitializeError::NoCompatibleProtocolVersion {
        client_supported: vec![ProtocolVersion::V_2026_07_28],
        server_supported: server
            .iter()
            .map(|version| serde_json::from_value(serde_json::json!(version)).unwrap())
            .collect(),
    }
}

#[test]
fn a_success_that_is_not_a_discover_result_marks_a_handshake_server() {
    let answer: rmcp::model::ServerResult = serde_json::from_str("{}").unwrap();
    let error = ClientInitializeError::ExpectedInitResult(Some(answer));
    assert!(matches!(classify(error), Classified::Handshake(_)));
    let closed = ClientInitializeError::ExpectedInitResult(None);
    assert!(matches!(classify(closed), Classified::Failed(_)));
}

#[test]
fn any_error_but_a_modern_rejection_marks_a_handshake_server() {
    for code in [-32601, -32602, -32600, -32603, 1, -32000] {
        assert!(
            matches!(classify(rpc(code)), Classified::Handshake(_)),
            "{code}"
        );
    }
    for code in [-32021, -32020] {
        assert!(
            matches!(classify(rpc(code)), Classified::Failed(_)),
            "{code}"
        );
    }
}

#[test]
fn no_shared_version_is_a_handshake_server_only_when_it_lists_a_handshake_revision() {
    assert!(matches!(
        classify(no_common(&["2025-06-18"])),
        Classified::Handshake(_)
    ));
    match classify(no_common(&["2027-01-01", "2026-01-01"])) {
        Classified::NoSharedVersion { supported } => {
            assert_eq!(supported, ["2027-01-01", "2026-01-01"]);
        }
        _ => panic!("expected no shared version"),
    }
    assert!(matches!(
        classify(no_common(&[])),
        Classified::NoSharedVersion { .. }
    ));
}

#[test]
fn a_closed_connection_is_a_startup_failure() {
    let closed = ClientInitializeError::ConnectionClosed("eof".into());
    assert!(matches!(classify(closed), Classified::Failed(_)));
}

/// A stdio server in `sh` that answers `initialize` as `$1` says: `not-utf8` (a byte
/// that is not UTF-8 in its server name), `several-lines` (pretty-printed), `batch`
/// (in a batch of one) or `without-protocol-version`.
const SPOILED_ANSWER_SERVER: &str = r#"
result='{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"0"}}'
while IFS= read -r line; do
  case "$line" in
    *'"method":"initialize"'*)
      id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
      case "$1" in
        not-utf8) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"caf\377","version":"0"}}}\n' "$id" ;;
        several-lines) printf '{\n  "jsonrpc": "2.0",\n  "id": %s,\n  "result": %s\n}\n' "$id" "$result" ;;
        batch) printf '[{"jsonrpc":"2.0","id":%s,"result":%s}]\n' "$id" "$result" ;;
        without-protocol-version) printf '{"jsonrpc":"2.0","id":%s,"result":{"capabilities":{},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" ;;
      esac ;;
  esac
done
"#;

/// Bounds a start that must not wait: the hand-written servers never exit on their
/// own while their stdin is open, so a start that waits for more waits forever.
const AT_ONCE: Duration = Duration::from_secs(20);

async fn start_answering(how: &str) -> Result<crate::connection::Connection, StartupError> {
    let endpoint = crate::connection::sh_server(SPOILED_ANSWER_SERVER, &[how]);
    let start = crate::connection::Connection::connect(
        "spoiled",
        &endpoint,
        &crate::binding::Binding::Local,
        |_| {},
    );
    tokio::time::timeout(AT_ONCE, start)
        .await
        .unwrap_or_else(|_| panic!("{how}: the start waited instead of failing at once"))
}

async fn refused(how: &str) -> String {
    match start_answering(how).await {
        Ok(_) => panic!("{how}: the answer was taken"),
        Err(error) => crate::error::chain(&error),
    }
}

#[tokio::test]
async fn an_initialize_answer_that_is_not_utf8_is_refused_at_once_showing_it() {
    assert_eq!(
        refused("not-utf8").await,
        r#"handshake failed: server `spoiled` sent an answer that is not valid UTF-8 (from byte 108), which JSON-RPC requires: `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"caf\xFF","version"…` (the server does not follow the MCP specification; report it to its author)"#
    );
}

#[tokio::test]
async fn an_initialize_answer_over_several_lines_is_refused_at_once_showing_it() {
    let message = refused("several-lines").await;
    assert!(
        message.starts_with(
            r#"handshake failed: server `spoiled` sent an answer over several lines (5), where the stdio transport takes one message per line: `{\n  "jsonrpc": "2.0",\n  "id": 0,\n  "result": {"protocolVersion""#
        ),
        "{message}"
    );
}

#[tokio::test]
async fn an_initialize_answer_without_protocol_version_is_refused_at_once_naming_it() {
    let message = refused("without-protocol-version").await;
    assert!(
        message.starts_with(
            "handshake failed: server `spoiled` sent an answer mcp-runtime cannot read (not an `initialize` result: missing field `protocolVersion`): `{"
        ),
        "{message}"
    );
    assert!(!message.contains("exited"), "{message}");
}

#[tokio::test]
async fn an_initialize_answer_in_a_batch_is_taken() {
    let connection = start_answering("batch").await.expect("the batch is taken");
    connection.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_by_a_signal_during_startup_reports_the_signal() {
    let killed = crate::connection::sh_server("echo doomed >&2; kill -9 $$", &[]);
    let error = crate::connection::Connection::connect(
        "killed",
        &killed,
        &crate::binding::Binding::Local,
        |_| {},
    )
    .await
    .err()
    .expect("the server cannot start");
    let StartupError::Exited {
        status,
        stderr_tail,
    } = &error
    else {
        panic!("not an exit: {error:?}");
    };
    assert_eq!(*status, crate::transport::error::ProcessExit::Signal(9));
    assert_eq!(stderr_tail, &["doomed"]);
    assert_eq!(
        error.to_string(),
        "server process exited during startup (signal: 9 (SIGKILL)); last stderr: doomed"
    );
}
