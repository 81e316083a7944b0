//! The `[serve]` table and its `[serve.auth]`.

use std::time::Duration;

use toml::{Table, Value};

use super::File;
use crate::config::{
    Expose, JwtAuth, MAX_REDIS_TIMEOUT, ServeAuth, ServeConfig, ServeFleet, ToolNames, checks,
    error::ConfigError,
};

const SERVE_KEYS: &[&str] = &[
    "tool_names",
    "expose",
    "always_expose",
    "max_exposed_tools",
    "session_idle_sec",
    "listing_burst_sec",
    "max_sessions",
    "max_request_bytes",
    "allowed_hosts",
    "allowed_origins",
    "auth",
    "fleet",
];
const FLEET_KEYS: &[&str] = &[
    "redis_url_env_var",
    "key_env_var",
    "replica",
    "redis_timeout_ms",
];
const AUTH_KEYS: &[&str] = &[
    "bearer_token_env_var",
    "issuer",
    "audience",
    "jwks_uri",
    "scopes",
];

impl File<'_> {
    /// `[serve]`; every error is recorded and the defaults stand in for its key.
    pub(super) fn serve(&self, value: &Value) -> ServeConfig {
        let mut serve = ServeConfig::default();
        let Some(table) = self.ok(self.table(value, "serve", "serve")) else {
            return serve;
        };
        self.unknown_keys(table, "serve", SERVE_KEYS);
        if let Some(value) = table.get("tool_names") {
            let names = match value.as_str() {
                Some("qualified") => Ok(ToolNames::Qualified),
                Some("original") => Ok(ToolNames::Original),
                _ => Err(self.invalid("serve", "tool_names", "`qualified` or `original`")),
            };
            self.set(&mut serve.tool_names, names);
        }
        if let Some(value) = table.get("expose") {
            let expose = match value.as_str() {
                Some("all") => Ok(Expose::All),
                Some("search") => Ok(Expose::Search),
                _ => Err(self.invalid("serve", "expose", "`all` or `search`")),
            };
            self.set(&mut serve.expose, expose);
        }
        if let Some(value) = table.get("always_expose") {
            self.set(
                &mut serve.always_expose,
                self.strings(value, "serve", "always_expose"),
            );
        }
        if let Some(value) = table.get("max_exposed_tools") {
            self.set(
                &mut serve.max_exposed_tools,
                self.positive(value, "max_exposed_tools"),
            );
        }
        if let Some(value) = table.get("session_idle_sec") {
            self.set(
                &mut serve.session_idle,
                self.seconds(value, "serve", "session_idle_sec", 1.0),
            );
        }
        if let Some(value) = table.get("listing_burst_sec") {
            self.set(
                &mut serve.listing_burst,
                self.seconds_or_zero(value, "serve", "listing_burst_sec", 1.0),
            );
        }
        if let Some(value) = table.get("max_sessions") {
            self.set(
                &mut serve.max_sessions,
                self.positive(value, "max_sessions"),
            );
        }
        if let Some(value) = table.get("max_request_bytes") {
            self.set(
                &mut serve.max_request_bytes,
                self.positive(value, "max_request_bytes"),
            );
        }
        if let Some(value) = table.get("allowed_hosts") {
            self.set(
                &mut serve.allowed_hosts,
                self.strings(value, "serve", "allowed_hosts"),
            );
        }
        if let Some(value) = table.get("allowed_origins") {
            let origins = self.strings(value, "serve", "allowed_origins");
            if let Some(origins) = self.ok(origins) {
                for (index, origin) in origins.iter().enumerate() {
                    self.check(
                        "serve",
                        "allowed_origins",
                        || super::item(index),
                        origin_problem(origin),
                    );
                }
                serve.allowed_origins = origins;
            }
        }
        if let Some(value) = table.get("auth") {
            serve.auth = self
                .ok(self.table(value, "serve", "auth"))
                .and_then(|auth| self.auth(auth));
        }
        if let Some(value) = table.get("fleet") {
            serve.fleet = self
                .ok(self.table(value, "serve", "fleet"))
                .and_then(|fleet| self.fleet(fleet));
        }
        serve
    }

    /// `[serve.fleet]`: the variables of the Redis URL and of the fleet key, both
    /// needed, an optional replica name and an optional timeout of Redis's calls.
    fn fleet(&self, table: &Table) -> Option<ServeFleet> {
        self.unknown_keys(table, "serve.fleet", FLEET_KEYS);
        let variable = |key: &str| {
            let Some(value) = table.get(key) else {
                self.report(self.invalid(
                    "serve.fleet",
                    key,
                    "set, the name of an environment variable",
                ));
                return None;
            };
            let name = self.ok(self.string(value, "serve.fleet", key))?;
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                self.report(self.invalid("serve.fleet", key, "an environment variable's name"));
                return None;
            }
            Some(name)
        };
        let redis_url_env_var = variable("redis_url_env_var");
        let key_env_var = variable("key_env_var");
        let replica = match table.get("replica") {
            Some(value) => Some(self.ok(self.string(value, "serve.fleet", "replica"))?),
            None => None,
        };
        let redis_timeout = match table.get("redis_timeout_ms") {
            Some(value) => Some(self.ok(self.redis_timeout(value))?),
            None => None,
        };
        Some(ServeFleet {
            redis_url_env_var: redis_url_env_var?,
            key_env_var: key_env_var?,
            replica,
            redis_timeout,
        })
    }

    /// `[serve.fleet] redis_timeout_ms`: positive, and at most [`MAX_REDIS_TIMEOUT`].
    fn redis_timeout(&self, value: &Value) -> Result<Duration, ConfigError> {
        let timeout = self.seconds(value, "serve.fleet", "redis_timeout_ms", 1e-3)?;
        if timeout > MAX_REDIS_TIMEOUT {
            let most = format!(
                "at most {} (a listing's leader renews its 3-second lease every second)",
                MAX_REDIS_TIMEOUT.as_millis()
            );
            return Err(self.invalid("serve.fleet", "redis_timeout_ms", &most));
        }
        Ok(timeout)
    }

    /// `[serve.auth]`: a bearer token's variable, or an OAuth resource server's
    /// issuer and audience; not both.
    fn auth(&self, table: &Table) -> Option<ServeAuth> {
        self.unknown_keys(table, "serve.auth", AUTH_KEYS);
        let token = table.get("bearer_token_env_var");
        if token.is_some() && table.contains_key("issuer") {
            self.report(self.invalid(
                "serve.auth",
                "issuer",
                "absent beside `bearer_token_env_var` (a listener takes one way of authenticating)",
            ));
            return None;
        }
        if table.contains_key("issuer") || table.contains_key("audience") {
            return self.jwt_auth(table).map(ServeAuth::Jwt);
        }
        let Some(value) = token else {
            self.report(self.invalid(
                "serve.auth",
                "bearer_token_env_var",
                "the name of the environment variable holding the clients' bearer token (or set `issuer` and `audience` for OAuth access tokens)",
            ));
            return None;
        };
        let name = self.ok(self.string(value, "serve.auth", "bearer_token_env_var"))?;
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            self.report(self.invalid(
                "serve.auth",
                "bearer_token_env_var",
                "an environment variable's name",
            ));
            return None;
        }
        Some(ServeAuth::BearerTokenEnvVar(name))
    }

    /// The OAuth resource server's `[serve.auth]`: `issuer` and `audience` are URLs,
    /// both needed.
    fn jwt_auth(&self, table: &Table) -> Option<JwtAuth> {
        let url = |key: &str| {
            let Some(value) = table.get(key) else {
                self.report(self.invalid(
                    "serve.auth",
                    key,
                    "set, an `https://` URL, beside the other of `issuer` and `audience`",
                ));
                return None;
            };
            let url = self.ok(self.string(value, "serve.auth", key))?;
            match checks::url_problem(&url) {
                Some(expected) => {
                    self.report(self.invalid("serve.auth", key, &expected));
                    None
                }
                None => Some(url),
            }
        };
        let issuer = url("issuer");
        let audience = url("audience");
        let jwks_uri = match table.get("jwks_uri") {
            Some(_) => Some(url("jwks_uri")?),
            None => None,
        };
        let scopes = match table.get("scopes") {
            Some(value) => self.ok(self.strings(value, "serve.auth", "scopes"))?,
            None => Vec::new(),
        };
        for scope in &scopes {
            // RFC 6749 §3.3: a scope is printed in challenges, between quotes.
            let token = !scope.is_empty()
                && scope
                    .bytes()
                    .all(|byte| matches!(byte, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
            self.check(
                "serve.auth",
                "scopes",
                || format!("`{scope}`"),
                (!token).then_some(
                    "is not a scope: one or more printable ASCII characters, without spaces, `\"` or `\\`",
                ),
            );
        }
        Some(JwtAuth {
            issuer: issuer?,
            audience: audience?,
            jwks_uri,
            scopes,
        })
    }

    /// A positive integer.
    fn positive(&self, value: &Value, key: &str) -> Result<usize, ConfigError> {
        value
            .as_integer()
            .and_then(|number| usize::try_from(number).ok())
            .filter(|number| *number > 0)
            .ok_or_else(|| self.invalid("serve", key, "a positive integer"))
    }
}

/// Why `origin` cannot match a browser's `Origin`, if it cannot: it needs a scheme.
fn origin_problem(origin: &str) -> Option<&'static str> {
    (origin != "null" && !origin.contains("://"))
        .then_some("names no scheme (write it as `https://app.example.com` is written)")
}
