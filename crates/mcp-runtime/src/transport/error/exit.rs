//! [`ProcessExit`]: how a local server's process ended, as its errors report it.

use std::os::unix::process::ExitStatusExt as _;

/// How a server process ended: with an exit code, or by a signal. Its text is the
/// one the operating system's status reads as: `exit status: 3`,
/// `signal: 9 (SIGKILL)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProcessExit {
    /// The process exited with this code.
    Code(i32),
    /// This signal ended the process.
    Signal(i32),
}

impl ProcessExit {
    /// The exit code, if the process exited by itself.
    pub fn code(self) -> Option<i32> {
        match self {
            Self::Code(code) => Some(code),
            Self::Signal(_) => None,
        }
    }

    /// The signal that ended the process, if one did.
    pub fn signal(self) -> Option<i32> {
        match self {
            Self::Signal(signal) => Some(signal),
            Self::Code(_) => None,
        }
    }

    /// The wait status this stands for.
    fn raw(self) -> i32 {
        match self {
            Self::Code(code) => (code & 0xff) << 8,
            Self::Signal(signal) => signal & 0x7f,
        }
    }
}

impl From<std::process::ExitStatus> for ProcessExit {
    /// The status of a process that has exited. A status of neither kind (a stopped
    /// process, which is not an exit) reads as the signal that stopped it.
    fn from(status: std::process::ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Code(code),
            (None, Some(signal)) => Self::Signal(signal),
            (None, None) => Self::Signal(status.stopped_signal().unwrap_or_default()),
        }
    }
}

impl std::fmt::Display for ProcessExit {
    /// As the standard library writes the status: it names the signal too.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::process::ExitStatus::from_raw(self.raw()).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_reads_as_the_operating_system_writes_it_with_the_signal_named() {
        assert_eq!(ProcessExit::Code(3).to_string(), "exit status: 3");
        assert_eq!(ProcessExit::Signal(9).to_string(), "signal: 9 (SIGKILL)");
        assert_eq!(ProcessExit::Signal(15).to_string(), "signal: 15 (SIGTERM)");
    }

    #[test]
    fn a_status_reads_as_its_code_or_its_signal() {
        use std::process::ExitStatus;
        let exit = |raw| ProcessExit::from(ExitStatus::from_raw(raw));
        assert_eq!(exit(3 << 8), ProcessExit::Code(3));
        assert_eq!(exit(9), ProcessExit::Signal(9));
        assert_eq!(exit(9).signal(), Some(9));
        assert_eq!(exit(0).code(), Some(0));
        // A core dump is an end by that signal.
        assert_eq!(exit(11 | 0x80), ProcessExit::Signal(11));
    }
}
