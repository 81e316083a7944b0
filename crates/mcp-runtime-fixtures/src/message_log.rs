//! The received-message log: one JSON object per line for every JSON-RPC
//! message the fixture receives.
//!
//! Tests read it to see what actually reached the peer: which requests and
//! notifications arrived, from which fixture process, and the exact bytes of
//! each (so forwarding of `_meta` can be checked byte for byte). A line looks
//! like
//!
//! ```text
//! {"pid":4242,"method":"tools/call","id":3,"params":{"name":"echo","_meta":{"k":1}},"raw":"{\"jsonrpc\":\"2.0\",...}"}
//! ```
//!
//! `method` is absent for responses, `id` for notifications, `params` when the
//! message has none; `http_headers` (names lowercased) is present for messages
//! that came in an HTTP POST.
//!
//! Invariants:
//!
//! 1. A message is logged before rmcp sees it, so a test that has received a
//!    response finds the request (and everything sent before it) in the log.
//! 2. `raw` is the message exactly as received (for stdio, the line without its
//!    line ending); `params` and `id` are copied from it verbatim, only with
//!    insignificant whitespace removed when the message spans several lines.
//! 3. Each line is written with a single `write(2)` on a file opened with
//!    `O_APPEND`, so fixtures sharing one log file never interleave within a
//!    line.

use std::{
    borrow::Cow,
    collections::BTreeMap,
    fs::{File, OpenOptions},
    io::{self, Write},
    path::Path,
};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// An append-only log of received JSON-RPC messages, shareable between
/// processes.
#[derive(Debug)]
pub struct MessageLog {
    file: File,
    pid: u32,
}

/// The parts of a JSON-RPC message the log picks out, borrowed verbatim.
#[derive(Deserialize)]
struct Envelope {
    method: Option<String>,
    id: Option<Box<RawValue>>,
    params: Option<Box<RawValue>>,
}

/// One line of the log.
#[derive(Serialize)]
struct Line<'a> {
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Box<RawValue>>,
    raw: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_headers: Option<&'a BTreeMap<String, String>>,
}

impl MessageLog {
    /// Open (creating if needed) the log at `path` for appending.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file,
            pid: std::process::id(),
        })
    }

    /// Log what one transport frame carried: a JSON-RPC message, or a batch
    /// of them (one line each). Text that is not JSON is logged with `raw`
    /// only.
    ///
    /// `http_headers` is given for messages that came in an HTTP request.
    pub fn record(
        &self,
        frame: &str,
        http_headers: Option<&BTreeMap<String, String>>,
    ) -> io::Result<()> {
        if frame.trim_start().starts_with('[')
            && let Ok(batch) = serde_json::from_str::<Vec<&RawValue>>(frame)
        {
            return batch
                .iter()
                .try_for_each(|message| self.record_message(message.get(), http_headers));
        }
        self.record_message(frame, http_headers)
    }

    fn record_message(
        &self,
        raw: &str,
        http_headers: Option<&BTreeMap<String, String>>,
    ) -> io::Result<()> {
        let envelope = serde_json::from_str::<Envelope>(raw).ok();
        let (method, id, params) = match envelope {
            Some(Envelope { method, id, params }) => (method, id.map(compact), params.map(compact)),
            None => (None, None, None),
        };
        let line = Line {
            pid: self.pid,
            method,
            id,
            params,
            raw,
            http_headers,
        };
        let mut bytes = serde_json::to_vec(&line)?;
        bytes.push(b'\n');
        // One write call per line (invariant 3); a short write to a regular
        // file means the disk is full, which the caller reports.
        let written = (&self.file).write(&bytes)?;
        if written != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "short write to the message log ({written} of {} bytes)",
                    bytes.len()
                ),
            ));
        }
        Ok(())
    }
}

/// Keep a log line on one line: drop the whitespace between JSON tokens when
/// the value spans several lines, keeping everything else (key order, number
/// spelling, escapes) as received.
fn compact(value: Box<RawValue>) -> Box<RawValue> {
    let json = value.get();
    if !json.contains(['\n', '\r']) {
        return value;
    }
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    RawValue::from_string(out).unwrap_or(value)
}

/// Headers of an HTTP request as the log records them: lowercased names,
/// repeated headers joined with `, `, bytes that are not UTF-8 replaced.
pub fn header_map(headers: &http::HeaderMap) -> BTreeMap<String, String> {
    let mut map = BTreeMap::<String, String>::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        map.entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    map
}

/// The text of one line read from a byte stream, without its line ending.
pub fn line_text(line: &[u8]) -> Cow<'_, str> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    struct TempLog {
        path: std::path::PathBuf,
        log: MessageLog,
    }

    impl TempLog {
        fn new(name: &str) -> Self {
            let path = std::env::temp_dir().join(format!(
                "mcp-fixture-log-{}-{name}.jsonl",
                std::process::id()
            ));
            let _ = std::fs::remove_file(&path);
            let log = MessageLog::open(&path).unwrap();
            Self { path, log }
        }

        fn raw_lines(&self) -> Vec<String> {
            std::fs::read_to_string(&self.path)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }

        fn lines(&self) -> Vec<Value> {
            self.raw_lines()
                .iter()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        }
    }

    impl Drop for TempLog {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    #[test]
    fn params_are_logged_verbatim_beside_the_raw_message() {
        let log = TempLog::new("verbatim");
        let raw = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"z":1,"a":1.50}}}"#;
        log.log.record(raw, None).unwrap();

        let lines = log.raw_lines();
        assert_eq!(lines.len(), 1);
        // Key order and number spelling survive: params is copied, not re-encoded.
        assert!(lines[0].contains(r#""params":{"name":"echo","_meta":{"z":1,"a":1.50}}"#));
        let line = &log.lines()[0];
        assert_eq!(line["pid"], json!(std::process::id()));
        assert_eq!(line["method"], "tools/call");
        assert_eq!(line["id"], 7);
        assert_eq!(line["raw"], raw);
        assert!(line.get("http_headers").is_none());
    }

    #[test]
    fn notifications_have_no_id() {
        let log = TempLog::new("notification");
        log.log
            .record(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                None,
            )
            .unwrap();
        let line = &log.lines()[0];
        assert_eq!(line["method"], "notifications/initialized");
        assert!(line.get("id").is_none());
        assert!(line.get("params").is_none());
    }

    #[test]
    fn a_message_spanning_lines_stays_on_one_log_line() {
        let log = TempLog::new("pretty");
        let raw = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"a b\",\n  \"method\": \"ping\",\n  \"params\": {\"s\": \"x y\\n\",\n \"t\": [1, 2]}\n}";
        let headers = BTreeMap::from([("authorization".to_owned(), "Bearer t".to_owned())]);
        log.log.record(raw, Some(&headers)).unwrap();

        let lines = log.raw_lines();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains(r#""params":{"s":"x y\n","t":[1,2]}"#));
        let line = &log.lines()[0];
        assert_eq!(line["id"], "a b");
        assert_eq!(line["raw"], raw);
        assert_eq!(line["http_headers"]["authorization"], "Bearer t");
    }

    #[test]
    fn a_batch_is_logged_one_message_per_line() {
        let log = TempLog::new("batch");
        log.log
            .record(
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, {"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
                None,
            )
            .unwrap();
        let lines = log.lines();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0]["raw"],
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        );
        assert_eq!(lines[1]["method"], "notifications/initialized");
    }

    #[test]
    fn text_that_is_not_json_is_still_logged() {
        let log = TempLog::new("garbage");
        log.log.record("not json", None).unwrap();
        let line = &log.lines()[0];
        assert_eq!(line["raw"], "not json");
        assert!(line.get("method").is_none());
    }

    #[test]
    fn line_text_drops_only_the_line_ending() {
        assert_eq!(line_text(b"{}\r\n"), "{}");
        assert_eq!(line_text(b" {} \n"), " {} ");
        assert_eq!(line_text(b"{}"), "{}");
    }
}
