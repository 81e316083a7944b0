//! Each host's format, from a test file with its quirks: the TOML it converts to and
//! the configuration it loads as; then the errors, all at once and in the JSON file's
//! terms.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
};

use super::{Mode, convert, import_with, load, parse_as_written};
use crate::config::{Config, HttpTransport, ServerConfig, TransportConfig, error::ConfigError};

fn testdata(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/config/hosts/testdata")
        .join(path)
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn import_file(file: &str, env: &[(&str, &str)]) -> String {
    let path = testdata(file);
    import_with(&read(&path), &path, &vars(env)).unwrap()
}

fn load_file(file: &str, env: &[(&str, &str)]) -> Config {
    let path = testdata(file);
    load(&read(&path), &path, &vars(env)).unwrap()
}

fn messages(error: &ConfigError) -> Vec<String> {
    error.errors().iter().map(ToString::to_string).collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// A stdio server as a host file declares it.
fn stdio(
    name: &str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
    env_vars: &[&str],
) -> ServerConfig {
    let mut server = ServerConfig::stdio(name, command, strings(args));
    let TransportConfig::Stdio(stdio) = &mut server.transport else {
        unreachable!()
    };
    stdio.env = map(env);
    stdio.env_vars = strings(env_vars);
    server
}

/// An HTTP server as a host file declares it.
fn http(
    name: &str,
    url: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    env_headers: &[(&str, &str)],
) -> ServerConfig {
    let mut server = ServerConfig::http(name, url);
    let TransportConfig::StreamableHttp(http) = &mut server.transport else {
        unreachable!()
    };
    http.bearer_token_env_var = bearer.map(str::to_owned);
    http.http_headers = map(headers);
    http.env_http_headers = map(env_headers);
    server
}

fn servers(list: Vec<ServerConfig>) -> BTreeMap<String, ServerConfig> {
    list.into_iter()
        .map(|server| (server.name.clone(), server))
        .collect()
}

const HEADER: &str = "in Codex's `config.toml` form, by `mcp-runtime import`.";
const EXPANDS: &str = "which mcp-runtime expands from the environment when it loads the JSON file; Codex passes the text as written";

#[test]
fn claude_desktop_servers_convert_as_written_with_names_mapped() {
    let toml = import_file("claude_desktop_config.json", &[]);
    assert_eq!(
        toml,
        format!(
            r#"# The servers of `claude_desktop_config.json` (`mcpServers` of Claude Desktop, Claude Code or Cursor) {HEADER}

[mcp_servers.filesystem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]

[mcp_servers.brave_search]
# named `brave search` in the JSON file
command = "npx"
args = ["-y", "@modelcontextprotocol/server-brave-search"]
env = {{ BRAVE_API_KEY = "BSA-literal-in-the-file" }}
"#
        )
    );
    let config = load_file("claude_desktop_config.json", &[]);
    assert_eq!(
        config.servers,
        servers(vec![
            stdio(
                "filesystem",
                "npx",
                &[
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/Users/me/Desktop"
                ],
                &[],
                &[],
            ),
            stdio(
                "brave_search",
                "npx",
                &["-y", "@modelcontextprotocol/server-brave-search"],
                &[("BRAVE_API_KEY", "BSA-literal-in-the-file")],
                &[],
            ),
        ])
    );
    assert_eq!(config.warnings, []);
}

#[test]
fn load_validates_what_import_prints() {
    // Without variables, the printed TOML loads as the very configuration the JSON
    // file loads as.
    let path = testdata("claude_desktop_config.json");
    let toml = import_file("claude_desktop_config.json", &[]);
    assert_eq!(
        Config::parse(&toml, &path).unwrap(),
        load_file("claude_desktop_config.json", &[])
    );
}

#[test]
fn claude_code_references_stay_references_and_templates_expand_at_load() {
    let toml = import_file("claude-code/.mcp.json", &[("DB_PASSWORD", "hunter2")]);
    assert_eq!(
        toml,
        format!(
            r#"# The servers of `.mcp.json` (`mcpServers` of Claude Desktop, Claude Code or Cursor) {HEADER}

[mcp_servers.github]
# `headers` header `X-MCP-Toolsets` holds `${{GITHUB_TOOLSETS:-repos,issues}}`, {EXPANDS}
url = "https://api.githubcopilot.com/mcp/"
bearer_token_env_var = "GITHUB_PAT"
http_headers = {{ X-MCP-Toolsets = "${{GITHUB_TOOLSETS:-repos,issues}}" }}

[mcp_servers.internal]
# `oauth` is Claude Code's OAuth client setting, which mcp-runtime does not import (set `[mcp_servers.NAME.oauth]` in a TOML file)
# `url` holds `${{API_HOST:-mcp.example.com}}`, {EXPANDS}
url = "https://${{API_HOST:-mcp.example.com}}/v1/mcp"
env_http_headers = {{ X-Api-Key = "API_KEY" }}

[mcp_servers.db]
# `command` holds `${{DB_TOOLS:-/opt/db}}`, {EXPANDS}
# `args` item 2 holds `${{DATABASE_URL}}`, {EXPANDS}
# `args` item 3 holds `${{LOG_LEVEL:-info}}`, {EXPANDS}
# `env` variable `PGPASSWORD` holds `${{DB_PASSWORD}}`, {EXPANDS} (set `PGPASSWORD` itself and list it in `env_vars` instead)
# `env` variable `MODE` holds `${{DB_MODE:-readonly}}`, {EXPANDS} (set `MODE` itself and list it in `env_vars` instead)
command = "${{DB_TOOLS:-/opt/db}}/bin/db-mcp"
args = ["--dsn", "${{DATABASE_URL}}", "--log=${{LOG_LEVEL:-info}}"]
env = {{ MODE = "${{DB_MODE:-readonly}}", PGPASSWORD = "${{DB_PASSWORD}}", REGION = "eu-west-1" }}
env_vars = ["DATABASE_URL"]

[mcp_servers.paused]
command = "paused-mcp"
enabled = false
"#
        )
    );

    let config = load_file(
        "claude-code/.mcp.json",
        &[
            ("DATABASE_URL", "postgres://db"),
            ("DB_PASSWORD", "hunter2"),
            ("LOG_LEVEL", "debug"),
            // Empty counts as unset for `:-`.
            ("DB_MODE", ""),
            ("API_HOST", "mcp.internal.test"),
        ],
    );
    let mut paused = stdio("paused", "paused-mcp", &[], &[], &[]);
    paused.enabled = false;
    assert_eq!(
        config.servers,
        servers(vec![
            http(
                "github",
                "https://api.githubcopilot.com/mcp/",
                Some("GITHUB_PAT"),
                &[("X-MCP-Toolsets", "repos,issues")],
                &[],
            ),
            http(
                "internal",
                "https://mcp.internal.test/v1/mcp",
                None,
                &[],
                &[("X-Api-Key", "API_KEY")],
            ),
            stdio(
                "db",
                "/opt/db/bin/db-mcp",
                &["--dsn", "postgres://db", "--log=debug"],
                &[
                    ("MODE", "readonly"),
                    ("PGPASSWORD", "hunter2"),
                    ("REGION", "eu-west-1"),
                ],
                &["DATABASE_URL"],
            ),
            paused,
        ])
    );
    let warnings: Vec<String> = config
        .warnings
        .iter()
        .map(|w| format!("{} {}", w.table, w.key))
        .collect();
    assert_eq!(warnings, ["mcpServers.internal oauth"]);
}

#[test]
fn vscode_inputs_come_from_documented_variables_and_env_file_at_load() {
    let workspace = testdata("vscode");
    let workspace = workspace.display();
    let toml = import_file("vscode/.vscode/mcp.json", &[("HOME", "/home/me")]);
    assert_eq!(
        toml,
        format!(
            r#"# The servers of `mcp.json` (`servers` of VS Code) {HEADER}

[mcp_servers.search]
# `dev` is VS Code's development mode (watch and debug), which mcp-runtime does not implement
# `args` item 2 holds `${{input:region}}`, {EXPANDS}
# `args` item 3 holds `${{env:CACHE_DIR}}`, {EXPANDS}
# `envFile` `{workspace}/.env` is read by mcp-runtime when it loads the JSON file; Codex does not read it (copy its variables into `env`, or export them and list them in `env_vars`)
# `env` variable `SEARCH_API_KEY` holds `${{input:api-key}}`, {EXPANDS} (set `SEARCH_API_KEY` itself and list it in `env_vars` instead)
command = "node"
args = ["{workspace}/server.js", "--region=${{input:region}}", "--cache=${{env:CACHE_DIR}}"]
env = {{ SEARCH_API_KEY = "${{input:api-key}}" }}
env_vars = ["PATH"]

[mcp_servers.io_github_example_remote]
# named `io.github.example/remote` in the JSON file
# `gallery` is VS Code's gallery record, which mcp-runtime does not use
# `version` is VS Code's gallery record, which mcp-runtime does not use
# `headers` header `X-Region` holds `${{input:region}}`, {EXPANDS}
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "MCP_RUNTIME_INPUT_TOKEN"
http_headers = {{ X-Region = "${{input:region}}" }}

[mcp_servers.untyped]
command = "uvx"
args = ["mcp-server-time", "--home=/home/me"]
"#
        )
    );

    let config = load_file(
        "vscode/.vscode/mcp.json",
        &[
            ("HOME", "/home/me"),
            ("CACHE_DIR", "/tmp/cache"),
            ("MCP_RUNTIME_INPUT_API_KEY", "key-123"),
        ],
    );
    assert_eq!(
        config.servers,
        servers(vec![
            stdio(
                "search",
                "node",
                &[
                    &format!("{workspace}/server.js"),
                    "--region=eu",
                    "--cache=/tmp/cache"
                ],
                &[
                    ("SEARCH_API_KEY", "key-123"),
                    ("SEARCH_ENDPOINT", "https://search.example.com"),
                    ("SEARCH_MODE", "fast"),
                ],
                &["PATH"],
            ),
            http(
                "io_github_example_remote",
                "https://mcp.example.com/mcp",
                Some("MCP_RUNTIME_INPUT_TOKEN"),
                &[("X-Region", "eu")],
                &[],
            ),
            stdio(
                "untyped",
                "uvx",
                &["mcp-server-time", "--home=/home/me"],
                &[],
                &[]
            ),
        ])
    );
    let warnings: Vec<String> = config
        .warnings
        .iter()
        .map(|w| format!("{} {}", w.table, w.key))
        .collect();
    assert_eq!(
        warnings,
        [
            "servers.search dev",
            "servers.io.github.example/remote gallery",
            "servers.io.github.example/remote version",
        ]
    );
}

#[test]
fn cursor_interpolation_and_streamable_http_type() {
    let workspace = testdata("cursor");
    let workspace = workspace.display();
    let toml = import_file("cursor/.cursor/mcp.json", &[("HOME", "/home/me")]);
    assert_eq!(
        toml,
        format!(
            r#"# The servers of `mcp.json` (`mcpServers` of Claude Desktop, Claude Code or Cursor) {HEADER}

[mcp_servers.linear]
url = "https://mcp.linear.app/mcp"
bearer_token_env_var = "LINEAR_TOKEN"

[mcp_servers.notes]
command = "python3"
args = ["/home/me/mcp/notes.py", "--project", "cursor"]
env = {{ NOTES_DIR = "{workspace}/notes" }}
env_vars = ["NOTES_TOKEN"]

[mcp_servers.streaming]
# `auth` is Cursor's OAuth client setting, which mcp-runtime does not import (set `[mcp_servers.NAME.oauth]` in a TOML file)
# `url` holds `${{env:PORT}}`, {EXPANDS}
url = "http://localhost:${{env:PORT}}/mcp"
"#
        )
    );

    let config = load_file(
        "cursor/.cursor/mcp.json",
        &[("HOME", "/home/me"), ("PORT", "8123")],
    );
    assert_eq!(
        config.servers,
        servers(vec![
            http(
                "linear",
                "https://mcp.linear.app/mcp",
                Some("LINEAR_TOKEN"),
                &[],
                &[]
            ),
            stdio(
                "notes",
                "python3",
                &["/home/me/mcp/notes.py", "--project", "cursor"],
                &[("NOTES_DIR", &format!("{workspace}/notes"))],
                &["NOTES_TOKEN"],
            ),
            http("streaming", "http://localhost:8123/mcp", None, &[], &[]),
        ])
    );
}

#[test]
fn sse_type_converts_to_transport_sse() {
    let path = testdata("sse.json");
    let converted = convert(&read(&path), &path, Mode::Import, &vars(&[])).unwrap();
    assert_eq!(
        converted.toml,
        format!(
            r#"# The servers of `sse.json` (`servers` of VS Code) {HEADER}

[mcp_servers.legacy]
url = "https://legacy.example.com/sse"
transport = "sse"
env_http_headers = {{ X-Key = "LEGACY_KEY" }}
"#
        )
    );
}

#[test]
fn sse_type_loads_as_the_legacy_sse_transport() {
    let config = load_file("sse.json", &[]);
    let TransportConfig::StreamableHttp(http) = &config.servers["legacy"].transport else {
        panic!("an HTTP server");
    };
    assert_eq!(http.transport, HttpTransport::Sse);
}

#[test]
fn import_never_writes_a_variable_s_value() {
    let secret = "SECRET-VALUE-1234";
    let names = [
        "GITHUB_PAT",
        "GITHUB_TOOLSETS",
        "API_HOST",
        "API_KEY",
        "DB_TOOLS",
        "DATABASE_URL",
        "LOG_LEVEL",
        "DB_PASSWORD",
        "DB_MODE",
        "CACHE_DIR",
        "PATH",
        "LINEAR_TOKEN",
        "NOTES_TOKEN",
        "MCP_RUNTIME_INPUT_API_KEY",
        "MCP_RUNTIME_INPUT_TOKEN",
        "MCP_RUNTIME_INPUT_REGION",
    ];
    let env: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (*name, secret))
        .chain([("HOME", "/home/me"), ("PORT", "8123")])
        .collect();
    for file in [
        "claude_desktop_config.json",
        "claude-code/.mcp.json",
        "vscode/.vscode/mcp.json",
        "cursor/.cursor/mcp.json",
    ] {
        let toml = import_file(file, &env);
        assert!(!toml.contains(secret), "{file}: {toml}");
        // The same environment does reach the loaded configuration.
        let config = load_file(file, &env);
        assert_eq!(
            config.servers.len(),
            toml.matches("\n[mcp_servers.").count()
        );
    }
}

#[test]
fn unset_variables_are_errors_naming_server_key_and_variable_never_a_value() {
    let text = r#"{
        "inputs": [{ "id": "token", "type": "promptString" }],
        "servers": {
            "a": {
                "command": "run-${TOOL}",
                "args": ["--x", "--key=${env:KEY}"],
                "env": { "RENAMED": "${env:SOURCE}", "PRESENT": "${env:SET}" }
            },
            "b": { "url": "https://${HOST}/mcp", "headers": { "X-Token": "t-${input:token}" } },
            "c": { "command": "x", "args": ["${userHome}"] }
        }
    }"#;
    let error = load(text, Path::new("/p/mcp.json"), &vars(&[("SET", "sekrit")])).unwrap_err();
    assert_eq!(
        messages(&error),
        [
            "`/p/mcp.json`: key `command` in `[servers.a]` uses variable `TOOL`, which is not set (set it, or write `${TOOL:-default}` for a default)",
            "`/p/mcp.json`: key `args` in `[servers.a]`: item 2 uses variable `KEY`, which is not set (set it, or write `${KEY:-default}` for a default)",
            "`/p/mcp.json`: key `env` in `[servers.a]`: variable `RENAMED` uses variable `SOURCE`, which is not set (set it, or write `${SOURCE:-default}` for a default)",
            "`/p/mcp.json`: key `url` in `[servers.b]` uses variable `HOST`, which is not set (set it, or write `${HOST:-default}` for a default)",
            "`/p/mcp.json`: key `headers` in `[servers.b]`: header `X-Token` uses input `token`, which mcp-runtime cannot prompt for (set variable `MCP_RUNTIME_INPUT_TOKEN` to its value)",
            "`/p/mcp.json`: key `args` in `[servers.c]`: item 1 uses `${userHome}`, but variable `HOME` is not set (set it)",
        ]
    );
    assert!(!error.to_string().contains("sekrit"));
}

#[test]
fn every_error_of_a_json_file_is_reported_at_once_in_its_own_terms() {
    let text = r#"{
        "mcpServers": {
            "typo": { "comand": "x", "command": "x" },
            "types": { "command": 3, "args": "-v", "env": { "A": 1 }, "disabled": "yes" },
            "kind": { "type": "websocket", "url": "https://x/mcp" },
            "mismatch": { "type": "stdio", "url": "https://x/mcp" },
            "editor": { "command": "x", "args": ["${config:editor.tabSize}", "${input:nope}"] },
            "bad url": { "url": "ftp://x" },
            "bad.url": { "url": "https://x/mcp" },
            "": { "command": "x" },
            "both": { "command": "x", "url": "https://x/mcp" },
            "scalar": 3
        }
    }"#;
    let error = load(text, Path::new("/p/.mcp.json"), &vars(&[])).unwrap_err();
    assert_eq!(
        messages(&error),
        [
            "`/p/.mcp.json`: key `comand` in `[mcpServers.typo]` is unknown (check its spelling; a server here has `type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`, `disabled`)",
            "`/p/.mcp.json`: key `command` in `[mcpServers.types]` must be a string",
            "`/p/.mcp.json`: key `args` in `[mcpServers.types]` must be an array of strings",
            "`/p/.mcp.json`: key `env` in `[mcpServers.types]` must be an object of strings",
            "`/p/.mcp.json`: key `disabled` in `[mcpServers.types]` must be `true` or `false`",
            "`/p/.mcp.json`: key `type` in `[mcpServers.kind]` must be `stdio`, `http` or `sse`",
            "`/p/.mcp.json`: key `type` in `[mcpServers.mismatch]` is `stdio`, but the server has `url` and no `command` (write `http` or `sse`)",
            "`/p/.mcp.json`: key `args` in `[mcpServers.editor]`: item 1 uses `${config:editor.tabSize}`, which mcp-runtime cannot resolve outside the editor (write the value itself, or `${env:NAME}` for an environment variable)",
            "`/p/.mcp.json`: key `args` in `[mcpServers.editor]`: item 2 uses input `nope`, which `inputs` does not declare (declare it there)",
            "`/p/.mcp.json`: server name `bad.url` in `mcpServers` becomes `bad_url` in mcp-runtime, as `mcpServers.bad url` does (rename one of them: only letters, digits, `_` and `-` are kept)",
            "`/p/.mcp.json`: server name `` in `mcpServers` is empty (name the server)",
            "`/p/.mcp.json`: key `scalar` in `[mcpServers]` must be an object",
            "`/p/.mcp.json`: key `url` in `[mcpServers.bad url]` must be an `http://` or `https://` URL",
            "`/p/.mcp.json`: `[mcpServers.both]` mixes stdio key `command` with HTTP key `url` (a server is either `command` or `url`)",
        ]
    );
}

#[test]
fn json_syntax_errors_give_line_and_column() {
    let text = "{\n  \"servers\": {\n    \"a\": { \"command\": \"x\"\n      \"args\": [] }\n  }\n}";
    let error = load(text, Path::new("/p/mcp.json"), &vars(&[])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/mcp.json` is not valid JSON: expected `,` or `}` (at line 4, column 7)"
    );
    let error = load("{\"servers\": {", Path::new("/p/mcp.json"), &vars(&[])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/mcp.json` is not valid JSON: EOF while parsing an object (at line 1, column 13)"
    );
    let error = load(
        "{\"servers\": {}, // note\n \"inputs\": [1,]}",
        Path::new("/p/mcp.json"),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/mcp.json` has an item 1 in `inputs` that is not an object with a string `id` (write each input as `{\"id\": …, \"type\": \"promptString\"}`)"
    );
}

#[test]
fn a_json_file_of_no_known_shape_is_refused() {
    let cases = [
        (
            "{\"numStartups\": 3}",
            "`/p/x.json` is JSON but has neither `mcpServers` (Claude Desktop, Claude Code, Cursor) nor `servers` (VS Code) (mcp-runtime reads those, or TOML with `[mcp_servers.NAME]` tables)",
        ),
        (
            "{\"mcpServers\": {}, \"servers\": {}}",
            "`/p/x.json` has both `mcpServers` and `servers` (keep one: mcp-runtime reads one host's format at a time)",
        ),
        (
            "{\"servers\": []}",
            "`/p/x.json` has a `servers` that is not an object (write the servers as an object by name)",
        ),
    ];
    for (text, message) in cases {
        let error = load(text, Path::new("/p/x.json"), &vars(&[])).unwrap_err();
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn vscode_settings_hold_the_same_under_mcp() {
    let text = r#"{ "editor.tabSize": 2, "mcp": { "inputs": [{"id": "k", "default": "d"}], "servers": { "s": { "command": "x", "args": ["${input:k}"] } } } }"#;
    let config = load(text, Path::new("/p/settings.json"), &vars(&[])).unwrap();
    assert_eq!(
        config.servers,
        servers(vec![stdio("s", "x", &["d"], &[], &[])])
    );
    let error = load(
        r#"{ "mcp": { "servers": { "s": { "kommand": "x" } } } }"#,
        Path::new("/p/settings.json"),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        messages(&error)[0],
        "`/p/settings.json`: key `kommand` in `[mcp.servers.s]` is unknown (check its spelling; a server here has `type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`)"
    );
}

#[test]
fn config_load_tells_json_from_toml_by_content_not_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, r#"{ "mcpServers": { "a": { "command": "x" } } }"#).unwrap();
    let config = Config::load(&path).unwrap();
    assert_eq!(
        config.servers,
        servers(vec![stdio("a", "x", &[], &[], &[])])
    );
    std::fs::write(&path, "[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
    assert_eq!(Config::load(&path).unwrap().servers, config.servers);
}

#[test]
fn import_refuses_a_toml_file() {
    let error = import_with(
        "[mcp_servers.a]\ncommand = \"x\"\n",
        Path::new("/p/config.toml"),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/config.toml` is not JSON: mcp-runtime and Codex read a TOML file as it is (nothing to import)"
    );
}

#[test]
fn names_and_values_are_quoted_and_escaped_in_the_toml() {
    let text = r#"{ "mcpServers": { "q": { "command": "a\"b\\c", "args": ["tab\there", "é"], "env": { "weird.name": "v" } } } }"#;
    let path = Path::new("/p/.mcp.json");
    let toml = import_with(text, path, &vars(&[])).unwrap();
    assert!(
        toml.ends_with(
            "[mcp_servers.q]\ncommand = \"a\\\"b\\\\c\"\nargs = [\"tab\\there\", \"é\"]\nenv = { \"weird.name\" = \"v\" }\n"
        ),
        "{toml}"
    );
    let config = Config::parse(&toml, path).unwrap();
    assert_eq!(
        config.servers,
        servers(vec![stdio(
            "q",
            "a\"b\\c",
            &["tab\there", "é"],
            &[("weird.name", "v")],
            &[]
        )])
    );
}

#[test]
fn a_second_authorization_header_is_not_sent_twice() {
    let text = r#"{ "mcpServers": { "a": { "url": "https://x/mcp", "headers": {
        "Authorization": "Bearer ${A}", "authorization": "Bearer ${B}" } } } }"#;
    let config = load(text, Path::new("/p/.mcp.json"), &vars(&[("B", "b-secret")])).unwrap();
    let TransportConfig::StreamableHttp(http) = &config.servers["a"].transport else {
        panic!("expected http");
    };
    assert_eq!(http.bearer_token_env_var.as_deref(), Some("A"));
    assert!(http.http_headers.is_empty(), "{http:?}");
    let warnings: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "/p/.mcp.json: [mcp_servers.a] `http_headers` entry header `authorization` is not sent: `bearer_token_env_var` sets that header (keep one of them)"
        ]
    );
}

#[test]
fn an_env_file_that_cannot_be_read_is_an_error_of_its_key() {
    let text = r#"{ "servers": { "a": { "command": "x", "envFile": "${workspaceFolder}/missing.env" } } }"#;
    let error = load(text, Path::new("/p/.vscode/mcp.json"), &vars(&[])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/.vscode/mcp.json`: key `envFile` in `[servers.a]` names `/p/missing.env`, which cannot be read (No such file or directory (os error 2))"
    );
}

#[test]
fn import_validates_its_output_with_a_stand_in_for_each_variable() {
    let text = r#"{ "mcpServers": {
        "whole": { "url": "${MCP_URL}" },
        "port": { "url": "http://localhost:${PORT}/mcp" },
        "host": { "url": "https://${HOST:-example.com}/mcp" }
    } }"#;
    let toml = import_with(text, Path::new("/p/.mcp.json"), &vars(&[])).unwrap();
    for kept in [
        "url = \"${MCP_URL}\"",
        "url = \"http://localhost:${PORT}/mcp\"",
        "url = \"https://${HOST:-example.com}/mcp\"",
    ] {
        assert!(toml.contains(kept), "{kept} in {toml}");
    }
    // What the stand-ins cannot make valid is still refused.
    let error = import_with(
        r#"{ "mcpServers": { "a": { "url": "ftp://${HOST}/mcp" } } }"#,
        Path::new("/p/.mcp.json"),
        &vars(&[]),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/p/.mcp.json`: key `url` in `[mcpServers.a]` must be an `http://` or `https://` URL"
    );
}

#[test]
fn a_file_read_as_written_expands_no_variable_and_is_otherwise_as_loaded() {
    let text = r#"{ "inputs": [{ "id": "pw", "type": "promptString", "password": true }],
      "servers": {
        "cli": { "command": "run-${env:T}", "args": ["--token", "${input:pw}", "${userHome}/x"],
                 "env": { "T": "${env:T}", "R": "${env:T}", "M": "a${input:pw}" }, "cwd": "/w/${env:T}" },
        "web": { "type": "http", "url": "${env:URL}",
                 "headers": { "Authorization": "Bearer ${input:pw}", "X-M": "k ${env:T}" } }
    } }"#;
    let path = Path::new("/p/.vscode/mcp.json");
    let env = vars(&[
        ("T", "secret-t"),
        ("URL", "https://secret-u.example/mcp"),
        ("MCP_RUNTIME_INPUT_PW", "secret-pw"),
        ("HOME", "/home/me"),
    ]);
    let shown = parse_as_written(text, path, &env).unwrap();
    let mut cli = stdio(
        "cli",
        "run-${env:T}",
        &["--token", "${input:pw}", "/home/me/x"],
        &[("R", "${env:T}"), ("M", "a${input:pw}")],
        &["T"],
    );
    if let TransportConfig::Stdio(stdio) = &mut cli.transport {
        stdio.cwd = Some("/w/${env:T}".into());
    }
    let web = http(
        "web",
        "${env:URL}",
        Some("MCP_RUNTIME_INPUT_PW"),
        &[("X-M", "k ${env:T}")],
        &[],
    );
    assert_eq!(shown.servers, servers(vec![cli, web]));
    assert!(!format!("{shown:?}").contains("secret-pw"), "{shown:?}");
    // Loaded, the same file holds the values: only their text differs.
    let loaded = load(text, path, &env).unwrap();
    assert_eq!(
        loaded.servers.keys().collect::<Vec<_>>(),
        shown.servers.keys().collect::<Vec<_>>()
    );
    assert!(format!("{loaded:?}").contains("secret-pw"));
    // A TOML file has no variables: it reads as it loads.
    let toml = "[mcp_servers.a]\ncommand = \"${T}\"\n";
    assert_eq!(
        parse_as_written(toml, Path::new("c.toml"), &env)
            .unwrap()
            .servers,
        Config::parse(toml, Path::new("c.toml")).unwrap().servers
    );
}

/// Whether `text` holds a control character other than the line break ending a line.
fn has_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n')
}

#[test]
fn control_characters_in_json_names_are_escaped_in_the_toml_comments() {
    let text = r#"{ "mcpServers": { "a\r\nb\u001b[2J": { "command": "x",
        "args": ["${V\rW}"], "env": { "N\rM": "${OTHER}", "K\u001b": "${NAME:-v}" } } } }"#;
    let path = Path::new("/p/evil\r\n\u{1b}[2J.json");
    let toml = import_with(text, path, &vars(&[])).unwrap();
    assert!(!has_control(&toml), "{toml:?}");
    assert!(
        toml.contains("# named `a\\r\\nb\\u{1b}[2J` in the JSON file"),
        "{toml}"
    );
    assert!(toml.contains("`evil\\r\\n\\u{1b}[2J.json`"), "{toml}");
    assert!(
        toml.contains("`env` variable `N\\rM` holds `${OTHER}`"),
        "{toml}"
    );
    let config = Config::parse(&toml, Path::new("c.toml")).unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["a__b__2J"]);
    // Loading converts the same names: no comment may break its TOML either.
    let loaded = load(text, path, &vars(&[("V\rW", "1"), ("OTHER", "2")])).unwrap();
    assert_eq!(loaded.servers.keys().collect::<Vec<_>>(), ["a__b__2J"]);
}

#[test]
fn control_characters_in_json_names_are_escaped_in_every_message() {
    let text = r#"{ "mcpServers": {
        "a\r": { "command": "x" },
        "a\n": { "command": "x" },
        "s\u001b": { "command": "x", "k\r\n": 1, "env": { "E\r": "${UNSET\u001b}" } },
        "t": { "command": "x", "disabled": "no" },
        "": { "command": "x" }
    } }"#;
    let error = load(text, Path::new("/p/.mcp.json"), &vars(&[])).unwrap_err();
    let messages = messages(&error);
    for message in &messages {
        assert!(!has_control(message), "{message:?}");
    }
    assert_eq!(
        error.to_string().lines().count(),
        messages.len(),
        "one line per error: {error}"
    );
    for expected in [
        "server name `a\\n` in `mcpServers` becomes `a_` in mcp-runtime, as `mcpServers.a\\r` does",
        "key `k\\r\\n` in `[mcpServers.s\\u{1b}]` is unknown",
        "key `env` in `[mcpServers.s\\u{1b}]`: variable `E\\r` uses variable `UNSET\\u{1b}`",
    ] {
        assert!(
            messages.iter().any(|message| message.contains(expected)),
            "{expected} in {messages:#?}"
        );
    }
}
