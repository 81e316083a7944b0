//! Helpers for tests that run real processes: a stand-in launcher, waiting for a
//! process to end without polling, process-group checks, and reading the fixture's log.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::Value;

/// How a stub launcher answers the capability probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Exits 0 and mentions `--sandbox-state-json`.
    Passes,
    /// Exits 0 without mentioning it.
    NoMarker,
    /// Mentions it but exits 1.
    Fails,
}

/// Writes a stand-in for the Codex CLI into `dir` and returns its path. It answers the
/// capability probe (`sandbox --help`) as `probe` says and counts its runs in
/// `dir/probes`; a sandboxed run records its argv (NUL-separated) in `dir/argv` and
/// then runs the command.
pub fn stub_launcher(dir: &Path, probe: Probe) -> PathBuf {
    let path = dir.join("codex");
    let (help, code) = match probe {
        Probe::Passes => (
            "Usage: codex sandbox --sandbox-state-json <JSON> -- <COMMAND>...",
            0,
        ),
        Probe::NoMarker => ("Usage: codex sandbox <COMMAND>...", 0),
        Probe::Fails => ("error: --sandbox-state-json is not supported here", 1),
    };
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = sandbox ] && [ \"$2\" = --help ]; then\n  echo probe >> '{dir}/probes'\n  echo '{help}'\n  exit {code}\nfi\nfor arg in \"$@\"; do printf '%s\\0' \"$arg\"; done > '{dir}/argv'\nshift 4\nexec \"$@\"\n",
        dir = dir.display()
    );
    std::fs::write(&path, script).expect("writing the stub launcher");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("making the stub launcher executable");
    path
}

/// How many times the stub launcher in `dir` was probed.
pub fn probe_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("probes")).map_or(0, |text| text.lines().count())
}

/// The argv of the stub launcher's last sandboxed run in `dir`, after its own name.
pub fn recorded_argv(dir: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(dir.join("argv")).expect("the stub launcher ran");
    // Every argument ends with a NUL, so the piece after the last one is empty.
    let mut args: Vec<Vec<u8>> = bytes.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    assert_eq!(
        args.pop(),
        Some(Vec::new()),
        "the argv file ends with a NUL"
    );
    args
}

/// A process's state letter, parent and process group, from `/proc/PID/stat`;
/// `None` once it is gone.
fn stat(pid: i32) -> Option<(char, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after it.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Whether `pid` is a live process (a zombie is not).
pub fn is_alive(pid: i32) -> bool {
    matches!(stat(pid), Some((state, _, _)) if state != 'Z' && state != 'X')
}

/// The live members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    live_processes(|_, pgrp| pgrp == pgid)
}

/// The live children of `parent` (a process started in a group of its own, as the
/// runtime starts its stdio servers, is not in its parent's group: this finds it).
pub fn children(parent: i32) -> Vec<i32> {
    live_processes(|ppid, _| ppid == parent)
}

/// The live processes whose parent and process group `select` picks.
fn live_processes(select: impl Fn(i32, i32) -> bool) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            matches!(stat(pid), Some((state, ppid, pgrp)) if select(ppid, pgrp) && state != 'Z' && state != 'X')
        })
        .collect()
}

/// Waits, without polling, until `pid` has exited (is a zombie or gone), for at most
/// `limit`. Returns whether it exited.
pub fn wait_for_exit(pid: i32, limit: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new file descriptor or
    // -1; the descriptor is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return !is_alive(pid);
    }
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `poll` points to one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, limit.as_millis() as i32) };
    // SAFETY: fd was returned by pidfd_open above and is closed once.
    unsafe { libc::close(fd) };
    ready == 1 || !is_alive(pid)
}

/// Asserts that no process of group `pgid`, and none of `others`, is left: each has
/// exited, or has been sent `SIGKILL` and will not run again.
///
/// A killed process still has to be scheduled once to die; on a machine loaded with
/// parallel tests that has been seen to take more than ten seconds, with the signal
/// pending all along (`/proc/PID/status`). What the runtime owes is the kill, so a
/// process still there after the wait passes if `SIGKILL` is pending for it.
pub fn assert_all_gone(pgid: i32, others: &[i32]) {
    let limit = Duration::from_secs(10);
    for pid in group_members(pgid)
        .into_iter()
        .chain(others.iter().copied())
    {
        assert!(
            wait_for_exit(pid, limit) || sigkill_pending(pid),
            "process {pid} is still running, and no `SIGKILL` is pending for it"
        );
    }
    let left: Vec<i32> = group_members(pgid)
        .into_iter()
        .filter(|&pid| !sigkill_pending(pid))
        .collect();
    assert_eq!(left, Vec::<i32>::new(), "group {pgid} still has processes");
}

/// Whether `SIGKILL` is pending for `pid` (for the process or one of its threads),
/// from `/proc/PID/status`; false once it is gone.
pub fn sigkill_pending(pid: i32) -> bool {
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status.lines().any(|line| {
        let mask = line
            .strip_prefix("ShdPnd:")
            .or_else(|| line.strip_prefix("SigPnd:"));
        mask.and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

/// An `http://127.0.0.1:PORT/mcp` URL where nothing listens: the port was bound
/// and released, so connecting to it is refused (unless another process takes the
/// port in the meantime, which the kernel makes unlikely by not reusing it at once).
pub fn unused_local_url() -> String {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").expect("binding a free loopback port");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    drop(listener);
    format!("http://{addr}/mcp")
}

/// The URL an HTTP fixture (`mcp-fixture --http ADDR`) announced in `first_line`, its
/// first line on stdout (`listening URL`).
pub fn announced_url(first_line: &str) -> String {
    first_line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line {first_line:?}"))
        .to_owned()
}

/// The fixture's message log: one JSON object per received message.
pub fn read_log(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str(line).expect("log lines are JSON"))
        .collect()
}

/// The one logged message with `method`; panics unless there is exactly one.
pub fn the<'a>(log: &'a [Value], method: &str) -> &'a Value {
    let found: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["method"] == method)
        .collect();
    assert_eq!(found.len(), 1, "one `{method}` in {log:?}");
    found[0]
}

/// How many messages with `method` the log holds.
pub fn count_method(log: &[Value], method: &str) -> usize {
    log.iter().filter(|entry| entry["method"] == method).count()
}

/// The workspace's `peers` directory, where `scripts/install-peers` installs the
/// pinned peers.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
}

/// The Python of the venv with the Python SDK `version` (`2.3.0`, `1.30.0`), which
/// `scripts/install-peers` makes.
pub fn python_sdk(version: &str) -> PathBuf {
    let python = peers_dir().join(format!("venvs/mcp-{version}/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-peers (scripts/test does)",
        python.display()
    );
    python
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sigkill_is_pending_for_a_running_or_reaped_process() {
        // The pending case cannot be produced on demand (it lasts until the killed
        // process is next scheduled); what must never happen is a false positive.
        let mut child = std::process::Command::new("sleep")
            .arg("3600")
            .spawn()
            .expect("sleep runs");
        let pid = child.id() as i32;
        assert!(!sigkill_pending(pid), "a running process has none pending");
        // SAFETY: kill takes a pid and a signal; the pid is our unreaped child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        child.wait().expect("the child is reaped");
        assert!(
            !sigkill_pending(pid),
            "a reaped process has nothing pending"
        );
    }
}
