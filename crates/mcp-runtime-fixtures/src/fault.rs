//! Faults the fixture process injects into itself: crashing with a status and
//! a stderr tail, flooding stderr, ignoring `SIGTERM`.

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
