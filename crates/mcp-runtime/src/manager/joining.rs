//! Servers that settle after [`Runtime::start`](super::Runtime::start) returned: the
//! runtime's startup task, how a settled server joins the runtime, and waiting for a
//! server still starting.
//!
//! Every startup runs in one task the runtime owns (its handle aborts it when the
//! runtime is dropped). The start waits only for what it needs
//! ([`StartOptions::with_optional_grace`](super::StartOptions::with_optional_grace)):
//! the other servers go on starting in that task and join when they settle.
//!
//! Invariants:
//! 1. A server is [`Starting`](super::ServerState::Starting) until its outcome has
//!    been installed, and its outcome is installed once: its `settled` slot goes from
//!    `None` to `Some` and never back.
//! 2. A server that became ready joins in this order: its listing is stored (which
//!    bumps the listings' version, manager invariant 4), its connection is installed,
//!    the catalog that includes its tools is published, and only then is it marked
//!    settled and its `Ready` event sent. So whoever sees it settled (a waiting call)
//!    or ready (the host, on the event channel) finds its tools in the catalog, and
//!    whoever sees its binding finds its listing.
//! 3. No startup outlives the runtime: shutdown and abort cancel the startups still in
//!    progress and wait for the startup task to finish (each cancelled startup ends the
//!    process it spawned) before they end the connections of the servers that joined;
//!    dropping the runtime aborts the task, which drops every startup and with it
//!    every process it spawned.
//! 4. A call to a server still starting waits for its outcome, which its own
//!    `startup_timeout_sec` bounds; a call to a server whose startup failed fails at
//!    once with that startup error.

use std::{
    collections::BTreeSet,
    sync::{Arc, Weak},
    time::Duration,
};

use futures::{StreamExt, stream::FuturesUnordered};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::{Listing, Server, Shared, error::StartError, options, refresh_on_change, startup};
use crate::{
    binding::Binding,
    catalog::QualifiedTool,
    config::Config,
    connection::error::CallError,
    naming::servers_for_qualified_name,
    shared_listing::{ListingRegistry, StartupKeys},
    sync::lock,
    transport::error::StartupError,
};

/// How a server's first startup ended.
pub(super) struct Settled {
    /// How long the startup took.
    pub(super) startup_time: Duration,
    /// Why it failed, if it did.
    pub(super) error: Option<StartupError>,
    /// How many `tools/list` requests the startup sent itself.
    pub(super) tools_list_requests: usize,
    /// Whether its listing was one the server granted to an earlier startup.
    pub(super) served_from_cache: bool,
    /// Where a listing the server granted for it is kept (see
    /// [`crate::shared_listing`], invariant 8).
    pub(super) listing_keys: Option<(ListingRegistry, StartupKeys)>,
    /// Where it runs, for a server that started: what a restart uses.
    pub(super) binding: Option<Binding>,
    /// The OAuth login stored for it when it started, if any.
    pub(super) login: Option<crate::discovery_key::StoredLogin>,
}

impl Server {
    /// How its first startup ended; `None` while it is still starting.
    pub(super) fn settled(&self) -> Option<Arc<Settled>> {
        self.settled.borrow().clone()
    }

    /// Waits until its first startup has settled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub(super) async fn wait_settled(&self) -> Arc<Settled> {
        let mut settled = self.settled.subscribe();
        let settled = settled
            .wait_for(Option::is_some)
            .await
            .expect("the server owns its sender");
        settled.clone().expect("waited for `Some`")
    }
}

/// The runtime's startup task: starts every enabled server of `config` and installs
/// each outcome into the runtime, if it still exists. `done` is dropped when the task
/// ends, however it ends.
pub(super) async fn drive(
    shared: Weak<Shared>,
    config: Config,
    options: options::StartOptions,
    done: watch::Sender<()>,
) {
    startup::start_all(&config, &options, |outcome| {
        // A runtime that is gone does not take it: dropping it ends the server.
        if let Some(shared) = shared.upgrade() {
            shared.install(outcome);
        }
    })
    .await;
    drop(done);
}

impl Shared {
    /// Makes a settled server part of the runtime (invariant 2).
    pub(super) fn install(self: &Arc<Self>, outcome: startup::Outcome) {
        let name = outcome.config.name.as_str();
        let server = &self.servers[name];
        debug_assert!(
            server.settled().is_none(),
            "invariant 1: an outcome is installed once"
        );
        let error = match outcome.result {
            Ok(started) => {
                {
                    let mut listings = lock(&self.listings);
                    listings.version += 1;
                    let version = listings.version;
                    listings.by_server.insert(
                        name.to_owned(),
                        Listing {
                            stored: 0,
                            version,
                            next: 1,
                            tools: started.tools,
                        },
                    );
                }
                lock(&server.live).connection = Some(Arc::new(started.connection));
                self.watch(name, server);
                let generation = server.generation.subscribe();
                *lock(&server.refresher) = Some(AbortOnDropHandle::new(tokio::spawn(
                    refresh_on_change(Arc::downgrade(self), name.to_owned(), generation),
                )));
                self.publish_current();
                None
            }
            Err(error) => Some(error),
        };
        server.settled.send_replace(Some(Arc::new(Settled {
            startup_time: outcome.elapsed,
            error,
            tools_list_requests: outcome.tools_list_requests,
            served_from_cache: outcome.served_from_cache,
            listing_keys: outcome.listing_keys,
            binding: outcome.binding,
            login: outcome.login,
        })));
    }

    /// Waits as [`Runtime::start`] describes; when a required server fails, shuts
    /// everything down and says which.
    pub(super) async fn wait_until_usable(&self, wait: options::Wait) -> Result<(), StartError> {
        let required: Vec<(&String, &Server)> = self
            .servers
            .iter()
            .filter(|(_, server)| server.config.required)
            .collect();
        // The first failure fails the start at once: no other required server's
        // startup is waited for, since the start has failed whatever it does.
        let mut settling: FuturesUnordered<_> = required
            .iter()
            .map(|(_, server)| server.wait_settled())
            .collect();
        let mut failed = false;
        while let Some(settled) = settling.next().await {
            if settled.error.is_some() {
                failed = true;
                break;
            }
        }
        drop(settling);
        if failed {
            // With every other required server that has failed by now.
            let failures: Vec<(String, StartupError)> = required
                .iter()
                .filter_map(|(name, server)| {
                    Some(((*name).clone(), server.settled()?.error.clone()?))
                })
                .collect();
            debug_assert!(!failures.is_empty(), "the one just seen is among them");
            self.shutdown().await;
            return Err(StartError::RequiredServersFailed { failures });
        }
        match wait {
            options::Wait::All => self.startups_ended().await,
            options::Wait::RequiredThenGrace(grace) => {
                // Running out of grace is the point: the rest start in the background.
                let _ = tokio::time::timeout(grace, self.startups_ended()).await;
            }
        }
        Ok(())
    }

    /// Waits until the startup task has ended: every server has settled, or the task
    /// was aborted.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub(super) async fn startups_ended(&self) {
        let mut done = self.startups_done.clone();
        // The sender is dropped when the task ends.
        while done.changed().await.is_ok() {}
    }

    /// Cancels the startups still in progress and waits until they have ended
    /// (invariant 3).
    pub(super) async fn stop_startups(&self) {
        self.startups_cancel.cancel();
        self.startups_ended().await;
    }

    /// The server and raw tool name `qualified_name` routes to, after waiting for the
    /// servers it may belong to that are still starting (invariant 4).
    ///
    /// The servers it may belong to are told from its `mcp__SERVER__` prefix; when the
    /// prefix names none of them, no server can own it (the server a name is given
    /// for is always among them) and it is unknown at once.
    pub(super) async fn route(
        &self,
        qualified_name: &str,
    ) -> Result<Arc<QualifiedTool>, CallError> {
        let resolve = || self.catalog.borrow().resolve_shared(qualified_name);
        // A name in the catalog is its server's, ready: a call costs no look at the
        // other servers' namespaces (each one a hash).
        if let Some(routed) = resolve() {
            return Ok(routed);
        }
        let named =
            servers_for_qualified_name(qualified_name, self.servers.keys().map(String::as_str));
        if named.is_empty() {
            debug_assert!(
                self.catalog.borrow().resolve(qualified_name).is_none(),
                "naming invariant 4: a name's server is told from its prefix"
            );
            let disabled = servers_for_qualified_name(
                qualified_name,
                self.disabled.iter().map(String::as_str),
            );
            return Err(match disabled[..] {
                [server] => CallError::ServerDisabled {
                    server: server.to_owned(),
                },
                _ => self.unknown_tool(qualified_name),
            });
        }
        let candidates: BTreeSet<&str> = named.iter().copied().collect();
        loop {
            if let Some(routed) = resolve() {
                return Ok(routed);
            }
            let starting: Vec<&Server> = candidates
                .iter()
                .map(|name| &self.servers[*name])
                .filter(|server| server.settled().is_none())
                .collect();
            if starting.is_empty() {
                break;
            }
            // Whichever settles first may be the owner: look again then.
            futures::future::select_all(
                starting
                    .into_iter()
                    .map(|server| Box::pin(server.wait_settled())),
            )
            .await;
        }
        // Not in the catalog and nothing left to wait for: a server it can only belong
        // to that did not start says why.
        let failed = named.iter().find_map(|name| {
            let error = self.servers[*name].settled()?.error.clone()?;
            Some((name.to_string(), error))
        });
        Err(match failed {
            Some((server, source)) => CallError::ServerNotStarted { server, source },
            None => self.unknown_tool(qualified_name),
        })
    }

    /// The error of a call to `qualified_name`, which no listed tool has, with the
    /// listed name nearest to it when one is near enough.
    fn unknown_tool(&self, qualified_name: &str) -> CallError {
        let catalog = self.catalog.borrow();
        let names = catalog.tools().map(|tool| &*tool.qualified_name);
        CallError::UnknownTool {
            name: qualified_name.to_owned(),
            nearest: nearest_name(qualified_name, names).map(str::to_owned),
        }
    }
}

/// Of `names`, the one nearest to `asked` when it is near enough to be what was
/// meant: case ignored, at most one edit per three characters of what follows the
/// prefix the two share (and at least one), so that the shared `mcp__server__` of a
/// server's names does not make every short name near; the first of equals.
fn nearest_name<'n>(asked: &str, names: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    let asked = asked.to_lowercase();
    names
        .filter_map(|name| {
            let lowered = name.to_lowercase();
            let shared = asked
                .chars()
                .zip(lowered.chars())
                .take_while(|(a, b)| a == b)
                .count();
            let limit = ((asked.chars().count() - shared) / 3).max(1);
            let distance = strsim::damerau_levenshtein(&asked, &lowered);
            (distance <= limit).then_some((distance, name))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}
