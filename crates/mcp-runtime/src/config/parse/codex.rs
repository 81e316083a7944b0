//! The keys of Codex's server tables beyond a transport and its timeouts: the settings a
//! host applies to tools (`supports_parallel_tool_calls`, `default_tools_approval_mode`,
//! `[tools.TOOL]`), the OAuth keys, and the keys mcp-runtime accepts with a warning.
//!
//! Each key Codex knows and mcp-runtime does not act on is decided from what Codex does
//! with it: when the value asks for nothing beyond what mcp-runtime does anyway
//! (`environment_id = "local"`, `auth = "oauth"`), it loads silently; otherwise it loads
//! with one [`crate::config::ConfigWarning`] that says what does not happen and what to
//! use instead. Its value is still checked as Codex checks it, so a file that loads here
//! also loads in Codex.

use toml::{Table, Value};

use super::File;
use crate::{
    config::{
        ApprovalMode, OAuthConfig, ServerConfig, ToolConfig, TransportConfig,
        checks::{shown, url_problem},
        keys::{OAUTH_KEYS, TOOL_KEYS, table_part},
    },
    error::ConfigError,
};

/// The values of `default_tools_approval_mode` and `approval_mode`.
const APPROVAL_MODES: &str = "`auto`, `prompt`, `writes` or `approve`";

impl File<'_> {
    pub(super) fn codex_keys(&self, table: &Table, t: &str, server: &mut ServerConfig) {
        let is_http = matches!(server.transport, TransportConfig::StreamableHttp(_));
        if let Some(value) = table.get("supports_parallel_tool_calls") {
            let parallel = self.boolean(value, t, "supports_parallel_tool_calls");
            self.set(&mut server.supports_parallel_tool_calls, parallel);
        }
        if let Some(value) = table.get("default_tools_approval_mode") {
            let mode = self.approval(value, t, "default_tools_approval_mode");
            self.set(&mut server.default_tools_approval_mode, mode.map(Some));
        }
        if let Some(value) = table.get("tools")
            && let Some(tools) = self.ok(self.table(value, t, "tools"))
        {
            for (tool, value) in tools {
                if let Some(settings) = self.ok(self.tool(t, tool, value)) {
                    server.tools.insert(tool.clone(), settings);
                }
            }
        }
        if let Some(value) = table.get("scopes")
            && let Some(scopes) = self.ok(self.strings(value, t, "scopes"))
        {
            if is_http {
                server.oauth.scopes = Some(scopes);
            } else {
                self.warn(
                    t,
                    "scopes",
                    "has no effect on a stdio server: OAuth logs in to servers with `url` (remove it)"
                        .to_owned(),
                );
            }
        }
        // The keys below are refused on a stdio server before this point (as in Codex).
        if is_http {
            self.oauth_keys(table, t, &mut server.oauth);
            self.http_only_warned_keys(table, t);
        }
        self.warned_keys(table, t, &server.name);
    }

    /// `approval_mode` or `default_tools_approval_mode`.
    fn approval(&self, value: &Value, table: &str, key: &str) -> Result<ApprovalMode, ConfigError> {
        match value.as_str() {
            Some("auto") => Ok(ApprovalMode::Auto),
            Some("prompt") => Ok(ApprovalMode::Prompt),
            Some("writes") => Ok(ApprovalMode::Writes),
            Some("approve") => Ok(ApprovalMode::Approve),
            _ => Err(self.invalid(table, key, &format!("one of {APPROVAL_MODES}"))),
        }
    }

    /// One `[mcp_servers.NAME.tools.TOOL]` table.
    fn tool(
        &self,
        server_table: &str,
        tool: &str,
        value: &Value,
    ) -> Result<ToolConfig, ConfigError> {
        let table = self.table(value, &format!("{server_table}.tools"), tool)?;
        let t = format!("{server_table}.tools.{}", table_part(tool));
        self.unknown_keys(table, &t, TOOL_KEYS);
        let mut settings = ToolConfig::default();
        if let Some(value) = table.get("approval_mode") {
            let mode = self.approval(value, &t, "approval_mode");
            self.set(&mut settings.approval_mode, mode.map(Some));
        }
        if let Some(value) = table.get("output_token_limit") {
            let limit = value
                .as_integer()
                .filter(|limit| *limit > 0)
                .and_then(|limit| u64::try_from(limit).ok())
                .map(Some)
                .ok_or_else(|| {
                    self.invalid(&t, "output_token_limit", "a positive number of tokens")
                });
            self.set(&mut settings.output_token_limit, limit);
        }
        Ok(settings)
    }

    /// `oauth` (`client_id`, `callback_url`, `callback_port`) and `oauth_resource`,
    /// kept for the OAuth login; nothing reads them yet.
    fn oauth_keys(&self, table: &Table, t: &str, oauth: &mut OAuthConfig) {
        if let Some(value) = table.get("oauth")
            && let Some(settings) = self.ok(self.table(value, t, "oauth"))
        {
            let o = format!("{t}.oauth");
            self.unknown_keys(settings, &o, OAUTH_KEYS);
            if let Some(value) = settings.get("client_id") {
                let client_id = self.non_empty(value, &o, "client_id").map(Some);
                self.set(&mut oauth.client_id, client_id);
            }
            if let Some(value) = settings.get("callback_url") {
                let url = self.url(value, &o, "callback_url").map(Some);
                self.set(&mut oauth.callback_url, url);
            }
            if let Some(value) = settings.get("callback_port") {
                let port = value
                    .as_integer()
                    .and_then(|port| u16::try_from(port).ok())
                    .filter(|port| *port > 0)
                    .map(Some)
                    .ok_or_else(|| {
                        self.invalid(&o, "callback_port", "a port number from 1 to 65535")
                    });
                self.set(&mut oauth.callback_port, port);
            }
        }
        if let Some(value) = table.get("oauth_resource") {
            let resource = self.url(value, t, "oauth_resource").map(Some);
            self.set(&mut oauth.resource, resource);
        }
    }

    /// Keys of a server with `url` that load with a warning.
    fn http_only_warned_keys(&self, table: &Table, t: &str) {
        if let Some(value) = table.get("http_headers_helper")
            && self
                .ok(self.non_empty(value, t, "http_headers_helper"))
                .is_some()
        {
            self.warn(
                t,
                "http_headers_helper",
                "is not run: mcp-runtime does not run header helpers, so the server gets no headers from it (put fixed headers in `http_headers`, and name the variables that hold secret ones in `env_http_headers` or `bearer_token_env_var`)"
                    .to_owned(),
            );
        }
        if let Some(value) = table.get("auth") {
            match value.as_str() {
                // Codex's default: stored OAuth credentials, which are the OAuth keys'.
                Some("oauth") => {}
                Some("chatgpt") => self.warn(
                    t,
                    "auth",
                    "set to `chatgpt` has no effect: mcp-runtime has no ChatGPT session, so it reaches the server with `bearer_token_env_var`, `http_headers` and `env_http_headers` only"
                        .to_owned(),
                ),
                _ => self.report(self.invalid(t, "auth", "`oauth` or `chatgpt`")),
            }
        }
    }

    /// Keys of any server that load with a warning.
    fn warned_keys(&self, table: &Table, t: &str, server: &str) {
        if let Some(value) = table.get("name")
            && self.ok(self.string(value, t, "name")).is_some()
        {
            self.warn(
                t,
                "name",
                format!(
                    "has no effect: it is a display name that Codex no longer reads, and mcp-runtime names this server `{server}` after its table"
                ),
            );
        }
        for key in ["environment_id", "experimental_environment"] {
            if let Some(value) = table.get(key)
                && let Some(environment) = self.ok(self.string(value, t, key))
                && environment != "local"
            {
                self.warn(
                    t,
                    key,
                    format!(
                        "set to `{}` has no effect: it names one of Codex's execution environments, which mcp-runtime does not have; this server runs where its `environment` key says, this host by default (to run it elsewhere, define `[environments.NAME]` with a `wrapper` and set `environment = \"NAME\"`)",
                        shown(&environment)
                    ),
                );
            }
        }
        if let Some(value) = table.get("omit_tools_from") {
            let surfaces = value.as_array().and_then(|surfaces| {
                surfaces
                    .iter()
                    .map(|surface| {
                        surface.as_str().filter(|surface| {
                            matches!(*surface, "direct" | "deferred" | "code_mode")
                        })
                    })
                    .collect::<Option<Vec<_>>>()
            });
            match surfaces {
                None => self.report(self.invalid(
                    t,
                    "omit_tools_from",
                    "an array of `direct`, `deferred` and `code_mode`",
                )),
                Some(surfaces) if surfaces.is_empty() => {}
                Some(_) => self.warn(
                    t,
                    "omit_tools_from",
                    "has no effect: it picks which of Codex's tool lists leave this server's tools out, and mcp-runtime has one catalog (to hide a tool, list it in `disabled_tools`)"
                        .to_owned(),
                ),
            }
        }
    }

    fn non_empty(&self, value: &Value, table: &str, key: &str) -> Result<String, ConfigError> {
        value
            .as_str()
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| self.invalid(table, key, "a non-empty string"))
    }

    fn url(&self, value: &Value, table: &str, key: &str) -> Result<String, ConfigError> {
        let url = self.string(value, table, key)?;
        match url_problem(&url) {
            Some(expected) => Err(self.invalid(table, key, &expected)),
            None => Ok(url),
        }
    }
}
