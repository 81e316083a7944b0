//! The servers' questions to a client without a session, asked as input-required
//! results.
//!
//! A 2026-07-28 client over HTTP has no session the gateway could send a request on:
//! each of its requests gets one answer. So when a server asks a question during a
//! call (a handshake-era server with a request of its own, a 2026-07-28 server with an
//! `input_required` result the runtime turns into the same question), the call's
//! answer to the client is an `InputRequiredResult` holding the question and a sealed
//! `requestState`. The same holds for `prompts/get`. The client calls again with its answers and that state; the
//! server's call, still waiting behind the gateway, gets the answers and goes on, to
//! its result or its next question.
//!
//! - [`Askers`] are a runtime's calls waiting on their servers: the runtime's
//!   [`handlers`] pass each question to the call waiting on the server that asked.
//! - [`Rounds`] keeps a call between its client's requests, under a `requestState`
//!   sealed with rmcp's [`RequestStateCodec`].
//!
//! Invariants:
//! 1. A question goes to the call it was asked in: a 2026-07-28 server's, answered
//!    inside the call's own future, exactly; a handshake-era server's own request, to
//!    a call of the same runtime (one principal, one set of declared capabilities)
//!    waiting on the server that asked: of several, the earliest whose
//!    client waits for it (a kept call, blocked on its own questions, asks no new
//!    one), else the latest kept. A question no call waits for (asked while listing,
//!    say) is declined, as a client without the feature would.
//! 2. The client is asked only what it declared it can answer (invariant 1 of
//!    [`crate::forward`]).
//! 3. A `requestState` names one kept call and is sealed with a key of this gateway
//!    process, bound to the principal, the method and the tool's or prompt's name,
//!    and expires with the call's hold ([`HOLD`]). A state that fails its check
//!    (altered, another principal's, method's or name's, expired, from another
//!    process) is refused as invalid params, and so is a replayed one: a kept call is
//!    taken by the first request that resumes it.
//! 4. A resumed call whose answers leave questions open asks exactly those again,
//!    under a new state; answers to keys it did not ask are ignored. An answer that is
//!    not a result of the kind asked is refused as invalid params, and the call stays
//!    kept under the same state.
//! 5. A call nobody resumes within [`HOLD`] is dropped, and the runtime cancels it on
//!    its server; so is a call whose client goes away while it runs, and one that
//!    would be a principal's [`MAX_KEPT`]-plus-first kept call (refused).
//! 6. Every log message of the servers is asked for; one goes to every call of the
//!    runtime's client waiting on its server, which passes it on at the level its
//!    request asks for (`io.modelcontextprotocol/logLevel`), and not at all
//!    without one.
//! 7. In a fleet, a state is sealed with a key derived from the fleet key, so every
//!    replica opens it, and it names the process that keeps its call. A request that
//!    resumes a call another process keeps is resumed there, over the fleet's Redis
//!    (`gateway::relay`); when that process is gone, it fails within a lease saying so.

#![allow(
    deprecated,
    reason = "rmcp marks sampling, roots and logging deprecated (SEP-2577); servers still use them"
)]

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use crate::sync::lock;
use mcp_runtime::fleet::Fleet;
use mcp_runtime::host::{
    Elicitation, ElicitationModes, HandlerFuture, HostHandlers, Logs, Root, Roots, Sampling,
};
use rmcp::{
    ErrorData,
    model::{
        CallToolResponse, ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams,
        CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
        GetPromptResponse, InputRequest, InputRequests, InputRequiredResult, InputResponses,
        ListRootsRequest, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
        ReadResourceResponse, RequestStateCodec, SealOptions,
    },
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

/// How long a call waits for its client to come back with answers (invariant 5).
pub(crate) const HOLD: Duration = Duration::from_secs(600);

/// A server's question, on its way to the client of the call waiting on that server.
pub(crate) struct Question {
    request: InputRequest,
    /// Its key and round, when the server asked it in an input request.
    asked: Option<mcp_runtime::host::Asked>,
    answer: oneshot::Sender<serde_json::Value>,
}

tokio::task_local! {
    /// The questions of the request whose future is being polled: a 2026-07-28
    /// server's input requests are answered inside the request's own future, so they
    /// go exactly there.
    static ASKING: mpsc::UnboundedSender<Question>;
}

/// The calls of one runtime waiting on their servers, by server (invariant 1).
#[derive(Default)]
pub(crate) struct Askers {
    waiting: Mutex<HashMap<String, Vec<Waiting>>>,
    next: AtomicU64,
}

struct Waiting {
    id: u64,
    questions: mpsc::UnboundedSender<Question>,
    logs: mpsc::UnboundedSender<Logged>,
    /// Whether the call is kept, waiting for its client to come back.
    kept: Arc<AtomicBool>,
}

/// A request's way to take the questions of the server it waits on.
pub(crate) struct Asker {
    askers: Arc<Askers>,
    questions: mpsc::UnboundedSender<Question>,
    logs: mpsc::UnboundedSender<Logged>,
    kept: Arc<AtomicBool>,
}

/// Where a request's questions come out, and whether it is kept.
pub(crate) struct Questions {
    asked: mpsc::UnboundedReceiver<Question>,
    /// The log messages of the servers the request waits on.
    pub(crate) logs: mpsc::UnboundedReceiver<Logged>,
    kept: Arc<AtomicBool>,
}

impl Questions {
    /// The request's next question, or its next log message.
    pub(crate) async fn next_event(&mut self) -> Option<Event> {
        tokio::select! {
            biased;
            Some(logged) = self.logs.recv() => Some(Event::Logged(logged)),
            question = self.asked.recv() => question.map(Event::Asked),
        }
    }
}

/// What a request's servers send it on their way to its result.
pub(crate) enum Event {
    Asked(Question),
    Logged(Logged),
}

/// A server's log message: the server's name, and the message.
pub(crate) type Logged = (String, LogMessage);

/// A server's log message (rmcp's deprecated type, named here so that the modules
/// passing it on need no `allow(deprecated)`).
pub(crate) type LogMessage = LoggingMessageNotificationParam;

impl Asker {
    /// `request`, run as this asker's: the questions answered inside it come here.
    pub(crate) async fn run<F: std::future::Future>(&self, request: F) -> F::Output {
        ASKING.scope(self.questions.clone(), request).await
    }

    /// The request now waits on `server`, until the guard is dropped.
    pub(crate) fn wait_on(&self, server: &str) -> Asking {
        let id = self.askers.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.askers.waiting)
            .entry(server.to_owned())
            .or_default()
            .push(Waiting {
                id,
                questions: self.questions.clone(),
                logs: self.logs.clone(),
                kept: self.kept.clone(),
            });
        Asking {
            askers: self.askers.clone(),
            server: server.to_owned(),
            id,
        }
    }
}

/// A call's place among the [`Askers`], given up when dropped.
pub(crate) struct Asking {
    askers: Arc<Askers>,
    server: String,
    id: u64,
}

impl Drop for Asking {
    fn drop(&mut self) {
        let mut waiting = lock(&self.askers.waiting);
        if let Some(calls) = waiting.get_mut(&self.server) {
            calls.retain(|call| call.id != self.id);
            if calls.is_empty() {
                waiting.remove(&self.server);
            }
        }
    }
}

impl Askers {
    /// A request's way to take its servers' questions, and where they come out.
    pub(crate) fn asker(self: &Arc<Self>) -> (Asker, Questions) {
        let (questions, asked) = mpsc::unbounded_channel();
        let (logs, logged) = mpsc::unbounded_channel();
        let kept = Arc::new(AtomicBool::new(false));
        let asker = Asker {
            askers: self.clone(),
            questions,
            logs,
            kept: kept.clone(),
        };
        (
            asker,
            Questions {
                asked,
                logs: logged,
                kept,
            },
        )
    }

    /// `server`'s log message, to every call waiting on it (invariant 6): the message
    /// does not say which call it is about, and they are all one client's.
    fn log(&self, server: &str, message: LoggingMessageNotificationParam) {
        if let Some(calls) = lock(&self.waiting).get(server) {
            for call in calls {
                let _ = call.logs.send((server.to_owned(), message.clone()));
            }
        }
    }

    /// `server`'s question asked of a call waiting on it (invariant 1), and its
    /// client's answer; `None` when no call waits or the call ended unanswered.
    async fn ask(&self, server: &str, request: InputRequest) -> Option<serde_json::Value> {
        // A question asked inside a request's own future is that request's; a
        // handshake-era server's own request says nothing of the call it is for.
        let own = ASKING.try_with(Clone::clone).ok();
        let questions = own.or_else(|| {
            lock(&self.waiting).get(server).and_then(|calls| {
                // A kept call waits for its client, blocked on its own questions: it
                // asks none until resumed, unless with the ones it was kept for.
                calls
                    .iter()
                    .find(|call| !call.kept.load(Ordering::Acquire))
                    .or_else(|| calls.last())
                    .map(|call| call.questions.clone())
            })
        })?;
        let (answer, answered) = oneshot::channel();
        let asked = mcp_runtime::host::asked();
        questions
            .send(Question {
                request,
                asked,
                answer,
            })
            .ok()?;
        answered.await.ok()
    }
}

/// The handlers of a runtime whose client is asked through its calls' answers, as far
/// as `capabilities` go (invariant 2).
pub(crate) fn handlers(capabilities: &ClientCapabilities, askers: &Arc<Askers>) -> HostHandlers {
    // A round's questions come to the client in one answer. Every log message is
    // asked for; each request passes on those at the level it asks for.
    let handlers = HostHandlers::new()
        .with_questions_together()
        .with_logs(Logging(askers.clone()))
        .with_log_level(LoggingLevel::Debug);
    offered(capabilities, handlers, |modes, sampling_tools| Asked {
        askers: askers.clone(),
        modes,
        sampling_tools,
    })
}

/// `handlers` with a handler `ask(modes, sampling_tools)` for each question a client
/// declared it answers in `capabilities`, and for no other: elicitation in its modes,
/// sampling with or without tool use, roots.
pub(crate) fn offered<H: Elicitation + Sampling + Roots>(
    capabilities: &ClientCapabilities,
    mut handlers: HostHandlers,
    ask: impl Fn(ElicitationModes, bool) -> H,
) -> HostHandlers {
    let none = ElicitationModes {
        form: false,
        url: false,
    };
    if let Some(elicitation) = &capabilities.elicitation {
        // A client of 2025-06-18 declares `elicitation: {}`: forms.
        let url = elicitation.url.is_some();
        let modes = ElicitationModes {
            form: elicitation.form.is_some() || !url,
            url,
        };
        handlers = handlers.with_elicitation(ask(modes, false));
    }
    if let Some(sampling) = &capabilities.sampling {
        handlers = handlers.with_sampling(ask(none, sampling.tools.is_some()));
    }
    if capabilities.roots.is_some() {
        handlers = handlers.with_roots(ask(none, false));
    }
    handlers
}

/// A runtime's servers' log messages, to the calls waiting on them.
struct Logging(Arc<Askers>);

impl Logs for Logging {
    fn log(&self, server: &str, message: LoggingMessageNotificationParam) {
        self.0.log(server, message);
    }
}

/// A runtime's client, asked through the call waiting on the asking server.
struct Asked {
    askers: Arc<Askers>,
    modes: ElicitationModes,
    sampling_tools: bool,
}

impl Elicitation for Asked {
    fn modes(&self) -> ElicitationModes {
        self.modes
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async move {
            let request = InputRequest::Elicitation(ElicitRequest::new(request));
            self.askers
                .ask(server, request)
                .await
                .and_then(|answer| serde_json::from_value(answer).ok())
                .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Decline))
        })
    }
}

impl Sampling for Asked {
    fn tool_use(&self) -> bool {
        self.sampling_tools
    }

    fn create_message<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move {
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(request));
            self.askers
                .ask(server, request)
                .await
                .and_then(|answer| serde_json::from_value(answer).ok())
                .ok_or_else(|| {
                    ErrorData::internal_error("no client call took the sampling request", None)
                })
        })
    }
}

impl Roots for Asked {
    fn roots<'a>(&'a self, server: &'a str) -> HandlerFuture<'a, Vec<Root>> {
        Box::pin(async move {
            let request = InputRequest::ListRoots(ListRootsRequest::default());
            let answer = self.askers.ask(server, request).await;
            answer
                .and_then(|answer| serde_json::from_value::<ListRootsResult>(answer).ok())
                .map(|result| {
                    result
                        .roots
                        .into_iter()
                        .map(|root| Root {
                            uri: root.uri,
                            name: root.name,
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }
}

/// What a kept request ends with: a tool's result, or a prompt.
#[derive(Debug)]
pub(crate) enum Answer {
    Tool(CallToolResponse),
    Prompt(GetPromptResponse),
    Resource(ReadResourceResponse),
}

/// A request between its client's rounds: running, or waiting for answers.
pub(crate) struct Call {
    /// The request, run apart from any one of the client's; dropping it cancels it.
    pub(crate) task: AbortOnDropHandle<Result<Answer, ErrorData>>,
    pub(crate) questions: Questions,
    pub(crate) progress: mpsc::UnboundedReceiver<mcp_runtime::Progress>,
    /// The questions asked and not answered yet, by their key.
    open: BTreeMap<String, Question>,
    /// How many questions the call has asked.
    asked: u64,
    /// Answers the client gave before it was asked, by the server's key.
    given: InputResponses,
    /// How many questions of each of the server's rounds have come.
    seen: HashMap<u64, usize>,
}

impl Call {
    pub(crate) fn new(
        task: AbortOnDropHandle<Result<Answer, ErrorData>>,
        questions: Questions,
        progress: mpsc::UnboundedReceiver<mcp_runtime::Progress>,
    ) -> Self {
        Self {
            task,
            questions,
            progress,
            open: BTreeMap::new(),
            asked: 0,
            given: InputResponses::new(),
            seen: HashMap::new(),
        }
    }

    /// The call, with the answers its client gave in its first request: a question
    /// the server asks under one of their keys takes that answer, if it is one of
    /// the kind asked, without a round (SEP-2322 lets a client answer up front).
    pub(crate) fn with_answers(mut self, given: InputResponses) -> Self {
        self.given = given;
        self
    }

    /// Takes `question` and those asked with it, each under the server's key for it
    /// when it has one.
    pub(crate) fn asks(&mut self, question: Question) {
        let mut next = Some(question);
        while let Some(question) = next {
            self.asked += 1;
            let kind = match &question.request {
                InputRequest::Elicitation(_) => "elicitation",
                InputRequest::CreateMessage(_) => "sampling",
                InputRequest::ListRoots(_) => "roots",
                _ => "input",
            };
            if let Some(asked) = &question.asked {
                *self.seen.entry(asked.round).or_default() += 1;
            }
            let own_key = question.asked.as_ref().map(|asked| asked.key.clone());
            let given = own_key
                .as_ref()
                .and_then(|key| self.given.remove(key))
                .filter(|answer| answers(&question.request, answer).is_ok());
            match given {
                Some(answer) => {
                    let _ = question.answer.send(answer);
                }
                None => {
                    let mut key = own_key
                        .filter(|key| !self.open.contains_key(key))
                        .unwrap_or_else(|| format!("{kind}-{}", self.asked));
                    // A key of the gateway's own never takes a server's key's place.
                    while self.open.contains_key(&key) {
                        key.push('+');
                    }
                    self.open.insert(key, question);
                }
            }
            next = self.questions.asked.try_recv().ok();
        }
    }

    /// Whether a question the server asked in one round with others is open while
    /// some of the others have not come yet: they are on their way (each round's
    /// count is of the questions that go to the gateway's handlers).
    pub(crate) fn round_incomplete(&self) -> bool {
        self.open
            .values()
            .filter_map(|question| question.asked.as_ref())
            .any(|asked| self.seen.get(&asked.round).copied().unwrap_or(0) < asked.of)
    }

    /// Whether questions wait for answers.
    pub(crate) fn has_open_questions(&self) -> bool {
        !self.open.is_empty()
    }

    /// Whether each answer given is a result of the kind its question asks
    /// (invariant 4).
    fn check(&self, responses: &InputResponses) -> Result<(), String> {
        for (key, question) in &self.open {
            if let Some(response) = responses.get(key) {
                answers(&question.request, response)
                    .map_err(|error| format!("the answer to `{key}` cannot be used: {error}"))?;
            }
        }
        Ok(())
    }

    /// Hands the answers given (checked) to the questions they answer (invariant 4).
    fn answer(&mut self, mut responses: InputResponses) {
        // Driven again from here: its next questions are its own.
        self.questions.kept.store(false, Ordering::Release);
        let open = std::mem::take(&mut self.open);
        for (key, question) in open {
            match responses.remove(&key) {
                // The call may have ended meanwhile: then nobody waits for it.
                Some(response) => {
                    let _ = question.answer.send(response);
                }
                None => {
                    self.open.insert(key, question);
                }
            }
        }
    }
}

/// Whether `response` is a result of the kind `request` asks for.
fn answers(request: &InputRequest, response: &serde_json::Value) -> Result<(), serde_json::Error> {
    let response = response.clone();
    match request {
        InputRequest::Elicitation(_) => serde_json::from_value::<ElicitResult>(response).map(drop),
        InputRequest::CreateMessage(_) => {
            serde_json::from_value::<CreateMessageResult>(response).map(drop)
        }
        InputRequest::ListRoots(_) => serde_json::from_value::<ListRootsResult>(response).map(drop),
        // A kind of question this gateway does not know it cannot have asked.
        _ => Ok(()),
    }
}

/// The calls kept between their clients' requests (invariants 3 and 5).
pub(crate) struct Rounds {
    codec: RequestStateCodec,
    kept: Mutex<HashMap<u64, Kept>>,
    next: AtomicU64,
    /// In a fleet, the link to it: its states name this process, and a state
    /// another process keeps the call of is resumed there (invariant 7).
    fleet: Option<Fleet>,
}

/// A kept call and the principal it is kept for.
struct Kept {
    principal: String,
    call: Call,
}

/// How many calls one principal may have kept at once (invariant 5).
pub(crate) const MAX_KEPT: usize = 64;

/// What a `requestState` holds: the kept call's number and, in a fleet, the replica
/// and the process that keep it; nothing secret (rmcp's codec authenticates, it does
/// not encrypt).
#[derive(Serialize, Deserialize)]
struct State {
    call: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replica: Option<String>,
    /// The keeping process's address in the fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    address: Option<String>,
}

/// Where a state's call is.
pub(crate) enum Resumed {
    /// Here: taken, its answers given.
    Here(Call),
    /// In another process of the fleet, with the answers for it (invariant 7).
    Elsewhere(Elsewhere),
}

#[cfg(test)]
impl Resumed {
    /// The call, resumed here.
    fn here(self) -> Call {
        match self {
            Self::Here(call) => call,
            Self::Elsewhere(elsewhere) => panic!("kept by `{}`", elsewhere.replica),
        }
    }
}

/// A call another process of the fleet keeps, and the answers to take it.
pub(crate) struct Elsewhere {
    pub(crate) fleet: Fleet,
    /// The keeping replica's name, for messages.
    pub(crate) replica: String,
    /// The keeping process's address.
    pub(crate) address: String,
    pub(crate) responses: InputResponses,
}

impl Rounds {
    /// Rounds whose states only this instance can open: its key is drawn here and
    /// kept in memory alone.
    pub(crate) fn new() -> Self {
        let mut key = [0_u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides random bytes");
        Self::with_key(key, None)
    }

    /// Rounds of a replica of `fleet`, whose states every replica opens with a key
    /// derived from the fleet key: a request that resumes a call another process
    /// keeps is resumed there (invariant 7).
    pub(crate) fn in_fleet(fleet: &Fleet) -> Self {
        let key = fleet.derived_key("serve request state");
        Self::with_key(key, Some(fleet.clone()))
    }

    fn with_key(key: [u8; 32], fleet: Option<Fleet>) -> Self {
        let codec = RequestStateCodec::try_new(key.to_vec())
            .expect("a 32-byte key is long enough for the request-state codec");
        Self {
            codec,
            kept: Mutex::default(),
            next: AtomicU64::new(0),
            fleet,
        }
    }

    /// The fleet these rounds are kept in, if any.
    pub(crate) fn fleet(&self) -> Option<&Fleet> {
        self.fleet.as_ref()
    }

    /// Keeps `call`, whose questions are open, for its client to resume, and the
    /// answer that asks them (invariants 3 and 5). `target` is what the client asked
    /// of whom: the method and the tool's or prompt's name.
    pub(crate) fn keep(
        self: &Arc<Self>,
        call: Call,
        principal: &str,
        target: Target<'_>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let requests: InputRequests = call
            .open
            .iter()
            .map(|(key, question)| (key.clone(), question.request.clone()))
            .collect();
        let bound = bound_to(principal, target);
        let options = SealOptions::new().associated_data(&bound).ttl(HOLD);
        let state = self
            .codec
            .seal_json_with(
                &State {
                    call: id,
                    replica: self.fleet().map(|fleet| fleet.replica().to_owned()),
                    address: self.fleet().map(|fleet| fleet.address().to_owned()),
                },
                &options,
            )
            .expect("a call's number serializes");
        call.questions.kept.store(true, Ordering::Release);
        let mut kept = lock(&self.kept);
        let held = kept
            .values()
            .filter(|kept| kept.principal == principal)
            .count();
        if held >= MAX_KEPT {
            // Dropped here: the call is cancelled on its server.
            return Err(ErrorData::internal_error(
                format!(
                    "{MAX_KEPT} of this client's requests already wait for its answers: answer them, or let them expire"
                ),
                None,
            ));
        }
        let principal = principal.to_owned();
        kept.insert(id, Kept { principal, call });
        drop(kept);
        let rounds = Arc::downgrade(self);
        tokio::spawn(forget_after_hold(rounds, id));
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The call `state` names, taken to be resumed with `responses` (invariants 3
    /// and 4), or where it is kept in the fleet (invariant 7).
    pub(crate) fn resume(
        &self,
        state: &str,
        principal: &str,
        target: Target<'_>,
        responses: InputResponses,
    ) -> Result<Resumed, ErrorData> {
        let bound = bound_to(principal, target);
        let State {
            call: id,
            replica,
            address,
        } = self.codec.open_json_with(state, &bound).map_err(|error| {
            ErrorData::invalid_params(
                format!("the requestState cannot be used: {error}; call the tool again without it"),
                None,
            )
        })?;
        if let Some(fleet) = self.fleet() {
            // In a fleet every state names the process that keeps its call: one that
            // does not is of no process here, and a call number alone names a call
            // of every process.
            let Some(address) = address else {
                return Err(ErrorData::invalid_params(
                    "the requestState names no replica of the gateway's fleet; call the tool again without it",
                    None,
                ));
            };
            if address != fleet.address() {
                return Ok(Resumed::Elsewhere(Elsewhere {
                    fleet: fleet.clone(),
                    replica: replica.unwrap_or_default(),
                    address,
                    responses,
                }));
            }
        }
        // Checked and taken under one lock: a refused answer leaves the call kept,
        // its hold running as before.
        let mut kept = lock(&self.kept);
        let call = kept
            .get(&id)
            // The state is bound to its principal already; its call is too.
            .filter(|kept| kept.principal == principal)
            .map(|kept| &kept.call)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    "the request of this requestState was resumed already or has ended; send it again without the state",
                    None,
                )
            })?;
        call.check(&responses)
            .map_err(|error| ErrorData::invalid_params(error, None))?;
        let mut call = kept.remove(&id).expect("the call was just found").call;
        drop(kept);
        call.answer(responses);
        Ok(Resumed::Here(call))
    }
}

/// Drops call `id` if it is still kept once [`HOLD`] is over (invariant 5).
async fn forget_after_hold(rounds: Weak<Rounds>, id: u64) {
    tokio::time::sleep(HOLD).await;
    if let Some(rounds) = rounds.upgrade() {
        let forgotten = lock(&rounds.kept).remove(&id);
        if forgotten.is_some() {
            tracing::info!("a call whose client did not answer its questions was cancelled");
        }
    }
}

/// What a client asked of whom: a request's method and the name (or URI) it names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) method: &'a str,
    pub(crate) name: &'a str,
}

/// The data a state is bound to: who may resume it, and which request.
fn bound_to(principal: &str, target: Target<'_>) -> Vec<u8> {
    [
        principal.as_bytes(),
        b"\0",
        target.method.as_bytes(),
        b"\0",
        target.name.as_bytes(),
    ]
    .concat()
}

#[cfg(test)]
mod tests {

    use rmcp::model::{CallToolResult, ElicitRequest};
    use serde_json::json;

    use super::*;

    /// The next question that comes out of `questions`, past any log message.
    async fn next_question(questions: &mut Questions) -> Option<Question> {
        loop {
            if let Event::Asked(question) = questions.next_event().await? {
                return Some(question);
            }
        }
    }

    /// A question from server `s`, as a handshake-era server asks it.
    fn question() -> InputRequest {
        let params = serde_json::from_value(json!({
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }))
        .unwrap();
        InputRequest::Elicitation(ElicitRequest::new(params))
    }

    /// Sets its flag when dropped: the call's task was dropped (cancelled).
    struct Dropped(Arc<AtomicBool>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A call on server `s` that asks one question and answers with the answer's
    /// action; `ended` is set when its task is dropped.
    async fn asking_call(askers: &Arc<Askers>, ended: &Arc<AtomicBool>) -> Call {
        let (asker, questions) = askers.asker();
        let (_, progress) = mpsc::unbounded_channel();
        let (askers, guard) = (askers.clone(), Dropped(ended.clone()));
        let task = tokio::spawn(async move {
            let _guard = guard;
            let _asking = asker.wait_on("s");
            let answer = askers.ask("s", question()).await;
            let text = answer.map_or("unanswered".to_owned(), |answer| {
                answer["action"].to_string()
            });
            let result = CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]);
            Ok(Answer::Tool(result.into()))
        });
        let mut call = Call::new(AbortOnDropHandle::new(task), questions, progress);
        let asked = next_question(&mut call.questions).await.unwrap();
        call.asks(asked);
        call
    }

    const ASK: Target<'static> = Target {
        method: "tools/call",
        name: "ask",
    };
    const OTHER: Target<'static> = Target {
        method: "tools/call",
        name: "other",
    };

    fn state_of(result: &InputRequiredResult) -> (String, Vec<String>) {
        let keys = result
            .input_requests
            .as_ref()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        (result.request_state.clone().unwrap(), keys)
    }

    fn text_of(response: Result<Result<Answer, ErrorData>, tokio::task::JoinError>) -> String {
        match response.unwrap().unwrap() {
            Answer::Tool(CallToolResponse::Complete(result)) => {
                result.content[0].as_text().unwrap().text.clone()
            }
            other => panic!("a complete result: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_state_resumes_its_call_once_for_its_principal_and_tool_only() {
        let rounds = Arc::new(Rounds::new());
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let call = asking_call(&askers, &ended).await;
        let (state, keys) = state_of(&rounds.keep(call, "alice", ASK).unwrap());
        assert_eq!(keys, ["elicitation-1"]);
        let answers = || InputResponses::from([(keys[0].clone(), json!({"action": "accept"}))]);

        let tampered = format!("{state}-TAMPERED");
        for (state, principal, tool) in [
            (tampered.as_str(), "alice", ASK),
            (state.as_str(), "bob", ASK),
            (state.as_str(), "alice", OTHER),
        ] {
            let refused = rounds
                .resume(state, principal, tool, answers())
                .err()
                .unwrap();
            assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        }
        // An answer of another kind than asked is refused, and the call stays kept.
        let wrong = InputResponses::from([(keys[0].clone(), json!(12345))]);
        let refused = rounds.resume(&state, "alice", ASK, wrong).err().unwrap();
        assert!(refused.message.contains("elicitation-1"), "{refused:?}");

        let call = rounds
            .resume(&state, "alice", ASK, answers())
            .unwrap()
            .here();
        assert!(!call.has_open_questions());
        let replayed = rounds
            .resume(&state, "alice", ASK, answers())
            .err()
            .unwrap();
        assert!(replayed.message.contains("resumed already"), "{replayed:?}");
        assert_eq!(text_of(call.task.await), "\"accept\"");
    }

    /// A replica `name` of a fleet whose Redis is never reached: its address and key
    /// are all these tests need.
    fn replica(name: &str) -> Fleet {
        Fleet::connect("redis://127.0.0.1:1", &[9; 32], name).unwrap()
    }

    /// Where `resumed` says the call is kept, and the answers it carries there.
    fn elsewhere(resumed: Result<Resumed, ErrorData>) -> Elsewhere {
        match resumed {
            Ok(Resumed::Elsewhere(elsewhere)) => elsewhere,
            Ok(Resumed::Here(_)) => panic!("resumed here"),
            Err(error) => panic!("{error:?}"),
        }
    }

    #[tokio::test]
    async fn a_state_another_process_keeps_the_call_of_is_sent_there_with_its_answers() {
        let (one, other) = (replica("one"), replica("other"));
        let (kept_by_one, reached) = (
            Arc::new(Rounds::in_fleet(&one)),
            Arc::new(Rounds::in_fleet(&other)),
        );
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let call = asking_call(&askers, &ended).await;
        let (state, keys) = state_of(&kept_by_one.keep(call, "alice", ASK).unwrap());
        let answers = || InputResponses::from([(keys[0].clone(), json!({"action": "accept"}))]);
        let there = elsewhere(reached.resume(&state, "alice", ASK, answers()));
        assert_eq!(there.replica, "one");
        assert_eq!(there.address, one.address());
        assert_eq!(there.responses, answers());
        // Opened first where it landed: another principal's retry goes nowhere.
        let refused = reached.resume(&state, "mallory", ASK, answers()).err();
        assert!(refused.unwrap().message.contains("cannot be used"));
        // A gateway outside the fleet cannot open it at all.
        let alone = Rounds::new()
            .resume(&state, "alice", ASK, answers())
            .err()
            .unwrap();
        assert!(alone.message.contains("cannot be used"), "{alone:?}");
        let Ok(Resumed::Here(call)) = kept_by_one.resume(&state, "alice", ASK, answers()) else {
            panic!("the keeping process resumes it");
        };
        assert_eq!(text_of(call.task.await), "\"accept\"");
    }

    #[tokio::test]
    async fn in_a_fleet_a_state_that_names_no_process_is_refused() {
        let fleet = replica("one");
        // Sealed with the fleet's key by rounds that name no process (as an older
        // version's were), for a call whose number this process also keeps.
        let unnamed = Rounds::with_key(fleet.derived_key("serve request state"), None);
        let kept = Arc::new(Rounds::in_fleet(&fleet));
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let (state, keys) = state_of(
            &Arc::new(unnamed)
                .keep(asking_call(&askers, &ended).await, "alice", ASK)
                .unwrap(),
        );
        kept.keep(asking_call(&askers, &ended).await, "bob", ASK)
            .unwrap();
        let answers = InputResponses::from([(keys[0].clone(), json!({"action": "accept"}))]);
        let refused = kept.resume(&state, "alice", ASK, answers).err().unwrap();
        assert!(refused.message.contains("names no replica"), "{refused:?}");
    }

    #[tokio::test]
    async fn a_state_of_a_same_named_replica_never_resumes_another_call() {
        let (before, after) = (replica("one"), replica("one"));
        let kept_before = Arc::new(Rounds::in_fleet(&before));
        let kept_after = Arc::new(Rounds::in_fleet(&after));
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let (state, keys) = state_of(
            &kept_before
                .keep(asking_call(&askers, &ended).await, "alice", ASK)
                .unwrap(),
        );
        // The same call number, kept by the other process.
        kept_after
            .keep(asking_call(&askers, &ended).await, "alice", ASK)
            .unwrap();
        let answers = InputResponses::from([(keys[0].clone(), json!({"action": "accept"}))]);
        let there = elsewhere(kept_after.resume(&state, "alice", ASK, answers));
        assert_eq!(there.address, before.address());
    }

    #[tokio::test]
    async fn answers_that_leave_a_question_open_ask_it_again() {
        let rounds = Arc::new(Rounds::new());
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let call = asking_call(&askers, &ended).await;
        let (state, _) = state_of(&rounds.keep(call, "alice", ASK).unwrap());
        let unrelated = InputResponses::from([("other".to_owned(), json!({"action": "accept"}))]);
        let call = rounds
            .resume(&state, "alice", ASK, unrelated)
            .unwrap()
            .here();
        assert!(call.has_open_questions());
        let (again, keys) = state_of(&rounds.keep(call, "alice", ASK).unwrap());
        assert_ne!(again, state, "a new round has a new state");
        assert_eq!(keys, ["elicitation-1"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_nobody_resumes_is_cancelled_after_the_hold() {
        let rounds = Arc::new(Rounds::new());
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let call = asking_call(&askers, &ended).await;
        let (state, keys) = state_of(&rounds.keep(call, "alice", ASK).unwrap());
        tokio::time::sleep(HOLD - Duration::from_secs(1)).await;
        assert!(!ended.load(Ordering::SeqCst), "kept for the hold");
        tokio::time::sleep(Duration::from_secs(2)).await;
        tokio::task::yield_now().await;
        assert!(
            ended.load(Ordering::SeqCst),
            "cancelled once the hold is over"
        );
        let answers = InputResponses::from([(keys[0].clone(), json!({"action": "accept"}))]);
        assert!(rounds.resume(&state, "alice", ASK, answers).is_err());
    }

    #[tokio::test]
    async fn a_kept_call_does_not_take_a_later_calls_question() {
        let rounds = Arc::new(Rounds::new());
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        let kept = asking_call(&askers, &ended).await;
        let _ = rounds.keep(kept, "alice", ASK);
        let (later, mut questions) = askers.asker();
        let _asking = later.wait_on("s");
        let asked = tokio::spawn({
            let askers = askers.clone();
            async move { askers.ask("s", question()).await }
        });
        let question = next_question(&mut questions)
            .await
            .expect("the later call's question");
        question.answer.send(json!({"action": "decline"})).unwrap();
        assert_eq!(asked.await.unwrap(), Some(json!({"action": "decline"})));
    }

    #[tokio::test]
    async fn a_principal_keeps_a_bounded_number_of_calls() {
        let rounds = Arc::new(Rounds::new());
        let askers = Arc::new(Askers::default());
        let ended = Arc::new(AtomicBool::new(false));
        for _ in 0..MAX_KEPT {
            let call = asking_call(&askers, &ended).await;
            rounds.keep(call, "alice", ASK).unwrap();
        }
        let one_more = asking_call(&askers, &ended).await;
        let refused = rounds.keep(one_more, "alice", ASK).unwrap_err();
        assert!(refused.message.contains("already wait"), "{refused:?}");
        let another_principal = asking_call(&askers, &ended).await;
        assert!(rounds.keep(another_principal, "bob", ASK).is_ok());
    }

    /// A call whose two questions, of one round of `of`, are asked as a 2026-07-28
    /// server's are: with their keys.
    async fn round_call(
        of: usize,
        given: InputResponses,
    ) -> (Call, Vec<oneshot::Receiver<serde_json::Value>>) {
        let (asker, questions) = Arc::new(Askers::default()).asker();
        let (_, progress) = mpsc::unbounded_channel();
        let task = tokio::spawn(std::future::pending());
        let mut call =
            Call::new(AbortOnDropHandle::new(task), questions, progress).with_answers(given);
        let mut answers = Vec::new();
        for key in ["name", "colour"] {
            let (answer, answered) = oneshot::channel();
            let asked = Some(mcp_runtime::host::Asked::new(key, 7, of));
            let request = question();
            asker
                .questions
                .send(Question {
                    request,
                    asked,
                    answer,
                })
                .unwrap();
            answers.push(answered);
        }
        let first = next_question(&mut call.questions).await.unwrap();
        call.asks(first);
        (call, answers)
    }

    #[tokio::test]
    async fn a_round_partly_answered_asks_the_rest_without_waiting_for_more() {
        let rounds = Arc::new(Rounds::new());
        let (call, mut answers) = round_call(2, InputResponses::new()).await;
        assert!(
            !call.round_incomplete(),
            "both questions came: {:?}",
            call.open.keys()
        );
        let (state, keys) = state_of(&rounds.keep(call, "alice", ASK).unwrap());
        assert_eq!(keys, ["colour", "name"], "the server's own keys");
        let one = InputResponses::from([("name".to_owned(), json!({"action": "accept"}))]);
        let call = rounds.resume(&state, "alice", ASK, one).unwrap().here();
        assert_eq!(
            answers.remove(0).await.unwrap(),
            json!({"action": "accept"})
        );
        assert!(call.has_open_questions(), "`colour` is still open");
        assert!(
            !call.round_incomplete(),
            "nothing more is coming from that round"
        );
    }

    #[tokio::test]
    async fn an_answer_given_up_front_counts_toward_its_round() {
        let (call, _answers) = round_call(3, InputResponses::new()).await;
        assert!(call.round_incomplete(), "one of three has not come");
        let given = InputResponses::from([("name".to_owned(), json!({"action": "decline"}))]);
        let (call, mut answers) = round_call(2, given).await;
        assert_eq!(
            answers.remove(0).await.unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(call.open.keys().collect::<Vec<_>>(), ["colour"]);
        assert!(!call.round_incomplete(), "both came, one answered up front");
    }

    #[tokio::test]
    async fn a_question_no_call_waits_for_is_declined() {
        let askers = Arc::new(Askers::default());
        assert_eq!(askers.ask("s", question()).await, None);
        let (asker, _questions) = askers.asker();
        drop(asker.wait_on("s"));
        assert_eq!(askers.ask("s", question()).await, None);
        assert!(lock(&askers.waiting).is_empty());
    }
}
