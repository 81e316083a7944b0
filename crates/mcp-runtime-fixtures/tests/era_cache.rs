//! Eras kept across processes (`StartOptions::with_era_cache`): each "process" here is
//! a runtime with a listing registry of its own, so that nothing is remembered between
//! them but what the cache directory holds. Local servers run the fixture through
//! `/bin/sh`, which reads its flags from a file: the same configuration (so the same
//! key) can run a server of either era.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use mcp_runtime::{
    EraCache, ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions, StartupEvent,
};

use crate::support::*;

/// A temporary directory holding the cache, the server's flags and its log.
struct Setup {
    dir: tempfile::TempDir,
}

/// How one start went.
#[derive(Debug, PartialEq)]
struct Run {
    state: ServerState,
    protocol: Option<String>,
    spawned: usize,
}

impl Setup {
    fn new(flags: &str) -> Self {
        let setup = Self { dir: temp_dir() };
        setup.flags(flags);
        setup
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("log.jsonl")
    }

    /// Sets the flags the next server started runs with.
    fn flags(&self, flags: &str) {
        std::fs::write(self.dir.path().join("flags"), flags).unwrap();
    }

    fn server(&self, env: &[(&str, &str)]) -> ServerConfig {
        let mut server = ServerConfig::stdio(
            "kept",
            "/bin/sh",
            vec![
                "-c".into(),
                r#"exec "$1" $(cat "$0") --log "$2""#.into(),
                path_str(&self.dir.path().join("flags")).into(),
                fixture_path().into(),
                path_str(&self.log()).into(),
            ],
        );
        for (name, value) in env {
            server = with_env(server, name, value);
        }
        server
    }

    /// Starts the server in a new runtime that keeps eras in the cache (when `cached`)
    /// and shares nothing else with the runs before it.
    async fn run_with(&self, cached: bool, env: &[(&str, &str)]) -> Run {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut options = StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new())
            .with_protocol_probe_bound(Duration::from_millis(300))
            .with_events(sender);
        if cached {
            options = options.with_era_cache(EraCache::in_dir(self.cache()));
        }
        let runtime = Runtime::start(config([self.server(env)]), options)
            .await
            .expect("start succeeds");
        let status = runtime.servers()[0].clone();
        runtime.shutdown().await;
        let spawned = drain(receiver)
            .iter()
            .filter(|event| matches!(event, StartupEvent::Spawned { .. }))
            .count();
        Run {
            state: status.state,
            protocol: status.protocol_version,
            spawned,
        }
    }

    async fn run(&self) -> Run {
        self.run_with(true, &[]).await
    }

    /// How many times each of `server/discover` and `initialize` was sent.
    fn sent(&self) -> (usize, usize) {
        let entries = read_log(&self.log());
        (
            count_method(&entries, "server/discover"),
            count_method(&entries, "initialize"),
        )
    }

    /// The files in the cache directory: each one's content.
    fn kept(&self) -> Vec<String> {
        match std::fs::read_dir(self.cache()) {
            Ok(entries) => entries
                .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn ready(protocol: &str, spawned: usize) -> Run {
    Run {
        state: ServerState::Ready,
        protocol: Some(protocol.to_owned()),
        spawned,
    }
}

#[tokio::test]
async fn a_later_process_starts_a_silent_handshake_server_without_the_probe() {
    let setup = Setup::new("--silent-discover");
    assert_eq!(
        setup.run().await,
        ready("2025-11-25", 2),
        "probed: the silent process, then a fresh one for `initialize`"
    );
    assert_eq!(setup.kept(), ["handshake\n"]);
    assert_eq!(setup.run().await, ready("2025-11-25", 1), "no probe");
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    assert_eq!(setup.sent(), (1, 3));
    assert_eq!(
        setup.run_with(false, &[]).await,
        ready("2025-11-25", 2),
        "a runtime without the cache probes"
    );
}

#[tokio::test]
async fn a_later_process_waits_for_a_modern_server_slower_than_the_probe_bound() {
    let setup = Setup::new("--era stateless --discover-delay-ms 1000");
    assert_eq!(
        setup.run().await,
        ready("2026-07-28", 3),
        "the probe, the refused `initialize`, the discover waited for"
    );
    assert_eq!(setup.kept(), ["modern\n"]);
    assert_eq!(setup.run().await, ready("2026-07-28", 1));
    assert_eq!(setup.sent(), (3, 1));
}

#[tokio::test]
async fn a_kept_handshake_era_refused_by_a_modern_server_is_probed_and_replaced() {
    let setup = Setup::new("--era handshake");
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    assert_eq!(setup.kept(), ["handshake\n"]);
    setup.flags("--era stateless");
    assert_eq!(
        setup.run().await,
        ready("2026-07-28", 2),
        "`initialize` refused as unknown, then the probe"
    );
    assert_eq!(setup.kept(), ["modern\n"]);
    assert_eq!(setup.run().await, ready("2026-07-28", 1));
    assert_eq!(setup.sent(), (3, 2));
}

#[tokio::test]
async fn a_kept_modern_era_answered_as_a_handshake_server_falls_back_on_the_same_process() {
    let setup = Setup::new("--era stateless");
    assert_eq!(setup.run().await, ready("2026-07-28", 1));
    setup.flags("--era handshake");
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    assert_eq!(setup.kept(), ["handshake\n"]);
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    assert_eq!(
        setup.sent(),
        (2, 2),
        "no `server/discover` once handshake is kept"
    );
}

#[tokio::test]
async fn a_start_that_fails_after_reading_the_cache_leaves_no_era_behind() {
    let setup = Setup::new("--era handshake");
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    setup.flags("--era handshake --crash-initialize 3");
    assert_eq!(setup.run().await.state, ServerState::Failed);
    assert_eq!(setup.kept(), Vec::<String>::new());
    setup.flags("--era handshake");
    assert_eq!(setup.run().await, ready("2025-11-25", 1));
    assert_eq!(setup.sent(), (2, 3), "probed again after the failure");
}

#[tokio::test]
async fn the_cache_holds_the_era_alone_under_a_key_without_the_environments_values() {
    let setup = Setup::new("--era handshake");
    let secret = "kept-cache-secret-value-4711";
    assert_eq!(
        setup.run_with(true, &[("API_TOKEN", secret)]).await,
        ready("2025-11-25", 1)
    );
    assert_eq!(
        setup
            .run_with(true, &[("API_TOKEN", "another-value")])
            .await,
        ready("2025-11-25", 1),
        "another value of the same variable: the same entry"
    );
    assert_eq!(setup.sent(), (1, 2));
    let names: Vec<_> = std::fs::read_dir(setup.cache())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 1);
    assert!(
        names[0].len() == 64 && names[0].bytes().all(|b| b.is_ascii_hexdigit()),
        "{names:?}"
    );
    assert_eq!(setup.kept(), ["handshake\n"]);
    assert_no_secret(&setup.cache(), secret);
}

fn assert_no_secret(dir: &Path, secret: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{} holds the secret",
            path.display()
        );
    }
}
