//! Protocol eras kept across runs in the user's cache directory: a repeated run starts
//! a local server in its era without probing it.

use std::path::Path;

use mcp_runtime_fixtures::testing::{count_method, read_log};

use crate::support::{cli, fixture_server, stderr};

/// How many requests of `method` the server's message log holds.
fn sent(log: &Path, method: &str) -> usize {
    count_method(&read_log(log), method)
}

#[test]
fn a_second_run_sends_a_handshake_server_initialize_without_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.old]\ncommand = {:?}\nargs = [\"--era\", \"handshake\", \"--log\", {:?}]\n",
            fixture_server().to_str().unwrap(),
            log.to_str().unwrap(),
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let run = || {
        let output = cli()
            .args(["tools", "--config", config.to_str().unwrap()])
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    };
    run();
    assert_eq!(
        (sent(&log, "server/discover"), sent(&log, "initialize")),
        (1, 1)
    );
    let eras = cache.join("mcp-runtime").join("eras");
    let kept: Vec<_> = std::fs::read_dir(&eras)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert_eq!(kept, ["handshake\n"]);
    run();
    run();
    assert_eq!(
        (sent(&log, "server/discover"), sent(&log, "initialize")),
        (1, 3),
        "the later runs send `initialize` alone"
    );
}
