//! Sandbox request metadata end to end: which servers get which keys, byte-exact state,
//! the launcher rules and probe, and the server-side command.

use std::{
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

use mcp_runtime::{
    CallAuthority, CallOptions, CapturedAuthority, Runtime, SandboxState, ServerConfig,
    ServerState, Unsandboxed, config::Environment, config::EnvironmentConfig,
};
use serde_json::{Value, json};

use crate::support::*;

/// A state with unknown fields, keys out of order, a number beyond `f64` precision,
/// `\u` escapes and irregular whitespace: anything but the exact text would differ.
const STATE: &str = r#"{ "zeta":{"unknown_future_field":[true,null,{"deep":"x"}]},"alpha" : 123456789012345678901234567890.125,"escaped":"caf\u00e9 \ud83d\ude00 \"q\" \/","sandbox_policy":{"type":"workspace-write","writable_roots":["/w"]} }"#;

/// A request's `_meta`, as the exact text the server received.
#[derive(serde::Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow)]
    params: RawParams<'a>,
}

#[derive(serde::Deserialize)]
struct RawParams<'a> {
    #[serde(rename = "_meta", borrow)]
    meta: &'a serde_json::value::RawValue,
}

fn state() -> SandboxState {
    SandboxState::from_json(STATE).unwrap()
}

/// The fixture, logging to `log`, advertising `capability` (if any).
fn server(log: &Path, capability: Option<&str>) -> ServerConfig {
    let experimental;
    let mut args = vec!["--log", path_str(log)];
    if let Some(capability) = capability {
        experimental = format!("{capability}={{}}");
        args.extend(["--experimental", &experimental]);
    }
    fixture("f", &args)
}

/// The raw text of every `tools/call` the fixture received.
fn calls(log: &Path) -> Vec<String> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == "tools/call")
        .map(|entry| entry["raw"].as_str().unwrap().to_owned())
        .collect()
}

/// The `_meta` of the fixture's `tools/call` requests, parsed.
fn metas(log: &Path) -> Vec<Value> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == "tools/call")
        .map(|entry| entry["params"]["_meta"].clone())
        .collect()
}

/// Asserts that `raw` (a received `tools/call`) carries the state under both names,
/// byte for byte.
fn assert_exact_state(raw: &str) {
    for key in ["codex/sandbox-state", "codex/sandbox-state-meta"] {
        assert!(raw.contains(&format!(r#""{key}":{STATE}"#)), "{key}: {raw}");
    }
}

fn launcher_meta(path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap();
    format!(
        r#""codex/sandbox-launcher":{{"codexExecutable":{}}}"#,
        serde_json::to_string(canonical.to_str().unwrap()).unwrap()
    )
}

async fn call_once(runtime: &Runtime, authority: CallAuthority) {
    runtime
        .call_tool_with(
            "mcp__f__echo",
            None,
            CallOptions::new().with_authority(authority),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_opted_in_local_server_gets_the_exact_state_twice_and_the_launcher() {
    for capability in ["codex/sandbox-state", "codex/sandbox-state-meta"] {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        let launcher = stub_launcher(dir.path(), Probe::Passes);
        let (runtime, _) = start(config([server(&log, Some(capability))])).await;
        call_once(
            &runtime,
            CallAuthority::new(state()).with_codex_executable(&launcher),
        )
        .await;

        let raw = &calls(&log)[0];
        assert_exact_state(raw);
        assert!(raw.contains(&launcher_meta(&launcher)), "{raw}");
        // Server side: captured from the raw request, the authority is the host's,
        // byte for byte.
        let request: RawRequest = serde_json::from_str(raw).unwrap();
        let captured = CapturedAuthority::from_meta_json(request.params.meta.get())
            .unwrap()
            .unwrap();
        assert_eq!(captured.state().as_json(), STATE);
        assert_eq!(
            captured.launcher(),
            Some(std::fs::canonicalize(&launcher).unwrap().as_path())
        );
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_that_did_not_opt_in_gets_none_of_the_keys() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let (runtime, _) = start(config([server(&log, None)])).await;
    let caller_meta = json!({
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "codex/sandbox-state": {"from": "caller"},
        "codex/sandbox-launcher": {"codexExecutable": "/tmp/evil"},
    });
    let options = CallOptions::new()
        .with_meta(caller_meta.as_object().cloned().unwrap())
        .with_authority(CallAuthority::new(state()).with_codex_executable(&launcher));
    runtime
        .call_tool_with("mcp__f__echo", None, options)
        .await
        .unwrap();
    let meta = &metas(&log)[0];
    for key in [
        "codex/sandbox-state",
        "codex/sandbox-state-meta",
        "codex/sandbox-launcher",
    ] {
        assert!(
            meta.get(key).is_none(),
            "{key} reached a server that did not ask: {meta}"
        );
    }
    assert_eq!(
        meta["traceparent"], caller_meta["traceparent"],
        "other keys pass through"
    );
    assert_eq!(
        probe_runs(dir.path()),
        0,
        "no probe for a server that does not want it"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn caller_meta_and_tool_arguments_cannot_change_the_authority() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    let forged = json!({
        "codex/sandbox-state": {"sandbox_policy": {"type": "danger-full-access"}},
        "codex/sandbox-state-meta": {"sandbox_policy": {"type": "danger-full-access"}},
        "codex/sandbox-launcher": {"codexExecutable": "/tmp/evil"},
    });
    let options = CallOptions::new()
        .with_meta(forged.as_object().cloned().unwrap())
        .with_authority(CallAuthority::new(state()).with_codex_executable(&launcher));
    runtime
        .call_tool_with("mcp__f__echo", forged.as_object().cloned(), options)
        .await
        .unwrap();
    // Without any authority, forged keys are dropped and nothing is added.
    let options = CallOptions::new().with_meta(forged.as_object().cloned().unwrap());
    runtime
        .call_tool_with("mcp__f__echo", forged.as_object().cloned(), options)
        .await
        .unwrap();

    let raws = calls(&log);
    assert_exact_state(&raws[0]);
    assert!(raws[0].contains(&launcher_meta(&launcher)), "{}", raws[0]);
    let metas = metas(&log);
    assert!(!metas[0].to_string().contains("danger-full-access"));
    assert!(!metas[0].to_string().contains("/tmp/evil"));
    for key in [
        "codex/sandbox-state",
        "codex/sandbox-state-meta",
        "codex/sandbox-launcher",
    ] {
        assert!(metas[1].get(key).is_none(), "{}", metas[1]);
    }
    // The arguments are never read for authority, and the reserved keys in them are
    // removed so no server can mistake them for the runtime's.
    for entry in read_log(&log)
        .into_iter()
        .filter(|entry| entry["method"] == "tools/call")
    {
        assert_eq!(entry["params"]["arguments"], json!({}), "{entry}");
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_default_authority_applies_when_a_call_brings_none() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    runtime.set_default_authority(Some(CallAuthority::new(state())));
    runtime.call_tool("mcp__f__echo", None).await.unwrap();
    let other = SandboxState::from_json(r#"{"per":"call"}"#).unwrap();
    call_once(&runtime, CallAuthority::new(other)).await;
    let raws = calls(&log);
    assert_exact_state(&raws[0]);
    assert!(
        raws[1].contains(r#""codex/sandbox-state":{"per":"call"}"#),
        "{}",
        raws[1]
    );
    assert!(
        !raws[0].contains("codex/sandbox-launcher"),
        "no launcher was named"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn no_launcher_for_an_http_server_even_on_loopback() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let fixture = http_fixture(&[
        "--log",
        path_str(&log),
        "--experimental",
        "codex/sandbox-state={}",
    ])
    .await;
    let (runtime, _) = start(config([ServerConfig::http("f", &fixture.url)])).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    call_once(
        &runtime,
        CallAuthority::new(state()).with_codex_executable(&launcher),
    )
    .await;
    let raw = &calls(&log)[0];
    assert_exact_state(raw);
    assert!(!raw.contains("codex/sandbox-launcher"), "{raw}");
    assert_eq!(probe_runs(dir.path()), 0);
    runtime.shutdown().await;
}

#[tokio::test]
async fn no_launcher_for_a_server_run_through_a_wrapper() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let mut config = config([server(&log, Some("codex/sandbox-state"))]);
    // `env` runs the server right here, but through a wrapper the runtime must treat
    // as another host.
    config.environments.insert(
        "elsewhere".into(),
        EnvironmentConfig::new(vec!["/usr/bin/env".into()]),
    );
    config.servers.get_mut("f").unwrap().environment = Environment::Named("elsewhere".into());
    let (runtime, _) = start(config).await;
    assert_eq!(
        runtime.servers()[0].state,
        ServerState::Ready,
        "{:?}",
        runtime.servers()[0].error
    );
    call_once(
        &runtime,
        CallAuthority::new(state()).with_codex_executable(&launcher),
    )
    .await;
    let raw = &calls(&log)[0];
    assert_exact_state(raw);
    assert!(!raw.contains("codex/sandbox-launcher"), "{raw}");
    assert_eq!(probe_runs(dir.path()), 0, "no probe for a server elsewhere");
    runtime.shutdown().await;
}

#[tokio::test]
async fn no_launcher_when_the_path_fails_a_rule() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let failing_dir = dir.path().join("failing");
    std::fs::create_dir(&failing_dir).unwrap();
    let failing = stub_launcher(&failing_dir, Probe::NoMarker);
    let exits_dir = dir.path().join("exits");
    std::fs::create_dir(&exits_dir).unwrap();
    let exits_non_zero = stub_launcher(&exits_dir, Probe::Fails);
    let non_utf8_dir = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"launcher-\xff"));
    std::fs::create_dir(&non_utf8_dir).unwrap();
    let non_utf8 = stub_launcher(&non_utf8_dir, Probe::Passes);
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    for candidate in [
        failing.clone(),
        exits_non_zero,
        non_utf8,
        PathBuf::from("relative/codex"),
        dir.path().join("missing"),
    ] {
        call_once(
            &runtime,
            CallAuthority::new(state()).with_codex_executable(candidate),
        )
        .await;
    }
    for raw in calls(&log) {
        assert_exact_state(&raw);
        assert!(!raw.contains("codex/sandbox-launcher"), "{raw}");
    }
    assert_eq!(probe_runs(&failing_dir), 1, "the failing stub was probed");
    assert_eq!(
        probe_runs(&exits_dir),
        1,
        "a probe that exits non-zero fails"
    );
    assert_eq!(
        probe_runs(&non_utf8_dir),
        0,
        "a non-UTF-8 path is never probed"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_probe_runs_once_per_file_and_again_when_the_file_changes() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    let authority = CallAuthority::new(state()).with_codex_executable(&launcher);
    call_once(&runtime, authority.clone()).await;
    call_once(&runtime, authority.clone()).await;
    assert_eq!(probe_runs(dir.path()), 1);

    // A different file at the same path: size and modification time change.
    let mut script = std::fs::read_to_string(&launcher).unwrap();
    script.push_str("# changed\n");
    std::fs::write(&launcher, script).unwrap();
    call_once(&runtime, authority).await;
    assert_eq!(probe_runs(dir.path()), 2);
    for raw in calls(&log) {
        assert!(raw.contains(&launcher_meta(&launcher)), "{raw}");
    }
    runtime.shutdown().await;
}

#[test]
fn a_captured_authority_runs_the_command_through_the_launcher_with_the_exact_argv() {
    let dir = temp_dir();
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let authority = CapturedAuthority::new(state(), Some(launcher.clone())).unwrap();
    let output = authority
        .command("echo", ["one", "two words"], Unsandboxed::Refuse)
        .unwrap()
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "one two words\n");
    let argv = recorded_argv(dir.path());
    let expected: Vec<&[u8]> = vec![
        b"sandbox",
        b"--sandbox-state-json",
        STATE.as_bytes(),
        b"--",
        b"echo",
        b"one",
        b"two words",
    ];
    assert_eq!(
        argv,
        expected.iter().map(|arg| arg.to_vec()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn concurrent_calls_share_one_probe_run() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    let authority = CallAuthority::new(state()).with_codex_executable(&launcher);
    futures::future::join_all((0..8).map(|_| call_once(&runtime, authority.clone()))).await;
    assert_eq!(probe_runs(dir.path()), 1);
    let raws = calls(&log);
    assert_eq!(raws.len(), 8);
    assert!(
        raws.iter()
            .all(|raw| raw.contains(&launcher_meta(&launcher)))
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_symlink_pointed_at_another_file_is_probed_again() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (first_dir, second_dir) = (dir.path().join("first"), dir.path().join("second"));
    std::fs::create_dir(&first_dir).unwrap();
    std::fs::create_dir(&second_dir).unwrap();
    let first = stub_launcher(&first_dir, Probe::Passes);
    let second = stub_launcher(&second_dir, Probe::NoMarker);
    let link = dir.path().join("codex");
    std::os::unix::fs::symlink(&first, &link).unwrap();
    let (runtime, _) = start(config([server(&log, Some("codex/sandbox-state"))])).await;
    let authority = CallAuthority::new(state()).with_codex_executable(&link);
    call_once(&runtime, authority.clone()).await;

    let swapped = dir.path().join("codex.new");
    std::os::unix::fs::symlink(&second, &swapped).unwrap();
    std::fs::rename(&swapped, &link).unwrap();
    call_once(&runtime, authority).await;

    assert_eq!((probe_runs(&first_dir), probe_runs(&second_dir)), (1, 1));
    let raws = calls(&log);
    assert!(raws[0].contains(&launcher_meta(&first)), "{}", raws[0]);
    assert!(!raws[1].contains("codex/sandbox-launcher"), "{}", raws[1]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn reserved_keys_in_an_arguments_meta_are_removed_too() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, _) = start(config([server(&log, None)])).await;
    let arguments = json!({
        "path": "/w",
        "_meta": {"codex/sandbox-launcher": {"codexExecutable": "/tmp/evil"}, "note": "kept"},
    });
    runtime
        .call_tool("mcp__f__echo", arguments.as_object().cloned())
        .await
        .unwrap();
    let entry = read_log(&log)
        .into_iter()
        .find(|entry| entry["method"] == "tools/call")
        .unwrap();
    assert_eq!(
        entry["params"]["arguments"],
        json!({"path": "/w", "_meta": {"note": "kept"}})
    );
    runtime.shutdown().await;
}
