//! `mcp-runtime serve --listen` as a fleet: replicas sharing listings through a real
//! Redis, behind a real haproxy (both from Debian's packages, installed by
//! `scripts/install-peers`), driven by the official Python SDK's clients of both eras.

use std::{net::SocketAddr, path::Path, process::Child};

use mcp_runtime_fixtures::services::{Haproxy, RedisServer};
use serde_json::Value;

use crate::{
    serve_http::{KillOnDrop, gateway},
    support::{fixture_server, python_client, report_of},
};

const KEY: &str = "a fleet key of thirty-two bytes or more";

/// `replicas` gateways of `config`, each told the Redis URL and the fleet key.
fn replicas(
    config: &Path,
    redis: &RedisServer,
    replicas: usize,
) -> Vec<(KillOnDrop<Child>, String)> {
    let url = redis.url();
    (0..replicas)
        .map(|_| {
            let (child, url) = gateway(
                config,
                &[
                    ("MCP_RUNTIME_REDIS_URL", &url),
                    ("MCP_RUNTIME_FLEET_KEY", KEY),
                ],
            );
            (KillOnDrop(child), url)
        })
        .collect()
}

/// The address of a replica's endpoint URL (`http://127.0.0.1:PORT/mcp`).
fn address(url: &str) -> SocketAddr {
    url.strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap()
}

/// A replica's `/healthz`, asked with a plain HTTP/1.0 request.
fn health(url: &str) -> Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address(url)).unwrap();
    write!(stream, "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    serde_json::from_str(body).unwrap()
}

#[test]
fn a_burst_of_sessions_across_three_replicas_behind_haproxy_lists_each_upstream_once() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let log = dir.path().join("up.jsonl");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[serve]\nlisting_burst_sec = 60\n\n\
             [serve.fleet]\nredis_url_env_var = \"MCP_RUNTIME_REDIS_URL\"\n\
             key_env_var = \"MCP_RUNTIME_FLEET_KEY\"\n\n\
             [mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--log\", {log:?}, \"--list-delay-ms\", \"200\"]\n\
             required = true\n",
            fixture = fixture_server().to_str().unwrap(),
            log = log.to_str().unwrap(),
        ),
    )
    .unwrap();
    let gateways = replicas(&config, &redis, 3);
    let addresses: Vec<_> = gateways.iter().map(|(_, url)| address(url)).collect();
    let haproxy = Haproxy::start(dir.path(), &addresses);

    let mut client = python_client("serve_fleet_client.py");
    client.args(["burst", &haproxy.url(), "16", log.to_str().unwrap()]);
    let report = report_of(client, "burst");
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["legacy"], 16, "{report}");
    assert_eq!(report["2026-07-28"], 16, "{report}");
    assert_eq!(
        report["listings"], 1,
        "one tools/list for the whole fleet: {report}"
    );

    // Each handshake session and each replica's sessionless clients had servers of
    // their own.
    let pids: std::collections::BTreeSet<_> = report["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pid| pid.as_u64().unwrap())
        .collect();
    assert!(pids.len() > 16, "{report}");
    for (_, url) in &gateways {
        let health = health(url);
        assert_eq!(health["fleet"]["redis_reachable"], true, "{health}");
        assert_eq!(health["fleet"]["subscribed"], true, "{health}");
        assert!(
            health["fleet"]["replica"]
                .as_str()
                .is_some_and(|name| !name.is_empty())
        );
    }
}
