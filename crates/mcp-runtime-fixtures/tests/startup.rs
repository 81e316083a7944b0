//! Concurrent startup: timeouts, early exits, required servers, events.

use std::time::Duration;

use mcp_runtime::{ListingRegistry, Runtime, ServerState, StartError, StartOptions, StartupEvent};

use crate::support::*;

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_while_the_others_become_ready() {
    let hung = fixture("hung", &["--hang-initialize"]).with_startup_timeout(Duration::from_secs(1));
    let (runtime, events) = start(config([hung, fixture("one", &[]), fixture("two", &[])])).await;

    let servers = runtime.servers();
    let states: Vec<_> = servers.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [
            ("hung", ServerState::Failed),
            ("one", ServerState::Ready),
            ("two", ServerState::Ready)
        ]
    );
    let error = servers[0].error.as_ref().unwrap().to_string();
    assert_eq!(
        error,
        "did not finish starting within 1s (raise `startup_timeout_sec`)"
    );
    assert!(
        events.iter().any(
            |event| matches!(event, StartupEvent::Failed { server, error, .. }
            if server == "hung" && error.to_string().contains("within 1s"))
        ),
        "{events:?}"
    );
    match events.last() {
        Some(StartupEvent::Summary(summary)) => {
            assert_eq!(summary.ready, ["one", "two"]);
            assert_eq!(summary.failed, ["hung"]);
            assert!(summary.cancelled.is_empty());
        }
        other => panic!("the last event is the summary, got {other:?}"),
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_during_startup_fails_with_its_last_stderr_lines() {
    let (runtime, _) = start(config([fixture("crash", &["--exit-during-startup", "3"])])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = status.error.as_ref().unwrap().to_string();
    assert!(error.contains("exit status: 3"), "{error}");
    assert!(
        error.contains("fixture: fatal: cannot open database /nonexistent/db"),
        "{error}"
    );
    assert!(error.contains("fixture: loading config"), "{error}");
}

#[tokio::test]
async fn a_program_that_cannot_be_started_is_a_clear_failure() {
    let missing = mcp_runtime::ServerConfig::stdio("missing", "/nonexistent/server", vec![]);
    let (runtime, _) = start(config([missing])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = mcp_runtime::error::chain(status.error.as_ref().unwrap());
    assert!(
        error.starts_with("cannot start `/nonexistent/server` (check `command` and `cwd`): "),
        "{error}"
    );
}

#[tokio::test]
async fn a_failed_required_server_fails_the_start_without_waiting_for_another() {
    let crash = fixture("crash", &["--exit-during-startup", "4"]).with_required(true);
    // Hanging for longer than any test runs: a start that waited for it could not
    // fail before the test does.
    let hung = fixture("hung", &["--hang-initialize"])
        .with_startup_timeout(Duration::from_secs(600))
        .with_required(true);
    let optional = fixture("optional", &["--exit-during-startup", "5"]);
    let fine = fixture("fine", &[]).with_required(true);
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let error = Runtime::start(
        config([crash, hung, optional, fine]),
        StartOptions::new()
            .with_events(sender)
            .with_listing_registry(ListingRegistry::new()),
    )
    .await
    .expect_err("the start fails");

    let StartError::RequiredServersFailed { failures } = &error else {
        panic!("unexpected error {error:?}");
    };
    let names: Vec<_> = failures.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["crash"],
        "only required servers that failed by then"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("required server failed to start: `crash`: server process exited during startup (exit status: 4)"),
        "{message}"
    );

    // The startups in progress were cancelled, and every process is gone.
    let events = drain(receiver);
    for server in ["hung", "fine"] {
        let spawned = events
            .iter()
            .any(|e| matches!(e, StartupEvent::Spawned { server: s, .. } if s == server));
        if spawned {
            assert_all_gone(spawned_pid(&events, server), &[]);
        }
    }
}

#[tokio::test]
async fn every_server_reports_starting_then_one_final_event() {
    let (runtime, events) = start(config([
        fixture("a", &[]),
        fixture("b", &["--exit-during-startup", "1"]),
    ]))
    .await;
    for server in ["a", "b"] {
        let mine: Vec<&StartupEvent> = events
            .iter()
            .filter(|event| match event {
                StartupEvent::Starting { server: s }
                | StartupEvent::Spawned { server: s, .. }
                | StartupEvent::Ready { server: s, .. }
                | StartupEvent::Failed { server: s, .. }
                | StartupEvent::Cancelled { server: s } => s == server,
                _ => false,
            })
            .collect();
        assert!(matches!(mine[0], StartupEvent::Starting { .. }), "{mine:?}");
        assert!(matches!(mine[1], StartupEvent::Spawned { .. }), "{mine:?}");
        assert_eq!(mine.len(), 3, "{mine:?}");
    }
    assert!(matches!(events.last(), Some(StartupEvent::Summary(_))));
    runtime.shutdown().await;
}

#[tokio::test]
async fn disabled_servers_are_not_started() {
    let mut off = fixture("off", &[]);
    off.enabled = false;
    let (runtime, events) = start(config([off, fixture("on", &[])])).await;
    let names: Vec<_> = runtime.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["on"]);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, StartupEvent::Starting { server } if server == "off"))
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_startup_timeout_no_clock_reaches_is_no_timeout() {
    let server = fixture("unbounded", &[]).with_startup_timeout(Duration::MAX);
    let (runtime, _events) = start(config([server])).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    runtime.shutdown().await;
}
