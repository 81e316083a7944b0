//! The launcher capability probe.
//!
//! A launcher is offered only if running `<path> sandbox --help` exits 0 within
//! [`PROBE_TIMEOUT`] and prints `--sandbox-state-json`. The result is cached per file
//! identity (canonical path, device, inode, size, modification time), so the probe runs
//! once per file and again when the file changes. Concurrent calls for one identity
//! share one probe run. The path must be absolute and valid UTF-8; `PATH` is never
//! searched.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use tokio::sync::OnceCell;

use crate::{config::INHERITED_ENV_VARS, sandbox_metadata::SandboxLauncher};

/// How long the probe may run.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// What the probe's output must mention.
const PROBE_MARKER: &str = "--sandbox-state-json";

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct FileIdentity {
    canonical: PathBuf,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
}

/// Probe results by file identity, process-wide: the identity of a file is a fact about
/// this host, not about one runtime.
#[derive(Default)]
pub(crate) struct LauncherProbe {
    results: Mutex<HashMap<FileIdentity, Arc<OnceCell<bool>>>>,
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
        let Ok(metadata) = tokio::fs::metadata(&canonical).await else {
            return omit("the file cannot be read");
        };
        let identity = FileIdentity {
            canonical,
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
        };
        let cell = self
            .results
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(identity.clone())
            .or_default()
            .clone();
        let passed = *cell.get_or_init(|| run_probe(&identity.canonical)).await;
        if passed {
            Some(SandboxLauncher::new(canonical_str))
        } else {
            omit("it failed the capability probe")
        }
    }
}

/// Runs `<program> sandbox --help` once, with the servers' environment allow-list.
async fn run_probe(program: &Path) -> bool {
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
    let output = match tokio::time::timeout(PROBE_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => {
            tracing::debug!(program = %program.display(), %error, "sandbox launcher probe could not run");
            return false;
        }
        Err(_) => {
            tracing::debug!(program = %program.display(), "sandbox launcher probe timed out");
            return false;
        }
    };
    let mentions = |bytes: &[u8]| String::from_utf8_lossy(bytes).contains(PROBE_MARKER);
    output.status.success() && (mentions(&output.stdout) || mentions(&output.stderr))
}
