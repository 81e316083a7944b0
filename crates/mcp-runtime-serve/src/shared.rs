//! The servers whose table says `connections = "shared"`: one runtime of them serves
//! every client, beside each client's runtime of the other servers ([`Served`]).
//!
//! A request reaches a shared server through the shared runtime, as the request of
//! its client's [`Caller`]; what the server asks back finds the caller through
//! [`Dispatch`], the shared runtime's handlers.
//!
//! Invariants:
//! 1. The shared runtime starts once, at the first client's first need, with the
//!    shared servers only, naming its tools as if the others were started too; each
//!    client's runtime names its tools as if the shared servers were. So a client
//!    sees every tool under the name one runtime of all the servers gives it.
//! 2. A question a shared server asks (elicitation, sampling) goes to the caller
//!    whose request it is asked for, and to no other: the request's own caller when
//!    the question comes inside the request (a 2026-07-28 server's input-required
//!    round, answered in the request's own future), else the one caller with
//!    requests in flight on that server. With none or several, the question is
//!    declined (elicitation) or refused (sampling), and logged: a guess could show
//!    one client's question to another. A question a caller did not declare it
//!    answers (a mode of elicitation, sampling with tools) is declined or refused
//!    the same way. The server's log messages go to its one caller in flight, or to
//!    `tracing` only.
//! 3. Shared servers are offered no roots: a connection of every client has no one
//!    client's roots.
//! 4. A resource of a shared server is subscribed to on the server while any caller
//!    is subscribed to it; a caller gets the updates of the URIs it subscribed to,
//!    and only those. A caller that ends gives its subscriptions up.

#![allow(
    deprecated,
    reason = "rmcp marks sampling and logging deprecated (SEP-2577); handshake-era servers still ask and log"
)]

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
};

use crate::sync::lock;
use mcp_runtime::{
    CallError, CallOptions, Catalog, Config, FeatureError, PromptResult, Prompts, ReadResult,
    Resources, Runtime, ServerChange, ServerStatus, StartError, StartOptions, ToolResult,
    config::Connections,
    host::{Elicitation, ElicitationModes, HandlerFuture, HostHandlers, Logs, Sampling},
    model::{
        CompleteRequestParams, CompleteResult, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject, LoggingLevel,
        LoggingMessageNotificationParam,
    },
};
use rmcp::ErrorData;
use tokio::sync::{OnceCell, broadcast, watch};

/// The shared servers of a configuration and, once started, their runtime.
pub(crate) struct SharedServers {
    /// The configuration of the shared servers only.
    config: Config,
    /// The other servers' names, which the shared runtime's names make room for.
    others: Vec<String>,
    runtime: OnceCell<Arc<Runtime>>,
    dispatch: Arc<Dispatch>,
    /// How many callers are subscribed to each URI of a shared server (invariant 4);
    /// held across the server's answer, so changes of one URI take turns.
    subscriptions: tokio::sync::Mutex<HashMap<String, usize>>,
}

impl SharedServers {
    /// Splits `config` into the servers each client gets connections of its own to
    /// (returned) and the shared ones, if any.
    pub(crate) fn split(config: Config) -> (Config, Option<Arc<Self>>) {
        let (shared, own): (Vec<_>, Vec<_>) = config
            .servers
            .iter()
            .map(|(name, server)| (name.clone(), server.clone()))
            .partition(|(_, server)| server.connections == Connections::Shared);
        if shared.is_empty() {
            return (config, None);
        }
        let others = own.iter().map(|(name, _)| name.clone()).collect();
        let mut shared_config = config.clone();
        shared_config.servers = shared.into_iter().collect();
        let mut own_config = config;
        own_config.servers = own.into_iter().collect();
        let shared = Self {
            config: shared_config,
            others,
            runtime: OnceCell::new(),
            dispatch: Arc::default(),
            subscriptions: tokio::sync::Mutex::default(),
        };
        (own_config, Some(Arc::new(shared)))
    }

    /// The names of the shared servers, which each client's runtime makes room for
    /// (invariant 1).
    pub(crate) fn names(&self) -> impl Iterator<Item = &String> {
        self.config.servers.keys()
    }

    /// The shared runtime, started with `options` on first need (invariant 1).
    pub(crate) async fn runtime(
        &self,
        options: &StartOptions,
    ) -> Result<&Arc<Runtime>, StartError> {
        self.runtime
            .get_or_try_init(|| async {
                let options = options
                    .clone()
                    .with_host(self.dispatch.handlers())
                    .with_other_configured_servers(self.others.clone());
                Runtime::start(self.config.clone(), options)
                    .await
                    .map(Arc::new)
            })
            .await
    }

    /// The shared runtime, if started.
    pub(crate) fn running(&self) -> Option<&Arc<Runtime>> {
        self.runtime.get()
    }

    fn holds(&self, server: &str) -> bool {
        self.config.servers.contains_key(server)
    }
}

/// A client as the shared servers' questions find it: the handlers its own runtime
/// was started with.
pub(crate) struct Caller {
    handlers: HostHandlers,
    shared: Arc<SharedServers>,
    /// The URIs of shared servers it subscribed to.
    subscribed: Subscribed,
}

impl Caller {
    pub(crate) fn new(handlers: HostHandlers, shared: Arc<SharedServers>) -> Arc<Self> {
        Arc::new(Self {
            handlers,
            shared,
            subscribed: Subscribed::default(),
        })
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        // Invariant 4: what it subscribed to is given up.
        let uris = self.subscribed.take();
        if uris.is_empty() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = self.shared.clone();
        handle.spawn(async move {
            for (uri, times) in uris {
                for _ in 0..times {
                    let _ = release(&shared, &uri).await;
                }
            }
        });
    }
}

/// The URIs a client subscribed to, each with how many times.
#[derive(Debug, Default)]
struct Subscribed(Mutex<HashMap<String, usize>>);

impl Subscribed {
    fn add(&self, uri: &str) {
        *lock(&self.0).entry(uri.to_owned()).or_default() += 1;
    }

    /// Takes one subscription to `uri` off its count; false when it had none.
    fn remove(&self, uri: &str) -> bool {
        let mut subscribed = lock(&self.0);
        let Some(count) = subscribed.get_mut(uri) else {
            return false;
        };
        *count -= 1;
        if *count == 0 {
            subscribed.remove(uri);
        }
        true
    }

    fn contains(&self, uri: &str) -> bool {
        lock(&self.0).contains_key(uri)
    }

    fn uris(&self) -> Vec<String> {
        lock(&self.0).keys().cloned().collect()
    }

    /// Every URI with its count, the counts left empty.
    fn take(&self) -> Vec<(String, usize)> {
        std::mem::take(&mut *lock(&self.0)).into_iter().collect()
    }
}

/// Takes one caller's subscription to `uri` off the count, unsubscribing the server
/// from it when it was the last (invariant 4).
async fn release(shared: &SharedServers, uri: &str) -> Result<(), FeatureError> {
    let mut counts = shared.subscriptions.lock().await;
    let Some(count) = counts.get_mut(uri) else {
        return Ok(());
    };
    *count -= 1;
    if *count > 0 {
        return Ok(());
    }
    counts.remove(uri);
    match shared.running() {
        // Boxed: a runtime's request is a large future.
        Some(runtime) => Box::pin(runtime.unsubscribe_resource(uri, None)).await,
        None => Ok(()),
    }
}

tokio::task_local! {
    /// The caller whose request the current future serves on the shared runtime.
    static CALLER: Arc<Caller>;
}

/// The shared runtime's handlers: each question and log message passed to its
/// caller (invariant 2).
#[derive(Default)]
struct Dispatch {
    /// The callers with requests in flight, by shared server, once per request.
    in_flight: Mutex<HashMap<String, Vec<Weak<Caller>>>>,
}

impl Dispatch {
    /// Every question a caller may answer is offered; roots are not (invariant 3).
    fn handlers(self: &Arc<Self>) -> HostHandlers {
        HostHandlers::new()
            .with_elicitation(Handler(self.clone()))
            .with_sampling(Handler(self.clone()))
            .with_logs(Handler(self.clone()))
            // Each caller's own handlers pass on the levels its client set.
            .with_log_level(LoggingLevel::Debug)
            // A 2026-07-28 caller is asked a round's questions together; another
            // caller is asked them as they come, which it takes either way.
            .with_questions_together()
    }

    /// The caller `server`'s question or message is for (invariant 2).
    fn caller(&self, server: &str) -> Option<Arc<Caller>> {
        if let Ok(caller) = CALLER.try_with(Arc::clone) {
            return Some(caller);
        }
        let in_flight = lock(&self.in_flight);
        let mut callers = in_flight.get(server)?.iter().filter_map(Weak::upgrade);
        let first = callers.next()?;
        callers
            .all(|other| Arc::ptr_eq(&first, &other))
            .then_some(first)
    }

    /// Marks `caller` in flight on `server` until the mark is dropped.
    fn mark(self: &Arc<Self>, server: &str, caller: &Arc<Caller>) -> InFlight {
        lock(&self.in_flight)
            .entry(server.to_owned())
            .or_default()
            .push(Arc::downgrade(caller));
        InFlight {
            dispatch: self.clone(),
            server: server.to_owned(),
            caller: Arc::downgrade(caller),
        }
    }
}

/// A request of a caller in flight on a shared server.
struct InFlight {
    dispatch: Arc<Dispatch>,
    server: String,
    caller: Weak<Caller>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.dispatch.in_flight);
        if let Some(callers) = in_flight.get_mut(&self.server) {
            if let Some(index) = callers
                .iter()
                .position(|caller| Weak::ptr_eq(caller, &self.caller))
            {
                callers.swap_remove(index);
            }
            callers.retain(|caller| caller.strong_count() > 0);
            if callers.is_empty() {
                in_flight.remove(&self.server);
            }
        }
    }
}

struct Handler(Arc<Dispatch>);

impl Elicitation for Handler {
    fn modes(&self) -> ElicitationModes {
        ElicitationModes {
            form: true,
            url: true,
        }
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async move {
            let url = matches!(request, ElicitRequestParams::UrlElicitationParams { .. });
            let caller = self.0.caller(server);
            let handler = caller.as_ref().and_then(|caller| {
                let handler = caller.handlers.elicitation()?;
                let modes = handler.modes();
                (if url { modes.url } else { modes.form }).then_some(handler)
            });
            match handler {
                Some(handler) => handler.elicit(server, request).await,
                None => {
                    unrouted(server, "elicitation", caller.is_some());
                    ElicitResult::new(ElicitationAction::Decline)
                }
            }
        })
    }
}

impl Sampling for Handler {
    fn tool_use(&self) -> bool {
        true
    }

    fn create_message<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move {
            let uses_tools = request.tools.is_some() || request.tool_choice.is_some();
            let caller = self.0.caller(server);
            let handler = caller.as_ref().and_then(|caller| {
                let handler = caller.handlers.sampling()?;
                (!uses_tools || handler.tool_use()).then_some(handler)
            });
            match handler {
                Some(handler) => handler.create_message(server, request).await,
                None => {
                    unrouted(server, "sampling", caller.is_some());
                    Err(ErrorData::invalid_request(
                        "no client of the gateway can be asked this sampling request",
                        None,
                    ))
                }
            }
        })
    }
}

impl Logs for Handler {
    fn log(&self, server: &str, message: LoggingMessageNotificationParam) {
        if let Some(caller) = self.0.caller(server)
            && let Some(logs) = caller.handlers.logs()
        {
            logs.log(server, message);
        }
    }
}

/// Logs a shared server's question no client is asked (invariant 2).
fn unrouted(server: &str, question: &str, found: bool) {
    if found {
        tracing::warn!(
            server,
            question,
            "a shared server's question is declined: its client does not take it"
        );
    } else {
        tracing::warn!(
            server,
            question,
            "a shared server's question is declined: not one client has a request in flight on it"
        );
    }
}

/// The servers a client's requests reach: its own runtime's, and the shared ones.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    own: Arc<Runtime>,
    /// The URIs of the own runtime's servers the client subscribed to.
    subscribed: Arc<Subscribed>,
    shared: Option<SharedPart>,
}

#[derive(Clone)]
struct SharedPart {
    runtime: Arc<Runtime>,
    caller: Arc<Caller>,
    /// The catalog of both, kept while both parts' catalogs are the ones it joined.
    joined: Arc<Mutex<Option<Joined>>>,
}

struct Joined {
    own: Arc<Catalog>,
    shared: Arc<Catalog>,
    both: Arc<Catalog>,
}

impl Served {
    /// A client's servers: `own`, and the shared runtime's as `caller`'s.
    pub(crate) fn new(own: Arc<Runtime>, shared: Option<(Arc<Runtime>, Arc<Caller>)>) -> Self {
        Self {
            own,
            subscribed: Arc::default(),
            shared: shared.map(|(runtime, caller)| SharedPart {
                runtime,
                caller,
                joined: Arc::default(),
            }),
        }
    }

    /// The client's own runtime.
    pub(crate) fn own(&self) -> &Arc<Runtime> {
        &self.own
    }

    /// The client's own runtime, the rest let go.
    pub(crate) fn into_own(self) -> Arc<Runtime> {
        self.own
    }

    /// Every tool the client's requests reach, as one catalog.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        let own = self.own.catalog();
        let Some(shared) = &self.shared else {
            return own;
        };
        let theirs = shared.runtime.catalog();
        let mut joined = lock(&shared.joined);
        if let Some(kept) = &*joined
            && Arc::ptr_eq(&kept.own, &own)
            && Arc::ptr_eq(&kept.shared, &theirs)
        {
            return kept.both.clone();
        }
        let both = Arc::new(own.joined(&theirs));
        *joined = Some(Joined {
            own,
            shared: theirs,
            both: both.clone(),
        });
        both
    }

    /// Every server's status, in name order.
    pub(crate) fn servers(&self) -> Vec<ServerStatus> {
        let mut servers = self.own.servers();
        if let Some(shared) = &self.shared {
            servers.extend(shared.runtime.servers());
            servers.sort_by(|a, b| a.name.cmp(&b.name));
        }
        servers
    }

    /// What to watch for the changes the client is told of (invariant 4).
    pub(crate) fn watch(&self) -> Changes {
        Changes {
            own: Watched::of(&self.own),
            subscribed: self.subscribed.clone(),
            shared: self
                .shared
                .as_ref()
                .map(|shared| (Watched::of(&shared.runtime), shared.caller.clone())),
        }
    }

    /// Calls the tool of qualified name `name` on its runtime.
    pub(crate) async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        if let Some(shared) = &self.shared
            && let Some(tool) = shared.runtime.catalog().resolve(name)
        {
            let server = tool.server.to_string();
            return shared
                .run(
                    &server,
                    shared.runtime.call_tool_with(name, arguments, options),
                )
                .await;
        }
        Box::pin(self.own.call_tool_with(name, arguments, options)).await
    }

    /// Every server's resources and templates.
    pub(crate) async fn resources(&self) -> Resources {
        let mut listed = Box::pin(self.own.resources()).await;
        if let Some(shared) = &self.shared {
            let theirs = Box::pin(shared.runtime.resources()).await;
            listed.resources.extend(theirs.resources);
            listed.templates.extend(theirs.templates);
            listed.failures.extend(theirs.failures);
        }
        listed
    }

    /// Reads `uri` from the one server that offers it: the client's own servers'
    /// first, then the shared ones'.
    pub(crate) async fn read_resource(&self, uri: &str) -> Result<ReadResult, FeatureError> {
        let read = Box::pin(self.own.read_resource(uri, None)).await;
        match (read, &self.shared) {
            (Err(FeatureError::NotFound { .. }), Some(shared)) => {
                shared
                    .run_any(shared.runtime.read_resource(uri, None))
                    .await
            }
            (read, _) => read,
        }
    }

    /// Subscribes the client to `uri` on the server that offers it (invariant 4).
    pub(crate) async fn subscribe_resource(&self, uri: &str) -> Result<(), FeatureError> {
        let subscribed = Box::pin(self.own.subscribe_resource(uri, None)).await;
        if subscribed.is_ok() {
            self.subscribed.add(uri);
        }
        let (Err(FeatureError::NotFound { .. }), Some(shared)) = (&subscribed, &self.shared) else {
            return subscribed;
        };
        let servers = &shared.caller.shared;
        let mut counts = servers.subscriptions.lock().await;
        if !counts.contains_key(uri) {
            Box::pin(shared.runtime.subscribe_resource(uri, None)).await?;
        }
        *counts.entry(uri.to_owned()).or_default() += 1;
        shared.caller.subscribed.add(uri);
        Ok(())
    }

    /// Unsubscribes the client from `uri` (invariant 4).
    pub(crate) async fn unsubscribe_resource(&self, uri: &str) -> Result<(), FeatureError> {
        if let Some(shared) = &self.shared
            && shared.caller.subscribed.remove(uri)
        {
            return release(&shared.caller.shared, uri).await;
        }
        // The client gives the subscription up whatever its server answers: one that
        // cannot be told (it stopped, or no longer lists the URI) keeps none anyway.
        self.subscribed.remove(uri);
        Box::pin(self.own.unsubscribe_resource(uri, None)).await
    }

    /// Every server's prompts.
    pub(crate) async fn prompts(&self) -> Prompts {
        let mut listed = Box::pin(self.own.prompts()).await;
        if let Some(shared) = &self.shared {
            let theirs = Box::pin(shared.runtime.prompts()).await;
            listed.prompts.extend(theirs.prompts);
            listed.failures.extend(theirs.failures);
        }
        listed
    }

    /// Gets prompt `name` of `server`.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        server: &str,
        arguments: Option<JsonObject>,
    ) -> Result<PromptResult, FeatureError> {
        match self.shared_for(server) {
            Some(shared) => {
                shared
                    .run(
                        server,
                        shared.runtime.get_prompt(name, Some(server), arguments),
                    )
                    .await
            }
            None => Box::pin(self.own.get_prompt(name, Some(server), arguments)).await,
        }
    }

    /// Completion by `server`.
    pub(crate) async fn complete(
        &self,
        server: &str,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, FeatureError> {
        match self.shared_for(server) {
            Some(shared) => {
                shared
                    .run(server, shared.runtime.complete(server, request))
                    .await
            }
            None => Box::pin(self.own.complete(server, request)).await,
        }
    }

    fn shared_for(&self, server: &str) -> Option<&SharedPart> {
        self.shared
            .as_ref()
            .filter(|shared| shared.caller.shared.holds(server))
    }
}

impl std::fmt::Debug for SharedPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPart")
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl SharedPart {
    /// Runs `request` of the caller on `server` (invariant 2).
    ///
    /// Not an `async fn`: a runtime's request is a large future, boxed before the
    /// returned future holds it, or every future awaiting this one would be as
    /// large (an `async fn` keeps its arguments in its own state).
    fn run<T>(&self, server: &str, request: impl Future<Output = T>) -> impl Future<Output = T> {
        let request = Box::pin(request);
        async move {
            let _in_flight = self.caller.shared.dispatch.mark(server, &self.caller);
            CALLER.scope(self.caller.clone(), request).await
        }
    }

    /// Runs a request of the caller whose server is not known yet: only questions
    /// asked inside it find the caller. Boxed as in [`Self::run`].
    fn run_any<T>(&self, request: impl Future<Output = T>) -> impl Future<Output = T> {
        CALLER.scope(self.caller.clone(), Box::pin(request))
    }
}

/// The changes a client is told of: its own runtime's, and the shared runtime's.
pub(crate) struct Changes {
    own: Watched,
    /// The URIs of the own runtime's servers the client subscribed to.
    subscribed: Arc<Subscribed>,
    /// The shared runtime's, which tell the caller only of its own subscriptions.
    shared: Option<(Watched, Arc<Caller>)>,
}

/// A runtime's catalog and server changes, watched.
struct Watched {
    catalog: watch::Receiver<Arc<Catalog>>,
    changes: broadcast::Receiver<ServerChange>,
}

impl Watched {
    fn of(runtime: &Runtime) -> Self {
        Self {
            catalog: runtime.subscribe_catalog(),
            changes: runtime.changes(),
        }
    }

    /// The runtime's next change; `None` once it is gone.
    async fn next(&mut self) -> Option<Change> {
        use broadcast::error::RecvError;
        tokio::select! {
            changed = self.catalog.changed() => changed.ok().map(|()| Change::Catalog),
            change = self.changes.recv() => match change {
                Ok(change) => Some(Change::Server(change)),
                Err(RecvError::Lagged(_)) => Some(Change::Missed),
                Err(RecvError::Closed) => None,
            },
        }
    }
}

/// A change a client is told of.
pub(crate) enum Notice {
    Tools,
    Resources,
    Prompts,
    Updated(String),
}

impl Changes {
    /// Marks the catalogs as seen: only later changes are told.
    pub(crate) fn seen(&mut self) {
        self.own.catalog.borrow_and_update();
        if let Some((shared, _)) = &mut self.shared {
            shared.catalog.borrow_and_update();
        }
    }

    /// What to tell of the next change: of a catalog, or one a server reported; when
    /// changes were missed, that every list and every subscribed resource may have
    /// changed. `None` once a runtime is gone.
    pub(crate) async fn next(&mut self) -> Option<Vec<Notice>> {
        loop {
            let (change, caller) = match &mut self.shared {
                None => (self.own.next().await?, None),
                Some((shared, caller)) => tokio::select! {
                    change = self.own.next() => (change?, None),
                    change = shared.next() => (change?, Some(&*caller)),
                },
            };
            let notices = match change {
                Change::Catalog => vec![Notice::Tools],
                Change::Server(ServerChange::ResourcesChanged { .. }) => vec![Notice::Resources],
                Change::Server(ServerChange::PromptsChanged { .. }) => vec![Notice::Prompts],
                Change::Server(ServerChange::ResourceUpdated { uri, .. }) => {
                    // A shared server's update is its subscribers' (invariant 4).
                    if caller.is_some_and(|caller| !caller.subscribed.contains(&uri)) {
                        continue;
                    }
                    vec![Notice::Updated(uri)]
                }
                Change::Server(_) => continue,
                Change::Missed => self.missed(),
            };
            return Some(notices);
        }
    }
}

impl Changes {
    /// What to tell when changes were missed: every list, and every resource the
    /// client subscribed to, may have changed (its update may be among them).
    fn missed(&self) -> Vec<Notice> {
        let mut uris = self.subscribed.uris();
        if let Some((_, caller)) = &self.shared {
            uris.extend(caller.subscribed.uris());
        }
        uris.sort();
        uris.dedup();
        [Notice::Resources, Notice::Prompts]
            .into_iter()
            .chain(uris.into_iter().map(Notice::Updated))
            .collect()
    }
}

enum Change {
    Catalog,
    Server(ServerChange),
    Missed,
}

#[cfg(test)]
mod tests {
    use mcp_runtime::{ServerConfig, config::Connections};

    use super::*;

    fn servers() -> Arc<SharedServers> {
        let mut config = Config::default();
        for (name, connections) in [("one", Connections::Shared), ("own", Connections::Session)] {
            config.servers.insert(
                name.to_owned(),
                ServerConfig::stdio(name, "unused", Vec::new()).with_connections(connections),
            );
        }
        let (own, shared) = SharedServers::split(config);
        assert_eq!(own.servers.keys().collect::<Vec<_>>(), ["own"]);
        let shared = shared.expect("a shared server");
        assert_eq!(shared.names().collect::<Vec<_>>(), ["one"]);
        assert_eq!(shared.others, ["own"]);
        shared
    }

    #[test]
    fn a_configuration_without_shared_servers_is_all_its_clients_own() {
        let mut config = Config::default();
        config.servers.insert(
            "own".to_owned(),
            ServerConfig::stdio("own", "unused", Vec::new()),
        );
        let (own, shared) = SharedServers::split(config.clone());
        assert!(shared.is_none());
        assert_eq!(own, config);
    }

    #[tokio::test]
    async fn a_question_goes_to_the_one_caller_in_flight_or_its_own_request() {
        let shared = servers();
        let dispatch = &shared.dispatch;
        let (a, b) = (
            Caller::new(HostHandlers::new(), shared.clone()),
            Caller::new(HostHandlers::new(), shared.clone()),
        );
        assert!(dispatch.caller("one").is_none(), "nobody in flight");

        let first = dispatch.mark("one", &a);
        let second = dispatch.mark("one", &a);
        assert!(Arc::ptr_eq(&dispatch.caller("one").unwrap(), &a));
        assert!(dispatch.caller("other").is_none(), "in flight elsewhere");

        let other = dispatch.mark("one", &b);
        assert!(
            dispatch.caller("one").is_none(),
            "two callers: nobody guessed"
        );
        // Inside a request of its own, a caller is found whatever else is in flight.
        let found = CALLER
            .scope(b.clone(), async { dispatch.caller("one") })
            .await;
        assert!(Arc::ptr_eq(&found.unwrap(), &b));

        drop(first);
        assert!(
            dispatch.caller("one").is_none(),
            "a's second request still runs"
        );
        drop(second);
        assert!(Arc::ptr_eq(&dispatch.caller("one").unwrap(), &b));
        drop(other);
        assert!(
            lock(&dispatch.in_flight).is_empty(),
            "every mark is taken off"
        );
    }

    #[tokio::test]
    async fn a_question_its_caller_does_not_take_is_declined() {
        let shared = servers();
        let caller = Caller::new(HostHandlers::new(), shared.clone());
        let _in_flight = shared.dispatch.mark("one", &caller);
        let handler = Handler(shared.dispatch.clone());
        let request: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "name?",
            "requestedSchema": { "type": "object", "properties": {} }
        }))
        .unwrap();
        let answer = handler.elicit("one", request).await;
        assert_eq!(answer.action, ElicitationAction::Decline);
    }

    fn server_change(uri: &str) -> ServerChange {
        ServerChange::ResourceUpdated {
            server: "one".to_owned(),
            uri: uri.to_owned(),
        }
    }

    fn told(notices: &[Notice]) -> Vec<String> {
        notices
            .iter()
            .map(|notice| match notice {
                Notice::Tools => "tools".to_owned(),
                Notice::Resources => "resources".to_owned(),
                Notice::Prompts => "prompts".to_owned(),
                Notice::Updated(uri) => format!("updated {uri}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_client_that_falls_behind_is_told_every_list_and_subscription_may_have_changed() {
        let (_catalog, catalog) = watch::channel(Arc::new(Catalog::default()));
        let (own, changes) = broadcast::channel(2);
        let (shared_sender, shared_changes) = broadcast::channel(2);
        let caller = Caller::new(HostHandlers::new(), servers());
        let subscribed = Arc::new(Subscribed::default());
        let mut watched = Changes {
            own: Watched {
                catalog: catalog.clone(),
                changes,
            },
            subscribed: subscribed.clone(),
            shared: Some((
                Watched {
                    catalog,
                    changes: shared_changes,
                },
                caller.clone(),
            )),
        };
        subscribed.add("own://a");
        subscribed.add("both://b");
        caller.subscribed.add("both://b");
        caller.subscribed.add("shared://c");

        // Within the backlog, each update is told as it is.
        own.send(server_change("own://a")).unwrap();
        let notices = watched.next().await.unwrap();
        assert_eq!(told(&notices), ["updated own://a"]);

        // Past it, the updates are lost: every list and every subscribed URI, of
        // either runtime, is told instead, each once.
        for uri in ["own://a", "own://x", "own://y"] {
            own.send(server_change(uri)).unwrap();
        }
        let every = [
            "resources",
            "prompts",
            "updated both://b",
            "updated own://a",
            "updated shared://c",
        ];
        assert_eq!(told(&watched.next().await.unwrap()), every);
        for uri in ["own://x", "own://y"] {
            let notices = watched.next().await.unwrap();
            assert_eq!(told(&notices), [format!("updated {uri}")]);
        }
        // The shared runtime's lag is told the same way.
        for uri in ["shared://c", "shared://x", "shared://y"] {
            shared_sender.send(server_change(uri)).unwrap();
        }
        assert_eq!(told(&watched.next().await.unwrap()), every);
    }
}
