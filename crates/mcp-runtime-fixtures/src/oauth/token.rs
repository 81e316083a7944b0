//! The token and revocation endpoints, and the client authentication both use.
//!
//! Invariants 1 to 3 of the [parent module](super) are kept here: codes and
//! refresh tokens leave the state when used, and revocation removes tokens.

use std::{collections::BTreeMap, time::Instant};

use base64::Engine as _;
use http::{HeaderMap, StatusCode, header};
use serde_json::json;

use super::{
    Answer, AuthServer, Entry, Refusal, State, Token, form_decode, has_scope, invalid_client,
    json_response, pkce_challenge, random, refuse, text,
};

/// The grant type of RFC 7523 §2.1: a workload's identity token as its grant.
pub(super) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl AuthServer {
    /// Client authentication at the token and revocation endpoints: HTTP Basic
    /// (`client_secret_basic`), a `client_secret` parameter
    /// (`client_secret_post`), or a public client's `client_id` (`none`).
    fn authenticate_client(
        &self,
        state: &State,
        headers: &HeaderMap,
        form: &BTreeMap<String, String>,
        entry: &mut Entry<'_>,
    ) -> Result<String, Refusal> {
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Basic "));
        let (id, secret, method) = if let Some(basic) = basic {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(basic.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok());
            let Some((id, secret)) = decoded.as_deref().and_then(|text| text.split_once(':'))
            else {
                return Err(invalid_client("the basic credentials are malformed"));
            };
            (
                form_decode(id),
                Some(form_decode(secret)),
                "client_secret_basic",
            )
        } else {
            let id = form
                .get("client_id")
                .cloned()
                .ok_or_else(|| invalid_client("no client authentication and no `client_id`"))?;
            match form.get("client_secret") {
                Some(secret) => (id, Some(secret.clone()), "client_secret_post"),
                None => (id, None, "none"),
            }
        };
        entry.client_id = Some(id.clone());
        entry.auth_method = Some(method);
        if !self
            .config
            .auth_methods
            .iter()
            .any(|allowed| allowed == method)
        {
            return Err(invalid_client(format!(
                "client authentication `{method}` is not accepted here"
            )));
        }
        let client = state
            .clients
            .get(&id)
            .ok_or_else(|| invalid_client(format!("unknown client `{id}`")))?;
        if client.secret != secret {
            return Err(invalid_client(format!(
                "client `{id}` did not authenticate as registered"
            )));
        }
        Ok(id)
    }

    pub(super) fn token(
        &self,
        headers: &HeaderMap,
        form: &BTreeMap<String, String>,
        entry: &mut Entry<'_>,
        now: Instant,
    ) -> Answer {
        let mut state = self.state.lock().unwrap();
        let client_id = self.authenticate_client(&state, headers, form, entry)?;
        let param = |name: &str| form.get(name).map(String::as_str);
        self.check_resource(param("resource"), false)?;
        let (scope, grant, account, with_refresh) = match param("grant_type") {
            Some("authorization_code") => {
                let presented = param("code").unwrap_or_default();
                let Some(code) = state.codes.remove(presented) else {
                    if let Some(grant) = state.spent_codes.get(presented).copied() {
                        state.revoke_grant(grant);
                    }
                    return Err(refuse(
                        "invalid_grant",
                        "the code is unknown or already used",
                    ));
                };
                state.spent_codes.insert(presented.into(), code.grant);
                if code.client_id != client_id
                    || param("redirect_uri") != Some(code.redirect_uri.as_str())
                {
                    return Err(refuse(
                        "invalid_grant",
                        "the code was issued to another client or redirect uri",
                    ));
                }
                if now >= code.expires {
                    return Err(refuse("invalid_grant", "the code expired"));
                }
                let verifier = param("code_verifier").unwrap_or_default();
                if pkce_challenge(verifier) != code.challenge {
                    return Err(refuse(
                        "invalid_grant",
                        "the PKCE `code_verifier` does not match the challenge",
                    ));
                }
                (code.scope, code.grant, code.account, true)
            }
            Some("refresh_token") => {
                let presented = param("refresh_token").unwrap_or_default();
                let Some(old) = state
                    .refresh
                    .get(presented)
                    .filter(|token| token.client_id == client_id)
                else {
                    return Err(refuse(
                        "invalid_grant",
                        "the refresh token is unknown, revoked or already used",
                    ));
                };
                let scope = match param("scope").filter(|scope| !scope.is_empty()) {
                    Some(narrower) if narrower.split(' ').all(|s| has_scope(&old.scope, s)) => {
                        narrower.into()
                    }
                    Some(_) => {
                        return Err(refuse(
                            "invalid_scope",
                            "a refresh may not widen the granted scope",
                        ));
                    }
                    None => old.scope.clone(),
                };
                let grant = old.grant;
                let account = old.account.clone();
                state.refresh.remove(presented);
                (scope, grant, account, true)
            }
            Some("client_credentials") => {
                if entry.auth_method == Some("none") {
                    return Err(refuse(
                        "unauthorized_client",
                        "client credentials are for confidential clients",
                    ));
                }
                let scope = self.granted_scope(param("scope"))?;
                let grant = state.next_grant;
                state.next_grant += 1;
                (scope, grant, String::new(), false)
            }
            Some(JWT_BEARER) => {
                let presented = param("assertion").unwrap_or_default();
                if !self
                    .config
                    .workloads
                    .iter()
                    .any(|workload| workload.id == client_id && workload.secret == presented)
                {
                    return Err(refuse(
                        "invalid_grant",
                        "the assertion is not an identity token this client is trusted with",
                    ));
                }
                let scope = self.granted_scope(param("scope"))?;
                let grant = state.next_grant;
                state.next_grant += 1;
                (scope, grant, String::new(), false)
            }
            Some(other) => {
                return Err(refuse(
                    "unsupported_grant_type",
                    format!("grant type `{other}` is not supported"),
                ));
            }
            None => return Err(refuse("invalid_request", "`grant_type` is missing")),
        };
        let access_token = random("at_");
        let issue = |expires| Token {
            client_id: client_id.clone(),
            account: account.clone(),
            scope: scope.clone(),
            resource: self.issued_resource().to_owned(),
            grant,
            expires,
        };
        state.access.insert(
            access_token.clone(),
            issue(Some(now + self.config.token_ttl)),
        );
        let mut body = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": self.config.token_ttl.as_secs(),
            "scope": scope,
        });
        if with_refresh {
            // A person's grant names its account, as OpenID Connect does.
            body["id_token"] = self.id_token(&client_id, &account).into();
            let refresh_token = random("rt_");
            state.refresh.insert(refresh_token.clone(), issue(None));
            body["refresh_token"] = refresh_token.into();
        }
        let mut response = json_response(StatusCode::OK, &body);
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
        Ok(response)
    }

    /// An OpenID Connect ID token naming `account` (`sub`) to `client_id`,
    /// unsigned (`alg: none`, which OpenID Connect Core §2 allows for an ID token
    /// that only the token endpoint returns).
    fn id_token(&self, client_id: &str, account: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let claims = json!({
            "iss": self.issuer,
            "sub": account,
            "aud": client_id,
            "iat": now,
            "exp": now + self.config.token_ttl.as_secs(),
        });
        let encode = |value: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
        };
        format!(
            "{}.{}.",
            encode(json!({"alg": "none", "typ": "JWT"})),
            encode(claims)
        )
    }

    /// RFC 7009: 200 whether or not the token was known; a token of another
    /// client is left alone.
    pub(super) fn revoke(
        &self,
        headers: &HeaderMap,
        form: &BTreeMap<String, String>,
        entry: &mut Entry<'_>,
    ) -> Answer {
        let mut state = self.state.lock().unwrap();
        let client_id = self.authenticate_client(&state, headers, form, entry)?;
        let presented = form
            .get("token")
            .ok_or_else(|| refuse("invalid_request", "`token` is missing"))?;
        if let Some(token) = state.refresh.get(presented)
            && token.client_id == client_id
        {
            let grant = token.grant;
            state.revoke_grant(grant);
        } else if state
            .access
            .get(presented)
            .is_some_and(|token| token.client_id == client_id)
        {
            state.access.remove(presented);
        }
        Ok(text(StatusCode::OK, ""))
    }
}
