//! Faults the fixture process injects into itself: crashing with a status and
//! a stderr tail, flooding stderr, ignoring `SIGTERM`; and noting a `SIGTERM`.

use std::io::Write as _;

/// Write three lines to stderr that name `stage`, then exit with `status` at
/// once, without answering anything in flight.
pub fn exit_with_stderr(stage: &str, status: i32) -> ! {
    let mut stderr = std::io::stderr().lock();
    // The process is about to exit; a failed write changes nothing.
    let _ = writeln!(stderr, "fixture: handling {stage}");
    let _ = writeln!(stderr, "fixture: loading the tool database");
    let _ = writeln!(stderr, "fixture: fatal: crashed during {stage}");
    let _ = stderr.flush();
    std::process::exit(status);
}

/// Write at least `bytes` bytes to stderr in lines of 1 KiB (the last line
/// ends the flood), blocking while the reader does not keep up.
/// Nothing when `bytes` is 0.
pub fn flood_stderr(bytes: usize) -> std::io::Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let line = format!("fixture stderr flood {}\n", "x".repeat(1000));
    let mut stderr = std::io::stderr().lock();
    let mut written = 0;
    while written < bytes {
        stderr.write_all(line.as_bytes())?;
        written += line.len();
    }
    writeln!(stderr, "fixture stderr flood done")?;
    stderr.flush()
}

/// Ignore `SIGTERM` in this process and in every process it starts from now on
/// (an ignored signal stays ignored across `fork` and `exec`).
pub fn ignore_sigterm() -> std::io::Result<()> {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler and
    // touches no memory of this process.
    if unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// On `SIGTERM`, append this process's pid and a newline to `note` (in one `write`)
/// and exit 0: a server that was sent its grace period's `SIGTERM` says so, where one
/// killed outright says nothing. Call it before any other thread starts: `SIGTERM`
/// is blocked in this thread, and so in every thread started after, and taken by a
/// thread of its own waiting for it.
pub fn note_sigterm(note: std::path::PathBuf) -> std::io::Result<()> {
    // SAFETY: `sigset_t` is plain data that `sigemptyset` initializes.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, initialized signal set owned by this frame.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    // SAFETY: blocking a signal in the calling thread touches no memory of the process.
    let error = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if error != 0 {
        return Err(std::io::Error::from_raw_os_error(error));
    }
    std::thread::spawn(move || {
        let mut signal = 0;
        // SAFETY: `set` and `signal` are valid for the call.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            let line = format!("{}\n", std::process::id());
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&note)
                .and_then(|mut file| file.write_all(line.as_bytes()));
            std::process::exit(0);
        }
    });
    Ok(())
}
