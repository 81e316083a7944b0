//! Gates: files a test creates to decide when one fixture process answers.
//!
//! With `--gate-dir DIR`, the fixture whose pid is `PID` answers `initialize`
//! only once `DIR/PID.initialize` exists, and each `tools/list` request only
//! once `DIR/PID.tools-list` exists. The content of the `tools-list` file, read
//! when the gate opens, says how to answer: `fail` (surrounding whitespace
//! ignored) answers a JSON-RPC error, anything else answers normally. A test
//! that writes `fail` should write a temporary file and rename it into place,
//! or the fixture may see the file while it is still empty.
//!
//! A gate is a file rather than a message so that a test can steer one process
//! among many (it knows the pids) without talking to it. The fixture polls for
//! the file every [`POLL_INTERVAL`]; a closed gate holds up only the request
//! waiting on it, never the other requests and notifications of the process
//! (except that rmcp handles nothing else while `initialize` is unanswered).
//! A gate stays open while its file exists: removing the file closes it again
//! for later requests.

use std::{
    io,
    path::{Path, PathBuf},
    time::Duration,
};

/// How often a closed gate looks for its file.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// The gate files of this process in one directory.
#[derive(Clone, Debug)]
pub struct Gates {
    dir: PathBuf,
    pid: u32,
}

/// How the `tools/list` gate says to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListGate {
    /// Answer normally.
    Answer,
    /// Answer a JSON-RPC error.
    Fail,
}

impl Gates {
    /// The gates of this process in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            pid: std::process::id(),
        }
    }

    /// The file that opens the `initialize` gate: `DIR/PID.initialize`.
    pub fn initialize_path(&self) -> PathBuf {
        self.dir.join(format!("{}.initialize", self.pid))
    }

    /// The file that opens the `tools/list` gate: `DIR/PID.tools-list`.
    pub fn tools_list_path(&self) -> PathBuf {
        self.dir.join(format!("{}.tools-list", self.pid))
    }

    /// Whether the `initialize` gate is open now.
    pub fn initialize_is_open(&self) -> bool {
        self.initialize_path().exists()
    }

    /// Wait until the `initialize` gate opens.
    ///
    /// Fails only when the file system answers something other than "no
    /// such file".
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting; nothing else happens.
    pub async fn initialize(&self) -> io::Result<()> {
        let path = self.initialize_path();
        poll(|| std::fs::metadata(&path).map(drop)).await
    }

    /// Wait until the `tools/list` gate opens, then say how to answer.
    ///
    /// Fails only when the file system answers something other than "no
    /// such file".
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting; nothing else happens.
    pub async fn tools_list(&self) -> io::Result<ListGate> {
        let path = self.tools_list_path();
        let content = poll(|| std::fs::read(&path)).await?;
        Ok(list_gate(&content))
    }
}

/// What the content of a `tools-list` gate file says.
fn list_gate(content: &[u8]) -> ListGate {
    if content.trim_ascii() == b"fail" {
        ListGate::Fail
    } else {
        ListGate::Answer
    }
}

/// Call `open` every [`POLL_INTERVAL`] until it finds its file.
///
/// `open` touches a small local file, so it runs on the async task itself
/// rather than on tokio's blocking pool.
async fn poll<T>(mut open: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match open() {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            result => return result,
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Create `path` with `content` atomically: write a temporary file beside it,
/// then rename it into place. For tests that open gates.
pub fn open_gate(path: &Path, content: &str) -> io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    std::fs::write(&temporary, content)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::{task::JoinHandle, time};

    use super::*;

    fn gates() -> (tempfile::TempDir, Gates) {
        let dir = tempfile::tempdir().unwrap();
        let gates = Gates::new(dir.path().to_owned());
        (dir, gates)
    }

    /// Let a spawned waiter poll a few times (virtual time).
    async fn let_it_poll() {
        time::advance(POLL_INTERVAL * 3).await;
        tokio::task::yield_now().await;
    }

    async fn finished<T>(task: &JoinHandle<T>) -> bool {
        let_it_poll().await;
        task.is_finished()
    }

    #[test]
    fn gate_files_are_named_after_the_pid() {
        let gates = Gates::new(PathBuf::from("/gates"));
        let pid = std::process::id();
        assert_eq!(
            gates.initialize_path(),
            PathBuf::from(format!("/gates/{pid}.initialize"))
        );
        assert_eq!(
            gates.tools_list_path(),
            PathBuf::from(format!("/gates/{pid}.tools-list"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn initialize_waits_until_its_file_exists() {
        let (_dir, gates) = gates();
        let waiter = tokio::spawn({
            let gates = gates.clone();
            async move { gates.initialize().await }
        });
        assert!(!finished(&waiter).await);
        assert!(!gates.initialize_is_open());

        // The other gate does not open this one.
        open_gate(&gates.tools_list_path(), "").unwrap();
        assert!(!finished(&waiter).await);

        open_gate(&gates.initialize_path(), "").unwrap();
        assert!(finished(&waiter).await);
        waiter.await.unwrap().unwrap();
        assert!(gates.initialize_is_open());
    }

    #[tokio::test(start_paused = true)]
    async fn tools_list_answers_as_its_file_says_each_time() {
        let (_dir, gates) = gates();
        let waiter = tokio::spawn({
            let gates = gates.clone();
            async move { gates.tools_list().await }
        });
        assert!(!finished(&waiter).await);
        open_gate(&gates.tools_list_path(), " fail\n").unwrap();
        assert_eq!(waiter.await.unwrap().unwrap(), ListGate::Fail);

        // The gate stays open, and is read again for every request.
        open_gate(&gates.tools_list_path(), "ok").unwrap();
        let answer = time::timeout(Duration::from_millis(1), gates.tools_list()).await;
        assert_eq!(answer.unwrap().unwrap(), ListGate::Answer);

        // Removing the file closes it again.
        std::fs::remove_file(gates.tools_list_path()).unwrap();
        let closed = time::timeout(Duration::from_secs(1), gates.tools_list()).await;
        assert!(closed.is_err());
    }

    #[test]
    fn only_fail_fails() {
        assert_eq!(list_gate(b"fail"), ListGate::Fail);
        assert_eq!(list_gate(b"\n fail \r\n"), ListGate::Fail);
        assert_eq!(list_gate(b""), ListGate::Answer);
        assert_eq!(list_gate(b"FAIL"), ListGate::Answer);
        assert_eq!(list_gate(b"failed"), ListGate::Answer);
    }
}
