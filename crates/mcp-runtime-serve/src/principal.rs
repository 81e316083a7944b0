//! Who a client is, as the HTTP front authenticated it: the key its sessionless
//! upstream connections are kept under. Never a credential.

/// The authenticated client of an HTTP request, in the request's extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Principal(pub(crate) String);

/// The principal of a request whose rmcp extensions are `extensions`: the HTTP
/// request's, else (stdio, or no authentication) `local`.
pub(crate) fn of(extensions: &rmcp::model::Extensions) -> String {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .map_or_else(|| "local".to_owned(), |principal| principal.0.clone())
}
