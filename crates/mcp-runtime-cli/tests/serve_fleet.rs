//! `mcp-runtime serve --listen` as a fleet: replicas sharing listings through a real
//! Redis, behind a real haproxy (both from Debian's packages, installed by
//! `scripts/install-peers`), driven by the official Python SDK's clients of both eras.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Child,
    time::Duration,
};

use mcp_runtime_fixtures::{
    services::{Haproxy, RedisServer, fleet_guide_block},
    testing::{children, count_method, is_alive, read_log, wait_for_exit},
};
use serde_json::Value;

use crate::{
    serve_http::{KillOnDrop, gateway, gateway_on},
    support::{cli, fixture_server, http_fixture, python_client, report_of},
};

const KEY: &str = "a fleet key of thirty-two bytes or more";

/// `replicas` gateways of `config`, each told the Redis URL and the fleet key.
fn replicas(
    config: &Path,
    redis: &RedisServer,
    replicas: usize,
) -> Vec<(KillOnDrop<Child>, String)> {
    replicas_with(config, &[("MCP_RUNTIME_REDIS_URL", &redis.url())], replicas)
}

/// `replicas` gateways of `config`, each told the fleet key and the variables of
/// `env` (the Redis URL among them).
fn replicas_with(
    config: &Path,
    env: &[(&str, &str)],
    replicas: usize,
) -> Vec<(KillOnDrop<Child>, String)> {
    let mut env = env.to_vec();
    env.push(("MCP_RUNTIME_FLEET_KEY", KEY));
    (0..replicas)
        .map(|_| {
            let (child, url) = gateway(config, &env);
            (KillOnDrop(child), url)
        })
        .collect()
}

/// Two replicas of the fixture's fleet, sharing a Redis of their own: what most tests
/// of sessions moving between replicas start from.
struct Pair {
    /// The first replica's endpoint URL.
    first: String,
    /// The second replica's endpoint URL.
    second: String,
    /// Both, ended before their Redis.
    _replicas: Vec<(KillOnDrop<Child>, String)>,
    redis: RedisServer,
    /// Holds the config and Redis's files; removed last.
    _dir: tempfile::TempDir,
}

/// A [`Pair`] whose `[serve]` table has `line` added (see [`fleet_config_with`]).
fn pair(line: &str) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let config = fleet_config_with(dir.path(), line);
    let replicas = replicas(&config, &redis, 2);
    Pair {
        first: replicas[0].1.clone(),
        second: replicas[1].1.clone(),
        _replicas: replicas,
        redis,
        _dir: dir,
    }
}

/// The address of a replica's endpoint URL (`http://127.0.0.1:PORT/mcp`).
fn address(url: &str) -> SocketAddr {
    url.strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap()
}

/// How many `tools/list` requests the fixture logged in `log`.
fn tools_lists(log: &Path) -> usize {
    count_method(&read_log(log), "tools/list")
}

/// The distinct client capabilities the `initialize` requests in `log` offered.
fn offered_capabilities(log: &Path) -> std::collections::BTreeSet<String> {
    read_log(log)
        .iter()
        .filter(|message| message["method"] == "initialize")
        .map(|message| message["params"]["capabilities"].to_string())
        .collect()
}

/// A replica's `/healthz`, asked with a plain HTTP/1.0 request.
fn health(url: &str) -> Value {
    let (status, _, body) = exchange(url, "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    assert!(
        status.starts_with("HTTP/1.0 200") || status.starts_with("HTTP/1.1 200"),
        "{status}"
    );
    serde_json::from_str(&body).unwrap()
}

/// The status line, the headers (in lower case) and the body of the answer to
/// `request`, sent whole to the replica at `url`, which closes the connection after.
fn exchange(url: &str, request: &str) -> (String, String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address(url)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

#[test]
fn a_burst_of_sessions_across_three_replicas_behind_haproxy_lists_each_upstream_once() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let log = dir.path().join("up.jsonl");
    let upstream = fixture_upstream(&log, &["--list-delay-ms", "200"]);
    let config = fleet_config(dir.path(), &upstream, 60);
    let (gateways, haproxy) = behind_haproxy(dir.path(), &config, &redis, 3);

    // One burst of 64 sessions at once: the Python SDK's and the TypeScript SDK's,
    // 24 and 8 of each era.
    let mut python = python_client("serve_fleet_client.py");
    python.args(["burst", &haproxy.url(), "24", log.to_str().unwrap()]);
    let mut typescript = std::process::Command::new("node");
    typescript
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_fleet_ts_client.mjs"))
        .args(["burst", &haproxy.url(), "8"]);
    let (report, ts) = std::thread::scope(|scope| {
        let typescript = scope.spawn(|| report_of(typescript, "typescript burst"));
        (
            report_of(python, "python burst"),
            typescript.join().unwrap(),
        )
    });
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["legacy"], 24, "{report}");
    assert_eq!(report["2026-07-28"], 24, "{report}");
    assert_eq!(ts["errors"], serde_json::json!([]), "{ts}");
    assert_eq!(ts["legacy"], 8, "{ts}");
    assert_eq!(ts["2026-07-28"], 8, "{ts}");
    // The sessions offer the upstream two sets of capabilities (the Python clients
    // answer elicitation, the TypeScript ones, of either era, do not): two discovery
    // keys, one listing each for the whole fleet.
    let keys = offered_capabilities(&log);
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_eq!(
        tools_lists(&log),
        keys.len(),
        "one tools/list per key for the whole fleet: {keys:?} {report}"
    );

    // Each handshake session and each replica's sessionless clients had servers of
    // their own.
    let pids: std::collections::BTreeSet<_> = report["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pid| pid.as_u64().unwrap())
        .collect();
    assert!(pids.len() > 24, "{report}");
    for (_, url) in &gateways {
        // A subscription whose ping went unanswered in time while the burst loaded
        // the machine is being made again.
        until_subscribed(url);
        let health = health(url);
        assert_eq!(health["fleet"]["redis_reachable"], true, "{health}");
        assert!(
            health["fleet"]["replica"]
                .as_str()
                .is_some_and(|name| !name.is_empty())
        );
    }
}

/// The config of a fleet serving `upstream` (the keys of its `[mcp_servers.up]`
/// table) as `up`, its listings shared for a burst window of `window` seconds.
///
/// Its calls to Redis may take the longest time allowed, a second: these tests run
/// many processes at once on a small machine, and a stall past the default 250 ms
/// would have a replica go on without the fleet, which no test here is about (a
/// Redis killed fails its calls at once).
fn fleet_config(dir: &Path, upstream: &str, window: u32) -> std::path::PathBuf {
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[serve]\nlisting_burst_sec = {window}\n\n\
             [serve.fleet]\nredis_url_env_var = \"MCP_RUNTIME_REDIS_URL\"\n\
             key_env_var = \"MCP_RUNTIME_FLEET_KEY\"\nredis_timeout_ms = 1000\n\n\
             [mcp_servers.up]\n{upstream}required = true\n",
        ),
    )
    .unwrap();
    config
}

/// The status line and the headers of the answer to a POST of `body` to the replica
/// at `url`, in session `session` if any (the connection closed after it).
fn post(url: &str, session: Option<&str>, body: &str) -> (String, String) {
    post_as(url, "127.0.0.1", None, session, body)
}

/// [`post`] under the `Host` `host`, with the bearer token `token` if any.
fn post_as(
    url: &str,
    host: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> (String, String) {
    let token = token.map_or(String::new(), |token| {
        format!("Authorization: Bearer {token}\r\n")
    });
    let session = session.map_or(String::new(), |id| format!("Mcp-Session-Id: {id}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {token}{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, headers, _) = exchange(url, &request);
    (status, headers)
}

/// The session id an answer's `headers` name.
fn session_id(headers: &str) -> String {
    headers
        .lines()
        .find_map(|line| line.trim().strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .to_owned()
}

#[test]
fn a_session_asked_of_another_replica_while_redis_is_down_is_not_taken_for_ended() {
    let mut fleet = pair("");
    let session = open_session(&fleet.first);

    // The other replica cannot learn whose the session is: it does not answer 404,
    // which would have the client open a new one, but asks it to try again.
    fleet.redis.stop();
    let (status, headers) = post(&fleet.second, Some(&session), PING);
    assert!(status.ends_with("503 Service Unavailable"), "{status}");
    assert!(headers.contains("retry-after: 1"), "{headers}");
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// Opens a handshake session on the replica at `url`: its id.
fn open_session(url: &str) -> String {
    let (status, headers) = post(url, None, INITIALIZE);
    assert!(status.ends_with("200 OK"), "{status}");
    session_id(&headers)
}

/// How many sessions' changes the replica at `url` keeps for Redis, as its
/// `/healthz` says.
fn unsaved(url: &str) -> u64 {
    let health = health(url);
    health["fleet"]["sessions_unsaved"]
        .as_u64()
        .unwrap_or_else(|| panic!("{health}"))
}

/// Waits until the replica at `url` keeps `count` sessions' changes for Redis (it
/// tries to write them every second), for 30 s at most.
fn until_unsaved(url: &str, count: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while unsaved(url) != count {
        assert!(std::time::Instant::now() < deadline, "{}", health(url));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The status line of the answer to a POST of `body` in session `session` to the
/// replica at `url`, asked again while it answers 503 (its link to Redis may be
/// pausing after a failure), for 10 s at most.
fn post_until_answered(url: &str, session: &str, body: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = post(url, Some(session), body);
        if !status.ends_with("503 Service Unavailable") || std::time::Instant::now() > deadline {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_session_opened_while_redis_is_down_moves_to_another_replica_once_it_is_back() {
    let mut fleet = pair("");
    fleet.redis.stop();
    let session = open_session(&fleet.first);
    assert_eq!(unsaved(&fleet.first), 1);

    // Back, empty: the replica writes the session then, and the other can restore it.
    fleet.redis.resume();
    until_unsaved(&fleet.first, 0);
    let status = post_until_answered(&fleet.second, &session, PING);
    assert!(status.ends_with("200 OK"), "{status}");
}

#[test]
fn a_session_its_client_ended_while_redis_refused_removals_is_not_restored_after() {
    let fleet = pair("");
    let session = open_session(&fleet.first);

    // Redis keeps the session's entries, and refuses their removal (a removal sent
    // to a stalled Redis would be run once it goes on).
    fleet.redis.command(&["ACL", "SETUSER", "default", "-del"]);
    let (status, _, _) = exchange(&fleet.first, &delete(&session));
    assert!(status.ends_with("202 Accepted"), "{status}");
    assert_eq!(unsaved(&fleet.first), 1);

    fleet.redis.command(&["ACL", "SETUSER", "default", "+del"]);
    until_unsaved(&fleet.first, 0);
    let status = post_until_answered(&fleet.second, &session, PING);
    assert!(status.ends_with("404 Not Found"), "{status}");
}

#[test]
fn a_session_is_restored_only_once_redis_takes_its_new_holder() {
    let fleet = pair("");
    let session = open_session(&fleet.first);

    // Redis reads the session's entries but takes no write: restored then, the
    // session would stay held by the first replica, whose copy, ending idle, would
    // remove what the second one serves.
    fleet.redis.command(&["ACL", "SETUSER", "default", "-set"]);
    let (status, headers) = post(&fleet.second, Some(&session), PING);
    assert!(status.ends_with("503 Service Unavailable"), "{status}");
    assert!(headers.contains("retry-after: 1"), "{headers}");
    assert_eq!(health(&fleet.second)["sessions"], 0);

    fleet.redis.command(&["ACL", "SETUSER", "default", "+set"]);
    let status = post_until_answered(&fleet.second, &session, PING);
    assert!(status.ends_with("200 OK"), "{status}");
}

/// Renames the one session state in a test's Redis, remembering its name.
const PUT_STATE_ASIDE: &str = "local name = redis.call('KEYS', '*:serve-session:*')[1] \
     redis.call('SET', 'aside', name) return redis.call('RENAME', name, 'state')";
/// Gives the session state [`PUT_STATE_ASIDE`] renamed its name back.
const PUT_STATE_BACK: &str = "return redis.call('RENAME', 'state', redis.call('GET', 'aside'))";

#[test]
fn a_session_whose_restore_failed_is_restored_again_within_the_bound() {
    let fleet = pair("max_sessions = 1");
    let (first, second) = (&fleet.first, &fleet.second);
    let session = open_session(first);

    // The session's state is put aside: the second replica claims the session and
    // takes it over, and its restore finds nothing to restore.
    fleet.redis.command(&["EVAL", PUT_STATE_ASIDE, "0"]);
    let (status, _) = post(second, Some(&session), PING);
    assert!(status.ends_with("404 Not Found"), "{status}");
    fleet.redis.command(&["EVAL", PUT_STATE_BACK, "0"]);

    // The second replica then opens a session of its own, its one; the session it
    // failed to restore is one it does not have, and restoring it would pass the
    // bound (whose 503 says to try again in 5 s, where Redis's says 1 s).
    open_session(second);
    until_unsaved(second, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let retry_after = loop {
        let (status, headers) = post(second, Some(&session), PING);
        assert!(status.ends_with("503 Service Unavailable"), "{status}");
        let retry_after = headers
            .lines()
            .find_map(|line| line.trim().strip_prefix("retry-after: "))
            .map(str::to_owned);
        if retry_after.as_deref() != Some("1") || std::time::Instant::now() > deadline {
            break retry_after;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(retry_after.as_deref(), Some("5"));
    let (status, _) = post(first, Some(&session), PING);
    assert!(status.ends_with("200 OK"), "{status}");
}

#[test]
fn a_replica_a_session_moved_from_is_told_though_the_move_then_failed() {
    let fleet = pair("session_idle_sec = 3");
    let (first, second) = (&fleet.first, &fleet.second);
    let session = open_session(first);

    // The second replica takes the session over, then fails to keep its entries:
    // it answers 503, and its client's retry finds the session held there already.
    fleet
        .redis
        .command(&["ACL", "SETUSER", "default", "-pexpire"]);
    let (status, _) = post(second, Some(&session), PING);
    assert!(status.ends_with("503 Service Unavailable"), "{status}");
    fleet
        .redis
        .command(&["ACL", "SETUSER", "default", "+pexpire"]);
    let status = post_until_answered(second, &session, PING);
    assert!(status.ends_with("200 OK"), "{status}");

    // Sent back to the first replica, which heard of the move.
    held_again_where_it_is_sent_back(first, second, &session);
}

/// Sends session `session`, which moved from the replica at `first` to the one at
/// `second`, back to the first until the second's copy has ended idle: the first,
/// told of the move, holds it again, so the second's copy leaves the session's
/// entries, and the second restores it again.
fn held_again_where_it_is_sent_back(first: &str, second: &str, session: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while health(second)["sessions"] != 0 {
        let (status, _) = post(first, Some(session), PING);
        assert!(status.ends_with("200 OK"), "{status}");
        assert!(std::time::Instant::now() < deadline, "{}", health(second));
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = post_until_answered(second, session, PING);
    assert!(status.ends_with("200 OK"), "{status}");
}

#[test]
fn a_replica_a_session_moved_from_is_told_though_the_moves_answer_came_too_late() {
    let fleet = pair("session_idle_sec = 3");
    // Redis knows the take-over's script: a first session moved to the second
    // replica (a script Redis does not know is refused at its first send).
    let moved_before = open_session(&fleet.first);
    let (status, _) = post(&fleet.second, Some(&moved_before), PING);
    assert!(status.ends_with("200 OK"), "{status}");
    // Its copies closed idle: their removals (scripts) are not held with the
    // take-over, to fail the second replica's next call for another reason.
    until_sessions(&fleet.second, 0);
    until_sessions(&fleet.first, 0);
    let session = open_session(&fleet.first);

    // Redis takes the second replica's take-over only once that replica gave up on
    // its answer: its client is asked to try again, and finds the session held
    // there already.
    fleet.redis.command(&["CLIENT", "PAUSE", "60000", "WRITE"]);
    let (status, _) = post(&fleet.second, Some(&session), PING);
    assert!(status.ends_with("503 Service Unavailable"), "{status}");
    fleet.redis.command(&["CLIENT", "UNPAUSE"]);
    let status = post_until_answered(&fleet.second, &session, PING);
    assert!(status.ends_with("200 OK"), "{status}");

    // Sent back to the first replica, told of the move all the same.
    held_again_where_it_is_sent_back(&fleet.first, &fleet.second, &session);
}

/// Waits until the replica at `url` has `count` sessions open, for 10 s at most.
fn until_sessions(url: &str, count: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while health(url)["sessions"] != count {
        assert!(std::time::Instant::now() < deadline, "{}", health(url));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the replica at `url` is subscribed to the fleet's messages, for 10 s
/// at most.
fn until_subscribed(url: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while health(url)["fleet"]["subscribed"] != true {
        assert!(std::time::Instant::now() < deadline, "{}", health(url));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The request that ends session `id`, its connection closed after the answer.
fn delete(id: &str) -> String {
    format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Mcp-Session-Id: {id}\r\n\r\n"
    )
}

#[test]
fn a_session_its_client_ended_on_another_replica_is_closed_on_its_own() {
    let fleet = pair("");
    let session = open_session(&fleet.first);

    // Ended through the other replica (the load balancer lost track of it): the one
    // holding it closes it, with its servers, within 10 s; it would stay open until
    // idle for `session_idle_sec`, 600 s.
    let (status, _, _) = exchange(&fleet.second, &delete(&session));
    assert!(status.ends_with("202 Accepted"), "{status}");
    until_sessions(&fleet.first, 0);
    let (status, _) = post(&fleet.first, Some(&session), PING);
    assert!(status.ends_with("404 Not Found"), "{status}");
}

/// The command `docs/fleet.md` has a deployment create the fleet's Redis user with,
/// its words, the password `password`.
fn documented_user(password: &str) -> Vec<String> {
    let block = fleet_guide_block("## Redis", "```");
    let command = block
        .lines()
        .find(|line| line.starts_with("ACL SETUSER "))
        .expect("the user's command in the guide");
    command
        .split_whitespace()
        .map(|word| word.replace("PASSWORD", password))
        .collect()
}

/// Opens a session on the replica at `first`, has the one at `second` restore it
/// (taking the listing the first published), then ends it through the first: the
/// second, told, closes its copy.
fn moved_then_ended_where_it_was_opened(first: &str, second: &str) {
    let session = open_session(first);
    let (status, _) = post(second, Some(&session), PING);
    assert!(status.ends_with("200 OK"), "{status}");
    let (status, _, _) = exchange(first, &delete(&session));
    assert!(status.ends_with("202 Accepted"), "{status}");
    until_sessions(second, 0);
    until_sessions(first, 0);
}

#[test]
fn a_session_its_client_ended_on_the_replica_it_moved_from_is_closed_where_it_moved() {
    let fleet = pair("");
    moved_then_ended_where_it_was_opened(&fleet.first, &fleet.second);
}

#[test]
fn a_fleet_shares_through_redis_as_its_guide_deploys_it() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start_tls(dir.path());
    // The user the guide has the fleet use, and a URL of the form it gives (over
    // TLS, a database other than 0).
    let command = documented_user("fleet-password");
    redis.command(&command.iter().map(String::as_str).collect::<Vec<_>>());
    let url = redis
        .tcp_url()
        .replace("rediss://", "rediss://mcp-fleet:fleet-password@")
        + "/1";
    let authority = redis.certificate_authority();
    let config = fleet_config_with(dir.path(), "");
    let trusting = [
        ("MCP_RUNTIME_REDIS_URL", url.as_str()),
        ("SSL_CERT_FILE", authority.to_str().unwrap()),
    ];
    let gateways = replicas_with(&config, &trusting, 2);
    // A listing shared, a session restored elsewhere, and a letter telling its end.
    moved_then_ended_where_it_was_opened(&gateways[0].1, &gateways[1].1);
    assert_eq!(tools_lists(&dir.path().join("up.jsonl")), 1, "{command:?}");
    for gateway in &gateways {
        let fleet = &health(&gateway.1)["fleet"];
        assert_eq!(fleet["redis_reachable"], true, "{fleet}");
        assert_eq!(fleet["last_call_answered"], true, "{fleet}");
        assert_eq!(fleet["subscribed"], true, "{fleet}");
    }

    // A replica that does not trust Redis's certificate reaches no Redis: it serves
    // alone, and says so.
    let untrusting = replicas_with(&config, &trusting[..1], 1);
    open_session(&untrusting[0].1);
    let fleet = &health(&untrusting[0].1)["fleet"];
    assert_eq!(fleet["redis_reachable"], false, "{fleet}");
    assert_eq!(fleet["subscribed"], false, "{fleet}");
}

#[test]
fn a_session_closed_idle_while_redis_refused_removals_is_not_restored_after() {
    let fleet = pair("session_idle_sec = 3");
    let session = open_session(&fleet.first);

    // Closed idle within 3¾ s, its entries' removal (a script) refused.
    fleet
        .redis
        .command(&["ACL", "SETUSER", "default", "-@scripting"]);
    until_unsaved(&fleet.first, 1);
    assert_eq!(health(&fleet.first)["sessions"], 0);
    // Asked of its replica meanwhile, it is not restored from its entries there.
    let (status, _) = post(&fleet.first, Some(&session), PING);
    assert!(status.ends_with("503 Service Unavailable"), "{status}");

    fleet
        .redis
        .command(&["ACL", "SETUSER", "default", "+@scripting"]);
    until_unsaved(&fleet.first, 0);
    let status = post_until_answered(&fleet.second, &session, PING);
    assert!(status.ends_with("404 Not Found"), "{status}");
}

#[test]
fn a_replica_waits_for_redis_as_long_as_its_config_says() {
    use std::os::unix::net::UnixListener;
    // A "Redis" that takes connections and never answers.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("silent.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    let config = fleet_config_with(dir.path(), "");
    let url = format!("unix://{}", socket.display());
    let (gateway, endpoint) = gateway(
        &config,
        &[
            ("MCP_RUNTIME_REDIS_URL", &url),
            ("MCP_RUNTIME_FLEET_KEY", KEY),
        ],
    );
    let _gateway = KillOnDrop(gateway);
    // The health check's PING waits out `redis_timeout_ms`, a second, never less (a
    // timeout does not end early), where the default would give up after 250 ms.
    let asked = std::time::Instant::now();
    let health = health(&endpoint);
    assert!(asked.elapsed() >= Duration::from_secs(1), "{health}");
    assert_eq!(health["status"], "up", "{health}");
    assert_eq!(health["fleet"]["redis_reachable"], false, "{health}");
}

#[test]
fn a_replica_that_cannot_join_its_fleet_refuses_to_start_saying_why_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = fleet_config_with(dir.path(), "");
    let refusal = |url: Option<&str>, key: &str| {
        let mut command = cli();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .env("MCP_RUNTIME_FLEET_KEY", key)
            .env_remove("MCP_RUNTIME_REDIS_URL");
        if let Some(url) = url {
            command.env("MCP_RUNTIME_REDIS_URL", url);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        String::from_utf8(output.stderr).unwrap()
    };
    // One line each, the cause said once, and the URL (which may hold a password)
    // never repeated.
    let unset = refusal(None, KEY);
    assert_eq!(
        unset,
        "mcp-runtime: `[serve.fleet] redis_url_env_var` names `MCP_RUNTIME_REDIS_URL`, \
         which is not set or is empty: set it to the Redis URL\n"
    );
    let invalid = refusal(Some("redis://fleet:hunter2@redis.internal:port/"), KEY);
    assert!(
        invalid.starts_with("mcp-runtime: `[serve.fleet]`: the fleet's Redis URL is not valid: ")
            && invalid.matches("not valid").count() == 1
            && invalid.lines().count() == 1
            && !invalid.contains("hunter2"),
        "{invalid}"
    );
    let short = refusal(Some("redis://127.0.0.1:1/"), "short");
    assert_eq!(
        short,
        "mcp-runtime: `[serve.fleet]`: the fleet key has 5 bytes; it needs at least 32 \
         (`openssl rand -base64 32` makes one)\n"
    );
}

/// The `[mcp_servers.up]` keys of the stdio fixture logging to `log`, with `args`.
fn fixture_upstream(log: &Path, args: &[&str]) -> String {
    let mut all = vec!["--log", log.to_str().unwrap()];
    all.extend_from_slice(args);
    format!(
        "command = {fixture:?}\nargs = {all:?}\n",
        fixture = fixture_server().to_str().unwrap()
    )
}

/// The Python fleet client doing `args`, step by step: each JSON line it prints
/// reports a step, and a line sent to it begins the next.
struct Conversation {
    _client: KillOnDrop<Child>,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Conversation {
    fn start(args: &[&str]) -> Self {
        use std::process::Stdio;
        let mut client = python_client("serve_fleet_client.py");
        client
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut client = KillOnDrop(crate::support::isolated(client).spawn().unwrap());
        let stdin = client.0.stdin.take().unwrap();
        let stdout = client.0.stdout.take().unwrap();
        Self {
            _client: client,
            stdin,
            lines: std::io::BufRead::lines(std::io::BufReader::new(stdout)),
        }
    }

    /// The report of the step under way.
    fn report(&mut self) -> Value {
        let line = self.lines.next().expect("the client reports the step");
        serde_json::from_str(&line.unwrap()).unwrap()
    }

    /// Begins the next step, and returns its report.
    fn next(&mut self) -> Value {
        std::io::Write::write_all(&mut self.stdin, b"\n").unwrap();
        self.report()
    }
}

/// The config `docs/fleet.md` gives every replica (its `toml` block under
/// "Configuration", word for word), serving `upstream` (the keys of a server table)
/// as `up`.
fn guide_config(dir: &Path, upstream: &str) -> PathBuf {
    let block = fleet_guide_block("## Configuration", "```toml");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!("{block}\n[mcp_servers.up]\n{upstream}required = true\n"),
    )
    .unwrap();
    config
}

#[test]
fn replicas_configured_as_the_guide_says_answer_the_load_balancers_host_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let config = guide_config(
        dir.path(),
        &fixture_upstream(&dir.path().join("up.jsonl"), &[]),
    );
    let url = redis.url();
    let env = [
        ("MCP_RUNTIME_REDIS_URL", url.as_str()),
        ("MCP_RUNTIME_FLEET_KEY", KEY),
        ("GATEWAY_TOKEN", "a gateway token"),
    ];
    // On every interface, as behind a load balancer on another machine.
    let gateways: Vec<_> = (0..2)
        .map(|_| {
            let (child, url) = gateway_on("0.0.0.0:0", &config, &env);
            (KillOnDrop(child), url)
        })
        .collect();
    let addresses: Vec<SocketAddr> = gateways
        .iter()
        .map(|(_, url)| SocketAddr::from(([127, 0, 0, 1], address(url).port())))
        .collect();
    let haproxy = Haproxy::start(dir.path(), &addresses);
    let post = |host: &str, token: Option<&str>, session: Option<&str>, body: &str| {
        post_as(&haproxy.url(), host, token, session, body)
    };

    // The name clients reach the load balancer by, and the token.
    let (status, headers) = post("mcp.example.com", Some("a gateway token"), None, INITIALIZE);
    assert!(status.ends_with("200 OK"), "{status}");
    let session = &session_id(&headers);
    let (status, _) = post(
        "mcp.example.com",
        Some("a gateway token"),
        Some(session),
        PING,
    );
    assert!(status.ends_with("200 OK"), "{status}");
    // Without the token, or by another name, nothing is served.
    let (status, _) = post("mcp.example.com", None, Some(session), PING);
    assert!(status.ends_with("401 Unauthorized"), "{status}");
    let (status, _) = post(
        "elsewhere.example.com",
        Some("a gateway token"),
        Some(session),
        PING,
    );
    assert!(status.ends_with("403 Forbidden"), "{status}");
}

/// `count` replicas of `config` sharing `redis`, behind haproxy (configured in `dir`).
fn behind_haproxy(
    dir: &Path,
    config: &Path,
    redis: &RedisServer,
    count: usize,
) -> (Vec<(KillOnDrop<Child>, String)>, Haproxy) {
    let gateways = replicas(config, redis, count);
    let addresses: Vec<_> = gateways.iter().map(|(_, url)| address(url)).collect();
    let haproxy = Haproxy::start(dir, &addresses);
    (gateways, haproxy)
}

#[test]
fn a_replica_killed_takes_its_servers_with_it_and_its_sessions_move_to_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let log = dir.path().join("up.jsonl");
    // The servers outlive a closed stdin: only the replica's death signal ends them.
    // Their `ask` asks the client a question.
    let upstream = fixture_upstream(&log, &["--ignore-stdin-eof", "--asks"]);
    let config = fleet_config(dir.path(), &upstream, 60);
    let (mut gateways, haproxy) = behind_haproxy(dir.path(), &config, &redis, 3);

    let mut client = Conversation::start(&["hold", &haproxy.url(), "6"]);
    let held = client.report();
    let pids: Vec<i32> = held["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pid| i32::try_from(pid.as_u64().unwrap()).unwrap())
        .collect();

    // The first replica's servers, and which sessions they serve.
    let victim = i32::try_from(gateways[0].0.0.id()).unwrap();
    let own = children(victim);
    let on_victim: Vec<bool> = pids.iter().map(|pid| own.contains(pid)).collect();
    assert_eq!(
        on_victim.iter().filter(|on| **on).count(),
        2,
        "round-robin puts two of six sessions on each replica: {pids:?} {own:?}"
    );
    let survivors: Vec<i32> = gateways[1..]
        .iter()
        .flat_map(|(child, _)| children(i32::try_from(child.0.id()).unwrap()))
        .collect();

    // SIGKILL, on Unix.
    gateways[0].0.0.kill().unwrap();
    gateways[0].0.0.wait().unwrap();
    for pid in &own {
        assert!(
            wait_for_exit(*pid, Duration::from_secs(10)),
            "the killed replica's server {pid} dies with it"
        );
    }
    assert!(
        survivors.iter().all(|pid| is_alive(*pid)),
        "the other replicas' servers live on"
    );

    let after = client.next();
    // The calls in flight on the killed replica fail, with a clear error; the
    // others' end as their questions are answered.
    let in_flight: Vec<&str> = after["in_flight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result.as_str().unwrap())
        .collect();
    for (result, on_victim) in in_flight.iter().zip(&on_victim) {
        if *on_victim {
            assert!(
                result.contains(
                    "this request's answer is lost: the gateway process that ran it is gone"
                ),
                "{after}"
            );
        } else {
            assert_eq!(*result, "ok", "{after}");
        }
    }
    // The killed replica's sessions are restored on the replica haproxy sends their
    // next request to, from what the fleet kept of them; the others carry on.
    assert_eq!(
        after["sessions"],
        serde_json::json!(vec!["ok"; 6]),
        "every session carries on: {after} (on the killed replica: {on_victim:?})"
    );
    // A restored session's server asks its questions on the session's listen stream,
    // which the client opened again on the replica it moved to.
    assert_eq!(
        after["asked"],
        serde_json::json!(vec!["ok"; 6]),
        "every session is asked its servers' questions: {after}"
    );
    assert!(
        after["sessionless"]
            .as_array()
            .unwrap()
            .iter()
            .all(|result| result == "ok"),
        "2026-07-28 clients are served by the replicas left: {after}"
    );
}

#[test]
fn redis_stopped_and_started_under_load_fails_no_call_and_healthz_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut redis = RedisServer::start(dir.path());
    let log = dir.path().join("up.jsonl");
    // The servers' `ask` asks the client a question, which the first sessions hold
    // unanswered while Redis goes away.
    let config = fleet_config(dir.path(), &fixture_upstream(&log, &["--asks"]), 60);
    let (gateways, haproxy) = behind_haproxy(dir.path(), &config, &redis, 3);

    let mut client = Conversation::start(&["outage", &haproxy.url(), "3"]);
    // Every call of a phase: `held`, `asked`, `opened`, `sessionless`, in that order.
    let calls = |report: &Value| -> Vec<String> {
        ["held", "asked", "opened", "sessionless"]
            .iter()
            .flat_map(|kind| report[kind].as_array().cloned().unwrap_or_default())
            .map(|call| call.as_str().unwrap().to_owned())
            .collect()
    };

    let before = client.report();
    assert_eq!(calls(&before), vec!["ok"; 6], "{before}");

    redis.stop();
    let without = client.next();
    // The sessions opened before, their calls in flight as Redis went, the sessions
    // opened and the 2026-07-28 clients served meanwhile: none needed Redis.
    assert_eq!(
        calls(&without),
        vec!["ok"; 12],
        "no call fails without Redis: {without}"
    );
    for (_, url) in &gateways {
        let health = health(url);
        assert_eq!(health["status"], "up", "{health}");
        assert_eq!(health["fleet"]["redis_reachable"], false, "{health}");
    }

    redis.resume();
    for (_, url) in &gateways {
        assert_eq!(health(url)["fleet"]["redis_reachable"], true);
    }
    let after = client.next();
    assert_eq!(
        calls(&after),
        vec!["ok"; 12],
        "the sessions of both times carry on, and new ones open: {after}"
    );
}

#[test]
fn a_tool_change_reaches_every_session_on_every_replica() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    // One server for every session of every replica, telling all of them of a change.
    let log = dir.path().join("up.jsonl");
    let upstream = http_fixture(&["--broadcast-tool-changes", "--log", log.to_str().unwrap()]);
    let config = fleet_config(dir.path(), &format!("url = {:?}\n", upstream.url), 60);
    let (_gateways, haproxy) = behind_haproxy(dir.path(), &config, &redis, 3);

    let mut client = python_client("serve_fleet_client.py");
    client.args(["changes", &haproxy.url(), "6", log.to_str().unwrap()]);
    let report = report_of(client, "changes");
    assert_eq!(
        report["before"],
        serde_json::json!(vec![false; 6]),
        "{report}"
    );
    assert_eq!(
        report["after"],
        serde_json::json!(vec![true; 6]),
        "every session on every replica: {report}"
    );
    // The replicas' burst windows (60 s) ended with the change: a session opened
    // afterwards, wherever it lands, lists the new tool.
    assert_eq!(report["new_session"], true, "{report}");
    assert_eq!(report["new_sessionless"], true, "{report}");
}

#[test]
fn a_retry_that_reaches_another_replica_is_resumed_by_the_one_that_keeps_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let log = dir.path().join("up.jsonl");
    // A handshake-era server that asks its client a question during `ask`.
    let config = fleet_config(dir.path(), &fixture_upstream(&log, &["--asks"]), 60);
    let gateways = replicas(&config, &redis, 3);
    let mut client = python_client("serve_fleet_client.py");
    client.args(["misrouted", &gateways[0].1, &gateways[1].1]);
    let report = report_of(client, "misrouted");
    assert_eq!(report["error"], serde_json::Value::Null, "{report}");
    assert_eq!(
        report["result"]["content"]["name"], "http client",
        "the server got the answer given on the other replica: {report}"
    );
    assert_eq!(
        report["progress"],
        serde_json::json!(["answered"]),
        "the progress reported after the answer came through the replica reached: {report}"
    );

    // The replica that keeps the call is killed before the retry: the retry fails
    // within a lease, saying so.
    let mut client = python_client("serve_fleet_client.py");
    let pid = gateways[0].0.0.id().to_string();
    client.args(["misrouted", &gateways[0].1, &gateways[2].1, &pid]);
    let report = report_of(client, "misrouted");
    let error = report["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        (error.contains("is gone") || error.contains("stopped answering"))
            && error.contains("call the tool again without the state"),
        "{report}"
    );
}

/// A fleet's config for the fixture upstream, with `line` added to its `[serve]`
/// table.
fn fleet_config_with(dir: &Path, line: &str) -> PathBuf {
    let log = dir.join("up.jsonl");
    let config = fleet_config(dir, &fixture_upstream(&log, &[]), 60);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("[serve]\n", &format!("[serve]\n{line}\n")),
    )
    .unwrap();
    config
}

/// The `moved` client's report on three replicas whose sessions end after a second
/// idle, the one at `killed` killed along the way; with `back`, the session is sent
/// back to the first replica before.
fn moved_report(killed: usize, back: bool) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(dir.path());
    let config = fleet_config_with(dir.path(), "session_idle_sec = 1");
    let gateways = replicas(&config, &redis, 3);
    let mut client = python_client("serve_fleet_client.py");
    let pid = gateways[killed].0.0.id().to_string();
    client.args([
        "moved",
        &gateways[0].1,
        &gateways[1].1,
        &gateways[2].1,
        &pid,
    ]);
    if back {
        client.arg("--back");
    }
    report_of(client, "moved")
}

#[test]
fn a_session_that_moved_is_kept_for_its_new_replica_when_its_old_one_ends_its_copy() {
    let report = moved_report(1, false);
    assert_eq!(
        report,
        serde_json::json!({"visits": ["ok", "ok"], "last": "ok"}),
        "the replica it left ended its copy without taking it from the fleet: {report}"
    );
}

#[test]
fn a_session_still_listened_to_on_its_first_replica_is_held_there_again() {
    // Idle after 4 s: each replica looks at its sessions every second, and the
    // first has 4 s to take the session back once it hears it moved, which a
    // loaded machine needs (2 s did not always suffice).
    let fleet = pair("session_idle_sec = 4");
    let mut client = python_client("serve_fleet_client.py");
    client.args(["listening", &fleet.first, &fleet.second]);
    let report = report_of(client, "listening");
    assert_eq!(
        report,
        serde_json::json!({"moved": 200, "later": 200}),
        "the first replica, whose listen stream was open, took the session back, so \
         the copy on the second ended idle without removing it from the fleet: {report}"
    );
}

#[test]
fn a_session_sent_back_to_its_first_replica_is_held_there_again() {
    let report = moved_report(0, true);
    assert_eq!(
        report,
        serde_json::json!({"visits": ["ok", "ok", "ok"], "last": "ok"}),
        "the copy left idle on the second replica did not take the session from the \
         fleet, and the third restored it once the first died: {report}"
    );
}

#[test]
fn a_session_restored_past_the_bound_is_refused_and_served_on_by_its_own_replica() {
    let fleet = pair("max_sessions = 1");
    let mut client = python_client("serve_fleet_client.py");
    client.args(["bounded", &fleet.first, &fleet.second]);
    let report = report_of(client, "bounded");
    assert_eq!(
        report["elsewhere"],
        serde_json::json!([503, "5"]),
        "a replica with its one session open restores no other: {report}"
    );
    assert_eq!(report["home"], 200, "{report}");
    // Ending it needs no room: it is not restored for that, and its own replica,
    // told, closes it.
    assert_eq!(report["ended_elsewhere"], 202, "{report}");
    assert_eq!(health(&fleet.second)["sessions"], 1);
    until_sessions(&fleet.first, 0);
}
