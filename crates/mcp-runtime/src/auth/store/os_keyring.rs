//! The OS keyring as a token store: the Secret Service on Linux, the Keychain on
//! macOS (the `keyring` crate).
//!
//! Each identity is one entry of service `mcp-runtime`, named [`StoreKey::name`],
//! holding the same JSON record as the token file. The refresh locks are lock files
//! beside the token file (the keyring has no locks).
//!
//! 1. This module never uses the `keyring` crate's in-memory mock: a build whose
//!    target has no backend here, or whose default builder does not persist
//!    credentials, reports [`StoreError::KeyringUnavailable`].
//! 2. A keyring error is reported by its kind; the crate's `BadEncoding`, which holds
//!    the stored bytes, is never formatted.

use std::path::PathBuf;

use rmcp::transport::auth::StoredCredentials;

use super::file::refresh_lock_path;
use super::{KeyringProbe, Record, StoreError, StoreKey};

/// The keyring service name of every entry.
const SERVICE: &str = "mcp-runtime";

/// The real probe: reads an entry nobody writes, and takes "no such entry" for a
/// keyring that answers. It writes nothing: it runs in every process that starts a
/// remote server, and a write would touch the person's keyring each time (and may
/// ask them to allow it); a keyring that then refuses the login's write says so at
/// `mcp-runtime login`.
#[derive(Debug)]
pub(super) struct SystemProbe;

/// The entry the probe reads.
const PROBE_ENTRY: &str = "probe";

impl KeyringProbe for SystemProbe {
    fn probe(&self) -> Result<(), StoreError> {
        backend_persists()?;
        match entry(PROBE_ENTRY)?.get_password() {
            Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(error) => Err(keyring_error("read", PROBE_ENTRY, &error)),
        }
    }
}

/// The OS keyring: a [`CredentialStore`](rmcp::transport::auth::CredentialStore) per identity through [`KeyringStore::entry`].
#[derive(Debug, Clone)]
pub struct KeyringStore {
    lock_dir: PathBuf,
}

/// One identity's credentials in the OS keyring.
#[derive(Debug, Clone)]
pub struct KeyringEntry {
    store: KeyringStore,
    key: StoreKey,
}

impl KeyringStore {
    /// The OS keyring, with the refresh locks in `lock_dir`. Nothing is written until
    /// an entry is saved.
    ///
    /// # Errors
    ///
    /// [`StoreError::KeyringUnavailable`] when this build has no keyring backend for
    /// this system (module invariant 1).
    pub fn new(lock_dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        backend_persists()?;
        Ok(KeyringStore {
            lock_dir: lock_dir.into(),
        })
    }

    /// The credentials of `key` in the keyring.
    pub fn entry(&self, key: StoreKey) -> KeyringEntry {
        KeyringEntry {
            store: self.clone(),
            key,
        }
    }
}

impl KeyringEntry {
    /// The identity this entry stores.
    pub fn key(&self) -> &StoreKey {
        &self.key
    }
}

impl super::BlockingEntry for KeyringEntry {
    fn load_now(&self) -> Result<Option<StoredCredentials>, StoreError> {
        let name = self.key.name();
        let text = match entry(&name)?.get_password() {
            Ok(text) => text,
            Err(keyring::Error::NoEntry) => return Ok(None),
            Err(error) => return Err(keyring_error("read", &name, &error)),
        };
        let record: Record = serde_json::from_str(&text).map_err(|e| StoreError::Keyring {
            action: "read",
            name: name.clone(),
            reason: format!(
                "its value is not a token record (line {}, column {}): log in again",
                e.line(),
                e.column()
            ),
        })?;
        Ok((record.key == self.key).then_some(record.credentials))
    }

    fn save_now(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        let name = self.key.name();
        let record = Record {
            key: self.key.clone(),
            credentials,
        };
        let text = serde_json::to_string(&record).expect("a record always serializes");
        entry(&name)?
            .set_password(&text)
            .map_err(|e| keyring_error("write", &name, &e))
    }

    fn clear_now(&self) -> Result<(), StoreError> {
        let name = self.key.name();
        match entry(&name)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(error) => Err(keyring_error("delete", &name, &error)),
        }
    }

    fn refresh_lock(&self) -> PathBuf {
        refresh_lock_path(&self.store.lock_dir, &self.key)
    }
}

blocking_credential_store!(KeyringEntry);

/// Whether this build's default keyring backend keeps what it is given (invariant 1).
fn backend_persists() -> Result<(), StoreError> {
    use keyring::credential::CredentialPersistence;
    match keyring::default::default_credential_builder().persistence() {
        CredentialPersistence::UntilDelete | CredentialPersistence::UntilReboot => Ok(()),
        _ => Err(StoreError::KeyringUnavailable {
            reason: "this build has no keyring backend for this system".into(),
        }),
    }
}

fn entry(name: &str) -> Result<keyring::Entry, StoreError> {
    keyring::Entry::new(SERVICE, name).map_err(|e| keyring_error("open", name, &e))
}

/// `error` in words that quote no stored value (invariant 2).
fn keyring_error(action: &'static str, name: &str, error: &keyring::Error) -> StoreError {
    use keyring::Error;
    let reason = match error {
        Error::PlatformFailure(cause) => format!("the keyring failed: {cause}"),
        Error::NoStorageAccess(cause) => {
            format!("the keyring is locked or refused access: {cause}")
        }
        Error::NoEntry => "there is no such entry".into(),
        Error::BadEncoding(_) => "its value is not UTF-8: log in again".into(),
        Error::TooLong(attribute, limit) => {
            format!("its `{attribute}` is longer than the keyring's limit of {limit}")
        }
        Error::Invalid(attribute, why) => format!("its `{attribute}` is invalid: {why}"),
        Error::Ambiguous(found) => format!("{} entries match its name", found.len()),
        _ => "the keyring failed".into(),
    };
    StoreError::Keyring {
        action,
        name: name.to_owned(),
        reason,
    }
}
