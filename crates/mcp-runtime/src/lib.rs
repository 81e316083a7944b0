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
//! own connection ([`ListingRegistry`]). Servers that ask for it receive the host's
//! sandbox authority with each call, byte for byte ([`CallAuthority`],
//! [`SandboxState`]); server authors use [`CapturedAuthority`] to consume it.
//!
//! # Where things are
//!
//! Every public item has one path. What a host names to run servers is at the crate's
//! root: the runtime and its options, statuses and events, the configuration and a
//! server's, the catalog and its tools, results, the sandbox authority, the error of
//! each operation, and the limits and names a host may rely on. An area with items of
//! its own that a host reaches for only in that area is a module, whose items are not
//! repeated at the root: [`config`] (the parts of a configuration, its defaults, other
//! hosts' files), [`error`] (what errors carry, and printing them), [`host`] (answering
//! servers' questions), [`naming`] (the qualified-name rule), [`redact`] (masking
//! credentials in a host's own text), `auth` and `login` (OAuth, feature `oauth`),
//! and [`model`] (the protocol types of `rmcp`).
//!
//! The protocol is spoken by the official Rust SDK, `rmcp`.
//!
//! # Example
//!
//! Start the servers of a configuration, list their tools, call one, and end them:
//!
//! ```rust,no_run
//! use mcp_runtime::{Config, Runtime, StartOptions, StartupEvent};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::load("config.toml".as_ref())?;
//!
//! // Progress events are optional; the runtime never waits for the receiver.
//! let (events, mut progress) = tokio::sync::mpsc::unbounded_channel();
//! tokio::spawn(async move {
//!     while let Some(event) = progress.recv().await {
//!         if let StartupEvent::Failed { server, error, .. } = event {
//!             eprintln!("{server} failed: {}", mcp_runtime::error::chain(&*error));
//!         }
//!     }
//! });
//!
//! // Starts every enabled server concurrently and returns once the `required` ones are
//! // ready plus a grace of 1 s for the others (the rest join later); fails only if a
//! // `required` one fails.
//! let runtime = Runtime::start(config, StartOptions::new().with_events(events)).await?;
//! for tool in runtime.catalog().tools() {
//!     println!("{} → {}/{}", tool.qualified_name, tool.server, tool.tool.name);
//! }
//!
//! // Routed by qualified name, bounded by the server's `tool_timeout_sec`; dropping
//! // the future sends the server `notifications/cancelled`.
//! let arguments = serde_json::json!({"a": 2, "b": 3});
//! let result = runtime
//!     .call_tool("mcp__math__add", arguments.as_object().cloned())
//!     .await?;
//! // The result as the server returned it, every field, with typed views of the known
//! // parts: content blocks, `structuredContent`, `isError`, `_meta`.
//! for block in result.content() {
//!     match block.as_text() {
//!         Some(text) => println!("{text}"),
//!         None => println!("[{}]", block.kind().unwrap_or("?")),
//!     }
//! }
//! println!("{:?} {}", result.structured_content(), result.is_error());
//!
//! // Arguments as JSON text reach the server exactly as written (numbers beyond `f64`
//! // keep every digit); only the whitespace between tokens may change.
//! let exact = serde_json::value::RawValue::from_string(r#"{"a": 12345678901234567890123, "b": 1}"#.into())?;
//! runtime
//!     .call_tool_exact("mcp__math__add", &exact, mcp_runtime::CallOptions::new())
//!     .await?;
//!
//! runtime.shutdown().await; // or drop it: every server process ends either way
//! # Ok(())
//! # }
//! ```
//!
//! A server still starting when [`Runtime::start`] returns joins the catalog later
//! ([`Runtime::subscribe_catalog`]); a server that stops is started again by the next
//! call. The host answers servers' questions through [`host::HostHandlers`].
//!
//! # For MCP server authors
//!
//! A server that runs commands for the model runs them under the calling host's sandbox,
//! captured from each request's `_meta` with [`CapturedAuthority`]:
//!
//! ```rust
//! use mcp_runtime::{AuthorityBound, AuthorityError, CapturedAuthority, Unsandboxed};
//!
//! // The request's `_meta`, as the exact JSON text (keeps the state byte for byte).
//! // Handlers built on rmcp receive `_meta` parsed: use `CapturedAuthority::from_meta`.
//! let meta = r#"{
//!   "codex/sandbox-state": {"sandbox_policy": {"type": "workspace-write"}},
//!   "codex/sandbox-state-meta": {"sandbox_policy": {"type": "workspace-write"}},
//!   "codex/sandbox-launcher": {"codexExecutable": "/opt/codex/bin/codex"}
//! }"#;
//! let authority = CapturedAuthority::from_meta_json(meta)?.expect("the host sent a state");
//!
//! // `<launcher> sandbox --sandbox-state-json <state> -- <program> <args…>`
//! let argv = authority.argv("make", ["test"], Unsandboxed::Refuse)?;
//! assert_eq!(argv[1..4], ["sandbox", "--sandbox-state-json", r#"{"sandbox_policy": {"type": "workspace-write"}}"#]);
//! assert_eq!(argv[4..], ["--", "make", "test"]);
//! let _command: std::process::Command = authority.command("make", ["test"], Unsandboxed::Refuse)?;
//!
//! // Without a launcher the command fails closed, unless the operator opted out in code.
//! let no_launcher = CapturedAuthority::from_meta_json(
//!     r#"{"codex/sandbox-state": {"sandbox_policy": {"type": "read-only"}}}"#,
//! )?
//! .unwrap();
//! assert_eq!(
//!     no_launcher.argv("make", ["test"], Unsandboxed::Refuse),
//!     Err(AuthorityError::NoLauncher)
//! );
//!
//! // A long-lived thing (a shell session, a cached result) is reused only under the
//! // authority that created it.
//! let session = AuthorityBound::new(authority.clone(), "shell session");
//! assert!(session.get(&authority).is_ok());
//! assert_eq!(session.get(&no_launcher), Err(AuthorityError::Changed));
//! # Ok::<(), AuthorityError>(())
//! ```
//!
//! # Features
//!
//! All on by default. `http`: Streamable HTTP and legacy SSE servers; `oauth` (with
//! `http`): logins and the token store ([`auth`], [`login`]); `keyring` (with `oauth`):
//! tokens in the OS keyring; `output-schema`: results checked against their
//! `outputSchema`; `tls`: `https://` servers; `client-credentials-jwt`: `private_key_jwt`
//! for machine clients. Without default features the runtime runs local stdio servers
//! only; a server whose configuration needs a left-out feature fails to start, naming
//! it ([`StartupError::FeatureLeftOut`]).
//!
//! # Guides
//!
//! The repository's `docs/` directory has a page per concern, each read top to bottom:
//! `configuration.md` (every key), `other-hosts.md` (the JSON files of other hosts),
//! `command-line.md`, `library.md` (this crate's guide, whose examples are compiled with
//! these docs), `protocol.md` (protocol revisions and conformance), `oauth.md`,
//! `shared-listings.md`, `sandbox-metadata.md`, `performance.md` and `testing.md`.
#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

/// The examples of the repository's README and of its `docs/` pages, compiled and run as
/// doc tests so that the documentation cannot drift from the API. Exists only while
/// doc tests are collected.
#[cfg(doctest)]
pub mod documentation {
    #[doc = include_str!("../../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../../docs/library.md")]
    pub struct LibraryGuide;
    #[doc = include_str!("../../../docs/sandbox-metadata.md")]
    pub struct SandboxMetadata;
}

#[cfg(not(unix))]
compile_error!(
    "mcp-runtime supports Unix only (Linux and macOS): it runs each server in a process group of its own"
);

#[cfg(feature = "oauth")]
pub mod auth;
mod authority;
mod binding;
mod catalog;
mod changes;
pub mod config;
mod connection;
mod discovery_key;
pub mod error;
mod feature_result;
#[cfg(feature = "fleet")]
pub mod fleet;
pub mod host;
mod json;
#[cfg(feature = "oauth")]
pub mod login;
mod manager;
pub mod naming;
#[cfg(feature = "oauth")]
mod oauth_client;
mod output_schema;
mod progress;
mod protocol;
mod protocol_era;
pub mod redact;
mod sandbox_metadata;
mod shared_listing;
mod sync;
#[cfg(test)]
mod test_events;
#[cfg(feature = "http")]
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

    /// A runtime of the one 2026-07-28 server `server` at the other end of `stream`,
    /// in this process: every part of a call but a process between the two (the
    /// framing of a local server's connection included).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the stream.
    pub async fn in_process_runtime(
        server: &str,
        stream: tokio::io::DuplexStream,
    ) -> Result<crate::Runtime, crate::StartupError> {
        crate::Runtime::in_process(server, stream).await
    }

    /// Publishes a listing of `payload` for the discovery key digest `digest` in
    /// `fleet`, as a startup leading there does.
    ///
    /// # Panics
    /// When Redis does not answer, or another startup leads.
    #[cfg(feature = "fleet")]
    pub async fn fleet_publish(fleet: &crate::fleet::Fleet, digest: [u8; 32], payload: &[u8]) {
        let slot = fleet.slot(&digest, &digest);
        let window = std::time::Duration::from_secs(60);
        match fleet.acquire(&slot, crate::fleet::Stamp::NEW, window).await {
            Ok(crate::fleet::Acquired::Lead(lease)) => lease.publish(payload, window, None).await,
            _ => panic!("the fleet is reachable and nobody leads"),
        }
    }

    /// What a startup of `digest` beginning now asks the fleet (one round trip):
    /// whether it takes a listing published within the minute.
    ///
    /// # Panics
    /// When Redis does not answer.
    #[cfg(feature = "fleet")]
    pub async fn fleet_round_trip(fleet: &crate::fleet::Fleet, digest: [u8; 32]) -> bool {
        let slot = fleet.slot(&digest, &digest);
        match fleet
            .acquire(
                &slot,
                crate::fleet::Stamp::NEW,
                std::time::Duration::from_secs(60),
            )
            .await
        {
            Ok(crate::fleet::Acquired::Take { .. }) => true,
            Ok(_) => false,
            Err(_) => panic!("the fleet's Redis does not answer"),
        }
    }
}
mod transport;

pub use authority::{AuthorityBound, CallAuthority, CapturedAuthority, Unsandboxed};
pub use catalog::{Catalog, Definition, ListedTool, QualifiedTool, SearchHit, TaskSupport};
pub use changes::{DEFAULT_CHANGE_BACKLOG, ServerChange};
pub use config::servers::{Config, ServerConfig};
pub use connection::{
    MAX_LIST_PAGES, MAX_LISTED_TOOLS, SERVER_LOG_TARGET, TOOL_CATALOG_CACHE_CAPABILITY,
};
pub use feature_result::{Message, PromptResult, ReadResult, ResourceContent};
pub use manager::{
    AuthState, CallOptions, DEFAULT_OPTIONAL_GRACE, DEFAULT_SCOPE, Prompts, Resources, Runtime,
    ServerPrompt, ServerResource, ServerResourceTemplate, ServerState, ServerStatus, StartOptions,
    StartupEvent, StartupSummary, TransportKind,
};
pub use progress::{OnProgress, Progress};
pub use protocol_era::EraCache;
/// The protocol types of `rmcp` that appear in this crate's API.
pub use rmcp::model;
pub use sandbox_metadata::{
    InvalidSandboxState, SANDBOX_STATE_CAPABILITY, SANDBOX_STATE_META_CAPABILITY, SandboxLauncher,
    SandboxState,
};
pub use shared_listing::ListingRegistry;
/// The token that cancels a start ([`StartOptions::with_cancellation`]).
pub use tokio_util::sync::CancellationToken;
pub use tool_result::{Content, InvalidToolResult, ToolResult};

// The error of each operation; the details they carry, and the functions that print
// them, are in `error`.
pub use authority::error::AuthorityError;
pub use config::error::ConfigError;
pub use connection::error::{CallError, FeatureError};
pub use manager::error::StartError;
pub use transport::error::{ListToolsError, RestartError, StartupError};
pub use transport::stdio::end_servers_with_this_process;
