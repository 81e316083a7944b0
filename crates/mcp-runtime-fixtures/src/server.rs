//! The fixture's MCP server handler: its tools, its pagination, and the delays
//! and faults tests ask for.
//!
//! The handler is written against rmcp's [`ServerHandler`] directly (no tool
//! router) because the tool set is decided at run time. Tools are listed in a
//! fixed order: the fixed tools `echo`, `fail`, `env`, `pid`; then the
//! generated `tool_0` … `tool_{N-1}`; then the named ones.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        ExperimentalCapabilities, Implementation, InitializeRequestParams, InitializeResult,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

/// The cursor every page names in `--repeat-cursor` mode.
pub const REPEATED_CURSOR: &str = "again";

/// How the fixture behaves, as chosen on its command line.
#[derive(Clone, Debug, Default)]
pub struct Behaviour {
    /// Number of generated tools `tool_0` … `tool_{N-1}`.
    pub generated_tools: usize,
    /// Extra tools with exactly these names.
    pub named_tools: Vec<String>,
    /// Tools per `tools/list` page; `None` answers every tool in one page.
    pub page_size: Option<usize>,
    /// Answer every page with the same next cursor, forever.
    pub repeat_cursor: bool,
    /// Wait before answering `initialize`.
    pub init_delay: Duration,
    /// Wait before answering each `tools/list`.
    pub list_delay: Duration,
    /// Wait before answering each `tools/call`.
    pub call_delay: Duration,
    /// Never answer `initialize`.
    pub hang_initialize: bool,
    /// Answer `tools/list` with a JSON-RPC error.
    pub fail_list: bool,
    /// Advertised as `capabilities.experimental`; none when empty.
    pub experimental: ExperimentalCapabilities,
}

/// The fixture server. Cheap to clone: the streamable HTTP server makes one
/// per session.
#[derive(Clone, Debug)]
pub struct Fixture {
    behaviour: Arc<Behaviour>,
    tools: Arc<[Tool]>,
}

impl Fixture {
    /// A server that behaves as `behaviour` says.
    pub fn new(behaviour: Behaviour) -> Self {
        let tools = tools(&behaviour).into();
        Self {
            behaviour: Arc::new(behaviour),
            tools,
        }
    }

    /// How this server behaves.
    pub fn behaviour(&self) -> &Behaviour {
        &self.behaviour
    }

    /// One page of tools starting at `cursor`.
    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, McpError> {
        let offset = match cursor {
            None => 0,
            Some(REPEATED_CURSOR) if self.behaviour.repeat_cursor => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|offset| *offset <= self.tools.len())
                .ok_or_else(|| {
                    McpError::invalid_params(format!("invalid cursor `{cursor}`"), None)
                })?,
        };
        let page_size = self.behaviour.page_size.unwrap_or(self.tools.len());
        let end = offset.saturating_add(page_size).min(self.tools.len());
        let mut result = ListToolsResult::with_all_items(self.tools[offset..end].to_vec());
        result.next_cursor = if self.behaviour.repeat_cursor {
            Some(REPEATED_CURSOR.to_owned())
        } else {
            (end < self.tools.len()).then(|| end.to_string())
        };
        Ok(result)
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if !self.behaviour.experimental.is_empty() {
            capabilities.experimental = Some(self.behaviour.experimental.clone());
        }
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "mcp-fixture",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if self.behaviour.hang_initialize {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(self.behaviour.init_delay).await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        tokio::time::sleep(self.behaviour.list_delay).await;
        if self.behaviour.fail_list {
            return Err(McpError::internal_error(
                "tools/list failed on purpose",
                None,
            ));
        }
        self.page(request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        tokio::select! {
            () = tokio::time::sleep(self.behaviour.call_delay) => {}
            // rmcp drops the answer to a cancelled request anyway; stop waiting.
            () = context.ct.cancelled() => {
                return Err(McpError::internal_error("tools/call cancelled", None));
            }
        }
        let arguments = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::structured(Value::Object(arguments)),
            "fail" => CallToolResult::error(vec![ContentBlock::text("failed on purpose")]),
            "env" => env_tool(&arguments)?,
            "pid" => with_structured(
                std::process::id().to_string(),
                json!({ "pid": std::process::id() }),
            ),
            name if self.tools.iter().any(|tool| tool.name == name) => with_structured(
                format!("called {name}"),
                json!({ "tool": name, "arguments": arguments }),
            ),
            name => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{name}`"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }
}

/// `env {name}`: the variable's value in this process, or `<unset>`.
fn env_tool(arguments: &JsonObject) -> Result<CallToolResult, McpError> {
    let Some(Value::String(name)) = arguments.get("name") else {
        return Err(McpError::invalid_params(
            "`env` needs a string argument `name`",
            None,
        ));
    };
    let value = std::env::var_os(name).map(|value| value.to_string_lossy().into_owned());
    let text = value.clone().unwrap_or_else(|| "<unset>".to_owned());
    Ok(with_structured(
        text,
        json!({ "name": name, "value": value }),
    ))
}

/// A successful result with one text block and structured content.
fn with_structured(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// The tool list in its fixed order (see the module docs).
fn tools(behaviour: &Behaviour) -> Vec<Tool> {
    let no_arguments = schema(json!({ "type": "object", "properties": {} }));
    let mut tools = vec![
        Tool::new(
            "echo",
            "Return the arguments as JSON text and as structured content",
            schema(json!({ "type": "object" })),
        ),
        Tool::new(
            "fail",
            "Always fail with isError: true",
            no_arguments.clone(),
        ),
        Tool::new(
            "env",
            "Read an environment variable of the fixture process",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Name of the variable" }
                },
                "required": ["name"]
            })),
        ),
        Tool::new("pid", "The fixture's process id", no_arguments.clone()),
    ];
    tools.extend((0..behaviour.generated_tools).map(|i| {
        Tool::new(
            format!("tool_{i}"),
            format!("generated tool {i}"),
            no_arguments.clone(),
        )
    }));
    tools.extend(
        behaviour
            .named_tools
            .iter()
            .map(|name| Tool::new(name.clone(), "named tool", no_arguments.clone())),
    );
    tools
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        other => unreachable!("a tool schema literal is an object, not {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(behaviour: Behaviour) -> Fixture {
        Fixture::new(behaviour)
    }

    fn names(result: &ListToolsResult) -> Vec<&str> {
        result.tools.iter().map(|tool| tool.name.as_ref()).collect()
    }

    #[test]
    fn tools_are_fixed_then_generated_then_named() {
        let server = fixture(Behaviour {
            generated_tools: 2,
            named_tools: vec!["zeta".into(), "alpha".into()],
            ..Behaviour::default()
        });
        let page = server.page(None).unwrap();
        assert_eq!(
            names(&page),
            [
                "echo", "fail", "env", "pid", "tool_0", "tool_1", "zeta", "alpha"
            ]
        );
        assert_eq!(page.next_cursor, None);
        assert_eq!(
            page.tools[4].description.as_deref(),
            Some("generated tool 0")
        );
        assert_eq!(page.tools[6].description.as_deref(), Some("named tool"));
    }

    #[test]
    fn pages_are_cut_at_the_page_size_and_the_cursor_is_the_offset() {
        let server = fixture(Behaviour {
            generated_tools: 3,
            page_size: Some(3),
            ..Behaviour::default()
        });
        let first = server.page(None).unwrap();
        assert_eq!(names(&first), ["echo", "fail", "env"]);
        assert_eq!(first.next_cursor.as_deref(), Some("3"));
        let second = server.page(Some("3")).unwrap();
        assert_eq!(names(&second), ["pid", "tool_0", "tool_1"]);
        assert_eq!(second.next_cursor.as_deref(), Some("6"));
        let last = server.page(Some("6")).unwrap();
        assert_eq!(names(&last), ["tool_2"]);
        assert_eq!(last.next_cursor, None);
    }

    #[test]
    fn a_cursor_past_the_end_or_not_a_number_is_rejected() {
        let server = fixture(Behaviour::default());
        assert!(server.page(Some("5")).is_err());
        assert!(server.page(Some("x")).is_err());
        assert!(server.page(Some(REPEATED_CURSOR)).is_err());
        assert!(server.page(Some("4")).unwrap().tools.is_empty());
    }

    #[test]
    fn repeat_cursor_names_the_same_cursor_on_every_page() {
        let server = fixture(Behaviour {
            page_size: Some(2),
            repeat_cursor: true,
            ..Behaviour::default()
        });
        let first = server.page(None).unwrap();
        let again = server.page(Some(REPEATED_CURSOR)).unwrap();
        assert_eq!(first.next_cursor.as_deref(), Some(REPEATED_CURSOR));
        assert_eq!(again.next_cursor.as_deref(), Some(REPEATED_CURSOR));
        assert_eq!(names(&again), ["echo", "fail"]);
    }

    #[test]
    fn experimental_capabilities_are_advertised_only_when_given() {
        let plain = fixture(Behaviour::default()).get_info();
        assert_eq!(plain.capabilities.experimental, None);
        let tools = plain.capabilities.tools.unwrap();
        assert_eq!(tools.list_changed, Some(true));

        let mut experimental = ExperimentalCapabilities::new();
        experimental.insert("x.sandbox".into(), JsonObject::new());
        let info = fixture(Behaviour {
            experimental: experimental.clone(),
            ..Behaviour::default()
        })
        .get_info();
        assert_eq!(info.capabilities.experimental, Some(experimental));
    }

    #[test]
    fn env_reports_unset_variables() {
        let mut arguments = JsonObject::new();
        arguments.insert("name".into(), json!("MCP_FIXTURE_SURELY_UNSET_VARIABLE"));
        let result = env_tool(&arguments).unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, "<unset>");
        assert_eq!(
            result.structured_content,
            Some(json!({ "name": "MCP_FIXTURE_SURELY_UNSET_VARIABLE", "value": null }))
        );
        assert!(env_tool(&JsonObject::new()).is_err());
    }
}
