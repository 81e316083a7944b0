//! The launcher capability probe.
//!
//! A launcher is offered only if running `<path> sandbox --help` exits 0 within
//! [`PROBE_TIMEOUT`] and prints `--sandbox-state-json`. The answer is cached per file
//! identity (canonical path, device, inode, size, modification and change times, mode),
//! so the probe runs once per file and again when the file changes; an answer is kept
//! only if the file's identity is the same after the probe as before, and only when
//! the probe ran to an exit (a timeout or a failure to start is tried again next time).
//! Concurrent calls for one identity share one probe run. The path must be absolute
//! and valid UTF-8; `PATH` is never searched.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use crate::{config::INHERITED_ENV_VARS, sandbox_metadata::SandboxLauncher};

/// How long the probe may run.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// What the probe's output must mention.
const PROBE_MARKER: &str = "--sandbox-state-json";
/// How much of the probe's output is read.
const PROBE_OUTPUT_LIMIT: u64 = 64 * 1024;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct FileIdentity {
    canonical: PathBuf,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    mode: u32,
}

impl FileIdentity {
    async fn of(canonical: PathBuf) -> Option<Self> {
        let metadata = tokio::fs::metadata(&canonical).await.ok()?;
        Some(Self {
            canonical,
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
            mode: metadata.mode(),
        })
    }
}

/// Probe results by file identity, process-wide: the identity of a file is a fact about
/// this host, not about one runtime.
#[derive(Default)]
pub(crate) struct LauncherProbe {
    results: Mutex<HashMap<FileIdentity, Arc<tokio::sync::OnceCell<bool>>>>,
}

impl LauncherProbe {
    pub(crate) fn global() -> &'static Self {
        static GLOBAL: OnceLock<LauncherProbe> = OnceLock::new();
        GLOBAL.get_or_init(Self::default)
    }

    /// The launcher to offer for `path`, or `None` (with the reason logged) when it
    /// may not be offered.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons (and kills) a probe run; a later call runs it anew.
    pub(crate) async fn verified(&self, path: &Path) -> Option<SandboxLauncher> {
        let omit = |reason: &str| {
            tracing::debug!(path = %path.display(), "sandbox launcher omitted: {reason}");
            None
        };
        if !path.is_absolute() {
            return omit("the path is not absolute");
        }
        if path.to_str().is_none() {
            return omit("the path is not valid UTF-8");
        }
        let Ok(canonical) = tokio::fs::canonicalize(path).await else {
            return omit("the file does not exist");
        };
        let Some(canonical_str) = canonical.to_str().map(str::to_owned) else {
            return omit("the resolved path is not valid UTF-8");
        };
        let Some(identity) = FileIdentity::of(canonical).await else {
            return omit("the file cannot be read");
        };
        let answer = crate::sync::lock(&self.results)
            .entry(identity.clone())
            .or_default()
            .clone();
        // Concurrent calls for this file wait for the one probe run; an answer is kept
        // only when the probe ran to an exit and the file did not change meanwhile,
        // else the next call probes again.
        let answer = answer
            .get_or_try_init(|| async {
                let probed = run_probe(&identity.canonical).await;
                let unchanged =
                    FileIdentity::of(identity.canonical.clone()).await.as_ref() == Some(&identity);
                match (probed, unchanged) {
                    (Some(passed), true) => {
                        if !passed {
                            tracing::warn!(
                                path = %path.display(),
                                "sandbox launcher failed the capability probe (`sandbox --help` must exit 0 and mention `{PROBE_MARKER}`); it is not offered to servers"
                            );
                        }
                        Ok(passed)
                    }
                    _ => Err(probed.unwrap_or(false)),
                }
            })
            .await;
        let passed = match answer {
            Ok(&passed) | Err(passed) => passed,
        };
        if passed {
            Some(SandboxLauncher::new(canonical_str))
        } else {
            omit("it failed the capability probe")
        }
    }
}

/// Runs `<program> sandbox --help` once, with the servers' environment allow-list:
/// `Some(passed)` when it ran to an exit, `None` when it could not start or timed out
/// (its process group is then killed).
async fn run_probe(program: &Path) -> Option<bool> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(["sandbox", "--help"])
        .env_clear()
        .envs(
            INHERITED_ENV_VARS
                .iter()
                .filter_map(|name| Some((name, std::env::var_os(name)?))),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            tracing::warn!(program = %program.display(), %error, "sandbox launcher probe could not start");
            return None;
        }
    };
    let group = child.id().map(|pid| pid as libc::pid_t);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let run = async {
        let (out, err, status) =
            tokio::join!(read_limited(stdout), read_limited(stderr), child.wait());
        (out, err, status)
    };
    let (stdout, stderr, status) = match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(result) => result,
        Err(_) => {
            if let Some(group) = group {
                // SAFETY: killpg has no memory-safety preconditions; the child is not
                // reaped yet, so its group id is still its own.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
            tracing::warn!(program = %program.display(), "sandbox launcher probe did not finish within {}s", PROBE_TIMEOUT.as_secs());
            return None;
        }
    };
    let mentions = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains(PROBE_MARKER);
    Some(status.ok()?.success() && (mentions(&stdout) || mentions(&stderr)))
}

/// Up to [`PROBE_OUTPUT_LIMIT`] bytes of a pipe; the rest is drained and dropped.
async fn read_limited(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = (&mut pipe)
            .take(PROBE_OUTPUT_LIMIT)
            .read_to_end(&mut kept)
            .await;
        let _ = tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await;
    }
    kept
}
