//! A tool call's parameters, handed back by the transport that wrote them, for the
//! call's next round.
//!
//! A 2026-07-28 server may answer a `tools/call` with `resultType: "input_required"`,
//! and the call is then sent again, the same parameters with the client's answers
//! ([`crate::connection`]'s input rounds). rmcp takes each request whole and the
//! transport drops it once written, so keeping the parameters for a round that rarely
//! comes would mean copying the arguments of every call. Instead a call that may go
//! on marks its request with a [`HandBack`] (in the request's extensions, which are
//! never sent), and the transport that serializes the request hands the parameters
//! back to it ([`give_back`]): no call's arguments are copied by the runtime.
//!
//! Invariants:
//! 1. Every transport hands a marked request's parameters back once it has made the
//!    bytes it sends, before it sends them: so before the server can answer.
//! 2. What is handed back is the parameters as the call made them: rmcp keeps what it
//!    adds to a request (its `_meta` keys, the progress token) in the extensions.
//! 3. Nothing else is kept: a request without the mark is dropped as before, and a
//!    marked one that is never written (the call was dropped first) is dropped with
//!    its mark.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage,
};

use crate::sync::lock;

/// Where the transport hands a call's parameters back. Clones share the place.
#[derive(Clone, Default)]
pub(crate) struct HandBack(Arc<Mutex<Option<CallToolRequestParams>>>);

impl std::fmt::Debug for HandBack {
    /// Whether the parameters are back; never the arguments.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HandBack")
            .field(&lock(&self.0).is_some())
            .finish()
    }
}

impl HandBack {
    /// The `tools/call` request of `params`, marked to be handed back here.
    pub(crate) fn request(&self, params: CallToolRequestParams) -> ClientRequest {
        let mut request = CallToolRequest::new(params);
        request.extensions.insert(self.clone());
        ClientRequest::CallToolRequest(request)
    }

    /// The parameters, once the transport handed them back.
    pub(crate) fn take(&self) -> Option<CallToolRequestParams> {
        lock(&self.0).take()
    }
}

/// Hands `message`'s parameters back to the call that marked it, if one did
/// (invariant 1); otherwise drops it.
pub(crate) fn give_back(message: ClientJsonRpcMessage) {
    if let JsonRpcMessage::Request(request) = message
        && let ClientRequest::CallToolRequest(call) = request.request
        && let Some(back) = call.extensions.get::<HandBack>()
    {
        *lock(&back.0) = Some(call.params);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{JsonRpcRequest, RequestId};
    use serde_json::json;

    use super::*;

    fn message(request: ClientRequest) -> ClientJsonRpcMessage {
        JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(1), request))
    }

    #[test]
    fn a_marked_call_gets_its_own_parameters_back_unchanged() {
        let arguments = json!({"x": 1, "text": "a long argument"});
        let params =
            CallToolRequestParams::new("t").with_arguments(arguments.as_object().unwrap().clone());
        let back = HandBack::default();
        let request = back.request(params);
        // The mark is not part of what is sent.
        let sent = serde_json::to_value(message(request.clone())).unwrap();
        assert_eq!(sent["params"], json!({"name": "t", "arguments": arguments}));
        give_back(message(request));
        let params = back.take().expect("handed back");
        assert_eq!(params.name, "t");
        assert_eq!(
            params.arguments.map(serde_json::Value::Object),
            Some(arguments)
        );
        assert!(back.take().is_none(), "handed back once");
    }

    #[test]
    fn an_unmarked_request_is_only_dropped() {
        let back = HandBack::default();
        give_back(message(ClientRequest::CallToolRequest(
            CallToolRequest::new(CallToolRequestParams::new("t")),
        )));
        assert!(back.take().is_none());
    }
}
