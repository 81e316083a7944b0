//! What the user sees: tables for people, JSON for scripts.
//!
//! Text that servers control (descriptions, stderr quoted in errors, tool output) is
//! passed through [`printable`] before it reaches a terminal, so a server cannot move
//! the cursor, retitle the window or forge output with escape sequences. What a call,
//! a read or a prompt outputs is the server's text, and on a pipe a program reads it:
//! there it is printed as it is, every character the server's ([`output_text`]).

use std::{borrow::Cow, error::Error, io::Write, sync::Arc};

use mcp_runtime::{
    CallError, Catalog, Content, ListToolsError, QualifiedTool, SearchHit, ServerStatus,
    StartError, StartupError, TaskSupport, ToolResult,
    error::{HttpFailure, RequestError, chain},
};
use serde::{Serialize, Serializer, ser::SerializeMap};
use serde_json::Value;

/// Writes the `--json` report of `servers` and `tools` to `out`: one object with both
/// lists, pretty-printed, then a newline. A server's `state` is one of `starting`,
/// `ready`, `failed`, `cancelled` and `unavailable`; its `protocol_version` is the MCP
/// revision spoken with it while it has a connection (`2026-07-28`, or the handshake
/// revision it answered), else `null`; its `instructions` what the server says about
/// how to use it, while it has a connection, else `null`.
///
/// The report is serialized straight from the catalog into `out`, with no JSON tree
/// in between: a catalog of thousands of tools is not copied once more to print it.
pub fn write_report_json(
    out: &mut (impl Write + ?Sized),
    servers: &[ServerStatus],
    catalog: &Catalog,
) -> std::io::Result<()> {
    Report { servers, catalog }.serialize(&mut serde_json::Serializer::pretty(&mut *out))?;
    out.write_all(b"\n")
}

struct Report<'a> {
    servers: &'a [ServerStatus],
    catalog: &'a Catalog,
}

impl Serialize for Report<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut report = serializer.serialize_map(Some(2))?;
        report.serialize_entry("servers", &Seq(|| self.servers.iter().map(ServerJson)))?;
        report.serialize_entry("tools", &Seq(|| self.catalog.tools().map(ToolJson)))?;
        report.end()
    }
}

/// A sequence serialized from the iterator its function makes.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator<Item: Serialize>,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// One server of the `--json` report.
struct ServerJson<'a>(&'a ServerStatus);

impl Serialize for ServerJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let server = self.0;
        let mut map = serializer.serialize_map(Some(10))?;
        map.serialize_entry("name", &server.name)?;
        map.serialize_entry("state", server.state.as_str())?;
        map.serialize_entry("transport", server.transport.as_str())?;
        map.serialize_entry("protocol_version", &server.protocol_version)?;
        map.serialize_entry("auth", &server.auth.map(|auth| auth.as_str()))?;
        map.serialize_entry("instructions", &server.instructions)?;
        map.serialize_entry(
            "startup_ms",
            &u64::try_from(server.startup_time.as_millis()).unwrap_or(u64::MAX),
        )?;
        map.serialize_entry(
            "error",
            &server.error.as_ref().map(|error| error_text(error)),
        )?;
        map.serialize_entry(
            "supports_parallel_tool_calls",
            &server.supports_parallel_tool_calls,
        )?;
        map.serialize_entry(
            "default_tools_approval_mode",
            &server.default_tools_approval_mode.map(|mode| mode.as_str()),
        )?;
        map.end()
    }
}

/// One tool of the `--json` report. The host settings of the server's table appear
/// only when set: `approval_mode` (`auto`, `prompt`, `writes` or `approve`),
/// `output_token_limit`, and `supports_parallel_tool_calls` (only when `true`);
/// `task_support` (`optional` or `required`) only when the tool may run as a task.
/// Last, `definition`: the tool as the server listed it, every field (`title`,
/// `annotations`, `outputSchema`, `execution`, `icons`, `_meta`, and what a newer
/// revision or an extension adds).
struct ToolJson<'a>(&'a QualifiedTool);

impl Serialize for ToolJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tool = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("qualified_name", &tool.qualified_name)?;
        map.serialize_entry("server", &tool.server)?;
        map.serialize_entry("tool", &tool.tool.name)?;
        map.serialize_entry("description", &tool.tool.description)?;
        map.serialize_entry("input_schema", &tool.tool.input_schema)?;
        if let Some(mode) = tool.approval_mode {
            map.serialize_entry("approval_mode", mode.as_str())?;
        }
        if let Some(limit) = tool.output_token_limit {
            map.serialize_entry("output_token_limit", &limit)?;
        }
        if tool.supports_parallel_tool_calls {
            map.serialize_entry("supports_parallel_tool_calls", &true)?;
        }
        if tool.task_support != TaskSupport::Forbidden {
            map.serialize_entry("task_support", tool.task_support.as_str())?;
        }
        map.serialize_entry("definition", &tool.definition())?;
        map.end()
    }
}

/// The `servers` table.
pub fn servers_table(servers: &[ServerStatus]) -> String {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|server| {
            vec![
                server.name.clone(),
                server.state.as_str().to_owned(),
                server.transport.as_str().to_owned(),
                server.auth.map_or("", |auth| auth.as_str()).to_owned(),
                format!("{}ms", server.startup_time.as_millis()),
                server.tools.to_string(),
                server
                    .error
                    .as_ref()
                    .map(|error| printable(&error_text(error)).replace('\n', " "))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &[
            "SERVER",
            "STATE",
            "TRANSPORT",
            "AUTH",
            "STARTUP",
            "TOOLS",
            "ERROR",
        ],
        &rows,
    )
}

/// The `tools` table: qualified name and the first line of the description.
pub fn tools_table(catalog: &Catalog) -> String {
    let rows: Vec<Vec<String>> = catalog
        .tools()
        .map(|tool| {
            let description = tool.tool.description.as_deref().unwrap_or_default();
            vec![tool.qualified_name.to_string(), one_line(description, 100)]
        })
        .collect();
    table(&["TOOL", "DESCRIPTION"], &rows)
}

/// The tools a search found, best first: each qualified name with its score and the
/// first line of its description.
pub fn search_table(hits: &[SearchHit]) -> String {
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|hit| {
            let description = hit.tool.tool.description.as_deref().unwrap_or_default();
            vec![
                printable(&hit.tool.qualified_name).into_owned(),
                format!("{:.2}", hit.score),
                one_line(description, 100),
            ]
        })
        .collect();
    table(&["TOOL", "SCORE", "DESCRIPTION"], &rows)
}

/// Writes the `--json` answer of a search to `out`: `{"tools": [...]}`, best first,
/// each tool with its `qualified_name`, `server`, raw name (`tool`), `score` and
/// `description` (`null` without one), pretty-printed, then a newline.
pub fn write_search_json(
    out: &mut (impl Write + ?Sized),
    hits: &[SearchHit],
) -> std::io::Result<()> {
    let tools: Vec<Value> = hits
        .iter()
        .map(|hit| {
            serde_json::json!({
                "qualified_name": &*hit.tool.qualified_name,
                "server": &*hit.tool.server,
                "tool": &*hit.tool.tool.name,
                "score": hit.score,
                "description": hit.tool.tool.description.as_deref(),
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &serde_json::json!({ "tools": tools }))?;
    out.write_all(b"\n")
}

/// A call result for people: text blocks as text, a block of a type mcp-runtime does
/// not know as its type in brackets (`[video]`), any other block as its JSON; without
/// blocks, the structured content as JSON. The server's text goes through
/// [`output_text`] for a `terminal` or a pipe.
pub fn call_text(result: &ToolResult, terminal: bool) -> String {
    let blocks = match result.as_object().get("content") {
        Some(Value::Array(blocks)) => blocks.as_slice(),
        _ => &[],
    };
    let mut out = String::new();
    for (block, json) in result.content().zip(blocks) {
        match (&block, block.kind()) {
            (Content::Known(_), _) if let Some(text) = block.as_text() => {
                out.push_str(&output_text(text, terminal))
            }
            (Content::Unknown(_), Some(kind)) => {
                out.push_str(&format!("[{}]", output_text(kind, terminal)));
            }
            _ => out.push_str(&serde_json::to_string(json).unwrap_or_default()),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if blocks.is_empty()
        && let Some(structured) = result.structured_content()
    {
        out.push_str(&serde_json::to_string_pretty(structured).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// A call result as `--json` prints it (pretty, as the server returned it: every
/// field and block) or as text (see [`call_text`]).
pub fn call_json_or_text(
    result: &ToolResult,
    json: bool,
    terminal: bool,
) -> serde_json::Result<String> {
    Ok(if json {
        serde_json::to_string_pretty(result)? + "\n"
    } else {
        call_text(result, terminal)
    })
}

/// Text a server wrote as the output of a call, a read or a prompt, for stdout: on a
/// pipe, as it is (a program reads it, and a `\r` is the server's as any other
/// character is); on a `terminal`, as [`printable`] shows it, but with each `\r\n`
/// line break kept, which moves the cursor nowhere a `\n` does not.
pub fn output_text(text: &str, terminal: bool) -> Cow<'_, str> {
    if !terminal {
        return Cow::Borrowed(text);
    }
    if !text.contains("\r\n") {
        return printable(text);
    }
    let lines: Vec<Cow<'_, str>> = text.split("\r\n").map(printable).collect();
    Cow::Owned(lines.join("\r\n"))
}

/// `error` and its causes on one line ([`chain`]), with the command of this program
/// that fixes it where the error calls for an OAuth login. The library's messages say
/// what is wrong; the commands are the command line's. A start that failed for
/// several required servers is one line per server, then one per server to log in to.
pub fn error_text(error: &(dyn Error + 'static)) -> String {
    let text = chain(error);
    if let Some(StartError::RequiredServersFailed { failures }) = error.downcast_ref() {
        let hints: String = failures
            .iter()
            .filter_map(|(name, failure)| {
                login_hint(failure.http_failure()?).map(|hint| format!("\n`{name}`: {hint}"))
            })
            .collect();
        return text + &hints;
    }
    match http_failure(error).and_then(login_hint) {
        Some(hint) => format!("{text}: {hint}"),
        None => text,
    }
}

/// The HTTP failure at the end of `error`'s chain, if there is one: the last one its
/// causes hold (the errors that wrap one transparently, too).
fn http_failure<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a HttpFailure> {
    fn held<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a HttpFailure> {
        fn shared<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
            error
                .downcast_ref::<T>()
                .or_else(|| error.downcast_ref::<Arc<T>>().map(|shared| &**shared))
        }
        if let Some(failure) = shared::<HttpFailure>(error) {
            return Some(failure);
        }
        if let Some(RequestError::Http(failure)) = shared::<RequestError>(error) {
            return Some(failure);
        }
        if let Some(ListToolsError::Failed(RequestError::Http(failure))) =
            shared::<ListToolsError>(error)
        {
            return Some(failure);
        }
        shared::<StartupError>(error)
            .and_then(StartupError::http_failure)
            .or_else(|| shared::<CallError>(error).and_then(CallError::http_failure))
    }
    let mut found = None;
    let mut cause = Some(error);
    while let Some(current) = cause {
        found = held(current).or(found);
        cause = current.source();
    }
    found
}

/// What to run for `failure`, when a login is what it calls for.
fn login_hint(failure: &HttpFailure) -> Option<String> {
    match failure {
        HttpFailure::NeedsLogin { server } | HttpFailure::InsufficientScope { server, .. } => {
            Some(format!("run `mcp-runtime login {server}`"))
        }
        HttpFailure::Unauthorized { server, .. } => Some(format!(
            "if it uses OAuth, run `mcp-runtime login {server}`"
        )),
        _ => None,
    }
}

/// `text` with control characters other than newline and tab shown as `\u{..}`.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if unsafe_char(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// The first line of `text`, printable, cut to at most `max_columns` terminal columns
/// (with `…` when cut).
pub fn one_line(text: &str, max_columns: usize) -> String {
    use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};
    let line = printable(text.lines().next().unwrap_or_default().trim()).into_owned();
    if line.width() <= max_columns {
        return line;
    }
    let mut columns = 0;
    let cut: String = line
        .chars()
        .take_while(|c| {
            columns += c.width().unwrap_or(0);
            columns < max_columns
        })
        .collect();
    format!("{cut}…")
}

/// Left-aligned columns separated by two spaces; the last column is not padded.
/// Columns are as wide as a terminal shows their cells (a CJK character or an emoji
/// takes two columns, a combining mark none).
///
/// Cells are padded by hand, not with a formatting width: `{:width$}` counts
/// characters, and panics once the width passes `u16::MAX`, which a server's name or
/// error can reach.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    use unicode_width::UnicodeWidthStr as _;
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.width());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (index, (cell, width)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if index + 1 < row.len() {
                let pad = width.saturating_sub(cell.width()) + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use mcp_runtime::ListedTool;

    use super::*;

    /// The `--json` report as written, read back.
    fn report_json(servers: &[ServerStatus], catalog: &Catalog) -> Value {
        let mut out = Vec::new();
        write_report_json(&mut out, servers, catalog).unwrap();
        assert!(out.ends_with(b"}\n"), "one object, then a newline");
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn tables_align_columns_and_trim_the_last() {
        let rows = vec![
            vec!["a".to_owned(), "ready".to_owned(), String::new()],
            vec![
                "longer-name".to_owned(),
                "failed".to_owned(),
                "why".to_owned(),
            ],
        ];
        insta::assert_snapshot!(table(&["NAME", "STATE", "ERROR"], &rows), @r"
        NAME         STATE   ERROR
        a            ready
        longer-name  failed  why
        ");
    }

    #[test]
    fn tables_pad_wide_and_zero_width_characters_by_the_columns_they_take() {
        let rows = vec![
            vec!["天气".to_owned(), "ready".to_owned()],
            vec!["🚀x".to_owned(), "ready".to_owned()],
            vec!["e\u{301}t\u{e9}".to_owned(), "ready".to_owned()],
            vec!["abcde".to_owned(), "ready".to_owned()],
        ];
        let table = table(&["NAME", "STATE"], &rows);
        // Where the second column begins, in terminal columns: after the widest name
        // (5 columns) and two spaces, on every line.
        let columns: Vec<usize> = table
            .lines()
            .map(|line| {
                let second = line.rfind("  ").expect("two columns") + 2;
                unicode_width::UnicodeWidthStr::width(&line[..second])
            })
            .collect();
        assert_eq!(columns, [7, 7, 7, 7, 7], "{table}");
    }

    #[test]
    fn tools_json_shows_host_settings_only_when_set() {
        use std::sync::Arc;

        use mcp_runtime::{
            ServerConfig,
            config::{ApprovalMode, ToolConfig},
            model::Tool,
        };

        let tool = |name: &str| {
            ListedTool::from(Tool::new(name.to_owned(), "", Arc::new(Default::default())))
        };
        let mut configured = ServerConfig::stdio("my-server", "unused", vec![]);
        configured.default_tools_approval_mode = Some(ApprovalMode::Prompt);
        configured.supports_parallel_tool_calls = true;
        let mut settings = ToolConfig::default();
        settings.approval_mode = Some(ApprovalMode::Approve);
        settings.output_token_limit = Some(2000);
        configured.tools.insert("get-item".into(), settings);
        let plain = ServerConfig::stdio("plain", "unused", vec![]);
        let configured_tools = [tool("get-item"), tool("other")];
        let plain_tools = [tool("t")];
        let catalog = Catalog::build(
            &Catalog::default(),
            [
                (&configured, &configured_tools[..]),
                (&plain, &plain_tools[..]),
            ],
        );
        let report = report_json(&[], &catalog);
        let tools: Vec<&Value> = report["tools"].as_array().unwrap().iter().collect();
        let keys =
            |tool: &Value| -> Vec<String> { tool.as_object().unwrap().keys().cloned().collect() };
        let shape = [
            "qualified_name",
            "server",
            "tool",
            "description",
            "input_schema",
        ];

        assert_eq!(tools[0]["qualified_name"], "mcp__my_server__get_item");
        assert_eq!(tools[0]["tool"], "get-item");
        assert_eq!(
            keys(tools[0]),
            [
                &shape[..],
                &[
                    "approval_mode",
                    "output_token_limit",
                    "supports_parallel_tool_calls",
                    "definition"
                ]
            ]
            .concat()
        );
        assert_eq!(tools[0]["approval_mode"], "approve");
        assert_eq!(tools[0]["output_token_limit"], 2000);
        assert_eq!(tools[0]["supports_parallel_tool_calls"], true);

        assert_eq!(tools[1]["qualified_name"], "mcp__my_server__other");
        assert_eq!(
            keys(tools[1]),
            [
                &shape[..],
                &[
                    "approval_mode",
                    "supports_parallel_tool_calls",
                    "definition"
                ]
            ]
            .concat()
        );
        assert_eq!(tools[1]["approval_mode"], "prompt");

        assert_eq!(tools[2]["qualified_name"], "mcp__plain__t");
        assert_eq!(
            keys(tools[2]),
            [&shape[..], &["definition"]].concat(),
            "nothing set, the shape is unchanged"
        );
    }

    #[test]
    fn the_definition_is_the_tool_as_the_server_listed_it() {
        let listed = serde_json::json!({
            "name": "search",
            "title": "Search",
            "description": "Find things",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"hits": {"type": "integer"}}},
            "annotations": {"readOnlyHint": true, "openWorldHint": false, "futureHint": 1},
            "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
            "_meta": {"example.com/x": 1},
            "execution": {"taskSupport": "optional"},
            "futureField": {"kept": true}
        });
        let server = mcp_runtime::ServerConfig::stdio("s", "unused", vec![]);
        let tools = [ListedTool::from_definition(listed.as_object().unwrap().clone()).unwrap()];
        let catalog = Catalog::build(&Catalog::default(), [(&server, &tools[..])]);
        let report = report_json(&[], &catalog);
        let definition = &report["tools"][0]["definition"];
        assert_eq!(*definition, listed);
        let keys: Vec<&str> = definition
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
                "icons",
                "_meta",
                "execution",
                "futureField"
            ],
            "rmcp's order, then what it does not keep"
        );
        assert_eq!(report["tools"][0]["task_support"], "optional");
    }

    #[test]
    fn no_cell_is_too_wide_for_the_table() {
        // Rust's formatting width is a `u16`: a pad of 65,536 or more used to panic.
        let name = "n".repeat(70_000);
        let rows = vec![
            vec![name.clone(), "ready".to_owned()],
            vec!["a".to_owned(), "failed".to_owned()],
        ];
        let text = table(&["SERVER", "STATE"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], format!("{name}  ready"));
        assert_eq!(lines[2], format!("a{}  failed", " ".repeat(name.len() - 1)));
        assert_eq!(lines[0].len(), name.len() + 2 + "STATE".len());
    }

    #[test]
    fn control_characters_from_servers_are_shown_escaped() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            printable("\u{1b}]0;owned\u{7}\u{1b}[2Jok"),
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2Jok"
        );
        assert_eq!(one_line("a\u{1b}[31mred", 80), "a\\u{1b}[31mred");
    }

    #[test]
    fn output_is_the_servers_text_on_a_pipe_and_escaped_on_a_terminal() {
        let text = "a\r\nb\rc\u{1b}[2Jd\n";
        assert_eq!(output_text(text, false), text, "every character, as it is");
        assert_eq!(
            output_text(text, true),
            "a\r\nb\\u{d}c\\u{1b}[2Jd\n",
            "a line break kept, a lone carriage return and an escape shown"
        );
        assert_eq!(output_text("plain\n", true), "plain\n");
    }

    #[test]
    fn a_block_of_an_unknown_type_shows_as_its_type() {
        let result: ToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "one\r\ntwo"},
                {"type": "video", "uri": "u"},
                {"type": "image", "data": "AA==", "mimeType": "image/png", "futureField": 1},
                {"type": "\u{1b}[2J"}
            ]
        }))
        .unwrap();
        insta::assert_snapshot!(call_text(&result, true), @r#"
        one
        two
        [video]
        {"type":"image","data":"AA==","mimeType":"image/png","futureField":1}
        [\u{1b}[2J]
        "#);
        // insta compares lines, not their ends: the `\r\n` is checked here.
        assert!(call_text(&result, true).starts_with("one\r\ntwo\n[video]\n"));
        assert!(call_text(&result, false).starts_with("one\r\ntwo\n[video]\n"));
        assert!(
            call_text(&result, false).ends_with("\n[\u{1b}[2J]\n"),
            "as it is on a pipe"
        );
    }

    #[test]
    fn descriptions_are_cut_to_one_line() {
        assert_eq!(one_line("first\nsecond", 80), "first");
        assert_eq!(one_line(&"x".repeat(10), 5), "xxxx…");
        // Cut by the columns a terminal gives them: two for each of these.
        assert_eq!(one_line("天气很好", 5), "天气…");
        assert_eq!(one_line("天气", 4), "天气");
    }

    #[test]
    fn an_error_calling_for_a_login_ends_with_the_command_that_logs_in() {
        let needs_login = || HttpFailure::NeedsLogin {
            server: "web".into(),
        };
        let call = CallError::ServerNotStarted {
            server: "web".into(),
            source: StartupError::Login(needs_login()),
        };
        assert_eq!(
            error_text(&call),
            "server `web` did not start: server `web` needs a new login: run `mcp-runtime login web`"
        );
        let scopes = StartupError::Handshake {
            source: RequestError::Http(HttpFailure::InsufficientScope {
                server: "web".into(),
                scopes: vec!["files".into()],
            }),
            stderr_tail: Vec::new(),
        };
        assert_eq!(
            error_text(&scopes),
            "handshake failed: server `web` needs a login with more scopes (`files`): run `mcp-runtime login web`"
        );
        let unauthorized = StartupError::Lost {
            source: HttpFailure::Unauthorized {
                server: "api".into(),
                challenge: None,
            },
        };
        assert!(
            error_text(&unauthorized).ends_with(": if it uses OAuth, run `mcp-runtime login api`"),
            "{}",
            error_text(&unauthorized)
        );
        // Other failures have no command to run.
        let refused = StartupError::Lost {
            source: HttpFailure::Refused {
                server: "api".into(),
            },
        };
        assert_eq!(error_text(&refused), chain(&refused));
    }

    #[test]
    fn a_start_failed_by_several_servers_names_the_login_of_each_that_needs_one() {
        let start = StartError::RequiredServersFailed {
            failures: vec![
                (
                    "web".into(),
                    StartupError::Login(HttpFailure::NeedsLogin {
                        server: "web".into(),
                    }),
                ),
                ("local".into(), StartupError::Cancelled),
            ],
        };
        assert_eq!(
            error_text(&start),
            "required servers failed to start: `web`: server `web` needs a new login\n`local`: startup was cancelled\n`web`: run `mcp-runtime login web`"
        );
    }
}
