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
        ApprovalMode, GrantType, OAuthConfig, ServerConfig, SigningAlgorithm, ToolConfig,
        TransportConfig,
        checks::{env_name_problem, os_string_problem, url_problem},
        error::ConfigError,
        keys::{OAUTH_KEYS, TOOL_KEYS, table_part},
    },
    redact::shown,
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

    /// `oauth` (the client: `client_id`, `client_secret_env_var`, `client_metadata_url`,
    /// `grant_type`, `private_key_env_var`, `signing_algorithm`; the login's redirect:
    /// `callback_url`, `callback_port`) and `oauth_resource`.
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
            self.oauth_client_keys(settings, &o, oauth);
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

    /// The keys of a confidential or machine client: where its secret or key is read
    /// from (never the file), its metadata document, its grant. A secret or key
    /// belongs to a `client_id`; a machine client has one of them.
    fn oauth_client_keys(&self, settings: &Table, o: &str, oauth: &mut OAuthConfig) {
        for (key, field) in [
            ("client_secret_env_var", &mut oauth.client_secret_env_var),
            ("private_key_env_var", &mut oauth.private_key_env_var),
            ("assertion_env_var", &mut oauth.assertion_env_var),
        ] {
            if let Some(name) = settings
                .get(key)
                .and_then(|value| self.ok(self.string(value, o, key)))
            {
                self.check(o, key, || super::variable(&name), env_name_problem(&name));
                *field = Some(name);
            }
        }
        if let Some(value) = settings.get("client_metadata_url") {
            let url = self.url(value, o, "client_metadata_url").and_then(|url| {
                cimd_url_problem(&url)
                    .map(|expected| Err(self.invalid(o, "client_metadata_url", expected)))
                    .unwrap_or(Ok(Some(url)))
            });
            self.set(&mut oauth.client_metadata_url, url);
        }
        if let Some(path) = settings
            .get("assertion_file")
            .and_then(|value| self.ok(self.string(value, o, "assertion_file")))
        {
            let problem = match path.as_str() {
                "" => Some("is empty (name the file holding the workload's identity token)"),
                path => os_string_problem(path),
            };
            self.check(o, "assertion_file", || "the value".to_owned(), problem);
            if problem.is_none() {
                let dir = self.path.parent().unwrap_or(std::path::Path::new(""));
                oauth.assertion_file = Some(dir.join(path));
            }
        }
        if let Some(value) = settings.get("grant_type") {
            let grant = match value.as_str() {
                Some("authorization_code") => Ok(GrantType::AuthorizationCode),
                Some("client_credentials") => Ok(GrantType::ClientCredentials),
                Some("jwt_bearer") => Ok(GrantType::JwtBearer),
                _ => Err(self.invalid(
                    o,
                    "grant_type",
                    "`authorization_code`, `client_credentials` or `jwt_bearer`",
                )),
            };
            self.set(&mut oauth.grant_type, grant);
        }
        if let Some(value) = settings.get("signing_algorithm") {
            let algorithm = SigningAlgorithm::ALL
                .iter()
                .find(|(name, _)| value.as_str() == Some(name))
                .map(|(_, algorithm)| *algorithm)
                .ok_or_else(|| {
                    self.invalid(
                        o,
                        "signing_algorithm",
                        "one of `ES256`, `ES384`, `RS256`, `RS384` and `RS512`",
                    )
                });
            self.set(&mut oauth.signing_algorithm, algorithm);
        }
        let needs = |key: &str, expected: &str| {
            if settings.contains_key(key) {
                self.report(self.invalid(o, key, expected));
            }
        };
        if oauth.client_id.is_none() {
            needs(
                "client_secret_env_var",
                "set with `client_id`: the secret is a pre-registered client's",
            );
            needs(
                "private_key_env_var",
                "set with `client_id`: the key is a pre-registered client's",
            );
        }
        let machine = oauth.grant_type == GrantType::ClientCredentials;
        if !machine {
            needs(
                "private_key_env_var",
                "set with `grant_type = \"client_credentials\"`: the key authenticates a machine client",
            );
        }
        if oauth.private_key_env_var.is_none() {
            needs(
                "signing_algorithm",
                "set with `private_key_env_var`: it is the algorithm of that key",
            );
        }
        if oauth.client_secret_env_var.is_some() && oauth.private_key_env_var.is_some() {
            needs(
                "private_key_env_var",
                "set without `client_secret_env_var`: a client authenticates with one of them",
            );
        }
        if machine
            && (oauth.client_id.is_none()
                || (oauth.client_secret_env_var.is_none() && oauth.private_key_env_var.is_none()))
        {
            needs(
                "grant_type",
                "`authorization_code` here, or given a `client_id` with `client_secret_env_var` or `private_key_env_var`: a machine client authenticates itself",
            );
        }
        let workload = oauth.grant_type == GrantType::JwtBearer;
        let assertions = usize::from(oauth.assertion_env_var.is_some())
            + usize::from(oauth.assertion_file.is_some());
        if !workload {
            for key in ["assertion_env_var", "assertion_file"] {
                needs(
                    key,
                    "set with `grant_type = \"jwt_bearer\"`: the assertion is a workload's identity token",
                );
            }
        } else if oauth.client_id.is_none() || assertions != 1 {
            needs(
                "grant_type",
                "`authorization_code` here, or given a `client_id` with one of `assertion_env_var` and `assertion_file`: a workload presents its identity token",
            );
        } else {
            needs(
                "client_secret_env_var",
                "left out with `grant_type = \"jwt_bearer\"`: the workload's identity token is its credential",
            );
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

/// What a Client ID Metadata Document's URL must be, when it is not: `https`, with a
/// path to the document (the URL is the client id, and the authorization server
/// fetches it).
fn cimd_url_problem(url: &str) -> Option<&'static str> {
    const EXPECTED: &str = "an `https` URL with a path to the client's metadata document";
    #[cfg(feature = "http")]
    {
        let parsed = url::Url::parse(url).ok()?;
        (parsed.scheme() != "https" || parsed.path() == "/" || parsed.path().is_empty())
            .then_some(EXPECTED)
    }
    // Without HTTP no login can use the document; its form is checked as text.
    #[cfg(not(feature = "http"))]
    {
        let path = url
            .get(..8)
            .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
            .and_then(|_| url[8..].split_once('/'))
            .map(|(_, path)| path);
        path.is_none_or(str::is_empty).then_some(EXPECTED)
    }
}
