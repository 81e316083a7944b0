//! The `mcp-runtime` binary as users run it, one integration test binary (`cli`):
//! `cargo test -p mcp-runtime-cli --test cli NAME`.
//!
//! Every run of the binary gets its own `HOME` and `CODEX_HOME`, so a Codex config on
//! this machine never changes what a test sees.

mod support;

mod call_scope;
mod cli;
mod conformance;
mod conformance_server;
mod credentials;
mod edit;
mod eras;
mod features;
mod import;
mod login;
mod network;
mod reports;
mod results;
mod serve;
mod serve_fleet;
mod serve_http;
