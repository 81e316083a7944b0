//! Finding the top-level `id` and `method` of a message too large to keep: the
//! oversized stdio line or SSE event, fed in pieces as it is discarded, and a message
//! printed over several lines, whose end it finds.

use rmcp::model::RequestId;

/// How long an `id` may be, in bytes of JSON, for an oversized line to be matched.
pub(super) const MAX_ID_BYTES: usize = 256;
/// How long a key may be for the scanner to compare it with `id` and `method`.
const MAX_KEY_BYTES: usize = 16;

/// Finds the top-level `id` and `method` of a JSON object fed in pieces, keeping only
/// a few bytes: nested keys and text inside strings are skipped.
#[derive(Default)]
pub(crate) struct IdScanner {
    depth: usize,
    /// Whether the top-level value has begun.
    opened: bool,
    /// Whether the text is a JSON object (only then does it have keys).
    object: bool,
    in_string: bool,
    escaped: bool,
    /// At depth 1: whether the next string is a key.
    expect_key: bool,
    /// The raw text of the key being read, `None` once it is too long to matter.
    key: Option<Vec<u8>>,
    reading_key: bool,
    /// The last key read at depth 1.
    last_key: Key,
    /// The raw text of the `id` value being read, `None` once it cannot be an id.
    id_text: Option<Vec<u8>>,
    reading_id: bool,
    id: Option<RequestId>,
    id_seen: bool,
    method: bool,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Key {
    #[default]
    Other,
    Id,
    Method,
}

impl IdScanner {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
        }
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            let closes = !self.escaped && byte == b'"';
            self.escaped = !self.escaped && byte == b'\\';
            if self.reading_key {
                if closes {
                    self.end_key();
                } else {
                    push_bounded(&mut self.key, byte, MAX_KEY_BYTES);
                }
            }
            if self.reading_id {
                push_bounded(&mut self.id_text, byte, MAX_ID_BYTES);
            }
            self.in_string = !closes;
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.object && self.expect_key {
                    self.reading_key = true;
                    self.key = Some(Vec::new());
                } else if self.reading_id {
                    push_bounded(&mut self.id_text, byte, MAX_ID_BYTES);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    self.object = byte == b'{';
                    self.expect_key = self.object;
                    self.opened = true;
                }
                if self.reading_id {
                    // An object or array is not an id.
                    self.id_text = None;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = self.object;
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
                match self.last_key {
                    Key::Id if !self.id_seen => {
                        self.reading_id = true;
                        self.id_text = Some(Vec::new());
                    }
                    Key::Method => self.method = true,
                    Key::Id | Key::Other => {}
                }
            }
            _ => {
                if self.reading_id {
                    push_bounded(&mut self.id_text, byte, MAX_ID_BYTES);
                }
            }
        }
    }

    fn end_key(&mut self) {
        self.reading_key = false;
        self.last_key = Key::Other;
        if let Some(raw) = self.key.take() {
            let mut quoted = Vec::with_capacity(raw.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(&raw);
            quoted.push(b'"');
            self.last_key = match serde_json::from_slice::<String>(&quoted).as_deref() {
                Ok("id") => Key::Id,
                Ok("method") => Key::Method,
                _ => Key::Other,
            };
        }
    }

    fn end_value(&mut self) {
        if !self.reading_id {
            return;
        }
        self.reading_id = false;
        self.id_seen = true;
        self.id = self
            .id_text
            .take()
            .and_then(|text| serde_json::from_slice::<RequestId>(&text).ok());
    }

    /// Whether the top-level object or array, once begun, has ended.
    pub(super) fn closed(&self) -> bool {
        self.opened && self.depth == 0
    }

    /// The top-level `id`, if readable, and whether there is a top-level `method`.
    pub(crate) fn finish(self) -> (Option<RequestId>, bool) {
        (self.id, self.method)
    }
}

fn push_bounded(text: &mut Option<Vec<u8>>, byte: u8, limit: usize) {
    if let Some(bytes) = text {
        if bytes.len() < limit {
            bytes.push(byte);
        } else {
            *text = None;
        }
    }
}
