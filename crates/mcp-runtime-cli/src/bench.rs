//! `bench startup`: many runtimes starting the same servers at once, as an agent host
//! does with one runtime per session.

use std::{collections::BTreeMap, time::Duration};

use mcp_runtime::{Config, Runtime, ServerState, StartOptions};
use serde_json::{Value, json};
use tokio::time::Instant;

/// What one burst of startups did, per server.
pub struct StartupBench {
    pub sessions: u32,
    pub shared: bool,
    pub servers: Vec<ServerBench>,
    /// From the first start until every startup had settled.
    pub wall: Duration,
}

#[derive(Default)]
pub struct ServerBench {
    pub name: String,
    pub ready: usize,
    pub failed: usize,
    /// `tools/list` requests sent by all sessions' startups together.
    pub tools_list_requests: usize,
    /// Sessions whose startup listing was one the server granted to an earlier
    /// startup for reuse (a 2026-07-28 `ttlMs`), so they sent no `tools/list`.
    pub served_from_cache: usize,
    /// Tools the server exposed (the largest count any session saw).
    pub tools: usize,
    /// Why sessions failed: each distinct reason and how many sessions it stopped.
    pub failures: BTreeMap<String, usize>,
}

impl ServerBench {
    /// The distinct failure reasons, the most frequent first.
    fn reasons(&self) -> Vec<(&str, usize)> {
        let mut reasons: Vec<(&str, usize)> = self
            .failures
            .iter()
            .map(|(reason, count)| (reason.as_str(), *count))
            .collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        reasons
    }
}

/// Starts `sessions` runtimes concurrently in `scope`, waits until every startup has
/// settled, shuts them all down and reports. `required` is ignored: a server that
/// fails is counted, with its reason, not fatal.
pub async fn startup(mut config: Config, scope: &str, sessions: u32, share: bool) -> StartupBench {
    for server in config.servers.values_mut() {
        server.required = false;
    }
    // The servers' stored OAuth logins, as every other command starts them with.
    let credentials = crate::login::credentials(&config).await;
    let began = Instant::now();
    let runtimes = futures::future::join_all((0..sessions).map(|_| {
        let mut options = StartOptions::new()
            .with_scope(scope)
            .wait_for_all()
            .with_shared_listings(share);
        if let Some(source) = &credentials {
            options = options.with_credentials(source.clone());
        }
        Runtime::start(config.clone(), options)
    }))
    .await;
    let wall = began.elapsed();

    let mut servers: BTreeMap<String, ServerBench> = config
        .enabled_servers()
        .map(|server| {
            let name = server.name.clone();
            (
                name.clone(),
                ServerBench {
                    name,
                    ..ServerBench::default()
                },
            )
        })
        .collect();
    let runtimes: Vec<Runtime> = runtimes
        .into_iter()
        .map(|runtime| runtime.expect("no server is required, so the start cannot fail"))
        .collect();
    for runtime in &runtimes {
        for status in runtime.servers() {
            let bench = servers
                .get_mut(&status.name)
                .expect("every status is a configured server");
            match status.state {
                ServerState::Ready => bench.ready += 1,
                state => {
                    bench.failed += 1;
                    let reason = status.error.as_ref().map_or_else(
                        || state.as_str().to_owned(),
                        |error| crate::output::error_text(error),
                    );
                    *bench.failures.entry(reason).or_default() += 1;
                }
            }
            bench.tools_list_requests += status.tools_list_requests;
            bench.served_from_cache += usize::from(status.served_from_cache);
            bench.tools = bench.tools.max(status.tools);
        }
    }
    futures::future::join_all(runtimes.into_iter().map(Runtime::shutdown)).await;
    StartupBench {
        sessions,
        shared: share,
        servers: servers.into_values().collect(),
        wall,
    }
}

impl StartupBench {
    pub fn to_json(&self) -> Value {
        let servers: Vec<Value> = self
            .servers
            .iter()
            .map(|server| {
                json!({
                    "name": server.name,
                    "ready": server.ready,
                    "failed": server.failed,
                    "tools_list_requests": server.tools_list_requests,
                    "served_from_cache": server.served_from_cache,
                    "tools": server.tools,
                    "failures": server
                        .reasons()
                        .into_iter()
                        .map(|(reason, count)| json!({ "reason": reason, "count": count }))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "sessions": self.sessions,
            "shared": self.shared,
            "servers": servers,
            "wall_ms": u64::try_from(self.wall.as_millis()).unwrap_or(u64::MAX),
        })
    }

    pub fn to_text(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .servers
            .iter()
            .map(|server| {
                vec![
                    server.name.clone(),
                    server.ready.to_string(),
                    server.failed.to_string(),
                    server.tools_list_requests.to_string(),
                    server.served_from_cache.to_string(),
                    server.tools.to_string(),
                ]
            })
            .collect();
        let mut text = format!(
            "{} sessions, {} listings, all settled in {}ms\n{}",
            self.sessions,
            if self.shared { "shared" } else { "unshared" },
            self.wall.as_millis(),
            crate::output::table(
                &["SERVER", "READY", "FAILED", "TOOLS/LIST", "CACHED", "TOOLS"],
                &rows
            )
        );
        let failures: Vec<Vec<String>> = self
            .servers
            .iter()
            .flat_map(|server| {
                server.reasons().into_iter().map(|(reason, count)| {
                    vec![
                        server.name.clone(),
                        count.to_string(),
                        crate::output::printable(reason).replace('\n', " "),
                    ]
                })
            })
            .collect();
        if !failures.is_empty() {
            text.push('\n');
            text.push_str(&crate::output::table(
                &["SERVER", "SESSIONS", "WHY THEY FAILED"],
                &failures,
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_takes_a_server_name_of_any_length() {
        let name = "s".repeat(70_000);
        let bench = StartupBench {
            sessions: 2,
            shared: true,
            servers: vec![ServerBench {
                name: name.clone(),
                ready: 2,
                ..ServerBench::default()
            }],
            wall: Duration::from_millis(5),
        };
        let text = bench.to_text();
        assert!(
            text.lines()
                .any(|line| line.starts_with(&format!("{name}  2"))),
            "the row names the server in full"
        );
    }
}
