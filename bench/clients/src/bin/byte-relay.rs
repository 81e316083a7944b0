//! A process in the middle that does nothing but copy bytes: `byte-relay COMMAND
//! [ARGS…]` starts COMMAND with piped standard input and output, and copies its own
//! standard input to COMMAND's and COMMAND's standard output to its own, on two
//! threads with blocking reads. No parsing, no runtime: what an extra process costs a
//! call by its wake-ups and copies alone, beside `rmcp-proxy` (bench/compare,
//! scenario g).

use std::{
    io::{self, Read, Write},
    process::{Command, ExitCode, Stdio},
};

/// Copies `from` to `to` until `from` ends, each read written and flushed at once.
fn copy(mut from: impl Read, mut to: impl Write) -> io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = from.read(&mut buffer)?;
        if read == 0 {
            return Ok(());
        }
        to.write_all(&buffer[..read])?;
        to.flush()?;
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: byte-relay COMMAND [ARGS…]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("byte-relay: cannot start {}: {error}", program.display());
            return ExitCode::FAILURE;
        }
    };
    let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        unreachable!("both are piped");
    };
    let answers = std::thread::spawn(move || copy(output, io::stdout().lock()));
    // The client's end of input closes the server's, and the server then ends.
    let _ = copy(io::stdin().lock(), input);
    let _ = answers.join();
    match child.wait() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
