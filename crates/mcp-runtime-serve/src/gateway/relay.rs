//! A fleet's retries of kept calls, resumed on the process that keeps them
//! (invariant 7 of [`crate::bridge`]).
//!
//! A 2026-07-28 client's requests go round-robin across the replicas, but a call
//! that asked it a question is kept by one process: the one whose upstream
//! connection waits for the answer. A retry with that call's `requestState` that
//! reaches another replica is sent to the keeping process as a letter over the
//! fleet's Redis ([`Fleet::ask`]); that process resumes the call as if the retry had
//! reached it, and its answer (the call's result, its next questions under a new
//! state, or an error) goes back as the retry's answer.
//!
//! Invariants:
//! 1. The replica the retry reaches opens its state first: only a state sealed for
//!    this principal, method and name is sent on, and the keeping process checks it
//!    again. A letter carries the principal as the sending replica authenticated it;
//!    letters are encrypted under a key derived from the fleet key, so only a
//!    replica of the fleet can write or read one.
//! 2. A keeping process that is gone fails the retry within a fleet lease, saying
//!    so; so does one that dies while it resumes the call (the letter's sender hears
//!    it stop). Either way the client is told to call again without the
//!    state.
//! 3. A call resumed for another replica sends its progress reports and log messages
//!    (those the retry asked for) back to that replica as notes of the letter, in
//!    order and before its answer; that replica passes them on to its client as if
//!    the call ran there. A note larger than a letter may be ([`MAX_ANSWER`]) is
//!    dropped, and logged without its text: an unbounded log message would have
//!    Redis drop the other replica's subscription. A retry whose client goes away
//!    stops waiting, and the keeping process cancels the resumed call, as it would
//!    its own client's.

use std::{sync::Arc, time::Duration};

use mcp_runtime::{
    Progress,
    fleet::{AskError, Fleet, Letter},
};
use rmcp::{
    ErrorData,
    model::{
        CallToolResponse, CallToolResult, CreateTaskResult, GetPromptResponse, GetPromptResult,
        InputRequiredResult, InputResponses, ReadResourceResponse, ReadResourceResult,
    },
};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::{Answer, Reporter, Resumed, Round, Rounds, Sink, Target, drive};
use crate::{
    bridge::{Elsewhere, LogMessage, Logged},
    forward::Level,
};

/// The mailbox of every replica's relay.
const MAILBOX: &str = "rounds";

/// The largest retry or answer sent between replicas, in bytes: well under what Redis
/// lets pile up for one subscriber before it drops the subscriber's connection
/// (`client-output-buffer-limit pubsub`, 8 MB held for a minute by default).
const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// A retry sent on to the process that keeps its call.
#[derive(Serialize, Deserialize)]
struct Resume {
    principal: String,
    method: String,
    name: String,
    state: String,
    responses: InputResponses,
    /// Whether the retry asked for progress reports.
    progress: bool,
    /// The least level of the log messages the retry asked for.
    level: Option<Level>,
}

/// What a resumed call reports before its answer (invariant 3).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(super) enum Note {
    Progress(Progress),
    /// A log message of `server` (a struct: a tagged note cannot hold a tuple).
    Log {
        server: String,
        message: LogMessage,
    },
}

impl Note {
    pub(super) fn log((server, message): Logged) -> Self {
        Self::Log { server, message }
    }

    /// Passes the note on to `reporter`'s client.
    async fn pass(self, reporter: &Reporter<'_>) {
        match self {
            Self::Progress(report) => reporter.progress(report).await,
            Self::Log { server, message } => reporter.log((server, message)).await,
        }
    }
}

/// Sends `note` back through `letter` (invariant 3); one Redis does not take is lost.
pub(super) async fn note(letter: &Letter, note: Note) {
    if let Some(body) = written(&note) {
        let _ = letter.note(&body).await;
    }
}

/// `note` as a letter's note carries it; none if it is too large for one
/// (invariant 3).
fn written(note: &Note) -> Option<Vec<u8>> {
    let body = serde_json::to_vec(note).expect("a note serializes");
    if body.len() <= MAX_ANSWER {
        return Some(body);
    }
    let (what, server) = match note {
        Note::Progress(report) => ("a progress report", &report.server),
        Note::Log { server, .. } => ("a log message", server),
    };
    tracing::warn!(
        server = %server,
        bytes = body.len(),
        "{what} of a call resumed for another replica is larger than the {MAX_ANSWER} bytes a fleet letter carries: it is not passed on"
    );
    None
}

/// `principal`'s retry of its request `target` with `state`; its answers are those
/// [`Elsewhere`] holds.
pub(super) struct Retry<'a> {
    pub(super) principal: &'a str,
    pub(super) target: Target<'a>,
    pub(super) state: &'a str,
}

/// A resumed call's answer, as it goes back.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "camelCase")]
enum Outcome {
    Tool(CallToolResult),
    Task(CreateTaskResult),
    Prompt(GetPromptResult),
    Resource(ReadResourceResult),
    Asks(InputRequiredResult),
    Failed(ErrorData),
}

impl From<Result<Round, ErrorData>> for Outcome {
    fn from(round: Result<Round, ErrorData>) -> Self {
        match round {
            Ok(Round::Ended(Answer::Tool(CallToolResponse::Complete(result)))) => {
                Self::Tool(result)
            }
            Ok(Round::Ended(Answer::Tool(CallToolResponse::Task(task)))) => Self::Task(task),
            Ok(Round::Ended(Answer::Prompt(GetPromptResponse::Complete(result)))) => {
                Self::Prompt(result)
            }
            Ok(Round::Ended(Answer::Resource(ReadResourceResponse::Complete(result)))) => {
                Self::Resource(result)
            }
            Ok(Round::Ended(
                Answer::Tool(CallToolResponse::InputRequired(asks))
                | Answer::Prompt(GetPromptResponse::InputRequired(asks))
                | Answer::Resource(ReadResourceResponse::InputRequired(asks)),
            ))
            | Ok(Round::Asks(asks)) => Self::Asks(asks),
            Ok(Round::Ended(answer)) => Self::Failed(ErrorData::internal_error(
                format!(
                    "a resumed request ended with an answer that cannot be sent on: {answer:?}"
                ),
                None,
            )),
            Err(error) => Self::Failed(error),
        }
    }
}

impl From<Outcome> for Result<Round, ErrorData> {
    fn from(resumed: Outcome) -> Self {
        match resumed {
            Outcome::Tool(result) => Ok(Round::Ended(Answer::Tool(result.into()))),
            Outcome::Task(task) => Ok(Round::Ended(Answer::Tool(task.into()))),
            Outcome::Prompt(result) => Ok(Round::Ended(Answer::Prompt(result.into()))),
            Outcome::Resource(result) => Ok(Round::Ended(Answer::Resource(result.into()))),
            Outcome::Asks(asks) => Ok(Round::Asks(asks)),
            Outcome::Failed(error) => Err(error),
        }
    }
}

/// Resumes `retry` on the process that keeps its call, `elsewhere`, and gives its
/// answer (invariant 2), passing its notes on to `reporter`'s client meanwhile
/// (invariant 3); stops waiting once `reporter`'s request is cancelled, when the
/// client has gone.
pub(super) async fn forward(
    elsewhere: Elsewhere,
    retry: Retry<'_>,
    reporter: &Reporter<'_>,
) -> Result<Round, ErrorData> {
    let Elsewhere {
        fleet,
        replica,
        address,
        responses,
    } = elsewhere;
    let resume = Resume {
        principal: retry.principal.to_owned(),
        method: retry.target.method.to_owned(),
        name: retry.target.name.to_owned(),
        state: retry.state.to_owned(),
        responses,
        progress: matches!(reporter.sink, Sink::Client(_, Some(_))),
        level: reporter.level,
    };
    let letter = serde_json::to_vec(&resume).expect("a retry serializes");
    if letter.len() > MAX_ANSWER {
        return Err(ErrorData::invalid_params(
            format!(
                "this retry's answers, {} bytes, are more than the {MAX_ANSWER} bytes the gateway's fleet \
                 passes between its replicas to the one keeping the request; call the tool again without the state",
                letter.len()
            ),
            None,
        ));
    }
    let started = std::time::Instant::now();
    let (notes, mut noted) = mpsc::unbounded_channel();
    // No bound of its own: the keeper bounds the call by its server's timeouts, as
    // it would its own client's, and says it is answering while it runs; a keeper
    // that dies is heard of within a lease.
    let asked = fleet.ask_noting(&address, MAILBOX, &letter, Duration::MAX, &notes);
    tokio::pin!(asked);
    let answer = loop {
        tokio::select! {
            // The notes sent before the answer go out before it.
            biased;
            Some(note) = noted.recv() => pass(note, reporter).await,
            answer = &mut asked => break answer,
            () = reporter.cancelled.cancelled() => {
                return Err(super::cancelled(&resume.name, started));
            }
        }
    };
    while let Ok(note) = noted.try_recv() {
        pass(note, reporter).await;
    }
    let again = "call the tool again without the state";
    let answer = answer.map_err(|error| match error {
        AskError::Gone => ErrorData::invalid_params(
            format!(
                "replica `{replica}` of the gateway's fleet kept the request of this requestState and is gone \
                 (it stopped or restarted, and the request ended with it); {again}"
            ),
            None,
        ),
        AskError::Silent => ErrorData::internal_error(
            format!(
                "replica `{replica}` of the gateway's fleet, which keeps the request of this requestState, \
                 stopped answering while it resumed it (it may have died); {again}"
            ),
            None,
        ),
        AskError::Busy => ErrorData::internal_error(
            format!(
                "replica `{replica}` of the gateway's fleet, which keeps the request of this requestState, \
                 has too many requests from other replicas waiting; try again"
            ),
            None,
        ),
        _ => ErrorData::internal_error(
            format!(
                "replica `{replica}` of the gateway's fleet keeps the request of this requestState, \
                 and the fleet's Redis, through which it is reached, does not answer; try again, or {again}"
            ),
            None,
        ),
    })?;
    let resumed: Outcome = serde_json::from_slice(&answer).map_err(|error| {
        ErrorData::internal_error(
            format!("replica `{replica}`'s answer to a resumed request cannot be read: {error}"),
            None,
        )
    })?;
    resumed.into()
}

/// Resumes the calls of `rounds` whose retries reached other replicas, until
/// dropped.
pub(super) fn serve(fleet: &Fleet, rounds: Arc<Rounds>) -> AbortOnDropHandle<()> {
    let mut letters = fleet.mailbox(MAILBOX);
    AbortOnDropHandle::new(tokio::spawn(async move {
        while let Some(letter) = letters.recv().await {
            tokio::spawn(answer(rounds.clone(), letter));
        }
    }))
}

/// Passes a note the keeping replica sent on to `reporter`'s client; one that cannot
/// be read is dropped.
async fn pass(note: Vec<u8>, reporter: &Reporter<'_>) {
    if let Ok(note) = serde_json::from_slice::<Note>(&note) {
        note.pass(reporter).await;
    }
}

/// Resumes the call `letter` names, and answers it with the call's answer.
async fn answer(rounds: Arc<Rounds>, letter: Letter) {
    let round = match serde_json::from_slice::<Resume>(letter.body()) {
        Ok(resume) => resumed(&rounds, resume, &letter).await,
        Err(error) => Err(ErrorData::internal_error(
            format!("a resumed request from another replica cannot be read: {error}"),
            None,
        )),
    };
    let mut answer =
        serde_json::to_vec(&Outcome::from(round)).expect("a resumed request's answer serializes");
    if answer.len() > MAX_ANSWER {
        let too_large = ErrorData::internal_error(
            format!(
                "the answer of the request resumed for this retry, {} bytes, is larger than the {MAX_ANSWER} \
                 bytes the gateway's fleet passes between its replicas; call the tool again without the state",
                answer.len()
            ),
            None,
        );
        answer = serde_json::to_vec(&Outcome::Failed(too_large)).expect("an error serializes");
    }
    // A lost answer is heard by the asker as silence (invariant 2).
    let _ = letter.reply(&answer).await;
}

/// `resume`'s call, resumed here, its reports sent back through `letter`
/// (invariant 3).
async fn resumed(
    rounds: &Arc<Rounds>,
    resume: Resume,
    letter: &Letter,
) -> Result<Round, ErrorData> {
    let target = Target {
        method: &resume.method,
        name: &resume.name,
    };
    match rounds.resume(&resume.state, &resume.principal, target, resume.responses)? {
        Resumed::Here(call) => {
            let reporter = Reporter::to(letter, resume.progress, resume.level);
            drive(rounds, call, &resume.principal, target, &reporter).await
        }
        // Sent here because it names this process: never another.
        Resumed::Elsewhere(_) => Err(ErrorData::internal_error(
            "a request resumed for another replica names a third",
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_note_goes_between_replicas_and_comes_back_as_sent() {
        let mut report = Progress::new("up", 1.0);
        report.total = Some(2.0);
        report.message = Some("half".to_owned());
        let message: LogMessage = serde_json::from_value(
            serde_json::json!({"level": "warning", "logger": "db", "data": "slow"}),
        )
        .unwrap();
        for note in [
            Note::Progress(report),
            Note::log(("up".to_owned(), message)),
        ] {
            let sent = serde_json::to_value(&note).expect("a note serializes");
            let back: Note = serde_json::from_value(sent.clone()).unwrap();
            assert_eq!(serde_json::to_value(&back).unwrap(), sent);
        }
    }

    #[test]
    fn a_note_larger_than_a_letter_is_not_sent() {
        let log = |data: String| {
            let message: LogMessage = serde_json::from_value(
                serde_json::json!({"level": "warning", "logger": "db", "data": data}),
            )
            .unwrap();
            Note::log(("up".to_owned(), message))
        };
        assert!(written(&log("slow".to_owned())).is_some());
        assert!(written(&log("x".repeat(MAX_ANSWER))).is_none());
    }
}
