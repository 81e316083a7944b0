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

use memchr::memmem;
use serde_json::value::RawValue;
use tokio::io::AsyncWrite;

/// Placeholders and the exact texts they stand for, for one connection.
#[derive(Clone)]
pub(crate) struct Splicer(Arc<Inner>);

struct Inner {
    /// `"mcp-runtime-raw-<nonce>-`, with the opening quote.
    marker: String,
    /// Searches for `marker`.
    finder: memmem::Finder<'static>,
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
        let nonce = random_nonce();
        let marker = format!("\"mcp-runtime-raw-{nonce:032x}-");
        Self(Arc::new(Inner {
            finder: memmem::Finder::new(marker.as_bytes()).into_owned(),
            marker,
            next: AtomicU64::new(0),
            slots: Mutex::default(),
        }))
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<RawValue>>> {
        crate::sync::lock(&self.0.slots)
    }

    /// Registers `raw` and returns the placeholder string to put in its place, with a
    /// guard that ends the slot when the call ends.
    pub(crate) fn placeholder(&self, raw: Arc<RawValue>) -> (String, SlotGuard) {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed);
        let previous = self.slots().insert(id, raw);
        debug_assert!(previous.is_none(), "each slot has its own id (invariant 2)");
        let placeholder = format!("{}{id}", &self.0.marker[1..]);
        (
            placeholder,
            SlotGuard {
                splicer: self.clone(),
                id,
            },
        )
    }

    /// Whether any call holds a slot now.
    #[cfg(feature = "http")]
    pub(crate) fn has_slots(&self) -> bool {
        !self.slots().is_empty()
    }

    /// `message` with every placeholder replaced by its text.
    pub(crate) fn splice(&self, message: &[u8]) -> Spliced {
        let marker = self.0.marker.as_bytes();
        let finder = &self.0.finder;
        if finder.find(message).is_none() {
            return Spliced::Untouched;
        }
        let slots = self.slots();
        let mut out = Vec::with_capacity(message.len());
        let mut at = 0;
        while let Some(found) = finder.find(&message[at..]).map(|found| at + found) {
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

    /// `raw` as a value rmcp can carry and this splicer writes back exactly: every leaf
    /// (number or string) whose text serde_json would write differently (a number
    /// beyond `f64`, `1e5`, `-0`, an escape such as `\u00e9`) becomes a placeholder
    /// for its own text, as does a number no `Value` can hold (`1e400`); objects and arrays are rebuilt around the leaves, keeping the
    /// order of their members. Object keys are decoded, never placeholders, so a
    /// reader of the keys (the reserved-key filter) sees the names the server will see.
    /// The slots end when `guards` is dropped.
    pub(crate) fn exact_value(
        &self,
        raw: &RawValue,
        guards: &mut Vec<SlotGuard>,
    ) -> Result<serde_json::Value, serde_json::Error> {
        use serde_json::Value;
        let text = raw.get();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let Members(members) = serde_json::from_str(text)?;
                let mut object = serde_json::Map::with_capacity(members.len());
                for (key, value) in members {
                    object.insert(key, self.exact_value(value, guards)?);
                }
                Value::Object(object)
            }
            Some(b'[') => {
                let elements: Vec<&RawValue> = serde_json::from_str(text)?;
                let elements = elements
                    .into_iter()
                    .map(|element| self.exact_value(element, guards))
                    .collect::<Result<_, _>>()?;
                Value::Array(elements)
            }
            _ => match serde_json::from_str::<Value>(text) {
                Ok(value) if serde_json::to_string(&value).is_ok_and(|again| again == text) => {
                    value
                }
                // Written differently, or beyond what a `Value` holds (`1e400`).
                _ => {
                    let (placeholder, guard) = self.placeholder(Arc::from(raw.to_owned()));
                    guards.push(guard);
                    Value::String(placeholder)
                }
            },
        })
    }
}

/// An object's members in their order, each value still raw.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visitor)
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

/// 128 bits from the operating system's random source.
fn random_nonce() -> u128 {
    let mut bytes = [0; 16];
    // Without the operating system's randomness a nonce could be guessed, and a
    // placeholder forged: nothing sensible can go on.
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    u128::from_le_bytes(bytes)
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
        // Whole lines are spliced where they lie: `buf` itself when no line was left
        // incomplete (the usual case: one message per write), else the pending line
        // with `buf` appended; what follows the last newline waits for the next write.
        let (text, scanned) = if this.line.is_empty() {
            (buf, 0)
        } else {
            this.line.extend_from_slice(buf);
            (&this.line[..], this.scanned)
        };
        let mut start = 0;
        let mut from = scanned;
        while let Some(at) = memchr::memchr(b'\n', &text[from..]) {
            let end = from + at + 1;
            let line = &text[start..end];
            match this.splicer.splice(line) {
                Spliced::Untouched => this.out.extend_from_slice(line),
                Spliced::Replaced(spliced) => this.out.extend_from_slice(&spliced),
                Spliced::Orphaned => {
                    tracing::debug!("not sending a request whose call was dropped");
                }
            }
            start = end;
            from = end;
        }
        if this.line.is_empty() {
            this.line.extend_from_slice(&buf[start..]);
        } else {
            this.line.drain(..start);
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

    #[test]
    fn exact_values_become_placeholders_only_where_needed() {
        let splicer = Splicer::new();
        let mut guards = Vec::new();
        let raw =
            RawValue::from_string(r#"{"a":1,"b":1e400,"c":"x","d":[-0]}"#.to_owned()).unwrap();
        let value = splicer.exact_value(&raw, &mut guards).unwrap();
        assert_eq!(guards.len(), 2, "`1e400` and `-0` only: {value}");
        assert_eq!(value["a"], 1);
        assert_eq!(value["c"], "x");
        let message = serde_json::to_vec(&value).unwrap();
        assert_eq!(
            replaced(splicer.splice(&message)),
            r#"{"a":1,"b":1e400,"c":"x","d":[-0]}"#
        );
        drop(guards);
        assert!(splicer.slots().is_empty());
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// JSON text as (exact compact text, the same with whitespace between tokens):
        /// numbers of any length and form, strings with every kind of escape.
        fn json_text() -> impl Strategy<Value = (String, String)> {
            let number = (
                any::<bool>(),
                "(0|[1-9][0-9]{0,40})",
                proptest::option::of("[0-9]{1,30}"),
                proptest::option::of(("[eE]", "[+-]?", "[0-9]{1,4}")),
            )
                .prop_map(|(negative, int, fraction, exponent)| {
                    let mut text = String::new();
                    if negative {
                        text.push('-');
                    }
                    text.push_str(&int);
                    if let Some(fraction) = fraction {
                        text.push('.');
                        text.push_str(&fraction);
                    }
                    if let Some((e, sign, digits)) = exponent {
                        text.push_str(&e);
                        text.push_str(&sign);
                        text.push_str(&digits);
                    }
                    text
                });
            let piece = prop_oneof![
                "[a-z ]{0,4}",
                Just(r#"\""#.to_owned()),
                Just(r#"\\"#.to_owned()),
                Just(r#"\/"#.to_owned()),
                Just(r#"\n"#.to_owned()),
                Just(r#"\u00e9"#.to_owned()),
                Just(r#"\ud83d\ude00"#.to_owned()),
                Just("é".to_owned()),
                Just("mcp-runtime-raw-".to_owned()),
            ];
            let string = proptest::collection::vec(piece, 0..5)
                .prop_map(|pieces| format!("\"{}\"", pieces.concat()));
            let leaf = prop_oneof![
                number,
                string,
                Just("true".to_owned()),
                Just("false".to_owned()),
                Just("null".to_owned()),
            ]
            .prop_map(|text| (text.clone(), text));
            leaf.prop_recursive(4, 48, 6, |inner| {
                let array = proptest::collection::vec(inner.clone(), 0..6).prop_map(|items| {
                    let compact: Vec<_> = items.iter().map(|(c, _)| c.clone()).collect();
                    let spaced: Vec<_> = items.iter().map(|(_, s)| s.clone()).collect();
                    (
                        format!("[{}]", compact.join(",")),
                        format!("[ {} ]", spaced.join(" ,\n ")),
                    )
                });
                let object =
                    proptest::collection::vec(("[a-z]{1,3}", inner), 0..6).prop_map(|members| {
                        let mut seen = std::collections::HashSet::new();
                        let members: Vec<_> = members
                            .into_iter()
                            .filter(|(key, _)| seen.insert(key.clone()))
                            .collect();
                        let compact: Vec<_> = members
                            .iter()
                            .map(|(k, (c, _))| format!("\"{k}\":{c}"))
                            .collect();
                        let spaced: Vec<_> = members
                            .iter()
                            .map(|(k, (_, s))| format!("\"{k}\" :\t{s}"))
                            .collect();
                        (
                            format!("{{{}}}", compact.join(",")),
                            format!("{{ {} }}", spaced.join(" , ")),
                        )
                    });
                prop_oneof![array, object]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(384))]

            /// A state spliced into a message is its exact text, whatever it holds.
            #[test]
            fn a_placeholder_becomes_the_exact_text((_, text) in json_text()) {
                let splicer = Splicer::new();
                let (placeholder, _guard) = splicer.placeholder(raw(&text));
                let message = serde_json::to_vec(&serde_json::json!({"_meta": {"s": placeholder}})).unwrap();
                prop_assert_eq!(replaced(splicer.splice(&message)), format!(r#"{{"_meta":{{"s":{text}}}}}"#));
            }

            /// Exact values come out as their text without the whitespace between
            /// tokens (so also as one stdio line), and every slot ends with the guards.
            #[test]
            fn exact_values_come_out_byte_for_byte((compact, spaced) in json_text()) {
                let splicer = Splicer::new();
                let mut guards = Vec::new();
                let value = splicer.exact_value(&raw(&spaced), &mut guards).unwrap();
                let message = serde_json::to_vec(&value).unwrap();
                let out = match splicer.splice(&message) {
                    Spliced::Untouched => String::from_utf8(message).unwrap(),
                    Spliced::Replaced(bytes) => String::from_utf8(bytes).unwrap(),
                    Spliced::Orphaned => panic!("no slot was dropped"),
                };
                prop_assert_eq!(out, compact);
                drop(guards);
                prop_assert!(splicer.slots().is_empty());
            }

            /// Text that looks like a placeholder (this connection's own, quoted, or
            /// escaped) inside another string is never replaced.
            #[test]
            fn a_lookalike_inside_a_string_is_left_alone(
                before in "[a-z\"\\\\ ]{0,4}",
                after in "[a-z\"\\\\ ]{0,4}",
            ) {
                let splicer = Splicer::new();
                let (placeholder, _guard) = splicer.placeholder(raw("{}"));
                let text = format!("{before}\"{placeholder}\"{after}");
                let message = serde_json::to_vec(&serde_json::json!({"t": text, "s": placeholder})).unwrap();
                let out = replaced(splicer.splice(&message));
                let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
                prop_assert_eq!(&parsed["t"], &serde_json::Value::String(text));
                prop_assert_eq!(&parsed["s"], &serde_json::json!({}));
            }
        }
    }
}
