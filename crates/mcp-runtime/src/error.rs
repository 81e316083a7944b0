//! Errors: what they carry, and how to print them.
//!
//! The error of each operation is at the crate's root ([`crate::StartError`],
//! [`crate::CallError`], [`crate::ConfigError`], …), each defined beside the area that
//! constructs it (the configuration's in `config`, a server's startup and requests in
//! the transport, a call's in the connection, the sandbox authority's in `authority`,
//! a login's in [`crate::login`]). This module has the details they carry (a failed
//! HTTP exchange, a refused message, how a process exited), [`chain`], which prints one
//! with its sources, and [`is_ours`], which tells this crate's errors from others.
//!
//! Every message is lowercase, names values in backticks and, where the user can act,
//! says what to do. Errors that several tasks may observe (a startup failure is read by
//! the runtime, its events and its summary) are cheap to clone: their sources sit in an
//! `Arc`.

use std::sync::Arc;

pub use crate::connection::error::AnswerError;
pub use crate::transport::error::{
    HTTP_BODY_EXCERPT_CHARS, HttpFailure, MessageRefused, ProcessExit, RequestError, Resuming,
    SENT_CHARS,
};
use crate::{
    AuthorityError, CallError, ConfigError, FeatureError, ListToolsError, RestartError, StartError,
    StartupError,
};

/// Whether `error` is one of this crate's errors, whose text is written for users
/// (a program printing an error chain of its own stops where [`chain`] would).
///
/// Every public error type of the crate is one, those of other areas (a login, the
/// token store, a tool result) too: the types are only compared here.
pub fn is_ours(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<ConfigError>(error)
        || is::<StartupError>(error)
        || is::<ListToolsError>(error)
        || is::<CallError>(error)
        || is::<AnswerError>(error)
        || is::<FeatureError>(error)
        || is::<StartError>(error)
        || is::<RestartError>(error)
        || is::<RequestError>(error)
        || is::<HttpFailure>(error)
        || is::<MessageRefused>(error)
        || is::<AuthorityError>(error)
        || is::<crate::InvalidToolResult>(error)
        || is::<crate::sandbox_metadata::InvalidSandboxState>(error)
        || is_ours_in_oauth(error)
        || is_ours_in_fleet(error)
}

/// Whether `error` is a `T`, or a `T` shared in an `Arc` (as sources are).
fn is<T: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<T>() || error.is::<Arc<T>>()
}

/// [`is_ours`] for the errors of OAuth.
#[cfg(feature = "oauth")]
fn is_ours_in_oauth(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<crate::login::LoginError>(error)
        || is::<crate::auth::logout::LogoutError>(error)
        || is::<crate::auth::store::StoreError>(error)
}

/// [`is_ours`] for the errors of fleets.
#[cfg(feature = "fleet")]
fn is_ours_in_fleet(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<crate::fleet::FleetError>(error)
        || is::<crate::fleet::Unavailable>(error)
        || is::<crate::fleet::AskError>(error)
}

#[cfg(not(feature = "fleet"))]
fn is_ours_in_fleet(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}

#[cfg(not(feature = "oauth"))]
fn is_ours_in_oauth(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}

/// An error and its sources on one line, joined with `: `, every credential in use
/// masked ([`crate::redact::credentials`]). The chain stops at the first source that
/// is not one of this crate's errors (an I/O error or a JSON parser's is kept, its
/// text names no internals): the protocol library's errors stay available through `source` but
/// their text (type names, debug dumps) is not for users.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    crate::transport::error::chain_with(error, is_ours)
}

#[cfg(test)]
mod tests;
