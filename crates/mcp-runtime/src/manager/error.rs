//! [`StartError`]: why starting the runtime failed as a whole.

use crate::transport::error::{StartupError, chain};

/// Starting the runtime failed as a whole.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// One or more `required` servers did not become ready.
    #[error("required {} failed to start: {}", if failures.len() == 1 { "server" } else { "servers" }, describe_failures(failures))]
    RequiredServersFailed {
        /// Each failed required server and why.
        failures: Vec<(String, StartupError)>,
    },
}

fn describe_failures(failures: &[(String, StartupError)]) -> String {
    failures
        .iter()
        .map(|(name, error)| format!("`{name}`: {}", chain(error)))
        .collect::<Vec<_>>()
        .join("\n")
}
