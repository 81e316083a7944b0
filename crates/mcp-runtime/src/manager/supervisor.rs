//! Servers that stop after they were ready: noticing it, reporting it, starting them
//! again.
//!
//! Each server's connection sits in a slot ([`Live`]) with a generation that grows by
//! one each time a restart installs a new connection. A watcher task per connection
//! waits for it to end ([`Connection::ended`]) and marks the server unavailable, with
//! the reason (a local server's exit status and last stderr), then ends the old
//! process group. The server's tools stay in the catalog, so a model keeps its tool
//! list; the next call (or refresh) starts the server again, under a single-flight
//! guard: concurrent callers wait on one lock, the first to take it restarts, the
//! others find the new connection when they take it in turn (so if the restarting
//! caller is dropped, the next waiter takes over: baton passing). Attempts back off
//! ([`Backoff`]).
//!
//! Invariants:
//! 1. A slot's connection is replaced only under the server's restart lock, and each
//!    replacement bumps the generation, so a watcher or a call that saw an older
//!    generation never marks the new connection unavailable.
//! 2. At most one restart of a server runs at a time (the restart lock), so
//!    concurrent calls start at most one process.
//! 3. Before a new connection is installed the old one is shut down (its process
//!    group is gone), so a server never has two processes.
//! 4. Attempts since the server was last usable (a call or refresh succeeded on it)
//!    are counted; attempt `n + 1` waits `1 s × 2^(n - 1)` (at most 30 s) after attempt
//!    `n` ended, and after [`MAX_ATTEMPTS`] the server stays stopped until
//!    [`Runtime::restart`](super::Runtime::restart) resets the count.
//! 5. No restart outlives the runtime. Every way the runtime ends (`shutdown`,
//!    `abort`, drop) cancels `closing` before it reads the connections to end them; a
//!    restart gives up when it sees `closing` cancelled, before it starts, while it
//!    starts (the new process is ended), and when it would install the connection,
//!    which it checks under the same lock as the install. So a restart a background
//!    refresh began cannot leave a server running after the runtime is gone.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use super::{Server, Shared, StartupEvent, startup};
use crate::{
    binding::Binding,
    connection::Connection,
    sync::lock,
    transport::error::{RequestError, RestartError, StartupError},
};

/// The pause after the first attempt; it doubles after each further one.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest pause between two attempts.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How many attempts are made before the server is left stopped.
pub(super) const MAX_ATTEMPTS: u32 = 5;

/// A server's current connection and what is known of its health.
#[derive(Default)]
pub(super) struct Live {
    /// The current connection, `None` for a server that never started. A connection
    /// that ended stays here until a restart or shutdown ends it.
    pub(super) connection: Option<Arc<Connection>>,
    /// Bumped by each connection a restart installs.
    pub(super) generation: u64,
    /// Why the current connection is unusable, once that is known.
    pub(super) lost: Option<RequestError>,
    /// Why the last restart attempt failed, if it did.
    pub(super) last_error: Option<StartupError>,
    pub(super) backoff: Backoff,
    /// Waits for the current connection to end.
    pub(super) watcher: Option<AbortOnDropHandle<()>>,
}

impl Live {
    /// The current connection and its generation, if it is still usable.
    pub(super) fn usable(&self) -> Option<(Arc<Connection>, u64)> {
        let connection = self.connection.as_ref()?;
        (self.lost.is_none() && !connection.has_ended())
            .then(|| (connection.clone(), self.generation))
    }
}

/// Restart attempts since the server was last usable, and when the next may begin.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Backoff {
    attempts: u32,
    not_before: Option<Instant>,
}

impl Backoff {
    /// The number of the next attempt if it may begin at `now`, else why not.
    pub(super) fn next_attempt(&self, server: &str, now: Instant) -> Result<u32, RestartError> {
        if self.attempts >= MAX_ATTEMPTS {
            return Err(RestartError::GaveUp {
                server: server.to_owned(),
                attempts: self.attempts,
            });
        }
        match self.not_before {
            Some(not_before) if now < not_before => Err(RestartError::BackingOff {
                server: server.to_owned(),
                retry_in: not_before - now,
            }),
            _ => Ok(self.attempts + 1),
        }
    }

    /// Records an attempt that ended at `now`; returns how long until the next one
    /// is allowed, or `None` if none is.
    /// The first pause is `first`; each further one doubles, up to [`MAX_BACKOFF`] or
    /// `first`, whichever is longer.
    pub(super) fn attempted(&mut self, now: Instant, first: Duration) -> Option<Duration> {
        self.attempts += 1;
        let pause = first
            .saturating_mul(1 << (self.attempts - 1).min(16))
            .min(MAX_BACKOFF.max(first));
        self.not_before = Some(now + pause);
        (self.attempts < MAX_ATTEMPTS).then_some(pause)
    }

    /// The server was usable: the next stop starts counting from zero.
    pub(super) fn reset(&mut self) {
        *self = Self::default();
    }

    /// How many attempts were made since the server was last usable.
    pub(super) fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl Shared {
    /// The server named `name`, if it is one that can be started again: it exists and
    /// its first startup got far enough to know how to reach it. Waits for a server
    /// still starting to settle first.
    async fn restartable(&self, name: &str) -> Result<(&Server, Binding), RestartError> {
        let server = self
            .servers
            .get(name)
            .ok_or_else(|| RestartError::UnknownServer {
                server: name.to_owned(),
            })?;
        match server.wait_settled().await.binding.clone() {
            Some(binding) => Ok((server, binding)),
            None => Err(RestartError::NeverStarted {
                server: name.to_owned(),
            }),
        }
    }

    /// `name`'s connection and its generation, after starting the server again if it
    /// stopped (see the module docs).
    pub(super) async fn available(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<(Arc<Connection>, u64), RestartError> {
        let (server, binding) = self.restartable(name).await?;
        if let Some(usable) = lock(&server.live).usable() {
            return Ok(usable);
        }
        // Single flight: whoever takes the lock first restarts; the others find its
        // connection here when they take it in turn.
        let restarting = server.restarting.lock().await;
        if let Some(usable) = lock(&server.live).usable() {
            return Ok(usable);
        }
        let attempt = lock(&server.live)
            .backoff
            .next_attempt(name, Instant::now())?;
        self.restart_locked(name, server, &binding, attempt, restarting)
            .await
    }

    /// [`Runtime::restart`].
    pub(super) async fn restart(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<(Arc<Connection>, u64), RestartError> {
        let (server, binding) = self.restartable(name).await?;
        let restarting = server.restarting.lock().await;
        lock(&server.live).backoff.reset();
        self.restart_locked(name, server, &binding, 1, restarting)
            .await
    }

    /// Shuts `name`'s current connection down and starts it again, as `attempt`;
    /// `_restarting` is the server's restart lock, held throughout.
    async fn restart_locked(
        self: &Arc<Self>,
        name: &str,
        server: &Server,
        binding: &Binding,
        attempt: u32,
        _restarting: tokio::sync::MutexGuard<'_, ()>,
    ) -> Result<(Arc<Connection>, u64), RestartError> {
        debug_assert!(
            server.restarting.try_lock().is_err(),
            "invariant 2: a restart runs under the server's restart lock"
        );
        let shutting_down = || RestartError::ShuttingDown {
            server: name.to_owned(),
        };
        if self.closing.is_cancelled() {
            return Err(shutting_down());
        }
        let (old, generation) = {
            let live = lock(&server.live);
            (live.connection.clone(), live.generation)
        };
        if let Some(old) = old {
            if let Some(lost) = old.lost_error().await {
                self.lost(name, generation, &lost);
            }
            old.shutdown().await;
        }
        self.send(StartupEvent::Restarting {
            server: name.to_owned(),
            attempt,
        });
        let began = Instant::now();
        // Taken before the new connection's `tools/list` is sent (invariant 2).
        let listing = self.next_generation(name);
        let credentials = self.credentials.as_ref();
        let restarted = startup::restart_one(
            &server.config,
            binding,
            &self.eras,
            credentials,
            &self.host,
            |pid| {
                self.send(StartupEvent::Spawned {
                    server: name.to_owned(),
                    pid,
                });
            },
        );
        // Invariant 5: dropping the restart ends the process it started.
        let result = tokio::select! {
            biased;
            () = self.closing.cancelled() => return Err(shutting_down()),
            result = restarted => result,
        };
        let retry_in = lock(&server.live)
            .backoff
            .attempted(Instant::now(), self.first_restart_pause);
        let started = match result {
            Ok(started) => started,
            Err(error) => {
                lock(&server.live).last_error = Some(error.clone());
                let error = Arc::new(error);
                self.send(StartupEvent::RestartFailed {
                    server: name.to_owned(),
                    attempt,
                    error: error.clone(),
                    retry_in,
                });
                return Err(RestartError::Failed {
                    server: name.to_owned(),
                    attempt,
                    limit: MAX_ATTEMPTS,
                    source: error,
                });
            }
        };
        let connection = Arc::new(started.connection);
        let generation = {
            let mut live = lock(&server.live);
            // Invariant 5: checked under the lock the runtime's drop reads the
            // connections under.
            if self.closing.is_cancelled() {
                drop(live);
                connection.kill();
                return Err(shutting_down());
            }
            debug_assert_eq!(
                live.generation, generation,
                "supervisor invariant 1: only the restart lock's holder replaces the connection"
            );
            live.connection = Some(connection.clone());
            live.generation += 1;
            live.lost = None;
            live.last_error = None;
            live.generation
        };
        server.restarts.fetch_add(1, Ordering::Relaxed);
        self.watch(name, server);
        server.generation.send_replace(generation);
        let tools = started
            .tools
            .iter()
            .filter(|listed| server.config.exposes_tool(&listed.tool.name))
            .count();
        if self.store(name, listing, started.tools).is_some() {
            self.publish_current();
        }
        self.send(StartupEvent::Restarted {
            server: name.to_owned(),
            attempt,
            tools,
            elapsed: began.elapsed(),
        });
        Ok((connection, generation))
    }

    /// Starts the task that marks `name` unavailable when its current connection ends
    /// and then ends its process group.
    pub(super) fn watch(self: &Arc<Self>, name: &str, server: &Server) {
        let mut live = lock(&server.live);
        let Some(connection) = live.connection.clone() else {
            return;
        };
        let generation = live.generation;
        let shared = Arc::downgrade(self);
        let name = name.to_owned();
        live.watcher = Some(AbortOnDropHandle::new(tokio::spawn(async move {
            connection.ended().await;
            // Boxed: the task waits with the small future above, not the large one
            // below (every server has a watcher).
            Box::pin(async move {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                let server = &shared.servers[&name];
                // Shutdown and restarts end connections themselves, under this lock.
                let _restarting = server.restarting.lock().await;
                if shared.closing.is_cancelled() || lock(&server.live).generation != generation {
                    return;
                }
                let lost = connection
                    .lost_error()
                    .await
                    .unwrap_or_else(|| RequestError::Closed {
                        stderr_tail: Vec::new(),
                    });
                shared.lost(&name, generation, &lost);
                // End the process group now rather than at the next call.
                connection.shutdown().await;
            })
            .await;
        })));
    }

    /// Marks `name` unavailable because its connection of `generation` ended, and
    /// reports it once; nothing if a newer connection replaced it.
    pub(super) fn lost(&self, name: &str, generation: u64, lost: &RequestError) {
        let server = &self.servers[name];
        {
            let mut live = lock(&server.live);
            if live.generation != generation || live.lost.is_some() {
                return;
            }
            live.lost = Some(lost.clone());
        }
        self.send(StartupEvent::Unavailable {
            server: name.to_owned(),
            error: Arc::new(lost.clone()),
        });
    }

    /// A call or refresh succeeded on `name`'s connection of `generation`: the next
    /// stop counts its restart attempts from zero.
    pub(super) fn usable(&self, name: &str, generation: u64) {
        self.servers[name].succeeded(generation);
    }
}

impl Server {
    /// A call or refresh succeeded on this server's connection of `generation`: the
    /// next stop counts its restart attempts from zero.
    pub(super) fn succeeded(&self, generation: u64) {
        let mut live = lock(&self.live);
        if live.generation == generation {
            live.backoff.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::time;

    use super::*;

    fn retry_in(error: RestartError) -> Duration {
        match error {
            RestartError::BackingOff { retry_in, .. } => retry_in,
            other => panic!("expected a backoff, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_back_off_doubling_to_a_cap_then_stop() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.next_attempt("s", Instant::now()).unwrap(), 1);
        let mut pauses = Vec::new();
        for attempt in 1..=MAX_ATTEMPTS {
            assert_eq!(backoff.next_attempt("s", Instant::now()).unwrap(), attempt);
            let pause = backoff.attempted(Instant::now(), FIRST_BACKOFF);
            if attempt == MAX_ATTEMPTS {
                assert_eq!(pause, None, "no attempt is left");
                break;
            }
            let pause = pause.expect("another attempt is allowed");
            pauses.push(pause);
            // Not before the pause has passed...
            time::advance(pause - Duration::from_millis(1)).await;
            let wait = retry_in(backoff.next_attempt("s", Instant::now()).unwrap_err());
            assert_eq!(wait, Duration::from_millis(1));
            // ...and at once when it has.
            time::advance(Duration::from_millis(1)).await;
        }
        assert_eq!(pauses, [1, 2, 4, 8].map(Duration::from_secs));
        time::advance(MAX_BACKOFF * 10).await;
        match backoff.next_attempt("s", Instant::now()) {
            Err(RestartError::GaveUp { attempts, server }) => {
                assert_eq!((attempts, server.as_str()), (MAX_ATTEMPTS, "s"));
            }
            other => panic!("expected the attempts to be used up, got {other:?}"),
        }
        backoff.reset();
        assert_eq!(backoff.next_attempt("s", Instant::now()).unwrap(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_pause_longer_than_the_cap_is_kept() {
        let mut backoff = Backoff::default();
        let long = MAX_BACKOFF * 20;
        assert_eq!(backoff.attempted(Instant::now(), long), Some(long));
        assert_eq!(backoff.attempted(Instant::now(), long), Some(long));
    }

    #[tokio::test(start_paused = true)]
    async fn the_pause_never_exceeds_the_cap() {
        let mut backoff = Backoff {
            attempts: 0,
            not_before: None,
        };
        for _ in 0..MAX_ATTEMPTS - 1 {
            let pause = backoff.attempted(Instant::now(), FIRST_BACKOFF).unwrap();
            assert!(pause <= MAX_BACKOFF);
        }
        // Far more attempts than allowed would still not overflow the pause.
        backoff.attempts = 40;
        assert_eq!(backoff.attempted(Instant::now(), FIRST_BACKOFF), None);
        assert!(backoff.not_before.unwrap() - Instant::now() <= MAX_BACKOFF);
    }
}
