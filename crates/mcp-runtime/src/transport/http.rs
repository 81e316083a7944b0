//! Streamable HTTP servers: headers, bearer token and the rmcp client transport.
//!
//! Secrets are resolved from the environment at connect time. A variable that is
//! missing or empty is a startup error that names the variable, never its value.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::transport::{
    StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
};

use crate::{config::HttpConfig, error::StartupError};

/// What is actually sent to an HTTP server: URL, bearer token and headers, with every
/// environment reference resolved.
#[derive(Clone)]
pub(crate) struct ResolvedHttp {
    pub(crate) url: String,
    pub(crate) bearer_token: Option<String>,
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
}

impl std::fmt::Debug for ResolvedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedHttp")
            .field("url", &self.url)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Resolves `http_headers`, `env_http_headers` and `bearer_token_env_var`, reading
/// variables through `env`.
pub(crate) fn resolve(
    http: &HttpConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ResolvedHttp, StartupError> {
    let required = |key: &'static str, variable: &str| {
        env(variable)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| StartupError::MissingEnvVar {
                key,
                variable: variable.to_owned(),
            })
    };
    let mut headers = HashMap::new();
    let literal = http
        .http_headers
        .iter()
        .map(|(name, value)| Ok(("http_headers", name, value.clone())));
    let from_env = http.env_http_headers.iter().map(|(name, variable)| {
        Ok((
            "env_http_headers",
            name,
            required("env_http_headers", variable)?,
        ))
    });
    for entry in literal.chain(from_env) {
        let (key, name, value) = entry?;
        let invalid = || StartupError::InvalidHeader {
            key,
            name: name.clone(),
        };
        let header_name = HeaderName::try_from(name.as_str()).map_err(|_| invalid())?;
        let mut header_value = HeaderValue::try_from(value).map_err(|_| invalid())?;
        header_value.set_sensitive(key == "env_http_headers");
        headers.insert(header_name, header_value);
    }
    let bearer_token = http
        .bearer_token_env_var
        .as_deref()
        .map(|variable| required("bearer_token_env_var", variable))
        .transpose()?;
    Ok(ResolvedHttp {
        url: http.url.clone(),
        bearer_token,
        headers,
    })
}

/// The rmcp client transport for a resolved endpoint.
pub(crate) fn transport(resolved: &ResolvedHttp) -> StreamableHttpClientTransport<reqwest::Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(resolved.url.as_str())
        .custom_headers(resolved.headers.clone());
    if let Some(token) = &resolved.bearer_token {
        config = config.auth_header(token.clone());
    }
    StreamableHttpClientTransport::from_config(config)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn config() -> HttpConfig {
        HttpConfig {
            url: "http://127.0.0.1:1/mcp".into(),
            bearer_token_env_var: Some("API_TOKEN".into()),
            http_headers: BTreeMap::from([("X-Team".into(), "core".into())]),
            env_http_headers: BTreeMap::from([("X-Key".into(), "API_KEY".into())]),
        }
    }

    #[test]
    fn resolves_headers_and_token_from_the_environment() {
        let resolved = resolve(&config(), |name| match name {
            "API_TOKEN" => Some("tok-1".into()),
            "API_KEY" => Some("key-1".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(resolved.bearer_token.as_deref(), Some("tok-1"));
        assert_eq!(resolved.headers[&HeaderName::from_static("x-team")], "core");
        assert_eq!(resolved.headers[&HeaderName::from_static("x-key")], "key-1");
        assert!(
            !format!("{resolved:?}").contains("tok-1"),
            "debug output redacts the token"
        );
    }

    #[test]
    fn a_missing_or_empty_variable_is_named_without_a_value() {
        let error = resolve(&config(), |name| (name == "API_KEY").then(|| "k".into())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable `API_TOKEN` named by `bearer_token_env_var` is not set or is empty"
        );
        let error = resolve(&config(), |name| (name == "API_TOKEN").then(String::new)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment variable `API_KEY` named by `env_http_headers` is not set or is empty"
        );
    }

    #[test]
    fn an_invalid_header_is_an_error() {
        let mut config = config();
        config.bearer_token_env_var = None;
        config.env_http_headers.clear();
        config.http_headers.insert("bad header".into(), "v".into());
        let error = resolve(&config, |_| None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "header `bad header` from `http_headers` is not a valid HTTP header"
        );
    }
}
