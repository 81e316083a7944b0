//! `oauth_resource`: the RFC 8707 `resource` a login asks for, instead of the one the
//! server's Protected Resource Metadata names.
//!
//! rmcp sends, on the authorization request, the token exchange and every refresh,
//! the resource its discovery found, else its manager's base URL, and has no way to
//! set another. So a login with an override is made by a manager whose base URL is
//! the configured resource, given the metadata discovered at the server's URL (whose
//! Protected Resource Metadata names its own resource): discovery is not run again
//! at the configured resource, which need not serve anything.
//!
//! The resource is sent as a URL parser writes it: `https://api.example.com`
//! becomes `https://api.example.com/`. rmcp derives which addresses its requests may
//! reach from the base URL (loopback and private ones only for a resource that is
//! one), so with an override that policy follows the configured resource: a public
//! resource cannot be logged in to through an authorization server on a private
//! address.

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};

/// A manager for `resource`, with the metadata `discovered` at the server's URL.
pub(crate) async fn manager_with(
    discovered: AuthorizationMetadata,
    resource: &str,
) -> Result<AuthorizationManager, AuthError> {
    let mut manager = AuthorizationManager::new_allowing_private_addresses(resource).await?;
    manager.set_metadata(discovered);
    Ok(manager)
}

/// A manager for `resource`, given `at_server`, a manager for the server's URL that
/// has not discovered anything yet: it discovers the metadata (as rmcp's
/// `initialize_from_store` would), and the new manager uses it.
///
/// # Cancel safety
///
/// Dropping the future abandons the discovery.
pub(crate) async fn manager_for(
    at_server: AuthorizationManager,
    resource: &str,
) -> Result<AuthorizationManager, AuthError> {
    let discovered = at_server.resolve_metadata().await?.metadata;
    manager_with(discovered, resource).await
}
