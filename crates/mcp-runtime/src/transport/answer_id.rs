//! Which request a server's answer answers: its JSON-RPC id, read as rmcp reads it.
//!
//! JSON-RPC 2.0 gives an answer the id of its request, and an id is a string or a
//! number: to the letter, an answer with id `"7"` does not answer request `7`. rmcp's
//! client takes it as the answer nonetheless (a numeric id may come back as a string
//! of its digits: its `matches_response_id` and `remove_pending_request`, and its
//! Streamable HTTP transport's pending streams). Every part of the runtime that looks
//! at an answer before rmcp does (a transport's requests in flight, the answers
//! handed over raw, the watch of an HTTP response stream, the handshake's gate) must
//! read it the same way: one that held to the letter would miss an answer rmcp then
//! hands to the request (the request stays in flight for the transport, its answer is
//! not handed over raw, its stream is recorded as lost). The other way round, a
//! string id answered by a number, is no answer for rmcp either.
//!
//! [`Envelope`] reads whom a message answers from its text without building it.

use std::collections::HashSet;

use rmcp::model::RequestId;
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;

/// Whether `answered`, the id of an answer, answers request `sent`.
pub(crate) fn answers(sent: &RequestId, answered: &RequestId) -> bool {
    match (sent, answered) {
        (RequestId::Number(number), RequestId::String(digits)) => {
            digits.parse::<i64>() == Ok(*number)
        }
        _ => sent == answered,
    }
}

/// Removes from `sent` the request `answered` answers ([`answers`]); whether there
/// was one.
pub(crate) fn take_answered(sent: &mut HashSet<RequestId>, answered: &RequestId) -> bool {
    if sent.remove(answered) {
        return true;
    }
    match answered {
        RequestId::String(digits) => digits
            .parse::<i64>()
            .is_ok_and(|number| sent.remove(&RequestId::Number(number))),
        RequestId::Number(_) => false,
    }
}

/// The envelope of a JSON-RPC message, read from its text: whom it answers, and its
/// result unread.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(default)]
    id: Option<RequestId>,
    /// Present on the server's own requests, whose ids are the server's.
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

impl<'a> Envelope<'a> {
    /// The envelope of `text`, when it is a JSON object (any other JSON value, or
    /// text that is not JSON, answers nothing).
    pub(crate) fn read(text: &'a [u8]) -> Option<Self> {
        // A derived `Deserialize` also reads a struct from an array: `[7]` would
        // answer request 7.
        let object = text.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{');
        object.then(|| serde_json::from_slice(text).ok()).flatten()
    }

    /// The id of the request the message answers: its `id`, unless it is a request
    /// of the server's own.
    pub(crate) fn answered(&self) -> Option<&RequestId> {
        match self.method {
            Some(_) => None,
            None => self.id.as_ref(),
        }
    }

    /// The id of the request the message answers with a result, and the result's
    /// text.
    pub(crate) fn result(self) -> Option<(RequestId, &'a RawValue)> {
        match self.method {
            Some(_) => None,
            None => Some((self.id?, self.result?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_id_is_answered_by_its_digits_and_nothing_else_crosses_kinds() {
        let number = RequestId::Number(7);
        let digits = RequestId::String("7".into());
        assert!(answers(&number, &number));
        assert!(answers(&number, &digits), "as rmcp reads it");
        assert!(!answers(&digits, &number), "a string id is not a number's");
        assert!(!answers(&number, &RequestId::String("07x".into())));
        assert!(!answers(&number, &RequestId::Number(8)));

        let mut sent: HashSet<RequestId> = [number.clone(), RequestId::String("a".into())].into();
        assert!(!take_answered(&mut sent, &RequestId::String("8".into())));
        assert!(take_answered(&mut sent, &digits));
        assert!(!take_answered(&mut sent, &number), "taken once");
        assert!(!take_answered(&mut sent, &RequestId::Number(0)));
        assert!(take_answered(&mut sent, &RequestId::String("a".into())));
        assert!(sent.is_empty());
    }

    #[test]
    fn an_envelope_answers_only_when_it_is_no_request() {
        let answer = Envelope::read(br#"{"jsonrpc":"2.0","id":"3","result":{"n":1.50}}"#).unwrap();
        assert_eq!(answer.answered(), Some(&RequestId::String("3".into())));
        let (id, result) = answer.result().unwrap();
        assert_eq!(
            (id, result.get()),
            (RequestId::String("3".into()), r#"{"n":1.50}"#)
        );

        let request = Envelope::read(br#"{"jsonrpc":"2.0","id":3,"method":"roots/list"}"#).unwrap();
        assert_eq!(request.answered(), None);
        assert!(request.result().is_none());

        let error = Envelope::read(br#"{"jsonrpc":"2.0","id":3,"error":{}}"#).unwrap();
        assert_eq!(error.answered(), Some(&RequestId::Number(3)));
        assert!(error.result().is_none());
        assert!(Envelope::read(b"[1]").is_none(), "an array answers nothing");
        assert!(Envelope::read(br#"[7,null,{"n":1}]"#).is_none());
        assert!(Envelope::read(b"not json").is_none());
    }
}
