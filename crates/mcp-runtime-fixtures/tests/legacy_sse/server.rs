//! A small legacy HTTP+SSE server (protocol revision 2024-11-05) written for these
//! tests: it records what it receives, byte for byte, and misbehaves on request.
//!
//! `GET /sse` opens the event stream (one session at a time) and announces
//! `/messages`; `POST /messages` takes one message, answers `202` and sends the
//! answer on the stream. It has two tools: `echo` answers `ok`, `fault` does what
//! [`Fault`] says. One HTTP/1.1 request per connection, no framework. Started with
//! [`LegacyServer::start_protected`], it is also an OAuth protected resource: the
//! fixture's authorization server ([`AuthServer`]) answers its own endpoints on the
//! same origin, and both `/sse` and `/messages` need its access token.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use mcp_runtime_fixtures::oauth::{AuthServer, Config as AuthConfig};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{Notify, mpsc},
};

/// What the server announces in its `endpoint` event.
#[derive(Clone, Copy, Default)]
pub enum Endpoint {
    /// `/messages`, on its own origin.
    #[default]
    Relative,
    /// The same server under another origin: `http://localhost:PORT/messages`.
    OtherOrigin,
    /// Nothing: the stream stays open without an `endpoint` event.
    Never,
    /// Nothing: the stream ends at once.
    EndStream,
}

/// What a call of the `fault` tool does.
#[derive(Clone, Copy, Default)]
pub enum Fault {
    /// Answers `ok`, like `echo`.
    #[default]
    None,
    /// Answers with an event of this many bytes of text.
    Oversized(usize),
    /// Ends the event stream instead of answering.
    EndStream,
    /// Answers the `POST` with `500` and a body, and the call never.
    Status500,
    /// Answers with neither `result` nor `error`: not a response.
    NotAResponse,
    /// Answers `ok` in a JSON-RPC batch of one.
    Batch,
    /// Answers `ok` with a byte that is not UTF-8 outside the result: a top-level
    /// `"note":"caf\xFF"`.
    NotUtf8,
}

/// How the server behaves.
#[derive(Clone, Copy)]
pub struct Behavior {
    pub endpoint: Endpoint,
    pub fault: Fault,
    /// The content type of the `GET` answer.
    pub content_type: &'static str,
    /// The protocol version `initialize` is answered with.
    pub version: &'static str,
}

impl Default for Behavior {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::default(),
            fault: Fault::default(),
            content_type: "text/event-stream",
            version: "2024-11-05",
        }
    }
}

/// One request received: its lowercase headers and its body as sent.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: String,
}

#[derive(Default)]
struct State {
    /// The open stream's events; dropping it ends the stream.
    events: Option<mpsc::UnboundedSender<Vec<u8>>>,
    gets: Vec<Received>,
    posts: Vec<Received>,
}

/// A running server; its tasks end with the test's runtime.
pub struct LegacyServer {
    pub url: String,
    state: Arc<Mutex<State>>,
    stream_closed: Arc<Notify>,
}

impl LegacyServer {
    /// Serves on a free loopback port.
    pub async fn start(behavior: Behavior) -> Self {
        Self::serve(behavior, false).await
    }

    /// Serves on a free loopback port, protected by the fixture's authorization
    /// server (see the module docs).
    pub async fn start_protected(behavior: Behavior) -> Self {
        Self::serve(behavior, true).await
    }

    async fn serve(behavior: Behavior, protected: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let stream_closed = Arc::new(Notify::new());
        let origin = format!("http://127.0.0.1:{port}");
        let server = Server {
            behavior,
            port,
            state: state.clone(),
            stream_closed: stream_closed.clone(),
            auth: protected.then(|| {
                Arc::new(AuthServer::new(
                    AuthConfig::default(),
                    &origin,
                    "/sse",
                    None,
                ))
            }),
        };
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(async move { server.handle(socket).await });
            }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/sse"),
            state,
            stream_closed,
        }
    }

    /// Every `GET` received.
    pub fn gets(&self) -> Vec<Received> {
        self.state.lock().unwrap().gets.clone()
    }

    /// Every `POST` received.
    pub fn posts(&self) -> Vec<Received> {
        self.state.lock().unwrap().posts.clone()
    }

    /// Returns once an event stream has closed (the client went away, or the server
    /// ended it).
    pub async fn stream_closed(&self) {
        self.stream_closed.notified().await;
    }
}

#[derive(Clone)]
struct Server {
    behavior: Behavior,
    port: u16,
    state: Arc<Mutex<State>>,
    stream_closed: Arc<Notify>,
    /// The authorization server, when the server is protected.
    auth: Option<Arc<AuthServer>>,
}

impl Server {
    async fn handle(&self, mut socket: TcpStream) {
        let Some((method, target, received)) = read_request(&mut socket).await else {
            return;
        };
        if let Some(auth) = &self.auth {
            let (path, query) = match target.split_once('?') {
                Some((path, query)) => (path, Some(query)),
                None => (target.as_str(), None),
            };
            let mut headers = http::HeaderMap::new();
            for (name, value) in &received.headers {
                if let (Ok(name), Ok(value)) = (
                    http::HeaderName::try_from(name.as_str()),
                    http::HeaderValue::try_from(value.as_str()),
                ) {
                    headers.insert(name, value);
                }
            }
            let now = std::time::Instant::now();
            let refused = if AuthServer::serves(path) {
                let method = http::Method::from_bytes(method.as_bytes()).unwrap();
                Some(auth.answer(
                    &method,
                    path,
                    query,
                    &headers,
                    received.body.as_bytes(),
                    now,
                ))
            } else {
                auth.authorize_resource(&headers, now)
                    .err()
                    .map(|answer| *answer)
            };
            if let Some(answer) = refused {
                write_response(&mut socket, answer).await;
                return;
            }
        }
        if method == "GET" {
            self.state.lock().unwrap().gets.push(received);
            self.stream(socket).await;
        } else {
            self.state.lock().unwrap().posts.push(received.clone());
            let (status, body) = self.answer(&received.body);
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    }

    /// The event stream of one session, until either side ends it.
    async fn stream(&self, mut socket: TcpStream) {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
            self.behavior.content_type
        );
        let endpoint = match self.behavior.endpoint {
            Endpoint::Relative => Some("/messages".to_owned()),
            Endpoint::OtherOrigin => Some(format!("http://localhost:{}/messages", self.port)),
            Endpoint::Never | Endpoint::EndStream => None,
        };
        let mut first = head;
        if let Some(endpoint) = endpoint {
            first.push_str(&format!("event: endpoint\ndata: {endpoint}\n\n"));
        }
        if socket.write_all(first.as_bytes()).await.is_err()
            || matches!(self.behavior.endpoint, Endpoint::EndStream)
        {
            self.stream_closed.notify_one();
            return;
        }
        let (sender, mut events) = mpsc::unbounded_channel();
        self.state.lock().unwrap().events = Some(sender);
        let mut scratch = [0u8; 64];
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        if socket.write_all(&event).await.is_err() {
                            break;
                        }
                    }
                    None => break,
                },
                read = socket.read(&mut scratch) => {
                    if matches!(read, Ok(0) | Err(_)) {
                        break;
                    }
                }
            }
        }
        self.stream_closed.notify_one();
    }

    /// The status and body of the answer to a posted message, after sending its
    /// answer (if any) on the stream.
    fn answer(&self, body: &str) -> (&'static str, &'static str) {
        let accepted = ("202 Accepted", "Accepted");
        let Ok(message) = serde_json::from_str::<Value>(body) else {
            return ("400 Bad Request", "not JSON");
        };
        let Some(id) = message.get("id").cloned() else {
            return accepted;
        };
        let mut batch = false;
        let mut not_utf8 = false;
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": self.behavior.version,
                "capabilities": {"tools": {}, "experimental": {"codex/sandbox-state": {}}},
                "serverInfo": {"name": "hand-written", "version": "0"},
            }),
            Some("tools/list") => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "fault", "inputSchema": {"type": "object"}},
            ]}),
            Some("tools/call") if message["params"]["name"] == "fault" => match self.behavior.fault
            {
                Fault::None => text("ok"),
                Fault::Oversized(bytes) => text(&"x".repeat(bytes)),
                Fault::EndStream => {
                    self.state.lock().unwrap().events = None;
                    return accepted;
                }
                Fault::Status500 => return ("500 Internal Server Error", "database on fire"),
                Fault::NotAResponse => Value::Null,
                Fault::Batch => {
                    batch = true;
                    text("ok")
                }
                Fault::NotUtf8 => {
                    not_utf8 = true;
                    text("ok")
                }
            },
            Some("tools/call") => text("ok"),
            _ => json!({}),
        };
        let mut answer = json!({"jsonrpc": "2.0", "id": id, "result": &result});
        if result.is_null() {
            answer = json!({"jsonrpc": "2.0", "id": id});
        }
        if batch {
            answer = json!([answer]);
        }
        let mut data = answer.to_string().into_bytes();
        if not_utf8 {
            data.splice(..1, b"{\"note\":\"caf\xFF\",".iter().copied());
        }
        if let Some(events) = &self.state.lock().unwrap().events {
            let event = [&b"event: message\ndata: "[..], &data, b"\n\n"].concat();
            let _ = events.send(event);
        }
        accepted
    }
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Writes `answer` as an HTTP/1.1 response, closing the connection.
async fn write_response(socket: &mut TcpStream, answer: http::Response<String>) {
    let status = answer.status();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in answer.headers() {
        head.push_str(&format!(
            "{name}: {}\r\n",
            value.to_str().unwrap_or_default()
        ));
    }
    let body = answer.into_body();
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    let _ = socket.write_all(head.as_bytes()).await;
}

/// Reads one request: its method, target, headers and body.
async fn read_request(socket: &mut TcpStream) -> Option<(String, String, Received)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|length| length.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    let body = String::from_utf8(body).ok()?;
    Some((method, target, Received { headers, body }))
}
