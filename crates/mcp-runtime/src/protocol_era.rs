//! Protocol eras: whether a server speaks the stateless revision 2026-07-28 (modern:
//! `server/discover`, then every request carries its version in `_meta`) or only the
//! handshake revisions (`initialize`, 2024-11-05 to 2025-11-25), found once per server
//! configuration and remembered.
//!
//! A local server's era is found by a probe (the specification's stdio
//! backward-compatibility rule): the server is spawned and sent `server/discover`; a
//! discover result means modern, and the connection is kept; an error that is not a
//! modern rejection, or a result of another kind (`{}`), means handshake, and the
//! same process is sent `initialize`, with an id of its own; no
//! answer within a short bound means handshake too, but that process is killed and a
//! fresh one is sent `initialize` (a server that left one request unanswered may not
//! read the next). So a probe of a handshake server costs one round trip, and one
//! extra process start for a silent one. The `EraMemory` makes that a
//! once-per-configuration cost instead of a per-startup one, in the spirit of the
//! shared listings ([`crate::shared_listing`]): "single flight" with baton passing.
//!
//! Invariants:
//! 1. Eras are remembered per `EraKey`: the inputs of the discovery key (scope,
//!    server name, argv, working directory and environment passed, or URL, headers
//!    and token, the execution environment, the client capabilities and client info)
//!    without the protocol version offered, which is what the probe finds out. The key
//!    is a SHA-256 digest; no secret is kept in clear.
//! 2. A known era is kept for the life of the memory: the life of its
//!    [`ListingRegistry`](crate::ListingRegistry), the process for the global one. A
//!    key known as handshake is never probed again; its startups send `initialize`
//!    at once.
//! 3. At most one probe per key is in flight. The first startup that finds the era
//!    unknown probes, holding the key's `ProbeGuard`; every other startup of the key
//!    waits for its answer.
//! 4. A probe that ends without an answer (its server failed in another way, or it
//!    was cancelled or dropped) withdraws: the guard's `Drop` removes the probe (and
//!    never panics) and wakes the waiters, and one of them probes next while the
//!    others wait on it. An error is never handed to a waiter: each startup reports
//!    only its own.
//!    Silence (no answer within the probe bound) looks the same from a modern server
//!    slow to start as from a handshake server that ignores the request, so it is
//!    learnt as handshake only once the fresh process accepted `initialize`; until
//!    then the waiters go on waiting, and if `initialize` fails the probe withdraws.
//!    When the fresh process refuses `initialize` as a method it does not know, the
//!    server speaks 2026-07-28 alone and was slow: a third process is sent
//!    `server/discover` without the bound, and its answer is learnt.
//! 5. A key known as modern is forgotten when a server of that key answers
//!    `server/discover` as a handshake server (the configuration now runs another
//!    program): the startup that saw it falls back to `initialize` on the same
//!    process, and the next startup probes again.
//! 6. A dropped waiter affects nobody, and no probe outlives its guard: once no probe
//!    is in flight, the memory holds known eras only.
//! 7. When the host keeps an [`EraCache`], the prober of a key first takes what an
//!    earlier process learnt of it and tries that era, and what it learns is written
//!    back (see [`cache`]). Within a process the memory stays the authority.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use rmcp::model::ProtocolVersion;
use tokio::sync::watch;

use crate::{
    config::{Protocol, ServerConfig},
    discovery_key::{self, DiscoveryKey, KeyInputs},
};

mod cache;

pub(crate) use cache::Entry;
pub use cache::EraCache;

/// How long a probe waits for the answer to `server/discover` before it takes the
/// server for a handshake server.
pub(crate) const DEFAULT_PROBE_BOUND: Duration = Duration::from_secs(2);

/// The protocol era a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28: `server/discover` and per-request `_meta`.
    Modern,
    /// The handshake revisions: `initialize` first.
    Handshake,
}

pub(crate) use crate::discovery_key::EraKey;

/// Where the eras found are kept. Cheap to clone: clones share one memory.
#[derive(Clone, Default)]
pub(crate) struct EraMemory {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Numbers the probes, so that a withdrawn probe removes only itself.
    probes: u64,
    slots: HashMap<EraKey, Slot>,
}

enum Slot {
    Known(Era),
    Probing {
        probe: u64,
        answer: watch::Receiver<Option<Era>>,
    },
}

/// What a startup learns from the memory.
pub(crate) enum Resolved {
    /// The era is known.
    Known(Era),
    /// Nobody knows it and nobody is finding out: this startup probes.
    Probe(ProbeGuard),
}

impl std::fmt::Debug for EraMemory {
    /// How many eras are known and how many probes are in flight: never the keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        let probing = state.probing();
        f.debug_struct("EraMemory")
            .field("known", &(state.slots.len() - probing))
            .field("probing", &probing)
            .finish()
    }
}

impl State {
    fn probing(&self) -> usize {
        self.slots
            .values()
            .filter(|slot| matches!(slot, Slot::Probing { .. }))
            .count()
    }
}

impl EraMemory {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The era of `key` if it is known; else, if another startup is probing it,
    /// waits for its answer; else makes this startup the key's prober.
    ///
    /// # Concurrent calls
    ///
    /// Calls for one key coalesce: one probes, the others wait (invariant 3). When
    /// the probe withdraws, one waiter is handed the probe (invariant 4).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits has no effect on anyone (invariant 6).
    pub(crate) async fn resolve(&self, key: EraKey) -> Resolved {
        loop {
            let mut answer = {
                let mut state = self.lock();
                match state.slots.get(&key) {
                    Some(Slot::Known(era)) => return Resolved::Known(*era),
                    Some(Slot::Probing { answer, .. }) => answer.clone(),
                    None => {
                        state.probes += 1;
                        let probe = state.probes;
                        let (sender, answer) = watch::channel(None);
                        state.slots.insert(key, Slot::Probing { probe, answer });
                        return Resolved::Probe(ProbeGuard {
                            memory: self.clone(),
                            key,
                            probe,
                            sender,
                            kept: None,
                        });
                    }
                }
            };
            // An answer makes the slot `Known`; a withdrawn probe removes it. Either
            // way, looking again finds out what to do.
            let _ = answer.wait_for(Option::is_some).await;
        }
    }

    /// Forgets that `key` is modern (invariant 5). A key known as handshake, or being
    /// probed, is left as it is.
    pub(crate) fn forget_modern(&self, key: EraKey) {
        let mut state = self.lock();
        if matches!(state.slots.get(&key), Some(Slot::Known(Era::Modern))) {
            state.slots.remove(&key);
        }
    }

    /// How many probes are in flight (0 once every startup settled, invariant 6).
    #[cfg(test)]
    pub(crate) fn probes_in_flight(&self) -> usize {
        self.lock().probing()
    }
}

/// The one probe in flight for a key. [`ProbeGuard::learn`] hands its answer to the
/// waiters; dropping it without an answer withdraws the probe (invariant 4).
pub(crate) struct ProbeGuard {
    memory: EraMemory,
    key: EraKey,
    probe: u64,
    sender: watch::Sender<Option<Era>>,
    /// Where the era learnt is kept for later processes (invariant 7).
    kept: Option<cache::Entry>,
}

impl ProbeGuard {
    /// The era an earlier process learnt, taken from `entry` (a hint to try first), and
    /// `entry` to keep what this probe learns (invariant 7).
    pub(crate) fn recall(&mut self, entry: Option<&cache::Entry>) -> Option<Era> {
        let entry = entry?;
        self.kept = Some(entry.clone());
        entry.take()
    }

    /// Remembers that the key's era is `era`, and wakes the waiters.
    pub(crate) fn learn(self, era: Era) {
        if let Some(entry) = &self.kept {
            entry.keep(era);
        }
        {
            let mut state = self.memory.lock();
            debug_assert!(
                matches!(
                    state.slots.get(&self.key),
                    Some(Slot::Probing { probe, .. }) if *probe == self.probe
                ),
                "a probe stays registered until its guard is dropped (invariant 3)"
            );
            state.slots.insert(self.key, Slot::Known(era));
        }
        self.sender.send_replace(Some(era));
        // `Drop` finds the slot known and leaves it.
    }
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        let mut state = self.memory.lock();
        if matches!(
            state.slots.get(&self.key),
            Some(Slot::Probing { probe, .. }) if *probe == self.probe
        ) {
            state.slots.remove(&self.key);
        }
        // The sender is dropped after the lock is released: waiters that wake on it
        // find the memory already updated.
    }
}

/// What the startups of one runtime need to find their servers' eras: the memory
/// (the listing registry's), the discovery scope (part of every key) and the probe
/// bound.
#[derive(Clone, Debug)]
pub(crate) struct Detection {
    pub(crate) memory: EraMemory,
    pub(crate) scope: String,
    pub(crate) probe_bound: Duration,
    /// What the client offers (part of every key: see [`DiscoveryKey::era`]).
    pub(crate) offered: rmcp::model::ClientConfig,
    /// Where eras are kept across processes, if the host keeps them.
    pub(crate) cache: Option<EraCache>,
}

impl Default for Detection {
    fn default() -> Self {
        Self {
            memory: EraMemory::default(),
            scope: crate::discovery_key::DEFAULT_SCOPE.to_owned(),
            probe_bound: DEFAULT_PROBE_BOUND,
            offered: crate::protocol::client_config(&crate::host::HostHandlers::default()),
            cache: None,
        }
    }
}

impl Detection {
    /// How to start the protocol of `config`'s server, reached through `endpoint`.
    pub(crate) fn plan(&self, config: &ServerConfig, endpoint: &dyn KeyInputs) -> Plan {
        let plan = Plan::new(
            config.protocol,
            &self.memory,
            || {
                DiscoveryKey::era(
                    &self.offered,
                    &self.scope,
                    &config.name,
                    endpoint,
                    &config.environment,
                )
            },
            self.probe_bound,
        );
        match (plan, &self.cache) {
            (
                Plan::Auto {
                    memory,
                    key,
                    probe_bound,
                    ..
                },
                Some(cache),
            ) if endpoint.keeps_era_on_disk() => Plan::Auto {
                memory,
                key,
                probe_bound,
                cached: Some(cache.entry(discovery_key::era_on_disk(
                    &self.offered,
                    &self.scope,
                    &config.name,
                    endpoint,
                    &config.environment,
                ))),
            },
            (plan, _) => plan,
        }
    }
}

/// How a local server's protocol is started.
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    /// `protocol = "auto"`: the era of `key` from `memory`, probed (each probe bounded
    /// by `probe_bound`) when unknown, the era in `cached` tried first.
    Auto {
        memory: EraMemory,
        key: EraKey,
        probe_bound: Duration,
        cached: Option<cache::Entry>,
    },
    /// `initialize` offering the newest handshake revision, accepting every one
    /// mcp-runtime speaks, without looking at any memory: the unit tests' servers.
    #[cfg(test)]
    Handshake,
    /// `protocol` pins this revision: no probe, no fallback.
    Pinned(ProtocolVersion),
}

impl Plan {
    /// The plan for a server configured with `protocol`; `auto` finds its era in
    /// `memory` under `key`.
    pub(crate) fn new(
        protocol: Protocol,
        memory: &EraMemory,
        key: impl FnOnce() -> EraKey,
        probe_bound: Duration,
    ) -> Self {
        let pinned = match protocol {
            Protocol::Auto => {
                return Self::Auto {
                    memory: memory.clone(),
                    key: key(),
                    probe_bound,
                    cached: None,
                };
            }
            Protocol::V2026_07_28 => ProtocolVersion::V_2026_07_28,
            Protocol::V2025_11_25 => ProtocolVersion::V_2025_11_25,
            Protocol::V2025_06_18 => ProtocolVersion::V_2025_06_18,
            Protocol::V2025_03_26 => ProtocolVersion::V_2025_03_26,
            Protocol::V2024_11_05 => ProtocolVersion::V_2024_11_05,
        };
        Self::Pinned(pinned)
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use futures::{FutureExt, poll};

    use super::*;

    fn key(n: u8) -> EraKey {
        EraKey([n; 32])
    }

    fn probes(resolved: Resolved) -> ProbeGuard {
        match resolved {
            Resolved::Probe(guard) => guard,
            Resolved::Known(era) => panic!("expected to probe, the era is known: {era:?}"),
        }
    }

    fn known(resolved: Resolved) -> Era {
        match resolved {
            Resolved::Known(era) => era,
            Resolved::Probe(_) => panic!("expected a known era, was asked to probe"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_probes_once_and_every_waiter_gets_the_answer() {
        let memory = EraMemory::default();
        let prober = probes(memory.resolve(key(1)).await);
        let mut waiters: Vec<_> = (0..31).map(|_| Box::pin(memory.resolve(key(1)))).collect();
        for waiter in &mut waiters {
            assert!(poll!(waiter.as_mut()).is_pending(), "waits for the probe");
        }
        assert_eq!(memory.probes_in_flight(), 1);
        prober.learn(Era::Handshake);
        for waiter in waiters {
            assert_eq!(known(waiter.await), Era::Handshake);
        }
        assert_eq!(memory.probes_in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_known_handshake_key_is_never_probed_again() {
        let memory = EraMemory::default();
        probes(memory.resolve(key(1)).await).learn(Era::Handshake);
        for _ in 0..3 {
            let resolved = memory.resolve(key(1)).now_or_never().expect("no wait");
            assert_eq!(known(resolved), Era::Handshake);
        }
        memory.forget_modern(key(1));
        assert_eq!(known(memory.resolve(key(1)).await), Era::Handshake);
    }

    #[tokio::test(start_paused = true)]
    async fn a_withdrawn_probe_hands_over_to_exactly_one_waiter() {
        let memory = EraMemory::default();
        let prober = probes(memory.resolve(key(1)).await);
        let mut waiters: Vec<_> = (0..4).map(|_| Box::pin(memory.resolve(key(1)))).collect();
        for waiter in &mut waiters {
            assert!(poll!(waiter.as_mut()).is_pending());
        }
        drop(prober); // failed, timed out or cancelled: no answer
        let mut next_probers = Vec::new();
        let mut still_waiting = Vec::new();
        for mut waiter in waiters {
            match poll!(waiter.as_mut()) {
                std::task::Poll::Ready(resolved) => next_probers.push(probes(resolved)),
                std::task::Poll::Pending => still_waiting.push(waiter),
            }
        }
        assert_eq!(next_probers.len(), 1, "one waiter takes the probe over");
        assert_eq!(still_waiting.len(), 3, "no error is handed to the others");
        next_probers.remove(0).learn(Era::Modern);
        for waiter in still_waiting {
            assert_eq!(known(waiter.await), Era::Modern);
        }
        assert_eq!(memory.probes_in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_waiter_affects_nobody() {
        let memory = EraMemory::default();
        let prober = probes(memory.resolve(key(1)).await);
        {
            let mut waiter = pin!(memory.resolve(key(1)));
            assert!(poll!(waiter.as_mut()).is_pending());
        }
        let mut other = Box::pin(memory.resolve(key(1)));
        assert!(poll!(other.as_mut()).is_pending());
        prober.learn(Era::Modern);
        assert_eq!(known(other.await), Era::Modern);
        assert_eq!(memory.probes_in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_forgotten_modern_key_is_probed_by_the_next_startup() {
        let memory = EraMemory::default();
        probes(memory.resolve(key(1)).await).learn(Era::Modern);
        assert_eq!(known(memory.resolve(key(1)).await), Era::Modern);
        memory.forget_modern(key(1));
        let again = probes(memory.resolve(key(1)).await);
        // Forgetting while a probe is in flight leaves the probe alone.
        memory.forget_modern(key(1));
        assert_eq!(memory.probes_in_flight(), 1);
        again.learn(Era::Handshake);
        assert_eq!(known(memory.resolve(key(1)).await), Era::Handshake);
    }

    #[tokio::test(start_paused = true)]
    async fn different_keys_are_probed_independently() {
        let memory = EraMemory::default();
        let one = probes(memory.resolve(key(1)).await);
        let two = probes(memory.resolve(key(2)).await);
        one.learn(Era::Modern);
        drop(two);
        assert_eq!(known(memory.resolve(key(1)).await), Era::Modern);
        let _two_again = probes(memory.resolve(key(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_never_answers_keeps_waiters_waiting_until_dropped() {
        let memory = EraMemory::default();
        let prober = probes(memory.resolve(key(1)).await);
        let mut waiter = Box::pin(memory.resolve(key(1)));
        assert!(poll!(waiter.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(
            poll!(waiter.as_mut()).is_pending(),
            "no answer, no timeout of its own"
        );
        drop(prober);
        let _next = probes(waiter.await);
        assert_eq!(memory.probes_in_flight(), 1);
    }
}
