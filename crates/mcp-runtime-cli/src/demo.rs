//! Demo MCP servers built into the CLI, served by the hidden `serve-demo NAME`
//! subcommand.
//!
//! They let someone try mcp-runtime with nothing else installed: the demo
//! configuration starts this same binary as its servers. Each speaks MCP over
//! the process's stdin/stdout, so nothing else may be written to stdout (the
//! CLI's logs go to stderr).
//!
//! - `text` (`demo-text`): `echo`, `word_count`, `upper`.
//! - `math` (`demo-math`): `add`, `multiply`, `divide`.
//! - `sandbox` (`demo-sandbox`): `run`, which runs a command under the calling host's
//!   sandbox. It advertises `codex/sandbox-state`, captures the authority of each call
//!   from its `_meta`, and fails closed when the host supplied no launcher.

use std::{process::Stdio, time::Duration};

use anyhow::Context;
use mcp_runtime::{CapturedAuthority, Config, SANDBOX_STATE_CAPABILITY, Unsandboxed};
use rmcp::{
    RoleServer, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, ExperimentalCapabilities, Implementation, JsonObject,
        ServerCapabilities, ServerConfig,
    },
    schemars,
    service::RequestContext,
    tool, tool_handler, tool_router,
};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

/// The embedded demo configuration: servers built into this very binary.
pub fn demo_config() -> anyhow::Result<Config> {
    let exe = std::env::current_exe().context("cannot find the path of this executable")?;
    let exe = exe
        .to_str()
        .context("the path of this executable is not valid UTF-8")?
        .to_owned();
    let mut config = Config::default();
    for (name, server) in [("text", "text"), ("math", "math"), ("sandbox", "sandbox")] {
        let server = mcp_runtime::ServerConfig::stdio(
            name,
            exe.clone(),
            vec!["serve-demo".into(), server.into()],
        );
        config.servers.insert(name.to_owned(), server);
    }
    Ok(config)
}

/// Which demo server to run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum DemoServer {
    /// `demo-text`: echo, count words, upper-case.
    Text,
    /// `demo-math`: add, multiply, divide.
    Math,
    /// `demo-sandbox`: run a command under the caller's sandbox.
    Sandbox,
}

/// Serve the demo MCP server over this process's stdin/stdout until stdin closes.
///
/// # Cancel safety
///
/// Dropping the future stops the server; a read of stdin already in progress
/// is abandoned with it.
pub async fn serve(server: DemoServer) -> anyhow::Result<()> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_on(server, stdin, stdout).await
}

/// Serve `server` over a byte stream pair until `input` ends.
async fn serve_on<R, W>(server: DemoServer, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    match server {
        DemoServer::Text => run(TextServer::new(), input, output).await,
        DemoServer::Math => run(MathServer::new(), input, output).await,
        DemoServer::Sandbox => run(SandboxServer::new(), input, output).await,
    }
}

async fn run<S, R, W>(server: S, input: R, output: W) -> anyhow::Result<()>
where
    S: ServerHandler,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = server.serve((input, output)).await?;
    running.waiting().await?;
    Ok(())
}

/// Arguments of the text tools.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct TextArgs {
    /// The text to work on.
    text: String,
}

/// The `demo-text` server.
#[derive(Clone, Debug)]
struct TextServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TextServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Return the text unchanged")]
    fn echo(&self, Parameters(TextArgs { text }): Parameters<TextArgs>) -> String {
        text
    }

    #[tool(description = "Count the whitespace-separated words in the text")]
    fn word_count(&self, Parameters(TextArgs { text }): Parameters<TextArgs>) -> CallToolResult {
        let words = text.split_whitespace().count();
        let mut result = CallToolResult::success(vec![ContentBlock::text(words.to_string())]);
        result.structured_content = Some(serde_json::json!({ "words": words }));
        result
    }

    #[tool(description = "Return the text in upper case")]
    fn upper(&self, Parameters(TextArgs { text }): Parameters<TextArgs>) -> String {
        text.to_uppercase()
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "demo-text",
    instructions = "Text utilities: echo a text, count its words, upper-case it."
)]
impl ServerHandler for TextServer {}

/// Arguments of the math tools.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Operands {
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
}

/// The `demo-math` server.
#[derive(Clone, Debug)]
struct MathServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MathServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Add two numbers: a + b")]
    fn add(&self, Parameters(Operands { a, b }): Parameters<Operands>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Multiply two numbers: a * b")]
    fn multiply(&self, Parameters(Operands { a, b }): Parameters<Operands>) -> String {
        (a * b).to_string()
    }

    #[tool(description = "Divide a by b; fails when b is zero")]
    fn divide(
        &self,
        Parameters(Operands { a, b }): Parameters<Operands>,
    ) -> Result<String, String> {
        if b == 0.0 {
            Err("division by zero".to_owned())
        } else {
            Ok((a / b).to_string())
        }
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "demo-math",
    instructions = "Arithmetic on two numbers a and b: add, multiply, divide."
)]
impl ServerHandler for MathServer {}

/// How long a command run by the sandbox demo may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `run`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct RunArgs {
    /// The program to run, inside the sandbox.
    program: String,
    /// Its arguments.
    #[serde(default)]
    args: Vec<String>,
}

/// The `demo-sandbox` server.
#[derive(Clone, Debug)]
struct SandboxServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl SandboxServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Run a command under the calling host's sandbox; refuses when the host supplies no sandbox launcher"
    )]
    async fn run(
        &self,
        Parameters(RunArgs { program, args }): Parameters<RunArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        // The authority comes from the request's `_meta`, set by the host; the
        // arguments (written by the model) are only the command.
        let authority = CapturedAuthority::from_meta(&context.meta.0.0)
            .map_err(|error| error.to_string())?
            .ok_or("the host sent no sandbox state (`codex/sandbox-state`); refusing to run")?;
        let mut command = tokio::process::Command::from(
            authority
                .command(&program, &args, Unsandboxed::Refuse)
                .map_err(|error| error.to_string())?,
        );
        command.stdin(Stdio::null()).kill_on_drop(true);
        let output = tokio::time::timeout(RUN_TIMEOUT, command.output())
            .await
            .map_err(|_| {
                format!(
                    "`{program}` did not finish within {}s",
                    RUN_TIMEOUT.as_secs()
                )
            })?
            .map_err(|error| format!("cannot run the sandbox launcher: {error}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "`{program}` failed ({}): {}{}",
                output.status,
                stdout,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SandboxServer {
    fn get_info(&self) -> ServerConfig {
        let mut experimental = ExperimentalCapabilities::new();
        experimental.insert(SANDBOX_STATE_CAPABILITY.to_owned(), JsonObject::new());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_experimental_with(experimental)
                .build(),
        )
        .with_server_info(Implementation::new(
            "demo-sandbox",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Runs commands under the calling host's sandbox, through the launcher it supplies."
                .to_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;

    fn text_of(result: &CallToolResult) -> &str {
        &result.content[0].as_text().expect("a text block").text
    }

    #[test]
    fn word_count_answers_the_count_as_text_and_structured_content() {
        let result = TextServer::new().word_count(Parameters(TextArgs {
            text: "  one two\tthree\n".into(),
        }));
        assert_eq!(text_of(&result), "3");
        assert_eq!(result.structured_content, Some(json!({ "words": 3 })));
    }

    #[test]
    fn text_tools_transform_the_text() {
        let server = TextServer::new();
        let args = || {
            Parameters(TextArgs {
                text: "Grüße, mcp".into(),
            })
        };
        assert_eq!(server.echo(args()), "Grüße, mcp");
        assert_eq!(server.upper(args()), "GRÜSSE, MCP");
    }

    #[test]
    fn dividing_by_zero_is_a_tool_error() {
        let server = MathServer::new();
        assert_eq!(
            server.divide(Parameters(Operands { a: 1.0, b: 0.0 })),
            Err("division by zero".to_owned())
        );
        assert_eq!(
            server.divide(Parameters(Operands { a: 7.0, b: 2.0 })),
            Ok("3.5".to_owned())
        );
        assert_eq!(server.add(Parameters(Operands { a: 2.0, b: 3.0 })), "5");
        assert_eq!(
            server.multiply(Parameters(Operands { a: -2.0, b: 1.5 })),
            "-3"
        );
    }

    #[test]
    fn every_tool_has_a_description_and_an_object_schema_with_its_arguments() {
        let text = TextServer::new().tool_router.list_all();
        let math = MathServer::new().tool_router.list_all();
        for (tools, expected, required) in [
            (&text, ["echo", "upper", "word_count"], vec!["text"]),
            (&math, ["add", "divide", "multiply"], vec!["a", "b"]),
        ] {
            let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
            names.sort_unstable();
            assert_eq!(names, expected);
            for tool in tools {
                assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
                assert_eq!(tool.input_schema["type"], "object");
                let mut listed: Vec<&str> = tool.input_schema["required"]
                    .as_array()
                    .expect("required arguments")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                listed.sort_unstable();
                assert_eq!(listed, required, "{}", tool.name);
            }
        }
    }

    /// Drive a demo server over an in-memory byte stream with raw JSON-RPC
    /// lines, the way a client on the other end of stdio would.
    async fn exchange(server: DemoServer, requests: &[Value]) -> Vec<Value> {
        let (client, server_end) = tokio::io::duplex(1 << 16);
        let (server_in, server_out) = tokio::io::split(server_end);
        let serving = tokio::spawn(serve_on(server, server_in, server_out));
        let (client_in, mut client_out) = tokio::io::split(client);
        let mut lines = BufReader::new(client_in).lines();
        let mut answers = Vec::new();
        for request in requests {
            let mut line = serde_json::to_vec(request).unwrap();
            line.push(b'\n');
            client_out.write_all(&line).await.unwrap();
            if request.get("id").is_some() {
                let answer = lines.next_line().await.unwrap().expect("an answer");
                answers.push(serde_json::from_str(&answer).unwrap());
            }
        }
        client_out.shutdown().await.unwrap();
        drop(client_out);
        serving.await.unwrap().unwrap();
        answers
    }

    fn handshake() -> [Value; 2] {
        [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
    }

    #[tokio::test]
    async fn the_text_server_answers_over_a_byte_stream() {
        let mut requests = handshake().to_vec();
        requests.push(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "word_count", "arguments": {"text": "a b c d"}}}));
        let answers = exchange(DemoServer::Text, &requests).await;
        assert_eq!(answers[0]["result"]["serverInfo"]["name"], "demo-text");
        assert_eq!(answers[0]["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(answers[1]["result"]["content"][0]["text"], "4");
        assert_eq!(
            answers[1]["result"]["structuredContent"],
            json!({"words": 4})
        );
    }

    #[tokio::test]
    async fn the_math_server_reports_division_by_zero_as_is_error() {
        let mut requests = handshake().to_vec();
        requests.push(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "divide", "arguments": {"a": 1, "b": 0}}}));
        let answers = exchange(DemoServer::Math, &requests).await;
        assert_eq!(answers[0]["result"]["serverInfo"]["name"], "demo-math");
        assert_eq!(answers[1]["result"]["isError"], true);
        assert_eq!(
            answers[1]["result"]["content"][0]["text"],
            "division by zero"
        );
    }
}
