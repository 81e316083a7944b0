//! OAuth for remote servers: logging in, and the credentials a login leaves.
//!
//! The protocol is rmcp's `auth` module (discovery, client registration, PKCE, token
//! exchange and refresh); this module adds what a runtime needs around it: the
//! login a person completes in a browser ([`login`]).

pub mod login;
