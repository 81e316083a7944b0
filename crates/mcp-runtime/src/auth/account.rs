//! Which account a stored login is for, and the identity under which runtimes of
//! one login may share a listing.
//!
//! An OAuth token response names the account only through OpenID Connect: an
//! `id_token` whose `sub` is the account's subject (OpenID Connect Core §2, §3.1.3.3).
//! mcp-runtime reads the `sub` and nothing else of it. The signature is not checked:
//! the token came straight from the token endpoint the client called, which OpenID
//! Connect Core §3.1.3.7 (6) accepts in place of the signature; its `iss` and `aud`
//! must still name the login's issuer and client, or the subject is not believed.
//! The subject is only ever used to tell accounts apart, never to authorize anything.
//!
//! Invariants:
//! 1. The token stores of mcp-runtime keep the subject, never the `id_token` (a
//!    signed statement about the person that another party would accept): before a
//!    save, [`for_storage`] takes the `sub` out of it into the token response's own
//!    field `mcp_runtime_account` and drops the `id_token`.
//! 2. A refresh that names no account continues the login it refreshes: the subject
//!    and the login id of the entry it replaces are kept when both are of the same
//!    client, issuer and refresh token (rmcp keeps the old refresh token when the
//!    response brings none). Anything else is taken for a new login: a new login id,
//!    and a subject only if the response names one. The store cannot tell a refresh
//!    that rotated the refresh token from a login as someone else, so it never
//!    guesses; such a refresh costs the sharing of listings with runtimes that read
//!    the entry before it, never a listing shared between two accounts.
//! 3. A [`LoginIdentity`] is a SHA-256 digest of the issuer, the client id, the
//!    resource and the account: its subject where the login names one, else the
//!    login id of the store entry (one login in one entry is one account). Neither a
//!    token nor anything derived from one is part of it. A login that has neither
//!    (a host's store holding a response without an `id_token`) has no identity, and
//!    its runtimes never share a listing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use oauth2::TokenResponse as _;
use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};
use sha2::{Digest as _, Sha256};

/// The token response field in which the stores keep the account's subject.
const ACCOUNT_FIELD: &str = "mcp_runtime_account";
/// The token response field in which the stores keep the login's random id.
const LOGIN_FIELD: &str = "mcp_runtime_login";
/// The token response field in which the stores keep the login's registration.
const REGISTRATION_FIELD: &str = super::registration::FIELD;
/// The OpenID Connect ID token field of a token response.
const ID_TOKEN_FIELD: &str = "id_token";

pub(crate) use crate::discovery_key::{LoginIdentity, StoredLogin};

impl StoredLogin {
    /// The login stored in `credentials` for `resource`; `None` when no token is
    /// stored (a registration alone, or nothing).
    pub(crate) fn of(credentials: &StoredCredentials, resource: &str) -> Option<Self> {
        let token = credentials.token_response.as_ref()?;
        let expires_at = match (credentials.token_received_at, token.expires_in()) {
            (Some(received), Some(lifetime)) => {
                Some(UNIX_EPOCH + Duration::from_secs(received) + lifetime)
            }
            _ => None,
        };
        Some(Self {
            identity: identity(credentials, resource),
            expires_at,
            renewable: token.refresh_token().is_some(),
        })
    }
}

/// The identity of the login in `credentials`, for `resource` (invariant 3).
pub(crate) fn identity(credentials: &StoredCredentials, resource: &str) -> Option<LoginIdentity> {
    let token = credentials.token_response.as_ref()?;
    let account = match subject(credentials) {
        Some(subject) => ("subject", subject),
        None => ("login", text_field(token, LOGIN_FIELD)?.to_owned()),
    };
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(b"mcp-runtime login identity v1");
    field(credentials.issuer.as_deref().unwrap_or_default().as_bytes());
    field(&[u8::from(credentials.issuer.is_some())]);
    field(credentials.client_id.as_bytes());
    field(resource.as_bytes());
    field(account.0.as_bytes());
    field(account.1.as_bytes());
    Some(LoginIdentity(hasher.finalize().into()))
}

/// The subject of the account the stored login is for: the one a store kept
/// (invariant 1), else the `sub` of an `id_token` a host's store kept whole.
pub(crate) fn subject(credentials: &StoredCredentials) -> Option<String> {
    let token = credentials.token_response.as_ref()?;
    text_field(token, ACCOUNT_FIELD)
        .map(str::to_owned)
        .or_else(|| id_token_subject(token, credentials.issuer.as_deref(), &credentials.client_id))
}

/// The `sub` of the `id_token` of `token`, when it has one whose `iss` is `issuer`
/// (when known) and whose `aud` names `client_id` (module docs).
pub(crate) fn id_token_subject(
    token: &OAuthTokenResponse,
    issuer: Option<&str>,
    client_id: &str,
) -> Option<String> {
    let id_token = text_field(token, ID_TOKEN_FIELD)?;
    let claims = id_token_claims(id_token)?;
    let named_issuer = claims.get("iss").and_then(serde_json::Value::as_str);
    if issuer.is_some_and(|issuer| named_issuer != Some(issuer)) {
        tracing::warn!(
            "the login's ID token names another issuer: its account is not taken from it"
        );
        return None;
    }
    let audience = match claims.get("aud") {
        Some(serde_json::Value::String(one)) => one == client_id,
        Some(serde_json::Value::Array(many)) => many.iter().any(|aud| aud == client_id),
        _ => false,
    };
    if !audience {
        tracing::warn!(
            "the login's ID token is not addressed to its client: its account is not taken from it"
        );
        return None;
    }
    claims
        .get("sub")
        .and_then(serde_json::Value::as_str)
        .filter(|sub| !sub.is_empty())
        .map(str::to_owned)
}

/// The claims of a compact JWS (`header.payload.signature`), unverified.
fn id_token_claims(jwt: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut parts = jwt.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        serde_json::Value::Object(claims) => Some(claims),
        _ => None,
    }
}

fn text_field<'a>(token: &'a OAuthTokenResponse, name: &str) -> Option<&'a str> {
    token
        .extra_fields()
        .0
        .get(name)
        .and_then(serde_json::Value::as_str)
}

/// `new`, as a token store of mcp-runtime keeps it after `previous` (invariants 1
/// and 2): the `id_token` replaced by its subject, the login id kept or made, and
/// the client's registration (see [`super::registration`]) kept while the client
/// and the issuer are the same.
pub(crate) fn for_storage(
    previous: Option<&StoredCredentials>,
    mut new: StoredCredentials,
) -> StoredCredentials {
    let Some(token) = new.token_response.as_mut() else {
        return new;
    };
    let named = id_token_subject(token, new.issuer.as_deref(), &new.client_id);
    let continued = previous
        .filter(|previous| {
            previous.client_id == new.client_id
                && previous.issuer == new.issuer
                && same_refresh_token(previous.token_response.as_ref(), Some(token))
        })
        .and_then(|previous| previous.token_response.as_ref());
    let kept = |name: &str| {
        text_field(token, name)
            .or_else(|| continued.and_then(|previous| text_field(previous, name)))
            .map(str::to_owned)
    };
    let account = named.or_else(|| kept(ACCOUNT_FIELD));
    let login = kept(LOGIN_FIELD).unwrap_or_else(new_login_id);
    // A registration belongs to the client at its issuer, whatever the tokens.
    let registration = previous
        .filter(|previous| previous.client_id == new.client_id && previous.issuer == new.issuer)
        .and_then(|previous| previous.token_response.as_ref())
        .and_then(|previous| previous.extra_fields().0.get(REGISTRATION_FIELD).cloned());
    let mut extra = token.extra_fields().clone();
    if let Some(registration) = registration {
        extra
            .0
            .entry(REGISTRATION_FIELD.to_owned())
            .or_insert(registration);
    }
    extra.0.remove(ID_TOKEN_FIELD);
    extra.0.remove(ACCOUNT_FIELD);
    if let Some(account) = account {
        extra.0.insert(ACCOUNT_FIELD.into(), account.into());
    }
    extra.0.insert(LOGIN_FIELD.into(), login.into());
    token.set_extra_fields(extra);
    new
}

/// Whether both responses hold the same refresh token (compared in memory only).
fn same_refresh_token(a: Option<&OAuthTokenResponse>, b: Option<&OAuthTokenResponse>) -> bool {
    let secret = |token: Option<&OAuthTokenResponse>| {
        token
            .and_then(|token| token.refresh_token())
            .map(|refresh| refresh.secret().clone())
    };
    matches!((secret(a), secret(b)), (Some(a), Some(b)) if a == b)
}

/// A random login id: 16 bytes in hexadecimal. Not a secret: it only tells logins
/// apart.
fn new_login_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No random source: the time still tells two logins apart in practice.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = nanos.to_le_bytes();
    }
    hex::encode(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use oauth2::{AccessToken, RefreshToken, basic::BasicTokenType};
    use rmcp::transport::auth::VendorExtraTokenFields;

    use super::*;

    /// An unsigned ID token (`alg: none`) with these claims.
    pub(crate) fn id_token(claims: serde_json::Value) -> String {
        let encode = |value: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
        };
        format!(
            "{}.{}.",
            encode(&serde_json::json!({"alg": "none"})),
            encode(&claims)
        )
    }

    /// Credentials of `client` at `issuer` with the access token `access`, the
    /// refresh token `refresh` and these extra fields.
    pub(crate) fn credentials(
        client: &str,
        access: &str,
        refresh: Option<&str>,
        extra: serde_json::Value,
    ) -> StoredCredentials {
        let mut fields = VendorExtraTokenFields::default();
        if let serde_json::Value::Object(extra) = extra {
            fields.0.extend(extra);
        }
        let mut token = OAuthTokenResponse::new(
            AccessToken::new(access.into()),
            BasicTokenType::Bearer,
            fields,
        );
        token.set_refresh_token(refresh.map(|r| RefreshToken::new(r.into())));
        token.set_expires_in(Some(&Duration::from_secs(3600)));
        StoredCredentials::new(client.into(), Some(token), vec![], Some(1_000_000))
            .with_issuer(Some("https://as.example".into()))
    }

    fn signed_in(sub: &str) -> serde_json::Value {
        serde_json::json!({ "id_token": id_token(serde_json::json!({
            "iss": "https://as.example", "aud": "client-1", "sub": sub,
        })) })
    }

    fn extra(credentials: &StoredCredentials) -> serde_json::Map<String, serde_json::Value> {
        let fields = &credentials
            .token_response
            .as_ref()
            .unwrap()
            .extra_fields()
            .0;
        fields.clone().into_iter().collect()
    }

    #[test]
    fn the_subject_is_taken_from_an_id_token_of_the_logins_issuer_and_client() {
        let alice = credentials("client-1", "at", Some("rt"), signed_in("alice"));
        assert_eq!(subject(&alice).as_deref(), Some("alice"));
        let for_another_client = credentials(
            "client-1",
            "at",
            None,
            serde_json::json!({ "id_token": id_token(serde_json::json!({
                "iss": "https://as.example", "aud": ["client-2"], "sub": "mallory",
            })) }),
        );
        assert_eq!(subject(&for_another_client), None);
        let of_another_issuer = credentials(
            "client-1",
            "at",
            None,
            serde_json::json!({ "id_token": id_token(serde_json::json!({
                "iss": "https://evil.example", "aud": "client-1", "sub": "mallory",
            })) }),
        );
        assert_eq!(subject(&of_another_issuer), None);
        let malformed = credentials(
            "client-1",
            "at",
            None,
            serde_json::json!({ "id_token": "not.a-jwt" }),
        );
        assert_eq!(subject(&malformed), None);
    }

    #[test]
    fn a_store_keeps_the_subject_and_never_the_id_token() {
        let stored = for_storage(
            None,
            credentials("client-1", "at", Some("rt"), signed_in("alice")),
        );
        let fields = extra(&stored);
        assert!(!fields.contains_key(ID_TOKEN_FIELD));
        assert_eq!(fields[ACCOUNT_FIELD], "alice");
        assert_eq!(subject(&stored).as_deref(), Some("alice"));
        assert!(fields[LOGIN_FIELD].as_str().unwrap().len() == 32);
    }

    #[test]
    fn a_refresh_that_names_no_account_continues_the_login_it_refreshes() {
        let login = for_storage(
            None,
            credentials("client-1", "at1", Some("rt"), signed_in("alice")),
        );
        // rmcp keeps the refresh token when the response brings none.
        let refreshed = for_storage(
            Some(&login),
            credentials("client-1", "at2", Some("rt"), serde_json::json!({})),
        );
        assert_eq!(subject(&refreshed).as_deref(), Some("alice"));
        assert_eq!(extra(&refreshed)[LOGIN_FIELD], extra(&login)[LOGIN_FIELD]);
        assert_eq!(
            identity(&refreshed, "https://mcp.example"),
            identity(&login, "https://mcp.example")
        );
        // A new login (another refresh token) is another login, whoever it is for.
        let again = for_storage(
            Some(&login),
            credentials("client-1", "at3", Some("rt-new"), serde_json::json!({})),
        );
        assert_eq!(subject(&again), None);
        assert_ne!(extra(&again)[LOGIN_FIELD], extra(&login)[LOGIN_FIELD]);
        // So is one of another client.
        let other_client = for_storage(
            Some(&login),
            credentials("client-2", "at4", Some("rt"), serde_json::json!({})),
        );
        assert_eq!(subject(&other_client), None);
        // Credentials saved again as loaded keep what they hold.
        let saved_again = for_storage(Some(&login), login.clone());
        assert_eq!(extra(&saved_again)[LOGIN_FIELD], extra(&login)[LOGIN_FIELD]);
    }

    #[test]
    fn the_identity_changes_with_each_part_and_holds_no_token() {
        let resource = "https://mcp.example/mcp";
        let base = credentials(
            "client-1",
            "at-secret",
            Some("rt-secret"),
            signed_in("alice"),
        );
        let of = |credentials: &StoredCredentials| identity(credentials, resource).unwrap();
        // The tokens are not part of it: another access token, the same identity.
        assert_eq!(
            of(&base),
            of(&credentials(
                "client-1",
                "at-other",
                Some("rt-other"),
                signed_in("alice")
            ))
        );
        assert_ne!(
            of(&base),
            of(&credentials("client-1", "at", None, signed_in("bob")))
        );
        assert_ne!(
            of(&base),
            identity(&base, "https://mcp.example/other").unwrap()
        );
        let other_issuer = base.clone().with_issuer(Some("https://as2.example".into()));
        // The ID token names the first issuer: the second login has no subject, and
        // without a login id no identity.
        assert_eq!(identity(&other_issuer, resource), None);
        let mut other_client = credentials(
            "client-2",
            "at",
            None,
            serde_json::json!({ ACCOUNT_FIELD: "alice" }),
        );
        assert_ne!(of(&base), of(&other_client));
        other_client.client_id = "client-1".into();
        assert_eq!(
            of(&base),
            of(&other_client),
            "the kept subject is the same account"
        );
        // Without a subject the login id stands for the account.
        let anonymous = |login: &str| {
            credentials(
                "client-1",
                "at",
                None,
                serde_json::json!({ LOGIN_FIELD: login }),
            )
        };
        assert_eq!(of(&anonymous("l1")), of(&anonymous("l1")));
        assert_ne!(of(&anonymous("l1")), of(&anonymous("l2")));
        assert_ne!(
            of(&anonymous("alice")),
            of(&base),
            "a login id is not a subject"
        );
        assert_eq!(
            identity(
                &credentials("client-1", "at", None, serde_json::json!({})),
                resource
            ),
            None
        );
        let debug = format!("{:?}", of(&base));
        assert!(!debug.contains("secret") && debug.len() < 30, "{debug}");
    }

    #[test]
    fn a_login_is_expired_once_its_token_is_past_expiry_with_nothing_to_renew_it() {
        let received = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let renewable = StoredLogin::of(
            &credentials("c", "at", Some("rt"), serde_json::json!({})),
            "r",
        )
        .unwrap();
        let last =
            StoredLogin::of(&credentials("c", "at", None, serde_json::json!({})), "r").unwrap();
        assert_eq!(last.expires_at, Some(received + Duration::from_secs(3600)));
        let later = received + Duration::from_secs(3600);
        assert!(!last.is_expired_at(later - Duration::from_secs(1)));
        assert!(last.is_expired_at(later));
        assert!(!renewable.is_expired_at(later), "a refresh token renews it");
    }
}
