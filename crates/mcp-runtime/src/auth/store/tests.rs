#[cfg(feature = "keyring")]
use std::sync::Mutex;
#[cfg(feature = "keyring")]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(feature = "keyring")]
use std::time::Duration;

use rmcp::transport::auth::StoredCredentials;

use super::*;

/// A token no test output may contain.
pub(crate) const SECRET: &str = "tok-SECRET-5f2c9a";

pub(crate) fn key(url: &str) -> StoreKey {
    StoreKey::new(&url::Url::parse(url).unwrap(), Some("client-1"), None)
}

/// Credentials whose access and refresh tokens start with `token`.
pub(crate) fn credentials(token: &str) -> StoredCredentials {
    let response = serde_json::from_value(serde_json::json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": format!("{token}-refresh"),
    }))
    .unwrap();
    StoredCredentials::new(
        "client-1".into(),
        Some(response),
        vec!["read".into()],
        Some(1),
    )
}

pub(crate) fn access_token(credentials: &StoredCredentials) -> String {
    let response = serde_json::to_value(&credentials.token_response).unwrap();
    response["access_token"].as_str().unwrap().to_owned()
}

#[test]
fn key_name_is_stable_and_keeps_its_parts_apart() {
    let url = url::Url::parse("https://mcp.example.com/mcp").unwrap();
    let named = StoreKey::new(&url, Some("client-1"), None);
    // Pinned (checked by hand: SHA-256 over the tag and the length-prefixed parts): a
    // change renames every stored entry, losing every login.
    assert_eq!(named.name(), "oauth-805fdd029ffe09d593f32664166c69e2");
    assert_eq!(named.resource(), "https://mcp.example.com/mcp");
    let dynamic = StoreKey::new(&url, None, None);
    let empty = StoreKey::new(&url, Some(""), None);
    let other_resource = StoreKey::new(&url, Some("client-1"), Some("https://mcp.example.com/"));
    let names = [&named, &dynamic, &empty, &other_resource].map(StoreKey::name);
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            assert_ne!(a, b);
        }
    }
    let with_fragment = url::Url::parse("https://mcp.example.com/mcp#x").unwrap();
    assert_eq!(StoreKey::new(&with_fragment, Some("client-1"), None), named);
}

#[test]
fn key_debug_masks_a_credential_in_the_url() {
    let url = url::Url::parse(&format!("https://h.example/mcp?api_key={SECRET}")).unwrap();
    let key = StoreKey::new(&url, None, None);
    assert!(!format!("{key:?}").contains(SECRET), "{key:?}");
    assert!(!key.name().contains(SECRET));
}

#[tokio::test]
async fn no_debug_output_or_error_shows_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oauth-credentials.json");
    let store = Store::open(
        CredentialsStore::File,
        StoreOptions::default().with_file(&path),
    )
    .await
    .unwrap();
    let entry = store.credentials(key("https://a.example/mcp"));
    entry.save(credentials(SECRET)).await.unwrap();
    let loaded = entry.load().await.unwrap().unwrap();
    assert_eq!(access_token(&loaded), SECRET);
    let file = FileStore::at(&path);
    let shown = format!(
        "{store:?} {loaded:?} {file:?} {:?} {:?}",
        file.entry(key("https://a.example/mcp")),
        file.keys().unwrap()
    );
    assert!(!shown.contains(SECRET), "{shown}");

    // A damaged file whose text holds the token: the error gives a position only.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(SECRET),
        "the test must damage a file that holds the token"
    );
    std::fs::write(
        &path,
        text.replacen("\"token_type\"", "\"token_type\" 7", 1),
    )
    .unwrap();
    let error = entry.load().await.unwrap_err();
    assert!(!format!("{error} {error:?}").contains(SECRET), "{error}");
    assert!(error.to_string().contains("line"), "{error}");
    // A value of the wrong type, which serde quotes in its own message.
    std::fs::write(
        &path,
        format!("{{\"version\": 1, \"entries\": \"{SECRET}\"}}"),
    )
    .unwrap();
    let error = file.keys().unwrap_err();
    assert!(matches!(error, StoreError::Damaged { .. }), "{error:?}");
    assert!(!format!("{error} {error:?}").contains(SECRET), "{error}");
}

#[test]
fn rmcp_sees_the_system_reason_of_a_store_error() {
    let error = StoreError::Io {
        action: "lock",
        path: "/x/oauth-credentials.json.lock".into(),
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
    };
    let AuthError::CredentialStoreError(message) = AuthError::from(error) else {
        panic!("a store error is rmcp's CredentialStoreError");
    };
    assert_eq!(
        message,
        "could not lock `/x/oauth-credentials.json.lock`: permission denied"
    );
}

#[cfg(feature = "keyring")]
#[derive(Debug)]
struct Answer(Result<(), &'static str>, Arc<AtomicUsize>);

#[cfg(feature = "keyring")]
impl KeyringProbe for Answer {
    fn probe(&self) -> Result<(), StoreError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.map_err(|reason| StoreError::KeyringUnavailable {
            reason: reason.into(),
        })
    }
}

#[cfg(feature = "keyring")]
fn options(dir: &tempfile::TempDir, probe: impl KeyringProbe) -> StoreOptions {
    StoreOptions::default()
        .with_file(dir.path().join("oauth-credentials.json"))
        .with_probe(Arc::new(probe))
}

#[cfg(feature = "keyring")]
#[tokio::test]
async fn auto_falls_back_to_the_file_when_the_probe_fails() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let probe = Answer(Err("no Secret Service on the session bus"), calls.clone());
    let store = Store::open(CredentialsStore::Auto, options(&dir, probe))
        .await
        .unwrap();
    assert_eq!(store.kind(), StoreKind::File);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    store
        .credentials(key("https://a.example/mcp"))
        .save(credentials("t"))
        .await
        .unwrap();
    assert!(dir.path().join("oauth-credentials.json").exists());
}

/// A probe that blocks until the test lets it go.
#[cfg(feature = "keyring")]
#[derive(Debug)]
struct Hangs(Mutex<std::sync::mpsc::Receiver<()>>);

#[cfg(feature = "keyring")]
impl KeyringProbe for Hangs {
    fn probe(&self) -> Result<(), StoreError> {
        let _ = self.0.lock().unwrap().recv();
        Ok(())
    }
}

#[cfg(feature = "keyring")]
#[tokio::test(start_paused = true)]
async fn auto_falls_back_to_the_file_when_the_probe_does_not_answer_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let (release, wait) = std::sync::mpsc::channel();
    let probe = Hangs(Mutex::new(wait));
    let options = options(&dir, probe).with_probe_timeout(Duration::from_secs(3));
    let started = tokio::time::Instant::now();
    let store = Store::open(CredentialsStore::Auto, options).await.unwrap();
    assert_eq!(store.kind(), StoreKind::File);
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    // The abandoned probe's thread ends.
    drop(release);
}

#[cfg(feature = "keyring")]
#[derive(Debug)]
struct Panics;

#[cfg(feature = "keyring")]
impl KeyringProbe for Panics {
    fn probe(&self) -> Result<(), StoreError> {
        panic!("a keyring library bug");
    }
}

#[cfg(feature = "keyring")]
#[tokio::test]
async fn auto_falls_back_to_the_file_when_the_probe_panics() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(CredentialsStore::Auto, options(&dir, Panics))
        .await
        .unwrap();
    assert_eq!(store.kind(), StoreKind::File);
}

#[cfg(feature = "keyring")]
#[tokio::test]
async fn auto_uses_the_keyring_when_the_probe_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let store = Store::open(CredentialsStore::Auto, options(&dir, Answer(Ok(()), calls)))
        .await
        .unwrap();
    assert_eq!(store.kind(), StoreKind::Keyring);
}

#[cfg(feature = "keyring")]
#[tokio::test]
async fn file_and_keyring_choices_never_probe() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    for (choice, kind) in [
        (CredentialsStore::File, StoreKind::File),
        (CredentialsStore::Keyring, StoreKind::Keyring),
    ] {
        let probe = Answer(Err("unused"), calls.clone());
        let store = Store::open(choice, options(&dir, probe)).await.unwrap();
        assert_eq!(store.kind(), kind);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[cfg(feature = "keyring")]
#[test]
fn this_build_has_a_persistent_keyring_backend() {
    // Invariant 1 of `os_keyring`: the crate's in-memory mock would pass every other
    // test here while losing every token at exit.
    let dir = tempfile::tempdir().unwrap();
    KeyringStore::new(dir.path()).unwrap();
}

/// The real keyring, end to end: run by hand where a Secret Service (or the Keychain)
/// answers, e.g. `dbus-run-session -- sh -c 'echo pw | gnome-keyring-daemon --unlock
/// --components=secrets; cargo test -p mcp-runtime --lib auth::store -- --ignored'`.
#[cfg(feature = "keyring")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a running OS keyring"]
async fn the_os_keyring_round_trips_an_identity() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_file(dir.path().join("oauth-credentials.json"));
    let store = Store::open(CredentialsStore::Auto, options).await.unwrap();
    assert_eq!(
        store.kind(),
        StoreKind::Keyring,
        "the probe found no keyring"
    );
    let key = key("https://keyring-test.example/mcp");
    let entry = store.credentials(key.clone());
    entry.clear().await.unwrap();
    assert!(entry.load().await.unwrap().is_none());
    entry.save(credentials(SECRET)).await.unwrap();
    let loaded = store.credentials(key).load().await.unwrap().unwrap();
    assert_eq!(access_token(&loaded), SECRET);
    let _guard = entry
        .acquire_refresh_guard()
        .await
        .unwrap()
        .expect("a guard");
    entry.clear().await.unwrap();
    assert!(entry.load().await.unwrap().is_none());
    assert!(!dir.path().join("oauth-credentials.json").exists());
}

/// Where no keyring answers (a headless machine, CI), `auto` probes for real and
/// picks the file, quickly: run by hand, since a desktop session has a keyring.
#[cfg(feature = "keyring")]
#[tokio::test]
#[ignore = "needs a machine without an OS keyring"]
async fn auto_without_a_keyring_picks_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_file(dir.path().join("oauth-credentials.json"));
    let started = std::time::Instant::now();
    let store = Store::open(CredentialsStore::Auto, options).await.unwrap();
    assert_eq!(store.kind(), StoreKind::File);
    assert!(started.elapsed() < StoreOptions::DEFAULT_PROBE_TIMEOUT);
}

#[tokio::test]
#[cfg(not(feature = "keyring"))]
async fn without_the_keyring_feature_auto_is_the_file_and_keyring_names_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let options = || StoreOptions::default().with_file(dir.path().join("oauth-credentials.json"));
    let store = Store::open(CredentialsStore::Auto, options())
        .await
        .unwrap();
    assert_eq!(store.kind(), StoreKind::File);
    let error = Store::open(CredentialsStore::Keyring, options())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no usable OS keyring: this build of mcp-runtime leaves out the `keyring` feature (use `mcp_oauth_credentials_store = \"file\"`)"
    );
}
