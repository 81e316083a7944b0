//! Eras kept across processes: a small cache in a directory of the host's choosing
//! (the command line's: the user's cache directory), so that a later process starts a
//! local server in the era an earlier one found, without the probe. The
//! specification lets a client remember a server's revision ("cached per origin");
//! the [`EraMemory`](super::EraMemory) stays the authority within a process, and this
//! cache only answers its first question for a key.
//!
//! Invariants:
//! 1. An entry is a hint: it chooses the first request a startup sends, nothing more.
//!    The startup that reads it takes it away, and writes it back only once the server
//!    answered in that era (or in the other, which is then written). A server whose
//!    answer disagrees (a remembered handshake server refusing `initialize` as a method
//!    it does not know; a remembered modern one answering `server/discover` as a
//!    handshake server), a startup that fails, and one that is dropped, leave no
//!    entry: the next process probes.
//! 2. No secret reaches the disk, not even as a digest. An entry is named by a digest
//!    of the scope, the server's name, where it runs, its command line and working
//!    directory, the names (never the values) of the variables of its environment, and
//!    what the client offers ([`Detail::OnDisk`](crate::discovery_key::Detail)); it
//!    holds one word, the era.
//! 3. An entry older than [`MAX_AGE`] is not used: a server upgraded in place (the same
//!    command line running a newer program) is probed again within that time.
//! 4. A write is a whole file renamed over the entry, so a concurrent process reads an
//!    entry whole or not at all. The cache saves a probe and no more: a directory that
//!    cannot be read is an empty cache, and a write that fails is logged and dropped.

use std::{
    fs,
    io::{self, Read, Write},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use super::{Era, EraKey};

/// How long an entry is trusted after it was written (invariant 3).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Where local servers' protocol eras are remembered across processes, so that a
/// later run starts each in its era without probing it. Opt in with
/// [`StartOptions::with_era_cache`](crate::StartOptions::with_era_cache); the
/// `mcp-runtime` command line uses [`EraCache::in_user_cache`].
///
/// An entry is a hint, checked by the server's first answer; it holds no secret, and
/// removing the directory at any time is safe: the next start probes again.
#[derive(Clone, Debug)]
pub struct EraCache {
    dir: Arc<Path>,
}

impl EraCache {
    /// A cache in `dir`, created (readable by its owner alone) when first written.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into().into(),
        }
    }

    /// The cache in the user's cache directory: `$XDG_CACHE_HOME/mcp-runtime/eras`,
    /// else `$HOME/.cache/mcp-runtime/eras`; `None` when neither variable names an
    /// absolute path.
    pub fn in_user_cache() -> Option<Self> {
        Self::in_user_cache_of(|name| std::env::var_os(name))
    }

    fn in_user_cache_of(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<Self> {
        let absolute = |name| {
            var(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let base = absolute("XDG_CACHE_HOME").or_else(|| Some(absolute("HOME")?.join(".cache")))?;
        Some(Self::in_dir(base.join("mcp-runtime").join("eras")))
    }

    /// The directory of the cache.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry of `key` (a digest made by [`crate::discovery_key::era_on_disk`]).
    pub(crate) fn entry(&self, key: EraKey) -> Entry {
        Entry {
            cache: self.clone(),
            key,
        }
    }
}

/// One server configuration's entry in an [`EraCache`].
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    cache: EraCache,
    key: EraKey,
}

impl Entry {
    fn path(&self) -> PathBuf {
        let name = hex::encode(self.key.0);
        self.cache.dir.join(name)
    }

    /// The era remembered, if the entry is there and young enough; the entry is taken
    /// away either way (invariant 1).
    pub(crate) fn take(&self) -> Option<Era> {
        let path = self.path();
        let era = read(&path);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => tracing::debug!(
                path = %path.display(),
                %error,
                "could not take a remembered protocol era away"
            ),
        }
        era
    }

    /// Remembers `era` for later processes (invariant 4).
    pub(crate) fn keep(&self, era: Era) {
        let path = self.path();
        if let Err(error) = write(&self.cache.dir, &path, era) {
            tracing::debug!(
                path = %path.display(),
                %error,
                "could not remember a protocol era"
            );
        }
    }
}

fn read(path: &Path) -> Option<Era> {
    let file = fs::File::open(path).ok()?;
    let age = file.metadata().ok()?.modified().ok()?.elapsed().ok()?;
    if age > MAX_AGE {
        return None;
    }
    let mut text = String::new();
    // An entry is one short word: more is not one of ours.
    file.take(16).read_to_string(&mut text).ok()?;
    match text.trim_end() {
        "modern" => Some(Era::Modern),
        "handshake" => Some(Era::Handshake),
        _ => None,
    }
}

fn write(dir: &Path, path: &Path, era: Era) -> io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let temporary = path.with_extension(format!(
        "{}.{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(match era {
            Era::Modern => b"modern\n",
            Era::Handshake => b"handshake\n",
        })
    });
    let renamed = written.and_then(|()| fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn entry(dir: &Path, n: u8) -> Entry {
        EraCache::in_dir(dir).entry(EraKey([n; 32]))
    }

    #[test]
    fn an_era_kept_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("eras");
        entry(&cache, 1).keep(Era::Handshake);
        entry(&cache, 2).keep(Era::Modern);
        assert_eq!(entry(&cache, 1).take(), Some(Era::Handshake));
        assert_eq!(entry(&cache, 1).take(), None, "taken away");
        assert_eq!(entry(&cache, 2).take(), Some(Era::Modern));
        assert_eq!(entry(&cache, 3).take(), None);
        assert_eq!(
            fs::read_dir(&cache).unwrap().count(),
            0,
            "no entry and no temporary file left"
        );
    }

    #[test]
    fn an_entry_holds_the_era_alone_and_only_its_owner_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("mcp-runtime").join("eras");
        let entry = entry(&cache, 7);
        entry.keep(Era::Modern);
        let mut text = String::new();
        fs::File::open(entry.path())
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "modern\n");
        assert_eq!(
            entry.path().file_name().unwrap().to_str().unwrap(),
            "07".repeat(32)
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&entry.path()), 0o600);
            assert_eq!(mode(&cache), 0o700);
        }
    }

    #[test]
    fn an_old_or_foreign_entry_is_not_used_and_is_taken_away() {
        let dir = tempfile::tempdir().unwrap();
        let old = entry(dir.path(), 1);
        old.keep(Era::Handshake);
        let written = fs::File::options().write(true).open(old.path()).unwrap();
        let long_ago = std::time::SystemTime::now() - MAX_AGE - Duration::from_secs(60);
        written.set_modified(long_ago).unwrap();
        assert_eq!(old.take(), None);
        assert!(!old.path().exists());

        let foreign = entry(dir.path(), 2);
        fs::write(foreign.path(), "handshake, or so\n").unwrap();
        assert_eq!(foreign.take(), None);
        assert!(!foreign.path().exists());
    }

    #[test]
    fn a_cache_that_cannot_be_written_saves_nothing_and_fails_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, "").unwrap();
        let entry = entry(&file.join("eras"), 1);
        entry.keep(Era::Modern);
        assert_eq!(entry.take(), None);
    }

    #[test]
    fn the_user_cache_is_under_xdg_cache_home_else_home() {
        let vars = |xdg: Option<&str>, home: Option<&str>| {
            let (xdg, home) = (xdg.map(OsString::from), home.map(OsString::from));
            move |name: &str| match name {
                "XDG_CACHE_HOME" => xdg.clone(),
                "HOME" => home.clone(),
                _ => None,
            }
        };
        let dir = |cache: Option<EraCache>| cache.map(|cache| cache.dir().to_path_buf());
        assert_eq!(
            dir(EraCache::in_user_cache_of(vars(Some("/x"), Some("/h")))),
            Some(PathBuf::from("/x/mcp-runtime/eras"))
        );
        assert_eq!(
            dir(EraCache::in_user_cache_of(vars(
                Some("relative"),
                Some("/h")
            ))),
            Some(PathBuf::from("/h/.cache/mcp-runtime/eras")),
            "a relative XDG_CACHE_HOME is ignored, as the XDG specification says"
        );
        assert_eq!(dir(EraCache::in_user_cache_of(vars(None, None))), None);
    }
}
