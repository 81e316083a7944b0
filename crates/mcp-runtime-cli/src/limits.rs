//! The CLI's limit on open files.
//!
//! Each local server holds several of this process's descriptors (its three pipes,
//! and the descriptors that watch its exit), so a soft `RLIMIT_NOFILE` of a few
//! hundred (macOS's default is 256) allows only some dozens of servers. The CLI
//! raises its soft limit to the hard limit as it starts, as other tools that run
//! many children do; a library host does the same itself (see `docs/library.md`).

/// Raises the soft limit on open files to the hard limit (on macOS, at most
/// `OPEN_MAX`, which `setrlimit` refuses to exceed there). A failure is only logged:
/// the CLI then runs with the limit it was given.
pub fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes the limit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "cannot read the open files limit");
        return;
    }
    // `OPEN_MAX` of <sys/syslimits.h>, which the `libc` crate does not export.
    #[cfg(target_os = "macos")]
    let wanted = limit.rlim_max.min(10_240);
    #[cfg(not(target_os = "macos"))]
    let wanted = limit.rlim_max;
    if limit.rlim_cur >= wanted {
        return;
    }
    let raised = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: `setrlimit` only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "cannot raise the open files limit");
    }
}
