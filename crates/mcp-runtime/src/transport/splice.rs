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
//!    cannot forge one, and the nonce is per connection. Only a placeholder that is a
//!    whole JSON string (not text inside another string) is replaced.
//! 2. A slot lives exactly as long as its call. A message whose call is gone (dropped
//!    before rmcp wrote it, or re-sent by an HTTP session recovery after the caller gave
//!    up) is not sent at all: a server never receives a placeholder, nor a state that
//!    no call is waiting on.

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
    slots: Mutex<HashMap<u64, Arc<RawValue>>>,
}

/// What [`Splicer::splice`] made of a message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Spliced {
    /// It holds no placeholder: send it as it is.
    Untouched,
    /// Send these bytes instead.
    Replaced(Vec<u8>),
    /// Its call is gone: do not send it.
    Orphaned,
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

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<RawValue>>> {
        self.0
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers `raw` and returns the placeholder string to put in its place, with a
    /// guard that ends the slot when the call ends.
    pub(crate) fn placeholder(&self, raw: Arc<RawValue>) -> (String, SlotGuard) {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed);
        self.slots().insert(id, raw);
        let placeholder = format!("{}{id}", &self.0.marker[1..]);
        (
            placeholder,
            SlotGuard {
                splicer: self.clone(),
                id,
            },
        )
    }

    /// `message` with every placeholder replaced by its text.
    pub(crate) fn splice(&self, message: &[u8]) -> Spliced {
        let marker = self.0.marker.as_bytes();
        if find(message, marker).is_none() {
            return Spliced::Untouched;
        }
        let slots = self.slots();
        let mut out = Vec::with_capacity(message.len());
        let mut at = 0;
        while let Some(found) = find(&message[at..], marker).map(|found| at + found) {
            let start = found + marker.len();
            let digits = message[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let closes = message.get(start + digits) == Some(&b'"');
            let id = std::str::from_utf8(&message[start..start + digits])
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok());
            match id {
                Some(id) if closes && !escaped(message, found) => {
                    let Some(raw) = slots.get(&id) else {
                        return Spliced::Orphaned;
                    };
                    out.extend_from_slice(&message[at..found]);
                    out.extend_from_slice(raw.get().as_bytes());
                    at = start + digits + 1;
                }
                _ => {
                    // Text inside another string, or not a placeholder: keep it.
                    out.extend_from_slice(&message[at..start]);
                    at = start;
                }
            }
        }
        out.extend_from_slice(&message[at..]);
        Spliced::Replaced(out)
    }
}

/// Whether the quote at `at` is escaped: preceded by an odd number of backslashes,
/// so part of a string's text rather than the start of a string.
fn escaped(message: &[u8], at: usize) -> bool {
    message[..at]
        .iter()
        .rev()
        .take_while(|&&byte| byte == b'\\')
        .count()
        % 2
        == 1
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

/// Ends a slot when its call ends.
pub(crate) struct SlotGuard {
    splicer: Splicer,
    id: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.splicer.slots().remove(&self.id);
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
                Spliced::Untouched => this.out.extend_from_slice(&line),
                Spliced::Replaced(spliced) => this.out.extend_from_slice(&spliced),
                Spliced::Orphaned => {
                    tracing::debug!("not sending a request whose call was dropped");
                }
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

    fn replaced(spliced: Spliced) -> String {
        match spliced {
            Spliced::Replaced(bytes) => String::from_utf8(bytes).unwrap(),
            other => panic!("expected a replacement, got {other:?}"),
        }
    }

    #[test]
    fn placeholders_are_replaced_by_their_exact_text() {
        let splicer = Splicer::new();
        let text = r#"{ "b" : 123456789012345678901234567890, "a": "\u00e9" }"#;
        let (placeholder, _guard) = splicer.placeholder(raw(text));
        let message = serde_json::to_vec(&serde_json::json!({
            "_meta": {"x": placeholder, "y": placeholder, "z": "keep"}
        }))
        .unwrap();
        assert_eq!(
            replaced(splicer.splice(&message)),
            format!(r#"{{"_meta":{{"x":{text},"y":{text},"z":"keep"}}}}"#)
        );
        assert_eq!(
            splicer.splice(br#"{"plain":"mcp-runtime-raw-0"}"#),
            Spliced::Untouched
        );
    }

    #[test]
    fn a_placeholder_inside_another_string_is_left_alone() {
        let splicer = Splicer::new();
        let (placeholder, _guard) = splicer.placeholder(raw("{}"));
        // A model that learned the placeholder and quotes it inside an argument.
        let message = serde_json::to_vec(&serde_json::json!({
            "arguments": {"text": format!("say \"{placeholder}\"")},
            "_meta": {"x": placeholder},
        }))
        .unwrap();
        let out = replaced(splicer.splice(&message));
        assert!(out.contains(&format!(r#"say \"{placeholder}\""#)), "{out}");
        assert!(out.ends_with(r#""_meta":{"x":{}}}"#), "{out}");
    }

    #[test]
    fn a_message_whose_call_is_gone_is_not_sent() {
        let splicer = Splicer::new();
        let (placeholder, guard) = splicer.placeholder(raw("[1]"));
        let message = format!("[\"{placeholder}\"]");
        // Written (and re-sent) while the call runs.
        assert_eq!(replaced(splicer.splice(message.as_bytes())), "[[1]]");
        assert_eq!(replaced(splicer.splice(message.as_bytes())), "[[1]]");
        drop(guard);
        assert!(splicer.slots().is_empty(), "the slot ends with the call");
        assert_eq!(splicer.splice(message.as_bytes()), Spliced::Orphaned);
    }

    #[test]
    fn a_forged_placeholder_from_another_connection_is_left_alone() {
        let one = Splicer::new();
        let two = Splicer::new();
        let (placeholder, _guard) = one.placeholder(raw("{}"));
        let message = format!("[\"{placeholder}\"]");
        assert_eq!(two.splice(message.as_bytes()), Spliced::Untouched);
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
