//! Fixture MCP servers for mcp-runtime's integration tests.
//!
//! The `mcp-fixture` binary is a real MCP server process built on rmcp's
//! server side. Tests start it as a peer and steer its behaviour with flags:
//! how many tools it has, how it paginates, how slowly it answers, when it
//! answers (gates), which faults it injects. This library holds the parts of
//! it worth reading on their own:
//!
//! - [`server`]: the [`Fixture`] handler (tools, pagination, delays, faults),
//! - [`gate`]: the files a test creates to decide when one fixture process
//!   answers `initialize` and `tools/list`, and whether `tools/list` fails,
//! - [`message_log`]: the log of every JSON-RPC message the fixture receives,
//!   byte for byte, that tests read to see what reached the peer,
//! - [`stdio`] and [`http`]: the two transports, each of which logs a message
//!   before rmcp parses it,
//! - [`testing`]: helpers for the tests that run these processes.

#![deny(missing_docs)]

pub mod gate;
pub mod http;
pub mod message_log;
pub mod server;
pub mod stdio;
pub mod testing;

pub use gate::Gates;
pub use message_log::MessageLog;
pub use server::{Behaviour, Fixture};
