//! [`AuthorityError`]: why a request's sandbox authority cannot be used (server side).

/// A request's sandbox authority cannot be used (server side).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorityError {
    /// `_meta` is not a JSON object, or a sandbox key has a value of the wrong shape.
    #[error("`{key}` in the request's `_meta` is malformed: {message}")]
    Malformed {
        /// The key (or `_meta` itself).
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The state and its deprecated copy differ.
    #[error(
        "`codex/sandbox-state` and `codex/sandbox-state-meta` differ; a host must send identical copies"
    )]
    MismatchedCopies,
    /// The launcher path is not absolute.
    #[error("the sandbox launcher `{path}` is not an absolute path")]
    RelativeLauncher {
        /// The path as sent.
        path: String,
    },
    /// No launcher was supplied and the operator did not allow running unsandboxed.
    #[error(
        "the host supplied no sandbox launcher (`codex/sandbox-launcher`), so the command cannot run sandboxed; refusing to run it unsandboxed (the host must offer a launcher, or the server's operator must allow unsandboxed runs)"
    )]
    NoLauncher,
    /// Something bound to one authority was asked for under another.
    #[error(
        "this was created under a different sandbox authority and cannot be reused under this call's; create a new one"
    )]
    Changed,
}
