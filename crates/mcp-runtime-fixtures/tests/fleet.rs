//! Listings shared across a fleet: runtimes whose registries are linked to one real
//! Redis (`redis-server`, installed by `scripts/install-peers`) under one fleet key,
//! as `mcp-runtime serve` replicas on separate machines are.

use std::time::Duration;

use mcp_runtime::{
    ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions,
    fleet::{self, Fleet},
};
use mcp_runtime_fixtures::services::RedisServer;
use serde_json::json;

use crate::support::*;

const KEY: &[u8] = b"a fleet key of thirty-two bytes or more";

/// A registry of its own (one replica's), linked to the fleet at `url` under `key`,
/// counting startups within `window` of another's listing as one burst.
///
/// Its calls to Redis may take a second, four times the default: the tests run side
/// by side on a small machine, and a stall past the default would have a replica
/// list alone, which no test here is about (a Redis stopped fails its calls at once).
fn replica(url: &str, key: &[u8], name: &str, window: Duration) -> ListingRegistry {
    let patience = Duration::from_secs(1);
    let fleet =
        Fleet::connect_with(url, key, name, patience, fleet::DEFAULT_LEASE).expect("a valid fleet");
    ListingRegistry::new()
        .with_burst_window(window)
        .with_fleet(fleet)
}

/// Starts `server` alone through `registry`, and waits for it to be ready.
async fn start(server: ServerConfig, registry: &ListingRegistry) -> Runtime {
    let options = StartOptions::new()
        .wait_for_all()
        .with_listing_registry(registry.clone());
    let runtime = Runtime::start(config([server]), options)
        .await
        .expect("the start succeeds");
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    runtime
}

/// Starts `per_replica` runtimes of `server` on each of `replicas`, all at once.
async fn burst(
    replicas: &[ListingRegistry],
    per_replica: usize,
    server: &ServerConfig,
) -> Vec<Runtime> {
    futures::future::join_all(
        replicas
            .iter()
            .flat_map(|registry| (0..per_replica).map(move |_| start(server.clone(), registry))),
    )
    .await
}

async fn shutdown(runtimes: Vec<Runtime>) {
    futures::future::join_all(runtimes.into_iter().map(Runtime::shutdown)).await;
}

#[tokio::test]
async fn a_burst_across_three_replicas_lists_once() {
    let dir = temp_dir();
    let redis = RedisServer::start(dir.path());
    let replicas: Vec<_> = (1..=3)
        .map(|n| replica(&redis.url(), KEY, &format!("r{n}"), Duration::from_secs(5)))
        .collect();
    let log = dir.path().join("log.jsonl");
    let server = fixture(
        "srv",
        &[
            "--tools",
            "50",
            "--list-delay-ms",
            "300",
            "--log",
            path_str(&log),
        ],
    )
    .with_startup_timeout(Duration::from_secs(60));

    let runtimes = burst(&replicas, 8, &server).await;
    assert_eq!(
        count_method(&read_log(&log), "tools/list"),
        1,
        "one listing for 24 startups on 3 replicas"
    );
    let tools = runtimes[0].catalog().tools().len();
    assert_eq!(tools, 55);
    assert!(
        runtimes
            .iter()
            .all(|runtime| runtime.catalog().tools().len() == tools)
    );
    // Every runtime still has its own connection: a call reaches its own process.
    let pids: std::collections::HashSet<_> =
        futures::future::join_all(runtimes.iter().map(|runtime| async {
            let answer = runtime
                .call_tool("mcp__srv__pid", object(json!({})))
                .await
                .expect("a call on the runtime's own connection");
            answer.as_object()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        }))
        .await
        .into_iter()
        .collect();
    assert_eq!(pids.len(), 24);
    shutdown(runtimes).await;
}

#[tokio::test]
async fn fleets_under_different_keys_share_nothing() {
    let dir = temp_dir();
    let redis = RedisServer::start(dir.path());
    let window = Duration::from_secs(5);
    let ours = replica(&redis.url(), KEY, "ours", window);
    let theirs = replica(
        &redis.url(),
        b"another fleet's key, as long as ours is",
        "theirs",
        window,
    );
    let log = dir.path().join("log.jsonl");
    let server = fixture("srv", &["--log", path_str(&log)]);
    let first = start(server.clone(), &ours).await;
    let second = start(server, &theirs).await;
    assert_eq!(count_method(&read_log(&log), "tools/list"), 2);
    shutdown(vec![first, second]).await;
}

#[tokio::test]
async fn a_listing_taken_from_the_fleet_is_kept_within_the_window_of_when_it_was_sent() {
    let dir = temp_dir();
    let redis = RedisServer::start(dir.path());
    let window = Duration::from_secs(3);
    let (first, second) = (
        replica(&redis.url(), KEY, "first", window),
        replica(&redis.url(), KEY, "second", window),
    );
    let log = dir.path().join("log.jsonl");
    let server = fixture("srv", &["--log", path_str(&log)]);
    let listed = start(server.clone(), &first).await;
    // No earlier than the listing was sent, by the fleet's clock (Redis's).
    let listed_by = redis.time_ms();
    // A second later, within the window of the first listing: the second replica
    // takes it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let took = start(server.clone(), &second).await;
    assert_eq!(count_method(&read_log(&log), "tools/list"), 1);
    // Past the window of when the listing was sent, though still within the window
    // of when the second replica took it, a second later: that replica lists anew.
    // 200 ms more: the taker reckons the send time from Redis's answer, as late as
    // that answer took to arrive; and Redis counts in whole milliseconds.
    let past = listed_by + u64::try_from(window.as_millis()).unwrap() + 200;
    while redis.time_ms() < past {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let later = start(server, &second).await;
    assert_eq!(count_method(&read_log(&log), "tools/list"), 2);
    shutdown(vec![listed, took, later]).await;
}

#[tokio::test]
async fn without_redis_each_replica_lists_alone_and_shares_again_once_it_is_back() {
    let dir = temp_dir();
    let mut redis = RedisServer::start(dir.path());
    let window = Duration::from_secs(30);
    let replicas: Vec<_> = (1..=2)
        .map(|n| replica(&redis.url(), KEY, &format!("r{n}"), window))
        .collect();
    let log = dir.path().join("log.jsonl");
    let server = fixture("srv", &["--log", path_str(&log)]);
    let lists = || count_method(&read_log(&log), "tools/list");

    redis.stop();
    let alone = burst(&replicas, 2, &server).await;
    assert_eq!(lists(), 2, "each replica lists once, for its own startups");
    assert!(
        replicas
            .iter()
            .all(|registry| !registry.fleet().unwrap().reachable())
    );
    shutdown(alone).await;

    redis.resume();
    // Asked directly, each replica finds Redis again (without waiting out the pause
    // after its failure), and its next startups share across the fleet.
    for registry in &replicas {
        assert!(registry.fleet().unwrap().health().await.redis_reachable);
    }
    // Another server (another key): each replica's own window still holds the first.
    let server = fixture("other", &["--log", path_str(&log)]);
    let first = start(server.clone(), &replicas[0]).await;
    let second = start(server, &replicas[1]).await;
    assert_eq!(lists(), 3, "one more listing for both replicas");
    assert!(
        replicas
            .iter()
            .all(|registry| registry.fleet().unwrap().reachable())
    );
    shutdown(vec![first, second]).await;
}

/// The HTTP fixture at `url`, of the 2026-07-28 revision, whose listings the server
/// grants for ten minutes to the same caller.
fn granting(url: &str) -> ServerConfig {
    let mut server = ServerConfig::http("granting", url);
    if let mcp_runtime::config::TransportConfig::StreamableHttp(http) = &mut server.transport {
        http.http_headers
            .insert("Authorization".into(), "Bearer alice".into());
    }
    server
}

#[tokio::test]
async fn a_grant_serves_other_replicas_until_a_list_change_on_any_replica_revokes_it() {
    let dir = temp_dir();
    let redis = RedisServer::start(dir.path());
    let replicas: Vec<_> = (1..=3)
        .map(|n| replica(&redis.url(), KEY, &format!("r{n}"), Duration::ZERO))
        .collect();
    // One server process for every runtime: the tool added stays listed.
    let server = http_fixture(&[
        "--era",
        "stateless",
        "--list-ttl-ms",
        "600000",
        "--list-cache-scope",
        "private",
    ])
    .await;
    let first = start(granting(&server.url), &replicas[0]).await;
    assert!(!first.servers()[0].served_from_cache);
    let second = start(granting(&server.url), &replicas[1]).await;
    let status = &second.servers()[0];
    assert!(
        status.served_from_cache,
        "the first replica's grant serves the second"
    );
    assert_eq!(status.tools_list_requests, 0);

    let mut catalog = first.subscribe_catalog();
    first
        .call_tool("mcp__granting__add_tool", object(json!({"name": "late"})))
        .await
        .expect("add_tool succeeds");
    catalog
        .wait_for(|catalog| catalog.tools().any(|tool| tool.tool.name == "late"))
        .await
        .unwrap();
    // The first replica revokes the grant fleet-wide before it lists again; a
    // startup on a third replica asks the server.
    let third = start(granting(&server.url), &replicas[2]).await;
    let status = &third.servers()[0];
    assert!(
        !status.served_from_cache,
        "a revoked grant serves no replica"
    );
    assert_eq!(status.tools_list_requests, 1);
    assert!(third.catalog().tools().any(|tool| tool.tool.name == "late"));
    shutdown(vec![first, second, third]).await;
}
