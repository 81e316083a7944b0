//! rmcp's OAuth client as both a login ([`crate::auth`]) and the HTTP transport that
//! sends a login's tokens use it: the name of one of its errors, and the manager of a
//! server whose resource is configured ([`resource`]).
//!
//! They live below both, so that neither the login nor the transport imports the
//! other for them.

pub(crate) mod resource;

use rmcp::transport::auth::AuthError;

/// The name of `error`'s variant, as its `Debug` begins: what a message or a log line
/// may say of an error whose text may quote what an authorization server answered.
pub(crate) fn error_name(error: &AuthError) -> &'static str {
    match error {
        AuthError::AuthorizationRequired => "AuthorizationRequired",
        AuthError::AuthorizationFailed(_) => "AuthorizationFailed",
        AuthError::TokenExchangeFailed(_) => "TokenExchangeFailed",
        AuthError::TokenRefreshFailed(_) => "TokenRefreshFailed",
        AuthError::TokenRefreshRejected(_) => "TokenRefreshRejected",
        AuthError::CredentialStoreError(_) => "CredentialStoreError",
        AuthError::HttpError(_) => "HttpError",
        AuthError::OAuthError(_) => "OAuthError",
        AuthError::MetadataError(_) => "MetadataError",
        AuthError::DiscoveryRequestFailed { .. } => "DiscoveryRequestFailed",
        AuthError::ProtectedResourceMetadataInvalid { .. } => "ProtectedResourceMetadataInvalid",
        AuthError::AuthorizationServersUnavailable { .. } => "AuthorizationServersUnavailable",
        AuthError::PkceUnsupported => "PkceUnsupported",
        AuthError::UrlError(_) => "UrlError",
        AuthError::NoAuthorizationSupport => "NoAuthorizationSupport",
        AuthError::InternalError(_) => "InternalError",
        AuthError::InvalidTokenType(_) => "InvalidTokenType",
        AuthError::TokenExpired => "TokenExpired",
        AuthError::InvalidScope(_) => "InvalidScope",
        AuthError::RegistrationFailed(_) => "RegistrationFailed",
        AuthError::InsufficientScope { .. } => "InsufficientScope",
        AuthError::AuthorizationServerMismatch { .. } => "AuthorizationServerMismatch",
        AuthError::AuthorizationServerMissingIssuer { .. } => "AuthorizationServerMissingIssuer",
        AuthError::ClientCredentialsError(_) => "ClientCredentialsError",
        _ => "AuthError",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The code (comments left out) of every file under `src/<module>` and of
    /// `src/<module>.rs`.
    fn code_of(module: &str) -> Vec<(String, String)> {
        fn walk(path: &Path, files: &mut Vec<(String, String)>) {
            if path.is_dir() {
                for entry in std::fs::read_dir(path).unwrap() {
                    walk(&entry.unwrap().path(), files);
                }
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let code: String = std::fs::read_to_string(path)
                    .unwrap()
                    .lines()
                    .filter(|line| !line.trim_start().starts_with("//"))
                    .map(|line| format!("{line}\n"))
                    .collect();
                files.push((path.display().to_string(), code));
            }
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src.join(module), &mut files);
        walk(&src.join(format!("{module}.rs")), &mut files);
        assert!(!files.is_empty(), "no code under `{module}`");
        files
    }

    #[test]
    fn neither_the_login_nor_the_transport_imports_the_other() {
        for (module, other) in [("auth", "crate::transport"), ("transport", "crate::auth")] {
            for (file, code) in code_of(module) {
                assert!(!code.contains(other), "{file} uses `{other}`");
            }
        }
    }
}
