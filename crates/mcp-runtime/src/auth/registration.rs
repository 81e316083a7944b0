//! The client a login registered (Dynamic Client Registration, RFC 7591), kept with
//! the login so that the next login at the same authorization server uses it again
//! instead of registering another client.
//!
//! rmcp registers inside its authorization session and hands out the client id it
//! got, not the secret: it registers a public client (`token_endpoint_auth_method:
//! "none"`), which has none. What is kept is therefore the client id and the redirect
//! URI it was registered with, in the stored token response's field
//! `mcp_runtime_registration` (the token stores of mcp-runtime carry it over a
//! refresh, see [`super::account::for_storage`]).
//!
//! Invariants:
//! 1. A registration is kept only where the authorization server accepts public
//!    clients (`none` in `token_endpoint_auth_methods_supported`): elsewhere it may
//!    have made the client confidential, and its secret is not known here.
//! 2. A registration is used again only by a login at the issuer it was made at
//!    (a server that moved to another authorization server gets a new one there),
//!    with the same redirect URI: the loopback listener binds the port it names,
//!    and a login that cannot bind it registers anew.

use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The token response field in which a registration is kept.
pub(crate) const FIELD: &str = "mcp_runtime_registration";

/// A client registered for a login: not a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    /// The client id the authorization server issued.
    pub(crate) client_id: String,
    /// The redirect URI it was registered with.
    pub(crate) redirect_uri: String,
}

/// Whether a registration at the authorization server of `metadata` may be kept
/// (invariant 1).
pub(crate) fn keepable(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|methods| methods.iter().any(|method| method == "none"))
}

/// The registration kept in `credentials`, when it was made at `issuer` for the
/// client the credentials are of (invariant 2).
pub(crate) fn stored(
    credentials: &StoredCredentials,
    issuer: Option<&str>,
) -> Option<Registration> {
    if credentials.issuer.as_deref() != issuer {
        return None;
    }
    let value = credentials
        .token_response
        .as_ref()?
        .extra_fields()
        .0
        .get(FIELD)?;
    serde_json::from_value::<Registration>(value.clone())
        .ok()
        .filter(|registration| registration.client_id == credentials.client_id)
}

/// `credentials`, keeping `registration`.
pub(crate) fn keep(
    mut credentials: StoredCredentials,
    registration: &Registration,
) -> StoredCredentials {
    if let Some(token) = credentials.token_response.as_mut()
        && let Ok(value) = serde_json::to_value(registration)
    {
        let mut extra = token.extra_fields().clone();
        extra.0.insert(FIELD.into(), value);
        token.set_extra_fields(extra);
    }
    credentials
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(client_id: &str, issuer: &str) -> StoredCredentials {
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "at_1",
            "token_type": "Bearer",
        }))
        .unwrap();
        StoredCredentials::new(client_id.into(), Some(token), Vec::new(), None)
            .with_issuer(Some(issuer.into()))
    }

    #[test]
    fn a_registration_is_found_again_only_at_its_issuer_for_its_client() {
        let registration = Registration {
            client_id: "client_1".into(),
            redirect_uri: "http://127.0.0.1:4321/callback".into(),
        };
        let kept = keep(credentials("client_1", "https://as"), &registration);
        assert_eq!(
            stored(&kept, Some("https://as")),
            Some(registration.clone())
        );
        assert_eq!(stored(&kept, Some("https://other-as")), None);
        assert_eq!(stored(&kept, None), None);
        let mut other_client = kept.clone();
        other_client.client_id = "client_2".into();
        assert_eq!(stored(&other_client, Some("https://as")), None);
        assert_eq!(
            stored(&credentials("client_1", "https://as"), Some("https://as")),
            None
        );
    }

    #[test]
    fn a_refresh_saved_by_a_store_keeps_the_registration_of_its_client() {
        let registration = Registration {
            client_id: "client_1".into(),
            redirect_uri: "http://127.0.0.1:4321/callback".into(),
        };
        let login = keep(credentials("client_1", "https://as"), &registration);
        let refreshed =
            super::super::account::for_storage(Some(&login), credentials("client_1", "https://as"));
        assert_eq!(stored(&refreshed, Some("https://as")), Some(registration));
        let elsewhere = super::super::account::for_storage(
            Some(&login),
            credentials("client_9", "https://other-as"),
        );
        assert_eq!(stored(&elsewhere, Some("https://other-as")), None);
    }

    #[test]
    fn only_a_server_accepting_public_clients_keeps_a_registration() {
        let metadata = |methods: serde_json::Value| {
            serde_json::from_value::<AuthorizationMetadata>(serde_json::json!({
                "authorization_endpoint": "https://as/authorize",
                "token_endpoint": "https://as/token",
                "token_endpoint_auth_methods_supported": methods,
            }))
            .unwrap()
        };
        assert!(keepable(&metadata(serde_json::json!([
            "client_secret_basic",
            "none"
        ]))));
        assert!(!keepable(&metadata(serde_json::json!([
            "client_secret_basic"
        ]))));
        assert!(!keepable(&metadata(serde_json::Value::Null)));
    }
}
