//! Fixture MCP servers for mcp-runtime's integration tests.
//!
//! The `mcp-fixture` binary is a real MCP server process built on rmcp's
//! server side. Tests start it as a peer and steer its behaviour with flags:
//! how many tools it has, how it paginates, how slowly it answers, which faults
//! it injects. This library holds the parts of it worth reading on their own:
//!
//! - [`server`]: the [`Fixture`] handler (tools, pagination, delays, faults),
//! - [`message_log`]: the log of every JSON-RPC message the fixture receives,
//!   byte for byte, that tests read to see what reached the peer,
//! - [`stdio`] and [`http`]: the two transports, each of which logs a message
//!   before rmcp parses it.

#![deny(missing_docs)]

pub mod http;
pub mod message_log;
pub mod server;
pub mod stdio;

pub use message_log::MessageLog;
pub use server::{Behaviour, Fixture};
