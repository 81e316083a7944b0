//! The tools (and the one prompt) that ask the client something before they
//! answer: elicitation, sampling, roots.
//!
//! Each is a [`Conversation`]: given the answers to the last round of questions and
//! the state the last round left, it either asks more questions or is done. The
//! conversation is written once and driven in either era:
//!
//! - a 2026-07-28 request is answered round by round ([`answer_round`]): the
//!   questions go back as an `input_required` result whose `requestState` is the
//!   state, sealed (see [`super::state`]),
//!   and the client's retry brings the answers and the state back;
//! - a handshake-era request keeps the call open and asks each question as a
//!   request of the server's own ([`converse`]), as a pre-2026 server does. This is
//!   also what `--handshake-only` does for every client, so that a gateway in front
//!   of it can turn the requests into `input_required` results for 2026-07-28 clients.
//!
//! The answers are checked: an answer of the wrong shape (not an elicitation,
//! sampling or roots result) is a `-32602` error, a missing one is asked again, and
//! answers to questions not asked are ignored, as SEP-2322 asks of servers.

#![allow(
    deprecated,
    reason = "rmcp marks sampling and roots deprecated (SEP-2577); the suite still asks for them"
)]

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ElicitationAction, InputRequest, InputRequests, InputRequiredResult,
        InputResponses, JsonObject, ListRootsResult,
    },
    service::Peer,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::state::Sealer;

/// What a conversation does; several tool names share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `test_sampling`: the client's model answers the `prompt` argument.
    Sampling,
    /// `test_elicitation`: the person answers a one-field form with `message`.
    Elicitation,
    /// `test_elicitation_sep1034_defaults`: a form whose fields have defaults.
    Defaults,
    /// `test_elicitation_sep1330_enums`: a form with every enum shape of SEP-1330.
    Enums,
    /// The person's name (`user_name`), then a greeting.
    Name,
    /// The capital of France, from the client's model (`sample_request`).
    Capital,
    /// The client's roots (`client_roots`), counted.
    Roots,
    /// A confirmation that only counts with the state of the round that asked it.
    Confirm,
    /// A name, a greeting from the model and the roots, in one round.
    Several,
    /// A name, then (next round) a favourite colour.
    TwoRounds,
    /// Whatever the client declared it can answer: elicitation and sampling.
    Declared,
    /// A model's answer, refused (`-32021`) unless the client declared sampling.
    NeedsSampling,
    /// The prompt `test_input_required_result_prompt`: a context to write about.
    Context,
}

/// The tools that ask, in their listed order, with what they do.
const TOOLS: &[(&str, Kind, &str)] = &[
    (
        "test_sampling",
        Kind::Sampling,
        "Asks the client's model to answer `prompt` (sampling/createMessage)",
    ),
    (
        "test_elicitation",
        Kind::Elicitation,
        "Asks the person for a response, showing `message` (elicitation/create)",
    ),
    (
        "test_elicitation_sep1034_defaults",
        Kind::Defaults,
        "Asks the person to review a form whose fields have defaults (SEP-1034)",
    ),
    (
        "test_elicitation_sep1330_enums",
        Kind::Enums,
        "Asks the person to pick from every enum shape of SEP-1330",
    ),
    (
        "test_missing_capability",
        Kind::NeedsSampling,
        "Asks the client's model a question; refused unless the client declared sampling",
    ),
    (
        "test_input_required_result_elicitation",
        Kind::Name,
        "Asks the person's name (input request `user_name`), then greets them",
    ),
    (
        "test_input_required_result_sampling",
        Kind::Capital,
        "Asks the client's model for the capital of France (input request `sample_request`)",
    ),
    (
        "test_input_required_result_list_roots",
        Kind::Roots,
        "Asks the client for its roots (input request `client_roots`) and counts them",
    ),
    (
        "test_input_required_result_request_state",
        Kind::Confirm,
        "Asks for a confirmation, which counts only with the request state that asked it",
    ),
    (
        "test_input_required_result_multiple_inputs",
        Kind::Several,
        "Asks a name, a greeting from the model and the roots, all in one round",
    ),
    (
        "test_input_required_result_multi_round",
        Kind::TwoRounds,
        "Asks a name, then in a second round a favourite colour",
    ),
    (
        "test_input_required_result_tampered_state",
        Kind::Confirm,
        "Asks for a confirmation; a request state that fails its integrity check is refused",
    ),
    (
        "test_input_required_result_capabilities",
        Kind::Declared,
        "Asks only what the client declared it can answer (elicitation, sampling)",
    ),
    (
        "test_streaming_elicitation",
        Kind::Name,
        "Asks the person's name as an input request, never as a request on the stream",
    ),
];

/// The prompt that asks, with its description.
pub(crate) const PROMPT: (&str, &str) = (
    "test_input_required_result_prompt",
    "A prompt that first asks the person for a context (input request `user_context`)",
);

/// The names and descriptions of the tools that ask, in their listed order.
pub(crate) fn tools() -> impl Iterator<Item = (&'static str, &'static str)> {
    TOOLS
        .iter()
        .map(|(name, _, description)| (*name, *description))
}

/// One tool call or prompt request that asks before it answers.
#[derive(Debug)]
pub(crate) struct Conversation {
    /// The tool or prompt name, to which a sealed state is bound.
    name: String,
    kind: Kind,
    arguments: JsonObject,
}

/// A question for the client, as its JSON-RPC method and params.
struct Question {
    method: &'static str,
    params: Value,
}

/// What a conversation does next.
enum Step {
    /// Ask these questions (by key), remembering `state` for the next round.
    Ask(Vec<(&'static str, Question)>, Value),
    /// Answer with this text.
    Done(String),
}

impl Conversation {
    /// The conversation of the tool `name`, if that tool asks.
    pub(crate) fn tool(name: &str, arguments: JsonObject) -> Option<Self> {
        let (name, kind, _) = TOOLS.iter().find(|(tool, ..)| *tool == name)?;
        Some(Self {
            name: (*name).to_owned(),
            kind: *kind,
            arguments,
        })
    }

    /// The conversation of the prompt `name`, if that prompt asks.
    pub(crate) fn prompt(name: &str) -> Option<Self> {
        (name == PROMPT.0).then(|| Self {
            name: PROMPT.0.to_owned(),
            kind: Kind::Context,
            arguments: JsonObject::new(),
        })
    }

    /// Refuses the call, before any question, when the client cannot answer it.
    pub(crate) fn check_capabilities(
        &self,
        capabilities: &ClientCapabilities,
    ) -> Result<(), McpError> {
        if self.kind == Kind::NeedsSampling && capabilities.sampling.is_none() {
            return Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_sampling().build(),
            ));
        }
        Ok(())
    }

    /// The next step, given the answers to the last round and its state (`Null`
    /// before the first round).
    fn step(
        &self,
        answers: &InputResponses,
        state: &Value,
        capabilities: &ClientCapabilities,
    ) -> Result<Step, McpError> {
        let text = |key: &str| self.arguments.get(key).and_then(Value::as_str);
        let ask = |key, question| Ok(Step::Ask(vec![(key, question)], Value::Null));
        Ok(match self.kind {
            Kind::Sampling => match sampled(answers, "reply")? {
                Some(reply) => Step::Done(format!("LLM response: {reply}")),
                None => return ask("reply", sample(text("prompt").unwrap_or("Say hello"), 100)),
            },
            Kind::Elicitation | Kind::Defaults | Kind::Enums => match elicited(answers, "form")? {
                Some(answer) => Step::Done(format!(
                    "User response: action={}, content={}",
                    json!(answer.action),
                    answer.content.unwrap_or_else(|| json!({}))
                )),
                None => return ask("form", self.form(text("message"))),
            },
            Kind::Name => match field(elicited(answers, "user_name")?, "name") {
                Some(name) => Step::Done(format!("Hello, {name}!")),
                None => return ask("user_name", name_question("What is your name?")),
            },
            Kind::Capital => match sampled(answers, "sample_request")? {
                Some(reply) => Step::Done(format!("Sampling result: {reply}")),
                None => {
                    return ask(
                        "sample_request",
                        sample("What is the capital of France?", 100),
                    );
                }
            },
            Kind::Roots => match listed(answers, "client_roots")? {
                Some(roots) => Step::Done(format!("Found {} root(s)", roots.roots.len())),
                None => return ask("client_roots", roots_question()),
            },
            Kind::Confirm => match elicited(answers, "confirm")? {
                Some(answer) if *state == json!({ "asked": "confirm" }) => Step::Done(format!(
                    "state-ok: confirmed with action={}",
                    json!(answer.action)
                )),
                _ => Step::Ask(
                    vec![("confirm", confirm_question())],
                    json!({ "asked": "confirm" }),
                ),
            },
            Kind::Several => self.several(answers)?,
            Kind::TwoRounds => two_rounds(answers, state)?,
            Kind::Declared => declared(answers, capabilities)?,
            Kind::NeedsSampling => match sampled(answers, "reply")? {
                Some(reply) => Step::Done(format!("Success: {reply}")),
                None => return ask("reply", sample("Say something", 50)),
            },
            Kind::Context => match field(elicited(answers, "user_context")?, "context") {
                Some(context) => Step::Done(format!("Prompt with context: {context}")),
                None => {
                    return ask(
                        "user_context",
                        elicitation(
                            "What context should the prompt use?",
                            json!({ "type": "object",
                                "properties": { "context": { "type": "string" } },
                                "required": ["context"] }),
                        ),
                    );
                }
            },
        })
    }

    /// The form of the elicitation tools.
    fn form(&self, message: Option<&str>) -> Question {
        match self.kind {
            Kind::Defaults => elicitation(
                "Please review and update the form fields with defaults",
                json!({ "type": "object", "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": { "type": "string", "description": "User status",
                        "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "description": "Verification status",
                        "default": true }
                }, "required": [] }),
            ),
            Kind::Enums => elicitation(
                "Please select options from the enum fields",
                json!({ "type": "object", "properties": {
                    "untitledSingle": { "type": "string", "description": "Select one option",
                        "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": [
                            { "const": "value1", "title": "First Option" },
                            { "const": "value2", "title": "Second Option" },
                            { "const": "value3", "title": "Third Option" }
                        ] },
                    "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"] },
                    "untitledMulti": { "type": "array", "description": "Select multiple options",
                        "minItems": 1, "maxItems": 3,
                        "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                    "titledMulti": { "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1, "maxItems": 3,
                        "items": { "anyOf": [
                            { "const": "value1", "title": "First Choice" },
                            { "const": "value2", "title": "Second Choice" },
                            { "const": "value3", "title": "Third Choice" }
                        ] } }
                }, "required": [] }),
            ),
            _ => elicitation(
                message.unwrap_or("Please respond"),
                json!({ "type": "object", "properties": {
                    "response": { "type": "string", "description": "User's response" }
                }, "required": ["response"] }),
            ),
        }
    }

    /// [`Kind::Several`]: done once all three are answered, in one round.
    fn several(&self, answers: &InputResponses) -> Result<Step, McpError> {
        let name = field(elicited(answers, "user_name")?, "name");
        let greeting = sampled(answers, "greeting")?;
        let roots = listed(answers, "client_roots")?;
        Ok(match (name, greeting, roots) {
            (Some(name), Some(greeting), Some(roots)) => Step::Done(format!(
                "Name: {name}; Greeting: {greeting}; Roots: {}",
                roots.roots.len()
            )),
            _ => Step::Ask(
                vec![
                    ("user_name", name_question("What is your name?")),
                    ("greeting", sample("Generate a greeting", 50)),
                    ("client_roots", roots_question()),
                ],
                Value::Null,
            ),
        })
    }
}

/// [`Kind::TwoRounds`]: the name in round 1, kept in the state; the colour in round 2.
fn two_rounds(answers: &InputResponses, state: &Value) -> Result<Step, McpError> {
    let first = || {
        Step::Ask(
            vec![("step1", name_question("Step 1: What is your name?"))],
            json!({ "round": 1 }),
        )
    };
    let second = |name: &str| {
        Step::Ask(
            vec![(
                "step2",
                elicitation(
                    "Step 2: What is your favorite color?",
                    json!({ "type": "object",
                        "properties": { "color": { "type": "string" } },
                        "required": ["color"] }),
                ),
            )],
            json!({ "round": 2, "name": name }),
        )
    };
    Ok(match state["round"].as_u64() {
        Some(1) => match field(elicited(answers, "step1")?, "name") {
            Some(name) => second(&name),
            None => first(),
        },
        Some(2) => {
            let name = state["name"].as_str().unwrap_or("friend");
            match field(elicited(answers, "step2")?, "color") {
                Some(color) => {
                    Step::Done(format!("Multi-round complete for {name} who likes {color}"))
                }
                None => second(name),
            }
        }
        _ => first(),
    })
}

/// [`Kind::Declared`]: asks what the client declared; done with the first answers.
fn declared(answers: &InputResponses, capabilities: &ClientCapabilities) -> Result<Step, McpError> {
    let elicitation_answer = elicited(answers, "elicit_input")?;
    let sampling_answer = sampled(answers, "sample_input")?;
    let mut received = Vec::new();
    if elicitation_answer.is_some() {
        received.push("elicit_input");
    }
    if sampling_answer.is_some() {
        received.push("sample_input");
    }
    if !received.is_empty() {
        return Ok(Step::Done(format!(
            "capabilities-ok: received {}",
            received.join(",")
        )));
    }
    let mut questions = Vec::new();
    if capabilities.elicitation.is_some() {
        questions.push((
            "elicit_input",
            elicitation(
                "Elicitation input",
                json!({ "type": "object",
                    "properties": { "value": { "type": "string" } },
                    "required": ["value"] }),
            ),
        ));
    }
    if capabilities.sampling.is_some() {
        questions.push(("sample_input", sample("Sample request", 50)));
    }
    Ok(if questions.is_empty() {
        Step::Done("No supported capabilities declared".to_owned())
    } else {
        Step::Ask(questions, Value::Null)
    })
}

fn elicitation(message: &str, schema: Value) -> Question {
    Question {
        method: "elicitation/create",
        params: json!({ "mode": "form", "message": message, "requestedSchema": schema }),
    }
}

fn name_question(message: &str) -> Question {
    elicitation(
        message,
        json!({ "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"] }),
    )
}

fn confirm_question() -> Question {
    elicitation(
        "Please confirm",
        json!({ "type": "object",
            "properties": { "ok": { "type": "boolean" } },
            "required": ["ok"] }),
    )
}

fn sample(prompt: &str, max_tokens: u32) -> Question {
    Question {
        method: "sampling/createMessage",
        params: json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": max_tokens
        }),
    }
}

fn roots_question() -> Question {
    Question {
        method: "roots/list",
        params: json!({}),
    }
}

/// The answer under `key` as a `T`: `None` when there is none, `-32602` when it is
/// not a `T`.
fn answer<T: DeserializeOwned>(
    answers: &InputResponses,
    key: &str,
    what: &str,
) -> Result<Option<T>, McpError> {
    answers
        .get(key)
        .map(|answer| {
            serde_json::from_value(answer.clone()).map_err(|error| {
                McpError::invalid_params(
                    format!("inputResponses.{key} is not {what}: {error}"),
                    Some(json!({ "key": key })),
                )
            })
        })
        .transpose()
}

fn elicited(answers: &InputResponses, key: &str) -> Result<Option<ElicitResult>, McpError> {
    answer(answers, key, "an elicitation result")
}

fn listed(answers: &InputResponses, key: &str) -> Result<Option<ListRootsResult>, McpError> {
    answer(answers, key, "a roots/list result")
}

/// The text of the sampling answer under `key` (`""` when it is not text).
fn sampled(answers: &InputResponses, key: &str) -> Result<Option<String>, McpError> {
    let result: Option<CreateMessageResult> = answer(answers, key, "a sampling result")?;
    Ok(result.map(|result| {
        serde_json::to_value(result.message.content)
            .ok()
            .and_then(|content| content["text"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }))
}

/// The string `field` of an accepted form, if the person accepted.
fn field(answer: Option<ElicitResult>, field: &str) -> Option<String> {
    let answer = answer.filter(|answer| answer.action == ElicitationAction::Accept)?;
    answer.content?.get(field)?.as_str().map(str::to_owned)
}

/// How a conversation ended: its text, or the `input_required` result that asks.
#[derive(Debug)]
pub(crate) enum Round {
    /// The conversation is done, with this text.
    Done(String),
    /// The client must answer these and call again.
    InputRequired(InputRequiredResult),
}

/// Under 2026-07-28: one round, from the call's `inputResponses` and `requestState`.
pub(crate) fn answer_round(
    conversation: &Conversation,
    answers: Option<&InputResponses>,
    request_state: Option<&str>,
    capabilities: &ClientCapabilities,
    sealer: &Sealer,
) -> Result<Round, McpError> {
    let state = match request_state {
        Some(sealed) => sealer.open(&conversation.name, sealed)?,
        None => Value::Null,
    };
    let no_answers = InputResponses::new();
    match conversation.step(answers.unwrap_or(&no_answers), &state, capabilities)? {
        Step::Done(text) => Ok(Round::Done(text)),
        Step::Ask(questions, state) => {
            let sealed = sealer.seal(&conversation.name, &state);
            let requests = questions
                .into_iter()
                .map(|(key, question)| Ok((key.to_owned(), input_request(question)?)))
                .collect::<Result<InputRequests, McpError>>()?;
            Ok(Round::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(sealed),
            )))
        }
    }
}

fn input_request(question: Question) -> Result<InputRequest, McpError> {
    serde_json::from_value(json!({ "method": question.method, "params": question.params })).map_err(
        |error| McpError::internal_error(format!("a question rmcp cannot send: {error}"), None),
    )
}

/// Under the handshake revisions: every round asked with requests of the server's
/// own, while the call waits, until the conversation is done.
pub(crate) async fn converse(
    conversation: &Conversation,
    peer: &Peer<RoleServer>,
    capabilities: &ClientCapabilities,
) -> Result<String, McpError> {
    let mut answers = InputResponses::new();
    let mut state = Value::Null;
    loop {
        match conversation.step(&answers, &state, capabilities)? {
            Step::Done(text) => return Ok(text),
            Step::Ask(questions, next) => {
                answers.clear();
                for (key, question) in questions {
                    answers.insert(key.to_owned(), ask(peer, question).await?);
                }
                state = next;
            }
        }
    }
}

/// Asks one question as a request of the server's own; the client's answer as JSON.
async fn ask(peer: &Peer<RoleServer>, question: Question) -> Result<Value, McpError> {
    let failed = |error: rmcp::ServiceError| {
        McpError::internal_error(
            format!("the client did not answer `{}`: {error}", question.method),
            None,
        )
    };
    let invalid = |error: serde_json::Error| McpError::internal_error(error.to_string(), None);
    let answer = match question.method {
        "elicitation/create" => {
            let params: ElicitRequestParams =
                serde_json::from_value(question.params.clone()).map_err(invalid)?;
            serde_json::to_value(peer.create_elicitation(params).await.map_err(failed)?)
        }
        "sampling/createMessage" => {
            let params: CreateMessageRequestParams =
                serde_json::from_value(question.params.clone()).map_err(invalid)?;
            serde_json::to_value(peer.create_message(params).await.map_err(failed)?)
        }
        _ => serde_json::to_value(peer.list_roots().await.map_err(failed)?),
    };
    answer.map_err(invalid)
}
