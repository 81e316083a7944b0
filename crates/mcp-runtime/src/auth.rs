//! OAuth for remote servers (issue 10): where tokens are kept, and (to come) the login
//! flow that obtains them.
//!
//! Built on rmcp's `auth` feature: its `AuthorizationManager` runs discovery, the
//! authorization code flow and refreshes; this module adds what it leaves to the
//! embedding program, starting with persistent token storage ([`store`]).

pub mod store;
