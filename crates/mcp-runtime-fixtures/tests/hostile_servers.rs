//! A server that ignores stdin EOF and `SIGTERM`, and leaves a child behind: a call's
//! timeout is reported when it runs out, and shutdown returns only once the server's
//! whole process group is gone.

use std::{os::unix::fs::PermissionsExt, path::Path, time::Duration};

use mcp_runtime::{CallError, ServerConfig};

use crate::support::*;

/// A server in `dir`: the fixture (with `args`) under a shell that ignores `SIGTERM`
/// (as does everything it starts) and, once the fixture has exited at stdin EOF,
/// stays alive. The fixture's own child writes its pid to `dir/grandchild.pid`.
fn stubborn_server(dir: &Path, args: &str) -> ServerConfig {
    let script = dir.join("stubborn.sh");
    let text = format!(
        "#!/bin/sh\ntrap '' TERM\n'{fixture}' --spawn-grandchild '{dir}/grandchild.pid' {args}\nexec sleep 3600\n",
        fixture = fixture_path(),
        dir = dir.display(),
    );
    std::fs::write(&script, text).expect("writing the server script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("making the server script executable");
    // Pinned: a probe would start a second fixture and grandchild (see `fixture`).
    ServerConfig::stdio("stubborn", path_str(&script), Vec::new())
        .with_protocol(mcp_runtime::config::Protocol::V2025_11_25)
}

/// Whether any process is left with this pid (a zombie counts: it is not reaped).
fn pid_exists(pid: i32) -> bool {
    // SAFETY: signal 0 is never delivered; kill only checks that `pid` exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether any process is left in process group `pgid` (zombies count).
fn group_exists(pgid: i32) -> bool {
    // SAFETY: as in `pid_exists`, for a process group.
    let found = unsafe { libc::killpg(pgid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[tokio::test]
async fn a_timeout_is_reported_when_it_runs_out_without_waiting_for_cleanup() {
    let dir = temp_dir();
    let server = stubborn_server(dir.path(), "--call-delay-ms 600000")
        .with_tool_timeout(Duration::from_secs(1));
    let (runtime, events) = start(config([server])).await;
    let pid = spawned_pid(&events, "stubborn");

    let call = runtime.call_tool("mcp__stubborn__echo", None);
    let error = tokio::time::timeout(Duration::from_secs(1 + 10), call)
        .await
        .expect("the timeout error comes within the timeout and a margin")
        .unwrap_err();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");
    // Nothing on the call's path ended the server: cleanup comes later, at shutdown.
    assert!(is_alive(pid));

    let grandchild = read_pid(&dir.path().join("grandchild.pid"));
    drop(runtime);
    assert_all_gone(pid, &[grandchild]);
}

#[tokio::test]
async fn shutdown_returns_only_once_the_whole_process_group_is_gone() {
    let dir = temp_dir();
    let (runtime, events) = start(config([stubborn_server(dir.path(), "")])).await;
    let pid = spawned_pid(&events, "stubborn");
    let grandchild = read_pid(&dir.path().join("grandchild.pid"));
    assert!(is_alive(grandchild));

    runtime.shutdown().await;

    // No waiting here: every member, the grandchild too, is reaped already.
    assert!(
        !pid_exists(grandchild),
        "the grandchild {grandchild} is left"
    );
    assert!(!group_exists(pid), "process group {pid} has members left");
}
