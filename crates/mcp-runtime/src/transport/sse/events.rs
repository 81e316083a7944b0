//! Server-Sent Events read from a byte stream, each event bounded in size.
//!
//! A legacy HTTP+SSE session has one event stream for every answer, and a stream
//! cannot be resumed (a new `GET` is a new session). A reader that fails at the first
//! event over the limit (as `sse_stream` over a bounded byte stream does) would end
//! the whole session for one oversized answer. This one skips such an event instead,
//! and reports its top-level `id` and whether it has a `method`, found with the
//! stdio reader's [`IdScanner`], so that only the request it answers fails.
//!
//! Invariants:
//! 1. At most `limit` bytes of an event's data are kept; past that the data is only
//!    scanned, in a few bytes of state, until the event ends. Field names and the
//!    event type are kept to a few bytes; other fields (`id`, `retry`, comments) are
//!    not kept at all.
//! 2. Events are parsed as the SSE specification says: lines end at CRLF, LF or CR;
//!    one space after the colon is dropped; `data` lines are joined with LF; an event
//!    ends at an empty line, and one without `data` is not dispatched.

use rmcp::model::RequestId;

use crate::transport::{
    event_lines::{Byte, LineEnds},
    framing::IdScanner,
};

/// The longest field name kept: longer ones are none of the fields read here.
const MAX_FIELD_BYTES: usize = 8;
/// The longest event type kept: longer ones are none of the types read here.
const MAX_TYPE_BYTES: usize = 32;

/// One event of the stream.
#[derive(Debug, PartialEq)]
pub(super) enum Event {
    /// An event within the limit: its type (`message` when it names none) and data.
    Complete { kind: String, data: Vec<u8> },
    /// An event whose data was over the limit: its data's top-level `id`, if it
    /// could be read, and whether its data has a top-level `method`.
    Oversized { id: Option<RequestId>, method: bool },
}

/// Where the reader is in the current line.
#[derive(Clone, Copy, PartialEq)]
enum Position {
    Name,
    /// Just after the colon: one space is dropped here.
    ValueStart,
    Value,
}

/// What the current line's value is for.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Event,
    Data,
    Ignored,
}

/// Splits a byte stream into [`Event`]s; see the module docs.
pub(super) struct EventReader {
    limit: usize,
    position: Position,
    field: Field,
    name: Vec<u8>,
    kind: Vec<u8>,
    data: Vec<u8>,
    /// Whether the current event has a `data` line.
    has_data: bool,
    /// Set once the current event's data went over the limit (invariant 1).
    oversized: Option<IdScanner>,
    /// Where the lines end.
    lines: LineEnds,
}

impl EventReader {
    /// A reader keeping at most `limit` bytes of an event's data.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            position: Position::Name,
            field: Field::Ignored,
            name: Vec::new(),
            kind: Vec::new(),
            data: Vec::new(),
            has_data: false,
            oversized: None,
            lines: LineEnds::default(),
        }
    }

    /// Reads `chunk`, the next bytes of the stream, and returns the events it ended.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        let mut at = 0;
        while at < chunk.len() {
            let byte = chunk[at];
            match self.lines.read(byte) {
                Byte::Continued => {
                    at += 1;
                    continue;
                }
                Byte::LineEnd => {
                    self.end_line(&mut events);
                    at += 1;
                    continue;
                }
                Byte::Text => {}
            }
            match self.position {
                Position::Name if byte == b':' => self.start_value(),
                Position::Name => {
                    if self.name.len() <= MAX_FIELD_BYTES {
                        self.name.push(byte);
                    }
                }
                Position::ValueStart if byte == b' ' => self.position = Position::Value,
                Position::ValueStart | Position::Value => {
                    self.position = Position::Value;
                    // The rest of the value up to the line's end, in one piece.
                    let end = memchr::memchr2(b'\r', b'\n', &chunk[at..])
                        .map_or(chunk.len(), |found| at + found);
                    self.value(&chunk[at..end]);
                    at = end;
                    continue;
                }
            }
            at += 1;
        }
        events
    }

    /// The colon after a field's name: what the value is for.
    fn start_value(&mut self) {
        self.field = match self.name.as_slice() {
            b"event" => {
                self.kind.clear();
                Field::Event
            }
            b"data" => {
                self.start_data_line();
                Field::Data
            }
            _ => Field::Ignored,
        };
        self.position = Position::ValueStart;
    }

    fn start_data_line(&mut self) {
        if self.has_data {
            self.append_data(b"\n");
        }
        self.has_data = true;
    }

    fn value(&mut self, bytes: &[u8]) {
        match self.field {
            Field::Event => {
                let room = (MAX_TYPE_BYTES + 1).saturating_sub(self.kind.len());
                self.kind.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Field::Data => self.append_data(bytes),
            Field::Ignored => {}
        }
    }

    fn append_data(&mut self, bytes: &[u8]) {
        if let Some(scanner) = &mut self.oversized {
            scanner.feed(bytes);
        } else if self.data.len() + bytes.len() > self.limit {
            let mut scanner = IdScanner::default();
            scanner.feed(&std::mem::take(&mut self.data));
            scanner.feed(bytes);
            self.oversized = Some(scanner);
        } else {
            self.data.extend_from_slice(bytes);
        }
        debug_assert!(self.data.len() <= self.limit, "invariant 1");
    }

    fn end_line(&mut self, events: &mut Vec<Event>) {
        if self.position == Position::Name {
            // A line without a colon is a field with an empty value.
            match self.name.as_slice() {
                [] => self.dispatch(events),
                b"event" => self.kind.clear(),
                b"data" => self.start_data_line(),
                _ => {}
            }
        }
        self.name.clear();
        self.position = Position::Name;
        self.field = Field::Ignored;
    }

    /// The empty line that ends an event.
    fn dispatch(&mut self, events: &mut Vec<Event>) {
        let kind = std::mem::take(&mut self.kind);
        let data = std::mem::take(&mut self.data);
        let oversized = self.oversized.take();
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        events.push(match oversized {
            Some(scanner) => {
                let (id, method) = scanner.finish();
                Event::Oversized { id, method }
            }
            None if kind.is_empty() => Event::Complete {
                kind: "message".to_owned(),
                data,
            },
            None => Event::Complete {
                kind: String::from_utf8_lossy(&kind).into_owned(),
                data,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(kind: &str, data: &str) -> Event {
        Event::Complete {
            kind: kind.to_owned(),
            data: data.as_bytes().to_vec(),
        }
    }

    /// Every event of `stream` fed in pieces of `size` bytes.
    fn read(stream: &str, limit: usize, size: usize) -> Vec<Event> {
        let mut reader = EventReader::new(limit);
        stream
            .as_bytes()
            .chunks(size)
            .flat_map(|chunk| reader.push(chunk))
            .collect()
    }

    #[test]
    fn events_are_parsed_as_the_specification_says_in_pieces_of_any_size() {
        let stream = concat!(
            ": a comment\r\n",
            "event: endpoint\r\n",
            "data: /messages/?session_id=1\r\n\r\n",
            "id: 7\nretry: 10\n",
            "data:{\"a\":\n",
            "data:  1}\n\n",
            "event\ndata\n\n",
            "event: ignored-without-data\n\n",
            "data: cr\r\r",
        );
        for size in 1..=stream.len() {
            assert_eq!(
                read(stream, 1024, size),
                [
                    complete("endpoint", "/messages/?session_id=1"),
                    complete("message", "{\"a\":\n 1}"),
                    complete("message", ""),
                    complete("message", "cr"),
                ],
                "pieces of {size} bytes"
            );
        }
    }

    #[test]
    fn an_event_over_the_limit_is_skipped_and_reports_its_id() {
        let big = "x".repeat(100);
        let stream = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":42,\n\
             data: \"result\":{{\"text\":\"{big}\"}}}}\n\n\
             data: {{\"method\":\"notifications/message\",\"params\":\"{big}\"}}\n\n\
             data: {{\"id\":1}}\n\n"
        );
        for size in [1, 7, stream.len()] {
            assert_eq!(
                read(&stream, 64, size),
                [
                    Event::Oversized {
                        id: Some(RequestId::Number(42)),
                        method: false
                    },
                    Event::Oversized {
                        id: None,
                        method: true
                    },
                    complete("message", "{\"id\":1}"),
                ],
                "pieces of {size} bytes"
            );
        }
    }

    #[test]
    fn the_data_kept_never_passes_the_limit() {
        let mut reader = EventReader::new(16);
        for _ in 0..1000 {
            assert!(reader.push(b"data: 0123456789\n").is_empty());
            assert!(reader.data.len() <= 16);
        }
        let events = reader.push(b"\n");
        assert_eq!(
            events,
            [Event::Oversized {
                id: None,
                method: false
            }]
        );
        assert!(reader.data.is_empty() && reader.oversized.is_none());
    }
}
