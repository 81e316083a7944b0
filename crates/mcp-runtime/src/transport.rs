//! The two ways to reach a server: a local child process over stdio, or a Streamable
//! HTTP endpoint. Both end in an rmcp transport that [`crate::connection`] runs the
//! protocol over.

pub(crate) mod http;
pub(crate) mod stdio;
