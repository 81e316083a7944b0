//! Where OAuth tokens are kept between runs: the OS keyring, or a `0600` file.
//!
//! A token is stored per server *identity*, a [`StoreKey`]: the server's URL, the OAuth
//! client and the resource the token is for (RFC 8707). The key's [`name`](StoreKey::name)
//! is a hash of the three, so an entry's name says nothing about the token and has the
//! same length whatever the URL.
//!
//! # Why rmcp's `CredentialStore`, not a trait of our own
//!
//! rmcp's `AuthorizationManager` reads and writes tokens through its
//! [`CredentialStore`] trait (`load`, `save`, `clear` of one identity's
//! [`StoredCredentials`], plus an optional refresh guard). That is exactly what a host
//! that keeps logins its own way needs to supply, so the stores here implement it and
//! a host with its own storage implements it too: a second trait would only need an
//! adapter. One [`CredentialStore`] value is one identity: [`Store::credentials`]
//! binds a key to the chosen backend.
//!
//! # Choosing the backend
//!
//! [`Store::open`] follows `mcp_oauth_credentials_store`: `file` uses [`FileStore`];
//! `keyring` uses [`KeyringStore`] and fails when this build has no keyring backend;
//! `auto` uses the keyring only when a probe (a read of an entry nobody writes, which
//! must answer "no such entry"; nothing is written) succeeds within the probe timeout ([`StoreOptions::with_probe_timeout`]), else the file. The
//! probe matters: without a backend the `keyring` crate silently keeps secrets in
//! process memory, and a headless Linux machine (CI) has no Secret Service to answer.
//! The choice is made once per process and each backend sees only its own entries: a
//! login saved to the keyring is not found by a runtime that fell back to the file.
//!
//! Every operation of an entry runs on a blocking thread. Dropping its future leaves
//! the operation to finish there: a save happens whole or not at all (invariant 2).
//!
//! # Invariants
//!
//! 1. No token, refresh token or client secret appears in a `Debug` output, an error
//!    message or a log line of this module: `Debug` shows keys and paths only, and an
//!    error quoting a stored document gives a line and column, never its text. An
//!    OpenID Connect ID token is not stored at all: the account's subject is kept in
//!    its place (see `auth::account`).
//! 2. A [`CredentialStore::save`] either replaces the whole stored document or leaves it
//!    as it was: the file is rewritten through a temporary file and a rename, under an
//!    advisory lock that every process using the file takes for its read-modify-write.
//! 3. A refresh guard ([`CredentialStore::acquire_refresh_guard`]) is one lock per
//!    identity, shared by every process of the user (a lock file beside the token
//!    file, for the keyring too), and distinct from the lock of invariant 2, so `load`
//!    and `save` under the guard cannot deadlock with it. A refresher that loads after
//!    acquiring the guard sees any token saved by the previous holder, and so
//!    refreshes only a token that is still stale.
//!
//! rmcp 3.11's `AuthorizationManager::refresh_token` loads under the guard but does
//! not look at the loaded token's expiry before refreshing: with two runtimes racing,
//! the second still refreshes once more, with the first one's (rotated) refresh token.
//! A caller that wants a single refresh checks the expiry after acquiring the guard.

/// An entry whose operations block (the file, the keyring): its `CredentialStore`
/// ([`blocking_credential_store!`]) runs each one on a blocking thread.
trait BlockingEntry: Clone + Send + Sync + 'static {
    fn load_now(&self) -> Result<Option<StoredCredentials>, StoreError>;
    fn save_now(&self, credentials: StoredCredentials) -> Result<(), StoreError>;
    fn clear_now(&self) -> Result<(), StoreError>;
    /// The file whose lock coordinates the refreshes of this entry's identity.
    fn refresh_lock(&self) -> PathBuf;
}

/// rmcp's `CredentialStore` for a [`BlockingEntry`] type. A macro rather than a
/// blanket impl: the trait is rmcp's, and coherence forbids implementing it for every
/// type of a trait of this crate.
macro_rules! blocking_credential_store {
    ($entry:ty) => {
        #[async_trait::async_trait]
        impl rmcp::transport::auth::CredentialStore for $entry {
            async fn load(
                &self,
            ) -> Result<
                Option<rmcp::transport::auth::StoredCredentials>,
                rmcp::transport::auth::AuthError,
            > {
                let entry = self.clone();
                $crate::auth::store::blocking(move || {
                    $crate::auth::store::BlockingEntry::load_now(&entry)
                })
                .await
            }

            async fn save(
                &self,
                credentials: rmcp::transport::auth::StoredCredentials,
            ) -> Result<(), rmcp::transport::auth::AuthError> {
                let entry = self.clone();
                $crate::auth::store::blocking(move || {
                    // The account is kept, the ID token is not (see `auth::account`).
                    let previous = $crate::auth::store::BlockingEntry::load_now(&entry)
                        .ok()
                        .flatten();
                    let credentials =
                        $crate::auth::account::for_storage(previous.as_ref(), credentials);
                    $crate::auth::store::BlockingEntry::save_now(&entry, credentials)
                })
                .await
            }

            async fn clear(&self) -> Result<(), rmcp::transport::auth::AuthError> {
                let entry = self.clone();
                $crate::auth::store::blocking(move || {
                    $crate::auth::store::BlockingEntry::clear_now(&entry)
                })
                .await
            }

            async fn acquire_refresh_guard(
                &self,
            ) -> Result<
                Option<rmcp::transport::auth::CredentialRefreshGuard>,
                rmcp::transport::auth::AuthError,
            > {
                let path = $crate::auth::store::BlockingEntry::refresh_lock(self);
                let lock = $crate::auth::store::blocking(move || {
                    $crate::auth::store::file::lock_file(&path)
                })
                .await?;
                Ok(Some(rmcp::transport::auth::CredentialRefreshGuard::new(
                    lock,
                )))
            }
        }
    };
}

mod file;
#[cfg(feature = "keyring")]
mod os_keyring;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use self::file::{FileEntry, FileStore};
#[cfg(feature = "keyring")]
pub use self::os_keyring::{KeyringEntry, KeyringStore};
use crate::config::CredentialsStore;

/// Tells whether the OS keyring can be used, for `mcp_oauth_credentials_store = "auto"`.
///
/// In a build without the `keyring` feature nothing probes: `auto` is the file.
///
/// Called on a blocking thread, and abandoned after the probe timeout
/// ([`StoreOptions::with_probe_timeout`]).
pub trait KeyringProbe: Send + Sync + fmt::Debug + 'static {
    /// `Ok` when the keyring answers.
    ///
    /// # Errors
    ///
    /// Why the keyring cannot be used, quoting no stored value.
    fn probe(&self) -> Result<(), StoreError>;
}

/// One server identity whose tokens are stored together: server URL, OAuth client,
/// resource.
///
/// `client_id` is `None` for a client that registers itself (Dynamic Client
/// Registration): its id is decided by the registration and kept in the stored
/// credentials, which is where rmcp reads it from. A configured client id (or a Client
/// ID Metadata Document URL) is part of the key, so changing it in the configuration
/// never hands one client's tokens to another.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoreKey {
    server_url: String,
    client_id: Option<String>,
    resource: String,
}

impl StoreKey {
    /// The identity of `server_url` used through `client_id` for `resource`; a
    /// `resource` of `None` is the server URL itself (RFC 8707's default, which
    /// `oauth_resource` overrides). The URL's fragment is not part of the identity.
    pub fn new(server_url: &url::Url, client_id: Option<&str>, resource: Option<&str>) -> Self {
        let mut url = server_url.clone();
        url.set_fragment(None);
        let server_url = url.to_string();
        StoreKey {
            resource: resource.map_or_else(|| server_url.clone(), str::to_owned),
            server_url,
            client_id: client_id.map(str::to_owned),
        }
    }

    /// The server's URL, as it is stored (it may hold a credential: show it through
    /// [`crate::redact::url`]).
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The configured client id, `None` for a dynamically registered client.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The resource the tokens are for.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The stable name of this identity: the keyring entry's name and the file's map
    /// key, `oauth-` and 32 hexadecimal digits of a SHA-256 over the three parts.
    pub fn name(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(b"mcp-runtime oauth store key v1\0");
        let client = self.client_id.as_deref();
        for part in [Some(self.server_url.as_str()), client, Some(&self.resource)] {
            match part {
                None => hash.update([0u8]),
                Some(text) => {
                    hash.update([1u8]);
                    hash.update((text.len() as u64).to_be_bytes());
                    hash.update(text.as_bytes());
                }
            }
        }
        let digest = hash.finalize();
        let hex = hex::encode(&digest[..16]);
        format!("oauth-{hex}")
    }
}

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreKey")
            .field("server_url", &crate::redact::url(&self.server_url))
            .field("client_id", &self.client_id)
            .field("resource", &crate::redact::url(&self.resource))
            .finish()
    }
}

/// What one identity's entry holds, in the file and in the keyring: the key's parts
/// beside the credentials, so that an entry can be listed and checked.
#[derive(Clone, Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    key: StoreKey,
    credentials: StoredCredentials,
}

/// A token store could not be read or written.
///
/// No message quotes a stored value (module invariant 1).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Neither `XDG_CONFIG_HOME` nor `HOME` names a directory.
    #[error(
        "cannot find the configuration directory for the OAuth token file: set `HOME` or `XDG_CONFIG_HOME`, or use `mcp_oauth_credentials_store = \"keyring\"`"
    )]
    NoConfigDir,
    /// A file operation failed.
    #[error("could not {action} `{}`", path.display())]
    Io {
        /// What was being done (`read`, `write`, `lock`, …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The token file is not a JSON document of the expected form.
    #[error(
        "the OAuth token file `{}` is damaged (line {line}, column {column}): delete it and log in again",
        path.display()
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Where reading stopped.
        line: usize,
        /// Where reading stopped.
        column: usize,
    },
    /// The token file was written by a newer mcp-runtime.
    #[error(
        "the OAuth token file `{}` has format version {version}, newer than this mcp-runtime reads (1): upgrade mcp-runtime",
        path.display()
    )]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// Its format version.
        version: u64,
    },
    /// The token file belongs to another user.
    #[error(
        "the OAuth token file `{}` belongs to another user (uid {owner}): remove it, or set `XDG_CONFIG_HOME` to a directory of your own",
        path.display()
    )]
    NotOwned {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// The OS keyring cannot be used here.
    #[error("no usable OS keyring: {reason} (use `mcp_oauth_credentials_store = \"file\"`)")]
    KeyringUnavailable {
        /// Why, in words that quote no stored value.
        reason: String,
    },
    /// The OS keyring refused an operation on an entry.
    #[error("the OS keyring could not {action} entry `{name}`: {reason}")]
    Keyring {
        /// What was being done (`read`, `write`, `delete`).
        action: &'static str,
        /// The entry's name ([`StoreKey::name`]).
        name: String,
        /// Why, in words that quote no stored value.
        reason: String,
    },
    /// A store's failure as it came back through rmcp's [`CredentialStore`], which
    /// carries a message alone: this crate's own store's error, its causes written
    /// into it (see `From<StoreError> for AuthError`), or a host's store's.
    #[error("{reason}")]
    Reported {
        /// What the store said.
        reason: String,
    },
}

impl StoreError {
    /// The failure `error` reports, from a store's operation: its message, without
    /// rmcp's words around it; an error of another kind than a store's is named.
    pub(crate) fn reported(error: AuthError) -> Self {
        let reason = match error {
            AuthError::CredentialStoreError(reason) => reason,
            other => format!(
                "the token store failed (`{}`)",
                crate::oauth_client::error_name(&other)
            ),
        };
        Self::Reported { reason }
    }
}

/// rmcp's error holds a message only: the causes are written into it, so that the
/// system's reason (`Permission denied`) is not lost. None of them quotes a stored value.
impl From<StoreError> for AuthError {
    fn from(error: StoreError) -> Self {
        let mut message = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(error) = cause {
            message.push_str(": ");
            message.push_str(&error.to_string());
            cause = error.source();
        }
        AuthError::CredentialStoreError(message)
    }
}

/// Which backend a [`Store`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// The OS keyring ([`KeyringStore`]).
    Keyring,
    /// The token file ([`FileStore`]).
    File,
}

/// How [`Store::open`] finds its file and probes the keyring.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    file: Option<PathBuf>,
    #[cfg_attr(not(feature = "keyring"), allow(dead_code))]
    probe: Option<Arc<dyn KeyringProbe>>,
    probe_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            file: None,
            probe: None,
            probe_timeout: Self::DEFAULT_PROBE_TIMEOUT,
        }
    }
}

impl StoreOptions {
    /// How long `auto` waits for the keyring to answer its probe.
    pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

    /// The token file at `path` instead of [`FileStore::default_path`] (its directory
    /// also holds the refresh locks, for the keyring too).
    pub fn with_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Probe the keyring with `probe` instead of a real read.
    pub fn with_probe(mut self, probe: Arc<dyn KeyringProbe>) -> Self {
        self.probe = Some(probe);
        self
    }

    /// Wait at most `timeout` for the probe.
    pub fn with_probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }
}

/// The token store chosen for this process: open it once, then hand each server its
/// identity's [`CredentialStore`] through [`Store::credentials`].
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
}

#[derive(Debug, Clone)]
enum Backend {
    #[cfg(feature = "keyring")]
    Keyring(KeyringStore),
    File(FileStore),
}

impl Store {
    /// The store `choice` names (`mcp_oauth_credentials_store`), probing the keyring
    /// for `auto` (module docs, "Choosing the backend").
    ///
    /// # Errors
    ///
    /// [`StoreError::NoConfigDir`] when no file path is given and none can be found;
    /// [`StoreError::KeyringUnavailable`] for `keyring` in a build without a backend.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the choice; a probe already running finishes on
    /// its own thread and deletes its entry by itself.
    pub async fn open(
        choice: CredentialsStore,
        options: StoreOptions,
    ) -> Result<Store, StoreError> {
        let path = match options.file {
            Some(path) => path,
            None => FileStore::default_path()?,
        };
        let file = FileStore::at(path);
        #[cfg(not(feature = "keyring"))]
        let backend = match choice {
            CredentialsStore::File | CredentialsStore::Auto => Backend::File(file),
            CredentialsStore::Keyring => {
                return Err(StoreError::KeyringUnavailable {
                    reason: "this build of mcp-runtime leaves out the `keyring` feature".to_owned(),
                });
            }
        };
        #[cfg(feature = "keyring")]
        let keyring = || KeyringStore::new(file.lock_dir());
        #[cfg(feature = "keyring")]
        let backend = match choice {
            CredentialsStore::File => Backend::File(file),
            CredentialsStore::Keyring => Backend::Keyring(keyring()?),
            CredentialsStore::Auto => {
                let probe = options
                    .probe
                    .unwrap_or_else(|| Arc::new(os_keyring::SystemProbe));
                let usable = probe_within(probe, options.probe_timeout)
                    .await
                    .and_then(|()| keyring().map_err(|error| error.to_string()));
                match usable {
                    Ok(store) => Backend::Keyring(store),
                    Err(reason) => {
                        tracing::info!(
                            %reason,
                            path = %file.path().display(),
                            "no usable OS keyring: OAuth tokens go to the token file"
                        );
                        Backend::File(file)
                    }
                }
            }
        };
        Ok(Store { backend })
    }

    /// Which backend this store uses.
    pub fn kind(&self) -> StoreKind {
        match self.backend {
            #[cfg(feature = "keyring")]
            Backend::Keyring(_) => StoreKind::Keyring,
            Backend::File(_) => StoreKind::File,
        }
    }

    /// The credentials of one identity, to give to rmcp's `AuthorizationManager`
    /// (`set_credential_store`) or to read and clear directly.
    pub fn credentials(&self, key: StoreKey) -> Arc<dyn CredentialStore> {
        match &self.backend {
            #[cfg(feature = "keyring")]
            Backend::Keyring(store) => Arc::new(store.entry(key)),
            Backend::File(store) => Arc::new(store.entry(key)),
        }
    }
}

/// Runs `probe` on a thread of its own, not `spawn_blocking`: a probe that never
/// answers must not hold up the shutdown of the tokio runtime. `Err` says why the
/// keyring is not usable.
#[cfg(feature = "keyring")]
async fn probe_within(probe: Arc<dyn KeyringProbe>, timeout: Duration) -> Result<(), String> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("mcp-runtime-keyring-probe".into())
        .spawn(move || {
            let _ = answer.send(probe.probe());
        })
        .map_err(|error| format!("could not start the keyring probe: {error}"))?;
    match tokio::time::timeout(timeout, answered).await {
        Ok(Ok(answer)) => answer.map_err(|error| error.to_string()),
        Ok(Err(_)) => Err("the keyring probe ended without an answer".into()),
        Err(_) => Err(format!(
            "the keyring probe did not answer within {timeout:?}"
        )),
    }
}

/// Runs a blocking store operation off the async threads; a panic in it is resumed
/// here.
async fn blocking<T: Send + 'static>(
    operation: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, AuthError> {
    match tokio::task::spawn_blocking(operation).await {
        Ok(result) => result.map_err(AuthError::from),
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(_) => Err(AuthError::CredentialStoreError(
            "the token store operation was cancelled by the runtime shutting down".into(),
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests;
