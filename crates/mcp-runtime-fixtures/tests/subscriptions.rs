//! What servers report without being asked: resource updates for the resources the
//! host subscribed to, list changes.

use std::time::Duration;

use mcp_runtime::{FeatureError, ServerChange, ServerConfig, ServerState};
use tokio::sync::broadcast;

use crate::{peers::server_everything, support::*};

/// How long a server may take to report a change it was made to report (the peer
/// reports updates every 5 s).
const REPORT_LIMIT: Duration = Duration::from_secs(30);

/// The next change `changes` receives, which must come within [`REPORT_LIMIT`].
async fn next_change(changes: &mut broadcast::Receiver<ServerChange>) -> ServerChange {
    tokio::time::timeout(REPORT_LIMIT, changes.recv())
        .await
        .expect("a change is reported in time")
        .expect("the runtime is running")
}

#[tokio::test]
async fn a_subscribed_resource_of_server_everything_reports_its_updates() {
    let everything = ServerConfig::stdio(
        "everything",
        "node",
        vec![server_everything().to_str().unwrap().into(), "stdio".into()],
    );
    let (runtime, _) = start(config([everything])).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    let uri = "demo://resource/static/document/startup.md";
    let mut changes = runtime.changes();
    runtime.subscribe_resource(uri, None).await.unwrap();
    // The peer sends updates of the subscribed resources once told to.
    runtime
        .call_tool("mcp__everything__toggle_subscriber_updates", None)
        .await
        .unwrap();
    let change = next_change(&mut changes).await;
    assert_eq!(
        change,
        ServerChange::ResourceUpdated {
            server: "everything".into(),
            uri: uri.into(),
        }
    );
    runtime
        .unsubscribe_resource(uri, Some("everything"))
        .await
        .unwrap();
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_without_resources_cannot_be_subscribed_to() {
    let (runtime, _) = start(config([fixture("plain", &[])])).await;
    let error = runtime
        .subscribe_resource("file:///x", Some("plain"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FeatureError::NotOffered { server, feature: "resources" } if server == "plain"),
        "{error:?}"
    );
    runtime.shutdown().await;
}

/// The fixture's counter resource, in `era`.
fn counter(era: &str) -> ServerConfig {
    fixture_auto("counter", &["--resources", "--era", era])
}

#[tokio::test]
async fn each_era_subscribes_its_own_way_and_reports_updates() {
    use mcp_runtime_fixtures::resources::COUNTER;

    for era in ["handshake", "stateless"] {
        let (runtime, _) = start(config([counter(era)])).await;
        let status = &runtime.servers()[0];
        assert_eq!(
            status.state,
            ServerState::Ready,
            "{era}: {:?}",
            status.error
        );
        let mut changes = runtime.changes();
        runtime
            .subscribe_resource(COUNTER, None)
            .await
            .unwrap_or_else(|error| panic!("{era}: {}", mcp_runtime::error::chain(&error)));
        let bumped = runtime.call_tool("mcp__counter__bump", None).await.unwrap();
        assert_eq!(
            bumped.structured_content().cloned().unwrap()["count"],
            1,
            "{era}"
        );
        // The update and the list change, in whichever order they are handled.
        let mut reported = vec![
            next_change(&mut changes).await,
            next_change(&mut changes).await,
        ];
        reported.sort_by_key(|change| format!("{change:?}"));
        assert_eq!(
            reported,
            [
                ServerChange::ResourceUpdated {
                    server: "counter".into(),
                    uri: COUNTER.into(),
                },
                ServerChange::ResourcesChanged {
                    server: "counter".into(),
                },
            ],
            "{era}"
        );
        runtime
            .unsubscribe_resource(COUNTER, None)
            .await
            .unwrap_or_else(|error| panic!("{era}: {}", mcp_runtime::error::chain(&error)));
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_2026_server_s_tool_list_change_reaches_the_catalog_through_its_listen_stream() {
    let (runtime, _) = start(config([counter("stateless")])).await;
    let mut catalog = runtime.subscribe_catalog();
    runtime
        .call_tool(
            "mcp__counter__add_tool",
            object(serde_json::json!({"name": "late"})),
        )
        .await
        .unwrap();
    let updated = tokio::time::timeout(
        REPORT_LIMIT,
        catalog.wait_for(|catalog| catalog.resolve("mcp__counter__late").is_some()),
    )
    .await
    .expect("the catalog is refreshed in time")
    .unwrap()
    .clone();
    assert!(updated.resolve("mcp__counter__late").is_some());
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_lists_of_a_server_that_announces_changes_are_held_until_it_does() {
    for era in ["handshake", "stateless"] {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        let server = fixture_auto(
            "counter",
            &["--resources", "--era", era, "--log", path_str(&log)],
        );
        let (runtime, _) = start(config([server])).await;
        let description =
            |listed: &mcp_runtime::Resources| listed.resources[0].resource.description.clone();
        let first = runtime.resources().await;
        assert_eq!(description(&first).as_deref(), Some("counted 0"), "{era}");
        runtime.resources().await;
        assert_eq!(
            count_method(&read_log(&log), "resources/list"),
            1,
            "{era}: held"
        );

        let mut changes = runtime.changes();
        runtime.call_tool("mcp__counter__bump", None).await.unwrap();
        loop {
            let change = next_change(&mut changes).await;
            if matches!(change, ServerChange::ResourcesChanged { .. }) {
                break;
            }
        }
        let again = runtime.resources().await;
        assert_eq!(description(&again).as_deref(), Some("counted 1"), "{era}");
        assert_eq!(count_method(&read_log(&log), "resources/list"), 2, "{era}");
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_closed_listen_stream_reports_nothing_though_its_server_still_sends_on_it() {
    use mcp_runtime_fixtures::resources::COUNTER;

    // A 2026-07-28 server that keeps sending on the streams the client closed, as
    // one that has not yet read their cancellation does.
    let server = fixture_auto(
        "counter",
        &["--resources", "--era", "stateless", "--late-streams"],
    );
    let (runtime, _) = start(config([server])).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    // The stream that carried the resource's updates is replaced by one without it.
    runtime.subscribe_resource(COUNTER, None).await.unwrap();
    runtime.unsubscribe_resource(COUNTER, None).await.unwrap();
    let mut changes = runtime.changes();
    let updated = ServerChange::ResourceUpdated {
        server: "counter".into(),
        uri: COUNTER.into(),
    };
    let listed = ServerChange::ResourcesChanged {
        server: "counter".into(),
    };
    runtime.call_tool("mcp__counter__bump", None).await.unwrap();
    // The server sent the update and the list change on the closed streams before
    // the list change on the open one; only that one is reported.
    assert_eq!(next_change(&mut changes).await, listed);
    // Subscribed again, the next bump's update and list change come on the new
    // stream, and nothing of the closed ones (a third of them now) before them.
    runtime.subscribe_resource(COUNTER, None).await.unwrap();
    runtime.call_tool("mcp__counter__bump", None).await.unwrap();
    assert_eq!(next_change(&mut changes).await, updated);
    assert_eq!(next_change(&mut changes).await, listed);
    runtime.shutdown().await;
}

// On several threads, as the CLI runs: the cancellation must be written before the
// input closes, not only queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_the_listen_stream_before_closing_the_server_s_input() {
    // A server ends only once its requests have: one whose listen stream is still
    // open when its input closes waits for that stream, and is stopped by a signal
    // after the grace period instead of exiting.
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto(
        "counter",
        &["--resources", "--era", "stateless", "--log", path_str(&log)],
    );
    let (runtime, _) = start(config([server])).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    runtime.shutdown().await;
    let log = read_log(&log);
    let listen = &the(&log, "subscriptions/listen")["id"];
    let cancelled: Vec<&serde_json::Value> = log
        .iter()
        .filter(|entry| entry["method"] == "notifications/cancelled")
        .map(|entry| &entry["params"]["requestId"])
        .collect();
    assert_eq!(cancelled, [listen], "{log:#?}");
}
