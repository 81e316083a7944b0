//! Where the lines and the events of a Server-Sent Events stream end, as the SSE
//! specification says: a line ends at CRLF, LF or CR, and an event at an empty line.
//! Every event stream mcp-runtime reads is cut here: Streamable HTTP's, whose events
//! are bounded and checked before rmcp parses them ([`super::http`]), and legacy
//! HTTP+SSE's, which mcp-runtime parses itself ([`super::sse`]).
//!
//! Both scanners read one byte at a time and keep a bit or two of state, so a line
//! ending split between two chunks (a CR at the end of one, its LF at the start of
//! the next) is read as one.

/// What a byte of the stream is, for the lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Byte {
    /// Part of a line.
    Text,
    /// The end of a line: a CR, an LF, or the CR of a CRLF.
    LineEnd,
    /// The LF of a CRLF, whose CR ended the line.
    Continued,
}

/// Where a stream's lines end.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LineEnds {
    /// Whether the last byte was a CR, so that an LF right after it ends nothing.
    after_cr: bool,
}

impl LineEnds {
    /// Line ends read from just after a byte that was a CR (`after_cr`) or not.
    pub(crate) fn after_cr(after_cr: bool) -> Self {
        Self { after_cr }
    }

    /// Reads `byte`.
    pub(crate) fn read(&mut self, byte: u8) -> Byte {
        let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
        match byte {
            b'\n' if after_cr => Byte::Continued,
            b'\r' | b'\n' => Byte::LineEnd,
            _ => Byte::Text,
        }
    }
}

/// Where a stream's events end: at the end of an empty line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EventEnds {
    lines: LineEnds,
    /// Whether the current line has begun.
    in_line: bool,
}

impl EventEnds {
    /// Event ends read from the start of an event, just after a byte that was a CR
    /// (`after_cr`) or not.
    pub(crate) fn after_cr(after_cr: bool) -> Self {
        Self {
            lines: LineEnds::after_cr(after_cr),
            in_line: false,
        }
    }

    /// Reads `byte`; true when it ends an event.
    pub(crate) fn ends_event(&mut self, byte: u8) -> bool {
        match self.lines.read(byte) {
            Byte::Continued => false,
            Byte::LineEnd => !std::mem::replace(&mut self.in_line, false),
            Byte::Text => {
                self.in_line = true;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets after which events end in `chunks`, read in that order.
    fn event_ends(chunks: &[&str]) -> Vec<usize> {
        let mut ends = EventEnds::default();
        let mut offset = 0;
        let mut found = Vec::new();
        for chunk in chunks {
            for &byte in chunk.as_bytes() {
                offset += 1;
                if ends.ends_event(byte) {
                    found.push(offset);
                }
            }
        }
        found
    }

    #[test]
    fn an_event_ends_at_an_empty_line_whatever_ends_the_lines() {
        assert_eq!(event_ends(&["data: a\n\ndata: b\n\n"]), [9, 18]);
        assert_eq!(event_ends(&["data: a\r\n\r\ndata: b\r\n\r\n"]), [10, 21]);
        assert_eq!(event_ends(&["data: a\r\rdata: b\r\r"]), [9, 18]);
        // An empty line's CRLF ends the event at its CR.
        assert_eq!(event_ends(&["data: a\r\n\ndata: b\n\r\n"]), [10, 19]);
        assert_eq!(event_ends(&["data: a\ndata: b\n"]), Vec::<usize>::new());
    }

    #[test]
    fn a_crlf_split_between_chunks_is_one_line_end() {
        assert_eq!(event_ends(&["data: a\r", "\n", "\r", "\n"]), [10]);
        assert_eq!(
            event_ends(&["data: a\r", "\ndata: b\r\n\r\n"]),
            [19],
            "the LF after the chunk's CR starts no empty line"
        );
    }

    #[test]
    fn line_ends_name_each_byte() {
        let mut lines = LineEnds::default();
        let read: Vec<_> = b"a\r\nb\n\rc".iter().map(|&b| lines.read(b)).collect();
        use Byte::*;
        assert_eq!(
            read,
            [Text, LineEnd, Continued, Text, LineEnd, LineEnd, Text]
        );
        assert_eq!(LineEnds::after_cr(true).read(b'\n'), Continued);
        assert_eq!(LineEnds::after_cr(false).read(b'\n'), LineEnd);
    }
}
