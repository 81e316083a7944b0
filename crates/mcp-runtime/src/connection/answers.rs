//! The client's answers to a server's requests (elicitation, sampling, roots), from
//! the host's handlers, and the pauses of the call timeouts while a person answers.
//!
//! The same [`Answers`] serve a handshake-era server's own requests (through rmcp's
//! client handler) and the input requests of a 2026-07-28 server's `input_required`
//! answers ([`super::input_rounds`]), so both eras get the same answer.
//!
//! Invariants:
//! 1. While an elicitation is being answered the connection is paused: a call's
//!    [`Pauses::expiry`] does not come while any pause lasts, and comes that much
//!    later once it ends (host invariant 1 of [`crate::host`]).
//! 2. Without a handler the answer is the one of a client that does not offer the
//!    feature: elicitation is declined, roots are an empty list, and sampling is
//!    refused with "method not found".

#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated (SEP-2577), but the 2025-11-25 revision has it and servers ask for it"
)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam, ProgressToken,
};
use tokio::{sync::Notify, time::Instant};

use crate::{
    host::HostHandlers,
    progress::{OnProgress, Progress},
    sync::lock,
};

/// The host's answers for one server's connection.
#[derive(Debug)]
pub(crate) struct Answers {
    server: String,
    handlers: HostHandlers,
    pauses: Arc<Pauses>,
    /// The calls waiting for progress, by the number in their token.
    progress: Mutex<ProgressWatches>,
}

#[derive(Debug, Default)]
struct ProgressWatches {
    watching: std::collections::HashMap<ProgressToken, OnProgress>,
    /// Reports no call watched when they came, newest last (at most
    /// [`EARLY_REPORTS`]): a report may be read before its call's watch begins.
    early: std::collections::VecDeque<ProgressNotificationParam>,
}

/// How many reports without a watch are kept.
const EARLY_REPORTS: usize = 64;

/// A call's watch of its progress, in [`Answers`] until dropped.
pub(crate) struct ProgressWatch<'a> {
    answers: &'a Answers,
    token: ProgressToken,
}

impl Drop for ProgressWatch<'_> {
    fn drop(&mut self) {
        lock(&self.answers.progress).watching.remove(&self.token);
    }
}

impl Answers {
    pub(crate) fn new(server: &str, handlers: HostHandlers) -> Self {
        Self {
            server: server.to_owned(),
            handlers,
            pauses: Arc::new(Pauses::default()),
            progress: Mutex::default(),
        }
    }

    /// The server's name.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// The least severe log messages the host asks the server for.
    pub(crate) fn log_level(&self) -> Option<rmcp::model::LoggingLevel> {
        self.handlers.log_level
    }

    /// Hands a change the server reported to the host.
    pub(crate) fn changed(&self, change: crate::changes::ServerChange) {
        self.handlers.changes.send(change);
    }

    /// The pauses of this connection's call timeouts.
    pub(crate) fn pauses(&self) -> &Pauses {
        &self.pauses
    }

    /// Watches the progress of the request rmcp sent with `token` (rmcp gives every
    /// request one): its reports go to `on_progress` until the watch is dropped,
    /// those already read first.
    pub(crate) fn watch_progress(
        &self,
        token: ProgressToken,
        on_progress: OnProgress,
    ) -> ProgressWatch<'_> {
        let mut watches = lock(&self.progress);
        watches.watching.insert(token.clone(), on_progress.clone());
        let (early, kept): (std::collections::VecDeque<_>, _) = std::mem::take(&mut watches.early)
            .into_iter()
            .partition(|report| report.progress_token == token);
        watches.early = kept;
        // Under the lock: a report read meanwhile waits, and comes after these.
        for report in early {
            self.report(&on_progress, report);
        }
        drop(watches);
        ProgressWatch {
            answers: self,
            token,
        }
    }

    /// Hands a progress report to the call that watches its token, or keeps it for
    /// a watch about to begin.
    pub(crate) fn progress(&self, report: ProgressNotificationParam) {
        let on_progress = {
            let mut watches = lock(&self.progress);
            match watches.watching.get(&report.progress_token) {
                Some(on_progress) => on_progress.clone(),
                None => {
                    if watches.early.len() == EARLY_REPORTS {
                        watches.early.pop_front();
                    }
                    watches.early.push_back(report);
                    return;
                }
            }
        };
        // Called outside the lock: the callback may take its time.
        self.report(&on_progress, report);
    }

    fn report(&self, on_progress: &OnProgress, report: ProgressNotificationParam) {
        let mut progress = Progress::new(self.server.clone(), report.progress);
        progress.total = report.total;
        progress.message = report.message.map(crate::redact::masked_text);
        on_progress.report(progress);
    }

    /// The answer to an elicitation (invariants 1 and 2).
    pub(crate) async fn elicit(&self, request: ElicitRequestParams) -> ElicitResult {
        let Some(handler) = &self.handlers.elicitation else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let _paused = self.pauses.begin();
        tracing::debug!(server = %self.server, "the server asks the person a question");
        handler.elicit(&self.server, masked(request)).await
    }

    /// The answer to a sampling request (invariant 2).
    pub(crate) async fn sample(
        &self,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        match &self.handlers.sampling {
            Some(handler) => handler.create_message(&self.server, masked(request)).await,
            None => Err(rmcp::ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >()),
        }
    }

    /// Whether the questions of one input-required result are put at once.
    pub(crate) fn questions_together(&self) -> bool {
        self.handlers.questions_together
    }

    /// Whether `request` goes to a handler of the host (one it offers).
    pub(crate) fn asks(&self, request: &rmcp::model::InputRequest) -> bool {
        use rmcp::model::InputRequest;
        match request {
            InputRequest::Elicitation(_) => self.handlers.elicitation.is_some(),
            InputRequest::CreateMessage(_) => self.handlers.sampling.is_some(),
            InputRequest::ListRoots(_) => self.handlers.roots.is_some(),
            _ => false,
        }
    }

    /// Whether sampling is offered.
    pub(crate) fn samples(&self) -> bool {
        self.handlers.sampling.is_some()
    }

    /// The roots, as a `roots/list` result (invariant 2).
    pub(crate) async fn roots(&self) -> serde_json::Value {
        let roots = match &self.handlers.roots {
            Some(handler) => handler.roots(&self.server).await,
            None => Vec::new(),
        };
        // Written out: rmcp marks its roots types deprecated (roots are leaving the
        // specification), but servers still ask.
        let roots: Vec<_> = roots
            .into_iter()
            .map(|root| {
                let mut entry = serde_json::json!({ "uri": root.uri });
                if let Some(name) = root.name {
                    entry["name"] = name.into();
                }
                entry
            })
            .collect();
        serde_json::json!({ "roots": roots })
    }
}

/// `request`, a server's, with every credential the runtime sends masked in it: a
/// question for the person or messages for a model never carry one
/// ([`crate::redact::credentials`]). Kept as it is when it holds none (or could not
/// be read back, which a request rmcp has read can always be).
fn masked<T: serde::Serialize + serde::de::DeserializeOwned>(request: T) -> T {
    if !crate::redact::credentials_in_use() {
        return request;
    }
    let Ok(value) = serde_json::to_value(&request) else {
        return request;
    };
    match crate::redact::credentials_in_json(&value) {
        std::borrow::Cow::Borrowed(_) => request,
        std::borrow::Cow::Owned(masked) => serde_json::from_value(masked).unwrap_or(request),
    }
}

/// The `tracing` target of servers' log messages (`notifications/message`).
pub const SERVER_LOG_TARGET: &str = "mcp_runtime::server_log";

/// A server's log message, as a `tracing` event of [`SERVER_LOG_TARGET`] naming the
/// server: `debug` at `debug`, `info` and `notice` at `info`, `warning` at `warn`,
/// the rest at `error`. The message's `data` is written as JSON, every credential
/// masked (a server may log what it was sent).
pub(crate) fn server_log(server: &str, message: rmcp::model::LoggingMessageNotificationParam) {
    use rmcp::model::LoggingLevel;
    let logger = crate::redact::credentials(message.logger.as_deref().unwrap_or_default());
    let logger = &*logger;
    let data = crate::redact::credentials(&message.data.to_string()).into_owned();
    macro_rules! log {
        ($level:expr) => {
            tracing::event!(target: SERVER_LOG_TARGET, $level, server, logger, data = %data)
        };
    }
    match message.level {
        LoggingLevel::Debug => log!(tracing::Level::DEBUG),
        LoggingLevel::Info | LoggingLevel::Notice => log!(tracing::Level::INFO),
        LoggingLevel::Warning => log!(tracing::Level::WARN),
        _ => log!(tracing::Level::ERROR),
    }
}

impl Answers {
    /// Hands a message the server logged to `tracing`, and to the host's log handler
    /// if it has one, credentials masked.
    pub(crate) fn log(&self, message: rmcp::model::LoggingMessageNotificationParam) {
        if let Some(logs) = &self.handlers.logs {
            let mut masked = message.clone();
            masked.logger = masked.logger.map(crate::redact::masked_text);
            masked.data = crate::redact::masked_json(masked.data);
            logs.log(&self.server, masked);
        }
        server_log(&self.server, message);
    }
}

/// The pauses of one connection's call timeouts (invariant 1).
#[derive(Debug, Default)]
pub(crate) struct Pauses {
    state: Mutex<PauseState>,
    /// Woken when the last pause ends.
    resumed: Notify,
}

#[derive(Debug, Default)]
struct PauseState {
    /// Pauses under way.
    open: usize,
    /// When the pauses under way began.
    since: Option<Instant>,
    /// The length of the pauses that ended.
    ended: Duration,
}

/// A pause under way; it ends when dropped.
pub(crate) struct Paused<'a>(&'a Pauses);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.open -= 1;
        if state.open == 0 {
            if let Some(since) = state.since.take() {
                state.ended += since.elapsed();
            }
            drop(state);
            self.0.resumed.notify_waiters();
        }
    }
}

impl Pauses {
    /// Begins a pause, which lasts as long as the guard.
    pub(crate) fn begin(&self) -> Paused<'_> {
        let mut state = lock(&self.state);
        state.open += 1;
        if state.since.is_none() {
            state.since = Some(Instant::now());
        }
        Paused(self)
    }

    /// The time paused so far, the pauses under way included.
    pub(crate) fn total(&self) -> Duration {
        let state = lock(&self.state);
        state.ended + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Returns when `deadline`, moved later by the time paused since
    /// [`Pauses::total`] was `mark`, has passed while no pause is under way.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future has no effect.
    pub(crate) async fn expiry(&self, deadline: Instant, mark: Duration) {
        loop {
            let resumed = self.resumed.notified();
            let mut resumed = std::pin::pin!(resumed);
            resumed.as_mut().enable();
            let (open, total) = {
                let state = lock(&self.state);
                let total = state.ended + state.since.map_or(Duration::ZERO, |s| s.elapsed());
                (state.open > 0, total)
            };
            if open {
                resumed.await;
                continue;
            }
            let moved = deadline + total.saturating_sub(mark);
            if Instant::now() >= moved {
                return;
            }
            // A pause that begins during the sleep moves the deadline: look again.
            tokio::time::sleep_until(moved).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_log_reaches_the_host_with_every_credential_masked() {
        struct Kept(Arc<Mutex<Vec<(String, rmcp::model::LoggingMessageNotificationParam)>>>);
        impl crate::host::Logs for Kept {
            fn log(&self, server: &str, message: rmcp::model::LoggingMessageNotificationParam) {
                lock(&self.0).push((server.to_owned(), message));
            }
        }
        let _sent = crate::redact::register("lg-bearer-5c1e-token").unwrap();
        let kept = Arc::default();
        let answers = Answers::new("s", HostHandlers::new().with_logs(Kept(Arc::clone(&kept))));
        let message: rmcp::model::LoggingMessageNotificationParam =
            serde_json::from_value(serde_json::json!({
                "level": "warning",
                "logger": "auth lg-bearer-5c1e-token",
                "data": {"sent": "Bearer lg-bearer-5c1e-token", "n": 1},
            }))
            .unwrap();
        answers.log(message);
        let kept = lock(&kept);
        let (server, message) = &kept[0];
        assert_eq!(server, "s");
        let shown = serde_json::to_string(message).unwrap();
        assert!(!shown.contains("lg-bearer-5c1e-token"), "{shown}");
        assert_eq!(message.data["n"], 1);
        assert_eq!(message.level, rmcp::model::LoggingLevel::Warning);
    }

    #[test]
    fn a_credential_a_servers_question_quotes_is_masked_before_the_host_sees_it() {
        let _sent = crate::redact::register("an-bearer-33d9-token").unwrap();
        let request: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "is an-bearer-33d9-token yours?",
            "requestedSchema": {"type": "object", "properties": {}},
        }))
        .unwrap();
        let masked = serde_json::to_value(masked(request)).unwrap();
        assert_eq!(masked["message"], "is ***** yours?");
    }

    #[test]
    fn a_servers_log_message_is_an_event_of_its_own_target_naming_the_server() {
        use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
        let recorded = crate::test_events::Events::default();
        tracing::subscriber::with_default(recorded.clone(), || {
            for level in [
                LoggingLevel::Debug,
                LoggingLevel::Notice,
                LoggingLevel::Warning,
                LoggingLevel::Critical,
            ] {
                let mut message =
                    LoggingMessageNotificationParam::new(level, serde_json::json!({"n": 1}));
                message.logger = Some("db".into());
                server_log("files", message);
            }
        });
        let fields = r#"server="files" logger="db" data={"n":1}"#;
        assert_eq!(
            recorded.with_targets(),
            [
                format!("mcp_runtime::server_log DEBUG {fields}"),
                format!("mcp_runtime::server_log INFO {fields}"),
                format!("mcp_runtime::server_log WARN {fields}"),
                format!("mcp_runtime::server_log ERROR {fields}"),
            ]
        );
    }

    #[test]
    fn a_report_read_before_its_watch_is_handed_over_and_others_stay_apart() {
        use rmcp::model::NumberOrString;
        let answers = Answers::new("s", HostHandlers::default());
        let token = |n: i64| ProgressToken(NumberOrString::Number(n));
        let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
        let on_progress = OnProgress::new({
            let seen = seen.clone();
            move |progress| lock(&seen).push(progress.progress)
        });
        answers.progress(ProgressNotificationParam::new(token(1), 1.0));
        answers.progress(ProgressNotificationParam::new(token(2), 9.0));
        let watch = answers.watch_progress(token(1), on_progress);
        answers.progress(ProgressNotificationParam::new(token(1), 2.0));
        drop(watch);
        answers.progress(ProgressNotificationParam::new(token(1), 3.0));
        assert_eq!(*lock(&seen), [1.0, 2.0]);
        // Reports nobody watches are kept only up to a bound.
        for n in 0..100 {
            answers.progress(ProgressNotificationParam::new(token(100 + n), 0.0));
        }
        assert_eq!(lock(&answers.progress).early.len(), EARLY_REPORTS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_without_pauses_comes_on_time() {
        let pauses = Pauses::default();
        let start = Instant::now();
        pauses
            .expiry(start + Duration::from_secs(5), pauses.total())
            .await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_moves_the_deadline_by_its_length_and_none_comes_during_it() {
        let pauses = Arc::new(Pauses::default());
        let start = Instant::now();
        let mark = pauses.total();
        let expiry = {
            let pauses = pauses.clone();
            tokio::spawn(async move {
                pauses.expiry(start + Duration::from_secs(5), mark).await;
                start.elapsed()
            })
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        let paused = pauses.begin();
        // Far past the deadline, still paused: no expiry.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!expiry.is_finished());
        drop(paused);
        // 2 s were left when the pause began.
        assert_eq!(expiry.await.unwrap(), Duration::from_secs(65));
    }

    #[tokio::test(start_paused = true)]
    async fn overlapping_pauses_count_once_and_end_with_the_last() {
        let pauses = Arc::new(Pauses::default());
        let start = Instant::now();
        let mark = pauses.total();
        let first = pauses.begin();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let second = pauses.begin();
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(first);
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(second);
        assert_eq!(pauses.total(), Duration::from_secs(30));
        pauses.expiry(start + Duration::from_secs(1), mark).await;
        assert_eq!(start.elapsed(), Duration::from_secs(31));
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_before_the_mark_do_not_count() {
        let pauses = Pauses::default();
        drop(pauses.begin());
        let paused = pauses.begin();
        tokio::time::sleep(Duration::from_secs(7)).await;
        drop(paused);
        let start = Instant::now();
        pauses
            .expiry(start + Duration::from_secs(2), pauses.total())
            .await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }
}
