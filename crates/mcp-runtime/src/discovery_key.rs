//! The keys under which startups share what they learn of a server: the discovery key
//! of a shared `tools/list` ([`crate::shared_listing`]) and the era key of a
//! remembered protocol era ([`crate::protocol_era`]). Each is a digest of a startup's
//! inputs: the host's discovery scope, the server's name, how it is reached (what
//! [`KeyInputs`] writes: the transport's concern), where it runs, what the client
//! offers, and, for the keys that cover them, the credentials it sends.

use std::time::SystemTime;

use rmcp::model::ClientConfig;
use sha2::{Digest, Sha256};

use crate::config::{Environment, Protocol};

/// The discovery scope used when the host names none.
pub const DEFAULT_SCOPE: &str = "default";

/// How a server is reached, as the inputs of a key: each input written with `field`,
/// as much of them as `detail` says.
pub(crate) trait KeyInputs {
    fn key_fields(&self, detail: Detail, field: &mut dyn FnMut(&[u8]));

    /// Whether the era of this endpoint is worth keeping across processes: a local
    /// server's, found by a probe, and not a remote one's, found from one `POST`.
    fn keeps_era_on_disk(&self) -> bool;
}

/// How much of a startup's inputs a key covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detail {
    /// All of them, the credentials an HTTP server is sent included (its bearer token
    /// and sensitive headers).
    WithCredentials,
    /// All but the credentials an HTTP server is sent. A local server's environment is
    /// kept: it is the server's own configuration, not the caller's identity.
    WithoutCredentials,
    /// Only what may be written to disk, even as a digest: nothing that may be a
    /// credential. A local server's environment counts by its variables' names alone,
    /// an HTTP server's headers by theirs.
    OnDisk,
}

/// The account and the login a stored login stands for, as a digest (see
/// [`crate::auth::account`], invariant 3).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct LoginIdentity(pub(crate) [u8; 32]);

impl std::fmt::Debug for LoginIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let start = hex::encode(&self.0[..4]);
        write!(f, "LoginIdentity({start}…)")
    }
}

/// What a runtime needs to know of a stored login, read once when a server starts:
/// which account it is, and whether it has run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StoredLogin {
    /// Its identity, when it has one (invariant 3).
    pub(crate) identity: Option<LoginIdentity>,
    /// When its access token expires, when the token response said.
    pub(crate) expires_at: Option<SystemTime>,
    /// Whether a refresh token can renew it.
    pub(crate) renewable: bool,
}

impl StoredLogin {
    /// Whether the access token is past its expiry at `now` and nothing can renew
    /// it: the server needs a new login at its next start.
    pub(crate) fn is_expired_at(&self, now: SystemTime) -> bool {
        !self.renewable && self.expires_at.is_some_and(|at| at <= now)
    }
}

/// The identity of a server configuration whose era is remembered, as a digest
/// (see [`crate::protocol_era`], invariant 1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct EraKey(pub(crate) [u8; 32]);

/// The identity of a startup's discovery inputs, as a digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct DiscoveryKey(pub(crate) [u8; 32]);

impl DiscoveryKey {
    /// The key of a startup offering `offered` (the `initialize` parameters, the
    /// host's capabilities in them) for `server` in `scope`, reached through
    /// `endpoint`, run in `environment`, with the OAuth login `login` when it has one.
    pub(crate) fn new(
        offered: &ClientConfig,
        scope: &str,
        server: &str,
        endpoint: &dyn KeyInputs,
        environment: &Environment,
        login: Option<&LoginIdentity>,
    ) -> Self {
        let offered = serde_json::to_vec(offered).expect("client config serializes");
        Self(inputs_digest(
            b"mcp-runtime discovery key v1",
            scope,
            server,
            endpoint,
            environment,
            &offered,
            Credentials::Included(login),
        ))
    }

    /// The key under which a listing the server granted as `"public"` is found: the
    /// same inputs as [`DiscoveryKey::new`] but the credentials (the bearer token and
    /// the headers marked sensitive: `env_http_headers` and credential headers, and the
    /// OAuth login).
    /// A stdio server's inputs are all kept: its environment is its own configuration,
    /// not the caller's identity.
    pub(crate) fn public(
        offered: &ClientConfig,
        scope: &str,
        server: &str,
        endpoint: &dyn KeyInputs,
        environment: &Environment,
    ) -> Self {
        let offered = serde_json::to_vec(offered).expect("client config serializes");
        Self(inputs_digest(
            b"mcp-runtime public discovery key v1",
            scope,
            server,
            endpoint,
            environment,
            &offered,
            Credentials::Left,
        ))
    }

    /// The key under which the protocol era of the same startup is remembered: the
    /// same inputs without the protocol version offered (see [`crate::protocol_era`]).
    pub(crate) fn era(
        offered: &ClientConfig,
        scope: &str,
        server: &str,
        endpoint: &dyn KeyInputs,
        environment: &Environment,
    ) -> EraKey {
        let key = EraKeyOf {
            offered,
            scope,
            server,
            endpoint,
            environment,
        };
        key.digest(b"mcp-runtime era key v1", Credentials::Included(None))
    }
}

/// The name under which the era of the same startup is kept on disk, across
/// processes (see [`crate::protocol_era::EraCache`]): the inputs of
/// [`DiscoveryKey::era`] without any that may be a credential ([`Detail::OnDisk`]).
pub(crate) fn era_on_disk(
    offered: &ClientConfig,
    scope: &str,
    server: &str,
    endpoint: &dyn KeyInputs,
    environment: &Environment,
) -> EraKey {
    let key = EraKeyOf {
        offered,
        scope,
        server,
        endpoint,
        environment,
    };
    key.digest(b"mcp-runtime era cache key v1", Credentials::OnDisk)
}

/// The inputs of an era key.
struct EraKeyOf<'a> {
    offered: &'a ClientConfig,
    scope: &'a str,
    server: &'a str,
    endpoint: &'a dyn KeyInputs,
    environment: &'a Environment,
}

impl EraKeyOf<'_> {
    /// The digest of these inputs under `tag`, covering `credentials`, with what the
    /// client offers but the protocol version, which is what the probe finds out.
    fn digest(&self, tag: &[u8], credentials: Credentials<'_>) -> EraKey {
        let mut offered = serde_json::to_value(self.offered).expect("client config serializes");
        if let Some(offered) = offered.as_object_mut() {
            offered.remove("protocolVersion");
        }
        debug_assert!(
            offered.get("capabilities").is_some(),
            "the era key keeps the client's capabilities and info"
        );
        let offered = serde_json::to_vec(&offered).expect("client config serializes");
        EraKey(inputs_digest(
            tag,
            self.scope,
            self.server,
            self.endpoint,
            self.environment,
            &offered,
            credentials,
        ))
    }
}

/// Whether a key covers the credentials a startup sends: its bearer token, its
/// sensitive headers and its OAuth login's identity; or covers only what may be
/// written to disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Credentials<'a> {
    Included(Option<&'a LoginIdentity>),
    Left,
    OnDisk,
}

/// The digest of a startup's discovery inputs (invariant 1), under `tag`, with
/// `offered`: what the client says of itself; with or without its `credentials`.
fn inputs_digest(
    tag: &[u8],
    scope: &str,
    server: &str,
    endpoint: &dyn KeyInputs,
    environment: &Environment,
    offered: &[u8],
    credentials: Credentials<'_>,
) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(tag);
    field(scope.as_bytes());
    field(server.as_bytes());
    match environment {
        Environment::Local => field(b"local"),
        Environment::Named(name) => {
            field(b"named");
            field(name.as_bytes());
        }
    }
    endpoint.key_fields(
        match credentials {
            Credentials::Included(_) => Detail::WithCredentials,
            Credentials::Left => Detail::WithoutCredentials,
            Credentials::OnDisk => Detail::OnDisk,
        },
        &mut field,
    );
    if let Credentials::Included(login) = credentials {
        match login {
            Some(login) => {
                field(b"oauth login");
                field(&login.0);
            }
            None => field(b"<no login>"),
        }
    }
    field(offered);
    hasher.finalize().into()
}

impl DiscoveryKey {
    /// This key for a startup whose `protocol` setting is as given: a pinned revision
    /// changes what the server is offered, so it is part of the inputs; `auto` leaves
    /// the key as it is.
    pub(crate) fn with_protocol(self, protocol: Protocol) -> Self {
        if protocol == Protocol::Auto {
            return self;
        }
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        hasher.update(protocol.as_str().as_bytes());
        Self(hasher.finalize().into())
    }
}
