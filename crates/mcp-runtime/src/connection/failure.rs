//! How rmcp's errors become [`RequestError`]s.
//!
//! rmcp's errors are written for its developers: their text names transport types
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: …`), debug dumps and
//! the phase of its worker. Here each is read by its type and variant: the server's
//! JSON-RPC error keeps its code and message; an HTTP failure is the [`HttpFailure`]
//! the transport classified (found by downcasting the transport's error, which rmcp
//! boxes without a `source` link); the end of the connection is
//! [`RequestError::Closed`], which the connection turns into the exit report of a
//! local server; an answer the transport refused (over the client's size limit, or
//! unreadable) comes as a JSON-RPC error that carries the refusal
//! ([`crate::transport::refused`]) and is [`RequestError::Refused`], never the
//! server's error. Anything else is described in words of this crate. rmcp's error
//! stays the `source` of [`RequestError::Server`] and [`RequestError::Other`].

use std::sync::Arc;

#[cfg(feature = "http")]
use rmcp::transport::streamable_http_client::StreamableHttpError;

#[cfg(feature = "http")]
use crate::transport::error::HttpFailure;
use rmcp::{
    ServiceError, model::ErrorData, service::ClientInitializeError,
    transport::DynamicTransportError,
};

use crate::transport::{error::RequestError, refused};

/// What a failed request means, from rmcp's error.
pub(super) fn from_service(error: ServiceError) -> RequestError {
    let description = match &error {
        ServiceError::McpError(data) => {
            if let Some(refused) = refused::refusal(data) {
                return RequestError::Refused(refused);
            }
            return server_error(data, ServiceError::McpError);
        }
        ServiceError::TransportSend(transport) => match from_transport(transport) {
            Ok(failure) => return failure,
            Err(description) => description,
        },
        // Only the end of the connection (or the runtime's own cancellation at
        // shutdown) ends a request this way.
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
            return RequestError::Closed {
                stderr_tail: Vec::new(),
            };
        }
        ServiceError::UnexpectedResponse => {
            "the server's answer is not of the kind the request asks for".to_owned()
        }
        ServiceError::Timeout { timeout } => {
            format!(
                "no answer within {}",
                crate::transport::error::secs(*timeout)
            )
        }
        _ => "the request failed".to_owned(),
    };
    RequestError::Other {
        description,
        source: Arc::new(error),
    }
}

/// What a failed `initialize` means, from rmcp's error.
pub(super) fn from_initialize(error: ClientInitializeError) -> RequestError {
    let description = match &error {
        ClientInitializeError::JsonRpcError(data) => {
            if let Some(refused) = refused::refusal(data) {
                return RequestError::Refused(refused);
            }
            return server_error(data, ClientInitializeError::JsonRpcError);
        }
        ClientInitializeError::TransportError { error: transport, .. } => {
            match from_transport(transport) {
                Ok(failure) => return failure,
                Err(description) => description,
            }
        }
        ClientInitializeError::ConnectionClosed(_) => {
            return RequestError::Closed {
                stderr_tail: Vec::new(),
            };
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            "the server did not answer `initialize` with an initialize result".to_owned()
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
            "the server supports none of the protocol versions offered (upgrade the server or mcp-runtime)".to_owned()
        }
        _ => "the handshake failed".to_owned(),
    };
    RequestError::Other {
        description,
        source: Arc::new(error),
    }
}

/// The server's JSON-RPC error `data`, every credential masked in its message and
/// data (a server may quote the token it refused), its message bounded
/// ([`crate::redact::server_text`]); its source is `error` of the masked data, so that
/// no text in the chain holds a credential either.
fn server_error<E: std::error::Error + Send + Sync + 'static>(
    data: &ErrorData,
    error: impl FnOnce(ErrorData) -> E,
) -> RequestError {
    let message = crate::redact::server_text(&data.message);
    let masked = ErrorData::new(
        data.code,
        crate::redact::credentials(&data.message).into_owned(),
        data.data
            .as_ref()
            .map(|value| crate::redact::credentials_in_json(value).into_owned()),
    );
    RequestError::Server {
        code: data.code.0,
        message,
        source: Arc::new(error(masked)),
    }
}

/// The requests a server of the handshake revisions sends the client while it
/// handles one, which 2026-07-28 replaced by input-required results.
const ASKS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// `error`, the failure of a request on a 2026-07-28 connection, read for a server
/// that tried to ask the client the handshake way and failed the request for it:
/// an invalid-request error naming one of [`ASKS`] (the official Python SDK's
/// `Cannot send 'elicitation/create': this transport context has no back-channel
/// for server-initiated requests.`). The server chose 2026-07-28 and broke its
/// rule; pinning a handshake revision works around it.
pub(super) fn asked_out_of_era(error: RequestError) -> RequestError {
    let method = match &error {
        RequestError::Server { code, message, .. }
            if *code == rmcp::model::ErrorCode::INVALID_REQUEST.0 =>
        {
            ASKS.into_iter().find(|method| message.contains(method))
        }
        _ => None,
    };
    match method {
        Some(method) => RequestError::AskedOutOfEra {
            method,
            source: Arc::new(error),
        },
        None => error,
    }
}

/// The failure behind a transport's error: an [`HttpFailure`] or the end of the
/// connection; otherwise a description of it.
fn from_transport(error: &DynamicTransportError) -> Result<RequestError, String> {
    #[cfg(feature = "http")]
    if let Some(http) = error
        .error
        .downcast_ref::<StreamableHttpError<HttpFailure>>()
    {
        return match http {
            StreamableHttpError::Client(failure) => Ok(RequestError::Http(failure.clone())),
            StreamableHttpError::TransportChannelClosed => Ok(RequestError::Closed {
                stderr_tail: Vec::new(),
            }),
            other => Err(describe_http(other)),
        };
    }
    // The stdio transport's errors are this crate's own (or I/O errors), whose text
    // names no internals.
    Err(format!(
        "cannot send to the server: {}",
        crate::transport::error::chain(error.error.as_ref())
    ))
}

/// A description of an HTTP transport failure that is not an [`HttpFailure`].
#[cfg(feature = "http")]
fn describe_http(error: &StreamableHttpError<HttpFailure>) -> String {
    match error {
        StreamableHttpError::HttpStatus(status) => {
            format!("the server answered HTTP {}", status.status)
        }
        StreamableHttpError::UnexpectedContentType(Some(content_type)) => format!(
            "the server answered with content type `{}`, neither JSON nor an event stream",
            crate::redact::one_line(&crate::redact::server_text(content_type))
        ),
        StreamableHttpError::UnexpectedContentType(None) => {
            "the server answered without a content type".to_owned()
        }
        StreamableHttpError::Deserialize(_) => {
            "the server's answer is not a JSON-RPC message".to_owned()
        }
        // rmcp starts a new session and sends the request once more before it
        // reports an expired one: the new session failed the request too, or could
        // not be started.
        StreamableHttpError::SessionExpired => {
            "the server ended the session, and a new one did not help".to_owned()
        }
        StreamableHttpError::SessionRecoveryTimeout => {
            "the server ended the session, and a new one could not be started in time (the server may have run the request)".to_owned()
        }
        StreamableHttpError::MissingSessionIdInResponse => {
            "the server's answer to `initialize` has no session id".to_owned()
        }
        StreamableHttpError::ReservedHeaderConflict(name) => format!(
            "header `{name}` is set by the protocol and cannot be configured (remove it from `http_headers` or `env_http_headers`)"
        ),
        StreamableHttpError::UnexpectedServerResponse(text) => format!(
            "unexpected answer from the server: {}",
            crate::redact::credentials(text)
        ),
        _ => "the HTTP exchange failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "http")]
    fn sent(error: StreamableHttpError<HttpFailure>) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "http",
            std::any::TypeId::of::<()>(),
            Box::new(error),
        ))
    }

    #[cfg(feature = "http")]
    #[test]
    fn an_http_failure_is_found_behind_the_transport_error() {
        let failure = HttpFailure::NotFound {
            server: "web".into(),
        };
        let error = from_service(sent(StreamableHttpError::Client(failure)));
        assert!(
            matches!(&error, RequestError::Http(HttpFailure::NotFound { server }) if server == "web"),
            "{error:?}"
        );
    }

    #[test]
    fn a_json_rpc_error_keeps_its_code_and_message() {
        let error = from_service(ServiceError::McpError(ErrorData::internal_error(
            "server `big` sent too much",
            None,
        )));
        assert_eq!(
            error.to_string(),
            "server error -32603: server `big` sent too much"
        );
        assert!(
            std::error::Error::source(&error).is_some(),
            "rmcp's error is kept"
        );
    }

    #[test]
    fn a_refusal_of_the_transport_is_the_clients_not_the_servers() {
        let refused = crate::transport::error::MessageRefused::TooLarge {
            server: "big".into(),
            size: Some(10),
            limit: 5,
        };
        let error = from_service(ServiceError::McpError(refused::error_data(&refused)));
        assert_eq!(
            error.to_string(),
            "server `big` sent a message of 10 bytes, over the client's limit of 5 bytes (raise `max_message_bytes`)"
        );
        let error = from_initialize(ClientInitializeError::JsonRpcError(refused::error_data(
            &refused,
        )));
        assert!(matches!(error, RequestError::Refused(_)), "{error:?}");
    }

    #[test]
    fn a_server_asking_the_handshake_way_is_told_from_other_refusals() {
        let refused = |code: i32, message: &str| RequestError::Server {
            code,
            message: message.to_owned(),
            source: Arc::new(ServiceError::TransportClosed),
        };
        let error = asked_out_of_era(refused(
            -32600,
            "Cannot send 'sampling/createMessage': no back-channel",
        ));
        assert!(
            matches!(&error, RequestError::AskedOutOfEra { method, .. } if *method == "sampling/createMessage"),
            "{error:?}"
        );
        assert_eq!(
            crate::transport::error::chain(&error),
            "the server tried to send `sampling/createMessage` as a request of its own, which protocol version `2026-07-28` does not have (a server of that revision asks through an input-required result): a fault of the server; until it is fixed, set `protocol = \"2025-11-25\"` for this server: server error -32600: Cannot send 'sampling/createMessage': no back-channel"
        );
        for other in [
            refused(-32600, "bad arguments"),
            refused(-32603, "Cannot send 'elicitation/create'"),
        ] {
            assert!(matches!(
                asked_out_of_era(other),
                RequestError::Server { .. }
            ));
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn other_transport_failures_are_described_without_internals() {
        let error = from_service(sent(StreamableHttpError::UnexpectedContentType(Some(
            "text/html".into(),
        ))));
        assert_eq!(
            error.to_string(),
            "the server answered with content type `text/html`, neither JSON nor an event stream"
        );
        let closed = from_service(ServiceError::TransportClosed);
        assert!(matches!(closed, RequestError::Closed { .. }), "{closed:?}");
    }
}
