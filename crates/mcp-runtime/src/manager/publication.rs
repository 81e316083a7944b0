//! Catalog publication: each server's listing, stored under a generation so that a
//! late answer never replaces a newer one, and the catalog built from the listings
//! and published in one step, only ever newer (the manager's invariants 2 to 4). A
//! server's announced change refreshes its listing here too.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Weak,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::sync::watch;

use super::Shared;
use crate::{
    catalog::Catalog,
    config::ServerConfig,
    shared_listing::SharedTools,
    sync::lock,
    transport::error::{ListToolsError, RestartError},
};

/// The listing of every server that started, and their version.
pub(super) struct Listings {
    /// How many listings were stored since the start: a catalog built at version `v`
    /// includes every listing stored up to `v`.
    pub(super) version: u64,
    pub(super) by_server: BTreeMap<String, Listing>,
}

/// A server's current tool listing and the generation of the request it came from.
pub(super) struct Listing {
    /// The generation of the listing held in `tools`.
    pub(super) stored: u64,
    /// The [`Listings::version`] at which `tools` was stored: a catalog built at an
    /// earlier version does not include it.
    pub(super) version: u64,
    /// The generation the next request takes.
    pub(super) next: u64,
    pub(super) tools: SharedTools,
}

impl Shared {
    pub(super) async fn refresh(self: &Arc<Self>, name: &str) -> Result<(), ListToolsError> {
        let server = self
            .servers
            .get(name)
            .ok_or_else(|| ListToolsError::UnknownServer {
                server: name.to_owned(),
            })?;
        let (connection, live) = self.available(name).await.map_err(|error| match error {
            RestartError::NeverStarted { server } => ListToolsError::ServerUnavailable { server },
            error => ListToolsError::Restart(error),
        })?;
        let generation = self.next_generation(name);
        let tools = connection
            .list_tools(&server.config, &AtomicUsize::new(0))
            .await?
            .tools;
        self.usable(name, live);
        if let Some(version) = self.store(name, generation, Arc::new(tools)) {
            self.publish_current();
            debug_assert!(
                self.published.load(Ordering::Relaxed) >= version,
                "invariant 4: the published catalog includes the listing just stored"
            );
        }
        Ok(())
    }

    /// Takes the generation of a new `tools/list` request for `name`.
    pub(super) fn next_generation(&self, name: &str) -> u64 {
        let mut listings = lock(&self.listings);
        let listing = listings
            .by_server
            .get_mut(name)
            .expect("a server with a connection has a listing");
        listing.next += 1;
        listing.next - 1
    }

    /// Stores the answer to `name`'s request of `generation`, unless a later
    /// request's answer is already stored; returns the listings' new version if it
    /// stored it.
    pub(super) fn store(&self, name: &str, generation: u64, tools: SharedTools) -> Option<u64> {
        let mut listings = lock(&self.listings);
        let version = listings.version + 1;
        let listing = listings
            .by_server
            .get_mut(name)
            .expect("a server with a connection has a listing");
        debug_assert!(
            generation < listing.next,
            "invariant 2: a generation is taken before its request"
        );
        if generation <= listing.stored {
            return None;
        }
        listing.stored = generation;
        listing.version = version;
        listing.tools = tools;
        listings.version = version;
        Some(version)
    }

    /// The catalog of every server's listing, each filtered by its server's tool
    /// filters, built from `previous` (whose names stay, catalog invariant 2).
    pub(super) fn build_catalog(&self, previous: &Catalog) -> Catalog {
        let (catalog, names) = {
            let listings = lock(&self.listings);
            let catalog = Catalog::build(
                previous,
                listings
                    .by_server
                    .iter()
                    .map(|(name, listing)| (&self.servers[name].config, listing.tools.as_slice())),
            );
            (
                catalog,
                listings.by_server.keys().cloned().collect::<Vec<_>>(),
            )
        };
        names.iter().fold(catalog, |catalog, name| {
            catalog.with_server_instructions(name, self.instructions(name).as_deref())
        })
    }

    /// What `name`'s server says about how to use it, on its current connection; the
    /// catalog's search matches it.
    fn instructions(&self, name: &str) -> Option<String> {
        self.servers[name]
            .connection()
            .and_then(|connection| connection.instructions())
    }

    /// The listings' version, and the listings stored after version `since` with
    /// their servers' configurations; the lock is held only to copy them.
    pub(super) fn stored_since(&self, since: u64) -> (u64, Vec<(&ServerConfig, SharedTools)>) {
        let listings = lock(&self.listings);
        let changed = listings
            .by_server
            .iter()
            .filter(|(_, listing)| listing.version > since)
            .map(|(name, listing)| (&self.servers[name].config, listing.tools.clone()))
            .collect();
        (listings.version, changed)
    }

    /// Builds the catalog of the current listings and publishes it to every
    /// subscriber, if they are newer than those of the published catalog; says
    /// whether it did. Snapshot, naming and publication are one step under the
    /// catalog channel's lock (invariant 4), with no await inside. Only the servers
    /// whose listing was stored since the published catalog are named again: the
    /// cost is their tools', not the catalog's.
    pub(super) fn publish_current(&self) -> bool {
        self.catalog.send_if_modified(|current| {
            let published = self.published.load(Ordering::Relaxed);
            let (version, changed) = self.stored_since(published);
            if version <= published {
                return false;
            }
            let catalog =
                changed
                    .iter()
                    .fold(Catalog::clone(current), |catalog, (config, tools)| {
                        let instructions = self.instructions(&config.name);
                        catalog
                            .with_server(config, tools)
                            .with_server_instructions(&config.name, instructions.as_deref())
                    });
            self.published.store(version, Ordering::Relaxed);
            *current = Arc::new(catalog);
            true
        })
    }
}

/// Refreshes `name`'s listing each time its server announces a change, on whichever
/// connection is current (`generation` says when a restart replaced it), for as long
/// as the runtime exists.
pub(super) async fn refresh_on_change(
    shared: Weak<Shared>,
    name: String,
    mut generation: watch::Receiver<u64>,
) {
    loop {
        generation.borrow_and_update();
        let changed = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            shared.servers[&name]
                .connection()
                .map(|c| c.tools_changed())
        };
        let Some(changed) = changed else {
            return;
        };
        tokio::select! {
            () = changed.notified() => {}
            replaced = generation.changed() => match replaced {
                Ok(()) => continue,
                Err(_) => return,
            },
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        // The listing the server granted for reuse is stale now.
        if let Some(settled) = shared.servers[&name].settled()
            && let Some((registry, keys)) = &settled.listing_keys
        {
            registry.revoke_everywhere(keys).await;
        }
        // Boxed: the task waits with a small future, not a refresh's (every server
        // has a refresher).
        if let Err(error) = Box::pin(shared.refresh(&name)).await
            && !shared.closing.is_cancelled()
        {
            tracing::warn!(server = %name, error = %crate::transport::error::chain(&error), "refreshing tools after list_changed failed");
        }
    }
}
