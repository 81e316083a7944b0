//! The configured servers served as one MCP server: every server's tools behind one
//! `tools/list`, each call routed to its server, to any MCP client.
//!
//! - [`Gateway`] is rmcp's `ServerHandler` over the runtimes of [`Upstreams`]: a host
//!   serves it over any rmcp transport. `mcp-runtime serve` serves it to one client on
//!   stdio ([`stdio`]).
//! - [`http`] serves it over Streamable HTTP at `/mcp` to many clients at once, both
//!   protocol eras, each handshake session with its own upstream connections, behind
//!   the checks a listener needs (authentication, `Host` and `Origin`, body and
//!   session bounds), with `/healthz` beside it.

#![deny(missing_docs)]

mod bridge;
mod exposure;
mod features;
pub mod fleet;
mod forward;
mod gateway;
pub mod http;
mod names;
mod paging;
mod principal;
mod shared;
pub mod stdio;
mod sync;
mod upstreams;

pub use exposure::Exposure;
pub use gateway::Gateway;
pub use upstreams::Upstreams;
