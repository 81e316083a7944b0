//! Shared startup listings: one `tools/list` answer for a burst of equivalent
//! startups, while each keeps its own connection.
//!
//! Agent hosts start the same servers many times at once (one runtime per session,
//! subagent or window). Each startup needs its own connection, but all of them ask the
//! server for the same tool list at the same moment. A [`ListingRegistry`] lets those
//! startups share one answer. It is not a cache: it holds a listing only while a
//! startup that may still use it is pending (or, with a burst window, until that
//! window has passed).
//!
//! Invariants:
//! 1. Startups share only within one `DiscoveryKey`: the host's discovery scope plus
//!    every input that can change the answer (server name, argv, working directory and
//!    the environment actually passed, or URL and the headers and token actually sent,
//!    the execution environment, the client capabilities and protocol version offered).
//!    For a server reached with an OAuth login, the login's identity stands for its
//!    token (`LoginIdentity`: issuer, client id, resource and the account's subject,
//!    or the store entry's login id where the subject is unknown); the access token,
//!    which differs between runtimes of one account, is never part of the key. A login
//!    without an identity shares nothing, and neither does a listing during which the
//!    stored login changed (see `manager::startup`).
//!    The key is a SHA-256 digest; no secret is kept in clear. The same inputs without
//!    the protocol version are the key of the server's protocol era (whether it speaks
//!    2026-07-28 or a handshake revision), which the registry also holds.
//! 2. Every startup takes a stamp from the registry's counter when it begins, and every
//!    listing attempt takes one just before its `tools/list` is sent. A listing may
//!    serve a startup only if the listing's stamp is greater than the startup's: its
//!    request was sent after the startup began. A startup that begins later never
//!    receives an older answer.
//! 3. Each attempt has one leader, the startup whose own connection sends the request.
//!    Its `LeaderGuard` publishes a success; if the leader fails, is cancelled or is
//!    dropped, the guard's `Drop` withdraws the attempt (and never panics), and the
//!    waiters wake up and look again: one of them leads a new attempt on its own
//!    connection, the others wait on it. An error is never handed to a waiter.
//! 4. A startup leads at most one attempt; when its own attempt fails it reports its
//!    own error.
//! 5. A dropped waiter affects nobody. An entry is removed as soon as no pending startup
//!    remains for its key (with a burst window, once its listings' windows have passed
//!    too, at the registry's next use), so an idle registry is empty.
//!
//! One exception, granted only by the server: a listing the server said may be reused
//! (a 2026-07-28 `tools/list` result with `ttlMs` > 0 on every page; see
//! `Grant`) also serves startups that begin later, until it expires:
//! 6. A `"private"` listing (or one without `cacheScope`) serves only startups of the
//!    same `DiscoveryKey`: same scope, same inputs, the same credentials. A `"public"`
//!    listing serves startups whose inputs differ at most in their credentials (the
//!    bearer token and the headers marked sensitive), in the same scope
//!    (`DiscoveryKey::public`). The two are kept apart: a private grant is never
//!    found through a public key, nor the other way round.
//! 7. A granted listing is fresh for `ttlMs` from the moment its answer was published
//!    (the shortest of its pages', capped at `MAX_GRANT` (24 hours)) and is never served after;
//!    a listing of a handshake-era connection, or with `ttlMs` 0 or absent on any page,
//!    grants nothing, and the burst-only rule above stands unchanged.
//! 8. A `notifications/tools/list_changed` from the server revokes its grants
//!    (`ListingRegistry::revoke`): the next startup asks again, and an answer to a
//!    request sent before the change grants nothing, under either key.
//! 9. A fresh burst listing (invariant 2) is preferred to a granted one; a granted one
//!    is preferred to waiting for an attempt or leading one.
//!
//! One widening, granted only by the host: a registry made with a burst window
//! ([`ListingRegistry::with_burst_window`]) counts startups that arrive spread over
//! that window as one burst. A gateway's client sessions come in bursts a few
//! milliseconds to a second wide, longer than one startup takes to send its
//! `tools/list`:
//! 10. A startup may also take an attempt whose request was sent less than its
//!     registry's window before it began, in flight or answered; an answered one is
//!     kept for the window of the registry whose startup asked, from when its request
//!     was sent, and no longer. The default window is zero: invariant 2 alone.
//! 11. A `notifications/tools/list_changed` from the server also ends the window of
//!     every attempt sent before it (`ListingRegistry::revoke`), for the startups
//!     pending then as for those that begin later: each takes only what invariant 2
//!     allows of them.
//!
//! One widening, across machines: a registry made with a fleet
//! ([`ListingRegistry::with_fleet`], the `fleet` feature) shares its listings with the
//! registries of every runtime linked to the same Redis under the same fleet key:
//! 12. A startup that would lead an attempt in its own registry first asks the fleet
//!     (see `fleet`'s invariants): it takes a listing another runtime published that
//!     invariants 2 and 10 would allow, or a grant, or waits for another runtime's
//!     attempt (within `FLEET_WAIT`, and within half the time its startup has
//!     left, the other half for its own `tools/list`), or leads, publishing its answer to the fleet as
//!     well as to its own registry. Waiters in its own registry wait on it as before.
//! 13. A server's `tools/list_changed` seen by any runtime of the fleet revokes the
//!     fleet's grants and windows for its key, and those of every runtime's registry.
//! 14. When the fleet cannot be reached, or an entry fails its check, the startup
//!     leads in its own registry, as without a fleet.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex, MutexGuard, OnceLock, atomic::AtomicBool},
    time::Duration,
};

use rmcp::model::{CacheScope, ClientConfig};
use tokio::{sync::watch, time::Instant};

pub(crate) use crate::discovery_key::DiscoveryKey;
use crate::{
    catalog::ListedTool,
    config::{Environment, Protocol},
    discovery_key::{KeyInputs, LoginIdentity},
    protocol_era::EraMemory,
};

/// Tools as one `tools/list` answered them, shared between startups.
pub(crate) type SharedTools = Arc<Vec<ListedTool>>;

/// The longest a server's grant is honoured, whatever `ttlMs` it names.
pub(crate) const MAX_GRANT: Duration = Duration::from_secs(24 * 60 * 60);

/// A server's leave to reuse one listing for later startups: every page of a
/// 2026-07-28 `tools/list` answer carried `ttlMs` > 0 (the shortest is kept) and,
/// if any page was `"private"` or named no scope, the whole listing is private.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) ttl: Duration,
    pub(crate) scope: Scope,
}

/// Whom a granted listing may serve (invariant 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Startups with the same credentials.
    Private,
    /// Startups whose inputs differ at most in their credentials.
    Public,
}

impl Grant {
    /// The grant of a listing whose pages carried these hints, in order: `None` unless
    /// every page named a positive `ttlMs`.
    pub(crate) fn of_pages(
        pages: impl IntoIterator<Item = (Option<u64>, Option<CacheScope>)>,
    ) -> Option<Self> {
        let mut grant: Option<Self> = None;
        for (ttl_ms, scope) in pages {
            let ttl = Duration::from_millis(ttl_ms.filter(|&ms| ms > 0)?);
            // No scope named (or one this version of rmcp does not know): kept to the
            // caller, the safe reading.
            let scope = match scope {
                Some(CacheScope::Public) => Scope::Public,
                _ => Scope::Private,
            };
            grant = Some(match grant {
                None => Self { ttl, scope },
                Some(grant) => Self {
                    ttl: grant.ttl.min(ttl),
                    scope: if grant.scope == Scope::Private || scope == Scope::Private {
                        Scope::Private
                    } else {
                        Scope::Public
                    },
                },
            });
        }
        grant
    }
}

/// The longest a startup waits for another runtime's attempt in the fleet before it
/// lists alone (invariant 12).
#[cfg(feature = "fleet")]
const FLEET_WAIT: Duration = Duration::from_secs(10);

/// A listing a server granted, until it expires.
struct Granted {
    tools: SharedTools,
    expires: Instant,
}

/// Where overlapping startups find each other's listings.
///
/// Cheap to clone: clones share one registry. A host that wants sharing across every
/// runtime of the process uses [`ListingRegistry::global`] (the default of
/// [`StartOptions`](crate::StartOptions)); one that wants isolation passes its own.
#[derive(Clone, Default)]
pub struct ListingRegistry {
    state: Arc<Mutex<State>>,
    /// The protocol eras found by startups using this registry.
    eras: EraMemory,
    /// How long after an attempt's request was sent a startup that begins may still
    /// take it (invariant 10); zero by default.
    window: Duration,
    /// The fleet this registry shares with (invariant 12).
    #[cfg(feature = "fleet")]
    fleet: Option<Arc<FleetLink>>,
}

/// A registry's fleet, and the task that revokes its listings when another runtime of
/// the fleet saw a server change (invariant 13).
#[cfg(feature = "fleet")]
struct FleetLink {
    fleet: crate::fleet::Fleet,
    /// The keys whose change the fleet could not be told (see
    /// `ListingRegistry::revoke_everywhere`): the server's private key and its
    /// public one, which the server's other identities share.
    untold: Arc<Mutex<Untold>>,
    _listener: tokio_util::task::AbortOnDropHandle<()>,
    /// Tells the fleet the changes it could not be told, once a second until it
    /// takes them.
    _teller: tokio_util::task::AbortOnDropHandle<()>,
}

/// How often the changes the fleet could not be told are told again.
#[cfg(feature = "fleet")]
const TELL_AGAIN: Duration = Duration::from_secs(1);

/// The keys whose server changed while the fleet could not be told, each with the
/// number of the last such change (see `ListingRegistry::revoke_everywhere`).
#[cfg(feature = "fleet")]
#[derive(Default)]
struct Untold {
    keys: HashMap<DiscoveryKey, u64>,
    /// The startups' keys each change was seen under, by private key.
    servers: HashMap<DiscoveryKey, (StartupKeys, u64)>,
    changes: u64,
}

#[cfg(feature = "fleet")]
impl Untold {
    /// A change of the server of `keys` the fleet could not be told.
    fn add(&mut self, keys: &StartupKeys) {
        self.changes += 1;
        self.keys.insert(keys.private, self.changes);
        self.keys.insert(keys.public, self.changes);
        self.servers.insert(keys.private, (*keys, self.changes));
    }

    /// The changes untold, each with the keys it was seen under.
    fn pending(&self) -> Vec<(StartupKeys, u64)> {
        self.servers.values().copied().collect()
    }

    /// The last change untold that a startup of `keys` must tell first, if any.
    fn of(&self, keys: &StartupKeys) -> Option<u64> {
        [&keys.private, &keys.public]
            .into_iter()
            .filter_map(|key| self.keys.get(key).copied())
            .max()
    }

    /// Tells `fleet` the changes of `keys` up to the `seen`th, forgotten in
    /// `untold` once it takes them.
    async fn tell(
        untold: &Mutex<Self>,
        fleet: &crate::fleet::Fleet,
        keys: &StartupKeys,
        seen: u64,
    ) -> Result<(), crate::fleet::Unavailable> {
        let slot = fleet.slot(&keys.private.0, &keys.public.0);
        fleet.revoke(&slot).await?;
        crate::sync::lock(untold).told(keys, seen);
        Ok(())
    }

    /// The fleet was told the changes of `keys` up to the `seen`th: a later one,
    /// untold meanwhile, stays.
    fn told(&mut self, keys: &StartupKeys, seen: u64) {
        for key in [&keys.private, &keys.public] {
            if self.keys.get(key).is_some_and(|&change| change <= seen) {
                self.keys.remove(key);
            }
        }
        if (self.servers.get(&keys.private)).is_some_and(|&(_, change)| change <= seen) {
            self.servers.remove(&keys.private);
        }
    }
}

impl std::fmt::Debug for ListingRegistry {
    /// How many discovery keys have startups pending: never the keys themselves
    /// (hashes of what servers are sent, tokens included).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("ListingRegistry")
            .field("pending_keys", &state.entries.len())
            .field("granted_listings", &state.granted.len())
            .field("eras", &self.eras)
            .field("window", &self.window)
            .field("fleet", &self.fleet_name())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// The stamp counter: startups and attempts take increasing values from it.
    clock: u64,
    entries: HashMap<DiscoveryKey, Entry>,
    /// Listings servers let later startups reuse, by private or public key
    /// (invariants 6 and 7).
    granted: HashMap<DiscoveryKey, Granted>,
    /// The clock at each grant key's last revocation, while an attempt sent before it
    /// may still answer: its answer grants nothing (invariant 8).
    grants_revoked: HashMap<DiscoveryKey, u64>,
}

impl State {
    /// A granted listing for a startup of `key` and `public`, if one is fresh; drops
    /// the expired ones it finds.
    fn granted(&mut self, keys: &StartupKeys) -> Option<SharedTools> {
        let now = Instant::now();
        for key in [keys.private, keys.public] {
            match self.granted.get(&key) {
                Some(granted) if granted.expires > now => return Some(granted.tools.clone()),
                Some(_) => {
                    self.granted.remove(&key);
                }
                None => {}
            }
        }
        None
    }
}

#[derive(Default)]
struct Entry {
    /// The startups of this key that have not settled their listing: the stamp after
    /// which an attempt may serve each (`Startup::since`), and its own stamp.
    pending: BTreeSet<(u64, u64)>,
    /// Attempts whose `tools/list` is in flight, by stamp.
    attempts: BTreeMap<u64, Attempt>,
    /// Successful listings a pending startup may take, or one that begins within the
    /// window, by stamp.
    listings: BTreeMap<u64, Listing>,
    /// Attempts up to this stamp serve no startup by the window alone (invariant 11).
    revoked: u64,
}

/// An attempt in flight, and when its request was sent.
struct Attempt {
    sent: Instant,
    receiver: watch::Receiver<Option<SharedTools>>,
    /// The public key its answer may be granted under.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    public: DiscoveryKey,
}

/// An answered attempt: when its request was sent, until when it is kept for the
/// burst window of the startup that asked (invariant 10), and its tools.
struct Listing {
    sent: Instant,
    kept_until: Instant,
    tools: SharedTools,
}

impl Entry {
    /// The stamp after which an attempt may serve a startup with `stamp` beginning
    /// `now`: its own (invariant 2), or the one before the oldest attempt sent less
    /// than `window` before (invariants 10 and 11).
    fn since(&self, stamp: u64, now: Instant, window: Duration) -> u64 {
        let within = |at: u64, sent: Instant| self.within(at, sent, now, window);
        // An attempt's stamp and its sending time are both taken under the registry's
        // lock, so stamps grow with time: the first attempt of each map within the
        // window is its oldest.
        let attempt = self
            .attempts
            .iter()
            .find(|(at, attempt)| within(**at, attempt.sent));
        let listing = self
            .listings
            .iter()
            .find(|(at, listing)| within(**at, listing.sent) && now < listing.kept_until);
        [attempt.map(|(at, _)| *at), listing.map(|(at, _)| *at)]
            .into_iter()
            .flatten()
            .min()
            .map_or(stamp, |oldest| oldest - 1)
    }

    /// Whether the attempt with stamp `at`, sent at `sent`, may serve a startup that
    /// begins `now` by the window alone (invariants 10 and 11); never with no window.
    fn within(&self, at: u64, sent: Instant, now: Instant, window: Duration) -> bool {
        at > self.revoked && now.saturating_duration_since(sent) < window
    }

    /// Ends the window of every attempt made so far, the counter standing at
    /// `clock`: the server changed (invariants 8 and 11).
    fn revoke(&mut self, clock: u64, now: Instant) {
        self.revoked = clock;
        self.prune(now);
    }

    /// Drops listings that no pending startup may take (invariant 2), and whose
    /// window has passed or was ended (invariants 10 and 11).
    fn prune(&mut self, now: Instant) {
        let oldest_pending = self.pending.first().map(|&(since, _)| since);
        let revoked = self.revoked;
        self.listings.retain(|&stamp, listing| {
            oldest_pending.is_some_and(|oldest| stamp > oldest)
                || (stamp > revoked && now < listing.kept_until)
        });
    }

    fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.attempts.is_empty() && self.listings.is_empty()
    }
}

impl ListingRegistry {
    /// A new, empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide registry.
    pub fn global() -> &'static Self {
        static GLOBAL: OnceLock<ListingRegistry> = OnceLock::new();
        GLOBAL.get_or_init(Self::new)
    }

    /// This registry, counting startups that begin up to `window` after another's
    /// `tools/list` was sent as one burst with it: they take its answer rather than
    /// asking themselves. For a host whose startups arrive spread out, as a gateway's
    /// client sessions do; a server's `tools/list_changed` ends the window.
    ///
    /// A clone shares the registry's listings but has its own window: its startups
    /// take what was sent within it, and the answers they ask for are kept for it.
    pub fn with_burst_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// This registry, sharing its listings with every runtime linked to `fleet`
    /// (invariants 12 to 14): a burst of startups of one server across all of them
    /// lists it once. Must be called inside a tokio runtime.
    ///
    /// Clones share the fleet, as they share the registry.
    #[cfg(feature = "fleet")]
    pub fn with_fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        let state = Arc::downgrade(&self.state);
        let mut changes = fleet.changes();
        let listener_fleet = fleet.clone();
        let listener = tokio::spawn(async move {
            loop {
                let id = match changes.recv().await {
                    // Changes may have been missed: every key is revoked.
                    Ok(id) if id.is_empty() => None,
                    Ok(id) => Some(id),
                    // Changes were missed: every key is revoked.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(state) = state.upgrade() else { return };
                let mut state = crate::sync::lock(&state);
                let named = |key: &DiscoveryKey| {
                    id.as_ref()
                        .is_none_or(|id| listener_fleet.slot_id(&key.0) == *id)
                };
                state.granted.retain(|key, _| !named(key));
                let clock = state.clock;
                // An answer in flight grants nothing under a key named (invariant 8):
                // its attempt's private key, or the public one it carries.
                let State {
                    entries,
                    grants_revoked,
                    ..
                } = &mut *state;
                for (key, entry) in entries
                    .iter()
                    .filter(|(_, entry)| !entry.attempts.is_empty())
                {
                    let publics = entry.attempts.values().map(|attempt| attempt.public);
                    for key in publics.chain([*key]).filter(|key| named(key)) {
                        grants_revoked.insert(key, clock);
                    }
                }
                let now = Instant::now();
                state.entries.retain(|key, entry| {
                    if named(key) {
                        entry.revoke(clock, now);
                    }
                    !entry.is_idle()
                });
            }
        });
        let untold = Arc::new(Mutex::new(Untold::default()));
        let teller = {
            let (fleet, untold) = (fleet.clone(), Arc::downgrade(&untold));
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(TELL_AGAIN);
                loop {
                    ticks.tick().await;
                    let Some(untold) = untold.upgrade() else {
                        return;
                    };
                    let pending = crate::sync::lock(&untold).pending();
                    for (keys, seen) in pending {
                        if Untold::tell(&untold, &fleet, &keys, seen).await.is_err() {
                            break;
                        }
                    }
                }
            })
        };
        self.fleet = Some(Arc::new(FleetLink {
            fleet,
            untold,
            _listener: tokio_util::task::AbortOnDropHandle::new(listener),
            _teller: tokio_util::task::AbortOnDropHandle::new(teller),
        }));
        self
    }

    /// Whether a revocation of `key` holds back the answers in flight.
    #[cfg(all(test, feature = "fleet"))]
    pub(crate) fn heard_revoked(&self, key: &DiscoveryKey) -> bool {
        self.lock().grants_revoked.contains_key(key)
    }

    /// The fleet this registry shares with, if any.
    #[cfg(feature = "fleet")]
    pub fn fleet(&self) -> Option<&crate::fleet::Fleet> {
        self.fleet.as_ref().map(|link| &link.fleet)
    }

    /// The replica name of the registry's fleet, for `Debug`.
    fn fleet_name(&self) -> Option<&str> {
        #[cfg(feature = "fleet")]
        if let Some(fleet) = self.fleet() {
            return Some(fleet.replica());
        }
        None
    }

    /// Whether the registry holds nothing: no pending startup, no attempt, no listing
    /// (a listing kept for a burst window counts until the window has passed, and is
    /// dropped then, here or at the registry's next use), no listing a server granted.
    /// The protocol eras it remembers do not count: they are kept for its whole life.
    pub fn is_empty(&self) -> bool {
        let mut state = self.lock();
        state.prune(Instant::now());
        state.entries.is_empty() && state.granted.is_empty() && state.grants_revoked.is_empty()
    }

    /// Forgets the listings granted for `keys` and ends the burst window of every
    /// attempt sent so far: the server said its tools changed (invariants 8 and 11).
    ///
    /// With a fleet, the fleet is told too (invariant 13), before this returns: a
    /// listing the runtime asks for next is one the fleet may share again. Redis is
    /// given its short timeout, no more.
    ///
    /// The fleet is told first: a startup of this registry that asks it after the
    /// local revocation finds nothing from before the change. A fleet that cannot be
    /// told is told again every second until it takes the change, and before this
    /// registry asks it for the key again, or for another identity's key of the
    /// server (which its public grants serve); until then those startups list alone
    /// (what the fleet holds may be stale).
    pub(crate) async fn revoke_everywhere(&self, keys: &StartupKeys) {
        #[cfg(feature = "fleet")]
        if let Some(link) = &self.fleet {
            let slot = link.fleet.slot(&keys.private.0, &keys.public.0);
            if link.fleet.revoke(&slot).await.is_err() {
                tracing::warn!(
                    "a server's tool change could not be told to the fleet: it is told again every second; until the fleet takes it, this replica lists the server alone, and the others may serve its old tools"
                );
                crate::sync::lock(&link.untold).add(keys);
            }
        }
        self.revoke(keys);
    }

    /// Forgets the listings granted for `keys` in this registry alone, and ends the
    /// burst window of every attempt sent so far.
    pub(crate) fn revoke(&self, keys: &StartupKeys) {
        let mut state = self.lock();
        state.granted.remove(&keys.private);
        state.granted.remove(&keys.public);
        let clock = state.clock;
        state.grants_revoked.insert(keys.private, clock);
        state.grants_revoked.insert(keys.public, clock);
        if let Some(entry) = state.entries.get_mut(&keys.private) {
            entry.revoke(clock, Instant::now());
            if entry.is_idle() {
                state.entries.remove(&keys.private);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The protocol eras remembered for the startups using this registry (see
    /// [`crate::protocol_era`]): a registry of its own also isolates them.
    pub(crate) fn eras(&self) -> &EraMemory {
        &self.eras
    }

    /// Registers a startup that begins now.
    pub(crate) fn begin(&self, keys: StartupKeys) -> Startup {
        let now = Instant::now();
        let mut state = self.lock();
        // Listings kept for a window outlive their startups: drop the ones whose
        // window has passed, whatever their key.
        state.prune(now);
        state.clock += 1;
        let stamp = state.clock;
        let entry = state.entries.entry(keys.private).or_default();
        let since = entry.since(stamp, now, self.window);
        let fresh = entry.pending.insert((since, stamp));
        debug_assert!(fresh, "stamps are never reused");
        Startup {
            registry: self.clone(),
            keys,
            stamp,
            since,
        }
    }
}

impl State {
    /// Drops the listings whose window has passed and no pending startup may take,
    /// and the entries left idle.
    fn prune(&mut self, now: Instant) {
        self.entries.retain(|_, entry| {
            entry.prune(now);
            !entry.is_idle()
        });
        // A revocation matters while an attempt older than it is in flight.
        let oldest = self
            .entries
            .values()
            .filter_map(|entry| entry.attempts.keys().next().copied())
            .min();
        self.grants_revoked
            .retain(|_, revoked| oldest.is_some_and(|oldest| oldest <= *revoked));
    }
}

/// The two keys of a startup: its [`DiscoveryKey::new`], which bursts share and
/// private grants are kept under, and its [`DiscoveryKey::public`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StartupKeys {
    pub(crate) private: DiscoveryKey,
    pub(crate) public: DiscoveryKey,
}

impl StartupKeys {
    /// The keys of a startup offering `offered` for `server` in `scope`, reached
    /// through `endpoint`, run in `environment`, speaking `protocol`, with the OAuth
    /// login `login`.
    pub(crate) fn new(
        offered: &ClientConfig,
        scope: &str,
        server: &str,
        endpoint: &dyn KeyInputs,
        environment: &Environment,
        protocol: Protocol,
        login: Option<&LoginIdentity>,
    ) -> Self {
        Self {
            private: DiscoveryKey::new(offered, scope, server, endpoint, environment, login)
                .with_protocol(protocol),
            public: DiscoveryKey::public(offered, scope, server, endpoint, environment)
                .with_protocol(protocol),
        }
    }
}

/// One pending startup's place in the registry. Dropping it (the startup settled,
/// failed or was cancelled) releases the place.
pub(crate) struct Startup {
    registry: ListingRegistry,
    keys: StartupKeys,
    stamp: u64,
    /// An attempt with a greater stamp may serve this startup: one sent after it
    /// began, or within the burst window before (invariants 2 and 10).
    since: u64,
}

/// What a startup should do to get its listing.
pub(crate) enum Next {
    /// A listing sent after this startup began is ready.
    Take(SharedTools),
    /// A listing the server granted for reuse is fresh (invariants 6 and 7).
    Granted(SharedTools),
    /// Another startup's request, sent after this one began, is in flight.
    Wait(watch::Receiver<Option<SharedTools>>),
    /// Nobody has asked since this startup began: ask on the startup's own connection.
    Lead(LeaderGuard),
}

impl Startup {
    /// Looks for a listing this startup may use, or makes it the leader of a new
    /// attempt.
    pub(crate) fn next(&mut self) -> Next {
        let mut state = self.registry.lock();
        state.clock += 1;
        let attempt_stamp = state.clock;
        let entry = state.entries.entry(self.keys.private).or_default();
        debug_assert!(
            entry.pending.contains(&(self.since, self.stamp)),
            "a startup stays pending until it is dropped, so listings are kept for it (invariant 2)"
        );
        // Only what was asked after this startup began, or within the window before
        // and not before the server's last change, may serve it (invariants 2, 10
        // and 11).
        let since = self.since.max(self.stamp.min(entry.revoked));
        if let Some((_, listing)) = entry.listings.range(since + 1..).next_back() {
            return Next::Take(listing.tools.clone());
        }
        if let Some(tools) = state.granted(&self.keys) {
            return Next::Granted(tools);
        }
        let entry = state.entries.entry(self.keys.private).or_default();
        if let Some((_, attempt)) = entry.attempts.range(since + 1..).next_back() {
            return Next::Wait(attempt.receiver.clone());
        }
        let (sender, receiver) = watch::channel(None);
        let sent = Instant::now();
        let public = self.keys.public;
        entry.attempts.insert(
            attempt_stamp,
            Attempt {
                sent,
                receiver,
                public,
            },
        );
        Next::Lead(LeaderGuard {
            registry: self.registry.clone(),
            keys: self.keys,
            stamp: attempt_stamp,
            sent,
            sender,
            #[cfg(feature = "fleet")]
            lease: None,
        })
    }
}

impl Drop for Startup {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        let entry = state.entries.get_mut(&self.keys.private);
        // An entry is removed only once idle, and this startup keeps it pending. Not
        // checked while unwinding: a drop never panics then.
        debug_assert!(
            std::thread::panicking()
                || entry
                    .as_ref()
                    .is_some_and(|entry| entry.pending.contains(&(self.since, self.stamp))),
            "a pending startup's entry exists until the startup is dropped"
        );
        if let Some(entry) = entry {
            entry.pending.remove(&(self.since, self.stamp));
            entry.prune(Instant::now());
            if entry.is_idle() {
                state.entries.remove(&self.keys.private);
            }
        }
    }
}

/// The leader of one listing attempt. Publishing hands its listing to the waiters;
/// dropping it without publishing withdraws the attempt, and the waiters look again.
pub(crate) struct LeaderGuard {
    registry: ListingRegistry,
    keys: StartupKeys,
    stamp: u64,
    /// When the attempt's request was sent (invariant 10).
    sent: Instant,
    sender: watch::Sender<Option<SharedTools>>,
    /// The leader's lease in the fleet, when it leads there too (invariant 12).
    #[cfg(feature = "fleet")]
    lease: Option<Box<crate::fleet::Lease>>,
}

/// What a leader in its own registry does after asking the fleet (invariant 12).
pub(crate) enum FleetTurn {
    /// Another runtime's listing: handed to this registry's waiters already.
    #[cfg_attr(not(feature = "fleet"), allow(dead_code))]
    Shared {
        tools: SharedTools,
        /// Whether the server granted it for reuse (rather than a burst's).
        granted: bool,
    },
    /// List on the startup's own connection: as the fleet's leader, or alone.
    Lead(LeaderGuard),
}

impl LeaderGuard {
    /// Asks the fleet of the registry, if it has one, for a listing this attempt may
    /// take, waiting for another runtime's attempt if one is in flight, until `until`
    /// at the latest, if given (`waiting` says so meanwhile); otherwise this leader
    /// lists, for the fleet too when it holds the fleet's lease (invariants 12 and
    /// 14).
    #[cfg_attr(not(feature = "fleet"), allow(unused_variables))]
    pub(crate) async fn across_fleet(
        self,
        until: Option<Instant>,
        waiting: &AtomicBool,
    ) -> FleetTurn {
        #[cfg(feature = "fleet")]
        if let Some(fleet) = self.registry.fleet().cloned() {
            return self.ask_fleet(fleet, until, waiting).await;
        }
        FleetTurn::Lead(self)
    }

    #[cfg(feature = "fleet")]
    async fn ask_fleet(
        mut self,
        fleet: crate::fleet::Fleet,
        until: Option<Instant>,
        waiting: &AtomicBool,
    ) -> FleetTurn {
        use crate::fleet::Acquired;
        let slot = fleet.slot(&self.keys.private.0, &self.keys.public.0);
        // A change the fleet was not told of is told first; until it is, what the
        // fleet holds for the key may be older than the change. A change of the
        // server under another identity revokes its public grants: told through this
        // key's slot, which raises the public key's count (another identity's own
        // key is told when it starts).
        let untold = (self.registry.fleet.clone()).and_then(|link| {
            let seen = crate::sync::lock(&link.untold).of(&self.keys);
            seen.map(|seen| (link, seen))
        });
        if let Some((link, seen)) = untold
            && Untold::tell(&link.untold, &fleet, &self.keys, seen)
                .await
                .is_err()
        {
            return FleetTurn::Lead(self);
        }
        let watch = fleet.watch(&slot);
        let deadline = Instant::now() + FLEET_WAIT;
        let deadline = until.map_or(deadline, |until| deadline.min(until));
        let mut stamp = crate::fleet::Stamp::NEW;
        loop {
            // Enabled before asking: a publication between the answer and the wait
            // still wakes it.
            let woken = watch.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let (payload, granted) = match fleet.acquire(&slot, stamp, self.window()).await {
                Ok(Acquired::Take { payload, age }) => {
                    // Kept here within the window of when its request was sent, as
                    // the fleet's clock says: not of when this startup took it.
                    if let Some(sent) = Instant::now().checked_sub(age) {
                        self.sent = self.sent.min(sent);
                    }
                    (payload, false)
                }
                Ok(Acquired::Granted(payload)) => (payload, true),
                Ok(Acquired::Wait(next)) => {
                    stamp = next;
                    let now = Instant::now();
                    if now >= deadline {
                        return FleetTurn::Lead(self);
                    }
                    waiting.store(true, std::sync::atomic::Ordering::Relaxed);
                    tokio::select! {
                        () = &mut woken => {}
                        () = tokio::time::sleep(fleet.poll().min(deadline - now)) => {}
                    }
                    waiting.store(false, std::sync::atomic::Ordering::Relaxed);
                    continue;
                }
                Ok(Acquired::Lead(lease)) => {
                    self.lease = Some(lease);
                    return FleetTurn::Lead(self);
                }
                Ok(Acquired::Unusable) | Err(_) => return FleetTurn::Lead(self),
            };
            let Some(tools) = decode(&payload) else {
                return FleetTurn::Lead(self);
            };
            self.publish(tools.clone(), None);
            return FleetTurn::Shared { tools, granted };
        }
    }

    /// [`LeaderGuard::publish`], and to the fleet as well when this leader holds its
    /// lease (invariant 12): the waiters of this registry have the listing before
    /// Redis is asked.
    #[cfg(feature = "fleet")]
    pub(crate) async fn publish_everywhere(mut self, tools: SharedTools, grant: Option<Grant>) {
        let Some(lease) = self.lease.take() else {
            self.publish(tools, grant);
            return;
        };
        let window = self.registry.window;
        let payload = encode(&tools);
        // The fleet keeps the grant this registry kept, if any.
        let grant = self.publish(tools, grant);
        let grant = grant.map(|grant| (grant.scope == Scope::Public, grant.ttl.min(MAX_GRANT)));
        lease.publish(&payload, window, grant).await;
    }

    /// [`LeaderGuard::publish`]: a build without fleets has no other place to
    /// publish to.
    #[cfg(not(feature = "fleet"))]
    pub(crate) async fn publish_everywhere(self, tools: SharedTools, grant: Option<Grant>) {
        self.publish(tools, grant);
    }

    /// The burst window of the registry this attempt's startup began in.
    #[cfg(feature = "fleet")]
    fn window(&self) -> Duration {
        self.registry.window
    }

    /// The key `grant` is kept under.
    fn grant_key(&self, grant: Grant) -> DiscoveryKey {
        match grant.scope {
            Scope::Private => self.keys.private,
            Scope::Public => self.keys.public,
        }
    }

    /// Whether the grant key `key` was revoked after this attempt's request was sent:
    /// its answer may be the old tools, and grants nothing (invariant 8).
    fn revoked_since_sent(&self, state: &State, key: DiscoveryKey) -> bool {
        state
            .grants_revoked
            .get(&key)
            .is_some_and(|&revoked| self.stamp <= revoked)
    }

    /// Hands `tools` to every waiter and to pending startups that may take it, and,
    /// when the server granted it and has not changed since the request was sent, to
    /// later startups until the grant expires: the grant kept, if any.
    pub(crate) fn publish(self, tools: SharedTools, grant: Option<Grant>) -> Option<Grant> {
        let grant = {
            let mut state = self.registry.lock();
            let grant =
                grant.filter(|grant| !self.revoked_since_sent(&state, self.grant_key(*grant)));
            if let Some(grant) = grant {
                let key = self.grant_key(grant);
                let now = Instant::now();
                state.granted.retain(|_, granted| granted.expires > now);
                let granted = Granted {
                    tools: tools.clone(),
                    expires: now + grant.ttl.min(MAX_GRANT),
                };
                state.granted.insert(key, granted);
            }
            let entry = state.entries.get_mut(&self.keys.private);
            debug_assert!(
                entry
                    .as_ref()
                    .is_some_and(|entry| entry.attempts.contains_key(&self.stamp)),
                "a leader's attempt stays registered until its guard is dropped (invariant 3)"
            );
            if let Some(entry) = entry {
                let listing = Listing {
                    sent: self.sent,
                    kept_until: self.sent + self.registry.window,
                    tools: tools.clone(),
                };
                entry.listings.insert(self.stamp, listing);
                entry.prune(Instant::now());
            }
            grant
        };
        self.sender.send_replace(Some(tools));
        // `Drop` withdraws the attempt; its waiters already have the listing.
        grant
    }
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        if let Some(entry) = state.entries.get_mut(&self.keys.private) {
            entry.attempts.remove(&self.stamp);
            if entry.is_idle() {
                state.entries.remove(&self.keys.private);
            }
        }
        // The sender is dropped after the lock is released: waiters that wake on it
        // find the registry already updated.
    }
}

/// A listing as the fleet keeps it: each tool's rmcp form and its unmodelled fields.
#[cfg(feature = "fleet")]
fn encode(tools: &[ListedTool]) -> Vec<u8> {
    let wire: Vec<_> = tools
        .iter()
        .map(|listed| (listed.tool.as_ref(), listed.unmodelled.as_deref()))
        .collect();
    serde_json::to_vec(&wire).expect("a listed tool serializes")
}

/// A listing the fleet kept, if it reads as one.
#[cfg(feature = "fleet")]
fn decode(payload: &[u8]) -> Option<SharedTools> {
    let wire: Vec<(rmcp::model::Tool, Option<rmcp::model::JsonObject>)> =
        serde_json::from_slice(payload).ok()?;
    Some(Arc::new(
        wire.into_iter()
            .map(|(tool, unmodelled)| ListedTool::new(tool, unmodelled))
            .collect(),
    ))
}

/// Waits for the attempt behind `receiver`: its listing, or `None` when the attempt
/// was withdrawn (failed, cancelled or dropped).
pub(crate) async fn wait(
    mut receiver: watch::Receiver<Option<SharedTools>>,
) -> Option<SharedTools> {
    receiver
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|tools| tools.clone())
}

#[cfg(test)]
mod tests;
