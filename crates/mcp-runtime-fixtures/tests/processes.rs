//! No server process, nor anything it started, outlives the runtime.

use std::time::Duration;

use mcp_runtime::{
    CancellationToken, ListingRegistry, Runtime, ServerState, StartOptions, StartupEvent,
};

use crate::support::*;

/// A fixture that starts a child of its own (in its process group) and writes the
/// child's pid to a file in `dir`.
fn parent_fixture(
    dir: &std::path::Path,
    extra: &[&str],
) -> (mcp_runtime::ServerConfig, std::path::PathBuf) {
    let pid_file = dir.join("grandchild.pid");
    let mut args = vec!["--spawn-grandchild", path_str(&pid_file)];
    args.extend_from_slice(extra);
    (fixture("parent", &args), pid_file)
}

#[tokio::test]
async fn dropping_the_runtime_ends_every_server_and_its_children() {
    let dir = temp_dir();
    let (server, pid_file) = parent_fixture(dir.path(), &[]);
    let (runtime, events) = start(config([server, fixture("other", &[])])).await;
    assert!(
        runtime
            .servers()
            .iter()
            .all(|s| s.state == ServerState::Ready)
    );
    let parent = spawned_pid(&events, "parent");
    let other = spawned_pid(&events, "other");
    let grandchild = read_pid(&pid_file);
    assert!(
        is_alive(grandchild),
        "the fixture's child runs while the server does"
    );

    drop(runtime);
    assert_all_gone(parent, &[grandchild]);
    assert_all_gone(other, &[]);
}

#[tokio::test]
async fn shutdown_ends_every_server_and_its_children() {
    let dir = temp_dir();
    let (server, pid_file) = parent_fixture(dir.path(), &[]);
    let (runtime, events) = start(config([server])).await;
    let parent = spawned_pid(&events, "parent");
    let grandchild = read_pid(&pid_file);

    runtime.shutdown().await;
    // Shutdown waits for the server itself; its group is gone too.
    assert!(!is_alive(parent));
    assert_all_gone(parent, &[grandchild]);
}

/// A runtime held by many (a gateway's shared servers) is closed through any holder:
/// each server is let go of, not killed, and none starts again.
#[tokio::test]
async fn closing_a_held_runtime_ends_its_servers_gracefully_and_for_good() {
    let dir = temp_dir();
    let ended = dir.path().join("ended");
    let (runtime, events) =
        start(config([fixture("up", &["--ended-note", path_str(&ended)])])).await;
    let pid = spawned_pid(&events, "up");
    let runtime = std::sync::Arc::new(runtime);
    let other_holder = runtime.clone();

    runtime.close().await;
    assert!(!is_alive(pid));
    assert_eq!(
        std::fs::read_to_string(&ended).unwrap(),
        format!("{pid}\n"),
        "the server saw its input end and stopped by itself"
    );
    assert!(other_holder.call_tool("mcp__up__pid", None).await.is_err());
    assert_ne!(
        other_holder.servers()[0].state,
        ServerState::Ready,
        "nothing was started again"
    );
}

/// Two holders closing a runtime at once: the second waits for the shutdown the
/// first began, rather than finding nothing left to wait for.
#[tokio::test]
async fn a_second_close_waits_for_the_first() {
    let dir = temp_dir();
    let noted = dir.path().join("sigterm");
    // A server that outlives its input and ends on its grace period's SIGTERM.
    let args = ["--ignore-stdin-eof", "--sigterm-note", path_str(&noted)];
    let (runtime, events) = start(config([fixture("up", &args)])).await;
    let pid = spawned_pid(&events, "up");
    let mut first = std::pin::pin!(runtime.close());
    assert!(
        futures::poll!(&mut first).is_pending(),
        "the first close has begun, and waits for the server"
    );
    let second = async {
        runtime.close().await;
        is_alive(pid)
    };
    let ((), alive_when_the_second_returned) = tokio::join!(first, second);
    assert!(!alive_when_the_second_returned);
    assert_eq!(std::fs::read_to_string(&noted).unwrap(), format!("{pid}\n"));
}

#[tokio::test]
async fn a_startup_timeout_ends_the_server_and_its_children() {
    let dir = temp_dir();
    // The handshake completes (so the child exists), then tools/list never answers.
    let (server, pid_file) = parent_fixture(dir.path(), &["--list-delay-ms", "600000"]);
    let server = server.with_startup_timeout(Duration::from_secs(3));
    let (runtime, events) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert!(
        status
            .error
            .as_ref()
            .unwrap()
            .to_string()
            .contains("within 3s")
    );

    assert_all_gone(spawned_pid(&events, "parent"), &[read_pid(&pid_file)]);
}

#[tokio::test]
async fn a_cancelled_startup_ends_the_server() {
    let dir = temp_dir();
    let (server, _) = parent_fixture(dir.path(), &["--list-delay-ms", "600000"]);
    let cancel = CancellationToken::new();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    // Waits for every server, so the cancelled one has settled when the start returns.
    let options = StartOptions::new()
        .wait_for_all()
        .with_events(sender)
        .with_listing_registry(ListingRegistry::new())
        .with_cancellation(cancel.clone());
    let start = tokio::spawn(Runtime::start(config([server]), options));
    let pid = loop {
        match receiver.recv().await.expect("events until the summary") {
            StartupEvent::Spawned { pid, .. } => break pid as i32,
            _ => continue,
        }
    };
    cancel.cancel();
    let runtime = start
        .await
        .unwrap()
        .expect("a cancelled optional server is not an error");
    assert_eq!(runtime.servers()[0].state, ServerState::Cancelled);
    let events = drain(receiver);
    assert!(
        events
            .iter()
            .any(|event| matches!(event, StartupEvent::Cancelled { server } if server == "parent")),
        "{events:?}"
    );
    assert_all_gone(pid, &[]);
}

#[tokio::test]
async fn dropping_the_start_future_ends_the_server_and_reports_cancelled() {
    let dir = temp_dir();
    let (server, _) = parent_fixture(dir.path(), &["--list-delay-ms", "600000"]);
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut start = Box::pin(Runtime::start(
        config([server]),
        // Waits for every server: the start cannot return before it is dropped.
        StartOptions::new()
            .wait_for_all()
            .with_events(sender)
            .with_listing_registry(ListingRegistry::new()),
    ));
    let pid = loop {
        tokio::select! {
            _ = &mut start => panic!("the start cannot finish: tools/list never answers"),
            event = receiver.recv() => if let Some(StartupEvent::Spawned { pid, .. }) = event {
                break pid as i32;
            },
        }
    };
    drop(start);
    let events = drain(receiver);
    assert!(
        matches!(&events[..], [StartupEvent::Cancelled { server }] if server == "parent"),
        "{events:?}"
    );
    assert_all_gone(pid, &[]);
}
