//! The fault [`Fault::DieDuringCall`](super::Fault::DieDuringCall): the process
//! exits in the middle of a `tools/call`, as a server killed mid-call does, at a
//! point that does not depend on timing.
//!
//! How far the answer got before the process exits is [`Death`]'s to say. When the
//! answer has begun, the process exits from inside the connection's write, right
//! after the event stream's last bytes ([`LAST_WORDS`]) went to the kernel: the
//! client receives them, then the connection's end (the kernel closes the sockets
//! of an exiting process). The request was read whole first, so the kernel ends the
//! connection with a `FIN`, not a reset that could drop the bytes the client has not
//! read yet. The listening socket is closed first ([`listening_on`]), so a client
//! that saw the connection end finds the port refusing connections: the kernel
//! closes an exiting process's sockets in the order of their descriptors, and an
//! accepted connection may have a lower one than the listener.

use std::{
    convert::Infallible,
    io,
    os::fd::{AsRawFd, RawFd},
    pin::Pin,
    sync::atomic::{AtomicI32, Ordering},
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::Body;

/// What a server dying during a `tools/call` sends before it exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Death {
    /// Nothing: it exits as soon as it has read the request.
    BeforeAnswering,
    /// An event stream with one event, then it exits.
    MidStream,
    /// An event stream with one event that has an id (so a client may resume the
    /// stream from it, `Last-Event-ID`), then it exits.
    MidResumableStream,
}

/// The status the process exits with.
pub const EXIT_STATUS: i32 = 7;
/// The id of the event [`Death::MidResumableStream`] sends.
pub const EVENT_ID: &str = "mcp-fixture-0";
/// The comment that ends what a dying answer writes; the process exits once it is
/// written.
const LAST_WORDS: &[u8] = b": mcp-fixture exits now";

/// The descriptor of the listening socket, closed first when the process dies.
static LISTENER: AtomicI32 = AtomicI32::new(-1);

/// Notes `listener`, the server's listening socket, to close it first when the
/// process dies.
pub fn listening_on(listener: &impl AsRawFd) {
    LISTENER.store(listener.as_raw_fd(), Ordering::SeqCst);
}

/// Ends the process at once, as a kill would (no exit handler runs while the other
/// threads go on serving), its listening socket closed first.
pub fn exit_now() -> ! {
    eprintln!("mcp-fixture: dying during tools/call");
    let listener: RawFd = LISTENER.load(Ordering::SeqCst);
    // SAFETY: the descriptor is the listener's, which nothing uses after this (the
    // process ends on the next line); `_exit` ends the process without touching its
    // memory, and nothing of it needs to be flushed or dropped.
    unsafe {
        if listener >= 0 {
            libc::close(listener);
        }
        libc::_exit(EXIT_STATUS)
    }
}

/// The answer of a `tools/call` under `death` (not [`Death::BeforeAnswering`]): an
/// event stream whose one event is a priming event (no data), with an id when the
/// stream can be resumed, followed by [`LAST_WORDS`]; its body never ends (it is
/// chunked, and the process exits before the last chunk).
pub fn last_answer(death: Death) -> Response<Body> {
    let id = match death {
        Death::MidResumableStream => format!("id: {EVENT_ID}\n"),
        Death::MidStream | Death::BeforeAnswering => String::new(),
    };
    let mut text = format!("{id}data: \n\n").into_bytes();
    text.extend_from_slice(LAST_WORDS);
    text.extend_from_slice(b"\n\n");
    let body = Unfinished {
        text: Some(Bytes::from(text)),
    };
    let mut response = Response::new(body.boxed());
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// A body that sends `text`, then never ends.
struct Unfinished {
    text: Option<Bytes>,
}

impl hyper::body::Body for Unfinished {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        match self.text.take() {
            Some(text) => Poll::Ready(Some(Ok(hyper::body::Frame::data(text)))),
            // Never woken: the process exits once the text is written.
            None => Poll::Pending,
        }
    }
}

/// A connection that exits the process once [`LAST_WORDS`] have been written to it.
pub struct Dying<T> {
    inner: T,
    /// How much of [`LAST_WORDS`] the bytes written so far end with.
    matched: usize,
}

impl<T> Dying<T> {
    /// `inner`, watched.
    pub fn new(inner: T) -> Self {
        Self { inner, matched: 0 }
    }

    /// Follows `written`, the bytes the kernel took; true once they complete
    /// [`LAST_WORDS`].
    fn said_last_words(&mut self, written: &[u8]) -> bool {
        for &byte in written {
            self.matched = if byte == LAST_WORDS[self.matched] {
                self.matched + 1
            } else {
                usize::from(byte == LAST_WORDS[0])
            };
            if self.matched == LAST_WORDS.len() {
                return true;
            }
        }
        false
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Dying<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Dying<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled
            && self.said_last_words(&buf[..written])
        {
            exit_now();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_words_are_found_across_writes_and_after_a_false_start() {
        let mut dying = Dying::new(());
        assert!(!dying.said_last_words(b"data: \n\n: mcp-fix"));
        assert!(!dying.said_last_words(b": mcp-fixture exits"));
        assert!(dying.said_last_words(b" now\n\n"));
    }
}
