//! Where a gateway's upstream connections come from: one runtime for every client, or
//! a runtime of its own for each client session, beside one runtime of the servers
//! whose connections are shared ([`crate::shared`]).
//!
//! Per client, a handshake-era session (`initialize`) gets a runtime of its own, started
//! when the session first needs it and ended with the session. A 2026-07-28 client has
//! no session: its requests are served by a runtime kept per principal and declared
//! client capabilities ([`ClientKey`]), ended once it has served nothing for the idle
//! time ([`Upstreams::reap`]); its servers' questions are asked through its calls'
//! answers ([`crate::bridge`]). Every runtime started here shares the listing registry
//! of the start options, so a burst of sessions costs one `tools/list` per upstream.
//!
//! Invariants:
//! 1. A pooled runtime is never ended while a request holds it ([`Held`]).
//! 2. The runtimes started here are all findable ([`Upstreams::running`]) until
//!    dropped: `/healthz` reports them and shutdown ends them.
//! 3. At most [`Upstreams::bound_clients`] sessionless clients have runtimes at once:
//!    a new client past it is refused, and the clients that have one go on.
//! 4. A runtime whose client is gone (its session ended, or it was idle) is shut
//!    down, its servers given their grace period, if nothing else holds it then
//!    ([`Upstreams::retire`]); one still held ends when dropped, its processes
//!    killed. [`Upstreams::retired`] waits for the shutdowns. The shared servers are
//!    shut down, all clients gone, by [`Upstreams::close_shared`].

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use mcp_runtime::{Config, Runtime, StartError, StartOptions, host::HostHandlers};
use rmcp::model::ClientCapabilities;
use tokio::{sync::OnceCell, time::Instant};
use tokio_util::task::TaskTracker;

use crate::sync::lock;
use crate::{
    bridge::{self, Askers},
    shared::{Caller, Served, SharedServers},
};

/// Where a gateway's runtimes come from. Clones share them.
#[derive(Clone)]
pub struct Upstreams(Arc<Source>);

enum Source {
    /// One runtime serves every client.
    One(Served),
    /// Each client session gets its own runtime.
    PerClient(Box<PerClient>),
}

struct PerClient {
    /// The servers each client has connections of its own to.
    config: Config,
    options: StartOptions,
    /// The servers whose connections every client shares, if any.
    shared: Option<Arc<SharedServers>>,
    /// The runtimes of clients without a session.
    pooled: Mutex<HashMap<ClientKey, Arc<Pooled>>>,
    /// Every runtime started, while it lives (invariant 2).
    running: Mutex<Vec<Weak<Runtime>>>,
    /// The most sessionless clients with runtimes at once (invariant 3).
    max_clients: AtomicUsize,
    /// The shutdowns of the runtimes whose clients are gone (invariant 4).
    retiring: TaskTracker,
}

/// Why a sessionless client has no runtime.
#[derive(Debug)]
pub(crate) enum NoRuntime {
    /// Its servers could not be started.
    Start(StartError),
    /// As many sessionless clients as allowed have runtimes (invariant 3).
    Full { max: usize },
}

/// A sessionless client, as far as its upstream connections are concerned: who it is
/// and what it declared it can do (its roots, its answers to the servers' questions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClientKey {
    pub(crate) principal: String,
    /// The client's declared capabilities, as JSON.
    pub(crate) capabilities: String,
}

/// A sessionless client's runtime, started on its first request.
struct Pooled {
    runtime: OnceCell<Served>,
    /// Its calls waiting on their servers, which its servers' questions go to.
    askers: Arc<Askers>,
    /// Requests holding it (invariant 1).
    held: AtomicUsize,
    /// When it last served a request.
    last: Mutex<Instant>,
}

/// A runtime a request is served by; a pooled one counts as in use until dropped.
pub(crate) struct Held {
    runtime: Served,
    askers: Option<Arc<Askers>>,
    _holding: Option<Holding>,
}

impl Held {
    /// A session's runtime, which lives as long as the session; `askers` when its
    /// client is asked the servers' questions through its calls' answers.
    pub(crate) fn session(runtime: Served, askers: Option<Arc<Askers>>) -> Self {
        Self {
            runtime,
            askers,
            _holding: None,
        }
    }

    /// The calls its servers' questions go to, for a runtime whose client is asked
    /// through its calls' answers ([`crate::bridge`]).
    pub(crate) fn askers(&self) -> Option<&Arc<Askers>> {
        self.askers.as_ref()
    }
}

/// A session's servers, retired when it drops them (invariant 4).
pub(crate) struct Owned {
    served: Option<Served>,
    upstreams: Upstreams,
}

impl Owned {
    /// The servers, no longer retired when dropped: their owner ends them.
    pub(crate) fn into_served(mut self) -> Served {
        self.served.take().expect("taken only here")
    }
}

impl std::ops::Deref for Owned {
    type Target = Served;

    fn deref(&self) -> &Served {
        self.served.as_ref().expect("taken only when consumed")
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(served) = self.served.take() {
            self.upstreams.retire(served.into_own());
        }
    }
}

/// A request's hold on a pooled runtime (invariant 1).
struct Holding(Arc<Pooled>);

impl Holding {
    fn new(pooled: Arc<Pooled>) -> Self {
        pooled.held.fetch_add(1, Ordering::AcqRel);
        Self(pooled)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        *lock(&self.0.last) = Instant::now();
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::ops::Deref for Held {
    type Target = Served;

    fn deref(&self) -> &Served {
        &self.runtime
    }
}

/// How many server changes a client's runtime keeps for a session that falls behind
/// in telling its client: a session that falls further tells it that every list and
/// every resource it subscribed to may have changed, so a small backlog loses no
/// change, and a large one costs every idle session its slots.
const CLIENT_CHANGE_BACKLOG: usize = 16;

impl Upstreams {
    /// `runtime` serves every client.
    pub fn one(runtime: Arc<Runtime>) -> Self {
        Self(Arc::new(Source::One(Served::new(runtime, None))))
    }

    /// Each client session gets a runtime of its own, started from `config` with
    /// `options` (cloned: every runtime shares the options' listing registry, whose
    /// bursts span `[serve] listing_burst_sec`), but for the servers whose table says
    /// `connections = "shared"`: one runtime of them, started at the first client's
    /// first need, serves every client.
    pub fn per_client(config: Config, options: StartOptions) -> Self {
        let options = options
            .with_listing_burst(config.serve.listing_burst)
            .with_change_backlog(CLIENT_CHANGE_BACKLOG);
        let (config, shared) = SharedServers::split(config);
        let options = match &shared {
            Some(shared) => options.with_other_configured_servers(shared.names().cloned()),
            None => options,
        };
        Self(Arc::new(Source::PerClient(Box::new(PerClient {
            config,
            options,
            shared,
            pooled: Mutex::default(),
            running: Mutex::default(),
            max_clients: AtomicUsize::new(usize::MAX),
            retiring: TaskTracker::new(),
        }))))
    }

    /// Shuts `runtime` down, its client being gone, if this is its last hold; a
    /// runtime still held elsewhere ends when its last holder drops it (invariant 4).
    pub(crate) fn retire(&self, runtime: Arc<Runtime>) {
        let Source::PerClient(per_client) = &*self.0 else {
            return;
        };
        let Ok(runtime) = Arc::try_unwrap(runtime) else {
            // Held elsewhere (a request, a list change being sent): it ends when
            // dropped.
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                per_client
                    .retiring
                    .spawn_on(async move { runtime.shutdown().await }, &handle);
            }
            // No runtime to shut it down on: dropping it ends its processes.
            Err(_) => drop(runtime),
        }
    }

    /// Returns once every shutdown [`Self::retire`] began, before or while waiting,
    /// has ended.
    pub(crate) async fn retired(&self) {
        if let Source::PerClient(per_client) = &*self.0 {
            per_client.retiring.close();
            per_client.retiring.wait().await;
        }
    }

    /// Shuts down the servers whose connections are shared, if they were started,
    /// each given its grace period; they do not start again. For a host ending the
    /// gateway once its clients are gone.
    pub async fn close_shared(&self) {
        if let Source::PerClient(per_client) = &*self.0
            && let Some(runtime) = per_client
                .shared
                .as_ref()
                .and_then(|shared| shared.running())
        {
            runtime.close().await;
        }
    }

    /// At most `max` sessionless clients have runtimes at once (invariant 3).
    pub(crate) fn bound_clients(&self, max: usize) {
        if let Source::PerClient(per_client) = &*self.0 {
            per_client.max_clients.store(max, Ordering::Relaxed);
        }
    }

    /// The servers every client is served by, if one runtime serves them all.
    pub(crate) fn single(&self) -> Option<&Served> {
        match &*self.0 {
            Source::One(runtime) => Some(runtime),
            Source::PerClient(_) => None,
        }
    }

    /// A new session's servers, started now, their questions answered by `handlers`;
    /// retired when the session drops them (invariant 4).
    pub(crate) async fn start(&self, handlers: HostHandlers) -> Result<Owned, StartError> {
        let served = match &*self.0 {
            Source::One(runtime) => runtime.clone(),
            // Boxed, here and for pooled clients: a start is a large future, and the
            // session's task, which awaits it in its handshake, would keep that size
            // for the session's whole life.
            Source::PerClient(per_client) => Box::pin(per_client.start(handlers)).await?,
        };
        Ok(Owned {
            served: Some(served),
            upstreams: self.clone(),
        })
    }

    /// The runtime of the sessionless client `key`, started on its first request, its
    /// servers' questions asked as far as `capabilities` (the key's) go.
    pub(crate) async fn pooled(
        &self,
        key: ClientKey,
        capabilities: &ClientCapabilities,
    ) -> Result<Held, NoRuntime> {
        let per_client = match &*self.0 {
            Source::One(runtime) => {
                return Ok(Held::session(runtime.clone(), None));
            }
            Source::PerClient(per_client) => per_client,
        };
        // Held before the start, under the pool's lock: the reaper, which takes the
        // same lock, leaves it alone (invariant 1).
        let holding = {
            let mut pooled = lock(&per_client.pooled);
            let max = per_client.max_clients.load(Ordering::Relaxed);
            if !pooled.contains_key(&key) && pooled.len() >= max {
                return Err(NoRuntime::Full { max });
            }
            Holding::new(
                pooled
                    .entry(key)
                    .or_insert_with(|| {
                        Arc::new(Pooled {
                            runtime: OnceCell::new(),
                            askers: Arc::default(),
                            held: AtomicUsize::new(0),
                            last: Mutex::new(Instant::now()),
                        })
                    })
                    .clone(),
            )
        };
        let pooled = &holding.0;
        let runtime = pooled
            .runtime
            .get_or_try_init(|| {
                Box::pin(per_client.start(bridge::handlers(capabilities, &pooled.askers)))
            })
            .await
            .map_err(NoRuntime::Start)?
            .clone();
        Ok(Held {
            runtime,
            askers: Some(holding.0.askers.clone()),
            _holding: Some(holding),
        })
    }

    /// Takes out the sessionless clients' runtimes that have served nothing for
    /// `idle`, for the caller to end (invariant 1: none is held).
    pub(crate) fn reap(&self, idle: Duration) -> Vec<Arc<Runtime>> {
        let Source::PerClient(per_client) = &*self.0 else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut reaped = Vec::new();
        lock(&per_client.pooled).retain(|_, pooled| {
            let idle_long = pooled.held.load(Ordering::Acquire) == 0
                && now.duration_since(*lock(&pooled.last)) >= idle;
            if idle_long && let Some(runtime) = pooled.runtime.get() {
                reaped.push(runtime.own().clone());
            }
            !idle_long
        });
        reaped
    }

    /// Every runtime that is running (invariant 2).
    pub(crate) fn running(&self) -> Vec<Arc<Runtime>> {
        match &*self.0 {
            Source::One(runtime) => vec![runtime.own().clone()],
            Source::PerClient(per_client) => {
                let mut running = lock(&per_client.running);
                running.retain(|runtime| runtime.strong_count() > 0);
                let shared = per_client
                    .shared
                    .as_ref()
                    .and_then(|shared| shared.running());
                shared
                    .cloned()
                    .into_iter()
                    .chain(running.iter().filter_map(Weak::upgrade))
                    .collect()
            }
        }
    }

    /// How many sessionless clients have a runtime.
    pub(crate) fn pooled_count(&self) -> usize {
        match &*self.0 {
            Source::One(_) => 0,
            Source::PerClient(per_client) => lock(&per_client.pooled).len(),
        }
    }
}

impl PerClient {
    async fn start(&self, handlers: HostHandlers) -> Result<Served, StartError> {
        let options = self.options.clone().with_host(handlers.clone());
        let own = async {
            Runtime::start(self.config.clone(), options)
                .await
                .map(Arc::new)
        };
        let (runtime, shared) = match &self.shared {
            Some(shared) => {
                let (own, runtime) = tokio::try_join!(own, shared.runtime(&self.options))?;
                let caller = Caller::new(handlers, shared.clone());
                (own, Some((runtime.clone(), caller)))
            }
            None => (own.await?, None),
        };
        let mut running = lock(&self.running);
        // The ended ones go as each new one comes, so the list stays as long as the
        // runtimes alive, however many sessions came and went.
        running.retain(|runtime| runtime.strong_count() > 0);
        running.push(Arc::downgrade(&runtime));
        drop(running);
        Ok(Served::new(runtime, shared))
    }
}
