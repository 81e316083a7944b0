//! The listener as an OAuth resource server: each client sends a JWT access token
//! its authorization server issued, checked against that server's signing keys.
//!
//! Invariants:
//! 1. A token is admitted only when its signature verifies with a key of the
//!    issuer's JWK Set (the one its `kid` names, or the only one), under an
//!    asymmetric algorithm that key allows; its `iss` is the issuer; its `aud` holds
//!    the audience (this resource); it carries `sub` and an `exp` not past (a minute
//!    of leeway for clocks) and is in force (`nbf`); and its `scope` holds every
//!    configured scope. Anything else is refused, never passed on.
//! 2. The key set is fetched when first needed, from `jwks_uri` or the location the
//!    issuer's metadata gives (RFC 8414, then OpenID Connect discovery), and again
//!    for a `kid` it lacks, at most once per [`REFETCH_AFTER`], a failed fetch
//!    included: a token naming an unknown key cannot make the gateway fetch for
//!    every request. Keys come over `https` only (or `http` to this machine), and no
//!    redirect is followed. One fetch runs at a time, and a token whose key is known
//!    never waits for one.
//! 3. The principal is the token's issuer and subject: two clients of one subject
//!    share their sessionless upstream connections, two subjects never do.
//! 4. The Protected Resource Metadata (RFC 9728) names the audience as the resource
//!    and the issuer as its authorization server; every challenge points to it
//!    (`resource_metadata`), at the well-known path under the audience's origin.
//! 5. No token is logged: a refusal logs why, not what.

use std::{
    collections::HashSet,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::sync::lock;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation, decode, decode_header,
    jwk::{Jwk, JwkSet, KeyAlgorithm},
};
use mcp_runtime::config::JwtAuth;
use serde::Deserialize;

/// The least time between two fetches of the key set for a `kid` it lacks
/// (invariant 2).
pub(crate) const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// How long a fetch of the issuer's metadata or keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The leeway on `exp` and `nbf`, for clocks that differ.
const LEEWAY_SECS: u64 = 60;

/// Checks access tokens for one issuer and audience.
pub(crate) struct Verifier {
    config: JwtAuth,
    client: reqwest::Client,
    keys: Mutex<Keys>,
    /// Held while the key set is fetched: one fetch at a time (invariant 2).
    fetching: tokio::sync::Mutex<()>,
    /// The Protected Resource Metadata document (invariant 4).
    metadata: String,
    /// Where it is served, as an absolute URL, for the challenges.
    metadata_url: String,
    /// Where it is served, as a path of this listener.
    pub(crate) metadata_path: String,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
}

/// Why a request's token was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No token.
    Missing,
    /// A token that does not pass (invariant 1): why, without the token.
    Invalid(String),
    /// A good token without the scopes every call needs.
    InsufficientScope,
    /// The issuer's keys could not be fetched.
    KeysUnavailable(String),
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    scope: Option<String>,
}

impl Verifier {
    /// A verifier for `config`; it fetches nothing yet.
    pub(crate) fn new(config: JwtAuth) -> Result<Self, String> {
        let audience = url::Url::parse(&config.audience)
            .map_err(|error| format!("`audience` is not a URL: {error}"))?;
        let path = audience.path().trim_end_matches('/');
        let metadata_path = format!("/.well-known/oauth-protected-resource{path}");
        let metadata_url = format!("{}{metadata_path}", audience.origin().ascii_serialization());
        let mut metadata = serde_json::json!({
            "resource": config.audience,
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !config.scopes.is_empty() {
            metadata["scopes_supported"] = config.scopes.clone().into();
        }
        for (key, url) in [
            ("issuer", Some(&config.issuer)),
            ("jwks_uri", config.jwks_uri.as_ref()),
        ] {
            if let Some(url) = url {
                trusted_url(url).map_err(|problem| format!("`{key}` {problem}"))?;
            }
        }
        // Keys come from where the configuration and the issuer's metadata say, and
        // nowhere a redirect would lead.
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("no HTTP client for the issuer's keys: {error}"))?;
        Ok(Self {
            config,
            client,
            keys: Mutex::default(),
            fetching: tokio::sync::Mutex::default(),
            metadata: metadata.to_string(),
            metadata_url,
            metadata_path,
        })
    }

    /// The Protected Resource Metadata document.
    pub(crate) fn metadata(&self) -> &str {
        &self.metadata
    }

    /// The `WWW-Authenticate` value of `refusal` (invariant 4).
    pub(crate) fn challenge(&self, refusal: &Refusal) -> String {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        match refusal {
            Refusal::Missing | Refusal::KeysUnavailable(_) => {}
            Refusal::Invalid(_) => challenge.push_str(", error=\"invalid_token\""),
            Refusal::InsufficientScope => challenge.push_str(", error=\"insufficient_scope\""),
        }
        if !self.config.scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", self.config.scopes.join(" ")));
        }
        challenge
    }

    /// The principal of a request with `authorization` (its `Authorization`
    /// header), or why it is refused (invariants 1 and 3).
    pub(crate) async fn check(&self, authorization: Option<&[u8]>) -> Result<String, Refusal> {
        let token = authorization
            .and_then(super::bearer::token)
            .and_then(|token| std::str::from_utf8(token).ok())
            .ok_or(Refusal::Missing)?;
        let header = decode_header(token)
            .map_err(|error| Refusal::Invalid(format!("not a JWT: {error}")))?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(Refusal::Invalid(
                "signed with a shared secret, not the issuer's key".into(),
            ));
        }
        let jwk = self.key(header.kid.as_deref()).await?;
        if jwk
            .common
            .key_algorithm
            .is_some_and(|allowed| allowed != KeyAlgorithm::from(header.alg))
        {
            return Err(Refusal::Invalid(
                "signed with an algorithm its key does not allow".into(),
            ));
        }
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|error| Refusal::Invalid(format!("its key cannot be used: {error}")))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.required_spec_claims = ["exp", "iss", "aud", "sub"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let claims = decode::<Claims>(token, &key, &validation)
            .map_err(|error| Refusal::Invalid(error.to_string()))?
            .claims;
        let granted: HashSet<&str> = claims
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        if !self
            .config
            .scopes
            .iter()
            .all(|scope| granted.contains(scope.as_str()))
        {
            return Err(Refusal::InsufficientScope);
        }
        Ok(format!("{} {}", claims.iss, claims.sub))
    }

    /// The key `kid` names, or the set's only key without one; the set fetched
    /// again for a `kid` it lacks (invariant 2).
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, Refusal> {
        if let Some(known) = self.known(kid) {
            return known;
        }
        let _fetching = self.fetching.lock().await;
        // Another request's fetch may have ended meanwhile.
        if let Some(known) = self.known(kid) {
            return known;
        }
        // Only fetches change it, and they take turns.
        lock(&self.keys).fetched = Some(Instant::now());
        let set = self.fetch_keys().await.map_err(|error| {
            tracing::warn!(issuer = %self.config.issuer, %error, "the issuer's signing keys could not be fetched");
            Refusal::KeysUnavailable(error)
        })?;
        let found = find(&set, kid);
        lock(&self.keys).set = Some(set);
        found.ok_or_else(|| Refusal::Invalid("signed with a key the issuer does not list".into()))
    }

    /// The key `kid` names in the set held, or the refusal when the set may not be
    /// fetched again yet; `None` when it is to be fetched.
    fn known(&self, kid: Option<&str>) -> Option<Result<Jwk, Refusal>> {
        let keys = lock(&self.keys);
        if let Some(jwk) = keys.set.as_ref().and_then(|set| find(set, kid)) {
            return Some(Ok(jwk));
        }
        let recently = keys
            .fetched
            .is_some_and(|fetched| fetched.elapsed() < REFETCH_AFTER);
        // A fetch, good or failed, is not repeated sooner (invariant 2).
        if recently {
            return Some(Err(match keys.set {
                Some(_) => Refusal::Invalid("signed with a key the issuer does not list".into()),
                None => Refusal::KeysUnavailable("the last fetch failed".into()),
            }));
        }
        None
    }

    /// The issuer's JWK Set, from `jwks_uri` or where its metadata says.
    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let uri = match &self.config.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover_jwks_uri().await?;
                trusted_url(&uri).map_err(|problem| format!("the issuer's jwks_uri {problem}"))?;
                uri
            }
        };
        self.get_json(&uri).await
    }

    /// `jwks_uri` from the issuer's metadata: RFC 8414's, then OpenID Connect's.
    async fn discover_jwks_uri(&self) -> Result<String, String> {
        #[derive(Deserialize)]
        struct Metadata {
            issuer: String,
            jwks_uri: Option<String>,
        }
        let mut last = String::new();
        for url in metadata_urls(&self.config.issuer)? {
            match self.get_json::<Metadata>(&url).await {
                // The metadata must be the issuer's own (RFC 8414 §3.3).
                Ok(metadata) if metadata.issuer != self.config.issuer => {
                    return Err(format!("{url} names another issuer"));
                }
                Ok(metadata) => {
                    return metadata
                        .jwks_uri
                        .ok_or_else(|| format!("{url} names no jwks_uri"));
                }
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|error| format!("{url}: {error}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        response
            .json()
            .await
            .map_err(|error| format!("{url}: {error}"))
    }
}

/// Why the keys cannot be trusted from `url`: only `https`, or `http` to this machine
/// (a network could change the keys on their way).
fn trusted_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|error| format!("is not a URL: {error}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "must be an `https://` URL (or `http://` to this machine): `{url}`"
        )),
    }
}

/// The key of `set` that `kid` names, or its only key when the token names none.
fn find(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

/// Where an issuer's metadata may be: RFC 8414's well-known location (inserted
/// before the issuer's path), then OpenID Connect's (appended to it).
fn metadata_urls(issuer: &str) -> Result<[String; 2], String> {
    let parsed =
        url::Url::parse(issuer).map_err(|error| format!("the issuer is not a URL: {error}"))?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    Ok([
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_under_the_audiences_origin_and_names_the_issuer() {
        let mut config = JwtAuth::new("https://auth.example.com", "https://gw.example.com/mcp");
        config.scopes = vec!["mcp:tools".into()];
        let verifier = Verifier::new(config).unwrap();
        assert_eq!(
            verifier.metadata_path,
            "/.well-known/oauth-protected-resource/mcp"
        );
        let document: serde_json::Value = serde_json::from_str(verifier.metadata()).unwrap();
        assert_eq!(document["resource"], "https://gw.example.com/mcp");
        assert_eq!(
            document["authorization_servers"][0],
            "https://auth.example.com"
        );
        assert_eq!(document["scopes_supported"][0], "mcp:tools");
        assert_eq!(
            verifier.challenge(&Refusal::Invalid("expired".into())),
            "Bearer resource_metadata=\"https://gw.example.com/.well-known/oauth-protected-resource/mcp\", \
             error=\"invalid_token\", scope=\"mcp:tools\""
        );
    }

    #[test]
    fn keys_come_over_https_or_from_this_machine() {
        assert!(trusted_url("https://auth.example.com/jwks").is_ok());
        assert!(trusted_url("http://127.0.0.1:8080/jwks").is_ok());
        assert!(trusted_url("http://localhost/jwks").is_ok());
        let refused = Verifier::new(JwtAuth::new("http://auth.example.com", "https://gw/mcp"));
        assert!(
            refused
                .err()
                .unwrap()
                .contains("`issuer` must be an `https://` URL")
        );
    }

    #[test]
    fn an_issuers_metadata_is_looked_for_where_both_discoveries_put_it() {
        assert_eq!(
            metadata_urls("https://auth.example.com/tenant/").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant",
                "https://auth.example.com/tenant/.well-known/openid-configuration",
            ]
        );
    }
}
