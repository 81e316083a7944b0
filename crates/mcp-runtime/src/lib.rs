//! Run many MCP servers at once: start them, list and call their tools.
//!
//! `mcp-runtime` is what an agent host embeds to talk to the MCP servers its user
//! configured. [`Runtime::start`] starts every enabled server of a [`Config`]
//! concurrently (local stdio processes and Streamable HTTP endpoints), each bounded by
//! its own startup timeout and reported through [`StartupEvent`]s; the tools of all
//! ready servers form one [`Catalog`] under qualified names (`mcp__SERVER__TOOL`);
//! [`Runtime::call_tool`] routes a qualified name back to its server, with a timeout
//! and cancellation. Every server process belongs to the runtime and ends with it.
//!
//! Overlapping equivalent startups share one `tools/list` answer while each keeps its
//! own connection ([`shared_listing`]). Servers that ask for it receive the host's
//! sandbox authority with each call, byte for byte ([`sandbox_metadata`],
//! [`authority`], [`binding`]); server authors use [`CapturedAuthority`] to consume it.
//!
//! The protocol is spoken by the official Rust SDK, `rmcp`.
#![doc = include_str!("../../../README.md")]
#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

#[cfg(not(unix))]
compile_error!(
    "mcp-runtime supports Unix only (Linux and macOS): it runs each server in a process group of its own"
);

pub mod auth;
pub mod authority;
pub mod binding;
pub mod catalog;
pub mod changes;
pub mod config;
mod connection;
mod discovery_key;
pub mod error;
mod feature_result;
pub mod host;
mod json;
pub mod manager;
pub mod naming;
mod oauth_client;
mod output_schema;
pub mod progress;
mod protocol;
mod protocol_era;
pub mod redact;
pub mod sandbox_metadata;
pub mod shared_listing;
mod sync;
#[cfg(test)]
mod test_events;
mod tls_refusal;
mod tool_result;

/// What the criterion benchmarks (`benches/`) measure below the public API. Not part of
/// the API: hidden, and changed whenever the runtime is.
#[doc(hidden)]
pub mod bench_support {
    use crate::{SandboxState, transport::splice};

    /// Puts `state` into a `tools/call` request's `_meta` under both keys a call uses and
    /// writes the request out as a call does: placeholders in the serialized message,
    /// replaced by the state's exact text. Returns the bytes sent.
    pub fn splice_call(state: &SandboxState) -> Vec<u8> {
        let splicer = splice::Splicer::new();
        let (placeholder, _slot) = splicer.placeholder(state.raw());
        let message = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "run",
                "arguments": {"command": "ls"},
                "_meta": {
                    crate::sandbox_metadata::SANDBOX_STATE_KEY: placeholder,
                    crate::sandbox_metadata::SANDBOX_STATE_META_KEY: placeholder,
                },
            },
        });
        let bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
        match splicer.splice(&bytes) {
            splice::Spliced::Replaced(out) => out,
            other => panic!("the placeholder was not replaced: {other:?}"),
        }
    }
}
mod transport;

pub use authority::{AuthorityBound, CallAuthority, CapturedAuthority, Unsandboxed};
pub use catalog::{Catalog, ListedTool, QualifiedTool, TaskSupport};
pub use changes::ServerChange;
pub use config::{Config, ServerConfig};
pub use connection::{
    MAX_LIST_PAGES, MAX_LISTED_TOOLS, SERVER_LOG_TARGET, TOOL_CATALOG_CACHE_CAPABILITY,
};
pub use error::{
    AuthorityError, CallError, ConfigError, FeatureError, ListToolsError, RestartError, StartError,
    StartupError,
};
pub use feature_result::{Message, PromptResult, ReadResult, ResourceContent};
pub use manager::{
    AuthState, CallOptions, DEFAULT_OPTIONAL_GRACE, DEFAULT_SCOPE, Runtime, ServerState,
    ServerStatus, StartOptions, StartupEvent, StartupSummary, TransportKind,
};
pub use protocol::{ACCEPTED_PROTOCOL_VERSIONS, PROTOCOL_VERSION, client_config};
/// The protocol types of `rmcp` that appear in this crate's API.
pub use rmcp::model;
pub use sandbox_metadata::{SandboxLauncher, SandboxState};
pub use shared_listing::ListingRegistry;
/// The token that cancels a start ([`StartOptions::with_cancellation`]).
pub use tokio_util::sync::CancellationToken;
pub use tool_result::{Content, InvalidToolResult, ToolResult};
