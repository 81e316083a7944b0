//! `mcp-runtime serve --listen`: the gateway over Streamable HTTP, driven by the
//! official Python SDK's clients of both eras, the TypeScript SDK's, the Inspector's
//! CLI and plain HTTP requests.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use mcp_runtime_fixtures::testing::{is_alive, wait_for_exit};

use crate::support::{cli, fixture_server, python_client, report_of};

/// The gateway, started on a free loopback port with `config`; its endpoint's URL.
pub(crate) fn gateway(config: &Path, env: &[(&str, &str)]) -> (Child, String) {
    gateway_on("0", config, env)
}

/// [`gateway`] listening on `listen` (an address, or a port on loopback).
pub(crate) fn gateway_on(listen: &str, config: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut command = cli();
    command
        .args(["serve", "--listen", listen, "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the first line names the URL: {line:?}"))
        .to_owned();
    (child, url)
}

fn python(args: &[&str]) -> Value {
    let mut client = python_client("serve_http_client.py");
    client.args(args);
    report_of(client, args[0])
}

/// A gateway that is killed if the test ends before it does.
pub(crate) struct KillOnDrop<C: std::borrow::BorrowMut<Child>>(pub(crate) C);

impl<C: std::borrow::BorrowMut<Child>> Drop for KillOnDrop<C> {
    fn drop(&mut self) {
        let child = self.0.borrow_mut();
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    // SAFETY: kill takes a pid and a signal; the child is ours and not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap()
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let config = dir.join("config.toml");
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn clients_of_both_eras_share_one_listing_behind_the_listeners_checks() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("up.jsonl");
    let slow_log = dir.path().join("slow.jsonl");
    let config = write_config(
        dir.path(),
        &format!(
            "[serve.auth]\nbearer_token_env_var = \"GATEWAY_TOKEN\"\n\n\
             [serve]\nmax_request_bytes = 1048576\n\n\
             [mcp_servers.up]\ncommand = {fixture:?}\n\
             args = [\"--asks\", \"--progress-steps\", \"2\", \"--discover-delay-ms\", \"500\", \"--init-delay-ms\", \"500\", \"--log\", {log:?}]\n\n\
             [mcp_servers.down]\ncommand = \"/nonexistent/server\"\n\n\
             [mcp_servers.slow]\ncommand = {fixture:?}\n\
             args = [\"--call-delay-ms\", \"600000\", \"--log\", {slow:?}]\n",
            fixture = fixture_server().to_str().unwrap(),
            log = log.to_str().unwrap(),
            slow = slow_log.to_str().unwrap(),
        ),
    );
    let token = "gateway-token-4f1c2a";
    let (mut child, url) = gateway(&config, &[("GATEWAY_TOKEN", token)]);
    // Killed when the test fails early, so the gateway never outlives it.
    let guard = KillOnDrop(&mut child);
    let report = python(&[
        "clients",
        &url,
        token,
        log.to_str().unwrap(),
        slow_log.to_str().unwrap(),
    ]);

    let refusals = &report["refusals"];
    assert_eq!(
        refusals["no_token"],
        json!([401, "Bearer realm=\"mcp-runtime\""])
    );
    assert_eq!(
        refusals["wrong_token"],
        json!([401, "Bearer realm=\"mcp-runtime\", error=\"invalid_token\""])
    );
    assert_eq!(refusals["health_no_token"], 401);
    assert_eq!(refusals["foreign_origin"], 403, "{refusals}");
    assert_eq!(refusals["loopback_origin"], 200, "{refusals}");
    assert_eq!(refusals["foreign_host"], 403, "{refusals}");
    assert!(
        [json!(413), json!("closed")].contains(&refusals["oversized"]),
        "{refusals}"
    );
    assert_eq!(refusals["other_path"], 404);
    assert_eq!(refusals["health"]["status"], "up", "{refusals}");

    assert_eq!(
        report["cancelled"],
        json!([true, true]),
        "a cancelled call is cancelled upstream, in both eras"
    );

    let sessions = report["sessions"].as_object().unwrap();
    assert_eq!(sessions.len(), 9);
    let mut pids = Vec::new();
    for (key, seen) in sessions {
        let tools = seen["tools"].as_array().unwrap();
        assert!(tools.contains(&json!("mcp__up__echo")), "{key}: {tools:?}");
        assert_eq!(seen["echo"], json!({"text": "hi"}), "{key}");
        assert_eq!(
            seen["progress"],
            json!([[1.0, 2.0], [2.0, 2.0]]),
            "{key}: the server's progress under the client's token"
        );
        assert_eq!(seen["down_is_error"], true, "{key}");
        assert!(
            seen["down_text"].as_str().unwrap().contains("down"),
            "{key}: {seen}"
        );
        assert_eq!(
            seen["asked"],
            json!({"action": "accept", "content": {"name": "http client", "count": 2}}),
            "{key}: the server's question went to this client, and came back answered"
        );
        pids.push(seen["pid"].as_i64().unwrap() as i32);
    }
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(
        pids.len(),
        9,
        "each session has its own server process: {pids:?}"
    );
    // The server takes half a second to answer its first request, so the nine sessions'
    // startups overlap, as a burst of sessions' do with a server of any real weight.
    // A listing is shared by startups that offer the server the same: every client
    // here answers elicitation, the handshake sessions when asked, the sessionless
    // one through its calls' answers, so the nine offer the same.
    assert_eq!(
        report["listings_of_burst"], 1,
        "nine sessions, one listing of the upstream"
    );
    let text = std::fs::read_to_string(dir.path().join("up.jsonl")).unwrap();
    assert!(
        !text.contains(token),
        "the client's token never goes upstream"
    );

    let status = terminate(&mut *guard.0);
    assert!(status.success(), "a drained shutdown exits 0: {status:?}");
    for pid in pids {
        assert!(
            wait_for_exit(pid, Duration::from_secs(10)),
            "server process {pid} ended with the gateway"
        );
    }
}

/// Sessions that open one after another within `listing_burst_sec` are one burst:
/// the first session's server lists its tools, the later ones' servers (each its own
/// process) take that listing. With `listing_burst_sec = 0` each asks its own.
#[test]
fn sessions_opened_within_the_burst_window_cost_one_listing() {
    for (window, listings) in [("60", 1), ("0", 3)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("up.jsonl");
        let config = write_config(
            dir.path(),
            &format!(
                "[serve]\nlisting_burst_sec = {window}\n\n\
                 [mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--log\", {log:?}]\n\
                 required = true\n",
                fixture = fixture_server().to_str().unwrap(),
                log = log.to_str().unwrap(),
            ),
        );
        let (mut child, url) = gateway(&config, &[]);
        let guard = KillOnDrop(&mut child);
        let report = python(&["one_after_another", &url, log.to_str().unwrap()]);
        let pids = report["pids"].as_array().unwrap();
        assert_eq!(
            pids.iter()
                .map(|pid| pid.as_u64().unwrap())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            3,
            "each session has its own server: {report}"
        );
        assert_eq!(report["listings"], listings, "window {window}: {report}");
        assert!(terminate(&mut *guard.0).success());
    }
}

#[test]
fn python_sdk_clients_find_tools_in_search_mode_over_http_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::serve::search_config(dir.path());
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    for mode in ["legacy", "2026-07-28"] {
        let mut client = python_client("serve_search_client.py");
        client.args([mode, url.as_str()]);
        crate::serve::assert_search_report(mode, &report_of(client, mode));
    }
    // A second session's list is its own: it starts without what the first found.
    let mut client = python_client("serve_search_client.py");
    client.args(["legacy", url.as_str()]);
    crate::serve::assert_search_report("legacy", &report_of(client, "legacy"));
    assert!(terminate(&mut *guard.0).success());
}

#[test]
fn sessions_past_the_bound_are_refused_and_idle_ones_end_with_their_servers() {
    let dir = tempfile::tempdir().unwrap();
    let ended = dir.path().join("ended");
    let config = write_config(
        dir.path(),
        &format!(
            "[serve]\nmax_sessions = 2\nsession_idle_sec = 1\n\n\
             [mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--ended-note\", {ended:?}]\n",
            fixture = fixture_server().to_str().unwrap(),
            ended = ended.to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["limits", &url]);
    assert_eq!(report["third"], json!([503, "5"]), "{report}");
    assert_eq!(report["first_still_served"], true, "{report}");
    assert_eq!(report["idle_sessions_ended"], true, "{report}");
    // Shut down, not killed: each server saw its input end and stopped by itself.
    let noted = std::fs::read_to_string(&ended).unwrap_or_default();
    let pids = report["pids"].as_array().unwrap();
    assert_eq!(pids.len(), 2, "{report}");
    for pid in pids {
        assert!(
            noted
                .lines()
                .any(|line| line.parse::<u64>().ok() == pid.as_u64()),
            "{pid} in {noted:?}"
        );
    }
    assert!(report["after"].as_u64().unwrap() > 0, "{report}");
    assert!(terminate(&mut *guard.0).success());
}

/// Sessionless (2026-07-28) clients are bounded by `max_sessions` too: each client
/// key past the bound is refused, saying why, and the others go on.
#[test]
fn sessionless_clients_past_the_bound_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[serve]\nmax_sessions = 2\n\n[mcp_servers.up]\ncommand = {fixture:?}\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["sessionless_bound", &url]);
    let report = report.as_array().expect("one entry per client");
    assert!(report[0].as_u64().unwrap() > 0, "{report:?}");
    assert_eq!(report[1], report[0], "{report:?}");
    let refused = report[2].as_str().expect("the third is refused");
    assert!(refused.contains("max_sessions"), "{refused}");
    assert!(terminate(&mut *guard.0).success());
}

/// A fault-matrix row of the gateway: a thousand sessions opened and abandoned, and a
/// few more whose servers started, are all reclaimed once idle, their processes with
/// them (the wait is bounded by the script).
#[test]
fn a_thousand_abandoned_sessions_are_all_reclaimed_with_their_servers() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[serve]\nmax_sessions = 2000\nsession_idle_sec = 1\n\n\
             [mcp_servers.up]\ncommand = {fixture:?}\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["abandon", &url, "1000", "5"]);
    assert_eq!(report["opened"], 1000, "{report}");
    assert!(
        report["sessions_counted_while_open"].as_u64().unwrap() >= 1,
        "{report}"
    );
    assert_eq!(report["reclaimed"]["sessions"], 0, "{report}");
    assert_eq!(report["servers_left"], 0, "{report}");
    assert!(terminate(&mut *guard.0).success());
}

/// A fault-matrix row of the gateway: one session's server exits mid-call; that call
/// fails with the runtime's message, and another session's calls go on, on their own
/// server.
#[test]
fn one_sessions_server_crashing_mid_call_fails_only_that_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--crash-tool\"]\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["crash", &url]);
    assert_eq!(report["crashed"]["is_error"], true, "{report}");
    let text = report["crashed"]["text"].as_str().unwrap();
    assert!(
        text.contains("up"),
        "the runtime's message names the server: {text}"
    );
    assert_eq!(
        report["echoes"],
        json!((0..20).collect::<Vec<_>>()),
        "{report}"
    );
    assert_eq!(report["steady_server_kept"], true, "{report}");
    assert!(terminate(&mut *guard.0).success());
}

/// Servers with `connections = "shared"`: one process each serves every client,
/// beside a server each client has its own of; each question a shared server asks
/// goes to the client whose call asks it, for a handshake-era server asking one
/// call at a time and for a 2026-07-28 server asking inside calls made at once.
#[test]
fn shared_connections_serve_every_client_and_ask_only_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_server();
    let fixture = fixture.to_str().unwrap();
    let noted = dir.path().join("sigterm");
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.one]\ncommand = {fixture:?}\n\
             args = [\"--asks\", \"--ignore-stdin-eof\", \"--sigterm-note\", {noted:?}]\n\
             connections = \"shared\"\n\
             [mcp_servers.new]\ncommand = {fixture:?}\nargs = [\"--asks\", \"--era\", \"stateless\"]\n\
             connections = \"shared\"\n\
             [mcp_servers.own]\ncommand = {fixture:?}\n",
            noted = noted.to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["shared", &url]);
    let tools = report["tools"].as_array().unwrap();
    for listed in tools {
        assert_eq!(
            listed, &tools[0],
            "every client lists the same tools: {report}"
        );
        for name in ["mcp__one__ask", "mcp__new__ask", "mcp__own__pid"] {
            assert!(
                listed.as_array().unwrap().contains(&json!(name)),
                "{name}: {report}"
            );
        }
    }
    for server in ["one", "new"] {
        let pids = report[format!("{server}_pids")].as_array().unwrap();
        assert!(
            pids.iter().all(|pid| pid == &pids[0]),
            "one `{server}` process serves every client: {report}"
        );
    }
    let own: std::collections::BTreeSet<u64> = report["own_pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(own.len(), 3, "each client has its own `own`: {report}");
    let callers = json!(["first", "second", "sessionless"]);
    assert_eq!(report["one_asked"], callers, "{report}");
    assert_eq!(report["new_asked"], callers, "{report}");
    assert_eq!(
        report["health_servers"],
        json!({"one": {"ready": 1}, "new": {"ready": 1}, "own": {"ready": 3}}),
        "{report}"
    );
    assert!(terminate(&mut *guard.0).success());
    // The shared server, which outlives its input, was shut down with the gateway,
    // not killed: it got its grace period's SIGTERM.
    let one = report["one_pids"][0].as_i64().unwrap() as i32;
    assert!(!is_alive(one), "{report}");
    assert_eq!(
        std::fs::read_to_string(&noted).unwrap_or_default(),
        format!("{one}\n"),
        "{report}"
    );
}

/// A server that asks before it answers `resources/read`, in either era: the
/// question reaches the reading client, as a request of the gateway's own for a
/// handshake-era client and in an input-required answer for a 2026-07-28 one.
#[test]
fn a_resource_whose_server_asks_first_is_read_by_clients_of_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    for era in ["handshake", "dual"] {
        let config = write_config(
            dir.path(),
            &format!(
                "[mcp_servers.up]\ncommand = {fixture:?}\n\
                 args = [\"--resources\", \"--asking-resource\", \"--era\", {era:?}]\n",
                fixture = fixture_server().to_str().unwrap(),
            ),
        );
        let (mut child, url) = gateway(&config, &[]);
        let guard = KillOnDrop(&mut child);
        let report = python(&["read_asking", &url]);
        let answered = json!({"action": "accept", "content": {"name": "http client", "count": 2}});
        for mode in ["legacy", "2026-07-28"] {
            let texts = report[mode].as_array().expect("the texts read");
            let read: Vec<Value> = texts
                .iter()
                .map(|text| serde_json::from_str(text.as_str().unwrap()).unwrap())
                .collect();
            assert_eq!(
                read,
                std::slice::from_ref(&answered),
                "{era} {mode}: {report}"
            );
        }
        assert!(terminate(&mut *guard.0).success());
    }
}

/// A handshake session that never opens a listen stream is asked its servers'
/// questions on the event stream of the request each belongs to: a call's, a read's.
#[test]
fn a_question_goes_on_the_stream_of_the_request_it_belongs_to() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.up]\ncommand = {fixture:?}\n\
             args = [\"--asks\", \"--resources\", \"--asking-resource\"]\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["unlistened", &url]);
    let answered = json!({"action": "accept", "content": {"name": "unlistened", "count": 1}});
    assert_eq!(
        report["call"]["came"],
        json!(["elicitation/create"]),
        "{report}"
    );
    assert_eq!(
        report["call"]["result"]["structuredContent"], answered,
        "{report}"
    );
    assert_eq!(
        report["read"]["came"],
        json!(["elicitation/create"]),
        "{report}"
    );
    let text = report["read"]["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        answered,
        "{report}"
    );
    assert!(terminate(&mut *guard.0).success());
}

/// A call's broken stream is resumed where it runs; once its answer went, or when it
/// ran in another process, its resumption ends with the call's error, under its id.
#[test]
fn a_broken_call_stream_is_resumed_or_ended_with_the_calls_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--asks\"]\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["resumed", &url]);
    assert_eq!(report["tags_alike"], true, "{report}");
    assert_eq!(report["tags_alike_after_resuming"], true, "{report}");
    assert_eq!(report["resumed"]["id"], "call-1", "{report}");
    assert_eq!(
        report["resumed"]["result"]["structuredContent"],
        json!({"action": "accept", "content": {"name": "resumed", "count": 1}}),
        "{report}"
    );
    for (case, why) in [
        (
            "late",
            "its stream ended here before the client read it all",
        ),
        ("foreign", "the gateway process that ran it is gone"),
    ] {
        let ended = &report[case];
        assert_eq!(ended.as_array().map(Vec::len), Some(1), "{case}: {report}");
        assert_eq!(ended[0]["id"], "call-1", "{case}: {report}");
        let message = ended[0]["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("this request's answer is lost: {why}")),
            "{case}: {report}"
        );
    }
    assert!(terminate(&mut *guard.0).success());
}

/// A shared server's resource: each session hears the updates of its own
/// subscriptions only, and the server is subscribed while any session is.
#[test]
fn a_shared_servers_resource_updates_reach_only_the_sessions_subscribed() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.one]\ncommand = {fixture:?}\nargs = [\"--resources\"]\n\
             connections = \"shared\"\n",
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let (mut child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(&mut child);
    let report = python(&["subscriptions", &url]);
    assert_eq!(report["first_subscribed"], json!([1, 0]), "{report}");
    assert_eq!(report["second_subscribed"], json!([1, 1]), "{report}");
    assert_eq!(report["none_subscribed"], json!([1, 1]), "{report}");
    assert!(terminate(&mut *guard.0).success());
}

#[test]
fn a_listener_others_can_reach_refuses_to_start_without_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.up]\ncommand = {:?}\n",
            fixture_server().to_str().unwrap()
        ),
    );
    let output = cli()
        .args(["serve", "--listen", "0.0.0.0:0", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without authentication")
            && stderr.contains("bearer_token_env_var"),
        "{stderr}"
    );
}

/// A config of `up` (the fixture with `--asks` and two progress steps) for the
/// clients of other SDKs.
fn up_config(dir: &Path, auth: bool) -> PathBuf {
    let auth = if auth {
        "[serve.auth]\nbearer_token_env_var = \"GATEWAY_TOKEN\"\n\n"
    } else {
        ""
    };
    write_config(
        dir,
        &format!(
            "{auth}[mcp_servers.up]\ncommand = {:?}\nargs = [\"--asks\", \"--progress-steps\", \"2\", \"--progress-interval-ms\", \"50\"]\n",
            fixture_server().to_str().unwrap()
        ),
    )
}

fn ts_client(args: &[&str]) -> Value {
    let mut client = std::process::Command::new("node");
    client
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_ts_client.mjs"))
        .args(args);
    report_of(client, args[0])
}

/// Takes out the progress the TypeScript client saw: both reports. The SDK (1.32.2)
/// runs a notification's handler in a later microtask (`Protocol._onnotification`,
/// `shared/protocol.js`) and a response at once, so a report it reads together with
/// the result is dropped as one for an unknown token; the server here waits a little
/// after each report, as a server reporting real work does.
fn assert_progress(seen: &mut Value) {
    let progress = seen.as_object_mut().unwrap().remove("progress").unwrap();
    // JavaScript writes whole numbers without a fraction.
    assert_eq!(progress, json!([[1, 2], [2, 2]]));
}

#[test]
fn the_typescript_sdk_client_lists_calls_and_answers_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let expected = json!({
        "echo": {"text": "ts"},
        "asked": {"action": "accept", "content": {"name": "ts client", "count": 5}},
    });
    let config = up_config(dir.path(), false);
    let mut seen = ts_client(&[
        "stdio",
        env!("CARGO_BIN_EXE_mcp-runtime"),
        config.to_str().unwrap(),
    ]);
    let tools = seen.as_object_mut().unwrap().remove("tools").unwrap();
    assert!(tools.as_array().unwrap().contains(&json!("mcp__up__echo")));
    assert_progress(&mut seen);
    assert_eq!(seen, expected, "stdio");

    let config = up_config(dir.path(), true);
    let token = "ts-gateway-token";
    let (mut child, url) = gateway(&config, &[("GATEWAY_TOKEN", token)]);
    let guard = KillOnDrop(&mut child);
    let mut seen = ts_client(&["http", &url, token]);
    seen.as_object_mut().unwrap().remove("tools");
    assert_progress(&mut seen);
    assert_eq!(seen, expected, "http");
    assert!(terminate(&mut *guard.0).success());
}

/// The Inspector's CLI, run from its own folder: it finds its `package.json` from the
/// working directory.
fn inspector(args: &[&str]) -> Value {
    let build = mcp_runtime_fixtures::testing::peers_dir()
        .join("node_modules/@modelcontextprotocol/inspector-cli/build");
    let mut client = std::process::Command::new("node");
    client
        .arg(build.join("index.js"))
        .args(args)
        .current_dir(&build);
    report_of(client, "inspector")
}

#[test]
fn the_inspector_cli_lists_and_calls_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = up_config(dir.path(), true);
    let binary = env!("CARGO_BIN_EXE_mcp-runtime");
    let listed = inspector(&[
        binary,
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--method",
        "tools/list",
    ]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__up__echo"), "{names:?}");
    let call = |target: &[&str]| {
        let mut args = target.to_vec();
        args.extend(["--method", "tools/call", "--tool-name", "mcp__up__echo"]);
        args.extend(["--tool-arg", "text=inspected"]);
        inspector(&args)
    };
    let called = call(&[binary, "serve", "--config", config.to_str().unwrap()]);
    assert_eq!(called["structuredContent"], json!({"text": "inspected"}));

    let token = "inspector-gateway-token";
    let (mut child, url) = gateway(&config, &[("GATEWAY_TOKEN", token)]);
    let guard = KillOnDrop(&mut child);
    let header = format!("Authorization: Bearer {token}");
    let called = call(&[&url, "--transport", "http", "--header", &header]);
    assert_eq!(called["structuredContent"], json!({"text": "inspected"}));
    assert!(terminate(&mut *guard.0).success());
}

#[test]
fn an_oauth_resource_server_admits_only_its_issuers_tokens_for_this_resource() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = python_client("serve_oauth_client.py");
    client
        .arg(env!("CARGO_BIN_EXE_mcp-runtime"))
        .arg(fixture_server())
        .arg(dir.path());
    let report = report_of(client, "the OAuth resource server's run");

    let metadata = "https://gateway.example/.well-known/oauth-protected-resource/mcp";
    assert_eq!(report["metadata"][0], 200, "{report}");
    let document = &report["metadata"][1];
    assert_eq!(document["resource"], "https://gateway.example/mcp");
    assert_eq!(document["scopes_supported"], json!(["mcp"]));
    assert!(
        document["authorization_servers"][0]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );

    let refused = report["refused"].as_object().unwrap();
    assert_eq!(
        refused["none"],
        json!([
            401,
            format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\"")
        ])
    );
    for (name, seen) in refused {
        let challenge = seen[1].as_str().unwrap_or_default();
        assert!(challenge.contains(metadata), "{name}: {seen}");
        match name.as_str() {
            "none" => {}
            "no_scope" => {
                assert_eq!(seen[0], 403, "{name}: {seen}");
                assert!(
                    challenge.contains("error=\"insufficient_scope\""),
                    "{name}: {seen}"
                );
            }
            _ => {
                assert_eq!(seen[0], 401, "{name}: {seen}");
                assert!(
                    challenge.contains("error=\"invalid_token\""),
                    "{name}: {seen}"
                );
            }
        }
    }
    assert_eq!(report["health"], 200);
    for (mode, seen) in report["clients"].as_object().unwrap() {
        assert_eq!(
            seen,
            &json!({"tools": true, "echo": {"text": "hi"}}),
            "{mode}"
        );
    }
    assert_eq!(
        report["session"],
        json!({"opened": 200, "other_principal": 404, "owner": 200}),
        "a session is its opener's"
    );
    // Once, at the first token: a token naming a key the set lacks, so soon after,
    // does not make the gateway fetch again.
    assert_eq!(report["jwks_fetches"], 1, "{report}");
    assert_eq!(report["token_in_log"], false, "no token is logged");
    assert_eq!(report["exit"], 0);
}
