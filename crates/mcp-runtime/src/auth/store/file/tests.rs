use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use rmcp::transport::auth::CredentialStore as _;

use super::super::BlockingEntry as _;
use super::super::tests::{access_token, credentials, key};
use super::*;

fn store(dir: &tempfile::TempDir) -> FileStore {
    FileStore::at(
        dir.path()
            .join("mcp-runtime")
            .join("oauth-credentials.json"),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o777
}

/// The files of `dir` whose name says they are temporary.
fn leftovers(dir: &Path) -> Vec<OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".tmp"))
        .collect()
}

#[test]
fn the_file_is_created_0600_in_a_0700_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .entry(key("https://a.example/mcp"))
        .save_now(credentials("t"))
        .unwrap();
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.path().with_extension("json.lock")), 0o600);
    assert_eq!(leftovers(store.dir()), Vec::<OsString>::new());
}

#[test]
fn each_identity_loads_its_own_credentials_and_clears_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let a = store.entry(key("https://a.example/mcp"));
    let b = store.entry(key("https://b.example/mcp"));
    assert!(a.load_now().unwrap().is_none(), "no file yet");
    a.save_now(credentials("token-a")).unwrap();
    b.save_now(credentials("token-b")).unwrap();
    assert_eq!(access_token(&a.load_now().unwrap().unwrap()), "token-a");
    assert_eq!(access_token(&b.load_now().unwrap().unwrap()), "token-b");
    a.clear_now().unwrap();
    assert!(a.load_now().unwrap().is_none());
    assert_eq!(access_token(&b.load_now().unwrap().unwrap()), "token-b");
    assert_eq!(store.keys().unwrap(), vec![key("https://b.example/mcp")]);
}

#[test]
fn clearing_without_a_file_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .entry(key("https://a.example/mcp"))
        .clear_now()
        .unwrap();
    assert!(!store.dir().exists());
}

#[test]
fn concurrent_saves_keep_every_identity_and_a_whole_file() {
    const SAVERS: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let path = store(&dir).path().to_owned();
    let start = Arc::new(Barrier::new(SAVERS));
    let savers: Vec<_> = (0..SAVERS)
        .map(|i| {
            // A store of its own per thread: separate opens, as separate processes have.
            let store = FileStore::at(&path);
            let start = start.clone();
            std::thread::spawn(move || {
                let entry = store.entry(key(&format!("https://s{i}.example/mcp")));
                start.wait();
                entry.save_now(credentials(&format!("token-{i}"))).unwrap();
                // A reader between others' writes sees a whole document.
                store.keys().unwrap();
            })
        })
        .collect();
    for saver in savers {
        saver.join().unwrap();
    }
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(document["entries"].as_object().unwrap().len(), SAVERS);
    let store = FileStore::at(&path);
    for i in 0..SAVERS {
        let entry = store.entry(key(&format!("https://s{i}.example/mcp")));
        assert_eq!(
            access_token(&entry.load_now().unwrap().unwrap()),
            format!("token-{i}")
        );
    }
    assert_eq!(leftovers(store.dir()), Vec::<OsString>::new());
}

#[test]
fn a_file_open_to_others_is_repaired_to_0600() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let entry = store.entry(key("https://a.example/mcp"));
    entry.save_now(credentials("t")).unwrap();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(access_token(&entry.load_now().unwrap().unwrap()), "t");
    assert_eq!(mode(store.path()), 0o600);
}

#[test]
fn a_newer_format_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    std::fs::create_dir_all(store.dir()).unwrap();
    let newer = r#"{"version": 2, "accounts": []}"#;
    std::fs::write(store.path(), newer).unwrap();
    let entry = store.entry(key("https://a.example/mcp"));
    let error = entry.save_now(credentials("t")).unwrap_err();
    assert!(
        matches!(error, StoreError::NewerFormat { version: 2, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("upgrade mcp-runtime"), "{error}");
    assert_eq!(std::fs::read_to_string(store.path()).unwrap(), newer);
}

#[test]
fn the_default_path_prefers_an_absolute_xdg_config_home() {
    let path = |xdg: Option<&str>, home: Option<&str>| {
        default_path_from(xdg.map(Into::into), home.map(Into::into))
    };
    let file = Path::new("mcp-runtime/oauth-credentials.json");
    assert_eq!(
        path(Some("/x"), Some("/h")),
        Some(Path::new("/x").join(file))
    );
    assert_eq!(
        path(Some("rel"), Some("/h")),
        Some(Path::new("/h/.config").join(file))
    );
    assert_eq!(
        path(None, Some("/h")),
        Some(Path::new("/h/.config").join(file))
    );
    assert_eq!(path(None, Some("")), None);
    assert_eq!(path(None, None), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_guard_excludes_others_and_the_next_holder_sees_the_fresh_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let first = store.entry(key("https://a.example/mcp"));
    first.save_now(credentials("stale")).unwrap();
    let guard = first
        .acquire_refresh_guard()
        .await
        .unwrap()
        .expect("a guard");

    // Held against any other open of the lock, as another process would make.
    let lock = refresh_lock_path(&store.lock_dir(), first.key());
    let other = File::open(&lock).unwrap();
    assert!(matches!(
        other.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));

    let second = FileStore::at(store.path()).entry(key("https://a.example/mcp"));
    let waiter = tokio::spawn(async move {
        let _guard = second.acquire_refresh_guard().await.unwrap();
        second.load().await.unwrap().unwrap()
    });
    first.save(credentials("fresh")).await.unwrap();
    drop(guard);
    assert_eq!(access_token(&waiter.await.unwrap()), "fresh");
    other.try_lock().expect("every guard released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_refreshers_that_check_under_the_guard_refresh_once() {
    const RUNTIMES: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = store(&dir).path().to_owned();
    FileStore::at(&path)
        .entry(key("https://a.example/mcp"))
        .save_now(credentials("stale"))
        .unwrap();
    let refreshes = Arc::new(AtomicUsize::new(0));
    let runtimes: Vec<_> = (0..RUNTIMES)
        .map(|_| {
            let entry = FileStore::at(&path).entry(key("https://a.example/mcp"));
            let refreshes = refreshes.clone();
            tokio::spawn(async move {
                let _guard = entry.acquire_refresh_guard().await.unwrap();
                let current = entry.load().await.unwrap().unwrap();
                if access_token(&current) == "stale" {
                    refreshes.fetch_add(1, Ordering::SeqCst);
                    entry.save(credentials("fresh")).await.unwrap();
                }
                access_token(&entry.load().await.unwrap().unwrap())
            })
        })
        .collect();
    for runtime in runtimes {
        assert_eq!(runtime.await.unwrap(), "fresh");
    }
    assert_eq!(refreshes.load(Ordering::SeqCst), 1);
}

#[test]
fn a_file_of_another_user_is_refused() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // Only root can give a file away.
    }
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .entry(key("https://a.example/mcp"))
        .save_now(credentials("t"))
        .unwrap();
    std::os::unix::fs::chown(store.path(), Some(65534), None).unwrap();
    let error = store.keys().unwrap_err();
    assert!(
        matches!(error, StoreError::NotOwned { owner: 65534, .. }),
        "{error:?}"
    );
}
