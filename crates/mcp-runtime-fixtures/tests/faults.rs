//! The fault matrix: each row runs one misbehaving fixture server beside a healthy
//! one, in one runtime, and checks the four things a user relies on:
//!
//! 1. the failure is explained: the startup failure is reported for the faulty
//!    server by name (its `Failed` event), a call error names it in its text, and
//!    neither contains an internal type name;
//! 2. it is bounded: the start, the call and the shutdown each end within the
//!    configured timeout + the documented shutdown grace + a margin (an upper bound
//!    only: no row asserts a speed);
//! 3. the healthy server is unaffected: ready and callable;
//! 4. nothing is left: after `shutdown`, no process of either server's group (nor a
//!    grandchild) is alive.
//!
//! This module holds the row's steps; the rows are grouped by what goes wrong:
//! [`startup`], [`running`] servers, [`http`] statuses, what a [`newer`] revision
//! adds, [`credentials`] echoed back, redirects and certificates ([`network`]), and
//! a server that dies during a call ([`dead_server`]).

use std::{
    path::Path,
    time::{Duration, Instant},
};

use mcp_runtime::{
    Config, Content, Runtime, ServerConfig, ServerState, StartupEvent, ToolResult, error::chain,
    model::JsonObject,
};
use mcp_runtime_fixtures::{
    future,
    raw::{BAD_SCHEMA_TOOL, DUPLICATE_DESCRIPTION},
    testing::unused_local_url,
};
use serde_json::json;

use crate::support::*;

mod credentials;
mod dead_server;
mod http;
mod network;
mod newer;
mod running;
mod startup;

const FAULTY: &str = "faulty";
const HEALTHY: &str = "healthy";
/// `startup_timeout_sec` of every row.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(2);
/// `tool_timeout_sec` of every row.
const TOOL_TIMEOUT: Duration = Duration::from_secs(2);
/// Shutdown's documented grace: stdin closed, 2 s, `SIGTERM`, 2 s, `SIGKILL`.
const GRACE: Duration = Duration::from_secs(4);
/// Room for a loaded CI machine.
const MARGIN: Duration = Duration::from_secs(10);
/// The size limit of the rows about oversized messages, and the size they send.
const LIMIT_BYTES: usize = 1 << 20;
const OVERSIZED_BYTES: usize = 2 << 20;

/// A runtime started with one faulty and one healthy server.
struct Row {
    runtime: Runtime,
    events: Vec<StartupEvent>,
    /// Pids whose process group must be gone after shutdown.
    groups: Vec<i32>,
}

/// The faulty server with the matrix's timeouts, beside a healthy fixture.
fn beside_healthy(faulty: ServerConfig) -> Config {
    config([
        faulty
            .with_startup_timeout(STARTUP_TIMEOUT)
            .with_tool_timeout(TOOL_TIMEOUT),
        fixture(HEALTHY, &[]),
    ])
}

/// A fixture server named `faulty` with `args`.
fn faulty(args: &[&str]) -> Config {
    beside_healthy(fixture(FAULTY, args))
}

/// `startup_timeout_sec` of the rows about answers the runtime cannot use: long, so
/// that a start that waits for the timeout instead of failing at once is caught by
/// [`REFUSED_BOUND`].
const LONG_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a start may take when an answer the runtime cannot use must end it at
/// once: well under [`LONG_STARTUP_TIMEOUT`], with room for a loaded machine.
const REFUSED_BOUND: Duration = Duration::from_secs(10);

/// A fixture server named `faulty` with `args` and [`LONG_STARTUP_TIMEOUT`].
fn faulty_patient(args: &[&str]) -> Config {
    config([
        fixture(FAULTY, args)
            .with_startup_timeout(LONG_STARTUP_TIMEOUT)
            .with_tool_timeout(LONG_STARTUP_TIMEOUT),
        fixture(HEALTHY, &[]),
    ])
}

/// A Streamable HTTP server named `faulty` at `url`.
fn faulty_http(url: &str) -> Config {
    beside_healthy(ServerConfig::http(FAULTY, url))
}

/// A fixture server named `faulty` with `args`, from a config file that sets its
/// `max_message_bytes` to [`LIMIT_BYTES`].
fn faulty_with_message_limit(args: &[&str]) -> Config {
    let quoted: Vec<String> = args.iter().map(|arg| format!("{arg:?}")).collect();
    let text = format!(
        r#"
[mcp_servers.{FAULTY}]
command = {fixture:?}
args = [{args}]
startup_timeout_sec = {startup}
tool_timeout_sec = {tool}
max_message_bytes = {LIMIT_BYTES}

[mcp_servers.{HEALTHY}]
command = {fixture:?}
"#,
        fixture = fixture_path(),
        args = quoted.join(", "),
        startup = STARTUP_TIMEOUT.as_secs(),
        tool = TOOL_TIMEOUT.as_secs(),
    );
    Config::parse(&text, Path::new("faults.toml"))
        .unwrap_or_else(|error| panic!("the config loads: {}", chain(&error)))
}

/// Starts `config`, checks the start's time bound and that the healthy server is
/// ready and callable.
async fn start_row(config: Config) -> Row {
    let began = Instant::now();
    let (runtime, events) = start(config).await;
    let took = began.elapsed();
    assert!(
        took <= STARTUP_TIMEOUT + GRACE + MARGIN,
        "the start took {took:?}"
    );
    let groups = events
        .iter()
        .filter_map(|event| match event {
            StartupEvent::Spawned { pid, .. } => Some(*pid as i32),
            _ => None,
        })
        .collect();
    let row = Row {
        runtime,
        events,
        groups,
    };
    let healthy = status(&row.runtime, HEALTHY);
    assert_eq!(healthy.state, ServerState::Ready, "{:?}", healthy.error);
    let pid = call_ok(&row.runtime, &format!("mcp__{HEALTHY}__pid"), None).await;
    assert!(pid.structured_content().is_some(), "{pid:?}");
    row
}

fn status(runtime: &Runtime, server: &str) -> mcp_runtime::ServerStatus {
    runtime
        .servers()
        .into_iter()
        .find(|status| status.name == server)
        .unwrap_or_else(|| panic!("no server `{server}`"))
}

/// Asserts that `message` shows no internals: no Rust paths, no rmcp names, no
/// generics, no transport debug dumps.
fn assert_plain(message: &str) {
    for internal in ["rmcp", "::", "Transport [", "Error {", "Some("] {
        assert!(
            !message.contains(internal),
            "the message shows `{internal}`: {message}"
        );
    }
    let generic = message
        .as_bytes()
        .windows(2)
        .any(|pair| (pair[0].is_ascii_alphanumeric() || pair[0] == b'_') && pair[1] == b'<');
    assert!(!generic, "the message shows a generic type: {message}");
}

impl Row {
    /// The faulty server's startup failure, as its `Failed` event reports it.
    fn startup_failure(&self) -> String {
        let status = status(&self.runtime, FAULTY);
        assert_eq!(status.state, ServerState::Failed);
        let reason = self
            .events
            .iter()
            .find_map(|event| match event {
                StartupEvent::Failed { server, error, .. } if server == FAULTY => {
                    Some(chain(&**error))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no Failed event names `{FAULTY}`: {:?}", self.events));
        assert_eq!(reason, chain(status.error.as_ref().unwrap()));
        assert_plain(&reason);
        reason
    }

    /// Asserts that the faulty server is ready and its `pid` tool callable.
    async fn faulty_is_callable(&self) {
        let status = status(&self.runtime, FAULTY);
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        call_ok(&self.runtime, &format!("mcp__{FAULTY}__pid"), None).await;
    }

    /// A call to the faulty server's `tool` that must fail: its message, checked.
    async fn call_failure(&self, tool: &str, arguments: Option<JsonObject>) -> String {
        let began = Instant::now();
        let result = self
            .runtime
            .call_tool(&format!("mcp__{FAULTY}__{tool}"), arguments)
            .await;
        let took = began.elapsed();
        assert!(
            took <= TOOL_TIMEOUT + GRACE + MARGIN,
            "the call took {took:?}"
        );
        let error = result.expect_err("the call fails");
        let message = chain(&error);
        assert!(
            message.contains(&format!("`{FAULTY}`")),
            "the message does not name the server: {message}"
        );
        assert_plain(&message);
        message
    }

    /// Shuts down within its bound, then asserts that no process of any server's
    /// group, nor any of `others`, is left.
    async fn finish(self, others: &[i32]) {
        let began = Instant::now();
        self.runtime.shutdown().await;
        let took = began.elapsed();
        assert!(took <= GRACE + MARGIN, "the shutdown took {took:?}");
        for &group in &self.groups {
            assert_all_gone(group, others);
        }
    }
}

async fn call_ok(runtime: &Runtime, name: &str, arguments: Option<JsonObject>) -> ToolResult {
    let began = Instant::now();
    let result = runtime.call_tool(name, arguments).await;
    assert!(began.elapsed() <= TOOL_TIMEOUT + MARGIN);
    result.unwrap_or_else(|error| panic!("calling `{name}` failed: {}", chain(&error)))
}

fn arguments(value: serde_json::Value) -> Option<JsonObject> {
    match value {
        serde_json::Value::Object(object) => Some(object),
        other => panic!("arguments are an object, not {other}"),
    }
}

/// A startup row: the faulty server fails, and its reason contains every one of
/// `expected`.
async fn fails_to_start(config: Config, expected: &[&str]) {
    let row = start_row(config).await;
    let reason = row.startup_failure();
    for part in expected {
        assert!(reason.contains(part), "expected `{part}` in: {reason}");
    }
    row.finish(&[]).await;
}

/// The processes the runtime started for the faulty server.
fn faulty_spawns(events: &[StartupEvent]) -> usize {
    events
        .iter()
        .filter(|event| matches!(event, StartupEvent::Spawned { server, .. } if server == FAULTY))
        .count()
}

/// A startup row for an answer the runtime cannot use: with [`LONG_STARTUP_TIMEOUT`],
/// the start ends within [`REFUSED_BOUND`], one process was started, and the faulty
/// server's reason contains every one of `expected` and blames no timeout.
async fn refused_at_once(args: &[&str], expected: &[&str]) {
    let began = Instant::now();
    let row = start_row(faulty_patient(args)).await;
    let took = began.elapsed();
    assert!(took <= REFUSED_BOUND, "the start took {took:?}");
    assert_eq!(faulty_spawns(&row.events), 1, "{:?}", row.events);
    let reason = row.startup_failure();
    for part in expected {
        assert!(reason.contains(part), "expected `{part}` in: {reason}");
    }
    for misleading in ["did not finish starting", "exited", "server error"] {
        assert!(!reason.contains(misleading), "`{misleading}` in: {reason}");
    }
    row.finish(&[]).await;
}

/// A row where the faulty server must still become ready and callable.
async fn starts_anyway(config: Config) {
    let row = start_row(config).await;
    row.faulty_is_callable().await;
    row.finish(&[]).await;
}
