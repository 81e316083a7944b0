//! Byte-exact JSON in outgoing messages.
//!
//! rmcp builds every message from typed values, and a `serde_json::Value` cannot hold a
//! JSON text exactly (escapes are decoded, large numbers become floats). So a value that
//! must reach the server byte for byte (the host's sandbox state) is put into the message
//! as a placeholder string, and the bytes the transport writes are rewritten: every
//! quoted placeholder is replaced by the exact text. For stdio that happens in
//! [`SplicingWriter`], below rmcp's framing; for HTTP in [`SplicingHttpClient`], which
//! serializes the POST body itself when a message carries a placeholder.
//!
//! Invariants:
//! 1. Placeholders are `mcp-runtime-raw-<128-bit random nonce>-<n>`: a model or a server
//!    cannot forge one, and the nonce is per connection.
//! 2. A slot lives until its call has finished *and* its message has been written at
//!    least once; a request that is written after its call was dropped, or written again
//!    by an HTTP session recovery, still finds its text.

use std::{
    collections::HashMap,
    io,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll, ready},
};

use serde_json::value::RawValue;
use tokio::io::AsyncWrite;

/// Placeholders and the exact texts they stand for, for one connection.
#[derive(Clone)]
pub(crate) struct Splicer(Arc<Inner>);

struct Inner {
    /// `"mcp-runtime-raw-<nonce>-`, with the opening quote.
    marker: String,
    next: AtomicU64,
    slots: Mutex<HashMap<u64, Slot>>,
}

struct Slot {
    raw: Arc<RawValue>,
    written: bool,
    call_done: bool,
}

impl Splicer {
    pub(crate) fn new() -> Self {
        let nonce = u128::from_le_bytes(random_bytes());
        Self(Arc::new(Inner {
            marker: format!("\"mcp-runtime-raw-{nonce:032x}-"),
            next: AtomicU64::new(0),
            slots: Mutex::default(),
        }))
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        self.0
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers `raw` and returns the placeholder string to put in its place, with a
    /// guard that marks the call finished when dropped.
    pub(crate) fn placeholder(&self, raw: Arc<RawValue>) -> (String, SlotGuard) {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed);
        self.slots().insert(
            id,
            Slot {
                raw,
                written: false,
                call_done: false,
            },
        );
        let placeholder = format!("{}{id}", &self.0.marker[1..]);
        (
            placeholder,
            SlotGuard {
                splicer: self.clone(),
                id,
            },
        )
    }

    /// `message` with every quoted placeholder replaced by its text, or `None` when it
    /// holds none.
    pub(crate) fn splice(&self, message: &[u8]) -> Option<Vec<u8>> {
        let marker = self.0.marker.as_bytes();
        let mut found = find(message, marker)?;
        let mut slots = self.slots();
        let mut out = Vec::with_capacity(message.len());
        let mut rest = message;
        let mut used = Vec::new();
        loop {
            out.extend_from_slice(&rest[..found]);
            let after = &rest[found + marker.len()..];
            let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
            let id = std::str::from_utf8(&after[..digits])
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok());
            match (id, after.get(digits)) {
                (Some(id), Some(b'"')) => {
                    match slots.get_mut(&id) {
                        Some(slot) => {
                            out.extend_from_slice(slot.raw.get().as_bytes());
                            slot.written = true;
                            used.push(id);
                        }
                        None => {
                            // Not reachable while invariant 2 holds; never send the
                            // placeholder itself as a value.
                            tracing::error!("a placeholder outlived its value; sending null");
                            out.extend_from_slice(b"null");
                        }
                    }
                    rest = &after[digits + 1..];
                }
                _ => {
                    out.extend_from_slice(&rest[found..found + marker.len()]);
                    rest = after;
                }
            }
            match find(rest, marker) {
                Some(next) => found = next,
                None => break,
            }
        }
        out.extend_from_slice(rest);
        for id in used {
            if slots.get(&id).is_some_and(|slot| slot.call_done) {
                slots.remove(&id);
            }
        }
        Some(out)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn random_bytes() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    // Each RandomState is keyed from the operating system's randomness.
    let mut bytes = [0; 16];
    for (index, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(index);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    bytes
}

/// Marks a call finished; its slot goes once its message has been written.
pub(crate) struct SlotGuard {
    splicer: Splicer,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut slots = self.splicer.slots();
        match slots.get_mut(&self.id) {
            Some(slot) if slot.written => {
                slots.remove(&self.id);
            }
            Some(slot) => slot.call_done = true,
            None => {}
        }
    }
}

/// Writes newline-delimited messages to `inner`, splicing each complete line.
pub(crate) struct SplicingWriter<W> {
    inner: W,
    splicer: Splicer,
    /// The incomplete line received so far, and how much of it holds no newline.
    line: Vec<u8>,
    scanned: usize,
    /// Spliced bytes not yet accepted by `inner`.
    out: Vec<u8>,
    written: usize,
}

impl<W> SplicingWriter<W> {
    pub(crate) fn new(inner: W, splicer: Splicer) -> Self {
        Self {
            inner,
            splicer,
            line: Vec::new(),
            scanned: 0,
            out: Vec::new(),
            written: 0,
        }
    }
}

impl<W: AsyncWrite + Unpin> SplicingWriter<W> {
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.out.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SplicingWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        this.line.extend_from_slice(buf);
        while let Some(at) = this.line[this.scanned..].iter().position(|&b| b == b'\n') {
            let rest = this.line.split_off(this.scanned + at + 1);
            let line = std::mem::replace(&mut this.line, rest);
            match this.splicer.splice(&line) {
                Some(spliced) => this.out.extend_from_slice(&spliced),
                None => this.out.extend_from_slice(&line),
            }
            this.scanned = 0;
        }
        this.scanned = this.line.len();
        // The bytes are taken; writing them on may wait for the next flush.
        if let Poll::Ready(Err(error)) = this.poll_drain(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn raw(text: &str) -> Arc<RawValue> {
        Arc::from(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn placeholders_are_replaced_by_their_exact_text() {
        let splicer = Splicer::new();
        let text = r#"{ "b" : 1e400, "a": "\u00e9" }"#;
        let (placeholder, _guard) = splicer.placeholder(raw(text));
        let message = serde_json::to_vec(&serde_json::json!({
            "_meta": {"x": placeholder, "y": placeholder, "z": "keep"}
        }))
        .unwrap();
        let spliced = String::from_utf8(splicer.splice(&message).unwrap()).unwrap();
        assert_eq!(
            spliced,
            format!(r#"{{"_meta":{{"x":{text},"y":{text},"z":"keep"}}}}"#)
        );
        assert!(
            splicer
                .splice(br#"{"plain":"mcp-runtime-raw-0"}"#)
                .is_none()
        );
    }

    #[test]
    fn a_slot_lives_until_its_call_is_done_and_its_message_written() {
        let splicer = Splicer::new();
        let (placeholder, guard) = splicer.placeholder(raw("[1]"));
        let message = format!("[\"{placeholder}\"]");
        drop(guard); // the call was dropped before the request was written
        assert_eq!(splicer.splice(message.as_bytes()).unwrap(), b"[[1]]");
        assert!(splicer.slots().is_empty(), "written and done: released");

        let (placeholder, guard) = splicer.placeholder(raw("[2]"));
        let message = format!("[\"{placeholder}\"]");
        assert_eq!(splicer.splice(message.as_bytes()).unwrap(), b"[[2]]");
        // Written again (a session recovery) while the call is still running.
        assert_eq!(splicer.splice(message.as_bytes()).unwrap(), b"[[2]]");
        drop(guard);
        assert!(splicer.slots().is_empty());
    }

    #[test]
    fn a_forged_placeholder_from_another_connection_is_left_alone() {
        let one = Splicer::new();
        let two = Splicer::new();
        let (placeholder, _guard) = one.placeholder(raw("{}"));
        let message = format!("[\"{placeholder}\"]");
        assert!(two.splice(message.as_bytes()).is_none());
    }

    #[tokio::test]
    async fn the_writer_splices_lines_written_in_pieces() {
        let splicer = Splicer::new();
        let (placeholder, _guard) = splicer.placeholder(raw(r#"{"k": "\/"}"#));
        let first = format!("{{\"a\":\"{placeholder}\"}}\n{{\"b\":2}}\n");
        let mut output = Vec::new();
        {
            let mut writer = SplicingWriter::new(&mut output, splicer.clone());
            for chunk in first.as_bytes().chunks(7) {
                writer.write_all(chunk).await.unwrap();
            }
            writer.flush().await.unwrap();
        }
        assert_eq!(
            String::from_utf8(output).unwrap(),
            "{\"a\":{\"k\": \"\\/\"}}\n{\"b\":2}\n"
        );
    }
}
