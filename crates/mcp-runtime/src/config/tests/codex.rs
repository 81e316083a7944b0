//! A complete Codex `config.toml` loads unchanged: every key of Codex's server tables,
//! Codex's own top-level tables, and mcp-runtime's own keys.

use std::{path::Path, time::Duration};

use crate::config::{
    ApprovalMode, Config, CredentialsStore, Environment, HttpTransport, OAuthConfig, ToolConfig,
    TransportConfig,
};

const CODEX_FULL: &str = include_str!("../testdata/codex-full.toml");
const ORIGIN: &str = "/home/me/.codex/config.toml";

fn codex_full() -> Config {
    Config::parse(CODEX_FULL, Path::new(ORIGIN)).unwrap_or_else(|error| {
        let errors: Vec<String> = error.errors().iter().map(ToString::to_string).collect();
        panic!("the Codex config must load:\n{}", errors.join("\n"))
    })
}

fn tool(approval_mode: Option<ApprovalMode>, output_token_limit: Option<u64>) -> ToolConfig {
    ToolConfig {
        approval_mode,
        output_token_limit,
    }
}

#[test]
fn a_complete_codex_config_loads_with_every_honoured_key_applied() {
    let config = codex_full();
    assert_eq!(
        config.servers.keys().collect::<Vec<_>>(),
        ["alpha-docs", "beta-github", "delta-runner", "gamma-legacy"]
    );
    assert_eq!(config.oauth_credentials_store, CredentialsStore::Keyring);

    let docs = &config.servers["alpha-docs"];
    let TransportConfig::Stdio(stdio) = &docs.transport else {
        panic!("alpha-docs is a stdio server");
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.args, ["-y", "@example/docs-server"]);
    assert_eq!(stdio.env["MODE"], "read-only");
    assert_eq!(
        stdio.env_vars,
        ["HOME", "LANG", "LC_ALL"],
        "remote entries are not forwarded"
    );
    assert_eq!(stdio.cwd.as_deref(), Some(Path::new("/home/me/work")));
    assert!(docs.enabled && docs.required);
    assert_eq!(
        docs.startup_timeout,
        Duration::from_secs(20),
        "the seconds win"
    );
    assert_eq!(docs.tool_timeout, Duration::from_millis(90_500));
    assert!(docs.exposes_tool("search") && !docs.exposes_tool("read"));
    assert!(docs.supports_parallel_tool_calls);
    assert_eq!(docs.default_tools_approval_mode, Some(ApprovalMode::Prompt));
    assert_eq!(docs.tools.len(), 3);
    assert_eq!(
        docs.tools["search"],
        tool(Some(ApprovalMode::Approve), Some(4000))
    );
    assert_eq!(docs.tools["write"], tool(Some(ApprovalMode::Writes), None));
    assert_eq!(docs.tools["read.file"], tool(None, Some(1500)));
    assert_eq!(docs.approval_mode("search"), Some(ApprovalMode::Approve));
    assert_eq!(docs.approval_mode("read.file"), Some(ApprovalMode::Prompt));
    assert_eq!(docs.approval_mode("other"), Some(ApprovalMode::Prompt));
    assert_eq!(
        docs.oauth,
        OAuthConfig::default(),
        "no OAuth for a stdio server"
    );
    assert_eq!(docs.environment, Environment::Local);

    let github = &config.servers["beta-github"];
    let TransportConfig::StreamableHttp(http) = &github.transport else {
        panic!("beta-github is an HTTP server");
    };
    assert_eq!(http.url, "https://api.example.com/mcp/");
    assert_eq!(http.bearer_token_env_var.as_deref(), Some("GITHUB_TOKEN"));
    assert_eq!(http.http_headers["X-Team"], "core");
    assert_eq!(http.env_http_headers["X-Api-Key"], "GITHUB_API_KEY");
    assert_eq!(http.transport, HttpTransport::StreamableHttp);
    assert_eq!(github.startup_timeout, Duration::from_secs(15));
    assert!(!github.supports_parallel_tool_calls);
    assert_eq!(github.approval_mode("anything"), Some(ApprovalMode::Auto));
    assert_eq!(
        github.oauth,
        OAuthConfig {
            scopes: Some(vec!["repo".into(), "read:org".into()]),
            client_id: Some("codex-cli".into()),
            callback_url: Some("https://login.example.com/callback".into()),
            callback_port: Some(8765),
            resource: Some("https://api.example.com/".into()),
            ..OAuthConfig::default()
        }
    );
    let legacy = &config.servers["gamma-legacy"];
    let TransportConfig::StreamableHttp(http) = &legacy.transport else {
        panic!("gamma-legacy is an HTTP server");
    };
    assert_eq!(http.transport, HttpTransport::Sse);
    assert_eq!(
        http.http_headers["Authorization"],
        "Basic bWFkZS11cDpsaXRlcmFs"
    );
    let shown = format!("{config:?}");
    assert!(!shown.contains("bWFkZS11cDpsaXRlcmFs"), "{shown}");
    assert!(!legacy.enabled);
    assert_eq!(legacy.approval_mode("anything"), None);

    let runner = &config.servers["delta-runner"];
    assert_eq!(runner.environment, Environment::Named("box".into()));
    assert!(!runner.share_tool_listing);
    assert_eq!(runner.max_message_bytes, 1024 * 1024);
    assert_eq!(config.environments["box"].wrapper, ["ssh", "-T", "devbox"]);
}

#[test]
fn a_complete_codex_config_warns_once_per_server_and_key_without_effect() {
    let warnings: Vec<String> = codex_full()
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    let expected: Vec<String> = [
        "[mcp_servers.alpha-docs] `env_vars` entries with `source = \"remote\"` (`DOCS_TOKEN`) are not forwarded: mcp-runtime forwards only variables of its own environment (set the value with `env`, or in the environment's `wrapper`)",
        "[mcp_servers.alpha-docs] `startup_timeout_ms` is ignored because `startup_timeout_sec` is also set, which wins as in Codex (remove one of them)",
        "[mcp_servers.alpha-docs] `scopes` has no effect on a stdio server: OAuth logs in to servers with `url` (remove it)",
        "[mcp_servers.alpha-docs] `name` has no effect: it is a display name that Codex no longer reads, and mcp-runtime names this server `alpha-docs` after its table",
        "[mcp_servers.alpha-docs] `omit_tools_from` has no effect: it picks which of Codex's tool lists leave this server's tools out, and mcp-runtime has one catalog (to hide a tool, list it in `disabled_tools`)",
        "[mcp_servers.beta-github] `http_headers_helper` is not run: mcp-runtime does not run header helpers, so the server gets no headers from it (put fixed headers in `http_headers`, and name the variables that hold secret ones in `env_http_headers` or `bearer_token_env_var`)",
        "[mcp_servers.beta-github] `environment_id` set to `cloud-devbox` has no effect: it names one of Codex's execution environments, which mcp-runtime does not have; this server runs where its `environment` key says, this host by default (to run it elsewhere, define `[environments.NAME]` with a `wrapper` and set `environment = \"NAME\"`)",
        "[mcp_servers.gamma-legacy] `auth` set to `chatgpt` has no effect: mcp-runtime has no ChatGPT session, so it reaches the server with `bearer_token_env_var`, `http_headers` and `env_http_headers` only",
        "[mcp_servers.gamma-legacy] `experimental_environment` set to `remote` has no effect: it names one of Codex's execution environments, which mcp-runtime does not have; this server runs where its `environment` key says, this host by default (to run it elsewhere, define `[environments.NAME]` with a `wrapper` and set `environment = \"NAME\"`)",
    ]
    .iter()
    .map(|warning| format!("{ORIGIN}: {warning}"))
    .collect();
    assert_eq!(warnings, expected);
}
