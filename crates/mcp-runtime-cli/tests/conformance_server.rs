//! The official MCP conformance suite's server scenarios, run against the reference
//! server (`conformance-server`, in the fixture crate) directly and through
//! `mcp-runtime serve --listen` with the reference server as its stdio upstream.
//!
//! Each test runs one requirement set through `scripts/conformance server
//! --requirements REV` (the scenarios a revision requires, at its wire) against one
//! endpoint, with that run's baseline of what fails today
//! (`tests/conformance/RUN-REV.yaml`, each entry with its reason), and passes when
//! the suite's exit status is 0. Whatever the suite said is printed when it is not.
//! `scripts/conformance-server-table` runs every server scenario the same three ways,
//! one at a time, for a table of what passes and why not.
//!
//! Invariants:
//! 1. Every scored server scenario of `2025-11-25` and of `2026-07-28` runs three
//!    ways: against the reference server directly; through the gateway, the
//!    reference server its upstream; and through the gateway with the reference
//!    server as a pre-2026 upstream (`--handshake-only`), whose questions the gateway
//!    has to turn into input-required results for a 2026-07-28 client.
//! 2. A run passes exactly when what fails is what its baseline lists: a scenario (or
//!    check) that fails unlisted fails the test, and so does a listed one that passes
//!    (the suite calls the entry stale), so a baseline never keeps a fixed failure. A
//!    warning counts as a failure. Scenarios the requirement set does not score (the
//!    tasks extension, pending ones) run but do not count.
//! 3. The direct runs' baselines are empty: the reference server passes every scored
//!    scenario, so what fails through the gateway is the gateway's (or the reference
//!    server's in a way the direct runs do not reach, which its baseline entry says).
//! 4. Every process a test starts is gone when it ends: the reference server and the
//!    gateway are killed if the test fails early, and a gateway is stopped with
//!    `SIGTERM` after its run, before the verdict, and its upstream servers must end
//!    with it.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::Duration,
};

use mcp_runtime_fixtures::testing::{assert_all_gone, children, wait_for_exit};

use crate::{
    serve_http::{KillOnDrop, gateway},
    support::{fixture_binary, repo, stderr, stdout},
};

/// How the reference server runs behind the gateway.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    /// Both eras, as it runs directly.
    BothEras,
    /// The handshake revisions only (`--handshake-only`): a pre-2026 server.
    HandshakeOnly,
}

/// The checked-in baseline of run `name` (`direct-2025-11-25`, …).
fn baseline(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(format!("{name}.yaml"))
}

/// The suite's requirement run `revision` against `url`, judged by `baseline`.
fn run_requirements(url: &str, revision: &str, baseline: &Path) -> Output {
    Command::new(repo().join("scripts/conformance"))
        .args(["server", "--url", url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(baseline)
        .current_dir(repo())
        .stdin(Stdio::null())
        .output()
        .expect("scripts/conformance runs (bash is required)")
}

/// Fails with the suite's report unless `output`, the run `name`, passed (invariant
/// 2).
fn assert_run_passes(name: &str, output: &Output) {
    assert!(
        output.status.success(),
        "conformance run `{name}` did not match its baseline {} ({}); the suite said:\n\
         --- stdout\n{}\n--- stderr\n{}",
        baseline(name).display(),
        output.status,
        stdout(output),
        stderr(output),
    );
}

/// The reference server on a free loopback port, killed on drop; its URL.
fn reference_server() -> (KillOnDrop<Child>, String) {
    let mut child = Command::new(fixture_binary("conformance-server"))
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the first line names the URL: {line:?}"))
        .to_owned();
    (KillOnDrop(child), url)
}

/// Runs `revision`'s requirement set against the reference server itself.
fn direct(revision: &str) {
    let name = format!("direct-{revision}");
    let (_server, url) = reference_server();
    let output = run_requirements(&url, revision, &baseline(&name));
    assert_run_passes(&name, &output);
}

/// Runs `revision`'s requirement set through the gateway, the reference server its
/// stdio upstream as `upstream` says; then stops the gateway and checks that its
/// upstream servers ended with it (invariant 4).
fn through_the_gateway(upstream: Upstream, revision: &str) {
    let (name, args) = match upstream {
        Upstream::BothEras => (format!("gateway-{revision}"), r#"["--stdio"]"#),
        Upstream::HandshakeOnly => (
            format!("gateway-handshake-only-{revision}"),
            r#"["--stdio", "--handshake-only"]"#,
        ),
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    // Tools under their own names: the scenarios call them so.
    std::fs::write(
        &config,
        format!(
            "[serve]\ntool_names = \"original\"\n\n\
             [mcp_servers.conformance]\ncommand = {server:?}\nargs = {args}\n",
            server = fixture_binary("conformance-server").to_str().unwrap(),
        ),
    )
    .unwrap();
    let (child, url) = gateway(&config, &[]);
    let guard = KillOnDrop(child);
    let output = run_requirements(&url, revision, &baseline(&name));

    let pid = guard.0.id() as i32;
    let upstreams = children(pid);
    assert!(
        !upstreams.is_empty(),
        "the gateway has no upstream server left to stop: the run reached none"
    );
    // SAFETY: kill takes a pid and a signal; the child is ours and not yet reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(
        wait_for_exit(pid, Duration::from_secs(30)),
        "the gateway did not stop within 30s of SIGTERM"
    );
    // Each stdio server is the leader of a process group of its own.
    for upstream in upstreams {
        assert_all_gone(upstream, &[]);
    }
    assert_run_passes(&name, &output);
}

#[test]
fn the_reference_server_passes_every_scored_scenario_at_2025_11_25() {
    direct("2025-11-25");
}

#[test]
fn the_reference_server_passes_every_scored_scenario_at_2026_07_28() {
    direct("2026-07-28");
}

#[test]
fn through_the_gateway_only_the_baseline_fails_at_2025_11_25() {
    through_the_gateway(Upstream::BothEras, "2025-11-25");
}

#[test]
fn through_the_gateway_only_the_baseline_fails_at_2026_07_28() {
    through_the_gateway(Upstream::BothEras, "2026-07-28");
}

#[test]
fn before_a_handshake_only_server_only_the_baseline_fails_at_2025_11_25() {
    through_the_gateway(Upstream::HandshakeOnly, "2025-11-25");
}

#[test]
fn before_a_handshake_only_server_only_the_baseline_fails_at_2026_07_28() {
    through_the_gateway(Upstream::HandshakeOnly, "2026-07-28");
}

/// Invariant 2: a baseline that lists a scenario that passes (`ping`, against the
/// reference server) fails the run, naming the entry.
#[test]
fn a_baseline_entry_that_passes_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("stale.yaml");
    std::fs::write(&stale, "server:\n  - ping\n").unwrap();
    let (_server, url) = reference_server();
    let output = run_requirements(&url, "2025-11-25", &stale);
    let report = stdout(&output);
    assert!(
        !output.status.success(),
        "the suite passed a run whose baseline lists a passing scenario:\n{report}"
    );
    assert!(
        report.contains("Stale baseline entries") && report.contains("✓ ping"),
        "the failure should be the stale entry `ping`:\n{report}"
    );
}
