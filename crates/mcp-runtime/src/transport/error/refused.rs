//! A message from a server that the runtime refused: too large for the client's limit,
//! or not one it can read. The error is the client's, so its text says so: it is never
//! worded as the server's JSON-RPC error, though the transport hands it to the
//! protocol engine as one (see `crate::transport::refused`).
//!
//! What the server sent is quoted, bounded to [`SENT_CHARS`] characters and escaped
//! (control characters and bytes that are not UTF-8 as escapes), so that it can
//! neither flood a message nor split a line or drive a terminal.

/// How many characters of a refused message an error quotes.
pub const SENT_CHARS: usize = 120;

/// The runtime refused a message the server sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum MessageRefused {
    /// The message is over `max_message_bytes`.
    #[error(
        "server `{server}` sent a message {}over the client's limit of {limit} bytes (raise `max_message_bytes`)",
        size.map_or_else(String::new, |size| format!("of {size} bytes, "))
    )]
    TooLarge {
        /// The server.
        server: String,
        /// The message's size, when it was measured (an HTTP body or event is
        /// abandoned at the limit).
        size: Option<u64>,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The answer is not valid UTF-8, which JSON requires.
    #[error(
        "server `{server}` sent an answer that is not valid UTF-8 (from byte {offset}), which JSON-RPC requires: `{sent}` (the server does not follow the MCP specification; report it to its author)"
    )]
    NotUtf8 {
        /// The server.
        server: String,
        /// Where the first byte that is not UTF-8 is.
        offset: usize,
        /// The start of what it sent, escaped.
        sent: String,
    },
    /// The answer spans several lines, where the stdio transport takes one message
    /// per line.
    #[error(
        "server `{server}` sent an answer over several lines ({lines}), where the stdio transport takes one message per line: `{sent}` (the server must not pretty-print its messages; report it to its author)"
    )]
    SeveralLines {
        /// The server.
        server: String,
        /// How many lines it took.
        lines: usize,
        /// The start of what it sent, escaped (line breaks as `\n`).
        sent: String,
    },
    /// The answer is JSON, and not an answer the request can take.
    #[error(
        "server `{server}` sent an answer mcp-runtime cannot read ({problem}): `{sent}` (the server does not follow the MCP specification; report it to its author)"
    )]
    Unreadable {
        /// The server.
        server: String,
        /// What is wrong with it.
        problem: String,
        /// The start of what it sent, escaped.
        sent: String,
    },
}

/// The start of `bytes` as a message quotes it: every credential the runtime sends
/// masked ([`crate::redact::credentials`]), at most [`SENT_CHARS`] characters,
/// control characters escaped (`\n`, `\u{1b}`), bytes that are not UTF-8 as `\xFF`,
/// and `…` where it was cut.
pub(crate) fn sent(bytes: &[u8]) -> String {
    let bytes = crate::redact::credentials_in_bytes(bytes);
    let mut shown = String::new();
    let mut count = 0;
    for chunk in bytes.utf8_chunks() {
        let invalid = chunk.invalid().iter().map(|byte| format!("\\x{byte:02X}"));
        let valid = chunk.valid().chars().map(|char| {
            if char.is_control() {
                char.escape_debug().to_string()
            } else {
                char.to_string()
            }
        });
        for piece in valid.chain(invalid) {
            if count == SENT_CHARS {
                shown.push('…');
                return shown;
            }
            shown.push_str(&piece);
            count += 1;
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_sent_is_escaped_and_bounded() {
        assert_eq!(sent(b"{\"a\":\"caf\xFF\"}"), r#"{"a":"caf\xFF"}"#);
        assert_eq!(sent(b"{\n  \"a\": 1\r\n}\x1b"), r#"{\n  "a": 1\r\n}\u{1b}"#);
        let long = "é".repeat(SENT_CHARS + 5);
        let shown = sent(long.as_bytes());
        assert_eq!(shown.chars().count(), SENT_CHARS + 1);
        assert!(shown.ends_with("é…"));
        assert_eq!(sent(&[0xFF; 200]).matches("\\xFF").count(), SENT_CHARS);
    }

    #[test]
    fn a_size_limit_is_worded_as_the_clients() {
        let refused = MessageRefused::TooLarge {
            server: "big".into(),
            size: Some(2048),
            limit: 1024,
        };
        assert_eq!(
            refused.to_string(),
            "server `big` sent a message of 2048 bytes, over the client's limit of 1024 bytes (raise `max_message_bytes`)"
        );
        let unmeasured = MessageRefused::TooLarge {
            server: "big".into(),
            size: None,
            limit: 1024,
        };
        assert_eq!(
            unmeasured.to_string(),
            "server `big` sent a message over the client's limit of 1024 bytes (raise `max_message_bytes`)"
        );
    }
}
