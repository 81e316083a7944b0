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
//!    it is open), and are removed when the client ends the session, or when it
//!    ends idle on the replica that holds it. The holder is the process that opened
//!    or last restored the session; a replica it moved away from (one the load
//!    balancer took for dead, say) ends its own copy without removing what the
//!    holder uses.
//! 4. A replica that takes a session over tells the one that held it, which, if its
//!    copy is still open, takes the session back at its next request there, or at
//!    its next reap while a response of the session is still being sent there (a
//!    listen stream): a session the load balancer sends back and forth is held
//!    where it is served, and the copy left idle never removes what the other
//!    uses.

use std::time::Duration;

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

/// The mailbox where a replica hears that a session it held moved (invariant 4).
const MOVED: &str = "serve-session-moved";

/// The sessions of a fleet's replicas, in its Redis.
pub(crate) struct FleetSessions {
    fleet: Fleet,
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
        Self { fleet }
    }

    /// Records that `principal` opened session `id` here (invariants 1 and 3).
    pub(crate) async fn own(&self, id: &str, principal: &str) {
        let owned = self
            .fleet
            .put(OWNER, id, &self.digest(principal), SESSION_TTL)
            .await;
        if owned.is_err() || self.hold(id).await.is_err() {
            tracing::warn!(
                session = id,
                "the fleet's Redis gave no usable answer: this session cannot move to another replica"
            );
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
        // second tells the first.
        let previous = self
            .fleet
            .replace(HOLDER, id, here.as_bytes(), SESSION_TTL)
            .await?;
        self.keep(id).await?;
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
        Ok(())
    }

    /// The sessions held here that moved to another replica, as it tells
    /// (invariant 4).
    pub(crate) fn moves(&self) -> tokio::sync::mpsc::Receiver<mcp_runtime::fleet::Letter> {
        self.fleet.mailbox(MOVED)
    }

    /// Keeps session `id`'s entries for another [`SESSION_TTL`] (invariant 3).
    pub(crate) async fn keep(&self, id: &str) -> Result<(), Unavailable> {
        self.fleet
            .touch(id, &[STATE, OWNER, HOLDER], SESSION_TTL)
            .await
    }

    /// Whether `principal` opened session `id`, as the fleet says.
    pub(crate) async fn claim(&self, id: &str, principal: &str) -> Claim {
        match self.fleet.get(OWNER, id).await {
            Ok(Some(owner)) if owner == self.digest(principal) => Claim::Owner,
            Ok(_) => Claim::Refused,
            Err(_) => Claim::Unknown,
        }
    }

    /// Forgets session `id`, if it is held here (invariant 3).
    pub(crate) async fn forget(&self, id: &str) {
        let holder = self.fleet.address().as_bytes();
        let removed = self
            .fleet
            .remove_if(id, (HOLDER, holder), &[STATE, OWNER])
            .await;
        if let Ok(false) = removed {
            tracing::info!(
                session = id,
                "a session that moved to another replica ended here; the fleet keeps it for that one"
            );
        }
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

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let value = serde_json::to_vec(state)?;
        Ok(self
            .fleet
            .put(STATE, session_id, &value, SESSION_TTL)
            .await?)
    }

    /// The client ended the session (rmcp asks only then): it is removed from the
    /// fleet wherever it is held.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self
            .fleet
            .remove(session_id, &[STATE, OWNER, HOLDER])
            .await?)
    }
}
