//! The process's standard input and output as a transport for one client, read and
//! written on tokio's reactor when they are pipes or sockets.
//!
//! rmcp's `transport::stdio()` is tokio's `Stdin` and `Stdout`, which read and write
//! on the blocking pool: every message read or written is handed to a thread of the
//! pool and back, two thread switches per message each way. What a client starts its
//! server with is a pipe (or, from Node, a socket), which can be made non-blocking and
//! watched by the reactor instead: a message is then read on the thread that serves it.
//! Anything else (a terminal, a file) is read and written as rmcp would.
//!
//! Invariant: the standard input and output are made non-blocking only when they are
//! a pipe or a socket, which only this process and its client hold; nothing else of
//! the process writes to its standard output (the log goes to standard error).

use std::{fs::File, io, os::fd::AsFd, os::unix::fs::FileTypeExt, pin::Pin};

use tokio::io::{AsyncRead, AsyncWrite};

/// The client's messages, read.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// The answers to the client, written.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// Standard input and output as a transport (see the module docs); rmcp serves a
/// handler over the pair.
///
/// # Panics
///
/// Outside a tokio runtime with its reactor.
pub fn stdio() -> (Input, Output) {
    let input = match duplicate(&io::stdin()) {
        Some((file, Kind::Pipe)) => tokio::net::unix::pipe::Receiver::from_file(file)
            .ok()
            .map(|pipe| Box::pin(pipe) as Input),
        Some((file, Kind::Socket)) => socket(file).map(|socket| Box::pin(socket) as Input),
        None => None,
    };
    let output = match duplicate(&io::stdout()) {
        Some((file, Kind::Pipe)) => tokio::net::unix::pipe::Sender::from_file(file)
            .ok()
            .map(|pipe| Box::pin(pipe) as Output),
        Some((file, Kind::Socket)) => socket(file).map(|socket| Box::pin(socket) as Output),
        None => None,
    };
    (
        input.unwrap_or_else(|| Box::pin(tokio::io::stdin())),
        output.unwrap_or_else(|| Box::pin(tokio::io::stdout())),
    )
}

enum Kind {
    Pipe,
    Socket,
}

/// A handle of its own on `stream`'s descriptor, when it is a pipe or a socket.
fn duplicate(stream: &impl AsFd) -> Option<(File, Kind)> {
    let file = File::from(stream.as_fd().try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    let kind = if kind.is_fifo() {
        Kind::Pipe
    } else if kind.is_socket() {
        Kind::Socket
    } else {
        return None;
    };
    Some((file, kind))
}

/// A socket descriptor, non-blocking, on the reactor.
fn socket(file: File) -> Option<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
    socket.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(socket).ok()
}
