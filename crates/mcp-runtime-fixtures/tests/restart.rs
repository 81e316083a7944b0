//! Servers that stop after they were ready: the call in flight explains the crash,
//! the server is reported unavailable, the next call starts it again (a new process,
//! or a new HTTP session), restarts back off and nothing is left behind.
//!
//! The stdio servers here run the fixture through `/bin/sh`, which reads a mode file
//! before each start, so one test can make a server crash during a call, fail to
//! start again, or behave, from one start to the next.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use mcp_runtime::{
    CallError, ListingRegistry, RestartError, Runtime, ServerConfig, ServerState, StartOptions,
    StartupEvent,
    error::{RequestError, chain},
};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::support::*;

const SERVER: &str = "crashy";

/// A stdio server that starts the fixture as the file `mode` says: `crash` (exits
/// with status 5 during its first call), `crash-holding` (the same, but first starts a
/// `sleep` that inherits its stdout and stderr and outlives it, and writes the
/// `sleep`'s pid to `mode` + `.holder`), `broken` (writes a line to stderr and exits
/// with status 7 before reading anything), anything else (behaves).
fn moody(mode: &Path) -> ServerConfig {
    let script = r#"case "$(cat "$0")" in
  crash) exec "$1" --exit-during-call 5 ;;
  crash-holding) sleep 600 & echo $! > "$0.holder"; exec "$1" --exit-during-call 5 ;;
  broken) echo "fixture: cannot open the tool database" >&2; exit 7 ;;
  *) exec "$1" ;;
esac"#;
    ServerConfig::stdio(
        SERVER,
        "/bin/sh",
        vec![
            "-c".into(),
            script.into(),
            path_str(mode).into(),
            fixture_path().into(),
        ],
    )
    // Pinned, as `fixture` is: the tests count restarts and processes.
    .with_protocol(mcp_runtime::config::Protocol::V2025_11_25)
}

fn set_mode(mode: &Path, value: &str) {
    std::fs::write(mode, value).expect("writing the mode file");
}

struct Moody {
    runtime: Runtime,
    events: UnboundedReceiver<StartupEvent>,
    mode: PathBuf,
    _dir: tempfile::TempDir,
    /// The process started with the runtime.
    first_pid: i32,
}

/// A runtime with one [`moody`] server, started in mode `crash`.
/// The pause after a failed restart: long enough that no test reaches its end by
/// accident of a slow machine.
const RESTART_PAUSE: Duration = Duration::from_secs(600);

async fn start_moody() -> Moody {
    start_moody_with("crash", |server| server).await
}

/// A runtime with one [`moody`] server as `configure` changes it, started in `mode`.
async fn start_moody_with(
    mode_at_start: &str,
    configure: impl FnOnce(ServerConfig) -> ServerConfig,
) -> Moody {
    let dir = temp_dir();
    let mode = dir.path().join("mode");
    set_mode(&mode, mode_at_start);
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel();
    let options = StartOptions::new()
        .wait_for_all()
        .with_events(sender)
        .with_first_restart_pause(RESTART_PAUSE)
        .with_listing_registry(ListingRegistry::new());
    let runtime = Runtime::start(config([configure(moody(&mode))]), options)
        .await
        .expect("start succeeds");
    let started = next_events(&mut events);
    let first_pid = spawned_pid(&started, SERVER);
    Moody {
        runtime,
        events,
        mode,
        _dir: dir,
        first_pid,
    }
}

/// Every event sent since the last look.
fn next_events(events: &mut UnboundedReceiver<StartupEvent>) -> Vec<StartupEvent> {
    let mut received = Vec::new();
    while let Ok(event) = events.try_recv() {
        received.push(event);
    }
    received
}

/// The next events include `SERVER` becoming unavailable with exit status 5.
fn assert_reported_exit_5(events: &mut UnboundedReceiver<StartupEvent>) {
    let events = next_events(events);
    assert!(
        events.iter().any(|event| matches!(
            event,
            StartupEvent::Unavailable { server, error }
                if server == SERVER && chain(&**error).contains("exit status: 5")
        )),
        "{events:?}"
    );
}

fn status(runtime: &Runtime) -> mcp_runtime::ServerStatus {
    runtime.servers().remove(0)
}

/// The pid the server reports from its `pid` tool.
async fn call_pid(runtime: &Runtime) -> Result<i32, CallError> {
    let result = runtime
        .call_tool(&format!("mcp__{SERVER}__pid"), None)
        .await?;
    Ok(
        result.structured_content().cloned().expect("structured")["pid"]
            .as_i64()
            .expect("a pid") as i32,
    )
}

/// Makes the server crash during a call, and checks what the call says.
async fn crash(moody: &Moody) {
    let error = call_pid(&moody.runtime).await.expect_err("the call fails");
    let message = chain(&error);
    assert!(
        matches!(
            &error,
            CallError::ServerLost {
                source: RequestError::Exited { status, .. },
                local: true,
                ..
            } if status.code() == Some(5)
        ),
        "not a lost server that exited with 5: {message}"
    );
    for part in [
        "`crashy`",
        "exit status: 5",
        "fixture: fatal: crashed during tools/call",
    ] {
        assert!(message.contains(part), "expected `{part}` in: {message}");
    }
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_reported_then_started_again_by_the_next_call() {
    let mut moody = start_moody().await;
    crash(&moody).await;

    let stopped = status(&moody.runtime);
    assert_eq!(stopped.state, ServerState::Unavailable);
    let reason = chain(&stopped.unavailable.expect("a reason"));
    assert!(reason.contains("exit status: 5"), "{reason}");
    assert!(
        moody
            .runtime
            .catalog()
            .resolve("mcp__crashy__pid")
            .is_some(),
        "its tools stay in the catalog"
    );
    assert_reported_exit_5(&mut moody.events);

    set_mode(&moody.mode, "behave");
    let pid = call_pid(&moody.runtime).await.expect("the next call works");
    assert_ne!(pid, moody.first_pid, "a new process answered");
    // The crashed process's group was ended before the new one started.
    assert_all_gone(moody.first_pid, &[]);

    let events = next_events(&mut moody.events);
    let restarts: Vec<_> = events
        .iter()
        .filter(|event| !matches!(event, StartupEvent::Unavailable { .. }))
        .collect();
    assert!(
        matches!(
            restarts.as_slice(),
            [
                StartupEvent::Restarting { attempt: 1, .. },
                StartupEvent::Spawned { pid: spawned, .. },
                StartupEvent::Restarted { attempt: 1, tools, .. },
            ] if *spawned as i32 == pid && *tools > 0
        ),
        "{events:?}"
    );
    let ready = status(&moody.runtime);
    assert_eq!(ready.state, ServerState::Ready);
    assert_eq!(ready.pid, Some(pid as u32));
    assert_eq!(ready.restarts, 1);
    assert!(ready.unavailable.is_none(), "{ready:?}");

    moody.runtime.shutdown().await;
    assert_all_gone(pid, &[]);
}

#[tokio::test]
async fn a_server_that_exits_mid_call_while_a_child_holds_its_stdout_is_lost_at_once() {
    let timeout = Duration::from_secs(120);
    let mut moody =
        start_moody_with("crash-holding", |server| server.with_tool_timeout(timeout)).await;
    let holder = read_pid(&moody.mode.with_extension("holder"));

    // Lost, not timed out (`crash` checks the error): the call did not wait for its
    // 120 s timeout.
    crash(&moody).await;
    let stopped = status(&moody.runtime);
    assert_eq!(stopped.state, ServerState::Unavailable);
    assert!(
        stopped
            .unavailable
            .as_ref()
            .is_some_and(|error| chain(error).contains("exit status: 5")),
        "{stopped:?}"
    );
    assert_reported_exit_5(&mut moody.events);

    set_mode(&moody.mode, "behave");
    let pid = call_pid(&moody.runtime).await.expect("the next call works");
    assert_ne!(pid, moody.first_pid, "a new process answered");
    assert_eq!(status(&moody.runtime).state, ServerState::Ready);
    // The `sleep` holding the old stdout was ended with the old group.
    assert_all_gone(moody.first_pid, &[holder]);

    moody.runtime.shutdown().await;
    assert_all_gone(pid, &[]);
}

#[tokio::test]
async fn concurrent_calls_after_a_crash_start_one_process() {
    let mut moody = start_moody().await;
    crash(&moody).await;
    set_mode(&moody.mode, "behave");
    next_events(&mut moody.events);

    let calls = (0..8).map(|_| call_pid(&moody.runtime));
    let pids: Vec<i32> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|pid| pid.expect("every call works"))
        .collect();
    assert!(pids.iter().all(|pid| *pid == pids[0]), "{pids:?}");

    let spawned: Vec<_> = next_events(&mut moody.events)
        .into_iter()
        .filter(|event| matches!(event, StartupEvent::Spawned { .. }))
        .collect();
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    assert_eq!(status(&moody.runtime).restarts, 1);

    moody.runtime.shutdown().await;
    assert_all_gone(moody.first_pid, &[]);
    assert_all_gone(pids[0], &[]);
}

#[tokio::test]
async fn a_failed_restart_backs_off_until_an_explicit_restart() {
    let mut moody = start_moody().await;
    crash(&moody).await;
    set_mode(&moody.mode, "broken");
    next_events(&mut moody.events);

    let error = call_pid(&moody.runtime)
        .await
        .expect_err("the restart fails");
    let message = chain(&error);
    assert!(
        matches!(
            &error,
            CallError::Restart(RestartError::Failed { attempt: 1, .. })
        ),
        "{message}"
    );
    for part in [
        "`crashy`",
        "exit status: 7",
        "fixture: cannot open the tool database",
    ] {
        assert!(message.contains(part), "expected `{part}` in: {message}");
    }
    let events = next_events(&mut moody.events);
    let failed_pid = events
        .iter()
        .find_map(|event| match event {
            StartupEvent::Spawned { pid, .. } => Some(*pid as i32),
            _ => None,
        })
        .expect("the attempt spawned a process");
    assert!(
        events.iter().any(|event| matches!(
            event,
            StartupEvent::RestartFailed { attempt: 1, retry_in: Some(pause), .. }
                if *pause == RESTART_PAUSE
        )),
        "{events:?}"
    );

    // The next attempt is not due yet: the call fails without starting anything.
    let error = call_pid(&moody.runtime).await.expect_err("backing off");
    match &error {
        CallError::Restart(RestartError::BackingOff { retry_in, .. }) => {
            assert!(*retry_in <= RESTART_PAUSE);
        }
        other => panic!("expected a backoff, got {}", chain(other)),
    }
    assert!(next_events(&mut moody.events).is_empty());
    let stopped = status(&moody.runtime);
    assert_eq!(stopped.state, ServerState::Unavailable);
    let last = chain(stopped.error.as_ref().expect("the attempt's error"));
    assert!(last.contains("exit status: 7"), "{last}");

    // An explicit restart does not wait.
    set_mode(&moody.mode, "behave");
    moody
        .runtime
        .restart(SERVER)
        .await
        .expect("the restart works");
    let pid = call_pid(&moody.runtime).await.expect("the call works");
    assert_eq!(status(&moody.runtime).state, ServerState::Ready);

    moody.runtime.shutdown().await;
    for group in [moody.first_pid, failed_pid, pid] {
        assert_all_gone(group, &[]);
    }
}

#[tokio::test]
async fn an_http_server_that_forgot_the_session_gets_a_new_one_on_the_next_call() {
    let mut first = http_fixture(&[]).await;
    let url = first.url.clone();
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .expect("http://ADDR/mcp")
        .to_owned();
    // The connection may notice the server gone before the next call (its event
    // stream is refused), which then tries a restart, and fails: no pause after it,
    // so that the call after the server is back is not held up.
    let options = StartOptions::new()
        .wait_for_all()
        .with_first_restart_pause(Duration::ZERO)
        .with_listing_registry(ListingRegistry::new());
    let runtime = Runtime::start(config([ServerConfig::http(SERVER, &url)]), options)
        .await
        .expect("start succeeds");
    let first_pid = call_pid(&runtime).await.expect("the first call works");

    // The server goes away (a call then fails, naming the server) and comes back
    // without the session.
    first.kill().await;
    let error = call_pid(&runtime).await.expect_err("nobody answers");
    let message = chain(&error);
    assert!(message.contains("`crashy`"), "{message}");
    let _second = http_fixture_at(&addr, &[]).await;

    let pid = call_pid(&runtime)
        .await
        .unwrap_or_else(|error| panic!("the next call failed: {}", chain(&error)));
    assert_ne!(pid, first_pid, "the new server answered");
    assert_eq!(status(&runtime).state, ServerState::Ready);
    runtime.shutdown().await;
}

/// Waits (bounded) for the next event that `wanted` accepts.
async fn wait_for_event(
    events: &mut UnboundedReceiver<StartupEvent>,
    wanted: impl Fn(&StartupEvent) -> bool,
) -> StartupEvent {
    let found = async {
        while let Some(event) = events.recv().await {
            if wanted(&event) {
                return event;
            }
        }
        panic!("the event channel closed");
    };
    tokio::time::timeout(Duration::from_secs(20), found)
        .await
        .expect("the event arrives")
}

#[tokio::test]
async fn a_server_killed_between_calls_is_marked_unavailable_without_a_call() {
    let mut moody = start_moody().await;
    set_mode(&moody.mode, "behave");
    // SAFETY: `kill` has no memory effects; the pid is the server's group leader,
    // not reaped yet, so it names nothing else.
    assert_eq!(unsafe { libc::kill(moody.first_pid, libc::SIGKILL) }, 0);

    let event = wait_for_event(&mut moody.events, |event| {
        matches!(event, StartupEvent::Unavailable { .. })
    })
    .await;
    let StartupEvent::Unavailable { server, error } = event else {
        unreachable!()
    };
    assert_eq!(server, SERVER);
    assert!(
        matches!(&*error, RequestError::Exited { status, .. } if status.signal() == Some(9)),
        "{error:?}"
    );
    assert!(chain(&*error).contains("signal: 9 (SIGKILL)"), "{error}");
    let stopped = status(&moody.runtime);
    assert_eq!(stopped.state, ServerState::Unavailable);

    let pid = call_pid(&moody.runtime).await.expect("the next call works");
    assert_ne!(pid, moody.first_pid);
    assert_all_gone(moody.first_pid, &[]);
    moody.runtime.shutdown().await;
    assert_all_gone(pid, &[]);
}

#[tokio::test]
async fn list_changed_is_followed_on_the_new_connection() {
    let mut moody = start_moody().await;
    crash(&moody).await;
    set_mode(&moody.mode, "behave");
    call_pid(&moody.runtime).await.expect("the restart works");
    next_events(&mut moody.events);

    let mut catalog = moody.runtime.subscribe_catalog();
    moody
        .runtime
        .call_tool(
            "mcp__crashy__add_tool",
            serde_json::json!({"name": "extra"}).as_object().cloned(),
        )
        .await
        .expect("add_tool works");
    let listed = tokio::time::timeout(
        Duration::from_secs(20),
        catalog.wait_for(|catalog| catalog.resolve("mcp__crashy__extra").is_some()),
    )
    .await
    .expect("the new tool is listed in time")
    .is_ok();
    assert!(listed);
    moody.runtime.shutdown().await;
}

/// The HTTP fixture in `era`, killed between calls: the runtime notices it from the
/// event stream it keeps open, without a call, saying how; the next call, once a
/// server is back on the port, reaches it.
async fn an_http_server_killed_between_calls(era: &str) {
    let mut server = http_fixture(&["--era", era, "--resources"]).await;
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel();
    let config = config([ServerConfig::http(SERVER, &server.url)]);
    let runtime = Runtime::start(
        config,
        StartOptions::new().wait_for_all().with_events(sender),
    )
    .await
    .expect("start succeeds");
    let first_pid = call_pid(&runtime).await.expect("the first call works");

    server.kill().await;
    let event = wait_for_event(&mut events, |event| {
        matches!(event, StartupEvent::Unavailable { .. })
    })
    .await;
    let StartupEvent::Unavailable {
        server: name,
        error,
    } = event
    else {
        unreachable!()
    };
    assert_eq!(name, SERVER);
    let reason = chain(&*error);
    assert!(
        reason.starts_with("the connection was lost: server `crashy` "),
        "{reason}"
    );
    assert_eq!(status(&runtime).state, ServerState::Unavailable);

    let _back = http_fixture_at(server.addr(), &["--era", era, "--resources"]).await;
    let pid = call_pid(&runtime)
        .await
        .unwrap_or_else(|error| panic!("the next call failed: {}", chain(&error)));
    assert_ne!(pid, first_pid, "the new server answered");
    assert_eq!(status(&runtime).state, ServerState::Ready);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_handshake_http_server_killed_between_calls_is_marked_unavailable_without_a_call() {
    // Its session's own `GET` stream breaks, and resuming it is refused.
    an_http_server_killed_between_calls("handshake").await;
}

#[tokio::test]
async fn a_2026_07_28_http_server_killed_between_calls_is_marked_unavailable_without_a_call() {
    // Its listen stream (it offers resource subscriptions) breaks, and resuming it
    // is refused.
    an_http_server_killed_between_calls("stateless").await;
}
