//! Shared startup listings: one `tools/list` answer for a burst of equivalent
//! startups, while each keeps its own connection.
//!
//! Agent hosts start the same servers many times at once (one runtime per session,
//! subagent or window). Each startup needs its own connection, but all of them ask the
//! server for the same tool list at the same moment. A [`ListingRegistry`] lets those
//! startups share one answer. It is not a cache: it holds a listing only while a
//! startup that may still use it is pending.
//!
//! Invariants:
//! 1. Startups share only within one `DiscoveryKey`: the host's discovery scope plus
//!    every input that can change the answer (server name, argv, working directory and
//!    the environment actually passed, or URL and the headers and token actually sent,
//!    the execution environment, the client capabilities and protocol version offered).
//!    The key is a SHA-256 digest; no secret is kept in clear.
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
//!    remains for its key, so an idle registry is empty.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex, MutexGuard, OnceLock},
};

use rmcp::model::Tool;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::{config::Environment, connection::client_config, transport::Endpoint};

/// Tools as one `tools/list` answered them, shared between startups.
pub(crate) type SharedTools = Arc<Vec<Tool>>;

/// The identity of a startup's discovery inputs, as a digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct DiscoveryKey([u8; 32]);

impl DiscoveryKey {
    /// The key of a startup of `server` in `scope`, reached through `endpoint`, run in
    /// `environment`.
    pub(crate) fn new(
        scope: &str,
        server: &str,
        endpoint: &Endpoint,
        environment: &Environment,
    ) -> Self {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"mcp-runtime discovery key v1");
        field(scope.as_bytes());
        field(server.as_bytes());
        match environment {
            Environment::Local => field(b"local"),
            Environment::Named(name) => {
                field(b"named");
                field(name.as_bytes());
            }
        }
        match endpoint {
            Endpoint::Stdio(launch) => {
                field(b"stdio");
                field(&(launch.argv.len() as u64).to_le_bytes());
                for arg in &launch.argv {
                    field(arg.as_bytes());
                }
                // An inherited working directory is this process's, now: relative
                // paths in argv resolve against it.
                match launch.cwd.clone().or_else(|| std::env::current_dir().ok()) {
                    Some(cwd) => field(cwd.as_os_str().as_encoded_bytes()),
                    None => field(b"<unknown cwd>"),
                }
                field(&(launch.env.len() as u64).to_le_bytes());
                for (name, value) in &launch.env {
                    field(name.as_encoded_bytes());
                    field(value.as_encoded_bytes());
                }
            }
            Endpoint::Http(http) => {
                field(b"streamable-http");
                field(http.url.as_bytes());
                let mut headers: Vec<_> = http.headers.iter().collect();
                headers.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
                field(&(headers.len() as u64).to_le_bytes());
                for (name, value) in headers {
                    field(name.as_str().as_bytes());
                    field(value.as_bytes());
                }
                match &http.bearer_token {
                    Some(token) => field(token.as_bytes()),
                    None => field(b"<no token>"),
                }
            }
        }
        let offered = serde_json::to_vec(&client_config()).expect("client config serializes");
        field(&offered);
        Self(hasher.finalize().into())
    }
}

/// Where overlapping startups find each other's listings.
///
/// Cheap to clone: clones share one registry. A host that wants sharing across every
/// runtime of the process uses [`ListingRegistry::global`] (the default of
/// [`StartOptions`](crate::StartOptions)); one that wants isolation passes its own.
#[derive(Clone, Default)]
pub struct ListingRegistry {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for ListingRegistry {
    /// How many discovery keys have startups pending: never the keys themselves
    /// (hashes of what servers are sent, tokens included).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("ListingRegistry")
            .field("pending_keys", &state.entries.len())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// The stamp counter: startups and attempts take increasing values from it.
    clock: u64,
    entries: HashMap<DiscoveryKey, Entry>,
}

#[derive(Default)]
struct Entry {
    /// Stamps of the startups of this key that have not settled their listing.
    pending: BTreeSet<u64>,
    /// Attempts whose `tools/list` is in flight, by stamp.
    attempts: BTreeMap<u64, watch::Receiver<Option<SharedTools>>>,
    /// Successful listings still wanted by a pending startup, by stamp.
    listings: BTreeMap<u64, SharedTools>,
}

impl Entry {
    /// Drops listings that no pending startup may take (invariant 2).
    fn prune(&mut self) {
        let oldest_pending = self.pending.first().copied();
        self.listings
            .retain(|&stamp, _| oldest_pending.is_some_and(|oldest| stamp > oldest));
        debug_assert!(
            self.listings.is_empty() || !self.pending.is_empty(),
            "a listing is kept only while a startup that may take it is pending"
        );
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

    /// Whether the registry holds nothing: no pending startup, no attempt, no listing.
    pub fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Registers a startup that begins now.
    pub(crate) fn begin(&self, key: DiscoveryKey) -> Startup {
        let mut state = self.lock();
        state.clock += 1;
        let stamp = state.clock;
        let fresh = state.entries.entry(key).or_default().pending.insert(stamp);
        debug_assert!(fresh, "stamps are never reused");
        Startup {
            registry: self.clone(),
            key,
            stamp,
        }
    }
}

/// One pending startup's place in the registry. Dropping it (the startup settled,
/// failed or was cancelled) releases the place.
pub(crate) struct Startup {
    registry: ListingRegistry,
    key: DiscoveryKey,
    stamp: u64,
}

/// What a startup should do to get its listing.
pub(crate) enum Next {
    /// A listing sent after this startup began is ready.
    Take(SharedTools),
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
        let entry = state.entries.entry(self.key).or_default();
        if let Some((&stamp, tools)) = entry.listings.range(self.stamp + 1..).next_back() {
            debug_assert!(
                stamp > self.stamp,
                "a listing serves only startups that began before its request (invariant 2)"
            );
            return Next::Take(tools.clone());
        }
        if let Some((&stamp, receiver)) = entry.attempts.range(self.stamp + 1..).next_back() {
            debug_assert!(stamp > self.stamp, "invariant 2, for attempts in flight");
            return Next::Wait(receiver.clone());
        }
        let (sender, receiver) = watch::channel(None);
        entry.attempts.insert(attempt_stamp, receiver);
        Next::Lead(LeaderGuard {
            registry: self.registry.clone(),
            key: self.key,
            stamp: attempt_stamp,
            sender,
        })
    }
}

impl Drop for Startup {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        if let Some(entry) = state.entries.get_mut(&self.key) {
            entry.pending.remove(&self.stamp);
            entry.prune();
            if entry.is_idle() {
                state.entries.remove(&self.key);
            }
        }
    }
}

/// The leader of one listing attempt. Publishing hands its listing to the waiters;
/// dropping it without publishing withdraws the attempt, and the waiters look again.
pub(crate) struct LeaderGuard {
    registry: ListingRegistry,
    key: DiscoveryKey,
    stamp: u64,
    sender: watch::Sender<Option<SharedTools>>,
}

impl LeaderGuard {
    /// Hands `tools` to every waiter and to pending startups that may take it.
    pub(crate) fn publish(self, tools: SharedTools) {
        {
            let mut state = self.registry.lock();
            let entry = state.entries.get_mut(&self.key);
            debug_assert!(
                entry
                    .as_ref()
                    .is_some_and(|entry| entry.attempts.contains_key(&self.stamp)),
                "a leader's attempt stays registered until its guard is dropped (invariant 3)"
            );
            if let Some(entry) = entry {
                entry.listings.insert(self.stamp, tools.clone());
                entry.prune();
            }
        }
        self.sender.send_replace(Some(tools));
        // `Drop` withdraws the attempt; its waiters already have the listing.
    }
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        if let Some(entry) = state.entries.get_mut(&self.key) {
            entry.attempts.remove(&self.stamp);
            if entry.is_idle() {
                state.entries.remove(&self.key);
            }
        }
        // The sender is dropped after the lock is released: waiters that wake on it
        // find the registry already updated.
    }
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
mod tests {
    use super::*;

    fn key(n: u8) -> DiscoveryKey {
        DiscoveryKey([n; 32])
    }

    fn tools(names: &[&str]) -> SharedTools {
        Arc::new(
            names
                .iter()
                .map(|name| Tool::new(name.to_string(), "", Arc::new(Default::default())))
                .collect(),
        )
    }

    fn lead(next: Next) -> LeaderGuard {
        match next {
            Next::Lead(leader) => leader,
            _ => panic!("expected to lead"),
        }
    }

    fn waits(next: Next) -> watch::Receiver<Option<SharedTools>> {
        match next {
            Next::Wait(receiver) => receiver,
            _ => panic!("expected to wait"),
        }
    }

    fn takes(next: Next) -> SharedTools {
        match next {
            Next::Take(tools) => tools,
            _ => panic!("expected to take a listing"),
        }
    }

    #[tokio::test]
    async fn overlapping_startups_share_one_listing() {
        let registry = ListingRegistry::new();
        let mut startups: Vec<Startup> = (0..4).map(|_| registry.begin(key(1))).collect();
        let leader = lead(startups[0].next());
        let waiting: Vec<_> = startups[1..3].iter_mut().map(|s| waits(s.next())).collect();
        let listing = tools(&["a", "b"]);
        leader.publish(listing.clone());
        for receiver in waiting {
            assert!(Arc::ptr_eq(&wait(receiver).await.unwrap(), &listing));
        }
        // Began before the request was sent, asks after it was answered: shared too.
        assert!(Arc::ptr_eq(&takes(startups[3].next()), &listing));
        drop(startups);
        assert!(
            registry.is_empty(),
            "nothing is kept once no startup is pending"
        );
    }

    #[tokio::test]
    async fn a_startup_that_begins_after_the_request_was_sent_asks_itself() {
        let registry = ListingRegistry::new();
        let mut first = registry.begin(key(1));
        let leader = lead(first.next());
        // Both begin after the first request was sent: neither may use its answer.
        let mut later = registry.begin(key(1));
        let mut latest = registry.begin(key(1));
        let later_leader = lead(later.next());
        leader.publish(tools(&["old"]));
        drop(first);
        let receiver = waits(latest.next());
        later_leader.publish(tools(&["new"]));
        assert_eq!(wait(receiver).await.unwrap()[0].name, "new");
        assert_eq!(takes(latest.next())[0].name, "new");
        // A startup that begins after every request was sent asks itself.
        let mut last = registry.begin(key(1));
        let _own = lead(last.next());
        drop((later, latest, _own, last));
        assert!(registry.is_empty());
    }

    #[tokio::test]
    async fn a_withdrawn_attempt_hands_over_to_exactly_one_waiter() {
        let registry = ListingRegistry::new();
        let mut startups: Vec<Startup> = (0..4).map(|_| registry.begin(key(1))).collect();
        let leader = lead(startups[0].next());
        let waiting: Vec<_> = startups[1..].iter_mut().map(|s| waits(s.next())).collect();
        drop(leader); // failed, timed out or cancelled: the same for the waiters
        for receiver in waiting {
            assert!(wait(receiver).await.is_none(), "no error is handed over");
        }
        let mut next: Vec<Next> = startups[1..].iter_mut().map(Startup::next).collect();
        let second = lead(next.remove(0));
        let waiting: Vec<_> = next.into_iter().map(waits).collect();
        second.publish(tools(&["a"]));
        for receiver in waiting {
            assert_eq!(wait(receiver).await.unwrap()[0].name, "a");
        }
        drop(startups);
        assert!(registry.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_waiter_affects_nobody() {
        let registry = ListingRegistry::new();
        let mut leader_startup = registry.begin(key(1));
        let mut waiter = registry.begin(key(1));
        let leader = lead(leader_startup.next());
        let receiver = waits(waiter.next());
        drop((receiver, waiter));
        leader.publish(tools(&["a"]));
        drop(leader_startup);
        assert!(registry.is_empty());
    }

    #[test]
    fn different_keys_never_share() {
        let registry = ListingRegistry::new();
        let mut one = registry.begin(key(1));
        let mut two = registry.begin(key(2));
        let _one = lead(one.next());
        let _two = lead(two.next());
    }

    #[test]
    fn discovery_keys_cover_scope_and_inputs() {
        use std::collections::BTreeMap;

        use crate::transport::{http::ResolvedHttp, stdio::Launch};

        let launch = |env: &[(&str, &str)]| {
            Endpoint::Stdio(Launch {
                argv: vec!["server".into(), "--flag".into()],
                env: env
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
                cwd: None,
                max_message_bytes: 1,
            })
        };
        let local = Environment::Local;
        let base = DiscoveryKey::new("default", "s", &launch(&[("A", "1")]), &local);
        assert_eq!(
            base,
            DiscoveryKey::new("default", "s", &launch(&[("A", "1")]), &local)
        );
        assert_ne!(
            base,
            DiscoveryKey::new("other", "s", &launch(&[("A", "1")]), &local)
        );
        assert_ne!(
            base,
            DiscoveryKey::new("default", "t", &launch(&[("A", "1")]), &local)
        );
        assert_ne!(
            base,
            DiscoveryKey::new("default", "s", &launch(&[("A", "2")]), &local)
        );
        let remote = Environment::Named("box".into());
        assert_ne!(
            base,
            DiscoveryKey::new("default", "s", &launch(&[("A", "1")]), &remote)
        );

        let http = |token: &str| {
            Endpoint::Http(ResolvedHttp {
                url: "http://127.0.0.1:1/mcp".into(),
                bearer_token: Some(token.into()),
                headers: BTreeMap::new().into_iter().collect(),
                max_message_bytes: 1,
                network: Default::default(),
            })
        };
        assert_ne!(
            DiscoveryKey::new("default", "s", &http("t1"), &local),
            DiscoveryKey::new("default", "s", &http("t2"), &local)
        );
        // Field boundaries are unambiguous: ("ab", "c") is not ("a", "bc").
        let split = |a: &str, b: &str| {
            Endpoint::Stdio(Launch {
                argv: vec![a.into(), b.into()],
                env: BTreeMap::new(),
                cwd: None,
                max_message_bytes: 1,
            })
        };
        assert_ne!(
            DiscoveryKey::new("default", "s", &split("ab", "c"), &local),
            DiscoveryKey::new("default", "s", &split("a", "bc"), &local)
        );
    }
}
