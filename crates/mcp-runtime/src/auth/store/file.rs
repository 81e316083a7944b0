//! The token file: one JSON document holding every identity's credentials, shared by
//! every runtime of the user.
//!
//! `$XDG_CONFIG_HOME/mcp-runtime/oauth-credentials.json`, else
//! `~/.config/mcp-runtime/oauth-credentials.json`. Beside it:
//! `oauth-credentials.json.lock`, locked for each read-modify-write, and
//! `oauth-locks/NAME.lock`, one refresh lock per identity. The locks are advisory
//! (`flock`): every mcp-runtime takes them, other programs are not stopped.
//!
//! 1. The file and each lock file are created `0600`, their directory `0700`.
//! 2. A file found readable or writable by others is repaired to `0600` (with a
//!    warning, since its tokens may have been read); a file owned by another user is
//!    refused, never read.
//! 3. A save writes a temporary file `0600` in the same directory, syncs it and
//!    renames it over the file, holding the lock from its read to the rename: a reader
//!    sees the old document or the new one, and no save loses another's entry.
//! 4. A reader takes no lock: by 3, what it reads is whole.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::StoredCredentials;
use serde::{Deserialize, Serialize};

use super::{Record, StoreError, StoreKey};

/// The format version this code writes and reads.
const VERSION: u64 = 1;

/// The token file at one path: a [`CredentialStore`](rmcp::transport::auth::CredentialStore) per identity through
/// [`FileStore::entry`].
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

/// One identity's credentials in a [`FileStore`].
#[derive(Debug, Clone)]
pub struct FileEntry {
    store: FileStore,
    key: StoreKey,
}

#[derive(Default, Serialize, Deserialize)]
struct Document {
    version: u64,
    #[serde(default)]
    entries: BTreeMap<String, Record>,
}

/// The part of a document read first, to refuse a newer format before its shape.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    version: u64,
}

impl FileStore {
    /// The token file at `path` (for tests, and hosts with a directory of their own).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        FileStore { path: path.into() }
    }

    /// The default token file for this user (module docs).
    ///
    /// # Errors
    ///
    /// [`StoreError::NoConfigDir`] when neither variable names an absolute directory.
    pub fn default_path() -> Result<PathBuf, StoreError> {
        default_path_from(
            std::env::var_os("XDG_CONFIG_HOME"),
            std::env::var_os("HOME"),
        )
        .ok_or(StoreError::NoConfigDir)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credentials of `key` in this file.
    pub fn entry(&self, key: StoreKey) -> FileEntry {
        FileEntry {
            store: self.clone(),
            key,
        }
    }

    /// The identities that have an entry in the file (none when it does not exist).
    ///
    /// # Errors
    ///
    /// When the file cannot be read, or is damaged or refused (module invariant 2).
    pub fn keys(&self) -> Result<Vec<StoreKey>, StoreError> {
        let document = self.read()?;
        Ok(document.entries.into_values().map(|r| r.key).collect())
    }

    /// The directory of the per-identity refresh locks.
    pub(super) fn lock_dir(&self) -> PathBuf {
        self.dir().join("oauth-locks")
    }

    fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        }
    }

    fn read(&self) -> Result<Document, StoreError> {
        let io = |action, source| io_error(action, &self.path, source);
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Document::default()),
            Err(error) => return Err(io("open", error)),
        };
        let metadata = file.metadata().map_err(|e| io("inspect", e))?;
        // SAFETY: `geteuid` has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if metadata.uid() != me {
            return Err(StoreError::NotOwned {
                path: self.path.clone(),
                owner: metadata.uid(),
            });
        }
        let mode = metadata.mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %self.path.display(),
                mode = format_args!("{mode:o}"),
                "the OAuth token file was open to other users: made it 0600; its tokens may \
                 have been read, log in again if that matters"
            );
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| io("repair the mode of", e))?;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| io("read", e))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Document::default());
        }
        let damaged = |error: serde_json::Error| StoreError::Damaged {
            path: self.path.clone(),
            line: error.line(),
            column: error.column(),
        };
        let head: Head = serde_json::from_slice(&bytes).map_err(damaged)?;
        if head.version > VERSION {
            return Err(StoreError::NewerFormat {
                path: self.path.clone(),
                version: head.version,
            });
        }
        serde_json::from_slice(&bytes).map_err(damaged)
    }

    /// Reads, changes and writes the document under the file lock (invariant 3).
    fn update(&self, change: impl FnOnce(&mut Document) -> bool) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut document = self.read()?;
        document.version = VERSION;
        if change(&mut document) {
            self.write(&document)?;
        }
        Ok(())
    }

    fn lock(&self) -> Result<File, StoreError> {
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(".lock");
        lock_file(&self.path.with_file_name(name))
    }

    fn write(&self, document: &Document) -> Result<(), StoreError> {
        let dir = self.dir();
        let mut name = OsString::from(".");
        name.push(self.path.file_name().unwrap_or_default());
        name.push(format!(".{}.{:x}.tmp", std::process::id(), random()));
        let temporary = dir.join(name);
        let result = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temporary)
                .map_err(|e| io_error("create", &temporary, e))?;
            let mut text = serde_json::to_vec_pretty(document)
                .expect("a document of strings and numbers always serializes");
            text.push(b'\n');
            file.write_all(&text)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error("write", &temporary, e))?;
            std::fs::rename(&temporary, &self.path).map_err(|e| io_error("replace", &self.path, e))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result?;
        // The rename is durable once the directory is: best effort, as a crash is rare
        // and the old document is whole either way.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl FileEntry {
    /// The identity this entry stores.
    pub fn key(&self) -> &StoreKey {
        &self.key
    }
}

impl super::BlockingEntry for FileEntry {
    fn load_now(&self) -> Result<Option<StoredCredentials>, StoreError> {
        let mut document = self.store.read()?;
        Ok(document
            .entries
            .remove(&self.key.name())
            .filter(|record| record.key == self.key)
            .map(|record| record.credentials))
    }

    fn save_now(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        let record = Record {
            key: self.key.clone(),
            credentials,
        };
        self.store.update(|document| {
            document.entries.insert(self.key.name(), record);
            true
        })
    }

    fn clear_now(&self) -> Result<(), StoreError> {
        if !self.store.path.exists() {
            return Ok(());
        }
        self.store
            .update(|document| document.entries.remove(&self.key.name()).is_some())
    }

    fn refresh_lock(&self) -> PathBuf {
        refresh_lock_path(&self.store.lock_dir(), &self.key)
    }
}

blocking_credential_store!(FileEntry);

/// The refresh lock of `key` in `dir` (module invariant 3 of `store`).
pub(super) fn refresh_lock_path(dir: &Path, key: &StoreKey) -> PathBuf {
    dir.join(format!("{}.lock", key.name()))
}

/// Opens (creating it `0600`, and its directory `0700`) and exclusively locks `path`,
/// waiting for another holder; closing the file unlocks it.
pub(super) fn lock_file(path: &Path) -> Result<File, StoreError> {
    if let Some(dir) = path.parent() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| io_error("create the directory", dir, e))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| io_error("open", path, e))?;
    file.lock().map_err(|e| io_error("lock", path, e))?;
    Ok(file)
}

fn io_error(action: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        action,
        path: path.to_owned(),
        source: Arc::new(source),
    }
}

fn random() -> u64 {
    let mut bytes = [0u8; 8];
    // A name collision only fails one save with `create_new`: no need to panic.
    let _ = getrandom::fill(&mut bytes);
    u64::from_ne_bytes(bytes)
}

/// `$XDG_CONFIG_HOME/mcp-runtime/…` when it is absolute (the XDG specification ignores
/// a relative one), else `$HOME/.config/mcp-runtime/…`.
fn default_path_from(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |value: Option<OsString>| value.map(PathBuf::from).filter(|p| p.is_absolute());
    let config = absolute(xdg).or_else(|| absolute(home).map(|home| home.join(".config")))?;
    Some(config.join("mcp-runtime").join("oauth-credentials.json"))
}

#[cfg(test)]
mod tests;
