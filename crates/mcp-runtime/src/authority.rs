//! Captured authority: the sandbox state and launcher that describe *the call being
//! issued*, on both sides of the wire.
//!
//! - Host side: a [`CallAuthority`] is what the host says about one call (its sandbox
//!   state, and where the Codex CLI is). The runtime forwards it only to servers that opt
//!   in, and offers the launcher only after `probe` has verified it and only to a
//!   server whose [`Binding`](crate::binding::Binding) shares this host's filesystem.
//!   Nothing is ever taken from tool arguments: they are written by the model.
//! - Server side: an MCP server that consumes the metadata parses a request's `_meta`
//!   into a [`CapturedAuthority`], builds its commands through it (failing closed when the
//!   host supplied no launcher), and keeps long-lived things in an [`AuthorityBound`],
//!   which refuses to hand them out under a different authority.

mod captured;
pub(crate) mod error;
pub(crate) mod probe;

use std::path::PathBuf;

pub use self::captured::{AuthorityBound, CapturedAuthority, Unsandboxed};
use crate::sandbox_metadata::SandboxState;

/// What the host says about one `tools/call`: its sandbox state and, when it knows one,
/// the Codex CLI that can run commands under it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallAuthority {
    /// The sandbox policy for this call, forwarded byte for byte.
    pub state: SandboxState,
    /// A candidate launcher: the Codex CLI on this host. It is offered to a server only
    /// when it is absolute, valid UTF-8 and passes the capability probe; the runtime
    /// never searches `PATH` for one.
    pub codex_executable: Option<PathBuf>,
}

impl CallAuthority {
    /// An authority with a state and no launcher.
    pub fn new(state: SandboxState) -> Self {
        Self {
            state,
            codex_executable: None,
        }
    }

    /// Names the Codex CLI to offer as the launcher.
    pub fn with_codex_executable(mut self, path: impl Into<PathBuf>) -> Self {
        self.codex_executable = Some(path.into());
        self
    }
}
