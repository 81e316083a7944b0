//! Fixture MCP servers for mcp-runtime's integration tests.
//!
//! The `mcp-fixture` binary is a real MCP server process built on rmcp's
//! server side. Tests start it as a peer and steer its behaviour with flags:
//! how many tools it has, how it paginates, how slowly it answers, when it
//! answers (gates), which faults it injects. This library holds the parts of
//! it worth reading on their own:
//!
//! - [`server`]: the [`Fixture`] handler (tools, pagination, delays, faults),
//! - [`raw`]: the raw stdio server, for faults only exact bytes can produce,
//! - [`fault`]: faults the process injects into itself (crash, stderr flood,
//!   ignoring `SIGTERM`),
//! - [`gate`]: the files a test creates to decide when one fixture process
//!   answers `initialize` and `tools/list`, and whether `tools/list` fails,
//! - [`message_log`]: the log of every JSON-RPC message the fixture receives,
//!   byte for byte, that tests read to see what reached the peer,
//! - [`stdio`] and [`http`]: the two transports, each of which logs a message
//!   before rmcp parses it,
//! - [`testing`]: helpers for the tests that run these processes,
//! - [`network`]: a private CA, a TLS front and an HTTP proxy, for the tests of
//!   corporate networks,
//! - [`oauth`]: an OAuth 2.1 authorization server in the fixture's process, that
//!   makes the HTTP fixture a protected resource (`--require-oauth`).
//!
//! # Fault flags
//!
//! Each fault is one flag of `mcp-fixture` (see `--help`), so a test can run a
//! real process that misbehaves in exactly one way:
//!
//! | Fault | Flag |
//! |---|---|
//! | never answers `initialize` | `--hang-initialize` |
//! | exits (status, stderr lines) on `initialize` | `--crash-initialize CODE` |
//! | never answers `tools/list` | `--hang-list` |
//! | exits (status, stderr lines) on `tools/list` | `--crash-list CODE` |
//! | answers `tools/list` with an error | `--fail-list` |
//! | a `tools/list` cursor that loops | `--repeat-cursor` |
//! | an empty `nextCursor` on the last page | `--empty-last-cursor` |
//! | many pages, many tools | `--page-size N`, `--tools N` |
//! | an oversized `tools/list` line | `--list-padding-bytes N` |
//! | an oversized call result | `--call-result-bytes N` |
//! | exits (status, stderr lines) during `tools/call` | `--exit-during-call CODE` |
//! | many MB of stderr before serving | `--stderr-flood-bytes N` |
//! | exits before reading anything | `--exit-during-startup CODE` |
//! | a grandchild in its process group | `--spawn-grandchild FILE` |
//! | ignores `SIGTERM` (so does its grandchild) | `--ignore-sigterm` |
//! | keeps running after stdin closes | `--ignore-stdin-eof` |
//! | a line that is not JSON before the `initialize` reply (raw) | `--garbage-before-initialize` |
//! | a line that is not JSON instead of it (raw) | `--garbage-instead-of-initialize` |
//! | a response to an unknown id before it (raw) | `--unsolicited-response` |
//! | a tool whose `inputSchema` is a string, null, an array or missing (raw) | `--bad-input-schema KIND` |
//! | a tool with an empty name (raw) | `--empty-tool-name` |
//! | two tools with the same name (raw) | `--duplicate-tool` |
//! | ignores `notifications/cancelled`, answers late (raw) | `--ignore-cancel` |
//! | an answer not UTF-8, over several lines, in a batch, without `protocolVersion`, or `{}` (raw) | `--mangle-answer METHOD=KIND` |
//! | HTTP: an answer not UTF-8, over several lines or in a batch, as an event or a JSON body | `--mangle-answer METHOD=KIND`, `--http-json-answers` |
//! | HTTP: every request answered with one status | `--http-status STATUS` |
//! | HTTP: accepts connections, never answers | `--http-silent` |
//! | HTTP: quotes the request's headers back in errors | `--echo-headers` |
//! | writes environment variables' values to stderr | `--stderr-env NAME` |
//! | HTTP: exits during `tools/call`, before answering or mid-stream | `--http-die-during-call WHEN` |
//!
//! With `--progress-steps N` a call that asks for progress gets N reports first.
//! With `--broadcast-tool-changes`, `add_tool` tells every handshake session that the
//! list changed (a server whose tools all its clients share), and over HTTP each
//! listen stream opened is logged (`http/GET`).
//! With `--asks` it also lists `ask`, `roots` and `sample`, which ask the client for
//! an elicitation, its roots and a model's message, and answer with the client's
//! answer (see `asks.rs`). With `--tasks` it lists `task_job`, which runs as a task
//! of the 2026-07-28 tasks extension on rmcp's task manager (see `tasks.rs`).
//! With `--future` it lists `future`, a tool and a result with what a newer
//! revision adds: a content type and fields no revision rmcp knows has (see
//! [`future`]), over stdio and HTTP, in every era.
//!
//! The faults marked raw select the [`raw`] server instead of rmcp's, over
//! stdio only. A refused connection needs no process: see
//! [`testing::unused_local_url`].

#![deny(missing_docs)]

mod asks;
pub mod conformance;
pub mod fault;
pub mod future;
pub mod gate;
pub mod http;
pub mod message_log;
pub mod network;
pub mod oauth;
pub mod raw;
pub mod resources;
pub mod server;
pub mod services;
pub mod stdio;
mod tasks;
pub mod testing;

pub use gate::Gates;
pub use message_log::MessageLog;
pub use server::{Behaviour, Era, Fixture};
