//! Learning that a server's process has exited, without reaping it.
//!
//! The leader of a server's process group stays unreaped until its group has been
//! sent `SIGKILL` (see [`super::ServerProcess`]), so its exit is observed with
//! `WNOWAIT`, never with a reaping wait. Two ways, chosen at build time:
//!
//! - Linux: a pidfd, which becomes readable when the process exits; waiting for it is
//!   one more descriptor in tokio's reactor.
//! - every other Unix (macOS), and Linux with the `portable-process` feature (so the
//!   tests run this path too): a thread of its own per server blocks in
//!   `waitid(P_PID, pid, WEXITED | WNOWAIT)` and reports the exit through a watch
//!   channel. A plain thread, not tokio's blocking pool, so that nothing waits for it
//!   when the host's runtime shuts down; it ends when the process exits, which the
//!   `SIGKILL` of the group's end guarantees.
//!
//! Either way, a watch that cannot be set up (no pidfd, no thread) reports nothing,
//! and the caller waits out its grace periods instead. A watch is cheap to clone, and
//! its clones may wait at the same time: the connection's liveness watch waits on
//! one while shutdown waits on another.

use std::process::ExitStatus;

#[cfg(all(target_os = "linux", not(feature = "portable-process")))]
pub(super) use self::pidfd::ExitWatch;
#[cfg(any(not(target_os = "linux"), feature = "portable-process"))]
pub(super) use self::waiting_thread::ExitWatch;

#[cfg(all(target_os = "linux", not(feature = "portable-process")))]
mod pidfd {
    use std::{
        os::fd::{FromRawFd, OwnedFd},
        sync::Arc,
    };

    use tokio::io::{Interest, unix::AsyncFd};

    /// Readable once the process has exited.
    #[derive(Clone)]
    pub(in super::super) struct ExitWatch(Option<Arc<AsyncFd<OwnedFd>>>);

    impl ExitWatch {
        /// Starts watching `pid`, a child of this process that is not reaped.
        pub(in super::super) fn new(pid: libc::pid_t) -> Self {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            if fd < 0 {
                tracing::warn!(
                    error = %std::io::Error::last_os_error(),
                    "pidfd_open failed: server shutdown cannot wait for a grace period"
                );
                return Self(None);
            }
            // SAFETY: `fd` is a new descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            // SAFETY: the OwnedFd is moved into the AsyncFd, which alone closes it, so it
            // stays open and the same for the AsyncFd's whole life.
            let registered = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
            Self(registered.ok().map(Arc::new))
        }

        /// Resolves once the process has exited; never, if it cannot be watched.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe: it only waits.
        pub(in super::super) async fn exited(&self) {
            match &self.0 {
                Some(fd) => {
                    let _ = fd.readable().await;
                }
                None => std::future::pending().await,
            }
        }
    }
}

#[cfg(any(not(target_os = "linux"), feature = "portable-process"))]
mod waiting_thread {
    use tokio::sync::watch;

    /// Set once the process has exited.
    #[derive(Clone)]
    pub(in super::super) struct ExitWatch(watch::Receiver<bool>);

    impl ExitWatch {
        /// Starts watching `pid`, a child of this process that is not reaped. The
        /// thread starts at once, long before the runtime reaps the child (only after
        /// it has exited), so it waits for this child and no later one with its pid.
        pub(in super::super) fn new(pid: libc::pid_t) -> Self {
            let (exited, receiver) = watch::channel(false);
            let spawned = std::thread::Builder::new()
                .name(format!("mcp-runtime-exit-{pid}"))
                .spawn(move || {
                    if wait_without_reaping(pid) {
                        exited.send_replace(true);
                    }
                });
            if let Err(error) = spawned {
                tracing::warn!(
                    %error,
                    "cannot start a thread to watch a server's exit: server shutdown cannot wait for a grace period"
                );
            }
            Self(receiver)
        }

        /// Resolves once the process has exited; never, if it cannot be watched.
        ///
        /// # Cancel safety
        ///
        /// Cancel safe: it only waits.
        pub(in super::super) async fn exited(&self) {
            let mut receiver = self.0.clone();
            if receiver.wait_for(|exited| *exited).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Blocks until `pid` has exited, leaving it unreaped. Whether it did: `false` if
    /// it cannot be waited for (the watch then reports nothing).
    fn wait_without_reaping(pid: libc::pid_t) -> bool {
        loop {
            // SAFETY: an all-zero siginfo_t is valid; waitid writes it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is valid for writes; WNOWAIT leaves the child waitable, so
            // its pid stays its own until the runtime reaps it.
            let result = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if result == 0 {
                return true;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                // Reaped already (by the runtime, after `SIGKILL`): it has exited.
                Some(libc::ECHILD) => return true,
                _ => {
                    tracing::warn!(
                        error = %std::io::Error::last_os_error(),
                        "waitid failed: server shutdown cannot wait for a grace period"
                    );
                    return false;
                }
            }
        }
    }
}

/// How `pid` exited, if it has, leaving it unreaped.
pub(super) fn peek_exit_status(pid: libc::pid_t) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;

    // SAFETY: an all-zero siginfo_t is valid; waitid writes it for an exited child.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid for writes; WNOWAIT leaves the child waitable.
    let result = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
        )
    };
    let (child, status) = pid_and_status(&info);
    if result != 0 || child != pid {
        return None;
    }
    // Rebuild a wait status: exit code in the second byte, or the signal.
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        _ => status & 0x7f,
    };
    Some(ExitStatus::from_raw(raw))
}

/// The pid and status that `waitid` wrote into `info` (zero when it wrote nothing).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn pid_and_status(info: &libc::siginfo_t) -> (libc::pid_t, libc::c_int) {
    // SAFETY: si_pid and si_status are the fields waitid sets for a child that
    // changed state, and zero (from the zeroed value) otherwise.
    unsafe { (info.si_pid(), info.si_status()) }
}

/// The pid and status that `waitid` wrote into `info` (zero when it wrote nothing).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn pid_and_status(info: &libc::siginfo_t) -> (libc::pid_t, libc::c_int) {
    (info.si_pid, info.si_status)
}

#[cfg(test)]
mod tests {
    use std::{os::unix::process::ExitStatusExt, time::Duration};

    use tokio::process::Command;

    use super::*;

    #[tokio::test]
    async fn an_exit_is_seen_without_reaping_the_process() {
        let mut child = Command::new("sh").args(["-c", "exit 7"]).spawn().unwrap();
        let pid = child.id().unwrap() as libc::pid_t;
        let watch = ExitWatch::new(pid);
        tokio::time::timeout(Duration::from_secs(60), watch.exited())
            .await
            .expect("the exit is seen");
        // Seen again at once, and still unreaped: its status can be read, then reaped.
        watch.exited().await;
        assert_eq!(peek_exit_status(pid).and_then(|s| s.code()), Some(7));
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
    }

    #[tokio::test]
    async fn a_running_process_has_not_exited() {
        let mut child = Command::new("sleep")
            .arg("3600")
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap() as libc::pid_t;
        let watch = ExitWatch::new(pid);
        assert!(peek_exit_status(pid).is_none());
        {
            let exited = std::pin::pin!(watch.exited());
            assert!(futures::poll!(exited).is_pending());
        }
        child.start_kill().unwrap();
        tokio::time::timeout(Duration::from_secs(60), watch.exited())
            .await
            .expect("the exit is seen");
        assert_eq!(
            peek_exit_status(pid).and_then(|s| s.signal()),
            Some(libc::SIGKILL)
        );
        child.wait().await.unwrap();
    }
}
