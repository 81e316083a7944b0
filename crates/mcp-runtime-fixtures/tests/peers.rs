//! Servers written by others, installed pinned by `scripts/install-peers`.

use std::path::PathBuf;

use mcp_runtime::{ServerConfig, ServerState};
use serde_json::json;

use crate::support::*;

/// The entry point of `@modelcontextprotocol/server-everything`; fails loudly when
/// the peers are not installed.
pub fn server_everything() -> PathBuf {
    let path =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers (scripts/test does)",
        path.display()
    );
    path
}

/// server-everything serving `mode` (`streamableHttp` or `sse`) on a free port.
pub struct EverythingOverHttp {
    /// Its endpoint: `/mcp`, or `/sse`.
    pub url: String,
    /// Killed when dropped.
    pub child: tokio::process::Child,
}

/// Starts server-everything in `mode` and waits until it says it is listening.
pub async fn everything_over(mode: &str) -> EverythingOverHttp {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    everything_over_at(mode, port).await
}

/// Starts server-everything in `mode` on `port` and waits until it says it is
/// listening.
pub async fn everything_over_at(mode: &str, port: u16) -> EverythingOverHttp {
    use tokio::io::AsyncBufReadExt;

    let mut child = tokio::process::Command::new("node")
        .arg(server_everything())
        .arg(mode)
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = format!("port {port}");
    let wait = async {
        while let Some(line) = lines.next_line().await.expect("reading its stderr") {
            if line.ends_with(&listening) {
                return;
            }
        }
        panic!("server-everything ended its output without saying it is listening");
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), wait)
        .await
        .expect("server-everything says it is listening within a minute");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let path = if mode == "sse" { "sse" } else { "mcp" };
    EverythingOverHttp {
        url: format!("http://127.0.0.1:{port}/{path}"),
        child,
    }
}

#[tokio::test]
async fn server_everything_over_stdio_lists_thirteen_tools_and_adds() {
    let everything = ServerConfig::stdio(
        "everything",
        "node",
        vec![server_everything().to_str().unwrap().into(), "stdio".into()],
    );
    let (runtime, _) = start(config([everything])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(
        status.tools,
        13,
        "without optional client capabilities: {:?}",
        runtime
            .catalog()
            .tools()
            .map(|t| &t.qualified_name)
            .collect::<Vec<_>>()
    );
    let result = runtime
        .call_tool(
            "mcp__everything__get_sum",
            json!({"a": 2, "b": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(!result.is_error());
    let text = text_of(&result);
    assert!(text.contains('5'), "{text}");
    runtime.shutdown().await;
}

/// The interpreter of the venv holding the official Python SDK at `version`, and a
/// server script of `peers/python`; fails loudly when the peers are not installed.
fn python_peer(version: &str, script: &str) -> (PathBuf, PathBuf) {
    let python = peers_dir().join(format!("venvs/mcp-{version}/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-peers (scripts/test does)",
        python.display()
    );
    (python, peers_dir().join("python").join(script))
}

#[tokio::test]
async fn a_python_sdk_server_over_stdio_lists_and_calls_its_tool() {
    let (python, script) = python_peer("2.3.0", "adder.py");
    let adder = ServerConfig::stdio(
        "python-adder",
        python.to_str().unwrap(),
        vec![script.to_str().unwrap().into()],
    );
    let (runtime, _) = start(config([adder])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    let catalog = runtime.catalog();
    let names: Vec<&str> = catalog.tools().map(|tool| &*tool.qualified_name).collect();
    assert_eq!(names, ["mcp__python_adder__add"]);
    assert_adds(&runtime, "mcp__python_adder__add").await;
    runtime.shutdown().await;
}
