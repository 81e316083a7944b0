//! Local stdio servers: the child process, its environment, its stderr, its end.
//!
//! Each server runs in a process group of its own, so that ending the group also ends
//! whatever the server started. The group is killed when the [`ServerProcess`] is
//! dropped (also on a timed-out or cancelled startup, or while a panicking host
//! unwinds); [`ServerProcess::shutdown`] is the graceful path: close stdin, `SIGTERM`,
//! then `SIGKILL` after a grace period, and it returns only once the whole group is
//! gone.
//!
//! A group is gone when its last member has been reaped. The runtime reaps only the
//! leader; the other members are reaped by their own parents, or, orphaned by the
//! `SIGKILL`, by init (or the nearest subreaper), which may take a moment. No event
//! reports that a group is empty, so shutdown probes it with signal 0 (`killpg(pgid,
//! 0)`), backing off between probes, until the kernel answers `ESRCH`, for at most
//! [`GROUP_EXIT_WAIT`]. The probe cannot reach another group: a group id stays
//! taken as long as any member is left, zombies included, and signal 0 delivers
//! nothing anyway.
//!
//! The child's environment is cleared and rebuilt from an allow-list
//! ([`INHERITED_ENV_VARS`]), the names in `env_vars`, then `env`: a secret in the
//! host's environment never reaches a server that did not ask for it by name.

mod exit;

use std::{
    collections::{BTreeMap, VecDeque},
    ffi::OsString,
    path::PathBuf,
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, BufReader},
    process::{Child, ChildStdin, ChildStdout, Command},
    task::JoinHandle,
};

use crate::{
    config::{INHERITED_ENV_VARS, StdioConfig},
    redact::Registered,
    transport::error::StartupError,
};

/// How many of a server's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
/// Longer stderr lines are cut to this many bytes.
const STDERR_LINE_BYTES: usize = 2048;
/// How much of a server's stderr is read at a time. The reader lives as long as the
/// server, and stderr carries logs, not the protocol: a small buffer (tokio's default
/// is 8 KiB) keeps a runtime of many servers small.
const STDERR_READ_BYTES: usize = 1024;
/// How long a server may take to exit after `SIGTERM` before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long, after `SIGKILL`, the rest of a server's process group may take to be
/// reaped before shutdown stops waiting for it.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(5);
/// The longest pause between two probes of a group that is not gone yet.
const GROUP_PROBE_MAX_PAUSE: Duration = Duration::from_millis(50);

/// The environment a stdio server is started with: the allow-list taken from `parent`,
/// then the names in `env_vars`, then the literal `env`.
pub(crate) fn child_environment(
    stdio: &StdioConfig,
    parent: impl Fn(&str) -> Option<OsString>,
) -> BTreeMap<OsString, OsString> {
    let mut env = BTreeMap::new();
    for name in INHERITED_ENV_VARS
        .iter()
        .copied()
        .chain(stdio.env_vars.iter().map(String::as_str))
    {
        if let Some(value) = parent(name) {
            env.insert(OsString::from(name), value);
        }
    }
    for (name, value) in &stdio.env {
        env.insert(OsString::from(name), OsString::from(value));
    }
    env
}

/// A running local server process and the pipes the protocol runs over.
pub(crate) struct Spawned {
    pub(crate) process: ServerProcess,
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
}

/// Exactly what a local server is started with. `Debug` shows variable names only.
#[derive(Clone)]
pub(crate) struct Launch {
    /// The program and its arguments, after any environment's wrapper.
    pub(crate) argv: Vec<String>,
    /// The child's whole environment.
    pub(crate) env: BTreeMap<OsString, OsString>,
    pub(crate) cwd: Option<PathBuf>,
    /// The longest line read from its stdout (`max_message_bytes`).
    pub(crate) max_message_bytes: usize,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("argv", &self.argv)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

impl Launch {
    /// `stdio`'s command run through `wrapper` (if any), with the environment built
    /// from this process's, reading lines of at most `max_message_bytes`.
    pub(crate) fn new(
        stdio: &StdioConfig,
        wrapper: Option<&[String]>,
        max_message_bytes: usize,
    ) -> Self {
        let argv = wrapper
            .unwrap_or_default()
            .iter()
            .chain([&stdio.command])
            .chain(&stdio.args)
            .cloned()
            .collect();
        Self {
            argv,
            env: child_environment(stdio, |name| std::env::var_os(name)),
            cwd: stdio.cwd.clone(),
            max_message_bytes,
        }
    }
}

/// Whether servers started from now on are killed when this process dies
/// ([`end_servers_with_this_process`]).
static END_WITH_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, every stdio server this process starts is killed (`SIGKILL`) when
/// the process dies, however it dies: a gateway killed with `SIGKILL` leaves no
/// server behind. Linux only (`PR_SET_PDEATHSIG`); elsewhere a server learns of its
/// host's death from its closed stdin alone.
///
/// The kernel sends the signal when the thread that started the server ends, not
/// the process: call it only in a process whose tokio worker threads live as long as
/// it does (`mcp-runtime serve` does; a host that starts servers from a thread that
/// ends before they should must not).
pub fn end_servers_with_this_process() {
    END_WITH_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Starts `launch` for `server`, in a new process group.
pub(crate) fn spawn(server: &str, launch: &Launch) -> Result<Spawned, StartupError> {
    let (program, args) = launch.argv.split_first().expect("argv is never empty");
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(&launch.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &launch.cwd {
        command.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    if END_WITH_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        // SAFETY: between fork and exec only async-signal-safe calls are made: prctl,
        // getppid and _exit.
        unsafe {
            let parent = libc::getpid();
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The host died before the request took effect: nothing would kill
                // this child.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    let mut child = command.spawn().map_err(|source| StartupError::Spawn {
        program: program.clone(),
        source: Arc::new(source),
    })?;
    let pgid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .expect("a just-spawned child has a pid");
    let stdout = child.stdout.take().expect("stdout is piped");
    let stdin = child.stdin.take().expect("stdin is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let credentials = credentials(&launch.env);
    let tail = StderrTail::default();
    let stderr_task = tokio::spawn(capture_stderr(
        server.to_owned(),
        stderr,
        tail.clone(),
        credentials.clone(),
    ));
    Ok(Spawned {
        process: ServerProcess {
            server: server.to_owned(),
            child,
            pgid,
            exit: exit::ExitWatch::new(pgid),
            reaped: false,
            tail,
            stderr_task,
            _credentials: credentials,
        },
        stdout,
        stdin,
    })
}

/// The credentials passed to a server in `env` (the values of variables whose names
/// say they hold one, but the inherited ones), registered to be masked in what the
/// server writes back ([`crate::redact::credentials`]).
fn credentials(env: &BTreeMap<OsString, OsString>) -> Vec<Registered> {
    env.iter()
        .filter(|(name, _)| {
            name.to_str().is_some_and(|name| {
                !INHERITED_ENV_VARS.contains(&name) && crate::redact::names_a_credential(name)
            })
        })
        .filter_map(|(_, value)| crate::redact::register(value.to_str()?))
        .collect()
}

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = crate::sync::lock(&self.0);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Up to `count` of the most recent lines, oldest first.
    pub(crate) fn last(&self, count: usize) -> Vec<String> {
        let lines = crate::sync::lock(&self.0);
        lines
            .iter()
            .skip(lines.len().saturating_sub(count))
            .cloned()
            .collect()
    }
}

/// Reads `stderr` line by line into `tracing` and the tail, until it closes, every
/// credential masked (`credentials`, the server's, stay registered until then). Memory
/// is bounded: a line is cut at [`STDERR_LINE_BYTES`], the tail holds
/// [`STDERR_TAIL_LINES`].
async fn capture_stderr(
    server: String,
    stderr: impl AsyncRead + Unpin,
    tail: StderrTail,
    credentials: Vec<Registered>,
) {
    let mut reader = BufReader::with_capacity(STDERR_READ_BYTES, stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        // A line cut at its limit may end in the start of a credential.
        let text = if line.len() == STDERR_LINE_BYTES {
            crate::redact::credentials_cut(text)
        } else {
            crate::redact::credentials(text)
        };
        tracing::info!(target: "mcp_runtime::server_stderr", server = %server, "{text}");
        tail.push(text.into_owned());
    }
    drop(credentials);
}

/// Reads one line into `line`, keeping at most [`STDERR_LINE_BYTES`] of it and
/// discarding the rest. Returns how many bytes were consumed (0 at end of stream).
async fn read_bounded_line(
    reader: &mut BufReader<impl AsyncRead + Unpin>,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&buffer[..=at], true),
            None => (buffer, false),
        };
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        consumed += used;
        if done {
            return Ok(consumed);
        }
    }
}

/// A local server process. Dropping it kills its whole process group.
///
/// The leader is reaped only after the group has been sent `SIGKILL`: until then the
/// leader (alive or a zombie) keeps its pid, and so the group id, from being reused,
/// and every signal reaches this server's group and nothing else.
pub(crate) struct ServerProcess {
    /// The server's name, for logs.
    server: String,
    child: Child,
    pgid: libc::pid_t,
    /// Tells when the leader has exited, without reaping it.
    exit: exit::ExitWatch,
    reaped: bool,
    tail: StderrTail,
    stderr_task: JoinHandle<()>,
    /// The credentials passed in its environment, masked while it lives.
    _credentials: Vec<Registered>,
}

impl ServerProcess {
    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pgid as u32
    }

    /// The server's last lines of stderr so far.
    pub(crate) fn stderr_tail(&self) -> &StderrTail {
        &self.tail
    }

    /// Whether the leader has exited already (it is not reaped).
    pub(crate) fn has_exited(&self) -> bool {
        exit::peek_exit_status(self.pgid).is_some()
    }

    /// Resolves once the leader has exited (it is not reaped); never, if its exit
    /// cannot be watched. The future does not borrow the process, so it may outlive
    /// it: once the process is dropped its group is killed, and the future resolves.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub(crate) fn exited(&self) -> impl Future<Output = ()> + Send + 'static {
        let exit = self.exit.clone();
        async move { exit.exited().await }
    }

    /// Whether the leader exits within `limit` (it is not reaped).
    async fn exited_within(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.exit.exited())
            .await
            .is_ok()
    }

    /// If the process has exited (or exits within `wait`), how it exited, once its
    /// stderr has been read to the end (bounded by `wait` too). Does not reap it.
    pub(crate) async fn exit_status(&mut self, wait: Duration) -> Option<ExitStatus> {
        if !self.exited_within(wait).await {
            return None;
        }
        let status = exit::peek_exit_status(self.pgid)?;
        let _ = tokio::time::timeout(wait, &mut self.stderr_task).await;
        Some(status)
    }

    /// Ends the server the way MCP's stdio transport describes: the caller has closed
    /// its stdin; if it has not exited after a grace period its group gets `SIGTERM`,
    /// and after another the whole group gets `SIGKILL` (also anything the server left
    /// behind). Then the leader is reaped, and this returns once every other member
    /// of the group has been reaped too (see the module docs), or after
    /// [`GROUP_EXIT_WAIT`].
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the process group at once.
    pub(crate) async fn shutdown(mut self) {
        if !self.exited_within(SHUTDOWN_GRACE).await {
            signal_group(self.pgid, libc::SIGTERM);
            self.exited_within(SHUTDOWN_GRACE).await;
        }
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.wait().await;
        self.reaped = true;
        if !group_gone_within(self.pgid, GROUP_EXIT_WAIT).await {
            tracing::warn!(
                "process group `{}` of server `{}` still has members {}s after `SIGKILL`",
                self.pgid,
                self.server,
                GROUP_EXIT_WAIT.as_secs(),
            );
        }
    }
}

impl ServerProcess {
    /// Kills the whole process group at once and reaps the leader: for a server that
    /// is given up before it was used (a probed handshake server, see
    /// [`crate::protocol_era`]), whose stdin the caller has dropped already.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the leader unreaped; the group is killed already.
    pub(crate) async fn kill(mut self) {
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.wait().await;
        self.reaped = true;
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if !self.reaped {
            signal_group(self.pgid, libc::SIGKILL);
        }
        self.stderr_task.abort();
    }
}

/// Whether process group `pgid` has no member left (not even a zombie) within
/// `limit`, probing with signal 0 and pauses that double up to
/// [`GROUP_PROBE_MAX_PAUSE`].
async fn group_gone_within(pgid: libc::pid_t, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        if !group_exists(pgid) {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(GROUP_PROBE_MAX_PAUSE);
    }
}

/// Whether process group `pgid` has any member, zombies included.
fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: killpg has no memory-safety preconditions, and signal 0 is never
    // delivered: the kernel only looks the group up.
    let found = unsafe { libc::killpg(pgid, 0) } == 0;
    // EPERM: a member the runtime may not signal (it changed its user) is left.
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: killpg has no memory-safety preconditions. The group was created for
    // this server (`process_group(0)`) and its callers signal it only while the leader
    // is unreaped, so the id cannot have been reused: the signal reaches only the
    // server's group. A group with no live member reports ESRCH, which is ignored.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(env: &[(&str, &str)], env_vars: &[&str]) -> StdioConfig {
        StdioConfig {
            command: "server".into(),
            args: vec![],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env_vars: env_vars.iter().map(|name| name.to_string()).collect(),
            cwd: None,
        }
    }

    fn parent(name: &str) -> Option<OsString> {
        match name {
            "PATH" => Some("/usr/bin".into()),
            "HOME" => Some("/home/me".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("secret".into()),
            "GITHUB_TOKEN" => Some("ghp".into()),
            _ => None,
        }
    }

    #[test]
    fn secrets_stay_behind_unless_named() {
        let env = child_environment(&stdio(&[], &[]), parent);
        assert_eq!(
            env.keys().collect::<Vec<_>>(),
            ["HOME", "PATH"],
            "only the allow-list is inherited"
        );
        let env = child_environment(&stdio(&[], &["GITHUB_TOKEN", "UNSET"]), parent);
        assert_eq!(
            env.get(&OsString::from("GITHUB_TOKEN")),
            Some(&"ghp".into())
        );
        assert!(!env.contains_key(&OsString::from("UNSET")));
        assert!(!env.contains_key(&OsString::from("AWS_SECRET_ACCESS_KEY")));
    }

    #[test]
    fn debug_output_never_shows_environment_values() {
        let config = stdio(&[("API_KEY", "literal-secret")], &["GITHUB_TOKEN"]);
        let launch = Launch {
            argv: vec!["server".into()],
            env: child_environment(&config, parent),
            cwd: None,
            max_message_bytes: 1,
        };
        for text in [format!("{config:?}"), format!("{launch:?}")] {
            assert!(
                !text.contains("literal-secret") && !text.contains("ghp"),
                "{text}"
            );
            assert!(text.contains("API_KEY"), "{text}");
        }
    }

    #[test]
    fn literal_env_is_applied_last() {
        let env = child_environment(&stdio(&[("PATH", "/opt/bin")], &["PATH"]), parent);
        assert_eq!(env.get(&OsString::from("PATH")), Some(&"/opt/bin".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_group_stops_at_the_limit() {
        // SAFETY: getpgrp has no preconditions. This test's own group has a member.
        let own_group = unsafe { libc::getpgrp() };
        let start = tokio::time::Instant::now();
        assert!(!group_gone_within(own_group, Duration::from_secs(3)).await);
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_without_members_is_gone_without_a_pause() {
        let mut child = Command::new("true").process_group(0).spawn().unwrap();
        let pgid = child.id().unwrap() as libc::pid_t;
        child.wait().await.unwrap();
        let start = tokio::time::Instant::now();
        assert!(group_gone_within(pgid, Duration::from_secs(3)).await);
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn stderr_lines_are_bounded_and_the_tail_keeps_the_last() {
        let long = "x".repeat(STDERR_LINE_BYTES * 3);
        let mut text = format!("{long}\n");
        for n in 0..STDERR_TAIL_LINES + 5 {
            text.push_str(&format!("line {n}\n"));
        }
        text.push_str("no newline at the end");
        let tail = StderrTail::default();
        capture_stderr("s".into(), text.as_bytes(), tail.clone(), Vec::new()).await;
        let lines = tail.last(usize::MAX);
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.last().unwrap(), "no newline at the end");
        assert_eq!(tail.last(2)[0], format!("line {}", STDERR_TAIL_LINES + 4));

        let tail = StderrTail::default();
        capture_stderr(
            "s".into(),
            format!("{long}\nafter\n").as_bytes(),
            tail.clone(),
            Vec::new(),
        )
        .await;
        assert_eq!(tail.last(2)[0].len(), STDERR_LINE_BYTES);
        assert_eq!(tail.last(2)[1], "after");
    }

    #[tokio::test]
    async fn a_credential_passed_in_the_environment_is_masked_in_stderr() {
        let env = BTreeMap::from([
            ("PATH".into(), "/usr/bin/stderr-path-value".into()),
            ("GITHUB_TOKEN".into(), "ghp_stderr-test-0001".into()),
            ("LOG_LEVEL".into(), "verbose-level".into()),
        ]);
        let credentials = credentials(&env);
        let tail = StderrTail::default();
        let text = "token ghp_stderr-test-0001 at verbose-level in /usr/bin/stderr-path-value\n";
        capture_stderr("s".into(), text.as_bytes(), tail.clone(), credentials).await;
        assert_eq!(
            tail.last(1),
            ["token ***** at verbose-level in /usr/bin/stderr-path-value"]
        );
    }
}
