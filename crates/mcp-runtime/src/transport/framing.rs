//! The stdio transport: newline-delimited JSON-RPC over a local server's pipes, read
//! with a bound on every message.
//!
//! rmcp's own stdio transport drops a line longer than its limit and keeps going, so
//! the request that line answered waits out its whole timeout; it hands a response to
//! an id it never sent to the handshake, which then fails; and it stops reading the
//! server's stdout when the protocol closes, so a server still writing on its way out
//! dies of `EPIPE`. This transport keeps rmcp's protocol engine and replaces the read
//! side: it reads the server's stdout line by line where rmcp asks for the next
//! message (no task in between: a message costs no extra wake-up), and once dropped
//! hands stdout to a task that drains it; the write side is the [`SplicingWriter`]
//! over the server's stdin, unchanged.
//!
//! Invariants:
//! 1. Memory is bounded by `max_message_bytes`: a line is collected only while it
//!    fits; past the limit it is discarded as it arrives, while an [`IdScanner`]
//!    looks for its top-level `id` and `method` in a few bytes of state. A message
//!    gathered over several lines (invariant 7) is bounded by the limit too, and past
//!    it handled as an oversized line.
//! 2. Every request the runtime sends is *pending* from the moment rmcp hands it to
//!    the transport until an answer with its id arrives, its cancellation is sent or
//!    writing it fails. Only an answer to a pending request reaches rmcp; any other
//!    answer (an unsolicited `{"id":987654,"result":{}}` before `initialize`, a late
//!    answer to a cancelled call) is logged at debug level and dropped, and the
//!    connection stays up.
//! 3. A line over the limit fails at once the request it answers, with an error that
//!    names the server, the size and the limit: its top-level `id` when that is
//!    pending, or every pending request when the line has no readable `id`. An
//!    oversized request or notification from the server fails nothing of ours.
//! 4. Stdout is read until end of file: once the transport is dropped (the protocol
//!    has closed) a task keeps reading and discarding (for at most [`DRAIN_LIMIT`]),
//!    so a server that writes while it exits after its stdin closed never sees
//!    `EPIPE` (unless the Tokio runtime itself is gone). End of file comes when the
//!    server's process group is gone, which shutdown guarantees.
//! 5. Reading is cancel safe: rmcp polls `receive` beside other events and drops it
//!    when one of them comes first; a line read in part stays in the transport.
//! 6. A line rmcp cannot read is noise, a batch, or an answer the runtime cannot use
//!    (see [`refused`]): noise (a banner, a log line, JSON that is no message) is
//!    skipped, with one warning a connection naming the server (not the line); a
//!    batch is taken message by message, in order; an answer to a pending request
//!    that is not UTF-8 or not a response fails that request at once, with what came
//!    and why. A request from the server that cannot be read is answered with an
//!    invalid-request error.
//! 7. A line that begins a JSON object or array and does not end it starts a message
//!    printed over several lines, which the transport forbids: the lines that follow
//!    are gathered until the value ends, and an answer to a pending request fails it
//!    with the lines it took and what came. A line that is a message of its own ends
//!    the gathering as noise, and is read as usual.

use std::{
    borrow::Cow,
    collections::{HashSet, VecDeque},
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    RoleClient,
    model::{
        ClientJsonRpcMessage, ClientNotification, ErrorData, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::Transport,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

#[cfg(doc)]
use super::splice::SplicingWriter;
use super::{
    answer_id,
    raw_answers::RawAnswers,
    refused::{self, Unread},
};
use crate::transport::error::MessageRefused;

mod id_scanner;
pub(super) use self::id_scanner::IdScanner;

/// How long the reader keeps draining stdout after the protocol has closed, in case
/// something outside the server's process group holds the pipe open.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// How many error answers to the server's unreadable requests may wait to be written.
const MAX_ERROR_REPLIES: usize = 16;

/// The transport for one local server; see the module docs.
pub(crate) struct StdioTransport<W> {
    server: Arc<str>,
    limit: usize,
    /// `Some` until dropped (invariant 4).
    lines: Option<LineReader>,
    writer: Arc<tokio::sync::Mutex<Option<W>>>,
    pending: Arc<Mutex<Pending>>,
    /// The requests whose answers rmcp gets raw ([`RawAnswers`]).
    raw: RawAnswers,
    /// Errors made here for pending requests, and the messages of a batch after its
    /// first, delivered before the next line.
    queued: VecDeque<ServerJsonRpcMessage>,
    /// A message printed over several lines, being read (invariant 7).
    gathering: Option<Gathered>,
    /// Whether a line that is no message was seen (and warned of) yet.
    noise_seen: bool,
    /// Bounds the error answers on their way to the server.
    replies: Arc<tokio::sync::Semaphore>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> StdioTransport<W> {
    /// Reads `stdout` (until end of file: once dropped, in a task of its own on the
    /// current Tokio runtime) and writes `stdin`, for `server`, accepting lines of at
    /// most `max_message_bytes`.
    pub(crate) fn new(
        server: &str,
        stdout: impl AsyncRead + Unpin + Send + 'static,
        stdin: W,
        max_message_bytes: usize,
    ) -> Self {
        // One line being read at a time: memory stays within the limit plus the
        // read buffer.
        Self {
            server: server.into(),
            limit: max_message_bytes,
            lines: Some(LineReader::new(Box::new(stdout), max_message_bytes)),
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            pending: Arc::default(),
            raw: RawAnswers::default(),
            queued: VecDeque::new(),
            gathering: None,
            noise_seen: false,
            replies: Arc::new(tokio::sync::Semaphore::new(MAX_ERROR_REPLIES)),
        }
    }

    /// Writes `line`, the encoding of one message.
    fn write(
        &self,
        line: io::Result<Vec<u8>>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static + use<W> {
        let writer = self.writer.clone();
        async move {
            let line = line?;
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(io::ErrorKind::NotConnected.into());
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }

    /// Answers a request from the server with `error`, in the background. At most
    /// [`MAX_ERROR_REPLIES`] such answers are on their way at once: a server that
    /// sends unreadable requests without reading its stdin gets no more, rather than
    /// growing this process's tasks without bound.
    fn reply_error(&self, id: RequestId, error: ErrorData) {
        let Ok(permit) = self.replies.clone().try_acquire_owned() else {
            tracing::debug!(server = &*self.server, %id, "not answering: too many answers are waiting to be written");
            return;
        };
        let write = self.write(encode(&ClientJsonRpcMessage::error(error, Some(id))));
        tokio::spawn(async move {
            if let Err(error) = write.await {
                tracing::debug!(%error, "cannot answer the server's request");
            }
            drop(permit);
        });
    }

    /// What `line` holds for rmcp, if anything (see invariants 2, 6 and 7).
    fn parse(&mut self, line: &[u8]) -> Option<ServerJsonRpcMessage> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        // A line that is not part of a message being gathered is read on its own.
        if let Some(gathered) = self.gathering.take()
            && let Some(handled) = self.gather(gathered, line)
        {
            return handled;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        self.read(line, false)
    }

    /// What `text`, one message (a line, or an element of a batch when `in_batch`),
    /// holds for rmcp.
    fn read(&mut self, text: &[u8], in_batch: bool) -> Option<ServerJsonRpcMessage> {
        // Only a message that is UTF-8 throughout is handed over raw: the rewrite reads
        // the envelope's other fields without looking into them, and would pass an
        // answer whose bytes are not all text.
        let rewritten = if std::str::from_utf8(text).is_ok() {
            self.raw.rewrite(text)
        } else {
            None
        };
        let text = rewritten.as_deref().unwrap_or(text);
        let server = &*self.server;
        if let Ok(message) = serde_json::from_slice::<ServerJsonRpcMessage>(text) {
            let id = match &message {
                JsonRpcMessage::Response(response) => Some(&response.id),
                JsonRpcMessage::Error(error) => error.id.as_ref(),
                JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
            };
            return match id {
                Some(id) if !lock(&self.pending).take(id) => {
                    tracing::debug!(server, %id, "ignoring an answer to a request not in flight");
                    None
                }
                _ => Some(message),
            };
        }
        match refused::read(server, text) {
            Unread::Noise => {
                // Once a connection: a server that writes what it should not may be
                // one whose answers never come, and its timeout should not be all
                // the user sees. What it wrote is not quoted: it may hold anything.
                if std::mem::replace(&mut self.noise_seen, true) {
                    tracing::debug!(server, "ignoring a line that is not a JSON-RPC message");
                } else {
                    tracing::warn!(
                        server,
                        "skipped a line the server wrote on stdout that is not a JSON-RPC message (stdout is for its messages alone; later such lines are skipped silently)"
                    );
                }
                None
            }
            Unread::Incomplete if !in_batch => {
                let mut scanner = IdScanner::default();
                scanner.feed(text);
                self.gathering = Some(Gathered {
                    text: text.to_vec(),
                    lines: 1,
                    scanner,
                });
                None
            }
            Unread::Batch(elements) if !in_batch => {
                let mut messages = elements
                    .iter()
                    .filter_map(|element| self.read(element.get().as_bytes(), true));
                let first = messages.next();
                let rest: Vec<_> = messages.collect();
                self.queued.extend(rest);
                first
            }
            Unread::Incomplete | Unread::Batch(_) => {
                tracing::debug!(
                    server,
                    "ignoring an element of a batch that is not a message"
                );
                None
            }
            Unread::Request(id) => {
                tracing::debug!(server, %id, "answering a request that cannot be read");
                self.reply_error(id, ErrorData::invalid_request("Invalid request", None));
                None
            }
            Unread::Answer { id, refused } => self.refuse(id, &refused),
        }
    }

    /// Fails request `id` with `refused`, if it is pending (invariant 2).
    fn refuse(&self, id: RequestId, refused: &MessageRefused) -> Option<ServerJsonRpcMessage> {
        let server = &*self.server;
        // Its answer has come: later messages are not read for it.
        self.raw.answered(&id);
        if !lock(&self.pending).take(&id) {
            tracing::debug!(server, %id, "ignoring an unusable answer to a request not in flight");
            return None;
        }
        tracing::debug!(server, %id, "{refused}");
        Some(refused::answer(refused, id))
    }

    /// Adds `line` to `gathered`, a message printed over several lines (invariant 7):
    /// `None` when `line` is a message of its own, which ends the gathering as noise;
    /// else what the gathering gives once it is over, or `Some(None)` while it goes on.
    fn gather(
        &mut self,
        mut gathered: Gathered,
        line: &[u8],
    ) -> Option<Option<ServerJsonRpcMessage>> {
        let server = &*self.server;
        if is_a_message(line) {
            tracing::debug!(
                server,
                "ignoring lines that began a JSON value and did not end it"
            );
            return None;
        }
        let size = gathered.text.len() + 1 + line.len();
        if size > self.limit {
            gathered.scanner.feed(b"\n");
            gathered.scanner.feed(line);
            let (id, method) = gathered.scanner.finish();
            // Its errors are queued, delivered before the next line.
            self.oversized(Oversized {
                size: size as u64,
                id,
                method,
            });
            return Some(None);
        }
        gathered.text.push(b'\n');
        gathered.text.extend_from_slice(line);
        gathered.lines += 1;
        gathered.scanner.feed(b"\n");
        gathered.scanner.feed(line);
        if !gathered.scanner.closed() {
            self.gathering = Some(gathered);
            return Some(None);
        }
        let Gathered { text, lines, .. } = gathered;
        let refused = MessageRefused::SeveralLines {
            server: server.to_owned(),
            lines,
            sent: crate::transport::error::sent(&text),
        };
        Some(match refused::read(server, &text) {
            Unread::Answer { id, .. } => self.refuse(id, &refused),
            // A batch printed over several lines fails every answer in it.
            Unread::Batch(elements) => {
                let mut failed = elements.iter().filter_map(|element| {
                    match refused::read(server, element.get().as_bytes()) {
                        Unread::Answer { id, .. } => self.refuse(id, &refused),
                        _ => None,
                    }
                });
                let first = failed.next();
                let rest: Vec<_> = failed.collect();
                self.queued.extend(rest);
                first
            }
            Unread::Request(id) => {
                tracing::debug!(server, %id, "answering a request printed over several lines");
                self.reply_error(id, ErrorData::invalid_request("Invalid request", None));
                None
            }
            _ => {
                tracing::debug!(
                    server,
                    lines,
                    "ignoring a JSON value printed over several lines"
                );
                None
            }
        })
    }

    /// Fails what an oversized line answered (see invariant 3).
    fn oversized(&mut self, oversized: Oversized) {
        let server = &*self.server;
        let Oversized { size, id, method } = oversized;
        let limit = self.limit;
        let error = too_large(server, Some(size), limit);
        if method {
            tracing::warn!(
                server,
                size,
                limit,
                "dropped a request or notification over `max_message_bytes`"
            );
            if let Some(id) = id {
                let error = ErrorData::invalid_request(
                    format!("message of {size} bytes is over the client's limit of {limit} bytes"),
                    None,
                );
                self.reply_error(id, error);
            }
            return;
        }
        let failed: Vec<RequestId> = match id {
            Some(id) if lock(&self.pending).take(&id) => vec![id],
            Some(id) => {
                // Invariant 2: an answer to a request not in flight reaches nobody,
                // also when it is too large (an error for its id would fail the
                // handshake as the answer itself would have).
                tracing::debug!(server, %id, size, "ignoring an oversized answer to a request not in flight");
                return;
            }
            None => lock(&self.pending).ids.drain().collect(),
        };
        if failed.is_empty() {
            tracing::warn!(
                server,
                size,
                limit,
                "dropped a message over `max_message_bytes`"
            );
        }
        for id in failed {
            self.raw.answered(&id);
            tracing::debug!(server, %id, "{}", error.message);
            self.queued
                .push_back(ServerJsonRpcMessage::error(error.clone(), Some(id)));
        }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Transport<RoleClient> for StdioTransport<W> {
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut request = None;
        self.raw.sent(&item);
        match &item {
            JsonRpcMessage::Request(sent) => {
                lock(&self.pending).ids.insert(sent.id.clone());
                request = Some(sent.id.clone());
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    lock(&self.pending).take(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        let write = self.write(encode(&item));
        super::hand_back::give_back(item);
        let pending = self.pending.clone();
        let raw = self.raw.clone();
        async move {
            let result = write.await;
            if result.is_err()
                && let Some(id) = request
            {
                lock(&pending).take(&id);
                raw.forget(&id);
            }
            result
        }
    }

    /// # Cancel safety
    ///
    /// rmcp polls this in a `select!`: a dropped call loses nothing, as a line read in
    /// part stays in the transport and a whole one is handled without awaiting
    /// (invariant 5, [`LineReader::next`]).
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if let Some(message) = self.queued.pop_front() {
                return Some(message);
            }
            let lines = self.lines.as_mut().expect("read only until dropped");
            match lines.next().await? {
                Frame::Line(line) => {
                    if let Some(message) = self.parse(&line) {
                        return Some(message);
                    }
                }
                Frame::Oversized(oversized) => self.oversized(oversized),
            }
        }
    }

    /// Closes the server's stdin. Stdout is drained once the transport is dropped
    /// (invariant 4).
    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.writer.lock().await.take());
        Ok(())
    }
}

/// The error a request gets when its answer was over `limit` bytes: `size` bytes, when
/// known (an HTTP body or event is abandoned at the limit, unmeasured). It is the
/// client's refusal, not the server's error ([`refused`]).
pub(crate) fn too_large(server: &str, size: Option<u64>, limit: usize) -> ErrorData {
    refused::error_data(&MessageRefused::TooLarge {
        server: server.to_owned(),
        size,
        limit,
    })
}

/// Whether `line` is a JSON-RPC message of its own: a JSON object with `jsonrpc`.
fn is_a_message(line: &[u8]) -> bool {
    line.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{')
        && serde_json::from_slice::<serde_json::Value>(line)
            .is_ok_and(|value| value.get("jsonrpc").is_some())
}

/// `message` as a line of JSON.
fn encode(message: &impl serde::Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

use crate::sync::lock;

/// A message printed over several lines, read so far (invariant 7).
struct Gathered {
    /// Its lines, joined by `\n`; at most the limit.
    text: Vec<u8>,
    lines: usize,
    /// Finds where it ends, and its `id` should it grow past the limit.
    scanner: IdScanner,
}

/// The requests sent and not yet answered.
#[derive(Default)]
struct Pending {
    ids: HashSet<RequestId>,
}

impl Pending {
    /// Removes the request `answer` answers, if pending ([`answer_id`]).
    fn take(&mut self, answer: &RequestId) -> bool {
        answer_id::take_answered(&mut self.ids, answer)
    }
}

/// A line of the server's stdout.
enum Frame {
    /// A whole line within the limit, without its `\n`.
    Line(Vec<u8>),
    /// A line over the limit, discarded.
    Oversized(Oversized),
}

/// What is known of a discarded line.
#[derive(Debug, PartialEq)]
struct Oversized {
    /// Its length in bytes, without the `\n`.
    size: u64,
    /// Its top-level `id`, when it has a readable one.
    id: Option<RequestId>,
    /// Whether it has a top-level `method`: a request or notification.
    method: bool,
}

/// A server's stdout, read line by line within the limit.
struct LineReader {
    reader: BufReader<Box<dyn AsyncRead + Unpin + Send>>,
    limit: usize,
    /// The line read so far, while it fits.
    line: Vec<u8>,
    /// The size so far and the scanner of a line over the limit.
    discarding: Option<(u64, IdScanner)>,
    /// End of file or a read error was seen.
    ended: bool,
}

impl LineReader {
    fn new(stdout: Box<dyn AsyncRead + Unpin + Send>, limit: usize) -> Self {
        Self {
            reader: BufReader::new(stdout),
            limit,
            line: Vec::new(),
            discarding: None,
            ended: false,
        }
    }

    /// The next line, or `None` once stdout has ended (an unterminated last line is
    /// not a message) or cannot be read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe (invariant 5): what was read is consumed from the buffer only
    /// once it is in `self`, with no wait in between.
    async fn next(&mut self) -> Option<Frame> {
        let Self {
            reader,
            limit,
            line,
            discarding,
            ended,
        } = self;
        while !*ended {
            let available = match reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => {
                    tracing::debug!(%error, "cannot read the server's stdout");
                    *ended = true;
                    break;
                }
            };
            if available.is_empty() {
                *ended = true;
                break;
            }
            let newline = memchr::memchr(b'\n', available);
            let content = &available[..newline.unwrap_or(available.len())];
            match discarding {
                Some((size, scanner)) => {
                    scanner.feed(content);
                    *size += content.len() as u64;
                }
                None if line.len() + content.len() > *limit => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(line);
                    scanner.feed(content);
                    *discarding = Some(((line.len() + content.len()) as u64, scanner));
                    *line = Vec::new();
                }
                None => line.extend_from_slice(content),
            }
            debug_assert!(
                line.len() <= *limit,
                "a line is collected only while it fits"
            );
            let used = content.len() + usize::from(newline.is_some());
            reader.consume(used);
            if newline.is_none() {
                continue;
            }
            return Some(match discarding.take() {
                Some((size, scanner)) => {
                    let (id, method) = scanner.finish();
                    Frame::Oversized(Oversized { size, id, method })
                }
                None => Frame::Line(std::mem::take(line)),
            });
        }
        None
    }

    /// Reads and discards the rest of stdout, for at most [`DRAIN_LIMIT`].
    async fn drain(mut self) {
        if self.ended {
            return;
        }
        drop(std::mem::take(&mut self.line));
        let reader = &mut self.reader;
        let drain = async {
            loop {
                match reader.fill_buf().await {
                    Ok([]) | Err(_) => return,
                    Ok(available) => {
                        let used = available.len();
                        reader.consume(used);
                    }
                }
            }
        };
        if tokio::time::timeout(DRAIN_LIMIT, drain).await.is_err() {
            tracing::debug!("stopped draining a server's stdout that stayed open");
        }
    }
}

impl<W> Drop for StdioTransport<W> {
    fn drop(&mut self) {
        // Invariant 4. Outside a runtime (it is shutting down) there is nothing to
        // drain with, and the server goes with it.
        if let Some(lines) = self.lines.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(lines.drain());
        }
    }
}

#[cfg(test)]
mod tests;
