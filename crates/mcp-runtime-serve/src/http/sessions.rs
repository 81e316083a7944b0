//! The handshake sessions a listener serves: how many there are, what each has in
//! flight, and which have been idle too long.
//!
//! rmcp's own session expiry (`keep_alive`) counts messages alone: a call that runs
//! longer without a progress report would lose its session mid-call, and an open GET
//! stream does not count. So rmcp's is off and the listener keeps its own account:
//! a session is in use while any of its responses is still being sent (a call's
//! stream, its GET stream), and idle from the end of the last one.
//!
//! Invariants:
//! 1. A session with a response still being sent is never closed by the reaper. One
//!    the reaper has begun to close is closing: a request for it waits until it is
//!    closed and forgotten, and is then one for a session this listener does not
//!    know (in a fleet, another replica may hold it).
//! 2. A session idle for `idle` or longer is closed at the next reap, and its runtime
//!    with it (rmcp drops the session's handler).
//! 3. Sessions open plus sessions opening never exceed `max`: an opening past it (a
//!    fleet's session restored here among them) is refused before rmcp sees it.
//! 4. A session belongs to the principal that opened it: no other may use it.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crate::sync::lock;
use rmcp::transport::streamable_http_server::session::{
    SessionId, SessionManager as _, local::LocalSessionManager,
};
use tokio::{sync::Notify, time::Instant};

use super::fleet_sessions::{FleetSessions, KEEP_EVERY};

pub(crate) struct Sessions {
    pub(crate) manager: Arc<LocalSessionManager>,
    uses: Mutex<HashMap<SessionId, Use>>,
    opening: AtomicUsize,
    max: usize,
    idle: Duration,
    /// POSTs whose responses are still being sent.
    posts: AtomicUsize,
    posts_ended: Notify,
    /// Told when the reaper is done with a session it was closing (invariant 1).
    closed: Notify,
    /// In a fleet, where the sessions are kept for the other replicas.
    fleet: Option<Arc<FleetSessions>>,
}

#[derive(Debug)]
struct Use {
    /// Responses still being sent.
    open: usize,
    /// When the last one ended (or the session began).
    last: Instant,
    /// The principal that opened it (invariant 4).
    owner: Option<String>,
    /// When its entries in the fleet were last kept again.
    kept: Instant,
    /// In a fleet, how many times another replica said it took the session over.
    moved: u64,
    /// How many of those the replica had heard when it last held the session again:
    /// the session moved away since if fewer than `moved`.
    settled: u64,
    /// Whether the reaper is closing it (invariant 1).
    closing: bool,
    /// Whether its client ended it on another replica.
    ended: bool,
    /// When the reaper last took it back from the replica it moved to.
    held_again: Option<Instant>,
}

/// A session's response being sent: the session is in use until dropped.
pub(crate) struct InUse {
    sessions: Arc<Sessions>,
    id: SessionId,
}

/// A session the reaper is closing: once dropped, however the close ended (done,
/// failed, or the reaper stopped), it is closing no more, and the requests waiting
/// for it go on (invariant 1).
struct Closing<'a> {
    sessions: &'a Sessions,
    id: &'a SessionId,
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        if let Some(used) = lock(&self.sessions.uses).get_mut(self.id) {
            used.closing = false;
        }
        self.sessions.closed.notify_waiters();
    }
}

/// A session being opened, counted against the bound until dropped.
pub(crate) struct Opening(Arc<Sessions>);

/// A POST's response being sent, which shutdown waits for.
pub(crate) struct Post(Arc<Sessions>);

impl Sessions {
    pub(crate) fn new(
        manager: Arc<LocalSessionManager>,
        max: usize,
        idle: Duration,
        fleet: Option<Arc<FleetSessions>>,
    ) -> Self {
        Self {
            manager,
            uses: Mutex::default(),
            opening: AtomicUsize::new(0),
            max,
            idle,
            posts: AtomicUsize::new(0),
            posts_ended: Notify::new(),
            closed: Notify::new(),
            fleet,
        }
    }

    /// Whether session `id` is one this listener knows the owner of.
    pub(crate) fn knows(&self, id: &SessionId) -> bool {
        lock(&self.uses)
            .get(id)
            .is_some_and(|used| used.owner.is_some())
    }

    /// A slot for a new session, unless `max` are open or opening (invariant 3).
    pub(crate) async fn open(self: &Arc<Self>) -> Option<Opening> {
        // Counted first: of two openings at once, each sees the other.
        self.opening.fetch_add(1, Ordering::AcqRel);
        let opening = Opening(self.clone());
        let open = self.manager.sessions.read().await.len();
        (open + self.opening.load(Ordering::Acquire) <= self.max).then_some(opening)
    }

    /// How many sessions are open.
    pub(crate) async fn count(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// Session `id` is in use until the guard is dropped; none if the reaper is
    /// closing it (invariant 1).
    pub(crate) fn begin(self: &Arc<Self>, id: SessionId) -> Option<InUse> {
        let mut uses = lock(&self.uses);
        let used = uses.entry(id.clone()).or_insert_with(Use::new);
        if used.closing {
            return None;
        }
        used.open += 1;
        Some(InUse {
            sessions: self.clone(),
            id,
        })
    }

    /// Session `id` is in use until the guard is dropped; if the reaper is closing
    /// it, once it is closed and forgotten, as a session begun anew (invariant 1).
    pub(crate) async fn begin_once_closed(self: &Arc<Self>, id: SessionId) -> InUse {
        loop {
            // Made before looking: told of a close that ends meanwhile.
            let closed = self.closed.notified();
            if let Some(in_use) = self.begin(id.clone()) {
                return in_use;
            }
            closed.await;
        }
    }

    /// Session `id` was opened by `principal` (invariant 4).
    pub(crate) fn own(&self, id: SessionId, principal: String) {
        lock(&self.uses).entry(id).or_insert_with(Use::new).owner = Some(principal);
    }

    /// A request of session `id` failed: unless rmcp has the session (a restore that
    /// succeeded, or no restore, and a request that failed after) or another request
    /// uses it (one whose own restore may be under way: the last to fail asks
    /// again), its owner is forgotten, so that its next request is one for a session
    /// this listener does not know, restored within the bound (invariant 3), and not
    /// one rmcp restores on its own.
    pub(crate) async fn request_failed(&self, id: &SessionId) {
        let open = self.manager.sessions.read().await;
        if !open.contains_key(id)
            && let Some(used) = lock(&self.uses).get_mut(id)
            && used.open == 1
        {
            used.owner = None;
        }
    }

    /// Another replica of the fleet took session `id` over.
    pub(crate) fn moved_away(&self, id: &str) {
        if let Some(used) = lock(&self.uses).get_mut(id) {
            used.moved += 1;
        }
    }

    /// Closes session `id`, which its client ended on another replica, unless the
    /// reaper is closing it already. Marked ended, it is closed again at the next
    /// reap once nothing of it is being sent (a restore of it under way when told
    /// ends then), and forgotten here alone: the fleet has forgotten it.
    pub(crate) async fn ended_elsewhere(&self, id: &SessionId) {
        {
            let mut uses = lock(&self.uses);
            let Some(used) = uses.get_mut(id) else {
                return;
            };
            used.ended = true;
            if used.closing {
                return;
            }
        }
        match self.manager.close_session(id).await {
            Ok(()) => tracing::info!(
                session = &**id,
                "closed a session its client ended on another replica"
            ),
            Err(error) => {
                tracing::warn!(session = &**id, %error, "a session its client ended on another replica could not be closed");
            }
        }
    }

    /// If session `id` moved away since it was held here, how many moves have been
    /// told: what [`Sessions::settle`] takes once it is held here again.
    pub(crate) fn has_moved(&self, id: &SessionId) -> Option<u64> {
        lock(&self.uses)
            .get(id)
            .and_then(|used| (used.moved > used.settled).then_some(used.moved))
    }

    /// Session `id` is held here again, as of the `moves` told before it was taken
    /// back: a move told meanwhile still stands.
    pub(crate) fn settle(&self, id: &SessionId, moves: u64) {
        if let Some(used) = lock(&self.uses).get_mut(id) {
            used.settled = used.settled.max(moves);
        }
    }

    /// Whether `principal` may use session `id`: it opened it, or the session is not
    /// known here (rmcp answers for those).
    pub(crate) fn owned_by(&self, id: &SessionId, principal: &str) -> bool {
        lock(&self.uses)
            .get(id)
            .and_then(|used| used.owner.as_deref())
            .is_none_or(|owner| owner == principal)
    }

    /// A POST is being answered until the guard is dropped.
    pub(crate) fn post(self: &Arc<Self>) -> Post {
        self.posts.fetch_add(1, Ordering::AcqRel);
        Post(self.clone())
    }

    /// Waits until no POST is being answered.
    pub(crate) async fn posts_ended(&self) {
        loop {
            let ended = self.posts_ended.notified();
            if self.posts.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }

    /// Closes every session idle for the idle time (invariant 2), and forgets those
    /// their clients closed.
    pub(crate) async fn reap(&self) {
        let now = Instant::now();
        // First, before the closes below take their time (see `Use::to_hold_again`).
        if let Some(fleet) = &self.fleet {
            self.hold_again(fleet).await;
        }
        let idle: Vec<SessionId> = lock(&self.uses)
            .iter()
            .filter(|(_, used)| used.open == 0 && used.is_over(now, self.idle))
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            let ended;
            // Looked at again as it is marked: a request may have begun since the
            // list was made, while the sessions before it were closed (invariant 1).
            {
                let mut uses = lock(&self.uses);
                let Some(used) = uses.get_mut(&id) else {
                    continue;
                };
                if used.open > 0 || !used.is_over(Instant::now(), self.idle) {
                    continue;
                }
                used.closing = true;
                ended = used.ended;
            }
            let _closing = Closing {
                sessions: self,
                id: &id,
            };
            if !ended {
                tracing::info!(session = &*id, "closing a session idle for {:?}", self.idle);
            }
            // Forgotten once closed, and in the fleet: until then, a request for it
            // finds it closing. A session that could not be closed keeps its owner
            // (invariant 4), and is tried again at the next reap.
            match self.manager.close_session(&id).await {
                Ok(()) => {
                    if let Some(fleet) = &self.fleet
                        && !ended
                    {
                        fleet.forget(&id).await;
                    }
                    lock(&self.uses).remove(&id);
                }
                Err(error) => {
                    tracing::warn!(session = &*id, %error, "an idle session could not be closed");
                }
            }
        }
        // A session in use may not be open yet: one being restored from the fleet is
        // owned here before rmcp has it.
        let open = self.manager.sessions.read().await;
        lock(&self.uses).retain(|id, used| used.open > 0 || open.contains_key(id));
        drop(open);
        if let Some(fleet) = &self.fleet {
            self.keep_in(fleet, now).await;
        }
    }

    /// Takes back the sessions that moved to another replica while a response of
    /// theirs is still being sent here (a listen stream, say): the copy there, once
    /// idle, then leaves the session's entries to this one, which still serves it.
    async fn hold_again(&self, fleet: &FleetSessions) {
        let now = Instant::now();
        let in_use: Vec<(SessionId, u64)> = lock(&self.uses)
            .iter()
            .filter(|(_, used)| used.to_hold_again(now, self.idle))
            .map(|(id, used)| (id.clone(), used.moved))
            .collect();
        for (id, moves) in in_use {
            // One Redis did not answer for is tried again at the next reap.
            if fleet.take_over(&id).await.is_ok() {
                self.settle(&id, moves);
                if let Some(used) = lock(&self.uses).get_mut(&id) {
                    used.held_again = Some(now);
                }
            }
        }
    }

    /// Keeps the fleet's entries of the sessions open here for another day, each
    /// once per [`KEEP_EVERY`].
    async fn keep_in(&self, fleet: &FleetSessions, now: Instant) {
        let due: Vec<SessionId> = lock(&self.uses)
            .iter()
            .filter(|(_, used)| now.duration_since(used.kept) >= KEEP_EVERY)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            // One Redis did not keep is tried again at the next reap.
            if fleet.keep(&id).await.is_ok()
                && let Some(used) = lock(&self.uses).get_mut(&id)
            {
                used.kept = now;
            }
        }
    }
}

/// How often the reaper looks at the sessions idle after `idle`: every quarter of
/// it, and at least every 30 s (see [`Use::to_hold_again`]).
pub(crate) fn reap_period(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(1), Duration::from_secs(30))
}

impl Use {
    /// Whether the reaper closes the session once nothing of it is being sent: idle
    /// for `idle` at `now`, or ended on another replica.
    fn is_over(&self, now: Instant, idle: Duration) -> bool {
        self.ended || now.duration_since(self.last) >= idle
    }

    /// Whether the reaper takes the session back at `now`: it moved away while a
    /// response of it is still being sent here. Not more than once every half of
    /// the idle time `idle`: two copies that both send (a listen stream on each)
    /// would otherwise take it from each other at every reap, and the copy that
    /// moved it ends idle no sooner than `idle` after it did, while the reaper here
    /// looks every quarter of it, or 30 s, whichever is less ([`reap_period`]).
    fn to_hold_again(&self, now: Instant, idle: Duration) -> bool {
        self.moved > self.settled
            && self.open > 0
            && self
                .held_again
                .is_none_or(|at| now.duration_since(at) >= idle / 2)
    }

    fn new() -> Self {
        Self {
            open: 0,
            last: Instant::now(),
            owner: None,
            kept: Instant::now(),
            moved: 0,
            settled: 0,
            closing: false,
            ended: false,
            held_again: None,
        }
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.opening.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(used) = lock(&self.sessions.uses).get_mut(&self.id) {
            used.open -= 1;
            used.last = Instant::now();
        }
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        if self.0.posts.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.posts_ended.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_in_use_before_rmcp_has_it_keeps_its_owner_through_a_reap() {
        let sessions = Arc::new(Sessions::new(
            Arc::new(LocalSessionManager::default()),
            10,
            Duration::from_secs(60),
            None,
        ));
        let id = SessionId::from("restoring");
        // Owned and in use, as a session being restored is while rmcp loads it.
        sessions.own(id.clone(), "alice".into());
        let in_use = sessions.begin(id.clone()).unwrap();
        sessions.reap().await;
        assert!(sessions.knows(&id), "kept while in use");
        // Once nothing is being sent, a session rmcp does not have is forgotten.
        drop(in_use);
        sessions.reap().await;
        assert!(!sessions.knows(&id));
    }

    #[tokio::test]
    async fn a_session_a_request_begins_while_the_reaper_closes_another_stays_open() {
        let manager = Arc::new(LocalSessionManager::default());
        // Every session idle at once.
        let sessions = Arc::new(Sessions::new(manager.clone(), 10, Duration::ZERO, None));
        let mut ids = Vec::new();
        let mut transports = Vec::new();
        for _ in 0..2 {
            let (id, transport) = manager.create_session().await.unwrap();
            sessions.own(id.clone(), "alice".into());
            ids.push(id);
            transports.push(transport);
        }
        // The reaper's first close waits while rmcp's sessions are read.
        let reading = manager.sessions.read().await;
        let reap = tokio::spawn({
            let sessions = sessions.clone();
            async move { sessions.reap().await }
        });
        let closing = |id: &SessionId| lock(&sessions.uses)[id].closing;
        for _ in 0..1000 {
            if ids.iter().any(closing) {
                break;
            }
            tokio::task::yield_now().await;
        }
        let (first, second) = match closing(&ids[0]) {
            true => (&ids[0], &ids[1]),
            false => (&ids[1], &ids[0]),
        };
        assert!(closing(first), "the reaper is closing one");
        // A request for the session being closed waits for the close; one for the
        // other, which the reaper listed as idle too, keeps it open.
        assert!(sessions.begin(first.clone()).is_none());
        let waiting = tokio::spawn({
            let (sessions, first) = (sessions.clone(), first.clone());
            async move { sessions.begin_once_closed(first).await }
        });
        let in_use = sessions.begin(second.clone()).expect("not closing");
        drop(reading);
        reap.await.unwrap();
        // Begun once closed, as a session this listener does not know.
        let begun = waiting.await.unwrap();
        assert!(!sessions.knows(first));
        drop(begun);
        let open = manager.sessions.read().await;
        assert!(!open.contains_key(first));
        assert!(open.contains_key(second), "in use: not closed");
        drop(open);
        assert!(sessions.knows(second));
        drop(in_use);
    }

    #[test]
    fn the_reaper_looks_every_quarter_of_the_idle_time_however_short() {
        for millis in [100, 399, 4_000, 119_000] {
            let idle = Duration::from_millis(millis);
            assert_eq!(reap_period(idle), idle / 4, "{idle:?}");
        }
        assert_eq!(
            reap_period(Duration::from_secs(600)),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn a_move_told_while_a_session_is_taken_back_stands() {
        let sessions = Sessions::new(Arc::default(), 10, Duration::from_secs(60), None);
        let id = SessionId::from("moving");
        sessions.own(id.clone(), "alice".into());
        assert_eq!(sessions.has_moved(&id), None);
        sessions.moved_away(&id);
        let moves = sessions.has_moved(&id).expect("moved");
        // Taken back here; meanwhile a third replica takes it and says so.
        sessions.moved_away(&id);
        sessions.settle(&id, moves);
        assert!(sessions.has_moved(&id).is_some(), "the later move stands");
        let moves = sessions.has_moved(&id).unwrap();
        sessions.settle(&id, moves);
        assert_eq!(sessions.has_moved(&id), None);
    }

    #[test]
    fn a_session_in_use_here_that_moved_is_taken_back_once_every_half_idle_time() {
        let idle = Duration::from_secs(60);
        let start = Instant::now();
        let mut used = Use::new();
        used.open = 1;
        assert!(!used.to_hold_again(start, idle), "it has not moved");
        used.moved = 1;
        assert!(used.to_hold_again(start, idle));
        used.held_again = Some(start);
        used.settled = 1;
        used.moved = 2;
        assert!(!used.to_hold_again(start + idle / 4, idle));
        assert!(used.to_hold_again(start + idle / 2, idle));
        used.open = 0;
        assert!(
            !used.to_hold_again(start + idle, idle),
            "nothing is sent here"
        );
    }

    #[tokio::test]
    async fn a_request_waiting_for_a_close_goes_on_when_the_reaper_stops() {
        let manager = Arc::new(LocalSessionManager::default());
        let sessions = Arc::new(Sessions::new(manager.clone(), 10, Duration::ZERO, None));
        let (id, _transport) = manager.create_session().await.unwrap();
        sessions.own(id.clone(), "alice".into());
        // The reaper's close waits while rmcp's sessions are read, and is stopped
        // there, as when the listener is dropped.
        let reading = manager.sessions.read().await;
        let reap = tokio::spawn({
            let sessions = sessions.clone();
            async move { sessions.reap().await }
        });
        for _ in 0..1000 {
            if lock(&sessions.uses)[&id].closing {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            lock(&sessions.uses)[&id].closing,
            "the reaper is closing it"
        );
        let waiting = tokio::spawn({
            let (sessions, id) = (sessions.clone(), id.clone());
            async move { sessions.begin_once_closed(id).await }
        });
        tokio::task::yield_now().await;
        reap.abort();
        let _ = reap.await;
        let begun = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("goes on once the reaper stopped")
            .unwrap();
        drop((begun, reading));
    }
}
