use super::*;

/// A stdio server in `sh` that answers `initialize` with protocol version `$1`.
const VERSION_SERVER: &str = r#"
while IFS= read -r line; do
  case "$line" in
*'"method":"initialize"'*)
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" "$1" ;;
  esac
done
"#;

async fn connect_answering(version: &str) -> Result<Connection, StartupError> {
    Connection::connect(
        "versioned",
        &sh_server(VERSION_SERVER, &[version]),
        &crate::binding::Binding::Local,
        |_| {},
    )
    .await
}

#[tokio::test]
async fn every_handshake_revision_mcp_runtime_speaks_is_accepted() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let connection = connect_answering(version)
            .await
            .unwrap_or_else(|error| panic!("{version}: {error}"));
        connection.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_answering_another_protocol_version_fails_to_start_naming_both() {
    for version in ["2099-01-01", "2026-07-28", "2024-10-07"] {
        let error = match connect_answering(version).await {
            Ok(_) => panic!("{version} was accepted"),
            Err(error) => error,
        };
        assert_eq!(
            error.to_string(),
            format!(
                "the server answered `initialize` with protocol version `{version}`, which mcp-runtime does not speak (it offered `2025-11-25`, and also speaks `2025-06-18`, `2025-03-26` and `2024-11-05`)"
            )
        );
    }
}

/// A stdio server in `sh` that answers `initialize`, and `tools/call` with a
/// result whose `content` is a string.
const MALFORMED_RESULT_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
*'"method":"initialize"'*)
  printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" ;;
*'"method":"tools/call"'*)
  printf '{"jsonrpc":"2.0","id":%s,"result":{"content":"oops"}}\n' "$id" ;;
  esac
done
"#;

#[tokio::test]
async fn a_result_that_is_not_a_tool_result_keeps_why_as_its_source() {
    let endpoint = sh_server(MALFORMED_RESULT_SERVER, &[]);
    let connection = Connection::connect("odd", &endpoint, &crate::binding::Binding::Local, |_| {})
        .await
        .unwrap();
    let error = connection
        .call_plain("t", Duration::from_secs(120))
        .await
        .expect_err("the result cannot be read");
    assert!(
        matches!(
            &error,
            CallError::InvalidResult {
                source: crate::InvalidToolResult::Malformed {
                    field: "content",
                    ..
                },
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        crate::error::chain(&error),
        "tool `t` on server `odd` failed: the tool result's `content` is a string, not an array (the server does not follow the MCP schema; report it to its author)"
    );
    connection.shutdown().await;
}
