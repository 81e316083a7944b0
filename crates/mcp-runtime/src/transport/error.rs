//! The errors of starting and talking to one server: [`StartupError`],
//! [`RequestError`] (with [`HttpFailure`] and [`MessageRefused`]), [`ListToolsError`]
//! and [`RestartError`].
//!
//! They live in the transport, the lowest layer that constructs them (it spawns the
//! process, resolves headers and proxies, opens HTTP sessions), so that every layer
//! above it names them without reaching up. [`StartupError`], [`ListToolsError`] and
//! [`RestartError`] hold one another (a startup lists tools; a listing may need a
//! restart; a restart is a startup), so they live together. The crate's public paths
//! for them are in [`crate::error`].
//!
//! Every message is lowercase, names values in backticks and, where the user can act,
//! says what to do. Errors that several tasks may observe (a startup failure is read by
//! the runtime, its events and its summary) are cheap to clone: their sources sit in an
//! [`Arc`].

mod exit;
mod http;
mod listing;
mod refused;
mod request;
mod restart;
mod startup;

use std::{sync::Arc, time::Duration};

pub(crate) use self::refused::sent;
pub use self::{
    exit::ProcessExit,
    http::{HTTP_BODY_EXCERPT_CHARS, HttpFailure},
    listing::ListToolsError,
    refused::{MessageRefused, SENT_CHARS},
    request::{RequestError, Resuming},
    restart::RestartError,
    startup::StartupError,
};

/// `; last stderr: A | B`, or nothing without stderr.
fn stderr_suffix(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; last stderr: {}", tail.join(" | "))
    }
}

/// `30s`, `1.5s`: a duration as a message shows it.
pub(crate) fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}s")
    } else {
        format!("{secs}s")
    }
}

/// Whether `error` is a `T`, or a `T` shared in an `Arc` (as sources are).
fn is<T: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<T>() || error.is::<Arc<T>>()
}

/// Whether `error` is one of the errors a source of the runtime's own errors can be.
/// The crate's whole list, with the errors of the layers above (a login, the token
/// store), is [`crate::error::is_ours`].
fn is_below(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<StartupError>(error)
        || is::<ListToolsError>(error)
        || is::<RestartError>(error)
        || is::<RequestError>(error)
        || is::<HttpFailure>(error)
        || is::<MessageRefused>(error)
}

/// [`crate::error::chain`] for the runtime's own errors (whose sources are only the
/// errors of [`is_below`], I/O errors and the protocol library's): what the layers
/// below the crate's facade print and log.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    chain_with(error, is_below)
}

/// Whether `error` is another library's error whose text names no internals and is
/// worth showing: an I/O error, or a JSON parser's error (where the text breaks).
fn is_plain(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<std::io::Error>(error) || is::<serde_json::Error>(error)
}

/// An error and its sources on one line, joined with `: `, every credential in use
/// masked ([`crate::redact::credentials`]), stopping at the first source that is
/// neither `ours` nor an I/O or JSON parser's error (see [`crate::error::chain`]).
pub(crate) fn chain_with(
    error: &(dyn std::error::Error + 'static),
    ours: fn(&(dyn std::error::Error + 'static)) -> bool,
) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        if !ours(cause) && !is_plain(cause) {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    // Server text is masked where it enters an error; this is the net under that.
    match crate::redact::credentials(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(masked) => masked,
    }
}
