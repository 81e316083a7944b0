//! Multi round-trip requests (2026-07-28): a `tools/call` answered with
//! `resultType: "input_required"` is sent again with the client's answers.
//!
//! rmcp drives these rounds only in `RunningService::call_tool`, which hides the
//! request ids the runtime needs to cancel a call it gives up; so the runtime sends
//! each round itself and this module prepares the next one.
//!
//! Invariants:
//! 1. `requestState` is echoed exactly as the server sent it (the same string), and
//!    only on the retry of the call that received it; a round without one is retried
//!    without one.
//! 2. Each input request gets the answer a handshake-era server would get to the same
//!    request sent on its own: the host's handler's ([`super::answers`]). Sampling
//!    without a handler fails the call naming what the server asked for; a handler's
//!    refusal of a sampling request fails it with the handler's reason.
//! 3. A call takes at most [`MAX_ROUNDS`] rounds, all within its one deadline. (An
//!    answer that asks for nothing and carries no state is not a round: rmcp's type
//!    does not read it as one, and the call fails saying so.)

use rmcp::model::{
    CallToolRequestParams, CreateTaskResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses,
};

use super::{
    answers::Answers,
    calling::{CallFailure, Caller, Deadline, Paused},
    error::AnswerError,
    tasks,
    tool_answer::{self, Answer},
};
use crate::{progress::OnProgress, tool_result::ToolResult, transport::hand_back::HandBack};

/// How many rounds one call may take (rmcp's own cap, shared by the other SDKs).
pub(super) const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// Calls the tool of `params` through `caller`, round after round while the server
/// asks for input, until `deadline`; the rounds' progress goes to `progress`. A
/// server that answers with a task (the tasks extension) is followed to its end
/// ([`tasks`]).
///
/// The first round is the call's short path: its request, its answer, the result.
/// The rounds after it, and a task, are the rare ones, each in a future of its own
/// (so a call's future stays small), and each round sends the parameters the
/// transport handed back from the round before ([`HandBack`]): the arguments are
/// never copied.
///
/// # Cancel safety
///
/// Dropping the future owes the cancellation of the round in flight (and of the task,
/// if one was created).
pub(super) async fn call(
    caller: &Caller<'_>,
    params: CallToolRequestParams,
    deadline: Deadline,
    progress: Option<&OnProgress>,
) -> Result<ToolResult, CallFailure> {
    let back = HandBack::default();
    let answer = caller
        .request(back.request(params), deadline, progress)
        .await?;
    match read(answer)? {
        Read::Result(result) => Ok(result),
        Read::Task(created) => Box::pin(tasks::follow(caller, &created, deadline)).await,
        Read::InputRequired(asked) => {
            Box::pin(go_on(caller, back, asked, deadline, progress)).await
        }
    }
}

/// A call's answer, read: its result, a task the server created for it, or a
/// request for input.
enum Read {
    Result(ToolResult),
    Task(Box<CreateTaskResult>),
    InputRequired(InputRequiredResult),
}

fn read(answer: rmcp::model::ServerResult) -> Result<Read, CallFailure> {
    match tool_answer::read(answer)? {
        Answer::Complete(result) => Ok(Read::Result(result)),
        Answer::Task(created) => Ok(Read::Task(Box::new(created))),
        Answer::InputRequired(asked) => Ok(Read::InputRequired(asked)),
        // A task where none was asked for (a 2025-11-25 tool called plainly).
        Answer::HandshakeTask(_) => Err(CallFailure::Invalid(
            crate::tool_result::InvalidToolResult::NotAToolResult,
        )),
    }
}

/// Answers `asked`, the server's request for input after the first round, and sends
/// the call again with the answers (the parameters `back` holds), round after round
/// (invariant 3).
///
/// # Cancel safety
///
/// As [`call`].
async fn go_on(
    caller: &Caller<'_>,
    back: HandBack,
    mut asked: InputRequiredResult,
    deadline: Deadline,
    progress: Option<&OnProgress>,
) -> Result<ToolResult, CallFailure> {
    let mut rounds = Rounds::new();
    loop {
        let retry = rounds.next(caller, asked, deadline).await?;
        let mut params = back
            .take()
            .ok_or(CallFailure::Refused(AnswerError::NotHandedBack))?;
        params.input_responses = retry.input_responses;
        params.request_state = retry.request_state;
        let answer = caller
            .request(back.request(params), deadline, progress)
            .await?;
        asked = match read(answer)? {
            Read::InputRequired(asked) => asked,
            Read::Result(result) => return Ok(result),
            Read::Task(created) => return tasks::follow(caller, &created, deadline).await,
        };
    }
}

/// The rounds of one request after its first (invariant 3): how many were sent, and
/// how many in a row asked for nothing but to be asked again. A tool call's and a
/// `prompts/get`'s or `resources/read`'s take the same steps.
pub(super) struct Rounds {
    sent: usize,
    state_only: usize,
}

impl Rounds {
    /// The rounds of a request whose first round asked for input.
    pub(super) fn new() -> Self {
        Self {
            sent: 1,
            state_only: 0,
        }
    }

    /// The next round's retry of the request `asked` answers, the host's handlers
    /// asked, after the pause a state-only round waits; why the request cannot go
    /// on otherwise. A request at [`MAX_ROUNDS`] asks nobody anything more.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future withdraws the questions.
    pub(super) async fn next(
        &mut self,
        caller: &Caller<'_>,
        asked: InputRequiredResult,
        deadline: Deadline,
    ) -> Result<Retry, CallFailure> {
        if self.sent == MAX_ROUNDS {
            return Err(CallFailure::Refused(AnswerError::TooManyRounds {
                rounds: MAX_ROUNDS,
            }));
        }
        let retry = retry(asked, caller.answers)
            .await
            .map_err(CallFailure::Refused)?;
        if retry.state_only {
            let pause = state_only_pause(self.state_only);
            self.state_only += 1;
            if caller.pause(pause, deadline).await == Paused::TimedOut {
                return Err(CallFailure::TimedOut);
            }
        } else {
            self.state_only = 0;
        }
        self.sent += 1;
        Ok(retry)
    }
}

/// What the next round of a call sends.
#[derive(Debug, PartialEq)]
pub(super) struct Retry {
    pub(super) input_responses: Option<InputResponses>,
    pub(super) request_state: Option<String>,
    /// Whether the server asked for nothing but to be asked again: the retry waits a
    /// little first, as rmcp's own driver does.
    pub(super) state_only: bool,
}

/// The retry that answers `result` with `answers`, or why the call cannot go on.
///
/// # Cancel safety
///
/// Dropping the future drops the handlers' futures: the questions are withdrawn.
pub(super) async fn retry(
    result: InputRequiredResult,
    answers: &Answers,
) -> Result<Retry, AnswerError> {
    let responses = respond(result.input_requests.unwrap_or_default(), answers).await?;
    Ok(Retry {
        state_only: responses.is_empty(),
        input_responses: (!responses.is_empty()).then_some(responses),
        request_state: result.request_state,
    })
}

/// The answers to the server's input `requests`, each the host's handler's (invariant
/// 2), or why the call cannot go on. A task's questions are answered the same way.
/// They are asked one after another, or all at once when the handlers say so
/// ([`HostHandlers::with_questions_together`](crate::host::HostHandlers::with_questions_together));
/// each handler call can tell which it answers ([`crate::host::asked`]).
///
/// # Cancel safety
///
/// Dropping the future drops the handlers' futures: the questions are withdrawn.
pub(super) async fn respond(
    requests: InputRequests,
    answers: &Answers,
) -> Result<InputResponses, AnswerError> {
    static ROUNDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let round = ROUNDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // The questions a handler is asked: those the handlers do not offer are answered
    // here (declined, no roots) or end the round.
    let of = requests
        .values()
        .filter(|request| answers.asks(request))
        .count();
    let answered = requests.into_iter().map(|(key, request)| {
        let asked = crate::host::Asked {
            key: key.clone(),
            round,
            of,
        };
        crate::host::answering(asked, answer(key, request, answers))
    });
    if answers.questions_together() {
        // The first failure ends the round: the other questions are withdrawn.
        let answered = futures::future::try_join_all(answered).await?;
        return Ok(answered.into_iter().collect());
    }
    // One after another, the first failure ending the round: nothing more is asked.
    let mut responses = InputResponses::new();
    for answer in answered {
        let (key, response) = answer.await?;
        responses.insert(key, response);
    }
    Ok(responses)
}

/// The host's answer to the server's input request `key`.
async fn answer(
    key: String,
    request: InputRequest,
    answers: &Answers,
) -> Result<(String, serde_json::Value), AnswerError> {
    let response = match request {
        InputRequest::Elicitation(request) => {
            serde_json::to_value(answers.elicit(request.params).await)
        }
        InputRequest::ListRoots(_) => Ok(answers.roots().await),
        InputRequest::CreateMessage(_) if !answers.samples() => {
            return Err(AnswerError::SamplingNotOffered);
        }
        InputRequest::CreateMessage(request) => match answers.sample(request.params).await {
            Ok(result) => serde_json::to_value(result),
            Err(error) => {
                return Err(AnswerError::SamplingRefused {
                    message: error.message.into_owned(),
                });
            }
        },
        _ => {
            return Err(AnswerError::UnknownInputRequest { key });
        }
    };
    Ok((key, response.expect("a result serializes")))
}

/// How long the retry after the `n`-th consecutive state-only round waits: 50 ms,
/// doubling, at most 250 ms (rmcp's own schedule).
pub(super) fn state_only_pause(n: usize) -> std::time::Duration {
    std::time::Duration::from_millis((50u64 << n.min(3)).min(250))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::host::HostHandlers;

    /// The retry for `result` with no host handlers.
    async fn retry(result: InputRequiredResult) -> Result<Retry, String> {
        super::retry(result, &Answers::new("s", HostHandlers::default()))
            .await
            .map_err(|error| error.to_string())
    }

    /// `value` read as the runtime reads an answer: as rmcp's untagged result.
    fn input_required(value: serde_json::Value) -> InputRequiredResult {
        match serde_json::from_str(&value.to_string()) {
            Ok(rmcp::model::ServerResult::InputRequiredResult(result)) => result,
            other => panic!("not an input_required result: {other:?}"),
        }
    }

    #[tokio::test]
    async fn elicitation_is_declined_roots_are_empty_and_the_state_is_echoed_exactly() {
        let state = r#"{"nonce":"é \"x\"","n":1.000}"#;
        let retry = retry(input_required(json!({
            "resultType": "input_required",
            "inputRequests": {
                "confirm": {"method": "elicitation/create", "params": {
                    "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}},
                "where": {"method": "roots/list"}
            },
            "requestState": state
        })))
        .await
        .unwrap();
        assert_eq!(retry.request_state.as_deref(), Some(state));
        let responses = retry.input_responses.unwrap();
        assert_eq!(responses["confirm"], json!({"action": "decline"}));
        assert_eq!(responses["where"], json!({"roots": []}));
        assert!(!retry.state_only);
    }

    #[tokio::test]
    async fn a_round_without_state_is_retried_without_one() {
        let retry = retry(input_required(json!({
            "resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}}
        })))
        .await
        .unwrap();
        assert_eq!(retry.request_state, None);
    }

    #[tokio::test]
    async fn sampling_fails_the_call() {
        let error = retry(input_required(json!({
            "resultType": "input_required",
            "inputRequests": {"ask": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 5}}}
        })))
        .await
        .unwrap_err();
        assert!(error.contains("`sampling/createMessage`"), "{error}");
    }

    #[tokio::test]
    async fn a_state_only_round_is_retried_after_a_short_growing_pause() {
        let retry = retry(input_required(json!({
            "resultType": "input_required", "requestState": "s"
        })))
        .await
        .unwrap();
        assert!(retry.state_only);
        assert_eq!(retry.input_responses, None);
        let pauses: Vec<u64> = (0..5)
            .map(|n| state_only_pause(n).as_millis() as u64)
            .collect();
        assert_eq!(pauses, [50, 100, 200, 250, 250]);
    }
}
