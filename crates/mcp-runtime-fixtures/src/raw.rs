//! The raw stdio server: a hand-written JSON-RPC loop that writes exact bytes to
//! stdout, for the faults rmcp's server cannot produce.
//!
//! rmcp's server only writes well-formed messages about valid models, so it cannot
//! write a line that is not JSON, a response to a request nobody sent, a tool whose
//! `inputSchema` is not an object, or an answer it can read but a client cannot use
//! (not UTF-8, over several lines, in a batch: see [`Mangle`]). This server answers
//! `initialize`, `ping`, `tools/list` (one page, every tool) and `tools/call`
//! itself, from the same tool list as the rmcp-based server plus the faulty tools
//! asked for; any other request, `server/discover` among them, gets "method not
//! found", as from a server of the handshake revisions.
//!
//! Invariants:
//!
//! 1. It handles one line at a time, in order: read, log, wait (a call's delay),
//!    answer, and only then read the next line. A `notifications/cancelled` is
//!    therefore logged but changes nothing: a cancelled call is still answered,
//!    late, and a request sent after it is answered after it.
//! 2. Everything it writes for one line is written with one `write_all` and
//!    flushed before the next line is read, so a test sees the bytes in the
//!    order [`RawServer::answer`] returns them.
//! 3. It stops when stdin closes, and not before: once stdout is closed it keeps
//!    reading (and logging) stdin without answering, so the log holds every line
//!    the client wrote.

use std::{
    io::{BufRead as _, Write as _},
    str::FromStr,
    sync::Arc,
    time::Duration,
};

use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::message_log::{MessageLog, line_text};

/// The line `--garbage-before-initialize` and `--garbage-instead-of-initialize`
/// write.
pub const GARBAGE_LINE: &str = "this line is not JSON-RPC\n";

/// The line `--unsolicited-response` writes: a response to a request nobody sent.
pub const UNSOLICITED_RESPONSE: &str = "{\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":{}}\n";

/// The name of the tool `--bad-input-schema` adds.
pub const BAD_SCHEMA_TOOL: &str = "bad_schema";

/// The description of the second `echo` that `--duplicate-tool` lists.
pub const DUPLICATE_DESCRIPTION: &str = "a second tool named echo";

/// What the raw server writes in answer to `initialize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitializeFault {
    /// The reply alone.
    #[default]
    None,
    /// [`GARBAGE_LINE`], then the reply.
    GarbageBefore,
    /// [`GARBAGE_LINE`] and no reply, ever.
    GarbageInstead,
    /// [`UNSOLICITED_RESPONSE`], then the reply.
    UnsolicitedResponseBefore,
}

/// How the raw server spoils its answer to one method (`--mangle-answer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mangle {
    /// A byte that is not UTF-8 inside a string: a top-level `"note":"caf\xFF"`.
    NotUtf8,
    /// Pretty-printed, over several lines.
    SeveralLines,
    /// In a JSON-RPC batch of one: `[answer]`.
    Batch,
    /// Its result without `protocolVersion` (for `initialize`).
    WithoutProtocolVersion,
    /// The result `{}`, whatever the method (a success for `server/discover` too).
    EmptyResult,
}

impl FromStr for Mangle {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "not-utf8" => Ok(Self::NotUtf8),
            "several-lines" => Ok(Self::SeveralLines),
            "batch" => Ok(Self::Batch),
            "without-protocol-version" => Ok(Self::WithoutProtocolVersion),
            "empty-result" => Ok(Self::EmptyResult),
            other => Err(format!(
                "`{other}` is not one of `not-utf8`, `several-lines`, `batch`, `without-protocol-version`, `empty-result`"
            )),
        }
    }
}

/// `METHOD=KIND`: the answer to METHOD spoiled as KIND (see [`Mangle`]).
pub fn parse_mangled(text: &str) -> Result<(String, Mangle), String> {
    let (method, kind) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not METHOD=KIND"))?;
    Ok((method.to_owned(), kind.parse()?))
}

/// The `inputSchema` of the [`BAD_SCHEMA_TOOL`]: never an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadSchema {
    /// `"inputSchema": "object"`.
    String,
    /// `"inputSchema": null`.
    Null,
    /// `"inputSchema": [{"type": "object"}]`.
    Array,
    /// No `inputSchema` key.
    Missing,
}

impl FromStr for BadSchema {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "string" => Ok(Self::String),
            "null" => Ok(Self::Null),
            "array" => Ok(Self::Array),
            "missing" => Ok(Self::Missing),
            other => Err(format!(
                "`{other}` is not one of `string`, `null`, `array`, `missing`"
            )),
        }
    }
}

/// How the raw server misbehaves.
#[derive(Clone, Debug, Default)]
pub struct RawBehaviour {
    /// What to write for `initialize`.
    pub initialize: InitializeFault,
    /// List [`BAD_SCHEMA_TOOL`] second, with this schema.
    pub bad_schema: Option<BadSchema>,
    /// List a tool with an empty name third.
    pub empty_tool_name: bool,
    /// List a second `echo` last, described as [`DUPLICATE_DESCRIPTION`].
    pub duplicate_tool: bool,
    /// Wait this long before answering a `tools/call` whose arguments do not
    /// name `delay_ms`.
    pub call_delay: Duration,
    /// The methods whose answers are spoiled, and how.
    pub mangled: Vec<(String, Mangle)>,
}

/// One answer: wait, then write these bytes (nothing when empty).
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    /// How long to wait before writing.
    pub wait: Duration,
    /// The exact bytes to write.
    pub bytes: Vec<u8>,
}

impl Reply {
    fn now(bytes: Vec<u8>) -> Self {
        Self {
            wait: Duration::ZERO,
            bytes,
        }
    }
}

/// The raw server: its behaviour and the tool list it answers, as JSON.
#[derive(Clone, Debug)]
pub struct RawServer {
    behaviour: RawBehaviour,
    tools: Vec<Value>,
}

impl RawServer {
    /// A server that lists `tools` (the rmcp-based server's list) and the faulty
    /// tools `behaviour` asks for.
    pub fn new(behaviour: RawBehaviour, tools: &[Tool]) -> Self {
        let mut tools: Vec<Value> = tools
            .iter()
            .map(|tool| serde_json::to_value(tool).expect("a tool serializes to JSON"))
            .collect();
        if let Some(schema) = behaviour.bad_schema {
            let mut tool = json!({
                "name": BAD_SCHEMA_TOOL,
                "description": "a tool whose inputSchema is not an object",
            });
            let schema = match schema {
                BadSchema::String => Some(json!("object")),
                BadSchema::Null => Some(Value::Null),
                BadSchema::Array => Some(json!([{ "type": "object" }])),
                BadSchema::Missing => None,
            };
            if let Some(schema) = schema {
                tool["inputSchema"] = schema;
            }
            tools.insert(1.min(tools.len()), tool);
        }
        if behaviour.empty_tool_name {
            let tool = json!({
                "name": "",
                "description": "a tool without a name",
                "inputSchema": { "type": "object" },
            });
            tools.insert(2.min(tools.len()), tool);
        }
        if behaviour.duplicate_tool {
            tools.push(json!({
                "name": "echo",
                "description": DUPLICATE_DESCRIPTION,
                "inputSchema": { "type": "object" },
            }));
        }
        Self { behaviour, tools }
    }

    /// The answer to one line read from stdin.
    pub fn answer(&self, line: &str) -> Reply {
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line) else {
            return Reply::now(Vec::new());
        };
        // Notifications (no id) and responses (no method) get no answer.
        let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) else {
            return Reply::now(Vec::new());
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let mangle = self
            .behaviour
            .mangled
            .iter()
            .find(|(mangled, _)| mangled == method)
            .map(|(_, mangle)| *mangle);
        let reply = match (method, mangle) {
            (_, Some(Mangle::EmptyResult)) => Reply::now(result(id, json!({}))),
            _ => self.answer_method(id, method, &params),
        };
        match mangle {
            Some(mangle) => Reply {
                bytes: mangled(&reply.bytes, mangle),
                ..reply
            },
            None => reply,
        }
    }

    /// The answer to request `id` of `method`, unspoiled.
    fn answer_method(&self, id: &Value, method: &str, params: &Value) -> Reply {
        match method {
            "initialize" => self.initialize(id, params),
            "ping" => Reply::now(result(id, json!({}))),
            "tools/list" => Reply::now(result(id, json!({ "tools": self.tools }))),
            "tools/call" => self.call(id, params),
            other => Reply::now(error(
                id,
                -32601,
                &format!("method `{other}` is not supported"),
            )),
        }
    }

    fn initialize(&self, id: &Value, params: &Value) -> Reply {
        let version = params
            .get("protocolVersion")
            .cloned()
            .unwrap_or_else(|| json!("2025-06-18"));
        let reply = result(
            id,
            json!({
                "protocolVersion": version,
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "mcp-fixture", "version": env!("CARGO_PKG_VERSION") },
            }),
        );
        let bytes = match self.behaviour.initialize {
            InitializeFault::None => reply,
            InitializeFault::GarbageBefore => [GARBAGE_LINE.as_bytes(), &reply].concat(),
            InitializeFault::GarbageInstead => GARBAGE_LINE.as_bytes().to_vec(),
            InitializeFault::UnsolicitedResponseBefore => {
                [UNSOLICITED_RESPONSE.as_bytes(), &reply].concat()
            }
        };
        Reply::now(bytes)
    }

    fn call(&self, id: &Value, params: &Value) -> Reply {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        if !self.tools.iter().any(|tool| tool["name"] == name) {
            return Reply::now(error(id, -32602, &format!("unknown tool `{name}`")));
        }
        let wait = arguments
            .get("delay_ms")
            .and_then(Value::as_u64)
            .map_or(self.behaviour.call_delay, Duration::from_millis);
        Reply {
            wait,
            bytes: result(
                id,
                json!({
                    "content": [{ "type": "text", "text": format!("called {name}") }],
                    "structuredContent": { "tool": name, "arguments": arguments },
                }),
            ),
        }
    }
}

/// The answer `line` (one line of JSON, with its `\n`) spoiled as `mangle`.
pub fn mangled(line: &[u8], mangle: Mangle) -> Vec<u8> {
    let mut message: Value = serde_json::from_slice(line).expect("an answer is JSON");
    match mangle {
        Mangle::NotUtf8 => {
            let text = serde_json::to_vec(&message).expect("a JSON value serializes");
            let mut bytes = b"{\"note\":\"caf\xFF\",".to_vec();
            bytes.extend_from_slice(&text[1..]);
            bytes.push(b'\n');
            bytes
        }
        Mangle::SeveralLines => {
            let mut bytes = serde_json::to_vec_pretty(&message).expect("a JSON value serializes");
            bytes.push(b'\n');
            bytes
        }
        Mangle::Batch => {
            let mut bytes = b"[".to_vec();
            bytes.extend_from_slice(line.strip_suffix(b"\n").unwrap_or(line));
            bytes.extend_from_slice(b"]\n");
            bytes
        }
        Mangle::WithoutProtocolVersion => {
            if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
                result.remove("protocolVersion");
            }
            self::line(message)
        }
        Mangle::EmptyResult => line.to_vec(),
    }
}

/// A JSON-RPC response line.
fn result(id: &Value, result: Value) -> Vec<u8> {
    line(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

/// A JSON-RPC error line.
fn error(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }))
}

fn line(message: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// Serve `server` over this process's stdin and stdout until stdin closes,
/// logging every line received to `log` (see the module invariants).
///
/// A closed stdout only stops the answers (invariant 3).
pub fn serve(server: &RawServer, log: Option<Arc<MessageLog>>) -> anyhow::Result<()> {
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut stdout_open = true;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        if stdin.read_until(b'\n', &mut bytes)? == 0 {
            return Ok(());
        }
        let text = line_text(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        if let Some(log) = &log
            && let Err(error) = log.record(&text, None)
        {
            eprintln!("mcp-fixture: cannot write the message log: {error}");
        }
        let reply = server.answer(&text);
        if !stdout_open || reply.bytes.is_empty() {
            continue;
        }
        if !reply.wait.is_zero() {
            std::thread::sleep(reply.wait);
        }
        stdout_open = stdout
            .write_all(&reply.bytes)
            .and_then(|()| stdout.flush())
            .is_ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Behaviour, Fixture};

    fn server(behaviour: RawBehaviour) -> RawServer {
        RawServer::new(behaviour, &Fixture::new(Behaviour::default()).tools())
    }

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    fn json_lines(bytes: &[u8]) -> Vec<Value> {
        std::str::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn listed(server: &RawServer) -> Vec<Value> {
        let reply = server.answer(LIST);
        let lines = json_lines(&reply.bytes);
        lines[0]["result"]["tools"].as_array().unwrap().clone()
    }

    #[test]
    fn initialize_echoes_the_clients_version() {
        let reply = server(RawBehaviour::default()).answer(INITIALIZE);
        let lines = json_lines(&reply.bytes);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["id"], 0);
        assert_eq!(lines[0]["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn initialize_faults_write_their_exact_bytes_around_the_reply() {
        let plain = server(RawBehaviour::default()).answer(INITIALIZE).bytes;
        let with = |fault| {
            server(RawBehaviour {
                initialize: fault,
                ..RawBehaviour::default()
            })
            .answer(INITIALIZE)
            .bytes
        };
        assert_eq!(
            with(InitializeFault::GarbageBefore),
            [GARBAGE_LINE.as_bytes(), &plain].concat()
        );
        assert_eq!(
            with(InitializeFault::GarbageInstead),
            GARBAGE_LINE.as_bytes()
        );
        assert_eq!(
            with(InitializeFault::UnsolicitedResponseBefore),
            [UNSOLICITED_RESPONSE.as_bytes(), &plain].concat()
        );
    }

    #[test]
    fn a_mangled_answer_is_spoiled_as_asked_and_only_for_its_method() {
        let with = |method: &str, mangle| {
            server(RawBehaviour {
                mangled: vec![(method.to_owned(), mangle)],
                ..RawBehaviour::default()
            })
        };
        let plain = server(RawBehaviour::default()).answer(INITIALIZE).bytes;
        let not_utf8 = with("initialize", Mangle::NotUtf8).answer(INITIALIZE).bytes;
        assert!(std::str::from_utf8(&not_utf8).is_err());
        assert!(not_utf8.starts_with(b"{\"note\":\"caf\xFF\",\""));
        assert_eq!(not_utf8.iter().filter(|&&byte| byte == b'\n').count(), 1);

        let pretty = with("initialize", Mangle::SeveralLines)
            .answer(INITIALIZE)
            .bytes;
        assert!(pretty.iter().filter(|&&byte| byte == b'\n').count() > 3);
        assert_eq!(
            serde_json::from_slice::<Value>(&pretty).unwrap(),
            serde_json::from_slice::<Value>(&plain).unwrap()
        );

        let batch = with("initialize", Mangle::Batch).answer(INITIALIZE).bytes;
        assert_eq!(batch, [b"[", &plain[..plain.len() - 1], b"]\n"].concat());

        let bare = with("initialize", Mangle::WithoutProtocolVersion).answer(INITIALIZE);
        let bare = &json_lines(&bare.bytes)[0];
        assert!(bare["result"].get("protocolVersion").is_none());
        assert!(bare["result"].get("serverInfo").is_some());

        let discover = r#"{"jsonrpc":"2.0","id":0,"method":"server/discover"}"#;
        let empty = with("server/discover", Mangle::EmptyResult).answer(discover);
        assert_eq!(json_lines(&empty.bytes)[0]["result"], json!({}));
        let refused = with("tools/list", Mangle::EmptyResult).answer(discover);
        assert_eq!(json_lines(&refused.bytes)[0]["error"]["code"], -32601);
        assert_eq!(
            with("tools/list", Mangle::Batch).answer(INITIALIZE).bytes,
            plain
        );
    }

    #[test]
    fn a_bad_schema_tool_is_listed_second_among_the_good_ones() {
        for (kind, schema) in [
            (BadSchema::String, Some(json!("object"))),
            (BadSchema::Null, Some(Value::Null)),
            (BadSchema::Array, Some(json!([{ "type": "object" }]))),
            (BadSchema::Missing, None),
        ] {
            let tools = listed(&server(RawBehaviour {
                bad_schema: Some(kind),
                ..RawBehaviour::default()
            }));
            assert_eq!(tools.len(), 6);
            assert_eq!(tools[0]["name"], "echo");
            assert_eq!(tools[1]["name"], BAD_SCHEMA_TOOL);
            assert_eq!(tools[1].get("inputSchema"), schema.as_ref(), "{kind:?}");
            assert!(tools[2]["inputSchema"].is_object());
        }
    }

    #[test]
    fn an_empty_name_and_a_duplicate_are_listed_as_asked() {
        let tools = listed(&server(RawBehaviour {
            empty_tool_name: true,
            duplicate_tool: true,
            ..RawBehaviour::default()
        }));
        let names: Vec<_> = tools.iter().map(|tool| tool["name"].clone()).collect();
        assert_eq!(
            names,
            ["echo", "fail", "", "env", "pid", "add_tool", "echo"]
        );
        assert_eq!(tools[6]["description"], DUPLICATE_DESCRIPTION);
    }

    #[test]
    fn calls_wait_their_delay_and_cancellations_are_not_answered() {
        let server = server(RawBehaviour {
            call_delay: Duration::from_millis(7),
            ..RawBehaviour::default()
        });
        let call = server
            .answer(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pid"}}"#);
        assert_eq!(call.wait, Duration::from_millis(7));
        let lines = json_lines(&call.bytes);
        assert_eq!(lines[0]["id"], 5);
        assert_eq!(lines[0]["result"]["structuredContent"]["tool"], "pid");

        let own = server.answer(
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"pid","arguments":{"delay_ms":0}}}"#,
        );
        assert_eq!(own.wait, Duration::ZERO);

        let cancelled = server.answer(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#,
        );
        assert_eq!(cancelled, Reply::now(Vec::new()));
        assert!(server.answer("not json").bytes.is_empty());

        let unknown = server
            .answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}"#);
        assert_eq!(json_lines(&unknown.bytes)[0]["error"]["code"], -32602);
    }
}
