//! The OAuth of a build without the `oauth` feature: types with no value, so that an
//! HTTP endpoint's `Option<OAuthStore>` and a connection's `Option<OAuthLogin>` are
//! always `None`, and the transports read them unchanged, with every branch that would
//! use a login proved unreachable by the compiler. A server whose configuration asks
//! for OAuth fails to start before it is reached, naming the feature.

use crate::transport::error::{HttpFailure, StartupError};

/// A server's OAuth settings: none in this build.
#[derive(Debug, Clone)]
pub(crate) enum OAuthStore {}

/// A server's OAuth credentials: none in this build.
#[derive(Debug, Clone)]
pub(crate) enum OAuthLogin {}

impl OAuthLogin {
    pub(crate) async fn start(
        _server: &str,
        _url: &str,
        oauth: &OAuthStore,
        _http: reqwest::Client,
    ) -> Result<Option<Self>, StartupError> {
        match *oauth {}
    }

    pub(crate) fn has_token(&self) -> bool {
        match *self {}
    }

    pub(crate) async fn token(&self) -> Result<Option<String>, HttpFailure> {
        match *self {}
    }

    pub(crate) async fn refreshed(
        &self,
        _sent: Option<&str>,
        _challenge: Option<&str>,
    ) -> Result<String, HttpFailure> {
        match *self {}
    }

    pub(crate) async fn refused(&self) -> HttpFailure {
        match *self {}
    }
}
