//! Handshake sessions any replica of a fleet can serve: each session's `initialize`
//! parameters and its owner are kept in the fleet's Redis, so that when the replica
//! that opened a session is gone, the replica its next request reaches restores it
//! (rmcp's `SessionStore`: it replays the `initialize` to a new handler, whose
//! servers start as the session's first did).
//!
//! Invariants:
//! 1. A session belongs to the principal that opened it, on every replica: its
//!    owner (an HMAC of the principal under the fleet key) is kept beside its
//!    state, and a replica restores a session only for a request of that
//!    principal. A session whose owner cannot be read is not restored.
//! 2. What Redis holds is signed with the fleet key (`mcp_runtime::fleet`): a forged
//!    entry is no session. It holds no credential: the owner's digest, and the
//!    client's `initialize` parameters (its name, version and capabilities).
//! 3. Entries last [`SESSION_TTL`] from the last time the replica holding the
//!    session kept them (when it took the session, then every [`KEEP_EVERY`] while
//!    it is open), and are removed when the client ends the session (the replica
//!    holding it, told, closes it too; the holder's entry lapses a minute later, so
//!    that an end made again after its answer was lost tells it again), or when it
//!    ends idle on the replica that holds it. The holder is the process that opened
//!    or last restored the session; a replica it moved away from (one the load
//!    balancer took for dead, say) ends its own copy without removing what the
//!    holder uses.
//! 4. A replica that takes a session over tells the one that held it, which, if its
//!    copy is still open, takes the session back at its next request there (but
//!    one ending it), or at its next reap while a response of the session is still
//!    being sent there (a listen stream): a session the load balancer sends back
//!    and forth is held where it is served, and the copy left idle never removes
//!    what the other uses. The replica it was taken from is remembered a minute:
//!    a take-over made again within it (its first answer lost, though Redis took
//!    it; or two at once) tells that one again.
//! 5. What Redis does not take of a session opened or ended here (while it gave no
//!    answer) is kept here and written every [`SAVE_EVERY`] until it does, the
//!    newest change of a session the one written: a session opened during an
//!    outage can move once Redis is back, and one ended then is not restored from
//!    its entries by a request here (which waits for the removal). Another replica
//!    may restore it before the removal is written, and a change is lost with the
//!    process. At most [`MAX_UNSAVED`] changes are kept (past them, an end's
//!    entries are left to expire). A change that fails for an entry no replica
//!    wrote (not for the link) is dropped.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use mcp_runtime::fleet::{Fleet, Unavailable};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

/// How long a session's entries are kept after the last time they were kept again.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How often an open session's entries are kept again (invariant 3).
pub(crate) const KEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// The entries' kinds (their names are derived from the fleet key, the kind and the
/// session id).
const STATE: &str = "serve-session";
const OWNER: &str = "serve-session-owner";
const HOLDER: &str = "serve-session-holder";

/// How long a session's holder is kept once its client ended it: for the replica
/// ending it, should it end it again (its first answer lost), to tell the holder
/// again (invariant 3).
const HOLDER_LINGERS: Duration = Duration::from_secs(60);

/// How long the replica a session was taken from is remembered: a take-over made
/// again within it (its first answer lost, say) tells that one again (invariant 4).
const TAKEN_FROM_REMEMBERED: Duration = Duration::from_secs(60);

/// The mailbox where a replica hears that a session it held moved (invariant 4).
const MOVED: &str = "serve-session-moved";

/// The mailbox where a replica hears that a session it holds was ended by its
/// client on another replica (invariant 3).
const ENDED: &str = "serve-session-ended";

/// How often the changes Redis did not take are written again (invariant 5).
pub(crate) const SAVE_EVERY: Duration = Duration::from_secs(1);

/// How many sessions' changes are kept for Redis at most (invariant 5). Ends are
/// bounded by the sessions ended during an outage, not by those open, so only they
/// are refused past it.
pub(crate) const MAX_UNSAVED: usize = 100_000;

/// The sessions of a fleet's replicas, in its Redis.
pub(crate) struct FleetSessions {
    fleet: Fleet,
    /// Held across the writing of one session's change, which a newer change of it
    /// waits for (invariant 5).
    unsaved: tokio::sync::Mutex<Unsaved>,
    /// How many changes `unsaved` holds, read without waiting for a write: none
    /// means no change is being written either.
    unsaved_count: AtomicUsize,
}

/// The sessions' changes Redis has not taken (invariant 5).
#[derive(Default)]
struct Unsaved {
    changes: HashMap<String, Change>,
    /// Whether the outage was logged since the changes were last all written.
    warned: bool,
    /// Whether an end refused past [`MAX_UNSAVED`] was logged since.
    full: bool,
}

/// A change of a session to write to Redis (invariant 5).
#[derive(Clone)]
enum Change {
    /// Opened here: the session held here (which keeps all its entries), then its
    /// entries Redis did not take.
    Held {
        /// Boxed: most changes are ends, which should not take its size.
        state: Option<Box<SessionState>>,
        owner: Option<Vec<u8>>,
    },
    /// Ended here: its entries removed, if it is still held here.
    Ended,
    /// Ended by its client: its entries removed, wherever it is held.
    Deleted,
}

/// Whether a request's principal may have a session restored here (invariant 1).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// It opened the session.
    Owner,
    /// Another principal did, or the fleet knows no such session (or only an entry
    /// no replica wrote).
    Refused,
    /// The fleet cannot say now: its Redis gave no answer. Nothing is known of the
    /// session, so it is neither restored nor taken for ended.
    Unknown,
}

impl FleetSessions {
    pub(crate) fn new(fleet: Fleet) -> Self {
        Self {
            fleet,
            unsaved: tokio::sync::Mutex::default(),
            unsaved_count: AtomicUsize::new(0),
        }
    }

    /// Records that `principal` opened session `id` here (invariants 1, 3 and 5).
    /// Held first: an owner is never written without its holder, which alone may
    /// remove it when the session ends idle.
    pub(crate) async fn own(&self, id: &str, principal: &str) {
        let owner = self.digest(principal);
        if self.hold(id).await.is_err()
            || self
                .fleet
                .put(OWNER, id, &owner, SESSION_TTL)
                .await
                .is_err()
        {
            let owner = Some(owner);
            self.note(id, Change::Held { state: None, owner }).await;
        }
    }

    /// Records that session `id` is held here (invariant 3).
    async fn hold(&self, id: &str) -> Result<(), Unavailable> {
        let holder = self.fleet.address().as_bytes();
        self.fleet.put(HOLDER, id, holder, SESSION_TTL).await
    }

    /// Records that session `id`, restored here or served here again, is held here
    /// now, keeps its entries for another [`SESSION_TTL`] (invariant 3), and tells
    /// the replica that held it (invariant 4).
    pub(crate) async fn take_over(&self, id: &str) -> Result<(), Unavailable> {
        let here = self.fleet.address();
        // Read as it is replaced: of two replicas taking the session at once, the
        // second tells the first. A take-over made again, the first's answer lost
        // though Redis took it, reads the replica the first took it from.
        let previous = self
            .fleet
            .replace(
                HOLDER,
                id,
                here.as_bytes(),
                SESSION_TTL,
                TAKEN_FROM_REMEMBERED,
            )
            .await?;
        // Told before anything else can fail: once the holder is replaced, a retry
        // reads the one it took the session from for a minute only.
        if let Some(previous) = previous
            .and_then(|previous| String::from_utf8(previous).ok())
            .filter(|previous| previous != here)
        {
            // Told meanwhile, and again for a while if it is not listening (it may
            // be making its subscription again); one that is gone hears nothing, and
            // needs not.
            let (fleet, id) = (self.fleet.clone(), id.to_owned());
            tokio::spawn(async move {
                let _ = fleet.tell(&previous, MOVED, id.as_bytes()).await;
            });
        }
        self.keep(id).await
    }

    /// The sessions held here that moved to another replica, as it tells
    /// (invariant 4).
    pub(crate) fn moves(&self) -> tokio::sync::mpsc::Receiver<mcp_runtime::fleet::Letter> {
        self.fleet.mailbox(MOVED)
    }

    /// The sessions held here that their clients ended on another replica, as it
    /// tells (invariant 3).
    pub(crate) fn ends(&self) -> tokio::sync::mpsc::Receiver<mcp_runtime::fleet::Letter> {
        self.fleet.mailbox(ENDED)
    }

    /// Keeps session `id`'s entries for another [`SESSION_TTL`] (invariant 3).
    pub(crate) async fn keep(&self, id: &str) -> Result<(), Unavailable> {
        self.fleet
            .touch(id, &[STATE, OWNER, HOLDER], SESSION_TTL)
            .await
    }

    /// Whether `principal` opened session `id`, as the fleet says, once the change of
    /// it Redis did not take is written (invariant 5).
    pub(crate) async fn claim(&self, id: &str, principal: &str) -> Claim {
        if self.unsaved_count.load(Ordering::Acquire) > 0 && self.save_one(id).await.is_err() {
            return Claim::Unknown;
        }
        match self.fleet.get(OWNER, id).await {
            Ok(Some(owner)) if owner == self.digest(principal) => Claim::Owner,
            Ok(_) => Claim::Refused,
            Err(_) => Claim::Unknown,
        }
    }

    /// Forgets session `id`, if it is held here (invariants 3 and 5).
    pub(crate) async fn forget(&self, id: &str) {
        // A change not written yet is replaced (invariant 5), after the writing of
        // one under way.
        let unwritten = self.unnote(id).await;
        match self.end(id, &Change::Ended).await {
            // Not held here: it moved, unless this replica never wrote it.
            Ok(false) if !unwritten => tracing::info!(
                session = id,
                "a session that moved to another replica ended here; the fleet keeps it for that one"
            ),
            Ok(_) if unwritten => self.counted(&mut *self.unsaved.lock().await),
            Ok(_) => {}
            Err(_) => self.note(id, Change::Ended).await,
        }
    }

    /// Drops the change of session `id` Redis did not take, once any writing of it
    /// is done: whether there was one.
    async fn unnote(&self, id: &str) -> bool {
        if self.unsaved_count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut unsaved = self.unsaved.lock().await;
        let dropped = unsaved.changes.remove(id).is_some();
        self.unsaved_count
            .store(unsaved.changes.len(), Ordering::Release);
        dropped
    }

    /// Removes the entries of session `id`, which ended as `change` says; one its
    /// client ended, once the replica holding it, if another, is told. Whether they
    /// were removed (one that ended idle is not, unless held here).
    async fn end(&self, id: &str, change: &Change) -> Result<bool, Unavailable> {
        if let Change::Deleted = change {
            // Read as the entries are removed: a replica restoring the session
            // meanwhile has written itself before, and is told, or finds nothing.
            // The holder lingers for a removal made again after its answer was lost.
            let holder = self
                .fleet
                .remove_reading(id, (HOLDER, HOLDER_LINGERS), &[STATE, OWNER])
                .await?;
            let here = self.fleet.address().as_bytes();
            if let Some(holder) = holder
                .filter(|holder| holder != here)
                .and_then(|holder| String::from_utf8(holder).ok())
            {
                // Told meanwhile (see `take_over`).
                let (fleet, id) = (self.fleet.clone(), id.to_owned());
                tokio::spawn(async move {
                    let _ = fleet.tell(&holder, ENDED, id.as_bytes()).await;
                });
            }
            return Ok(true);
        }
        let holder = self.fleet.address().as_bytes();
        self.fleet
            .remove_if(id, (HOLDER, holder), &[STATE, OWNER])
            .await
    }

    /// Keeps `change` of session `id` until Redis takes it (invariant 5), in place of
    /// an earlier one, or, for a session opened, beside what Redis did not take of
    /// its opening.
    async fn note(&self, id: &str, change: Change) {
        let mut unsaved = self.unsaved.lock().await;
        let ends = matches!(change, Change::Ended | Change::Deleted);
        if ends && unsaved.changes.len() >= MAX_UNSAVED && !unsaved.changes.contains_key(id) {
            if !std::mem::replace(&mut unsaved.full, true) {
                tracing::warn!(
                    "the fleet's Redis gave no usable answer, and {MAX_UNSAVED} sessions' changes wait for it: the entries of sessions ending now are left to expire"
                );
            }
            return;
        }
        let change = match (unsaved.changes.remove(id), change) {
            (
                Some(Change::Held { state, owner }),
                Change::Held {
                    state: newer_state,
                    owner: newer_owner,
                },
            ) => Change::Held {
                state: newer_state.or(state),
                owner: newer_owner.or(owner),
            },
            (_, change) => change,
        };
        unsaved.changes.insert(id.to_owned(), change);
        self.unsaved_count
            .store(unsaved.changes.len(), Ordering::Release);
        if !unsaved.warned {
            unsaved.warned = true;
            tracing::warn!(
                session = id,
                "the fleet's Redis gave no usable answer: the sessions opened or ended here meanwhile are written to it once it answers"
            );
        }
    }

    /// Writes the changes Redis did not take (invariant 5), until it fails again.
    pub(crate) async fn save(&self) {
        if self.unsaved_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let ids: Vec<String> = self.unsaved.lock().await.changes.keys().cloned().collect();
        for id in ids {
            if self.save_one(&id).await.is_err() {
                return;
            }
        }
    }

    /// Writes the change of session `id` Redis did not take, if there is one. A
    /// change that failed with the link answering failed for an entry no replica
    /// wrote, and is dropped (invariant 5).
    async fn save_one(&self, id: &str) -> Result<(), Unavailable> {
        // Held while it is written: a newer change waits, then replaces it.
        let mut unsaved = self.unsaved.lock().await;
        let Some(change) = unsaved.changes.get(id).cloned() else {
            return Ok(());
        };
        match self.write(id, &change).await {
            Err(failed) if !failed.is_bad_entry() => return Err(failed),
            Err(_) => tracing::warn!(
                session = id,
                "the fleet's Redis holds an entry of this session that no replica wrote: what changed of it here is not written"
            ),
            Ok(()) => {}
        }
        unsaved.changes.remove(id);
        self.counted(&mut unsaved);
        Ok(())
    }

    /// Records how many changes `unsaved` holds; once none, the outage's warnings
    /// may be given again.
    fn counted(&self, unsaved: &mut Unsaved) {
        self.unsaved_count
            .store(unsaved.changes.len(), Ordering::Release);
        if unsaved.changes.is_empty() && unsaved.warned {
            unsaved.warned = false;
            unsaved.full = false;
            tracing::info!(
                "the sessions opened or ended while the fleet's Redis gave no answer are written to it"
            );
        }
    }

    /// Writes `change` of session `id`: a session held here, its holder first (see
    /// [`FleetSessions::own`]).
    async fn write(&self, id: &str, change: &Change) -> Result<(), Unavailable> {
        match change {
            Change::Held { state, owner } => {
                self.take_over(id).await?;
                if let Some(owner) = owner {
                    self.fleet.put(OWNER, id, owner, SESSION_TTL).await?;
                }
                if let Some(state) = state {
                    self.put_state(id, state).await?;
                }
            }
            Change::Ended | Change::Deleted => {
                self.end(id, change).await?;
            }
        }
        Ok(())
    }

    /// How many sessions have a change Redis has not taken (invariant 5).
    pub(crate) fn unsaved(&self) -> usize {
        self.unsaved_count.load(Ordering::Acquire)
    }

    async fn put_state(&self, id: &str, state: &SessionState) -> Result<(), Unavailable> {
        // A `SessionState` is JSON-serializable by construction (rmcp's own type).
        let value = serde_json::to_vec(state).expect("a session state serializes");
        self.fleet.put(STATE, id, &value, SESSION_TTL).await
    }
}

impl FleetSessions {
    /// The principal's digest: an HMAC of it under the fleet key, which cannot be
    /// matched against a guessed principal without the key.
    fn digest(&self, principal: &str) -> Vec<u8> {
        let purpose = format!("serve session owner\0{principal}");
        self.fleet.derived_key(&purpose).to_vec()
    }
}

#[async_trait::async_trait]
impl SessionStore for FleetSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(value) = self.fleet.get(STATE, session_id).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_slice(&value)?))
    }

    /// Failed, it is written once Redis answers (invariant 5).
    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        if self.put_state(session_id, state).await.is_err() {
            let state = Some(Box::new(state.clone()));
            let held = Change::Held { state, owner: None };
            self.note(session_id, held).await;
        }
        Ok(())
    }

    /// The client ended the session (rmcp asks only then): it is removed from the
    /// fleet wherever it is held; failed, once Redis answers (invariant 5).
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let unwritten = self.unnote(session_id).await;
        match self.end(session_id, &Change::Deleted).await {
            Ok(_) if unwritten => self.counted(&mut *self.unsaved.lock().await),
            Ok(_) => {}
            Err(_) => self.note(session_id, Change::Deleted).await,
        }
        Ok(())
    }
}
