//! What is sent to an HTTP server, resolved from its configuration: the URL, the bearer
//! token and the headers, every environment reference read (a variable that is missing
//! or empty, not valid UTF-8 or holds a byte no header can carry is a startup error
//! naming the variable, never its value), and each credential registered for masking.

use std::{collections::HashMap, ffi::OsString};

use base64::Engine as _;
use http::{HeaderName, HeaderValue};

use super::{Network, OAuthStore};
use crate::{
    config::{DEFAULT_MAX_MESSAGE_BYTES, HttpConfig, checks::header_value_problem},
    transport::error::StartupError,
};

/// What is actually sent to an HTTP server: URL, bearer token and headers, with every
/// environment reference resolved.
#[derive(Clone)]
pub(crate) struct ResolvedHttp {
    pub(crate) url: String,
    pub(crate) bearer_token: Option<String>,
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
    /// The largest SSE event or JSON body accepted (`max_message_bytes`).
    pub(crate) max_message_bytes: usize,
    /// Proxies and extra CA certificates ([`network`]).
    pub(crate) network: Network,
    /// Where the server's OAuth tokens are stored, and the client it authenticates
    /// as when the configuration names one ([`oauth`]); `None` without OAuth.
    pub(crate) oauth_store: Option<OAuthStore>,
    /// The bearer token and the sensitive headers' values, masked in what servers
    /// send back while this lives ([`crate::redact::credentials`]).
    pub(crate) credentials: Vec<crate::redact::Registered>,
}

impl std::fmt::Debug for ResolvedHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedHttp")
            .field("url", &crate::redact::url(&self.url))
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("max_message_bytes", &self.max_message_bytes)
            .field("network", &self.network)
            .field("oauth", &self.oauth_store)
            .finish()
    }
}

/// Resolves `http_headers`, `env_http_headers`, `bearer_token_env_var` and the
/// [`network`] settings, reading variables through `env`. Responses are bounded by
/// [`DEFAULT_MAX_MESSAGE_BYTES`] until [`ResolvedHttp::max_message_bytes`] is set.
pub(crate) fn resolve(
    http: &HttpConfig,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<ResolvedHttp, StartupError> {
    let required = |key: &'static str, variable: &str| required_header_var(&env, key, variable);
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
        // A value read from the environment may be a secret; a literal header whose
        // name says it holds a credential (`Authorization`, `X-Api-Key`, which the file
        // may hold, as Codex's does) is one.
        header_value.set_sensitive(
            key == "env_http_headers" || crate::redact::names_a_credential(header_name.as_str()),
        );
        headers.insert(header_name, header_value);
    }
    let bearer_token = http
        .bearer_token_env_var
        .as_deref()
        .map(|variable| required("bearer_token_env_var", variable))
        .transpose()?;
    let credentials = headers
        .values()
        .filter(|value| value.is_sensitive())
        .filter_map(|value| value.to_str().ok())
        .chain(bearer_token.as_deref())
        .flat_map(credential_forms)
        .chain(url_credentials(&http.url))
        .filter_map(|form| crate::redact::register(&form))
        .collect();
    Ok(ResolvedHttp {
        url: http.url.clone(),
        bearer_token,
        headers,
        credentials,
        max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        network: Network::resolve(http, env)?,
        oauth_store: None,
    })
}

/// The forms in which a credential sent as `value` may come back: the value; for
/// `SCHEME CREDENTIAL` (`Bearer …`, `Basic …`) the credential alone; for `Basic` also
/// what it encodes, `USER:PASSWORD`, and the password.
fn credential_forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let Some((scheme, credential)) = value.split_once(' ') else {
        return forms;
    };
    let credential = credential.trim_start();
    if credential.is_empty() {
        return forms;
    }
    forms.push(credential.to_owned());
    if scheme.eq_ignore_ascii_case("basic")
        && let Some(pair) = base64::engine::general_purpose::STANDARD
            .decode(credential)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
    {
        if let Some((_, password)) = pair.split_once(':') {
            forms.push(password.to_owned());
        }
        forms.push(pair);
    }
    forms
}

/// The credentials `url` itself carries: its user information (the user and the
/// password) and its query values, which [`crate::redact::url`] masks where a URL is
/// shown, here for a server that quotes its request back.
fn url_credentials(url: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(url) else {
        return Vec::new();
    };
    let decoded = |text: &str| {
        url::form_urlencoded::parse(format!("x={text}").as_bytes())
            .next()
            .map(|(_, value)| value.into_owned())
    };
    let mut found: Vec<String> = [url.username(), url.password().unwrap_or_default()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| [Some(part.to_owned()), decoded(part)])
        .flatten()
        .collect();
    found.extend(url.query_pairs().map(|(_, value)| value.into_owned()));
    found.extend(
        url.query()
            .into_iter()
            .flat_map(|query| query.split('&'))
            .filter_map(|pair| pair.split_once('=').map(|(_, value)| value.to_owned())),
    );
    found.sort();
    found.dedup();
    found
}

/// The value of `variable`, named by `key`: set, not empty, valid UTF-8; the error
/// names the key and the variable, never the value.
pub(super) fn required_var(
    env: &impl Fn(&str) -> Option<OsString>,
    key: &'static str,
    variable: &str,
) -> Result<String, StartupError> {
    env(variable)
        .filter(|value| !value.is_empty())
        .ok_or_else(|| StartupError::MissingEnvVar {
            key,
            variable: variable.to_owned(),
        })?
        .into_string()
        .map_err(|_| StartupError::InvalidEnvVar {
            key,
            variable: variable.to_owned(),
            problem: "is not valid UTF-8 (set it to the value as text)",
        })
}

/// [`required_var`], for a value sent in a header (or a form field): also one that a
/// header can carry.
pub(super) fn required_header_var(
    env: &impl Fn(&str) -> Option<OsString>,
    key: &'static str,
    variable: &str,
) -> Result<String, StartupError> {
    let value = required_var(env, key, variable)?;
    // The same rule as for the headers of the file: the value is sent in a header
    // (the token in `Authorization`), and the HTTP client would refuse it later with
    // a message that names neither the variable nor the problem.
    match header_value_problem(&value) {
        Some(problem) => Err(StartupError::InvalidEnvVar {
            key,
            variable: variable.to_owned(),
            problem,
        }),
        None => Ok(value),
    }
}
